//! SORT and SORT_RO over lists, sets and sorted sets, as Redis's `sort.c` does it: BY patterns
//! (`*` substitution, `->field` hash lookups, a pattern without `*` meaning no sorting), GET
//! patterns (`#` for the element itself), LIMIT, ASC/DESC, ALPHA and STORE into a list.

use super::args::{int, is};
use super::{err, CmdResult, Ctx};
use crate::events::class;
use crate::protocol::Reply;
use crate::store::{Locked, Value};
use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::VecDeque;

/// The value a pattern names for one element (Redis's `lookupKeyByPattern`): `#` is the element;
/// otherwise the first `*` is replaced by the element and the key's string value (or, with
/// `->field` after the `*`, that field of the key's hash) is returned. None when there is no `*`,
/// no such key, or a key of another type.
fn lookup_by_pattern(locked: &mut Locked<'_>, pattern: &[u8], element: &Bytes) -> Option<Bytes> {
    if pattern == b"#" {
        return Some(element.clone());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let field = after
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&at| at + 2 < after.len())
        .map(|at| (at, &after[at + 2..]));
    let postfix = match field {
        Some((at, _)) => &after[..at],
        None => after,
    };
    let mut key = Vec::with_capacity(pattern.len() + element.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    let now = locked.now;
    match (&locked.get(&key)?.value, field) {
        (Value::Hash(h), Some((_, name))) => h.get_bytes(name, now),
        (Value::Str(s), None) => Some(s.to_bytes()),
        _ => None,
    }
}

/// A number as Redis's SORT reads one with `strtod`: leading blanks allowed, nothing after the
/// number, no overflow or NaN. Redis reads a C string: the number ends at the first NUL byte, and
/// an empty string (or one that starts with NUL) is 0.
fn sort_score(bytes: &[u8]) -> Option<f64> {
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
    if bytes.is_empty() {
        return Some(0.0);
    }
    let start = bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .unwrap_or(bytes.len());
    super::args::parse_double(&bytes[start..])
}

/// One element to sort, with what it sorts by.
struct Item {
    element: Bytes,
    score: f64,
    by: Option<Bytes>,
}

pub fn sort(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    sort_generic(ctx, args, false)
}

pub fn sort_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    sort_generic(ctx, args, true)
}

fn sort_generic(ctx: &mut Ctx, args: &[&[u8]], readonly: bool) -> CmdResult {
    let (mut desc, mut alpha, mut dontsort) = (false, false, false);
    let (mut limit_start, mut limit_count): (i64, i64) = (0, -1);
    let mut sortby: Option<&[u8]> = None;
    let mut store: Option<&[u8]> = None;
    let mut gets: Vec<&[u8]> = Vec::new();
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let arg = args[j];
        if is(arg, "asc") {
            desc = false;
        } else if is(arg, "desc") {
            desc = true;
        } else if is(arg, "alpha") {
            alpha = true;
        } else if is(arg, "limit") && left >= 2 {
            limit_start = int(args[j + 1])?;
            limit_count = int(args[j + 2])?;
            j += 2;
        } else if !readonly && is(arg, "store") && left >= 1 {
            store = Some(args[j + 1]);
            j += 1;
        } else if is(arg, "by") && left >= 1 {
            sortby = Some(args[j + 1]);
            dontsort = !args[j + 1].contains(&b'*');
            j += 1;
        } else if is(arg, "get") && left >= 1 {
            gets.push(args[j + 1]);
            j += 1;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        j += 1;
    }
    let patterns = (sortby.is_some() && !dontsort) || !gets.is_empty();
    let mut locked = if patterns {
        ctx.lock_all()
    } else {
        let mut keys = vec![args[1]];
        keys.extend(store);
        ctx.lock(&keys)
    };

    // The elements, in the collection's own order.
    enum Kind {
        List,
        Set,
        ZSet,
    }
    let (kind, mut elements): (Kind, Vec<Bytes>) = match locked.get(args[1]).map(|e| &e.value) {
        None => (Kind::List, Vec::new()),
        Some(Value::List(l)) => (Kind::List, l.iter().cloned().collect()),
        Some(Value::Set(s)) => (Kind::Set, s.iter().map(Bytes::copy_from_slice).collect()),
        Some(Value::ZSet(z)) => (
            Kind::ZSet,
            z.iter().map(|(m, _)| Bytes::copy_from_slice(m)).collect(),
        ),
        Some(_) => return Err(Reply::error(err::WRONGTYPE)),
    };
    if matches!(kind, Kind::ZSet) {
        // Redis converts a sorted set to its skiplist encoding for good before sorting it.
        locked.mark_outgrown(args[1]);
    }
    // A set has no order of its own: when stored, it is sorted anyway (as Redis does, so that
    // the result is the same everywhere).
    if dontsort && matches!(kind, Kind::Set) && store.is_some() {
        dontsort = false;
        alpha = true;
        sortby = None;
    }
    let len = elements.len() as i64;
    let mut start = limit_start.clamp(0, len);
    let limit_count = limit_count.clamp(-1, len);
    let mut end = if limit_count < 0 {
        len - 1
    } else {
        start + limit_count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }

    let mut selected: Vec<Bytes> = if dontsort {
        // Native order (reversed by DESC for lists and sorted sets), only the LIMIT range.
        if matches!(kind, Kind::List | Kind::ZSet) && desc {
            elements.reverse();
        }
        if end >= start {
            elements
                .into_iter()
                .skip(start as usize)
                .take((end - start + 1) as usize)
                .collect()
        } else {
            Vec::new()
        }
    } else {
        let mut items = Vec::with_capacity(elements.len());
        let mut conversion_error = false;
        for element in elements.drain(..) {
            let by = match sortby {
                Some(pattern) => lookup_by_pattern(&mut locked, pattern, &element),
                None => None,
            };
            let mut score = 0.0;
            if !alpha {
                let source = match (sortby, &by) {
                    (Some(_), Some(v)) => Some(v.as_ref()),
                    (Some(_), None) => None,
                    (None, _) => Some(element.as_ref()),
                };
                if let Some(source) = source {
                    match sort_score(source) {
                        Some(s) => score = s,
                        None => conversion_error = true,
                    }
                }
            }
            items.push(Item { element, score, by });
        }
        if conversion_error {
            return Err(Reply::error(
                "ERR One or more scores can't be converted into double",
            ));
        }
        let by_pattern = sortby.is_some();
        items.sort_by(|a, b| {
            let cmp = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.element.cmp(&b.element))
            } else if by_pattern {
                match (&a.by, &b.by) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) => x.cmp(y),
                }
            } else {
                a.element.cmp(&b.element)
            };
            if desc {
                cmp.reverse()
            } else {
                cmp
            }
        });
        if end >= start {
            items
                .into_iter()
                .skip(start as usize)
                .take((end - start + 1) as usize)
                .map(|i| i.element)
                .collect()
        } else {
            Vec::new()
        }
    };

    let Some(dst) = store else {
        if gets.is_empty() {
            return Ok(Reply::Array(
                selected.into_iter().map(Reply::Bulk).collect(),
            ));
        }
        let mut out = Vec::with_capacity(selected.len() * gets.len());
        for element in &selected {
            for pattern in &gets {
                out.push(
                    lookup_by_pattern(&mut locked, pattern, element)
                        .map_or(Reply::Nil, Reply::Bulk),
                );
            }
        }
        return Ok(Reply::Array(out));
    };
    let list: VecDeque<Bytes> = if gets.is_empty() {
        selected.drain(..).collect()
    } else {
        let mut list = VecDeque::with_capacity(selected.len() * gets.len());
        for element in &selected {
            for pattern in &gets {
                list.push_back(
                    lookup_by_pattern(&mut locked, pattern, element).unwrap_or_default(),
                );
            }
        }
        list
    };
    let stored = list.len();
    if stored == 0 {
        locked.remove(dst);
    } else {
        locked.set(dst, Value::List(Box::new(list)), 0);
        locked.notify(class::LIST, "sortstore", dst);
    }
    Ok(Reply::Int(stored as i64))
}
