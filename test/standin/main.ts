// `npm run simulate`: runs the SIMULATED Knative Serving and KServe
// controllers against the cluster in $KUBECONFIG (which must have their CRDs)
// until Ctrl-C, logging every write. For demos and local development only.

import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { BANNER, startStandins } from './standin.ts';

const { values } = parseArgs({
  options: {
    namespace: { type: 'string', multiple: true, short: 'n' },
    'ready-delay-ms': { type: 'string', default: '200' },
    'progress-deadline-ms': { type: 'string' },
    domain: { type: 'string', default: 'example.com' },
    concurrency: { type: 'string', default: '8' },
    quiet: { type: 'boolean', short: 'q', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (values.help) {
  console.log(`${BANNER}.

Usage: npm run simulate -- [--namespace NS]... [--ready-delay-ms 200] [--progress-deadline-ms MS]
                           [--domain example.com] [--concurrency 8] [--quiet]

Watches Knative Services, Revisions, InferenceServices and LocalModelCaches in the
cluster of $KUBECONFIG and writes what Knative and KServe would write: Revisions,
predictor Knative Services and status. No pods run and no traffic flows.
Conventions: an image containing "unready" (or an ISVC storageUri containing it)
never becomes Ready. See test/standin/README.md.`);
  process.exit(0);
}

const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();
const stamp = () => new Date().toISOString().slice(11, 23);
const logger = {
  info: (m: string) => { if (!values.quiet) console.log(`${stamp()} ${m}`); },
  warn: (m: string) => console.warn(`${stamp()} WARN ${m}`),
};

console.log(`*** ${BANNER} ***`);
console.log(`cluster: ${kubeConfig.getCurrentCluster()?.server ?? '?'}; namespaces: ${values.namespace?.join(', ') ?? 'all'}`);
const standins = await startStandins({
  kubeConfig,
  logger,
  readyDelayMs: Number(values['ready-delay-ms']),
  ...(values['progress-deadline-ms'] ? { progressDeadlineMs: Number(values['progress-deadline-ms']) } : {}),
  domain: values.domain!,
  concurrency: Number(values.concurrency),
  ...(values.namespace ? { namespaces: values.namespace } : {}),
});
console.log('stand-ins running (SIMULATED); Ctrl-C to stop');

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    console.log('stopping the stand-ins');
    standins.stop().then(() => process.exit(0), () => process.exit(1));
  });
}
