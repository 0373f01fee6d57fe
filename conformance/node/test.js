// stmd through the Node clients a TypeScript bot would use: ioredis (RESP2) and node-redis v5
// (RESP3). Plain Node, no test framework: each test is an async function; a test whose command stmd
// does not know yet (`ERR unknown command`) is counted as skipped (unsupported), visibly.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const crypto = require('node:crypto');
const Redis = require('ioredis');
const { createClient } = require('redis');

const HOST = process.env.STMD_HOST || '127.0.0.1';
const PORT = Number(process.env.STMD_PORT || 6379);
const VERBOSE = !!process.env.CONF_VERBOSE;

class Unsupported extends Error {}

/** Runs `fn`; an `ERR unknown command` from stmd turns into a skip. */
async function supported(fn) {
  try {
    return await fn();
  } catch (e) {
    if (/^ERR unknown command/.test(String(e.message))) throw new Unsupported(e.message.split(',')[0]);
    throw e;
  }
}

const uniq = (p) => `${p}:${crypto.randomBytes(4).toString('hex')}`;
const snowflake = () => String(BigInt('0x' + crypto.randomBytes(7).toString('hex')));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const io = () => new Redis({ host: HOST, port: PORT, maxRetriesPerRequest: 1, connectionName: 'conformance-bot' });
async function nr() {
  const c = createClient({ socket: { host: HOST, port: PORT, reconnectStrategy: false }, RESP: 3 });
  c.on('error', () => {});
  await c.connect();
  return c;
}

/** STM.GET's reply as an object: RESP2 gives a flat array of field/value pairs, RESP3 a map. */
function asObject(v) {
  if (v instanceof Map) v = Object.fromEntries(v);
  else if (Array.isArray(v)) {
    const o = {};
    for (let i = 0; i < v.length; i += 2) o[String(v[i])] = v[i + 1];
    v = o;
  }
  if (v && v.messages) {
    v.messages = v.messages.map(asObject);
    v.categories = v.categories && (Array.isArray(v.categories) ? v.categories.length : true) ? asObject(v.categories) : {};
  }
  return v;
}

const HISTORY = [
  ['MSG', 'user', 'Alice', 'hi there <:wave:123456789012345678>'],
  ['MSG', 'model', 'Nova', 'Hey!'],
  ['MSG', 'user', 'Alice', 'how are you?   \n\n\n [System: Message metadata: id 5]'],
];
const captureArgs = (user, channel, server, persona = '3', extra = []) => [
  'STM.CAPTURE', 'USER', user, 'CHANNEL', channel, 'SERVER', server, 'PRIVACY', 'MINIMAL', ...extra,
  ...HISTORY.flat(), 'REPLY', persona, '12', 'Nova', 'Fine, thanks! [System: Reactions on this message: 👍]',
];

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

// ---------------------------------------------------------------- ioredis (RESP2)

test('ioredis: connect (INFO ready check, CLIENT SETNAME), ping, strings', async () => {
  const r = io();
  assert.equal(await r.ping(), 'PONG');
  assert.equal(await r.client('GETNAME'), 'conformance-bot');
  const k = uniq('io:str');
  assert.equal(await r.set(k, 'v', 'EX', 100), 'OK');
  assert.equal(await r.get(k), 'v');
  assert.ok((await r.ttl(k)) > 0);
  assert.equal(await r.set(k, 'w', 'NX'), null);
  assert.equal(await r.incrby(k + ':n', 5), 5);
  assert.equal(await r.incrbyfloat(k + ':f', '2.5'), '2.5');
  assert.deepEqual(await r.mget(k, k + ':n', k + ':none'), ['v', '5', null]);
  assert.equal(await r.del(k, k + ':n', k + ':f'), 3);
  r.disconnect();
});

test('ioredis: binary values as Buffers', async () => {
  const r = io();
  const k = Buffer.from([0x6b, 0x00, 0xff, 0x0d, 0x0a]);
  const v = crypto.randomBytes(4096);
  await r.set(k, v);
  assert.ok((await r.getBuffer(k)).equals(v));
  assert.equal(await r.strlen(k), 4096);
  await r.del(k);
  r.disconnect();
});

test('ioredis: errors keep the connection', async () => {
  const r = io();
  const k = uniq('io:err');
  await r.set(k, 'abc');
  await assert.rejects(r.incr(k), /not an integer/);
  await assert.rejects(r.call('GET'), /wrong number of arguments/);
  await assert.rejects(r.call('NOSUCHCOMMAND'), /unknown command/);
  assert.equal(await r.get(k), 'abc');
  r.disconnect();
});

test('ioredis: pipeline of 1000 commands', async () => {
  const r = io();
  const p = uniq('io:pipe');
  const pipe = r.pipeline();
  for (let i = 0; i < 500; i++) pipe.set(`${p}:${i}`, i);
  for (let i = 0; i < 500; i++) pipe.incr(`${p}:${i}`);
  const out = await pipe.exec();
  assert.equal(out.length, 1000);
  assert.ok(out.every(([err]) => err === null));
  assert.equal(out[999][1], 500);
  // auto-concurrency over one connection, as a busy bot does
  const got = await Promise.all(Array.from({ length: 500 }, (_, i) => r.get(`${p}:${i}`)));
  assert.deepEqual(got, Array.from({ length: 500 }, (_, i) => String(i + 1)));
  r.disconnect();
});

test('ioredis: multi/exec, runtime error inside, discard', async () => {
  const r = io();
  const k = uniq('io:tx');
  assert.deepEqual(await r.multi().set(k, 1).incr(k).get(k).exec(), [[null, 'OK'], [null, 2], [null, '2']]);
  const res = await r.multi().set(k, 'x').incr(k).get(k).exec();
  assert.equal(res[1][0].message.startsWith('ERR value is not an integer'), true);
  assert.equal(res[2][1], 'x');
  assert.equal(await r.multi({ pipeline: false }), 'OK');
  assert.equal(await r.set(k, 'never'), 'QUEUED');
  assert.equal(await r.discard(), 'OK');
  assert.equal(await r.get(k), 'x');
  r.disconnect();
});

test('ioredis: WATCH with a conflicting write aborts EXEC (null)', async () => {
  const r = io();
  const other = io();
  const k = uniq('io:watch');
  await r.set(k, 1);
  await r.watch(k);
  await other.set(k, 2);
  assert.equal(await r.multi().incr(k).exec(), null);
  assert.equal(await r.get(k), '2');
  await r.watch(k);
  assert.deepEqual(await r.multi().incr(k).exec(), [[null, 3]]);
  r.disconnect();
  other.disconnect();
});

test('ioredis: scanStream sees every key', async () => {
  const r = io();
  const p = uniq('io:scan');
  const want = new Set(Array.from({ length: 300 }, (_, i) => `${p}:${i}`));
  await r.mset(...[...want].flatMap((k) => [k, '1']));
  const seen = new Set();
  await new Promise((resolve, reject) => {
    const s = r.scanStream({ match: `${p}:*`, count: 50 });
    s.on('data', (keys) => keys.forEach((k) => seen.add(k)));
    s.on('end', resolve);
    s.on('error', reject);
  });
  assert.deepEqual([...seen].sort(), [...want].sort());
  assert.equal(await r.del(...want), 300);
  r.disconnect();
});

test('ioredis: bot flow capture → get → recent → tick → summary → categories → forget', async () => {
  const r = io();
  const user = snowflake(), channel = snowflake(), server = snowflake(), channel2 = snowflake();
  const userKey = `shortterm:user:${user}:${channel}:3`;
  const serverKey = `shortterm:server:${server}:${channel}:3`;
  assert.deepEqual(await r.call(...captureArgs(user, channel, server)), [userKey, serverKey]);
  const entry = asObject(await r.call('STM.GET', serverKey));
  assert.equal(entry.scope, 'server');
  assert.equal(entry.user, null);
  assert.equal(entry.persona, 3);
  assert.deepEqual(entry.messages.map((m) => m.content), ['hi there :wave:', 'Hey!', 'how are you?', 'Fine, thanks!']);
  assert.equal(entry.turns_since_refresh, 1);
  assert.equal(await r.type(serverKey), 'stm');
  const json = JSON.parse(await r.call('STM.GET', userKey, 'FORMAT', 'JSON'));
  assert.equal(json.scope, 'user');
  assert.equal(json.turns_since_refresh, 0);
  await sleep(5);
  await r.call(...captureArgs(user, channel2, server));
  const recent = JSON.parse(await r.call('STM.RECENT', 'USER', user, 'EXCLUDE', channel2, 'LIMIT', '3', 'FORMAT', 'JSON'));
  assert.deepEqual(recent.map((e) => e.key), [userKey]);
  assert.equal(await r.call('STM.TICK', serverKey, 'BY', '2'), 3);
  assert.deepEqual(
    await r.call('STM.SUMMARY', 'USER', user, 'CHANNEL', channel, 'SERVER', server, 'PERSONA', '3', 'TEXT', 'Alice greeted Nova.'),
    [userKey, serverKey],
  );
  assert.ok((await r.ttl(serverKey)) > 43200);
  await r.call('STM.CATEGORIES', 'USER', user, 'CHANNEL', channel, 'SERVER', server, 'PERSONA', '3', 'SET', 'mood', 'happy');
  const after = asObject(await r.call('STM.GET', serverKey));
  assert.equal(after.summary, 'Alice greeted Nova.');
  assert.deepEqual(after.categories, { mood: 'happy' });
  assert.equal(after.turns_since_refresh, 0);
  assert.equal(await r.call('STM.FORGET', 'USER', user), 2);
  assert.equal(await r.call('STM.FORGET', 'CHANNEL', channel), 1);
  assert.equal(await r.call('STM.FORGET', 'KEY', `shortterm:server:${server}:${channel2}:3`), 1);
  assert.equal(await r.call('STM.GET', serverKey), null);
  r.disconnect();
});

test('ioredis: STM commands in a pipeline and a transaction; errors', async () => {
  const r = io();
  const user = snowflake(), channel = snowflake(), server = snowflake();
  const out = await r.multi()
    .call(...captureArgs(user, channel, server, '-'))
    .call('STM.TICK', `shortterm:server:${server}:${channel}`)
    .exec();
  assert.deepEqual(out[0][1], [`shortterm:user:${user}:${channel}`, `shortterm:server:${server}:${channel}`]);
  assert.equal(out[1][1], 2);
  const res = await r.pipeline()
    .call('STM.CAPTURE', 'USER', user)
    .call('STM.TICK', 'nope')
    .call('STM.GET', `shortterm:user:${user}:${channel}`, 'FORMAT', 'JSON')
    .exec();
  assert.match(res[0][0].message, /wrong number of arguments/);
  assert.match(res[1][0].message, /invalid STM key/);
  assert.equal(JSON.parse(res[2][1]).user, user);
  assert.equal(await r.call('STM.FORGET', 'CHANNEL', channel), 2);
  r.disconnect();
});

test('ioredis: hashes and lists', async () => {
  const r = io();
  const k = uniq('io:h');
  await supported(() => r.hset(k, { a: '1', b: '2' }));
  assert.deepEqual(await r.hgetall(k), { a: '1', b: '2' });
  await supported(() => r.rpush(k + ':l', 'x', 'y'));
  assert.deepEqual(await r.lrange(k + ':l', 0, -1), ['x', 'y']);
  r.disconnect();
});

test('ioredis: pub/sub', async () => {
  const sub = io();
  const pub = io();
  const ch = uniq('io:ch');
  const got = new Promise((resolve) => sub.on('message', (c, m) => resolve([c, m])));
  await supported(() => sub.subscribe(ch));
  assert.equal(await pub.publish(ch, 'hello'), 1);
  assert.deepEqual(await got, [ch, 'hello']);
  sub.disconnect();
  pub.disconnect();
});

test('ioredis: blocking pop', async () => {
  const r = io();
  const other = io();
  const k = uniq('io:q');
  const popped = supported(() => r.blpop(k, 5));
  popped.catch(() => {}); // awaited below
  await sleep(100);
  await supported(() => other.rpush(k, 'job'));
  assert.deepEqual(await popped, [k, 'job']);
  r.disconnect();
  other.disconnect();
});

// ---------------------------------------------------------------- node-redis v5 (RESP3)

test('node-redis RESP3: handshake, strings, auto-pipelining', async () => {
  const c = await nr();
  assert.equal(await c.ping(), 'PONG');
  const k = uniq('nr:str');
  assert.equal(await c.set(k, 'v', { EX: 100 }), 'OK');
  assert.equal(await c.get(k), 'v');
  const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => c.incr(k + ':n')));
  assert.equal(replies[199], 200);
  const hello = await c.sendCommand(['HELLO', '3']);
  assert.equal((hello instanceof Map ? Object.fromEntries(hello) : hello).proto, 3);
  await c.del([k, k + ':n']);
  await c.close();
});

test('node-redis RESP3: multi/exec and WATCH conflict', async () => {
  const c = await nr();
  const other = await nr();
  const k = uniq('nr:tx');
  assert.deepEqual(await c.multi().set(k, '1').incr(k).exec(), ['OK', 2]);
  await c.watch(k);
  await other.set(k, '10');
  await assert.rejects(c.multi().incr(k).exec(), (e) => e.constructor.name === 'WatchError');
  assert.equal(await c.get(k), '10');
  await c.close();
  await other.close();
});

test('node-redis RESP3: bot flow (STM.GET is a map)', async () => {
  const c = await nr();
  const user = snowflake(), channel = snowflake(), server = snowflake();
  const keys = await c.sendCommand(captureArgs(user, channel, server, '7'));
  assert.deepEqual(keys, [`shortterm:user:${user}:${channel}:7`, `shortterm:server:${server}:${channel}:7`]);
  const raw = await c.sendCommand(['STM.GET', keys[1]]);
  assert.ok(!Array.isArray(raw), 'RESP3 STM.GET should be a map');
  const entry = asObject(raw);
  assert.equal(entry.key, keys[1]);
  assert.equal(entry.server, server);
  assert.equal(entry.summary, null);
  assert.equal(entry.messages.length, 4);
  assert.equal(entry.messages[3].role, 'model');
  const recent = await c.sendCommand(['STM.RECENT', 'SERVER', server]);
  assert.equal(recent.length, 1);
  assert.equal(asObject(recent[0]).channel, channel);
  assert.equal(await c.sendCommand(['STM.FORGET', 'CHANNEL', channel]), 2);
  await c.close();
});

test('node-redis RESP3: pub/sub', async () => {
  const sub = await nr();
  const pub = await nr();
  const ch = uniq('nr:ch');
  let deliver;
  const got = new Promise((resolve) => { deliver = resolve; });
  await supported(() => sub.subscribe(ch, (m) => deliver(m))); // subscribed before publishing
  const n = await supported(() => pub.publish(ch, 'hello'));
  const m = await got;
  assert.equal(n, 1);
  assert.equal(m, 'hello');
  await sub.close();
  await pub.close();
});

test('node-redis RESP3: client-side cache is invalidated by writes, expiry and FLUSHALL', async () => {
  const cached = createClient({
    socket: { host: HOST, port: PORT, reconnectStrategy: false },
    RESP: 3,
    clientSideCache: { ttl: 0, maxEntries: 0, evictPolicy: 'LRU' },
  });
  cached.on('error', () => {});
  await cached.connect();
  const writer = await nr();
  const key = uniq('nr:csc');
  await writer.set(key, 'v1');
  assert.equal(await cached.get(key), 'v1');
  assert.equal(await cached.get(key), 'v1');
  assert.equal(cached.clientSideCache.stats().hitCount, 1); // the second GET came from the cache
  await writer.set(key, 'v2');
  await sleep(100); // the invalidate push arrives out of band
  assert.equal(await cached.get(key), 'v2');
  const short = uniq('nr:csc');
  await writer.set(short, 'x', { PX: 100 });
  assert.equal(await cached.get(short), 'x');
  await sleep(1500); // the active expiry cycle (one pass a second) removes it and invalidates
  assert.equal(await cached.get(short), null);
  assert.equal(await cached.get(key), 'v2');
  await writer.flushAll();
  await sleep(100);
  assert.equal(await cached.get(key), null);
  await cached.close();
  await writer.close();
});

// ---------------------------------------------------------------- scripts and functions

const INCR_BY_SCRIPT = "return redis.call('INCRBY', KEYS[1], ARGV[1])";

test('ioredis: defineCommand (EVALSHA, NOSCRIPT fallback to EVAL, pipelines)', async () => {
  const r = io();
  const k = uniq('io:script');
  r.defineCommand('incrByScript', { numberOfKeys: 1, lua: INCR_BY_SCRIPT });
  assert.equal(await supported(() => r.incrByScript(k, 5)), 5);
  assert.equal(await r.incrByScript(k, 2), 7);
  // The cache is emptied behind ioredis's back: it must fall back to EVAL and go on.
  assert.equal(await r.script('FLUSH'), 'OK');
  assert.equal(await r.incrByScript(k, 1), 8);
  const replies = await r.pipeline().incrByScript(k, 1).incrByScript(k, 1).get(k).exec();
  assert.deepEqual(replies.map(([err, v]) => { assert.equal(err, null); return v; }), [9, 10, '10']);
  // A script error is an ioredis ReplyError; the connection goes on.
  r.defineCommand('failing', { numberOfKeys: 0, lua: "return redis.call('INCR', 'x', 'y')" });
  await assert.rejects(() => r.failing(), /ERR Wrong number of args calling Redis command from script/);
  assert.equal(await r.ping(), 'PONG');
  r.disconnect();
});

test('node-redis RESP3: defineScript and a function called through FCALL', async () => {
  const { defineScript } = require('redis');
  const k = uniq('nr:script');
  const c = createClient({
    socket: { host: HOST, port: PORT, reconnectStrategy: false },
    RESP: 3,
    scripts: {
      incrByScript: defineScript({
        SCRIPT: INCR_BY_SCRIPT,
        NUMBER_OF_KEYS: 1,
        parseCommand(parser, key, by) { parser.pushKey(key); parser.push(String(by)); },
        transformReply: undefined,
      }),
    },
    functions: {
      conflib: {
        confget: {
          NUMBER_OF_KEYS: 1,
          IS_READ_ONLY: true,
          parseCommand(parser, key) { parser.pushKey(key); },
          transformReply: undefined,
        },
      },
    },
  });
  c.on('error', () => {});
  await c.connect();
  assert.equal(await supported(() => c.incrByScript(k, 4)), 4);
  assert.equal(await c.scriptFlush(), 'OK');
  assert.equal(await c.incrByScript(k, 4), 8);
  const code = "#!lua name=conflib\nredis.register_function{function_name='confget', " +
    "callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}";
  assert.equal(await supported(() => c.functionLoad(code, { REPLACE: true })), 'conflib');
  assert.equal(await c.conflib.confget(k), '8'); // FCALL_RO: the function is read-only
  const [lib] = await c.functionList({ LIBRARYNAME: 'conflib' });
  assert.equal(lib.library_name, 'conflib');
  assert.equal(await c.functionDelete('conflib'), 'OK');
  await assert.rejects(() => c.conflib.confget(k), /Function not found/);
  await c.close();
});

// ---------------------------------------------------------------- ACL: a named user

/** A bot-shard user (a least-privilege profile), created and dropped by an admin. */
async function withBotUser(fn) {
  const admin = io();
  const name = uniq('bot');
  assert.equal(await admin.call('ACL', 'SETUSER', name, 'on', '>botpw', 'resetkeys', '~shortterm:*',
    '~ratelimit:*', 'resetchannels', '&alerts', '-@all', '+@stm', '+get', '+set', '+incr', '+ping',
    '+publish', '+acl|whoami'), 'OK');
  try {
    await fn(name);
  } finally {
    await admin.call('ACL', 'DELUSER', name);
    await admin.del(`ratelimit:${name}`, `ratelimit:s:${name}`);
    admin.disconnect();
  }
}

test('ioredis: logs in as a named ACL user (AUTH user pass); its rules hold', () => withBotUser(async (name) => {
  // No ready check (INFO) and no CLIENT SETNAME: this user may run neither.
  const r = new Redis({ host: HOST, port: PORT, username: name, password: 'botpw', enableReadyCheck: false,
    maxRetriesPerRequest: 1 });
  assert.equal(await r.call('ACL', 'WHOAMI'), name);
  assert.equal(await r.incr(`ratelimit:${name}`), 1);
  assert.equal(await r.publish('alerts', 'x'), 0);
  await assert.rejects(r.get('other:1'), /^ReplyError: NOPERM No permissions to access a key/);
  await assert.rejects(r.publish('news', 'x'), /NOPERM No permissions to access a channel/);
  await assert.rejects(r.flushall(), new RegExp(`NOPERM User ${name} has no permissions to run the 'flushall' command`));
  // A wrong pair is refused with Redis's text and leaves the connection logged in as before.
  await assert.rejects(r.call('AUTH', name, 'nope'), /WRONGPASS invalid username-password pair or user is disabled/);
  assert.equal(await r.call('ACL', 'WHOAMI'), name);
  assert.equal(await r.ping(), 'PONG');
  r.disconnect();
}));

test('node-redis RESP3: logs in as a named ACL user (HELLO 3 AUTH user pass)', () => withBotUser(async (name) => {
  const c = createClient({ socket: { host: HOST, port: PORT, reconnectStrategy: false }, RESP: 3,
    username: name, password: 'botpw' });
  c.on('error', () => {});
  await c.connect();
  assert.equal(await c.sendCommand(['ACL', 'WHOAMI']), name);
  assert.equal(await c.set(`ratelimit:s:${name}`, 'v'), 'OK');
  await assert.rejects(c.get('other:1'), /NOPERM No permissions to access a key/);
  await c.close();
}));

// ---------------------------------------------------------------- runner

(async () => {
  let passed = 0, failed = 0, skipped = 0;
  for (const t of tests) {
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('timeout after 10s')), 10000).unref());
    try {
      await Promise.race([t.fn(), timeout]);
      passed++;
      if (VERBOSE) console.log(`ok   ${t.name}`);
    } catch (e) {
      if (e instanceof Unsupported) {
        skipped++;
        console.log(`SKIP ${t.name}: unsupported by stmd: ${e.message}`);
      } else {
        failed++;
        console.log(`FAIL ${t.name}\n     ${String(e && e.stack || e).split('\n').slice(0, 6).join('\n     ')}`);
      }
    }
  }
  console.log(`node: ${passed} passed, ${failed} failed, ${skipped} skipped`);
  if (process.env.CONF_RESULTS) fs.writeFileSync(process.env.CONF_RESULTS, `${passed} ${failed} ${skipped}\n`);
  process.exit(failed ? 1 : 0);
})();
