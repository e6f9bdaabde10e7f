// Releasing the hosts a namespace no longer uses. A HostClaim outlives the
// apps that name its host, so that deleting and re-creating an app (a GitOps
// prune, say) keeps the host in its namespace; but a claim no app names for
// good would hold the host, and the namespace's budget (host-claim-budget.ts),
// for ever. So a claim the operator made is deleted once no app of its
// namespace has named its host for the grace period (--host-claim-release-after,
// default 1h). The same covers a deleted namespace: its apps are gone, so its
// claims go after the grace (a namespace re-created within it keeps them).
// Claims the platform made with kubectl (no managed-by label) are never
// released, nor those of namespaces this operator does not watch. When a host
// was last named is kept in memory: a restart or a new leader starts the grace
// again, which only ever keeps a host longer.

import { hostClaimName, type HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { hostClaims } from '../api/v1alpha1/validation.ts';
import { specOrDeletionChanged } from '../planner/app-triggers.ts';
import { Controller, type ReconcileContext, type Request, type Result } from '../runtime/controller.ts';
import type { Informer } from '../runtime/informer.ts';
import type { Manager } from '../runtime/manager.ts';
import { Kinds } from '../util/kinds.ts';
import { appInformer } from './app-caches.ts';
import { isManaged } from '../util/managed-by.ts';
import { ChildWriter } from './children.ts';
import { hostsNamedBy, releaseVerdict, type ClaimUse } from '../planner/host-claims.ts';


export interface HostClaimReleaseOptions {
  releaseAfterMs: number;
  /** The namespaces the operator watches; empty or unset = all. */
  namespaces?: string[];
}

export class HostClaimReleaser {
  readonly controller: Controller;
  readonly #apps: Informer<ServerlessApp>;
  readonly #claims: Informer<HostClaim>;
  readonly #mgr: Manager;
  readonly #writer: ChildWriter;
  readonly #o: HostClaimReleaseOptions;
  /** Claim name -> when its host was first seen unnamed (ms). */
  readonly #unusedSince = new Map<string, number>();

  constructor(mgr: Manager, o: HostClaimReleaseOptions) {
    this.#mgr = mgr;
    this.#o = o;
    this.#writer = new ChildWriter(mgr.client);
    this.#apps = appInformer(mgr);
    this.#claims = mgr.informer<HostClaim>(Kinds.HostClaim);
    this.controller = new Controller({ name: 'hostclaim-release', reconcile: (req, ctx) => this.reconcile(req, ctx), concurrency: 1, logger: mgr.logger, metrics: mgr.metrics })
      .watches(this.#claims, (c) => [{ namespace: '', name: c.metadata.name }], () => false)
      // An app naming a host, or no longer naming it (an edit or a delete; the update maps the old app too).
      .watches(this.#apps, (a) => hostClaims(a).flatMap((h) => {
        const name = hostClaimName(h);
        return name ? [{ namespace: '', name }] : [];
      }), specOrDeletionChanged);
    mgr.add(this.controller);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | void> {
    const claim = this.#claims.get(undefined, req.name);
    if (!claim) {
      this.#unusedSince.delete(req.name);
      return;
    }
    const ns = claim.spec.namespace;
    const use: ClaimUse = {
      managed: isManaged(claim),
      watched: !this.#o.namespaces?.length || this.#o.namespaces.includes(ns),
      named: this.#apps.list(ns).some((a) => hostsNamedBy(a).includes(claim.spec.host)),
    };
    const now = this.#mgr.clock.now().getTime();
    const verdict = releaseVerdict(use, this.#unusedSince.get(req.name), now, this.#o.releaseAfterMs);
    if ('keep' in verdict) {
      this.#unusedSince.delete(req.name);
      return;
    }
    if ('at' in verdict) {
      this.#unusedSince.set(req.name, verdict.unusedSince);
      return { requeueAfterMs: verdict.at - now };
    }
    // Guarded by the uid: a claim made again since (another namespace's, say) is not this one.
    await this.#writer.removeMatched(Kinds.HostClaim, claim);
    this.#unusedSince.delete(req.name);
    ctx.log.info('host claim released: no app of its namespace named the host for the grace period', { host: claim.spec.host, namespace: ns });
  }
}
