"""redis-py's client-side cache (`cache_config`, RESP3) against stmd's CLIENT TRACKING: cached
reads, then invalidation by another client's write, by expiry and by FLUSHALL."""

import time

from conftest import client
from redis.cache import CacheConfig
from redis.connection import CacheProxyConnection


def test_the_cache_gate_accepts_stmd():
    """redis-py enables its cache only for servers announcing Redis 7.4 or later: stmd's version
    passes that gate as it is."""
    version = client().info("server")["redis_version"]
    assert tuple(map(int, version.split("."))) >= tuple(map(int, CacheProxyConnection.MIN_ALLOWED_VERSION.split(".")))


def test_client_side_cache_is_invalidated():
    cached = client(3, cache_config=CacheConfig())
    writer = client()
    try:
        writer.set("csc:k", "v1")
        assert cached.get("csc:k") == "v1"
        assert cached.get("csc:k") == "v1"
        cache = cached.get_cache()
        assert cache.size == 1  # the value is held client-side
        writer.set("csc:k", "v2")
        time.sleep(0.1)  # the invalidate push arrives out of band
        assert cached.get("csc:k") == "v2"

        writer.set("csc:short", "x", px=100)
        assert cached.get("csc:short") == "x"
        time.sleep(1.5)  # the active expiry cycle (one pass a second) removes it and invalidates
        assert cached.get("csc:short") is None

        assert cached.get("csc:k") == "v2"
        writer.flushall()
        time.sleep(0.1)
        assert cached.get("csc:k") is None
    finally:
        cached.close()
        writer.close()


def test_tracking_info_shows_the_cache_connection():
    cached = client(3, cache_config=CacheConfig())
    try:
        cached.get("csc:any")
        pool_conn = cached.connection_pool.get_connection("_")
        try:
            pool_conn.send_command("CLIENT", "TRACKINGINFO")
            info = pool_conn.read_response()
        finally:
            cached.connection_pool.release(pool_conn)
        flags = info.get("flags") or info.get(b"flags")
        assert "on" in {f if isinstance(f, str) else f.decode() for f in flags}
    finally:
        cached.close()
