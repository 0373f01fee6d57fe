//! Sorted-set algebra: ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD, and ZRANDMEMBER.
//! Plain sets are accepted as inputs, each member scoring 1, as in Redis.

use super::args::{int, is, non_negative};
use super::hashes::{random_count, random_positions};
use super::typed::wrongtype;
use super::zsets::{score_arg, scored_reply};
use super::{err, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::store::value::Set;
use crate::store::zset::{Score, ZSet};
use crate::store::{Locked, Value};
use bytes::Bytes;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// One input: a sorted set, a plain set (scores 1), or a missing key (empty).
#[derive(Clone, Copy)]
enum Src<'a> {
    Missing,
    Z(&'a ZSet),
    S(&'a Set),
}

/// A member borrowed from an input (a sorted set's or a set's bytes, copied into a result).
/// Compared and hashed by its bytes.
#[derive(Clone, Copy)]
struct Member<'a>(&'a [u8]);

impl<'a> Member<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.0
    }

    fn to_bytes(self) -> Bytes {
        Bytes::copy_from_slice(self.0)
    }
}

impl PartialEq for Member<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Member<'_> {}

impl std::hash::Hash for Member<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes().hash(state)
    }
}

impl<'a> Src<'a> {
    fn len(&self) -> usize {
        match self {
            Src::Missing => 0,
            Src::Z(z) => z.len(),
            Src::S(s) => s.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::Z(z) => z.score(member),
            Src::S(s) => s.contains(member).then_some(1.0),
        }
    }

    fn for_each(&self, mut f: impl FnMut(Member<'a>, f64)) {
        match self {
            Src::Missing => {}
            Src::Z(z) => z.iter().for_each(|(m, s)| f(Member(m), s)),
            Src::S(s) => s.iter().for_each(|m| f(Member(m), 1.0)),
        }
    }
}

/// Checks every input's type (WRONGTYPE before any option is looked at, as in Redis).
fn check_types(locked: &mut Locked<'_>, keys: &[&[u8]]) -> Result<(), Reply> {
    for key in keys {
        match locked.get(key).map(|e| &e.value) {
            None | Some(Value::ZSet(_)) | Some(Value::Set(_)) => {}
            Some(_) => return Err(wrongtype()),
        }
    }
    Ok(())
}

fn sources<'l>(locked: &'l Locked<'_>, keys: &[&[u8]]) -> Vec<Src<'l>> {
    keys.iter()
        .map(|key| match locked.peek(key).map(|e| &e.value) {
            Some(Value::ZSet(z)) => Src::Z(z),
            Some(Value::Set(s)) => Src::S(s),
            _ => Src::Missing,
        })
        .collect()
}

fn aggregate(target: &mut f64, value: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += value;
            if target.is_nan() {
                *target = 0.0; // inf + -inf
            }
        }
        Aggregate::Min => {
            if value < *target {
                *target = value;
            }
        }
        Aggregate::Max => {
            if value > *target {
                *target = value;
            }
        }
    }
}

fn weighted(weight: f64, score: f64) -> f64 {
    let v = weight * score;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// The combined (member, score) pairs, unordered; an intersection stops after `limit` members.
fn combine(
    srcs: &[Src<'_>],
    weights: &[f64],
    op: Op,
    how: Aggregate,
    limit: usize,
) -> Vec<(Bytes, f64)> {
    // Smallest inputs first, as Redis orders them (it changes only the summing order).
    let mut order: Vec<usize> = (0..srcs.len()).collect();
    if op != Op::Diff {
        order.sort_by_key(|&i| srcs[i].len());
    }
    match op {
        Op::Union => {
            let mut acc: hashbrown::HashMap<Member<'_>, f64, ahash::RandomState> =
                hashbrown::HashMap::default();
            for &i in &order {
                let w = weights[i];
                srcs[i].for_each(|m, s| {
                    let v = weighted(w, s);
                    match acc.get_mut(&m) {
                        Some(t) => aggregate(t, v, how),
                        None => {
                            acc.insert(m, v);
                        }
                    }
                });
            }
            acc.into_iter().map(|(m, s)| (m.to_bytes(), s)).collect()
        }
        Op::Inter => {
            let mut out = Vec::new();
            let Some((&first, rest)) = order.split_first() else {
                return out;
            };
            if srcs.iter().any(|s| s.len() == 0) {
                return out;
            }
            srcs[first].for_each(|m, s| {
                if out.len() >= limit {
                    return;
                }
                let mut score = weighted(weights[first], s);
                for &j in rest {
                    match srcs[j].score(m.bytes()) {
                        Some(other) => aggregate(&mut score, weighted(weights[j], other), how),
                        None => return,
                    }
                }
                out.push((m.to_bytes(), score));
            });
            out
        }
        Op::Diff => {
            let mut out = Vec::new();
            let Some((first, rest)) = srcs.split_first() else {
                return out;
            };
            first.for_each(|m, s| {
                if rest.iter().all(|r| r.score(m.bytes()).is_none()) {
                    out.push((m.to_bytes(), s));
                }
            });
            out
        }
    }
}

fn op_of(name: &[u8]) -> Op {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with(b"zunion") {
        Op::Union
    } else if lower.starts_with(b"zinter") {
        Op::Inter
    } else {
        Op::Diff
    }
}

/// The numkeys argument at `at`, checked against the arguments left, as Redis words it.
fn numkeys(args: &[&[u8]], at: usize) -> Result<usize, Reply> {
    let n = int(args[at])?;
    if n < 1 {
        return Err(Reply::error(format!(
            "ERR at least 1 input key is needed for '{}' command",
            String::from_utf8_lossy(&args[0].to_ascii_lowercase())
        )));
    }
    if n as u64 > (args.len() - at - 1) as u64 {
        return Err(Reply::error(err::SYNTAX));
    }
    Ok(n as usize)
}

struct Options {
    weights: Vec<f64>,
    how: Aggregate,
    withscores: bool,
    limit: usize,
}

/// Parses what follows the keys, as Redis's zunionInterDiffGenericCommand does.
fn options(
    args: &[&[u8]],
    mut j: usize,
    setnum: usize,
    op: Op,
    store: bool,
    card: bool,
) -> Result<Options, Reply> {
    let mut o = Options {
        weights: vec![1.0; setnum],
        how: Aggregate::Sum,
        withscores: false,
        limit: usize::MAX,
    };
    while j < args.len() {
        let remaining = args.len() - j;
        let arg = args[j];
        if card {
            if is(arg, "LIMIT") && remaining >= 2 {
                let n = non_negative(args[j + 1], "ERR LIMIT can't be negative")?;
                o.limit = if n == 0 { usize::MAX } else { n as usize };
                j += 2;
                continue;
            }
            return Err(Reply::error(err::SYNTAX));
        }
        if op != Op::Diff && remaining > setnum && is(arg, "WEIGHTS") {
            j += 1;
            for w in o.weights.iter_mut() {
                *w = score_arg(args[j])
                    .map_err(|_| Reply::error("ERR weight value is not a float"))?;
                j += 1;
            }
        } else if op != Op::Diff && remaining >= 2 && is(arg, "AGGREGATE") {
            let how = args[j + 1];
            o.how = if is(how, "SUM") {
                Aggregate::Sum
            } else if is(how, "MIN") {
                Aggregate::Min
            } else if is(how, "MAX") {
                Aggregate::Max
            } else {
                return Err(Reply::error(err::SYNTAX));
            };
            j += 2;
        } else if !store && is(arg, "WITHSCORES") {
            o.withscores = true;
            j += 1;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    Ok(o)
}

/// ZUNION, ZINTER, ZDIFF: numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...] [WITHSCORES].
pub fn zalgebra(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let op = op_of(args[0]);
    let setnum = numkeys(args, 1)?;
    let keys = &args[2..2 + setnum];
    let resp3 = ctx.conn.resp3;
    let mut locked = ctx.lock(keys);
    check_types(&mut locked, keys)?;
    let o = options(args, 2 + setnum, setnum, op, false, false)?;
    let srcs = sources(&locked, keys);
    let mut pairs = combine(&srcs, &o.weights, op, o.how, usize::MAX);
    // The order of a sorted set: by score, then member (`Score` orders -0 as 0, as a set does).
    pairs.sort_unstable_by(|a, b| Score(a.1).cmp(&Score(b.1)).then_with(|| a.0.cmp(&b.0)));
    Ok(if o.withscores {
        scored_reply(pairs, resp3, false)
    } else {
        Reply::Array(pairs.into_iter().map(|(m, _)| Reply::Bulk(m)).collect())
    })
}

/// Stores `result` at `dst` (deleting `dst` when it is empty) and answers its size.
pub fn store_result(locked: &mut Locked<'_>, dst: &[u8], result: ZSet) -> CmdResult {
    let len = result.len();
    if result.is_empty() {
        locked.remove(dst);
    } else {
        locked.set(dst, Value::ZSet(result), 0);
    }
    Ok(Reply::Int(len as i64))
}

/// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: destination numkeys key [key ...] [options].
pub fn zalgebra_store(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let op = op_of(args[0]);
    let setnum = numkeys(args, 2)?;
    let dst = args[1];
    let keys = &args[3..3 + setnum];
    let mut locked = ctx.lock(&args[1..3 + setnum]);
    check_types(&mut locked, keys)?;
    let o = options(args, 3 + setnum, setnum, op, true, false)?;
    let result = {
        let srcs = sources(&locked, keys);
        ZSet::from_distinct(
            combine(&srcs, &o.weights, op, o.how, usize::MAX),
            locked.limits().zset(),
        )
    };
    store_result(&mut locked, dst, result)
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit].
pub fn zintercard(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let setnum = numkeys(args, 1)?;
    let keys = &args[2..2 + setnum];
    let mut locked = ctx.lock(keys);
    check_types(&mut locked, keys)?;
    let o = options(args, 2 + setnum, setnum, Op::Inter, true, true)?;
    let srcs = sources(&locked, keys);
    let n = combine(&srcs, &o.weights, Op::Inter, Aggregate::Sum, o.limit).len();
    Ok(Reply::Int(n as i64))
}

/// ZRANDMEMBER key [count [WITHSCORES]].
pub fn zrandmember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let withscores = match args.len() {
        2 | 3 => false,
        4 if is(args[3], "WITHSCORES") => true,
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
        .map(|c| random_count(c, withscores))
        .transpose()?;
    let resp3 = ctx.conn.resp3;
    let mut locked = ctx.lock(&args[1..2]);
    let z = super::typed::zset(&mut locked, args[1])?;
    let Some(count) = count else {
        return Ok(match z {
            Some(z) if !z.is_empty() => {
                let i = random_positions(z.len(), 1)[0];
                z.select(i)
                    .map_or(Reply::Nil, |(m, _)| Reply::Bulk(Bytes::copy_from_slice(m)))
            }
            _ => Reply::Nil,
        });
    };
    let Some(z) = z.filter(|z| !z.is_empty()) else {
        return Ok(Reply::Array(Vec::new()));
    };
    let all: Vec<(&[u8], f64)> = z.iter().collect();
    let pairs: Vec<(Bytes, f64)> = random_positions(all.len(), count)
        .into_iter()
        .filter_map(|i| all.get(i).map(|(m, s)| (Bytes::copy_from_slice(m), *s)))
        .collect();
    Ok(if withscores {
        scored_reply(pairs, resp3, false)
    } else {
        Reply::Array(pairs.into_iter().map(|(m, _)| Reply::Bulk(m)).collect())
    })
}
