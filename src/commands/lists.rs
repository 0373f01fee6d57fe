//! List commands (the blocking ones live in `blocking_lists.rs`). A list is a `VecDeque<Bytes>`:
//! O(1) at both ends, O(n) in the middle, as Redis's quicklist.

use super::args::{int, is, Cursor};
use super::typed::{list, list_mut, list_or_create, remove_if_empty, wrongtype, List};
use super::{err, CmdResult, Ctx};
use crate::events::class;
use crate::protocol::Reply;
use crate::store::{Locked, Value};
use bytes::Bytes;

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum End {
    Left,
    Right,
}

impl End {
    pub fn parse(arg: &[u8]) -> Result<End, Reply> {
        if is(arg, "LEFT") {
            Ok(End::Left)
        } else if is(arg, "RIGHT") {
            Ok(End::Right)
        } else {
            Err(Reply::error(err::SYNTAX))
        }
    }
}

fn pop_end(list: &mut List, end: End) -> Option<Bytes> {
    match end {
        End::Left => list.pop_front(),
        End::Right => list.pop_back(),
    }
}

fn push_end(list: &mut List, end: End, value: Bytes) {
    match end {
        End::Left => list.push_front(value),
        End::Right => list.push_back(value),
    }
}

/// Wakes a client blocked on `key` after elements were added to an existing list (a new list
/// signals by itself when it enters the keyspace).
pub fn signal_push(locked: &Locked<'_>, key: &[u8]) {
    locked.keyspace().waiters.signal(key);
}

/// Pops one element from `key`, deleting the list when it empties.
pub fn pop_one(locked: &mut Locked<'_>, key: &[u8], end: End) -> Result<Option<Bytes>, Reply> {
    let Some(l) = list_mut(locked, key)? else {
        return Ok(None);
    };
    let value = pop_end(l, end);
    remove_if_empty(locked, key);
    Ok(value)
}

/// LMOVE's core: pops from `src` and pushes onto `dst` atomically. `None` when `src` is empty.
/// The destination's type is checked before anything is popped, so a WRONGTYPE loses nothing.
pub fn move_one(
    locked: &mut Locked<'_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> Result<Option<Bytes>, Reply> {
    if list(locked, src)?.is_none() {
        return Ok(None);
    }
    if !matches!(
        locked.get(dst).map(|e| &e.value),
        None | Some(Value::List(_))
    ) {
        return Err(wrongtype());
    }
    let Some(value) = pop_one(locked, src, from)? else {
        return Ok(None);
    };
    push_end(list_or_create(locked, dst)?, to, value.clone());
    signal_push(locked, dst);
    // Redis's order: the push, the pop, then `del` if the source emptied.
    let (popped, pushed) = (
        if from == End::Left { "lpop" } else { "rpop" },
        if to == End::Left { "lpush" } else { "rpush" },
    );
    locked.notify(class::LIST, pushed, dst);
    locked.notify(class::LIST, popped, src);
    if locked.peek(src).is_none() {
        locked.notify(class::GENERIC, "del", src);
    }
    Ok(Some(value))
}

/// LPUSH, RPUSH, LPUSHX, RPUSHX.
pub fn push(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = args[0];
    let end = if name[0].eq_ignore_ascii_case(&b'l') {
        End::Left
    } else {
        End::Right
    };
    let only_existing = name.len() == 6; // LPUSHX / RPUSHX
    let key = args[1];
    let mut locked = ctx.lock(&args[1..2]);
    let l = if only_existing {
        match list_mut(&mut locked, key)? {
            Some(l) => l,
            None => return Ok(Reply::Int(0)),
        }
    } else {
        list_or_create(&mut locked, key)?
    };
    for value in &args[2..] {
        push_end(l, end, Bytes::copy_from_slice(value));
    }
    let len = l.len();
    signal_push(&locked, key);
    Ok(Reply::Int(len as i64))
}

/// LPOP and RPOP, with the optional count (nil array for a missing key, as Redis).
pub fn pop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let end = if args[0][0].eq_ignore_ascii_case(&b'l') {
        End::Left
    } else {
        End::Right
    };
    if args.len() > 3 {
        return Err(Reply::Error(
            super::wrong_arity(if end == End::Left { "lpop" } else { "rpop" }).into(),
        ));
    }
    let count = args.get(2).map(|arg| super::args::count(arg)).transpose()?;
    let key = args[1];
    let mut locked = ctx.lock(&args[1..2]);
    let Some(l) = list_mut(&mut locked, key)? else {
        return Ok(if count.is_some() {
            Reply::NilArray
        } else {
            Reply::Nil
        });
    };
    let reply = match count {
        None => pop_end(l, end).map_or(Reply::Nil, Reply::Bulk),
        Some(n) => {
            let n = n.min(l.len());
            Reply::Array(
                (0..n)
                    .filter_map(|_| pop_end(l, end))
                    .map(Reply::Bulk)
                    .collect(),
            )
        }
    };
    remove_if_empty(&mut locked, key);
    Ok(reply)
}

pub fn llen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    Ok(Reply::Int(
        list(&mut locked, args[1])?.map_or(0, |l| l.len()) as i64,
    ))
}

/// Redis's start/stop normalisation: negative counts from the end; `None` for an empty range.
pub fn normalize_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        len + stop
    } else {
        stop.min(len - 1)
    };
    (start <= stop && start < len && stop >= 0).then_some((start as usize, stop as usize))
}

pub fn lrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (start, stop) = (int(args[2])?, int(args[3])?);
    let mut locked = ctx.lock(&args[1..2]);
    let Some(l) = list(&mut locked, args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let Some((from, to)) = normalize_range(start, stop, l.len()) else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(Reply::Array(
        l.range(from..=to).map(|v| Reply::Bulk(v.clone())).collect(),
    ))
}

/// An index into a list of `len` elements, negative from the end.
fn index_of(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 { len as i64 + index } else { index };
    (0..len as i64).contains(&i).then_some(i as usize)
}

pub fn lindex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    // As Redis: the key (nil, WRONGTYPE) before the index.
    let Some(l) = list(&mut locked, args[1])? else {
        return Ok(Reply::Nil);
    };
    let index = int(args[2])?;
    Ok(index_of(index, l.len()).map_or(Reply::Nil, |i| Reply::Bulk(l[i].clone())))
}

pub fn lset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    // As Redis: the key (no such key, WRONGTYPE) before the index.
    let len = list(&mut locked, args[1])?
        .ok_or_else(|| Reply::error(err::NO_SUCH_KEY))?
        .len();
    let index = int(args[2])?;
    let i = index_of(index, len).ok_or_else(|| Reply::error("ERR index out of range"))?;
    if let Some(l) = list_mut(&mut locked, args[1])? {
        l[i] = Bytes::copy_from_slice(args[3]);
    }
    Ok(Reply::OK)
}

pub fn lrem(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = int(args[2])?;
    let target = args[3];
    let mut locked = ctx.lock(&args[1..2]);
    let Some(l) = list_mut(&mut locked, args[1])? else {
        return Ok(Reply::Int(0));
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs().min(usize::MAX as u64) as usize
    };
    let mut removed = 0usize;
    if count >= 0 {
        l.retain(|v| {
            let hit = removed < limit && &v[..] == target;
            removed += usize::from(hit);
            !hit
        });
    } else {
        let mut i = l.len();
        while i > 0 && removed < limit {
            i -= 1;
            if l[i] == target {
                l.remove(i);
                removed += 1;
            }
        }
    }
    if removed == 0 {
        locked.unchanged(args[1]);
    }
    remove_if_empty(&mut locked, args[1]);
    Ok(Reply::Int(removed as i64))
}

pub fn ltrim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (start, stop) = (int(args[2])?, int(args[3])?);
    let mut locked = ctx.lock(&args[1..2]);
    let Some(l) = list_mut(&mut locked, args[1])? else {
        return Ok(Reply::OK);
    };
    match normalize_range(start, stop, l.len()) {
        Some((from, to)) => {
            l.truncate(to + 1);
            l.drain(..from);
        }
        None => l.clear(),
    }
    remove_if_empty(&mut locked, args[1]);
    Ok(Reply::OK)
}

pub fn linsert(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let after = if is(args[2], "AFTER") {
        true
    } else if is(args[2], "BEFORE") {
        false
    } else {
        return Err(Reply::error(err::SYNTAX));
    };
    let (pivot, value) = (args[3], args[4]);
    let mut locked = ctx.lock(&args[1..2]);
    let Some(l) = list(&mut locked, args[1])? else {
        return Ok(Reply::Int(0));
    };
    let Some(at) = l.iter().position(|v| v == pivot) else {
        return Ok(Reply::Int(-1));
    };
    let Some(l) = list_mut(&mut locked, args[1])? else {
        return Ok(Reply::Int(0));
    };
    l.insert(at + usize::from(after), Bytes::copy_from_slice(value));
    let len = l.len();
    signal_push(&locked, args[1]);
    Ok(Reply::Int(len as i64))
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].
pub fn lpos(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let target = args[2];
    let mut options = Cursor::new(args, 3);
    let (mut rank, mut count, mut maxlen) = (1i64, None::<usize>, 0usize);
    while !options.is_done() {
        if options.eat("RANK") {
            rank = options.next_int()?;
            if rank == 0 {
                return Err(Reply::error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"));
            }
        } else if options.eat("COUNT") {
            // As Redis: a COUNT or MAXLEN that is not an integer gets the same error as a
            // negative one.
            let n = int(options.next_arg()?)
                .map_err(|_| Reply::error("ERR COUNT can't be negative"))?;
            if n < 0 {
                return Err(Reply::error("ERR COUNT can't be negative"));
            }
            count = Some(n as usize);
        } else if options.eat("MAXLEN") {
            let n = int(options.next_arg()?)
                .map_err(|_| Reply::error("ERR MAXLEN can't be negative"))?;
            if n < 0 {
                return Err(Reply::error("ERR MAXLEN can't be negative"));
            }
            maxlen = n as usize;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let mut locked = ctx.lock(&args[1..2]);
    let Some(l) = list(&mut locked, args[1])? else {
        return Ok(if count.is_some() {
            Reply::Array(Vec::new())
        } else {
            Reply::Nil
        });
    };
    let scan_len = if maxlen == 0 {
        l.len()
    } else {
        maxlen.min(l.len())
    };
    let want = match count {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => 1,
    };
    // Matches to skip before collecting: RANK 2 skips the first match, RANK -2 the last one.
    // (Redis 7.0 negates i64::MIN into itself and then skips nothing: same here.)
    let mut skip = rank.checked_abs().map_or(0, |r| r.unsigned_abs() - 1);
    let mut found = Vec::new();
    let mut visit = |i: usize| {
        if l[i] == target {
            if skip > 0 {
                skip -= 1;
            } else {
                found.push(i);
            }
        }
        found.len() < want
    };
    if rank > 0 {
        for i in 0..scan_len {
            if !visit(i) {
                break;
            }
        }
    } else {
        for i in (l.len() - scan_len..l.len()).rev() {
            if !visit(i) {
                break;
            }
        }
    }
    Ok(match count {
        Some(_) => Reply::Array(found.into_iter().map(|i| Reply::Int(i as i64)).collect()),
        None => found.first().map_or(Reply::Nil, |&i| Reply::Int(i as i64)),
    })
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT, and RPOPLPUSH.
pub fn lmove(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (from, to) = if args.len() == 3 {
        (End::Right, End::Left)
    } else {
        (End::parse(args[3])?, End::parse(args[4])?)
    };
    let mut locked = ctx.lock(&args[1..3]);
    Ok(move_one(&mut locked, args[1], args[2], from, to)?.map_or(Reply::Nil, Reply::Bulk))
}
