"""langchain-redis's documented flows against the server under test: RedisChatMessageHistory
(add, read back, full-text search, clear), RedisVectorStore (add_texts, similarity_search with
tag and numeric metadata filters, scores, get_by_ids, delete), RedisCache and RedisSemanticCache
(directly, and as LangChain's global LLM cache in front of a fake LLM). Embeddings come from
libflows.embed (hashed bag of words), so the neighbours are fixed."""

import pytest
from langchain_core.globals import set_llm_cache
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import Generation
from langchain_redis import (
    RedisCache,
    RedisChatMessageHistory,
    RedisConfig,
    RedisSemanticCache,
    RedisVectorStore,
)
from redisvl.query.filter import Num, Tag

from conftest import client
from libflows import URL, langchain_embeddings


@pytest.fixture
def flushed_server():
    c = client()
    c.flushall()
    yield c
    set_llm_cache(None)
    c.close()


def test_chat_message_history(flushed_server):
    h = RedisChatMessageHistory("session-1", redis_url=URL)
    h.add_message(HumanMessage(content="hello, my name is Ann and I like green tea"))
    h.add_message(AIMessage(content="nice to meet you Ann"))
    h.add_messages([HumanMessage(content="what do I like?"), AIMessage(content="you like green tea")])
    other = RedisChatMessageHistory("session-2", redis_url=URL)
    other.add_message(HumanMessage(content="tea in another session"))

    msgs = h.messages
    assert [type(m) for m in msgs] == [HumanMessage, AIMessage, HumanMessage, AIMessage]
    assert [m.content for m in msgs] == [
        "hello, my name is Ann and I like green tea", "nice to meet you Ann",
        "what do I like?", "you like green tea"]
    assert len(h) == 4

    # A fresh object on a new connection reads the same session.
    again = RedisChatMessageHistory("session-1", redis_url=URL)
    assert [m.content for m in again.messages] == [m.content for m in msgs]

    found = h.search_messages("tea")
    assert sorted(f["content"] for f in found) == [
        "hello, my name is Ann and I like green tea", "you like green tea"]
    assert h.search_messages("coffee") == []

    h.clear()
    assert h.messages == [] and len(h) == 0
    assert [m.content for m in other.messages] == ["tea in another session"]


def test_vector_store(flushed_server):
    config = RedisConfig(
        index_name="flows_docs",
        redis_url=URL,
        metadata_schema=[
            {"name": "category", "type": "tag"},
            {"name": "year", "type": "numeric"},
        ],
    )
    store = RedisVectorStore(langchain_embeddings(), config=config)
    texts = [
        "the cat sat on the mat",
        "dogs like to chase the cat",
        "stock markets fell sharply today",
        "the central bank raised interest rates",
    ]
    metadatas = [
        {"category": "pets", "year": 2020},
        {"category": "pets", "year": 2023},
        {"category": "finance", "year": 2023},
        {"category": "finance", "year": 2024},
    ]
    ids = store.add_texts(texts, metadatas, keys=["cat", "dog", "stocks", "bank"])
    assert len(ids) == 4

    docs = store.similarity_search("the cat sat on the mat", k=2)
    assert [d.page_content for d in docs][0] == "the cat sat on the mat"
    assert docs[0].metadata["category"] == "pets"

    docs = store.similarity_search("cat", k=4, filter=Tag("category") == "finance")
    assert sorted(d.page_content for d in docs) == sorted(texts[2:])

    docs = store.similarity_search("the cat", k=4, filter=Num("year") >= 2023)
    assert sorted(d.page_content for d in docs) == sorted(texts[1:])

    docs = store.similarity_search(
        "interest rates", k=4, filter=(Tag("category") == "finance") & (Num("year") < 2024))
    assert [d.page_content for d in docs] == ["stock markets fell sharply today"]

    scored = store.similarity_search_with_score("the central bank raised interest rates", k=2)
    assert scored[0][0].page_content == "the central bank raised interest rates"
    assert scored[0][1] < 0.01 and scored[1][1] > scored[0][1]

    got = store.get_by_ids([ids[0]])
    assert [d.page_content for d in got] == ["the cat sat on the mat"]

    assert store.delete([ids[0]])
    docs = store.similarity_search("the cat sat on the mat", k=4)
    assert "the cat sat on the mat" not in [d.page_content for d in docs]
    assert len(docs) == 3

    # Reconnecting to the existing index finds the same documents.
    existing = RedisVectorStore.from_existing_index("flows_docs", langchain_embeddings(), redis_url=URL)
    assert existing.similarity_search("dogs like to chase the cat", k=1)[0].page_content == texts[1]
    store.index.delete(drop=True)


def test_redis_cache(flushed_server):
    cache = RedisCache(redis_url=URL, prefix="flows_cache")
    gens = [Generation(text="paris")]
    assert cache.lookup("capital of france?", "llm-a") is None
    cache.update("capital of france?", "llm-a", gens)
    assert cache.lookup("capital of france?", "llm-a") == gens
    assert cache.lookup("capital of france?", "llm-b") is None
    assert flushed_server.keys("flows_cache:*") != []

    # As LangChain's LLM cache: the second call is answered from the server, not the LLM.
    set_llm_cache(cache)
    llm = FakeListLLM(responses=["first answer", "second answer"])
    assert llm.invoke("tell me something") == "first answer"
    assert llm.invoke("tell me something") == "first answer"
    assert llm.invoke("something else") == "second answer"

    cache.clear()
    assert cache.lookup("capital of france?", "llm-a") is None


def test_redis_semantic_cache(flushed_server):
    cache = RedisSemanticCache(embeddings=langchain_embeddings(), redis_url=URL,
                               distance_threshold=0.1, name="flows_semcache", prefix="flows_semcache")
    cache.update("what is the capital of france", "llm-a", [Generation(text="paris")])
    cache.update("how tall is mount everest", "llm-a", [Generation(text="8849 metres")])

    hit = cache.lookup("What is the capital of France?", "llm-a")
    assert [g.text for g in hit] == ["paris"]
    assert cache.lookup("which river flows through paris", "llm-a") is None
    assert cache.lookup("what is the capital of france", "llm-b") is None
    assert [g.text for g in cache.lookup("how tall is mount everest", "llm-a")] == ["8849 metres"]

    set_llm_cache(cache)
    llm = FakeListLLM(responses=["first answer", "second answer"])
    assert llm.invoke("tell me a joke about cats") == "first answer"
    assert llm.invoke("Tell me a joke about cats!") == "first answer"

    cache.clear()
    assert cache.lookup("what is the capital of france", "llm-a") is None
