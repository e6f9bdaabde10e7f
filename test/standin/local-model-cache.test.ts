import assert from 'node:assert/strict';
import type { KubeObject } from './kube.ts';
import { cacheStatus, matchStorageUri } from './local-model-cache.ts';

const isvc = (ns: string, name: string, storageUri: string): KubeObject => ({
  metadata: { name, namespace: ns }, spec: { predictor: { model: { modelFormat: { name: 'sklearn' }, storageUri } } },
});

describe('LocalModelCache status (stand-in)', () => {
  it('matches a storageUri equal to the cached one or below it, like MatchStorageURI', () => {
    assert.ok(matchStorageUri('gs://m/llama', 'gs://m/llama'));
    assert.ok(matchStorageUri('gs://m/llama/', 'gs://m/llama/weights'));
    assert.ok(!matchStorageUri('gs://m/llama', 'gs://m/llama2'));
  });

  it('reports one simulated node per node group, downloading then downloaded', () => {
    const cache: KubeObject = { metadata: { name: 'llama' }, spec: { sourceModelUri: 'gs://m/llama', nodeGroups: ['gpu'] } };
    assert.deepEqual(cacheStatus({ cache, isvcs: [], downloaded: false }).copies, { total: 1, available: 0 });
    const done = cacheStatus({ cache, isvcs: [], downloaded: true });
    assert.deepEqual(done.copies, { total: 1, available: 1 });
    assert.deepEqual(done.nodeStatus, { 'gpu-standin-node': 'NodeDownloaded' });
  });

  it('lists the InferenceServices it serves; a namespace cache only those in its namespace', () => {
    const isvcs = [isvc('a', 'one', 'gs://m/llama'), isvc('b', 'two', 'gs://m/llama/v1'), isvc('a', 'three', 'gs://other')];
    const cluster: KubeObject = { metadata: { name: 'llama' }, spec: { sourceModelUri: 'gs://m/llama', nodeGroups: ['gpu'] } };
    assert.deepEqual(cacheStatus({ cache: cluster, isvcs, downloaded: true }).inferenceServices, [{ name: 'one', namespace: 'a' }, { name: 'two', namespace: 'b' }]);
    const namespaced: KubeObject = { metadata: { name: 'llama', namespace: 'b' }, spec: { sourceModelUri: 'gs://m/llama', nodeGroups: ['gpu'] } };
    assert.deepEqual(cacheStatus({ cache: namespaced, isvcs, downloaded: true }).inferenceServices, [{ name: 'two', namespace: 'b' }]);
  });
});
