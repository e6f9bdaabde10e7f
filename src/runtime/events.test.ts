import assert from 'node:assert/strict';
import { ApiError, type KubeClient } from './client.ts';
import { EventRecorder } from './events.ts';
import type { ResourceKind } from '../util/kinds.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';

interface Written { op: 'create' | 'patch'; name: string; body: Record<string, unknown> }

/** Records the calls the recorder makes; `fail` makes every call reject. */
class FakeClient {
  calls: Written[] = [];
  events = new Map<string, Record<string, unknown>>();
  fail: Error | undefined;

  async create(_k: ResourceKind, obj: Record<string, unknown>) {
    await Promise.resolve();
    if (this.fail) throw this.fail;
    const name = (obj['metadata'] as { name: string }).name;
    this.calls.push({ op: 'create', name, body: obj });
    this.events.set(name, obj);
    return obj;
  }

  async mergePatch(_k: ResourceKind, _ns: string, name: string, patch: Record<string, unknown>) {
    await Promise.resolve();
    if (this.fail) throw this.fail;
    if (!this.events.has(name)) throw new ApiError(404, `events.events.k8s.io "${name}" not found`, 'NotFound');
    this.calls.push({ op: 'patch', name, body: patch });
    this.events.set(name, { ...this.events.get(name), ...patch });
    return this.events.get(name);
  }

  asClient(): KubeClient {
    return this as unknown as KubeClient;
  }
}

const app = { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'web', namespace: 'demo', uid: 'u-1' } };

function setup() {
  const clock = new ManualClock(new Date('2026-03-01T10:00:00Z'));
  const client = new FakeClient();
  const recorder = new EventRecorder(client.asClient(), { identity: 'pod-a', clock });
  return { clock, client, recorder };
}

describe('EventRecorder', () => {
  it('creates an events.k8s.io/v1 Event regarding the object, from this controller and instance', async () => {
    const { client, recorder } = setup();
    recorder.record(app, 'Normal', 'RolloutStarted', 'canary 10% on web-00002');
    await recorder.flush();
    assert.equal(client.calls.length, 1);
    const e = client.calls[0]!.body;
    assert.equal(e['type'], 'Normal');
    assert.equal(e['reason'], 'RolloutStarted');
    assert.equal(e['action'], 'RolloutStarted');
    assert.equal(e['note'], 'canary 10% on web-00002');
    assert.equal(e['reportingController'], 'serverlessapp.io/operator');
    assert.equal(e['reportingInstance'], 'pod-a');
    assert.equal(e['eventTime'], '2026-03-01T10:00:00.000000Z');
    assert.deepEqual(e['regarding'], { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', name: 'web', namespace: 'demo', uid: 'u-1' });
    assert.deepEqual(e['metadata'], { name: client.calls[0]!.name, namespace: 'demo' });
    assert.match(client.calls[0]!.name, /^web\.[0-9a-f]+$/);
  });

  it('folds repeats within ten minutes into one Event with a series count', async () => {
    const { clock, client, recorder } = setup();
    recorder.record(app, 'Warning', 'WarmupRetry', 'GET / returned 503');
    await recorder.flush();
    clock.advance(60_000);
    recorder.record(app, 'Warning', 'WarmupRetry', 'GET / returned 503');
    recorder.record(app, 'Warning', 'WarmupRetry', 'GET / returned 503');
    await recorder.flush();
    assert.equal(client.events.size, 1);
    const e = [...client.events.values()][0]!;
    assert.deepEqual(e['series'], { count: 3, lastObservedTime: '2026-03-01T10:01:00.000000Z' });
    assert.ok(client.calls.filter((c) => c.op === 'patch').length <= 2);
  });

  it('starts a new Event for a different note, and after the window has passed', async () => {
    const { clock, client, recorder } = setup();
    recorder.record(app, 'Warning', 'WarmupRetry', 'GET / returned 503');
    recorder.record(app, 'Warning', 'WarmupRetry', 'GET / returned 500');
    await recorder.flush();
    clock.advance(11 * 60_000);
    recorder.record(app, 'Warning', 'WarmupRetry', 'GET / returned 503');
    await recorder.flush();
    assert.equal(client.events.size, 3);
  });

  it('creates a fresh Event when the aggregated one has expired on the server', async () => {
    const { clock, client, recorder } = setup();
    recorder.record(app, 'Normal', 'Scaled', 'minScale 2');
    await recorder.flush();
    client.events.clear();
    clock.advance(1_000);
    recorder.record(app, 'Normal', 'Scaled', 'minScale 2');
    await recorder.flush();
    assert.equal(client.events.size, 1);
    assert.deepEqual(client.calls.map((c) => c.op), ['create', 'create']);
  });

  it('stops recording for an object that floods events, and lets it speak again later', async () => {
    const { clock, client, recorder } = setup();
    for (let i = 0; i < 40; i++) recorder.record(app, 'Normal', 'Tick', `tick ${i}`);
    await recorder.flush();
    assert.equal(client.events.size, 25);
    const other = { ...app, metadata: { ...app.metadata, name: 'api', uid: 'u-2' } };
    recorder.record(other, 'Normal', 'Tick', 'tick');
    await recorder.flush();
    assert.equal(client.events.size, 26, 'another object is not throttled');
    recorder.record(app, 'Warning', 'NamespaceOverShare', 'its reconciles wait');
    await recorder.flush();
    assert.equal(client.events.size, 27, 'nor the object\'s Warnings (client-go keys its spam filter by object and type)');
    clock.advance(5 * 60_000);
    recorder.record(app, 'Normal', 'Tick', 'after a pause');
    await recorder.flush();
    assert.equal(client.events.size, 28);
  });

  it('never throws into the caller, even when the API server refuses', async () => {
    const { client, recorder } = setup();
    client.fail = new ApiError(403, 'events is forbidden', 'Forbidden');
    assert.doesNotThrow(() => recorder.record(app, 'Warning', 'Oops', 'x'));
    await recorder.flush();
    assert.equal(client.events.size, 0);
    assert.doesNotThrow(() => recorder.record({} as typeof app, 'Warning', 'Oops', 'x'));
  });

  it('drops what does not fit in its queue, counting every drop and logging them once a minute', async () => {
    const clock = new ManualClock(new Date('2026-03-01T10:00:00Z'));
    const client = new FakeClient();
    const warnings: Array<Record<string, unknown>> = [];
    const drops: string[] = [];
    const logger = { warn: (_m: string, f: Record<string, unknown>) => warnings.push(f), debug: () => {}, info: () => {}, error: () => {} };
    const recorder = new EventRecorder(client.asClient(), { identity: 'pod-a', clock, maxPending: 3, onDrop: (why) => drops.push(why), logger: logger as never });
    const appN = (i: number) => ({ ...app, metadata: { ...app.metadata, name: `web-${i}`, uid: `u-${i}` } });
    // Recording is synchronous and writing is not: 8 apps at once fill a queue of 3.
    for (let i = 0; i < 8; i++) recorder.record(appN(i), 'Normal', 'Ready', 'first version is ready');
    clock.advance(61_000);
    for (let i = 8; i < 10; i++) recorder.record(appN(i), 'Normal', 'Ready', 'first version is ready');
    await recorder.flush();
    assert.deepEqual(drops, Array(drops.length).fill('queue_full'));
    assert.ok(drops.length >= 5, `dropped ${drops.length}`);
    assert.equal(client.calls.length + drops.length, 10, 'every event is written or counted as dropped');
    assert.equal(warnings.length, 2, 'one log line for the first burst, one a minute later');
  });

  it('records without waiting for the API server', () => {
    const { client, recorder } = setup();
    recorder.record(app, 'Normal', 'Created', 'x');
    assert.equal(client.calls.length, 0);
  });

  it('writes pending Events round-robin over namespaces: a flood in one waits behind its own', async () => {
    const { client, recorder } = setup();
    const inNamespace = (namespace: string, i: number) => ({ ...app, metadata: { ...app.metadata, namespace, name: `web-${i}`, uid: `${namespace}-${i}` } });
    for (let i = 0; i < 50; i++) recorder.record(inNamespace('noisy', i), 'Warning', 'Flood', 'x');
    recorder.record(inNamespace('victim', 0), 'Normal', 'Ready', 'first version is ready');
    await recorder.flush();
    const order = client.calls.map((c) => (c.body['regarding'] as { namespace: string }).namespace);
    // Four writers take the first four at once; the victim's is among the next round, not the 51st.
    assert.ok(order.indexOf('victim') <= 8, `victim written at position ${order.indexOf('victim')}`);
    assert.equal(order.length, 51);
  });

  it('drops what exceeds a namespace\'s share of the queue, while another namespace still gets in', async () => {
    const clock = new ManualClock(new Date('2026-03-01T10:00:00Z'));
    const client = new FakeClient();
    const drops: Array<[string, string]> = [];
    const recorder = new EventRecorder(client.asClient(), { identity: 'pod-a', clock, maxPendingPerNamespace: 5, onDrop: (why, ns) => drops.push([why, ns]) });
    const inNamespace = (namespace: string, i: number) => ({ ...app, metadata: { ...app.metadata, namespace, name: `web-${i}`, uid: `${namespace}-${i}` } });
    for (let i = 0; i < 20; i++) recorder.record(inNamespace('noisy', i), 'Warning', 'Flood', 'x');
    recorder.record(inNamespace('victim', 0), 'Normal', 'Ready', 'first version is ready');
    await recorder.flush();
    assert.ok(drops.length > 0 && drops.every(([why, ns]) => why === 'namespace_full' && ns === 'noisy'), JSON.stringify(drops));
    assert.ok(client.calls.some((c) => (c.body['regarding'] as { namespace: string }).namespace === 'victim'), 'the victim\'s Event was written');
    assert.equal(client.calls.length + drops.length, 21, 'every event is written or counted as dropped');
  });

  it('drops the Events of a leadership term that ended before they were written, cuts those in flight, and records again in the next term', async () => {
    // An API server that holds every write until released, and honours the request's signal as the client does.
    const posted: string[] = [];
    const held: Array<() => void> = [];
    const client = {
      async create(_k: ResourceKind, obj: Record<string, unknown>, opts: { signal?: AbortSignal } = {}) {
        await new Promise<void>((resolve, reject) => {
          held.push(resolve);
          opts.signal?.addEventListener('abort', () => reject(opts.signal!.reason));
        });
        posted.push(obj['reason'] as string);
        return obj;
      },
    } as unknown as KubeClient;
    const drops: string[] = [];
    const recorder = new EventRecorder(client, { identity: 'pod-a', clock: new ManualClock(new Date('2026-03-01T10:00:00Z')), onDrop: (why) => drops.push(why) });
    const object = (i: number) => ({ ...app, metadata: { ...app.metadata, name: `web-${i}`, uid: `u-${i}` } });
    for (let i = 0; i < 10; i++) recorder.record(object(i), 'Normal', 'RolloutStarted', `canary on web-${i}`);
    await Promise.resolve();
    const inFlight = held.length;
    assert.ok(inFlight >= 1 && inFlight < 10, `writes in flight (${inFlight}), the rest waiting`);

    recorder.endTerm();
    recorder.record(object(10), 'Warning', 'ApplyRejected', 'recorded by a reconcile on its way out');
    for (const release of held) release();
    await recorder.flush();
    assert.deepEqual(posted, [], 'nothing of the ended term is posted');
    assert.deepEqual(drops, Array(10 - inFlight + 1).fill('term_ended'), 'those waiting and the one recorded after the term ended, counted');

    recorder.beginTerm();
    recorder.record(object(0), 'Normal', 'RolloutStarted', 'canary on web-0');
    await Promise.resolve();
    held.at(-1)!();
    await recorder.flush();
    assert.deepEqual(posted, ['RolloutStarted'], 'the next term\'s Event is posted, though it repeats one the ended term never wrote');
  });
});
