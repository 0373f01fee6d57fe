#!/usr/bin/env python3
"""Seeded random differential tester: plays random command sequences against stmd and a real
redis-server, in RESP2 and RESP3, and compares every reply and the final dataset.

Each seed makes one sequence of commands over a small key and value domain (6 keys, small ints,
short strings, floats in plain/exponent/inf forms, numeric-looking members) so that commands hit
existing keys, wrong types and edge cases often; a fraction of the commands get a wrong arity or a
bad option word. Every seed runs once per protocol after FLUSHALL, on one connection per server.
A reply must match byte for byte, except:
  * set-valued replies (SMEMBERS, SINTER, HGETALL, KEYS…) compare as multisets;
  * sorted-set scores compare as doubles: Redis 7.2 (which stmd follows) prints the shortest
    representation (`0.1`), the 7.0 reference `%.17g` (`0.10000000000000001`);
  * OBJECT ENCODING: 7.2's listpack sets and lists (7.0: hashtable/quicklist), and stmd's
    documented encoding differences (README "Encodings");
  * the allow-list rules of allowlist.py (BITCOUNT/BITPOS range checks, XSETID, XPENDING idle…);
  * an INCRBYFLOAT/HINCRBYFLOAT result that differs only by long double vs f64 precision (a
    known difference, known-failures.txt) ends the sequence there, counted as passed.
After each sequence the datasets are compared with DEBUG DIGEST (per key with DEBUG DIGEST-VALUE,
and sorted sets by their members and scores, when the digests differ).

On the first difference of a sequence it prints the seed, the protocol, the commands so far (in
corpus syntax) and both raw replies, then goes on with the next seed. One test per seed×protocol;
with --results it writes `passed failed skipped`.

Left out on purpose (nondeterministic or time-dependent): RANDOMKEY, SCAN, TTL/PTTL and relative
expiries (only absolute far-future times are set), auto-generated stream ids (`*`), XCLAIM
IDLE/TIME, XPENDING IDLE, GEOSEARCH ANY, blocking commands. Skipped when they come up (see
`undefined`): SPOP/SRANDMEMBER/HRANDFIELD/ZRANDMEMBER that would pick at random (a count of 0, a
missing key or another type are compared), and lexicographic ranges over a sorted set whose
scores differ (Redis's answer then depends on its skiplist's random levels). Left out as Redis 7.2
changes (the reference is 7.0; see the comments at each): ZRANK/ZREVRANK WITHSCORE, XGROUP
CREATECONSUMER, XINFO STREAM. Left out as the known long double difference: INCRBYFLOAT
operands beyond f64's range (1e400).
"""

import argparse
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resp  # noqa: E402
from allowlist import ALLOWED, allowed_key  # noqa: E402
from runner import write_results  # noqa: E402

SEEDS = range(1, 151)
OPS_PER_SEED = 300

KEYS = [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5"]
# Members/fields: numeric-looking ones too, and the key names' suffixes so that SORT BY/GET k*
# patterns find keys.
MEMBERS = [b"a", b"b", b"c", b"0", b"1", b"2", b"3", b"-1", b"1.5", b"10", b"x y", b"", b"5"]
INTS = [b"0", b"1", b"-1", b"2", b"3", b"5", b"10", b"-7", b"100", b"007", b"+1", b"-0"]
BIG_INTS = [b"9223372036854775807", b"-9223372036854775808", b"9223372036854775808", b"18446744073709551615"]
# Floats exact in binary (INCRBYFLOAT computes in long double in Redis, f64 in stmd: only values
# exact in both give the same text).
# 1e400 is left out: within long double range (Redis accepts it), beyond f64 (stmd refuses it).
FLOATS = [b"0.5", b"-1.25", b"1.5e1", b"2E2", b"3.0", b"+2.5", b".5", b"5.", b"-0.0", b"1e-1", b"0x10", b"inf", b"-inf", b"nan"]
STRINGS = [b"", b"a", b"hello", b"foo bar", b"12", b"-5", b"1.5", b"\x00\xff", b"abc", b"hellx", b"x" * 70]
SCORES = [b"0", b"1", b"-1", b"2.5", b"0.1", b"-inf", b"+inf", b"inf", b"1e3", b"-2E-2", b"3", b"1.5", b"7", b"nan", b"abc", b"0x10", b"-0"]
SCORE_BOUNDS = [b"-inf", b"+inf", b"0", b"1", b"(1", b"2.5", b"(2.5", b"-1", b"(-inf", b"(+inf", b"3", b"(0", b"abc", b"10"]
LEX_BOUNDS = [b"-", b"+", b"[a", b"(a", b"[b", b"(c", b"[1", b"(5", b"a", b"[", b"("]
INDEXES = [b"0", b"1", b"-1", b"2", b"-2", b"5", b"-100", b"100", b"3", b"x"]
STREAM_IDS = [b"1-0", b"1-1", b"2-0", b"2-5", b"3-0", b"5-*", b"7-1", b"0-1", b"10", b"0-0", b"18446744073709551615-18446744073709551615"]
RANGE_IDS = [b"-", b"+", b"1-0", b"2", b"(1-0", b"(2-0", b"3-0", b"0", b"5", b"(7-1", b"bad"]
# Absolute expiry times, far in the future (EXPIRETIME is compared, never a relative TTL).
ABS_SEC = [b"4102444800", b"4102444900", b"5000000000", b"4102444800", b"0", b"-1", b"99999999999999999"]
ABS_MS = [b"4102444800000", b"4102444850000", b"5000000000000", b"1", b"-5"]
COORDS = [(b"13.361389", b"38.115556"), (b"15.087269", b"37.502669"), (b"2.349014", b"48.864716"),
          (b"-122.4194", b"37.7749"), (b"0", b"0"), (b"180", b"85.05112878"), (b"181", b"10"), (b"13.5", b"38.2")]
GEO_MEMBERS = [b"p0", b"p1", b"p2", b"p3", b"p4", b"a", b"1"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def c(self, seq):
        return self.r.choice(seq)

    def p(self, prob):
        return self.r.random() < prob

    def n(self, lo, hi):
        return self.r.randint(lo, hi)

    def k(self):
        return self.c(KEYS)

    def keys(self, lo=1, hi=3):
        return [self.k() for _ in range(self.n(lo, hi))]

    def m(self):
        return self.c(MEMBERS)

    def val(self):
        x = self.r.random()
        if x < 0.35:
            return self.c(STRINGS)
        if x < 0.7:
            return self.c(INTS)
        if x < 0.93:
            return self.c(FLOATS[:10])
        return self.c(BIG_INTS)

    def num(self):
        return str(self.n(-3, 12)).encode()

    def count(self):
        return self.c([b"0", b"1", b"2", b"3", b"-1", b"10"])

    # ------------------------------------------------------------------ strings
    def g_set(self):
        a = [b"SET", self.k(), self.val()]
        if self.p(0.3):
            a.append(self.c([b"NX", b"XX"]))
        if self.p(0.3):
            a.append(b"GET")
        if self.p(0.3):
            a += self.c([[b"EXAT", self.c(ABS_SEC)], [b"PXAT", self.c(ABS_MS)], [b"KEEPTTL"], [b"EX", self.c([b"0", b"-1", b"x"])],
                         [b"PX", b"0"]])
        if self.p(0.1):
            self.r.shuffle(a[3:])
        return a

    def g_get(self):
        return [self.c([b"GET", b"STRLEN", b"GETDEL"]), self.k()]

    def g_getex(self):
        a = [b"GETEX", self.k()]
        if self.p(0.7):
            a += self.c([[b"EXAT", self.c(ABS_SEC)], [b"PXAT", self.c(ABS_MS)], [b"PERSIST"], [b"EX", b"0"]])
        return a

    def g_append(self):
        return [b"APPEND", self.k(), self.val()]

    def g_incr(self):
        op = self.c([b"INCR", b"DECR", b"INCRBY", b"DECRBY", b"INCRBY", b"INCRBYFLOAT"])
        a = [op, self.k()]
        if op in (b"INCRBY", b"DECRBY"):
            a.append(self.c(INTS) if self.p(0.85) else self.c(BIG_INTS + [b"1.5", b"x"]))
        elif op == b"INCRBYFLOAT":
            a.append(self.c(FLOATS + INTS[:6]))
        return a

    def g_setrange(self):
        if self.p(0.5):
            return [b"SETRANGE", self.k(), self.c([b"0", b"1", b"3", b"10", b"-1", b"536870912", b"x"]), self.c(STRINGS[:8])]
        return [b"GETRANGE", self.k(), self.c(INDEXES), self.c(INDEXES)]

    def g_mset(self):
        op = self.c([b"MSETNX", b"MSET", b"MGET"])
        if op == b"MGET":
            return [op] + self.keys(1, 4)
        a = [op]
        for _ in range(self.n(1, 3)):
            a += [self.k(), self.val()]
        return a

    def g_lcs(self):
        a = [b"LCS", self.k(), self.k()]
        for opt in self.r.sample([[b"LEN"], [b"IDX"], [b"MINMATCHLEN", self.c([b"0", b"1", b"2", b"-1"])], [b"WITHMATCHLEN"]], self.n(0, 3)):
            a += opt
        return a

    def g_setnx(self):
        return self.c([[b"SETNX", self.k(), self.val()], [b"GETSET", self.k(), self.val()], [b"SUBSTR", self.k(), self.c(INDEXES), self.c(INDEXES)]])

    # ------------------------------------------------------------------ lists
    def g_push(self):
        op = self.c([b"LPUSH", b"RPUSH", b"LPUSHX", b"RPUSHX"])
        return [op, self.k()] + [self.c(MEMBERS + STRINGS) for _ in range(self.n(1, 4))]

    def g_linsert(self):
        return [b"LINSERT", self.k(), self.c([b"BEFORE", b"AFTER", b"before"]), self.m(), self.m()]

    def g_lset(self):
        return [b"LSET", self.k(), self.c(INDEXES), self.m()]

    def g_lrem(self):
        return [b"LREM", self.k(), self.c([b"0", b"1", b"-1", b"2", b"-2"]), self.m()]

    def g_ltrim(self):
        return [b"LTRIM", self.k(), self.c(INDEXES), self.c(INDEXES)]

    def g_lrange(self):
        return self.c([[b"LRANGE", self.k(), self.c(INDEXES), self.c(INDEXES)], [b"LINDEX", self.k(), self.c(INDEXES)], [b"LLEN", self.k()]])

    def g_lpos(self):
        a = [b"LPOS", self.k(), self.m()]
        for opt in self.r.sample([[b"RANK", self.c([b"1", b"-1", b"2", b"0", b"-2"])], [b"COUNT", self.c([b"0", b"1", b"2", b"-1"])],
                                  [b"MAXLEN", self.c([b"0", b"1", b"3", b"-1"])]], self.n(0, 3)):
            a += opt
        return a

    def g_lmove(self):
        lr = [b"LEFT", b"RIGHT"]
        return self.c([[b"LMOVE", self.k(), self.k(), self.c(lr), self.c(lr)], [b"RPOPLPUSH", self.k(), self.k()]])

    def g_lpop(self):
        a = [self.c([b"LPOP", b"RPOP"]), self.k()]
        if self.p(0.4):
            a.append(self.c([b"0", b"1", b"2", b"5", b"-1"]))
        return a

    def g_lmpop(self):
        ks = self.keys(1, 3)
        a = [b"LMPOP", str(len(ks)).encode()] + ks + [self.c([b"LEFT", b"RIGHT"])]
        if self.p(0.5):
            a += [b"COUNT", self.c([b"1", b"2", b"5", b"0"])]
        return a

    # ------------------------------------------------------------------ hashes
    def g_hset(self):
        op = self.c([b"HSET", b"HSET", b"HMSET", b"HSETNX"])
        a = [op, self.k()]
        for _ in range(1 if op == b"HSETNX" else self.n(1, 3)):
            a += [self.m(), self.val()]
        return a

    def g_hincr(self):
        if self.p(0.5):
            return [b"HINCRBY", self.k(), self.m(), self.c(INTS) if self.p(0.9) else self.c(BIG_INTS)]
        return [b"HINCRBYFLOAT", self.k(), self.m(), self.c(FLOATS + INTS[:5])]

    def g_hread(self):
        op = self.c([b"HGET", b"HSTRLEN", b"HEXISTS", b"HDEL", b"HLEN", b"HMGET", b"HDEL"])
        a = [op, self.k()]
        if op != b"HLEN":
            a += [self.m() for _ in range(1 if op in (b"HGET", b"HSTRLEN", b"HEXISTS") else self.n(1, 3))]
        return a

    def g_hall(self):
        return [self.c([b"HGETALL", b"HKEYS", b"HVALS"]), self.k()]

    # ------------------------------------------------------------------ sets
    def g_sadd(self):
        return [self.c([b"SADD", b"SADD", b"SREM"]), self.k()] + [self.m() for _ in range(self.n(1, 4))]

    def g_sread(self):
        return self.c([[b"SISMEMBER", self.k(), self.m()], [b"SMISMEMBER", self.k()] + [self.m() for _ in range(self.n(1, 3))],
                       [b"SCARD", self.k()], [b"SMEMBERS", self.k()]])

    def g_salgebra(self):
        op = self.c([b"SINTER", b"SUNION", b"SDIFF", b"SINTERSTORE", b"SUNIONSTORE", b"SDIFFSTORE", b"SINTERCARD", b"SMOVE"])
        if op == b"SMOVE":
            return [op, self.k(), self.k(), self.m()]
        if op == b"SINTERCARD":
            ks = self.keys(1, 3)
            a = [op, self.c([str(len(ks)).encode()] * 4 + [b"0", b"5"])] + ks
            if self.p(0.4):
                a += [b"LIMIT", self.c([b"0", b"1", b"2", b"-1"])]
            return a
        if op.endswith(b"STORE"):
            return [op, self.k()] + self.keys(1, 3)
        return [op] + self.keys(1, 3)

    # ------------------------------------------------------------------ sorted sets
    def g_zadd(self):
        a = [b"ZADD", self.k()]
        for opt in (b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR"):
            if self.p(0.12):
                a.append(opt)
        for _ in range(1 if b"INCR" in a and self.p(0.8) else self.n(1, 3)):
            a += [self.c(SCORES), self.m()]
        return a

    def g_zincr(self):
        return [b"ZINCRBY", self.k(), self.c(SCORES), self.m()]

    def g_zread(self):
        return self.c([[b"ZSCORE", self.k(), self.m()], [b"ZMSCORE", self.k()] + [self.m() for _ in range(self.n(1, 3))],
                       [b"ZCARD", self.k()], [self.c([b"ZRANK", b"ZREVRANK"]), self.k(), self.m()],
                       # ZRANK/ZREVRANK WITHSCORE are Redis 7.2 (the 7.0 reference answers a syntax error): left out.
                       [b"ZCOUNT", self.k(), self.c(SCORE_BOUNDS), self.c(SCORE_BOUNDS)],
                       [b"ZLEXCOUNT", self.k(), self.c(LEX_BOUNDS), self.c(LEX_BOUNDS)],
                       [b"ZREM", self.k()] + [self.m() for _ in range(self.n(1, 3))]])

    def limit(self):
        return [b"LIMIT", self.c([b"0", b"1", b"2", b"-1"]), self.c([b"1", b"2", b"-1", b"0", b"10"])]

    def g_zrange(self):
        op = self.c([b"ZRANGE", b"ZRANGE", b"ZRANGESTORE", b"ZRANGEBYSCORE", b"ZREVRANGEBYSCORE", b"ZRANGEBYLEX", b"ZREVRANGEBYLEX", b"ZREVRANGE"])
        a = [op] + ([self.k()] if op == b"ZRANGESTORE" else []) + [self.k()]
        if op in (b"ZRANGE", b"ZRANGESTORE"):
            by = self.c([None, None, b"BYSCORE", b"BYLEX"])
            bounds = INDEXES if by is None else SCORE_BOUNDS if by == b"BYSCORE" else LEX_BOUNDS
            a += [self.c(bounds), self.c(bounds)]
            if by:
                a.append(by)
            if self.p(0.3):
                a.append(b"REV")
            if self.p(0.3):
                a += self.limit()
            if op == b"ZRANGE" and self.p(0.4):
                a.append(b"WITHSCORES")
        elif op == b"ZREVRANGE":
            a += [self.c(INDEXES), self.c(INDEXES)] + ([b"WITHSCORES"] if self.p(0.5) else [])
        elif b"LEX" in op:
            a += [self.c(LEX_BOUNDS), self.c(LEX_BOUNDS)] + (self.limit() if self.p(0.3) else [])
        else:
            a += [self.c(SCORE_BOUNDS), self.c(SCORE_BOUNDS)]
            if self.p(0.4):
                a.append(b"WITHSCORES")
            if self.p(0.3):
                a += self.limit()
        return a

    def g_zremrange(self):
        return self.c([[b"ZREMRANGEBYRANK", self.k(), self.c(INDEXES), self.c(INDEXES)],
                       [b"ZREMRANGEBYSCORE", self.k(), self.c(SCORE_BOUNDS), self.c(SCORE_BOUNDS)],
                       [b"ZREMRANGEBYLEX", self.k(), self.c(LEX_BOUNDS), self.c(LEX_BOUNDS)]])

    def g_zalgebra(self):
        op = self.c([b"ZUNION", b"ZINTER", b"ZDIFF", b"ZUNIONSTORE", b"ZINTERSTORE", b"ZDIFFSTORE", b"ZINTERCARD"])
        ks = self.keys(1, 3)
        a = [op] + ([self.k()] if op.endswith(b"STORE") else []) + [str(len(ks)).encode() if self.p(0.93) else self.c([b"0", b"4", b"-1"])] + ks
        if op == b"ZINTERCARD":
            if self.p(0.4):
                a += [b"LIMIT", self.c([b"0", b"1", b"-1"])]
            return a
        if op not in (b"ZDIFF", b"ZDIFFSTORE"):
            if self.p(0.4):
                a += [b"WEIGHTS"] + [self.c([b"1", b"2", b"-1", b"0", b"0.5", b"inf", b"x"]) for _ in ks]
            if self.p(0.4):
                a += [b"AGGREGATE", self.c([b"SUM", b"MIN", b"MAX", b"max", b"AVG"])]
        if not op.endswith(b"STORE") and self.p(0.5):
            a.append(b"WITHSCORES")
        return a

    def g_zpop(self):
        if self.p(0.5):
            ks = self.keys(1, 3)
            a = [b"ZMPOP", str(len(ks)).encode()] + ks + [self.c([b"MIN", b"MAX"])]
            if self.p(0.5):
                a += [b"COUNT", self.c([b"1", b"2", b"5", b"0"])]
            return a
        a = [self.c([b"ZPOPMIN", b"ZPOPMAX"]), self.k()]
        if self.p(0.5):
            a.append(self.c([b"0", b"1", b"2", b"-1", b"5"]))
        return a

    # ------------------------------------------------------------------ keys
    def g_keys(self):
        return self.c([[b"DEL"] + self.keys(1, 3), [b"UNLINK", self.k()], [b"EXISTS"] + self.keys(1, 3), [b"TYPE", self.k()],
                       [b"RENAME", self.k(), self.k()], [b"RENAMENX", self.k(), self.k()], [b"TOUCH"] + self.keys(1, 2),
                       [b"COPY", self.k(), self.k()] + self.c([[], [b"REPLACE"], [b"DB", b"1"], [b"DB", b"0", b"REPLACE"]]),
                       [b"OBJECT", b"ENCODING", self.k()], [b"DBSIZE"], [b"KEYS", self.c([b"*", b"k[0-2]", b"k?", b"x*"])]])

    def g_expire(self):
        op = self.c([b"EXPIREAT", b"PEXPIREAT", b"EXPIRE", b"PERSIST", b"EXPIRETIME", b"PEXPIRETIME", b"EXPIREAT"])
        a = [op, self.k()]
        if op == b"EXPIREAT":
            a.append(self.c(ABS_SEC))
        elif op == b"PEXPIREAT":
            a.append(self.c(ABS_MS))
        elif op == b"EXPIRE":
            # Relative times only where the outcome does not depend on the clock: deleting
            # (0, negative), overflowing, or an option that compares with a far-future time.
            a.append(self.c([b"0", b"-1", b"9223372036854775807", b"x", b"10"]))
        if op in (b"EXPIREAT", b"PEXPIREAT") and self.p(0.4):
            a.append(self.c([b"NX", b"XX", b"GT", b"LT", b"NX", b"XX"]))
        if op == b"EXPIRE" and a[2] == b"10":
            # GT only: always refused (a far-future expiry, or none, counts as later), so no
            # clock-relative expiry is ever set.
            a.append(b"GT")
        return a

    def g_sort(self):
        a = [self.c([b"SORT", b"SORT", b"SORT_RO"]), self.k()]
        nosort = False
        if self.p(0.4):
            by = self.c([b"k*", b"k*->a", b"nosort", b"x*"])
            nosort = by == b"nosort"
            a += [b"BY", by]
        if self.p(0.3) and not nosort:
            a += [b"LIMIT", self.c([b"0", b"1", b"-1"]), self.c([b"1", b"2", b"-1", b"10"])]
        for _ in range(self.n(0, 2) if self.p(0.4) else 0):
            a += [b"GET", self.c([b"#", b"k*", b"k*->a", b"k*->1"])]
        if self.p(0.3):
            a.append(self.c([b"ASC", b"DESC"]))
        if self.p(0.4):
            a.append(b"ALPHA")
        if a[0] == b"SORT" and self.p(0.25) and not (b"ALPHA" in a and b"BY" in a and not nosort):
            # (ALPHA with a BY pattern leaves ties in an undefined order: not stored, see sort_order)
            a += [b"STORE", self.k()]
        return a

    # ------------------------------------------------------------------ bitmaps
    def bit_off(self):
        return self.c([b"0", b"1", b"7", b"8", b"13", b"31", b"100", b"-1", b"4294967296", b"x"])

    def g_setbit(self):
        if self.p(0.5):
            return [b"SETBIT", self.k(), self.bit_off(), self.c([b"0", b"1", b"1", b"2"])]
        return [b"GETBIT", self.k(), self.bit_off()]

    def g_bitcount(self):
        op = self.c([b"BITCOUNT", b"BITPOS"])
        a = [op, self.k()]
        if op == b"BITPOS":
            a.append(self.c([b"0", b"1", b"1", b"2"]))
        if self.p(0.7):
            a.append(self.c(INDEXES[:7]))
            if self.p(0.7) or op == b"BITCOUNT":
                a.append(self.c(INDEXES[:7]))
                if self.p(0.5):
                    a.append(self.c([b"BYTE", b"BIT", b"bit"]))
        return a

    def g_bitop(self):
        op = self.c([b"AND", b"OR", b"XOR", b"NOT", b"and"])
        return [b"BITOP", op, self.k()] + self.keys(1, 1 if op == b"NOT" and self.p(0.8) else 3)

    def g_bitfield(self):
        a = [self.c([b"BITFIELD", b"BITFIELD", b"BITFIELD_RO"]), self.k()]
        types = [b"u1", b"u4", b"i4", b"u8", b"i8", b"i16", b"u63", b"i64", b"u64", b"i0", b"x8"]
        offs = [b"0", b"1", b"4", b"#1", b"#0", b"13", b"-1", b"#x"]
        for _ in range(self.n(1, 3)):
            sub = self.c([b"GET", b"SET", b"INCRBY", b"OVERFLOW", b"GET"])
            if sub == b"GET":
                a += [sub, self.c(types), self.c(offs)]
            elif sub == b"OVERFLOW":
                a += [sub, self.c([b"WRAP", b"SAT", b"FAIL", b"BAD"])]
            else:
                a += [sub, self.c(types), self.c(offs), self.c(INTS[:9] + [b"127", b"-128", b"300", b"9223372036854775807"])]
        return a

    # ------------------------------------------------------------------ HyperLogLog
    def g_pf(self):
        op = self.c([b"PFADD", b"PFADD", b"PFCOUNT", b"PFMERGE", b"GET"])
        if op == b"PFADD":
            return [op, self.k()] + [self.m() for _ in range(self.n(0, 4))]
        if op == b"PFCOUNT":
            return [op] + self.keys(1, 2)
        if op == b"PFMERGE":
            return [op, self.k()] + self.keys(0, 2)
        return [op, self.k()]

    # ------------------------------------------------------------------ geo
    def g_geoadd(self):
        a = [b"GEOADD", self.k()]
        for opt in (b"NX", b"XX", b"CH"):
            if self.p(0.1):
                a.append(opt)
        for _ in range(self.n(1, 3)):
            lon, lat = self.c(COORDS)
            a += [lon, lat, self.c(GEO_MEMBERS)]
        return a

    def g_georead(self):
        op = self.c([b"GEOPOS", b"GEODIST", b"GEOHASH"])
        if op == b"GEODIST":
            return [op, self.k(), self.c(GEO_MEMBERS), self.c(GEO_MEMBERS)] + ([self.c([b"km", b"m", b"mi", b"ft", b"xx"])] if self.p(0.5) else [])
        return [op, self.k()] + [self.c(GEO_MEMBERS) for _ in range(self.n(1, 3))]

    def g_geosearch(self):
        store = self.p(0.25)
        a = [b"GEOSEARCHSTORE", self.k(), self.k()] if store else [b"GEOSEARCH", self.k()]
        if self.p(0.5):
            a += [b"FROMMEMBER", self.c(GEO_MEMBERS)]
        else:
            lon, lat = self.c(COORDS)
            a += [b"FROMLONLAT", lon, lat]
        if self.p(0.5):
            a += [b"BYRADIUS", self.c([b"100", b"500", b"1000", b"0", b"-1"]), self.c([b"km", b"m", b"mi"])]
        else:
            a += [b"BYBOX", self.c([b"200", b"2000", b"0"]), self.c([b"300", b"1000"]), self.c([b"km", b"mi"])]
        a.append(self.c([b"ASC", b"DESC"]))  # the unsorted order is Redis's geohash-box scan order
        if self.p(0.3):
            a += [b"COUNT", self.c([b"1", b"2", b"0"])]
        if store:
            if self.p(0.4):
                a.append(b"STOREDIST")
        else:
            for opt in (b"WITHCOORD", b"WITHDIST", b"WITHHASH"):
                if self.p(0.3):
                    a.append(opt)
        return a

    # ------------------------------------------------------------------ streams
    def g_xadd(self):
        a = [b"XADD", self.k()]
        if self.p(0.1):
            a.append(b"NOMKSTREAM")
        if self.p(0.2):
            a += [self.c([b"MAXLEN", b"MINID"]), self.c([b"=", b"~", b"="]), self.c([b"0", b"1", b"2", b"3-0", b"5"])]
        a.append(self.c(STREAM_IDS))
        for _ in range(self.n(1, 2)):
            a += [self.m(), self.val()]
        return a

    def g_xread(self):
        op = self.c([b"XRANGE", b"XREVRANGE", b"XLEN", b"XDEL", b"XTRIM"])
        if op == b"XLEN":
            return [op, self.k()]
        if op == b"XDEL":
            return [op, self.k()] + [self.c(STREAM_IDS[:9]) for _ in range(self.n(1, 2))]
        if op == b"XTRIM":
            a = [op, self.k(), self.c([b"MAXLEN", b"MINID"])]
            if self.p(0.4):
                a.append(self.c([b"=", b"~"]))
            a.append(self.c([b"0", b"1", b"2", b"2-0", b"-1"]))
            if self.p(0.2):
                a += [b"LIMIT", self.c([b"0", b"1", b"10"])]
            return a
        lo, hi = self.c(RANGE_IDS), self.c(RANGE_IDS)
        a = [op, self.k(), lo, hi] if op == b"XRANGE" else [op, self.k(), hi, lo]
        if self.p(0.3):
            a += [b"COUNT", self.c([b"0", b"1", b"2", b"-1"])]
        return a

    def g_xsetid(self):
        a = [b"XSETID", self.k(), self.c(STREAM_IDS[:9])]
        if self.p(0.3):
            a += [b"ENTRIESADDED", self.c([b"0", b"5", b"100"]), b"MAXDELETEDID", self.c([b"0-0", b"1-0", b"3-0"])]
        return a

    def g_xgroup(self):
        sub = self.c([b"CREATE", b"CREATE", b"SETID", b"DESTROY", b"DELCONSUMER"])
        # XGROUP CREATECONSUMER is left out: Redis 7.2 (stmd) creates a consumer on an XREADGROUP
        # that delivers nothing, the 7.0 reference does not, so its 0/1 differs (allow-listed
        # 7.2 change, README "Streams").
        g = self.c([b"g1", b"g2"])
        if sub == b"CREATE":
            a = [b"XGROUP", sub, self.k(), g, self.c([b"$", b"0", b"1-0", b"2-0", b"0-0"])]
            if self.p(0.5):
                a.append(b"MKSTREAM")
            if self.p(0.2):
                a += [b"ENTRIESREAD", self.c([b"0", b"1", b"-1", b"5"])]
            return a
        if sub == b"SETID":
            return [b"XGROUP", sub, self.k(), g, self.c([b"$", b"0", b"1-0", b"2-0"])]
        if sub == b"DESTROY":
            return [b"XGROUP", sub, self.k(), g]
        return [b"XGROUP", sub, self.k(), g, self.c([b"c1", b"c2"])]

    def g_xreadgroup(self):
        a = [b"XREADGROUP", b"GROUP", self.c([b"g1", b"g2"]), self.c([b"c1", b"c2"])]
        if self.p(0.5):
            a += [b"COUNT", self.c([b"1", b"2", b"0"])]
        if self.p(0.15):
            a.append(b"NOACK")
        ks = self.keys(1, 2)
        a += [b"STREAMS"] + ks + [self.c([b">", b">", b"0", b"1-0"]) for _ in ks]
        return a

    def g_xack(self):
        op = self.c([b"XACK", b"XPENDING", b"XPENDING", b"XCLAIM", b"XAUTOCLAIM", b"XINFO"])
        g = self.c([b"g1", b"g2"])
        if op == b"XACK":
            return [op, self.k(), g] + [self.c(STREAM_IDS[:9]) for _ in range(self.n(1, 2))]
        if op == b"XPENDING":
            a = [op, self.k(), g]
            if self.p(0.6):
                # IDLE filters by the clock: left out.
                a += [self.c([b"-", b"1-0"]), self.c([b"+", b"3-0"]), self.c([b"1", b"10", b"0"])]
                if self.p(0.4):
                    a.append(self.c([b"c1", b"c2"]))
            return a
        if op == b"XCLAIM":
            a = [op, self.k(), g, self.c([b"c1", b"c2"]), b"0"] + [self.c(STREAM_IDS[:9]) for _ in range(self.n(1, 2))]
            for opt in ([b"JUSTID"], [b"FORCE"], [b"RETRYCOUNT", b"3"]):
                if self.p(0.2):
                    a += opt
            return a
        if op == b"XAUTOCLAIM":
            a = [op, self.k(), g, self.c([b"c1", b"c2"]), b"0", self.c([b"0-0", b"1-0", b"2"])]
            if self.p(0.5):
                a += [b"COUNT", self.c([b"1", b"2", b"0"])]
            if self.p(0.3):
                a.append(b"JUSTID")
            return a
        # XINFO STREAM is left out: Redis 7.2 adds `recorded-first-entry-id` (reference: 7.0).
        return [b"XINFO", b"GROUPS", self.k()]

    GROUPS = [
        (5, "g_set"), (3, "g_get"), (2, "g_getex"), (3, "g_append"), (4, "g_incr"), (3, "g_setrange"), (2, "g_mset"), (2, "g_lcs"), (1, "g_setnx"),
        (4, "g_push"), (2, "g_linsert"), (1, "g_lset"), (2, "g_lrem"), (1, "g_ltrim"), (2, "g_lrange"), (2, "g_lpos"), (2, "g_lmove"), (2, "g_lpop"), (1, "g_lmpop"),
        (4, "g_hset"), (3, "g_hincr"), (3, "g_hread"), (2, "g_hall"),
        (4, "g_sadd"), (3, "g_sread"), (3, "g_salgebra"),
        (5, "g_zadd"), (2, "g_zincr"), (4, "g_zread"), (4, "g_zrange"), (2, "g_zremrange"), (3, "g_zalgebra"), (2, "g_zpop"),
        (5, "g_keys"), (3, "g_expire"), (3, "g_sort"),
        (3, "g_setbit"), (3, "g_bitcount"), (1, "g_bitop"), (2, "g_bitfield"),
        (3, "g_pf"), (2, "g_geoadd"), (2, "g_georead"), (2, "g_geosearch"),
        (4, "g_xadd"), (3, "g_xread"), (1, "g_xsetid"), (2, "g_xgroup"), (2, "g_xreadgroup"), (3, "g_xack"),
        (2, "g_bulk"), (3, "g_encoding"), (2, "g_random_family"),
    ]

    def op(self):
        names = [g for _, g in self.GROUPS]
        weights = [w for w, _ in self.GROUPS]
        args = getattr(self, self.r.choices(names, weights)[0])()
        x = self.r.random()
        if x < 0.025 and len(args) > 1:
            args = args[: self.n(1, len(args) - 1)]  # too few arguments
        elif x < 0.04:
            args = args + [self.c([b"BOGUS", b"1", b"k0"])]  # a stray argument / bad option word
        elif x < 0.05 and len(args) > 2:
            args = list(args)
            args[self.n(2, len(args) - 1)] = b"BOGUS"  # a bad option word or value
        if len(args) == 3 and args[0] in (b"EXPIRE", b"PEXPIRE") and args[2] == b"10":
            args = args[:2] + [b"-1"]  # a relative expiry that is set would make times differ
        return args

    # ------------------------------------------------------------------ thresholds
    def g_bulk(self):
        """Many elements at once, to cross the compact-encoding thresholds (128/512 entries, 64
        bytes) so that OBJECT ENCODING, SORT, RENAME and COPY see both forms."""
        n = self.c([3, 20, 129, 130, 200, 513])
        ints = self.p(0.5)
        elems = [(str(i) if ints else "m%d" % i).encode() for i in range(n)]
        op = self.c([b"SADD", b"ZADD", b"HSET", b"RPUSH", b"SREM", b"ZREMRANGEBYRANK", b"HDEL"])
        if op == b"ZADD":
            return [op, self.k()] + [x for i, e in enumerate(elems) for x in (str(i % 7).encode(), e)]
        if op == b"HSET":
            return [op, self.k()] + [x for e in elems for x in (e, e)]
        if op == b"ZREMRANGEBYRANK":
            return [op, self.k(), b"0", self.c([b"-3", b"-100", b"-129", b"-130"])]
        if op in (b"SREM", b"HDEL"):
            return [op, self.k()] + elems[self.n(0, 5):]
        return [op, self.k()] + elems

    def g_encoding(self):
        return [b"OBJECT", b"ENCODING", self.k()]

    def g_random_family(self):
        # Deterministic only with a count of 0 or on a key of another type / no key; a call that
        # would pick at random is skipped (see `undefined`).
        op = self.c([b"SRANDMEMBER", b"SPOP", b"HRANDFIELD", b"ZRANDMEMBER"])
        a = [op, self.k()]
        if self.p(0.8):
            a.append(self.c([b"0", b"0", b"2", b"-2", b"x"]))
        if op in (b"HRANDFIELD", b"ZRANDMEMBER") and len(a) == 3 and self.p(0.3):
            a.append(b"WITHVALUES" if op == b"HRANDFIELD" else b"WITHSCORES")
        return a


# ---------------------------------------------------------------------------------------------
# Comparing

UNORDERED = {b"SMEMBERS", b"SINTER", b"SUNION", b"SDIFF", b"HGETALL", b"HKEYS", b"HVALS", b"KEYS"}
SCORED = {b"ZSCORE", b"ZMSCORE", b"ZINCRBY", b"ZADD", b"ZRANGE", b"ZRANGEBYSCORE", b"ZREVRANGEBYSCORE", b"ZREVRANGE",
          b"ZPOPMIN", b"ZPOPMAX", b"ZMPOP", b"ZUNION", b"ZINTER", b"ZDIFF"}


def quote(a):
    if a and re.fullmatch(rb"[A-Za-z0-9_.:*#>$+\-=~()\[\]?{}/]+", a):
        return a.decode()
    out = []
    for b in a:
        if b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return '"%s"' % "".join(out)


def line(args):
    return " ".join(quote(a) for a in args)


def as_float(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def same_scores(a, b):
    """Replies equal but for the text of doubles: 7.2 prints the shortest form, 7.0 `%.17g`."""
    if a.kind != b.kind:
        return False
    if isinstance(a.value, list) and isinstance(b.value, list):
        return len(a.value) == len(b.value) and all(same_scores(x, y) for x, y in zip(a.value, b.value))
    if a.raw == b.raw:
        return True
    if a.kind in "$," and a.value is not None and b.value is not None:
        fa, fb = as_float(a.value), as_float(b.value)
        return fa is not None and fa == fb
    return False


def unordered_key(reply):
    if reply.kind in "*~>" and reply.value is not None:
        return (reply.count, sorted(c.raw for c in reply.value))
    if reply.kind == "%" and reply.value is not None:
        v = reply.value
        return (reply.count, sorted(zip((c.raw for c in v[0::2]), (c.raw for c in v[1::2]))))
    return reply.raw


def long_double_only(a, b):
    """Both bulk numbers that agree to 15 significant digits: long double vs f64; or a result
    beyond f64's range that only Redis's long double holds (stmd refuses it)."""
    fb = as_float(b.value) if b.kind == "$" else None
    if a.is_error() and fb is not None and abs(fb) == float("inf") and b"inf" not in b.value.lower():
        return True
    fa = as_float(a.value) if a.kind == "$" else None
    if fa is None or fb is None:
        return False
    return abs(fa - fb) <= 1e-14 * max(abs(fa), abs(fb))


class Pair:
    def __init__(self, stmd, redis, proto):
        self.proto = proto
        self.a = resp.Conn(*stmd)
        self.b = resp.Conn(*redis)
        for c in (self.a, self.b):
            c.call([b"FLUSHALL"])
            if proto == 3:
                c.call([b"HELLO", b"3"])

    def close(self):
        self.a.close()
        self.b.close()


def encoding_allowed(pair, args, a, b, long_written):
    """OBJECT ENCODING: Redis 7.2's listpack sets and lists (the 7.0 reference says hashtable /
    quicklist), and stmd's documented encoding differences (README "Encodings"): a string grown by
    APPEND/SETRANGE is judged by its content (Redis: raw); a non-integer member in the middle of an
    integer set is missed (stmd: intset); a long member added and removed leaves a set or hash
    compact."""
    if len(args) != 3 or a.kind not in "$+" or b.kind not in "$+":
        return None
    kind = pair.b.call([b"TYPE", args[2]]).value
    mine, theirs = a.value, b.value
    if kind == b"set" and theirs == b"hashtable" and mine in (b"listpack", b"intset"):
        return "set encodings: 7.2 listpack sets (reference 7.0: hashtable); stmd's O(1) intset check"
    if kind == b"list" and theirs == b"quicklist" and mine == b"listpack":
        return "list encodings: 7.2 listpack lists (reference 7.0: quicklist)"
    if kind == b"string" and theirs == b"raw" and mine in (b"embstr", b"int"):
        return "strings written in place (APPEND, SETRANGE, SETBIT, BITFIELD) or by BITOP: judged by content in stmd (README Encodings)"
    if kind == b"hash" and long_written and mine == b"listpack" and theirs == b"hashtable" and all(
            len(x) <= 64 for x in flat(pair.b.call([b"HGETALL", args[2]]))):
        return "a long member added and removed leaves stmd's hash compact (README Encodings)"
    return None


def sort_order(pair, args):
    """How much of a SORT reply is defined: 'exact', 'unordered' or 'length'. Redis leaves the order
    of ties undefined when ALPHA compares BY-pattern values (equal or missing values are not
    broken by the element) and the input order is its hash table's (a set, a sorted set) or the
    partial quicksort of a LIMIT picks them; BY nosort on a set answers in the set's own order."""
    up = [x.upper() for x in args]
    by = up[up.index(b"BY") + 1] if b"BY" in up[2:-1] else None
    kind = pair.b.call([b"TYPE", args[1]]).value
    limit = b"LIMIT" in up
    if by == b"NOSORT":
        return "unordered" if kind == b"set" and b"STORE" not in up and not limit else "exact"
    if by is not None and b"ALPHA" in up:
        if kind in (b"set", b"zset"):
            return "length" if limit else "unordered"
        return "length" if limit else "exact"
    return "exact"


def compare(pair, args, a, b, long_written):
    """(ok, note): note is an allow reason, or 'stop' for a long double INCRBYFLOAT difference."""
    if a.raw == b.raw:
        return True, None
    name = args[0].upper()
    if name in (b"SORT", b"SORT_RO") and not a.is_error() and not b.is_error():
        how = sort_order(pair, args)
        if how == "unordered" and unordered_key(a) == unordered_key(b):
            return True, "SORT: ties and set order are undefined in Redis (compared as a multiset)"
        if how == "length" and a.kind == b.kind and len(a.value or []) == len(b.value or []):
            return True, "SORT: ties under LIMIT are undefined in Redis (lengths compared)"
    if name in UNORDERED and unordered_key(a) == unordered_key(b):
        return True, None
    if name in SCORED and same_scores(a, b):
        return True, "scores: 7.2 shortest double text (reference 7.0: %.17g)"
    if name in (b"INCRBYFLOAT", b"HINCRBYFLOAT") and long_double_only(a, b):
        return True, "stop"
    if name == b"OBJECT":
        why = encoding_allowed(pair, args, a, b, long_written)
        if why:
            return True, why
    rule = ALLOWED.get(allowed_key(args))
    if rule and rule[0](a, b, args):
        return True, rule[1]
    return False, None


def key_content(conn, key):
    """What a key holds, for when the digests differ: its digest, or its members and scores."""
    t = conn.call([b"TYPE", key]).value
    if t == b"zset":
        return t, conn.call([b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]), conn.call([b"PEXPIRETIME", key]).raw
    return t, conn.call([b"DEBUG", b"DIGEST-VALUE", key]), conn.call([b"PEXPIRETIME", key]).raw


def compare_dataset(pair):
    """None when the datasets agree, else a description of the first difference."""
    da, db = pair.a.call([b"DEBUG", b"DIGEST"]), pair.b.call([b"DEBUG", b"DIGEST"])
    if da.raw == db.raw:
        return None
    for dbi in (b"0", b"1"):
        pair.a.call([b"SELECT", dbi])
        pair.b.call([b"SELECT", dbi])
        ka = sorted(c.value for c in pair.a.call([b"KEYS", b"*"]).value)
        kb = sorted(c.value for c in pair.b.call([b"KEYS", b"*"]).value)
        if ka != kb:
            return "db %s keys: stmd %r, redis %r" % (dbi.decode(), ka, kb)
        for key in ka:
            ta, ra, ea = key_content(pair.a, key)
            tb, rb, eb = key_content(pair.b, key)
            if ta != tb or ea != eb or not (ra.raw == rb.raw or (ta == b"zset" and same_scores(ra, rb))):
                return "db %s key %s (%s): stmd %s %s, redis %s %s" % (dbi.decode(), key.decode(errors="replace"), tb.decode(),
                                                                      ra, ea.decode().strip(), rb, eb.decode().strip())
    pair.a.call([b"SELECT", b"0"])
    pair.b.call([b"SELECT", b"0"])
    return None


def flat(reply):
    """The leaf values of a reply, depth first (RESP3 pairs flattened like RESP2 arrays)."""
    if isinstance(reply.value, list):
        return [v for c in reply.value for v in flat(c)]
    return [reply.value]


LEX_COMMANDS = {b"ZRANGEBYLEX", b"ZREVRANGEBYLEX", b"ZLEXCOUNT", b"ZREMRANGEBYLEX"}


def undefined(pair, args):
    """A reason when Redis's answer to `args` is not defined on the current data (checked on the
    reference server): the command is then sent to neither server."""
    name = args[0].upper()
    lex = name in LEX_COMMANDS or (name in (b"ZRANGE", b"ZRANGESTORE") and b"BYLEX" in [x.upper() for x in args])
    if lex and len(args) > 2:
        # Lexicographic ranges assume equal scores; with different scores Redis's answer depends
        # on its skiplist's random levels ("unspecified", ZRANGEBYLEX's documentation).
        src = args[2] if name == b"ZRANGESTORE" else args[1]
        if pair.b.call([b"TYPE", src]).value == b"zset":
            first = flat(pair.b.call([b"ZRANGE", src, b"0", b"0", b"WITHSCORES"]))
            last = flat(pair.b.call([b"ZRANGE", src, b"-1", b"-1", b"WITHSCORES"]))
            if as_float(first[1]) != as_float(last[1]):
                return "lexicographic range over different scores"
    if name in RANDOM_FAMILY and len(args) > 1:
        kind = pair.b.call([b"TYPE", args[1]]).value
        if kind == RANDOM_FAMILY[name] and (len(args) == 2 or args[2] != b"0"):
            return "a random pick"
    return None


RANDOM_FAMILY = {b"SRANDMEMBER": b"set", b"SPOP": b"set", b"HRANDFIELD": b"hash", b"ZRANDMEMBER": b"zset"}


def run_seed(stmd, redis, seed, proto, ops, verbose):
    """Returns (ok, notes, n_ops)."""
    gen = Gen(seed)
    pair = Pair(stmd, redis, proto)
    history, notes = [], set()
    long_written = False
    try:
        for i in range(ops):
            args = gen.op()
            if undefined(pair, args):
                continue
            history.append(args)
            if any(len(x) > 64 for x in args):
                long_written = True
            try:
                a = pair.a.call(args)
            except (resp.Timeout, resp.Closed, OSError) as e:
                a = resp.Reply(b"<%s>" % type(e).__name__.encode(), "?", None)
            try:
                b = pair.b.call(args)
            except (resp.Timeout, resp.Closed, OSError) as e:
                b = resp.Reply(b"<%s>" % type(e).__name__.encode(), "?", None)
            if a.kind == "?" or b.kind == "?":
                ok, note = False, None
            else:
                ok, note = compare(pair, args, a, b, long_written)
            if not ok:
                print("FAIL seed %d [RESP%d] at command %d of %d:" % (seed, proto, i + 1, ops))
                for h in history:
                    print("    " + line(h))
                print("  stmd : %s" % resp.show(a.raw))
                print("  redis: %s" % resp.show(b.raw))
                types = [(k, pair.b.call([b"TYPE", k]).value) for k in KEYS if k in args[1:]]
                print("  types (redis): %s" % ", ".join("%s=%s" % (k.decode(), t.decode()) for k, t in types))
                return False, notes, i + 1
            if note == "stop":
                notes.add("INCRBYFLOAT long double vs f64: sequence ended early (known difference)")
                return True, notes, i + 1
            if note:
                notes.add(note)
        diff = compare_dataset(pair)
        if diff:
            print("FAIL seed %d [RESP%d]: final dataset differs: %s" % (seed, proto, diff))
            for h in history:
                print("    " + line(h))
            return False, notes, ops
        return True, notes, ops
    finally:
        pair.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stmd", required=True, help="host:port of stmd")
    ap.add_argument("--redis", required=True, help="host:port of the reference redis-server")
    ap.add_argument("--results", help="write `passed failed skipped` here")
    ap.add_argument("--seeds", help="seeds to run, e.g. 1-40 or 7,9 (default: %d-%d)" % (SEEDS[0], SEEDS[-1]))
    ap.add_argument("--ops", type=int, default=OPS_PER_SEED, help="commands per sequence")
    ap.add_argument("--print", dest="print_seed", type=int, help="print the commands of one seed and exit")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()

    if opts.print_seed is not None:
        gen = Gen(opts.print_seed)
        for _ in range(opts.ops):
            print(line(gen.op()))
        return 0
    seeds = list(SEEDS)
    if opts.seeds:
        seeds = []
        for part in opts.seeds.split(","):
            lo, _, hi = part.partition("-")
            seeds += list(range(int(lo), int(hi or lo) + 1))

    def addr(spec):
        host, port = spec.rsplit(":", 1)
        return host, int(port)

    stmd, redis = addr(opts.stmd), addr(opts.redis)
    passed = failed = 0
    all_notes = set()
    total_ops = 0
    t0 = time.time()
    for seed in seeds:
        for proto in (2, 3):
            ok, notes, n = run_seed(stmd, redis, seed, proto, opts.ops, opts.verbose)
            total_ops += n
            all_notes |= notes
            if ok:
                passed += 1
                if opts.verbose:
                    print("ok   seed %d [RESP%d] (%d commands)" % (seed, proto, n))
            else:
                failed += 1
    elapsed = time.time() - t0
    if all_notes:
        print("allowed differences seen:")
        for n in sorted(all_notes):
            print("  " + n)
    print("random: %d seeds x 2 protocols, %d commands per server in %.1fs: %d passed, %d failed" % (
        len(seeds), total_ops, elapsed, passed, failed))
    return write_results(opts.results, passed, failed, 0)


if __name__ == "__main__":
    sys.exit(main())
