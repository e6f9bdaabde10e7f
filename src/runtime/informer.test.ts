// The informer against a scripted API server on loopback: the failure modes a
// real API server rarely produces on demand (410 on a watch, a silent stream,
// 500s on list, a closed stream) are each one line here.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { Informer, type InformerOptions } from './informer.ts';
import { KubeClient } from './client.ts';
import { Kinds } from '../util/kinds.ts';
import { reply } from '../testing/http.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';
import { assertQuietWindow } from '../../test/support/quiet-window.ts';
import { waitFor } from '../../test/support/wait.ts';

interface ConfigMap extends KubernetesObject {
  data?: Record<string, string>;
}

type Reply = { status: number; body: unknown } | undefined;

/** Serves /api/v1[/namespaces/NS]/configmaps: list (in pages of `pageSize`) and watch. */
class FakeApiServer {
  readonly objects = new Map<string, ConfigMap>();
  readonly requests: URL[] = [];
  /** The client's port of each request's connection, in order: which requests shared a kept-alive connection. */
  readonly clientPorts: number[] = [];
  readonly watches: Array<{ ns: string | undefined; res: ServerResponse }> = [];
  /** Overrides the answer to a list (return a reply) or a watch (write to res and return true). */
  onList: (url: URL) => Reply = () => undefined;
  onWatch: (url: URL, res: ServerResponse) => boolean = () => false;
  pageSize = Infinity;
  #rv = 100;
  #server: Server | undefined;
  #port = 0;

  async start(): Promise<this> {
    this.#server = createServer((req, res) => this.#handle(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.#port = (this.#server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: `http://127.0.0.1:${this.#port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'u' }],
      currentContext: 'fake',
    });
    return kc;
  }

  get resourceVersion(): string {
    return String(this.#rv);
  }

  lists(): URL[] {
    return this.requests.filter((u) => u.searchParams.get('watch') !== 'true');
  }

  watchRequests(): URL[] {
    return this.requests.filter((u) => u.searchParams.get('watch') === 'true');
  }

  /** Creates or changes an object; open watches hear about it unless `silently`. */
  put(ns: string, name: string, data: Record<string, string>, silently = false): ConfigMap {
    const key = `${ns}/${name}`;
    const existed = this.objects.has(key);
    const obj: ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace: ns, name, resourceVersion: String(++this.#rv), managedFields: [{ manager: 'test' }] },
      data,
    };
    this.objects.set(key, obj);
    if (!silently) this.send(existed ? 'MODIFIED' : 'ADDED', obj);
    return obj;
  }

  remove(ns: string, name: string, silently = false): void {
    const obj = this.objects.get(`${ns}/${name}`);
    if (!obj) return;
    this.objects.delete(`${ns}/${name}`);
    const gone = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.#rv) } };
    if (!silently) this.send('DELETED', gone);
  }

  send(type: string, object: unknown): void {
    const ns = (object as ConfigMap).metadata?.namespace;
    for (const w of this.watches) if (w.ns === undefined || w.ns === ns) w.res.write(`${JSON.stringify({ type, object })}\n`);
  }

  bookmark(): void {
    this.send('BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(++this.#rv) } });
  }

  /** Ends every open watch, as the API server does at timeoutSeconds. */
  closeWatches(): void {
    for (const w of this.watches.splice(0)) w.res.end();
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    this.requests.push(url);
    this.clientPorts.push(req.socket.remotePort!);
    const ns = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps$/.exec(url.pathname)?.[1];
    if (ns === undefined && url.pathname !== '/api/v1/configmaps') return reply(res, 404, { kind: 'Status', code: 404, message: 'not found' });
    if (url.searchParams.get('watch') === 'true') {
      if (this.onWatch(url, res)) return;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      const watch = { ns, res };
      this.watches.push(watch);
      res.on('close', () => this.watches.splice(this.watches.indexOf(watch) >>> 0, 1));
      return;
    }
    const custom = this.onList(url);
    if (custom) return reply(res, custom.status, custom.body);
    const all = [...this.objects.values()]
      .filter((o) => ns === undefined || o.metadata?.namespace === ns)
      .map(({ apiVersion: _a, kind: _k, ...item }) => item);
    const start = Number(url.searchParams.get('continue') ?? 0);
    const pageSize = Math.min(this.pageSize, Number(url.searchParams.get('limit') ?? Infinity));
    const items = all.slice(start, start + pageSize);
    const more = start + pageSize < all.length;
    reply(res, 200, { kind: 'ConfigMapList', metadata: { resourceVersion: this.resourceVersion, ...(more ? { continue: String(start + pageSize) } : {}) }, items });
  }
}

describe('Informer', () => {
  let api: FakeApiServer;
  let informer: Informer<ConfigMap> | undefined;
  let events: string[];

  const fast: InformerOptions<ConfigMap> = { backoff: { initialMs: 10, maxMs: 50 } };

  function open(opts: InformerOptions<ConfigMap> = {}): Informer<ConfigMap> {
    informer = new Informer<ConfigMap>(api.kubeConfig(), Kinds.ConfigMap, { ...fast, ...opts });
    for (const e of ['add', 'update', 'delete'] as const) {
      informer.on(e, (obj, old) => events.push(`${e} ${obj.metadata?.namespace}/${obj.metadata?.name}@${obj.metadata?.resourceVersion}${old ? ` was ${old.metadata?.resourceVersion}` : ''}`));
    }
    return informer;
  }

  beforeEach(async () => {
    api = await new FakeApiServer().start();
    events = [];
  });

  afterEach(async () => {
    informer?.stop();
    informer = undefined;
    await api.stop();
  });

  it('resolves start once the initial list is cached, emitting add for each object', async () => {
    api.put('a', 'one', { k: '1' });
    api.put('b', 'two', { k: '2' });
    const inf = open();
    assert.equal(inf.hasSynced(), false);
    await inf.start();
    assert.equal(inf.hasSynced(), true);
    assert.deepEqual(events, ['add a/one@101', 'add b/two@102']);
    assert.deepEqual(inf.get('a', 'one')?.data, { k: '1' });
    assert.equal(inf.get('a', 'two'), undefined);
    assert.deepEqual(inf.list('b').map((o) => o.metadata?.name), ['two']);
    assert.equal(inf.list().length, 2);
  });

  it('keeps an index by key through adds, updates that move an object, and deletes', async () => {
    api.put('a', 'one', { app: 'x' });
    api.put('a', 'two', { app: 'y' });
    const inf = open({ indexBy: (o) => o.data?.app ? `${o.metadata?.namespace}/${o.data.app}` : undefined });
    await inf.start();
    const names = (key: string) => inf.byIndex(key).map((o) => o.metadata?.name).sort();
    assert.deepEqual([names('a/x'), names('a/y')], [['one'], ['two']]);
    await waitFor('the watch', () => api.watches.length === 1);
    api.put('a', 'two', { app: 'x' });
    api.put('a', 'three', {});
    await waitFor('the move', () => names('a/x').length === 2);
    assert.deepEqual([names('a/x'), names('a/y')], [['one', 'two'], []]);
    api.remove('a', 'one');
    await waitFor('the delete', () => names('a/x').length === 1);
    assert.deepEqual(names('a/x'), ['two']);
  });

  it('under a projection keeps the cached spec through label-only watch events, and reports each decode\'s cost by namespace', async () => {
    const parsed: string[] = [];
    const inf = open({ projection: { metadata: ['name', 'namespace', 'uid', 'resourceVersion', 'generation'] }, hooks: { onParse: (ns, ms) => { assert.ok(ms >= 0); parsed.push(ns ?? ''); } } });
    await inf.start();
    await waitFor('the watch', () => api.watches.length === 1);
    const app = (rv: string, generation: number, labels: Record<string, string>) => ({
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'a', name: 'big', uid: 'u', resourceVersion: rv, generation, labels, annotations: { note: 'x' } }, spec: { env: ['e'.repeat(100_000)] },
    });
    api.send('ADDED', app('500', 1, {}));
    await waitFor('the add', () => inf.get('a', 'big') !== undefined);
    const first = inf.get('a', 'big') as ConfigMap & { spec?: unknown };
    assert.deepEqual(first.metadata, { namespace: 'a', name: 'big', uid: 'u', resourceVersion: '500', generation: 1 });
    api.send('MODIFIED', app('501', 1, { storm: '1' }));
    await waitFor('the label edit', () => inf.get('a', 'big')?.metadata?.resourceVersion === '501');
    assert.equal((inf.get('a', 'big') as typeof first).spec, first.spec);
    api.send('MODIFIED', app('502', 2, {}));
    await waitFor('the spec edit', () => inf.get('a', 'big')?.metadata?.resourceVersion === '502');
    assert.notEqual((inf.get('a', 'big') as typeof first).spec, first.spec);
    assert.deepEqual(events, ['add a/big@500', 'update a/big@501 was 500', 'update a/big@502 was 501']);
    assert.deepEqual(parsed, ['a', 'a', 'a']);
  });

  it('fills in apiVersion and kind, which list items lack, and drops managedFields', async () => {
    api.put('a', 'one', {});
    const inf = open();
    await inf.start();
    const cached = inf.get('a', 'one')!;
    assert.equal(cached.apiVersion, 'v1');
    assert.equal(cached.kind, 'ConfigMap');
    assert.equal(cached.metadata?.managedFields, undefined);
  });

  describe('an optional kind (a CRD that may not be installed)', () => {
    const notServed = { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound', message: 'the server could not find the requested resource' } };

    it('counts as synced and empty while the API server does not serve it, and says when it is served', async () => {
      let installed = false;
      api.onList = () => (installed ? undefined : notServed);
      const inf = open({ optional: true });
      const changes: boolean[] = [];
      inf.onServedChange((served) => changes.push(served));
      await inf.start();
      assert.equal(inf.hasSynced(), true, 'a missing CRD never holds back the caches');
      assert.equal(inf.served(), false);
      assert.deepEqual(changes, [false]);
      assert.equal(api.watchRequests().length, 0, 'nothing to watch yet');
      api.put('a', 'one', {});
      installed = true;
      await waitFor('the kind to be served', () => inf.served());
      assert.deepEqual(changes, [false, true]);
      await waitFor('the object to be cached', () => inf.get('a', 'one') !== undefined);
      assert.deepEqual(events, ['add a/one@101']);
    });

    it('empties its cache when the kind stops being served (its CRD deleted)', async () => {
      api.put('a', 'one', {});
      const inf = open({ optional: true });
      await inf.start();
      api.onList = () => notServed;
      api.closeWatches();
      api.onWatch = (_url, res) => { reply(res, 404, notServed.body); return true; };
      await waitFor('the kind to be reported as not served', () => !inf.served());
      assert.deepEqual(inf.list(), []);
      assert.deepEqual(events, ['add a/one@101', 'delete a/one@101']);
    });

    it('is an error like any other when the informer is not optional', async () => {
      api.onList = () => notServed;
      const inf = open();
      void inf.start();
      await waitFor('a few retries', () => api.lists().length >= 2);
      assert.equal(inf.hasSynced(), false);
    });
  });

  it('follows every page of a paginated list', async () => {
    for (let i = 0; i < 5; i++) api.put('a', `cm${i}`, {});
    api.pageSize = 2;
    const inf = open();
    await inf.start();
    assert.equal(inf.list().length, 5);
    assert.deepEqual(api.lists().map((u) => u.searchParams.get('continue')), [null, '2', '4']);
  });

  /** Five objects in pages of two, and a client that notes each page it asks for in `order` (the tests note decodes there too). */
  function pagedWithSpy(): { order: string[]; client: KubeClient } {
    for (let i = 0; i < 5; i++) api.put('a', `cm${i}`, {});
    api.pageSize = 2;
    const order: string[] = [];
    class Spying extends KubeClient {
      override listEach(...args: Parameters<KubeClient['listEach']>): ReturnType<KubeClient['listEach']> {
        order.push(`list ${args[2].continue ?? 'first'}`);
        return super.listEach(...args);
      }
    }
    return { order, client: new Spying(api.kubeConfig()) };
  }

  it('asks for the next page before it decodes this one, and still caches every page', async () => {
    const { order, client } = pagedWithSpy();
    informer = new Informer<ConfigMap>(client, Kinds.ConfigMap, { ...fast, transform: (o) => (order.push(`decode ${o.metadata?.name}`), o) });
    try {
      await informer.start();
      assert.deepEqual(informer.list().map((o) => o.metadata?.name).sort(), ['cm0', 'cm1', 'cm2', 'cm3', 'cm4']);
      assert.deepEqual(order, ['list first', 'list 2', 'decode cm0', 'decode cm1', 'list 4', 'decode cm2', 'decode cm3', 'decode cm4']);
    } finally {
      client.close();
    }
  });

  it('stops the pages it asked for ahead when a list fails: nothing of the failed list is filed after it', async () => {
    const { order, client } = pagedWithSpy();
    let failed = false;
    informer = new Informer<ConfigMap>(client, Kinds.ConfigMap, {
      ...fast,
      transform: (o) => {
        order.push(`decode ${o.metadata?.name}`);
        if (o.metadata?.name === 'cm1' && !failed) {
          failed = true;
          throw new Error('a transform that fails once');
        }
        return o;
      },
    });
    try {
      await informer.start();
      assert.deepEqual(informer.list().map((o) => o.metadata?.name).sort(), ['cm0', 'cm1', 'cm2', 'cm3', 'cm4']);
      const second = order.indexOf('list first', 1);
      assert.ok(second > 0, `listed again after the failure: ${order.join(', ')}`);
      assert.deepEqual(order.slice(0, second), ['list first', 'list 2', 'decode cm0', 'decode cm1'], 'the page asked for ahead filed nothing, and asked for no more');
    } finally {
      client.close();
    }
  });

  it('applies a custom transform instead of the default', async () => {
    api.put('a', 'one', { secret: 'x', keep: 'y' });
    const inf = open({ transform: (o) => ({ ...o, data: { keep: o.data?.['keep'] ?? '' } }) });
    await inf.start();
    assert.deepEqual(inf.get('a', 'one')?.data, { keep: 'y' });
    assert.ok(inf.get('a', 'one')?.metadata?.managedFields, 'a custom transform replaces the default one');
  });

  it('emits add, update and delete from the watch, in order', async () => {
    const inf = open();
    await inf.start();
    await waitFor('the watch', () => api.watches.length === 1);
    api.put('a', 'one', { v: '1' });
    api.put('a', 'one', { v: '2' });
    api.remove('a', 'one');
    await waitFor('three events', () => events.length === 3);
    assert.deepEqual(events, ['add a/one@101', 'update a/one@102 was 101', 'delete a/one@103']);
    assert.equal(inf.get('a', 'one'), undefined);
    assert.equal(inf.stats.lastEventAt instanceof Date, true);
  });

  it('watches from the resourceVersion of the list, with bookmarks and a server-side timeout', async () => {
    api.put('a', 'one', {});
    const inf = open({ labelSelector: 'app=x' });
    await inf.start();
    await waitFor('the watch', () => api.watchRequests().length === 1);
    const watch = api.watchRequests()[0]!;
    assert.equal(watch.searchParams.get('resourceVersion'), '101');
    assert.equal(watch.searchParams.get('allowWatchBookmarks'), 'true');
    assert.equal(watch.searchParams.get('labelSelector'), 'app=x');
    assert.equal(api.lists()[0]!.searchParams.get('labelSelector'), 'app=x');
    const timeout = Number(watch.searchParams.get('timeoutSeconds'));
    assert.ok(timeout >= 31 && timeout <= 45, `a 60 s watchdog keeps the watch timeout inside it, got ${timeout}`);
  });

  it('does not emit update when the resourceVersion did not change', async () => {
    const obj = api.put('a', 'one', {});
    const inf = open();
    await inf.start();
    await waitFor('the watch', () => api.watches.length === 1);
    api.send('MODIFIED', obj);
    api.put('a', 'two', {});
    await waitFor('the second add', () => events.length === 2);
    assert.deepEqual(events, ['add a/one@101', 'add a/two@102']);
  });

  it('resumes a watch the server closed from the last resourceVersion seen, bookmarks included, without relisting', async () => {
    const types: string[] = [];
    const inf = open({ hooks: { onEvent: (t) => types.push(t) } });
    await inf.start();
    await waitFor('the watch', () => api.watches.length === 1);
    api.put('a', 'one', {});
    api.bookmark();
    await waitFor('the add and the bookmark', () => events.length === 1 && types.includes('BOOKMARK'));
    api.closeWatches();
    await waitFor('a second watch', () => api.watchRequests().length === 2);
    assert.equal(api.watchRequests()[1]!.searchParams.get('resourceVersion'), '102');
    assert.equal(api.lists().length, 1);
    assert.equal(inf.stats.restarts, 0, 'a server-side close is routine');
  });

  it('relists on a 410 ERROR event and emits only what changed meanwhile', async () => {
    api.put('a', 'same', {});
    api.put('a', 'changed', { v: '1' });
    api.put('a', 'removed', {});
    const reasons: string[] = [];
    const inf = open({ hooks: { onRestart: (r) => reasons.push(r) } });
    await inf.start();
    await waitFor('the watch', () => api.watches.length === 1);
    events = [];
    api.put('a', 'changed', { v: '2' }, true);
    api.remove('a', 'removed', true);
    api.put('a', 'new', {}, true);
    api.send('ERROR', { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 410, reason: 'Expired', message: 'too old resource version' });
    await waitFor('the relist', () => events.length === 3);
    assert.deepEqual(events.sort(), ['add a/new@106', 'delete a/removed@103', 'update a/changed@104 was 102']);
    assert.deepEqual(reasons, ['expired']);
    assert.equal(inf.stats.restarts, 1);
    assert.equal(api.lists().length, 2);
  });

  it('relists at once when the watch request itself answers 410 Gone', async () => {
    let gone = 1;
    api.onWatch = (_url, res) => {
      if (gone-- <= 0) return false;
      reply(res, 410, { kind: 'Status', code: 410, reason: 'Gone', message: 'too old' });
      return true;
    };
    // On a clock that never moves, any backoff would wait forever: the relist must come at once.
    const inf = open({ clock: new ManualClock() });
    await inf.start();
    await waitFor('a second list', () => api.lists().length === 2);
    assert.equal(inf.stats.restarts, 1);
  });

  it('aborts a watch that carries no traffic for watchdogMs, and relists', async () => {
    api.put('a', 'one', {});
    const reasons: string[] = [];
    const clock = new ManualClock();
    const inf = open({ watchdogMs: 200, clock, hooks: { onRestart: (r) => reasons.push(r) } });
    await inf.start();
    await waitFor('the watch', () => api.watches.length === 1);
    clock.advance(199);
    assert.deepEqual(reasons, [], 'not before watchdogMs');
    clock.advance(1);
    await waitFor('the watchdog restart', () => reasons.length === 1);
    assert.deepEqual(reasons, ['watchdog']);
    clock.advance(fast.backoff!.maxMs);
    await waitFor('a relist and a new watch', () => api.lists().length === 2 && api.watches.length === 1);
    assert.equal(api.watches.length, 1, 'the stalled watch was closed');
    const listPorts = api.requests.flatMap((u, i) => (u.searchParams.get('watch') === 'true' ? [] : [api.clientPorts[i]]));
    assert.notEqual(listPorts[1], listPorts[0], 'the relist went on a fresh connection: the idle one may be as dead as the watch');
    api.put('a', 'two', {});
    await waitFor('the add on the new watch', () => inf.get('a', 'two') !== undefined);
  });

  it('keeps a watch that receives bookmarks alive past watchdogMs', async () => {
    const clock = new ManualClock();
    let bookmarks = 0;
    const reasons: string[] = [];
    const inf = open({ watchdogMs: 300, clock, hooks: { onEvent: (t) => { if (t === 'BOOKMARK') bookmarks++; }, onRestart: (r) => reasons.push(r) } });
    await inf.start();
    await waitFor('the watch', () => api.watches.length === 1);
    for (let i = 1; i <= 6; i++) {
      clock.advance(200);
      api.bookmark();
      await waitFor(`bookmark ${i}`, () => bookmarks === i);
    }
    assert.deepEqual(reasons, [], '1.2 s of a 300 ms watchdog passed, with a bookmark every 200 ms');
    assert.equal(api.watchRequests().length, 1);
    clock.advance(300);
    await waitFor('the watchdog, once the bookmarks stop', () => reasons.length === 1);
  });

  it('retries a failing list with backoff until it succeeds', async () => {
    let failures = 3;
    api.onList = () => (failures-- > 0 ? { status: 500, body: { kind: 'Status', code: 500, message: 'etcd is down' } } : undefined);
    api.put('a', 'one', {});
    const inf = open();
    await inf.start();
    assert.equal(api.lists().length, 4);
    assert.equal(inf.stats.restarts, 3);
    assert.equal(inf.get('a', 'one')?.metadata?.name, 'one');
  });

  it('treats a watch that closes at once without events as a failure and backs off', async () => {
    api.onWatch = (_url, res) => {
      reply(res, 200, '');
      return true;
    };
    const clock = new ManualClock();
    const inf = open({ backoff: { initialMs: 100, maxMs: 100 }, clock });
    await inf.start();
    await waitFor('the first restart', () => inf.stats.restarts === 1);
    // No hot loop: the next watch waits for the backoff, however long the window.
    await assertQuietWindow({ controlTimeoutMs: 10_000, what: 'a second watch before the backoff passed', windowMs: 100, observe: () => api.watchRequests().length, control: () => clock.advance(100) });
  });

  it('relists periodically and emits nothing when nothing changed', async () => {
    api.put('a', 'one', {});
    const clock = new ManualClock();
    const inf = open({ relistPeriodMs: 100, clock });
    await inf.start();
    for (const lists of [2, 3]) {
      await waitFor('the watch', () => api.watchRequests().length === lists - 1 && api.watches.length === 1);
      clock.advance(99);
      assert.equal(api.lists().length, lists - 1, 'not before the period');
      clock.advance(1);
      await waitFor(`list ${lists}`, () => api.lists().length === lists);
    }
    assert.deepEqual(events, ['add a/one@101']);
    assert.equal(inf.stats.restarts, 0, 'a periodic relist is not a restart');
  });

  it('lists and watches each configured namespace and nothing else', async () => {
    api.put('a', 'one', {});
    api.put('b', 'two', {});
    api.put('c', 'three', {});
    const inf = open({ namespaces: ['a', 'b', 'a'] });
    await inf.start();
    assert.deepEqual(api.lists().map((u) => u.pathname).sort(), ['/api/v1/namespaces/a/configmaps', '/api/v1/namespaces/b/configmaps']);
    assert.deepEqual(inf.list().map((o) => o.metadata?.name).sort(), ['one', 'two']);
    await waitFor('two watches', () => api.watches.length === 2);
    api.put('c', 'four', {});
    api.put('b', 'five', {});
    await waitFor('the add in b', () => inf.get('b', 'five') !== undefined);
    assert.equal(inf.get('c', 'four'), undefined);
  });

  it('keeps delivering events after a handler throws', async () => {
    const inf = open();
    inf.on('add', () => {
      throw new Error('handler bug');
    });
    await inf.start();
    await waitFor('the watch', () => api.watches.length === 1);
    api.put('a', 'one', {});
    api.put('a', 'two', {});
    await waitFor('both adds', () => events.length === 2);
  });

  it('resync emits update with old === new for every cached object', async () => {
    api.put('a', 'one', {});
    api.put('a', 'two', {});
    const inf = open();
    const same: boolean[] = [];
    inf.on('update', (obj, old) => same.push(obj === old));
    await inf.start();
    events = [];
    inf.resync();
    assert.deepEqual(events, ['update a/one@101 was 101', 'update a/two@102 was 102']);
    assert.deepEqual(same, [true, true]);
  });

  it('rejects start when stopped before the first list succeeded', async () => {
    api.onList = () => ({ status: 403, body: { kind: 'Status', code: 403, message: 'forbidden' } });
    const inf = open();
    const started = inf.start();
    await waitFor('a list attempt', () => api.lists().length >= 1);
    inf.stop();
    await assert.rejects(started, /stopped before it synced/);
  });

  it('rejects start called after stop, without contacting the server', async () => {
    const inf = open();
    inf.stop();
    await assert.rejects(inf.start(), /stopped before it synced/);
    await assertQuietWindow({ controlTimeoutMs: 10_000, what: 'the stopped informer contacted the server', windowMs: 50, observe: () => api.requests.length, control: () => open().start() });
  });

  it('closes its watch on stop', async () => {
    const inf = open();
    await inf.start();
    await waitFor('the watch', () => api.watches.length === 1);
    inf.stop();
    await waitFor('the watch to close', () => api.watches.length === 0);
    await assertQuietWindow({ controlTimeoutMs: 10_000, what: 'the stopped informer watched again', windowMs: 50, observe: () => api.watchRequests().length, control: () => open().start() });
  });
});
