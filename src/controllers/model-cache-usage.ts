// What the nodes hold of each cached model, from the node-side cache usage
// reporter's ConfigMaps (render/model-cache-usage.ts says what they hold and
// why KServe gives no such measure). Read from the operator's own namespace
// only, where no tenant can write; a report names its node, and its node's
// name is the only name it may have. Kept per storage key as the bytes each
// node reports, so a model's measure is the most any node holds and a report's
// event costs the folders it changed, not every report again.

import type { KubeObject } from '../runtime/informer.ts';
import type { Manager } from '../runtime/manager.ts';
import type { MeasuredModel } from '../planner/model-cache-size.ts';
import { CACHE_USAGE_LABEL, readUsageReport, type UsageReport } from '../render/model-cache-usage.ts';
import { Kinds } from '../util/kinds.ts';

/** The reports' contents by storage key and node. Pure bookkeeping: no informer. */
export class UsageBook {
  /** Report name -> what it last held. */
  private readonly reports = new Map<string, UsageReport>();
  /** Storage key -> node -> bytes. */
  private readonly byKey = new Map<string, Map<string, number>>();

  /** Records the report `name` now holds (undefined: gone, or no report); returns the storage keys whose measure changed. */
  observe(name: string, report: UsageReport | undefined): string[] {
    const old = this.reports.get(name);
    if (report) this.reports.set(name, report);
    else this.reports.delete(name);
    // A Set: a report holds up to MAX_REPORTED_FOLDERS keys, each looked up once per event.
    const changed = new Set<string>();
    if (old) {
      for (const [key, bytes] of old.sizes) {
        if (report?.node === old.node && report.sizes.get(key) === bytes) continue;
        this.drop(key, old.node);
        changed.add(key);
      }
    }
    for (const [key, bytes] of report?.sizes ?? []) {
      if (old?.node === report!.node && old.sizes.get(key) === bytes) continue;
      let nodes = this.byKey.get(key);
      if (!nodes) this.byKey.set(key, (nodes = new Map()));
      nodes.set(report!.node, bytes);
      changed.add(key);
    }
    return [...changed];
  }

  /** The most any node holds of the model in folder `storageKey`, and that node. */
  measured(storageKey: string): MeasuredModel | undefined {
    let most: MeasuredModel | undefined;
    for (const [node, bytes] of this.byKey.get(storageKey) ?? []) {
      if (!most || bytes > most.bytes || (bytes === most.bytes && node < most.node)) most = { bytes, node };
    }
    return most;
  }

  private drop(key: string, node: string): void {
    const nodes = this.byKey.get(key);
    nodes?.delete(node);
    if (nodes && !nodes.size) this.byKey.delete(key);
  }
}

interface ReportConfigMap extends KubeObject {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

/** Keeps a UsageBook from the reports in `namespace`, telling `onChange` the storage keys whose measure changed. */
export class ModelCacheUsage {
  readonly book = new UsageBook();

  constructor(mgr: Manager, namespace: string, onChange: (storageKeys: string[]) => void) {
    const reports = mgr.informer<ReportConfigMap>(Kinds.ConfigMap, { namespaces: [namespace], labelSelector: `${CACHE_USAGE_LABEL}=node` });
    const seen = (cm: ReportConfigMap, gone = false) => {
      // The informer's namespace is the operator's; a report from anywhere else is no report.
      if (cm.metadata.namespace !== namespace) return;
      const changed = this.book.observe(cm.metadata.name, gone ? undefined : readUsageReport(cm));
      if (changed.length) onChange(changed);
    };
    reports.on('add', (cm) => seen(cm));
    reports.on('update', (cm) => seen(cm));
    reports.on('delete', (cm) => seen(cm, true));
  }

  measured = (storageKey: string): MeasuredModel | undefined => this.book.measured(storageKey);
}
