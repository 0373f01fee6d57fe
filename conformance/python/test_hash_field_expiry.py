"""Hash-field expiration (Redis 7.4 and 8.0) through redis-py's own methods, with the assertions
redis-py's test suite makes for them (tests/test_hash.py), shortened TTLs aside. HGETDEL, HGETEX
and HSETEX came with redis-py 6; with an older client their commands are sent as they are."""

import time
from datetime import datetime, timedelta

import pytest

from conftest import supported


def test_the_version_passes_redis_py_hash_field_expiry_gate(r):
    """redis-py's test suite runs its hash-field expiration tests only on servers of 7.3.240 or
    later (`skip_if_server_version_lt("7.3.240")`): stmd's announced version passes that gate."""
    version = tuple(map(int, r.info("server")["redis_version"].split(".")))
    assert version >= (7, 3, 240)


@pytest.fixture
def h(r):
    r.delete("test:hash")
    yield "test:hash"
    r.delete("test:hash")


def hgetdel(r, key, *fields):
    if hasattr(r, "hgetdel"):
        return r.hgetdel(key, *fields)
    return r.execute_command("HGETDEL", key, "FIELDS", len(fields), *fields)


def hgetex(r, key, *fields, px=None, persist=False):
    if hasattr(r, "hgetex"):
        return r.hgetex(key, *fields, px=px, persist=persist)
    option = ["PX", px] if px is not None else ["PERSIST"] if persist else []
    return r.execute_command("HGETEX", key, *option, "FIELDS", len(fields), *fields)


def hsetex(r, key, mapping, ex=None, fnx=False, keepttl=False):
    if hasattr(r, "hsetex"):
        from redis.commands.core import HashDataPersistOptions

        persist = HashDataPersistOptions.FNX if fnx else None
        return r.hsetex(key, mapping=mapping, ex=ex, keepttl=keepttl, data_persist_option=persist)
    pairs = [x for kv in mapping.items() for x in kv]
    option = (["FNX"] if fnx else []) + (["EX", ex] if ex else []) + (["KEEPTTL"] if keepttl else [])
    return r.execute_command("HSETEX", key, *option, "FIELDS", len(mapping), *pairs)


def test_hexpire_basic_and_conditions(r, h):
    r.hset(h, mapping={"field1": "value1", "field2": "value2"})
    with supported():
        assert r.hexpire(h, 1, "field1") == [1]
    time.sleep(1.1)
    assert r.hexists(h, "field1") is False
    assert r.hexists(h, "field2") is True

    r.hset(h, mapping={"field1": "value1"})
    assert r.hexpire(h, 2, "field1", xx=True) == [0]
    assert r.hexpire(h, 2, "field1", nx=True) == [1]
    assert r.hexpire(h, 1, "field1", xx=True) == [1]
    assert r.hexpire(h, 2, "field1", nx=True) == [0]
    r.hset(h, "field3", "value3")
    r.hexpire(h, timedelta(seconds=2), "field3")
    assert r.hexpire(h, 1, "field3", gt=True) == [0]
    assert r.hexpire(h, 1, "field3", lt=True) == [1]
    time.sleep(1.1)
    assert r.hexists(h, "field1") is False
    assert r.hexists(h, "field3") is False
    with pytest.raises(ValueError) as e:
        r.hexpire(h, 1, "field2", nx=True, xx=True)
    assert "Only one of" in str(e)


def test_hexpire_nonexistent_key_or_field(r, h):
    # Redis 7.4 answers -2 per field for a missing key (its release candidates answered nil).
    with supported():
        assert r.hexpire(h, 1, "field1") == [-2]
    r.hset(h, "field1", "value1")
    assert r.hexpire(h, 1, "nonexistent_field") == [-2]
    assert r.hpexpire(h, 500, "nonexistent_field") == [-2]


def test_hpexpire_and_the_absolute_forms(r, h):
    r.hset(h, mapping={"field1": "value1", "field2": "value2", "field3": "value3"})
    with supported():
        assert r.hpexpire(h, timedelta(milliseconds=300), "field1", "field2") == [1, 1]
    time.sleep(0.4)
    assert r.hexists(h, "field1") is False
    assert r.hexists(h, "field2") is False
    assert r.hexists(h, "field3") is True

    r.hset(h, mapping={"field1": "value1"})
    future = int((datetime.now() + timedelta(seconds=2)).timestamp())
    past = int((datetime.now() - timedelta(seconds=1)).timestamp())
    assert r.hexpireat(h, future, "field1", xx=True) == [0]
    assert r.hexpireat(h, future, "field1", nx=True) == [1]
    assert r.hexpireat(h, past, "field1", gt=True) == [0]
    assert r.hexpireat(h, past, "field1", lt=True) == [2]
    assert r.hexists(h, "field1") is False

    r.hset(h, mapping={"field1": "value1"})
    at = datetime.now() + timedelta(milliseconds=300)
    assert r.hpexpireat(h, at, "field1") == [1]
    time.sleep(0.4)
    assert r.hexists(h, "field1") is False
    assert r.hexists(h, "field3") is True


def test_hpersist_and_the_ttl_readers(r, h):
    r.hset(h, mapping={"field1": "value1", "field2": "value2"})
    with supported():
        r.hexpire(h, 5000, "field1")
    assert r.hpersist(h, "field1", "field2", "field3") == [1, -1, -2]

    future = int((datetime.now() + timedelta(minutes=30)).timestamp())
    r.hexpireat(h, future, "field1")
    result = r.hexpiretime(h, "field1", "field2", "field3")
    assert future - 10 < result[0] <= future
    assert result[1:] == [-1, -2]
    result = r.hpexpiretime(h, "field1", "field2", "field3")
    assert future * 1000 - 10000 < result[0] <= future * 1000
    assert result[1:] == [-1, -2]
    result = r.httl(h, "field1", "field2", "field3")
    assert 30 * 60 - 10 < result[0] <= 30 * 60
    assert result[1:] == [-1, -2]
    result = r.hpttl(h, "field1", "field2", "field3")
    assert 30 * 60000 - 10000 < result[0] <= 30 * 60000
    assert result[1:] == [-1, -2]


def test_hgetdel(r, h):
    r.hset(h, mapping={"f1": "v1", "f2": "v2", "f3": "v3"})
    with supported():
        assert hgetdel(r, h, "f1", "f2") == ["v1", "v2"]
    assert r.hgetall(h) == {"f3": "v3"}
    assert hgetdel(r, h, "f3", "nonexistent") == ["v3", None]
    assert r.exists(h) == 0, "the hash goes with its last field"


def test_hgetex(r, h):
    r.hset(h, mapping={"f1": "v1", "f2": "v2", "f3": "v3"})
    with supported():
        assert hgetex(r, h, "f1", "f2", px=300) == ["v1", "v2"]
    time.sleep(0.4)
    assert r.hexists(h, "f1") is False
    assert r.hexists(h, "f2") is False
    r.hexpire(h, 100, "f3")
    assert hgetex(r, h, "f3", persist=True) == ["v3"]
    assert r.httl(h, "f3") == [-1]


def test_hsetex(r, h):
    with supported():
        assert hsetex(r, h, {"f1": "v1", "f2": "v2"}, ex=100) == 1
    ttl = r.httl(h, "f1", "f2")
    assert all(95 < t <= 100 for t in ttl), ttl
    assert hsetex(r, h, {"f1": "x"}, fnx=True) == 0
    assert r.hget(h, "f1") == "v1"
    assert hsetex(r, h, {"f1": "v9"}, keepttl=True) == 1
    assert r.hget(h, "f1") == "v9"
    assert 95 < r.httl(h, "f1")[0] <= 100
