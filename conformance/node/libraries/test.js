// The agent libraries' documented flows in Node against the server on STMD_HOST:STMD_PORT:
// @langchain/langgraph-checkpoint-redis (RedisSaver with a small interrupted graph, ShallowRedisSaver,
// RedisStore with a vector index) and redis-om (a JSON and a HASH repository: createIndex, save,
// fetch, search, remove). They need RediSearch (FT.*) and RedisJSON; `conformance/run libraries`
// runs them (CONF_LIBRARIES_SERVER=stack: against redis-server 7.4 with the modules). Plain Node,
// the runner of ../test.js: each test an async function, `passed failed skipped` to $CONF_RESULTS.
'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const { createClient } = require('redis');
const { Annotation, END, START, StateGraph } = require('@langchain/langgraph');
const { RedisSaver } = require('@langchain/langgraph-checkpoint-redis');
const { ShallowRedisSaver } = require('@langchain/langgraph-checkpoint-redis/shallow');
const { RedisStore } = require('@langchain/langgraph-checkpoint-redis/store');
const { EntityId, Repository, Schema } = require('redis-om');

const HOST = process.env.STMD_HOST || '127.0.0.1';
const PORT = Number(process.env.STMD_PORT || 6379);
const URL = `redis://${HOST}:${PORT}`;
const VERBOSE = !!process.env.CONF_VERBOSE;

// The embedding of ../../python/libflows.py: a hashed bag of words, normalised, so an identical
// text is at cosine distance 0 and texts sharing words are near; no model, no network.
const DIM = 32;
function embed(text) {
  const v = new Array(DIM).fill(0);
  v[0] = 0.25;
  for (const w of String(text).toLowerCase().match(/[a-z0-9]+/g) || []) {
    const h = crypto.createHash('sha256').update(w).digest();
    v[1 + (h[0] % (DIM - 1))] += h[1] & 1 ? 1 : -1;
  }
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return v.map((x) => x / n);
}
const embeddings = {
  embedDocuments: async (texts) => texts.map(embed),
  embedQuery: async (text) => embed(text),
};

async function client() {
  const c = createClient({ url: URL, socket: { reconnectStrategy: false } });
  c.on('error', () => {});
  await c.connect();
  return c;
}
async function flushall() {
  const c = await client();
  await c.flushAll();
  await c.quit();
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

// START -> draft -> review -> END, interrupted before `review` (a human-in-the-loop step).
const State = Annotation.Root({
  items: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
function build(checkpointer) {
  return new StateGraph(State)
    .addNode('draft', () => ({ items: ['draft'] }))
    .addNode('review', (s) => ({ items: [`review:${s.items.length}`] }))
    .addEdge(START, 'draft')
    .addEdge('draft', 'review')
    .addEdge('review', END)
    .compile({ checkpointer, interruptBefore: ['review'] });
}
const cfg = (thread) => ({ configurable: { thread_id: thread } });
async function collect(it) {
  const out = [];
  for await (const x of it) out.push(x);
  return out;
}

test('langgraph RedisSaver: run, interrupt, resume, list, putWrites, deleteThread', async () => {
  await flushall();
  const saver = await RedisSaver.fromUrl(URL);
  try {
    const graph = build(saver);
    let out = await graph.invoke({ items: ['start'] }, cfg('t1'));
    assert.deepEqual(out.items, ['start', 'draft']);
    assert.deepEqual((await graph.getState(cfg('t1'))).next, ['review']);
    await graph.invoke({ items: ['other'] }, cfg('t2'));

    out = await graph.invoke(null, cfg('t1'));
    assert.deepEqual(out.items, ['start', 'draft', 'review:2']);
    assert.deepEqual((await graph.getState(cfg('t1'))).next, []);

    const checkpoints = await collect(saver.list(cfg('t1')));
    assert.equal(checkpoints.length, 4);
    const steps = checkpoints.map((c) => c.metadata.step);
    assert.deepEqual(steps, [...steps].sort((a, b) => b - a));
    assert.equal(steps[0], 2);
    assert.deepEqual(checkpoints[0].checkpoint.channel_values.items, ['start', 'draft', 'review:2']);
    assert.equal((await collect(saver.list(cfg('t1'), { limit: 2 }))).length, 2);

    const latest = await saver.getTuple(cfg('t1'));
    assert.equal(latest.config.configurable.checkpoint_id, checkpoints[0].config.configurable.checkpoint_id);
    await saver.putWrites(latest.config, [['items', ['pending']]], 'task-1');
    const again = await saver.getTuple(latest.config);
    assert.ok(again.pendingWrites.some(([task, ch, v]) => task === 'task-1' && ch === 'items' && v[0] === 'pending'),
      JSON.stringify(again.pendingWrites));
  } finally {
    await saver.end();
  }

  // A fresh saver on a new connection sees both threads.
  const saver2 = await RedisSaver.fromUrl(URL);
  try {
    assert.deepEqual((await saver2.getTuple(cfg('t1'))).checkpoint.channel_values.items, ['start', 'draft', 'review:2']);
    assert.deepEqual((await build(saver2).getState(cfg('t2'))).values.items, ['other', 'draft']);
    await saver2.deleteThread('t1');
    assert.equal(await saver2.getTuple(cfg('t1')), undefined);
    assert.deepEqual(await collect(saver2.list(cfg('t1'))), []);
    assert.ok(await saver2.getTuple(cfg('t2')));
  } finally {
    await saver2.end();
  }
});

test('langgraph ShallowRedisSaver keeps only the latest checkpoint', async () => {
  await flushall();
  const saver = await ShallowRedisSaver.fromUrl(URL);
  try {
    const graph = build(saver);
    await graph.invoke({ items: ['start'] }, cfg('s1'));
    const out = await graph.invoke(null, cfg('s1'));
    assert.deepEqual(out.items, ['start', 'draft', 'review:2']);
    const checkpoints = await collect(saver.list(cfg('s1')));
    assert.equal(checkpoints.length, 1);
    assert.deepEqual(checkpoints[0].checkpoint.channel_values.items, ['start', 'draft', 'review:2']);
    await saver.deleteThread('s1');
    assert.equal(await saver.getTuple(cfg('s1')), undefined);
  } finally {
    await saver.end();
  }
});

test('langgraph RedisStore: put, get, vector search, filter, listNamespaces, delete', async () => {
  await flushall();
  const store = await RedisStore.fromConnString(URL, {
    index: { dims: DIM, embed: embeddings, distanceType: 'cosine', fields: ['text'] },
  });
  try {
    await store.setup();
    const ns = ['users', 'ann', 'memories'];
    await store.put(ns, 'm1', { text: 'ann is a doctor who likes running', kind: 'job' });
    await store.put(ns, 'm2', { text: 'ann plays chess on sundays', kind: 'hobby' });
    await store.put(ns, 'm3', { text: 'ann lives in paris', kind: 'home' });
    await store.put(['users', 'bob', 'memories'], 'm1', { text: 'bob likes running too', kind: 'hobby' });

    const item = await store.get(ns, 'm2');
    assert.deepEqual(item.value, { text: 'ann plays chess on sundays', kind: 'hobby' });
    assert.deepEqual(item.namespace, ns);
    assert.equal(await store.get(ns, 'nope'), null);

    let hits = await store.search(['users', 'ann'], { query: 'who likes running', limit: 2 });
    assert.equal(hits.length, 2);
    assert.equal(hits[0].key, 'm1');
    assert.ok(hits[0].score > hits[1].score, JSON.stringify(hits.map((h) => h.score)));

    hits = await store.search(['users', 'ann'], { filter: { kind: 'home' } });
    assert.deepEqual(hits.map((h) => h.key), ['m3']);

    const spaces = (await store.listNamespaces({ prefix: ['users'] })).map((n) => n.join('/')).sort();
    assert.deepEqual(spaces, ['users/ann/memories', 'users/bob/memories']);

    await store.put(ns, 'm3', { text: 'ann moved to lyon', kind: 'home' });
    assert.equal((await store.get(ns, 'm3')).value.text, 'ann moved to lyon');
    hits = await store.search(['users', 'ann'], { query: 'ann moved to lyon', limit: 1 });
    assert.equal(hits[0].key, 'm3');

    await store.delete(ns, 'm2');
    assert.equal(await store.get(ns, 'm2'), null);
    assert.deepEqual((await store.search(ns, { limit: 10 })).map((h) => h.key).sort(), ['m1', 'm3']);
  } finally {
    await store.close();
  }
});

for (const dataStructure of ['JSON', 'HASH']) {
  test(`redis-om ${dataStructure} repository: createIndex, save, fetch, search, remove`, async () => {
    await flushall();
    const c = await client();
    try {
      const schema = new Schema(`flows_album_${dataStructure.toLowerCase()}`, {
        artist: { type: 'string' },
        title: { type: 'text' },
        year: { type: 'number', sortable: true },
        genres: { type: 'string[]' },
        outOfPrint: { type: 'boolean' },
      }, { dataStructure });
      const albums = new Repository(schema, c);
      await albums.createIndex();
      const data = [
        { artist: 'Mushroomhead', title: 'The Righteous & The Butterfly', year: 2014, genres: ['metal'], outOfPrint: true },
        { artist: 'Mushroomhead', title: 'XX', year: 2001, genres: ['metal', 'industrial'], outOfPrint: false },
        { artist: 'Cake', title: 'Fashion Nugget', year: 1996, genres: ['rock'], outOfPrint: false },
        { artist: 'Cake', title: 'Prolonging the Magic', year: 1998, genres: ['rock', 'alternative'], outOfPrint: false },
      ];
      const ids = [];
      for (const d of data) ids.push((await albums.save(d))[EntityId]);

      const got = await albums.fetch(ids[2]);
      assert.equal(got.title, 'Fashion Nugget');
      assert.equal(got.year, 1996);

      const titles = (rows) => rows.map((a) => a.title).sort();
      assert.deepEqual(titles(await albums.search().where('artist').equals('Cake').return.all()),
        ['Fashion Nugget', 'Prolonging the Magic']);
      assert.deepEqual(titles(await albums.search().where('year').gte(2000).return.all()),
        ['The Righteous & The Butterfly', 'XX']);
      assert.deepEqual(titles(await albums.search().where('title').matches('butterfly').return.all()),
        ['The Righteous & The Butterfly']);
      assert.deepEqual(titles(await albums.search().where('genres').contains('rock')
        .and('year').lt(1997).return.all()), ['Fashion Nugget']);
      assert.deepEqual(titles(await albums.search().where('outOfPrint').is.true().return.all()),
        ['The Righteous & The Butterfly']);
      assert.deepEqual((await albums.search().where('artist').equals('Mushroomhead').or('year').eq(1998)
        .sortBy('year', 'DESC').return.all()).map((a) => a.year), [2014, 2001, 1998]);
      assert.equal(await albums.search().where('genres').contains('metal').return.count(), 2);
      assert.equal((await albums.search().sortAscending('year').return.first()).title, 'Fashion Nugget');
      assert.deepEqual((await albums.search().sortBy('year', 'ASC').return.page(1, 2)).map((a) => a.year), [1998, 2001]);

      await albums.remove(ids[0]);
      assert.equal(await albums.search().return.count(), 3);
      assert.equal((await albums.fetch(ids[0])).title, undefined);
      await albums.dropIndex();
    } finally {
      await c.quit();
    }
  });
}

(async () => {
  let passed = 0, failed = 0;
  for (const t of tests) {
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('timeout after 20s')), 20000).unref());
    try {
      await Promise.race([t.fn(), timeout]);
      passed++;
      if (VERBOSE) console.log(`ok   ${t.name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${t.name}\n     ${String(e && e.stack || e).split('\n').slice(0, 6).join('\n     ')}`);
    }
  }
  console.log(`node libraries: ${passed} passed, ${failed} failed`);
  if (process.env.CONF_RESULTS) fs.writeFileSync(process.env.CONF_RESULTS, `${passed} ${failed} 0\n`);
  process.exit(failed ? 1 : 0);
})();
