// What leader-election tests judge a run by: a timeline of who believed it
// led, in the order the electors said so.

/** [identity, leading, ...anything else the test records] in the order the hooks fired. */
export type LeadershipTimeline = ReadonlyArray<readonly [string, boolean, ...unknown[]]>;

/** The largest number of candidates that believed they led at the same time (safety: never above 1). */
export function maxConcurrentLeaders(timeline: LeadershipTimeline): number {
  let leading = 0;
  let max = 0;
  for (const [, isLeader] of timeline) max = Math.max(max, (leading += isLeader ? 1 : -1));
  return max;
}
