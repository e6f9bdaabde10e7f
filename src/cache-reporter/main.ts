// serverlessapp-cache-reporter: the node-side cache usage reporter, run by the
// chart's opt-in DaemonSet on the model cache node group's nodes with the
// node's models volume mounted read-only. Every interval it measures each
// model folder KServe's agent made (measure.ts) and publishes the sizes as its
// node's report in the operator's namespace (publish.ts), where the operator
// reads them: KServe 0.20 reports no size of what it downloads. Flags and the
// loop only.

import { parseArgs } from 'node:util';
import { setTimeout as pause } from 'node:timers/promises';
import { KubeClient } from '../runtime/client.ts';
import { loadRestConfig } from '../runtime/kubeconfig.ts';
import { DEFAULT_BOUNDS, measureModelFolders } from './measure.ts';
import { REPORTER_FIELD_MANAGER, UsagePublisher } from './publish.ts';

const USAGE = `serverlessapp-cache-reporter: publishes the bytes of each model folder on this node
  --models-dir DIR        the node's models volume, as KServe's agent mounts it (default /mnt/models)
  --node-name NAME        this node ($NODE_NAME)
  --namespace NS          the operator's namespace, where reports go ($POD_NAMESPACE)
  --interval-seconds N    between two measures (default 30)
  --max-entries N         most entries walked per model folder (default ${DEFAULT_BOUNDS.maxEntries})
  --kubeconfig FILE       outside a pod only`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'models-dir': { type: 'string' }, 'node-name': { type: 'string' }, namespace: { type: 'string' },
      'interval-seconds': { type: 'string' }, 'max-entries': { type: 'string' }, kubeconfig: { type: 'string' }, help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) return void console.log(USAGE);
  const node = values['node-name'] ?? process.env.NODE_NAME;
  const namespace = values.namespace ?? process.env.POD_NAMESPACE;
  const intervalMs = Number(values['interval-seconds'] ?? '30') * 1000;
  const maxEntries = Number(values['max-entries'] ?? DEFAULT_BOUNDS.maxEntries);
  if (!node || !namespace || !(intervalMs > 0) || !Number.isSafeInteger(maxEntries) || maxEntries < 1) {
    console.error(`--node-name (or $NODE_NAME), --namespace (or $POD_NAMESPACE), a positive --interval-seconds and --max-entries are required\n\n${USAGE}`);
    process.exit(2);
  }
  const modelsDir = values['models-dir'] ?? '/mnt/models';
  const client = new KubeClient(await loadRestConfig(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}), { fieldManager: REPORTER_FIELD_MANAGER });
  const publisher = new UsagePublisher(client, namespace);
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop.abort());
  const log = (msg: string, extra: Record<string, unknown> = {}) => console.log(JSON.stringify({ level: 'info', msg, node, ...extra }));
  log('cache usage reporter started', { modelsDir, namespace, intervalMs });
  while (!stop.signal.aborted) {
    try {
      const sizes = await measureModelFolders(modelsDir, { ...DEFAULT_BOUNDS, maxEntries });
      if (await publisher.publish({ node, sizes }, stop.signal)) log('published', { folders: sizes.size });
    } catch (err) {
      if (stop.signal.aborted) break;
      console.error(JSON.stringify({ level: 'error', msg: 'not published: retried at the next interval', node, err: String(err) }));
    }
    await pause(intervalMs, undefined, { signal: stop.signal }).catch(() => undefined);
  }
}

main().catch((e: unknown) => {
  console.error(JSON.stringify({ level: 'error', msg: 'cache reporter failed', error: e instanceof Error ? e.message : String(e) }));
  process.exit(1);
});
