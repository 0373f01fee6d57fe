"""Shared pieces of the agent libraries' flow tests (test_libraries_*.py): the server's URL, and a
small deterministic embedding so that no test downloads a model or calls a network service.

The embedding is a hashed bag of words: each lower-cased word adds ±1 to one of DIM coordinates
chosen by its SHA-256, and the vector is normalised. Texts sharing words are therefore close in
cosine distance and an identical text is at distance 0, which is all the libraries' vector flows
(nearest neighbours, range queries, semantic caches) need to give predictable answers."""

import hashlib
import math
import re

from conftest import HOST, PORT

DIM = 32
URL = "redis://%s:%d" % (HOST, PORT)

_WORD = re.compile(r"[a-z0-9]+")


def embed(text):
    v = [0.0] * DIM
    # A constant coordinate keeps a text without words away from the zero vector (whose cosine
    # distance is undefined).
    v[0] = 0.25
    for w in _WORD.findall(str(text).lower()):
        h = hashlib.sha256(w.encode()).digest()
        v[1 + h[0] % (DIM - 1)] += 1.0 if h[1] & 1 else -1.0
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def embed_many(texts):
    return [embed(t) for t in texts]


async def aembed(text):
    return embed(text)


async def aembed_many(texts):
    return embed_many(texts)


def cosine_distance(a, b):
    return 1.0 - sum(x * y for x, y in zip(embed(a), embed(b)))


def langchain_embeddings():
    """The same embedding as a LangChain `Embeddings` (langchain-core is imported only here, for
    the tests that use it)."""
    from langchain_core.embeddings import Embeddings

    class HashEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return embed_many(texts)

        def embed_query(self, text):
            return embed(text)

    return HashEmbeddings()
