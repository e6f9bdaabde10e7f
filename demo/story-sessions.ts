// The demo's sticky story (step c): shop's canary keeps each browser session on
// its version (rollout.stickiness). SIMULATED browsers: no Envoy runs and no
// request is proxied; the sessions are replayed over an evaluation of the
// routes istiod sends the namespace's sidecars (test/support/route-eval.ts,
// Envoy's matching and weighted-cluster pick over the real configuration),
// each keeping the cookies the evaluated responses set. Under the Istio router
// only: the demo's Gateway API Gateway has no proxy for istiod to configure.

import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { Kinds } from '../src/util/kinds.ts';
import { isConditionTrue } from '../src/util/conditions.ts';
import type { ProxyConfig, ProxyIdentity } from '../test/support/envoy-config.ts';
import { seededDraws } from '../test/support/route-eval.ts';
import { cookieVersions, flippedShare, newSessions, revisionRoute, step, type ReportedTarget } from '../test/support/sessions.ts';
import type { Scene } from './scene.ts';

/** The cookie shop's canary keeps sessions with (spec.rollout.stickiness in steps b to d). */
export const SHOP_STICKINESS = { cookieName: 'shop-version' };

interface KnativeStatus { status?: { traffic?: ReportedTarget[]; conditions?: Array<{ type: string; status: string }> } }

/**
 * Replays 1,000 new sessions of 5 requests each, and 50 testers with the header, over the sidecars' routes for
 * shop's host once they set cookies for both versions; returns the lines to print.
 */
export async function replaySessions({ env, see }: Scene, shop: ServerlessApp, proxyConfig: (p: ProxyIdentity) => Promise<ProxyConfig>): Promise<string[]> {
  const ns = env.namespace;
  const host = shop.spec.ingress!.hosts[0]!;
  const versions = [shop.status!.versions!.stable!, shop.status!.versions!.candidate!];
  const want = versions.map((v) => v.version!).sort();
  const sidecar: ProxyIdentity = { type: 'sidecar', namespace: ns };
  const config = await see.until(`the sidecars' routes for ${host} setting session cookies for ${want.join(' and ')}`, ['shop'], async () => {
    const c = await proxyConfig(sidecar);
    return JSON.stringify(cookieVersions(c, host, SHOP_STICKINESS.cookieName)) === JSON.stringify(want) ? c : undefined;
  });
  const traffic = (await see.client.get<KnativeStatus>(Kinds.KnativeService, ns, 'shop'))?.status?.traffic ?? [];
  const ready = new Set<string>();
  for (const t of traffic) {
    const r = await see.client.get<KnativeStatus>(Kinds.KnativeRevision, ns, t.revisionName!);
    if (isConditionTrue(r?.status?.conditions, 'Ready')) ready.add(t.revisionName!);
  }
  const route = revisionRoute({ config, host, namespace: ns, knativeService: 'shop', traffic, ready, next: () => undefined, random: seededDraws(1) });
  const sessions = newSessions(1_000);
  const testers = newSessions(50);
  const unrouted: string[] = [];
  for (let i = 0; i < 5; i++) {
    unrouted.push(...step(sessions, route, host).unrouted);
    unrouted.push(...step(testers, route, host, { 'x-canary': 'always' }).unrouted);
  }
  if (unrouted.length) throw new Error(`${unrouted.length} simulated requests found no ready revision: ${unrouted[0]}`);
  const candidate = versions[1]!.revision!;
  const started = sessions.filter((s) => s.reached[0] === candidate).length / sessions.length;
  return [
    `SIMULATED browsers: 1,000 new sessions of 5 requests each to ${host}, replayed over an evaluation of the routes istiod sends the namespace's sidecars (no Envoy runs), each keeping the cookie its first response set:`,
    `  ${(started * 100).toFixed(1)}% of new sessions started on the candidate (the weight: 20%), and ${(flippedShare(sessions) * 100).toFixed(1)}% ever changed version (rollout.stickiness, cookie ${SHOP_STICKINESS.cookieName})`,
    `  ${testers.filter((s) => s.reached.every((r) => r === candidate)).length} of ${testers.length} testers sending "x-canary: always" reached the candidate on every request: header rules come before sessions`,
  ];
}
