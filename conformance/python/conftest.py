import os
import re
from contextlib import contextmanager

import pytest
import redis

HOST = os.environ.get("STMD_HOST", "127.0.0.1")
PORT = int(os.environ.get("STMD_PORT", "6379"))

UNKNOWN = re.compile(r"^(ERR )?unknown command")


@contextmanager
def supported():
    """A command stmd does not know yet (`ERR unknown command`) skips the test as unsupported."""
    try:
        yield
    except redis.ResponseError as e:
        if UNKNOWN.match(str(e)):
            pytest.skip("unsupported by stmd: %s" % str(e).split(",")[0])
        raise


def client(protocol=2, **kw):
    kw.setdefault("decode_responses", True)
    return redis.Redis(host=HOST, port=PORT, protocol=protocol, socket_timeout=5, **kw)


def aclient(protocol=2, **kw):
    import redis.asyncio as aredis

    kw.setdefault("decode_responses", True)
    return aredis.Redis(host=HOST, port=PORT, protocol=protocol, socket_timeout=5, **kw)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request):
    return request.param


@pytest.fixture
def r(protocol):
    c = client(protocol)
    yield c
    c.close()


@pytest.fixture
def other(protocol):
    c = client(protocol)
    yield c
    c.close()


@pytest.fixture(autouse=True, scope="session")
def flushed():
    c = client()
    c.flushall()
    c.close()
