// Pure rules of host ownership between namespaces: which hosts an app holds
// on to, which hosts overlap (as Istio matches VirtualService hosts and Gateway
// API matches HTTPRoute hostnames: the same suffix rule for "*.", so one set of
// claims covers both routers), an index that finds the overlapping ones without
// a scan, and the verdict for one host of an app given the claims the cache
// holds; and when a claim no app names any more is released. The I/O around
// them is in controllers/host-claims.ts and controllers/host-claim-release.ts.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { hostClaims } from '../api/v1alpha1/validation.ts';
import { byCreation } from '../util/creation-order.ts';

/**
 * The hosts `app` holds on to: those it names (normalised), or none once it is being deleted, so
 * another app of its namespace may route them at once and its claims count down to release.
 */
export function hostsNamedBy(app: ServerlessApp): string[] {
  return app.metadata.deletionTimestamp ? [] : hostClaims(app);
}

/** A HostClaim as the rules read it. */
export interface ClaimRecord { name: string; host: string; namespace: string; created: string }

const isWildcard = (host: string) => host.startsWith('*.');
const domainOf = (host: string) => (isWildcard(host) ? host.slice(2) : host);

/** The proper parent domains of `domain`: "a.b.c" -> ["b.c", "c"]. */
function parents(domain: string): string[] {
  const out: string[] = [];
  for (let i = domain.indexOf('.'); i >= 0; i = domain.indexOf('.', i + 1)) out.push(domain.slice(i + 1));
  return out;
}

/**
 * The hosts whose claims overlap `host` and are found by name: the host itself
 * and the wildcards above it ("a.b.c" -> a.b.c, *.b.c, *.c). What a wildcard
 * covers (the hosts under it) has no name to look up.
 */
export function coveringHosts(host: string): string[] {
  return [host, ...parents(domainOf(host)).map((p) => `*.${p}`)];
}

/**
 * Whether some request host matches both `a` and `b`. Istio matches
 * "*.example.com" against every name under example.com, at any depth
 * (a.b.example.com too), but not example.com itself; so does Gateway API
 * (HTTPRoute spec.hostnames: "interpreted as a suffix match", v1.6.3 CRD).
 */
export function overlaps(a: string, b: string): boolean {
  if (a === b) return true;
  return (isWildcard(a) && domainOf(b).endsWith(`.${domainOf(a)}`)) || (isWildcard(b) && domainOf(a).endsWith(`.${domainOf(b)}`));
}

/** Values by host, found by overlap: the exact host, the wildcards above it, and (for a wildcard) every host under it. */
export class HostIndex<V> {
  readonly #byHost = new Map<string, Set<V>>();
  /** Domain -> the indexed hosts strictly under it: what a wildcard of that domain covers. */
  readonly #under = new Map<string, Set<string>>();

  add(host: string, value: V): void {
    let values = this.#byHost.get(host);
    if (!values) {
      this.#byHost.set(host, values = new Set());
      for (const p of parents(host)) {
        let hosts = this.#under.get(p);
        if (!hosts) this.#under.set(p, hosts = new Set());
        hosts.add(host);
      }
    }
    values.add(value);
  }

  delete(host: string, value: V): void {
    const values = this.#byHost.get(host);
    if (!values?.delete(value) || values.size > 0) return;
    this.#byHost.delete(host);
    for (const p of parents(host)) {
      const hosts = this.#under.get(p);
      hosts?.delete(host);
      if (hosts?.size === 0) this.#under.delete(p);
    }
  }

  /** The values of every indexed host that overlaps `host` (see overlaps()), each once. */
  overlapping(host: string): V[] {
    const domain = domainOf(host);
    const hosts = [...coveringHosts(host), ...(isWildcard(host) ? this.#under.get(domain) ?? [] : [])];
    return [...new Set(hosts.flatMap((h) => [...(this.#byHost.get(h) ?? [])]))];
  }
}

/**
 * What namespace `namespace` may do with `host`, given the claim named after
 * the host (`own`, if any) and the other claims whose hosts overlap it:
 * - `held`: the namespace's claim exists and no older overlapping claim of
 *   another namespace shadows it;
 * - `create`: no claim yet and no other namespace claims an overlapping host;
 * - `conflict`: another namespace holds the host, or an overlapping one.
 *
 * Two claims of the same host cannot both exist (their names are equal: the
 * API server lets one create win). Overlapping claims of different names
 * (a wildcard and a host under it) can, when two creates race past each
 * other's cache: the older claim wins and the younger one grants nothing
 * while the older exists, so every replica reaches the same answer from the
 * same objects whatever order it saw them in.
 */
export function judgeHost(host: string, namespace: string, own: ClaimRecord | undefined, overlapping: ClaimRecord[]): 'held' | 'create' | 'conflict' {
  const others = overlapping.filter((c) => c.namespace !== namespace && c.name !== own?.name);
  if (!own) return others.length ? 'conflict' : 'create';
  if (own.namespace !== namespace || own.host !== host) return 'conflict';
  return others.some((c) => byCreation(c, own) < 0) ? 'conflict' : 'held';
}

/** An app's hosts, as the operator's index of them holds them. */
export interface AppHosts { namespace: string; name: string; created: string; hosts: string[] }

/**
 * The app of `app`'s namespace that routes `host` instead of it, among `others` (undefined: `app` may
 * route it). Within a namespace a host belongs to the app that serves it now (its route carries the
 * host: `serves`), so another app's edit that names the host is refused and takes nothing down; when
 * none serves it, or more than one does, to the first by creation time. Every replica reaches the same
 * answer from the same objects.
 */
export function earlierHolder(host: string, app: Omit<AppHosts, 'hosts'>, others: AppHosts[], serves: (a: Omit<AppHosts, 'hosts'>, host: string) => boolean = () => false): AppHosts | undefined {
  const rivals = others.filter((a) => a.namespace === app.namespace && a.name !== app.name && a.hosts.includes(host));
  if (!rivals.length) return undefined;
  const ranked = [{ ...app, hosts: [host], serving: serves(app, host) }, ...rivals.map((a) => ({ ...a, serving: serves(a, host) }))]
    .sort((a, b) => Number(b.serving) - Number(a.serving) || byCreation(a, b));
  const first = ranked[0]!;
  return first.name === app.name ? undefined : rivals.find((a) => a.name === first.name);
}

export interface ClaimUse {
  /** Made by the operator (the platform's own claims are never released). */
  managed: boolean;
  /** The claim's namespace is one this operator watches (otherwise its apps are unknown). */
  watched: boolean;
  /** An app of the claim's namespace names the host now. */
  named: boolean;
}

/** What to do with a claim: keep it, release it now, or look again at `at` (and since when it is unused). Pure. */
export function releaseVerdict(use: ClaimUse, unusedSince: number | undefined, now: number, graceMs: number):
  { keep: true } | { release: true } | { at: number; unusedSince: number } {
  if (!use.managed || !use.watched || use.named) return { keep: true };
  const since = unusedSince ?? now;
  return now >= since + graceMs ? { release: true } : { at: since + graceMs, unusedSince: since };
}
