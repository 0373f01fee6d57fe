#!/usr/bin/env python3
"""Differential runner: plays every case of the corpus against stmd and a real redis-server (and
valkey-server, with --valkey), in RESP2 and in RESP3, and compares the raw reply bytes.

Corpus format (conformance/corpus/*.txt), redis-cli-like:
  * Cases are separated by blank lines. A case runs on a fresh state (FLUSHALL first) and on fresh
    connections, once per protocol (RESP3 connections send HELLO 3 first, reply not compared).
  * `# text` lines are comments; the first comment of a case is its name (its id is `file:name`).
    A block with comments only (e.g. a file header) is not a case.
  * One command per line, split like redis-cli does: blanks separate arguments; "double quotes"
    understand \\n \\r \\t \\b \\a \\\\ \\" and \\xHH (binary); 'single quotes' only \\'.
  * A command line may start with modifiers in brackets, `[mod mod] CMD args`:
      unordered  the reply is an aggregate whose element order is not defined (KEYS, SMEMBERS,
                 HGETALL…): compare the multiset of its elements (of its pairs for a map)
      scan       a SCAN-family command: iterate it to completion (replacing the cursor) and compare
                 the sorted set of elements (of pairs for HSCAN/ZSCAN); errors compare exactly
      c2         run on the case's second connection (pub/sub, blocking commands, WATCH races)
      send       send the command without reading its reply (read it later with a `[read]` line)
      read       (no command) read one reply on that connection
      replies=N  the command answers with N replies (SUBSCRIBE a b c); 0 reads nothing
      raw        the line is one quoted string of bytes sent as they are (inline commands,
                 several requests in one write, protocol errors), then `replies` replies are read
  * Case directives: `@sleep MS` (a pause between commands), `@resp2` / `@resp3` (run in one
    protocol only), `@after CMD args` (run on a control connection after the case, reply ignored:
    to undo CONFIG SET and the like).
  * `@expect "bytes"` after a command line (or a `[read]`): the reply that command must get,
    written out (RESP bytes with the escapes above), for a command neither reference serves (a
    newer Redis's or Valkey's, from its documentation), or the message its write published. stmd's
    reply is compared with it, not with the references'.
    `@expect2` / `@expect3` give it for one protocol (a nil is `$-1` in RESP2, `_` in RESP3).
    With --stack (redis-server 7.4.1 with RedisJSON and RediSearch), each case that has an
    `@expect` runs there too and every written-out reply must be the one that server gives, so a
    real server checks what was copied from the documentation; from the step where 7.4.1 answers
    `ERR unknown command` (a command added later) on, the `@expect` alone stands.
  * `@stack-differs "reason"` (case directive): the case's `@expect` replies are a later Redis's
    (an 8.x option or reply 7.4.1 lacks, the reason says which): the stack server is not asked.
    Cases listed in stack-unreconciled.txt are ones where 7.4.1 contradicts some `@expect` and
    nobody has yet decided whether the expectation (and stmd) is wrong or Redis 8 changed the
    reply: the contradiction is printed and counted, without failing the case, until it is
    settled (the runner says when a listed case no longer contradicts).

A case whose command stmd answers with `-ERR unknown command` while Redis does not is counted as
*unsupported* (not failed) and listed, so cases for commands that are still being built can be
written ahead. Cases in known-failures.txt are run, printed and counted separately; they do not fail
the run. The final summary goes to stdout and, with --results, to a file as `passed failed skipped`.
"""

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resp  # noqa: E402
from allowlist import ALLOWED, ALWAYS_CHECKED, NOPERM_REASON, REFERENCES_DIFFER, allowed_key, noperm_7_2  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "b": b"\b", "a": b"\a", '"': b'"', "\\": b"\\"}
MODS = {"unordered", "scan", "c2", "send", "read", "raw"}


def split_args(line):
    """Splits a command line into byte-string arguments the way redis-cli's sdssplitargs does."""
    args, i, n = [], 0, len(line)
    while True:
        while i < n and line[i].isspace():
            i += 1
        if i >= n:
            return args
        cur = bytearray()
        if line[i] == '"':
            i += 1
            while True:
                if i >= n:
                    raise ValueError("unbalanced double quote")
                ch = line[i]
                if ch == "\\" and i + 1 < n:
                    nxt = line[i + 1]
                    if nxt == "x" and i + 3 < n and re.fullmatch(r"[0-9a-fA-F]{2}", line[i + 2 : i + 4]):
                        cur.append(int(line[i + 2 : i + 4], 16))
                        i += 4
                        continue
                    cur += ESCAPES.get(nxt, nxt.encode())
                    i += 2
                    continue
                if ch == '"':
                    i += 1
                    if i < n and not line[i].isspace():
                        raise ValueError("closing quote must be followed by a space")
                    break
                cur += ch.encode()
                i += 1
        elif line[i] == "'":
            i += 1
            while True:
                if i >= n:
                    raise ValueError("unbalanced single quote")
                ch = line[i]
                if ch == "\\" and i + 1 < n and line[i + 1] == "'":
                    cur += b"'"
                    i += 2
                    continue
                if ch == "'":
                    i += 1
                    if i < n and not line[i].isspace():
                        raise ValueError("closing quote must be followed by a space")
                    break
                cur += ch.encode()
                i += 1
        else:
            while i < n and not line[i].isspace():
                cur += line[i].encode()
                i += 1
        args.append(bytes(cur))


class Step:
    __slots__ = ("text", "args", "mods", "conn", "replies", "sleep_ms", "expect")

    def __init__(self, text, args=None, mods=(), conn="c1", replies=1, sleep_ms=0):
        self.text, self.args, self.mods, self.conn = text, args, set(mods), conn
        self.replies, self.sleep_ms = replies, sleep_ms
        self.expect = {}  # protocol → the reply bytes written in the corpus (@expect)


class Case:
    def __init__(self, file, line, name):
        self.file, self.line, self.name = file, line, name
        self.steps, self.after, self.protocols = [], [], (2, 3)
        self.stack_differs = None  # why redis-server 7.4.1 cannot check the @expect (@stack-differs)

    @property
    def id(self):
        return "%s:%s" % (self.file, self.name)


def parse_corpus_file(path):
    base = os.path.basename(path)
    cases, block = [], []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    lines.append("")
    for lineno, raw in enumerate(lines, 1):
        if raw.strip():
            block.append((lineno, raw.strip()))
            continue
        if block:
            case = parse_block(base, block)
            if case:
                cases.append(case)
            block = []
    return cases


def parse_block(base, block):
    name, case = None, None
    comments, steps, after, protocols, stack_differs = [], [], [], (2, 3), None
    for lineno, text in block:
        try:
            if text.startswith("#"):
                comments.append(text.lstrip("#").strip())
            elif text.startswith("@sleep"):
                steps.append(Step(text, sleep_ms=int(text.split()[1])))
            elif text == "@resp2":
                protocols = (2,)
            elif text == "@resp3":
                protocols = (3,)
            elif text.startswith("@stack-differs"):
                reason = split_args(text[len("@stack-differs") :])
                if len(reason) != 1 or not reason[0].strip():
                    raise ValueError('@stack-differs takes the reason, one quoted string')
                stack_differs = reason[0].decode()
            elif text.startswith("@after "):
                after.append(split_args(text[len("@after ") :]))
            elif text.split()[0] in ("@expect", "@expect2", "@expect3"):
                word, _, rest = text.partition(" ")
                reply = split_args(rest)
                if len(reply) != 1:
                    raise ValueError("@expect takes one quoted string")
                # A `[read]` step's reply (a pub/sub message) can be written out too.
                if not steps or (steps[-1].args is None and "read" not in steps[-1].mods) \
                        or steps[-1].mods & {"send", "scan"}:
                    raise ValueError("@expect follows the command (or [read]) whose reply it gives")
                for proto in {"@expect": (2, 3), "@expect2": (2,), "@expect3": (3,)}[word]:
                    steps[-1].expect[proto] = reply[0]
            elif text.startswith("@"):
                raise ValueError("unknown directive")
            else:
                mods, conn, replies, rest = set(), "c1", 1, text
                if rest.startswith("["):
                    close = rest.index("]")
                    for m in rest[1:close].split():
                        if m.startswith("replies="):
                            replies = int(m.split("=", 1)[1])
                        elif m in MODS:
                            mods.add(m)
                        else:
                            raise ValueError("unknown modifier %r" % m)
                    rest = rest[close + 1 :].strip()
                if "c2" in mods:
                    conn = "c2"
                args = split_args(rest)
                if "read" in mods:
                    if args:
                        raise ValueError("[read] takes no command")
                    args = None
                elif "raw" in mods and len(args) != 1:
                    raise ValueError("[raw] takes one quoted string")
                elif not args:
                    raise ValueError("empty command")
                steps.append(Step(text, args, mods, conn, replies))
        except ValueError as e:
            sys.exit("%s:%d: %s: %s" % (base, lineno, e, text))
    if not steps:
        return None
    first_cmd = next(s.text for s in steps if s.args is not None or "read" in s.mods)
    name = comments[0] if comments else " ; ".join(s.text for s in steps if s.args)[:120]
    case = Case(base[:-4] if base.endswith(".txt") else base, block[0][0], name)
    case.steps, case.after, case.protocols = steps, after, protocols
    case.stack_differs = stack_differs
    if stack_differs is not None and not any(s.expect for s in steps):
        sys.exit("%s:%d: @stack-differs in a case without @expect" % (base, block[0][0]))
    del first_cmd
    return case


# ---------------------------------------------------------------------------------------------
# Running a case on one server


class Server:
    def __init__(self, label, host, port):
        self.label, self.host, self.port = label, host, port
        self.control = None

    def connected_clients(self):
        info = self.ctl([b"INFO", b"clients"]).text()
        for line in info.split(b"\r\n"):
            if line.startswith(b"connected_clients:"):
                return int(line.split(b":")[1])
        return 0

    def wait_disconnected(self, baseline):
        """Waits (at most 2 s) until the connections a case closed are gone from the server, so
        that the next run does not see them: a multi-threaded server may register a close a
        little after the next commands, where Redis's one thread has usually done it before."""
        deadline = time.time() + 2
        while self.connected_clients() > baseline and time.time() < deadline:
            time.sleep(0.001)

    def ctl(self, args):
        for attempt in range(2):
            try:
                if self.control is None:
                    self.control = resp.Conn(self.host, self.port)
                return self.control.call(args)
            except (resp.Timeout, resp.Closed, OSError):
                if self.control:
                    self.control.close()
                self.control = None
                if attempt:
                    raise


class Outcome:
    """What one step got: a list of replies, or a marker string (`<timeout>`, `<closed>`, `<sent>`)."""

    __slots__ = ("replies", "marker", "scan_items")

    def __init__(self, replies=None, marker=None, scan_items=None):
        self.replies, self.marker, self.scan_items = replies or [], marker, scan_items

    def show(self):
        if self.marker:
            return self.marker
        if self.scan_items is not None:
            return "scan-set " + repr(self.scan_items)
        return " | ".join(r.__repr__() for r in self.replies)


def open_conn(server, proto):
    c = resp.Conn(server.host, server.port)
    if proto == 3:
        c.call([b"HELLO", b"3"])
    return c


def scan_all(conn, args):
    """Iterates a SCAN-family command to completion; returns ('error', reply) or the sorted items."""
    name = args[0].upper()
    cur_at = 1 if name == b"SCAN" else 2
    upper = {a.upper() for a in args[3:]}
    pairs = name in (b"HSCAN", b"ZSCAN") and not upper & {b"NOVALUES", b"NOSCORES"}
    args = list(args)
    items = set()
    for _ in range(100000):
        r = conn.call(args)
        if r.kind != "*" or len(r.value) != 2:
            return r, None
        cursor, elems = r.value
        vals = [e.raw for e in (elems.value or [])]
        if pairs:
            items.update(zip(vals[0::2], vals[1::2]))
        else:
            items.update(vals)
        if cursor.value == b"0":
            return None, sorted(items)
        args[cur_at] = cursor.value
    return None, ["<scan did not finish>"]


def run_case(server, case, proto):
    server.ctl([b"FLUSHALL"])
    baseline = server.connected_clients()
    conns = {}
    outcomes = []
    unknown_seen = False
    try:
        for step in case.steps:
            if step.sleep_ms:
                time.sleep(step.sleep_ms / 1000.0)
                continue
            if unknown_seen and "read" in step.mods:
                # The command that would have produced it is unknown: do not wait for the timeout.
                outcomes.append(Outcome(marker="<not read: unknown command earlier>"))
                continue
            try:
                c = conns.get(step.conn)
                if c is None:
                    c = conns[step.conn] = open_conn(server, proto)
                if "read" in step.mods:
                    outcomes.append(Outcome([c.read()]))
                elif "send" in step.mods:
                    c.send(step.args)
                    outcomes.append(Outcome(marker="<sent>"))
                elif "raw" in step.mods:
                    c.sock.sendall(step.args[0])
                    outcomes.append(Outcome([c.read() for _ in range(step.replies)], marker=None if step.replies else "<sent>"))
                elif "scan" in step.mods:
                    err, items = scan_all(c, step.args)
                    outcomes.append(Outcome([err]) if err else Outcome(scan_items=items))
                else:
                    c.send(step.args)
                    replies = []
                    for _ in range(step.replies):
                        replies.append(c.read())
                        if is_unknown_command(Outcome(replies)):
                            break  # an unknown command answers once, whatever it would have
                    outcomes.append(Outcome(replies))
                unknown_seen = unknown_seen or is_unknown_command(outcomes[-1])
            except resp.Timeout:
                outcomes.append(Outcome(marker="<timeout>"))
                conns.pop(step.conn).close()
            except (resp.Closed, OSError):
                outcomes.append(Outcome(marker="<closed>"))
                old = conns.pop(step.conn, None)
                if old:
                    old.close()
    finally:
        for c in conns.values():
            c.close()
        try:
            server.wait_disconnected(baseline)
        except (resp.Timeout, resp.Closed, OSError):
            pass
        for args in case.after:
            try:
                server.ctl(args)
            except (resp.Timeout, resp.Closed, OSError):
                pass
    return outcomes


# ---------------------------------------------------------------------------------------------
# Comparing


def unordered_key(reply):
    if reply.kind in "*~>" and reply.value is not None:
        return (reply.kind, reply.count, sorted(c.raw for c in reply.value))
    if reply.kind in "%" and reply.value is not None:
        v = reply.value
        return (reply.kind, reply.count, sorted(zip((c.raw for c in v[0::2]), (c.raw for c in v[1::2]))))
    return reply.raw


def step_matches(step, mine, theirs):
    """(matches, allowed-reason or None)."""
    if theirs.marker == "<timeout>":
        return False, None  # the case itself is wrong: redis-server never answered
    if mine.marker or theirs.marker:
        return mine.marker == theirs.marker, None
    if mine.scan_items is not None or theirs.scan_items is not None:
        return mine.scan_items == theirs.scan_items, None
    if len(mine.replies) != len(theirs.replies):
        return False, None
    # For ALWAYS_CHECKED commands stmd must answer otherwise than the reference (Redis 7.2's
    # text): their rule judges equal replies too.
    always = bool(step.args) and "raw" not in step.mods and allowed_key(step.args) in ALWAYS_CHECKED
    if not always and all(a.raw == b.raw for a, b in zip(mine.replies, theirs.replies)):
        return True, None
    if "unordered" in step.mods:
        ok = all(unordered_key(a) == unordered_key(b) for a, b in zip(mine.replies, theirs.replies))
        if ok:
            return True, None
    if any(b.kind == "-" and (b"NOPERM" in (b.value or b"") or b"The user executing the script" in (b.value or b"")) for b in theirs.replies):
        if all(noperm_7_2(a, b) for a, b in zip(mine.replies, theirs.replies)):
            return True, NOPERM_REASON
    if step.args and "raw" not in step.mods:
        rule = ALLOWED.get(allowed_key(step.args))
        if rule is not None:
            check, reason = rule
            if all(check(a, b, step.args) for a, b in zip(mine.replies, theirs.replies)):
                return True, reason
    return False, None


def step_verdict(case, step, mine, red, val):
    """(matches, allowed-reason or None) of one step against both references.

    Without a second reference (val is None) this is step_matches against redis-server. With one,
    stmd must match both (each exactly or by its ALLOWED rule). Where it matches only one, the
    step passes only when REFERENCES_DIFFER names its command (or its case), names that reference
    as the one stmd follows, and its check accepts stmd's reply against the other reference."""
    ok_r, why_r = step_matches(step, mine, red)
    if val is None:
        return ok_r, why_r
    ok_v, why_v = step_matches(step, mine, val)
    if ok_r and ok_v:
        return True, why_r or why_v
    if not (ok_r or ok_v):
        return False, None
    rule = REFERENCES_DIFFER.get(case.id)
    if rule is None and step.args and "raw" not in step.mods:
        rule = REFERENCES_DIFFER.get(allowed_key(step.args))
    if rule is None:
        return False, None
    follows, check, reason = rule
    if follows == "redis" and ok_r:
        other = val
    elif follows == "valkey" and ok_v:
        other = red
    else:
        return False, None
    if other.marker or other.scan_items is not None:
        return False, None
    # A scan stmd iterated to the end has no one reply: the check sees None for it (only
    # any_reply-like checks are named for scan-family commands and cases).
    replies = [None] * len(other.replies) if mine.scan_items is not None else mine.replies
    if len(other.replies) != len(replies):
        return False, None
    if all(check(a, b, step.args) for a, b in zip(replies, other.replies)):
        return True, "%s (stmd follows %s)" % (reason, follows)
    return False, None


def expected_verdict(step, mine, proto):
    """(matches, None): stmd's reply bytes against the ones the case's `@expect` wrote out."""
    if mine.marker or mine.scan_items is not None:
        return False, None
    return b"".join(r.raw for r in mine.replies) == step.expect[proto], None


def stack_verdicts(steps, stack_run, proto):
    """How redis-server 7.4.1 (the stack reference) judges each step's `@expect`: None for a step
    without one for this protocol; else "confirmed" (its reply is the written one, byte for byte),
    "contradicted" (the written-out reply is not what Redis answers), or "absent": it answered
    `ERR unknown command` to that step or to an earlier one (a command added after 7.4.1, whose
    effects the later steps see: what they get from 7.4.1 checks nothing)."""
    verdicts, unknown_seen = [], False
    for step, theirs in zip(steps, stack_run):
        unknown_seen = unknown_seen or is_unknown_command(theirs)
        if proto not in step.expect:
            verdicts.append(None)
        elif unknown_seen:
            verdicts.append("absent")
        elif theirs.marker or theirs.scan_items is not None:
            verdicts.append("contradicted")
        else:
            same = b"".join(r.raw for r in theirs.replies) == step.expect[proto]
            verdicts.append("confirmed" if same else "contradicted")
    return verdicts


def references_differ(red, val):
    """Whether redis-server and valkey-server answered one step differently (raw bytes)."""
    if red.marker or val.marker:
        return red.marker != val.marker
    if red.scan_items is not None or val.scan_items is not None:
        return red.scan_items != val.scan_items
    return [r.raw for r in red.replies] != [r.raw for r in val.replies]


def is_unknown_command(outcome):
    return any(r.kind == "-" and r.value.startswith(b"ERR unknown command") for r in outcome.replies)


def unknown_name(outcome):
    """The command named in stmd's `ERR unknown command 'x', …` reply, upper-cased."""
    for r in outcome.replies:
        m = re.match(rb"ERR unknown command '([^']*)'", r.value or b"")
        if m:
            return m.group(1).decode(errors="replace").upper()
    return "?"


def load_known(path):
    known = {}
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                case_id, _, reason = line.partition("  #")
                known[case_id.strip()] = reason.strip()
    return known


def print_allowed(allowed_used):
    """The allow-list entries that excused a difference in this run, with their reasons."""
    if allowed_used:
        print("allowed differences seen (allowlist.py):")
        for k, reason in sorted(allowed_used.items()):
            print("  %-22s %s" % (k, reason))


def write_results(path, passed, failed, skipped):
    """`passed failed skipped` for conformance/run's summary (no file without --results)."""
    if path:
        with open(path, "w") as f:
            f.write("%d %d %d\n" % (passed, failed, skipped))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stmd", required=True, help="host:port of stmd")
    ap.add_argument("--redis", required=True, help="host:port of the reference redis-server")
    ap.add_argument("--valkey", help="host:port of the second reference, valkey-server 8.1")
    ap.add_argument("--stack", help="host:port of redis-server 7.4.1 with RedisJSON and RediSearch, "
                    "which checks the corpus's @expect replies")
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "..", "corpus"))
    ap.add_argument("--known", default=os.path.join(os.path.dirname(__file__), "known-failures.txt"))
    ap.add_argument("--unreconciled", default=os.path.join(os.path.dirname(__file__), "stack-unreconciled.txt"))
    ap.add_argument("--results", help="write `passed failed skipped` here")
    ap.add_argument("-k", "--filter", help="only cases whose id contains this text")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case")
    opts = ap.parse_args()

    def server(label, spec):
        host, port = spec.rsplit(":", 1)
        return Server(label, host, int(port))

    stmd, redis = server("stmd", opts.stmd), server("redis", opts.redis)
    valkey = server("valkey", opts.valkey) if opts.valkey else None
    stack = server("stack", opts.stack) if opts.stack else None
    servers = [s for s in (stmd, redis, valkey) if s]
    # The servers are independent: each case runs on all of them at once, so a second (or third)
    # reference does not lengthen the run.
    pool = ThreadPoolExecutor(len(servers) + 1)
    ref_diffs = {}  # allow-list key → steps where the two references answered differently
    files = sorted(f for f in os.listdir(opts.corpus) if f.endswith(".txt"))
    cases = [c for f in files for c in parse_corpus_file(os.path.join(opts.corpus, f))]
    if opts.filter:
        cases = [c for c in cases if opts.filter in c.id]
    seen = {}
    for c in cases:
        n = seen.get(c.id, 0) + 1
        seen[c.id] = n
        if n > 1:
            c.name = "%s #%d" % (c.name, n)
    known = load_known(opts.known)
    unreconciled = load_known(opts.unreconciled)
    settled = []  # listed unreconciled cases that 7.4.1 no longer contradicts

    passed = failed = known_failed = 0
    unsupported = {}  # command → number of case runs
    allowed_used = {}
    stack_seen = {"confirmed": 0, "contradicted": 0, "marked": 0}
    stack_absent = {}  # command 7.4.1 does not know → @expect steps it could not check
    per_file = {}
    fixed_known = []
    t0 = time.time()
    for case in cases:
        stats = per_file.setdefault(case.file, [0, 0, 0])
        for proto in case.protocols:
            label = "%s [RESP%d]" % (case.id, proto)
            # The stack server plays only the cases it checks: an `@expect` for this protocol and
            # no `@stack-differs`.
            checked = stack and case.stack_differs is None and any(proto in s.expect for s in case.steps)
            asked = servers + [stack] if checked else servers
            runs = list(pool.map(lambda srv: run_case(srv, case, proto), asked))
            mine, theirs = runs[0], runs[1]
            second = runs[2] if valkey else [None] * len(mine)
            steps = [s for s in case.steps if not s.sleep_ms]
            verdicts = [expected_verdict(s, a, proto) if proto in s.expect else step_verdict(case, s, a, b, c)
                        for s, a, b, c in zip(steps, mine, theirs, second)]
            third = runs[-1] if checked else [None] * len(mine)
            stack_v = stack_verdicts(steps, third, proto) if checked else [None] * len(mine)
            if stack and case.stack_differs is not None:
                stack_seen["marked"] += sum(proto in s.expect for s in steps)
            lacked = next((unknown_name(t) for t in third if t is not None and is_unknown_command(t)), None)
            for sv in stack_v:
                if sv == "absent":
                    stack_absent[lacked] = stack_absent.get(lacked, 0) + 1
                elif sv:
                    stack_seen[sv] += 1
            stack_bad = "contradicted" in stack_v
            if case.id in unreconciled and checked:
                if stack_bad:
                    stack_seen["listed"] = stack_seen.get("listed", 0) + sum(v == "contradicted" for v in stack_v)
                    if opts.verbose:
                        print("UNRECONCILED %s: %s" % (label, unreconciled[case.id]))
                    stack_bad = False
                elif label not in settled:
                    settled.append(label)
            ok = all(v[0] for v in verdicts)
            if valkey:
                for s, b, c in zip(steps, theirs, second):
                    if proto not in s.expect and references_differ(b, c):
                        key = allowed_key(s.args) if s.args and "raw" not in s.mods else "(raw)"
                        ref_diffs[key] = ref_diffs.get(key, 0) + 1
            if not ok and not stack_bad:
                unknown = [a for s, a, b in zip(steps, mine, theirs)
                           if "raw" not in s.mods and is_unknown_command(a) and not is_unknown_command(b)]
                if unknown:
                    name = unknown_name(unknown[0])
                    unsupported[name] = unsupported.get(name, 0) + 1
                    stats[2] += 1
                    if opts.verbose:
                        print("UNSUPPORTED %s (%s)" % (label, name))
                    continue
            for v, s in zip(verdicts, steps):
                if v[0] and v[1]:
                    allowed_used[allowed_key(s.args)] = v[1]
            if ok and not stack_bad:
                passed += 1
                stats[0] += 1
                if case.id in known:
                    fixed_known.append(label)
                if opts.verbose:
                    print("ok   %s" % label)
                continue
            # A written-out reply that the real 7.4.1 contradicts is a corpus error: it fails even
            # for a known failure of stmd's.
            is_known = case.id in known and not stack_bad
            tag = "KNOWN-FAIL" if is_known else "FAIL"
            if is_known:
                known_failed += 1
                stats[2] += 1
            else:
                failed += 1
                stats[1] += 1
            print("%s %s  (%s line %d)%s" % (tag, label, case.file + ".txt", case.line,
                                            "  @expect contradicted by redis-server 7.4.1" if stack_bad else ""))
            if is_known:
                print("    known: %s" % known[case.id])
            for s, a, b, c, v, t, sv in zip(steps, mine, theirs, second, verdicts, third, stack_v):
                mark = "  " if v[0] and sv != "contradicted" else "!="
                print("  %s %s" % (mark, s.text))
                if mark == "  ":
                    print("       all  : %s" % a.show())
                else:
                    print("       stmd  : %s" % a.show())
                    if proto in s.expect:
                        print("       expect: %r (@expect)" % s.expect[proto])
                        if sv == "contradicted":
                            print("       stack : %s (redis-server 7.4.1)" % t.show())
                        continue
                    print("       redis : %s" % b.show())
                    if c is not None:
                        print("       valkey: %s" % c.show())
    elapsed = time.time() - t0

    print()
    print("differential corpus: cases per file (passed/failed/skipped, counting each protocol run):")
    for f in sorted(per_file):
        p, fl, sk = per_file[f]
        print("  %-14s %4d / %d / %d" % (f, p, fl, sk))
    print_allowed(allowed_used)
    if ref_diffs:
        print("steps where redis-server and valkey-server differ, by command (each protocol run): %s" % (
            ", ".join("%s(%d)" % kv for kv in sorted(ref_diffs.items()))))
    if stack:
        print("@expect replies checked against redis-server 7.4.1 (stack), steps per protocol run: "
              "%d confirmed, %d contradicted (%d of them in cases listed in stack-unreconciled.txt), "
              "%d in cases marked @stack-differs, %d at or after a command it lacks%s" % (
                  stack_seen["confirmed"], stack_seen["contradicted"], stack_seen.get("listed", 0), stack_seen["marked"],
                  sum(stack_absent.values()),
                  (": " + ", ".join("%s(%d)" % kv for kv in sorted(stack_absent.items()))) if stack_absent else ""))
    if unsupported:
        total = sum(unsupported.values())
        print("unsupported by stmd (ERR unknown command), %d case runs skipped: %s" % (
            total, ", ".join("%s(%d)" % kv for kv in sorted(unsupported.items()))))
    if known_failed:
        print("known failures (known-failures.txt), still failing: %d" % known_failed)
    for label in fixed_known:
        print("NOTE: known failure now passes, remove it from known-failures.txt: %s" % label)
    for label in settled:
        print("NOTE: redis-server 7.4.1 no longer contradicts this case, remove it from stack-unreconciled.txt: %s" % label)
    skipped = sum(unsupported.values()) + known_failed
    print("differential: %d cases, %d runs in %.1fs: %d passed, %d failed, %d skipped (%d unsupported, %d known failures)" % (
        len(cases), passed + failed + skipped, elapsed, passed, failed, skipped, sum(unsupported.values()), known_failed))
    return write_results(opts.results, passed, failed, skipped)


if __name__ == "__main__":
    sys.exit(main())
