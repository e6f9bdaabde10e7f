import assert from 'node:assert/strict';
import type { ChildOperation } from '../planner/plan.ts';
import { ApiError, type KubeClient } from '../runtime/client.ts';
import { Kinds } from '../util/kinds.ts';
import { dryRunOperations } from './plan-dry-run.ts';
import { isDryRunRefusal } from './plan-read.ts';

/** A client whose dry-run apply answers with `err`. */
const answering = (err: ApiError): KubeClient => ({ apply: () => Promise.reject(err) }) as unknown as KubeClient;

const ensure: ChildOperation = {
  id: 'workload', action: 'ensure', kind: Kinds.KnativeService, why: 'the app wants it',
  desired: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'shop', namespace: 'team-a' } },
} as unknown as ChildOperation;

describe('kubectl sapp plan: a child write\'s dry run judged as the operator judges the write', () => {
  const cases: Array<[string, ApiError, 'refused' | 'forbidden' | 'error']> = [
    ['a webhook\'s refusal (400)', new ApiError(400, 'admission webhook "validation.webhook.serving.knative.dev" denied the request'), 'refused'],
    ['the schema\'s refusal (422)', new ApiError(422, 'spec.template: Invalid value'), 'refused'],
    ['server-side apply\'s typed-patch 500', new ApiError(500, 'failed to create typed patch object (team-a/shop; serving.knative.dev/v1, Kind=Service): .spec.x: field not declared in schema'), 'refused'],
    ['a user who may not write the child (403, RBAC)', new ApiError(403, 'services.serving.knative.dev "shop" is forbidden: User "dev" cannot patch resource'), 'forbidden'],
    ['an optimistic-lock conflict (409): the operator retries it', new ApiError(409, 'the object has been modified'), 'error'],
    ['throttling (429): the operator retries it', new ApiError(429, 'too many requests'), 'error'],
    ['an outage (503)', new ApiError(503, 'service unavailable'), 'error'],
    ['a refused credential (401)', new ApiError(401, 'Unauthorized'), 'error'],
  ];
  for (const [what, err, want] of cases) {
    it(`${what}: ${want === 'error' ? 'an error of the plan, not a verdict on the edit' : want}`, async () => {
      const run = dryRunOperations(answering(err), [ensure]);
      if (want === 'error') return void await assert.rejects(run, (e) => e === err);
      assert.deepEqual((await run).get('workload'), { result: want, message: err.message });
    });
  }
});

describe('kubectl sapp plan: which answers to a dry run refuse the edit (the app\'s and its children\'s alike)', () => {
  const cases: Array<[string, unknown, boolean]> = [
    ['a webhook\'s denial (400)', new ApiError(400, 'denied the request'), true],
    ['RBAC (403)', new ApiError(403, 'forbidden'), true],
    ['the schema (422)', new ApiError(422, 'Invalid value'), true],
    ['server-side apply\'s typed-patch 500', new ApiError(500, 'failed to create typed patch object'), true],
    ['a refused credential (401): the user\'s, not the edit\'s', new ApiError(401, 'Unauthorized'), false],
    ['not found (404)', new ApiError(404, 'not found'), false],
    ['a conflict (409)', new ApiError(409, 'modified'), false],
    ['an outage (503)', new ApiError(503, 'unavailable'), false],
    ['a network error', new Error('ECONNRESET'), false],
  ];
  for (const [what, err, want] of cases) it(`${what}: ${want ? 'refused' : 'not a refusal'}`, () => assert.equal(isDryRunRefusal(err), want));
});
