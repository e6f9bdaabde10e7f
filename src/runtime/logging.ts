// Structured logs through winston: one JSON object per line on stdout, with
// controller-runtime's keys (controller, namespace, name, reconcileID) on
// per-reconcile children and the time under `ts`, as in controller-runtime's
// zap output. winston costs 7.7 MiB of RSS under the image's --lite-mode
// (README, "Dependencies").

import { Writable } from 'node:stream';
import winston from 'winston';

export type Level = 'error' | 'warn' | 'info' | 'debug';

export interface Logger {
  error(message: string, meta?: object): void;
  warn(message: string, meta?: object): void;
  info(message: string, meta?: object): void;
  debug(message: string, meta?: object): void;
  /** A logger that adds `meta` to every line. */
  child(meta: object): Logger;
  /** Resolves once every line logged so far has been handed to its destination. */
  flush(): Promise<void>;
}

export interface LoggerOptions {
  level?: string;
  silent?: boolean;
  /** Where a line goes (default: stdout). */
  write?: (line: string) => void;
}

const LEVELS: Record<Level, number> = { error: 0, warn: 1, info: 2, debug: 3 };

/** The time as `ts`, zap's key; winston's own timestamp format would name it `timestamp`. */
const stampTs = winston.format((info) => Object.assign(info, { ts: new Date().toISOString() }));

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = (opts.level && opts.level in LEVELS ? opts.level : 'info') as Level;
  const silent = opts.silent ?? false;
  const destination = opts.write ? lineSink(opts.write) : process.stdout;
  const transport = new winston.transports.Stream({ stream: destination, eol: '\n' });
  const root = winston.createLogger({
    levels: LEVELS, level, silent,
    format: winston.format.combine(stampTs(), winston.format.json({ replacer: errorsAsObjects })),
    transports: [transport],
  });
  // winston's Stream transport writes a line to the destination before `log` returns (a test
  // holds it to that), so a flush waits only for the destination's own queue: the callback of
  // an empty write comes after every write before it.
  const flush = () => new Promise<void>((resolve) => destination.write('', () => resolve()));
  // A line below the level is dropped here, before winston: winston builds and formats every line and
  // drops it only in the transport (about 25 us each; a restart's first pass at 5,000 apps logged 10,000
  // lines of debug nobody reads).
  const ignore = () => {};
  // A child's winston logger is made at its first line: most reconciles log nothing at the level, and
  // each child costs a winston object (about 3 us; a restart's first pass makes 10,000 at 5,000 apps).
  const wrap = (make: () => winston.Logger): Logger => {
    let made: winston.Logger | undefined;
    const w = () => (made ??= make());
    const log = (l: Level) => (silent || LEVELS[l] > LEVELS[level] ? ignore : (message: string, meta?: object) => { w().log(l, message, meta); });
    return { error: log('error'), warn: log('warn'), info: log('info'), debug: log('debug'), child: (meta) => wrap(() => w().child(meta)), flush };
  };
  return wrap(() => root);
}

/** A line writer as a stream winston can write to (tests capture lines this way). */
function lineSink(write: (line: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      if (chunk.length > 0) write(chunk.toString('utf8')); // the empty write is flush()'s marker
      done();
    },
  });
}

/** An Error logs as its name, message, stack and own fields (an ApiError's code and reason), not as `{}`. */
function errorsAsObjects(_key: string, value: unknown): unknown {
  if (!(value instanceof Error)) return value;
  return { ...value, name: value.name, message: value.message, ...(value.stack ? { stack: value.stack } : {}) };
}

/** Resolves once everything logged so far has reached the logger's destination (lines still queued are lost on process.exit). */
export async function flushLogger(l: Logger): Promise<void> {
  await l.flush();
}
