//! Bitmap commands on string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and
//! BITFIELD_RO, with Redis 7's argument order, errors and replies. Bit 0 is the most significant
//! bit of byte 0, as in Redis.

use super::args::{int, is};
use super::{err, CmdResult, Ctx};
use crate::protocol::{parse_i64_strict, Reply};
use crate::store::{Locked, Value};

const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_BIT: &str = "ERR bit is not an integer or out of range";
const BAD_TYPE: &str = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// Bits set in `bytes`: whole 8-byte words through `u64::count_ones`, then the tail.
pub fn popcount(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut count: u64 = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        count += u64::from_ne_bytes(word).count_ones() as u64;
    }
    count
        + chunks
            .remainder()
            .iter()
            .map(|b| b.count_ones() as u64)
            .sum::<u64>()
}

/// The largest string a bit command may grow a value to (`proto-max-bulk-len`).
fn max_bulk_len(ctx: &Ctx) -> u64 {
    ctx.shared.config.read().proto_max_bulk_len
}

/// A bit offset argument as Redis's `getBitOffsetFromArgument`: `#n` (BITFIELD) multiplies by
/// the field width; negative offsets and offsets past `proto-max-bulk-len` bytes are refused.
fn bit_offset(arg: &[u8], hash_bits: Option<u32>, max_len: u64) -> Result<u64, Reply> {
    let bad = || Reply::error(BAD_OFFSET);
    let (digits, bits) = match (arg.first(), hash_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], Some(bits)),
        _ => (arg, None),
    };
    let mut offset = parse_i64_strict(digits).ok_or_else(bad)?;
    if let Some(bits) = bits {
        offset = offset.checked_mul(bits as i64).ok_or_else(bad)?;
    }
    if offset < 0 || ((offset as u64) >> 3) >= max_len {
        return Err(bad());
    }
    Ok(offset as u64)
}

/// The string at `key` for reading: None when missing, WRONGTYPE for another type. Read in
/// place, under the key's lock, as Redis reads it on its one thread.
fn read_string<'l>(locked: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<&'l [u8]>, Reply> {
    match locked.get(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Str(b)) => Ok(Some(b)),
        Some(_) => Err(Reply::error(err::WRONGTYPE)),
    }
}

/// Runs `f` on the string at `key` grown (zero-padded) to at least `min_len` bytes, creating the
/// key when missing (Redis's `lookupStringForBitCommand`). The caller checked the type.
fn write_string<R>(
    locked: &mut Locked<'_>,
    key: &[u8],
    min_len: usize,
    f: impl FnOnce(&mut [u8]) -> R,
) -> R {
    if let Some(entry) = locked.get_mut(key) {
        if let Value::Str(b) = &mut entry.value {
            return f(b.grown_to(min_len));
        }
    }
    let mut buf = vec![0; min_len];
    let out = f(&mut buf);
    locked.set(key, Value::Str(buf.into()), 0);
    out
}

fn get_bit(bytes: &[u8], offset: u64) -> u8 {
    let byte = (offset >> 3) as usize;
    match bytes.get(byte) {
        Some(v) => (v >> (7 - (offset & 7))) & 1,
        None => 0,
    }
}

fn set_bit(bytes: &mut [u8], offset: u64, on: bool) {
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    if on {
        bytes[byte] |= mask;
    } else {
        bytes[byte] &= !mask;
    }
}

pub fn setbit(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let offset = bit_offset(args[2], None, max_bulk_len(ctx))?;
    let on = parse_i64_strict(args[3]).ok_or_else(|| Reply::error(BAD_BIT))?;
    if on & !1 != 0 {
        return Err(Reply::error(BAD_BIT));
    }
    let on = on == 1;
    let mut locked = ctx.lock(&args[1..2]);
    let current = read_string(&mut locked, args[1])?;
    let need = (offset >> 3) as usize + 1;
    let old = current.map_or(0, |b| get_bit(b, offset));
    // Redis skips the write (no event, WATCH untouched) when nothing changes.
    let unchanged = current.is_some_and(|b| b.len() >= need) && (old == 1) == on;
    if !unchanged {
        write_string(&mut locked, args[1], need, |buf| set_bit(buf, offset, on));
    }
    Ok(Reply::Int(old as i64))
}

pub fn getbit(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let offset = bit_offset(args[2], None, max_bulk_len(ctx))?;
    let mut locked = ctx.lock(&args[1..2]);
    let value = read_string(&mut locked, args[1])?;
    Ok(Reply::Int(value.map_or(0, |b| get_bit(b, offset)) as i64))
}

/// BYTE or BIT (case-insensitive), else a syntax error.
fn unit_is_bit(arg: &[u8]) -> Result<bool, Reply> {
    if is(arg, "bit") {
        Ok(true)
    } else if is(arg, "byte") {
        Ok(false)
    } else {
        Err(Reply::error(err::SYNTAX))
    }
}

/// A resolved range: bytes `start..=end` of the string, with the bits outside the requested
/// bit range masked off at the two edges (`first_mask`: high bits of the first byte to ignore,
/// `last_mask`: low bits of the last byte to ignore).
struct Span {
    start: i64,
    end: i64,
    first_mask: u8,
    last_mask: u8,
}

/// Redis's range normalisation for BITCOUNT and BITPOS: negative indexes from the end, clamped,
/// in bytes or (with `bit`) in bits turned into bytes with edge masks.
fn span(len: i64, mut start: i64, mut end: i64, bit: bool) -> Span {
    let total = if bit { len << 3 } else { len };
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    if bit && start <= end {
        first_mask = (!((1u32 << (8 - (start & 7))) - 1) & 0xff) as u8;
        last_mask = ((1u32 << (7 - (end & 7))) - 1) as u8;
        start >>= 3;
        end >>= 3;
    }
    Span {
        start,
        end,
        first_mask,
        last_mask,
    }
}

pub fn bitcount(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let range = match args.len() {
        2 => None,
        4 | 5 => {
            let (start, end) = (int(args[2])?, int(args[3])?);
            let bit = match args.get(4) {
                Some(unit) => unit_is_bit(unit)?,
                None => false,
            };
            Some((start, end, bit))
        }
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    let mut locked = ctx.lock(&args[1..2]);
    let Some(value) = read_string(&mut locked, args[1])? else {
        return Ok(Reply::Int(0));
    };
    let len = value.len() as i64;
    let s = match range {
        None => span(len, 0, -1, false),
        Some((start, end, _)) if start < 0 && end < 0 && start > end => return Ok(Reply::Int(0)),
        Some((start, end, bit)) => span(len, start, end, bit),
    };
    if s.start > s.end {
        return Ok(Reply::Int(0));
    }
    let (a, b) = (s.start as usize, s.end as usize);
    let mut count = popcount(&value[a..=b]);
    count -= (value[a] & s.first_mask).count_ones() as u64;
    count -= (value[b] & s.last_mask).count_ones() as u64;
    Ok(Reply::Int(count as i64))
}

pub fn bitpos(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let bit = int(args[2])?;
    if bit != 0 && bit != 1 {
        return Err(Reply::error("ERR The bit argument must be 1 or 0."));
    }
    let want = bit == 1;
    // Redis 7.2 parses every argument before looking at the key.
    let mut range = None;
    match args.len() {
        3 => {}
        4..=6 => {
            let start = int(args[3])?;
            let unit_bit = match args.get(5) {
                Some(unit) => unit_is_bit(unit)?,
                None => false,
            };
            let end = match args.get(4) {
                Some(e) => Some(int(e)?),
                None => None,
            };
            range = Some((start, end, unit_bit));
        }
        _ => return Err(Reply::error(err::SYNTAX)),
    }
    let mut locked = ctx.lock(&args[1..2]);
    let Some(value) = read_string(&mut locked, args[1])? else {
        return Ok(Reply::Int(if want { -1 } else { 0 }));
    };
    let len = value.len() as i64;
    let end_given = matches!(range, Some((_, Some(_), _)));
    let s = match range {
        None => span(len, 0, -1, false),
        Some((start, end, unit_bit)) => {
            let end = match end {
                Some(e) => e,
                None if unit_bit => (len << 3) + 7,
                None => len - 1,
            };
            span(len, start, end, unit_bit)
        }
    };
    if s.start > s.end {
        return Ok(Reply::Int(-1));
    }
    // The searched bits, absolute: from the first byte's first unmasked bit to the last byte's
    // last unmasked bit.
    let lo = ((s.start as u64) << 3) + s.first_mask.leading_ones() as u64;
    let hi = ((s.end as u64) << 3) + 7 - s.last_mask.trailing_ones() as u64;
    match find_bit(value, lo, hi, want) {
        Some(pos) => Ok(Reply::Int(pos as i64)),
        None if want || end_given => Ok(Reply::Int(-1)),
        // Looking for a clear bit with no end given: the string is zero-padded on the right.
        None => Ok(Reply::Int(hi as i64 + 1)),
    }
}

/// The first bit equal to `want` in bits `lo..=hi` of `bytes` (all inside the string).
fn find_bit(bytes: &[u8], lo: u64, hi: u64, want: bool) -> Option<u64> {
    let mut pos = lo;
    // Bit by bit up to a byte boundary, then whole bytes, then bit by bit again.
    while pos <= hi && pos & 7 != 0 {
        if (get_bit(bytes, pos) == 1) == want {
            return Some(pos);
        }
        pos += 1;
    }
    let skip = if want { 0u8 } else { 0xff };
    while pos + 7 <= hi {
        let byte = bytes[(pos >> 3) as usize];
        if byte != skip {
            let lead = if want {
                byte.leading_zeros()
            } else {
                byte.leading_ones()
            };
            return Some(pos + lead as u64);
        }
        pos += 8;
    }
    while pos <= hi {
        if (get_bit(bytes, pos) == 1) == want {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

#[derive(Clone, Copy, PartialEq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
    /// Redis 8.2's: X ∧ ¬(Y1 ∨ Y2 …), the bits of the first source no other has.
    Diff,
    /// Redis 8.2's: ¬X ∧ (Y1 ∨ Y2 …), the bits of the others the first lacks.
    Diff1,
    /// Redis 8.2's: X ∧ (Y1 ∨ Y2 …), the bits of the first at least one other shares.
    AndOr,
    /// Redis 8.2's: the bits set in exactly one source.
    One,
}

const BIT_OPS: [(&str, BitOp); 8] = [
    ("AND", BitOp::And),
    ("OR", BitOp::Or),
    ("XOR", BitOp::Xor),
    ("NOT", BitOp::Not),
    ("DIFF", BitOp::Diff),
    ("DIFF1", BitOp::Diff1),
    ("ANDOR", BitOp::AndOr),
    ("ONE", BitOp::One),
];

pub fn bitop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (name, op) = BIT_OPS
        .into_iter()
        .find(|(name, _)| is(args[1], name))
        .ok_or_else(|| Reply::error(err::SYNTAX))?;
    if op == BitOp::Not && args.len() != 4 {
        return Err(Reply::error(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    // The operations that set the first source against the others need one other at least.
    if matches!(op, BitOp::Diff | BitOp::Diff1 | BitOp::AndOr) && args.len() < 5 {
        return Err(Reply::error(format!(
            "ERR BITOP {name} must be called with at least two source keys."
        )));
    }
    let dest = args[2];
    let mut locked = ctx.lock(&args[2..]);
    for key in &args[3..] {
        read_string(&mut locked, key)?;
    }
    // Every source checked (and an expired one reclaimed): now read side by side in place.
    let sources: Vec<&[u8]> = args[3..]
        .iter()
        .map(|key| match locked.peek(key).map(|e| &e.value) {
            Some(Value::Str(b)) => &b[..],
            _ => &[][..],
        })
        .collect();
    let max = sources.iter().map(|s| s.len()).max().unwrap_or(0);
    if max == 0 {
        locked.remove(dest);
        return Ok(Reply::Int(0));
    }
    let out = combine(op, &sources, max);
    locked.set(dest, Value::Str(out.into()), 0);
    Ok(Reply::Int(max as i64))
}

/// `op` over `sources`, each read as `len` bytes (a shorter one, or a missing key, padded with
/// zero bytes, as Redis pads).
fn combine(op: BitOp, sources: &[&[u8]], len: usize) -> Vec<u8> {
    let or_into = |out: &mut [u8], srcs: &[&[u8]]| {
        for src in srcs {
            for (o, s) in out.iter_mut().zip(src.iter()) {
                *o |= s;
            }
        }
    };
    let (first, rest) = (sources[0], &sources[1..]);
    let mut out = vec![0u8; len];
    match op {
        BitOp::Not => {
            // Past the source's end (never: one source sets `len`), but keep Redis's rule.
            out.fill(0xff);
            for (o, s) in out.iter_mut().zip(first.iter()) {
                *o = !s;
            }
        }
        BitOp::And => {
            out[..first.len()].copy_from_slice(first);
            for src in rest {
                for (i, o) in out.iter_mut().enumerate() {
                    *o &= src.get(i).copied().unwrap_or(0);
                }
            }
        }
        BitOp::Or => or_into(&mut out, sources),
        BitOp::Xor => {
            for src in sources {
                for (o, s) in out.iter_mut().zip(src.iter()) {
                    *o ^= s;
                }
            }
        }
        BitOp::Diff | BitOp::Diff1 | BitOp::AndOr => {
            or_into(&mut out, rest);
            for (i, o) in out.iter_mut().enumerate() {
                let x = first.get(i).copied().unwrap_or(0);
                *o = match op {
                    BitOp::Diff => x & !*o,
                    BitOp::Diff1 => !x & *o,
                    _ => x & *o,
                };
            }
        }
        BitOp::One => {
            // `out` gathers the bits seen once or more, `twice` those seen again.
            let mut twice = vec![0u8; len];
            for src in sources {
                for ((o, t), s) in out.iter_mut().zip(twice.iter_mut()).zip(src.iter()) {
                    *t |= *o & s;
                    *o |= s;
                }
            }
            for (o, t) in out.iter_mut().zip(twice) {
                *o &= !t;
            }
        }
    }
    out
}

// BITFIELD

#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq)]
enum FieldOp {
    Get,
    Set,
    Incrby,
}

struct Field {
    op: FieldOp,
    signed: bool,
    bits: u32,
    offset: u64,
    value: i64,
    overflow: Overflow,
}

/// `i1`..`i64` or `u1`..`u63`: (signed, bits).
fn field_type(arg: &[u8]) -> Result<(bool, u32), Reply> {
    let bad = || Reply::error(BAD_TYPE);
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(bad()),
    };
    let bits = parse_i64_strict(&arg[1..]).ok_or_else(bad)?;
    if bits < 1 || (signed && bits > 64) || (!signed && bits > 63) {
        return Err(bad());
    }
    Ok((signed, bits as u32))
}

fn get_unsigned(p: &[u8], mut offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for _ in 0..bits {
        value = (value << 1) | get_bit(p, offset) as u64;
        offset += 1;
    }
    value
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let mut value = get_unsigned(p, offset, bits) as i64;
    if bits < 64 && value & (1i64 << (bits - 1)) != 0 {
        value |= -1i64 << bits;
    }
    value
}

fn set_unsigned(p: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        let on = value & (1u64 << (bits - 1 - j)) != 0;
        set_bit(p, offset + j as u64, on);
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: whether `value + incr` leaves `0..2^bits`, and the
/// value to store instead under WRAP or SAT.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<u64> {
    let max: u64 = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX << bits);
    if value > max || (incr > 0 && incr > maxincr) {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => max,
        })
    } else if incr < 0 && incr < minincr {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => 0,
        })
    } else {
        None
    }
}

/// Redis's `checkSignedBitfieldOverflow`, as above for `-2^(bits-1)..2^(bits-1)`.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<i64> {
    let max: i64 = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1u64 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => max,
        })
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => min,
        })
    } else {
        None
    }
}

pub fn bitfield(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bitfield_generic(ctx, args, false)
}

pub fn bitfield_ro(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    bitfield_generic(ctx, args, true)
}

fn bitfield_generic(ctx: &mut Ctx, args: &[&[u8]], ro: bool) -> CmdResult {
    let max_len = max_bulk_len(ctx);
    let mut fields: Vec<Field> = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest: Option<u64> = None;
    let mut j = 2;
    while j < args.len() {
        let rest = args.len() - j - 1;
        let sub = args[j];
        let op = if is(sub, "get") && rest >= 2 {
            FieldOp::Get
        } else if is(sub, "set") && rest >= 3 {
            FieldOp::Set
        } else if is(sub, "incrby") && rest >= 3 {
            FieldOp::Incrby
        } else if is(sub, "overflow") && rest >= 1 {
            let kind = args[j + 1];
            overflow = if is(kind, "wrap") {
                Overflow::Wrap
            } else if is(kind, "sat") {
                Overflow::Sat
            } else if is(kind, "fail") {
                Overflow::Fail
            } else {
                return Err(Reply::error("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(Reply::error(err::SYNTAX));
        };
        let (signed, bits) = field_type(args[j + 1])?;
        let offset = bit_offset(args[j + 2], Some(bits), max_len)?;
        let mut value = 0;
        if op != FieldOp::Get {
            let last = offset + bits as u64 - 1;
            highest = Some(highest.map_or(last, |h| h.max(last)));
            value = int(args[j + 3])?;
        }
        fields.push(Field {
            op,
            signed,
            bits,
            offset,
            value,
            overflow,
        });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    let mut locked = ctx.lock(&args[1..2]);
    let key = args[1];
    let Some(highest) = highest else {
        // Reads only: a missing key reads as zeros.
        let value = read_string(&mut locked, key)?.unwrap_or_default();
        let replies = fields
            .iter()
            .map(|f| Reply::Int(read_field(value, f)))
            .collect();
        return Ok(Reply::Array(replies));
    };
    if ro {
        return Err(Reply::error(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let need = (highest >> 3) as usize + 1;
    // Redis counts one change per SET or INCRBY that ran (OVERFLOW FAIL can refuse one) and
    // changed its field, or every one that ran when the string had to be created or grown; with
    // no change, the key is not written at all.
    let grown = read_string(&mut locked, key)?.is_none_or(|b| b.len() < need);
    let mut changes = 0u64;
    let mut apply = |buf: &mut [u8]| -> Vec<Reply> {
        fields
            .iter()
            .map(|f| match f.op {
                FieldOp::Get => Reply::Int(read_field(buf, f)),
                _ => {
                    let (reply, changed) = write_field(buf, f);
                    if changed || (grown && !matches!(reply, Reply::Nil)) {
                        changes += 1;
                    }
                    reply
                }
            })
            .collect()
    };
    let existing = locked
        .get_mut_unversioned(key)
        .and_then(|e| match &mut e.value {
            Value::Str(b) => Some(b),
            _ => None,
        });
    let replies = match existing {
        Some(b) => {
            let replies = apply(b.grown_to(need));
            if changes > 0 {
                locked.get_mut(key);
            }
            replies
        }
        None => write_string(&mut locked, key, need, apply),
    };
    if changes > 1 {
        locked.count_more_writes(key, changes - 1);
    }
    Ok(Reply::Array(replies))
}

/// A GET: the field read from `value`, zero-padded past its end.
fn read_field(value: &[u8], f: &Field) -> i64 {
    let byte = (f.offset >> 3) as usize;
    let mut buf = [0u8; 9];
    if let Some(src) = value.get(byte..) {
        let n = src.len().min(9);
        buf[..n].copy_from_slice(&src[..n]);
    }
    let at = f.offset & 7;
    if f.signed {
        get_signed(&buf, at, f.bits)
    } else {
        get_unsigned(&buf, at, f.bits) as i64
    }
}

/// A SET or INCRBY on `buf` (already long enough): the reply, nil when OVERFLOW FAIL refuses it,
/// and whether the field's value changed.
fn write_field(buf: &mut [u8], f: &Field) -> (Reply, bool) {
    let incr = f.op == FieldOp::Incrby;
    if f.signed {
        let old = get_signed(buf, f.offset, f.bits);
        let (new, over) = if incr {
            match signed_overflow(old, f.value, f.bits, f.overflow) {
                Some(w) => (w, true),
                None => (old.wrapping_add(f.value), false),
            }
        } else {
            match signed_overflow(f.value, 0, f.bits, f.overflow) {
                Some(w) => (w, true),
                None => (f.value, false),
            }
        };
        if over && f.overflow == Overflow::Fail {
            return (Reply::Nil, false);
        }
        set_unsigned(buf, f.offset, f.bits, new as u64);
        (Reply::Int(if incr { new } else { old }), new != old)
    } else {
        let old = get_unsigned(buf, f.offset, f.bits);
        let (new, over) = if incr {
            match unsigned_overflow(old, f.value, f.bits, f.overflow) {
                Some(w) => (w, true),
                None => (old.wrapping_add(f.value as u64), false),
            }
        } else {
            match unsigned_overflow(f.value as u64, 0, f.bits, f.overflow) {
                Some(w) => (w, true),
                None => (f.value as u64, false),
            }
        };
        if over && f.overflow == Overflow::Fail {
            return (Reply::Nil, false);
        }
        set_unsigned(buf, f.offset, f.bits, new);
        (
            Reply::Int(if incr { new as i64 } else { old as i64 }),
            new != old,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation, bit by bit from its definition (a missing byte is zero), against
    /// `combine` over sources of different lengths, one of them empty (a missing key).
    #[test]
    fn bit_operations_follow_their_definitions() {
        let bytes = |seed: u32, len: usize| -> Vec<u8> {
            (0..len as u32)
                .map(|i| ((i + seed) * 97 % 256) as u8 ^ (seed as u8))
                .collect()
        };
        let owned = [
            bytes(1, 5),
            bytes(2, 3),
            bytes(3, 0),
            bytes(4, 7),
            bytes(5, 2),
        ];
        for n in 1..=owned.len() {
            let sources: Vec<&[u8]> = owned[..n].iter().map(|v| &v[..]).collect();
            let len = sources.iter().map(|s| s.len()).max().unwrap_or(0);
            for (name, op) in BIT_OPS {
                if op == BitOp::Not && n != 1 {
                    continue;
                }
                let out = combine(op, &sources, len);
                for bit in 0..len * 8 {
                    let set =
                        |s: &[u8]| s.get(bit / 8).is_some_and(|b| b & (0x80 >> (bit % 8)) != 0);
                    let x = set(sources[0]);
                    let others = sources[1..].iter().filter(|s| set(s)).count();
                    let all = usize::from(x) + others;
                    let want = match op {
                        BitOp::And => all == n,
                        BitOp::Or => all > 0,
                        BitOp::Xor => all % 2 == 1,
                        BitOp::Not => !x,
                        BitOp::Diff => x && others == 0,
                        BitOp::Diff1 => !x && others > 0,
                        BitOp::AndOr => x && others > 0,
                        BitOp::One => all == 1,
                    };
                    assert_eq!(set(&out), want, "{name} of {n} sources, bit {bit}");
                }
            }
        }
    }

    #[test]
    fn popcount_matches_bytewise() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 251) as u8).collect();
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 1000] {
            let expect: u64 = data[..len].iter().map(|b| b.count_ones() as u64).sum();
            assert_eq!(popcount(&data[..len]), expect);
        }
    }

    #[test]
    fn overflow_rules() {
        assert_eq!(unsigned_overflow(255, 1, 8, Overflow::Wrap), Some(0));
        assert_eq!(unsigned_overflow(255, 1, 8, Overflow::Sat), Some(255));
        assert_eq!(unsigned_overflow(0, -1, 8, Overflow::Sat), Some(0));
        assert_eq!(unsigned_overflow(u64::MAX, 0, 8, Overflow::Wrap), Some(255));
        assert_eq!(signed_overflow(127, 1, 8, Overflow::Wrap), Some(-128));
        assert_eq!(signed_overflow(-128, -1, 8, Overflow::Sat), Some(-128));
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Wrap),
            Some(i64::MIN)
        );
        assert_eq!(signed_overflow(5, 1, 8, Overflow::Wrap), None);
    }
}
