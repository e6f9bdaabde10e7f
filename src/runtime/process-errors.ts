// What the process does with an error no code handled, so none ends it
// without a message. A rejected promise nobody awaited is a bug in one piece
// of work, not in the process: it is logged with its stack and counted
// (serverlessapp_unhandled_rejections_total), and the operator keeps running.
// An uncaught exception left a callback half done, so the process's state can
// no longer be trusted: it is logged, the log is flushed, and the process
// exits 1, for the kubelet to restart it (as a Go operator's panic does).

import type { Logger } from './logging.ts';

export interface ProcessErrorPolicy {
  logger: Logger;
  /** Counts one unhandled rejection. */
  countRejection(): void;
  /** Resolves once the lines logged so far are written. */
  flush(): Promise<void>;
  exit(code: number): void;
}

export interface ProcessErrorHandlers {
  unhandledRejection(reason: unknown): void;
  uncaughtException(err: unknown): void;
}

export function processErrorHandlers(p: ProcessErrorPolicy): ProcessErrorHandlers {
  let exiting = false;
  return {
    unhandledRejection(reason) {
      p.countRejection();
      p.logger.error('unhandled promise rejection (a bug: please report it); the operator keeps running', { error: asLogged(reason) });
    },
    uncaughtException(err) {
      // A second one while flushing: exit now rather than wait on a process in that state.
      if (exiting) return p.exit(1);
      exiting = true;
      p.logger.error('uncaught exception (a bug: please report it); exiting', { error: asLogged(err) });
      p.flush().then(() => p.exit(1), () => p.exit(1));
    },
  };
}

/** Installs the policy on `proc` (default: this process). */
export function installProcessErrorHandlers(p: ProcessErrorPolicy, proc: Pick<NodeJS.EventEmitter, 'on'> = process): void {
  const h = processErrorHandlers(p);
  proc.on('unhandledRejection', h.unhandledRejection);
  proc.on('uncaughtException', h.uncaughtException);
}

/** An Error logs as itself (name, message, stack); anything else thrown, as its string. */
function asLogged(reason: unknown): unknown {
  return reason instanceof Error ? reason : String(reason);
}
