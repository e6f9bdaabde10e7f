// A rate budget per namespace for the operator's outbound queries (analysis
// rounds to Prometheus): a token bucket each, refilled at `perSecond` up to
// `burst`. A round takes as many tokens as it sends queries; one that finds
// too few waits until the bucket holds them, so what one namespace's apps
// send to a shared Prometheus stays under its rate however many apps it has
// or how short their cadence, and other namespaces' rounds do not wait for
// it. Pure: the caller passes the time and does the waiting.

import { ANALYSIS_BURST_SECONDS } from './budget-defaults.ts';

export interface RateLimits {
  /** Queries a namespace may send per second in the long run. */
  perSecond: number;
  /** Queries it may send at once after a quiet spell. */
  burst: number;
}

/** The limits for a rate, with the burst of ANALYSIS_BURST_SECONDS of it. */
export function queryRateLimits(perSecond: number): RateLimits {
  return { perSecond, burst: Math.max(1, Math.ceil(perSecond * ANALYSIS_BURST_SECONDS)) };
}

export class QueryRates {
  readonly limits: RateLimits;
  readonly #buckets = new Map<string, { tokens: number; atMs: number }>();

  constructor(limits: RateLimits) {
    this.limits = { perSecond: Math.max(0.001, limits.perSecond), burst: Math.max(1, limits.burst) };
  }

  /**
   * Takes `cost` tokens for `namespace` at `nowMs` and answers 0; or, when the bucket holds too few, takes
   * nothing and answers how many milliseconds until it will. A cost past the burst waits for a full bucket
   * and is then charged in full, the bucket going below zero: the rounds after it wait for the rest.
   */
  take(namespace: string, cost: number, nowMs: number): number {
    const { perSecond, burst } = this.limits;
    const b = this.#buckets.get(namespace) ?? { tokens: burst, atMs: nowMs };
    const tokens = Math.min(burst, b.tokens + (Math.max(0, nowMs - b.atMs) / 1000) * perSecond);
    const need = Math.min(cost, burst);
    if (tokens >= need) {
      const left = tokens - cost;
      // A full bucket is the default: only namespaces that used some are remembered.
      if (left >= burst) this.#buckets.delete(namespace);
      else this.#buckets.set(namespace, { tokens: left, atMs: nowMs });
      return 0;
    }
    this.#buckets.set(namespace, { tokens, atMs: nowMs });
    return Math.ceil(((need - tokens) / perSecond) * 1000);
  }

  /** Namespaces whose bucket is not full (for tests: memory is bounded by the namespaces that queried lately). */
  get size(): number {
    return this.#buckets.size;
  }
}
