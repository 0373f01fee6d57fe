//! DUMP, RESTORE, COPY and TOUCH: commands that handle a key's value as a whole.
//!
//! DUMP and RESTORE speak Redis's serialization (`crate::rdb`), so a payload moves between stmd
//! and Redis in either direction. RESTORE checks and decodes the whole payload before it touches
//! the keyspace, so a corrupt one changes nothing.

use super::args::{int, is};
use super::databases::Span;
use super::{err, CmdResult, Ctx};
use crate::events::class;
use crate::protocol::Reply;
use crate::rdb;
use crate::store::{Locked, Value};
use bytes::Bytes;

pub fn dump(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    Ok(match locked.get(args[1]) {
        Some(entry) => Reply::Bulk(Bytes::from(rdb::dump(&entry.value))),
        None => Reply::Nil,
    })
}

/// RESTORE's options after the payload.
#[derive(Default)]
struct RestoreOptions {
    replace: bool,
    absolute_ttl: bool,
    idle_secs: Option<u64>,
    freq: Option<u8>,
}

/// Parses the options as Redis does: IDLETIME and FREQ exclude each other (the second is a
/// syntax error), and each value is checked as it is read.
fn restore_options(args: &[&[u8]]) -> Result<RestoreOptions, Reply> {
    let mut options = RestoreOptions::default();
    let mut at = 4;
    while at < args.len() {
        let word = args[at];
        let has_value = at + 1 < args.len();
        if is(word, "REPLACE") {
            options.replace = true;
        } else if is(word, "ABSTTL") {
            options.absolute_ttl = true;
        } else if is(word, "IDLETIME") && has_value && options.freq.is_none() {
            let idle = int(args[at + 1])?;
            if idle < 0 {
                return Err(Reply::error("ERR Invalid IDLETIME value, must be >= 0"));
            }
            options.idle_secs = Some(idle as u64);
            at += 1;
        } else if is(word, "FREQ") && has_value && options.idle_secs.is_none() {
            let freq = int(args[at + 1])?;
            let freq = u8::try_from(freq)
                .map_err(|_| Reply::error("ERR Invalid FREQ value, must be >= 0 and <= 255"))?;
            options.freq = Some(freq);
            at += 1;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        at += 1;
    }
    Ok(options)
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency].
/// FREQ is checked and otherwise ignored: stmd keeps no LFU counters (OBJECT FREQ says so).
pub fn restore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let options = restore_options(args)?;
    let key = args[1];
    // Decoded before the key's shard is locked (a large payload takes a while), but its errors
    // come in Redis's order: after BUSYKEY and the TTL's.
    let ttl = int(args[2]);
    let decoded = rdb::restore(args[3], &ctx.shared.store.encoding_limits);
    let mut locked = ctx.lock(&args[1..2]);
    if !options.replace && locked.contains(key) {
        return Err(Reply::error("BUSYKEY Target key name already exists."));
    }
    let ttl = ttl?;
    if ttl < 0 {
        return Err(Reply::error("ERR Invalid TTL value, must be >= 0"));
    }
    let mut value = decoded.map_err(|e| Reply::Error(format!("ERR {e}").into()))?;
    // Hash fields whose time has passed are not restored; a hash left empty is restored as a
    // key that has expired.
    let mut all_fields_expired = false;
    if let Value::Hash(hash) = &mut value {
        all_fields_expired = hash.drop_expired(locked.now) > 0 && hash.is_empty();
    }
    let expire_at = match ttl {
        0 => 0,
        _ if options.absolute_ttl => ttl,
        _ => ttl.saturating_add(locked.now as i64),
    };
    // The events are named here: Redis publishes `new` and `restore`, no `del` for a replaced
    // key, and only `del` when the restored key would already be expired.
    let replaced = options.replace && locked.remove(key).is_some();
    if all_fields_expired || (expire_at != 0 && expire_at <= locked.now as i64) {
        if replaced {
            locked.notify(class::GENERIC, "del", key);
        }
        return Ok(Reply::OK);
    }
    locked.set(key, value, expire_at as u64);
    if let Some(idle) = options.idle_secs {
        locked.set_idle_secs(key, idle);
    }
    locked.notify(class::GENERIC, "restore", key);
    Ok(Reply::OK)
}

/// A deep copy of a value (COPY): the copy shares nothing mutable with the original.
fn duplicate(value: &Value) -> Value {
    match value {
        Value::Str(s) => Value::Str(s.clone()),
        Value::List(items) => Value::List(items.clone()),
        Value::Hash(hash) => Value::Hash(hash.clone()),
        Value::Set(set) => Value::Set(set.clone()),
        Value::ZSet(zset) => Value::ZSet(zset.clone()),
        Value::Stm(entry) => Value::Stm(entry.clone()),
        Value::Stream(s) => Value::Stream(s.clone()),
        Value::Json(doc) => Value::Json(doc.clone()),
    }
}

/// COPY source destination [DB destination-db] [REPLACE].
pub fn copy(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (source_key, target_key) = (args[1], args[2]);
    let source_db = ctx.conn.db;
    let mut target_db = source_db;
    let mut replace = false;
    let mut at = 3;
    while at < args.len() {
        if is(args[at], "REPLACE") {
            replace = true;
        } else if is(args[at], "DB") && at + 1 < args.len() {
            let index = int(args[at + 1])?;
            if i32::try_from(index).is_err() {
                return Err(Reply::error(
                    "ERR value is out of range, value must between -2147483648 and 2147483647",
                ));
            }
            target_db = usize::try_from(index)
                .ok()
                .filter(|&db| db < ctx.shared.store.databases())
                .ok_or_else(|| Reply::error("ERR DB index is out of range"))?;
            at += 1;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        at += 1;
    }
    if ctx.shared.cluster.is_some() && target_db != 0 {
        return Err(Reply::error(
            "ERR Copying to another database is not allowed in cluster mode",
        ));
    }
    if source_db == target_db && source_key == target_key {
        return Err(Reply::error(
            "ERR source and destination objects are the same",
        ));
    }
    if source_db == target_db {
        let mut locked = ctx.lock(&args[1..3]);
        let Some(copied) = copy_of(&mut locked, source_key) else {
            return Ok(Reply::Int(0));
        };
        return Ok(place_copy(&mut locked, target_key, copied, replace));
    }
    let (source_keys, target_keys) = ([source_key], [target_key]);
    let (mut source, mut target) = ctx.lock_two(
        (source_db, Span::Keys(&source_keys)),
        (target_db, Span::Keys(&target_keys)),
    );
    let Some(copied) = copy_of(&mut source, source_key) else {
        return Ok(Reply::Int(0));
    };
    Ok(place_copy(&mut target, target_key, copied, replace))
}

/// A copy of the live value at `key`, its expiry and whether it outgrew its compact encoding
/// (Redis's copy keeps the encoding) (a read: the source's idle time restarts).
fn copy_of(locked: &mut Locked<'_>, key: &[u8]) -> Option<(Value, u64, bool)> {
    locked
        .get(key)
        .map(|entry| (duplicate(&entry.value), entry.expire_at(), entry.outgrown()))
}

/// Stores COPY's copy unless the target exists and REPLACE was not given. As in Redis, a replaced
/// target publishes no `del`: the events are `new` and `copy_to`.
fn place_copy(
    target: &mut Locked<'_>,
    key: &[u8],
    copied: (Value, u64, bool),
    replace: bool,
) -> Reply {
    if !replace && target.contains(key) {
        return Reply::Int(0);
    }
    target.remove(key);
    target.set(key, copied.0, copied.1);
    if copied.2 {
        target.mark_outgrown(key);
    }
    target.notify(class::GENERIC, "copy_to", key);
    Reply::Int(1)
}

/// TOUCH key [key ...]: counts the keys that exist and marks each as just accessed.
pub fn touch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let mut locked = ctx.lock(keys);
    let found = keys.iter().filter(|k| locked.get(k).is_some()).count();
    Ok(Reply::Int(found as i64))
}
