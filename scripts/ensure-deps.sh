#!/bin/sh
# Installs the npm dependencies (Node 24 among them) when they are missing or
# older than package-lock.json, so `npm test` and `npm run demo` work on a fresh
# clone. npm has already put node_modules/.bin first on PATH for the script that
# runs after this, so it runs on the pinned Node 24.
set -e
cd "$(dirname "$0")/.."
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ ! -x node_modules/.bin/node ]; then
  echo "installing npm dependencies (npm ci)..." >&2
  npm ci --no-audit --no-fund --loglevel=error >&2 || {
    echo "npm ci failed: the npm registry must be reachable to install the dependencies (see the lines above)." >&2
    exit 1
  }
fi
