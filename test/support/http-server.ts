// A loopback HTTP server for tests: records requests and answers with a
// programmable handler (warmup targets, a fake Prometheus query API).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded { method: string; url: string; headers: IncomingMessage['headers']; body: string }

export class LoopbackServer {
  readonly requests: Recorded[] = [];
  /** Responses not yet finished (a server holding requests open). */
  open = 0;
  handler: (req: Recorded, res: ServerResponse) => void = (_req, res) => res.end('ok');
  private server?: Server;
  port = 0;

  /** `handler`: how it answers (default "ok"). */
  constructor(handler?: (req: Recorded, res: ServerResponse) => void) {
    if (handler) this.handler = handler;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.open++;
      res.on('close', () => this.open--);
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const r = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
        this.requests.push(r);
        this.handler(r, res);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server!.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** A Prometheus /api/v1/query answer with one sample (or none). */
export function promVector(value?: number | string): string {
  const result = value === undefined ? [] : [{ metric: {}, value: [Date.now() / 1000, String(value)] }];
  return JSON.stringify({ status: 'success', data: { resultType: 'vector', result } });
}
