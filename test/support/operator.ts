// Runs the real operator in-process against the test control plane, with
// loopback listeners and an optional controlled clock.
import { KubeConfig } from '@kubernetes/client-node';
import { parseConfig, type OperatorConfig } from '../../src/config.ts';
import { createOperator, type Operator } from '../../src/operator.ts';
import { OffsetClock, type TimerClock } from '../../src/runtime/clock.ts';
import { createLogger } from '../../src/runtime/logging.ts';

export interface RunningOperator extends Operator {
  clock: TimerClock;
  stop(): Promise<void>;
}

export function testKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(process.env.KUBECONFIG!);
  return kc;
}

export async function startOperator(overrides: Partial<OperatorConfig> = {}, opts: { clock?: TimerClock; kubeConfig?: KubeConfig; warmupBackoffMs?: number } = {}): Promise<RunningOperator> {
  const config: OperatorConfig = {
    ...parseConfig([], {}),
    leaderElect: false,
    metricsAddr: '127.0.0.1:0',
    probeAddr: '127.0.0.1:0',
    logLevel: process.env.OPERATOR_LOG_LEVEL ?? 'error',
    identity: `test-${process.pid}-${Math.random().toString(36).slice(2, 7)}`,
    leaderElectionNamespace: 'default',
    allowedGateways: ['istio-system/public', '{namespace}/*'],
    ...overrides,
  };
  const clock = opts.clock ?? new OffsetClock();
  const logger = createLogger({ level: config.logLevel });
  // Several operators share this test process: losing the lease must stop one, not exit the process.
  const onLostLeadership = () => logger.warn('lost leadership (test operator keeps the process alive)');
  const op = await createOperator(opts.kubeConfig ?? testKubeConfig(), config, { logger, clock, onLostLeadership, ...(opts.warmupBackoffMs ? { warmupBackoffMs: opts.warmupBackoffMs } : {}) });
  await op.manager.start();
  return {
    ...op, clock,
    // The manager stops the app controller's effects with its workers (ControllerOptions.onStopped).
    stop: () => op.stop(),
  };
}
