// Small helpers the runtime's unit tests share with their fake API servers (test support: not built into dist/).
import type { ServerResponse } from 'node:http';

/** Answers a request with `body` as JSON. */
export function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
