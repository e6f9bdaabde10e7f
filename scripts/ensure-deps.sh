#!/bin/sh
# Installs the npm dependencies (Node 24 among them) when they are missing or
# were installed from another package-lock.json, so `npm test` and `npm run demo`
# work on a fresh clone. The lock's content, not its file time, decides: a git
# checkout or worktree touches the file without changing what it pins. npm has
# already put node_modules/.bin first on PATH for the script that runs after
# this, so it runs on the pinned Node 24.
# With --check it installs nothing and exits 1 when it would (a test that runs
# `npm start` asks first, so it never reinstalls under other running tests).
set -e
cd "$(dirname "$0")/.."
stamp=node_modules/.installed-lock-sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -x node_modules/.bin/node ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  [ "$1" = --check ] && exit 1
  echo "installing npm dependencies (npm ci)..." >&2
  npm ci --no-audit --no-fund --loglevel=error >&2 || {
    echo "npm ci failed: the npm registry must be reachable to install the dependencies (see the lines above)." >&2
    exit 1
  }
  echo "$want" > "$stamp"
fi
