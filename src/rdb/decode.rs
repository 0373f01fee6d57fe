//! RDB bytes → values: every encoding Redis 7.0 and 7.2 write for strings, lists, hashes, sets
//! and sorted sets, the ziplist forms of older versions, and our STM type. Every length is checked
//! against the bytes that are there before anything is allocated for it, and a value that would
//! be empty or holds a repeated field or member is refused, as Redis refuses them.

use super::listpack::{read_intset, read_listpack, read_ziplist};
use super::{lzf, stm, types, RdbError};
use crate::store::encoding::Limits;
use crate::store::value::{Hash, Set};
use crate::store::zset::ZSet;
use crate::store::{CompactBytes, Value};
use bytes::Bytes;
use std::collections::VecDeque;

/// Reads the value of a payload body (type byte and value, footer already removed). Hashes, sets
/// and sorted sets take their compact form within `limits` (the configured thresholds), as they
/// would have had they been written by commands.
pub fn decode_value(body: &[u8], limits: &Limits) -> Result<Value, RdbError> {
    let mut r = RdbReader::new(body);
    let kind = r.byte()?;
    read_value(&mut r, kind, limits)
}

/// Reads a value of type `kind` (its type byte already read) from `r`, leaving `r` just after it:
/// the values of an RDB file follow each other.
pub fn read_value(r: &mut RdbReader<'_>, kind: u8, limits: &Limits) -> Result<Value, RdbError> {
    let value = match kind {
        types::STRING => Value::Str(CompactBytes::from_vec(Vec::from(r.string()?))),
        types::LIST => list(r.strings()?)?,
        types::LIST_ZIPLIST => list(read_ziplist(&r.string()?)?)?,
        types::LIST_QUICKLIST | types::LIST_QUICKLIST_2 => {
            let nodes = r.len()?;
            let mut items = Vec::new();
            for _ in 0..nodes {
                if kind == types::LIST_QUICKLIST {
                    items.extend(read_ziplist(&r.string()?)?);
                    continue;
                }
                match r.len()? {
                    1 => items.push(r.string()?), // a plain node: one large element
                    2 => items.extend(read_listpack(&r.string()?)?),
                    _ => return Err(RdbError::BadData),
                }
            }
            list(items)?
        }
        types::SET => set(r.strings()?, limits)?,
        types::SET_INTSET => {
            let members = read_intset(&r.string()?)?;
            set(
                members
                    .into_iter()
                    .map(|v| Bytes::copy_from_slice(itoa::Buffer::new().format(v).as_bytes()))
                    .collect(),
                limits,
            )?
        }
        types::SET_LISTPACK => set(read_listpack(&r.string()?)?, limits)?,
        types::HASH => {
            let count = r.len()?;
            let mut flat = Vec::with_capacity(r.bounded(count.saturating_mul(2)));
            for _ in 0..count {
                flat.push(r.string()?);
                flat.push(r.string()?);
            }
            hash(flat, limits)?
        }
        types::HASH_METADATA => {
            let earliest = u64::from_le_bytes(r.array()?);
            let count = r.len()?;
            let mut triplets = Vec::with_capacity(r.bounded(count));
            for _ in 0..count {
                let ttl = match r.len()? {
                    0 => 0,
                    relative => relative
                        .checked_add(earliest)
                        .and_then(|at| at.checked_sub(1))
                        .ok_or(RdbError::BadData)?,
                };
                triplets.push((r.string()?, r.string()?, ttl));
            }
            timed_hash(triplets, limits)?
        }
        types::HASH_LISTPACK_EX => {
            r.array::<8>()?; // the earliest TTL: the triplets carry every one
            let flat = read_listpack(&r.string()?)?;
            if flat.len() % 3 != 0 {
                return Err(RdbError::BadData);
            }
            let triplets = flat
                .chunks(3)
                .map(|t| {
                    let ttl = crate::protocol::parse_i64_strict(&t[2])
                        .and_then(|at| u64::try_from(at).ok())
                        .ok_or(RdbError::BadData)?;
                    Ok((t[0].clone(), t[1].clone(), ttl))
                })
                .collect::<Result<Vec<_>, RdbError>>()?;
            timed_hash(triplets, limits)?
        }
        types::HASH_ZIPLIST => hash(read_ziplist(&r.string()?)?, limits)?,
        types::HASH_LISTPACK => hash(read_listpack(&r.string()?)?, limits)?,
        types::ZSET | types::ZSET_2 => {
            let count = r.len()?;
            let mut pairs = Vec::with_capacity(r.bounded(count));
            for _ in 0..count {
                let member = r.string()?;
                let score = if kind == types::ZSET_2 {
                    f64::from_le_bytes(r.take(8)?.try_into().map_err(|_| RdbError::BadData)?)
                } else {
                    r.text_score()?
                };
                pairs.push((member, score));
            }
            zset(pairs, limits)?
        }
        types::ZSET_ZIPLIST | types::ZSET_LISTPACK => {
            let blob = r.string()?;
            let flat = if kind == types::ZSET_ZIPLIST {
                read_ziplist(&blob)?
            } else {
                read_listpack(&blob)?
            };
            if flat.len() % 2 != 0 {
                return Err(RdbError::BadData);
            }
            let pairs = flat
                .chunks(2)
                .map(|pair| Ok((pair[0].clone(), parse_score(&pair[1])?)))
                .collect::<Result<Vec<_>, RdbError>>()?;
            zset(pairs, limits)?
        }
        types::STREAM_LISTPACKS | types::STREAM_LISTPACKS_2 | types::STREAM_LISTPACKS_3 => {
            Value::Stream(Box::new(super::stream::decode(r, kind)?))
        }
        types::STM => Value::Stm(Box::new(stm::decode(r)?)),
        types::MODULE_2 => Value::Json(Box::new(super::json::decode(r)?)),
        _ => return Err(RdbError::BadData),
    };
    Ok(value)
}

fn list(items: Vec<Bytes>) -> Result<Value, RdbError> {
    if items.is_empty() {
        return Err(RdbError::BadData);
    }
    Ok(Value::List(Box::new(VecDeque::from(items))))
}

fn set(members: Vec<Bytes>, limits: &Limits) -> Result<Value, RdbError> {
    let mut set = Set::default();
    let limit = limits.set();
    for member in members {
        if !set.insert(&member, limit) {
            return Err(RdbError::BadData);
        }
    }
    if set.is_empty() {
        return Err(RdbError::BadData);
    }
    Ok(Value::Set(set))
}

/// A hash from alternating fields and values.
fn hash(flat: Vec<Bytes>, limits: &Limits) -> Result<Value, RdbError> {
    if flat.is_empty() || flat.len() % 2 != 0 {
        return Err(RdbError::BadData);
    }
    let mut hash = Hash::default();
    let limit = limits.hash();
    for pair in flat.chunks(2) {
        if !hash.insert(&pair[0], &pair[1], limit) {
            return Err(RdbError::BadData);
        }
    }
    Ok(Value::Hash(hash))
}

/// A hash from (field, value, TTL) triplets, TTLs in Unix ms (0: none). Fields whose time has
/// passed are kept: the loader or RESTORE drops them, knowing whether it may.
fn timed_hash(triplets: Vec<(Bytes, Bytes, u64)>, limits: &Limits) -> Result<Value, RdbError> {
    if triplets.is_empty() {
        return Err(RdbError::BadData);
    }
    let mut hash = Hash::default();
    let limit = limits.hash();
    for (field, value, ttl) in triplets {
        if ttl >= 1 << 48 || !hash.insert(&field, &value, limit) {
            return Err(RdbError::BadData);
        }
        hash.set_ttl(&field, ttl);
    }
    Ok(Value::Hash(hash))
}

fn zset(pairs: Vec<(Bytes, f64)>, limits: &Limits) -> Result<Value, RdbError> {
    if pairs.is_empty() {
        return Err(RdbError::BadData);
    }
    let mut zset = ZSet::default();
    let limit = limits.zset();
    for (member, score) in pairs {
        if score.is_nan() || zset.insert(member, score, limit).is_some() {
            return Err(RdbError::BadData);
        }
    }
    Ok(Value::ZSet(zset))
}

/// A score written as text (listpack and ziplist sorted sets): what `strtod` reads, no NaN.
fn parse_score(text: &[u8]) -> Result<f64, RdbError> {
    let score: f64 = std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or(RdbError::BadData)?;
    if score.is_nan() {
        return Err(RdbError::BadData);
    }
    Ok(score)
}

/// A cursor over a payload body whose every read is checked.
pub struct RdbReader<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> RdbReader<'a> {
    pub fn new(body: &'a [u8]) -> Self {
        RdbReader { body, at: 0 }
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        let end = self.at.checked_add(n).ok_or(RdbError::BadData)?;
        let bytes = self.body.get(self.at..end).ok_or(RdbError::BadData)?;
        self.at = end;
        Ok(bytes)
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.at
    }

    /// True once every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.at >= self.body.len()
    }

    pub fn byte(&mut self) -> Result<u8, RdbError> {
        Ok(self.take(1)?[0])
    }

    /// A capacity no larger than the bytes left: a corrupt count cannot make us allocate more
    /// than the payload could describe.
    fn bounded(&self, count: u64) -> usize {
        count.min((self.body.len() - self.at) as u64) as usize
    }

    /// A length, or for a string the special encoding it announces.
    fn len_or_encoding(&mut self) -> Result<(u64, bool), RdbError> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => (u64::from(first & 0x3f), false),
            1 => (
                (u64::from(first & 0x3f) << 8) | u64::from(self.byte()?),
                false,
            ),
            2 if first == 0x80 => (u64::from(u32::from_be_bytes(self.array()?)), false),
            2 if first == 0x81 => (u64::from_be_bytes(self.array()?), false),
            2 => return Err(RdbError::BadData),
            _ => (u64::from(first & 0x3f), true),
        })
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        self.take(N)?.try_into().map_err(|_| RdbError::BadData)
    }

    /// A plain length (a count of elements or nodes).
    pub fn len(&mut self) -> Result<u64, RdbError> {
        match self.len_or_encoding()? {
            (len, false) => Ok(len),
            _ => Err(RdbError::BadData),
        }
    }

    /// A string in any of its encodings: raw, a small integer, or LZF-compressed.
    pub fn string(&mut self) -> Result<Bytes, RdbError> {
        let (len, encoded) = self.len_or_encoding()?;
        if !encoded {
            let len = usize::try_from(len).map_err(|_| RdbError::BadData)?;
            return Ok(Bytes::copy_from_slice(self.take(len)?));
        }
        let int = match len {
            0 => i64::from(i8::from_le_bytes(self.array()?)),
            1 => i64::from(i16::from_le_bytes(self.array()?)),
            2 => i64::from(i32::from_le_bytes(self.array()?)),
            3 => {
                let packed = usize::try_from(self.len()?).map_err(|_| RdbError::BadData)?;
                let plain = usize::try_from(self.len()?).map_err(|_| RdbError::BadData)?;
                let data = self.take(packed)?;
                return lzf::decompress(data, plain)
                    .map(Bytes::from)
                    .ok_or(RdbError::BadData);
            }
            _ => return Err(RdbError::BadData),
        };
        Ok(Bytes::copy_from_slice(
            itoa::Buffer::new().format(int).as_bytes(),
        ))
    }

    /// A count, then that many strings.
    fn strings(&mut self) -> Result<Vec<Bytes>, RdbError> {
        let count = self.len()?;
        let mut items = Vec::with_capacity(self.bounded(count));
        for _ in 0..count {
            items.push(self.string()?);
        }
        Ok(items)
    }

    /// A score of the oldest sorted-set type: a length byte (253 NaN, 254 +inf, 255 -inf) and text.
    fn text_score(&mut self) -> Result<f64, RdbError> {
        match self.byte()? {
            253 => Err(RdbError::BadData),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            len => parse_score(self.take(usize::from(len))?),
        }
    }
}
