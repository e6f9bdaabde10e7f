import assert from 'node:assert/strict';
import { detectCacheScope, detectInPlaceScaling, inPlaceScalingFromLabels } from './operator.ts';
import { ApiError, type KubeClient } from './runtime/client.ts';

describe('Knative in-place scaling detection', () => {
  const cases: Array<[string, Record<string, string>, boolean]> = [
    ['a 1.21 release', { 'app.kubernetes.io/version': '1.21.1' }, true],
    ['a later release', { 'app.kubernetes.io/version': 'v1.24.0' }, true],
    ['a 2.x release', { 'app.kubernetes.io/version': '2.0.0' }, true],
    ['1.20', { 'app.kubernetes.io/version': '1.20.3' }, false],
    ['the legacy release label', { 'serving.knative.dev/release': 'v1.21.0' }, true],
    ['source-tree YAML ("devel" tells nothing)', { 'app.kubernetes.io/version': 'devel' }, false],
    ['no label at all', {}, false],
  ];
  for (const [what, labels, expected] of cases) {
    it(`${expected ? 'scales in place' : 'uses template bounds'} for ${what}`, () => {
      assert.equal(inPlaceScalingFromLabels(labels), expected);
    });
  }
});

describe('auto-detection where CRDs may not be read (a namespace-scoped install)', () => {
  const forbidden = { get: async () => { throw new ApiError(403, 'customresourcedefinitions.apiextensions.k8s.io "services.serving.knative.dev" is forbidden'); } } as unknown as KubeClient;
  const logged = () => {
    const lines: string[] = [];
    return { lines, log: { warn: (m: string) => lines.push(m) } };
  };

  it('falls back to template bounds on a 403, saying which setting avoids the read', async () => {
    const { lines, log } = logged();
    assert.equal(await detectInPlaceScaling(forbidden, 'auto', log), false);
    assert.match(lines.join('\n'), /cannot read CustomResourceDefinition services\.serving\.knative\.dev .*HTTP 403.*--knative-inplace-scaling/);
  });

  it('falls back to namespace-scoped model caches on a 403, never to cluster scope', async () => {
    const { lines, log } = logged();
    assert.equal(await detectCacheScope(forbidden, 'auto', log), 'namespace');
    assert.match(lines.join('\n'), /--model-cache-scope/);
  });

  it('reads nothing when the settings are explicit', async () => {
    const { lines, log } = logged();
    assert.equal(await detectInPlaceScaling(forbidden, 'true', log), true);
    assert.equal(await detectCacheScope(forbidden, 'namespace', log), 'namespace');
    assert.deepEqual(lines, []);
  });

  it('still fails on other errors (an API server that is down is not a missing permission)', async () => {
    const down = { get: async () => { throw new ApiError(500, 'etcdserver: request timed out'); } } as unknown as KubeClient;
    await assert.rejects(detectInPlaceScaling(down, 'auto', logged().log), /etcdserver/);
  });
});
