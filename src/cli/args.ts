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

Flags:
  -n, --namespace NS    namespace of the app (default: the context's namespace, else "default")
      --kubeconfig PATH kubeconfig file(s) (default: $KUBECONFIG, else ~/.kube/config)
      --context NAME    kubeconfig context (default: its current-context)
  -w, --watch           status: redraw on every change until Ctrl-C
  -h, --help            this help

Rollout commands are server-side applies of spec.rollout fields with the field
manager kubectl-sapp, forced: under GitOps the next sync sets them back, so
commit the change to Git instead.
`;

export type Invocation =
  | { help: true }
  | { help?: false; command: { verb: 'status'; watch: boolean } | RolloutCommand; name: string; namespace?: string; kubeconfig?: string; context?: string };

/** A command line that makes no sense; the message says what is wrong. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const VERBS = ['status', 'promote', 'abort', 'retry', 'pause', 'resume', 'set-weight'] as const;

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
  if (!name) throw new UsageError(`${verb} needs the name of a ServerlessApp`);
  const extra = verb === 'set-weight' ? 1 : 0;
  if (verb === 'set-weight' && rest.length === 0) throw new UsageError('set-weight needs a percentage: kubectl sapp set-weight NAME N');
  if (rest.length > extra) throw new UsageError(`unexpected argument${rest.length - extra > 1 ? 's' : ''} ${rest.slice(extra).join(' ')}`);
  if (values.watch && verb !== 'status') throw new UsageError('--watch goes with status only');
  const where = {
    ...(values.namespace !== undefined ? { namespace: values.namespace } : {}),
    ...(values.kubeconfig !== undefined ? { kubeconfig: values.kubeconfig } : {}),
    ...(values.context !== undefined ? { context: values.context } : {}),
  };
  if (verb === 'status') return { command: { verb, watch: values.watch ?? false }, name, ...where };
  if (verb === 'set-weight') return { command: { verb, weight: weightArgument(rest[0]!) }, name, ...where };
  return { command: { verb: verb as Exclude<(typeof VERBS)[number], 'status' | 'set-weight'> }, name, ...where };
}

function weightArgument(text: string): number {
  try {
    return parseWeight(text);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
