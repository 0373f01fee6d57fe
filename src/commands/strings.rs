//! String commands.

use super::args::{float, int, is};
use super::{err, CmdResult, Ctx};
use crate::events::class;
use crate::metrics::Stats;
use crate::protocol::{parse_i64_strict, Reply};
use crate::store::{CompactBytes, Entry, Value};

/// Largest string SETRANGE and APPEND may build, as Redis's default proto-max-bulk-len.
const MAX_STRING: usize = 512 * 1024 * 1024;

/// The string held by an entry, or WRONGTYPE.
fn string_of(entry: &Entry) -> Result<&CompactBytes, Reply> {
    match &entry.value {
        Value::Str(b) => Ok(b),
        _ => Err(Reply::error(err::WRONGTYPE)),
    }
}

fn owned(bytes: &[u8]) -> Value {
    Value::Str(CompactBytes::new(bytes))
}

fn count_lookup(ctx: &Ctx, hit: bool) {
    let stats = &ctx.shared.stats;
    Stats::add(
        if hit {
            &stats.keyspace_hits
        } else {
            &stats.keyspace_misses
        },
        1,
    );
}

pub fn get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let reply = {
        let mut locked = ctx.lock(&args[1..2]);
        match locked.get(args[1]) {
            Some(entry) => Reply::Bulk(string_of(entry)?.to_bytes()),
            None => Reply::Nil,
        }
    };
    count_lookup(ctx, reply != Reply::Nil);
    Ok(reply)
}

/// Turns a relative or absolute expiry argument into a deadline in ms, with Redis's errors.
fn deadline(
    amount: &[u8],
    unit_ms: i64,
    absolute: bool,
    now: u64,
    cmd: &str,
) -> Result<u64, Reply> {
    let amount = int(amount)?;
    let invalid = || Reply::Error(format!("ERR invalid expire time in '{cmd}' command").into());
    if amount <= 0 {
        return Err(invalid());
    }
    let ms = amount.checked_mul(unit_ms).ok_or_else(invalid)?;
    let at = if absolute {
        ms
    } else {
        ms.checked_add(now as i64).ok_or_else(invalid)?
    };
    Ok(at as u64)
}

/// The expiry a SET or GETEX option asked for.
#[derive(Clone, Copy, PartialEq)]
enum ExpiryOption<'a> {
    /// EX, PX, EXAT or PXAT with its unit in ms, whether it is absolute, and the raw amount.
    Timed(&'static str, i64, bool, &'a [u8]),
    KeepTtl,
    Persist,
}

/// The options of SET (`for_set`) or GETEX, parsed with the rules of Redis's
/// `parseExtendedStringArgumentsOrReply`: one kind of expiry (repeating the same kind is allowed,
/// the last one wins), NX, XX and IFEQ exclude each other (IFEQ, Valkey 8.1's, is a condition on
/// the value as they are on existence, and is given once), anything else is a syntax error.
struct StringOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    ifeq: Option<&'a [u8]>,
    expiry: Option<ExpiryOption<'a>>,
}

fn parse_string_options<'a>(
    args: &[&'a [u8]],
    start: usize,
    for_set: bool,
) -> Result<StringOptions<'a>, Reply> {
    let mut o = StringOptions {
        nx: false,
        xx: false,
        get: false,
        ifeq: None,
        expiry: None,
    };
    let mut j = start;
    while j < args.len() {
        let option = args[j];
        let next = args.get(j + 1).copied();
        let timed = [
            ("EX", 1000, false),
            ("PX", 1, false),
            ("EXAT", 1000, true),
            ("PXAT", 1, true),
        ]
        .into_iter()
        .find(|(name, _, _)| is(option, name));
        let same_kind_or_none = |kind: &str| match o.expiry {
            None => true,
            Some(ExpiryOption::Timed(name, ..)) => name == kind,
            Some(_) => false,
        };
        let conditioned = o.nx || o.xx || o.ifeq.is_some();
        if for_set && is(option, "NX") && !o.xx && o.ifeq.is_none() {
            o.nx = true;
        } else if for_set && is(option, "XX") && !o.nx && o.ifeq.is_none() {
            o.xx = true;
        } else if let (true, true, false, Some(value)) =
            (for_set, is(option, "IFEQ"), conditioned, next)
        {
            o.ifeq = Some(value);
            j += 1;
        } else if for_set && is(option, "GET") {
            o.get = true;
        } else if for_set
            && is(option, "KEEPTTL")
            && matches!(o.expiry, None | Some(ExpiryOption::KeepTtl))
        {
            o.expiry = Some(ExpiryOption::KeepTtl);
        } else if !for_set
            && is(option, "PERSIST")
            && matches!(o.expiry, None | Some(ExpiryOption::Persist))
        {
            o.expiry = Some(ExpiryOption::Persist);
        } else if let (Some((name, unit, absolute)), Some(amount)) = (timed, next) {
            if !same_kind_or_none(name) {
                return Err(Reply::error(err::SYNTAX));
            }
            o.expiry = Some(ExpiryOption::Timed(name, unit, absolute, amount));
            j += 1;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        j += 1;
    }
    Ok(o)
}

pub fn set(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, value) = (args[1], args[2]);
    let options = parse_string_options(args, 3, true)?;
    let (nx, xx, get, ifeq) = (options.nx, options.xx, options.get, options.ifeq);
    let keepttl = options.expiry == Some(ExpiryOption::KeepTtl);
    let expiry = match options.expiry {
        Some(ExpiryOption::Timed(_, unit, absolute, amount)) => Some((amount, unit, absolute)),
        _ => None,
    };
    let mut locked = ctx.lock(&args[1..2]);
    let expire_at = match expiry {
        Some((amount, unit, absolute)) => deadline(amount, unit, absolute, locked.now, "set")?,
        None => 0,
    };
    let existing = locked.get(key);
    // IFEQ compares the old value, so like GET it needs a string there.
    let old = match existing {
        Some(entry) if get || ifeq.is_some() => Some(string_of(entry)?.to_bytes()),
        _ => None,
    };
    let exists = existing.is_some();
    let kept_ttl = existing.map_or(0, |e| e.expire_at());
    let old_reply = || {
        if get {
            old.clone().map_or(Reply::Nil, Reply::Bulk)
        } else {
            Reply::Nil
        }
    };
    let unequal = ifeq.is_some_and(|wanted| old.as_deref() != Some(wanted));
    if (nx && exists) || (xx && !exists) || unequal {
        return Ok(old_reply());
    }
    let expire_at = if keepttl { kept_ttl } else { expire_at };
    locked.set(key, owned(value), expire_at);
    if expiry.is_some() {
        locked.notify(class::STRING, "set", key);
        locked.notify(class::GENERIC, "expire", key);
    }
    Ok(if get { old_reply() } else { Reply::OK })
}

pub fn setnx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    if locked.contains(args[1]) {
        return Ok(Reply::Int(0));
    }
    locked.set(args[1], owned(args[2]), 0);
    Ok(Reply::Int(1))
}

/// SETEX and PSETEX.
pub fn setex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let psetex = is(args[0], "psetex");
    let mut locked = ctx.lock(&args[1..2]);
    let name = if psetex { "psetex" } else { "setex" };
    let at = deadline(
        args[2],
        if psetex { 1 } else { 1000 },
        false,
        locked.now,
        name,
    )?;
    locked.set(args[1], owned(args[3]), at);
    locked.notify(class::STRING, "set", args[1]);
    locked.notify(class::GENERIC, "expire", args[1]);
    Ok(Reply::OK)
}

pub fn getset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let old = match locked.get(args[1]) {
        Some(entry) => Reply::Bulk(string_of(entry)?.to_bytes()),
        None => Reply::Nil,
    };
    locked.set(args[1], owned(args[2]), 0);
    Ok(old)
}

pub fn getdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let old = match locked.get(args[1]) {
        Some(entry) => Reply::Bulk(string_of(entry)?.to_bytes()),
        None => return Ok(Reply::Nil),
    };
    locked.remove(args[1]);
    Ok(old)
}

/// DELIFEQ (Valkey 9.0): deletes the key only while it holds exactly `value`, the atomic
/// compare-and-delete that lets a lock's owner release it without a script and without removing a
/// lock that expired and was taken by another owner meanwhile.
pub fn delifeq(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let equal = match locked.get(args[1]) {
        Some(entry) => &string_of(entry)?[..] == args[2],
        None => false,
    };
    if equal {
        locked.remove(args[1]);
    }
    Ok(Reply::Int(i64::from(equal)))
}

pub fn getex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let options = parse_string_options(args, 2, false)?;
    let mut locked = ctx.lock(&args[1..2]);
    let now = locked.now;
    // As Redis: the options' syntax, then a missing key's nil, then WRONGTYPE, then an invalid
    // expire time.
    let value = match locked.get(args[1]) {
        Some(entry) => string_of(entry)?.to_bytes(),
        None => return Ok(Reply::Nil),
    };
    // None: leave the TTL alone; Some(0): persist; Some(t): expire at t.
    let new_deadline = match options.expiry {
        Some(ExpiryOption::Timed(_, unit, absolute, amount)) => {
            Some(deadline(amount, unit, absolute, now, "getex")?)
        }
        Some(_) => Some(0),
        None => None,
    };
    if let Some(at) = new_deadline {
        if at != 0 && at <= now {
            locked.remove(args[1]);
            locked.notify(class::GENERIC, "del", args[1]);
        } else if let Some(had) = locked.set_expiry(args[1], at) {
            match (at, had != 0) {
                (0, true) => locked.notify(class::GENERIC, "persist", args[1]),
                (0, false) => locked.unchanged(args[1]),
                _ => locked.notify(class::GENERIC, "expire", args[1]),
            }
        }
    }
    Ok(Reply::Bulk(value))
}

pub fn mget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let mut locked = ctx.lock(keys);
    let values: Vec<Reply> = keys
        .iter()
        .map(|k| match locked.get(k).map(|e| &e.value) {
            Some(Value::Str(b)) => Reply::Bulk(b.to_bytes()),
            _ => Reply::Nil,
        })
        .collect();
    Ok(Reply::Array(values))
}

/// MSET and MSETNX: all pairs are written atomically (MSETNX: only when no key exists).
pub fn mset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let nx = is(args[0], "msetnx");
    if args.len() % 2 == 0 {
        return Err(Reply::Error(
            super::wrong_arity(if nx { "msetnx" } else { "mset" }).into(),
        ));
    }
    let keys: Vec<&[u8]> = args[1..].iter().step_by(2).copied().collect();
    let mut locked = ctx.lock(&keys);
    if nx && keys.iter().any(|k| locked.contains(k)) {
        return Ok(Reply::Int(0));
    }
    for pair in args[1..].chunks(2) {
        locked.set(pair[0], owned(pair[1]), 0);
    }
    Ok(if nx { Reply::Int(1) } else { Reply::OK })
}

/// INCR, DECR, INCRBY, DECRBY. The key keeps its TTL.
pub fn incr(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
    let delta = match name.as_str() {
        "incr" => 1,
        "decr" => -1,
        "incrby" => int(args[2])?,
        _ => {
            let by = int(args[2])?;
            by.checked_neg()
                .ok_or_else(|| Reply::error("ERR decrement would overflow"))?
        }
    };
    let mut locked = ctx.lock(&args[1..2]);
    let current = match locked.get(args[1]) {
        Some(entry) => {
            parse_i64_strict(string_of(entry)?).ok_or_else(|| Reply::error(err::NOT_INTEGER))?
        }
        None => 0,
    };
    let new = current
        .checked_add(delta)
        .ok_or_else(|| Reply::error(err::OVERFLOW))?;
    let text = CompactBytes::new(itoa::Buffer::new().format(new).as_bytes());
    match locked.get_mut(args[1]) {
        Some(entry) => {
            entry.value = Value::Str(text);
            entry.set_outgrown(false); // an integer again
        }
        None => {
            locked.set(args[1], Value::Str(text), 0);
        }
    }
    Ok(Reply::Int(new))
}

/// Formats a float as INCRBYFLOAT does: plain decimal, shortest digits, no exponent.
pub fn human_float(value: f64) -> String {
    let text = format!("{value}");
    if text == "-0" {
        "0".into()
    } else {
        text
    }
}

pub fn incrbyfloat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    // As Redis: the key's type, then its value, then the increment.
    let current = match locked.get(args[1]) {
        Some(entry) => super::args::parse_long_double(string_of(entry)?)
            .ok_or_else(|| Reply::error(err::NOT_FLOAT))?,
        None => 0.0,
    };
    let delta = float(args[2])?;
    let new = current + delta;
    if !new.is_finite() {
        return Err(Reply::error("ERR increment would produce NaN or Infinity"));
    }
    let text = human_float(new);
    let value = CompactBytes::new(text.as_bytes());
    match locked.get_mut(args[1]) {
        Some(entry) => entry.value = Value::Str(value),
        None => {
            locked.set(args[1], Value::Str(value), 0);
        }
    }
    // Redis stores the text as it is, never as an integer: `200` is embstr, not int.
    locked.mark_outgrown(args[1]);
    Ok(Reply::Bulk(text.into()))
}

pub fn append(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let current_len = match locked.get(args[1]) {
        Some(entry) => Some(string_of(entry)?.len()),
        None => None,
    };
    let Some(len) = current_len else {
        locked.set(args[1], owned(args[2]), 0);
        return Ok(Reply::Int(args[2].len() as i64));
    };
    if len + args[2].len() > MAX_STRING {
        return Err(Reply::error(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    let entry = locked
        .get_mut(args[1])
        .ok_or_else(|| Reply::error(err::NO_SUCH_KEY))?;
    if let Value::Str(bytes) = &mut entry.value {
        bytes.extend_from_slice(args[2]);
        return Ok(Reply::Int(bytes.len() as i64));
    }
    Err(Reply::error(err::WRONGTYPE))
}

pub fn strlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    match locked.get(args[1]) {
        Some(entry) => Ok(Reply::Int(string_of(entry)?.len() as i64)),
        None => Ok(Reply::Int(0)),
    }
}

/// GETRANGE and SUBSTR, with Redis's negative-index rules.
pub fn getrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (start, end) = (int(args[2])?, int(args[3])?);
    let mut locked = ctx.lock(&args[1..2]);
    let value: &[u8] = match locked.get(args[1]) {
        Some(entry) => string_of(entry)?,
        None => return Ok(Reply::bulk(b"")),
    };
    let len = value.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Ok(Reply::bulk(b""));
    }
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let end = if end < 0 {
        (len + end).max(0)
    } else {
        end.min(len - 1)
    };
    if len == 0 || start > end || start >= len {
        return Ok(Reply::bulk(b""));
    }
    Ok(Reply::bulk(&value[start as usize..=end as usize]))
}

pub fn setrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let offset = int(args[2])?;
    if offset < 0 {
        return Err(Reply::error("ERR offset is out of range"));
    }
    let offset = offset as usize;
    let patch = args[3];
    let mut locked = ctx.lock(&args[1..2]);
    let current_len = match locked.get(args[1]) {
        Some(entry) => Some(string_of(entry)?.len()),
        None => None,
    };
    if patch.is_empty() {
        return Ok(Reply::Int(current_len.map_or(0, |len| len as i64)));
    }
    if offset + patch.len() > MAX_STRING {
        return Err(Reply::error(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    let end = offset + patch.len();
    if current_len.is_some() {
        if let Some(Value::Str(stored)) = locked.get_mut(args[1]).map(|e| &mut e.value) {
            stored.grown_to(end)[offset..end].copy_from_slice(patch);
            return Ok(Reply::Int(stored.len() as i64));
        }
    }
    let mut bytes = vec![0; end];
    bytes[offset..].copy_from_slice(patch);
    locked.set(args[1], Value::Str(bytes.into()), 0);
    let new_len = end as i64;
    Ok(Reply::Int(new_len))
}
