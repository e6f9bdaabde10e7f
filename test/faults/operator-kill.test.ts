// Fault injection: the operator (a child process) is SIGKILLed at seeded
// random points of canary flows and restarted. Across every trial a watch
// records each traffic block and status, and the rollout invariants must hold
// at every recorded moment: traffic only ever on Ready revisions (asked for by
// the operator, and as Knative reports serving it), the stable version never
// lost nor unready. After each restart the app must end where its spec says,
// in the operator's status, its traffic block and Knative's reported traffic.
// On the rig's real Knative each trial waits for real revisions (KWOK pods),
// so the default is 12 trials (FAULT_KILL_TRIALS for more).
import assert from 'node:assert/strict';
import { startStandins, type Standins } from '../standin/standin.ts';
import { app, applyApp, getApp, getKsvc, readyTrue, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { OperatorProcess } from '../support/operator-process.ts';
import { describeFlow, expectedEnd, planFlow, UNSCHEDULABLE, type Edit, type Expected, type Flow } from './support/canary-flows.ts';
import { History } from './support/history.ts';
import { seedFor } from './support/seeded.ts';
import { atInstant, pause } from '../support/schedule.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const TRIALS = Number(process.env.FAULT_KILL_TRIALS ?? 12);

const spec = (e: Pick<Edit, 'image' | 'canaryPercent'>): AppSpec => ({
  container: { image: e.image, ...(e.image.includes('unready') ? { resources: UNSCHEDULABLE } : {}) }, scaling: { minScale: 0 },
  ...(e.canaryPercent !== undefined ? { rollout: { canaryPercent: e.canaryPercent } } : {}),
});

describe('operator SIGKILLed during canary flows (fault injection)', function () {
  this.timeout(TRIALS * 60_000 + 120_000);
  let ns: string;
  let standins: Standins;
  let history: History;
  let op: OperatorProcess;

  const startOperator = async () => {
    op = await OperatorProcess.start({ kubeconfigPath: testEnv().kubeconfigPath, namespaces: [ns], concurrency: 4 });
    await op.waitReady();
  };

  before(async () => {
    ns = await freshNamespace('kill');
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), namespaces: [ns], readyDelayMs: 150 });
    history = await History.record(testEnv().kubeConfig(), ns);
    await startOperator();
  });
  after(async () => {
    await op?.kill();
    history?.stop();
    await standins?.stop();
  });

  it(`keeps traffic on ready revisions and the stable version through ${TRIALS} kills at random points`, async () => {
    const rng = seedFor('operator kill');
    const flows = Array.from({ length: TRIALS }, (_, i) => planFlow(rng, `k${i}`));
    await Promise.all(flows.map((f) => applyApp(app(ns, f.app, spec({ image: f.stableImage })))));
    await Promise.all(flows.map((f) => waitFor(`${f.app} v1 ready`, async () => readyTrue(await getApp(ns, f.app)) || undefined, { timeoutMs: 120_000, intervalMs: 250 })));

    const recoveries: number[] = [];
    let interrupted = 0;
    for (const [i, flow] of flows.entries()) {
      try {
        const trial = await runTrial(flow);
        recoveries.push(trial.recoveryMs);
        if (trial.interrupted) interrupted++;
      } catch (e) {
        throw new Error(`trial ${i} (${flow.app}: ${describeFlow(flow)}) failed: ${(e as Error).message}\noperator output:\n${op.output().slice(-15).join('\n')}`);
      }
    }

    // The watches catch up with the last writes before the history is judged.
    await history.catchUp();
    const violations = history.violations();
    assert.deepEqual(violations, [], `rollout invariants broken:\n${violations.map((v) => `rv ${v.rv} ${v.app}: ${v.message}`).join('\n')}`);
    const sorted = [...recoveries].sort((a, b) => a - b);
    const midFlow = flows.filter((f) => f.killAtMs < f.edits.at(-1)!.atMs).length;
    console.log(`      ${TRIALS} kills (${midFlow} before the flow's last edit, ${interrupted} before the app had reached the end state it was heading for; ${flows.filter((f) => f.unready).length} flows with an unready candidate), ${history.trafficBlocks()} traffic blocks and ${history.reportedSplits()} reported splits checked;`
      + ` end state ${sorted[Math.floor(sorted.length / 2)]} ms (median), ${sorted.at(-1)} ms (max) after the restarted operator was ready and the last edit made`);
  });

  /**
   * Runs the flow's edits and the kill on one timeline. Returns ms from the new operator being ready (and the
   * last edit made) to the end state, and whether the kill interrupted work: the app was not yet where the
   * edits so far were taking it.
   */
  async function runTrial(flow: Flow): Promise<{ recoveryMs: number; interrupted: boolean }> {
    const start = performance.now();
    const at = (ms: number) => atInstant(start + ms);
    let readyAt = 0;
    let editedAt = 0;
    let interrupted = false;
    await Promise.all([
      (async () => {
        for (const edit of flow.edits) {
          await at(edit.atMs);
          await applyApp(app(ns, flow.app, spec(edit)));
        }
        editedAt = performance.now();
      })(),
      (async () => {
        await at(flow.killAtMs);
        const done = flow.edits.filter((e) => e.atMs <= flow.killAtMs);
        interrupted = done.length < flow.edits.length || (await endStateMismatch(flow.app, expectedEnd({ ...flow, edits: done }))) !== '';
        const exit = await op.kill('SIGKILL');
        assert.equal(exit.signal, 'SIGKILL', `the operator died by itself before the kill: ${JSON.stringify(exit)}`);
        await pause(flow.deadForMs);
        await startOperator();
        readyAt = performance.now();
      })(),
    ]);
    const want = expectedEnd(flow);
    let last = '';
    await waitFor(`end state ${JSON.stringify(want)}`, async () => {
      last = await endStateMismatch(flow.app, want);
      return last === '' || undefined;
    }, { timeoutMs: SETTLE_MS, intervalMs: 100 }).catch((e: Error) => {
      throw new Error(`${e.message}; last difference: ${last}`);
    });
    return { recoveryMs: Math.round(performance.now() - Math.max(readyAt, editedAt)), interrupted };
  }

  /** '' when the app and its Knative Service are where `want` says; otherwise what differs. */
  async function endStateMismatch(name: string, want: Expected): Promise<string> {
    const a = await getApp(ns, name);
    if (a.status?.observedGeneration !== a.metadata.generation) return `observedGeneration ${a.status?.observedGeneration} != generation ${a.metadata.generation}`;
    const s = a.status;
    if (s?.versions?.stable?.image !== want.stableImage) return `stable image ${s?.versions?.stable?.image}`;
    if (s?.phase !== want.phase) return `phase ${s?.phase}`;
    if (!want.candidate && s?.versions?.candidate) return `candidate ${JSON.stringify(s.versions.candidate)} still listed`;
    if (want.phase === 'Stable' && !readyTrue(a)) return 'not Ready';
    const ksvc = await getKsvc(ns, name);
    const byTag = (tag: string) => ksvc?.spec.traffic.find((t) => t.tag === tag);
    const split = { stable: byTag('stable')?.percent ?? 0, candidate: byTag('candidate')?.percent ?? 0 };
    if (split.stable !== want.split.stable || split.candidate !== want.split.candidate) return `ksvc traffic ${JSON.stringify(ksvc?.spec.traffic)}`;
    if (byTag('stable')?.revisionName !== s?.versions?.stable?.revision) return `stable tag on ${byTag('stable')?.revisionName}, status says ${s?.versions?.stable?.revision}`;
    const image = ksvc?.spec.template.spec.containers[0]?.image;
    const specImage = a.spec.container?.image;
    if (image !== specImage) return `ksvc template image ${image}, spec ${specImage}`;
    // What Knative's Route reports serving (0% targets left out): the split asked for, on the revisions status names.
    const reported = Object.fromEntries((ksvc?.status?.traffic ?? []).filter((t) => (t.percent ?? 0) > 0).map((t) => [t.revisionName, t.percent]));
    const wanted = Object.fromEntries([[s?.versions?.stable?.revision, want.split.stable], [s?.versions?.candidate?.revision, want.split.candidate]].filter(([, p]) => Number(p) > 0));
    if (JSON.stringify(Object.entries(reported).sort()) !== JSON.stringify(Object.entries(wanted).sort())) return `Knative reports ${JSON.stringify(ksvc?.status?.traffic)}, want ${JSON.stringify(wanted)}`;
    return '';
  }
});

