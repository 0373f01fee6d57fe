//! Generic key commands: DEL, UNLINK, EXISTS, TYPE, the EXPIRE and TTL families, PERSIST, KEYS,
//! SCAN, RENAME, RENAMENX, RANDOMKEY.

use super::args::{int, is, Cursor};
use super::collection_scan::{self, Family};
use super::{err, CmdResult, Ctx};
use crate::events::class;
use crate::glob;
use crate::protocol::Reply;
use crate::store::value::Value;
use crate::store::{encoding, lazyfree, scan};
use bytes::Bytes;
use rand::Rng;

/// DEL and UNLINK. UNLINK hands the values that are costly to free to the lazyfree thread
/// (after the keys' locks are released), as Redis does.
pub fn del(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let mut locked = ctx.lock(keys);
    let removed: Vec<Value> = keys
        .iter()
        .filter_map(|k| locked.remove(k).map(|entry| entry.value))
        .collect();
    drop(locked);
    let count = removed.len();
    if is(args[0], "UNLINK") {
        removed.into_iter().for_each(lazyfree::free_value);
    }
    Ok(Reply::Int(count as i64))
}

pub fn exists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let mut locked = ctx.lock(keys);
    let found = keys
        .iter()
        .filter(|k| locked.get_untouched(k).is_some())
        .count();
    Ok(Reply::Int(found as i64))
}

pub fn type_(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let name = locked
        .get_untouched(args[1])
        .map_or("none", |e| e.value.type_name());
    Ok(Reply::Status(name.into()))
}

/// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with NX | XX | GT | LT.
pub fn expire(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
    let millis = name.starts_with('p');
    let absolute = name.ends_with("at");
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for option in &args[3..] {
        if is(option, "NX") {
            nx = true;
        } else if is(option, "XX") {
            xx = true;
        } else if is(option, "GT") {
            gt = true;
        } else if is(option, "LT") {
            lt = true;
        } else {
            return Err(Reply::Error(
                format!("ERR Unsupported option {}", super::printable(option, 128)).into(),
            ));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Reply::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Reply::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    // As Redis: the options are checked before the time.
    let amount = int(args[2])?;
    let mut locked = ctx.lock(&args[1..2]);
    let now = locked.now as i64;
    let invalid = || Reply::Error(format!("ERR invalid expire time in '{name}' command").into());
    let ms = if millis {
        amount
    } else {
        amount.checked_mul(1000).ok_or_else(invalid)?
    };
    let deadline = if absolute {
        ms
    } else {
        ms.checked_add(now).ok_or_else(invalid)?
    };
    let Some(entry) = locked.get(args[1]) else {
        return Ok(Reply::Int(0));
    };
    let current = entry.expire_at();
    let allowed = if nx {
        current == 0
    } else if current == 0 {
        !(xx || gt)
    } else {
        let current = current as i64;
        if gt {
            deadline > current
        } else if lt {
            deadline < current
        } else {
            true
        }
    };
    if !allowed {
        return Ok(Reply::Int(0));
    }
    if deadline <= now {
        locked.remove(args[1]);
    } else {
        locked.set_expiry(args[1], deadline as u64);
    }
    Ok(Reply::Int(1))
}

/// TTL, PTTL, EXPIRETIME, PEXPIRETIME: -2 for a missing key, -1 for a key without expiry. They
/// look at the key without using it (its idle time stays, as Redis's `LOOKUP_NOTOUCH`).
pub fn ttl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
    let mut locked = ctx.lock(&args[1..2]);
    let now = locked.now;
    let Some(entry) = locked.get_untouched(args[1]) else {
        return Ok(Reply::Int(-2));
    };
    if entry.expire_at() == 0 {
        return Ok(Reply::Int(-1));
    }
    let at = entry.expire_at() as i64;
    let left = (entry.expire_at() - now) as i64;
    Ok(Reply::Int(match name.as_str() {
        "ttl" => (left + 500) / 1000,
        "pttl" => left,
        "expiretime" => (at + 500) / 1000,
        _ => at,
    }))
}

pub fn persist(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let has_ttl = locked.get(args[1]).is_some_and(|e| e.expire_at() != 0);
    if has_ttl {
        locked.set_expiry(args[1], 0);
    }
    Ok(Reply::Int(i64::from(has_ttl)))
}

pub fn keys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pattern = args[1];
    let mut found = Vec::new();
    let mut collect = |locked: &crate::store::Locked| {
        locked.for_each(|k, _| {
            if glob::matches(pattern, k, false) {
                found.push(Reply::bulk(k));
            }
        })
    };
    if ctx.in_exec() {
        collect(&ctx.lock_all());
    } else {
        // One shard at a time, so KEYS never stalls the whole keyspace. Like Redis, the expired
        // keys it meets are deleted.
        let (store, db) = (&ctx.shared.store, ctx.conn.db);
        // A database never used is empty: reading it need not create it.
        let shards = if store.existing(db).is_some() {
            store.shard_count()
        } else {
            0
        };
        for shard in 0..shards {
            let mut locked = store.lock_shard(db, shard);
            locked.remove_expired();
            collect(&locked);
        }
    }
    Ok(Reply::Array(found))
}

/// SCAN's cursor is a shard number and a position inside the shard's hash space; keys are visited in
/// position order, so a key that exists for the whole scan is returned however others change.
pub fn scan(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cursor = collection_scan::parse_cursor(args[1])?;
    let mut options = Cursor::new(args, 2);
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut type_filter: Option<&[u8]> = None;
    while !options.is_done() {
        // NOVALUES and NOSCORES: SCAN only refuses them (never Ok(true)), with their own error.
        collection_scan::eat_members_only(&mut options, Family::Keys)?;
        if options.eat("MATCH") {
            pattern = Some(options.next_arg()?);
        } else if options.eat("COUNT") {
            let n = options.next_int()?;
            if n < 1 {
                return Err(Reply::error(err::SYNTAX));
            }
            count = n as usize;
        } else if options.eat("TYPE") {
            type_filter = Some(options.next_arg()?);
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let (store, db) = (ctx.shared.store.clone(), ctx.conn.db);
    let (mut shard, mut position) = scan::split_cursor(cursor);
    if store.existing(db).is_none() {
        shard = store.shard_count(); // never used, so empty
    }
    let mut picked: Vec<(Bytes, &'static str)> = Vec::new();
    let mut next = 0;
    while shard < store.shard_count() {
        let want = count.saturating_sub(picked.len()).max(1);
        let batch = if ctx.in_exec() {
            scan::scan_shard(&ctx.lock_all(), shard, position, want)
        } else {
            scan::scan_shard(&store.lock_shard(db, shard), shard, position, want)
        };
        picked.extend(batch.keys);
        if let Some(pos) = batch.resume_at {
            next = scan::join_cursor(shard, pos);
            break;
        }
        shard += 1;
        position = 0;
        if picked.len() >= count && shard < store.shard_count() {
            next = scan::join_cursor(shard, 0);
            break;
        }
    }
    let keys = picked
        .into_iter()
        .filter(|(k, t)| {
            pattern.is_none_or(|p| glob::matches(p, k, false))
                && type_filter.is_none_or(|want| want.eq_ignore_ascii_case(t.as_bytes()))
        })
        .map(|(k, _)| Reply::Bulk(k))
        .collect();
    Ok(Reply::Array(vec![
        Reply::bulk(next.to_string()),
        Reply::Array(keys),
    ]))
}

/// RENAME and RENAMENX: the value moves with its expiry.
pub fn rename(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let nx = is(args[0], "renamenx");
    let (from, to) = (args[1], args[2]);
    let mut locked = ctx.lock(&args[1..3]);
    if !locked.contains(from) {
        return Err(Reply::error(err::NO_SUCH_KEY));
    }
    if from == to {
        return Ok(if nx { Reply::Int(0) } else { Reply::OK });
    }
    if nx && locked.contains(to) {
        return Ok(Reply::Int(0));
    }
    if let Some(entry) = locked.remove(from) {
        let (at, outgrown) = (entry.expire_at(), entry.outgrown());
        locked.set(to, entry.value, at);
        if outgrown {
            locked.mark_outgrown(to); // Redis moves the object: its encoding stays
        }
        locked.notify(class::GENERIC, "rename_from", from);
        locked.notify(class::GENERIC, "rename_to", to);
    }
    Ok(if nx { Reply::Int(1) } else { Reply::OK })
}

pub fn randomkey(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let (store, db) = (ctx.shared.store.clone(), ctx.conn.db);
    if store.existing(db).is_none() {
        return Ok(Reply::Nil); // never used, so empty
    }
    let shards = store.shard_count();
    let start = rand::thread_rng().gen_range(0..shards);
    for i in 0..shards {
        let shard = (start + i) % shards;
        let pick = |locked: &crate::store::Locked| {
            let mut keys = Vec::new();
            locked.for_each(|k, _| keys.push(Bytes::copy_from_slice(k)));
            (!keys.is_empty())
                .then(|| keys.swap_remove(rand::thread_rng().gen_range(0..keys.len())))
        };
        let found = if ctx.in_exec() {
            pick(&ctx.lock_all())
        } else {
            pick(&store.lock_shard(db, shard))
        };
        if let Some(key) = found {
            return Ok(Reply::Bulk(key));
        }
        if ctx.in_exec() {
            break;
        }
    }
    Ok(Reply::Nil)
}

/// OBJECT IDLETIME (seconds since the key was last read or written; reading it does not count)
/// and OBJECT FREQ (refused, as Redis does without an LFU policy: we have none).
pub fn object(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if is(args[1], "HELP") {
        return Ok(super::connection::help_reply(&[
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
            "HELP",
            "    Print this help.",
        ]));
    }
    let (thresholds, per_key_clock) = {
        use crate::config::values::Policy;
        let config = ctx.shared.config.read();
        // An LRU policy needs each key's own access clock, so Redis shares no integers then.
        let lru = matches!(
            config.maxmemory_policy,
            Policy::AllKeysLru | Policy::VolatileLru
        );
        (config.encoding_thresholds(), config.maxmemory > 0 && lru)
    };
    let locked = ctx.lock(&args[2..3]);
    let Some(entry) = locked.peek(args[2]) else {
        return Ok(Reply::Nil);
    };
    if is(args[1], "ENCODING") {
        let name = encoding::name(&entry.value, entry.outgrown(), &thresholds);
        return Ok(Reply::bulk(name));
    }
    if is(args[1], "REFCOUNT") {
        return Ok(Reply::Int(refcount(entry, per_key_clock)));
    }
    if is(args[1], "FREQ") {
        return Err(Reply::error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    Ok(Reply::Int(entry.idle_secs(locked.now) as i64))
}

/// OBJECT REFCOUNT as Redis answers it: the integers 0..9999 are shared objects (refcount
/// `INT_MAX`) unless keys need their own access clock; everything else is 1.
fn refcount(entry: &crate::store::Entry, per_key_clock: bool) -> i64 {
    let shared = match &entry.value {
        Value::Str(s) if !entry.outgrown() && encoding::is_int_encodable(s) => {
            super::args::int(s).is_ok_and(|n| (0..10_000).contains(&n))
        }
        _ => false,
    };
    if shared && !per_key_clock {
        i32::MAX as i64
    } else {
        1
    }
}
