// A scripted Prometheus for SLO tests: each version's requests and errors in
// fixed buckets of a virtual clock, answered over the instant-query API for the
// three query shapes the tests write (examples/slo-gated-release.yaml's):
//   error ratio  (sum(increase(requests_total{version="V",code=~"5.."}[W])) or vector(0)) / sum(increase(requests_total{version="V"}[W]))
//   good         sum(increase(requests_total{version="V",code!~"5.."}[W]))
//   total        sum(increase(requests_total{version="V"}[W]))
// A window with no requests answers an empty vector (no data), as Prometheus
// does once `sum` has no series to add; so does an error ratio whose window
// holds no error, unless its numerator is `... or vector(0)` (Prometheus has
// no 5xx series to sum then, and empty / anything is empty). Prefix sums make any window O(1), so
// a trace of weeks replays in milliseconds. SIMULATED: this is not Prometheus.

import type { ServerResponse } from 'node:http';
import { parseDuration } from '../../src/api/v1alpha1/duration.ts';
import { LoopbackServer, promVector, type Recorded } from './http-server.ts';
import { seededRandom } from '../../src/testing/regex-sample.ts';

/** A deterministic pseudo-random stream: the same seed replays the same trace. */
export const seeded = seededRandom;

export interface Bucket { total: number; errors: number }

/** Cumulative request and error counts per version, bucket by bucket from `startMs`. */
export class ErrorSeries {
  private readonly cumulative = new Map<string, { total: number[]; errors: number[] }>();

  readonly startMs: number;
  readonly bucketMs: number;

  constructor(startMs: number, bucketMs = 10_000) {
    this.startMs = startMs;
    this.bucketMs = bucketMs;
  }

  /** Appends buckets to `version` up to (not including) `untilMs`, each from `bucket(atMs)`. */
  fill(version: string, untilMs: number, bucket: (atMs: number) => Bucket): this {
    const c = this.cumulative.get(version) ?? { total: [0], errors: [0] };
    this.cumulative.set(version, c);
    for (let i = c.total.length - 1; this.startMs + i * this.bucketMs < untilMs; i++) {
      const b = bucket(this.startMs + i * this.bucketMs);
      c.total.push(c.total[i]! + b.total);
      c.errors.push(c.errors[i]! + b.errors);
    }
    return this;
  }

  /** Drops `version`'s buckets from `atMs` on, so that a later fill scripts what happens from then (a burn that starts). */
  truncate(version: string, atMs: number): this {
    const c = this.cumulative.get(version);
    const keep = Math.max(1, Math.floor((atMs - this.startMs) / this.bucketMs) + 1);
    if (c && c.total.length > keep) {
      c.total.length = keep;
      c.errors.length = keep;
    }
    return this;
  }

  /** Requests and errors of `version` in the window (atMs - windowMs, atMs], in whole buckets. */
  window(version: string, windowMs: number, atMs: number): Bucket {
    const c = this.cumulative.get(version);
    if (!c) return { total: 0, errors: 0 };
    const last = c.total.length - 1;
    const hi = Math.min(last, Math.floor((atMs - this.startMs) / this.bucketMs));
    const lo = Math.max(0, Math.min(hi, Math.floor((atMs - windowMs - this.startMs) / this.bucketMs)));
    if (hi < 0) return { total: 0, errors: 0 };
    return { total: c.total[hi]! - c.total[lo]!, errors: c.errors[hi]! - c.errors[lo]! };
  }

  /** The error ratio over the window, undefined without requests. */
  ratio(version: string, windowMs: number, atMs: number): number | undefined {
    const w = this.window(version, windowMs, atMs);
    return w.total > 0 ? w.errors / w.total : undefined;
  }
}

/** The error ratio of `version` over each of `windows` at `atMs` (0 without requests): what a gate round reads, straight from the series. */
export function ratiosAt(series: ErrorSeries, version: string, windows: readonly string[], atMs: number): Map<string, number> {
  return new Map(windows.map((w) => [w, series.ratio(version, parseDuration(w), atMs) ?? 0]));
}

/** The value of one query at `atMs`, or undefined (no data) for no requests, an unknown shape or version. */
export function evaluate(series: ErrorSeries, query: string, atMs: number): number | undefined {
  const version = /version="([^"]*)"/.exec(query)?.[1];
  const range = /\[([0-9a-z]+)\]/.exec(query)?.[1];
  if (version === undefined || range === undefined) return undefined;
  const w = series.window(version, parseDuration(range), atMs);
  if (query.includes(' / ')) {
    // As Prometheus: no 5xx series in the window is an empty numerator, and an empty vector divided is empty,
    // unless the query says `or vector(0)`.
    if (w.errors === 0 && !/or\s+vector\(0\)/.test(query)) return undefined;
    return w.total > 0 ? w.errors / w.total : undefined;
  }
  if (query.includes('code!~')) return w.total > 0 ? w.total - w.errors : undefined;
  return w.total > 0 ? w.total : undefined;
}

/** The series served over loopback at the test's clock; `down` answers 503 (Prometheus unreachable). */
export class ScriptedPrometheus {
  readonly server: LoopbackServer;
  down = false;
  readonly queries: string[] = [];

  /** What it answers from (a test may swap it). */
  series: ErrorSeries;

  /** `now`: the test's clock. */
  constructor(series: ErrorSeries, now: () => Date) {
    this.series = series;
    this.server = new LoopbackServer((req: Recorded, res: ServerResponse) => {
      const query = new URL(req.url, 'http://x').searchParams.get('query') ?? '';
      this.queries.push(query);
      if (this.down) {
        res.statusCode = 503;
        res.end('unavailable');
        return;
      }
      res.setHeader('content-type', 'application/json');
      const value = evaluate(this.series, query, now().getTime());
      res.end(promVector(value));
    });
  }

  start(): Promise<LoopbackServer> {
    return this.server.start();
  }

  stop(): Promise<void> {
    return this.server.stop();
  }
}

/** A version that exists from `startMs` on: no requests before (its long windows hold only its life so far). */
export function since(startMs: number, bucket: (atMs: number) => Bucket): (atMs: number) => Bucket {
  return (atMs) => (atMs < startMs ? { total: 0, errors: 0 } : bucket(atMs));
}

/** Errors among `n` requests each failing with probability `p`: Poisson for few expected (Knuth), else normal (Box-Muller). */
export function errorsAmong(n: number, p: number, random: () => number): number {
  const mean = n * p;
  if (mean < 30) {
    const limit = Math.exp(-mean);
    let k = 0;
    for (let product = random(); product > limit; product *= random()) k++;
    return Math.min(n, k);
  }
  const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return Math.max(0, Math.min(n, Math.round(mean + Math.sqrt(mean * (1 - p)) * z)));
}
