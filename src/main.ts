// serverlessapp-operator: flags and wiring only.

import { parseConfig, usage } from './config.ts';
import { createOperator, type Operator } from './operator.ts';
import { OffsetClock, systemClock } from './runtime/clock.ts';
import { loadRestConfig } from './runtime/kubeconfig.ts';
import { createLogger, flushLogger } from './runtime/logging.ts';
import { installProcessErrorHandlers } from './runtime/process-errors.ts';
import { installStopSignalHandlers } from './runtime/stop-signals.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = parseConfig(process.argv.slice(2), process.env);
  } catch (e) {
    console.error(`${(e as Error).message}\n\n${usage()}`);
    process.exit(2);
  }
  if (config.help) {
    console.log(usage());
    return;
  }
  const logger = createLogger({ level: config.logLevel });
  let operator: Operator | undefined;
  installProcessErrorHandlers({
    logger, countRejection: () => operator?.manager.metrics.unhandledRejection(), flush: () => flushLogger(logger), exit: (code) => process.exit(code),
  });
  const kc = await loadRestConfig(config.kubeconfig ? { kubeconfig: config.kubeconfig } : {});
  const clock = config.clockStart ? new OffsetClock(new Date(config.clockStart)) : systemClock;
  operator = await createOperator(kc, config, { logger, clock });
  const running = operator;
  installStopSignalHandlers({ logger, clock: systemClock, stop: () => running.stop(), exit: (code) => process.exit(code) });
  await operator.manager.start();
}

main().catch((e: unknown) => {
  console.error(JSON.stringify({ level: 'error', msg: 'operator failed', error: e instanceof Error ? e.message : String(e) }));
  process.exit(1);
});
