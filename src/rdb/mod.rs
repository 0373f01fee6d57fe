//! Redis's serialization of values (the RDB value encoding), as DUMP and RESTORE exchange it.
//!
//! A DUMP payload is `<type byte><value><RDB version, 2 bytes LE><CRC64 of all before, 8 bytes LE>`.
//! [`seal`] and [`unseal`] own the footer and know nothing of values, so other payloads in the same
//! envelope (FUNCTION DUMP) can share them; [`encode_value`] and [`decode_value`] own the values.
//!
//! We write the encodings of RDB version 10 (Redis 7.0), which Redis 7.0 and 7.2 both read, and
//! read every encoding either of them writes for the types stmd stores, plus the older ziplist
//! forms. STM entries get a type byte of our own ([`TYPE_STM`]) that Redis refuses.

mod decode;
mod encode;
pub mod file;
#[cfg(test)]
mod fixtures;
mod json;
mod listpack;
pub mod lzf;
mod stm;
mod stream;

pub use decode::{decode_value, RdbReader};
pub use encode::{encode_value, put_len};

use crc::{Crc, CRC_64_REDIS};
use thiserror::Error;

/// The RDB version our payloads carry: Redis 7.0's, so 7.0 accepts them (it refuses newer ones).
pub const RDB_VERSION: u16 = 10;
/// The newest version we read: Redis 7.4's, whose only new encodings are the hashes with field
/// TTLs ([`types::HASH_METADATA`], [`types::HASH_LISTPACK_EX`]).
pub const MAX_READ_VERSION: u16 = 12;

/// Redis's CRC64 (Jones polynomial, reflected), over the type byte, value and version.
const CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

/// Value type bytes, as Redis numbers them.
pub mod types {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    pub const SET_LISTPACK: u8 = 20;
    pub const STREAM_LISTPACKS_3: u8 = 21;
    /// Redis 7.4's hashes with field TTLs: the large form (pairs with a TTL each) and the
    /// listpack form (field, value, TTL triplets). Written only for hashes that hold TTLs, so
    /// every other payload stays readable by Redis 7.0 and 7.2.
    pub const HASH_METADATA: u8 = 24;
    pub const HASH_LISTPACK_EX: u8 = 25;
    /// A module value (RDB_TYPE_MODULE_2): JSON documents, as RedisJSON's type.
    pub const MODULE_2: u8 = 7;
    /// Ours: an STM entry. Far above Redis's value types (21 in 7.2) and below its RDB opcodes
    /// (0xF5 and up), so Redis answers `Bad data format` and no Redis type will collide soon.
    pub const STM: u8 = 200;
}
pub use types::STM as TYPE_STM;

/// Why a payload was refused; RESTORE turns each into Redis's error text.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RdbError {
    /// The footer is missing, the version is newer than we read, or the checksum is wrong.
    #[error("DUMP payload version or checksum are wrong")]
    Footer,
    /// The value itself cannot be read (unknown type, truncated, inconsistent, empty).
    #[error("Bad data format")]
    BadData,
}

/// Appends the footer (RDB version and CRC64) to a serialized value.
pub fn seal(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// RESTORE and RDB loads skip the CRC64 check while set (DEBUG SET-SKIP-CHECKSUM-VALIDATION).
pub static SKIP_CHECKSUM: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True while DEBUG SET-SKIP-CHECKSUM-VALIDATION 1 is in force: RESTORE payloads and RDB files are
/// read without checking their CRC64, as in Redis.
pub fn skip_checksum() -> bool {
    SKIP_CHECKSUM.load(std::sync::atomic::Ordering::Relaxed)
}

/// Checks a payload's footer as Redis's `verifyDumpPayload` does and returns the body before it.
pub fn unseal(payload: &[u8]) -> Result<&[u8], RdbError> {
    if payload.len() < 10 {
        return Err(RdbError::Footer);
    }
    let (signed, crc) = payload.split_at(payload.len() - 8);
    let (body, version) = signed.split_at(signed.len() - 2);
    if u16::from_le_bytes([version[0], version[1]]) > MAX_READ_VERSION {
        return Err(RdbError::Footer);
    }
    let expected = u64::from_le_bytes(crc.try_into().map_err(|_| RdbError::Footer)?);
    if !skip_checksum() && CRC64.checksum(signed) != expected {
        return Err(RdbError::Footer);
    }
    Ok(body)
}

/// Serializes a value into a complete DUMP payload.
pub fn dump(value: &crate::store::Value) -> Vec<u8> {
    seal(encode_value(value))
}

/// Reads a complete DUMP payload back into a value, compact within `limits`.
pub fn restore(
    payload: &[u8],
    limits: &crate::store::encoding::Limits,
) -> Result<crate::store::Value, RdbError> {
    decode_value(unseal(payload)?, limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_is_redis_crc64() {
        // Redis's crc64.c self-test: crc64(0, "123456789") = 0xe9c6d914c4b8d9ca.
        assert_eq!(CRC64.checksum(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn seal_and_unseal_round_trip_and_catch_damage() {
        let sealed = seal(b"\x00\x03abc".to_vec());
        assert_eq!(unseal(&sealed), Ok(&b"\x00\x03abc"[..]));
        let mut flipped = sealed.clone();
        flipped[2] ^= 1;
        assert_eq!(unseal(&flipped), Err(RdbError::Footer));
        assert_eq!(unseal(&sealed[..9]), Err(RdbError::Footer));
        let mut newer = b"\x00\x03abc".to_vec();
        newer.extend_from_slice(&13u16.to_le_bytes());
        let crc = CRC64.checksum(&newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(unseal(&newer), Err(RdbError::Footer));
    }
}
