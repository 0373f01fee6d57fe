"""redisvl's documented flows against the server under test: a SearchIndex from a dict schema
(hash and JSON storage) created, loaded and queried with VectorQuery, FilterQuery (tag, numeric
and text filters), RangeQuery and CountQuery, fetched and deleted; MessageHistory and
SemanticMessageHistory; SemanticCache store/check. Embeddings come from libflows.embed (hashed bag
of words), so the nearest neighbours below are fixed."""

import asyncio

import pytest
from redisvl.extensions.cache.llm import SemanticCache
from redisvl.extensions.message_history import MessageHistory, SemanticMessageHistory
from redisvl.index import AsyncSearchIndex, SearchIndex
from redisvl.query import CountQuery, FilterQuery, RangeQuery, VectorQuery
from redisvl.query.filter import Num, Tag, Text
from redisvl.redis.utils import array_to_buffer
from redisvl.utils.vectorize import CustomVectorizer

from conftest import client
from libflows import DIM, URL, aembed, aembed_many, embed, embed_many

PEOPLE = [
    {"user": "john", "age": 18, "job": "engineer", "bio": "engineer who builds bridges"},
    {"user": "mary", "age": 32, "job": "doctor", "bio": "doctor who likes running"},
    {"user": "joe", "age": 45, "job": "dentist", "bio": "dentist who plays chess"},
    {"user": "tyler", "age": 61, "job": "engineer", "bio": "retired engineer who likes sailing"},
]


def schema(storage):
    return {
        "index": {"name": "flows_people_" + storage, "prefix": "flows_people_" + storage,
                  "storage_type": storage},
        "fields": [
            {"name": "user", "type": "tag"},
            {"name": "job", "type": "tag"},
            {"name": "age", "type": "numeric"},
            {"name": "bio", "type": "text"},
            {"name": "embedding", "type": "vector",
             "attrs": {"dims": DIM, "algorithm": "flat", "distance_metric": "cosine",
                       "datatype": "float32"}},
        ],
    }


def records(storage):
    out = []
    for p in PEOPLE:
        v = embed(p["bio"])
        out.append(dict(p, embedding=array_to_buffer(v, "float32") if storage == "hash" else v))
    return out


@pytest.fixture
def flushed_server():
    c = client()
    c.flushall()
    yield c
    c.close()


def users(results):
    return [r["user"] for r in results]


@pytest.mark.parametrize("storage", ["hash", "json"])
def test_search_index_flow(flushed_server, storage):
    index = SearchIndex.from_dict(schema(storage), redis_url=URL)
    index.create(overwrite=True)
    assert index.exists()
    assert index.name in index.listall()

    keys = index.load(records(storage), id_field="user")
    assert sorted(keys) == sorted("flows_people_%s:%s" % (storage, p["user"]) for p in PEOPLE)
    assert index.info()["num_docs"] in (4, "4")

    fields = ["user", "age", "job", "bio"]
    q = VectorQuery(embed("a doctor who likes running"), "embedding", return_fields=fields,
                    num_results=2)
    found = index.query(q)
    assert len(found) == 2 and users(found)[0] == "mary"
    assert float(found[0]["vector_distance"]) < 0.2
    assert int(found[0]["age"]) == 32

    # The same vector query restricted by a filter: mary is excluded by the tag.
    q = VectorQuery(embed("a doctor who likes running"), "embedding", return_fields=fields,
                    filter_expression=Tag("job") == "engineer", num_results=4)
    assert sorted(users(index.query(q))) == ["john", "tyler"]

    # Tag + numeric, numeric range, text.
    f = (Tag("job") == "engineer") & (Num("age") > 30)
    assert users(index.query(FilterQuery(filter_expression=f, return_fields=fields))) == ["tyler"]
    f = Num("age").between(30, 50)
    assert sorted(users(index.query(FilterQuery(filter_expression=f, return_fields=fields)))) == ["joe", "mary"]
    f = Text("bio") % "chess"
    assert users(index.query(FilterQuery(filter_expression=f, return_fields=fields))) == ["joe"]
    f = (Text("bio") % "likes") & (Num("age") < 40)
    assert users(index.query(FilterQuery(filter_expression=f, return_fields=fields))) == ["mary"]
    f = Tag("user") == ["john", "joe"]
    q = FilterQuery(filter_expression=f, return_fields=fields, sort_by="age")
    assert users(index.query(q)) == ["john", "joe"]

    # Range: only the exact text is within 0.01; every record is within 2.
    q = RangeQuery(embed("dentist who plays chess"), "embedding", return_fields=fields,
                   distance_threshold=0.01)
    assert users(index.query(q)) == ["joe"]
    q = RangeQuery(embed("dentist who plays chess"), "embedding", return_fields=fields,
                   distance_threshold=2.0)
    assert len(index.query(q)) == 4

    assert index.query(CountQuery(filter_expression=Num("age") > 30)) == 3
    assert index.query(CountQuery(filter_expression=Tag("job") == "engineer")) == 2

    fetched = index.fetch("john")
    assert fetched["user"] == "john" and int(fetched["age"]) == 18

    # Paging through everything with the library's paginate.
    seen = []
    for page in index.paginate(FilterQuery(filter_expression="*", return_fields=["user"]), page_size=3):
        seen += users(page)
    assert sorted(seen) == sorted(p["user"] for p in PEOPLE)

    assert index.drop_keys(["flows_people_%s:john" % storage]) == 1
    assert not index.fetch("john")  # None for JSON, {} (an empty HGETALL) for hashes
    assert index.query(CountQuery(filter_expression="*")) == 3

    index.delete(drop=True)
    assert not index.exists()
    assert flushed_server.keys("flows_people_*") == []


def test_async_search_index_flow(flushed_server):
    async def flow():
        index = AsyncSearchIndex.from_dict(schema("hash"), redis_url=URL)
        await index.create(overwrite=True)
        await index.load(records("hash"), id_field="user")
        q = VectorQuery(embed("engineer who likes sailing"), "embedding", return_fields=["user"],
                        num_results=1)
        found = await index.query(q)
        assert users(found) == ["tyler"]
        assert await index.query(CountQuery(filter_expression=Num("age") >= 45)) == 2
        await index.delete(drop=True)
        assert not await index.exists()
        await index.disconnect()

    asyncio.run(flow())


def vectorizer():
    return CustomVectorizer(embed=embed, embed_many=embed_many, aembed=aembed,
                            aembed_many=aembed_many)


def test_message_history(flushed_server):
    h = MessageHistory(name="flows_chat", session_tag="s1", redis_url=URL)
    h.add_messages([
        {"role": "user", "content": "hello, my name is Ann"},
        {"role": "assistant", "content": "hi Ann"},
    ])
    h.store(prompt="what is my name?", response="your name is Ann")
    other = MessageHistory(name="flows_chat", session_tag="s2", redis_url=URL)
    other.add_message({"role": "user", "content": "another session"})

    assert [m["content"] for m in h.get_recent(top_k=10)] == [
        "hello, my name is Ann", "hi Ann", "what is my name?", "your name is Ann"]
    assert [m["content"] for m in h.get_recent(top_k=2)] == ["what is my name?", "your name is Ann"]
    assert h.get_recent(top_k=1, as_text=True) == ["your name is Ann"]
    # store() writes the response with the role "llm".
    assert [m["role"] for m in h.messages] == ["user", "assistant", "user", "llm"]
    assert h.count() == 4
    assert [m["content"] for m in other.get_recent()] == ["another session"]

    h.drop()  # the last entry
    assert [m["content"] for m in h.get_recent(top_k=10)][-1] == "what is my name?"
    assert h.count() == 3

    # clear() empties the whole index (every session), keeping the index.
    h.clear()
    assert h.get_recent() == [] and other.get_recent() == []
    assert h.count() == 0
    h.delete()


def test_semantic_message_history(flushed_server):
    h = SemanticMessageHistory(name="flows_semantic_chat", session_tag="s1", redis_url=URL,
                               vectorizer=vectorizer(), distance_threshold=0.35)
    h.store(prompt="what is the capital of france", response="paris is the capital of france")
    h.store(prompt="how tall is mount everest", response="mount everest is 8849 metres tall")
    h.add_message({"role": "user", "content": "i like green tea"})

    assert len(h.get_recent(top_k=10)) == 5
    relevant = h.get_relevant("the capital of france", top_k=5)
    contents = [m["content"] for m in relevant]
    assert "what is the capital of france" in contents
    assert not any("everest" in c for c in contents)
    assert h.get_relevant("the capital of france", top_k=5, distance_threshold=0.0001) == []
    relevant = h.get_relevant("how tall is mount everest", top_k=1)
    assert [m["content"] for m in relevant] == ["how tall is mount everest"]

    h.clear()
    assert h.get_recent() == []
    h.delete()


def test_semantic_cache(flushed_server):
    cache = SemanticCache(name="flows_llmcache", redis_url=URL, vectorizer=vectorizer(),
                          distance_threshold=0.1, overwrite=True,
                          filterable_fields=[{"name": "user", "type": "tag"}])
    key = cache.store(prompt="what is the capital of france", response="paris",
                      metadata={"source": "atlas"}, filters={"user": "ann"})
    assert key.startswith("flows_llmcache:")
    cache.store(prompt="how tall is mount everest", response="8849 metres", filters={"user": "bob"})

    hit = cache.check(prompt="What is the capital of France?")
    assert len(hit) == 1
    assert hit[0]["response"] == "paris"
    assert hit[0]["prompt"] == "what is the capital of france"
    assert hit[0]["metadata"] == {"source": "atlas"}
    assert cache.check(prompt="which river flows through paris") == []
    assert cache.check(vector=embed("how tall is mount everest"))[0]["response"] == "8849 metres"
    # Filtered by the tag field: bob's entry is not ann's.
    assert cache.check(prompt="how tall is mount everest", filter_expression=Tag("user") == "ann") == []
    assert cache.check(prompt="how tall is mount everest", filter_expression=Tag("user") == "bob") != []

    async def acheck():
        return await cache.acheck(prompt="what is the capital of france")

    assert asyncio.run(acheck())[0]["response"] == "paris"

    cache.clear()
    assert cache.check(prompt="what is the capital of france") == []
    cache.delete()
    assert not cache.index.exists()
