// Small helpers the runtime's unit tests share with their fake API servers (test support: not built into dist/). waitFor is the unit tests' one polling helper (the integration tests' is test/support/cluster.ts waitFor).
import type { ServerResponse } from 'node:http';

/** Answers a request with `body` as JSON. */
export function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Resolves once `cond` holds; fails naming `what` after `ms`. */
export async function waitFor(what: string, cond: () => boolean, ms = 5_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
