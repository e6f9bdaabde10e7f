import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { LoopbackServer } from '../../test/support/http-server.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';
import { waitFor } from '../../test/support/wait.ts';
import { OutboundError, describeStatus, excerpt, forbiddenHeader, outboundRequest } from './outbound.ts';

describe('outbound HTTP calls', () => {
  let server: LoopbackServer;
  beforeEach(async () => { server = await new LoopbackServer().start(); });
  afterEach(() => server.stop());

  const failure = async (p: Promise<unknown>): Promise<OutboundError> => {
    try {
      await p;
    } catch (e) {
      assert.ok(e instanceof OutboundError, `expected an OutboundError, got ${String(e)}`);
      return e;
    }
    assert.fail('expected the call to fail');
  };

  it('returns status and body of a small answer, sending method, headers and body', async () => {
    server.handler = (_r, res) => { res.statusCode = 201; res.end('created'); };
    const r = await outboundRequest({ url: `${server.url}/p?q=1`, method: 'POST', headers: { 'x-a': 'b' }, body: '{"x":1}', deadlineMs: 2000, maxBytes: 1024 });
    assert.deepEqual([r.status, r.body], [201, 'created']);
    assert.deepEqual([server.requests[0]!.method, server.requests[0]!.url, server.requests[0]!.headers['x-a'], server.requests[0]!.body], ['POST', '/p?q=1', 'b', '{"x":1}']);
  });

  it('cuts a server that trickles bytes at the total deadline, not at an idle timeout', async () => {
    let written = 0;
    server.handler = (_r, res: ServerResponse) => {
      res.writeHead(200);
      const timer = setInterval(() => { res.write('.'); written++; }, 20);
      res.on('close', () => clearInterval(timer));
    };
    const clock = new ManualClock();
    let outcome: string | undefined;
    // 50 ms on the clock, while the server trickles for longer than that in real time: only the clock ends the call.
    const call = outboundRequest({ url: server.url, deadlineMs: 50, maxBytes: 1 << 20, clock });
    call.then(() => { outcome = 'answered'; }, (e: unknown) => { outcome = String(e); });
    await waitFor('the server to trickle bytes for over 50 ms', () => written >= 5);
    clock.advance(49);
    const seen = written;
    await waitFor('more bytes after 49 ms on the clock', () => written >= seen + 3);
    assert.equal(outcome, undefined, 'still under way just before its deadline, bytes still coming');
    clock.advance(1);
    const e = await failure(call);
    assert.equal(e.failure, 'timeout');
    assert.match(e.message, /no complete response within 50 ms/);
  });

  it('leaves no deadline timer behind once a call settles', async () => {
    server.handler = (_r, res) => res.end('ok');
    const clock = new ManualClock();
    await outboundRequest({ url: server.url, deadlineMs: 300, maxBytes: 1024, clock });
    assert.equal(clock.pending, 0, 'answered');
    await server.stop();
    await failure(outboundRequest({ url: server.url, deadlineMs: 300, maxBytes: 1024, clock }));
    assert.equal(clock.pending, 0, 'refused');
  });

  it('aborts a huge body once it passes the cap instead of buffering it', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let written = 0;
    server.handler = (_r, res: ServerResponse) => {
      res.writeHead(200);
      const pump = () => {
        while (written < 400 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => { written = Infinity; });
      pump();
    };
    const e = await failure(outboundRequest({ url: server.url, deadlineMs: 5000, maxBytes: 256 * 1024 }));
    assert.equal(e.failure, 'too-large');
    assert.match(e.message, /larger than 262144 bytes/);
  });

  it('returns a redirect as a status and never follows it', async () => {
    server.handler = (r, res) => {
      if (r.url === '/') { res.writeHead(302, { location: '/elsewhere' }); res.end(); } else res.end('followed');
    };
    const r = await outboundRequest({ url: server.url, deadlineMs: 2000, maxBytes: 1024 });
    assert.equal(r.status, 302);
    assert.equal(server.requests.length, 1);
    assert.equal(describeStatus(r.status), 'HTTP 302 (redirects are not followed)');
  });

  it('describes a refused connection without naming the address or port', async () => {
    const { port } = server;
    await server.stop();
    const e = await failure(outboundRequest({ url: `http://127.0.0.1:${port}`, deadlineMs: 2000, maxBytes: 1024 }));
    assert.equal(e.failure, 'refused');
    assert.doesNotMatch(e.message, new RegExp(`127\\.0\\.0\\.1|${port}`));
  });

  it('discards the body when asked, still counting it against the cap', async () => {
    server.handler = (_r, res) => res.end('y'.repeat(5000));
    const r = await outboundRequest({ url: server.url, deadlineMs: 2000, maxBytes: 10_000, discardBody: true });
    assert.deepEqual([r.status, r.body, r.bytes], [200, '', 5000]);
  });

  const headerCases: Array<[string, boolean]> = [
    ['Host', true], ['host', true], ['Connection', true], ['Keep-Alive', true], ['Proxy-Authorization', true], ['proxy-connection', true],
    ['TE', true], ['Trailer', true], ['Transfer-Encoding', true], ['Upgrade', true],
    ['x-warmup', false], ['Authorization', false], ['Content-Type', false],
  ];
  for (const [name, forbidden] of headerCases) {
    it(`${forbidden ? 'refuses' : 'allows'} the request header ${name}`, async () => {
      assert.equal(forbiddenHeader(name) !== undefined, forbidden);
      if (forbidden) {
        assert.equal((await failure(outboundRequest({ url: server.url, headers: { [name]: 'x' }, deadlineMs: 1000, maxBytes: 10 }))).failure, 'forbidden-header');
        assert.equal(server.requests.length, 0, 'nothing was sent');
      }
    });
  }

  const excerpts: Array<[string, string, string]> = [
    ['keeps plain text', 'bad query', 'bad query'],
    ['turns control characters and newlines into single spaces', 'a\r\nb\u0007c\u001b[31m', 'a b c [31m'],
    ['removes bidi overrides', 'x\u202ey', 'x y'],
    ['caps the length at 120 characters', 'z'.repeat(500), `${'z'.repeat(119)}…`],
  ];
  for (const [what, input, want] of excerpts) {
    it(`excerpt ${what}`, () => assert.equal(excerpt(input), want));
  }
});
