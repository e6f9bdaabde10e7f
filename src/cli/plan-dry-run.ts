// The dry runs of `kubectl sapp plan`'s child operations: each write the
// planner returned, sent as the operator's writer would send it (its field
// manager, its write rule) with dryRun=All, so Knative's, KServe's and
// Istio's admission answer now. Apart from plan-read.ts because it needs the
// planner's write rules: the plugin loads it with the planner, while the
// reads are in flight.

import type { ChildOperation } from '../planner/plan.ts';
import { ensureWrite, WRITE_RULES } from '../planner/write-rules.ts';
import { annotationApply, sameObject } from '../runtime/apply.ts';
import { DEFAULT_FIELD_MANAGER, type KubeClient } from '../runtime/client.ts';
import type { DryRun } from './plan-document.ts';
import { isDryRunRefusal } from './plan-read.ts';

/** The dry run of each operation's write, as the operator would make it. */
export async function dryRunOperations(client: KubeClient, ops: ChildOperation[]): Promise<Map<string, DryRun>> {
  const results = await Promise.all(ops.map(async (op): Promise<[string, DryRun]> => [op.id, await dryRun(client, op)]));
  return new Map(results);
}

async function dryRun(client: KubeClient, op: ChildOperation): Promise<DryRun> {
  try {
    if ((op.action === 'ensure' || op.action === 'claim') && op.desired) {
      // The write the operator's writer would make under the kind's rule: a Knative template only under a
      // new name, else the traffic alone through the routing manager (planner/write-rules.ts).
      const { body, fieldManager } = ensureWrite(WRITE_RULES[op.write ?? 'apply'], op.desired, op.live, DEFAULT_FIELD_MANAGER);
      const object = await client.apply(body, { kind: op.kind, dryRun: true, force: true, fieldManager });
      return { result: 'accepted', object };
    }
    const live = op.live!;
    if (op.action === 'annotate') {
      await client.apply(annotationApply(live, op.annotations ?? {}), { kind: op.kind, dryRun: true, fieldManager: DEFAULT_FIELD_MANAGER });
      return { result: 'accepted' };
    }
    await client.delete(op.kind, live.metadata.namespace, live.metadata.name, { dryRun: true, ...sameObject(live) });
    return { result: 'accepted' };
  } catch (err) {
    // Anything but a refusal (a conflict, throttling, an outage, a credential) is an error of this plan, not a verdict on the edit.
    if (!isDryRunRefusal(err)) throw err;
    // A user who may not write the child cannot ask for its dry run either: that is no refusal of the edit.
    if (err.code === 403 && !/admission|denied the request|ValidatingAdmissionPolicy/i.test(err.message)) return { result: 'forbidden', message: err.message };
    return { result: 'refused', message: err.message };
  }
}
