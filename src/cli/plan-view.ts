// `kubectl sapp plan` as text, in the plugin's `status` style: a header with
// what the plan amounts to, then the refusals, the edit, the child operations
// with their field diffs and dry runs, the rollout, the windows and the model
// cache. Pure: the plan document in, text out (golden files pin the layout),
// with the terminal's control characters escaped as kubectl escapes them.

import type { OperationDocument, PlanDocument } from './plan-document.ts';
import type { FieldChange } from './field-diff.ts';
import type { WindowSchedule } from './plan-windows.ts';
import { escapeTerminal } from '../util/terminal-text.ts';

const SIGN: Record<OperationDocument['change'], string> = { create: '+', update: '~', delete: '-', none: '=' };
const VERB: Record<OperationDocument['change'], string> = { create: 'created', update: 'changed', delete: 'removed', none: 'unchanged' };
const MAX_VALUE = 100;

export function renderPlan(doc: PlanDocument): string {
  const out: string[] = [];
  const line = (text = '', indent = 0) => out.push(`${' '.repeat(indent)}${text}`.trimEnd());
  line(`Plan for serverlessapp ${doc.app.namespace}/${doc.app.name}${doc.source === 'live' ? ' (no edit: what happens next)' : doc.app.exists ? '' : ' (new)'}`);
  line(`Result:  ${doc.refused ? 'refused' : doc.changes ? 'changes' : 'no changes'}`);
  line();

  if (doc.refused) {
    line('Refused:');
    for (const r of doc.refusals) line(`✖ ${r.by === 'operator' ? `the operator (${r.reason})` : `the API server, ${r.kind} ${r.object}`}: ${r.message}`, 2);
    if (doc.refusals.some((r) => r.by === 'operator')) line('The operator leaves everything running as it is.', 2);
    line();
  }

  if (doc.source === 'file') {
    if (!doc.app.exists) line('Edit:    a new ServerlessApp');
    else if (!doc.spec.changed) line('Edit:    none (the file is what is stored)');
    else {
      line('Edit:');
      for (const c of doc.spec.diff) line(change(c), 2);
    }
    line();
  }

  const changing = doc.operations.filter((o) => o.change !== 'none');
  const unchanged = doc.operations.length - changing.length;
  if (doc.operations.length) {
    line(`Children: ${changing.length ? `${changing.length} to write` : 'nothing to write'}${unchanged ? `, ${unchanged} unchanged` : ''}`);
    for (const op of changing) {
      line(`${SIGN[op.change]} ${op.kind} ${op.name} ${VERB[op.change]}: ${op.why}`, 2);
      if (op.when) line(`only ${op.when}`, 6);
      for (const c of op.diff) line(change(c), 6);
      const dry = op.dryRun.result === 'accepted' ? 'dry run: accepted' : `dry run: ${op.dryRun.result}${op.dryRun.message ? `: ${op.dryRun.message}` : ''}`;
      line(dry, 6);
    }
    line();
  }

  const r = doc.rollout;
  if (r) {
    line(`Rollout: ${r.summary}`);
    if (r.newVersion) line(`version ${r.stable?.version}${r.stable?.summary ? ` (${r.stable.summary})` : ''} → ${r.version.version} (${r.version.summary})`, 2);
    line(`phase ${r.phase.now ?? '(none yet)'} → ${r.phase.next}`, 2);
    if (r.beforeTraffic.length) {
      line('before any traffic:', 2);
      for (const b of r.beforeTraffic) line(`- ${b}`, 4);
    }
    if (r.steps.length) {
      line('steps:', 2);
      for (const s of r.steps) line(`${String(s.weight).padStart(3)}%  ${s.after}${s.at ? ` (at ${s.at})` : ''}`, 4);
    }
    if (r.bake) line(`bake: ${r.bake}`, 2);
    if (r.gates) {
      line('gates:', 2);
      for (const g of r.gates) line(`- ${g}`, 4);
    }
    if (r.sessions) {
      line(`sessions: ${r.sessions.summary}`, 2);
      for (const rule of r.sessions.rules) line(`- ${rule}`, 4);
      if (r.sessions.next) line(`next: ${r.sessions.next}`, 4);
    }
    if (r.newVersion || r.steps.length) line(`on failure: ${r.onFailure}`, 2);
    line();
  }

  const w = doc.scaling;
  if (w) {
    line(`Scaling: now ${bounds(w.now)}${w.now.openWindows.length ? ` (open: ${w.now.openWindows.join(', ')})` : ''}${w.now.prewarmingWindows.length ? ` (prewarming: ${w.now.prewarmingWindows.join(', ')})` : ''}`);
    transitions(w, line);
    if (w.before) {
      line(`before this edit: now ${bounds(w.before.now)}`, 2);
      transitions(w.before, (t, i) => line(t, (i ?? 0) + 2));
    }
    for (const e of w.edited ?? []) {
      line(`${e.window} (${e.change}):`, 2);
      transitions({ next: e.next }, (t, i) => line(t, (i ?? 0) + 2));
      if (e.replaces.length) {
        line('replaces:', 4);
        transitions({ next: e.replaces }, (t, i) => line(t, (i ?? 0) + 4));
      }
    }
    line();
  }

  const m = doc.modelCache;
  if (m) {
    if (m.refused) line(`Model cache: ${m.from ? `${m.from} removed, and ` : ''}none written (${m.refused.reason}): ${m.refused.message}`);
    else line(`Model cache: ${m.change === 'none' ? `${m.to ?? m.from} unchanged` : m.change === 'create' ? `${m.to} created` : m.change === 'remove' ? `${m.from} removed` : `${m.from} replaced by ${m.to}`}`);
    line();
  }

  if (doc.effects.length) {
    line('Then:');
    for (const e of doc.effects) line(`- ${e}`, 2);
    line();
  }
  if (doc.notes.length) {
    line('Not checked:');
    for (const n of doc.notes) line(`- ${n}`, 2);
    line();
  }
  line(`Policy: ${doc.settings}`);
  // Messages and names come from the cluster: no escape sequence of theirs reaches the terminal.
  return escapeTerminal(`${out.join('\n')}\n`);
}

function transitions(w: Pick<WindowSchedule, 'next'>, line: (text: string, indent?: number) => void): void {
  if (!w.next.length) line('no transition scheduled', 2);
  for (const t of w.next) line(`${t.local}  ${t.window} ${t.change === 'open' ? 'opens' : t.change === 'close' ? 'closes' : 'prewarms'}: ${bounds(t)}`, 2);
}

function bounds(b: { minScale: number; maxScale?: number }): string {
  return `min ${b.minScale}, max ${b.maxScale ?? 'unbounded'}`;
}

function change(c: FieldChange): string {
  if (c.from === undefined) return `+ ${c.path}: ${value(c.to)}`;
  if (c.to === undefined) return `- ${c.path}: ${value(c.from)}`;
  return `~ ${c.path}: ${value(c.from)} → ${value(c.to)}`;
}

function value(v: unknown): string {
  const text = JSON.stringify(v);
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text;
}
