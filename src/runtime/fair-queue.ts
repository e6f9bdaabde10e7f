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
  /** Namespaces held back (hold), with their keys: out of the rotation until released. */
  readonly #held = new Map<string, Fifo>();
  /** Namespaces with keys waiting, in the order of their next turn (a held one's turn is skipped). */
  readonly #turns = new Fifo();
  #length = 0;
  #heldLength = 0;

  /** Keys ready to be handed out (not those of held namespaces). */
  get length(): number {
    return this.#length;
  }

  /** Keys of held namespaces. */
  get heldLength(): number {
    return this.#heldLength;
  }

  push(key: string): void {
    const ns = namespaceOf(key);
    const held = this.#held.get(ns);
    if (held) {
      held.push(key);
      this.#heldLength++;
      return;
    }
    let flow = this.#flows.get(ns);
    if (!flow) {
      flow = new Fifo();
      this.#flows.set(ns, flow);
    }
    if (!flow.hasTurn) this.#takeTurn(ns, flow);
    flow.push(key);
    this.#length++;
  }

  /** The next key in round-robin order; call only when length > 0. */
  shift(): string {
    for (;;) {
      const ns = this.#turns.shift();
      const flow = this.#flows.get(ns);
      if (!flow) {
        // A turn taken before its namespace was held: dropped, release() gives it a new one.
        this.#held.get(ns)!.hasTurn = false;
        continue;
      }
      flow.hasTurn = false;
      const key = flow.shift();
      if (flow.length > 0) this.#takeTurn(ns, flow);
      else this.#flows.delete(ns);
      this.#length--;
      return key;
    }
  }

  /**
   * Puts `key`, just shifted, back at the head of its namespace's keys and takes the namespace out of
   * the rotation: its keys, and those pushed meanwhile, wait as one until release(). Holding back a
   * namespace of thousands of keys costs one step, not one per key. Returns the namespace.
   */
  hold(key: string): string {
    const ns = namespaceOf(key);
    const flow = this.#flows.get(ns) ?? new Fifo();
    this.#flows.delete(ns);
    this.#length -= flow.length;
    flow.unshift(key);
    this.#heldLength += flow.length;
    this.#held.set(ns, flow);
    return ns;
  }

  /** Whether `ns` has keys here, ready or held. */
  has(ns: string): boolean {
    return this.#flows.has(ns) || (this.#held.get(ns)?.length ?? 0) > 0;
  }

  /** The held namespace's keys take turns again, in their order. */
  release(ns: string): void {
    const flow = this.#held.get(ns);
    if (!flow) return;
    this.#held.delete(ns);
    // Never empty: hold() puts the key back, and nothing takes keys from a held namespace.
    this.#heldLength -= flow.length;
    this.#flows.set(ns, flow);
    this.#length += flow.length;
    if (!flow.hasTurn) this.#takeTurn(ns, flow);
  }

  clear(): void {
    this.#flows.clear();
    this.#held.clear();
    this.#turns.clear();
    this.#length = 0;
    this.#heldLength = 0;
  }

  #takeTurn(ns: string, flow: Fifo): void {
    flow.hasTurn = true;
    this.#turns.push(ns);
  }
}

/** An array-backed queue whose shift is O(1): a burst of thousands of keys stays cheap. */
class Fifo {
  #items: string[] = [];
  #head = 0;
  /** Whether its namespace has a turn in the rotation (a flow's, FairQueue). */
  hasTurn = false;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: string): void {
    this.#items.push(item);
  }

  /** Puts `item` back in front (the one just shifted, as a rule: the slot before the head is free then). */
  unshift(item: string): void {
    if (this.#head > 0) this.#items[--this.#head] = item;
    else this.#items.unshift(item);
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
