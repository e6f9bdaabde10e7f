// client-go's exec credential plugins (kubelogin, `aws eks get-token`,
// gke-gcloud-auth-plugin) for a kubeconfig user with `exec`: the plugin runs
// without a terminal, its ExecCredential (a token, or a client certificate
// and key) is kept until its expirationTimestamp, and requests that need it
// at the same moment share one run. A 401 from the server discards it.

import { isAbsolute, resolve } from 'node:path';
import { record, text } from '../util/untyped.ts';

export const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];
const EXEC_TIMEOUT_MS = 60_000;

export interface ExecPluginSpec {
  command: string;
  args?: string[];
  env?: Array<{ name: string; value: string }>;
  apiVersion: string;
  installHint?: string;
  provideClusterInfo?: boolean;
  /** The kubeconfig's directory: a relative command with a slash starts there, as in kubectl. */
  dir?: string;
}

/** Runs the plugin and resolves with its stdout. */
export type RunPlugin = (command: string, args: string[], env: NodeJS.ProcessEnv) => Promise<string>;

export interface ExecResult {
  token?: string;
  cert?: string;
  key?: string;
  /** Epoch ms; none means "until the server refuses it". */
  expiresAt?: number;
}

export class ExecPlugin {
  readonly #spec: ExecPluginSpec;
  readonly #cluster: Record<string, unknown>;
  readonly #run: RunPlugin;
  #cached: ExecResult | undefined;
  #running: Promise<ExecResult> | undefined;

  /** `cluster` is passed to the plugin when it asks for it (provideClusterInfo). */
  constructor(spec: ExecPluginSpec, cluster: Record<string, unknown>, run: RunPlugin = runPlugin) {
    this.#spec = spec;
    this.#cluster = cluster;
    this.#run = run;
  }

  async credential(nowMs: number): Promise<ExecResult> {
    const c = this.#cached;
    if (c && (c.expiresAt === undefined || nowMs < c.expiresAt)) return c;
    this.#running ??= this.#exec().finally(() => (this.#running = undefined));
    return (this.#cached = await this.#running);
  }

  expire(): void {
    this.#cached = undefined;
  }

  async #exec(): Promise<ExecResult> {
    const s = this.#spec;
    const info = {
      apiVersion: s.apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: false, ...(s.provideClusterInfo ? { cluster: this.#cluster } : {}) },
    };
    const env: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) };
    for (const { name, value } of s.env ?? []) env[name] = value;
    const command = s.command.includes('/') && !isAbsolute(s.command) && s.dir ? resolve(s.dir, s.command) : s.command;
    let out: string;
    try {
      out = await this.#run(command, s.args ?? [], env);
    } catch (err) {
      const hint = (err as NodeJS.ErrnoException).code === 'ENOENT' && s.installHint ? `; ${s.installHint.trim()}` : '';
      throw new Error(`exec plugin ${s.command} failed: ${(err as Error).message.trim()}${hint}`);
    }
    return parseExecCredential(out, s);
  }
}

export function parseExecCredential(out: string, s: Pick<ExecPluginSpec, 'command' | 'apiVersion'>): ExecResult {
  let cred: Record<string, unknown>;
  try {
    cred = record(JSON.parse(out));
  } catch {
    throw new Error(`exec plugin ${s.command} did not print an ExecCredential as JSON`);
  }
  if (cred['kind'] !== 'ExecCredential' || cred['apiVersion'] !== s.apiVersion) {
    throw new Error(`exec plugin ${s.command} printed ${String(cred['apiVersion'])} ${String(cred['kind'])}, expected ${s.apiVersion} ExecCredential`);
  }
  const status = record(cred['status']);
  const token = text(status['token']);
  const cert = text(status['clientCertificateData']);
  const key = text(status['clientKeyData']);
  if (!token && !(cert && key)) throw new Error(`exec plugin ${s.command} returned neither status.token nor status.clientCertificateData with clientKeyData`);
  const expiry = text(status['expirationTimestamp']);
  const expiresAt = expiry ? Date.parse(expiry) : undefined;
  if (expiresAt !== undefined && Number.isNaN(expiresAt)) throw new Error(`exec plugin ${s.command}: status.expirationTimestamp ${JSON.stringify(expiry)} is not a time`);
  return { ...(token ? { token } : {}), ...(cert && key ? { cert, key } : {}), ...(expiresAt !== undefined ? { expiresAt } : {}) };
}

async function runPlugin(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  // Loaded here: node:child_process costs every start of kubectl-sapp some 15 ms, and only an exec plugin needs it.
  const { execFile } = await import('node:child_process');
  return new Promise((done, fail) => {
    execFile(command, args, { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (!err) return done(String(stdout));
      // The plugin's own words (its last lines on stderr) say more than an exit code.
      const said = String(stderr).trim().split('\n').slice(-3).join(' ');
      fail(Object.assign(new Error(said || err.message), { code: (err as NodeJS.ErrnoException).code }));
    });
  });
}
