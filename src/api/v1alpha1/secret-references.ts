// Secrets an app's pods would read: env[].valueFrom.secretKeyRef,
// envFrom[].secretRef and volumes[].secret. Knative's controller creates the
// pods, so the kubelet hands them any Secret of the namespace the spec names,
// and no RBAC check of the tenant who wrote the ServerlessApp covers it: with
// references allowed, permission to create a ServerlessApp is permission to
// read every Secret of the namespace. So they are a platform switch
// (--allow-secret-references), off unless the platform turns it on.
// imagePullSecrets are not counted: the kubelet uses them to pull the image
// and never shows them to the pod.

import type { SpecProblem } from './validation.ts';
import type { ServerlessApp } from './serverlessapp.ts';

type Loose = Record<string, unknown> | undefined;

/** The fields of the app that name a Secret, as "spec.container.env[2].valueFrom.secretKeyRef". */
export function secretReferences(app: ServerlessApp): string[] {
  const kind = app.spec.container ? 'container' : 'model';
  const fields: string[] = [];
  const env = app.spec.container?.env ?? app.spec.model?.env ?? [];
  env.forEach((e, i) => {
    if ((e.valueFrom as Loose)?.secretKeyRef !== undefined) fields.push(`spec.${kind}.env[${i}].valueFrom.secretKeyRef`);
  });
  (app.spec.container?.envFrom ?? []).forEach((e, i) => {
    if ((e as Loose)?.secretRef !== undefined) fields.push(`spec.container.envFrom[${i}].secretRef`);
  });
  (app.spec[kind]?.volumes ?? []).forEach((v, i) => {
    if (v.secret !== undefined) fields.push(`spec.${kind}.volumes[${i}].secret`);
  });
  return fields;
}

/** A SecretReferenceNotAllowed problem for each Secret the app names, unless the platform allows references. */
export function secretReferenceProblems(app: ServerlessApp, allowed: boolean): SpecProblem[] {
  if (allowed) return [];
  return secretReferences(app).map((field) => ({
    reason: 'SecretReferenceNotAllowed' as const, field,
    message: 'this platform does not let apps read Secrets (--allow-secret-references is off): use a ConfigMap, or ask the platform team to allow Secret references',
  }));
}
