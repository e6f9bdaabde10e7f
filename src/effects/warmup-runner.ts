// Sends warmup requests to a version's revision, off the reconcile path: a
// warmup endpoint that hangs or answers 5xx holds only its own task, never a
// reconcile worker. Each task retries with exponential backoff until `count`
// requests succeeded or the deadline passed, reports progress through
// callbacks (which enqueue the app and record Events), and is forgotten when
// its version is no longer being prewarmed. Each request is one bounded
// outbound call (runtime/outbound.ts): a total deadline, a byte cap on a body
// that is counted and dropped, no redirects, no Host or hop-by-hop headers.
// Tasks share fair slots (util/fair-slots.ts): a few per namespace and a cap
// for all, so one tenant's thousand apps cannot crowd out another's warmup; a
// task that must wait for a slot says so (onWait) and its deadline keeps
// running. A task that throws ends as failed, never as an unhandled rejection.

import type { WarmupSpec } from '../api/v1alpha1/serverlessapp.ts';
import { warmupUrl, type WarmupProgress, type WarmupTarget } from '../prewarm/warmup-progress.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import { sleep, type TimerClock } from '../runtime/clock.ts';
import { OutboundError, describeStatus, outboundRequest } from '../runtime/outbound.ts';
import { FairSlots, type SlotLimits } from '../util/fair-slots.ts';
import { WARMUP_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import { DEFAULT_WARMUP_SLOTS } from '../util/budget-defaults.ts';

export interface WarmupRunnerOptions {
  /** What deadlines are read on and backoff waits on (tests may step a manual one). */
  clock: TimerClock;
  /** e.g. "http://{revision}-private.{namespace}.svc.cluster.local"; {path} may appear, else the path is appended. */
  urlTemplate: string;
  /** An LLM version's, e.g. "http://{service}.{namespace}.svc.cluster.local:8000{path}" ({service}: its KServe workload Service). */
  llmUrlTemplate: string;
  /** Called whenever a task makes progress or ends: the owner re-enqueues the app. */
  onProgress: (key: string) => void;
  onRetry?: (key: string, message: string) => void;
  /** A task waits for a slot: its namespace has `perNamespace` running, or the operator `total`. */
  onWait?: (key: string, message: string, limit: 'namespace' | 'total') => void;
  /** Warmup tasks running at once, per namespace and in all (default DEFAULT_WARMUP_SLOTS). */
  slots?: SlotLimits;
  /** Largest warmup response read before the request counts as failed (default WARMUP_MAX_BYTES). */
  maxResponseBytes?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/** `cancel` aborts once the task is forgotten or replaced: its backoff wait ends at once. */
interface Task { id: string; version: string; revision: string; progress: WarmupProgress; cancel: AbortController }

const MIN_REQUEST_MS = 20;
/** Warmup reads a response only to its end (the body is dropped): 16 MiB covers large inference answers. */
export const WARMUP_MAX_BYTES = 16 << 20;

export type { WarmupProgress, WarmupTarget };

export class WarmupRunner {
  private readonly tasks = new Map<string, Task>();
  private readonly o: WarmupRunnerOptions;
  private readonly slots: FairSlots;
  /** Requests sent in all, for tests and metrics. */
  sent = 0;

  constructor(o: WarmupRunnerOptions) {
    this.o = o;
    this.slots = new FairSlots(o.slots ?? DEFAULT_WARMUP_SLOTS);
  }

  /** The task held for an app, whatever its version: what the planner observes. */
  current(key: string): { version: string; revision: string; progress: WarmupProgress } | undefined {
    const task = this.tasks.get(key);
    return task ? { version: task.version, revision: task.revision, progress: task.progress } : undefined;
  }

  /** Starts warming a revision unless already done or under way; `startedAt` anchors the deadline. */
  ensure(t: WarmupTarget, spec: WarmupSpec, startedAt: Date): WarmupProgress {
    const existing = this.tasks.get(t.key);
    if (existing && existing.id === taskId(t)) return existing.progress;
    if (existing) existing.cancel.abort();
    const task: Task = { id: taskId(t), version: t.version, revision: t.revision, progress: { phase: 'running', sent: 0, succeeded: 0, startedAt }, cancel: new AbortController() };
    this.tasks.set(t.key, task);
    this.run(task, t, spec, startedAt).catch((err: unknown) => {
      task.progress = { phase: 'failed', sent: task.progress.sent, succeeded: task.progress.succeeded, startedAt, lastError: `warmup failed: ${(err as Error)?.message ?? String(err)}`, finishedAt: this.o.clock.now() };
      if (!task.cancel.signal.aborted) notify(() => this.o.onProgress(t.key));
    });
    return task.progress;
  }

  /** Forget an app's task (deleted app, or its version no longer prewarming). */
  forget(key: string): void {
    const task = this.tasks.get(key);
    if (task) task.cancel.abort();
    this.tasks.delete(key);
  }

  stop(): void {
    for (const key of [...this.tasks.keys()]) this.forget(key);
  }

  private async run(task: Task, t: WarmupTarget, spec: WarmupSpec, startedAt: Date): Promise<void> {
    const limit = this.slots.check(t.namespace);
    if (limit !== 'free') {
      const { perNamespace, total } = this.slots.limits;
      this.o.onWait?.(t.key, limit === 'namespace'
        ? `warmup of revision ${t.revision} waits for a slot: namespace ${t.namespace} already runs ${perNamespace} warmups (--max-warmups-per-namespace); its deadline keeps running`
        : `warmup of revision ${t.revision} waits for a slot: the operator already runs ${total} warmups (--max-concurrent-warmups); its deadline keeps running`, limit);
    }
    await this.slots.acquire(t.namespace);
    try {
      if (!task.cancel.signal.aborted) await this.warm(task, t, spec, startedAt, limit !== 'free');
    } finally {
      this.slots.release(t.namespace);
    }
  }

  private async warm(task: Task, t: WarmupTarget, spec: WarmupSpec, startedAt: Date, waited: boolean): Promise<void> {
    const want = spec.count ?? WARMUP_DEFAULTS.count;
    const deadline = startedAt.getTime() + parseDuration(spec.deadline ?? WARMUP_DEFAULTS.deadline);
    const timeout = parseDuration(spec.timeout ?? WARMUP_DEFAULTS.timeout);
    const url = warmupUrl(t.llm ? this.o.llmUrlTemplate : this.o.urlTemplate, t, spec.path);
    let backoff = this.o.initialBackoffMs ?? 500;
    const p = { sent: 0, succeeded: 0, lastError: undefined as string | undefined, startedAt };
    while (!task.cancel.signal.aborted) {
      // A request squeezed into the deadline's last moments would only report its own timeout.
      if (this.o.clock.now().getTime() >= deadline - MIN_REQUEST_MS) {
        if (waited && p.sent === 0) p.lastError = 'the deadline passed while waiting for a warmup slot';
        task.progress = { phase: 'failed', ...p, finishedAt: this.o.clock.now() };
        break;
      }
      p.sent++; this.sent++;
      const error = await this.send(url, spec, Math.min(timeout, Math.max(1, deadline - this.o.clock.now().getTime())), task.cancel.signal);
      if (task.cancel.signal.aborted) return;
      if (!error) {
        p.succeeded++;
        backoff = this.o.initialBackoffMs ?? 500;
        if (p.succeeded >= want) {
          task.progress = { phase: 'succeeded', ...p, finishedAt: this.o.clock.now() };
          break;
        }
        task.progress = { phase: 'running', ...p };
        continue;
      }
      p.lastError = error;
      task.progress = { phase: 'running', ...p };
      // One message per revision and error, so repeated failures aggregate into one Event with a count.
      this.o.onRetry?.(t.key, `warmup requests to revision ${t.revision} fail (${error}); retrying with backoff until the warmup deadline`);
      this.o.onProgress(t.key);
      await sleep(Math.min(backoff, Math.max(0, deadline - this.o.clock.now().getTime())), task.cancel.signal, this.o.clock);
      backoff = Math.min(backoff * 2, this.o.maxBackoffMs ?? 30_000);
    }
    if (!task.cancel.signal.aborted) this.o.onProgress(t.key);
  }

  /** Undefined on a 2xx answer, else a short fixed description (never the server's words or an address). */
  private async send(url: string, spec: WarmupSpec, timeoutMs: number, cancel: AbortSignal): Promise<string | undefined> {
    try {
      const res = await outboundRequest({
        url, method: spec.method ?? WARMUP_DEFAULTS.method, headers: spec.headers ?? {}, ...(spec.body !== undefined ? { body: spec.body } : {}),
        deadlineMs: timeoutMs, maxBytes: this.o.maxResponseBytes ?? WARMUP_MAX_BYTES, discardBody: true, cancel, clock: this.o.clock,
      });
      return res.status >= 200 && res.status < 300 ? undefined : describeStatus(res.status);
    } catch (e) {
      return e instanceof OutboundError ? e.message : 'request failed';
    }
  }
}

function taskId(t: WarmupTarget): string {
  return `${t.version}/${t.revision}`;
}

/** A callback's throw is the owner's bug; it must not end the task as an unhandled rejection. */
function notify(callback: () => void): void {
  try {
    callback();
  } catch {
    // nothing to report to: the owner's callback is the reporting path
  }
}
