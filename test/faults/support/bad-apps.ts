// A seeded corpus of invalid ServerlessApps: a valid app with one fault in
// it. Each fault names the field it breaks, so a test can check that whoever
// refuses it, admission (schema and CEL) or the operator (cron, time zones,
// regular expressions, step order, gateways), says which field is wrong.
import type { AppSpec } from '../../support/apps.ts';
import type { Random } from './seeded.ts';

type Json = Record<string, unknown>;

export interface BadApp {
  /** What is wrong, e.g. "scaling.minScale out of range (-3)". */
  fault: string;
  /** The field a message about it must name (no list indices: they are written differently by different layers). */
  field: string;
  spec: AppSpec;
}

interface Fault {
  name: string;
  field: string;
  /** Mutates a copy of a valid spec (container app unless `model`). */
  apply(spec: Json, rng: Random): string | void;
  model?: boolean;
}

const huge = (rng: Random, n: number) => 'x'.repeat(n + rng.int(1, 64));
const obj = (spec: Json, key: string): Json => (spec[key] ??= {}) as Json;
const window = (overrides: Json = {}): Json => ({ name: 'w', schedule: '0 8 * * 1-5', duration: '1h', minScale: 1, ...overrides });

const FAULTS: Fault[] = [
  // Wrong types.
  { name: 'image is a number', field: 'spec.container.image', apply: (s, r) => { obj(s, 'container').image = r.int(1, 1e6); } },
  { name: 'minScale is a string', field: 'spec.scaling.minScale', apply: (s) => { obj(s, 'scaling').minScale = 'two'; } },
  { name: 'minScale is a fraction', field: 'spec.scaling.minScale', apply: (s) => { obj(s, 'scaling').minScale = 1.5; } },
  { name: 'canaryPercent is a string', field: 'spec.rollout.canaryPercent', apply: (s, r) => { obj(s, 'rollout').canaryPercent = String(r.int(1, 99)); } },
  { name: 'hosts is a string', field: 'spec.ingress.hosts', apply: (s) => { obj(s, 'ingress').hosts = 'shop.example.com'; } },
  { name: 'prewarm.replicas is a boolean', field: 'spec.prewarm.replicas', apply: (s) => { obj(s, 'prewarm').replicas = true; } },
  { name: 'windows is an object', field: 'spec.scaling.windows', apply: (s) => { obj(s, 'scaling').windows = { night: true }; } },
  // Out of range.
  { name: 'minScale below zero', field: 'spec.scaling.minScale', apply: (s, r) => { obj(s, 'scaling').minScale = -r.int(1, 100); } },
  { name: 'maxScale above 1000', field: 'spec.scaling.maxScale', apply: (s, r) => { obj(s, 'scaling').maxScale = r.int(1001, 1e6); } },
  { name: 'canaryPercent above 100', field: 'spec.rollout.canaryPercent', apply: (s, r) => { obj(s, 'rollout').canaryPercent = r.int(101, 10_000); } },
  { name: 'port 0 or above 65535', field: 'spec.container.port', apply: (s, r) => { obj(s, 'container').port = r.chance(0.5) ? 0 : r.int(65_536, 1e6); } },
  { name: 'target 0', field: 'spec.scaling.target', apply: (s) => { obj(s, 'scaling').target = 0; } },
  { name: 'step of 100', field: 'spec.rollout.steps', apply: (s) => { obj(s, 'rollout').steps = [10, 100]; } },
  { name: 'window minScale above 1000', field: 'spec.scaling.windows.minScale', apply: (s, r) => { obj(s, 'scaling').windows = [window({ minScale: r.int(1001, 1e5) })]; } },
  { name: 'retries above 10', field: 'spec.ingress.retries.attempts', apply: (s, r) => { obj(s, 'ingress').retries = { attempts: r.int(11, 99) }; } },
  { name: 'minScale above maxScale', field: 'spec.scaling.minScale', apply: (s, r) => { Object.assign(obj(s, 'scaling'), { minScale: r.int(6, 20), maxScale: r.int(1, 5) }); } },
  { name: 'window minScale above its maxScale', field: 'spec.scaling.windows.minScale', apply: (s) => { obj(s, 'scaling').windows = [window({ minScale: 5, maxScale: 2 })]; } },
  // Schedules and time zones (the operator judges these).
  { name: 'cron minute 61', field: 'spec.scaling.windows.schedule', apply: (s) => { obj(s, 'scaling').windows = [window({ schedule: '61 8 * * *' })]; } },
  { name: 'cron with words', field: 'spec.scaling.windows.schedule', apply: (s, r) => { obj(s, 'scaling').windows = [window({ schedule: r.pick(['every morning', 'at 8 o\'clock daily', 'whenever, wherever']) })]; } },
  { name: 'cron with six fields', field: 'spec.scaling.windows.schedule', apply: (s) => { obj(s, 'scaling').windows = [window({ schedule: '0 0 8 * * 1-5' })]; } },
  { name: 'cron hour 24', field: 'spec.scaling.windows.schedule', apply: (s) => { obj(s, 'scaling').windows = [window({ schedule: '0 24 * * *' })]; } },
  { name: 'unknown time zone', field: 'spec.scaling.windows.timeZone', apply: (s, r) => { obj(s, 'scaling').windows = [window({ timeZone: r.pick(['Mars/Olympus_Mons', 'Europe/Atlantis', 'UTC+25', 'Berlin']) })]; } },
  { name: 'zero window duration', field: 'spec.scaling.windows.duration', apply: (s) => { obj(s, 'scaling').windows = [window({ duration: '0s' })]; } },
  { name: 'window duration in words', field: 'spec.scaling.windows.duration', apply: (s) => { obj(s, 'scaling').windows = [window({ duration: '10 minutes' })]; } },
  { name: 'duplicate window names', field: 'spec.scaling.windows', apply: (s) => { obj(s, 'scaling').windows = [window(), window({ schedule: '0 20 * * *' })]; } },
  { name: 'too many windows', field: 'spec.scaling.windows', apply: (s) => { obj(s, 'scaling').windows = Array.from({ length: 17 }, (_, i) => window({ name: `w${i}` })); } },
  // Bad durations elsewhere.
  { name: 'fractional scaleToZeroAfter', field: 'spec.scaling.scaleToZeroAfter', apply: (s) => { obj(s, 'scaling').scaleToZeroAfter = '1.5h'; } },
  { name: 'negative leadTime', field: 'spec.prewarm.leadTime', apply: (s) => { obj(s, 'prewarm').leadTime = '-5m'; } },
  { name: 'timeout in days', field: 'spec.ingress.timeout', apply: (s) => { obj(s, 'ingress').timeout = '2d'; } },
  // Regular expressions and steps (the operator judges these).
  { name: 'unbalanced regex', field: 'spec.rollout.match.regex', apply: (s, r) => { obj(s, 'rollout').match = [{ header: 'x-canary', regex: r.pick(['(', '[a-z', 'a{2,1}', '*x', '(?<n>a)(?<n>b)']) }]; } },
  { name: 'steps not increasing', field: 'spec.rollout.steps', apply: (s, r) => { obj(s, 'rollout').steps = [r.int(50, 90), r.int(10, 49)]; } },
  { name: 'match with two values', field: 'spec.rollout.match', apply: (s) => { obj(s, 'rollout').match = [{ header: 'x-canary', exact: 'yes', prefix: 'y' }]; } },
  { name: 'header name with a space', field: 'spec.rollout.match.header', apply: (s) => { obj(s, 'rollout').match = [{ header: 'x canary', exact: 'yes' }]; } },
  // Gateways (the operator judges these).
  { name: 'gateway not allowed', field: 'spec.ingress.gateways', apply: (s, r) => { obj(s, 'ingress').gateways = [`${r.pick(['kube-system', 'other-team', 'istio-system'])}/private-${r.int(1, 9)}`]; } },
  { name: 'gateway with capitals', field: 'spec.ingress.gateways', apply: (s) => { obj(s, 'ingress').gateways = ['Istio-System/Public']; } },
  // Huge strings.
  { name: 'huge image', field: 'spec.container.image', apply: (s, r) => { obj(s, 'container').image = `registry.example.com/${huge(r, 512)}`; } },
  { name: 'huge host', field: 'spec.ingress.hosts', apply: (s, r) => { obj(s, 'ingress').hosts = [`${huge(r, 253)}.example.com`]; } },
  { name: 'huge env value', field: 'spec.container.env.value', apply: (s, r) => { obj(s, 'container').env = [{ name: 'BIG', value: huge(r, 32_768) }]; } },
  { name: 'huge window name', field: 'spec.scaling.windows.name', apply: (s, r) => { obj(s, 'scaling').windows = [window({ name: huge(r, 63) })]; } },
  { name: 'too many args', field: 'spec.container.args', apply: (s) => { obj(s, 'container').args = Array.from({ length: 257 }, (_, i) => `--a${i}`); } },
  // Missing required fields.
  { name: 'container without image', field: 'spec.container.image', apply: (s) => { s.container = { port: 8080 }; } },
  { name: 'window without schedule', field: 'spec.scaling.windows.schedule', apply: (s) => { const w = window(); delete w.schedule; obj(s, 'scaling').windows = [w]; } },
  { name: 'ingress without hosts', field: 'spec.ingress.hosts', apply: (s) => { s.ingress = { timeout: '10s' }; } },
  { name: 'match without header', field: 'spec.rollout.match.header', apply: (s) => { obj(s, 'rollout').match = [{ exact: 'yes' }]; } },
  { name: 'model without storageUri', field: 'spec.model.storageUri', model: true, apply: (s) => { delete obj(s, 'model').storageUri; } },
  { name: 'custom model without runtime', field: 'spec.model.runtime', model: true, apply: (s) => { obj(s, 'model').format = { name: 'custom' }; } },
  // Shape.
  { name: 'both container and model', field: 'spec', apply: (s) => { s.model = { format: { name: 'sklearn' }, storageUri: 'gs://models/iris' }; } },
  { name: 'neither container nor model', field: 'spec', apply: (s) => { delete s.container; } },
  { name: 'cacheModel on a container app', field: 'spec.prewarm.cacheModel', apply: (s) => { obj(s, 'prewarm').cacheModel = true; } },
  { name: 'model storageUri over ftp', field: 'spec.model.storageUri', model: true, apply: (s) => { obj(s, 'model').storageUri = 'ftp://models.example.com/iris'; } },
  { name: 'analysis without steps', field: 'spec.rollout.analysis', apply: (s) => { obj(s, 'rollout').analysis = { prometheus: { address: 'http://prometheus:9090' }, checks: [{ name: 'ok', query: 'up', min: 1 }] }; } },
  { name: 'match without ingress', field: 'spec.rollout.match', apply: (s) => { delete s.ingress; obj(s, 'rollout').match = [{ header: 'x-canary', exact: 'yes' }]; } },
  { name: 'mirror without ingress', field: 'spec.rollout.mirrorPercent', apply: (s) => { delete s.ingress; obj(s, 'rollout').mirrorPercent = 10; } },
];

function validSpec(rng: Random, model: boolean): Json {
  const workload = model
    ? { model: { format: { name: 'sklearn' }, storageUri: `gs://models/iris-${rng.int(1, 99)}` } }
    : { container: { image: `shop:${rng.int(1, 99)}`, port: 8080 } };
  return { ...workload, scaling: { minScale: 0, maxScale: 5 }, ingress: { hosts: ['shop.example.com'] } };
}

/** `count` invalid apps, faults taken in turn (so every kind appears) with seeded details. */
export function badApps(rng: Random, count: number): BadApp[] {
  return Array.from({ length: count }, (_, i) => {
    const f = FAULTS[i % FAULTS.length]!;
    const spec = validSpec(rng, f.model ?? false);
    f.apply(spec, rng);
    return { fault: f.name, field: f.field, spec: spec as AppSpec };
  });
}

/** Whether `message` names `field`, however the layer that wrote it spells list items (`[0]`, `[name="w"]`) or a leading dot. */
export function namesField(message: string, field: string): boolean {
  return message.replace(/\[(\d+|\w+="[^"]*")\]/g, '').includes(field);
}

export const FAULT_COUNT = FAULTS.length;
