// Edit latency: with every app present, the time from a user's canaryPercent
// edit being accepted by the API server to the operator's new traffic split
// showing up in the rendered Knative Service (seen through a watch), and on
// to the data plane reporting it in the Service's status (the real Knative's
// Route, or the stand-in). Edits go one at a time, so each measures the path,
// not a queue of its own making.
import { Kinds } from '../src/util/kinds.ts';
import type { BenchEnv } from './environment.ts';
import { forEachBounded, IN_FLIGHT, benchApp, imageOf, keyOf, type AppRef } from './workload.ts';
import { SlimWatch } from './watch.ts';

type Split = Record<string, number>;
interface Splits { rendered: Split; reported: Split }
type Target = { tag?: string; percent?: number };

export interface EditLatency {
  /** Edit -> the split in the rendered Knative Service (the operator's path). */
  samplesMs: number[];
  /** Edit -> the split in the Knative Service's status (what the data plane reports serving). */
  reportedSamplesMs: number[];
  prepareSeconds: number;
}

const byTag = (traffic: Target[] | undefined): Split => Object.fromEntries((traffic ?? []).map((t) => [t.tag ?? 'latest', t.percent ?? 0]));

/** Puts `count` apps (spread over all) into a canary at 10%, then edits each one's canaryPercent once. */
export async function measureEditLatency(env: BenchEnv, refs: AppRef[], count: number): Promise<EditLatency> {
  const chosen = Array.from({ length: count }, (_, i) => refs[Math.floor((i * refs.length) / count)]!);
  const splits = new SlimWatch<Splits>(env.kc, Kinds.KnativeService, (o) => {
    const k = o as { spec?: { traffic?: Target[] }; status?: { traffic?: Target[] } };
    return { rendered: byTag(k.spec?.traffic), reported: byTag(k.status?.traffic) };
  }, { labelSelector: 'app.kubernetes.io/managed-by=serverlessapp-operator' });
  await splits.start();
  try {
    const prepared = performance.now();
    const canary = (r: AppRef, percent: number) => benchApp(r, imageOf(r, 2), { rollout: { canaryPercent: percent } });
    await forEachBounded(chosen, IN_FLIGHT, (r) => env.client.apply(canary(r, 10)));
    await Promise.all(chosen.map((r) => splits.until(keyOf(r), (s) => s.reported.candidate === 10, 300_000)));
    const prepareSeconds = (performance.now() - prepared) / 1000;

    const samplesMs: number[] = [];
    const reportedSamplesMs: number[] = [];
    for (const [i, r] of chosen.entries()) {
      const percent = 20 + (i % 7) * 10;
      await env.client.apply(canary(r, percent));
      const accepted = performance.now();
      const [rendered, reported] = await Promise.all([
        splits.until(keyOf(r), (s) => s.rendered.candidate === percent, 60_000),
        splits.until(keyOf(r), (s) => s.reported.candidate === percent, 120_000),
      ]);
      samplesMs.push(Math.max(0, rendered.at - accepted));
      reportedSamplesMs.push(Math.max(0, reported.at - accepted));
    }
    return { samplesMs, reportedSamplesMs, prepareSeconds };
  } finally {
    splits.stop();
  }
}
