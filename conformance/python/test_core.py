"""Everyday Redis commands through redis-py, sync and asyncio, RESP2 and RESP3."""

import asyncio
import uuid

import pytest
import redis

from conftest import aclient, client


def uniq(prefix):
    return "%s:%s" % (prefix, uuid.uuid4().hex[:8])


def test_handshake_and_ping(r, protocol):
    assert r.ping() is True
    assert r.echo("hi") == "hi"
    hello = r.execute_command("HELLO", protocol)
    hello = hello if isinstance(hello, dict) else dict(zip(hello[0::2], hello[1::2]))
    assert hello["proto"] == protocol
    assert r.client_setname("conformance-bot") is True
    assert r.client_getname() == "conformance-bot"
    assert isinstance(r.client_id(), int)


def test_strings_and_expiry(r):
    k = uniq("str")
    assert r.set(k, "v", ex=100) is True
    assert r.get(k) == "v"
    assert 0 < r.ttl(k) <= 100
    assert r.set(k, "w", nx=True) is None
    assert r.set(k, "w", xx=True, get=True) == "v"
    assert r.incr(k + ":n") == 1
    assert r.incrby(k + ":n", 41) == 42
    assert r.incrbyfloat(k + ":f", 1.5) == 1.5
    assert r.append(k, "xyz") == 4
    assert r.getrange(k, 1, -1) == "xyz"
    assert r.mset({k + ":a": "1", k + ":b": "2"}) is True
    assert r.mget(k + ":a", k + ":b", k + ":missing") == ["1", "2", None]
    assert r.getdel(k + ":a") == "1"
    assert r.exists(k, k + ":a") == 1
    assert r.ttl(k) == -1  # SET without KEEPTTL cleared it
    assert r.expire(k, 100) is True
    assert r.expire(k, 50, gt=True) is False
    assert r.persist(k) is True
    assert r.ttl(k) == -1
    assert r.type(k) == "string"
    assert r.rename(k, k + ":renamed") is True
    assert r.delete(k + ":renamed", k + ":n", k + ":f", k + ":b") == 4


def test_binary_values(protocol):
    r = client(protocol, decode_responses=False)
    k = uniq("bin").encode() + b"\x00\xff"
    v = bytes(range(256)) * 4
    assert r.set(k, v)
    assert r.get(k) == v
    assert r.strlen(k) == 1024
    assert r.setrange(k, 2000, b"\r\n") == 2002
    assert r.get(k)[1024:1030] == b"\x00" * 6
    r.close()


def test_errors_keep_the_connection(r):
    k = uniq("err")
    r.set(k, "abc")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.incr(k)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("GET")
    with pytest.raises(redis.ResponseError, match="unknown command"):
        r.execute_command("NOSUCHCOMMAND", "x")
    assert r.get(k) == "abc"


def test_pipeline_without_transaction(r):
    prefix = uniq("pipe")
    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.set("%s:%d" % (prefix, i), i)
    for i in range(200):
        pipe.incr("%s:%d" % (prefix, i))
    pipe.get("%s:%d" % (prefix, 199))
    out = pipe.execute()
    assert out[:200] == [True] * 200
    assert out[200:400] == list(range(1, 201))
    assert out[400] == "200"


def test_pipeline_errors_are_returned_in_place(r):
    k = uniq("pipe-err")
    pipe = r.pipeline(transaction=False)
    pipe.set(k, "x").incr(k).get(k)
    out = pipe.execute(raise_on_error=False)
    assert out[0] is True and isinstance(out[1], redis.ResponseError) and out[2] == "x"


def test_transaction_pipeline(r):
    k = uniq("tx")
    pipe = r.pipeline(transaction=True)
    pipe.set(k, 1).incr(k).incrby(k, 10).get(k)
    assert pipe.execute() == [True, 2, 12, "12"]


def test_transaction_with_runtime_error(r):
    k = uniq("tx-err")
    pipe = r.pipeline(transaction=True)
    pipe.set(k, "x").incr(k).set(k + ":after", 1)
    with pytest.raises(redis.ResponseError):
        pipe.execute()
    assert r.get(k + ":after") == "1"  # the other commands of the transaction ran


def test_watch_conflict_raises_watch_error(r, other):
    k = uniq("watch")
    r.set(k, 1)
    with r.pipeline() as pipe:
        pipe.watch(k)
        current = int(pipe.get(k))
        other.set(k, 100)  # a conflicting write from another bot shard
        pipe.multi()
        pipe.set(k, current + 1)
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert r.get(k) == "100"


def test_watch_without_conflict_and_transaction_helper(r):
    k = uniq("watch-ok")
    r.set(k, 5)

    def double(pipe):
        v = int(pipe.get(k))
        pipe.multi()
        pipe.set(k, v * 2)

    assert r.transaction(double, k) == [True]
    assert r.get(k) == "10"


def test_scan_iter_sees_every_key(r):
    prefix = uniq("scan")
    keys = {"%s:%d" % (prefix, i) for i in range(500)}
    r.mset({k: "1" for k in keys})
    assert set(r.scan_iter(match=prefix + ":*", count=37)) == keys
    assert set(r.scan_iter(match=prefix + ":*", _type="string")) == keys
    assert set(r.keys(prefix + ":1*")) == {k for k in keys if k.startswith(prefix + ":1")}
    assert r.delete(*keys) == 500


def test_password_via_hello_auth(protocol):
    admin = client(protocol)
    admin.config_set("requirepass", "s3cret")
    try:
        with pytest.raises(redis.AuthenticationError):
            client(protocol).ping()
        authed = client(protocol, password="s3cret")
        assert authed.ping() is True
        authed.close()
        authed = client(protocol, username="default", password="s3cret")
        assert authed.ping() is True
        authed.close()
        with pytest.raises(redis.AuthenticationError):
            client(protocol, password="wrong").ping()
    finally:
        admin.config_set("requirepass", "")
        admin.close()


def test_info_and_config(r):
    info = r.info("server")
    assert "redis_version" in info
    assert r.config_get("maxclients")["maxclients"].isdigit()
    assert r.dbsize() >= 0


def test_async_everyday_commands(protocol):
    async def main():
        r = aclient(protocol)
        k = uniq("async")
        assert await r.set(k, "v", px=100000)
        assert await r.get(k) == "v"
        async with r.pipeline(transaction=True) as pipe:
            pipe.incr(k + ":n").incr(k + ":n").get(k + ":n")
            assert await pipe.execute() == [1, 2, "2"]
        async with r.pipeline(transaction=False) as pipe:
            for i in range(50):
                pipe.set("%s:%d" % (k, i), i)
            assert await pipe.execute() == [True] * 50
        # many concurrent requests on one pool
        got = await asyncio.gather(*(r.get("%s:%d" % (k, i)) for i in range(50)))
        assert got == [str(i) for i in range(50)]
        await r.aclose()

    asyncio.run(main())


def test_async_watch_conflict(protocol):
    async def main():
        r = aclient(protocol)
        other = aclient(protocol)
        k = uniq("async-watch")
        await r.set(k, 1)
        async with r.pipeline() as pipe:
            await pipe.watch(k)
            await other.set(k, 2)
            pipe.multi()
            pipe.incr(k)
            with pytest.raises(redis.WatchError):
                await pipe.execute()
        assert await r.get(k) == "2"
        await r.aclose()
        await other.aclose()

    asyncio.run(main())


def test_database_index_in_the_url(protocol):
    """A bot configured with `redis://host:port/2` works in database 2 (redis-py sends SELECT after
    HELLO), in both protocols; database 0 does not see its keys."""
    from conftest import HOST, PORT

    key = "db2:" + uuid.uuid4().hex
    two = redis.Redis.from_url(
        "redis://%s:%d/2" % (HOST, PORT), protocol=protocol, decode_responses=True, socket_timeout=5
    )
    zero = client(protocol)
    try:
        assert two.set(key, "v")
        assert two.get(key) == "v"
        # redis-py parses CLIENT INFO into a dict of fields.
        assert int(two.execute_command("CLIENT INFO")["db"]) == 2
        assert zero.exists(key) == 0
        assert two.move(key, 0)
        assert zero.get(key) == "v"
    finally:
        zero.delete(key)
        two.close()
        zero.close()
