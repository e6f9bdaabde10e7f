// `kubectl sapp status` as text, drawn the way `kubectl argo rollouts get
// rollout` draws a rollout: a header with the phase and what the conditions
// say, then the rollout's progress, the stable and candidate versions, prewarm
// and scaling. Pure: the app and the time in, text out, so --watch only
// redraws and the golden files pin the layout.

import { escapeTerminalDeep } from '../util/terminal-text.ts';
import type { Phase, ServerlessApp, VersionStatus } from '../api/v1alpha1/serverlessapp.ts';
import { findCondition } from '../util/conditions.ts';
import { ROLLOUT_DEFAULTS, WARMUP_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import { stickySessions } from './sticky-sessions.ts';
import { burnRatePairs } from '../rollout/slo.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';

export interface ViewOptions {
  now: Date;
  /** ANSI colours (on a terminal only). */
  color: boolean;
}

type Line = [label: string, value: string] | [label: string, value: string, indent: number];

const LABEL_WIDTH = 17;
const COLORS = { green: 32, yellow: 33, red: 31, dim: 2 } as const;
type Color = keyof typeof COLORS;

const PHASE_LOOK: Record<Phase, { symbol: string; color: Color }> = {
  Stable: { symbol: '✔', color: 'green' },
  Pending: { symbol: '◌', color: 'yellow' },
  Canary: { symbol: '◌', color: 'yellow' },
  Testing: { symbol: '◌', color: 'yellow' },
  Promoting: { symbol: '◌', color: 'yellow' },
  Baking: { symbol: '◌', color: 'yellow' },
  Frozen: { symbol: '❄', color: 'red' },
  Paused: { symbol: '॥', color: 'yellow' },
  RolledBack: { symbol: '⚠', color: 'yellow' },
  Aborted: { symbol: '✖', color: 'red' },
  Failed: { symbol: '✖', color: 'red' },
};

const CONDITION_LINES = [
  ['Ready:', 'Ready'], ['Reconciling:', 'Reconciling'], ['Stalled:', 'Stalled'], ['Paused:', 'Paused'],
  ['Progressing:', 'CanaryProgressing'], ['Workload:', 'WorkloadReady'],
] as const;

/** Abnormal-true conditions: True is the news, coloured as what it means. */
const ABNORMAL_TRUE: Partial<Record<string, Color>> = { Reconciling: 'yellow', Stalled: 'red', Paused: 'yellow' };

export function renderStatus(app: ServerlessApp, opts: ViewOptions): string {
  const paint = (color: Color, text: string) => (opts.color ? `\x1b[${COLORS[color]}m${text}\x1b[0m` : text);
  const ago = (at: string | undefined) => (at ? relativeTime(new Date(at), opts.now) : undefined);
  const status = escapeTerminalDeep(app.status ?? {});
  const rollout = app.spec.rollout ?? {};
  const lines: Line[] = [];
  const add = (label: string, value: string | undefined, indent = 0) => {
    if (value !== undefined && value !== '') lines.push([label, value, indent]);
  };

  const look = status.phase ? PHASE_LOOK[status.phase] ?? { symbol: '⚠', color: 'yellow' as const } : { symbol: '⚠', color: 'yellow' as const };
  add('Name:', app.metadata.name);
  add('Namespace:', app.metadata.namespace);
  add('Phase:', paint(look.color, `${look.symbol} ${status.phase ?? 'Unknown (the operator has not reported yet)'}`));
  // Ready, then what kstatus (Flux, kubectl wait) and Argo CD read: Reconciling (in progress), Stalled (give up), Paused.
  for (const [label, type] of CONDITION_LINES) {
    const c = findCondition(status.conditions, type);
    if (!c || (type === 'WorkloadReady' && c.status === 'True')) continue;
    const color = ABNORMAL_TRUE[type] && c.status === 'True' ? ABNORMAL_TRUE[type] : c.status === 'True' ? 'green' : c.status === 'False' ? 'red' : 'yellow';
    // Ready says what Reconciling or Stalled says while either holds: their line carries the message.
    const repeated = type === 'Ready' && ['Reconciling', 'Stalled'].some((t) => findCondition(status.conditions, t)?.message === c.message);
    add(label, `${paint(color, c.status)} ${c.reason}${c.message && !repeated ? `: ${c.message}` : ''}`);
  }
  add('URL:', status.url);
  const generation = app.metadata.generation;
  if (status.observedGeneration !== undefined && generation !== undefined && status.observedGeneration < generation) {
    add('Observed:', paint('yellow', status.observedGeneration === 0
      ? 'not reported on yet: the operator writes a status at its first reconcile (is it running?)'
      : `generation ${status.observedGeneration} of ${generation}: the operator has not caught up with the latest edit`));
  }

  const canary = status.canary;
  const candidate = status.versions?.candidate;
  const controls = [
    rollout.canaryPercent !== undefined ? `canaryPercent ${rollout.canaryPercent}` : undefined,
    rollout.paused ? 'paused' : undefined,
    rollout.abort ? 'abort' : undefined,
    rollout.retry !== undefined ? `retry ${rollout.retry}` : undefined,
    rollout.promote ? `promote ${rollout.promote}` : undefined,
  ].filter((x) => x !== undefined);
  if (canary || candidate || controls.length > 0 || rollout.steps?.length) {
    lines.push(['', '']);
    add('Strategy:', rollout.steps?.length ? `steps ${rollout.steps.map((s) => `${s}%`).join(' → ')}, interval ${rollout.interval ?? ROLLOUT_DEFAULTS.interval}` : 'manual (spec.rollout.canaryPercent)');
    add('Spec:', controls.join(', '), 1);
    add('Sessions:', stickySessions(app), 1);
    if (canary) {
      const steps = rollout.steps ?? [];
      if (canary.step !== undefined && canary.step >= steps.length && steps.length > 0) add('Step:', `all ${steps.length} done`, 1);
      else if (canary.step !== undefined && steps.length > 0) {
        add('Step:', `${canary.step + 1}/${steps.length} (${steps[canary.step] ?? '-'}%)${canary.stepStartedAt ? `, since ${ago(canary.stepStartedAt)}` : ''}`, 1);
      }
      if (canary.weight !== undefined || canary.trafficPercent !== undefined) {
        add('Weight:', `${canary.weight ?? '-'}% asked, ${canary.trafficPercent ?? '-'}% served${rollout.stickiness ? ' (of new sessions)' : ''}`, 1);
      }
      add('Analysis:', canary.message, 1);
      const slo = rollout.analysis?.slo;
      if (slo) add('Gates:', `SLO ${slo.objective}%: fails at once past ${burnRatePairs(slo).map((p) => `${p.factor}x over ${p.long} and ${p.short}`).join(', or ')}; read every ${rollout.analysis?.cadence ?? ROLLOUT_DEFAULTS.cadence}`, 1);
      if (canary.checkedAt) add('Checked:', ago(canary.checkedAt), 1);
      if (status.phase === 'Baking' && canary.bakeStartedAt && rollout.bake) {
        const until = new Date(Date.parse(canary.bakeStartedAt) + parseDuration(rollout.bake)).toISOString();
        add('Baking:', `all traffic on the candidate since ${ago(canary.bakeStartedAt)}; stable held warm (${canary.bakeReplicas ?? 1} replicas) until ${until}, then retired`, 1);
      }
      if (rollout.analysis && canary.failedChecks !== undefined) add('Failed checks:', `${canary.failedChecks} (the candidate fails at ${rollout.analysis.failureThreshold ?? ROLLOUT_DEFAULTS.failureThreshold})`, 1);
      add('Started:', ago(canary.startedAt), 1);
      if (canary.halted) add('Halted:', paint('yellow', '॥ the last check round returned no data: the step holds until a round has data'), 1);
      if (canary.paused) add('Paused:', paint('yellow', '॥ held by spec.rollout.paused (kubectl sapp resume)'), 1);
      if (canary.aborted) add('Aborted:', paint('red', '✖ stopped by spec.rollout.abort: all traffic on stable (kubectl sapp retry)'), 1);
      const failure = canary.failure;
      if (failure) {
        const when = failure.at ? ` (${ago(failure.at)})` : '';
        add('Failed:', paint('red', `✖ ${failure.version} ${failure.reason}: ${failure.message}${when}; kubectl sapp retry`), 1);
      }
    }
  }

  const release = status.release;
  if (release) {
    lines.push(['', '']);
    add('Release:', release.frozen ? paint('red', `✖ ${release.message ?? 'frozen'}`) : release.message ?? 'not frozen');
    add('Budget left:', release.budgetRemaining !== undefined ? `${release.budgetRemaining}% (freeze below ${release.freezeBelow}%)` : release.freezeBelow !== undefined ? `not shown (freeze below ${release.freezeBelow}%)` : undefined, 1);
    add('Read:', ago(release.checkedAt), 1);
    const o = release.override;
    if (o) add('Override:', paint('yellow', `${o.version} let through by ${JSON.stringify(o.by)}: ${o.reason}${o.at ? ` (${ago(o.at)})` : ''}`), 1);
  }

  for (const [label, version] of [['Stable:', status.versions?.stable], ['Candidate:', candidate]] as const) {
    lines.push(['', '']);
    if (!version) {
      add(label, 'none');
      continue;
    }
    add(label, version.summary ?? version.image ?? version.storageUri ?? version.version);
    add(version.image ? 'Image:' : 'Model:', version.image ?? version.storageUri, 1);
    add('Version:', version.version, 1);
    add('Revision:', version.revision, 1);
    add('State:', versionState(version, paint), 1);
    add('Replicas:', version.replicas !== undefined ? String(version.replicas) : undefined, 1);
    const percent = trafficOf(version, status.traffic);
    add('Traffic:', percent !== undefined ? `${percent}%` : undefined, 1);
  }

  const prewarm = status.prewarm;
  if (prewarm) {
    lines.push(['', '']);
    const count = app.spec.prewarm?.warmup?.count ?? WARMUP_DEFAULTS.count;
    const requests = prewarm.requestsSent !== undefined ? ` (${prewarm.succeeded ?? 0}/${count} warmup requests succeeded, ${prewarm.requestsSent} sent)` : '';
    if (prewarm.warmedAt) add('Prewarm:', `${paint('green', '✔')} ${prewarm.version} warm since ${ago(prewarm.warmedAt)}${requests}`);
    else if (prewarm.startedAt) add('Prewarm:', `${paint('yellow', '◌')} ${prewarm.version} warming since ${ago(prewarm.startedAt)}${requests}`);
    else add('Prewarm:', `${paint('yellow', '◌')} ${prewarm.version} waiting for ready replicas`);
    add('Last error:', prewarm.lastError, 1);
  }

  const scaling = status.scaling;
  if (scaling) {
    lines.push(['', '']);
    add('Scaling:', `min ${scaling.minScale ?? 0}, max ${scaling.maxScale ?? 'unbounded'}`);
    add('Open windows:', scaling.openWindows?.join(', '), 1);
    add('Prewarming:', scaling.prewarmingWindows?.join(', '), 1);
    const next = scaling.nextTransition;
    if (next) {
      const verb = { prewarm: `window ${next.window} prewarms`, open: `window ${next.window} opens`, close: `window ${next.window} closes` }[next.change];
      const bounds = [next.minScale !== undefined ? `min ${next.minScale}` : '', next.maxScale !== undefined ? `max ${next.maxScale}` : ''].filter(Boolean).join(', ');
      add('Next:', `${verb} ${ago(next.at)}${bounds ? ` (${bounds})` : ''}, at ${next.at}`, 1);
    }
  }

  return `${lines.map(([label, value, indent = 0]) => (label === '' && value === '' ? '' : `${'  '.repeat(indent)}${label.padEnd(LABEL_WIDTH - 2 * indent)}${value}`)).join('\n')}\n`;
}

function versionState(v: VersionStatus, paint: (c: Color, t: string) => string): string | undefined {
  if (v.ready === undefined && v.warm === undefined) return undefined;
  if (v.ready && v.warm) return `${paint('green', '✔')} ready, warm`;
  if (v.ready) return `${paint('yellow', '◌')} ready, not warm yet`;
  return `${paint('yellow', '◌')} not ready`;
}

/** The version's share of traffic as the data plane reports it, matched by version hash or else by revision. */
function trafficOf(v: VersionStatus, traffic: NonNullable<ServerlessApp['status']>['traffic']): number | undefined {
  if (!traffic) return undefined;
  return traffic
    .filter((t) => (t.version ? t.version === v.version : t.revision === v.revision))
    .reduce((sum, t) => sum + t.percent, 0);
}

/** "in 2h13m" or "3m20s ago", at the precision kubectl shows ages. */
export function relativeTime(at: Date, now: Date): string {
  const ms = at.getTime() - now.getTime();
  const text = humanDuration(Math.abs(ms));
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

export function humanDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 ? `${m}m${s % 60}s` : `${m}m`;
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d${h % 24}h` : `${d}d`;
}
