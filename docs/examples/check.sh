#!/usr/bin/env bash
# Runs the bot examples (docs/examples/bot_memory.py and bot-memory.ts) against a fresh
# stmd on a free loopback port, with the clients conformance/ installs (conformance/run python node
# first). TypeScript is type-checked and compiled with `tsc` from npm (installed into a temp dir).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PY="$ROOT/conformance/.venv/bin/python"
NODE_MODULES="$ROOT/conformance/node/node_modules"
WORK="$(mktemp -d)"
cleanup() { [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

# STMD_BIN: an already built binary (skips the build).
if [ -z "${STMD_BIN:-}" ]; then
  cargo build --quiet --bin stmd --manifest-path "$ROOT/Cargo.toml"
  STMD_BIN="$TARGET/debug/stmd"
fi
# The server takes its settings from its flags only: STMD_* variables of the caller (conformance/run
# exports its own server's ports, e.g. STMD_TLS_PORT) must not reach it.
for var in $(compgen -e | grep '^STMD_' || true); do
  [ "$var" = STMD_BIN ] || unset "$var"
done
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$STMD_BIN" --port "$PORT" --dir "$WORK" --no-database >"$WORK/stmd.log" 2>&1 &
PID=$!
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

# Python: the example module with its port pointed at the test server.
sed "s/port=6379/port=$PORT/" "$HERE/bot_memory.py" >"$WORK/bot_memory.py"
(cd "$WORK" && "$PY" - <<'PYEOF'
import bot_memory as m
keys = m.capture("1001", "7", "42",
                 [{"role": "user", "speaker": "Alice", "content": "hi <:wave:123456789012345678>"}],
                 [{"persona": "3", "lineage": "12", "speaker": "Nova", "text": "Hello Alice!"}])
assert keys == ["shortterm:user:1001:7:3", "shortterm:server:42:7:3"], keys
here = m.context("1001", "7", "42", "3", lineage="12", bot="Nova")
assert here == {"items": [], "nudge": False, "turns_since_refresh": 1, "keys": []}, here
assert m.context("1001", "7", "42", "3", cadence=1)["nudge"] is True
m.capture("1001", "8", "42", [{"role": "user", "content": "and here?"}],
          [{"persona": "3", "lineage": "12", "speaker": "Nova", "text": "yes"}])
there = m.context("1001", "8", "42", "3", lineage="12", bot="Nova")
assert there["items"] == ['[System: Nova remembers a recent conversation in <#7> (just now):\n'
                          'Alice: "hi :wave:"\nNova: "Hello Alice!"]'], there
assert there["keys"] == ["shortterm:server:42:7:3"], there
assert m.context("1001", "8", "42", "3", lineage="99")["items"] == []
assert m.summary("1001", "7", "42", "3", "Alice greeted Nova.") == keys
here = m.context("1001", "7", "42", "3", lineage="12", bot="Nova")
assert here["items"] == ['[System: Nova remembers a recent conversation in <#8> (just now):\n'
                         'Someone: "and here?"\nNova: "yes"]',
                         "[System: Nova's short term memory for this ongoing conversation:\n"
                         "Alice greeted Nova.]"], here
assert here["keys"] == ["shortterm:server:42:8:3", "shortterm:server:42:7:3"], here
assert here["turns_since_refresh"] == 0 and here["nudge"] is False, here
m.capture("1001", "9", None, [{"role": "user", "content": "psst"}],
          [{"persona": "3", "speaker": "Nova", "text": "yes?"}])
dm = m.context("1001", "9", None, "3")
assert dm["keys"] == ["shortterm:user:1001:7:3", "shortterm:user:1001:8:3"], dm
assert dm["items"][0].startswith("[System: the assistant remembers a recent conversation in <#7>"), dm
assert m.forget("1001") == 3
assert m.context("1001", "9", None, "3") == {"items": [], "nudge": False, "turns_since_refresh": 0,
                                             "keys": []}
print("python example: ok")
PYEOF
)

# TypeScript: type-check, compile, run.
npm install --silent --prefix "$WORK/tsc" typescript@5 >/dev/null
sed "s/port: 6379/port: $PORT/" "$HERE/bot-memory.ts" >"$WORK/bot-memory.ts"
ln -s "$NODE_MODULES" "$WORK/node_modules"
"$WORK/tsc/node_modules/.bin/tsc" --strict --esModuleInterop --module commonjs --target es2020 \
  --moduleResolution node --skipLibCheck --outDir "$WORK/js" "$WORK/bot-memory.ts"
ln -s "$NODE_MODULES" "$WORK/js/node_modules"
cat >"$WORK/js/run.js" <<'JSEOF'
const assert = require('node:assert/strict');
const m = require('./bot-memory.js');
(async () => {
  const keys = await m.capture('2002', '7', '43', [{ role: 'user', speaker: 'Bob', content: 'hi' }],
    [{ persona: '3', lineage: '12', speaker: 'Nova', text: 'Hello Bob!' }]);
  assert.deepEqual(keys, ['shortterm:user:2002:7:3', 'shortterm:server:43:7:3']);
  assert.deepEqual(await m.context('2002', '7', '43', '3'),
    { items: [], nudge: false, turns_since_refresh: 1, keys: [] });
  assert.equal((await m.context('2002', '7', '43', '3', { cadence: 1 })).nudge, true);
  await m.capture('2002', '9', null, [{ role: 'user', content: 'psst' }], [{ persona: '3', speaker: 'Nova', text: 'yes?' }]);
  const dm = await m.context('2002', '9', null, '3', { bot: 'Nova' });
  assert.deepEqual(dm.items, ['[System: Nova remembers a recent conversation in <#7> (just now):\nBob: "hi"\nNova: "Hello Bob!"]']);
  assert.deepEqual(dm.keys, ['shortterm:user:2002:7:3']);
  assert.deepEqual((await m.context('2002', '9', null, '3', { lineage: '13' })).items, []);
  assert.deepEqual(await m.summary('2002', '7', '43', '3', 'Bob said hi.'), keys);
  const here = await m.context('2002', '7', '43', '3', { bot: 'Nova' });
  assert.deepEqual(here.items, ["[System: Nova's short term memory for this ongoing conversation:\nBob said hi.]"]);
  assert.equal(await m.forget('2002'), 2);
  assert.deepEqual((await m.context('2002', '9', null, '3')).keys, []);
  m.redis.disconnect();
  console.log('typescript example: ok');
})().catch((e) => { console.error(e); process.exit(1); });
JSEOF
node "$WORK/js/run.js"
