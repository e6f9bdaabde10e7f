import assert from 'node:assert/strict';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { parseConfig, validationPolicy } from '../config.ts';
import { ApiError, type KubeClient } from '../runtime/client.ts';
import { policyConfigMap, POLICY_CONFIGMAP, type PublishedPolicy } from '../runtime/policy-publication.ts';
import type { ResourceKind } from '../util/kinds.ts';
import { parseAppFile, readPlanInput } from './plan-read.ts';

/** A cluster that holds only `objects` ("plural/namespace/name"), recording every request. */
function cluster(objects: Record<string, unknown> = {}) {
  const requests: string[] = [];
  const client = {
    get: async (kind: ResourceKind, namespace: string | undefined, name: string) => {
      requests.push(`get ${kind.plural}/${namespace ?? ''}/${name}`);
      return objects[`${kind.plural}/${namespace ?? ''}/${name}`];
    },
    list: async (kind: ResourceKind, namespace?: string) => {
      requests.push(`list ${kind.plural}/${namespace ?? ''}`);
      return { items: [], metadata: { resourceVersion: '1' } };
    },
    create: async (_kind: ResourceKind, obj: unknown) => obj,
  } as unknown as KubeClient;
  return { client, requests };
}

const file = (hosts: string[] = []): ServerlessApp => ({
  apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'shop', namespace: 'team-a' },
  spec: { container: { image: 'ghcr.io/acme/shop:1' }, ...(hosts.length ? { ingress: { hosts } } : {}) },
});

const plan = (client: KubeClient, app = file()) => readPlanInput(client, 'team-a', 'shop', app, 'serverlessapp-system/serverlessapp-operator', () => undefined).input;

describe('kubectl sapp plan: the file, as kubectl apply -f reads it', () => {
  const text = (namespace?: string, extra = '') => `apiVersion: serverlessapp.io/v1alpha1\nkind: ServerlessApp\nmetadata:\n  name: shop\n${namespace ? `  namespace: ${namespace}\n` : ''}spec:\n  container:\n    image: ghcr.io/acme/shop:1\n${extra}`;

  it('is planned in the namespace it names, whatever the context\'s; in the context\'s when it names none', () => {
    assert.equal(parseAppFile(text('team-b'), 'f', 'default', false).metadata.namespace, 'team-b');
    assert.equal(parseAppFile(text(), 'f', 'default', false).metadata.namespace, 'default');
    assert.equal(parseAppFile(text('team-b'), 'f', 'team-b', true).metadata.namespace, 'team-b');
  });

  it('with -n naming another namespace, is refused with kubectl\'s own words', () => {
    assert.throws(() => parseAppFile(text('team-b'), 'f', 'team-a', true),
      { message: 'the namespace from the provided object "team-b" does not match the namespace "team-a". You must pass \'--namespace=team-b\' to perform this operation.' });
  });

  it('reads YAML 1.1 scalars as kubectl does (yes and on are booleans, 0777 octal), but no base-60 numbers or timestamps', () => {
    const app = parseAppFile(text(undefined, '    env:\n      - {name: A, value: yes}\n      - {name: B, value: 12:30}\n      - {name: C, value: 2026-11-28}\n  scaling: {maxScale: 010}\n'), 'f', 'default', false);
    assert.deepEqual(app.spec.container!.env!.map((e) => e.value), [true, '12:30', '2026-11-28']);
    assert.equal(app.spec.scaling!.maxScale, 8);
  });
});

describe('kubectl sapp plan: what it reads', () => {
  it('a file naming many deep hosts reads the HostClaims with one list, not one read per covering wildcard', async () => {
    const deep = Array.from({ length: 16 }, (_, i) => `h${i}.${Array.from({ length: 20 }, (_, j) => `l${j}`).join('.')}.example.com`);
    const { client, requests } = cluster();
    await plan(client, file(deep));
    const claimReads = requests.filter((r) => r.includes('hostclaims'));
    assert.deepEqual(claimReads, ['list hostclaims/'], `${claimReads.length} requests`);
  });

  it('a file naming a host or two reads their claims by name', async () => {
    const { client, requests } = cluster();
    await plan(client, file(['shop.example.com']));
    assert.ok(requests.includes('get hostclaims//shop.example.com'), JSON.stringify(requests));
  });

  describe('the policy', () => {
    const config = parseConfig(['--allowed-gateways', 'istio-system/public-gateway'], {});
    const published = (lease?: string): PublishedPolicy => ({
      identity: 'op-1', publishedAt: '2026-11-28T20:00:00.000Z', ...(lease ? { lease } : {}),
      settings: { policy: validationPolicy(config), localGateway: config.localGateway, router: config.router, inPlaceBounds: false, clusterLocal: true, cacheScope: 'namespace' },
    });
    const cm = (p: PublishedPolicy) => ({ [`configmaps/serverlessapp-system/${POLICY_CONFIGMAP}`]: policyConfigMap('serverlessapp-system', p) });
    const lease = (holder: string, renewedMsAgo: number) => ({
      'leases/serverlessapp-system/serverlessapp-operator-leader': { spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime: new Date(Date.now() - renewedMsAgo).toISOString() } },
    });

    it('is the one the running operator published, while its Lease is held', async () => {
      const { client } = cluster({ ...cm(published('serverlessapp-system/serverlessapp-operator-leader')), ...lease('op-1', 1_000) });
      const { settings } = await plan(client);
      assert.deepEqual(settings.policy.allowedGateways, ['istio-system/public-gateway']);
      assert.match(settings.source, /^the running operator's policy, published by op-1 .*; lease serverlessapp-system\/serverlessapp-operator-leader held by op-1$/);
      assert.equal(settings.note, undefined);
    });

    it('without leader election, the one published, saying its liveness is not checked', async () => {
      const { client } = cluster(cm(published()));
      const { settings } = await plan(client);
      assert.deepEqual(settings.policy.allowedGateways, ['istio-system/public-gateway']);
      assert.match(settings.source, /leader election is off, so whether it still runs is not checked$/);
    });

    it('when its Lease expired, no operator runs: the Deployment\'s flags (here none: the defaults), and a note that says so', async () => {
      const { client } = cluster({ ...cm(published('serverlessapp-system/serverlessapp-operator-leader')), ...lease('op-1', 60_000) });
      const input = await plan(client);
      assert.deepEqual(input.settings.policy.allowedGateways, []);
      assert.match(input.settings.note ?? '', /^policy: no operator runs: lease serverlessapp-system\/serverlessapp-operator-leader is not held .* judged by the operator's defaults: deployment serverlessapp-system\/serverlessapp-operator not found/);
    });

    it('when none was published: the Deployment\'s flags, and a note that says so', async () => {
      const { client } = cluster();
      const input = await plan(client);
      assert.match(input.settings.note ?? '', /^policy: no operator published its policy \(configmap serverlessapp-system\/serverlessapp-policy not found or not readable\)/);
    });
  });
});

describe('kubectl sapp plan: the routes of apps naming the same host', () => {
  it('a user who may not read routes gets the plan with a note, not an error', async () => {
    const rival: ServerlessApp = { ...file(['shop.example.com']), metadata: { name: 'older', namespace: 'team-a', creationTimestamp: '2026-01-01T00:00:00Z' } };
    const { client } = cluster();
    const forbidden = new ApiError(403, 'virtualservices.networking.istio.io "older-routes" is forbidden', 'Forbidden');
    const reading = {
      ...client,
      get: async (kind: ResourceKind, namespace: string | undefined, name: string) => {
        if (kind.plural === 'virtualservices' || kind.plural === 'httproutes') {
          if (name.startsWith('older')) throw forbidden;
          return undefined;
        }
        return client.get(kind, namespace, name);
      },
      list: async (kind: ResourceKind, namespace?: string) => (kind.plural === 'serverlessapps' ? { items: [rival], metadata: { resourceVersion: '1' } } : client.list(kind, namespace)),
    } as unknown as KubeClient;
    const input = await plan(reading, file(['shop.example.com']));
    assert.equal(input.namespace?.routeNamed, undefined);
    assert.ok((input.notes ?? []).some((n) => n.startsWith('routes: this user may not read the routes of namespace team-a')), JSON.stringify(input.notes));
  });
});
