// Proves at start that the API server accepts the operator's credentials. A
// refused credential ends the process with a message naming the user and the
// server, like kubectl's "You must be logged in to the server (Unauthorized)":
// no later request could succeed, and an operator that kept relisting on 401
// would look alive while doing nothing. The request is a read of /version,
// which every user may make: the server authenticates it first, so a bad
// credential gets its 401 there, and a good one is not recorded as a write.
// A 403 there (anonymous access turned off) has still not refused us.

import { ApiError, type KubeClient } from './client.ts';

/** The API server refused the credentials (401). */
export class UnauthorizedError extends Error {
  override readonly name = 'UnauthorizedError';
}

/** The server's version when it says it; throws UnauthorizedError on 401. */
export async function verifyCredentials(client: KubeClient): Promise<string | undefined> {
  try {
    return await client.serverVersion();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    if (err.code === 401) {
      const said = err.message && err.message !== 'Unauthorized' ? `: ${err.message}` : '';
      throw new UnauthorizedError(`You must be logged in to the server (Unauthorized): ${client.config.server} refused the credentials of user ${client.config.user}${said}`);
    }
    if (err.code === 403) return undefined;
    throw err;
  }
}
