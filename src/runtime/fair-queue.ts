// The ready keys of a work queue, in the order they are handed out: FIFO
// within a namespace, round-robin across namespaces, as the API server's
// Priority and Fairness queues requests per flow. One tenant's burst of a
// thousand keys waits behind its own keys only; a key of another namespace
// added after them is handed out within one round.

import { namespaceOf } from '../util/object-key.ts';

/**
 * FIFO per namespace, round-robin across namespaces (the namespace is the part
 * of a "namespace/name" key before the slash; cluster-scoped keys share one
 * flow). Each namespace with keys waiting takes one turn per round.
 */
export class FairQueue {
  readonly #flows = new Map<string, Fifo>();
  /** Namespaces with keys waiting, in the order of their next turn. */
  readonly #turns = new Fifo();
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(key: string): void {
    const ns = namespaceOf(key);
    let flow = this.#flows.get(ns);
    if (!flow) {
      flow = new Fifo();
      this.#flows.set(ns, flow);
      this.#turns.push(ns);
    }
    flow.push(key);
    this.#length++;
  }

  /** The next key in round-robin order; call only when length > 0. */
  shift(): string {
    const ns = this.#turns.shift();
    const flow = this.#flows.get(ns)!;
    const key = flow.shift();
    if (flow.length > 0) this.#turns.push(ns);
    else this.#flows.delete(ns);
    this.#length--;
    return key;
  }

  clear(): void {
    this.#flows.clear();
    this.#turns.clear();
    this.#length = 0;
  }
}

/** An array-backed queue whose shift is O(1): a burst of thousands of keys stays cheap. */
class Fifo {
  #items: string[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: string): void {
    this.#items.push(item);
  }

  shift(): string {
    const item = this.#items[this.#head++]!;
    // Compact once the consumed prefix dominates, so memory follows what is waiting.
    if (this.#head > 64 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}
