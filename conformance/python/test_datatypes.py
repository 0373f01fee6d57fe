"""Data types, pub/sub and blocking pops through redis-py. Until stmd supports a command these tests
are skipped as unsupported (stmd answers `ERR unknown command`)."""

import threading
import time
import uuid

import pytest

from conftest import client, supported


def uniq(prefix):
    return "%s:%s" % (prefix, uuid.uuid4().hex[:8])


def test_hashes(r, protocol):
    k = uniq("hash")
    with supported():
        assert r.hset(k, mapping={"a": "1", "b": "2"}) == 2
    assert r.hget(k, "a") == "1"
    assert r.hgetall(k) == {"a": "1", "b": "2"}
    assert r.hincrby(k, "a", 5) == 6
    assert sorted(r.hkeys(k)) == ["a", "b"]
    assert r.hdel(k, "a", "zz") == 1
    assert r.hlen(k) == 1


def test_lists(r):
    k = uniq("list")
    with supported():
        assert r.rpush(k, "a", "b", "c") == 3
    assert r.lpush(k, "z") == 4
    assert r.lrange(k, 0, -1) == ["z", "a", "b", "c"]
    assert r.lpop(k) == "z"
    assert r.rpop(k, 2) == ["c", "b"]
    assert r.llen(k) == 1


def test_sets(r):
    k = uniq("set")
    with supported():
        assert r.sadd(k, "a", "b", "c", "a") == 3
    assert r.smembers(k) == {"a", "b", "c"}
    assert r.sismember(k, "a") in (True, 1)
    assert r.srem(k, "a") == 1
    assert r.scard(k) == 2


def test_sorted_sets(r, protocol):
    k = uniq("zset")
    with supported():
        assert r.zadd(k, {"a": 1, "b": 2.5, "c": 3}) == 3
    assert r.zrange(k, 0, -1) == ["a", "b", "c"]
    assert [tuple(x) for x in r.zrange(k, 0, -1, withscores=True)] == [("a", 1.0), ("b", 2.5), ("c", 3.0)]
    assert r.zscore(k, "b") == 2.5
    assert r.zincrby(k, 1, "a") == 2.0
    assert r.zrangebyscore(k, 2, 3) == ["a", "b", "c"]
    assert r.zrank(k, "c") == 2


def test_pubsub(r, protocol):
    ch = uniq("chan")
    sub = client(protocol)
    p = sub.pubsub()
    with supported():
        p.subscribe(ch)
        msg = p.get_message(timeout=2)
    assert msg["type"] == "subscribe" and msg["channel"] == ch
    with supported():
        assert r.publish(ch, "hello") == 1
    msg = p.get_message(timeout=2)
    assert msg["type"] == "message" and msg["data"] == "hello"
    p.psubscribe(ch[:6] + "*")
    assert p.get_message(timeout=2)["type"] == "psubscribe"
    r.publish(ch, "again")
    got = {(m["type"], m["data"]) for m in (p.get_message(timeout=2), p.get_message(timeout=2))}
    assert got == {("message", "again"), ("pmessage", "again")}
    p.close()
    sub.close()


def test_blocking_pop(r, other):
    k = uniq("queue")
    with supported():
        assert r.blpop([k], timeout=0.1) is None

    def push():
        time.sleep(0.2)
        other.rpush(k, "job")

    t = threading.Thread(target=push)
    t.start()
    got = r.blpop([k], timeout=5)
    assert list(got) == [k, "job"]
    t.join()
