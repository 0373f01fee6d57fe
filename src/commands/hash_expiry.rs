//! Hash-field expiration (Redis 7.4 and 8.0): HEXPIRE and its three siblings, HTTL and its
//! three, HPERSIST, HGETDEL, HGETEX and HSETEX. The TTLs live in the hash value
//! (`store::hash`); the keyspace removes expired fields (`store::field_expiry`).
//!
//! Every command here first removes the expired fields it names (Redis's lazy field expiry),
//! then works on what is left. What goes to the replicas and the append-only file is what
//! replays the same anywhere: absolute times (`HPEXPIREAT`, `HSETEX … PXAT`), HDEL for fields a
//! past time deleted, HPERSIST for `HGETEX … PERSIST`, as Redis rewrites them.

use super::args::{int, is};
use super::typed::{hash, hash_mut, hash_or_create};
use super::{CmdResult, Ctx};
use crate::events::class;
use crate::protocol::{parse_i64_strict, Reply};
use crate::replication::feed;
use crate::store::Locked;
use bytes::Bytes;

/// The largest expiry a field takes, in Unix ms: 2^46 - 1, a quarter of the range Redis's expiry
/// buckets hold (`HFE_MAX_ABS_TIME_MSEC`; Redis 7.4.1 answers `invalid expire time` above it).
const MAX_EXPIRE_MS: i64 = (1 << 46) - 1;

const MISSING_FIELDS: &str =
    "ERR Mandatory argument FIELDS is missing or not at the right position";
const COUNT_MISMATCH: &str = "ERR The `numfields` parameter must match the number of arguments";
const COUNT_NOT_POSITIVE: &str = "ERR Number of fields must be a positive integer";

/// `FIELDS numfields field …` with the FIELDS word at `at`, up to the end: the fields.
/// `not_positive` is the command's error for a count that is no integer or below 1.
fn fields_block<'a, 'b>(
    args: &'a [&'b [u8]],
    at: usize,
    not_positive: &'static str,
) -> Result<&'a [&'b [u8]], Reply> {
    if !args.get(at).is_some_and(|a| is(a, "FIELDS")) {
        return Err(Reply::error(MISSING_FIELDS));
    }
    let count = args
        .get(at + 1)
        .and_then(|a| parse_i64_strict(a))
        .filter(|&n| n >= 1)
        .ok_or_else(|| Reply::error(not_positive))?;
    let fields = &args[at + 2..];
    if count as u64 != fields.len() as u64 {
        return Err(Reply::error(COUNT_MISMATCH));
    }
    Ok(fields)
}

/// An expiry argument as Redis reads it: a non-negative integer in seconds or ms, added to
/// `base` (now for a relative time, 0 for a Unix time); Unix ms out.
fn expiry_arg(arg: &[u8], seconds: bool, base: u64, command: &str) -> Result<u64, Reply> {
    let value = int(arg)?;
    if value < 0 {
        return Err(Reply::error("ERR invalid expire time, must be >= 0"));
    }
    let invalid = || Reply::Error(format!("ERR invalid expire time in '{command}' command").into());
    let ms = if seconds {
        if value > MAX_EXPIRE_MS / 1000 {
            return Err(invalid());
        }
        value * 1000
    } else {
        value
    };
    if ms > MAX_EXPIRE_MS - base as i64 {
        return Err(invalid());
    }
    Ok(ms as u64 + base)
}

/// The command's name in lower case (for its error texts).
fn name_of(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).to_ascii_lowercase()
}

/// A TTL-setting condition (NX, XX, GT, LT).
#[derive(Clone, Copy, PartialEq)]
enum Condition {
    Nx,
    Xx,
    Gt,
    Lt,
}

impl Condition {
    fn parse(arg: &[u8]) -> Option<(Condition, &'static [u8])> {
        [
            (Condition::Nx, &b"NX"[..]),
            (Condition::Xx, b"XX"),
            (Condition::Gt, b"GT"),
            (Condition::Lt, b"LT"),
        ]
        .into_iter()
        .find(|(_, word)| arg.eq_ignore_ascii_case(word))
    }

    /// Whether a field whose expiry is `current` (0: none, which counts as forever) takes `at`.
    fn allows(self, current: u64, at: u64) -> bool {
        match self {
            Condition::Nx => current == 0,
            Condition::Xx => current != 0,
            Condition::Gt => current != 0 && at > current,
            Condition::Lt => current == 0 || at < current,
        }
    }
}

/// What setting a field's expiry did (the reply codes of HEXPIRE).
#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    NoField = -2,
    ConditionNotMet = 0,
    Set = 1,
    /// The time had passed: the field is deleted.
    Deleted = 2,
}

/// Sets expiry `at` on each of `fields` of the hash at `key` in turn (repeats see the earlier
/// ones' effect); a time not after `now` deletes the field. Notes the hash for the expiry
/// cycle, deletes it when it is left empty, sends HDEL for deleted fields to the replicas, and
/// names the events (`hexpire` or `hdel`, then `del`).
fn set_expiries(
    locked: &mut Locked<'_>,
    key: &[u8],
    fields: &[&[u8]],
    at: u64,
    condition: Option<Condition>,
) -> Result<Vec<Outcome>, Reply> {
    let now = locked.now;
    let Some(h) = hash_mut(locked, key)? else {
        return Ok(vec![Outcome::NoField; fields.len()]);
    };
    let mut deleted = Vec::new();
    let outcomes: Vec<Outcome> = fields
        .iter()
        .map(|f| match h.ttl(f) {
            None => Outcome::NoField,
            Some(current) if !condition.is_none_or(|c| c.allows(current, at)) => {
                Outcome::ConditionNotMet
            }
            Some(_) if at <= now => {
                h.remove(f);
                deleted.push(Bytes::copy_from_slice(f));
                Outcome::Deleted
            }
            Some(_) => {
                h.set_ttl(f, at);
                Outcome::Set
            }
        })
        .collect();
    let empty = h.is_empty();
    let set = outcomes.contains(&Outcome::Set);
    if set {
        locked.note_field_expiry(key, at);
    }
    if !deleted.is_empty() {
        locked.propagate_field_removal(key, &deleted);
        locked.notify(class::HASH, "hdel", key);
    } else if set {
        locked.notify(class::HASH, "hexpire", key);
    } else {
        locked.unchanged(key);
    }
    if empty {
        locked.remove(key);
        locked.notify(class::GENERIC, "del", key);
    }
    Ok(outcomes)
}

fn int_array(values: impl IntoIterator<Item = i64>) -> Reply {
    Reply::Array(values.into_iter().map(Reply::Int).collect())
}

/// The fields whose outcome was `Set`, for the command the replicas run.
fn set_fields<'b>(fields: &[&'b [u8]], outcomes: &[Outcome]) -> Vec<&'b [u8]> {
    fields
        .iter()
        .zip(outcomes)
        .filter(|(_, &o)| o == Outcome::Set)
        .map(|(f, _)| *f)
        .collect()
}

/// Has the replicas set expiry `at` on `fields` (`HPEXPIREAT key at FIELDS n field…`), or
/// nothing when there are none (deleted fields went as HDEL already).
fn propagate_expiry(key: &[u8], at: u64, condition: Option<&[u8]>, fields: &[&[u8]]) {
    if fields.is_empty() {
        feed::disarm();
        return;
    }
    let at = at.to_string();
    let count = fields.len().to_string();
    let mut replayed: Vec<&[u8]> = vec![b"HPEXPIREAT", key, at.as_bytes()];
    replayed.extend(condition);
    replayed.extend([&b"FIELDS"[..], count.as_bytes()]);
    replayed.extend(fields);
    feed::propagate_as(&replayed);
}

/// HEXPIRE, HPEXPIRE, HEXPIREAT and HPEXPIREAT key time [NX|XX|GT|LT] FIELDS numfields field…
pub fn hexpire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = name_of(args[0]);
    let seconds = !name.starts_with("hp");
    let absolute = name.ends_with("at");
    let mut locked = ctx.lock(&args[1..2]);
    hash(&mut locked, args[1])?;
    let base = if absolute { 0 } else { locked.now };
    let at = expiry_arg(args[2], seconds, base, &name)?;
    let condition = Condition::parse(args[3]);
    let fields_at = if condition.is_some() { 4 } else { 3 };
    let fields = fields_block(
        args,
        fields_at,
        "ERR Parameter `numFields` should be greater than 0",
    )?;
    locked.expire_fields(args[1], Some(fields));
    let outcomes = set_expiries(&mut locked, args[1], fields, at, condition.map(|c| c.0))?;
    propagate_expiry(
        args[1],
        at,
        condition.map(|c| c.1),
        &set_fields(fields, &outcomes),
    );
    Ok(int_array(outcomes.into_iter().map(|o| o as i64)))
}

/// HTTL, HPTTL, HEXPIRETIME and HPEXPIRETIME key FIELDS numfields field…: -2 for no such field
/// (or one whose time is up), -1 for no TTL.
pub fn httl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = name_of(args[0]);
    let seconds = !name.starts_with("hp");
    let absolute = name.ends_with("time");
    let mut locked = ctx.lock(&args[1..2]);
    let now = locked.now;
    let h = hash(&mut locked, args[1])?;
    let fields = fields_block(args, 2, COUNT_NOT_POSITIVE)?;
    Ok(int_array(fields.iter().map(|f| {
        match h.and_then(|h| h.ttl(f)) {
            None => -2,
            Some(0) => -1,
            Some(at) if at <= now => -2,
            Some(at) => {
                let ms = if absolute { at } else { at - now };
                // A relative TTL in seconds rounds up, as Redis's.
                let shown = match (seconds, absolute) {
                    (false, _) => ms,
                    (true, true) => ms / 1000,
                    (true, false) => ms.div_ceil(1000),
                };
                shown as i64
            }
        }
    })))
}

/// HPERSIST key FIELDS numfields field…: 1 TTL removed, -1 none to remove, -2 no such field.
pub fn hpersist(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    hash(&mut locked, args[1])?;
    let fields = fields_block(args, 2, COUNT_NOT_POSITIVE)?;
    locked.expire_fields(args[1], Some(fields));
    let Some(h) = hash_mut(&mut locked, args[1])? else {
        return Ok(int_array(fields.iter().map(|_| -2)));
    };
    let replies: Vec<i64> = fields
        .iter()
        .map(|f| match h.ttl(f) {
            None => -2,
            Some(0) => -1,
            Some(_) => {
                h.set_ttl(f, 0);
                1
            }
        })
        .collect();
    if replies.contains(&1) {
        locked.notify(class::HASH, "hpersist", args[1]);
    } else {
        locked.unchanged(args[1]);
    }
    Ok(int_array(replies))
}

/// HGETDEL key FIELDS numfields field…: the values, and the fields are gone (the key too once
/// empty). The replicas run HDEL.
pub fn hgetdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    hash(&mut locked, args[1])?;
    let fields = fields_block(args, 2, COUNT_NOT_POSITIVE)?;
    locked.expire_fields(args[1], Some(fields));
    let Some(h) = hash_mut(&mut locked, args[1])? else {
        return Ok(Reply::Array(vec![Reply::Nil; fields.len()]));
    };
    let values: Vec<Reply> = fields
        .iter()
        .map(|f| {
            let value = h.get(f).map(Bytes::copy_from_slice);
            if value.is_some() {
                h.remove(f);
            }
            value.map_or(Reply::Nil, Reply::Bulk)
        })
        .collect();
    let empty = h.is_empty();
    if values.iter().all(|v| matches!(v, Reply::Nil)) {
        locked.unchanged(args[1]);
        feed::disarm();
        return Ok(Reply::Array(values));
    }
    locked.notify(class::HASH, "hdel", args[1]);
    if empty {
        locked.remove(args[1]);
        locked.notify(class::GENERIC, "del", args[1]);
    }
    let mut replayed: Vec<&[u8]> = vec![b"HDEL", args[1]];
    replayed.extend(fields);
    feed::propagate_as(&replayed);
    Ok(Reply::Array(values))
}

/// The expiry option of HGETEX and HSETEX.
#[derive(Clone, Copy, PartialEq)]
enum Expiry {
    /// None given: HGETEX only reads, HSETEX drops the fields' TTLs.
    Unchanged,
    /// EX, PX, EXAT or PXAT: the absolute time, Unix ms.
    At(u64),
    /// HGETEX PERSIST.
    Persist,
    /// HSETEX KEEPTTL.
    Keep,
}

/// Reads `EX|PX|EXAT|PXAT time` at `args[at]` if it is one; its expiry and width in arguments.
fn timed_option(args: &[&[u8]], at: usize, now: u64, command: &str) -> Result<Option<u64>, Reply> {
    let Some(word) = args.get(at) else {
        return Ok(None);
    };
    let (seconds, absolute) = if is(word, "EX") {
        (true, false)
    } else if is(word, "PX") {
        (false, false)
    } else if is(word, "EXAT") {
        (true, true)
    } else if is(word, "PXAT") {
        (false, true)
    } else {
        return Ok(None);
    };
    let Some(time) = args.get(at + 1) else {
        return Err(Reply::error("ERR missing expire time"));
    };
    let base = if absolute { 0 } else { now };
    expiry_arg(time, seconds, base, command).map(Some)
}

/// HGETEX key [EX|PX|EXAT|PXAT time | PERSIST] FIELDS numfields field…: the values, and the
/// fields' TTLs set or removed.
pub fn hgetex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = name_of(args[0]);
    let mut locked = ctx.lock(&args[1..2]);
    let now = locked.now;
    hash(&mut locked, args[1])?;
    let (expiry, fields_at) = match timed_option(args, 2, now, &name)? {
        Some(at) => (Expiry::At(at), 4),
        None if is(args[2], "PERSIST") => (Expiry::Persist, 3),
        None => (Expiry::Unchanged, 2),
    };
    let fields = fields_block(args, fields_at, COUNT_NOT_POSITIVE)?;
    locked.expire_fields(args[1], Some(fields));
    let values: Vec<Reply> = match hash(&mut locked, args[1])? {
        None => return Ok(Reply::Array(vec![Reply::Nil; fields.len()])),
        Some(h) => fields
            .iter()
            .map(|f| h.get(f).map_or(Reply::Nil, Reply::bulk))
            .collect(),
    };
    match expiry {
        Expiry::At(at) => {
            let outcomes = set_expiries(&mut locked, args[1], fields, at, None)?;
            propagate_expiry(args[1], at, None, &set_fields(fields, &outcomes));
        }
        Expiry::Persist => {
            let Some(h) = hash_mut(&mut locked, args[1])? else {
                return Ok(Reply::Array(values));
            };
            let persisted = fields.iter().filter(|f| h.ttl(f).is_some_and(|at| at != 0));
            let persisted: Vec<&[u8]> = persisted.copied().collect();
            for f in &persisted {
                h.set_ttl(f, 0);
            }
            if persisted.is_empty() {
                locked.unchanged(args[1]);
                feed::disarm();
            } else {
                locked.notify(class::HASH, "hpersist", args[1]);
                let mut replayed: Vec<&[u8]> = vec![b"HPERSIST", args[1], b"FIELDS"];
                let count = persisted.len().to_string();
                replayed.push(count.as_bytes());
                replayed.extend(persisted);
                feed::propagate_as(&replayed);
            }
        }
        Expiry::Unchanged | Expiry::Keep => feed::disarm(),
    }
    Ok(Reply::Array(values))
}

/// HSETEX key [FNX|FXX] [EX|PX|EXAT|PXAT time | KEEPTTL] FIELDS numfields field value…: 1 when
/// the fields were set, 0 when FNX/FXX held them back.
pub fn hsetex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = name_of(args[0]);
    let mut locked = ctx.lock(&args[1..2]);
    let now = locked.now;
    let (mut fnx, mut fxx) = (false, false);
    let mut expiry = Expiry::Unchanged;
    let mut i = 2;
    let pairs = loop {
        let Some(word) = args.get(i) else {
            return Err(Reply::Error(super::wrong_arity(&name).into()));
        };
        if is(word, "FIELDS") {
            if i + 3 >= args.len() {
                return Err(Reply::Error(super::wrong_arity(&name).into()));
            }
            let count = parse_i64_strict(args[i + 1])
                .filter(|n| (1..=i64::from(i32::MAX)).contains(n))
                .ok_or_else(|| Reply::error("ERR invalid number of fields"))?;
            let rest = &args[i + 2..];
            if rest.len() % 2 != 0 || count as usize != rest.len() / 2 {
                return Err(Reply::Error(super::wrong_arity(&name).into()));
            }
            break rest;
        }
        if is(word, "FNX") || is(word, "FXX") {
            if fnx || fxx {
                return Err(Reply::error(
                    "ERR Only one of FXX or FNX arguments can be specified",
                ));
            }
            fnx = is(word, "FNX");
            fxx = !fnx;
            i += 1;
            continue;
        }
        let timed = ["EX", "PX", "EXAT", "PXAT"].iter().any(|w| is(word, w));
        if timed || is(word, "KEEPTTL") {
            if expiry != Expiry::Unchanged {
                return Err(Reply::error(
                    "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
                ));
            }
            if timed {
                let at = timed_option(args, i, now, &name)?;
                expiry = Expiry::At(at.unwrap_or_default());
                i += 2;
            } else {
                expiry = Expiry::Keep;
                i += 1;
            }
            continue;
        }
        return Err(Reply::Error(
            format!(
                "ERR unknown argument: {}",
                crate::spec::printable(word, 128)
            )
            .into(),
        ));
    };
    hash(&mut locked, args[1])?;
    let fields: Vec<&[u8]> = pairs.chunks(2).map(|p| p[0]).collect();
    locked.expire_fields(args[1], Some(&fields));
    if fnx || fxx {
        let present = hash(&mut locked, args[1])?;
        let held_back = fields.iter().any(|f| {
            let exists = present.is_some_and(|h| h.get(f).is_some());
            exists == fnx
        });
        if held_back {
            feed::disarm();
            return Ok(Reply::Int(0));
        }
    }
    let limit = locked.limits().hash();
    let h = hash_or_create(&mut locked, args[1])?;
    for pair in pairs.chunks(2) {
        if expiry == Expiry::Unchanged {
            h.insert(pair[0], pair[1], limit);
        } else {
            h.update(pair[0], pair[1], limit);
        }
    }
    locked.notify(class::HASH, "hset", args[1]);
    if let Expiry::At(at) = expiry {
        let outcomes = set_expiries(&mut locked, args[1], &fields, at, None)?;
        if outcomes.contains(&Outcome::Deleted) {
            // Deleted at once: the HDEL went out already, as in Redis.
            feed::disarm();
        } else {
            let mut replayed: Vec<&[u8]> = args[..i].to_vec();
            let at = at.to_string();
            // EX/PX/EXAT/PXAT's pair becomes PXAT and the Unix time.
            let is_time = |w: &&[u8]| ["EX", "PX", "EXAT", "PXAT"].iter().any(|n| is(w, n));
            if let Some(p) = replayed.iter().skip(2).position(is_time).map(|p| p + 2) {
                replayed[p] = b"PXAT";
                replayed[p + 1] = at.as_bytes();
            }
            replayed.extend(&args[i..]);
            feed::propagate_as(&replayed);
        }
    }
    Ok(Reply::Int(1))
}
