// What the demo's steps share: the environment the story is told in
// (StoryEnv) and the Scene every step works with. Apart from story.ts so the
// steps in story-rollouts.ts can use it without importing the story back.
import type { KubeConfig } from '@kubernetes/client-node';
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import type { OffsetClock } from '../src/runtime/clock.ts';
import type { DemoRouter } from './gateway.ts';
import type { Observer } from './observe.ts';
import type { ProxyConfig, ProxyIdentity } from '../test/support/envoy-config.ts';

export interface StoryEnv {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The operator's clock (started at DEMO_CLOCK_START); the story moves it. */
  clock: OffsetClock;
  /** Re-queues every app: after a clock jump, requeues already timed in real time would come late. */
  resync(): void;
  /** Requests the loopback warmup server has received. */
  warmupRequests(): Array<{ method: string; url: string }>;
  /** Makes the loopback warmup server answer 503 (a model that does not load), or answer again. */
  failWarmups(failing: boolean): void;
  /** The PromQL queries the Prometheus stand-in (the operator's analysis provider ANALYSIS_PROVIDER) has received. */
  analysisQueries(): string[];
  print(text: string): void;
  /** The operator's --router (default istio): under gateway-api the story shows the HTTPRoute istiod judged where it shows the VirtualService. */
  router?: DemoRouter;
  /** Under gateway-api: the parent Gateway "namespace/name" (gateway.ts ensureParentGateway) the story adds to shop's ingress. */
  gateway?: string;
  /** The last step told (default i, the whole story); d stops after the canary, header route and promotion. */
  lastStep?: 'd' | 'i';
  /** The configuration istiod sends a proxy (the rig's istiod): with it, step c replays browser sessions over shop's routes. */
  proxyConfig?(proxy: ProxyIdentity): Promise<ProxyConfig>;
  /** KServe's llmisvc manager runs (the rig's, with istiod): the story ends with step j), an LLM's rollout by group weights. */
  llm?: boolean;
  /** Per wait; default 120 s (real Knative scales an idle revision to zero about a minute after it started). */
  timeoutMs?: number;
}

/** What every step works with: the cluster as the user sees it, the two apps as the user edits them, and how to show them. */
export interface Scene {
  env: StoryEnv;
  see: Observer;
  shop: ServerlessApp;
  fraud: ServerlessApp;
  apply(app: ServerlessApp): Promise<unknown>;
  heading(text: string): void;
  /** Prints `kubectl get sapp`, the apps' revisions, the notes and the operator's new Events; `done` ends step `done`. */
  show(apps: ServerlessApp[], note: string[], done?: string): Promise<void>;
  /** Moves the demo clock to `to` and has the operator re-read every app (its requeues were timed in real time). */
  jump(to: Date, why: string): void;
}
