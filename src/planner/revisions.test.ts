import assert from 'node:assert/strict';
import { APP_LABEL } from '../render/metadata.ts';
import { isRevisionOf, observeRevision, revisionApp, revisionsSelector, type Revision } from './revisions.ts';

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

describe('the app a revision belongs to', () => {
  const labelled = (namespace: string, labels: Record<string, string>): Revision => ({ metadata: { name: 'shop-00001', namespace, labels } });
  const shop = { metadata: { namespace: 'a', name: 'shop' } };

  it('is the one its app label names, in its own namespace', () => {
    assert.deepEqual(revisionApp(labelled('a', { [APP_LABEL]: 'shop' })), { namespace: 'a', name: 'shop' });
    assert.equal(isRevisionOf(labelled('a', { [APP_LABEL]: 'shop' }), shop), true);
  });

  it('is not an app of the same name in another namespace, nor another app, nor any for a revision without the label', () => {
    assert.equal(isRevisionOf(labelled('b', { [APP_LABEL]: 'shop' }), shop), false);
    assert.equal(isRevisionOf(labelled('a', { [APP_LABEL]: 'shop-2' }), shop), false);
    assert.equal(revisionApp(labelled('a', { 'serving.knative.dev/service': 'shop' })), undefined);
  });

  it('is what the label selectors ask the API server for: one app\'s revisions, or every app\'s', () => {
    assert.equal(revisionsSelector('shop'), `${APP_LABEL}=shop`);
    assert.equal(revisionsSelector(), APP_LABEL);
  });
});
