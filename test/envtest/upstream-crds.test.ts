import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { netGatewayApiModule } from './net-gateway-api.ts';
import { ISTIO_MODULE, UPSTREAM_CRD_SOURCES } from './upstream-crds.ts';

/** The version `module` is required at in a go.mod (direct or indirect). */
function required(goMod: string, module: string): string | undefined {
  return goMod.split('\n').map((line) => line.trim().replace(/^require\s+/, '').split(/\s+/))
    .find(([path]) => path === module)?.[1];
}

describe('the upstream pins', () => {
  it('installs the Istio CRDs of the istio.io/api version the rig\'s istiod is built with', () => {
    const goMod = readFileSync(new URL('./istio/go.mod', import.meta.url), 'utf8');
    assert.equal(required(goMod, ISTIO_MODULE.module), ISTIO_MODULE.version, 'ISTIO_MODULE is the istio.io/istio that istio/go.mod requires');
    const api = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'istio.io/api');
    assert.equal(api?.version, required(goMod, 'istio.io/api'), 'the istio.io/api CRD source is the version istio.io/istio requires');
  });

  it('runs the net-gateway-api of the rig\'s Knative Serving: the same knative.dev/networking (the KIngress API) and knative.dev/pkg', () => {
    const [netgw, serving] = ['./netgw/go.mod', './knative/go.mod'].map((f) => readFileSync(new URL(f, import.meta.url), 'utf8'));
    assert.equal(required(netgw!, 'knative.dev/net-gateway-api'), netGatewayApiModule(netgw).version);
    for (const module of ['knative.dev/networking', 'knative.dev/pkg']) {
      assert.equal(required(netgw!, module), required(serving!, module), `${module} in netgw/go.mod and knative/go.mod`);
    }
    const networkingCrds = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'knative.dev/networking');
    assert.equal(networkingCrds?.version, required(netgw!, 'knative.dev/networking'), 'the KIngress CRD net-gateway-api reconciles');
  });

  it('installs the Inference Extension CRDs of the version KServe\'s llmisvc manager is built with', () => {
    const goMod = readFileSync(new URL('./kserve/go.mod', import.meta.url), 'utf8');
    const source = UPSTREAM_CRD_SOURCES.find((s) => s.module === 'sigs.k8s.io/gateway-api-inference-extension');
    assert.equal(source?.version, required(goMod, 'sigs.k8s.io/gateway-api-inference-extension'));
    assert.equal(UPSTREAM_CRD_SOURCES.find((s) => s.module === 'github.com/kserve/kserve')?.version, required(goMod, 'github.com/kserve/kserve'));
  });
});
