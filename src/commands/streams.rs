//! Stream commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID, XREAD, the consumer
//! groups (XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM) and XINFO. Blocking XREAD and
//! XREADGROUP use the queues of `crate::store::blocking` like BLPOP: a command that finds nothing joins
//! the queues of its keys and the connection reruns it when a write wakes it.

use super::args::{int, is};
use super::{err, BlockRequest, CmdResult, Ctx};
use crate::events::class;
use crate::protocol::{self, parse_i64_strict, Reply};
use crate::store::stream::{
    EntryFields, Fields, Group, RefPolicy, Stream, StreamError, StreamId, Trim, INVALID_READ,
    NODE_MAX_ENTRIES,
};
use crate::store::stream_group::{AutoClaimArgs, ClaimOptions, DeleteOutcome};
use crate::store::{now_ms, Locked, Value};
use bytes::{BufMut, Bytes, BytesMut};
use std::time::{Duration, Instant};

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// Redis's error text for each refusal of the stream's logic.
fn refused(e: StreamError) -> Reply {
    Reply::error(match e {
        StreamError::Exhausted => {
            "ERR The stream has exhausted the last possible ID, unable to add more items"
        }
        StreamError::IdTooSmall => {
            "ERR The ID specified in XADD is equal or smaller than the target stream top item"
        }
        StreamError::BelowMaxDeleted => {
            "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
        }
        StreamError::BelowTop => {
            "ERR The ID specified in XSETID is smaller than the target stream top item"
        }
        StreamError::EntriesAddedBelowLength => {
            "ERR The entries_added specified in XSETID is smaller than the target stream length"
        }
        StreamError::GroupExists => "BUSYGROUP Consumer Group name already exists",
    })
}

// ---------------------------------------------------------------- typed access

fn stream<'l>(locked: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<&'l Stream>, Reply> {
    match locked.get(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Stream(s)) => Ok(Some(s)),
        Some(_) => Err(super::typed::wrongtype()),
    }
}

fn stream_mut<'l>(locked: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<&'l mut Stream>, Reply> {
    match locked.get(key).map(|e| &e.value) {
        None => return Ok(None),
        Some(Value::Stream(_)) => {}
        Some(_) => return Err(super::typed::wrongtype()),
    }
    match locked.get_mut(key).map(|e| &mut e.value) {
        Some(Value::Stream(s)) => Ok(Some(s)),
        _ => Ok(None),
    }
}

fn signal(locked: &Locked<'_>, key: &[u8]) {
    locked.keyspace().waiters.signal(key);
}

// ---------------------------------------------------------------- ids

/// Redis's `string2ull`: a strict integer, else what `strtoull` accepts in full.
fn parse_u64(text: &[u8]) -> Option<u64> {
    if let Some(v) = parse_i64_strict(text) {
        return (v >= 0).then_some(v as u64);
    }
    let s = std::str::from_utf8(text).ok()?;
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first()? {
        b'+' => (false, &t[1..]),
        b'-' => (true, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: u64 = digits.parse().ok()?;
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Redis's `streamGenericParseIDOrReply`. Returns the id and whether the sequence was given
/// (false for `<ms>-*` when `allow_auto_seq`).
fn parse_id_full(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    allow_auto_seq: bool,
) -> Result<(StreamId, bool), Reply> {
    let invalid = || Reply::error(INVALID_ID);
    if arg.len() > 127 {
        return Err(invalid());
    }
    if arg == b"-" || arg == b"+" {
        if strict {
            return Err(invalid());
        }
        return Ok((
            if arg == b"-" {
                StreamId::MIN
            } else {
                StreamId::MAX
            },
            true,
        ));
    }
    // Like C strings, the text ends at a NUL byte.
    let arg = arg.split(|b| *b == 0).next().unwrap_or_default();
    match arg.iter().position(|b| *b == b'-') {
        None => Ok((
            StreamId::new(parse_u64(arg).ok_or_else(invalid)?, missing_seq),
            true,
        )),
        Some(dash) => {
            let ms = parse_u64(&arg[..dash]).ok_or_else(invalid)?;
            let rest = &arg[dash + 1..];
            if allow_auto_seq && rest == b"*" {
                return Ok((StreamId::new(ms, 0), false));
            }
            Ok((
                StreamId::new(ms, parse_u64(rest).ok_or_else(invalid)?),
                true,
            ))
        }
    }
}

/// A strict id (no `-`/`+`), missing sequence 0.
fn strict_id(arg: &[u8]) -> Result<StreamId, Reply> {
    parse_id_full(arg, 0, true, false).map(|(id, _)| id)
}

/// Redis's `streamParseIntervalIDOrReply`: `-`, `+`, `(id` exclusive, incomplete ids.
fn interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), Reply> {
    if arg.len() > 1 && arg[0] == b'(' {
        Ok((parse_id_full(&arg[1..], missing_seq, true, false)?.0, true))
    } else {
        Ok((parse_id_full(arg, missing_seq, false, false)?.0, false))
    }
}

fn range_start(arg: &[u8]) -> Result<StreamId, Reply> {
    let (id, ex) = interval_id(arg, 0)?;
    if ex {
        id.incr()
            .ok_or_else(|| Reply::error("ERR invalid start ID for the interval"))
    } else {
        Ok(id)
    }
}

fn range_end(arg: &[u8]) -> Result<StreamId, Reply> {
    let (id, ex) = interval_id(arg, u64::MAX)?;
    if ex {
        id.decr()
            .ok_or_else(|| Reply::error("ERR invalid end ID for the interval"))
    } else {
        Ok(id)
    }
}

fn id_reply(id: StreamId) -> Reply {
    id.with_text(|text| Reply::bulk(text))
}

/// An entry, `[id, [field, value, …]]`, as its encoded bytes (the same in RESP2 and RESP3): one
/// allocation, where a tree of replies takes one per field and the id and two arrays.
fn entry_reply(id: StreamId, fields: EntryFields<'_>) -> Reply {
    let size = 64 + fields.clone().map(|f| f.len() + 16).sum::<usize>();
    let mut out = BytesMut::with_capacity(size);
    out.put_slice(b"*2\r\n");
    id.with_text(|text| protocol::bulk(&mut out, text));
    protocol::int_line(&mut out, b'*', fields.len() as i64);
    for field in fields {
        protocol::bulk(&mut out, field);
    }
    Reply::Raw(out.freeze())
}

/// Entries of `s` from `start` to `end` (inclusive), at most `count` (0 = all), reversed if asked.
fn range_reply(s: &Stream, start: StreamId, end: StreamId, count: usize, rev: bool) -> Reply {
    if start > end {
        return Reply::Array(Vec::new());
    }
    let limit = if count == 0 { usize::MAX } else { count };
    let items: Vec<Reply> = if rev {
        s.range_rev(start, end)
            .take(limit)
            .map(|(id, f)| entry_reply(id, f))
            .collect()
    } else {
        s.range(start, end)
            .take(limit)
            .map(|(id, f)| entry_reply(id, f))
            .collect()
    };
    Reply::Array(items)
}

// ---------------------------------------------------------------- XADD / XTRIM

struct TrimArgs {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    /// KEEPREF | DELREF | ACKED (Redis 8.2), KEEPREF when not given.
    policy: RefPolicy,
    nomkstream: bool,
    /// XADD: the id argument's position, the id and whether its sequence was given.
    id: Option<(StreamId, bool)>,
    id_pos: usize,
}

/// KEEPREF | DELREF | ACKED, any case.
fn ref_policy(arg: &[u8]) -> Option<RefPolicy> {
    if is(arg, "KEEPREF") {
        Some(RefPolicy::KeepRef)
    } else if is(arg, "DELREF") {
        Some(RefPolicy::DelRef)
    } else if is(arg, "ACKED") {
        Some(RefPolicy::Acked)
    } else {
        None
    }
}

/// Redis's `streamParseAddOrTrimArgsOrReply`.
fn parse_add_or_trim(args: &[&[u8]], xadd: bool) -> Result<TrimArgs, Reply> {
    let mut out = TrimArgs {
        trim: None,
        approx: false,
        limit: 0,
        policy: RefPolicy::KeepRef,
        nomkstream: false,
        id: None,
        id_pos: 0,
    };
    let mut limit_given = false;
    let mut policy_given = false;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = args[i];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if out.trim.is_some() {
                return Err(Reply::error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible"));
            }
            out.approx = false;
            let next = args[i + 1];
            if more >= 2 && next == b"~" {
                out.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            if is(opt, "maxlen") {
                let n = int(args[i + 1])?;
                if n < 0 {
                    return Err(Reply::error("ERR The MAXLEN argument must be >= 0."));
                }
                out.trim = Some(Trim::MaxLen(n as u64));
            } else {
                out.trim = Some(Trim::MinId(strict_id(args[i + 1])?));
            }
            i += 1;
        } else if is(opt, "limit") && more > 0 {
            let n = int(args[i + 1])?;
            if n < 0 {
                return Err(Reply::error("ERR The LIMIT argument must be >= 0."));
            }
            out.limit = n as u64;
            limit_given = true;
            i += 1;
        } else if let Some(policy) = ref_policy(opt).filter(|_| !policy_given) {
            // A second one is read as XADD's id (invalid) or is XTRIM's syntax error, as Redis.
            out.policy = policy;
            policy_given = true;
        } else if xadd && is(opt, "nomkstream") {
            out.nomkstream = true;
        } else if xadd {
            out.id = Some(parse_id_full(opt, 0, true, true)?);
            break;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        i += 1;
    }
    out.id_pos = i;
    if out.limit != 0 && out.trim.is_none() {
        return Err(Reply::error(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && out.trim.is_none() {
        return Err(Reply::error(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if limit_given {
        if !out.approx {
            return Err(Reply::error(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
    } else if out.approx {
        out.limit = 100 * u64::from(NODE_MAX_ENTRIES);
    } else {
        out.limit = 0;
    }
    Ok(out)
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [...]
pub fn xadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let parsed = parse_add_or_trim(args, true)?;
    let field_pos = parsed.id_pos + 1;
    if args.len() < field_pos + 2 || (args.len() - field_pos) % 2 == 1 {
        return Err(Reply::Error(super::wrong_arity("xadd").into()));
    }
    if let Some((id, true)) = parsed.id {
        if id.is_zero() {
            return Err(Reply::error(
                "ERR The ID specified in XADD must be greater than 0-0",
            ));
        }
    }
    let key = args[1];
    let feed = &ctx.shared.replication.feed;
    let mut locked = ctx.lock(&args[1..2]);
    let exists = stream(&mut locked, key)?.is_some();
    if !exists {
        if parsed.nomkstream {
            return Ok(Reply::Nil);
        }
        locked.set(key, Value::Stream(Box::default()), 0);
    }
    let Some(s) = stream_mut(&mut locked, key)? else {
        return Ok(Reply::Nil);
    };
    let id = match s.next_id(parsed.id, now_ms()) {
        Ok(id) => id,
        Err(e) => {
            if !exists {
                locked.remove(key);
            }
            return Err(refused(e));
        }
    };
    s.append(id, Fields::pack(&args[field_pos..]));
    let trimmed = parsed
        .trim
        .is_some_and(|t| s.trim(t, parsed.approx, parsed.limit, parsed.policy) > 0);
    if feed.active() && !matches!(parsed.id, Some((_, true))) {
        // Replicas add the entry under the id made here, not one of their own.
        let text = format!("{}-{}", id.ms, id.seq);
        let mut replayed = args.to_vec();
        replayed[parsed.id_pos] = text.as_bytes();
        crate::replication::feed::propagate_as(&replayed);
    }
    locked.notify(class::STREAM, "xadd", key);
    if trimmed {
        locked.notify(class::STREAM, "xtrim", key);
    }
    signal(&locked, key);
    Ok(id_reply(id))
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
pub fn xtrim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let parsed = parse_add_or_trim(args, false)?;
    let key = args[1];
    let mut locked = ctx.lock(&args[1..2]);
    let Some(s) = stream_mut(&mut locked, key)? else {
        return Ok(Reply::Int(0));
    };
    let deleted = match parsed.trim {
        Some(t) => s.trim(t, parsed.approx, parsed.limit, parsed.policy),
        None => 0,
    };
    if deleted > 0 {
        locked.notify(class::STREAM, "xtrim", key);
    } else {
        locked.unchanged(key);
    }
    Ok(Reply::Int(deleted as i64))
}

/// XLEN key
pub fn xlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    Ok(Reply::Int(
        stream(&mut locked, args[1])?.map_or(0, |s| s.len()) as i64,
    ))
}

/// XRANGE key start end [COUNT n] and XREVRANGE key end start [COUNT n].
pub fn xrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let rev = args[0].len() == 9;
    let (start_arg, end_arg) = if rev {
        (args[3], args[2])
    } else {
        (args[2], args[3])
    };
    let start = range_start(start_arg)?;
    let end = range_end(end_arg)?;
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if is(args[j], "COUNT") && j + 1 < args.len() {
            count = int(args[j + 1])?.max(0);
            j += 2;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let mut locked = ctx.lock(&args[1..2]);
    let Some(s) = stream(&mut locked, args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    if count == 0 {
        return Ok(Reply::NilArray);
    }
    let count = if count < 0 { 0 } else { count as usize };
    Ok(range_reply(s, start, end, count, rev))
}

/// XDEL key id [id ...]
pub fn xdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let mut locked = ctx.lock(&args[1..2]);
    if stream(&mut locked, key)?.is_none() {
        return Ok(Reply::Int(0));
    }
    let ids = args[2..]
        .iter()
        .map(|a| strict_id(a))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(s) = stream_mut(&mut locked, key)? else {
        return Ok(Reply::Int(0));
    };
    let deleted = s.delete_entries(&ids);
    if deleted > 0 {
        locked.notify(class::STREAM, "xdel", key);
    } else {
        locked.unchanged(key);
    }
    Ok(Reply::Int(deleted as i64))
}

/// XDELEX's and XACKDEL's arguments after the key (and group): `[KEEPREF | DELREF | ACKED] IDS
/// numids id [id ...]` in any order, each at most once. Everything is checked before the key
/// is looked at, so a bad argument changes nothing.
fn ref_delete_args(args: &[&[u8]], from: usize) -> Result<(RefPolicy, Vec<StreamId>), Reply> {
    let mut policy = None;
    let mut ids = None;
    let mut j = from;
    while j < args.len() {
        if let Some(p) = ref_policy(args[j]).filter(|_| policy.is_none()) {
            policy = Some(p);
            j += 1;
        } else if is(args[j], "IDS") && j + 1 < args.len() {
            let n = parse_i64_strict(args[j + 1])
                .filter(|n| *n >= 1)
                .ok_or_else(|| Reply::error("ERR Number of IDs must be a positive integer"))?;
            let start = j + 2;
            let n = usize::try_from(n)
                .ok()
                .filter(|n| *n <= args.len() - start)
                .ok_or_else(|| {
                    Reply::error("ERR The `numids` parameter must match the number of arguments")
                })?;
            ids = Some(&args[start..start + n]);
            j = start + n;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let ids = ids.ok_or_else(|| Reply::error("ERR IDS option is required"))?;
    let ids = ids
        .iter()
        .map(|a| strict_id(a))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((policy.unwrap_or_default(), ids))
}

/// The per-id codes of XDELEX and XACKDEL.
fn outcome_reply(done: impl IntoIterator<Item = DeleteOutcome>) -> Reply {
    Reply::Array(done.into_iter().map(|d| Reply::Int(d.code())).collect())
}

/// How many pending entries the groups hold (to see whether DELREF changed any).
fn pending_refs(s: &Stream) -> usize {
    s.groups.values().map(|g| g.pel.len()).sum()
}

/// XDELEX key [KEEPREF | DELREF | ACKED] IDS numids id [id ...] (Redis 8.2)
pub fn xdelex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (policy, ids) = ref_delete_args(args, 2)?;
    let key = args[1];
    let mut locked = ctx.lock(&args[1..2]);
    let Some(s) = stream_mut(&mut locked, key)? else {
        return Ok(outcome_reply(ids.iter().map(|_| DeleteOutcome::NotFound)));
    };
    let refs = pending_refs(s);
    let done = s.delete_with(&ids, policy);
    let unreferenced = pending_refs(s) != refs;
    if done.contains(&DeleteOutcome::Deleted) {
        locked.notify(class::STREAM, "xdel", key);
    } else if !unreferenced {
        locked.unchanged(key);
    }
    Ok(outcome_reply(done))
}

/// XACKDEL key group [KEEPREF | DELREF | ACKED] IDS numids id [id ...] (Redis 8.2)
pub fn xackdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (policy, ids) = ref_delete_args(args, 3)?;
    let (key, gname) = (args[1], args[2]);
    let mut locked = ctx.lock(&args[1..2]);
    let not_found = || outcome_reply(ids.iter().map(|_| DeleteOutcome::NotFound));
    let Some(s) = stream_mut(&mut locked, key)? else {
        return Ok(not_found());
    };
    let before = s.len();
    let Some(done) = s.ack_delete(gname, &ids, policy) else {
        return Ok(not_found());
    };
    if s.len() != before {
        locked.notify(class::STREAM, "xdel", key);
    } else if !done.iter().any(|d| *d != DeleteOutcome::NotFound) {
        locked.unchanged(key);
    }
    Ok(outcome_reply(done))
}

/// XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]
pub fn xsetid(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let id = strict_id(args[2])?;
    let mut entries_added: i64 = -1;
    let mut max_xdel = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if is(args[i], "ENTRIESADDED") && more > 0 {
            entries_added = int(args[i + 1])?;
            if entries_added < 0 {
                return Err(Reply::error("ERR entries_added must be positive"));
            }
        } else if is(args[i], "MAXDELETEDID") && more > 0 {
            max_xdel = strict_id(args[i + 1])?;
            if id < max_xdel {
                return Err(Reply::error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"));
            }
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        i += 2;
    }
    let key = args[1];
    let mut locked = ctx.lock(&args[1..2]);
    let Some(s) = stream_mut(&mut locked, key)? else {
        return Err(Reply::error(err::NO_SUCH_KEY));
    };
    let entries_added = (entries_added != -1).then_some(entries_added as u64);
    let max_xdel = (!max_xdel.is_zero()).then_some(max_xdel);
    s.set_last_id(id, entries_added, max_xdel)
        .map_err(refused)?;
    locked.notify(class::STREAM, "xsetid", key);
    Ok(Reply::OK)
}

// ---------------------------------------------------------------- XREAD / XREADGROUP

/// One stream's part of an XREAD reply.
fn stream_part(resp3: bool, parts: Vec<(Reply, Reply)>) -> Reply {
    if resp3 {
        Reply::Map(parts)
    } else {
        Reply::Array(
            parts
                .into_iter()
                .map(|(k, v)| Reply::Array(vec![k, v]))
                .collect(),
        )
    }
}

fn nogroup_read(key: &[u8], group: &[u8]) -> Reply {
    Reply::Error(
        format!(
            "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(group)
        )
        .into(),
    )
}

/// Entries for XREADGROUP's reply: one whose entry is gone (a pending id read from the history)
/// shows as `[id, nil]`, as Redis does.
fn group_entries(s: &Stream, ids: Vec<StreamId>) -> Reply {
    Reply::Array(
        ids.into_iter()
            .map(|id| match s.get(id) {
                Some(f) => entry_reply(id, f),
                None => Reply::Array(vec![id_reply(id), Reply::NilArray]),
            })
            .collect(),
    )
}

/// The ids a blocked XREAD resolved at its first attempt (`$` becomes the last id then).
#[derive(Debug, Default)]
pub struct BlockedRead {
    pub ids: Vec<StreamId>,
}

/// Where XREAD/XREADGROUP read one stream from.
#[derive(Clone, Copy)]
enum ReadFrom {
    /// Entries after this id (`$` resolved, or an id given).
    After(StreamId),
    /// XREADGROUP's `>`: the group's undelivered entries.
    Undelivered,
    /// XREAD's `+` (Redis 7.4): the stream's last entry, resolved again at every attempt, so a
    /// blocked reader woken by several XADDs gets the newest one only, as Redis does.
    Last,
}

/// XREAD [COUNT n] [BLOCK ms] STREAMS key [key ...] id [id ...] and
/// XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS key [key ...] id [id ...]
pub fn xread(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let xreadgroup = args[0].len() == 10;
    let name = if xreadgroup { "xreadgroup" } else { "xread" };
    let mut timeout: Option<i64> = None;
    let mut count: i64 = 0;
    let mut streams_arg = 0;
    let mut noack = false;
    let mut group: Option<(&[u8], &[u8])> = None;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let o = args[i];
        if is(o, "BLOCK") && more > 0 {
            if ctx.in_exec() && ctx.shared.scripting.run.is_active() {
                return Err(Reply::Error(
                    format!(
                        "ERR {} command is not allowed with BLOCK option from scripts",
                        String::from_utf8_lossy(args[0])
                    )
                    .into(),
                ));
            }
            i += 1;
            let ms = int(args[i])
                .map_err(|_| Reply::error("ERR timeout is not an integer or out of range"))?;
            if ms < 0 {
                return Err(Reply::error("ERR timeout is negative"));
            }
            timeout = Some(ms);
        } else if is(o, "COUNT") && more > 0 {
            i += 1;
            count = int(args[i])?.max(0);
        } else if is(o, "STREAMS") && more > 0 {
            streams_arg = i + 1;
            if (args.len() - streams_arg) % 2 != 0 {
                // Redis 7.2's text (redis#11799, #12238): the command's name as declared, and
                // the special id each command takes.
                let symbol = if xreadgroup { '>' } else { '$' };
                return Err(Reply::Error(format!("ERR Unbalanced '{name}' list of streams: for each stream key an ID or '{symbol}' must be specified.").into()));
            }
            break;
        } else if is(o, "GROUP") && more >= 2 {
            if !xreadgroup {
                return Err(Reply::error(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            group = Some((args[i + 1], args[i + 2]));
            i += 2;
        } else if is(o, "NOACK") {
            if !xreadgroup {
                return Err(Reply::error(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            noack = true;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        i += 1;
    }
    if streams_arg == 0 {
        return Err(Reply::error(err::SYNTAX));
    }
    if xreadgroup && group.is_none() {
        return Err(Reply::error("ERR Missing GROUP option for XREADGROUP"));
    }
    let n = (args.len() - streams_arg) / 2;
    let keys = &args[streams_arg..streams_arg + n];
    let id_args = &args[streams_arg + n..];
    let count = count as usize;
    let in_exec = ctx.in_exec();
    let resp3 = ctx.conn.resp3;
    let rerun = ctx.conn.wait.is_some();
    let stored = if rerun {
        ctx.conn.blocked_read.take()
    } else {
        None
    };
    let waiters = ctx.shared.store.db(ctx.conn.db).waiters.clone();
    let me = ctx.conn.wait.as_ref().map(|g| g.waiter().clone());
    // A rerun passes the turn to the next client queued on each key, served or not.
    let pass_on = |keys: &[&[u8]]| {
        if let Some(me) = &me {
            for key in keys {
                waiters.wake_next(key, me);
            }
        }
    };
    // A key that stopped being a stream while XREAD waited on it is waited on (as Redis, which
    // only wakes XREAD for a stream); XREADGROUP answers the error.
    let lenient = rerun && !xreadgroup;
    let now = now_ms();
    let guard = {
        let mut locked = ctx.lock(keys);
        // Resolve the ids (`$` and `>` as Redis does), checking types and groups first.
        let mut ids: Vec<ReadFrom> = Vec::with_capacity(n);
        for (k, (key, arg)) in keys.iter().zip(id_args).enumerate() {
            let s = match stream(&mut locked, key) {
                Err(_) if lenient => None,
                other => other?,
            };
            if let Some((g, _)) = group {
                if !s.is_some_and(|s| s.groups.contains_key(g)) {
                    return Err(nogroup_read(key, g));
                }
            }
            if *arg == b"$" {
                if xreadgroup {
                    return Err(Reply::error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."));
                }
                let resolved = match stored.as_ref().and_then(|b| b.ids.get(k)) {
                    Some(id) => *id,
                    None => s.map_or(StreamId::MIN, |s| s.last_id),
                };
                ids.push(ReadFrom::After(resolved));
            } else if *arg == b"+" {
                if xreadgroup {
                    return Err(Reply::error("ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set."));
                }
                // Redis reads from the id before the last one, and there is none before 0-0.
                if s.is_some_and(|s| s.last_id.is_zero()) {
                    return Err(Reply::error("ERR the stream last element ID is 0-0"));
                }
                ids.push(ReadFrom::Last);
            } else if *arg == b">" {
                if !xreadgroup {
                    return Err(Reply::error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."));
                }
                ids.push(ReadFrom::Undelivered);
            } else {
                ids.push(ReadFrom::After(strict_id(arg)?));
            }
        }
        let mut parts: Vec<(Reply, Reply)> = Vec::new();
        for (k, key) in keys.iter().enumerate() {
            let s = match stream_mut(&mut locked, key) {
                Err(_) if lenient => None,
                other => other?,
            };
            let Some(s) = s else {
                continue;
            };
            match group {
                Some((g, c)) => {
                    let consumer = Bytes::copy_from_slice(c);
                    let Some(grp) = s.groups.get_mut(g) else {
                        continue;
                    };
                    if grp.see_consumer(&consumer, now) {
                        locked.notify(class::STREAM, "xgroup-createconsumer", key);
                    }
                    let Some(s) = stream_mut(&mut locked, key)? else {
                        continue;
                    };
                    match ids[k] {
                        ReadFrom::After(after) => {
                            let ids = s.deliver_history(g, &consumer, after, count, now);
                            parts.push((Reply::bulk(key), group_entries(s, ids)));
                        }
                        ReadFrom::Undelivered if s.has_undelivered(g) => {
                            let ids = s.deliver_new(g, &consumer, count, noack, now);
                            parts.push((Reply::bulk(key), group_entries(s, ids)));
                        }
                        ReadFrom::Undelivered | ReadFrom::Last => {}
                    }
                }
                None => match ids[k] {
                    ReadFrom::After(after) => {
                        if s.last_entry_id().is_some_and(|top| top > after) {
                            if let Some(start) = after.incr() {
                                let part = range_reply(s, start, StreamId::MAX, count, false);
                                parts.push((Reply::bulk(key), part));
                            }
                        }
                    }
                    // The entry of the last id made, if it is still there (Redis 7.4 gives
                    // nothing when that entry was deleted, even with older ones left).
                    ReadFrom::Last => {
                        if let Some(f) = s.get(s.last_id) {
                            let part = Reply::Array(vec![entry_reply(s.last_id, f)]);
                            parts.push((Reply::bulk(key), part));
                        }
                    }
                    ReadFrom::Undelivered => {}
                },
            }
        }
        pass_on(keys);
        if !parts.is_empty() {
            drop(locked);
            ctx.conn.wait = None;
            ctx.conn.blocked_read = None;
            return Ok(stream_part(resp3, parts));
        }
        if timeout.is_none() || in_exec {
            ctx.conn.wait = None;
            return Ok(Reply::NilArray);
        }
        ctx.conn.blocked_read = Some(BlockedRead {
            ids: ids
                .iter()
                .map(|i| match i {
                    ReadFrom::After(id) => *id,
                    ReadFrom::Undelivered | ReadFrom::Last => StreamId::MAX,
                })
                .collect(),
        });
        (!rerun).then(|| waiters.register(keys.iter().map(|k| Bytes::copy_from_slice(k)).collect()))
    };
    if let Some(guard) = guard {
        ctx.conn.wait = Some(guard);
    }
    let ms = timeout.unwrap_or(0);
    ctx.conn.block = Some(BlockRequest {
        deadline: (ms > 0).then(|| Instant::now() + Duration::from_millis(ms as u64)),
        timeout_reply: Reply::NilArray,
    });
    Ok(Reply::NilArray)
}

// ---------------------------------------------------------------- XGROUP

fn nogroup_of(key: &[u8], group: &[u8]) -> Reply {
    Reply::Error(
        format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(group),
            String::from_utf8_lossy(key)
        )
        .into(),
    )
}

fn nogroup_key(key: &[u8], group: &[u8]) -> Reply {
    Reply::Error(
        format!(
            "NOGROUP No such key '{}' or consumer group '{}'",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(group)
        )
        .into(),
    )
}

fn subcommand_syntax(sub: &[u8]) -> Reply {
    Reply::Error(
        format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try XGROUP HELP.",
            super::printable(sub, 128)
        )
        .into(),
    )
}

fn entries_read_arg(arg: &[u8]) -> Result<i64, Reply> {
    let v = int(arg)?;
    if v < 0 && v != INVALID_READ {
        return Err(Reply::error(
            "ERR value for ENTRIESREAD must be positive or -1",
        ));
    }
    Ok(v)
}

/// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP.
pub fn xgroup(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if is(sub, "HELP") {
        return Ok(help());
    }
    let mut mkstream = false;
    let mut entries_read = INVALID_READ;
    if is(sub, "CREATE") {
        let mut i = 5;
        while i < args.len() {
            if is(args[i], "MKSTREAM") {
                mkstream = true;
                i += 1;
            } else if is(args[i], "ENTRIESREAD") && i + 1 < args.len() {
                entries_read = entries_read_arg(args[i + 1])?;
                i += 2;
            } else {
                return Err(subcommand_syntax(sub));
            }
        }
    } else if is(sub, "SETID") {
        if args.len() == 7 {
            if is(args[5], "ENTRIESREAD") {
                entries_read = entries_read_arg(args[6])?;
            } else {
                return Err(subcommand_syntax(sub));
            }
        } else if args.len() != 5 {
            return Err(subcommand_syntax(sub));
        }
    }
    let (key, gname) = (args[2], args[3]);
    let mut locked = ctx.lock(&args[2..3]);
    let exists = stream(&mut locked, key)?.is_some();
    if !mkstream && !exists {
        return Err(Reply::error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."));
    }
    let has_group = stream(&mut locked, key)?.is_some_and(|s| s.groups.contains_key(gname));
    if !mkstream
        && !has_group
        && (is(sub, "SETID") || is(sub, "CREATECONSUMER") || is(sub, "DELCONSUMER"))
    {
        return Err(nogroup_of(key, gname));
    }
    if is(sub, "CREATE") {
        let id = if args[4] == b"$" {
            stream(&mut locked, key)?.map_or(StreamId::MIN, |s| s.last_id)
        } else {
            strict_id(args[4])?
        };
        if !exists {
            locked.set(key, Value::Stream(Box::default()), 0);
        }
        let Some(s) = stream_mut(&mut locked, key)? else {
            return Ok(Reply::Nil);
        };
        if let Err(e) = s.create_group(gname, id, entries_read) {
            // Only on a stream that existed: a new one has no groups.
            locked.unchanged(key);
            return Err(refused(e));
        }
        locked.notify(class::STREAM, "xgroup-create", key);
        return Ok(Reply::OK);
    }
    let Some(s) = stream_mut(&mut locked, key)? else {
        return Err(subcommand_syntax(sub));
    };
    if is(sub, "SETID") {
        let id = if args[4] == b"$" {
            s.last_id
        } else {
            parse_id_full(args[4], 0, false, false)?.0
        };
        s.set_group_id(gname, id, entries_read);
        locked.notify(class::STREAM, "xgroup-setid", key);
        Ok(Reply::OK)
    } else if is(sub, "DESTROY") && args.len() == 4 {
        if s.destroy_group(gname) {
            locked.notify(class::STREAM, "xgroup-destroy", key);
            // Blocked XREADGROUP clients of this group find it gone and get NOGROUP.
            signal(&locked, key);
            Ok(Reply::Int(1))
        } else {
            locked.unchanged(key);
            Ok(Reply::Int(0))
        }
    } else if is(sub, "CREATECONSUMER") && args.len() == 5 {
        let Some(g) = s.groups.get_mut(gname) else {
            return Err(nogroup_of(key, gname));
        };
        if !g.create_consumer(args[4], now_ms()) {
            locked.unchanged(key);
            return Ok(Reply::Int(0));
        }
        locked.notify(class::STREAM, "xgroup-createconsumer", key);
        Ok(Reply::Int(1))
    } else if is(sub, "DELCONSUMER") && args.len() == 5 {
        let Some(g) = s.groups.get_mut(gname) else {
            return Err(nogroup_of(key, gname));
        };
        match g.delete_consumer(args[4]) {
            Some(pending) => {
                locked.notify(class::STREAM, "xgroup-delconsumer", key);
                Ok(Reply::Int(pending as i64))
            }
            None => {
                locked.unchanged(key);
                Ok(Reply::Int(0))
            }
        }
    } else {
        Err(subcommand_syntax(sub))
    }
}

fn help() -> Reply {
    const LINES: &[&str] = &[
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Print this help.",
    ];
    Reply::Array(LINES.iter().map(|l| Reply::Status((*l).into())).collect())
}

// ---------------------------------------------------------------- XACK / XPENDING

/// XACK key group id [id ...]
pub fn xack(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, gname) = (args[1], args[2]);
    let mut locked = ctx.lock(&args[1..2]);
    let has = match stream(&mut locked, key)? {
        None => false,
        Some(s) => s.groups.contains_key(gname),
    };
    if !has {
        return Ok(Reply::Int(0));
    }
    let ids = args[3..]
        .iter()
        .map(|a| strict_id(a))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(g) = stream_mut(&mut locked, key)?.and_then(|s| s.groups.get_mut(gname)) else {
        return Ok(Reply::Int(0));
    };
    let acked = g.ack(&ids);
    if acked == 0 {
        locked.unchanged(key);
    }
    Ok(Reply::Int(acked as i64))
}

/// XPENDING key group [[IDLE min-idle] start end count [consumer]]
pub fn xpending(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, gname) = (args[1], args[2]);
    let justinfo = args.len() == 3;
    if args.len() != 3 && (args.len() < 6 || args.len() > 9) {
        return Err(Reply::error(err::SYNTAX));
    }
    let mut minidle = 0i64;
    let mut start = StreamId::MIN;
    let mut end = StreamId::MAX;
    let mut count = 0i64;
    let mut consumer: Option<&[u8]> = None;
    if args.len() >= 6 {
        let mut at = 3;
        if is(args[3], "IDLE") {
            minidle = int(args[4])?;
            if args.len() < 8 {
                return Err(Reply::error(err::SYNTAX));
            }
            at += 2;
        }
        count = int(args[at + 2])?.max(0);
        start = range_start(args[at])?;
        end = range_end(args[at + 1])?;
        if at + 3 < args.len() {
            consumer = Some(args[at + 3]);
        }
    }
    let mut locked = ctx.lock(&args[1..2]);
    let Some(g) = stream(&mut locked, key)?.and_then(|s| s.groups.get(gname)) else {
        return Err(nogroup_key(key, gname));
    };
    if justinfo {
        let Some(summary) = g.pending_summary() else {
            return Ok(Reply::Array(vec![
                Reply::Int(0),
                Reply::Nil,
                Reply::Nil,
                Reply::NilArray,
            ]));
        };
        let consumers = summary
            .consumers
            .into_iter()
            .map(|(name, pending)| {
                Reply::Array(vec![
                    Reply::Bulk(name.clone()),
                    Reply::Bulk(Bytes::from(pending.to_string())),
                ])
            })
            .collect();
        return Ok(Reply::Array(vec![
            Reply::Int(summary.count as i64),
            id_reply(summary.first),
            id_reply(summary.last),
            Reply::Array(consumers),
        ]));
    }
    let rows = g.pending(start, end, consumer, minidle, count as usize, now_ms());
    Ok(Reply::Array(
        rows.into_iter()
            .map(|p| {
                Reply::Array(vec![
                    id_reply(p.id),
                    Reply::Bulk(p.consumer.clone()),
                    Reply::Int(p.idle.max(0)),
                    Reply::Int(p.delivery_count as i64),
                ])
            })
            .collect(),
    ))
}

// ---------------------------------------------------------------- XCLAIM / XAUTOCLAIM

fn int_msg(arg: &[u8], msg: &'static str) -> Result<i64, Reply> {
    parse_i64_strict(arg).ok_or_else(|| Reply::error(msg))
}

/// The entries XCLAIM and XAUTOCLAIM claimed (all still in the stream), or their ids (JUSTID).
fn claimed_reply(s: &Stream, ids: Vec<StreamId>, justid: bool) -> Reply {
    Reply::Array(
        ids.into_iter()
            .filter_map(|id| {
                if justid {
                    Some(id_reply(id))
                } else {
                    s.get(id).map(|f| entry_reply(id, f))
                }
            })
            .collect(),
    )
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms] [RETRYCOUNT n]
/// [FORCE] [JUSTID] [LASTID id]
pub fn xclaim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, gname) = (args[1], args[2]);
    let consumer = Bytes::copy_from_slice(args[3]);
    let mut locked = ctx.lock(&args[1..2]);
    let has = stream(&mut locked, key)?.is_some_and(|s| s.groups.contains_key(gname));
    if !has {
        return Err(nogroup_key(key, gname));
    }
    let minidle = int_msg(args[4], "ERR Invalid min-idle-time argument for XCLAIM")?.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < args.len() {
        match strict_id(args[j]) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = now_ms();
    let mut opts = ClaimOptions {
        min_idle: minidle,
        delivery_time: None,
        retry_count: None,
        force: false,
        justid: false,
        last_id: StreamId::MIN,
    };
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = args[j];
        if is(opt, "FORCE") {
            opts.force = true;
        } else if is(opt, "JUSTID") {
            opts.justid = true;
        } else if is(opt, "IDLE") && more > 0 {
            j += 1;
            let idle = int_msg(args[j], "ERR Invalid IDLE option argument for XCLAIM")?;
            opts.delivery_time = Some((now as i64).wrapping_sub(idle));
        } else if is(opt, "TIME") && more > 0 {
            j += 1;
            let time = int_msg(args[j], "ERR Invalid TIME option argument for XCLAIM")?;
            opts.delivery_time = Some(time);
        } else if is(opt, "RETRYCOUNT") && more > 0 {
            j += 1;
            let n = int_msg(args[j], "ERR Invalid RETRYCOUNT option argument for XCLAIM")?;
            opts.retry_count = Some(n);
        } else if is(opt, "LASTID") && more > 0 {
            j += 1;
            opts.last_id = strict_id(args[j])?;
        } else {
            return Err(Reply::Error(
                format!(
                    "ERR Unrecognized XCLAIM option '{}'",
                    String::from_utf8_lossy(opt)
                )
                .into(),
            ));
        }
        j += 1;
    }
    let Some(s) = stream_mut(&mut locked, key)? else {
        return Err(nogroup_key(key, gname));
    };
    let Some(claimed) = s.claim(gname, &consumer, &ids, opts, now) else {
        return Err(nogroup_key(key, gname));
    };
    Ok(claimed_reply(s, claimed, opts.justid))
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub fn xautoclaim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, gname) = (args[1], args[2]);
    let consumer = Bytes::copy_from_slice(args[3]);
    let minidle = int_msg(args[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")?.max(0);
    let mut scan = AutoClaimArgs {
        start: range_start(args[5])?,
        count: 100,
        min_idle: minidle,
        justid: false,
    };
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(args[j], "COUNT") && more > 0 {
            let max = i64::MAX / 16;
            scan.count = parse_i64_strict(args[j + 1])
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| Reply::error("ERR COUNT must be > 0"))?;
            j += 1;
        } else if is(args[j], "JUSTID") {
            scan.justid = true;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        j += 1;
    }
    let mut locked = ctx.lock(&args[1..2]);
    let has = stream(&mut locked, key)?.is_some_and(|s| s.groups.contains_key(gname));
    if !has {
        return Err(nogroup_key(key, gname));
    }
    let Some(s) = stream_mut(&mut locked, key)? else {
        return Err(nogroup_key(key, gname));
    };
    let Some(done) = s.autoclaim(gname, &consumer, scan, now_ms()) else {
        return Err(nogroup_key(key, gname));
    };
    Ok(Reply::Array(vec![
        id_reply(done.next),
        claimed_reply(s, done.claimed, scan.justid),
        Reply::Array(done.deleted.into_iter().map(id_reply).collect()),
    ]))
}

// ---------------------------------------------------------------- XINFO

fn group_info(s: &Stream, name: &Bytes, g: &Group) -> Vec<(Reply, Reply)> {
    let [entries_read, lag] = read_progress(s, g);
    vec![
        (Reply::bulk_str("name"), Reply::Bulk(name.clone())),
        (
            Reply::bulk_str("consumers"),
            Reply::Int(g.consumers.len() as i64),
        ),
        (Reply::bulk_str("pending"), Reply::Int(g.pel.len() as i64)),
        (Reply::bulk_str("last-delivered-id"), id_reply(g.last_id)),
        entries_read,
        lag,
    ]
}

/// A group's `entries-read` and `lag` fields (nil when Redis cannot tell them).
fn read_progress(s: &Stream, g: &Group) -> [(Reply, Reply); 2] {
    let (entries_read, lag) = s.read_progress(g);
    [
        (
            Reply::bulk_str("entries-read"),
            entries_read.map_or(Reply::Nil, Reply::Int),
        ),
        (Reply::bulk_str("lag"), lag.map_or(Reply::Nil, Reply::Int)),
    ]
}

fn first_last(s: &Stream, first: bool) -> Reply {
    let id = if first {
        s.first_entry_id()
    } else {
        s.last_entry_id()
    };
    id.and_then(|id| Some(entry_reply(id, s.get(id)?)))
        .unwrap_or(Reply::Nil)
}

/// XINFO STREAM key [FULL [COUNT n]] | GROUPS key | CONSUMERS key group | HELP
pub fn xinfo(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if is(sub, "HELP") {
        const LINES: &[&str] = &[
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
            "HELP",
            "    Print this help.",
        ];
        return Ok(Reply::Array(
            LINES.iter().map(|l| Reply::Status((*l).into())).collect(),
        ));
    }
    let key = args[2];
    let now = now_ms();
    let mut locked = ctx.lock(&args[2..3]);
    let Some(s) = stream(&mut locked, key)? else {
        return Err(Reply::error(err::NO_SUCH_KEY));
    };
    if is(sub, "CONSUMERS") {
        let Some(g) = args.get(3).and_then(|gname| s.groups.get(*gname)) else {
            return Err(nogroup_of(key, args.get(3).copied().unwrap_or_default()));
        };
        let list = g
            .consumers
            .iter()
            .map(|(name, c)| {
                Reply::Map(vec![
                    (Reply::bulk_str("name"), Reply::Bulk(name.clone())),
                    (Reply::bulk_str("pending"), Reply::Int(c.pel.len() as i64)),
                    (Reply::bulk_str("idle"), Reply::Int(c.idle(now) as i64)),
                    (Reply::bulk_str("inactive"), Reply::Int(c.inactive(now))),
                ])
            })
            .collect();
        return Ok(Reply::Array(list));
    }
    if is(sub, "GROUPS") {
        return Ok(Reply::Array(
            s.groups
                .iter()
                .map(|(n, g)| Reply::Map(group_info(s, n, g)))
                .collect(),
        ));
    }
    // STREAM key [FULL [COUNT n]]
    let mut full = false;
    let mut count: i64 = 10;
    let xinfo_syntax = || {
        Reply::Error(
            format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try XINFO HELP.",
                super::printable(sub, 128)
            )
            .into(),
        )
    };
    if args.len() > 3 {
        if !is(args[3], "FULL") || (args.len() != 4 && args.len() != 6) {
            return Err(xinfo_syntax());
        }
        full = true;
        if args.len() == 6 {
            if !is(args[4], "COUNT") {
                return Err(xinfo_syntax());
            }
            count = int(args[5])?;
            if count < 0 {
                count = 10;
            }
        }
    }
    let mut m: Vec<(Reply, Reply)> = vec![
        (Reply::bulk_str("length"), Reply::Int(s.len() as i64)),
        (
            Reply::bulk_str("radix-tree-keys"),
            Reply::Int(s.nodes().len() as i64),
        ),
        (
            Reply::bulk_str("radix-tree-nodes"),
            Reply::Int((s.nodes().len() + 1) as i64),
        ),
        (Reply::bulk_str("last-generated-id"), id_reply(s.last_id)),
        (
            Reply::bulk_str("max-deleted-entry-id"),
            id_reply(s.max_deleted),
        ),
        (
            Reply::bulk_str("entries-added"),
            Reply::Int(s.entries_added as i64),
        ),
        (
            Reply::bulk_str("recorded-first-entry-id"),
            id_reply(s.first_id),
        ),
    ];
    if !full {
        m.push((Reply::bulk_str("groups"), Reply::Int(s.groups.len() as i64)));
        m.push((Reply::bulk_str("first-entry"), first_last(s, true)));
        m.push((Reply::bulk_str("last-entry"), first_last(s, false)));
        return Ok(Reply::Map(m));
    }
    let limit = if count == 0 {
        usize::MAX
    } else {
        count as usize
    };
    m.push((
        Reply::bulk_str("entries"),
        Reply::Array(
            s.iter()
                .take(limit)
                .map(|(id, f)| entry_reply(id, f))
                .collect(),
        ),
    ));
    let groups = s
        .groups
        .iter()
        .map(|(name, g)| {
            let [entries_read, lag] = read_progress(s, g);
            let mut gm = vec![
                (Reply::bulk_str("name"), Reply::Bulk(name.clone())),
                (Reply::bulk_str("last-delivered-id"), id_reply(g.last_id)),
                entries_read,
                lag,
                (Reply::bulk_str("pel-count"), Reply::Int(g.pel.len() as i64)),
            ];
            let pel = g
                .pel
                .iter()
                .take(limit)
                .map(|(id, n)| {
                    Reply::Array(vec![
                        id_reply(*id),
                        Reply::Bulk(n.consumer.clone()),
                        Reply::Int(n.delivery_time as i64),
                        Reply::Int(n.delivery_count as i64),
                    ])
                })
                .collect();
            gm.push((Reply::bulk_str("pending"), Reply::Array(pel)));
            let consumers = g
                .consumers
                .iter()
                .map(|(cname, c)| {
                    let pel = c
                        .pel
                        .iter()
                        .take(limit)
                        .filter_map(|id| {
                            g.pel.get(id).map(|n| {
                                Reply::Array(vec![
                                    id_reply(*id),
                                    Reply::Int(n.delivery_time as i64),
                                    Reply::Int(n.delivery_count as i64),
                                ])
                            })
                        })
                        .collect();
                    Reply::Map(vec![
                        (Reply::bulk_str("name"), Reply::Bulk(cname.clone())),
                        (Reply::bulk_str("seen-time"), Reply::Int(c.seen_time as i64)),
                        (
                            Reply::bulk_str("active-time"),
                            Reply::Int(c.active_time.map_or(-1, |t| t as i64)),
                        ),
                        (Reply::bulk_str("pel-count"), Reply::Int(c.pel.len() as i64)),
                        (Reply::bulk_str("pending"), Reply::Array(pel)),
                    ])
                })
                .collect();
            gm.push((Reply::bulk_str("consumers"), Reply::Array(consumers)));
            Reply::Map(gm)
        })
        .collect();
    m.push((Reply::bulk_str("groups"), Reply::Array(groups)));
    Ok(Reply::Map(m))
}
