// Who may route which host. Between namespaces, the API server decides: a
// host belongs to the namespace whose HostClaim (cluster-scoped, named after
// the host) exists; the first create wins and the claim outlives the apps that
// use it (see api/v1alpha1/hostclaim.ts). An app claims its hosts only once it
// is valid, so a spec the policy refuses never takes a host from anyone, and
// a refused app never affects the namespace that holds the host. Within a
// namespace, the app whose route carries a host keeps it, and another app's
// edit naming it is refused; when no app serves it, the first by creation time
// routes it (a matter for one team, read from the caches). Conflict messages
// never name another namespace.
// Everything is read from caches (the HostClaim informer and the apps'
// events) and indexed by host, so a check is a few map lookups.

import { hostClaimFor, hostClaimName, unclaimableHost, type HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { hostClaims, normaliseHost, type SpecProblem } from '../api/v1alpha1/validation.ts';
import type { Request } from '../runtime/controller.ts';
import type { HostVerdict } from '../planner/admission.ts';
import type { ClaimEvents } from './host-claim-budget.ts';
import { earlierHolder, HostIndex, hostsNamedBy, judgeHost, type AppHosts, type ClaimRecord } from '../planner/host-claims.ts';
import { objectKey, type ObjectRef } from '../util/object-key.ts';


function record(c: HostClaim): ClaimRecord {
  return { name: c.metadata.name, host: c.spec.host, namespace: c.spec.namespace, created: c.metadata.creationTimestamp ?? '' };
}

/** The field that names `host` in the app (hosts are compared normalised). */
function fieldOf(app: ServerlessApp, host: string): string {
  const index = (app.spec.ingress?.hosts ?? []).findIndex((h) => normaliseHost(h) === host);
  return `spec.ingress.hosts[${Math.max(0, index)}]`;
}

export class HostClaims {
  readonly #claims: ClaimEvents;
  /** Claimed hosts -> claim names. */
  readonly #claimIndex = new HostIndex<string>();
  /** Hosts apps name -> app keys ("namespace/name"). */
  readonly #appIndex = new HostIndex<string>();
  readonly #apps = new Map<string, AppHosts>();
  readonly #serves: (app: ObjectRef, host: string) => boolean;

  /**
   * `claims`: the HostClaim informer (or, in kubectl sapp plan, the claims it read). `serves`: whether
   * the app's route (as the caches hold it) carries the host; without it no app is taken as serving.
   */
  constructor(claims: ClaimEvents, serves: (app: ObjectRef, host: string) => boolean = () => false) {
    this.#claims = claims;
    this.#serves = serves;
    claims.on('add', (c) => this.#claimIndex.add(c.spec.host, c.metadata.name));
    claims.on('update', (c, old) => {
      if (old) this.#claimIndex.delete(old.spec.host, old.metadata.name);
      this.#claimIndex.add(c.spec.host, c.metadata.name);
    });
    claims.on('delete', (c) => this.#claimIndex.delete(c.spec.host, c.metadata.name));
  }

  /** Records the hosts `app` names; returns the apps of its namespace that name any of them before or after (they may win or lose one now). */
  setApp(app: ServerlessApp): Request[] {
    const { namespace, name } = app.metadata;
    const key = objectKey(namespace, name);
    const before = this.#apps.get(key)?.hosts ?? [];
    const after = hostsNamedBy(app);
    for (const h of before) this.#appIndex.delete(h, key);
    for (const h of after) this.#appIndex.add(h, key);
    if (after.length) this.#apps.set(key, { namespace, name, created: app.metadata.creationTimestamp ?? '', hosts: after });
    else this.#apps.delete(key);
    const touched = new Set([...before, ...after].flatMap((h) => this.#appIndex.overlapping(h)));
    return this.#requests([...touched].filter((k) => k !== key && this.#apps.get(k)?.namespace === namespace));
  }

  deleteApp(app: ServerlessApp): Request[] {
    return this.setApp({ ...app, metadata: { ...app.metadata, deletionTimestamp: app.metadata.deletionTimestamp ?? 'deleted' } });
  }

  /** The apps, in any namespace, whose hosts overlap a claim's: a claim made or released may change their verdict. */
  appsAffectedBy(claim: HostClaim): Request[] {
    return this.#requests(this.#appIndex.overlapping(claim.spec.host));
  }

  /** The apps of `namespace` naming any of `hosts`: a route that starts or stops carrying one may change who holds it. */
  appsNaming(namespace: string, hosts: string[]): Request[] {
    const keys = new Set(hosts.map(normaliseHost).flatMap((h) => this.#appIndex.overlapping(h)));
    return this.#requests([...keys].filter((k) => this.#apps.get(k)?.namespace === namespace));
  }

  /**
   * What stops `app` from routing its hosts before any claim is made: a host
   * that cannot be claimed, or one another app of its own namespace holds
   * (planner/host-claims.ts earlierHolder: the one serving it, else the first).
   */
  problems(app: ServerlessApp): SpecProblem[] {
    const { namespace, name } = app.metadata;
    const me = { namespace, name, created: app.metadata.creationTimestamp ?? '' };
    return hostClaims(app).flatMap((host): SpecProblem[] => {
      const why = unclaimableHost(host);
      if (why) return [{ reason: 'HostNotAllowed', field: fieldOf(app, host), message: why }];
      const holder = earlierHolder(host, me, this.#appIndex.overlapping(host).map((k) => this.#apps.get(k)!), (a, h) => this.#serves(a, h));
      return holder ? [{ reason: 'HostConflict', field: fieldOf(app, host), message: `host ${host} is already routed by ServerlessApp ${holder.name} in this namespace; a host belongs to one app (remove it there first)` }] : [];
    });
  }

  /**
   * What the caches say of `app`'s hosts, read without a write: the problems above, the hosts
   * another namespace holds (HostConflict), and the claims to create for hosts no one holds. The
   * planner decides what to do with it (claims are made only for an app that can route all its
   * hosts); a claim's outcome is read from the cache on the next pass (its events re-queue the
   * app), so every verdict comes from the same objects in every replica.
   */
  verdict(app: ServerlessApp): HostVerdict {
    const { namespace } = app.metadata;
    const missing: HostClaim[] = [];
    const conflicts: SpecProblem[] = [];
    for (const host of hostClaims(app)) {
      const own = this.#claims.get(undefined, hostClaimName(host) ?? '');
      const overlapping = this.#claimIndex.overlapping(host).flatMap((n) => this.#claims.get(undefined, n) ?? []).map(record);
      const verdict = judgeHost(host, namespace, own && record(own), overlapping);
      if (verdict === 'conflict') {
        conflicts.push({ reason: 'HostConflict', field: fieldOf(app, host), message: `host ${host} is claimed by another namespace; ask the platform team` });
      }
      if (verdict === 'create') missing.push(hostClaimFor(host, namespace)!);
    }
    return { problems: this.problems(app), conflicts, missing };
  }

  #requests(keys: string[]): Request[] {
    return keys.flatMap((k) => {
      const a = this.#apps.get(k);
      return a ? [{ namespace: a.namespace, name: a.name }] : [];
    });
  }
}
