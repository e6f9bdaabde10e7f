// `node bench/flags.ts --variant 'lite=--lite-mode' --variant 'none=' [--apps 1000] [--rounds 2]`:
// the operator alone (node dist/main.js, built beforehand) on one control
// plane, once per variant of node flags given after the image's own
// (test/support/image-launch.ts), variants interleaved round by round so a
// busy machine weighs on each alike. For each: RSS with no app (5 s after
// ready), CPU over --idle-seconds with no app, and with --apps, the time
// until every InferenceService exists, CPU per app until the process is
// quiet, peak RSS (VmHWM) and RSS after 30 s more. How the footprint figures
// in docs/benchmarks.md on V8 flags were measured.
import { parseArgs } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { KubeClient } from '../src/runtime/client.ts';
import { Kinds } from '../src/util/kinds.ts';
import { startControlPlane } from '../test/envtest/controlplane.ts';
import { installAllCrds } from '../test/envtest/upstream-crds.ts';
import { OperatorProcess } from '../test/support/operator-process.ts';
import { BENCH_USER_AGENT, OPERATOR_SCRIPT } from './environment.ts';
import { MiB, sampleProcess } from './proc.ts';
import { sleep } from './stats.ts';
import { waitFor } from '../test/support/wait.ts';
import { SlimWatch } from './watch.ts';
import { appRefs, benchModelApp, forEachBounded, IN_FLIGHT } from './workload.ts';

const { values } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true, default: ['image='] },
    apps: { type: 'string', default: '0' },
    rounds: { type: 'string', default: '1' },
    'idle-seconds': { type: 'string', default: '30' },
  },
});
const apps = Number(values.apps);
const idleMs = Number(values['idle-seconds']) * 1000;
const variants = values.variant.map((v) => {
  const [name = '', flags = ''] = v.split(/=(.*)/s);
  return { name, nodeArgs: flags.split(/\s+/).filter(Boolean) };
});
const mib = (bytes: number) => +(bytes / MiB).toFixed(1);

const cp = await startControlPlane({ log: () => {} });
const kc = cp.kubeConfig();
const client = new KubeClient(kc, { fieldManager: 'bench', userAgent: BENCH_USER_AGENT });
try {
  await installAllCrds(kc);
  const core = kc.makeApiClient(CoreV1Api);
  let run = 0;
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const { name, nodeArgs } of variants) {
      // Each operator watches namespaces of its own, so it starts with no app.
      const namespaces = Array.from({ length: 4 }, (_, i) => `flags-${run}-${i}`);
      run++;
      for (const ns of namespaces) await core.createNamespace({ body: { metadata: { name: ns } } });
      const op = await OperatorProcess.start({ kubeconfigPath: cp.kubeconfigPath, script: OPERATOR_SCRIPT, concurrency: 8, nodeArgs, namespaces });
      try {
        await op.waitReady(120_000);
        await sleep(5_000);
        const zero = sampleProcess(op.pid);
        await sleep(idleMs);
        const record: Record<string, unknown> = { variant: name, round, rssZeroMiB: mib(zero.rssBytes), idleCpuSeconds: +(sampleProcess(op.pid).cpuSeconds - zero.cpuSeconds).toFixed(3) };
        if (apps > 0) Object.assign(record, await burst(op, namespaces));
        console.log(JSON.stringify(record));
      } finally {
        await op.stop();
      }
    }
  }
} finally {
  client.close();
  await cp.stop();
}

async function burst(op: OperatorProcess, namespaces: string[]): Promise<Record<string, number>> {
  const children = new SlimWatch<true>(kc, Kinds.InferenceService, () => true, { namespaces });
  await children.start();
  try {
    const started = performance.now();
    const before = sampleProcess(op.pid).cpuSeconds;
    await forEachBounded(appRefs(apps, namespaces), IN_FLIGHT, (ref) => client.apply(benchModelApp(ref)));
    await waitFor(`all ${apps} InferenceServices`, () => children.values.size >= apps, { timeoutMs: 900_000 });
    const childrenSeconds = +((performance.now() - started) / 1000).toFixed(1);
    // Quiet: less than 30 ms of CPU in 3 s.
    for (let last = sampleProcess(op.pid).cpuSeconds; ;) {
      await sleep(3_000);
      const now = sampleProcess(op.pid).cpuSeconds;
      if (now - last < 0.03) break;
      last = now;
    }
    const quiet = sampleProcess(op.pid);
    await sleep(30_000);
    return {
      childrenSeconds, cpuMsPerApp: +((quiet.cpuSeconds - before) * 1000 / apps).toFixed(2),
      peakRssMiB: mib(quiet.peakRssBytes), settledRssMiB: mib(sampleProcess(op.pid).rssBytes),
    };
  } finally {
    children.stop();
  }
}
