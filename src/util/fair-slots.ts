// Slots for background work (warmup tasks, analysis rounds) shared fairly by
// namespaces: at most `perNamespace` held by one namespace and `total` by all.
// A caller that finds no free slot waits its turn: FIFO within its namespace,
// round-robin across namespaces, so one tenant's hundred waiting tasks delay
// another's by one turn at most.

export interface SlotLimits {
  perNamespace: number;
  total: number;
}

export class FairSlots {
  readonly limits: SlotLimits;
  readonly #held = new Map<string, number>();
  #total = 0;
  readonly #waiting = new Map<string, Array<() => void>>();
  /** Namespaces with waiters, in the order of their next turn. */
  #turns: string[] = [];

  constructor(limits: SlotLimits) {
    this.limits = { perNamespace: Math.max(1, limits.perNamespace), total: Math.max(1, limits.total) };
  }

  /** Whether `namespace` would get a slot at once; otherwise, which limit holds it back. */
  check(namespace: string): 'free' | 'namespace' | 'total' {
    if ((this.#held.get(namespace) ?? 0) >= this.limits.perNamespace) return 'namespace';
    if (this.#total >= this.limits.total) return 'total';
    return this.#waiting.has(namespace) ? 'namespace' : 'free';
  }

  /** Takes a slot for `namespace`, waiting its turn when none is free. Pair with release(). */
  acquire(namespace: string): Promise<void> {
    if (this.check(namespace) === 'free') {
      this.#take(namespace);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const queue = this.#waiting.get(namespace);
      if (queue) queue.push(resolve);
      else {
        this.#waiting.set(namespace, [resolve]);
        this.#turns.push(namespace);
      }
    });
  }

  release(namespace: string): void {
    const held = this.#held.get(namespace) ?? 0;
    if (held <= 0) return;
    if (held === 1) this.#held.delete(namespace);
    else this.#held.set(namespace, held - 1);
    this.#total--;
    this.#grant();
  }

  /** Slots held by `namespace` (or by all), and callers waiting. */
  held(namespace?: string): number {
    return namespace === undefined ? this.#total : this.#held.get(namespace) ?? 0;
  }

  waiting(namespace: string): number {
    return this.#waiting.get(namespace)?.length ?? 0;
  }

  #take(namespace: string): void {
    this.#held.set(namespace, (this.#held.get(namespace) ?? 0) + 1);
    this.#total++;
  }

  /** Hands free slots to waiters, one per namespace per pass, in turn order. */
  #grant(): void {
    let granted = true;
    while (granted && this.#total < this.limits.total) {
      granted = false;
      for (const namespace of [...this.#turns]) {
        if (this.#total >= this.limits.total) break;
        if ((this.#held.get(namespace) ?? 0) >= this.limits.perNamespace) continue;
        const queue = this.#waiting.get(namespace)!;
        const resolve = queue.shift()!;
        this.#turns = this.#turns.filter((n) => n !== namespace);
        if (queue.length > 0) this.#turns.push(namespace);
        else this.#waiting.delete(namespace);
        this.#take(namespace);
        resolve();
        granted = true;
      }
    }
  }
}
