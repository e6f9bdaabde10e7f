// Seeded canary flows for the kill trials: a short series of spec edits a
// user makes to one app (start a canary, move it, roll back, promote, revert),
// the moment the operator is killed, and the end state the last edit asks for.
// Only the last edit may promote, so until then the stable version is v1 and
// the expected end state follows from the last edit alone, wherever the kill
// landed.
import type { Random } from './seeded.ts';

export interface Edit {
  /** When, after the trial starts. */
  atMs: number;
  image: string;
  /** Absent: no rollout block (a plain rollout, i.e. promote once ready). */
  canaryPercent?: number;
}

export interface Flow {
  app: string;
  stableImage: string;
  candidateImage: string;
  /**
   * The candidate never becomes Ready: its image contains "unready" (the
   * stand-in's convention) and it needs a resource no rig node has, so on the
   * real Knative its pod stays unschedulable (see UNSCHEDULABLE).
   */
  unready: boolean;
  edits: Edit[];
  /** When the operator is SIGKILLed, after the trial starts. */
  killAtMs: number;
  /** How long it stays dead before a new one starts. */
  deadForMs: number;
}

export interface Expected {
  stableImage: string;
  /** Percent of traffic on the stable and the candidate tags of the Knative Service (absent tag = 0). */
  split: { stable: number; candidate: number };
  phase: 'Stable' | 'Canary' | 'RolledBack' | 'Promoting';
  /** Whether status may still name a candidate. */
  candidate: boolean;
}

const percent = (rng: Random) => rng.int(1, 19) * 5;

/**
 * A resource no rig node offers (an extended resource, so its request is its
 * limit): the scheduler never places the pod, KWOK never runs it, and Knative
 * never makes the revision Ready. (A large CPU request would not do: KWOK's
 * node stage gives its nodes 256 CPUs.)
 */
export const UNSCHEDULABLE = { limits: { 'fault-test.example.com/unschedulable': '1' } };

export function planFlow(rng: Random, app: string): Flow {
  const unready = rng.chance(0.3);
  const stableImage = `${app}:1`;
  const candidateImage = unready ? `${app}:2-unready` : `${app}:2`;
  const edits: Array<Omit<Edit, 'atMs'>> = [];
  if (rng.chance(0.15)) {
    edits.push({ image: candidateImage });
  } else {
    edits.push({ image: candidateImage, canaryPercent: percent(rng) });
    for (let i = rng.int(0, 2); i > 0; i--) edits.push({ image: candidateImage, canaryPercent: rng.chance(0.25) ? 0 : percent(rng) });
    const ending = rng.pick(['stay', 'promote', 'promote-by-removing', 'revert'] as const);
    if (ending === 'promote') edits.push({ image: candidateImage, canaryPercent: 100 });
    if (ending === 'promote-by-removing') edits.push({ image: candidateImage });
    if (ending === 'revert') edits.push({ image: stableImage, canaryPercent: edits.at(-1)!.canaryPercent! });
  }
  let at = 0;
  const timed = edits.map((e, i) => {
    if (i > 0) at += rng.int(100, 600);
    return { ...e, atMs: at };
  });
  // While the operator still has work: from the first edit to shortly after the last.
  return { app, stableImage, candidateImage, unready, edits: timed, killAtMs: rng.int(0, at + 300), deadForMs: rng.int(0, 400) };
}

/** What the last edit asks for, given that nothing before it promoted. */
export function expectedEnd(flow: Flow): Expected {
  const last = flow.edits.at(-1)!;
  const p = last.canaryPercent;
  if (last.image === flow.stableImage) return { stableImage: flow.stableImage, split: { stable: 100, candidate: 0 }, phase: 'Stable', candidate: false };
  const promote = p === undefined || p === 100;
  if (flow.unready) {
    return { stableImage: flow.stableImage, split: { stable: 100, candidate: 0 }, phase: promote ? 'Promoting' : p === 0 ? 'RolledBack' : 'Canary', candidate: true };
  }
  if (promote) return { stableImage: flow.candidateImage, split: { stable: 100, candidate: 0 }, phase: 'Stable', candidate: false };
  if (p === 0) return { stableImage: flow.stableImage, split: { stable: 100, candidate: 0 }, phase: 'RolledBack', candidate: true };
  return { stableImage: flow.stableImage, split: { stable: 100 - p, candidate: p }, phase: 'Canary', candidate: true };
}

export function describeFlow(flow: Flow): string {
  const step = (e: Edit) => `${e.image.endsWith(':1') ? 'v1' : e.image.includes('unready') ? 'v2(unready)' : 'v2'}${e.canaryPercent === undefined ? '' : `@${e.canaryPercent}`}`;
  return `${flow.edits.map(step).join(' -> ')}, SIGKILL at +${flow.killAtMs} ms, dead ${flow.deadForMs} ms`;
}
