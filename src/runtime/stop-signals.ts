// What SIGINT and SIGTERM do to the operator process. The first stops it
// gracefully (in-flight work drained, the Lease released) and exits 0. A
// terminal's Ctrl-C arrives twice: the terminal signals its whole process
// group (npm and the operator), and npm forwards the signal to its child. So
// a signal within SAME_KEYPRESS_MS of the first is the same keypress, not a
// second request; only a later one (a second Ctrl-C, a second kill) means
// "stop now", and exits 1 without waiting.

import type { Clock } from './clock.ts';
import type { Logger } from './logging.ts';

/** Longer than npm takes to forward a signal, shorter than a person takes to press Ctrl-C again. */
export const SAME_KEYPRESS_MS = 1_000;

export interface StopSignalPolicy {
  logger: Logger;
  /** Real time: how far apart two signals are. */
  clock: Clock;
  /** The graceful stop. */
  stop(): Promise<void>;
  exit(code: number): void;
}

/** The handler of SIGINT and SIGTERM, for process.on. */
export function stopSignalHandler(p: StopSignalPolicy): (signal: NodeJS.Signals) => void {
  let first: number | undefined;
  return (signal) => {
    const now = p.clock.now().getTime();
    if (first === undefined) {
      first = now;
      p.logger.info('shutting down', { signal });
      p.stop().then(() => p.exit(0), () => p.exit(1));
      return;
    }
    if (now - first < SAME_KEYPRESS_MS) return;
    p.logger.warn('a second stop signal: exiting now, without waiting for in-flight work', { signal });
    p.exit(1);
  };
}

export function installStopSignalHandlers(p: StopSignalPolicy): void {
  const handler = stopSignalHandler(p);
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
