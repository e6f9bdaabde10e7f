// Version identity. A version is the hash of the workload part of the spec
// (container or model) only, so edits to scaling, windows, prewarm, rollout or
// ingress never start a canary. Hashes are of canonical JSON (sorted keys), so
// key order in the user's YAML does not matter.

import { createHash } from 'node:crypto';
import { canonicalJson } from '../util/canonical-json.ts';
import type { ServerlessAppSpec } from '../api/v1alpha1/serverlessapp.ts';

export function shortHash(value: unknown, length = 10): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, length);
}

/** The version of an app's workload: a stable hash of `container` or `model`. */
export function versionOf(spec: ServerlessAppSpec): string {
  return shortHash(spec.container ? { container: spec.container } : { model: spec.model });
}

/**
 * The deterministic Knative revision name for a version: `<app>-<hash>`. The hash
 * covers the version and the revision-template settings that Knative bakes into a
 * revision (autoscaling class, metric, target, and in legacy scaling mode the
 * bounds), because Knative refuses a template change under an unchanged name.
 */
export function revisionName(app: string, version: string, templateSettings: Record<string, string>): string {
  return `${app}-${shortHash({ version, templateSettings }, 8)}`;
}

/**
 * What a version runs, in a few characters for a printer column: the image's last
 * path element with its tag (a digest shortened to 12 hex digits), or the model
 * format ("llm" for an LLM) and the last two elements of its URI.
 */
export function summarize(spec: ServerlessAppSpec): string {
  if (spec.container) {
    const [name, digest] = spec.container.image.split('@');
    const short = name!.slice(name!.lastIndexOf('/') + 1);
    return digest ? `${short}@${digest.replace(/^([^:]+:)([0-9a-fA-F]{12}).*$/, '$1$2')}` : short;
  }
  const m = spec.model!;
  const tail = m.storageUri.replace(/^[a-z0-9]+:\/\//, '').replace(/\/+$/, '').split('/').slice(-2).join('/');
  if (!m.format) return `llm ${tail}`;
  return `${m.format.name}${m.format.version ? `@${m.format.version}` : ''} ${tail}`;
}
