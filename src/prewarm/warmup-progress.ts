// What a warmup task has done so far, as the planner reads it, and where its
// requests go: plain data, no I/O (the runner that sends them is in effects/).

/** `startedAt`: the instant the task's deadline counts from (status reports it, so it never follows warmedAt). */
export type WarmupProgress = { sent: number; succeeded: number; lastError?: string; startedAt: Date } & (
  | { phase: 'running' }
  | { phase: 'succeeded'; finishedAt: Date }
  | { phase: 'failed'; finishedAt: Date });

export interface WarmupTarget {
  /** The app's "namespace/name". */
  key: string;
  version: string;
  revision: string;
  namespace: string;
  app: string;
  /** An LLM app's member: its requests go by the LLM template to its own workload Service (`service`). */
  llm?: { service: string };
}

export function warmupUrl(template: string, t: WarmupTarget, path: string): string {
  const filled = template
    .replaceAll('{service}', t.llm?.service ?? '{service}')
    .replaceAll('{revision}', t.revision).replaceAll('{namespace}', t.namespace)
    .replaceAll('{app}', t.app).replaceAll('{version}', t.version);
  return filled.includes('{path}') ? filled.replaceAll('{path}', path) : filled.replace(/\/$/, '') + path;
}
