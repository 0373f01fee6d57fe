#!/usr/bin/env python3
"""Differential check of cluster mode's replies: a node of a 3-node stmd cluster against a node of a
real 3-node redis-server cluster, in RESP2 and RESP3. Node ids, addresses, epochs and times differ
between the two, so what is compared is the reply *shape* (types, map keys, field counts, line
formats) and the exact error texts with the slot and address masked.

    python3 conformance/diff/cluster_shapes.py --stmd 127.0.0.2:7000 --redis 127.0.0.1:7001

Both clusters must have all 16384 slots over three primaries, with the node given owning slot 0
(as `stmd cluster create` / `redis-cli --cluster create` lay them out). tests/integration/cluster_mode.rs runs
it. Exits non-zero listing every difference.
"""

import argparse
import re
import sys

from resp import Conn

NODE_LINE = re.compile(
    rb"^[0-9a-f]{40} [0-9.]+:\d+@\d+ (myself,)?master - \d+ \d+ \d+ connected( \d+(-\d+)?)*$"
)
MOVED = re.compile(rb"^-MOVED \d+ [0-9.]+:\d+\r\n$")


def shape(reply):
    """Types and map keys, not values."""
    if reply.kind in "*~>" and reply.value is not None:
        return (reply.kind, [shape(r) for r in reply.value])
    if reply.kind == "%":
        pairs = zip(reply.value[0::2], reply.value[1::2])
        return ("%", [(k.text(), shape(v)) for k, v in pairs])
    return reply.kind


def first_of(reply):
    """The first element of an array reply (shards and slot ranges come in each server's order)."""
    return shape(reply.value[0]) if reply.kind == "*" and reply.value else shape(reply)


def verbatim(reply):
    """The text of a bulk (RESP2) or verbatim (RESP3, `txt:` format prefix) reply."""
    return reply.value[4:] if reply.kind == "=" else reply.value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stmd", required=True)
    parser.add_argument("--redis", required=True)
    opts = parser.parse_args()
    differences = []

    def conn(addr, resp3):
        host, port = addr.rsplit(":", 1)
        c = Conn(host, int(port))
        if resp3:
            assert not c.call([b"HELLO", b"3"]).is_error()
        return c

    for resp3 in (False, True):
        proto = "RESP3" if resp3 else "RESP2"
        a, b = conn(opts.stmd, resp3), conn(opts.redis, resp3)

        def compare(name, args, view):
            x, y = a.call(args), b.call(args)
            vx, vy = view(x), view(y)
            if vx != vy:
                differences.append(f"{proto} {name}: stmd {vx!r} != redis {vy!r}")

        compare("CLUSTER SHARDS", [b"CLUSTER", b"SHARDS"], first_of)
        compare("CLUSTER SLOTS", [b"CLUSTER", b"SLOTS"], first_of)
        compare("CLUSTER SHARDS count", [b"CLUSTER", b"SHARDS"], lambda r: len(r.value))
        compare("CLUSTER SLOTS count", [b"CLUSTER", b"SLOTS"], lambda r: len(r.value))
        compare("CLUSTER MYID", [b"CLUSTER", b"MYID"], lambda r: (r.kind, len(r.value)))
        compare("CLUSTER KEYSLOT", [b"CLUSTER", b"KEYSLOT", b"{user1000}.following"], lambda r: r.raw)
        compare("CLUSTER COUNTKEYSINSLOT", [b"CLUSTER", b"COUNTKEYSINSLOT", b"0"], lambda r: r.raw)
        compare("CLUSTER COUNTKEYSINSLOT bad", [b"CLUSTER", b"COUNTKEYSINSLOT", b"16384"], lambda r: r.raw)
        compare("CLUSTER GETKEYSINSLOT", [b"CLUSTER", b"GETKEYSINSLOT", b"0", b"10"], lambda r: r.raw)
        compare("CLUSTER GETKEYSINSLOT bad", [b"CLUSTER", b"GETKEYSINSLOT", b"0", b"-1"], lambda r: r.raw)
        compare("CLUSTER NOSUCH", [b"CLUSTER", b"NOSUCH"], lambda r: r.raw)
        compare("CLUSTER INFO kind", [b"CLUSTER", b"INFO"], lambda r: r.kind)
        compare("CLUSTER NODES kind", [b"CLUSTER", b"NODES"], lambda r: r.kind)
        compare("READONLY", [b"READONLY"], lambda r: r.raw)
        compare("READWRITE", [b"READWRITE"], lambda r: r.raw)
        compare("ASKING", [b"ASKING"], lambda r: r.raw)
        compare("SELECT 1", [b"SELECT", b"1"], lambda r: r.raw)
        compare("SELECT 0", [b"SELECT", b"0"], lambda r: r.raw)
        compare("SELECT x", [b"SELECT", b"x"], lambda r: r.raw)
        compare("MOVE", [b"MOVE", b"bar", b"1"], lambda r: r.raw)
        compare("SWAPDB", [b"SWAPDB", b"0", b"1"], lambda r: r.raw)
        compare("COPY DB", [b"COPY", b"bar", b"{bar}2", b"DB", b"1"], lambda r: r.raw)
        compare("COPY DB 0", [b"COPY", b"bar", b"{bar}2", b"DB", b"0"], lambda r: r.raw)
        compare("EVAL", [b"EVAL", b"return redis.call('get', KEYS[1])", b"1", b"bar"], lambda r: r.kind)
        compare("EVAL non local", [b"EVAL", b"return redis.call('get', 'a')", b"0"], lambda r: r.raw)
        # (An undeclared key of another slot of this node: Redis 7.2 refuses it, the 7.0 reference
        # does not check; tests/integration/cluster_mode.rs checks stmd's refusal.)
        compare("EVAL no-cluster", [b"EVAL", b"#!lua flags=no-cluster\nreturn 1", b"0"], lambda r: r.raw)
        compare("EVAL cross-slot allowed", [b"EVAL", b"#!lua flags=allow-cross-slot-keys\nreturn redis.call('get', 'hello')", b"1", b"bar"], lambda r: r.kind)
        compare("CROSSSLOT", [b"MSET", b"a", b"1", b"b", b"2"], lambda r: r.raw)
        compare("CROSSSLOT DEL", [b"DEL", b"{a}1", b"{b}1"], lambda r: r.raw)
        # "a" is slot 15495 (the third primary's); "bar" 5061 and "hello" 866 (the first's).
        compare("MOVED", [b"GET", b"a"], lambda r: bool(MOVED.match(r.raw)))
        compare("keyless PING", [b"PING"], lambda r: r.raw)
        # ASKING only admits the next command to a slot this node is importing: none is here, so a
        # key of another node is still MOVED, and a key of this node is served as usual.
        for name, args, view in (
            ("ASKING then MOVED", [b"GET", b"a"], lambda r: bool(MOVED.match(r.raw))),
            ("ASKING then local", [b"GET", b"bar"], lambda r: r.kind),
        ):
            assert a.call([b"ASKING"]).raw == b"+OK\r\n" and b.call([b"ASKING"]).raw == b"+OK\r\n"
            compare(name, args, view)
        compare("ASKING is for one command", [b"GET", b"a"], lambda r: bool(MOVED.match(r.raw)))
        # Pub/Sub: sharded commands are routed by the shard channel; PUBLISH by no key.
        compare("SPUBLISH MOVED", [b"SPUBLISH", b"a", b"x"], lambda r: bool(MOVED.match(r.raw)))
        compare("SSUBSCRIBE MOVED", [b"SSUBSCRIBE", b"a"], lambda r: bool(MOVED.match(r.raw)))
        compare("SSUBSCRIBE CROSSSLOT", [b"SSUBSCRIBE", b"a", b"b"], lambda r: r.raw)
        compare("SPUBLISH local", [b"SPUBLISH", b"bar", b"x"], lambda r: r.raw)
        compare("PUBSUB SHARDNUMSUB", [b"PUBSUB", b"SHARDNUMSUB", b"bar"], lambda r: r.raw)
        compare("PUBSUB SHARDCHANNELS", [b"PUBSUB", b"SHARDCHANNELS"], lambda r: r.raw)
        compare("PUBLISH", [b"PUBLISH", b"a", b"x"], lambda r: r.raw)

        # CLUSTER INFO: stmd's fields are Redis's (Redis adds per-message-type bus counters).
        info = lambda c: [l.split(b":")[0] for l in verbatim(c.call([b"CLUSTER", b"INFO"])).splitlines() if l]
        missing = [f for f in info(a) if f not in info(b)]
        if missing:
            differences.append(f"{proto} CLUSTER INFO: fields Redis does not have: {missing}")
        # CLUSTER NODES: every line in the format redis-cli parses.
        for who, c in (("stmd", a), ("redis", b)):
            lines = verbatim(c.call([b"CLUSTER", b"NODES"])).splitlines()
            bad = [l for l in lines if not NODE_LINE.match(l)]
            if len(lines) != 3 or bad:
                differences.append(f"{proto} CLUSTER NODES ({who}): {lines!r}")
        # A transaction over two slots of this node: discarded with CROSSSLOT at EXEC, as Redis.
        for who, c in (("stmd", a), ("redis", b)):
            replies = [c.call(x).raw for x in ([b"MULTI"], [b"SET", b"bar", b"1"], [b"SET", b"hello", b"1"], [b"EXEC"])]
            if who == "stmd":
                mine = replies
            elif replies != mine:
                differences.append(f"{proto} MULTI/EXEC across slots: stmd {mine!r} != redis {replies!r}")
        a.close()
        b.close()

    for d in differences:
        print(d, file=sys.stderr)
    print(f"cluster shapes: {len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
