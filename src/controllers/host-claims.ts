// Who may route which host. A host belongs to the app that claimed it first
// (creation time, then namespace/name: the same answer in every replica and
// after every restart); a later claimant in any namespace is refused
// (HostConflict), never silently shares it. Kept from the app cache's events,
// so a check is a map lookup, not a scan of every app.

import { hostClaims, type SpecProblem } from '../api/v1alpha1/validation.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';

interface Claimant { key: string; created: string }

const keyOf = (app: ServerlessApp) => `${app.metadata.namespace}/${app.metadata.name}`;

function earlier(a: Claimant, b: Claimant): boolean {
  return a.created !== b.created ? a.created < b.created : a.key < b.key;
}

export class HostClaims {
  private readonly byHost = new Map<string, Map<string, Claimant>>();
  private readonly byApp = new Map<string, string[]>();

  /** Records `app`'s claims; returns the apps whose claims it touched (they may win or lose a host now). */
  set(app: ServerlessApp): string[] {
    const key = keyOf(app);
    const before = this.byApp.get(key) ?? [];
    const after = app.metadata.deletionTimestamp ? [] : hostClaims(app);
    for (const host of before) this.byHost.get(host)?.delete(key);
    const claimant = { key, created: app.metadata.creationTimestamp ?? '' };
    for (const host of after) {
      let claims = this.byHost.get(host);
      if (!claims) this.byHost.set(host, claims = new Map());
      claims.set(key, claimant);
    }
    if (after.length) this.byApp.set(key, after);
    else this.byApp.delete(key);
    for (const host of before) if (this.byHost.get(host)?.size === 0) this.byHost.delete(host);
    return this.others(key, [...before, ...after]);
  }

  /** Forgets a deleted app; returns the apps that claimed any of its hosts. */
  delete(app: ServerlessApp): string[] {
    return this.set({ ...app, metadata: { ...app.metadata, deletionTimestamp: app.metadata.deletionTimestamp ?? 'deleted' } });
  }

  /** A HostConflict problem for each host of `app` that an earlier app holds. */
  conflicts(app: ServerlessApp): SpecProblem[] {
    const key = keyOf(app);
    const me = { key, created: app.metadata.creationTimestamp ?? '' };
    const hosts = app.spec.ingress?.hosts ?? [];
    return hostClaims(app).flatMap((host) => {
      const holder = [...(this.byHost.get(host)?.values() ?? [])].filter((c) => c.key !== key).reduce<Claimant | undefined>((best, c) => (!best || earlier(c, best) ? c : best), undefined);
      if (!holder || !earlier(holder, me)) return [];
      const index = Math.max(0, hosts.findIndex((h) => h.toLowerCase().replace(/\.$/, '') === host));
      return [{ reason: 'HostConflict' as const, field: `spec.ingress.hosts[${index}]`, message: `host ${host} is already routed by ServerlessApp ${holder.key}; a host belongs to one app (ask the platform team, or remove it there first)` }];
    });
  }

  private others(key: string, hosts: string[]): string[] {
    const out = new Set<string>();
    for (const host of hosts) for (const k of this.byHost.get(host)?.keys() ?? []) if (k !== key) out.add(k);
    return [...out];
  }
}
