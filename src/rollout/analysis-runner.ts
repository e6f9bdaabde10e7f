// Runs an app's metric checks off the reconcile workers, as warmup already
// runs: a reconcile asks for the outcome of the current check round; the first
// ask starts it in the background, and its end re-queues the app, whose next
// reconcile reads the outcome. A slow or hostile analysis endpoint can hold
// one of a few analysis slots, never a reconcile worker. Slots are shared
// fairly (util/fair-slots.ts): a few per namespace and a cap for all, handed
// round-robin across namespaces; a round that waits says so (onWait). A round
// that throws ends as "nodata", never as an unhandled rejection. A round replaced,
// forgotten or stopped has its requests cut (the signal `run` is given). With a
// rate budget (util/query-rate.ts), a round first waits until its namespace may
// send its queries: what one namespace sends to Prometheus is bounded by design.

import { FairSlots, type SlotLimits } from '../util/fair-slots.ts';
import { QueryRates, type RateLimits } from '../util/query-rate.ts';
import type { AnalysisOutcome } from './canary.ts';
import { namespaceOf } from '../util/object-key.ts';
import { DEFAULT_ANALYSIS_SLOTS } from '../util/budget-defaults.ts';

export interface AnalysisRunnerOptions {
  /** Called when a round finished, with the app's key: re-queue it. */
  onDone: (key: string) => void;
  /** A round waits: for a slot (its namespace has `perNamespace` running, or the operator `total`), or for its namespace's query rate. */
  onWait?: (key: string, message: string, limit: 'namespace' | 'total' | 'rate') => void;
  /** Rounds running at once, per namespace and in all (default DEFAULT_ANALYSIS_SLOTS). */
  slots?: SlotLimits;
  /** Queries per namespace per second (default: unbounded); needs `now` and `wait`. */
  rates?: RateLimits;
  /** The clock the rate budget refills on, in ms. */
  now?: () => number;
  /** Waits `ms` (ends early, without error, when `signal` aborts). */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
}


interface Round {
  id: string;
  outcome?: AnalysisOutcome;
  cancel: AbortController;
}

export class AnalysisRunner {
  private readonly rounds = new Map<string, Round>();
  private readonly slots: FairSlots;
  private readonly rates?: QueryRates;
  private readonly o: AnalysisRunnerOptions;

  constructor(o: AnalysisRunnerOptions) {
    this.o = o;
    this.slots = new FairSlots(o.slots ?? DEFAULT_ANALYSIS_SLOTS);
    if (o.rates && o.now && o.wait) this.rates = new QueryRates(o.rates);
  }

  /**
   * The outcome of round `id` of app `key` once it has finished; undefined while
   * it runs (the first call starts it with `run`, whose requests take the signal). A new round id
   * replaces the old.
   */
  outcome(key: string, id: string, run: (signal: AbortSignal) => Promise<AnalysisOutcome>, queries = 1): AnalysisOutcome | undefined {
    const current = this.rounds.get(key);
    if (current?.id === id) return current.outcome;
    current?.cancel.abort();
    const round: Round = { id, cancel: new AbortController() };
    this.rounds.set(key, round);
    this.start(key, round, run, queries).catch(() => {
      // start() settles every round itself; only a throwing onDone lands here, and it must not become an unhandled rejection.
    });
    return undefined;
  }

  /** The app's last round, once finished: what the planner observes. */
  finished(key: string): { round: string; outcome: AnalysisOutcome } | undefined {
    const r = this.rounds.get(key);
    return r?.outcome ? { round: r.id, outcome: r.outcome } : undefined;
  }

  forget(key: string): void {
    this.rounds.get(key)?.cancel.abort();
    this.rounds.delete(key);
  }

  stop(): void {
    for (const key of [...this.rounds.keys()]) this.forget(key);
  }

  private async start(key: string, round: Round, run: (signal: AbortSignal) => Promise<AnalysisOutcome>, queries: number): Promise<void> {
    const namespace = namespaceOf(key);
    // The rate first: a round waiting for its namespace's tokens holds no slot another namespace could use.
    if (this.rates) {
      const { signal } = round.cancel;
      let told = false;
      for (let ms = this.rates.take(namespace, queries, this.o.now!()); ms > 0; ms = this.rates.take(namespace, queries, this.o.now!())) {
        if (!told) {
          this.o.onWait?.(key, `analysis round waits ${Math.ceil(ms / 1000)}s: namespace ${namespace} has used its budget of ${this.rates.limits.perSecond} queries per second (--analysis-queries-per-namespace); its rounds come less often than their cadence`, 'rate');
          told = true;
        }
        await this.o.wait!(ms, signal);
        if (signal.aborted) return;
      }
    }
    const limit = this.slots.check(namespace);
    if (limit !== 'free') {
      const { perNamespace, total } = this.slots.limits;
      this.o.onWait?.(key, limit === 'namespace'
        ? `analysis round waits for a slot: namespace ${namespace} already runs ${perNamespace} (--max-analyses-per-namespace)`
        : `analysis round waits for a slot: the operator already runs ${total} (--max-concurrent-analyses)`, limit);
    }
    await this.slots.acquire(namespace);
    try {
      const { signal } = round.cancel;
      if (signal.aborted) return;
      try {
        round.outcome = await run(signal);
      } catch (err) {
        round.outcome = { result: 'nodata', message: `analysis failed: ${(err as Error)?.message ?? String(err)}` };
      }
      if (!signal.aborted) this.o.onDone(key);
    } finally {
      this.slots.release(namespace);
    }
  }
}
