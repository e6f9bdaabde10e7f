import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { downloadFolder } from './model-download.ts';

/** A pod as KServe's node agent makes one for its download Job (localmodelnode controller.go launchJob). */
function downloadPod(opts: { nodeName?: string; subPath?: string; container?: string } = {}): V1Pod {
  return {
    metadata: { name: 'iris-rig-node-1-abcde', namespace: 'kserve-localmodel-jobs' },
    spec: {
      nodeName: opts.nodeName ?? 'rig-node-1',
      containers: [{
        name: opts.container ?? 'kserve-localmodel-download', image: 'kserve/storage-initializer:latest',
        volumeMounts: [{ name: 'kserve-pvc-source', mountPath: '/mnt/models', subPath: opts.subPath ?? 'models/2a8c0f' }],
      }],
    },
  };
}

describe('simulated model download: which folder a pod fills', () => {
  it('is the models volume\'s subPath of a download pod bound to a node', () => {
    assert.equal(downloadFolder(downloadPod()), 'models/2a8c0f');
  });

  it('is none before the pod is bound, for any other pod, and for a subPath leaving the node\'s directory', () => {
    assert.equal(downloadFolder(downloadPod({ nodeName: '' })), undefined);
    assert.equal(downloadFolder(downloadPod({ container: 'sidecar' })), undefined);
    assert.equal(downloadFolder(downloadPod({ subPath: '../../etc' })), undefined);
  });
});
