import assert from 'node:assert/strict';
import { ensureWrite, WRITE_RULES } from './write-rules.ts';

describe('the apply an ensure makes under its kind\'s write rule', () => {
  const ksvc = (template: string, percent = 100) => ({ metadata: { name: 'shop', namespace: 'team-a' }, spec: { template: { metadata: { name: template } }, traffic: [{ revisionName: template, percent }] } });
  const cases: Array<[string, keyof typeof WRITE_RULES, ReturnType<typeof ksvc>, ReturnType<typeof ksvc> | undefined, { traffic: boolean; whole: boolean; fieldManager: string }, boolean?]> = [
    ['a new Knative Service: the whole object', 'named-template', ksvc('shop-v1'), undefined, { whole: true, traffic: true, fieldManager: 'op' }],
    ['a new revision name: the whole object (template and traffic together)', 'named-template', ksvc('shop-v2'), ksvc('shop-v1'), { whole: true, traffic: true, fieldManager: 'op' }],
    ['the same revision name: the traffic only, through the routing manager', 'named-template', ksvc('shop-v1', 100), ksvc('shop-v1'), { whole: false, traffic: true, fieldManager: 'op-routing' }],
    ['a new revision name this writer already wrote, not yet in the cache: the traffic only (the template is not written twice)', 'named-template', ksvc('shop-v2'), ksvc('shop-v1'), { whole: false, traffic: true, fieldManager: 'op-routing' }, true],
    ['a kind without a named template: always the whole object', 'apply', ksvc('shop-v1'), ksvc('shop-v1'), { whole: true, traffic: true, fieldManager: 'op' }],
  ];
  for (const [what, rule, desired, live, want, templateWritten] of cases) {
    it(what, () => {
      const { body, fieldManager, whole } = ensureWrite(WRITE_RULES[rule], desired, live, 'op', templateWritten);
      assert.deepEqual({ whole: 'template' in body.spec, traffic: 'traffic' in body.spec, fieldManager }, want);
      assert.equal(whole, want.whole, 'says whether it is the whole object');
    });
  }
});
