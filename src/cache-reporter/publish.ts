// The cache usage reporter's one write: its node's report ConfigMap, by
// server-side apply through the operator's client under a field manager of
// its own, and only when what it holds changed since this process last
// published it (a node whose models do not change costs no write).

import { canonicalJson } from '../util/canonical-json.ts';
import type { KubeClient } from '../runtime/client.ts';
import { renderUsageReport, type UsageReport } from '../render/model-cache-usage.ts';
import { Kinds } from '../util/kinds.ts';

export const REPORTER_FIELD_MANAGER = 'serverlessapp-cache-reporter';

export class UsagePublisher {
  private readonly client: KubeClient;
  private readonly namespace: string;
  private last: string | undefined;

  constructor(client: KubeClient, namespace: string) {
    this.client = client;
    this.namespace = namespace;
  }

  /** Publishes `report` unless it is what this process last published; returns whether it wrote. */
  async publish(report: UsageReport, signal?: AbortSignal): Promise<boolean> {
    const cm = renderUsageReport(this.namespace, report);
    const text = canonicalJson(cm);
    if (text === this.last) return false;
    await this.client.apply(cm, { kind: Kinds.ConfigMap, fieldManager: REPORTER_FIELD_MANAGER, force: true, ...(signal ? { signal } : {}) });
    this.last = text;
    return true;
  }
}
