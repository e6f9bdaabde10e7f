// Runs an app's metric checks off the reconcile workers, as warmup already
// runs: a reconcile asks for the outcome of the current check round; the first
// ask starts it in the background, and its end re-queues the app, whose next
// reconcile reads the outcome. A slow or hostile analysis endpoint can hold
// one of a few analysis slots, never a reconcile worker, and at most
// `maxConcurrent` rounds run at once across all apps (the rest wait their turn).

import type { AnalysisOutcome } from './canary.ts';

export interface AnalysisRunnerOptions {
  /** Called when a round finished, with the app's key: re-queue it. */
  onDone: (key: string) => void;
  maxConcurrent?: number;
}

interface Round {
  id: string;
  outcome?: AnalysisOutcome;
  cancelled: boolean;
}

export class AnalysisRunner {
  private readonly rounds = new Map<string, Round>();
  private readonly waiting: Array<() => void> = [];
  private running = 0;
  private readonly max: number;
  private readonly onDone: (key: string) => void;

  constructor(o: AnalysisRunnerOptions) {
    this.onDone = o.onDone;
    this.max = Math.max(1, o.maxConcurrent ?? 4);
  }

  /**
   * The outcome of round `id` of app `key` once it has finished; undefined while
   * it runs (the first call starts it with `run`). A new round id replaces the old.
   */
  outcome(key: string, id: string, run: () => Promise<AnalysisOutcome>): AnalysisOutcome | undefined {
    const current = this.rounds.get(key);
    if (current?.id === id) return current.outcome;
    if (current) current.cancelled = true;
    const round: Round = { id, cancelled: false };
    this.rounds.set(key, round);
    void this.start(key, round, run);
    return undefined;
  }

  /** The app's last round, once finished: what the planner observes. */
  finished(key: string): { round: string; outcome: AnalysisOutcome } | undefined {
    const r = this.rounds.get(key);
    return r?.outcome ? { round: r.id, outcome: r.outcome } : undefined;
  }

  forget(key: string): void {
    const round = this.rounds.get(key);
    if (round) round.cancelled = true;
    this.rounds.delete(key);
  }

  private async start(key: string, round: Round, run: () => Promise<AnalysisOutcome>): Promise<void> {
    if (this.running >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      if (round.cancelled) return;
      try {
        round.outcome = await run();
      } catch (err) {
        round.outcome = { result: 'nodata', message: `analysis failed: ${(err as Error).message}` };
      }
      if (!round.cancelled) this.onDone(key);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}
