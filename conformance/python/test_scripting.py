"""redis-py's Lua-based helpers against stmd: Lock (acquire, extend, release, a blocked contender)
and register_script (EVALSHA with the NOSCRIPT fallback to EVAL)."""
import threading
import time

import pytest
import redis
from redis.exceptions import LockError, LockNotOwnedError

from conftest import client


@pytest.fixture
def r(protocol):
    c = client(protocol)
    c.delete("lock:refresh:42", "rs:counter")
    yield c
    c.close()


def test_lock_acquire_extend_release(r):
    lock = r.lock("lock:refresh:42", timeout=5)
    assert lock.acquire(blocking=False)
    assert r.get("lock:refresh:42") is not None
    assert lock.extend(10)
    assert r.pttl("lock:refresh:42") > 5000
    assert lock.reacquire()
    lock.release()
    assert r.get("lock:refresh:42") is None
    with pytest.raises(LockError):
        lock.release()


def test_lock_blocked_contender(r, protocol):
    holder = r.lock("lock:refresh:42", timeout=5)
    assert holder.acquire(blocking=False)
    other = client(protocol).lock("lock:refresh:42", timeout=5, blocking_timeout=0.2)
    assert not other.acquire()
    got = {}

    def contend():
        c = client(protocol).lock("lock:refresh:42", timeout=5, blocking_timeout=5, sleep=0.02)
        got["acquired"] = c.acquire()
        if got["acquired"]:
            c.release()

    t = threading.Thread(target=contend)
    t.start()
    time.sleep(0.2)
    holder.release()
    t.join(10)
    assert got.get("acquired") is True


def test_lock_not_owned(r):
    lock = r.lock("lock:refresh:42", timeout=5)
    assert lock.acquire(blocking=False)
    r.set("lock:refresh:42", "someone else")
    with pytest.raises(LockNotOwnedError):
        lock.release()


def test_register_script(r):
    incr_by = r.register_script(
        "local v = redis.call('incrby', KEYS[1], ARGV[1]) return {v, redis.call('get', KEYS[1])}"
    )
    r.script_flush()
    assert incr_by(keys=["rs:counter"], args=[5]) == [5, "5"]
    assert incr_by(keys=["rs:counter"], args=[2]) == [7, "7"]
    assert r.script_exists(incr_by.sha) == [True]
    # redis-py maps the NOSCRIPT code to its own exception (the text loses the code).
    with pytest.raises(redis.exceptions.NoScriptError, match="No matching script"):
        r.evalsha("ffffffffffffffffffffffffffffffffffffffff", 0)
