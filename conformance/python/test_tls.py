"""redis-py over TLS (stmd's --tls-port, certificates made by conformance/run): sync and asyncio,
RESP2 and RESP3, with a client certificate; without one the server refuses the handshake."""

import asyncio
import os
import uuid

import pytest
import redis

from conftest import HOST

TLS_PORT = os.environ.get("STMD_TLS_PORT")
TLS_DIR = os.environ.get("STMD_TLS_DIR", "")

pytestmark = pytest.mark.skipif(not TLS_PORT, reason="no TLS port (run through conformance/run)")


def tls_options(client_cert=True):
    options = {"ssl": True, "ssl_ca_certs": os.path.join(TLS_DIR, "ca.crt")}
    if client_cert:
        options["ssl_certfile"] = os.path.join(TLS_DIR, "client.crt")
        options["ssl_keyfile"] = os.path.join(TLS_DIR, "client.key")
    return options


def test_commands_over_tls(protocol):
    c = redis.Redis(host=HOST, port=int(TLS_PORT), protocol=protocol, decode_responses=True,
                    socket_timeout=5, **tls_options())
    k = "tls:%s" % uuid.uuid4().hex[:8]
    assert c.ping() is True
    assert c.set(k, "secret", ex=100) is True
    assert c.get(k) == "secret"
    big = "x" * (2 * 1024 * 1024)
    assert c.set(k + ":big", big) is True
    assert c.get(k + ":big") == big
    pipe = c.pipeline()
    for i in range(100):
        pipe.incr(k + ":n")
    assert pipe.execute()[-1] == 100
    c.close()


def test_asyncio_over_tls():
    import redis.asyncio as aredis

    async def run():
        c = aredis.Redis(host=HOST, port=int(TLS_PORT), decode_responses=True, socket_timeout=5,
                         **tls_options())
        k = "tls:async:%s" % uuid.uuid4().hex[:8]
        assert await c.set(k, "v") is True
        assert await c.get(k) == "v"
        await c.aclose()

    asyncio.run(run())


def test_a_client_without_certificate_is_refused():
    c = redis.Redis(host=HOST, port=int(TLS_PORT), socket_timeout=5, **tls_options(client_cert=False))
    with pytest.raises(redis.ConnectionError):
        c.ping()
    c.close()
