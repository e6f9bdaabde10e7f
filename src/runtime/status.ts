// The one way status reaches the API server: through the status subresource
// (so spec and status never overwrite each other) and only when it changed,
// so a converged object costs no writes and triggers no watch events.

import { canonicalJson } from './apply.ts';
import type { KubeClient } from './client.ts';

interface Live {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string };
  status?: unknown;
}

export class StatusWriter {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  /** Applies `status` to `live`'s status subresource unless it already reads the same; returns whether it wrote. */
  async write<T>(live: T, status: object): Promise<boolean> {
    const obj = live as T & Live;
    if (canonicalJson(obj.status ?? {}) === canonicalJson(status)) return false;
    const { name, namespace } = obj.metadata;
    await this.client.apply(
      { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name, ...(namespace ? { namespace } : {}) }, status },
      { subresource: 'status' },
    );
    return true;
  }
}
