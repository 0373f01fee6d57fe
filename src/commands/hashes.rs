//! Hash commands.

use super::args::{int, is};
use super::typed::{hash, hash_mut, hash_or_create, remove_if_empty};
use super::{collection_scan, err, wrong_arity, CmdResult, Ctx};
use crate::protocol::{parse_i64_strict, Reply};
use bytes::Bytes;
use rand::Rng;

/// Largest |count| HRANDFIELD / SRANDMEMBER accept with a negative count: the reply is built in
/// memory, so an unbounded count would let one request exhaust it (Redis streams it instead).
pub const MAX_RANDOM_COUNT: u64 = 16 * 1024 * 1024;

/// HSET and HMSET: field value pairs.
pub fn hset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() % 2 != 0 {
        let name = if is(args[0], "hmset") {
            "hmset"
        } else {
            "hset"
        };
        return Err(Reply::Error(wrong_arity(name).into()));
    }
    let mut locked = ctx.lock(&args[1..2]);
    let limit = locked.limits().hash();
    let h = hash_or_create(&mut locked, args[1])?;
    let mut added = 0;
    for pair in args[2..].chunks(2) {
        if h.insert(pair[0], pair[1], limit) {
            added += 1;
        }
    }
    Ok(if is(args[0], "hmset") {
        Reply::OK
    } else {
        Reply::Int(added)
    })
}

pub fn hsetnx(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    locked.expire_fields(args[1], Some(&args[2..3]));
    let now = locked.now;
    if hash(&mut locked, args[1])?.is_some_and(|h| h.contains_key(args[2], now)) {
        return Ok(Reply::Int(0));
    }
    let limit = locked.limits().hash();
    hash_or_create(&mut locked, args[1])?.insert(args[2], args[3], limit);
    Ok(Reply::Int(1))
}

pub fn hget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    locked.expire_fields(args[1], Some(&args[2..3]));
    let now = locked.now;
    Ok(hash(&mut locked, args[1])?
        .and_then(|h| h.get_bytes(args[2], now))
        .map_or(Reply::Nil, Reply::Bulk))
}

pub fn hmget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    locked.expire_fields(args[1], Some(&args[2..]));
    let now = locked.now;
    let h = hash(&mut locked, args[1])?;
    Ok(Reply::Array(
        args[2..]
            .iter()
            .map(|f| {
                h.and_then(|h| h.get_bytes(f, now))
                    .map_or(Reply::Nil, Reply::Bulk)
            })
            .collect(),
    ))
}

pub fn hgetall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let now = locked.now;
    // Expired fields are skipped, not removed, as Redis's HGETALL does.
    let pairs = hash(&mut locked, args[1])?.map_or_else(Vec::new, |h| {
        h.iter_live(now)
            .map(|(k, v)| (Reply::bulk(k), Reply::bulk(v)))
            .collect()
    });
    Ok(Reply::Map(pairs))
}

/// HKEYS and HVALS.
pub fn hkeys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let values = is(args[0], "hvals");
    let mut locked = ctx.lock(&args[1..2]);
    let now = locked.now;
    let items = hash(&mut locked, args[1])?.map_or_else(Vec::new, |h| {
        h.iter_live(now)
            .map(|(k, v)| Reply::bulk(if values { v } else { k }))
            .collect()
    });
    Ok(Reply::Array(items))
}

pub fn hdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let Some(h) = hash_mut(&mut locked, args[1])? else {
        return Ok(Reply::Int(0));
    };
    let removed = args[2..].iter().filter(|f| h.remove(f)).count();
    if removed == 0 {
        locked.unchanged(args[1]);
    }
    remove_if_empty(&mut locked, args[1]);
    Ok(Reply::Int(removed as i64))
}

/// Counts expired fields not reclaimed yet, as Redis's HLEN does.
pub fn hlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    Ok(Reply::Int(
        hash(&mut locked, args[1])?.map_or(0, |h| h.len()) as i64,
    ))
}

pub fn hexists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    locked.expire_fields(args[1], Some(&args[2..3]));
    let now = locked.now;
    let found = hash(&mut locked, args[1])?.is_some_and(|h| h.contains_key(args[2], now));
    Ok(Reply::Int(i64::from(found)))
}

pub fn hstrlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    locked.expire_fields(args[1], Some(&args[2..3]));
    let now = locked.now;
    let len = hash(&mut locked, args[1])?
        .and_then(|h| h.get_live(args[2], now))
        .map_or(0, |v| v.len());
    Ok(Reply::Int(len as i64))
}

pub fn hincrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let delta = int(args[3])?;
    let mut locked = ctx.lock(&args[1..2]);
    locked.expire_fields(args[1], Some(&args[2..3]));
    let now = locked.now;
    let current = match hash(&mut locked, args[1])?.and_then(|h| h.get_live(args[2], now)) {
        Some(v) => {
            parse_i64_strict(v).ok_or_else(|| Reply::error("ERR hash value is not an integer"))?
        }
        None => 0,
    };
    let new = current
        .checked_add(delta)
        .ok_or_else(|| Reply::error(err::OVERFLOW))?;
    let limit = locked.limits().hash();
    let mut text = itoa::Buffer::new();
    // The field keeps its TTL, as in Redis.
    hash_or_create(&mut locked, args[1])?.update(args[2], text.format(new).as_bytes(), limit);
    Ok(Reply::Int(new))
}

pub fn hincrbyfloat(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let delta = super::args::float(args[3])?;
    if delta.is_infinite() {
        return Err(Reply::error("ERR value is NaN or Infinity"));
    }
    let mut locked = ctx.lock(&args[1..2]);
    locked.expire_fields(args[1], Some(&args[2..3]));
    let now = locked.now;
    let current = match hash(&mut locked, args[1])?.and_then(|h| h.get_live(args[2], now)) {
        Some(v) => super::args::parse_long_double(v)
            .ok_or_else(|| Reply::error("ERR hash value is not a float"))?,
        None => 0.0,
    };
    let new = current + delta;
    if !new.is_finite() {
        return Err(Reply::error("ERR increment would produce NaN or Infinity"));
    }
    let text = Bytes::from(super::strings::human_float(new));
    let limit = locked.limits().hash();
    hash_or_create(&mut locked, args[1])?.update(args[2], &text, limit);
    Ok(Reply::Bulk(text))
}

/// Parses a RANDFIELD/RANDMEMBER count with Redis's range error, and our cap on negative counts.
pub fn random_count(arg: &[u8], with_values: bool) -> Result<i64, Reply> {
    let count = int(arg)?;
    if count == i64::MIN {
        return Err(Reply::error(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    if (with_values && count < -(i64::MAX / 2))
        || count.unsigned_abs() > MAX_RANDOM_COUNT && count < 0
    {
        return Err(Reply::error("ERR value is out of range"));
    }
    Ok(count)
}

/// Up to `count` distinct positions in `0..len` (count > 0), or `|count|` positions that may repeat
/// (count < 0), in random order.
pub fn random_positions(len: usize, count: i64) -> Vec<usize> {
    let mut rng = rand::thread_rng();
    if count < 0 {
        return (0..count.unsigned_abs())
            .map(|_| rng.gen_range(0..len))
            .collect();
    }
    let count = (count as u64).min(len as u64) as usize;
    rand::seq::index::sample(&mut rng, len, count).into_vec()
}

/// HRANDFIELD key [count [WITHVALUES]].
pub fn hrandfield(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let with_values = match args.len() {
        2 | 3 => false,
        4 if is(args[3], "WITHVALUES") => true,
        _ => {
            // Redis reads the count first, then refuses extra arguments.
            if args.len() >= 3 {
                random_count(args[2], false)?;
            }
            return Err(Reply::error(err::SYNTAX));
        }
    };
    let count = args
        .get(2)
        .map(|c| random_count(c, with_values))
        .transpose()?;
    let resp3 = ctx.conn.resp3;
    let mut locked = ctx.lock(&args[1..2]);
    // Redis removes every expired field first, so the picks are among live ones.
    locked.expire_fields(args[1], None);
    let h = hash(&mut locked, args[1])?;
    let Some(count) = count else {
        return Ok(match h {
            Some(h) if !h.is_empty() => {
                let i = rand::thread_rng().gen_range(0..h.len());
                h.at_positions(&[i])
                    .first()
                    .map_or(Reply::Nil, |(k, _)| Reply::bulk(k))
            }
            _ => Reply::Nil,
        });
    };
    let Some(h) = h.filter(|h| !h.is_empty()) else {
        return Ok(Reply::Array(Vec::new()));
    };
    let mut items = Vec::new();
    for (k, v) in h.at_positions(&random_positions(h.len(), count)) {
        match (with_values, resp3) {
            (false, _) => items.push(Reply::bulk(k)),
            // RESP3 pairs each field with its value, as Redis 7 does.
            (true, true) => items.push(Reply::Array(vec![Reply::bulk(k), Reply::bulk(v)])),
            (true, false) => {
                items.push(Reply::bulk(k));
                items.push(Reply::bulk(v));
            }
        }
    }
    Ok(Reply::Array(items))
}

pub fn hscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    collection_scan::parse_cursor(args[2])?;
    let mut locked = ctx.lock(&args[1..2]);
    let now = locked.now;
    let found = hash(&mut locked, args[1])?;
    if found.is_none() {
        return Ok(collection_scan::empty());
    }
    let scan_args = collection_scan::parse(args, collection_scan::Family::Hash)?;
    Ok(match found {
        Some(h) => collection_scan::scan(
            h.iter_live(now).map(|(k, v)| (k, Some(Reply::bulk(v)))),
            h.live_len(now),
            &scan_args,
        ),
        None => collection_scan::empty(),
    })
}
