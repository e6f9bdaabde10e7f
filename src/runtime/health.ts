// The two HTTP listeners every operator pod exposes, as in controller-runtime:
// Prometheus metrics on one address and the kubelet's probes on another.
// /healthz answers while the process runs; /readyz only once the caches have
// synced, so a rollout waits for a replica that can actually serve.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { http } from './node-http.ts';

export interface HealthServers {
  metricsPort: number;
  probePort: number;
  close(): Promise<void>;
}

export async function startHealthServers(opts: {
  metricsAddr: string;
  probeAddr: string;
  registry: Registry;
  readyCheck: () => boolean;
}): Promise<HealthServers> {
  const metrics = http.createServer((req, res) => {
    if (path(req) !== '/metrics') return reply(res, 404, 'not found\n');
    opts.registry.metrics().then(
      (body) => reply(res, 200, body, opts.registry.contentType),
      (err: unknown) => reply(res, 500, `${String(err)}\n`),
    );
  });
  const probes = http.createServer((req, res) => {
    switch (path(req)) {
      case '/healthz':
        return reply(res, 200, 'ok\n');
      case '/readyz':
        return opts.readyCheck() ? reply(res, 200, 'ok\n') : reply(res, 503, 'caches not synced\n');
      default:
        return reply(res, 404, 'not found\n');
    }
  });
  const metricsPort = await listen(metrics, opts.metricsAddr);
  const probePort = await listen(probes, opts.probeAddr).catch(async (err: unknown) => {
    await closeServer(metrics);
    throw err;
  });
  return {
    metricsPort,
    probePort,
    close: async () => {
      await Promise.all([closeServer(metrics), closeServer(probes)]);
    },
  };
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
