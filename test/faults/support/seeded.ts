// A small seeded random source for fault tests, so a failing run can be
// repeated: the seed comes from FAULT_SEED when set, and every test prints it.
// mulberry32: tiny, fast and good enough to pick kill points and mutations.

export interface Random {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
}

export function seeded(seed: number): Random {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return {
    seed,
    next,
    int,
    pick: <T>(items: readonly T[]) => items[int(0, items.length - 1)]!,
    chance: (p: number) => next() < p,
  };
}

/** FAULT_SEED, or a fresh seed; printed so the run can be repeated with FAULT_SEED=<seed>. */
export function seedFor(test: string): Random {
  const fromEnv = process.env.FAULT_SEED;
  const seed = fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : Math.floor(Math.random() * 2 ** 31);
  if (!Number.isInteger(seed)) throw new Error(`FAULT_SEED must be an integer, got ${JSON.stringify(fromEnv)}`);
  console.log(`      ${test}: seed ${seed} (repeat with FAULT_SEED=${seed})`);
  return seeded(seed);
}
