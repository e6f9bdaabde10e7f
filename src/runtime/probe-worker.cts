// The kubelet's probes, served from a worker thread so that no reconcile on
// the main thread can delay them. The main thread writes a heartbeat (the
// time, every second) and whether it is ready into shared memory; this thread
// answers /healthz from the heartbeat's age (a main loop stuck longer than the
// bound fails liveness, and only then) and /readyz from the flag.
// CommonJS, loading only node:http and worker messaging: a worker started from
// an ES module sets up the ES module loader in its own isolate too, about
// 1 MiB of RSS more (docs/benchmarks.md, "RSS at zero objects").

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MessagePort } from 'node:worker_threads';

const http = require('node:http') as typeof import('node:http');
const { parentPort, workerData } = require('node:worker_threads') as { parentPort: MessagePort | null; workerData: unknown };

export interface ProbeWorkerData {
  host?: string;
  port: number;
  /** [heartbeat (ms since epoch), ready (0 or 1)], written by the main thread. */
  shared: SharedArrayBuffer;
  stallAfterMs: number;
}

const { host, port, shared, stallAfterMs } = workerData as ProbeWorkerData;
const state = new BigInt64Array(shared);

const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
  const stalledMs = Date.now() - Number(Atomics.load(state, 0));
  const live = stalledMs <= stallAfterMs;
  switch ((req.url ?? '/').split('?')[0]) {
    case '/healthz':
      return live ? reply(res, 200, 'ok\n') : reply(res, 500, `main event loop stuck for ${Math.round(stalledMs / 1000)} s (bound ${stallAfterMs / 1000} s)\n`);
    case '/readyz':
      if (!live) return reply(res, 503, `main event loop stuck for ${Math.round(stalledMs / 1000)} s\n`);
      return Atomics.load(state, 1) === 1n ? reply(res, 200, 'ok\n') : reply(res, 503, 'caches not synced\n');
    default:
      return reply(res, 404, 'not found\n');
  }
});

function reply(res: ServerResponse, code: number, body: string): void {
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}

server.once('error', (err) => parentPort!.postMessage({ error: String(err) }));
server.listen({ port, ...(host ? { host } : {}) }, () => parentPort!.postMessage({ port: (server.address() as AddressInfo).port }));
parentPort!.on('message', (msg) => {
  if (msg === 'close') {
    server.close(() => parentPort!.close());
    server.closeAllConnections();
  }
});
