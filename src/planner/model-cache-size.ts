// A model cache charged for what lands on the nodes, and refused when that is
// more than its app declared. What a cache is charged against its namespace's
// budget is the largest of spec.model.size, the most any node reports in the
// model's folder (render/model-cache-usage.ts) and the platform's floor per
// cache. A model found larger than declared is refused: the app's cache goes
// (KServe then deletes the folders) and the refusal is remembered in the app's
// status (status.refusedModelCache) under the storage URI and the size it was
// judged on, so the cache is not made again, downloaded again and refused
// again in a loop once the folders, and with them the measure, are gone. Only
// a new storageUri or a size that covers the measure lifts it. Pure.

import { parseQuantity, readableBytes } from '../api/v1alpha1/quantity.ts';
import type { ServerlessApp, ServerlessAppStatus } from '../api/v1alpha1/serverlessapp.ts';
import type { SpecProblem } from '../api/v1alpha1/validation.ts';
import { UNMEASURED } from '../render/model-cache-usage.ts';

/** The most any node reports in a model's folder, and one node that reports it. */
export interface MeasuredModel { bytes: number; node: string }

export type RefusedModelCache = NonNullable<ServerlessAppStatus['refusedModelCache']>;

/**
 * The model a storage URI names, as far as a namespace's remembered measures go: the URI with its
 * scheme in lower case, repeated slashes in its path made one and trailing ones dropped, so that
 * "s3://m/big", "s3://m/big/" and "S3://m//big" are one model (KServe gives each its own folder and
 * download). Not a full canonical form: a tenant can still name a model anew (a query string, another
 * case in a path segment), and pays a download for each.
 */
export function sameModel(storageUri: string): string {
  const at = storageUri.indexOf('://');
  const scheme = at < 0 ? '' : storageUri.slice(0, at + 3).toLowerCase();
  const rest = at < 0 ? storageUri : storageUri.slice(at + 3);
  return scheme + rest.replace(/\/{2,}/g, '/').replace(/\/+$/, '');
}

/** What a cache is charged: the largest of the declared size, the measured one and the platform's floor. */
export function cacheCharge(declaredBytes: number, measured: MeasuredModel | undefined, floorBytes: number): number {
  return Math.max(declaredBytes, measured?.bytes ?? 0, floorBytes);
}

/** Whether a node holds more of the model than its app declared: its cache is refused (sizeRefusal). */
export function largerThanDeclared(declaredBytes: number, measured: MeasuredModel | undefined): measured is MeasuredModel {
  return !!measured && measured.bytes > declaredBytes;
}

/**
 * Whether a refusal recorded in the status still stands for `app`'s model: the same storage URI, declared
 * smaller than was measured. Compared as bytes, so "1024Mi" for "1Gi", or a byte more, lifts nothing: only
 * a size that covers the measure (or another URI) makes the cache, and downloads the model, again.
 */
export function refusalStands(app: ServerlessApp, recorded: RefusedModelCache | undefined): recorded is RefusedModelCache {
  const model = app.spec.model;
  return !!recorded && !!model?.size && recorded.storageUri === model.storageUri && parseQuantity(model.size) < recorded.measuredBytes;
}

/**
 * Why `app`'s cache is refused for its size, as its status is to record it: the refusal the status
 * holds while it stands (refusalStands), else a new one when a node holds more of the model than
 * spec.model.size declares; undefined when neither.
 */
export function sizeRefusal(app: ServerlessApp, measured: MeasuredModel | undefined): RefusedModelCache | undefined {
  const recorded = app.status?.refusedModelCache;
  if (refusalStands(app, recorded)) return recorded;
  const model = app.spec.model;
  if (!model?.size || !largerThanDeclared(parseQuantity(model.size), measured)) return undefined;
  return { storageUri: model.storageUri, size: String(model.size), measuredBytes: measured.bytes, node: measured.node };
}

/** What a size refusal tells the app's owner, naming the field to change. */
export function sizeProblem(refused: RefusedModelCache): SpecProblem {
  const where = refused.node ? ` on node ${refused.node}` : '';
  const takes = refused.measuredBytes === UNMEASURED
    ? `could not be measured${where} (more entries or folders deep than the platform's cache usage reporter walks, or files it may not read), so it is taken as larger than its declared ${refused.size}`
    : `takes ${readableBytes(refused.measuredBytes)} (${refused.measuredBytes} bytes)${where}, more than its declared ${refused.size}`;
  return {
    reason: 'ModelCacheLargerThanDeclared', field: 'spec.model.size',
    message: `the model ${refused.storageUri} ${takes}: `
      + 'its cache is removed and not made again until spec.model.size (at least the measured size) changes, or spec.model.storageUri names another model (repeated or trailing slashes and the scheme\'s case name the same one); the running version keeps serving',
  };
}
