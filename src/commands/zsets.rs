//! Sorted-set commands except the range family (in `zrange.rs`). The structure is in
//! `crate::store::zset`.

use super::args::{is, parse_double, parse_float};
use super::typed::{remove_if_empty, zset, zset_mut, zset_or_create};
use super::{collection_scan, err, CmdResult, Ctx};
use crate::protocol::{format_double, Reply};
use crate::store::zset::ZSet;
use bytes::Bytes;

/// A score argument as Redis's `string2d` reads it: like any float, but a value that overflows to
/// infinity or underflows to zero is refused (only the words `inf`/`-inf` give an infinity).
pub fn score_arg(arg: &[u8]) -> Result<f64, Reply> {
    parse_double(arg).ok_or_else(|| Reply::error(err::NOT_FLOAT))
}

/// `(member, score)` pairs in Redis's shape: RESP2 flattens them with scores as bulk strings;
/// RESP3 nests each pair with a double score (Redis 7), unless `flat_in_resp3` (ZPOPMIN without a
/// count answers one flat pair in both protocols).
pub fn scored_reply(pairs: Vec<(Bytes, f64)>, resp3: bool, flat_in_resp3: bool) -> Reply {
    if resp3 && !flat_in_resp3 {
        return Reply::Array(
            pairs
                .into_iter()
                .map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]))
                .collect(),
        );
    }
    let mut flat = Vec::with_capacity(pairs.len() * 2);
    for (m, s) in pairs {
        flat.push(Reply::Bulk(m));
        flat.push(Reply::Double(s));
    }
    Reply::Array(flat)
}

/// ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...].
pub fn zadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while i < args.len() {
        let flag = args[i];
        if is(flag, "NX") {
            nx = true;
        } else if is(flag, "XX") {
            xx = true;
        } else if is(flag, "GT") {
            gt = true;
        } else if is(flag, "LT") {
            lt = true;
        } else if is(flag, "CH") {
            ch = true;
        } else if is(flag, "INCR") {
            incr = true;
        } else {
            break;
        }
        i += 1;
    }
    let pairs = &args[i..];
    if pairs.is_empty() || pairs.len() % 2 != 0 {
        return Err(Reply::error(err::SYNTAX));
    }
    if nx && xx {
        return Err(Reply::error(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if [gt, lt, nx].iter().filter(|&&on| on).count() > 1 {
        return Err(Reply::error(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if incr && pairs.len() > 2 {
        return Err(Reply::error(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let scores = pairs
        .chunks(2)
        .map(|p| score_arg(p[0]))
        .collect::<Result<Vec<f64>, Reply>>()?;
    let key = args[1];
    let mut locked = ctx.lock(&args[1..2]);
    if zset(&mut locked, key)?.is_none() && xx {
        return Ok(if incr { Reply::Nil } else { Reply::Int(0) });
    }
    let limit = locked.limits().zset();
    let z = zset_or_create(&mut locked, key)?;
    let (mut added, mut changed) = (0i64, 0i64);
    let mut incr_result = None;
    for (pair, &score) in pairs.chunks(2).zip(&scores) {
        let member = pair[1];
        match z.score(member) {
            Some(current) => {
                if nx {
                    continue;
                }
                let new = if incr { current + score } else { score };
                if new.is_nan() {
                    remove_if_empty(&mut locked, key);
                    return Err(Reply::error("ERR resulting score is not a number (NaN)"));
                }
                if (gt && new <= current) || (lt && new >= current) {
                    continue;
                }
                incr_result = Some(new);
                if new != current {
                    z.insert(Bytes::copy_from_slice(member), new, limit);
                    changed += 1;
                }
            }
            None => {
                if xx {
                    continue;
                }
                z.insert(Bytes::copy_from_slice(member), score, limit);
                incr_result = Some(score);
                added += 1;
            }
        }
    }
    remove_if_empty(&mut locked, key); // XX/NX on a fresh key may have added nothing
    if added > 0 {
        locked.keyspace().waiters.signal(key); // a client blocked in BZPOPMIN/BZMPOP may pop
    }
    if added + changed == 0 {
        locked.unchanged(key);
    } else if incr {
        locked.notify(crate::events::class::ZSET, "zincr", key);
    }
    if incr {
        return Ok(incr_result.map_or(Reply::Nil, Reply::Double));
    }
    Ok(Reply::Int(if ch { added + changed } else { added }))
}

pub fn zincrby(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let delta = score_arg(args[2])?;
    let mut locked = ctx.lock(&args[1..2]);
    let limit = locked.limits().zset();
    let z = zset_or_create(&mut locked, args[1])?;
    let new = z.score(args[3]).unwrap_or(0.0) + delta;
    if new.is_nan() {
        remove_if_empty(&mut locked, args[1]);
        return Err(Reply::error("ERR resulting score is not a number (NaN)"));
    }
    z.insert(Bytes::copy_from_slice(args[3]), new, limit);
    locked.keyspace().waiters.signal(args[1]);
    Ok(Reply::Double(new))
}

pub fn zscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    Ok(zset(&mut locked, args[1])?
        .and_then(|z| z.score(args[2]))
        .map_or(Reply::Nil, Reply::Double))
}

pub fn zmscore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let z = zset(&mut locked, args[1])?;
    Ok(Reply::Array(
        args[2..]
            .iter()
            .map(|m| z.and_then(|z| z.score(m)).map_or(Reply::Nil, Reply::Double))
            .collect(),
    ))
}

pub fn zcard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    Ok(Reply::Int(
        zset(&mut locked, args[1])?.map_or(0, ZSet::len) as i64
    ))
}

/// ZRANK and ZREVRANK key member [WITHSCORE] (7.2): `[rank, score]` with WITHSCORE.
pub fn zrank(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let rev = is(args[0], "zrevrank");
    if args.len() > 4 {
        return Err(Reply::error(format!(
            "ERR wrong number of arguments for '{}' command",
            if rev { "zrevrank" } else { "zrank" }
        )));
    }
    let withscore = match args.get(3) {
        None => false,
        Some(arg) if is(arg, "WITHSCORE") => true,
        Some(_) => return Err(Reply::error(err::SYNTAX)),
    };
    let missing = || {
        if withscore {
            Reply::NilArray
        } else {
            Reply::Nil
        }
    };
    let mut locked = ctx.lock(&args[1..2]);
    let Some(z) = zset(&mut locked, args[1])? else {
        return Ok(missing());
    };
    let (Some(rank), Some(score)) = (z.rank(args[2]), z.score(args[2])) else {
        return Ok(missing());
    };
    let rank = if rev { z.len() - 1 - rank } else { rank };
    Ok(if withscore {
        Reply::Array(vec![Reply::Int(rank as i64), Reply::Double(score)])
    } else {
        Reply::Int(rank as i64)
    })
}

pub fn zrem(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let Some(z) = zset_mut(&mut locked, args[1])? else {
        return Ok(Reply::Int(0));
    };
    let removed = args[2..].iter().filter(|m| z.remove(m).is_some()).count();
    if removed == 0 {
        locked.unchanged(args[1]);
    }
    remove_if_empty(&mut locked, args[1]);
    Ok(Reply::Int(removed as i64))
}

/// ZPOPMIN and ZPOPMAX key [count].
pub fn zpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let max = is(args[0], "zpopmax");
    if args.len() > 3 {
        return Err(Reply::error(err::SYNTAX));
    }
    let count = args.get(2).map(|arg| super::args::count(arg)).transpose()?;
    let resp3 = ctx.conn.resp3;
    let mut locked = ctx.lock(&args[1..2]);
    let mut popped = Vec::new();
    if let Some(z) = zset_mut(&mut locked, args[1])? {
        for _ in 0..count.unwrap_or(1).min(z.len()) {
            let next = if max { z.pop_max() } else { z.pop_min() };
            popped.extend(next);
        }
    }
    remove_if_empty(&mut locked, args[1]);
    Ok(scored_reply(popped, resp3, count.is_none()))
}

pub fn zscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    collection_scan::parse_cursor(args[2])?;
    let mut locked = ctx.lock(&args[1..2]);
    let found = zset(&mut locked, args[1])?;
    if found.is_none() {
        return Ok(collection_scan::empty());
    }
    let scan_args = collection_scan::parse(args, collection_scan::Family::Zset)?;
    Ok(match found {
        Some(z) => collection_scan::scan(
            z.iter()
                .map(|(m, s)| (m, Some(Reply::bulk(format_double(s))))),
            z.len(),
            &scan_args,
        ),
        None => collection_scan::empty(),
    })
}

/// A score bound: `1.5`, `(1.5`, `-inf`, `+inf` (`ERR min or max is not a float` otherwise).
/// Redis reads a bound with a bare `strtod`: leading blanks are skipped, and an empty bound (``,
/// `(`) is 0.
pub fn parse_score_bound(arg: &[u8]) -> Result<crate::store::zset::ScoreBound, Reply> {
    let bad = || Reply::error("ERR min or max is not a float");
    let (exclusive, text) = match arg.first() {
        Some(b'(') => (true, &arg[1..]),
        _ => (false, arg),
    };
    let start = text
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .unwrap_or(text.len());
    let value = if text.is_empty() {
        0.0
    } else {
        // bounds may overflow to ±inf, as strtod allows
        parse_float(&text[start..]).ok_or_else(bad)?
    };
    Ok(crate::store::zset::ScoreBound { value, exclusive })
}

/// A lex bound: `-`, `+`, `[member`, `(member`.
pub fn parse_lex_bound(arg: &[u8]) -> Result<crate::store::zset::LexBound, Reply> {
    use crate::store::zset::LexBound;
    match arg {
        b"-" => Ok(LexBound::NegInf),
        b"+" => Ok(LexBound::PosInf),
        [b'[', rest @ ..] => Ok(LexBound::Inclusive(Bytes::copy_from_slice(rest))),
        [b'(', rest @ ..] => Ok(LexBound::Exclusive(Bytes::copy_from_slice(rest))),
        _ => Err(Reply::error("ERR min or max not valid string range item")),
    }
}
