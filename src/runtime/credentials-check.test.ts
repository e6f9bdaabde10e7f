import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeClient } from './client.ts';
import { UnauthorizedError, verifyCredentials } from './credentials-check.ts';
import { restConfigFromKubeconfig } from './kubeconfig.ts';
import { reply } from '../testing/http.ts';

/** A server that answers /version as the API server does for the token `good`, and otherwise with `refusal`. */
async function apiServer(refusal: { status: number; body: unknown }): Promise<{ server: string; paths: string[]; close(): void }> {
  const paths: string[] = [];
  const srv: Server = createServer((req, res) => {
    paths.push(`${req.method} ${req.url}`);
    if (req.headers.authorization === 'Bearer good') reply(res, 200, { major: '1', minor: '35', gitVersion: 'v1.35.4' });
    else reply(res, refusal.status, refusal.body);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { server: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, paths, close: () => srv.close() };
}

const clientFor = (server: string, token: string) => new KubeClient(restConfigFromKubeconfig([{
  doc: {
    'current-context': 'dev',
    contexts: [{ name: 'dev', context: { cluster: 'rig', user: 'alice' } }],
    clusters: [{ name: 'rig', cluster: { server } }],
    users: [{ name: 'alice', user: { token } }],
  },
  dir: '/',
}], { name: '/home/alice/.kube/config' }));

describe('the credential check at start', () => {
  const unauthorized = { status: 401, body: { kind: 'Status', status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 } };

  it('reads /version (no write) and gives the server\'s version when the credentials are accepted', async () => {
    const api = await apiServer(unauthorized);
    try {
      assert.equal(await verifyCredentials(clientFor(api.server, 'good')), 'v1.35.4');
      assert.deepEqual(api.paths, ['GET /version']);
    } finally {
      api.close();
    }
  });

  it('refuses a credential the server answers 401, as kubectl says it, naming the user and the server', async () => {
    const api = await apiServer(unauthorized);
    try {
      await assert.rejects(verifyCredentials(clientFor(api.server, 'expired')), (err: unknown) => {
        assert.ok(err instanceof UnauthorizedError);
        assert.equal(err.message, `You must be logged in to the server (Unauthorized): ${api.server} refused the credentials of user "alice" of kubeconfig /home/alice/.kube/config`);
        return true;
      });
    } finally {
      api.close();
    }
  });

  it('accepts a 403 (anonymous reads of /version turned off): the server authenticated us and only the read was denied', async () => {
    const api = await apiServer({ status: 403, body: { kind: 'Status', message: 'forbidden: User "alice" cannot get path "/version"', reason: 'Forbidden', code: 403 } });
    try {
      assert.equal(await verifyCredentials(clientFor(api.server, 'other')), undefined);
    } finally {
      api.close();
    }
  });
});
