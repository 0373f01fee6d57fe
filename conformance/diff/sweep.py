#!/usr/bin/env python3
"""Error-path sweep: every command and subcommand that the reference redis-server lists in
COMMAND DOCS, sent to it and to stmd in generated bad and edge shapes, raw reply bytes compared,
in RESP2 and RESP3.

For each command a valid-looking *base* call is built from its COMMAND DOCS argument tree (keys
named k1, k2…, one instance of each `multiple` argument, the first alternative of each `oneof`,
optional arguments left out), plus one *variant* per optional argument (and per alternative of an
optional `oneof`) with that argument included. Shapes, each mutating one thing:

  arity     too few arguments (arity - 1, and none at all), one too many for a fixed arity
  type:T    the i-th key (up to three) holding type T (string, list, hash, set, zset, stream)
            while the others hold the command's own type
  missing   no key at all
  num       each integer/double argument of every variant given abc, -1, 0, 9223372036854775808,
            1.5, inf, nan (blocking timeouts: no 0/inf/nan/1.5, which would block)
  opt       an unknown word at each optional argument's position and at the end; each included
            pure-token option repeated
  sub       a container with an unknown subcommand and with none

Each shape runs on a fresh dataset: FLUSHALL and FUNCTION FLUSH, then the keys are made, all in one
pipelined write on a connection kept per protocol (a fresh one after commands that change a
connection's state). Only the reply of the command itself is compared. Commands that would disturb
the run (SHUTDOWN, MONITOR, CLIENT KILL…) are not sent (SKIP); commands whose successful replies
depend on each server's state (INFO, CLIENT LIST, TIME…) are compared exactly when either side
errs and by reply type otherwise (STATEFUL). Deliberate differences: `allowlist.py` (ALLOWED, the
differential runner's, and SWEEP_ALLOWED, this sweep's).

One test per command (all its shapes, both protocols). `--results` gets `passed failed skipped`;
a command stmd answers with `ERR unknown command` is skipped.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resp  # noqa: E402
from allowlist import SWEEP_ALLOWED, SWEEP_KNOWN_BUGS, SWEEP_MULTI_ALLOWED, SWEEP_STATEFUL, scriptable_7_2  # noqa: E402
from runner import Outcome, Step, is_unknown_command, print_allowed, step_matches, write_results  # noqa: E402

# Not sent at all: they stop the server, change its configuration or replication, kill or pause
# clients, write files, block without end, or answer with a stream of replies.
SKIP = {
    "shutdown", "monitor", "failover", "replicaof", "slaveof", "sync", "psync", "replconf",
    "quit", "reset", "auth", "migrate", "wait", "waitaof", "save", "bgsave", "bgrewriteaof",
    "client|kill", "client|pause", "client|reply", "config|rewrite",
    "config|resetstat", "script|kill", "function|kill", "acl|setuser", "acl|deluser",
    "acl|load", "acl|save", "debug", "pfselftest", "cluster", "readonly", "readwrite", "asking",
    "module", "latency|reset", "slowlog|reset", "acl|log",
}
SKIP_PREFIX = ("cluster|", "module|")
# The command (or container) changes the connection's state: the next shape gets a new connection.
FRESH_CONN = {
    "select", "multi", "exec", "discard", "watch", "unwatch", "hello", "subscribe", "psubscribe",
    "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "client", "eval", "evalsha",
    "eval_ro", "evalsha_ro", "fcall", "fcall_ro",
}
SUBSCRIBE = {"subscribe", "psubscribe", "ssubscribe"}
BLOCKING = {"blpop", "brpop", "blmove", "brpoplpush", "bzpopmin", "bzpopmax", "blmpop", "bzmpop",
            "xread", "xreadgroup"}

BAD_NUMBERS = [b"abc", b"-1", b"0", b"9223372036854775808", b"-9223372036854775808", b"1.5", b"inf", b"nan"]
# The bad numbers also tried on a wrong-typed key and on no keys (which error comes first).
PRECEDENCE_NUMBERS = {b"abc", b"-1", b"0", b"9223372036854775808"}
ODD_NUMBERS = [b"", b" 1", b"1 ", b"+1", b"1e3", b"0x10", b"-0", b"01", b"1.0"]
BAD_TIMEOUTS = [b"abc", b"-1", b"9223372036854775808"]
TYPES = ["string", "list", "hash", "set", "zset", "stream"]
GROUP_TYPE = {"string": "string", "bitmap": "string", "hyperloglog": "hll", "list": "list",
              "hash": "hash", "set": "set", "sorted-set": "zset", "geo": "geo", "stream": "stream"}
SAME_TYPE = {"hll": "string", "geo": "zset"}


def setup_cmds(key, kind):
    k = key
    return {
        "none": [],
        "string": [[b"SET", k, b"1"]],
        "hll": [[b"PFADD", k, b"a", b"b"]],
        "list": [[b"RPUSH", k, b"a", b"b", b"c"]],
        "hash": [[b"HSET", k, b"f", b"1", b"g", b"v"]],
        "set": [[b"SADD", k, b"a", b"b"]],
        "zset": [[b"ZADD", k, b"1", b"a", b"2", b"b"]],
        "geo": [[b"GEOADD", k, b"13.361389", b"38.115556", b"a", b"15.087269", b"37.502669", b"b"]],
        "stream": [[b"XADD", k, b"1-1", b"f", b"v"], [b"XGROUP", b"CREATE", k, b"g", b"0"]],
    }[kind]


# ---------------------------------------------------------------------------------------------
# Reading COMMAND / COMMAND DOCS (RESP3: maps are maps)


def pyval(r):
    if r.kind == "%":
        v = r.value or []
        return {pyval(a): pyval(b) for a, b in zip(v[0::2], v[1::2])}
    if r.kind in "*~>":
        return None if r.value is None else [pyval(c) for c in r.value]
    if r.kind in "+$":
        return None if r.value is None else r.value.decode(errors="replace")
    if r.kind == ":":
        return int(r.value)
    if r.kind == "_":
        return None
    return r.value


def command_table(conn):
    """name → (arity, docs dict), subcommands as `container|sub`."""
    conn.call([b"HELLO", b"3"])
    info = pyval(conn.call([b"COMMAND"]))
    docs = pyval(conn.call([b"COMMAND", b"DOCS"]))
    table = {}

    def add(entry, doc, container=None):
        name, arity = entry[0], entry[1]
        table[name] = (arity, doc or {}, container)
        for sub in (entry[9] if len(entry) > 9 else None) or []:
            add(sub, (doc or {}).get("subcommands", {}).get(sub[0], {}), name)

    for entry in info:
        add(entry, docs.get(entry[0]))
    return table


# ---------------------------------------------------------------------------------------------
# Generating calls. A call is a list of Tok: its bytes and what it is.


class Tok:
    __slots__ = ("val", "kind", "name")

    def __init__(self, val, kind="word", name=""):
        self.val, self.kind, self.name = val, kind, name


VALUES = {
    "member": b"a", "element": b"a", "pivot": b"a", "field": b"f", "value": b"v", "pattern": b"*",
    "channel": b"ch", "shardchannel": b"ch", "group": b"g", "groupname": b"g", "consumer": b"c",
    "consumername": b"c", "id": b"1-1", "script": b"return 1", "sha1": b"0" * 40,
    "function": b"f", "library-name": b"lib", "library-name-pattern": b"*", "parameter": b"maxmemory",
    "username": b"default", "categoryname": b"string", "command-name": b"get", "command": b"get",
    "serialized-value": b"\x00", "lexicographical": b"a", "ip:port": b"127.0.0.1:1",
    "function-code": b"#!lua name=lib\nredis.register_function('f', function() return 1 end)",
    "message": b"hi", "connection-name": b"n", "password": b"p", "numkeys": None, "unit": b"m",
    "operation": b"AND", "encoding": b"i8", "unix-time-seconds": b"1", "min": b"-inf", "max": b"+inf",
}
# Per command: argument name → value, where the generic guess is not a valid call.
OVERRIDES = {
    ("zrange", "start"): b"0", ("zrange", "stop"): b"-1", ("zrangestore", "min"): b"0",
    ("zrangestore", "max"): b"-1", ("zrangebylex", "min"): b"-", ("zrangebylex", "max"): b"+",
    ("zrevrangebylex", "max"): b"+", ("zrevrangebylex", "min"): b"-", ("zlexcount", "min"): b"-",
    ("zlexcount", "max"): b"+", ("zremrangebylex", "min"): b"-", ("zremrangebylex", "max"): b"+",
    ("xrange", "start"): b"-", ("xrange", "end"): b"+", ("xrevrange", "end"): b"+",
    ("xrevrange", "start"): b"-", ("xpending", "start"): b"-", ("xpending", "end"): b"+",
    ("xautoclaim", "start"): b"0", ("xread", "id"): b"0", ("xreadgroup", "id"): b">",
    ("xadd", "id"): b"2-1", ("xsetid", "last-id"): b"5-1", ("xgroup|create", "id"): b"$",
    ("xgroup|setid", "id"): b"0", ("setrange", "value"): b"v", ("object", "key"): None,
    ("bitfield", "encoding"): b"u8", ("bitfield_ro", "encoding"): b"u8", ("lpos", "element"): b"a",
    ("sort", "pattern"): b"nosort", ("scan", "cursor"): b"0", ("sscan", "cursor"): b"0",
    ("hscan", "cursor"): b"0", ("zscan", "cursor"): b"0", ("xadd", "threshold"): b"5", ("xtrim", "threshold"): b"5", ("restore", "ttl"): b"0",
}
# Per command: which alternative of a `oneof` the base call takes (default: the first).
ALTERNATIVE = {("xadd", "id_or_auto"): 1}
# String arguments that are numbers or ids (ZRANGE's start/stop, XRANGE's ends, XADD's id…).
NUMBER_LIKE = {"start", "stop", "end", "min", "max", "id", "last-id", "threshold", "offset"}
TIMEOUT_NAMES = {"timeout", "milliseconds"}


def value_for(cmd, arg):
    name, typ = arg.get("name", ""), arg.get("type", "")
    if (cmd, name) in OVERRIDES and OVERRIDES[(cmd, name)] is not None:
        return OVERRIDES[(cmd, name)]
    if cmd in BLOCKING and name in TIMEOUT_NAMES:
        return b"10" if typ == "integer" else b"0.01"
    if typ == "integer":
        return b"1"
    if typ == "double":
        return b"1"
    if typ in ("unix-time",):
        return b"4102444800"
    if typ == "pattern":
        return b"*"
    v = VALUES.get(name)
    return v if v is not None else b"v"


def gen(cmd, arg, keys, include=False, alt=0, full=False, twice=False):
    """Tokens for one argument; optional ones only when `include` (or, `full`, all of them);
    `twice`: a `multiple` key argument gets two keys."""
    flags = arg.get("flags") or []
    if "optional" in flags and not include and not full:
        return []
    typ = arg.get("type")
    out = []
    token = arg.get("token")
    if token and typ != "pure-token":
        out.append(Tok(token.encode(), "token", arg.get("name", "")))
    if typ == "pure-token":
        out.append(Tok(token.encode(), "pure", arg.get("name", "")))
    elif typ == "oneof":
        alts = arg.get("arguments") or []
        if alts:
            alt = alt or ALTERNATIVE.get((cmd, arg.get("name")), 0)
            out += gen(cmd, alts[min(alt, len(alts) - 1)], keys, include=True, full=full, twice=twice)
    elif typ == "block":
        for child in arg.get("arguments") or []:
            out += gen(cmd, child, keys, full=full, twice=twice)
    elif typ == "key":
        for _ in range(2 if twice and "multiple" in flags else 1):
            keys.append(b"k%d" % (len(keys) + 1))
            out.append(Tok(keys[-1], "key", arg.get("name", "")))
    else:
        kind = {"integer": "int", "double": "double"}.get(typ, "word")
        if typ == "string" and arg.get("name") in NUMBER_LIKE:
            kind = "int"  # a range end or an id the docs call a string: mutated like a number
        if arg.get("name") == "numkeys" or arg.get("name", "").startswith("numkeys"):
            kind = "numkeys"
        if cmd in BLOCKING and arg.get("name") in TIMEOUT_NAMES:
            kind = "timeout"
        out.append(Tok(value_for(cmd, arg), kind, arg.get("name", "")))
    return out


def fix_numkeys(toks):
    """A `numkeys` argument counts the key arguments after it."""
    for i, t in enumerate(toks):
        if t.kind == "numkeys":
            n = sum(1 for u in toks[i + 1 :] if u.kind == "key")
            toks[i] = Tok(str(n).encode(), "int", t.name)
    return toks


def build(cmd, words, args, choose=None, twice=False):
    """One call: `choose` = (index of a top-level argument, alternative, whether with all its
    nested optional arguments) to include."""
    keys = []
    toks = [Tok(w) for w in words]
    positions = []
    for i, a in enumerate(args):
        positions.append(len(toks))
        if choose and choose[0] == i:
            toks += gen(cmd, a, keys, include=True, alt=choose[1], full=choose[2], twice=twice)
        else:
            toks += gen(cmd, a, keys, twice=twice)
    return fix_numkeys(toks), positions, len(keys)


def shapes_for(name, arity, doc, container):
    """(label, args, key types) tuples for one command."""
    cmd = name
    words = [w.encode() for w in name.split("|")]
    if container:
        words = [container.encode(), name.split("|")[1].encode()]
    args = doc.get("arguments") or []
    group = doc.get("group", "generic")
    own = GROUP_TYPE.get(group, "string")
    out = []
    seen = set()

    def add(label, toks, types=None, nkeys=0):
        argv = [t.val if isinstance(t, Tok) else t for t in toks]
        types = list(types) if types is not None else [own] * nkeys
        sig = (tuple(argv), tuple(types))
        if sig in seen:
            return
        seen.add(sig)
        out.append((label, argv, types))

    base, positions, nkeys = build(cmd, words, args)
    add("base", base, nkeys=nkeys)
    variants = [("base", base, positions, nkeys)]
    labels = {tuple(t.val for t in base)}
    # a `multiple` key argument given two keys (SINTER k1 k2): the second key's type matters too
    toks, pos, nk = build(cmd, words, args, twice=True)
    if nk > nkeys:
        labels.add(tuple(t.val for t in toks))
        variants.append(("two keys", toks, pos, nk))
        add("two keys", toks, nkeys=nk)
        for t in TYPES:
            if SAME_TYPE.get(own, own) != t:
                add("two keys, key %d holds a %s" % (nk, t), toks, types=[own] * (nk - 1) + [t])
                add("two keys, the others missing, key %d holds a %s" % (nk, t), toks, types=["none"] * (nk - 1) + [t])
    for i, a in enumerate(args):
        optional = "optional" in (a.get("flags") or [])
        oneof = a.get("type") == "oneof"
        if not optional and not oneof:
            continue
        # each alternative of a oneof (required or not), each optional argument; and each again
        # with all the optional arguments nested in it
        for alt in range(len(a.get("arguments") or []) if oneof else 1):
            for full in (False, True):
                toks, pos, nk = build(cmd, words, args, (i, alt, full))
                if tuple(t.val for t in toks) in labels:
                    continue
                labels.add(tuple(t.val for t in toks))
                end = pos[i + 1] if i + 1 < len(pos) else len(toks)
                extra = range(pos[i], end)
                label = "with %s" % " ".join(toks[j].val.decode(errors="replace") for j in extra)
                variants.append((label, toks, pos, nk))
                add(label, toks, nkeys=nk)
                # the included pure tokens, repeated
                for j in extra:
                    if toks[j].kind == "pure":
                        add(label + ", %s twice" % toks[j].val.decode(), toks[: j + 1] + [toks[j]] + toks[j + 1 :], nkeys=nk)

    # arity
    n = len(words)
    if arity > 0:
        if arity - 1 >= n:
            add("arity: %d args" % (arity - 1), base[: arity - 1], nkeys=nkeys)
        add("arity: one too many", base + [Tok(b"extra")], nkeys=nkeys)
        if nkeys:
            add("arity: one too many (no keys)", base + [Tok(b"extra")], types=[])
    else:
        need = -arity
        if need - 1 >= n:
            add("arity: %d args" % (need - 1), base[: need - 1], nkeys=nkeys)
    add("arity: no args", base[:n], nkeys=0)

    # key types
    if nkeys:
        add("missing key", base, types=[])
        for ki in range(min(nkeys, 3)):
            for t in TYPES:
                types = [own] * nkeys
                if SAME_TYPE.get(own, own) == t:
                    continue
                types[ki] = t
                add("key %d holds a %s" % (ki + 1, t), base, types=types)

    wrong = "list" if SAME_TYPE.get(own, own) == "string" else "string"

    def add_bad(label, toks, nk):
        """A bad call, on the command's own keys, on a first key of a wrong type (which error
        wins: the syntax or the type?) and on no keys at all."""
        add(label, toks, nkeys=nk)
        if nk:
            add(label + " (key 1 holds a %s)" % wrong, toks, types=[wrong] + [own] * (nk - 1))
            add(label + " (no keys)", toks, types=[])

    # each variant with its option words in lower case
    for label, toks, pos, nk in variants[1:]:
        if any(t.kind in ("pure", "token") for t in toks):
            add(label + " (lower case)", [Tok(t.val.lower(), t.kind, t.name) if t.kind in ("pure", "token") else t for t in toks], nkeys=nk)

    # each variant on a wrong-typed first key, and on no keys
    for label, toks, pos, nk in variants[1:]:
        if nk:
            add(label + " (key 1 holds a %s)" % wrong, toks, types=[wrong] + [own] * (nk - 1))
            add(label + " (no keys)", toks, types=[])

    # numbers
    for label, toks, pos, nk in variants:
        for j, t in enumerate(toks):
            if t.kind not in ("int", "double", "timeout"):
                continue
            for bad in (BAD_TIMEOUTS if t.kind == "timeout" else BAD_NUMBERS):
                mutated = toks[:j] + [Tok(bad)] + toks[j + 1 :]
                if bad in PRECEDENCE_NUMBERS:
                    add_bad("%s: %s=%s" % (label, t.name, bad.decode()), mutated, nk)
                else:
                    add("%s: %s=%s" % (label, t.name, bad.decode()), mutated, nkeys=nk)

    # number spellings that parsers disagree on, in the base call only
    for j, t in enumerate(base):
        if t.kind in ("int", "double"):
            for odd in ODD_NUMBERS:
                add("base: %s=%r" % (t.name, odd.decode()), base[:j] + [Tok(odd)] + base[j + 1 :], nkeys=nkeys)

    # a `multiple` block given half an instance more (MSET k v k, HSET k f v f)
    for label, toks, pos, nk in variants[:1]:
        for i, a in enumerate(args):
            children = a.get("arguments") or []
            if a.get("type") == "block" and "multiple" in (a.get("flags") or []) and len(children) >= 2:
                end = pos[i + 1] if i + 1 < len(pos) else len(toks)
                first = gen(cmd, children[0], [])
                if first:
                    add("%s: half a %s more" % (label, a.get("name")), toks[:end] + first[-1:] + toks[end:], nkeys=nk)

    # unknown options
    if any("optional" in (a.get("flags") or []) for a in args):
        for p in sorted(set(positions[i] for i, a in enumerate(args) if "optional" in (a.get("flags") or [])) | {len(base)}):
            if p >= n:
                add_bad("unknown option at %d" % p, base[:p] + [Tok(b"BOGUS")] + base[p:], nkeys)
    return out


# CONFIG SET is sent only in shapes every server must refuse (a bad value, an unknown or
# duplicate parameter, a bad pair count), so that nothing changes the run's configuration.
CONFIG_SET = [
    ["bogus", "1"], ["maxmemory", "abc"], ["maxmemory", "-1"], ["maxmemory-policy", "bogus"],
    ["appendonly", "maybe"], ["hz", "abc"], ["hz", "0.5"], ["save", "bogus"], ["save", "10 abc"],
    ["port", "abc"], ["loglevel", "loud"], ["timeout", "-1"], ["maxclients", "abc"],
    ["list-max-listpack-size", "abc"], ["client-output-buffer-limit", "bogus"],
    ["slowlog-log-slower-than", "abc"], ["appendfsync", "sometimes"], ["tcp-keepalive", "-5"],
    ["notify-keyspace-events", "Q"], ["enable-debug-command", "yes"], ["daemonize", "yes"],
    ["databases", "5"], ["maxmemory-clients", "200%"], ["oom-score-adj-values", "1 2"],
    ["latency-tracking-info-percentiles", "abc"], ["maxmemory", "1mb", "maxmemory", "2mb"],
    ["maxmemory", "1mb", "bogus", "1"], ["maxmemory", "1mb", "timeout", "-1"], ["maxmemory"],
    ["maxmemory", "1mb", "timeout"], ["requirepass"],
]


def config_set_shapes():
    return [("CONFIG SET " + " ".join(pairs), [b"config", b"set"] + [w.encode() for w in pairs], [])
            for pairs in CONFIG_SET]


def container_shapes(name):
    w = name.encode()
    return [("no subcommand", [w], []), ("unknown subcommand", [w, b"BOGUS"], [])]


# ---------------------------------------------------------------------------------------------
# Running


DIGEST = [b"DEBUG", b"DIGEST"]
# A user who may run no command but AUTH and HELLO, made on both servers for the run and deleted
# after it.
ACL_USER = b"sweep-denied"
# Commands after which the connection may not answer DEBUG DIGEST in turn (subscribed, in MULTI).
NO_DIGEST = SUBSCRIBE | {"multi", "exec", "discard", "watch", "hello", "client"}


SCRIPT = [b"EVAL", b"return redis.pcall(unpack(ARGV))", b"0"]
# Not run from a script by the sweep: SCRIPT/FUNCTION/EVAL themselves (a script's cache and
# libraries), and the commands that only answer differently in a script because of their state.
SCRIPT_UNSAFE = {"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "script", "function"}
# Not queued in MULTI by the sweep: they end or nest the transaction, or block the reply order.
MULTI_UNSAFE = {"multi", "exec", "discard"} | SUBSCRIBE


class Side:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.conns = {}

    def conn(self, proto):
        c = self.conns.get(proto)
        if c is None:
            c = resp.Conn(self.host, self.port, timeout=2.0)
            if proto == 3:
                c.call([b"HELLO", b"3"])
            self.conns[proto] = c
        return c

    def drop(self, proto):
        c = self.conns.pop(proto, None)
        if c:
            c.close()

    def run_after(self, setup, argv):
        """The command on a new connection after the `setup` commands (their replies not
        checked): its reply."""
        c = resp.Conn(self.host, self.port, timeout=2.0)
        try:
            for command in setup:
                c.call(command)
            return Outcome([c.call(argv)])
        except resp.Timeout:
            return Outcome(marker="<timeout>")
        except (resp.Closed, OSError):
            return Outcome(marker="<closed>")
        finally:
            c.close()

    def run_subscribed(self, argv):
        """RESP2, subscribed to a channel, then the command."""
        return self.run_after([[b"SUBSCRIBE", b"sweep-channel"]], argv)

    def run_denied(self, proto, argv):
        """The command from a connection of ACL_USER, who may run nothing: arity and unknown
        subcommands are refused first, then NOPERM."""
        return self.run_after([[b"AUTH", ACL_USER, b"x"]] + ([[b"HELLO", b"3"]] if proto == 3 else []), argv)

    def control(self, argv):
        c = resp.Conn(self.host, self.port, timeout=2.0)
        try:
            return c.call(argv)
        finally:
            c.close()

    def run(self, proto, argv, types, fresh, digest, multi=False):
        """Prelude (flush, keys, DEBUG DIGEST), then the command, then DEBUG DIGEST again; returns
        (Outcome of the command, whether the dataset changed). `multi`: the command is queued
        between MULTI and EXEC, and the Outcome holds its reply and EXEC's."""
        prelude = [[b"FLUSHALL"], [b"FUNCTION", b"FLUSH"], [b"SCRIPT", b"FLUSH"]]
        for i, t in enumerate(types):
            prelude += setup_cmds(b"k%d" % (i + 1), t)
        if multi:
            prelude.append([b"MULTI"])
            digest = False
        changed = False
        try:
            c = self.conn(proto)
            c.sock.sendall(b"".join(resp.encode(a) for a in prelude + ([DIGEST] if digest else []) + [argv] + ([[b"EXEC"]] if multi else [])))
            for _ in prelude:
                c.read()
            before = c.read() if digest else None
            out = Outcome([c.read()] + ([c.read()] if multi else []))
            if digest and out.replies[0].is_error():
                changed = c.call(DIGEST).raw != before.raw
        except resp.Timeout:
            out = Outcome(marker="<timeout>")
            fresh = True
        except (resp.Closed, OSError):
            out = Outcome(marker="<closed>")
            fresh = True
        if fresh:
            self.drop(proto)
        return out, changed


# Replies whose element order is not defined: compared as multisets (a SCAN-family reply: its
# cursor exactly, its elements as a multiset).
UNORDERED = {"smembers", "sinter", "sunion", "sdiff", "hgetall", "hkeys", "hvals", "keys",
             "pubsub|channels", "pubsub|shardchannels", "function|list", "acl|users"}
SCANS = {"sscan", "hscan", "zscan"}


def scan_norm(r, pairs):
    if r.kind != "*" or not r.value or len(r.value) != 2 or r.value[1].value is None:
        return r.raw
    items = [c.raw for c in r.value[1].value]
    if pairs:
        items = list(zip(items[0::2], items[1::2]))
    return (r.value[0].raw, sorted(items))


def same(name, argv, a, b):
    """(matches, reason if allowed). A shape run from a script is judged as the command it calls,
    but for the commands Redis 7.2 lets scripts call and 7.0 does not."""
    if argv[: len(SCRIPT)] == SCRIPT:
        argv = argv[len(SCRIPT) :]
        if len(a.replies) == len(b.replies) == 1 and scriptable_7_2(name, a.replies[0], b.replies[0]):
            return True, "Redis 7.2 lets scripts call the blocking commands (7.0 refuses them)"
    mods = ("unordered",) if name in UNORDERED else ()
    ok, reason = step_matches(Step(" ".join(x.decode(errors="replace") for x in argv), argv, mods), a, b)
    if not ok and name in SCANS and len(a.replies) == len(b.replies) == 1:
        ok = scan_norm(a.replies[0], name != "sscan") == scan_norm(b.replies[0], name != "sscan")
    if ok:
        return True, reason
    if a.marker or b.marker or len(a.replies) != 1 or len(b.replies) != 1:
        return False, None
    x, y = a.replies[0], b.replies[0]
    if name in SWEEP_STATEFUL and not x.is_error() and not y.is_error() and x.kind == y.kind:
        return True, "state-dependent reply: " + SWEEP_STATEFUL[name]
    rule = SWEEP_ALLOWED.get(name)
    if rule is not None and rule[0](x, y, argv):
        return True, rule[1]
    return False, None


def known_bug(name, a, b, argv):
    """The reason of the SWEEP_KNOWN_BUGS entry this difference is, or None."""
    if a.marker or b.marker or len(a.replies) != 1 or len(b.replies) != 1:
        return None
    for check, reason in SWEEP_KNOWN_BUGS.get(name, []):
        if check(a.replies[0], b.replies[0], argv):
            return reason
    return None


def same_in_multi(name, argv, a, b):
    """MULTI, the command, EXEC: the queueing reply exactly; EXEC's reply exactly, or its one
    element as `same` compares the command's reply."""
    if a.marker or b.marker or len(a.replies) != 2 or len(b.replies) != 2:
        return (a.marker == b.marker and not a.replies and not b.replies), None
    if a.replies[0].raw != b.replies[0].raw:
        rule = SWEEP_MULTI_ALLOWED.get(name)
        if rule is not None and rule[0](a.replies, b.replies, argv):
            return True, rule[1]
        return False, None
    x, y = a.replies[1], b.replies[1]
    if x.raw == y.raw:
        return True, None
    if x.kind == y.kind and x.kind in "*" and x.value and y.value and len(x.value) == len(y.value) == 1:
        return same(name, argv, Outcome([x.value[0]]), Outcome([y.value[0]]))
    return False, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stmd", required=True, help="host:port of stmd")
    ap.add_argument("--redis", required=True, help="host:port of the reference redis-server")
    ap.add_argument("--results", help="write `passed failed skipped` here")
    ap.add_argument("-k", "--filter", help="only commands whose name contains this text")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    ap.add_argument("--show", action="store_true", help="print every shape sent (no run)")
    ap.add_argument("--max-fail", type=int, default=6, help="failing shapes printed per command")
    opts = ap.parse_args()

    def side(spec):
        host, port = spec.rsplit(":", 1)
        return Side(host, int(port))

    stmd, redis = side(opts.stmd), side(opts.redis)
    table = command_table(resp.Conn(redis.host, redis.port))
    tests = []
    for name in sorted(table):
        arity, doc, container = table[name]
        if name in SKIP or name.startswith(SKIP_PREFIX) or (opts.filter and opts.filter not in name):
            continue
        if doc.get("subcommands"):
            tests.append((name, container_shapes(name)))
        elif name == "config|set":
            tests.append((name, config_set_shapes()))
        else:
            tests.append((name, shapes_for(name, arity, doc, container)))
    if opts.show:
        for name, shapes in tests:
            for label, argv, types in shapes:
                print("%-22s %-40s %s  %s" % (name, label, b" ".join(argv), types))
        return 0

    for server in (stmd, redis):
        server.control([b"ACL", b"SETUSER", ACL_USER, b"on", b">x", b"~*", b"&*", b"-@all", b"+auth", b"+hello"])
    try:
        return sweep(opts, tests, stmd, redis)
    finally:
        for server in (stmd, redis):
            server.control([b"ACL", b"DELUSER", ACL_USER])


def sweep(opts, tests, stmd, redis):
    t0 = time.time()
    passed = failed = skipped = known_bugs = 0
    nshapes = 0
    allowed_used = {}
    unsupported = []
    for name, shapes in tests:
        top = name.split("|")[0]
        fresh = top in FRESH_CONN
        fails = []
        unknown = False
        # The arity and subcommand errors (and the base call) again inside MULTI: refused when
        # queued, and EXEC then answers EXECABORT.
        in_multi = [("in MULTI: " + label, argv, types, True) for label, argv, types in shapes
                    if label.startswith(("base", "arity", "no subcommand", "unknown subcommand"))
                    and top not in MULTI_UNSAFE]
        # The plain shapes (no numbers, no variants on other keys) again from a script
        # (redis.pcall): the errors a script sees.
        in_script = [("in a script: " + label, SCRIPT + argv, types, False) for label, argv, types in shapes
                     if "=" not in label and "(" not in label and not label.startswith("two keys")
                     and top not in SCRIPT_UNSAFE]
        for label, argv, types, multi in [s + (False,) for s in shapes] + in_multi + in_script:
            for proto in (2, 3):
                nshapes += 1
                sub = top in SUBSCRIBE
                digest = top not in NO_DIGEST
                a, a_changed = stmd.run(proto, argv, types, fresh or sub or multi, digest, multi)
                b, b_changed = redis.run(proto, argv, types, fresh or sub or multi, digest, multi)
                if is_unknown_command(a) and not is_unknown_command(b):
                    unknown = True
                    break
                ok, reason = same_in_multi(name, argv, a, b) if multi else same(name, argv, a, b)
                if ok and reason:
                    allowed_used.setdefault(name, reason)
                if ok and a_changed and not b_changed:
                    ok = False
                    a = Outcome(a.replies, marker=a.show() + "  (and the dataset changed)")
                if not ok:
                    fails.append((label, proto, argv, types, a, b))
            if unknown:
                break
        # The base call and the arity errors from a user who may run nothing: the arity first,
        # then NOPERM (no change either way).
        for label, argv, types in shapes:
            if top in ("auth", "hello") or unknown or not (label == "base" or label.startswith(("arity", "unknown sub", "no sub"))):
                continue
            for proto in (2,):
                nshapes += 1
                a, b = stmd.run_denied(proto, argv), redis.run_denied(proto, argv)
                ok, reason = same(name, argv, a, b)
                if ok and reason:
                    allowed_used.setdefault(name, reason)
                if not ok:
                    fails.append(("as a user without permissions: " + label, proto, argv, [], a, b))
        # The base call from a RESP2 connection in subscribed mode: refused, but for the
        # commands that context allows.
        if not unknown and shapes and top not in SUBSCRIBE and top not in ("quit", "reset"):
            label, argv, types = shapes[0]
            nshapes += 1
            a, b = stmd.run_subscribed(argv), redis.run_subscribed(argv)
            ok, reason = same(name, argv, a, b)
            if not ok:
                fails.append(("while subscribed: " + label, 2, argv, [], a, b))
        if unknown:
            skipped += 1
            unsupported.append(name)
            continue
        known = {}
        for fail in fails:
            reason = known_bug(name, fail[4], fail[5], fail[2])
            if reason:
                known.setdefault(reason, []).append(fail)
        fails = [f for f in fails if not known_bug(name, f[4], f[5], f[2])]
        if known and not fails:
            skipped += 1
            known_bugs += 1
            for reason, shown in known.items():
                print("KNOWN-BUG %s (%d shape runs): %s" % (name, len(shown), reason))
                for label, proto, argv, types, a, b in shown[:2]:
                    print("  [%s, RESP%d] stmd %s, redis %s" % (label, proto, a.show(), b.show()))
        elif fails:
            failed += 1
            print("FAIL %s (%d of %d shape runs)" % (name, len(fails), 2 * len(shapes)))
            for label, proto, argv, types, a, b in fails[: opts.max_fail]:
                print("  [%s, RESP%d] %s%s" % (label, proto, resp.show(b" ".join(argv)),
                                               "  (keys: %s)" % ", ".join(types) if types else ""))
                print("       stmd : %s" % a.show())
                print("       redis: %s" % b.show())
        else:
            passed += 1
            if opts.verbose:
                print("ok   %s (%d shapes)" % (name, len(shapes)))
    elapsed = time.time() - t0
    print_allowed(allowed_used)
    if unsupported:
        print("unsupported by stmd (ERR unknown command): %s" % ", ".join(unsupported))
    print("sweep: %d commands, %d shape runs in %.1fs: %d passed, %d failed, %d skipped (%d unsupported, %d with known stmd bugs)" % (
        len(tests), nshapes, elapsed, passed, failed, skipped, len(unsupported), known_bugs))
    return write_results(opts.results, passed, failed, skipped)


if __name__ == "__main__":
    sys.exit(main())
