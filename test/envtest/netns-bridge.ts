// SIMULATED NETWORK: the rig's stand-in for kube-proxy and cluster DNS.
// The upstream data-plane processes run in network namespaces with no route
// out; unix sockets are files, so they cross namespaces where TCP cannot.
// Three roles, all plain byte pipes (TLS stays end to end):
//  - host side (in the harness, or a detached process for `npm run cluster`):
//    a unix socket piped to kube-apiserver on host 127.0.0.1;
//  - inside a namespace: 127.0.0.1:<port> piped to that unix socket, so the
//    components' kubeconfig says https://127.0.0.1:<port> (the serving
//    certificate is valid for it);
//  - inside a namespace: an HTTP CONNECT proxy on a unix socket, which
//    kube-apiserver's egress selector (`cluster`) uses to reach Service-
//    referenced webhooks: kube-apiserver dials the Service's ClusterIP:PORT,
//    which this maps to the local port of the process playing that Service, as
//    kube-proxy would. The map is a JSON file ({"CLUSTERIP:PORT": LOCALPORT})
//    the harness adds to as Services appear; it is read on every CONNECT. The
//    harness also dials `127.0.0.1:PORT` through it to probe components inside.
// Run as a program: node netns-bridge.ts host UDS PORT
//                   node netns-bridge.ts ns --listen PORT --to UDS [--connect UDS --services FILE]
import { readFileSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { parseArgs } from 'node:util';

/** Serves `udsPath`, piping each connection to 127.0.0.1:`port`. */
export function serveUdsToTcp(udsPath: string, port: number): Promise<Server> {
  return listen(createServer((client) => pipe(client, connect(port, '127.0.0.1'))), udsPath);
}

/** Serves 127.0.0.1:`port`, piping each connection to `udsPath`. */
export function serveTcpToUds(port: number, udsPath: string): Promise<Server> {
  return listen(createServer((client) => pipe(client, connect(udsPath))), port);
}

/** An HTTP CONNECT proxy on `udsPath`: Service addresses via `services()`, or `127.0.0.1:PORT` directly. */
export function serveConnectProxy(udsPath: string, services: () => Record<string, number>): Promise<Server> {
  return listen(createServer((client) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > 8192) client.destroy();
        return;
      }
      client.off('data', onData);
      const target = /^CONNECT (\S+) HTTP\/1\.[01]\r\n/.exec(head.toString('latin1'))?.[1] ?? '';
      const port = services()[target] ?? localPort(target);
      if (port === undefined) {
        client.end(`HTTP/1.1 502 Bad Gateway\r\n\r\nno simulated Service ${target}\n`);
        return;
      }
      const upstream = connect(port, '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        const rest = head.subarray(end + 4);
        if (rest.length > 0) upstream.write(rest);
        pipe(client, upstream);
      });
      upstream.once('error', () => client.destroy());
    };
    client.on('data', onData);
    client.on('error', () => {});
  }), udsPath);
}

/** A socket to 127.0.0.1:`port` inside a namespace, through its CONNECT proxy at `udsPath`. */
export function dialThrough(udsPath: string, port: number, timeoutMs = 2_000): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(udsPath);
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`CONNECT 127.0.0.1:${port} timed out`)); }, timeoutMs);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      clearTimeout(timer);
      const status = head.toString('latin1').split(' ')[1];
      if (status !== '200') {
        socket.destroy();
        return reject(new Error(`CONNECT 127.0.0.1:${port}: ${head.toString('latin1').split('\r\n')[0]}`));
      }
      if (end + 4 < head.length) socket.unshift(head.subarray(end + 4));
      resolve(socket);
    };
    socket.on('data', onData);
    socket.once('error', (err) => { clearTimeout(timer); reject(err); });
    socket.once('connect', () => socket.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
  });
}

/** The Service map file; missing or half-written counts as empty (the harness writes it atomically). */
export function readServices(path: string): Record<string, number> {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

function localPort(target: string): number | undefined {
  const m = /^127\.0\.0\.1:(\d+)$/.exec(target);
  return m ? Number(m[1]) : undefined;
}

function pipe(a: Socket, b: Socket): void {
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
  a.pipe(b);
  b.pipe(a);
}

function listen(server: Server, where: string | number): Promise<Server> {
  if (typeof where === 'string') rmSync(where, { force: true });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const ready = () => { server.off('error', reject); resolve(server); };
    if (typeof where === 'string') server.listen(where, ready);
    else server.listen(where, '127.0.0.1', ready);
  });
}

async function main(argv: string[]): Promise<void> {
  const [role, ...rest] = argv;
  if (role === 'host') {
    await serveUdsToTcp(rest[0] ?? '', Number(rest[1]));
    return;
  }
  const { values } = parseArgs({
    args: rest,
    options: { listen: { type: 'string' }, to: { type: 'string' }, connect: { type: 'string' }, services: { type: 'string' } },
  });
  if (role !== 'ns' || !values.listen || !values.to) throw new Error('usage: netns-bridge.ts host UDS PORT | ns --listen PORT --to UDS [--connect UDS --services FILE]');
  await serveTcpToUds(Number(values.listen), values.to);
  const servicesFile = values.services;
  if (values.connect) await serveConnectProxy(values.connect, () => (servicesFile ? readServices(servicesFile) : {}));
  console.log(`netns-bridge ${role} ready`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(`netns-bridge: ${(err as Error).message}`);
    process.exit(1);
  });
}
