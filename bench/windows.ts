// Window precision (issue 6): how long after a scale window's opening instant
// each app's live Revision carries the window's min-scale. Run with a
// controlled clock (the operator started with --clock-start shortly before a
// window) and on the real clock (a window at the next minute). The change's
// time is when the API server received the operator's patch (audit log); the
// opening's wall-clock time is given by the caller (see main.ts for how it is
// found under a controlled clock).
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { Kinds } from '../src/util/kinds.ts';
import type { OperatorProcess } from '../test/support/operator-process.ts';
import { OPERATOR_USER_AGENT, type BenchEnv } from './environment.ts';
import { sleep } from './stats.ts';
import { waitFor } from '../test/support/wait.ts';
import { SlimWatch } from './watch.ts';
import { IN_FLIGHT, benchApp, forEachBounded, imageOf, type AppRef } from './workload.ts';

type Window = NonNullable<NonNullable<ServerlessApp['spec']['scaling']>['windows']>[number];

const MIN_SCALE = 'autoscaling.knative.dev/min-scale';

/**
 * Creates one app per ref with `window`, which opens at `opensAtWallMs` on the wall clock; checks that
 * every revision serves with its bounds from before the opening, waits for each to carry the window's
 * min-scale, and returns each one's lag (ms) behind the opening.
 */
export async function measureWindowLag(env: BenchEnv, refs: AppRef[], window: Window, opensAtWallMs: number): Promise<number[]> {
  const namespace = refs[0]!.namespace;
  const revisions = new SlimWatch<string | undefined>(env.kc, Kinds.KnativeRevision, (o) => (o.metadata as { annotations?: Record<string, string> }).annotations?.[MIN_SCALE], { namespaces: [namespace] });
  await revisions.start();
  try {
    const since = new Date();
    await forEachBounded(refs, IN_FLIGHT, (r) => env.client.apply(benchApp(r, imageOf(r, 1), { scaling: { minScale: 0, maxScale: 10, windows: [window] } })));
    await until(() => revisions.values.size === refs.length && revisions.count((v) => v === '0') === refs.length, opensAtWallMs - 1_000,
      () => `only ${revisions.count((v) => v === '0')} of ${refs.length} revisions had min-scale 0 one second before the window could open: start earlier`);
    const want = String(window.minScale);
    await until(() => revisions.count((v) => v === want) === refs.length, opensAtWallMs + 120_000,
      () => `only ${revisions.count((v) => v === want)} of ${refs.length} revisions reached min-scale ${want}`);
    await sleep(1_000);
    const writes = env.cp.auditWrites({ since, userAgentPrefix: OPERATOR_USER_AGENT }).filter((w) => w.namespace === namespace);
    const lagsMs: number[] = [];
    for (const key of revisions.values.keys()) {
      const name = key.slice(namespace.length + 1);
      // The first patch of the revision close to the opening; earlier ones set its bounds when it was created.
      const patch = writes.find((w) => w.resource === 'revisions' && w.verb === 'patch' && w.name === name && w.timestamp.getTime() >= opensAtWallMs - 5_000);
      if (patch) lagsMs.push(patch.timestamp.getTime() - opensAtWallMs);
    }
    if (lagsMs.length < refs.length) throw new Error(`found the window's patch for ${lagsMs.length} of ${refs.length} revisions in the audit log`);
    return lagsMs;
  } finally {
    revisions.stop();
  }
}

/** Waits for `done` until the wall-clock instant `deadlineWallMs`; gives up saying `why()`. */
async function until(done: () => boolean, deadlineWallMs: number, why: () => string): Promise<void> {
  await waitFor('the revisions', done, { timeoutMs: Math.max(0, deadlineWallMs - Date.now()), intervalMs: 50 }).catch(() => { throw new Error(why()); });
}

/**
 * Flags that spare the operator its two startup API reads (they state what it would detect here:
 * Knative >= 1.21, KServe with namespaced model caches), so its `settings` line follows the clock's
 * creation within a few milliseconds.
 */
export const NO_STARTUP_READS = ['--knative-inplace-scaling', 'true', '--model-cache-scope', 'namespace'];

/**
 * When (wall clock) the operator created its clock, at the latest: src/main.ts creates it just before
 * the operator, whose `settings` line is logged at info level; with NO_STARTUP_READS nothing but object
 * construction lies between the two. A controlled clock runs at real speed from --clock-start from that
 * moment, so this says when its windows open, early by at most those few milliseconds; the lags
 * measured from it may be short by as much.
 */
export function clockCreatedBy(op: OperatorProcess): number {
  for (const line of op.output()) {
    try {
      const entry = JSON.parse(line) as { message?: string; ts?: string };
      if (entry.message === 'settings' && entry.ts) return Date.parse(entry.ts);
    } catch {
      // not a log line
    }
  }
  throw new Error('the operator logged no "settings" line: start it with --log-level info');
}

/** A daily window opening at `at` (UTC, to the minute). */
export function windowAt(at: Date, minScale: number): Window {
  return { name: 'bench', schedule: `${at.getUTCMinutes()} ${at.getUTCHours()} * * *`, duration: '1h', timeZone: 'UTC', minScale };
}
