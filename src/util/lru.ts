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

/** Namespaces a NamespacedLru keeps at once: validation's caches hold this many tenants' entries. */
export const CACHED_NAMESPACES = 512;

/**
 * One Lru per namespace, each capped, and at most `namespaces` of them (the least recently used namespace's
 * dropped first). Work cached by content is cached where the namespace's share pays for it: a tenant who
 * keeps changing its content (new regexes, new windows in new zones) evicts only its own entries, never
 * another namespace's, so a neighbour's storm does not make every other namespace's edits pay again.
 */
export class NamespacedLru<V> {
  readonly #perNamespace: number;
  readonly #spaces: Lru<Lru<V>>;

  constructor(perNamespace: number, namespaces: number) {
    this.#perNamespace = perNamespace;
    this.#spaces = new Lru(namespaces);
  }

  get(namespace: string, key: string): V | undefined {
    return this.#spaces.get(namespace)?.get(key);
  }

  set(namespace: string, key: string, v: V): void {
    let space = this.#spaces.get(namespace);
    if (!space) {
      space = new Lru(this.#perNamespace);
      this.#spaces.set(namespace, space);
    }
    space.set(key, v);
  }
}
