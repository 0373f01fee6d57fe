//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE. The values are strings in Redis's exact HLL
//! layout (`crate::store::hyperloglog`).

use super::{err, CmdResult, Ctx};
use crate::events::class;
use crate::protocol::Reply;
use crate::store::hyperloglog::{self as hll, HllError, REGISTERS};
use crate::store::{CompactBytes, Locked, Value};

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

fn error(e: HllError) -> Reply {
    Reply::error(match e {
        HllError::NotHll => NOT_HLL,
        HllError::Corrupt => CORRUPT,
    })
}

fn sparse_max(ctx: &Ctx) -> usize {
    ctx.shared.config.read().hll_sparse_max_bytes as usize
}

/// The HLL at `key`: None when missing, WRONGTYPE for another type or a string that is no HLL.
fn read_hll<'l>(locked: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<&'l [u8]>, Reply> {
    match locked.get(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Str(b)) => {
            hll::check(b).map_err(error)?;
            Ok(Some(b))
        }
        Some(_) => Err(Reply::error(err::WRONGTYPE)),
    }
}

/// Stores `value` at `key`, in place when the key exists (its TTL kept), else as a new key.
/// Cut to its length (no spare room kept).
fn write_back(locked: &mut Locked<'_>, key: &[u8], value: Vec<u8>) {
    let value = CompactBytes::from_vec(value);
    match locked.get_mut(key) {
        Some(entry) => entry.value = Value::Str(value),
        None => {
            locked.set(key, Value::Str(value), 0);
        }
    }
}

/// Takes the string at `key` out of its entry for a write (the entry keeps an empty string until
/// [`write_back`]), without copying: a dense HLL is 12 KB. The caller checked the type.
fn take(locked: &mut Locked<'_>, key: &[u8]) -> Vec<u8> {
    match locked.get_mut(key).map(|e| &mut e.value) {
        Some(Value::Str(b)) => std::mem::take(b).into_vec(),
        _ => Vec::new(),
    }
}

pub fn pfadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let max = sparse_max(ctx);
    let mut locked = ctx.lock(&args[1..2]);
    let key = args[1];
    let (mut value, mut updated, taken) = match read_hll(&mut locked, key)? {
        None => (hll::new_sparse(), true, false),
        // Most adds to a big HLL raise no register: nothing to write then, so nothing copied.
        Some(b) if hll::is_dense(b) => {
            if !args[2..].iter().any(|e| hll::dense_raises(b, e)) {
                return Ok(Reply::Int(0));
            }
            (take(&mut locked, key), false, true)
        }
        // Sparse: at most `hll-sparse-max-bytes`, copied so an add that changes nothing writes
        // nothing (WATCH untouched).
        Some(b) => (b.to_vec(), false, false),
    };
    for element in &args[2..] {
        match hll::add(&mut value, element, max) {
            Ok(changed) => updated |= changed,
            Err(e) => {
                // As Redis: the registers changed so far stay, the cache is left as it was.
                if updated || taken {
                    write_back(&mut locked, key, value);
                }
                return Err(error(e));
            }
        }
    }
    if !updated {
        if taken {
            write_back(&mut locked, key, value);
        }
        return Ok(Reply::Int(0));
    }
    hll::invalidate(&mut value);
    write_back(&mut locked, key, value);
    Ok(Reply::Int(1))
}

pub fn pfcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..]);
    if args.len() > 2 {
        let mut max = Box::new([0u8; REGISTERS]);
        for key in &args[1..] {
            if let Some(value) = read_hll(&mut locked, key)? {
                hll::merge_into(&mut max, value).map_err(error)?;
            }
        }
        return Ok(Reply::Int(hll::count_registers(&max) as i64));
    }
    let key = args[1];
    let Some(value) = read_hll(&mut locked, key)? else {
        return Ok(Reply::Int(0));
    };
    if let Some(card) = hll::cached(value) {
        return Ok(Reply::Int(card as i64));
    }
    let card = hll::count(value).map_err(error)?;
    // The cardinality is cached in the value, as Redis does (the bytes then match Redis's).
    let mut value = take(&mut locked, key);
    hll::set_cached(&mut value, card);
    write_back(&mut locked, key, value);
    Ok(Reply::Int(card as i64))
}

pub fn pfmerge(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sparse_max = sparse_max(ctx);
    let mut locked = ctx.lock(&args[1..]);
    let mut max = Box::new([0u8; REGISTERS]);
    let mut dense = false;
    let mut dest: Option<Vec<u8>> = None;
    for (i, key) in args[1..].iter().enumerate() {
        match read_hll(&mut locked, key)? {
            Some(value) => {
                dense |= hll::is_dense(value);
                hll::merge_into(&mut max, value).map_err(error)?;
                if i == 0 {
                    dest = Some(value.to_vec());
                }
            }
            // Redis reads every key (the destination too) as a read: a missing one is a
            // `keymiss`. Naming events here means naming the `pfadd` below as well.
            None => locked.notify(class::KEY_MISS, "keymiss", key),
        }
    }
    let mut value = dest.unwrap_or_else(hll::new_sparse);
    hll::store_registers(&mut value, &max, dense, sparse_max).map_err(error)?;
    write_back(&mut locked, args[1], value);
    locked.notify(class::STRING, "pfadd", args[1]);
    Ok(Reply::OK)
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. The key is checked before the subcommand, as in
/// Redis; GETREG and TODENSE turn a sparse value dense for good.
pub fn pfdebug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[2];
    let mut locked = ctx.lock(&args[2..3]);
    let Some(value) = read_hll(&mut locked, key)? else {
        return Err(Reply::error("ERR The specified key does not exist"));
    };
    let sub = args[1].to_ascii_lowercase();
    match sub.as_slice() {
        b"getreg" | b"todense" => {
            let converted = !hll::is_dense(value);
            let registers = if converted {
                let mut dense = value.to_vec();
                hll::to_dense(&mut dense).map_err(error)?;
                let registers = hll::dense_registers(&dense);
                write_back(&mut locked, key, dense);
                registers
            } else {
                hll::dense_registers(value)
            };
            if sub == b"todense" {
                return Ok(Reply::Int(converted as i64));
            }
            Ok(Reply::Array(
                registers
                    .into_iter()
                    .map(|r| Reply::Int(r as i64))
                    .collect(),
            ))
        }
        b"decode" => {
            if hll::is_dense(value) {
                return Err(Reply::error("ERR HLL encoding is not sparse"));
            }
            Ok(Reply::bulk(hll::decode_sparse(value)))
        }
        b"encoding" => Ok(Reply::Status(
            if hll::is_dense(value) {
                "dense"
            } else {
                "sparse"
            }
            .into(),
        )),
        _ => Err(Reply::error(format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(args[1])
        ))),
    }
}

/// PFSELFTEST: checks the register layout and that sparse and dense values agree.
pub fn pfselftest(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    match hll::self_test() {
        Ok(()) => Ok(Reply::OK),
        Err(e) => Err(Reply::error(e)),
    }
}
