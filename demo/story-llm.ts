// The story's LLM step, j): examples/llm-chat-canary.yaml on KServe's real
// llmisvc manager. A new model version starts at weight 0, answers its warmup
// completion (the SIMULATED model server), then moves through the steps by the
// group weights KServe writes into its HTTPRoutes, which istiod accepts; the
// promotion stops the replaced version (its LLMInferenceService kept for
// rollout.retainPrevious). KWOK pods stand in for vLLM (SIMULATED: no model
// is loaded). Same pattern as every step: edit the spec, wait for the real
// status and objects, show them.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseDuration } from '../src/api/v1alpha1/duration.ts';
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { memberName, STOP_ANNOTATION } from '../src/render/llm-inference-service.ts';
import { versionOf } from '../src/rollout/version.ts';
import { findCondition } from '../src/util/conditions.ts';
import { Kinds } from '../src/util/kinds.ts';
import { condition } from './observe.ts';
import type { Scene } from './scene.ts';

interface Member { metadata: { name: string; uid?: string; creationTimestamp?: string; annotations?: Record<string, string> }; spec: { replicas?: number; router?: { route?: { weight?: number } } }; status?: { conditions?: Array<{ type: string; status: string; reason?: string }> } }
interface KServeRoute { spec: { hostnames?: string[]; rules?: Array<{ name?: string; backendRefs?: Array<{ name: string; weight?: number }> }> }; status?: { parents?: Array<{ conditions?: Array<{ type: string; status: string }> }> } }

/** A rule every member's route carries, one weighted backend per routable member (KServe router_group_routing.go). */
const SHARED_RULE = 'v1-catch-all-model-routing';
const NEW_MODEL = 'hf://Qwen/Qwen2.5-7B-Instruct-AWQ';
const examplesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'examples');

export async function llmRollout({ env, see, heading, jump }: Scene): Promise<void> {
  const ns = env.namespace;
  heading('j) an LLM on KServe\'s LLMInferenceService: the rollout moves the group\'s weights');
  const chat = parse(readFileSync(join(examplesDir, 'llm-chat-canary.yaml'), 'utf8')) as ServerlessApp;
  chat.metadata.namespace = ns;
  await see.client.apply(chat);
  env.print('applied examples/llm-chat-canary.yaml (chat: model.serving llm, one GPU per replica, warmup by a one-token completion)');
  const m1 = memberName('chat', versionOf(chat.spec));
  const ready = await see.until('chat Ready: its LLMInferenceService Ready and its route accepted by istiod', ['chat'], (apps) => {
    const a = apps.get('chat')!;
    return condition(a, 'Ready')?.status === 'True' && a.status?.versions?.stable?.revision === m1 ? a : undefined;
  });
  await printMembers(`first version ${ready.status?.versions?.stable?.summary} serves everything`);

  chat.spec.model!.storageUri = NEW_MODEL;
  await see.client.apply(chat);
  const m2 = memberName('chat', versionOf(chat.spec));
  env.print(`edited chat: model.storageUri ${NEW_MODEL} (a quantized build); rollout.steps [${chat.spec.rollout?.steps?.join(', ')}], interval ${chat.spec.rollout?.interval}`);
  const interval = parseDuration(chat.spec.rollout!.interval!);
  for (const step of chat.spec.rollout!.steps!) {
    // The step as KServe wrote it into its route, and as the operator recorded it (its interval counts from stepStartedAt).
    const at = await see.until(`the group at ${100 - step}/${step} in KServe's HTTPRoute, recorded in chat's status`, ['chat'], async (apps) => {
      const a = apps.get('chat')!;
      const w = weights(await route(m1));
      return w[m2] === step && w[m1] === 100 - step && a.status?.canary?.trafficPercent === step && a.status.canary.stepStartedAt ? a : undefined;
    });
    await printMembers(`step ${step}%: the new version (${m2}) got weight only after KServe called it Ready and its warmup completion was answered`
      + ` (${env.warmupRequests().filter((r) => r.url.includes(`/${m2}/`)).length} request(s) to its own address); ${at.status?.canary?.message ?? ''}`);
    jump(new Date(Date.parse(at.status!.canary!.stepStartedAt!) + interval + 1_000), `past the step's ${chat.spec.rollout!.interval} interval: its checks decide`);
  }
  const promoted = await see.until('chat promoted, the old version stopped', ['chat'], async (apps) => {
    const a = apps.get('chat')!;
    const old = await see.client.get<Member>(Kinds.LLMInferenceService, ns, m1);
    return condition(a, 'Promoted')?.status === 'True' && a.status?.versions?.stable?.revision === m2 && old?.metadata.annotations?.[STOP_ANNOTATION] === 'true' ? a : undefined;
  });
  await printMembers(`${condition(promoted, 'Promoted')?.message}; ${m1} is stopped (KServe removed its pods and its own route) and kept for ${chat.spec.rollout?.retainPrevious}: going back to it restarts that LLMInferenceService`, 'j');

  async function route(member: string): Promise<KServeRoute | undefined> {
    return see.client.get<KServeRoute>(Kinds.HTTPRoute, ns, `${member}-kserve-route`);
  }
  function weights(r: KServeRoute | undefined): Record<string, number> {
    return Object.fromEntries((r?.spec.rules?.find((x) => x.name === SHARED_RULE)?.backendRefs ?? []).map((b) => [b.name.replace(/-kserve-workload-svc$/, ''), b.weight ?? 1]));
  }
  async function printMembers(note: string, done?: string): Promise<void> {
    const list = await see.client.list<Member>(Kinds.LLMInferenceService, ns, { labelSelector: 'serverlessapp.io/app=chat' });
    env.print(`\n$ kubectl get llminferenceservices -n ${ns} -l serverlessapp.io/app=chat`);
    env.print(`  ${'NAME'.padEnd(18)} ${'WEIGHT'.padEnd(7)} ${'REPLICAS'.padEnd(9)} ${'STOPPED'.padEnd(8)} READY`);
    for (const m of list.items) {
      const readyC = findCondition(m.status?.conditions, 'Ready');
      env.print(`  ${m.metadata.name.padEnd(18)} ${String(m.spec.router?.route?.weight ?? '').padEnd(7)} ${String(m.spec.replicas ?? '').padEnd(9)} ${(m.metadata.annotations?.[STOP_ANNOTATION] ?? '').padEnd(8)} ${readyC?.status ?? '?'}${readyC?.reason ? ` (${readyC.reason})` : ''}`);
    }
    const r = await route(promotedOr(list.items));
    if (r) env.print(`  HTTPRoute ${promotedOr(list.items)}-kserve-route (KServe's), hosts ${r.spec.hostnames?.join(',') ?? '-'}: ${Object.entries(weights(r)).map(([n, w]) => `${n} ${w}`).join(', ')}`);
    env.print(`  > ${note}`);
    env.print('  > SIMULATED: KWOK pods stand in for vLLM (no model is loaded); the demo\'s loopback server answered the warmup completions; no Envoy runs behind the Gateway');
    for (const line of await see.newEvents(['chat'])) env.print(`  > ${line}`);
    if (done) env.print(`  [${done}: done]`);
  }
  /** The route Istio uses: the oldest member that is not stopped. */
  function promotedOr(items: Member[]): string {
    const serving = items.filter((m) => m.metadata.annotations?.[STOP_ANNOTATION] !== 'true')
      .sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''));
    return serving[0]?.metadata.name ?? m1;
  }
}
