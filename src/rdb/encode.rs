//! Values → RDB bytes, in the encodings Redis 7.0 writes (so 7.0 and 7.2 both read them), with
//! Redis's default thresholds deciding between the compact and the plain form of each type.

use super::listpack::{canonical_int, write_intset, ListpackWriter};
use super::{lzf, stm, types};
use crate::store::zset::ZSet;
use crate::store::Value;

/// Redis's default `hash-max-listpack-entries` / `zset-max-listpack-entries`.
const MAX_LISTPACK_ENTRIES: usize = 128;
/// Redis's default `hash-max-listpack-value` / `zset-max-listpack-value`.
const MAX_LISTPACK_VALUE: usize = 64;
/// Redis's default `set-max-intset-entries`.
const MAX_INTSET_ENTRIES: usize = 512;
/// A quicklist node's listpack stays under this size (`list-max-listpack-size -2`, 8 kB).
const QUICKLIST_NODE_BYTES: usize = 8192;
/// What Redis adds to an element's length when estimating a node's growth.
const NODE_ENTRY_OVERHEAD: usize = 8;
/// Quicklist node container: a listpack of elements.
const CONTAINER_PACKED: u64 = 2;

/// The type byte and value encoding of `value` (a DUMP payload before [`super::seal`]).
pub fn encode_value(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value_into(&mut out, value);
    out
}

/// [`encode_value`], appended to `out` (a file's writer reuses one buffer for every key).
pub fn encode_value_into(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Str(s) => {
            out.push(types::STRING);
            put_string(out, s);
        }
        Value::List(items) => {
            out.push(types::LIST_QUICKLIST_2);
            let mut nodes: Vec<ListpackWriter> = vec![ListpackWriter::default()];
            for item in items.iter() {
                let node = nodes.last_mut().filter(|n| {
                    n.is_empty()
                        || n.bytes() + item.len() + NODE_ENTRY_OVERHEAD <= QUICKLIST_NODE_BYTES
                });
                match node {
                    Some(node) => node.push(item),
                    None => {
                        let mut node = ListpackWriter::default();
                        node.push(item);
                        nodes.push(node);
                    }
                }
            }
            put_len(out, nodes.len() as u64);
            for node in nodes {
                put_len(out, CONTAINER_PACKED);
                put_string(out, &node.finish());
            }
        }
        Value::Hash(hash) => {
            let compact = hash.len() <= MAX_LISTPACK_ENTRIES
                && hash
                    .iter()
                    .all(|(f, v)| f.len() <= MAX_LISTPACK_VALUE && v.len() <= MAX_LISTPACK_VALUE);
            if let Some(earliest) = hash.earliest_ttl() {
                put_timed_hash(out, hash, earliest, compact);
            } else if compact {
                out.push(types::HASH_LISTPACK);
                let mut lp = ListpackWriter::default();
                for (field, value) in hash.iter() {
                    lp.push(field);
                    lp.push(value);
                }
                put_string(out, &lp.finish());
            } else {
                out.push(types::HASH);
                put_len(out, hash.len() as u64);
                for (field, value) in hash.iter() {
                    put_string(out, field);
                    put_string(out, value);
                }
            }
        }
        Value::Set(set) => {
            let ints: Option<Vec<i64>> = (set.len() <= MAX_INTSET_ENTRIES)
                .then(|| set.iter().map(canonical_int).collect())
                .flatten();
            match ints {
                Some(ints) => {
                    out.push(types::SET_INTSET);
                    put_string(out, &write_intset(ints));
                }
                None => {
                    out.push(types::SET);
                    put_len(out, set.len() as u64);
                    for member in set.iter() {
                        put_string(out, member);
                    }
                }
            }
        }
        Value::ZSet(zset) => put_zset(out, zset),
        Value::Stream(s) => super::stream::encode(out, s),
        Value::Json(doc) => {
            out.push(types::MODULE_2);
            super::json::encode(out, doc);
        }
        Value::Stm(entry) => {
            out.push(types::STM);
            stm::encode(out, entry);
        }
    }
}

/// A hash with field TTLs as Redis 7.4 writes it: its earliest TTL (8 bytes LE) first, then a
/// listpack of field, value, TTL triplets (Unix ms, 0: none), or in the large form each pair
/// after its TTL as a length (0: none, else the TTL less the earliest, plus 1).
fn put_timed_hash(
    out: &mut Vec<u8>,
    hash: &crate::store::value::Hash,
    earliest: u64,
    compact: bool,
) {
    let mut at = itoa::Buffer::new();
    if compact {
        out.push(types::HASH_LISTPACK_EX);
        out.extend_from_slice(&earliest.to_le_bytes());
        let mut lp = ListpackWriter::default();
        for (field, value, ttl) in hash.iter_with_ttls() {
            lp.push(field);
            lp.push(value);
            lp.push(at.format(ttl).as_bytes());
        }
        put_string(out, &lp.finish());
    } else {
        out.push(types::HASH_METADATA);
        out.extend_from_slice(&earliest.to_le_bytes());
        put_len(out, hash.len() as u64);
        for (field, value, ttl) in hash.iter_with_ttls() {
            put_len(out, if ttl == 0 { 0 } else { ttl - earliest + 1 });
            put_string(out, field);
            put_string(out, value);
        }
    }
}

fn put_zset(out: &mut Vec<u8>, zset: &ZSet) {
    let compact = zset.len() <= MAX_LISTPACK_ENTRIES
        && zset.iter().all(|(m, _)| m.len() <= MAX_LISTPACK_VALUE);
    if compact {
        out.push(types::ZSET_LISTPACK);
        let mut lp = ListpackWriter::default();
        for (member, score) in zset.iter() {
            lp.push(member);
            lp.push(score_text(score).as_bytes());
        }
        put_string(out, &lp.finish());
    } else {
        // Highest score first, as Redis walks its skip list from the tail.
        out.push(types::ZSET_2);
        put_len(out, zset.len() as u64);
        for (member, score) in zset.iter().rev() {
            put_string(out, member);
            out.extend_from_slice(&score.to_le_bytes());
        }
    }
}

/// A score as Redis 7.0's `d2string` spells it inside a listpack: integers within 2^52 as
/// integers, everything else as `%.17g`.
fn score_text(score: f64) -> String {
    if score.is_infinite() {
        return if score > 0.0 { "inf" } else { "-inf" }.into();
    }
    if score == 0.0 {
        return if score.is_sign_negative() { "-0" } else { "0" }.into();
    }
    if score > -4_503_599_627_370_495.0 && score < 4_503_599_627_370_496.0 && score.fract() == 0.0 {
        return (score as i64).to_string();
    }
    format_g17(score)
}

/// C's `%.17g`: 17 significant digits, trailing zeros dropped, exponent form outside 1e-4..1e17.
fn format_g17(value: f64) -> String {
    let sci = format!("{value:.16e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..17).contains(&exponent) {
        let decimals = (16 - exponent).max(0) as usize;
        trim(&format!("{value:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.abs())
    }
}

/// Redis's length encoding: 6, 14, 32 or 64 bits, big-endian beyond the first byte.
pub fn put_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// A string as Redis's `rdbSaveRawString` writes it: a small canonical integer as an integer,
/// a string over 20 bytes LZF-compressed when that saves at least 4 bytes, else as it is.
pub fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(v) = canonical_int(s) {
            if let Ok(small) = i8::try_from(v) {
                out.extend_from_slice(&[0xc0, small as u8]);
                return;
            }
            if let Ok(small) = i16::try_from(v) {
                out.push(0xc1);
                out.extend_from_slice(&small.to_le_bytes());
                return;
            }
            if let Ok(small) = i32::try_from(v) {
                out.push(0xc2);
                out.extend_from_slice(&small.to_le_bytes());
                return;
            }
        }
    }
    if s.len() > 20 {
        if let Some(packed) = lzf::compress(s, s.len() - 4) {
            out.push(0xc3);
            put_len(out, packed.len() as u64);
            put_len(out, s.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_spelled_as_redis_7_0_does() {
        assert_eq!(score_text(1.0), "1");
        assert_eq!(score_text(-0.0), "-0");
        assert_eq!(score_text(2.5), "2.5");
        assert_eq!(score_text(0.1), "0.10000000000000001");
        assert_eq!(score_text(1e20), "1e+20");
        assert_eq!(score_text(1.5e-7), "1.4999999999999999e-07");
        assert_eq!(score_text(f64::NEG_INFINITY), "-inf");
        assert_eq!(score_text(4_503_599_627_370_496.0), "4503599627370496");
    }

    #[test]
    fn strings_match_redis_bytes() {
        // From redis-server 7.0.15: `SET s 12345` → DUMP body `\x00\xc1\x39\x30`; a 120-byte
        // `"hello world " * 10` → LZF: clen 20, len 120, then this stream.
        let mut out = vec![];
        put_string(&mut out, b"12345");
        assert_eq!(out, b"\xc1\x39\x30");
        let mut out = vec![];
        put_string(&mut out, "hello world ".repeat(10).as_bytes());
        assert_eq!(
            out,
            b"\xc3\x14\x40\x78\x0chello world h\xe0\x60\x0b\x01d ".to_vec()
        );
    }
}
