// A fair share of the operator for every namespace (issue 21, attack "stall the
// operator for everyone"): one namespace applies apps with worst-case header
// regexes and streams metadata-only edits at them, while another namespace
// creates an ordinary app and edits it, and a third, serving since before the
// storm, keeps serving its version and applies an edit. The victim's Knative
// Service comes and takes its edit within a generous deadline, and /healthz (asked from another
// process, as the kubelet asks) answers every time, quickly, throughout. The
// noisy apps are bounded, not starved: the regexes past the RE2 budget are
// refused by name (by the operator, or at admission when the CRD bounds them),
// and the ones within it are applied.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { re2ProgramSizeBound } from '../../src/api/v1alpha1/regex-cost.ts';
import { MAX_REGEX_PROGRAM_SIZE } from '../../src/api/v1alpha1/validation.ts';
import { ApiError } from '../../src/runtime/client.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getKsvc, userClient, waitForApp } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { Victim } from '../support/victim.ts';
import { waitFor } from '../support/wait.ts';

const ROUNDS = 10;
/** Generous: ten times the quiet figure (3 s) for the real Knative on a loaded machine; the attack made it 86 s. */
const VICTIM_DEADLINE_MS = 30_000;
/** For the noisy apps' own outcome, which is not what this test bounds. */
const NOISY_DEADLINE_MS = 120_000;
const PROBE_BOUND_MS = 1_000;

/** The shape: \pL{1000} repeated to the 1024-character limit, 16 times (an RE2 program of ~113,000 instructions each). */
const attackRegexes = Array.from({ length: 16 }, (_, i) => `${'\\pL{1000}'.repeat(113)}${String(i).padStart(2, '0')}`.slice(-1024));
/** The heaviest that fits the app's RE2 budget: 16 regexes of a Unicode class and a counted repetition, each its 1/16 of the budget, compiled once per content. */
const heavyValidRegexes = Array.from({ length: 16 }, (_, i) => {
  const regex = (n: number) => `^x-${i}-\\pL[a-z]{${n}}$`;
  let n = 1;
  while (re2ProgramSizeBound(regex(n + 1)) <= MAX_REGEX_PROGRAM_SIZE / 16) n++;
  return regex(n);
});

/** A separate process probing /healthz every 200 ms until told to stop on stdin (and at least 5 times, however short the storm); prints every answer's status and latency. */
const PROBER = `
const port = process.argv[1];
const probes = [];
let stopped = false;
process.stdin.on('data', () => (stopped = true));
// A probe every 200 ms is this process's subject (how /healthz answers during the storm), not a wait.
const probe = async () => {
  const t0 = performance.now();
  const status = await fetch('http://127.0.0.1:' + port + '/healthz', { signal: AbortSignal.timeout(30000) }).then((r) => r.status, () => 0);
  probes.push({ status, ms: Math.round(performance.now() - t0) });
  if (!stopped || probes.length < 5) return setTimeout(probe, 200);
  console.log(JSON.stringify(probes));
  process.exit(0);
};
probe();
`;

describe('fair share of the operator across namespaces (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator | undefined;

  after(async () => { await op?.stop(); });

  it('a namespace with worst-case regexes and a stream of metadata edits does not delay another namespace\'s app (attack: stall the operator for everyone)', async () => {
    const noisy = await freshNamespace('noisy');
    const victim = await freshNamespace('victim');
    op = await startOperator({});
    // An app that served before the storm: it must keep serving its version and apply an edit during it.
    const standing = await new Victim(await freshNamespace('victim-standing')).start();
    const prober = spawn(process.execPath, ['-e', PROBER, String(op.manager.ports.probe)], { stdio: ['pipe', 'pipe', 'inherit'] });
    let probeOutput = '';
    prober.stdout.setEncoding('utf8').on('data', (d: string) => (probeOutput += d));
    try {
      const noisyApps = [0, 1, 2, 3].map((i) => app(noisy, `heavy-${i}`, {
        container: { image: `ghcr.io/noisy/app:${i}`, port: 8080 },
        ingress: { hosts: [`heavy-${i}.noisy.example.com`] },
        rollout: { match: (i < 2 ? attackRegexes : heavyValidRegexes).map((regex) => ({ header: 'x-user', regex })) },
      }));
      // Admission may refuse the attack's regexes outright (a budget in the CRD): that bounds them too.
      const admitted: typeof noisyApps = [];
      const refusedAtAdmission: string[] = [];
      for (const a of noisyApps) {
        try {
          await applyApp(a);
          admitted.push(a);
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 422 && /rollout\.match/.test(err.message))) throw err;
          refusedAtAdmission.push(a.metadata.name);
        }
      }
      assert.deepEqual(admitted.map((a) => a.metadata.name).filter((n) => ['heavy-2', 'heavy-3'].includes(n)), ['heavy-2', 'heavy-3'], 'the regexes within the budget are admitted');
      // The victim arrives in the middle of the storm: after the noisy apps, before their edits.
      const started = performance.now();
      await applyApp(app(victim, 'web', { container: { image: 'ghcr.io/victim/web:1', port: 8080 } }));
      const edits = (async () => {
        for (let round = 1; round <= ROUNDS; round++) {
          for (const a of admitted) await userClient().mergePatch(Kinds.ServerlessApp, noisy, a.metadata.name, { metadata: { labels: { round: String(round) } } });
        }
      })();

      await waitFor('the victim\'s Knative Service to be created while the noisy namespace streams edits', () => getKsvc(victim, 'web'), { timeoutMs: VICTIM_DEADLINE_MS });
      const createdAfterMs = performance.now() - started;
      await userClient().mergePatch(Kinds.ServerlessApp, victim, 'web', { spec: { container: { image: 'ghcr.io/victim/web:2' } } });
      await waitFor('the victim\'s edit (image web:2) to reach its Knative Service while the noisy namespace streams edits', async () => (await getKsvc(victim, 'web'))?.spec.template.spec.containers[0]?.image === 'ghcr.io/victim/web:2', { timeoutMs: VICTIM_DEADLINE_MS });
      await standing.servesAndAppliesItsNextEdit();
      await edits;

      prober.stdin.end('stop\n');
      await once(prober, 'exit');
      const probes = JSON.parse(probeOutput) as Array<{ status: number; ms: number }>;
      assert.ok(probes.length >= 5, `the prober asked /healthz throughout (${probes.length} times)`);
      assert.deepEqual(probes.filter((p) => p.status !== 200), [], '/healthz answered ok every time');
      const slowest = Math.max(...probes.map((p) => p.ms));
      assert.ok(slowest < PROBE_BOUND_MS, `/healthz answered within ${PROBE_BOUND_MS} ms every time (slowest ${slowest} ms of ${probes.length})`);
      console.log(`      victim Knative Service after ${Math.round(createdAfterMs)} ms; /healthz slowest ${slowest} ms of ${probes.length} probes`);
      // Bounded, not starved: the attack's regexes are refused by name, the heavy valid ones applied, each at the last edit.
      for (const i of [0, 1]) {
        if (refusedAtAdmission.includes(`heavy-${i}`)) continue;
        const refused = await waitForApp(noisy, `heavy-${i}`, (a) => condition(a, 'Ready')?.reason === 'InvalidSpec', `heavy-${i} refused (InvalidSpec)`, NOISY_DEADLINE_MS);
        assert.match(condition(refused, 'Ready')!.message, /spec\.rollout\.match\[0\]\.regex: regular expression too large/);
      }
      for (const i of [2, 3]) await waitFor(`heavy-${i}'s VirtualService (its regexes within the budget)`, () => userClient().get(Kinds.VirtualService, noisy, `heavy-${i}-routes`), { timeoutMs: NOISY_DEADLINE_MS });
    } finally {
      if (prober.exitCode === null) prober.kill();
    }
  });
});
