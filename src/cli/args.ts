// The command line of `kubectl sapp`, parsed without touching anything: what
// to do, to which app, and where (the kubeconfig flags kubectl users expect).

import { parseArgs } from 'node:util';
import { parseWeight, type RolloutCommand } from './commands.ts';

export const USAGE = `kubectl sapp: watch and steer ServerlessApp rollouts

Usage:
  kubectl sapp status NAME [--watch]   show the phase, stable and candidate, rollout step, windows
  kubectl sapp promote NAME            promote the candidate now (skips remaining steps and checks)
  kubectl sapp abort NAME              all traffic back on stable, the candidate scaled to zero
  kubectl sapp retry NAME              start a failed or aborted candidate again from its first step
  kubectl sapp pause NAME              hold the rollout at its step
  kubectl sapp resume NAME             continue a paused rollout
  kubectl sapp set-weight NAME N       send N% (0..100) of traffic to the candidate
  kubectl sapp plan -f FILE            what the operator would do if FILE were applied (nothing is written)
  kubectl sapp plan NAME               what the operator does next with no edit

Flags:
  -n, --namespace NS    namespace of the app (default: the context's namespace, else "default")
      --kubeconfig PATH kubeconfig file(s) (default: $KUBECONFIG, else ~/.kube/config)
      --context NAME    kubeconfig context (default: its current-context)
  -w, --watch           status: redraw on every change until Ctrl-C
  -f, --filename FILE   plan: the edited ServerlessApp (YAML or JSON; - for stdin)
  -o, --output FORMAT   plan: text (default) or json (schema serverlessapp.io/plan/v1);
                        kubectl sapp plan --help shows examples
      --operator NS/NAME
                        plan: the operator; the policy it publishes in NS (ConfigMap
                        serverlessapp-policy) is read, else its Deployment's flags
                        (default serverlessapp-system/serverlessapp-operator)
  -h, --help            this help

plan exits 0 when nothing would change, 2 when something would (like
terraform plan -detailed-exitcode), 1 when the operator or the API server
would refuse the edit, or on any error.

Rollout commands are server-side applies of spec.rollout fields with the field
manager kubectl-sapp, forced: under GitOps the next sync sets them back, so
commit the change to Git instead.
`;

/** plan: the edited app from a file, or (no file) the live app as it is. */
export interface PlanCommand {
  verb: 'plan';
  file?: string;
  output: 'text' | 'json';
  /** The operator's Deployment, "namespace/name". */
  operator: string;
}

export const DEFAULT_OPERATOR = 'serverlessapp-system/serverlessapp-operator';

/** `kubectl sapp plan --help`: what a plan shows, with examples. */
export const PLAN_USAGE = `kubectl sapp plan: what the operator would do if an edit were applied

Usage:
  kubectl sapp plan -f app.yaml [-n NS] [-o text|json]   an edit (nothing is written)
  kubectl sapp plan NAME [-n NS] [-o text|json]          what happens next, with no edit

The edit goes to the API server as a dry run (dryRun=All: defaults, schema,
CEL and admission policies apply); the app's own children and revisions are
read by name and label; the operator's own planner (planReconcile) plans the
reconcile; each child write it would make is dry-run too, so a refusal by
Knative's, KServe's or Istio's admission shows now. The edit's dry run has
strict field validation, as kubectl apply sends it: an unknown field is
refused. A file is planned in the namespace it names, as kubectl apply -f
applies it. The platform's policy is the one the running operator published
(ConfigMap serverlessapp-policy in the namespace of --operator NS/NAME); when
none runs, the operator's Deployment's flags, and the plan says so; a user who
may read neither gets the operator's defaults, with a warning. Hosts other namespaces
claim (HostClaims, read by name) and the namespace's host-claim and
model-cache budgets are checked as the operator checks them; what a plan
cannot check (a read this user may not make, warmups running in the
operator's memory) is listed under "Not checked".

Exit codes (as terraform plan -detailed-exitcode): 0 no changes, 2 changes,
1 refused (by the API server, admission or the platform's policy) or an error.
--output json prints the plan document (apiVersion serverlessapp.io/plan/v1:
fields are only added within v1).

A canary edit (a new image; spec.rollout.steps [20, 50], interval 5m, a
prewarm buffer and warmup), exit code 2:

  Plan for serverlessapp demo/shop
  Result:  changes

  Edit:
    ~ spec.container.image: "ghcr.io/acme/shop:1" → "ghcr.io/acme/shop:2"

  Children: 1 to write, 1 unchanged
    ~ Service.serving.knative.dev shop changed: the Service runs version 75e87b1dc9
        ~ spec.template.metadata.annotations."autoscaling.knative.dev/min-scale": "0" → "1"
        ~ spec.template.metadata.labels."serverlessapp.io/version": "9034165ddb" → "75e87b1dc9"
        ~ spec.template.metadata.name: "shop-d064f249" → "shop-402c399e"
        ~ spec.template.spec.containers[0].image: "ghcr.io/acme/shop:1" → "ghcr.io/acme/shop:2"
        dry run: accepted

  Rollout: canary in 2 steps (20% → 50%), every 5m, then promotion
    version 9034165ddb (shop:1) → 75e87b1dc9 (shop:2)
    phase Stable → Canary
    before any traffic:
      - revision ready (Knative or KServe starts it beside the stable one)
      - prewarm: 1 ready replica before any traffic
      - warmup: 3 successful GET /healthz within 5m of the replicas being ready
      - all of it within the progress deadline (10m), counted from the start
    steps:
       20%  once ready and warm
       50%  5m after 20%
      100%  5m after 50%
    on failure: if the revision fails, it is not ready and warm within 10m or warmup gives up: all traffic back on stable 9034165ddb, the candidate kept at 0% and scaled to zero (phase Failed); kubectl sapp retry starts it again

  Scaling: now min 0, max 10
    2026-11-23 08:00 Europe/Berlin  business-hours opens: min 2, max 10
    2026-11-23 18:00 Europe/Berlin  business-hours closes: min 0, max 10
    2026-11-24 08:00 Europe/Berlin  business-hours opens: min 2, max 10
    2026-11-24 18:00 Europe/Berlin  business-hours closes: min 0, max 10

  Policy: deployment serverlessapp-system/serverlessapp-operator

Re-applying the same YAML, exit code 0:

  Plan for serverlessapp demo/shop
  Result:  no changes

  Edit:    none (the file is what is stored)

  Children: nothing to write, 2 unchanged

  Rollout: no new version: 9034165ddb stays stable with all traffic
    phase Stable → Stable

  Scaling: now min 0, max 10
    2026-11-23 08:00 Europe/Berlin  business-hours opens: min 2, max 10
    2026-11-23 18:00 Europe/Berlin  business-hours closes: min 0, max 10
    2026-11-24 08:00 Europe/Berlin  business-hours opens: min 2, max 10
    2026-11-24 18:00 Europe/Berlin  business-hours closes: min 0, max 10

  Policy: deployment serverlessapp-system/serverlessapp-operator
`;

export type Invocation =
  | { help: true; topic?: 'plan' }
  | { help?: false; command: { verb: 'status'; watch: boolean } | RolloutCommand | PlanCommand; name: string; namespace?: string; kubeconfig?: string; context?: string };

/** A command line that makes no sense; the message says what is wrong. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const VERBS = ['status', 'promote', 'abort', 'retry', 'pause', 'resume', 'set-weight', 'plan'] as const;

export function parseCommandLine(argv: string[]): Invocation {
  // parseArgs would take "-5" for an unknown flag; name the real mistake.
  const negative = argv.find((a) => /^-\d/.test(a));
  if (negative !== undefined && argv.includes('set-weight')) throw new UsageError(`set-weight takes a whole percentage from 0 to 100, not ${negative}`);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        namespace: { type: 'string', short: 'n' },
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        watch: { type: 'boolean', short: 'w' },
        filename: { type: 'string', short: 'f' },
        output: { type: 'string', short: 'o' },
        operator: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) return positionals[0] === 'plan' ? { help: true, topic: 'plan' } : { help: true };
  const [verb, name, ...rest] = positionals;
  if (!VERBS.includes(verb as (typeof VERBS)[number])) throw new UsageError(`unknown command ${JSON.stringify(verb)}; commands: ${VERBS.join(', ')}`);
  if (values.watch && verb !== 'status') throw new UsageError('--watch goes with status only');
  if (verb !== 'plan' && (values.filename !== undefined || values.output !== undefined || values.operator !== undefined)) {
    throw new UsageError(`${values.filename !== undefined ? '-f' : values.output !== undefined ? '-o' : '--operator'} goes with plan only`);
  }
  if (verb === 'plan') return { command: planCommand(name, rest, values), name: name ?? '', ...where(values) };
  if (!name) throw new UsageError(`${verb} needs the name of a ServerlessApp`);
  const extra = verb === 'set-weight' ? 1 : 0;
  if (verb === 'set-weight' && rest.length === 0) throw new UsageError('set-weight needs a percentage: kubectl sapp set-weight NAME N');
  if (rest.length > extra) throw new UsageError(`unexpected argument${rest.length - extra > 1 ? 's' : ''} ${rest.slice(extra).join(' ')}`);
  if (verb === 'status') return { command: { verb, watch: values.watch ?? false }, name, ...where(values) };
  if (verb === 'set-weight') return { command: { verb, weight: weightArgument(rest[0]!) }, name, ...where(values) };
  return { command: { verb: verb as Exclude<(typeof VERBS)[number], 'status' | 'set-weight' | 'plan'> }, name, ...where(values) };
}

function where(values: { namespace?: string; kubeconfig?: string; context?: string }) {
  return {
    ...(values.namespace !== undefined ? { namespace: values.namespace } : {}),
    ...(values.kubeconfig !== undefined ? { kubeconfig: values.kubeconfig } : {}),
    ...(values.context !== undefined ? { context: values.context } : {}),
  };
}

/** `plan -f FILE` (the name comes from the file) or `plan NAME`, not both. */
function planCommand(name: string | undefined, rest: string[], values: { filename?: string; output?: string; operator?: string }): PlanCommand {
  if (rest.length > 0) throw new UsageError(`unexpected argument${rest.length > 1 ? 's' : ''} ${rest.join(' ')}`);
  if (values.filename === undefined && !name) throw new UsageError('plan needs -f FILE (the edited ServerlessApp) or the NAME of a ServerlessApp');
  if (values.filename !== undefined && name) throw new UsageError(`plan takes -f FILE or NAME, not both: the file names the app (got ${name})`);
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json') throw new UsageError(`-o takes text or json, not ${JSON.stringify(output)}`);
  const operator = values.operator ?? DEFAULT_OPERATOR;
  if (!/^[a-z0-9-]+\/[a-z0-9.-]+$/.test(operator)) throw new UsageError(`--operator takes NAMESPACE/NAME of the operator's Deployment, not ${JSON.stringify(operator)}`);
  return { verb: 'plan', ...(values.filename !== undefined ? { file: values.filename } : {}), output, operator };
}

function weightArgument(text: string): number {
  try {
    return parseWeight(text);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
