// node:http and node:https, loaded as CommonJS. An ES import of node:http
// builds its namespace from every export, which runs the lazy WebSocket getter
// and so loads Node's bundled undici: about 13 MiB of RSS for a WebSocket
// client the operator never uses (nodejs/node#59686). Types still come from
// `import type ... from 'node:http'`, which loads nothing.

import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const http = require('node:http') as typeof import('node:http');
export const https = require('node:https') as typeof import('node:https');
