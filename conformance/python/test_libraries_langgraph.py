"""langgraph-checkpoint-redis's documented flows against the server under test: a small LangGraph
graph checkpointed with RedisSaver and AsyncRedisSaver (run to an interrupt, resume the thread,
list its checkpoints, put pending writes, read it from a fresh saver, delete the thread);
ShallowRedisSaver (only the latest checkpoint is kept); RedisStore and AsyncRedisStore
put/get/search/delete with a vector index whose embedding is libflows.embed."""

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.checkpoint.redis import RedisSaver
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.checkpoint.redis.shallow import ShallowRedisSaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.redis import RedisStore

from conftest import client
from libflows import DIM, URL, embed_many


class State(TypedDict):
    items: Annotated[list, operator.add]


def build(checkpointer):
    """START -> draft -> review -> END, interrupted before `review` (a human-in-the-loop step)."""
    g = StateGraph(State)
    g.add_node("draft", lambda s: {"items": ["draft"]})
    g.add_node("review", lambda s: {"items": ["review:%d" % len(s["items"])]})
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_edge("review", END)
    return g.compile(checkpointer=checkpointer, interrupt_before=["review"])


def cfg(thread):
    return {"configurable": {"thread_id": thread}}


@pytest.fixture
def flushed_server():
    c = client()
    c.flushall()
    yield c
    c.close()


def test_redis_saver_flow(flushed_server):
    with RedisSaver.from_conn_string(URL) as saver:
        saver.setup()
        graph = build(saver)

        out = graph.invoke({"items": ["start"]}, cfg("t1"))
        assert out["items"] == ["start", "draft"]
        state = graph.get_state(cfg("t1"))
        assert state.next == ("review",)
        graph.invoke({"items": ["other"]}, cfg("t2"))

        # Resume the interrupted thread: the state comes back from the server.
        out = graph.invoke(None, cfg("t1"))
        assert out["items"] == ["start", "draft", "review:2"]
        assert graph.get_state(cfg("t1")).next == ()

        checkpoints = list(saver.list(cfg("t1")))
        # input, after START, after draft, after review: newest first.
        assert len(checkpoints) == 4
        steps = [c.metadata["step"] for c in checkpoints]
        assert steps == sorted(steps, reverse=True) and steps[0] == 2
        assert checkpoints[0].checkpoint["channel_values"]["items"] == ["start", "draft", "review:2"]
        assert len(list(saver.list(cfg("t1"), limit=2))) == 2
        assert [c.config["configurable"]["checkpoint_id"] for c in graph.get_state_history(cfg("t1"))] \
            == [c.config["configurable"]["checkpoint_id"] for c in checkpoints]

        latest = saver.get_tuple(cfg("t1"))
        assert latest.config["configurable"]["checkpoint_id"] == checkpoints[0].config["configurable"]["checkpoint_id"]
        saver.put_writes(latest.config, [("items", ["pending"])], task_id="task-1")
        again = saver.get_tuple(latest.config)
        assert ("task-1", "items", ["pending"]) in [tuple(w) for w in again.pending_writes]

    # A fresh saver on a new connection sees the same threads.
    with RedisSaver.from_conn_string(URL) as saver2:
        saver2.setup()
        assert saver2.get_tuple(cfg("t1")).checkpoint["channel_values"]["items"] == ["start", "draft", "review:2"]
        assert build(saver2).get_state(cfg("t2")).values["items"] == ["other", "draft"]

        saver2.delete_thread("t1")
        assert saver2.get_tuple(cfg("t1")) is None
        assert list(saver2.list(cfg("t1"))) == []
        assert saver2.get_tuple(cfg("t2")) is not None


def test_async_redis_saver_flow(flushed_server):
    async def flow():
        async with AsyncRedisSaver.from_conn_string(URL) as saver:
            await saver.setup()
            graph = build(saver)
            out = await graph.ainvoke({"items": ["start"]}, cfg("a1"))
            assert out["items"] == ["start", "draft"]
            assert (await graph.aget_state(cfg("a1"))).next == ("review",)
            out = await graph.ainvoke(None, cfg("a1"))
            assert out["items"] == ["start", "draft", "review:2"]

            checkpoints = [c async for c in saver.alist(cfg("a1"))]
            assert len(checkpoints) == 4
            assert checkpoints[0].checkpoint["channel_values"]["items"] == ["start", "draft", "review:2"]

            latest = await saver.aget_tuple(cfg("a1"))
            await saver.aput_writes(latest.config, [("items", ["pending"])], task_id="task-a")
            again = await saver.aget_tuple(latest.config)
            assert ("task-a", "items", ["pending"]) in [tuple(w) for w in again.pending_writes]

            await saver.adelete_thread("a1")
            assert await saver.aget_tuple(cfg("a1")) is None
            assert [c async for c in saver.alist(cfg("a1"))] == []

    asyncio.run(flow())


def test_shallow_redis_saver(flushed_server):
    with ShallowRedisSaver.from_conn_string(URL) as saver:
        saver.setup()
        graph = build(saver)
        graph.invoke({"items": ["start"]}, cfg("s1"))
        assert graph.get_state(cfg("s1")).next == ("review",)
        out = graph.invoke(None, cfg("s1"))
        assert out["items"] == ["start", "draft", "review:2"]
        # Only the latest checkpoint of the thread is kept.
        checkpoints = list(saver.list(cfg("s1")))
        assert len(checkpoints) == 1
        assert checkpoints[0].checkpoint["channel_values"]["items"] == ["start", "draft", "review:2"]
        saver.delete_thread("s1")
        assert saver.get_tuple(cfg("s1")) is None


def test_redis_store_with_vector_index(flushed_server):
    index = {"dims": DIM, "embed": embed_many, "fields": ["text"], "distance_type": "cosine"}
    with RedisStore.from_conn_string(URL, index=index) as store:
        store.setup()
        ns = ("users", "ann", "memories")
        store.put(ns, "m1", {"text": "ann is a doctor who likes running", "kind": "job"})
        store.put(ns, "m2", {"text": "ann plays chess on sundays", "kind": "hobby"})
        store.put(ns, "m3", {"text": "ann lives in paris", "kind": "home"})
        store.put(("users", "bob", "memories"), "m1", {"text": "bob likes running too", "kind": "hobby"})

        item = store.get(ns, "m2")
        assert item.value == {"text": "ann plays chess on sundays", "kind": "hobby"}
        assert item.key == "m2" and item.namespace == ns
        assert store.get(ns, "nope") is None

        hits = store.search(("users", "ann"), query="who likes running", limit=2)
        assert hits[0].key == "m1" and hits[0].namespace == ns
        assert len(hits) == 2
        assert hits[0].score is not None and hits[0].score > hits[1].score

        hits = store.search(("users",), query="likes running", limit=5)
        assert {(h.namespace[1], h.key) for h in hits[:2]} == {("ann", "m1"), ("bob", "m1")}

        hits = store.search(("users", "ann"), filter={"kind": "home"})
        assert [h.key for h in hits] == ["m3"]

        assert sorted(store.list_namespaces(prefix=("users",))) == [
            ("users", "ann", "memories"), ("users", "bob", "memories")]

        store.put(ns, "m3", {"text": "ann moved to lyon", "kind": "home"})
        assert store.get(ns, "m3").value["text"] == "ann moved to lyon"
        hits = store.search(("users", "ann"), query="ann moved to lyon", limit=1)
        assert hits[0].key == "m3"

        store.delete(ns, "m2")
        assert store.get(ns, "m2") is None
        assert sorted(h.key for h in store.search(ns, limit=10)) == ["m1", "m3"]


def test_async_redis_store_with_vector_index(flushed_server):
    from langgraph.store.redis.aio import AsyncRedisStore

    async def flow():
        index = {"dims": DIM, "embed": embed_many, "fields": ["text"], "distance_type": "cosine"}
        async with AsyncRedisStore.from_conn_string(URL, index=index) as store:
            await store.setup()
            ns = ("agents", "planner")
            await store.aput(ns, "p1", {"text": "book a train to lyon on friday"})
            await store.aput(ns, "p2", {"text": "buy green tea and milk"})
            assert (await store.aget(ns, "p2")).value == {"text": "buy green tea and milk"}
            hits = await store.asearch(("agents",), query="train to lyon", limit=1)
            assert [h.key for h in hits] == ["p1"]
            await store.adelete(ns, "p1")
            assert await store.aget(ns, "p1") is None
            assert [h.key for h in await store.asearch(ns, limit=10)] == ["p2"]

    asyncio.run(flow())
