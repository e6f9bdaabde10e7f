// Starts both SIMULATED data-plane controllers in-process (stand-ins for
// Knative Serving and KServe; no pods, no real traffic) against a cluster that
// has their CRDs. One watch per kind, shared by both; each stand-in writes with
// its own User-Agent and field manager ("knative-standin", "kserve-standin").

import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Informer } from './informer.ts';
import { KubeClient } from './kube.ts';
import { KSVC, KnativeStandin, REVISION } from './knative.ts';
import type { Clock, Logger } from './knative.ts';
import { ISVC, KServeStandin, LOCAL_MODEL_CACHE, LOCAL_MODEL_NAMESPACE_CACHE } from './kserve.ts';

export const BANNER = 'SIMULATED data plane: this is a stand-in for Knative Serving and KServe controllers, not the real thing';

export interface StandinOptions {
  kubeConfig: KubeConfig;
  /** Watch only these namespaces (cluster-scoped LocalModelCaches are always watched); default all. */
  namespaces?: string[];
  /** How long a revision takes to become Ready (and a cached model to download). Default 200 ms. */
  readyDelayMs?: number;
  /** If set, a revision not Ready after this long fails with ProgressDeadlineExceeded. Default: never. */
  progressDeadlineMs?: number;
  /** The cluster's external domain for URLs. Default example.com. */
  domain?: string;
  /** Keys handled at once, per stand-in. Default 8. */
  concurrency?: number;
  logger?: Logger;
  clock?: Clock;
  /**
   * Run the Knative half. Default: only when the cluster has no real Knative
   * Serving (its webhook configuration, installed by the rig's data plane), so
   * the stand-in never writes Knative status beside the real controllers.
   */
  knative?: boolean;
  /** Run the InferenceService half of the KServe stand-in. Default: only when the real KServe does not run (its webhook is not registered). */
  kserve?: boolean;
  /**
   * Run the LocalModelCache half of the KServe stand-in. Default: only when KServe's real local model
   * controller does not run (its LocalModelCache webhook is not registered), as in the benchmarks' stand-in data plane.
   */
  caches?: boolean;
}

export interface Standins {
  knative: {
    /** Keeps a revision from becoming (or staying) Ready until released. */
    hold(namespace: string, revision: string): void;
    release(namespace: string, revision: string): void;
  };
  /** Resolves once both stand-ins have nothing queued or running. */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

const quiet: Logger = { info: () => {}, warn: () => {} };
/** STANDIN_LOG=1 prints what the stand-ins write, for debugging a test. */
const consoleLogger: Logger = { info: (m) => console.log(`[SIMULATED] ${m}`), warn: (m) => console.warn(`[SIMULATED] WARN ${m}`) };
const systemClock: Clock = { now: () => Date.now() };

/** The User-Agent (and field manager) of each stand-in's writes, as the audit log records them. */
export const STANDIN_AGENTS = { knative: 'knative-standin', kserve: 'kserve-standin' } as const;

export async function startStandins(opts: StandinOptions): Promise<Standins> {
  const logger = opts.logger ?? (process.env.STANDIN_LOG ? consoleLogger : quiet);
  const clock = opts.clock ?? systemClock;
  const concurrency = opts.concurrency ?? 8;
  const readyDelayMs = opts.readyDelayMs ?? 200;
  const domain = opts.domain ?? 'example.com';
  const knativeClient = new KubeClient(opts.kubeConfig, STANDIN_AGENTS.knative, concurrency + 2);
  const kserveClient = new KubeClient(opts.kubeConfig, STANDIN_AGENTS.kserve, concurrency + 2);
  const onError = (who: string) => (err: unknown) => logger.warn(`${who}: watch: ${(err as Error).message}`);

  const services = new Informer(knativeClient, KSVC, opts.namespaces, onError('knative-standin'));
  const revisions = new Informer(knativeClient, REVISION, opts.namespaces, onError('knative-standin'));
  const isvcs = new Informer(kserveClient, ISVC, opts.namespaces, onError('kserve-standin'));
  const caches = new Informer(kserveClient, LOCAL_MODEL_CACHE, undefined, onError('kserve-standin'));
  const namespaceCaches = new Informer(kserveClient, LOCAL_MODEL_NAMESPACE_CACHE, opts.namespaces, onError('kserve-standin'));
  const informers = [services, revisions, isvcs, caches, namespaceCaches];

  const knative = new KnativeStandin({
    client: knativeClient, services, revisions, readyDelayMs, domain, concurrency, clock, logger,
    ...(opts.progressDeadlineMs !== undefined ? { progressDeadlineMs: opts.progressDeadlineMs } : {}),
  });
  const simulateKServe = opts.kserve ?? !(await webhookRegistered(opts.kubeConfig, 'mutating', 'inferenceservice.serving.kserve.io'));
  const simulateCaches = opts.caches ?? !(await webhookRegistered(opts.kubeConfig, 'validating', 'localmodelcache.serving.kserve.io'));
  const kserve = new KServeStandin({
    client: kserveClient, inferenceServices: simulateKServe, localModelCaches: simulateCaches, isvcs, services, revisions, caches, namespaceCaches, downloadDelayMs: readyDelayMs, domain, concurrency, clock, logger,
  });

  const simulateKnative = opts.knative ?? !(await webhookRegistered(opts.kubeConfig, 'validating', 'validation.webhook.serving.knative.dev'));
  try {
    await Promise.all(informers.map((i) => i.start()));
  } catch (err) {
    await Promise.all(informers.map((i) => i.stop()));
    throw err;
  }
  if (simulateKnative) knative.start();
  else logger.info('knative-standin: off, the real Knative Serving runs in this cluster');
  if (!simulateCaches) logger.info('kserve-standin: model caches off, KServe\'s real local model controller runs in this cluster');
  kserve.start();
  const simulated = (what: () => void) => {
    if (!simulateKnative) throw new Error('the real Knative Serving runs in this cluster: revisions cannot be held by the stand-in');
    what();
  };

  return {
    knative: {
      hold: (ns, rev) => simulated(() => knative.hold(ns, rev)),
      release: (ns, rev) => simulated(() => knative.release(ns, rev)),
    },
    idle: async () => {
      // Each stand-in's work can enqueue the other's; settle until both are quiet together.
      for (let i = 0; i < 10; i++) {
        await Promise.all([knative.idle(), kserve.idle()]);
        await new Promise((r) => setImmediate(r));
        if (!knative.busy() && !kserve.busy()) return;
      }
    },
    stop: async () => {
      await Promise.all(informers.map((i) => i.stop()));
      await Promise.all([knative.stop(), kserve.stop()]);
      await Promise.all([knativeClient.close(), kserveClient.close()]);
    },
  };
}

/**
 * Whether the cluster runs a real controller, told by its admission webhook being registered:
 * KServe's InferenceService webhook (mutating), its LocalModelCache webhook, Knative Serving's.
 */
async function webhookRegistered(kubeConfig: KubeConfig, type: 'mutating' | 'validating', name: string): Promise<boolean> {
  const api = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  try {
    await (type === 'mutating' ? api.readMutatingWebhookConfiguration({ name }) : api.readValidatingWebhookConfiguration({ name }));
    return true;
  } catch {
    return false;
  }
}
