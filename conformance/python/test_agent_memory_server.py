"""agent-memory-server's working-memory API against the server under test, in process (FastAPI's
app through Starlette's TestClient, lifespan included: it checks its index with FT.INFO and creates
it with FT.CREATE at start-up): PUT a session's messages and data, GET them back, list the
namespace's sessions (FT.SEARCH over the JSON documents), a second session, DELETE, and a missing
session's 404.

It runs in a venv of its own (conformance/.cache/venv-ams, `conformance/venv ams`, from
requirements-ams.txt, which says why) and needs no network and no model: long-term memory,
extraction, topics and entities are off; the token counter's encoding (tiktoken's cl100k_base,
which tiktoken would download) comes from the copy LiteLLM ships, and LiteLLM reads its bundled
model list rather than fetching it."""

import os
import sys

from conftest import HOST, PORT

os.environ.update(
    {
        "REDIS_URL": "redis://%s:%d" % (HOST, PORT),
        "LONG_TERM_MEMORY": "false",
        "USE_DOCKET": "false",
        "DISABLE_AUTH": "true",
        "ENABLE_DISCRETE_MEMORY_EXTRACTION": "false",
        "ENABLE_TOPIC_EXTRACTION": "false",
        "ENABLE_NER": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        "TIKTOKEN_CACHE_DIR": os.path.join(
            sys.prefix, "lib", "python%d.%d" % sys.version_info[:2], "site-packages", "litellm",
            "litellm_core_utils", "tokenizers"),
    }
)

import pytest  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from conftest import client  # noqa: E402


@pytest.fixture
def app_client():
    c = client()
    c.flushall()
    c.close()
    # Imported here: its settings read the environment above when the module loads.
    from agent_memory_server.main import app

    with TestClient(app) as http:
        yield http


def message(role, content, second):
    return {"role": role, "content": content, "created_at": "2026-01-01T00:00:%02dZ" % second}


def test_working_memory_put_get_list_delete(app_client):
    ns = {"namespace": "flows"}
    body = {
        "messages": [message("user", "my name is Ada", 0), message("assistant", "hello Ada", 1)],
        "memories": [],
        "data": {"mood": "curious"},
        "namespace": "flows",
        "user_id": "u1",
    }
    r = app_client.put("/v1/working-memory/s1", json=body, params=ns)
    assert r.status_code == 200, r.text
    assert [m["content"] for m in r.json()["messages"]] == ["my name is Ada", "hello Ada"]

    r = app_client.get("/v1/working-memory/s1", params=dict(ns, user_id="u1"))
    assert r.status_code == 200, r.text
    got = r.json()
    assert [(m["role"], m["content"]) for m in got["messages"]] == [
        ("user", "my name is Ada"), ("assistant", "hello Ada")]
    assert got["data"] == {"mood": "curious"}
    assert got["session_id"] == "s1" and got["namespace"] == "flows" and got["user_id"] == "u1"

    # Replacing the session's memory keeps one session; a second session is listed beside it.
    body["messages"].append(message("user", "remember I like tea", 2))
    assert app_client.put("/v1/working-memory/s1", json=body, params=ns).status_code == 200
    r = app_client.get("/v1/working-memory/s1", params=dict(ns, user_id="u1"))
    assert len(r.json()["messages"]) == 3
    other = dict(body, messages=[message("user", "hi", 0)], data={})
    assert app_client.put("/v1/working-memory/s2", json=other, params=ns).status_code == 200
    r = app_client.get("/v1/working-memory/", params=ns)
    assert r.status_code == 200, r.text
    assert sorted(r.json()["sessions"]) == ["s1", "s2"] and r.json()["total"] == 2

    r = app_client.delete("/v1/working-memory/s1", params=dict(ns, user_id="u1"))
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    r = app_client.get("/v1/working-memory/s1", params=dict(ns, user_id="u1"))
    assert r.status_code == 404
    r = app_client.get("/v1/working-memory/", params=ns)
    assert r.json()["sessions"] == ["s2"]
