import assert from 'node:assert/strict';
import type { EnvoyRouteConfiguration, EnvoyVirtualHost, ProxyConfig } from './envoy-config.ts';
import { findVirtualHost, routeRequest, seededDraws, traceRequest, type RouteOutcome } from './route-eval.ts';

const vh = (name: string, domains: string[], routes: EnvoyVirtualHost['routes'] = [{ match: { prefix: '/' }, route: { cluster: name } }]): EnvoyVirtualHost => ({ name, domains, routes });
const cookie = (name: string, value: string) => ({ name: 'cookie', string_match: { safe_regex: { regex: `(.*; )?${name}=${value}(;.*)?` } } });
const clusterOf = (o: RouteOutcome) => ('hop' in o ? o.hop.cluster : 'noRoute' in o ? o.noRoute : `answered ${o.answered.status}`);

describe('route evaluation: Envoy\'s choices over a route configuration', () => {
  const config: EnvoyRouteConfiguration = {
    name: 'http.80',
    virtual_hosts: [
      vh('default', ['*']),
      vh('suffix-short', ['*.com']),
      vh('suffix-long', ['*.example.com']),
      vh('prefix', ['shop.*']),
      vh('exact', ['shop.example.com', 'shop.example.com:80']),
    ],
  };
  const cases: Array<[string, string]> = [
    ['shop.example.com', 'exact'],
    ['SHOP.Example.com', 'exact'],
    ['shop.example.com:80', 'exact'],
    ['cart.example.com', 'suffix-long'],
    ['cart.other.com', 'suffix-short'],
    ['.example.com', 'suffix-short'],
    ['shop.internal', 'prefix'],
    ['elsewhere.org', 'default'],
  ];
  for (const [authority, want] of cases) {
    it(`the virtual host for ${authority} is ${want}`, () => assert.equal(findVirtualHost(config, authority)?.name, want));
  }

  const routes: EnvoyRouteConfiguration = {
    name: 'http.80',
    virtual_hosts: [vh('shop', ['shop.example.com'], [
      { name: 'header', match: { prefix: '/', headers: [{ name: 'x-canary', string_match: { exact: 'yes' } }] }, route: { cluster: 'v2', host_rewrite_literal: 'candidate-shop.ns.svc.cluster.local' } },
      { name: 'sticky-v1', match: { prefix: '/', headers: [cookie('sapp', 'v1')] }, route: { cluster: 'v1' } },
      { name: 'sticky-v2', match: { prefix: '/', headers: [{ ...cookie('sapp', 'v2'), name: 'Cookie' }] }, route: { cluster: 'v2' } },
      { name: 'not-absent', match: { path: '/only', headers: [{ name: 'x-team', present_match: true, invert_match: true }] }, route: { cluster: 'anonymous' } },
      { name: 'api', match: { safe_regex: { regex: '/api/v[0-9]+' } }, route: { cluster: 'api' } },
      {
        name: 'split', match: { prefix: '/' },
        route: { weighted_clusters: { clusters: [
          { name: 'v1', weight: 80, response_headers_to_add: [{ header: { key: 'Set-Cookie', value: 'sapp=v1; Path=/' } }] },
          { name: 'gone', weight: 0 },
          { name: 'v2', weight: 20, response_headers_to_add: [{ header: { key: 'Set-Cookie', value: 'sapp=v2; Path=/' } }] },
        ] } },
      },
    ])],
  };
  const get = (path: string, headers: Record<string, string> = {}, random = 0) => routeRequest(routes, { authority: 'shop.example.com', path, headers }, random);

  const routeCases: Array<[string, string, Record<string, string>, string]> = [
    ['a header rule comes first, whatever the cookie', '/', { 'x-canary': 'yes', cookie: 'sapp=v1' }, 'v2'],
    ['a cookie among others', '/', { cookie: 'theme=dark; sapp=v1; lang=en' }, 'v1'],
    ['a cookie alone', '/', { cookie: 'sapp=v2' }, 'v2'],
    ['a header named in another case (istiod keeps an HTTPRoute\'s Cookie as written)', '/', { Cookie: 'sapp=v2' }, 'v2'],
    ['a cookie whose name only ends like it is not it', '/', { cookie: 'xsapp=v2' }, 'v1'],
    ['a header value unlike the rule\'s', '/', { 'x-canary': 'no' }, 'v1'],
    ['an inverted present matcher takes a request without the header', '/only', {}, 'anonymous'],
    ['and not one with it', '/only', { 'x-team': 'a' }, 'v1'],
    ['a regular expression matches the whole path, its query aside', '/api/v2?x=1', {}, 'api'],
    ['and not a part of it', '/api/v2/more', {}, 'v1'],
  ];
  for (const [why, path, headers, want] of routeCases) {
    it(`${why}: ${want}`, () => assert.equal(clusterOf(get(path, headers)), want));
  }

  const absent: Array<[string, object, boolean]> = [
    ['an inverted value matcher fails on an absent header', { name: 'x-a', string_match: { exact: 'v' }, invert_match: true }, false],
    ['unless the header is read as empty', { name: 'x-a', string_match: { exact: 'v' }, invert_match: true, treat_missing_header_as_empty: true }, true],
    ['present_match false takes an absent header', { name: 'x-a', present_match: false }, true],
    ['an inverted present_match true takes an absent header (istiod\'s withoutHeaders)', { name: 'x-a', present_match: true, invert_match: true }, true],
  ];
  for (const [why, matcher, matches] of absent) {
    it(`${why}`, () => {
      const rc: EnvoyRouteConfiguration = { name: 'r', virtual_hosts: [vh('h', ['h'], [{ match: { prefix: '/', headers: [matcher as never] }, route: { cluster: 'matched' } }, { match: { prefix: '/' }, route: { cluster: 'rest' } }])] };
      assert.equal(clusterOf(routeRequest(rc, { authority: 'h', path: '/' }, 0)), matches ? 'matched' : 'rest');
    });
  }

  it('refuses a matcher it does not know rather than reading it as a match', () => {
    const rc: EnvoyRouteConfiguration = { name: 'r', virtual_hosts: [vh('h', ['h'], [{ match: { prefix: '/', query_parameters: [{ name: 'q' }] } as never, route: { cluster: 'x' } }])] };
    assert.throws(() => routeRequest(rc, { authority: 'h', path: '/' }, 0), /query_parameters/);
  });

  it('matches a domain without the request\'s port where the listener ignores ports (istiod\'s gateways)', () => {
    const rc: EnvoyRouteConfiguration = { name: 'http.8080', ignore_port_in_host_matching: true, virtual_hosts: [vh('shop', ['shop.example.com']), vh('any', ['*'])] };
    assert.equal(findVirtualHost(rc, 'shop.example.com:8080')?.name, 'shop');
    assert.equal(findVirtualHost({ ...rc, ignore_port_in_host_matching: false }, 'shop.example.com:8080')?.name, 'any');
  });

  it('draws values whose low bits do not alternate: a second hop\'s 1-in-100 pick gets its share', () => {
    const next = seededDraws(2_000);
    let odd = 0;
    let rare = 0;
    for (let i = 0; i < 20_000; i++) {
      if (next() % 2 === 1) odd++;
      if (i % 2 === 1 && next() % 100 === 0) rare++;
    }
    assert.ok(odd > 9_000 && odd < 11_000, `${odd} odd of 20,000`);
    assert.ok(rare > 50 && rare < 150, `${rare} of 10,000 picks at 1 in 100`);
  });

  it('rewrites the authority and keeps the request\'s headers', () => {
    const o = get('/', { 'x-canary': 'yes' });
    assert.ok('hop' in o);
    assert.deepEqual([o.hop.route, o.hop.authority, o.hop.requestHeaders['x-canary']], ['header', 'candidate-shop.ns.svc.cluster.local', 'yes']);
  });

  it('rewrites the authority of the weighted cluster picked, as istiod writes a VirtualService destination\'s own authority', () => {
    const split = (routeRewrite?: string): EnvoyRouteConfiguration => ({ name: 'r', virtual_hosts: [vh('shop', ['shop.example.com'], [{ match: { prefix: '/' }, route: { ...(routeRewrite ? { host_rewrite_literal: routeRewrite } : {}), weighted_clusters: { clusters: [
      { name: 'local', weight: 1, host_rewrite_literal: 'stable-shop.ns.svc.cluster.local' },
      { name: 'local', weight: 1, host_rewrite_literal: 'candidate-shop.ns.svc.cluster.local' },
    ] } } }])] });
    const at = (c: EnvoyRouteConfiguration, random: number) => { const o = routeRequest(c, { authority: 'shop.example.com', path: '/' }, random); return 'hop' in o ? o.hop.authority : clusterOf(o); };
    assert.deepEqual([at(split(), 0), at(split(), 1)], ['stable-shop.ns.svc.cluster.local', 'candidate-shop.ns.svc.cluster.local']);
    // Both set (istiod avoids it, route.go processDestination): the route's rewrite comes after the entry's, and stands.
    assert.deepEqual([at(split('shop.ns.svc.cluster.local'), 0), at(split('shop.ns.svc.cluster.local'), 1)], ['shop.ns.svc.cluster.local', 'shop.ns.svc.cluster.local']);
  });

  it('splits by weight over every random value as Envoy does (80 of 100 to v1, none to a cluster of weight 0), and sets the cookie of the cluster picked', () => {
    const picked: Record<string, number> = {};
    for (let r = 0; r < 1_000; r++) {
      const o = get('/', {}, r);
      assert.ok('hop' in o);
      picked[o.hop.cluster] = (picked[o.hop.cluster] ?? 0) + 1;
      assert.deepEqual(o.hop.responseHeaders, [['set-cookie', `sapp=${o.hop.cluster}; Path=/`]]);
    }
    assert.deepEqual(picked, { v1: 800, v2: 200 });
  });

  it('mutates the request level by level as Envoy does: cluster entry, route, virtual host, route configuration, each removing then adding by append_action', () => {
    const config: EnvoyRouteConfiguration = {
      name: 'http.80', request_headers_to_add: [{ header: { key: 'x-level', value: 'config' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }],
      virtual_hosts: [{
        name: 'shop', domains: ['shop.example.com'], request_headers_to_remove: ['x-drop'],
        request_headers_to_add: [{ header: { key: 'x-absent', value: 'vh' }, append_action: 'ADD_IF_ABSENT' }, { header: { key: 'x-only-if', value: 'vh' }, append_action: 'OVERWRITE_IF_EXISTS' }],
        routes: [{
          match: { prefix: '/' },
          request_headers_to_add: [{ header: { key: 'X-Append', value: 'route' } }, { header: { key: 'x-legacy', value: 'route' }, append: false }, { header: { key: 'x-level', value: 'route' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }],
          route: { weighted_clusters: { clusters: [{ name: 'only', weight: 1, request_headers_to_add: [{ header: { key: 'x-absent', value: 'cluster' }, append_action: 'ADD_IF_ABSENT' }] }] } },
        }],
      }],
    };
    const o = routeRequest(config, { authority: 'shop.example.com', path: '/', headers: { 'x-append': 'client', 'x-legacy': 'client', 'x-drop': 'client' } }, 0);
    assert.ok('hop' in o);
    assert.deepEqual(o.hop.requestHeaders, {
      'x-append': 'client,route', // APPEND_IF_EXISTS_OR_ADD, the default: a second value
      'x-legacy': 'route', // append: false overwrites
      'x-absent': 'cluster', // the cluster entry added it first; ADD_IF_ABSENT at the virtual host leaves it
      'x-level': 'config', // the least specific level comes last, so its value stands
    }, 'x-drop removed by the virtual host; x-only-if not added (OVERWRITE_IF_EXISTS adds nothing that is absent)');
  });

  it('matches a path-separated prefix as a whole segment, and ends a request at a route that answers itself', () => {
    const config: EnvoyRouteConfiguration = { name: 'http.80', virtual_hosts: [vh('shop', ['shop.example.com'], [
      { match: { path_separated_prefix: '/api' }, route: { cluster: 'api' } },
      { match: { prefix: '/old' }, redirect: {} },
      { match: { prefix: '/' }, direct_response: { status: 404 } },
    ])] };
    const at = (path: string) => clusterOf(routeRequest(config, { authority: 'shop.example.com', path }, 0));
    assert.deepEqual(['/api', '/api/v1?x=1', '/apiv1', '/old/page', '/'].map(at), ['api', 'api', 'answered 404', 'answered 301', 'answered 404']);
  });

  it('says why nothing answers: no virtual host, no route', () => {
    assert.match(clusterOf(routeRequest(routes, { authority: 'other.example.com', path: '/' }, 0)), /no virtual host/);
    const strict: EnvoyRouteConfiguration = { name: 'r', virtual_hosts: [vh('only', ['a'], [{ match: { path: '/x' }, route: { cluster: 'x' } }])] };
    assert.match(clusterOf(routeRequest(strict, { authority: 'a', path: '/y' }, 0)), /no route of r\/only matches \/y/);
  });

  it('follows a request through the public gateway to Knative\'s local gateway, on the rewritten authority, to a revision', () => {
    const local = 'outbound|80||knative-local-gateway.istio-system.svc.cluster.local';
    const publicProxy: ProxyConfig = { listeners: [], clusters: [], routes: [{ name: 'http.80', virtual_hosts: [vh('shop', ['shop.example.com'], [{ match: { prefix: '/' }, route: { cluster: local, host_rewrite_literal: 'shop.ns.svc.cluster.local' } }])] }] };
    const knative: ProxyConfig = { listeners: [], clusters: [], routes: [{ name: 'http.8081', virtual_hosts: [vh('ksvc', ['shop.ns.svc.cluster.local'], [{ match: { prefix: '/' }, route: { weighted_clusters: { clusters: [{ name: 'rev-1', weight: 50 }, { name: 'rev-2', weight: 50 }] } } }])] }] };
    const draws = [0, 75];
    const t = traceRequest(publicProxy, 'http.80', { authority: 'shop.example.com', path: '/' }, (c) => (c === local ? { config: knative, routeConfig: 'http.8081' } : undefined), () => draws.shift()!);
    assert.ok('hops' in t, JSON.stringify(t));
    assert.deepEqual([t.hops.map((h) => h.cluster), t.cluster, t.hops[1]!.virtualHost], [[local, 'rev-2'], 'rev-2', 'ksvc']);
  });
});
