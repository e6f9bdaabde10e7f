// A loopback TCP proxy in front of the API server that can make established
// watches go silent, the way a connection through a NAT or load balancer that
// forgot it does: the socket stays open and nothing arrives, not even a close.
// TLS passes through untouched (the client still verifies the API server's
// certificate, whose SAN is 127.0.0.1), so the proxy cannot read a request; it
// tells a watch from a request by its shape instead: a watch's response goes
// on arriving long after the client's last byte, a reply follows at once.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { parse, stringify } from 'yaml';

export interface ProxyTarget {
  host: string;
  port: number;
}

interface Connection {
  client: Socket;
  upstream: Socket;
  lastClientDataAt: number;
  /** Open when stallStreams() was called: it will be stalled as soon as it streams. */
  candidate: boolean;
  stalledAt?: number;
}

export class StallingProxy {
  readonly port: number;
  private readonly server: Server;
  private readonly connections = new Set<Connection>();
  private quietMs = Infinity;
  private stalled = 0;
  private opened = 0;

  private constructor(server: Server, port: number) {
    this.server = server;
    this.port = port;
  }

  /** Listens on 127.0.0.1 on a free port and forwards every connection to `target`. */
  static async start(target: ProxyTarget): Promise<StallingProxy> {
    let proxy: StallingProxy | undefined;
    const server = createServer((client) => proxy?.accept(client, target));
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        resolve(typeof address === 'object' && address ? address.port : 0);
      });
    });
    proxy = new StallingProxy(server, port);
    return proxy;
  }

  /**
   * From now on, every connection open at this moment goes silent the first
   * time the server sends it something `quietMs` or more after the client's
   * last byte: a watch event, a bookmark or the server ending the watch.
   * Connections opened later are left alone, so a client that gives up on a
   * silent watch and reconnects gets through.
   */
  stallStreams(opts: { quietMs: number }): void {
    this.quietMs = opts.quietMs;
    for (const c of this.connections) c.candidate = true;
  }

  /** How many connections were opened, are open, and have been stalled. */
  stats(): { opened: number; open: number; stalled: number } {
    return { opened: this.opened, open: this.connections.size, stalled: this.stalled };
  }

  /** When each stalled connection went silent (performance.now()), oldest first. */
  stalledAt(): number[] {
    return [...this.connections].flatMap((c) => (c.stalledAt === undefined ? [] : [c.stalledAt])).sort((a, b) => a - b);
  }

  async close(): Promise<void> {
    for (const c of this.connections) {
      c.client.destroy();
      c.upstream.destroy();
    }
    this.connections.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: ProxyTarget): void {
    this.opened++;
    const upstream = connect(target.port, target.host);
    const c: Connection = { client, upstream, lastClientDataAt: performance.now(), candidate: false };
    this.connections.add(c);
    const drop = () => {
      this.connections.delete(c);
      client.destroy();
      upstream.destroy();
    };

    client.on('data', (chunk: Buffer) => {
      if (c.stalledAt !== undefined) return;
      c.lastClientDataAt = performance.now();
      forward(chunk, client, upstream);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.stalls(c)) return;
      forward(chunk, upstream, client);
    });
    // A client that gives up (the informer's watchdog) closes its side: the connection is over.
    client.on('end', drop);
    client.on('close', drop);
    client.on('error', drop);
    // The server ending a stalled stream is swallowed: the client must not learn of it.
    upstream.on('end', () => {
      if (!this.stalls(c)) client.end();
    });
    upstream.on('error', () => {
      if (c.stalledAt === undefined) drop();
    });
  }

  /** Whether `c` is (now) stalled: a candidate whose server speaks after the client has been quiet. */
  private stalls(c: Connection): boolean {
    if (c.stalledAt !== undefined) return true;
    if (!c.candidate || performance.now() - c.lastClientDataAt < this.quietMs) return false;
    c.stalledAt = performance.now();
    this.stalled++;
    return true;
  }
}

function forward(chunk: Buffer, from: Socket, to: Socket): void {
  if (to.destroyed) return;
  if (!to.write(chunk)) {
    from.pause();
    to.once('drain', () => from.resume());
  }
}

/** Writes a copy of the kubeconfig at `path` to `outPath` whose clusters go through `proxy`. */
export function kubeconfigThroughProxy(path: string, proxy: StallingProxy, outPath: string): string {
  const config = parse(readFileSync(path, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> };
  for (const { cluster } of config.clusters) {
    const url = new URL(cluster.server);
    url.host = `127.0.0.1:${proxy.port}`;
    cluster.server = url.toString().replace(/\/$/, '');
  }
  writeFileSync(outPath, stringify(config), { mode: 0o600 });
  return outPath;
}

/** The host and port of the (first) cluster in a kubeconfig. */
export function kubeconfigTarget(path: string): ProxyTarget {
  const config = parse(readFileSync(path, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> };
  const url = new URL(config.clusters[0]!.cluster.server);
  return { host: url.hostname, port: Number(url.port || 443) };
}
