// The one path by which rendered children reach the API server (KServe's
// per-child reconcile): compare the desired object with the cached one and
// server-side apply it only when it differs: edited by hand (drift), or
// holding a field we applied before and no longer want.
// Fields other managers set are not in our apply, so they are left alone.

import { needsApply } from '../runtime/apply.ts';
import type { KubeClient } from '../runtime/client.ts';
import type { Request } from '../runtime/controller.ts';
import type { ResourceKind } from '../runtime/kinds.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { KIND } from '../api/v1alpha1/serverlessapp.ts';

interface Owned {
  metadata: { name: string; namespace?: string; uid?: string; ownerReferences?: Array<{ uid: string; kind: string; name?: string; controller?: boolean }> };
}

/** Maps a child to the app that controls it (its controller owner reference). */
export function ownedBy(obj: Owned): Request[] {
  const ref = obj.metadata.ownerReferences?.find((r) => r.controller && r.kind === KIND);
  return ref?.name && obj.metadata.namespace ? [{ namespace: obj.metadata.namespace, name: ref.name }] : [];
}

export class ChildWriter {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  /** Applies `desired` when it differs from `live`; returns whether it wrote. */
  async ensure(_kind: ResourceKind, desired: object, live: object | undefined): Promise<boolean> {
    if (!needsApply(desired, live, this.client.fieldManager)) return false;
    await this.client.apply(desired);
    return true;
  }

  /** Deletes a child this app controls (never one it does not own). */
  async remove(kind: ResourceKind, live: Owned | undefined, app: ServerlessApp): Promise<boolean> {
    if (!live || !live.metadata.ownerReferences?.some((r) => r.controller && r.uid === app.metadata.uid)) return false;
    return this.client.delete(kind, live.metadata.namespace, live.metadata.name, { ...(live.metadata.uid ? { uid: live.metadata.uid } : {}) });
  }
}
