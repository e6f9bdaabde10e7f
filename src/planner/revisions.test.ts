import assert from 'node:assert/strict';
import { observeRevision, type Revision } from './revisions.ts';

const rev = (status: string, reason?: string): Revision => ({
  metadata: { name: 'shop-abc', namespace: 'a', labels: { 'serverlessapp.io/version': 'v2' } },
  status: { conditions: [{ type: 'Ready', status, ...(reason ? { reason, message: 'details' } : {}) }] },
});

describe('reading a Knative Revision', () => {
  const cases: Array<[string, Revision, { ready: boolean; failed?: string; waiting?: string }]> = [
    ['ready', rev('True'), { ready: true }],
    ['still starting (Unknown)', rev('Unknown', 'Deploying'), { ready: false }],
    ['a pod no node can take yet: Knative keeps trying (a node may come)', rev('False', 'Unschedulable'), { ready: false, waiting: 'Unschedulable: details' }],
    ['an image digest not resolved yet: retried', rev('False', 'ContainerMissing'), { ready: false, waiting: 'ContainerMissing: details' }],
    ['a container that exited: restarted', rev('False', 'ExitCode1'), { ready: false, waiting: 'ExitCode1: details' }],
    ['a Deployment or PodAutoscaler of the same name not collected yet: Knative retries', rev('False', 'NotOwned'), { ready: false, waiting: 'NotOwned: details' }],
    ['past Knative\'s own progress deadline: it gave up', rev('False', 'ProgressDeadlineExceeded'), { ready: false, failed: 'ProgressDeadlineExceeded: details' }],
    ['an image that cannot be pulled past the deadline', rev('False', 'ImagePullBackOff'), { ready: false, failed: 'ImagePullBackOff: details' }],
  ];
  for (const [what, r, want] of cases) {
    it(what, () => {
      const o = observeRevision(r);
      assert.deepEqual({ ready: o.ready, ...(o.failed ? { failed: o.failed } : {}), ...(o.waiting ? { waiting: o.waiting } : {}) }, want);
    });
  }
});
