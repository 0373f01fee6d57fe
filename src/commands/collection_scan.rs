//! HSCAN, SSCAN and ZSCAN share this: argument parsing and a stateless cursor over one collection.
//!
//! Small collections (at most [`SMALL`] members, where Redis uses a listpack) are returned whole
//! with cursor 0, as Redis does. Larger ones use the keyspace SCAN's idea: each member has a
//! position, a hash of its bytes fixed for the life of the process; a call returns the members at
//! or after the cursor's position in position order, and the next cursor is the next position. A
//! member present for the whole scan is therefore returned, whatever is added or removed meanwhile,
//! and the server keeps no state. The price is O(n) per call (the collection is walked to find the
//! next COUNT positions), so a full scan of n members costs O(n²/COUNT).

use super::args::Cursor;
use super::err;
use crate::glob;
use crate::protocol::Reply;
use crate::store::scan::position;

/// Collections up to this size are returned in one call with cursor 0.
pub const SMALL: usize = 128;

pub struct ScanArgs<'a> {
    pub cursor: u64,
    pub pattern: Option<&'a [u8]>,
    pub count: usize,
    /// HSCAN NOVALUES / ZSCAN NOSCORES: the members alone, without what follows each.
    pub members_only: bool,
}

/// Which SCAN-family command is parsing: each accepts only its own members-only option.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Keys,
    Set,
    Hash,
    Zset,
}

/// Eats `NOVALUES` (HSCAN's, Redis 7.4) or `NOSCORES` (ZSCAN's, Valkey 8.0) when it is the next
/// option. Every other scan knows the words only to refuse them, with the error Redis and Valkey
/// give (SCAN and SSCAN included), rather than the syntax error an unknown word gets.
pub fn eat_members_only(options: &mut Cursor, family: Family) -> Result<bool, Reply> {
    for (word, owner, command) in [
        ("NOVALUES", Family::Hash, "HSCAN"),
        ("NOSCORES", Family::Zset, "ZSCAN"),
    ] {
        if options.eat(word) {
            if family != owner {
                return Err(Reply::error(format!(
                    "ERR {word} option can only be used in {command}"
                )));
            }
            return Ok(true);
        }
    }
    Ok(false)
}

/// `key cursor [MATCH pattern] [COUNT count]` starting at `args[2]`.
/// Redis checks the cursor first, then the key (a missing key answers an empty scan whatever the
/// options), then the options: callers follow that order.
/// A cursor is read as Redis reads one (`strtoul`): an optional sign, then digits; `-1` wraps
/// around to the largest cursor, and an empty cursor is 0 (SCAN, HSCAN, SSCAN, ZSCAN).
pub fn parse_cursor(arg: &[u8]) -> Result<u64, Reply> {
    fn strtoul(arg: &[u8]) -> Option<u64> {
        if arg.is_empty() {
            return Some(0);
        }
        let text = std::str::from_utf8(arg).ok()?;
        let (negative, digits) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let value: u64 = digits.parse().ok()?;
        Some(if negative {
            value.wrapping_neg()
        } else {
            value
        })
    }
    strtoul(arg).ok_or_else(|| Reply::error("ERR invalid cursor"))
}

/// The reply to a scan of a missing key.
pub fn empty() -> Reply {
    Reply::Array(vec![Reply::bulk("0"), Reply::Array(Vec::new())])
}

pub fn parse<'a>(args: &[&'a [u8]], family: Family) -> Result<ScanArgs<'a>, Reply> {
    let cursor = parse_cursor(args[2])?;
    let mut options = Cursor::new(args, 3);
    let mut parsed = ScanArgs {
        cursor,
        pattern: None,
        count: 10,
        members_only: false,
    };
    while !options.is_done() {
        if eat_members_only(&mut options, family)? {
            parsed.members_only = true;
        } else if options.eat("MATCH") {
            parsed.pattern = Some(options.next_arg()?);
        } else if options.eat("COUNT") {
            let n = options.next_int()?;
            if n < 1 {
                return Err(Reply::error(err::SYNTAX));
            }
            parsed.count = n as usize;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    Ok(parsed)
}

/// The `[cursor, [member, extra?, …]]` reply. `items` yields each member with the replies that
/// follow it (the field's value for HSCAN, the score for ZSCAN, nothing for SSCAN), left out
/// with [`ScanArgs::members_only`].
pub fn scan<'m>(
    items: impl Iterator<Item = (&'m [u8], Option<Reply>)>,
    len: usize,
    args: &ScanArgs,
) -> Reply {
    let wanted = |m: &[u8]| args.pattern.is_none_or(|p| glob::matches(p, m, false));
    let mut picked: Vec<(u64, &[u8], Option<Reply>)>;
    let mut next = 0;
    if len <= SMALL {
        picked = items.map(|(m, extra)| (0, m, extra)).collect();
    } else {
        picked = items
            .map(|(m, extra)| (position(m), m, extra))
            .filter(|(pos, _, _)| *pos >= args.cursor)
            .collect();
        picked.sort_unstable_by_key(|(pos, _, _)| *pos);
        if picked.len() > args.count {
            // Keep every member sharing the cut position, so resuming there skips none.
            let cut = picked[args.count - 1].0;
            let keep = picked.partition_point(|(pos, _, _)| *pos <= cut);
            if keep < picked.len() {
                next = picked[keep].0;
            }
            picked.truncate(keep);
        }
    }
    let mut flat = Vec::with_capacity(picked.len() * 2);
    for (_, member, extra) in picked {
        if wanted(member) {
            flat.push(Reply::bulk(member));
            flat.extend(extra.filter(|_| !args.members_only));
        }
    }
    Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Array(flat)])
}
