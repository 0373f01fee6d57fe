//! DEBUG DIGEST and DIGEST-VALUE: a SHA1 fingerprint of the dataset computed as Redis's
//! `debug.c` does, so the same data gives the same 40 hex digits on stmd and on Redis ("is this
//! replica equal to its primary?" is one comparison).
//!
//! Two operations: *xor* (SHA1 of the bytes, xored in: order does not matter, for the elements of
//! sets and hashes and for the keys) and *mix* (xor, then the digest becomes the SHA1 of itself:
//! order matters, for list elements, stream entries and the parts of one element).

use super::{Entry, Value};
use sha1::{Digest, Sha1};

/// Twenty bytes of digest.
pub type Sum = [u8; 20];

/// Redis's type numbers (`OBJ_STRING`…), which go into each value's digest.
const OBJ_STRING: u32 = 0;
const OBJ_LIST: u32 = 1;
const OBJ_SET: u32 = 2;
const OBJ_ZSET: u32 = 3;
const OBJ_HASH: u32 = 4;
const OBJ_STREAM: u32 = 6;
/// STM entries have no Redis type: a number Redis does not use, so they never collide with one.
const STM_TYPE: u32 = 0x5354_4d00;
/// Redis's OBJ_MODULE (a JSON document is RedisJSON's module value).
const OBJ_MODULE: u32 = 5;

fn xor(sum: &mut Sum, data: &[u8]) {
    let hash = Sha1::digest(data);
    for (byte, h) in sum.iter_mut().zip(hash.iter()) {
        *byte ^= h;
    }
}

fn mix(sum: &mut Sum, data: &[u8]) {
    xor(sum, data);
    let again = Sha1::digest(&sum[..]);
    sum.copy_from_slice(&again);
}

/// The digest of one element made of ordered parts (a hash's field and value, a sorted set's
/// member and score), added to `sum` as Redis does (the SHA1 of the element's digest, xored).
fn xor_pair(sum: &mut Sum, first: &[u8], second: &[u8]) {
    let mut element = [0u8; 20];
    mix(&mut element, first);
    mix(&mut element, second);
    xor(sum, &element);
}

/// Mixes a value's type and contents into `sum`, and marks an expiry (Redis's `xorObjectDigest`).
pub fn value_into(sum: &mut Sum, entry: &Entry) {
    let kind = match &entry.value {
        Value::Str(_) => OBJ_STRING,
        Value::List(_) => OBJ_LIST,
        Value::Set(_) => OBJ_SET,
        Value::ZSet(_) => OBJ_ZSET,
        Value::Hash(_) => OBJ_HASH,
        Value::Stream(_) => OBJ_STREAM,
        Value::Stm(_) => STM_TYPE,
        Value::Json(_) => OBJ_MODULE,
    };
    mix(sum, &kind.to_be_bytes());
    match &entry.value {
        Value::Str(bytes) => mix(sum, bytes.as_bytes()),
        Value::List(items) => items.iter().for_each(|item| mix(sum, item)),
        Value::Set(set) => set.iter().for_each(|member| xor(sum, member)),
        Value::ZSet(z) => {
            for (member, score) in z.iter() {
                // 7.2 prints scores in their shortest round-trip form, as its replies do.
                xor_pair(
                    sum,
                    member,
                    crate::protocol::format_double(score).as_bytes(),
                );
            }
        }
        Value::Hash(hash) => hash.iter().for_each(|(f, v)| xor_pair(sum, f, v)),
        Value::Stream(stream) => {
            // Entries in order as `<ms>.<seq>` and their fields and values; groups are left out,
            // as Redis leaves them out.
            for (id, fields) in stream.iter() {
                mix(sum, format!("{}.{}", id.ms, id.seq).as_bytes());
                fields.for_each(|item| mix(sum, item));
            }
        }
        // The document's compact text: equal documents, equal digests.
        Value::Json(doc) => mix(sum, doc.text()),
        Value::Stm(stm) => {
            // What STM.CONTEXT reads back: the messages in order, the summary, the categories.
            for message in stm.messages().iter() {
                mix(sum, message.role.as_str().as_bytes());
                mix(sum, message.speaker.unwrap_or("").as_bytes());
                mix(sum, message.content.as_bytes());
            }
            mix(sum, stm.summary().unwrap_or("").as_bytes());
            for (slug, text) in stm.categories() {
                xor_pair(sum, slug.as_bytes(), text.as_bytes());
            }
        }
    }
    if entry.expire_at() != 0 {
        xor(sum, b"!!expire!!");
    }
}

/// One key's share of the dataset digest: its name mixed with its value's digest.
pub fn key_digest(name: &[u8], entry: &Entry) -> Sum {
    let mut sum = [0u8; 20];
    mix(&mut sum, name);
    value_into(&mut sum, entry);
    sum
}

/// Adds a key's digest to a database's running total (xor of its SHA1: the keys' order does not
/// matter).
pub fn add(total: &mut Sum, key: &Sum) {
    xor(total, key);
}

/// Folds one non-empty database's total into the dataset digest: its index is mixed in first, so
/// the same data in another database digests differently. `keys` is the plain xor of the keys'
/// [`add`]s made from zero, so xoring it in equals adding each key here.
pub fn add_database(dataset: &mut Sum, db: usize, keys: &Sum) {
    mix(dataset, &(db as u32).to_be_bytes());
    for (byte, k) in dataset.iter_mut().zip(keys.iter()) {
        *byte ^= k;
    }
}

/// Forty lowercase hex digits.
pub fn hex(sum: &Sum) -> String {
    use std::fmt::Write;
    sum.iter().fold(String::with_capacity(40), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_order_dependent_and_xor_is_not() {
        let (mut a, mut b) = ([0u8; 20], [0u8; 20]);
        mix(&mut a, b"x");
        mix(&mut a, b"y");
        mix(&mut b, b"y");
        mix(&mut b, b"x");
        assert_ne!(a, b);
        let (mut c, mut d) = ([0u8; 20], [0u8; 20]);
        xor(&mut c, b"x");
        xor(&mut c, b"y");
        xor(&mut d, b"y");
        xor(&mut d, b"x");
        assert_eq!(c, d);
        assert_eq!(hex(&[0u8; 20]), "0".repeat(40));
    }
}
