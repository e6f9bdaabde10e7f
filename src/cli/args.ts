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
  -o, --output FORMAT   plan: text (default) or json (schema serverlessapp.io/plan/v1)
      --operator NS/NAME
                        plan: the operator's Deployment, read for the platform's policy
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

export type Invocation =
  | { help: true }
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
  if (values.help || positionals.length === 0) return { help: true };
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
