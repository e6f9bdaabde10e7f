// The `kubectl sapp` plugin (its entry is kubectl-sapp.ts). This file is the
// I/O edge only: it reads the kubeconfig, talks to the API server through the
// operator's own KubeClient and prints; what to apply and what to draw are
// pure (commands.ts, status-view.ts, plan-document.ts). Exit codes: 0 done, 1
// the command failed, 2 a usage error; plan: 0 no change, 2 changes, 1 refused
// or any error (a usage error too), as `terraform plan -detailed-exitcode`.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { ApiError, DEFAULT_USER_AGENT, KubeClient } from '../runtime/client.ts';
import { Kinds } from '../util/kinds.ts';
import { loadRestConfig } from '../runtime/kubeconfig.ts';
import { parseCommandLine, PLAN_USAGE, USAGE, UsageError, type Invocation } from './args.ts';
import { CommandError, FIELD_MANAGER, rolloutEdit, type LiveApp, type RolloutCommand, type RolloutEdit } from './commands.ts';
import { renderStatus } from './status-view.ts';
import { parseAppFile, readPlanInput } from './plan-read.ts';
import type { PlanCommand } from './args.ts';
import { readFileSync } from 'node:fs';

/** A concurrent change (409 on the resourceVersion) rebuilds the edit from the new state, this often at most. */
const APPLY_ATTEMPTS = 5;

async function main(argv: string[]): Promise<number> {
  let invocation: Invocation;
  try {
    invocation = parseCommandLine(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`error: ${err.message}\nSee 'kubectl sapp --help'.\n`);
    // For plan, 2 means "changes": a pipeline must not read a usage error as one.
    return argv.includes('plan') ? 1 : 2;
  }
  if (invocation.help) {
    process.stdout.write(invocation.topic === 'plan' ? PLAN_USAGE : USAGE);
    return 0;
  }
  const config = await loadRestConfig({
    ...(invocation.kubeconfig || process.env['KUBECONFIG'] ? { kubeconfig: invocation.kubeconfig || process.env['KUBECONFIG'] } : {}),
    ...(invocation.context ? { context: invocation.context } : {}),
  });
  const namespace = invocation.namespace ?? config.namespace ?? 'default';
  const client = new KubeClient(config, { fieldManager: FIELD_MANAGER, userAgent: DEFAULT_USER_AGENT.replace(/^[^/]+/, FIELD_MANAGER) });
  try {
    const { command, name } = invocation;
    if (command.verb === 'plan') return await plan(client, namespace, invocation.namespace !== undefined, name, command);
    if (command.verb === 'status') {
      const app = await readApp(client, namespace, name);
      const color = colorWanted();
      if (!command.watch) {
        process.stdout.write(renderStatus(app, { now: new Date(), color }));
        return 0;
      }
      return await watchStatus(client, app, color);
    }
    const edit = await applyEdit(client, namespace, name, command);
    for (const { field, managers } of edit.takenOver) {
      process.stderr.write(`warning: ${field} was set by ${managers.join(', ')}; kubectl-sapp took it over. Under GitOps the next sync sets it back: commit the change to Git instead.\n`);
    }
    process.stdout.write(`serverlessapp "${name}" ${edit.done}\n`);
    return 0;
  } finally {
    client.close();
  }
}

async function plan(client: KubeClient, namespace: string, enforceNamespace: boolean, name: string, command: PlanCommand): Promise<number> {
  const file = command.file === undefined ? undefined
    : parseAppFile(readFileSync(command.file === '-' ? 0 : command.file, 'utf8'), command.file === '-' ? 'stdin' : command.file, namespace, enforceNamespace);
  const warn = (message: string) => { process.stderr.write(`warning: ${message}\n`); };
  const reads = readPlanInput(client, file?.metadata.namespace ?? namespace, file?.metadata.name ?? name, file, command.operator, warn);
  reads.input.catch(() => undefined); // awaited below: no unhandled rejection meanwhile
  // The planner, most of the plugin's modules, loads while the server answers. Not before the first answer: a
  // module loads on this thread, which the reads' TLS handshakes need too, so loading it at once held every
  // request back by its load time.
  await reads.stored.catch(() => undefined);
  const [{ exitCode, planChildren, planDocument }, { dryRunOperations }, { renderPlan }] = await Promise.all([
    import('./plan-document.ts'), import('./plan-dry-run.ts'), import('./plan-view.ts'),
  ]);
  const input = await reads.input;
  const planned = planChildren(input);
  const doc = planDocument(input, planned, await dryRunOperations(client, planned.operations));
  process.stdout.write(command.output === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : renderPlan(doc));
  return exitCode(doc);
}

async function readApp(client: KubeClient, namespace: string, name: string): Promise<LiveApp> {
  const app = await client.get<LiveApp>(Kinds.ServerlessApp, namespace, name);
  if (!app) throw new CommandError(`serverlessapp "${name}" not found in namespace "${namespace}"`);
  return app;
}

async function applyEdit(client: KubeClient, namespace: string, name: string, command: RolloutCommand): Promise<RolloutEdit> {
  for (let attempt = 1; ; attempt++) {
    const edit = rolloutEdit(await readApp(client, namespace, name), command);
    try {
      await client.apply(edit.body, { force: true });
      return edit;
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 409 && attempt < APPLY_ATTEMPTS)) throw err;
    }
  }
}

/**
 * Draws the app on every change until Ctrl-C. On a terminal the screen is
 * redrawn in place, also once a second so relative times stay true; piped, each
 * change is printed once, after a blank line.
 */
async function watchStatus(client: KubeClient, first: ServerlessApp, color: boolean): Promise<number> {
  const { name, namespace } = first.metadata;
  // Loaded here, not at the top: the informer brings the operator's logger (winston), which only --watch needs.
  const { Informer } = await import('../runtime/informer.ts');
  const tty = process.stdout.isTTY === true;
  const informer = new Informer<ServerlessApp>(client, Kinds.ServerlessApp, { namespaces: [namespace] });
  let current: ServerlessApp | undefined = first;
  let shown = '';
  const draw = () => {
    const text = current ? renderStatus(current, { now: new Date(), color }) : `serverlessapp "${name}" was deleted from namespace "${namespace}"; waiting for it to come back\n`;
    if (text === shown) return;
    process.stdout.write(tty ? `\x1b[H\x1b[2J${text}` : `${shown ? '\n' : ''}${text}`);
    shown = text;
  };
  const track = (app: ServerlessApp) => {
    if (app.metadata.name !== name) return;
    current = app;
    draw();
  };
  informer.on('add', track);
  informer.on('update', track);
  informer.on('delete', (app) => {
    if (app.metadata.name !== name) return;
    current = undefined;
    draw();
  });
  draw();
  void informer.start();
  const ticker = tty ? setInterval(draw, 1000) : undefined;
  return new Promise((resolve) => {
    const stop = () => {
      clearInterval(ticker);
      informer.stop();
      resolve(0);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

function colorWanted(): boolean {
  return process.stdout.isTTY === true && !process.env['NO_COLOR'] && process.env['TERM'] !== 'dumb';
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
