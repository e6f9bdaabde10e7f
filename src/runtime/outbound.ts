// Outbound HTTP calls the operator makes on a tenant's behalf (Prometheus
// analysis, warmup requests). A tenant chooses paths, headers and sometimes the
// server, so every call is bounded the same way: one total deadline that also
// covers a server trickling its body, a byte cap enforced while streaming (the
// body is never buffered past it), no redirects, no Host or hop-by-hop headers,
// and failures described in a few fixed words plus a short sanitised excerpt,
// so nothing a server says and no internal address reaches status or events.
// node:http is used rather than axios: axios's `timeout` is an idle timeout and
// its size limit applies only after buffering.

import type { ClientRequest } from 'node:http';
import { forbiddenHeader } from '../util/http-headers.ts';
import { EXCERPT_CHARS, excerpt } from '../util/excerpt.ts';
import { http, https } from './node-http.ts';
import { deadlineIn, type TimerClock } from './clock.ts';

export { forbiddenHeader };

export { EXCERPT_CHARS, excerpt };

export type OutboundFailure = 'timeout' | 'too-large' | 'refused' | 'unreachable' | 'dns' | 'reset' | 'tls' | 'forbidden-header' | 'invalid-url' | 'invalid-request';

export class OutboundError extends Error {
  override name = 'OutboundError';
  readonly failure: OutboundFailure;
  constructor(failure: OutboundFailure, message: string) {
    super(message);
    this.failure = failure;
  }
}

export interface OutboundRequest {
  url: string | URL;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Total time for connect, request, headers and body. */
  deadlineMs: number;
  /** Largest response body accepted; past it the connection is cut. */
  maxBytes: number;
  /** Count the body but keep none of it (warmup needs only the status). */
  discardBody?: boolean;
  /** Ends the request at once (its task was forgotten, or the operator stops). */
  cancel?: AbortSignal;
  /** What the deadline runs on (default the system clock; tests step a manual one). */
  clock?: TimerClock;
}

export interface OutboundResponse {
  status: number;
  /** The body as UTF-8 (empty with discardBody). */
  body: string;
  bytes: number;
}

/**
 * Sends one request. Resolves with any HTTP status (a 3xx is returned, never
 * followed); rejects with an OutboundError whose message is safe to show.
 */
export function outboundRequest(req: OutboundRequest): Promise<OutboundResponse> {
  let url: URL;
  try {
    url = typeof req.url === 'string' ? new URL(req.url) : req.url;
  } catch {
    return Promise.reject(new OutboundError('invalid-url', 'invalid URL'));
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.reject(new OutboundError('invalid-url', `unsupported scheme ${JSON.stringify(url.protocol)}`));
  for (const name of Object.keys(req.headers ?? {})) {
    const why = forbiddenHeader(name);
    if (why) return Promise.reject(new OutboundError('forbidden-header', why));
  }
  const transport = url.protocol === 'https:' ? https : http;
  const deadline = deadlineIn(Math.max(1, req.deadlineMs), req.clock);
  const signal = req.cancel ? AbortSignal.any([deadline.signal, req.cancel]) : deadline.signal;
  const answer = new Promise<OutboundResponse>((resolve, reject) => {
    let settled = false;
    const fail = (e: OutboundError) => {
      if (settled) return;
      settled = true;
      request.destroy();
      reject(e);
    };
    let request: ClientRequest;
    try {
      request = transport.request(url, {
        method: req.method ?? 'GET',
        headers: { ...req.headers, ...(req.body !== undefined ? { 'content-length': String(Buffer.byteLength(req.body)) } : {}) },
        signal,
        // A fresh connection per call: a pooled socket would outlive the call's deadline.
        agent: false,
      }, (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > req.maxBytes) return fail(new OutboundError('too-large', `response larger than ${req.maxBytes} bytes`));
          if (!req.discardBody) chunks.push(chunk);
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          resolve({ status: res.statusCode ?? 0, body: req.discardBody ? '' : Buffer.concat(chunks).toString('utf8'), bytes });
        });
        res.on('error', (e) => fail(classify(e, deadline.signal, req.deadlineMs)));
        res.on('close', () => fail(classify(new Error('closed'), deadline.signal, req.deadlineMs)));
      });
    } catch {
      // Node refuses a header with control characters before sending anything.
      return reject(new OutboundError('invalid-request', 'request refused: a header name or value has invalid characters'));
    }
    request.on('error', (e) => fail(classify(e, deadline.signal, req.deadlineMs)));
    request.end(req.body);
  });
  // Once the call settled its deadline no longer matters: no timer outlives it.
  return answer.finally(() => deadline.cancel());
}

/** A fixed phrase per failure: error texts from the socket name addresses and ports, which must not reach a tenant. */
function classify(e: Error, signal: AbortSignal, deadlineMs: number): OutboundError {
  if (e instanceof OutboundError) return e;
  if (signal.aborted) return new OutboundError('timeout', `no complete response within ${deadlineMs} ms`);
  const code = (e as NodeJS.ErrnoException).code ?? '';
  if (code === 'ECONNREFUSED') return new OutboundError('refused', 'connection refused');
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new OutboundError('dns', 'host name not found');
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'ETIMEDOUT') return new OutboundError('unreachable', 'host unreachable');
  if (code.startsWith('ERR_TLS') || code.startsWith('CERT_') || code.includes('SSL') || code === 'DEPTH_ZERO_SELF_SIGNED_CERT' || code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE') return new OutboundError('tls', 'TLS handshake failed');
  return new OutboundError('reset', 'connection closed before a complete response');
}

/** A short description of a non-2xx answer: the status, and for a redirect that it was not followed. */
export function describeStatus(status: number): string {
  return status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`;
}
