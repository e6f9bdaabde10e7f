// The benchmark's eyes: watches (the operator's own informer, so they relist
// and survive hiccups) that keep only the few fields a measurement needs and
// note when each change arrived. Watching is far cheaper than listing 10,000
// objects every second, for the API server as much as for us.
import type { KubeConfig } from '@kubernetes/client-node';
import { Informer, type KubeObject } from '../src/runtime/informer.ts';
import type { ResourceKind } from '../src/util/kinds.ts';

export interface Seen<T> {
  key: string;
  value: T;
  /** performance.now() when the change arrived. */
  at: number;
}

/** A watch over `kind` that stores `pick(object)` per object and calls listeners on every change. */
export class SlimWatch<T> {
  readonly values = new Map<string, T>();
  private readonly informer: Informer<KubeObject>;
  private readonly listeners = new Set<(seen: Seen<T>) => void>();

  constructor(kc: KubeConfig, kind: ResourceKind, pick: (o: KubeObject & Record<string, unknown>) => T, opts: { namespaces?: string[]; labelSelector?: string } = {}) {
    const slim = (o: KubeObject) => ({ metadata: { name: o.metadata?.name, namespace: o.metadata?.namespace, resourceVersion: o.metadata?.resourceVersion }, value: pick(o as KubeObject & Record<string, unknown>) });
    this.informer = new Informer<KubeObject>(kc, kind, {
      ...(opts.namespaces ? { namespaces: opts.namespaces } : {}),
      ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
      transform: slim as (o: KubeObject) => KubeObject,
    });
    const changed = (o: KubeObject) => {
      const key = `${o.metadata?.namespace}/${o.metadata?.name}`;
      const value = (o as unknown as { value: T }).value;
      this.values.set(key, value);
      const seen = { key, value, at: performance.now() };
      for (const l of this.listeners) l(seen);
    };
    this.informer.on('add', changed);
    this.informer.on('update', changed);
    this.informer.on('delete', (o) => this.values.delete(`${o.metadata?.namespace}/${o.metadata?.name}`));
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): void {
    this.informer.stop();
  }

  on(listener: (seen: Seen<T>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves with the first change of `key` (or its current value) that satisfies `pred`. */
  until(key: string, pred: (v: T) => boolean, timeoutMs: number): Promise<Seen<T>> {
    const now = this.values.get(key);
    if (now !== undefined && pred(now)) return Promise.resolve({ key, value: now, at: performance.now() });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${key} (last: ${JSON.stringify(this.values.get(key))})`));
      }, timeoutMs);
      const off = this.on((seen) => {
        if (seen.key !== key || !pred(seen.value)) return;
        clearTimeout(timer);
        off();
        resolve(seen);
      });
    });
  }

  /** How many stored values satisfy `pred`. */
  count(pred: (v: T) => boolean): number {
    let n = 0;
    for (const v of this.values.values()) if (pred(v)) n++;
    return n;
  }
}
