"""ACL through redis-py: a named user logs in (AUTH user pass, HELLO 3 AUTH), its key and command
rules hold, and the admin API (acl_setuser/acl_getuser/acl_deluser) reads stmd's replies."""

import uuid

import pytest
import redis

from conftest import client


@pytest.fixture
def bot(protocol):
    admin = client()
    name = "bot-%s" % uuid.uuid4().hex[:8]
    assert admin.acl_setuser(
        name,
        enabled=True,
        passwords=["+botpw"],
        keys=["shortterm:*", "ratelimit:*"],
        commands=["-@all", "+@stm", "+get", "+set", "+incr", "+incrby", "+ping", "+acl|whoami"],
    )
    c = client(protocol, username=name, password="botpw")
    yield name, c
    c.close()
    admin.acl_deluser(name)
    admin.close()


def test_named_user_logs_in_and_is_limited(bot):
    name, c = bot
    assert c.acl_whoami() == name
    assert c.ping() is True
    assert c.incr("ratelimit:%s" % name) == 1
    keys = c.execute_command(
        "STM.CAPTURE", "USER", "u1", "CHANNEL", "c1", "SERVER", "DM",
        "MSG", "user", "-", "hi", "REPLY", "-", "-", "-", "hello",
    )
    assert keys == ["shortterm:user:u1:c1"]
    with pytest.raises(redis.exceptions.NoPermissionError, match="no permissions to run the 'flushall' command"):
        c.flushall()
    with pytest.raises(redis.exceptions.NoPermissionError, match="No permissions to access a key"):
        c.get("other:1")


def test_getuser_and_wrong_password(bot):
    name, _ = bot
    admin = client()
    info = admin.acl_getuser(name)
    assert "on" in info["flags"]
    assert "~shortterm:*" in info["keys"]
    admin.close()
    with pytest.raises(redis.exceptions.AuthenticationError):
        client(username=name, password="wrong").ping()
