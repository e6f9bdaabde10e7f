// Structured logs: one JSON object per line on stdout, with controller-runtime's
// keys (controller, namespace, name, reconcileID) on per-reconcile children.
// The time key is `ts`, as in controller-runtime's zap output.

import winston from 'winston';

export type Logger = winston.Logger;

export function createLogger(opts: { level?: string; silent?: boolean } = {}): Logger {
  const { combine, timestamp, errors, json } = winston.format;
  return winston.createLogger({
    level: opts.level ?? 'info',
    silent: opts.silent ?? false,
    format: combine(errors({ stack: true }), timestamp({ alias: 'ts' }), dropTimestamp(), json()),
    transports: [new winston.transports.Console()],
  });
}

/**
 * Resolves once everything logged so far has reached stdout (winston loses
 * buffered lines on process.exit, winston#1250). The logger stays usable:
 * several managers in one test process may share it.
 */
export async function flushLogger(l: Logger, timeoutMs = 2_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (l.writableLength > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
}

/** `timestamp({alias})` copies the value; keep only the alias so lines carry one time key. */
const dropTimestamp = winston.format((info) => {
  delete info['timestamp'];
  return info;
});
