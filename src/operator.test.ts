import assert from 'node:assert/strict';
import { inPlaceScalingFromLabels } from './operator.ts';

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
