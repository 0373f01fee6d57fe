//! Set commands.

use super::args::{int, non_negative, Cursor};
use super::hashes::{random_count, random_positions};
use super::typed::{remove_if_empty, set, set_mut, set_or_create, wrongtype};
use super::{collection_scan, err, CmdResult, Ctx};
use crate::events::class;
use crate::protocol::Reply;
use crate::store::value::Set;
use crate::store::{Locked, Value};
use rand::Rng;

pub fn sadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let limit = locked.limits().set();
    let s = set_or_create(&mut locked, args[1])?;
    let added = args[2..].iter().filter(|m| s.insert(m, limit)).count();
    Ok(Reply::Int(added as i64))
}

pub fn srem(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let Some(s) = set_mut(&mut locked, args[1])? else {
        return Ok(Reply::Int(0));
    };
    let removed = args[2..].iter().filter(|m| s.remove(m)).count();
    if removed == 0 {
        locked.unchanged(args[1]);
    }
    remove_if_empty(&mut locked, args[1]);
    Ok(Reply::Int(removed as i64))
}

fn members_reply(s: Option<&Set>) -> Reply {
    Reply::Set(s.map_or_else(Vec::new, |s| s.iter().map(Reply::bulk).collect()))
}

pub fn smembers(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    Ok(members_reply(set(&mut locked, args[1])?))
}

pub fn sismember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let found = set(&mut locked, args[1])?.is_some_and(|s| s.contains(args[2]));
    Ok(Reply::Int(i64::from(found)))
}

pub fn smismember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let s = set(&mut locked, args[1])?;
    Ok(Reply::Array(
        args[2..]
            .iter()
            .map(|m| Reply::Int(i64::from(s.is_some_and(|s| s.contains(m)))))
            .collect(),
    ))
}

pub fn scard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    Ok(Reply::Int(
        set(&mut locked, args[1])?.map_or(0, |s| s.len()) as i64,
    ))
}

/// SPOP key [count]: uniformly random members, removed.
pub fn spop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(Reply::error(err::SYNTAX));
    }
    let count = args.get(2).map(|arg| super::args::count(arg)).transpose()?;
    let mut locked = ctx.lock(&args[1..2]);
    let Some(s) = set_mut(&mut locked, args[1])? else {
        return Ok(match count {
            Some(_) => Reply::Set(Vec::new()),
            None => Reply::Nil,
        });
    };
    let mut rng = rand::thread_rng();
    let mut popped = Vec::new();
    for _ in 0..count.unwrap_or(1).min(s.len()) {
        let i = rng.gen_range(0..s.len());
        if let Some(m) = s.pop_at(i) {
            popped.push(Reply::Bulk(m));
        }
    }
    remove_if_empty(&mut locked, args[1]);
    if ctx.shared.replication.feed.active() && !popped.is_empty() {
        // Replicas remove the members picked here, not random ones of their own.
        let mut replayed: Vec<&[u8]> = vec![b"SREM", args[1]];
        replayed.extend(popped.iter().filter_map(|m| match m {
            Reply::Bulk(m) => Some(&m[..]),
            _ => None,
        }));
        crate::replication::feed::propagate_as(&replayed);
    }
    Ok(match count {
        Some(_) => Reply::Set(popped),
        None => popped.pop().unwrap_or(Reply::Nil),
    })
}

/// SRANDMEMBER key [count]: a negative count may repeat members.
pub fn srandmember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(Reply::error(err::SYNTAX));
    }
    let count = args.get(2).map(|c| random_count(c, false)).transpose()?;
    let mut locked = ctx.lock(&args[1..2]);
    let s = set(&mut locked, args[1])?.filter(|s| !s.is_empty());
    let Some(count) = count else {
        return Ok(s.map_or(Reply::Nil, |s| {
            let i = rand::thread_rng().gen_range(0..s.len());
            s.at_positions(&[i]).first().map_or(Reply::Nil, Reply::bulk)
        }));
    };
    let Some(s) = s else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(Reply::Array(
        s.at_positions(&random_positions(s.len(), count))
            .into_iter()
            .map(Reply::bulk)
            .collect(),
    ))
}

pub fn smove(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (src, dst, member) = (args[1], args[2], args[3]);
    let mut locked = ctx.lock(&args[1..3]);
    let in_src = match set(&mut locked, src)? {
        Some(s) => s.contains(member),
        None => return Ok(Reply::Int(0)),
    };
    if !matches!(
        locked.get(dst).map(|e| &e.value),
        None | Some(Value::Set(_))
    ) {
        return Err(wrongtype());
    }
    if !in_src || src == dst {
        return Ok(Reply::Int(i64::from(in_src)));
    }
    if let Some(s) = set_mut(&mut locked, src)? {
        s.remove(member);
    }
    remove_if_empty(&mut locked, src);
    locked.notify(class::SET, "srem", src);
    if locked.peek(src).is_none() {
        locked.notify(class::GENERIC, "del", src);
    }
    let limit = locked.limits().set();
    set_or_create(&mut locked, dst)?.insert(member, limit);
    locked.notify(class::SET, "sadd", dst);
    Ok(Reply::Int(1))
}

#[derive(Clone, Copy, PartialEq)]
enum Algebra {
    Inter,
    Union,
    Diff,
}

/// The sets at `keys` (None for a missing key); WRONGTYPE if any key holds another type.
fn load<'l>(locked: &'l mut Locked<'_>, keys: &[&[u8]]) -> Result<Vec<Option<&'l Set>>, Reply> {
    for key in keys {
        set(locked, key)?;
    }
    let locked: &'l Locked<'_> = locked;
    let mut sets = Vec::with_capacity(keys.len());
    for key in keys {
        sets.push(match locked.peek(key).map(|e| &e.value) {
            Some(Value::Set(s)) => Some(s),
            _ => None,
        });
    }
    Ok(sets)
}

/// SINTER / SUNION / SDIFF of the sets, stopping an intersection early once `limit` is reached.
fn combine<'s>(sets: &[Option<&'s Set>], op: Algebra, limit: usize) -> Vec<&'s [u8]> {
    match op {
        Algebra::Union => {
            let mut out = indexmap::IndexSet::<&[u8], ahash::RandomState>::default();
            for s in sets.iter().flatten() {
                out.extend(s.iter());
            }
            out.into_iter().collect()
        }
        Algebra::Diff => match sets.first() {
            Some(Some(first)) => first
                .iter()
                .filter(|m| !sets[1..].iter().flatten().any(|s| s.contains(m)))
                .collect(),
            _ => Vec::new(),
        },
        Algebra::Inter => {
            if sets.iter().any(Option::is_none) {
                return Vec::new();
            }
            let mut all: Vec<&Set> = sets.iter().flatten().copied().collect();
            all.sort_by_key(|s| s.len()); // walk the smallest set
            let Some((smallest, rest)) = all.split_first() else {
                return Vec::new();
            };
            smallest
                .iter()
                .filter(|m| rest.iter().all(|s| s.contains(m)))
                .take(limit)
                .collect()
        }
    }
}

fn algebra_of(name: &[u8]) -> Algebra {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with(b"sinter") {
        Algebra::Inter
    } else if lower.starts_with(b"sunion") {
        Algebra::Union
    } else {
        Algebra::Diff
    }
}

/// SINTER, SUNION, SDIFF.
pub fn algebra(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let op = algebra_of(args[0]);
    let keys = &args[1..];
    let mut locked = ctx.lock(keys);
    let sets = load(&mut locked, keys)?;
    Ok(Reply::Set(
        combine(&sets, op, usize::MAX)
            .into_iter()
            .map(Reply::bulk)
            .collect(),
    ))
}

/// SINTERSTORE, SUNIONSTORE, SDIFFSTORE: an empty result deletes the destination.
pub fn algebra_store(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let op = algebra_of(args[0]);
    let (dst, keys) = (args[1], &args[2..]);
    let mut locked = ctx.lock(&args[1..]);
    let limit = locked.limits().set();
    let result = {
        let sets = load(&mut locked, keys)?;
        let mut result = Set::default();
        for member in combine(&sets, op, usize::MAX) {
            result.insert(member, limit);
        }
        result
    };
    let len = result.len();
    if result.is_empty() {
        locked.remove(dst);
    } else {
        locked.set(dst, Value::Set(result), 0);
    }
    Ok(Reply::Int(len as i64))
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit].
pub fn sintercard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let numkeys = int(args[1])
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| Reply::error("ERR numkeys should be greater than 0"))?;
    if numkeys as u64 > (args.len() - 2) as u64 {
        return Err(Reply::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let keys = &args[2..2 + numkeys as usize];
    let mut options = Cursor::new(args, 2 + numkeys as usize);
    let mut limit = usize::MAX;
    while !options.is_done() {
        if options.eat("LIMIT") {
            let n = non_negative(options.next_arg()?, "ERR LIMIT can't be negative")?;
            if n > 0 {
                limit = n as usize;
            }
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let mut locked = ctx.lock(keys);
    let sets = load(&mut locked, keys)?;
    Ok(Reply::Int(
        combine(&sets, Algebra::Inter, limit).len() as i64
    ))
}

pub fn sscan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    collection_scan::parse_cursor(args[2])?;
    let mut locked = ctx.lock(&args[1..2]);
    let found = set(&mut locked, args[1])?;
    if found.is_none() {
        return Ok(collection_scan::empty());
    }
    let scan_args = collection_scan::parse(args, collection_scan::Family::Set)?;
    Ok(match found {
        Some(s) => collection_scan::scan(s.iter().map(|m| (m, None)), s.len(), &scan_args),
        None => collection_scan::empty(),
    })
}
