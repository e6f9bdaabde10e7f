// A small least-recently-used cache with a size cap: work that depends only on
// content (a schedule, a regex, a spec) is done once per content, and a tenant
// who keeps changing that content only evicts older entries, never grows memory.

export class Lru<V> {
  readonly #max: number;
  readonly #entries = new Map<string, V>();

  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): V | undefined {
    const v = this.#entries.get(key);
    if (v !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, v);
    }
    return v;
  }

  set(key: string, v: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, v);
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value!);
  }
}
