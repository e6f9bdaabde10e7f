import assert from 'node:assert/strict';
import { containerApp, modelApp, podTemplate } from '../../testing/apps.ts';
import { secretReferenceProblems, secretReferences } from './secret-references.ts';

describe('Secret references, a platform switch', () => {
  const container = containerApp({
    container: {
      image: 'x:1',
      env: [{ name: 'A', value: 'a' }, { name: 'B', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }, { name: 'C', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }],
      envFrom: [{ configMapRef: { name: 'c' } }, { secretRef: { name: 'all' } }],
      ...podTemplate(),
    },
  });

  it('finds every Secret an app names: env secretKeyRef, envFrom secretRef and secret volumes, not ConfigMaps or pull secrets', () => {
    assert.deepEqual(secretReferences(container), ['spec.container.env[1].valueFrom.secretKeyRef', 'spec.container.envFrom[1].secretRef', 'spec.container.volumes[1].secret']);
  });

  it('finds a model app\'s', () => {
    const m = modelApp().spec.model!;
    const app = modelApp({ model: { ...m, env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }] } });
    assert.deepEqual(secretReferences(app), ['spec.model.env[0].valueFrom.secretKeyRef']);
  });

  it('refuses them while the platform has the switch off (the default), naming each field (attack: read every Secret of the namespace)', () => {
    const problems = secretReferenceProblems(container, false);
    assert.deepEqual(problems.map((p) => `${p.reason} ${p.field}`), [
      'SecretReferenceNotAllowed spec.container.env[1].valueFrom.secretKeyRef', 'SecretReferenceNotAllowed spec.container.envFrom[1].secretRef', 'SecretReferenceNotAllowed spec.container.volumes[1].secret',
    ]);
    assert.match(problems[0]!.message, /--allow-secret-references is off/);
  });

  it('accepts them when the platform turns the switch on', () => assert.deepEqual(secretReferenceProblems(container, true), []));
  it('has nothing to say about an app without any', () => assert.deepEqual(secretReferenceProblems(containerApp(), false), []));
});
