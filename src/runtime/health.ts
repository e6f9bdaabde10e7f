// The two HTTP listeners every operator pod exposes, as in controller-runtime:
// Prometheus metrics on one address and the kubelet's probes on another.
// /healthz answers while the process runs; /readyz only once the caches have
// synced, so a rollout waits for a replica that can actually serve.
// The probes are served by a worker thread (probe-worker.cts) from a heartbeat
// this thread writes every second: a long reconcile delays neither probe, and
// liveness fails only when the main loop has been stuck past a generous bound.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import type { Registry } from 'prom-client';
import { http } from './node-http.ts';
import type { ProbeWorkerData } from './probe-worker.cts';

/** How long the main loop may be stuck before /healthz fails (a restart is then the better outcome). */
export const DEFAULT_STALL_AFTER_MS = 60_000;
const HEARTBEAT_MS = 1_000;

export interface HealthServers {
  metricsPort: number;
  probePort: number;
  /** Tells the probe worker now what readyCheck says (the heartbeat would, within a second). */
  refresh(): void;
  close(): Promise<void>;
}

export async function startHealthServers(opts: {
  metricsAddr: string;
  probeAddr: string;
  registry: Registry;
  readyCheck: () => boolean;
  stallAfterMs?: number;
}): Promise<HealthServers> {
  const metrics = http.createServer((req, res) => {
    if (path(req) !== '/metrics') return reply(res, 404, 'not found\n');
    opts.registry.metrics().then(
      (body) => reply(res, 200, body, opts.registry.contentType),
      (err: unknown) => reply(res, 500, `${String(err)}\n`),
    );
  });
  const metricsPort = await listen(metrics, opts.metricsAddr);
  const probes = await startProbes(opts.probeAddr, opts.readyCheck, opts.stallAfterMs ?? DEFAULT_STALL_AFTER_MS).catch(async (err: unknown) => {
    await closeServer(metrics);
    throw err;
  });
  return {
    metricsPort,
    probePort: probes.port,
    refresh: probes.refresh,
    close: async () => {
      await Promise.all([closeServer(metrics), probes.close()]);
    },
  };
}

async function startProbes(addr: string, readyCheck: () => boolean, stallAfterMs: number): Promise<{ port: number; refresh(): void; close(): Promise<void> }> {
  const { host, port } = parseAddr(addr);
  const shared = new SharedArrayBuffer(2 * BigInt64Array.BYTES_PER_ELEMENT);
  const state = new BigInt64Array(shared);
  const beat = () => {
    Atomics.store(state, 0, BigInt(Date.now()));
    Atomics.store(state, 1, readyCheck() ? 1n : 0n);
  };
  beat();
  const heartbeat = setInterval(beat, HEARTBEAT_MS);
  heartbeat.unref();
  // Type-stripped sources run the .ts file; the build runs the .js beside this one.
  const file = new URL(import.meta.url.endsWith('.ts') ? './probe-worker.cts' : './probe-worker.cjs', import.meta.url);
  const workerData: ProbeWorkerData = { ...(host ? { host } : {}), port, shared, stallAfterMs };
  // Its heap stays small: it keeps two numbers and answers two paths (about 8 MiB RSS under the image's flags, mostly the isolate).
  const worker = new Worker(file, { workerData, resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 } });
  worker.unref();
  const stop = async () => {
    clearInterval(heartbeat);
    await worker.terminate();
  };
  const bound = await new Promise<number>((resolve, reject) => {
    worker.once('message', (msg: { port?: number; error?: string }) => (msg.port !== undefined ? resolve(msg.port) : reject(new Error(msg.error))));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`probe worker exited (code ${code}) before listening`)));
  }).catch(async (err: unknown) => {
    await stop();
    throw err;
  });
  return { port: bound, refresh: beat, close: stop };
}

/** Splits "host:port", ":port" or "[::1]:port"; an empty host listens on all interfaces. */
export function parseAddr(addr: string): { host?: string; port: number } {
  const i = addr.lastIndexOf(':');
  const port = Number(i >= 0 ? addr.slice(i + 1) : addr);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid listen address "${addr}": want host:port or :port`);
  const host = i > 0 ? addr.slice(0, i).replace(/^\[(.*)\]$/, '$1') : '';
  return host ? { host, port } : { port };
}

function listen(server: Server, addr: string): Promise<number> {
  const { host, port } = parseAddr(addr);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, ...(host ? { host } : {}) }, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Prometheus and kubelet keep connections alive; do not wait for them.
    server.closeAllConnections();
  });
}

function path(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0] ?? '/';
}

function reply(res: ServerResponse, code: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(code, { 'content-type': contentType });
  res.end(body);
}
