import assert from 'node:assert/strict';
import { changedBeyondLabels } from './app-triggers.ts';

describe('changedBeyondLabels', () => {
  const app = (over: { generation?: number; labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string; finalizers?: string[]; resourceVersion?: string; status?: unknown } = {}) => ({
    metadata: { name: 'a', namespace: 'n', generation: over.generation ?? 1, resourceVersion: over.resourceVersion ?? '1', labels: over.labels ?? {}, annotations: over.annotations ?? {},
      ...(over.deletionTimestamp ? { deletionTimestamp: over.deletionTimestamp } : {}), ...(over.finalizers ? { finalizers: over.finalizers } : {}) },
    status: over.status ?? { observedGeneration: 1 },
  });

  it('skips an edit of labels or annotations alone', () => {
    assert.equal(changedBeyondLabels(app({ labels: { storm: '2' }, resourceVersion: '2' }), app({ labels: { storm: '1' } })), false);
    assert.equal(changedBeyondLabels(app({ annotations: { note: 'x' }, resourceVersion: '2' }), app()), false);
  });

  it('keeps a spec edit, a deletion, a finalizer and a status change', () => {
    assert.equal(changedBeyondLabels(app({ generation: 2 }), app()), true);
    assert.equal(changedBeyondLabels(app({ deletionTimestamp: '2026-01-01T00:00:00Z' }), app()), true);
    assert.equal(changedBeyondLabels(app({ finalizers: ['serverlessapp.io/model-cache'] }), app()), true);
    assert.equal(changedBeyondLabels(app({ status: { observedGeneration: 2 } }), app()), true);
  });
});
