// What keeps a finished test run alive. Called by the global teardown once the
// control plane is stopped: from then on it remembers where each new timer,
// socket or request was made (a retry loop makes new ones all the time), and if
// the process is still running `afterMs` later it prints those places with the
// open handles, so a leak names its test instead of only hanging the run.
import { createHook, type AsyncHook } from 'node:async_hooks';

export function reportLingering(afterMs: number, print: (text: string) => void): void {
  const made = new Map<number, string>();
  let hook: AsyncHook | undefined;
  // Unref'd: it fires only if something else keeps the process alive.
  setTimeout(() => {
    hook?.disable();
    const counts = new Map<string, number>();
    for (const where of made.values()) counts.set(where, (counts.get(where) ?? 0) + 1);
    const places = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([where, n]) => `${n}× ${where}`);
    print([
      `mocha is still running ${afterMs / 1000} s after the control plane stopped; open: ${JSON.stringify(process.getActiveResourcesInfo())}`,
      ...handles().map((h) => `  handle: ${h}`),
      ...(places.length > 0 ? ['made since the control plane stopped, still alive:', ...places] : []),
    ].join('\n'));
  }, afterMs).unref();
  hook = createHook({
    init(id, type) {
      if (type === 'PROMISE' || type === 'TickObject' || type === 'Immediate') return;
      made.set(id, [type, ...new Error().stack!.split('\n').filter((line) => !line.includes('(node:') && !line.includes(' node:')).slice(2, 9)].join('\n'));
    },
    destroy(id) { made.delete(id); },
  }).enable();
}

/** Sockets, servers and child processes, with where they lead. */
function handles(): string[] {
  const all = (process as unknown as { _getActiveHandles(): object[] })._getActiveHandles();
  return all.filter((h) => h !== process.stdout && h !== process.stderr && h !== process.stdin).map((h) => {
    const any = h as { constructor: { name: string }; remoteAddress?: string; remotePort?: number; address?: () => unknown; spawnfile?: string; pid?: number };
    const where = any.spawnfile ? `${any.spawnfile} (pid ${any.pid})`
      : any.remoteAddress ? `${any.remoteAddress}:${any.remotePort}`
        : typeof any.address === 'function' ? JSON.stringify(any.address()) : '';
    return `${any.constructor.name} ${where}`.trim();
  });
}
