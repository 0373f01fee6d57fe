//! The sorted-set range family: ZRANGE (BYSCORE, BYLEX, REV, LIMIT, WITHSCORES), ZRANGEBYSCORE,
//! ZREVRANGE, ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX, ZCOUNT, ZLEXCOUNT and the
//! ZREMRANGEBY* commands. Rank ranges walk from the nearer end of the B-tree (O(log n + offset +
//! k)); score and lex ranges seek to the first match.

use super::args::{int, is};
use super::lists::normalize_range;
use super::typed::{remove_if_empty, zset, zset_mut};
use super::zsets::{parse_lex_bound, parse_score_bound, scored_reply};
use super::{err, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::store::zset::{LexBound, ScoreBound, ZSet};
use bytes::Bytes;

/// What to select, already parsed (so bad bounds fail before the key is looked at, as in Redis).
enum Select {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound, LexBound),
}

struct RangeQuery {
    select: Select,
    rev: bool,
    /// (offset, count); a negative count means all.
    limit: Option<(i64, i64)>,
}

impl RangeQuery {
    /// `first` and `second` as given: for reverse score/lex ranges the first is the maximum.
    fn new(by: u8, first: &[u8], second: &[u8], rev: bool) -> Result<Self, Reply> {
        let select = match by {
            b's' => {
                let (a, b) = (parse_score_bound(first)?, parse_score_bound(second)?);
                if rev {
                    Select::Score(b, a)
                } else {
                    Select::Score(a, b)
                }
            }
            b'l' => {
                let (a, b) = (parse_lex_bound(first)?, parse_lex_bound(second)?);
                if rev {
                    Select::Lex(b, a)
                } else {
                    Select::Lex(a, b)
                }
            }
            _ => Select::Rank(int(first)?, int(second)?),
        };
        Ok(RangeQuery {
            select,
            rev,
            limit: None,
        })
    }

    /// The selected members in reply order.
    fn run(&self, z: &ZSet) -> Vec<(Bytes, f64)> {
        let (offset, count) = match self.limit {
            Some((offset, _)) if offset < 0 => return Vec::new(),
            Some((offset, count)) => (
                offset as usize,
                if count < 0 {
                    usize::MAX
                } else {
                    count as usize
                },
            ),
            None => (0, usize::MAX),
        };
        let owned = |(m, s): (&[u8], f64)| (Bytes::copy_from_slice(m), s);
        match &self.select {
            Select::Rank(start, stop) => {
                let len = z.len();
                let Some((from, to)) = normalize_range(*start, *stop, len) else {
                    return Vec::new();
                };
                let n = to - from + 1;
                // Ranks [from, to] in iteration order: O(log n) to the first, then a walk.
                if self.rev {
                    z.iter_before(len - from).take(n).map(owned).collect()
                } else {
                    z.iter_from(from).take(n).map(owned).collect()
                }
            }
            Select::Score(min, max) => {
                if self.rev {
                    z.rev_range_by_score(*min, *max)
                        .skip(offset)
                        .take(count)
                        .map(owned)
                        .collect()
                } else {
                    z.range_by_score(*min, *max)
                        .skip(offset)
                        .take(count)
                        .map(owned)
                        .collect()
                }
            }
            Select::Lex(min, max) => {
                if self.rev {
                    let mut all: Vec<_> = z.range_by_lex(min, max).map(owned).collect();
                    all.reverse();
                    all.into_iter().skip(offset).take(count).collect()
                } else {
                    z.range_by_lex(min, max)
                        .skip(offset)
                        .take(count)
                        .map(owned)
                        .collect()
                }
            }
        }
    }
}

fn limit_error() -> Reply {
    Reply::error(
        "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
    )
}

/// Every read form of the range family.
pub fn zrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    range_generic(ctx, args, false)
}

/// ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]: an empty result
/// deletes the destination.
pub fn zrangestore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    range_generic(ctx, args, true)
}

fn range_generic(ctx: &mut Ctx, args: &[&[u8]], store: bool) -> CmdResult {
    let name = args[0].to_ascii_lowercase();
    let (mut by, mut rev, generic) = match &name[..] {
        b"zrange" | b"zrangestore" => (b'r', false, true),
        b"zrevrange" => (b'r', true, false),
        b"zrangebyscore" => (b's', false, false),
        b"zrevrangebyscore" => (b's', true, false),
        b"zrangebylex" => (b'l', false, false),
        _ => (b'l', true, false), // zrevrangebylex
    };
    let base = usize::from(store); // ZRANGESTORE's arguments come one later
    let (mut withscores, mut limit) = (false, None);
    let mut i = 4 + base;
    while i < args.len() {
        let opt = args[i];
        if !store && is(opt, "WITHSCORES") {
            withscores = true;
        } else if is(opt, "LIMIT") && i + 2 < args.len() {
            limit = Some((int(args[i + 1])?, int(args[i + 2])?));
            i += 2;
        } else if generic && is(opt, "REV") && !rev {
            rev = true;
        } else if generic && is(opt, "BYSCORE") && by == b'r' {
            by = b's';
        } else if generic && is(opt, "BYLEX") && by == b'r' {
            by = b'l';
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        i += 1;
    }
    // As in Redis, a count of -1 is "no limit" and passes with a rank range (the offset is then
    // ignored); any other LIMIT needs BYSCORE or BYLEX.
    if limit.is_some_and(|(_, count)| count != -1) && by == b'r' {
        return Err(limit_error());
    }
    if withscores && by == b'l' {
        return Err(Reply::error(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let mut query = RangeQuery::new(by, args[2 + base], args[3 + base], rev)?;
    if by != b'r' {
        query.limit = limit;
    }
    let resp3 = ctx.conn.resp3;
    let src = args[1 + base];
    let mut locked = if store {
        ctx.lock(&args[1..3])
    } else {
        ctx.lock(&args[1..2])
    };
    let items = zset(&mut locked, src)?.map_or_else(Vec::new, |z| query.run(z));
    if store {
        let limit = locked.limits().zset();
        let mut result = ZSet::default();
        for (m, s) in items {
            result.insert(m, s, limit);
        }
        return super::zalgebra::store_result(&mut locked, args[1], result);
    }
    Ok(if withscores {
        scored_reply(items, resp3, false)
    } else {
        Reply::Array(items.into_iter().map(|(m, _)| Reply::Bulk(m)).collect())
    })
}

/// ZCOUNT and ZLEXCOUNT.
pub fn zcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let by = if is(args[0], "zlexcount") { b'l' } else { b's' };
    let query = RangeQuery::new(by, args[2], args[3], false)?;
    let mut locked = ctx.lock(&args[1..2]);
    let n = match (zset(&mut locked, args[1])?, &query.select) {
        (Some(z), Select::Score(min, max)) => z.range_by_score(*min, *max).count(),
        (Some(z), Select::Lex(min, max)) => z.range_by_lex(min, max).count(),
        _ => 0,
    };
    Ok(Reply::Int(n as i64))
}

/// ZREMRANGEBYRANK, ZREMRANGEBYSCORE and ZREMRANGEBYLEX.
pub fn zremrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = args[0].to_ascii_lowercase();
    let by = match &name[..] {
        b"zremrangebyrank" => b'r',
        b"zremrangebyscore" => b's',
        _ => b'l',
    };
    let query = RangeQuery::new(by, args[2], args[3], false)?;
    let mut locked = ctx.lock(&args[1..2]);
    let victims = match zset(&mut locked, args[1])? {
        Some(z) => query.run(z),
        None => return Ok(Reply::Int(0)),
    };
    if victims.is_empty() {
        return Ok(Reply::Int(0)); // nothing written: no event, no invalidation (as Redis)
    }
    if let Some(z) = zset_mut(&mut locked, args[1])? {
        for (member, _) in &victims {
            z.remove(member);
        }
    }
    remove_if_empty(&mut locked, args[1]);
    Ok(Reply::Int(victims.len() as i64))
}
