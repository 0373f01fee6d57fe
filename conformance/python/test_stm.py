"""The bot's short-term memory flow through redis-py, as in docs/examples/bot_memory.py:
STM.CAPTURE → STM.GET (RESP3 map / RESP2 flat list / JSON) → STM.RECENT → STM.SUMMARY → STM.FORGET."""

import asyncio
import json
import time
import uuid

import pytest
import redis

from conftest import aclient


def ids():
    u = uuid.uuid4().int
    return str(u % 10**18), str((u >> 64) % 10**18), str((u >> 32) % 10**18)


def as_dict(v):
    """STM.GET's reply as a dict: RESP3 gives a map, RESP2 a flat list of field/value pairs."""
    if isinstance(v, list):
        assert len(v) % 2 == 0, v
        v = dict(zip(v[0::2], v[1::2]))
    if "messages" in v:
        v["messages"] = [as_dict(m) for m in v["messages"]]
        v["categories"] = as_dict(v["categories"]) if v["categories"] else {}
    return v


def after_turn(r, user, channel, server, history, replies, privacy="MINIMAL", stop=False):
    """The bot example's capture helper."""
    args = ["STM.CAPTURE", "USER", user, "CHANNEL", channel, "SERVER", server or "DM", "PRIVACY", privacy]
    if stop:
        args.append("STOP")
    for m in history:
        args += ["MSG", m["role"], m.get("speaker") or "-", m["content"]]
    for rep in replies:
        args += ["REPLY", rep["persona"] or "-", rep.get("lineage") or "-", rep["speaker"], rep["text"]]
    return r.execute_command(*args)


HISTORY = [
    {"role": "user", "speaker": "Alice", "content": "hi there <:wave:123456789012345678>"},
    {"role": "model", "speaker": "Nova", "content": "Hey! `<:code:123456789012345678>` stays"},
    {"role": "user", "speaker": "Alice", "content": "how are you?  \n\n\n  [System: Reactions on this message: 👍]"},
]
REPLIES = [{"persona": "3", "lineage": "12", "speaker": "Nova", "text": "Fine, thanks! [System: Message metadata: x]"}]


def test_bot_flow(r, protocol):
    user, channel, server = ids()
    keys = after_turn(r, user, channel, server, HISTORY, REPLIES)
    user_key = "shortterm:user:%s:%s:3" % (user, channel)
    server_key = "shortterm:server:%s:%s:3" % (server, channel)
    assert keys == [user_key, server_key]

    raw = r.execute_command("STM.GET", server_key)
    if protocol == 3:
        assert isinstance(raw, dict)
    else:
        assert isinstance(raw, list)
    entry = as_dict(raw)
    assert entry["key"] == server_key and entry["scope"] == "server"
    assert entry["server"] == server and entry["channel"] == channel and entry["user"] is None
    assert entry["persona"] == 3 and entry["lineage"] == 12
    contents = [m["content"] for m in entry["messages"]]
    assert contents == [
        "hi there :wave:",
        "Hey! `<:code:123456789012345678>` stays",
        "how are you?",
        "Fine, thanks!",
    ]
    assert [m["role"] for m in entry["messages"]] == ["user", "model", "user", "model"]
    assert entry["summary"] is None
    assert entry["turns_since_refresh"] == 1  # the live scope in a server is the server entry
    assert 0 < entry["ttl"] <= 43200 * 1000
    assert r.type(server_key) == "stm"
    assert 43000 < r.ttl(server_key) <= 43200

    as_json = json.loads(r.execute_command("STM.GET", server_key, "FORMAT", "JSON"))
    assert as_json["messages"][0]["content"] == "hi there :wave:"
    assert as_json["user"] is None and as_json["persona"] == 3

    # the user's other conversations: a second channel, then RECENT excluding the current one
    _, channel2, _ = ids()
    time.sleep(0.005)  # "newest write first" is by millisecond timestamp; make the order certain
    after_turn(r, user, channel2, server, HISTORY[:1], REPLIES)
    recent = json.loads(r.execute_command("STM.RECENT", "USER", user, "EXCLUDE", channel2, "FORMAT", "JSON"))
    assert [e["key"] for e in recent] == [user_key]
    recent = r.execute_command("STM.RECENT", "USER", user, "LIMIT", 5)
    assert [as_dict(e)["channel"] for e in recent] == [channel2, channel]

    assert r.execute_command("STM.TICK", server_key, "BY", 7) == 8
    assert r.execute_command("STM.TICK", "shortterm:server:%s:%s:3" % (server, "999"),) is None

    written = r.execute_command(
        "STM.SUMMARY", "USER", user, "CHANNEL", channel, "SERVER", server, "PERSONA", "3", "TEXT", "Alice greeted Nova."
    )
    assert written == [user_key, server_key]
    entry = as_dict(r.execute_command("STM.GET", server_key))
    assert entry["summary"] == "Alice greeted Nova."
    assert entry["turns_since_refresh"] == 0 and entry["last_refreshed_turn"] == 1
    assert r.ttl(server_key) > 43200  # upgraded to stm-summary-ttl

    r.execute_command("STM.CATEGORIES", "USER", user, "CHANNEL", channel, "SERVER", server, "PERSONA", "3",
                      "SET", "mood", "cheerful", "topic", "greetings")
    entry = as_dict(r.execute_command("STM.GET", user_key))
    assert entry["categories"] == {"mood": "cheerful", "topic": "greetings"}

    assert r.execute_command("STM.FORGET", "USER", user) == 2  # both channels' user entries
    assert r.execute_command("STM.GET", user_key) is None
    assert r.execute_command("STM.FORGET", "CHANNEL", channel) == 1
    assert r.execute_command("STM.FORGET", "CHANNEL", channel2) == 1
    assert r.exists(server_key) == 0


def test_skips_and_dm(r):
    user, channel, _ = ids()
    assert after_turn(r, user, channel, None, HISTORY, REPLIES, stop=True) == []
    assert after_turn(r, user, channel, None, HISTORY, REPLIES, privacy="FULL") == []
    assert after_turn(r, user, channel, None, [], REPLIES) == []
    assert after_turn(r, user, channel, None, HISTORY, []) == []
    keys = after_turn(r, user, channel, None, HISTORY, REPLIES + [{"persona": None, "speaker": "Bot", "text": "and me"}])
    # a DM has no server scope; one entry per persona (no suffix for "no persona")
    assert keys == ["shortterm:user:%s:%s:3" % (user, channel), "shortterm:user:%s:%s" % (user, channel)]
    entry = as_dict(r.execute_command("STM.GET", keys[1]))
    assert entry["server"] is None and entry["persona"] is None
    assert entry["turns_since_refresh"] == 1  # in a DM the live scope is the user entry
    info = r.info("stm")
    assert info["stm_skipped_stop"] >= 1 and info["stm_skipped_privacy"] >= 1
    assert r.execute_command("STM.FORGET", "USER", user) == 2


def test_stm_keys_with_standard_commands(r):
    user, channel, server = ids()
    user_key, server_key = after_turn(r, user, channel, server, HISTORY, REPLIES)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.get(server_key)
    assert server_key in set(r.scan_iter(match="shortterm:server:%s:*" % server, _type="stm"))
    assert r.expire(server_key, 60) is True
    assert r.execute_command("STM.GET", server_key, "FORMAT", "JSON") is not None
    assert r.persist(server_key) is True
    assert json.loads(r.execute_command("STM.GET", server_key, "FORMAT", "JSON"))["ttl"] == -1
    assert r.delete(user_key, server_key) == 2


def test_stm_errors_keep_the_connection(r):
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("STM.CAPTURE", "USER", "1")
    with pytest.raises(redis.ResponseError):
        r.execute_command("STM.CAPTURE", "USER", "a b", "CHANNEL", "1", "SERVER", "2", "MSG", "user", "-", "x")
    with pytest.raises(redis.ResponseError, match="invalid STM key"):
        r.execute_command("STM.TICK", "not-an-stm-key")
    with pytest.raises(redis.ResponseError):
        r.execute_command("STM.TICK", "shortterm:user:1:2", "BY", "0")
    assert r.ping() is True


def test_stm_in_pipeline_and_transaction(r):
    user, channel, server = ids()
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("STM.CAPTURE", "USER", user, "CHANNEL", channel, "SERVER", server,
                         "MSG", "user", "Bob", "yo", "REPLY", "-", "-", "Bot", "hey")
    pipe.execute_command("STM.TICK", "shortterm:server:%s:%s" % (server, channel))
    pipe.execute_command("STM.GET", "shortterm:server:%s:%s" % (server, channel), "FORMAT", "JSON")
    keys, ticks, entry = pipe.execute()
    assert keys == ["shortterm:user:%s:%s" % (user, channel), "shortterm:server:%s:%s" % (server, channel)]
    assert ticks == 2
    assert json.loads(entry)["turns_since_refresh"] == 2
    assert r.execute_command("STM.FORGET", "CHANNEL", channel) == 2


def test_async_bot_flow(protocol):
    async def main():
        r = aclient(protocol)
        user, channel, server = ids()
        keys = await r.execute_command(
            "STM.CAPTURE", "USER", user, "CHANNEL", channel, "SERVER", server,
            "MSG", "user", "Alice", "hello", "REPLY", "5", "-", "Nova", "hi")
        assert keys == ["shortterm:user:%s:%s:5" % (user, channel), "shortterm:server:%s:%s:5" % (server, channel)]
        entry = as_dict(await r.execute_command("STM.GET", keys[1]))
        assert [m["content"] for m in entry["messages"]] == ["hello", "hi"]
        # many shards capturing at once into the same channel
        await asyncio.gather(*(
            r.execute_command("STM.CAPTURE", "USER", "u%d" % i, "CHANNEL", channel, "SERVER", server,
                              "MSG", "user", "-", "turn %d" % i, "REPLY", "5", "-", "Nova", "ok")
            for i in range(20)))
        entry = as_dict(await r.execute_command("STM.GET", keys[1]))
        assert entry["turns_since_refresh"] == 21
        recent = await r.execute_command("STM.RECENT", "SERVER", server, "LIMIT", 1)
        assert len(recent) == 1
        cleared = await r.execute_command("STM.SUMMARY", "USER", user, "CHANNEL", channel, "SERVER", server,
                                          "PERSONA", "5", "TEXT", "")
        assert isinstance(cleared, list)
        assert await r.execute_command("STM.FORGET", "CHANNEL", channel) == 22
        await r.aclose()

    asyncio.run(main())
