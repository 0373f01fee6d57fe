// ioredis `Cluster` and node-redis `createCluster` against a running stmd cluster: a standard
// workload (strings, INCR, hashes, lists, MULTI within a hash tag, EVAL within a slot) and the STM
// workload of a bot (capture, read, context, tick, summary, forget a channel) over many channels,
// so over every node. Any error (a CROSSSLOT, a MOVED the client did not follow) fails the run.
//
//   node cluster.js 127.0.0.2:7000
//
// Run by tests/integration/cluster_clients.rs. Exits non-zero with the failed check on stderr.
'use strict';

const assert = require('node:assert/strict');
const Redis = require('ioredis');
const { createCluster } = require('redis');

const [HOST, PORT] = (process.argv[2] || '127.0.0.2:7000').split(':');
const CHANNELS = 24;

/** The STM workload, through `send(routingKey, args)`. `tag` keeps the clients' scopes apart. */
async function stmWorkload(name, send) {
  const user = `${tag(name)}u`;
  const server = `${tag(name)}s`;
  for (let i = 0; i < CHANNELS; i++) {
    const channel = `${tag(name)}c${i}`;
    const userKey = `shortterm:user:${user}:{${channel}}:3`;
    const serverKey = `shortterm:server:${server}:{${channel}}:3`;
    const capture = ['STM.CAPTURE', 'USER', user, 'CHANNEL', channel, 'SERVER', server,
      'MSG', 'user', 'Alice', `hello ${i}`, 'REPLY', '3', '-', 'Nova', `hi ${i}`];
    assert.deepEqual(await send(channel, capture), [userKey, serverKey]);
    const json = JSON.parse(await send(userKey, ['STM.GET', userKey, 'FORMAT', 'JSON']));
    assert.deepEqual(json.messages.map((m) => m.content), [`hello ${i}`, `hi ${i}`]);
    assert.equal(await send(serverKey, ['STM.TICK', serverKey, 'BY', '2']), 3);
    const summary = `${name} summary ${i}`;
    assert.deepEqual(
      await send(channel, ['STM.SUMMARY', 'USER', user, 'CHANNEL', channel, 'SERVER', server,
        'PERSONA', '3', 'TEXT', summary]),
      [userKey, serverKey],
    );
    const context = await send(channel, ['STM.CONTEXT', 'USER', user, 'CHANNEL', channel,
      'SERVER', server, 'PERSONA', '3', 'BOT', 'Nova', 'FORMAT', 'JSON']);
    assert.ok(String(context).includes(summary), `STM.CONTEXT of ${channel}: ${context}`);
    assert.equal(await send(channel, ['STM.FORGET', 'CHANNEL', channel]), 2);
    assert.equal(await send(userKey, ['STM.GET', userKey]), null);
  }
}

const tag = (name) => name.replace(/[^a-z]/g, '');

async function standardWorkload(name, c) {
  for (let i = 0; i < 100; i++) assert.equal(await c.set(`${name}:k${i}`, String(i)), 'OK');
  for (let i = 0; i < 100; i++) assert.equal(await c.get(`${name}:k${i}`), String(i));
  for (let i = 0; i < 30; i++) assert.equal(await c.incr(`${name}:n${i}`), 1);
}

async function ioredis() {
  const c = new Redis.Cluster([{ host: HOST, port: Number(PORT) }], { redisOptions: { maxRetriesPerRequest: 3 } });
  const name = 'ioredis';
  await standardWorkload(name, c);
  assert.equal(await c.hset(`${name}:h`, 'a', '1', 'b', '2'), 2);
  assert.deepEqual(await c.hgetall(`${name}:h`), { a: '1', b: '2' });
  assert.equal(await c.rpush(`${name}:l`, 'x', 'y', 'z'), 3);
  assert.deepEqual(await c.lrange(`${name}:l`, 0, -1), ['x', 'y', 'z']);
  const tx = await c.multi().set(`{${name}}a`, '1').incr(`{${name}}b`).get(`{${name}}a`).exec();
  assert.deepEqual(tx, [[null, 'OK'], [null, 1], [null, '1']]);
  const script = "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incrby', KEYS[2], ARGV[1])";
  assert.equal(await c.eval(script, 2, `{${name}}x`, `{${name}}y`, '5'), 5);
  assert.equal(await c.get(`{${name}}x`), '5');
  await stmWorkload(name, (_key, args) => c.call(...args));
  const nodes = c.nodes('master').map((n) => `${n.options.host}:${n.options.port}`).sort();
  assert.equal(nodes.length, 3, `ioredis sees ${nodes}`);
  c.disconnect();
}

async function nodeRedis() {
  const c = createCluster({ rootNodes: [{ url: `redis://${HOST}:${PORT}` }] });
  c.on('error', () => {});
  await c.connect();
  const name = 'noderedis';
  await standardWorkload(name, c);
  assert.equal(await c.hSet(`${name}:h`, { a: '1', b: '2' }), 2);
  assert.deepEqual({ ...(await c.hGetAll(`${name}:h`)) }, { a: '1', b: '2' });
  assert.equal(await c.rPush(`${name}:l`, ['x', 'y', 'z']), 3);
  assert.deepEqual(await c.lRange(`${name}:l`, 0, -1), ['x', 'y', 'z']);
  const tx = await c.multi().set(`{${name}}a`, '1').incr(`{${name}}b`).get(`{${name}}a`).exec();
  assert.deepEqual(tx, ['OK', 1, '1']);
  const script = "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incrby', KEYS[2], ARGV[1])";
  assert.equal(await c.eval(script, { keys: [`{${name}}x`, `{${name}}y`], arguments: ['5'] }), 5);
  assert.equal(await c.get(`{${name}}x`), '5');
  // A module command goes by the key named as the routing key (the channel for a scope's
  // commands): node-redis does not read COMMAND's key specs; MOVED corrects a wrong guess.
  await stmWorkload(name, (key, args) => c.sendCommand(key, false, args));
  assert.equal(c.masters.length, 3, `node-redis sees ${c.masters.length} primaries`);
  await c.close();
}

(async () => {
  await ioredis();
  console.log('ioredis Cluster: standard and STM workloads passed');
  await nodeRedis();
  console.log('node-redis createCluster: standard and STM workloads passed');
})().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
