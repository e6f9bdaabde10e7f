import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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
});
