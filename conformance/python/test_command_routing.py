"""redis-py's cluster routing table, built from stmd's COMMAND as RedisCluster builds it from a
real Redis: the keys it finds for a request decide the slot a cluster client sends it to. Commands
with `movablekeys` (key counts, keywords such as the STM commands' CHANNEL) are resolved with
COMMAND GETKEYS, the others from first/last/step and the subcommands' entries."""

import pytest
from redis._parsers import CommandsParser

from conftest import client


@pytest.fixture
def parser_and_client(protocol):
    c = client(protocol)
    yield CommandsParser(c), c
    c.close()


CASES = [
    (("GET", "k"), ["k"]),
    (("MSET", "a", "1", "b", "2"), ["a", "b"]),
    (("BLPOP", "a", "b", "0"), ["a", "b"]),
    (("SUNIONSTORE", "d", "a", "b"), ["d", "a", "b"]),
    (("SINTERCARD", "2", "a", "b", "LIMIT", "1"), ["a", "b"]),
    (("OBJECT", "IDLETIME", "k"), ["k"]),
    (("MEMORY", "USAGE", "k"), ["k"]),
    (("STM.GET", "shortterm:user:u:c"), ["shortterm:user:u:c"]),
    (("STM.TICK", "shortterm:user:u:c", "BY", "2"), ["shortterm:user:u:c"]),
    # The STM commands that build their keys from USER/SERVER/CHANNEL route by the channel: in a
    # cluster every key of a channel carries it as its hash tag.
    (("STM.CAPTURE", "USER", "u1", "CHANNEL", "c1", "SERVER", "s1", "MSG", "user", "-", "hi"), ["c1"]),
    (("STM.SUMMARY", "USER", "u1", "CHANNEL", "c2", "SERVER", "DM", "TEXT", "sum"), ["c2"]),
    (("STM.CONTEXT", "USER", "u1", "SERVER", "s1", "CHANNEL", "c3"), ["c3"]),
    (("STM.FORGET", "CHANNEL", "c4"), ["c4"]),
    (("STM.FORGET", "KEY", "shortterm:user:u:c"), ["shortterm:user:u:c"]),
]


@pytest.mark.parametrize("request_args,keys", CASES, ids=[" ".join(c[0][:2]) for c in CASES])
def test_cluster_parser_finds_the_keys(parser_and_client, request_args, keys):
    parser, c = parser_and_client
    assert parser.get_keys(c, *request_args) == keys


def test_keyless_commands_have_no_keys(parser_and_client):
    parser, c = parser_and_client
    assert parser.get_keys(c, "PING", "x") is None
    assert parser.get_keys(c, "DBSIZE", "x") is None
    # An owner-wide STM command names no key: a cluster client cannot route it by a key.
    assert parser.get_keys(c, "STM.RECENT", "USER", "u1") is None
