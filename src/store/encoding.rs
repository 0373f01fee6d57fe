//! The encoding names OBJECT ENCODING reports, chosen by Redis 7.2's rules and thresholds
//! (`hash-max-listpack-entries` and friends, live through CONFIG SET).
//!
//! The name is judged from the value and these thresholds, not from stmd's own layout (small
//! hashes and sets are packed, small sorted sets a vector: see `hash.rs`, `set.rs`, `zset.rs`,
//! which convert by the same thresholds); a threshold changes no reply. Redis never
//! turns a hashtable, skiplist or hashtable-set back into a compact form when it shrinks: an
//! entry remembers that it outgrew its compact form (a bit in its stamp, see
//! [`super::Entry::outgrown`]), judged by element counts before every write.

use super::value::Value;
use crate::config::values::Thresholds;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// Redis's defaults (the configuration's too: a test keeps them equal).
pub const DEFAULTS: Thresholds = Thresholds {
    hash_max_listpack_entries: 512,
    hash_max_listpack_value: 64,
    set_max_intset_entries: 512,
    set_max_listpack_entries: 128,
    set_max_listpack_value: 64,
    zset_max_listpack_entries: 128,
    zset_max_listpack_value: 64,
    list_max_listpack_size: -2,
    list_compress_depth: 0,
};

/// The count thresholds the store checks before every write (the rest are read from the config
/// when OBJECT ENCODING asks). Relaxed atomics: a CONFIG SET is seen by the next write.
#[derive(Debug)]
pub struct Limits {
    hash_entries: AtomicU64,
    hash_value: AtomicU64,
    set_intset_entries: AtomicU64,
    set_listpack_entries: AtomicU64,
    set_listpack_value: AtomicU64,
    zset_entries: AtomicU64,
    zset_value: AtomicU64,
    list_size: AtomicI64,
}

impl Default for Limits {
    fn default() -> Self {
        let limits = Limits {
            hash_entries: AtomicU64::new(0),
            hash_value: AtomicU64::new(0),
            set_intset_entries: AtomicU64::new(0),
            set_listpack_entries: AtomicU64::new(0),
            set_listpack_value: AtomicU64::new(0),
            zset_entries: AtomicU64::new(0),
            zset_value: AtomicU64::new(0),
            list_size: AtomicI64::new(0),
        };
        limits.configure(&DEFAULTS);
        limits
    }
}

/// How large a collection's packed form may grow: most elements, longest element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactLimit {
    pub entries: usize,
    pub value: usize,
}

/// How large a set's packed form may grow: as a listpack, or (integers only) as an intset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetLimit {
    pub listpack: CompactLimit,
    pub intset_entries: usize,
}

impl CompactLimit {
    /// Whether a compact form may hold `entries` elements whose longest is `longest` bytes.
    pub fn holds(&self, entries: usize, longest: usize) -> bool {
        entries <= self.entries && longest <= self.value
    }
}

fn get(limit: &AtomicU64) -> usize {
    usize::try_from(limit.load(Relaxed)).unwrap_or(usize::MAX)
}

impl Limits {
    /// A hash's packed form: `hash-max-listpack-entries|value`.
    pub fn hash(&self) -> CompactLimit {
        CompactLimit {
            entries: get(&self.hash_entries),
            value: get(&self.hash_value),
        }
    }

    /// A sorted set's small form: `zset-max-listpack-entries|value`.
    pub fn zset(&self) -> CompactLimit {
        CompactLimit {
            entries: get(&self.zset_entries),
            value: get(&self.zset_value),
        }
    }

    /// A set's packed form: `set-max-listpack-entries|value`, `set-max-intset-entries`.
    pub fn set(&self) -> SetLimit {
        SetLimit {
            listpack: CompactLimit {
                entries: get(&self.set_listpack_entries),
                value: get(&self.set_listpack_value),
            },
            intset_entries: get(&self.set_intset_entries),
        }
    }

    pub fn configure(&self, t: &Thresholds) {
        self.hash_entries
            .store(t.hash_max_listpack_entries, Relaxed);
        self.hash_value.store(t.hash_max_listpack_value, Relaxed);
        self.set_intset_entries
            .store(t.set_max_intset_entries, Relaxed);
        self.set_listpack_entries
            .store(t.set_max_listpack_entries, Relaxed);
        self.set_listpack_value
            .store(t.set_max_listpack_value, Relaxed);
        self.zset_entries
            .store(t.zset_max_listpack_entries, Relaxed);
        self.zset_value.store(t.zset_max_listpack_value, Relaxed);
        self.list_size.store(t.list_max_listpack_size, Relaxed);
    }

    /// True when `value` has more elements than its compact form may hold, so Redis would have
    /// converted it for good. O(1): counts, and for a set between the listpack and intset
    /// limits, whether its first and last members are integers (an intset may hold more members
    /// than a listpack). A set with a string member somewhere in the middle is missed until the
    /// read: OBJECT ENCODING still judges the whole value.
    pub fn outgrown(&self, value: &Value) -> bool {
        let over = |len: usize, limit: &AtomicU64| len as u64 > limit.load(Relaxed);
        match value {
            Value::Hash(h) => over(h.len(), &self.hash_entries),
            Value::Set(s) => {
                let ints_at_ends = || {
                    [s.iter().next(), s.iter().last()]
                        .into_iter()
                        .all(|m| m.is_some_and(is_int_encodable))
                };
                over(s.len(), &self.set_intset_entries)
                    || (over(s.len(), &self.set_listpack_entries) && !ints_at_ends())
            }
            Value::ZSet(z) => over(z.len(), &self.zset_entries),
            _ => false,
        }
    }
}

/// Redis's name for the encoding of `value`; `outgrown` says it once outgrew its compact form.
pub fn name(value: &Value, outgrown: bool, t: &Thresholds) -> &'static str {
    let short = |len: usize, limit: u64| len as u64 <= limit;
    match value {
        // `outgrown` on a string: Redis made it from text without trying an integer.
        Value::Str(s) if !outgrown && is_int_encodable(s) => "int",
        Value::Str(s) if s.len() <= 44 => "embstr",
        Value::Str(_) => "raw",
        Value::List(list) => {
            let fits = if t.list_max_listpack_size >= 0 {
                short(list.len(), t.list_max_listpack_size as u64)
            } else {
                let shift = (-t.list_max_listpack_size).clamp(1, 5) - 1;
                let limit = 4096u64 << shift;
                listpack_bytes(list.iter().map(|b| &b[..])) <= limit
            };
            if fits {
                "listpack"
            } else {
                "quicklist"
            }
        }
        Value::Hash(h) => {
            let compact = !outgrown
                && short(h.len(), t.hash_max_listpack_entries)
                && h.iter().all(|(f, v)| {
                    short(f.len(), t.hash_max_listpack_value)
                        && short(v.len(), t.hash_max_listpack_value)
                });
            match (compact, h.has_ttls()) {
                // Redis 7.4's listpack with a TTL beside each pair.
                (true, true) => "listpackex",
                (true, false) => "listpack",
                (false, _) => "hashtable",
            }
        }
        Value::Set(s) => {
            let all_ints = s.iter().all(is_int_encodable);
            if !outgrown && all_ints && short(s.len(), t.set_max_intset_entries) {
                "intset"
            } else if !outgrown
                && short(s.len(), t.set_max_listpack_entries)
                && s.iter().all(|m| short(m.len(), t.set_max_listpack_value))
            {
                "listpack"
            } else {
                "hashtable"
            }
        }
        Value::ZSet(z) => {
            let compact = !outgrown
                && short(z.len(), t.zset_max_listpack_entries)
                && z.iter()
                    .all(|(m, _)| short(m.len(), t.zset_max_listpack_value));
            if compact {
                "listpack"
            } else {
                "skiplist"
            }
        }
        Value::Stm(_) => "stm",
        Value::Stream(_) => "stream",
        // Redis's name for every module value.
        Value::Json(_) => "raw",
    }
}

/// Whether Redis stores this string as an integer: at most 20 bytes that read back as the same
/// `i64` (no sign on zero, no leading zeros or spaces).
pub fn is_int_encodable(s: &[u8]) -> bool {
    s.len() <= 20
        && std::str::from_utf8(s)
            .ok()
            .and_then(|text| text.parse::<i64>().ok())
            .is_some_and(|n| n.to_string().as_bytes() == s)
}

/// The bytes a listpack of these elements takes, as Redis lays it out: a 6-byte header, one
/// entry per element (integer or string encoding, then its back-length), one end byte.
fn listpack_bytes<'a>(elements: impl Iterator<Item = &'a [u8]>) -> u64 {
    let mut total = 7u64;
    for element in elements {
        let body = match int_value(element) {
            Some(n) if (0..=127).contains(&n) => 1,
            Some(n) if (-4096..4096).contains(&n) => 2,
            Some(n) if i16::try_from(n).is_ok() => 3,
            Some(n) if (-(1 << 23)..(1 << 23)).contains(&n) => 4,
            Some(n) if i32::try_from(n).is_ok() => 5,
            Some(_) => 9,
            None => {
                let len = element.len() as u64;
                len + match len {
                    0..=63 => 1,
                    64..=4095 => 2,
                    _ => 5,
                }
            }
        };
        let back = match body {
            0..=127 => 1,
            128..=16383 => 2,
            16384..=2097151 => 3,
            2097152..=268435455 => 4,
            _ => 5,
        };
        total += body + back;
    }
    total
}

fn int_value(s: &[u8]) -> Option<i64> {
    is_int_encodable(s).then(|| std::str::from_utf8(s).ok()?.parse().ok())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_as_redis_names_them() {
        let name_of = |s: &'static [u8]| name(&Value::Str(s.into()), false, &DEFAULTS);
        assert_eq!(name_of(b"12345"), "int");
        assert_eq!(name_of(b"-9223372036854775808"), "int");
        assert_eq!(name_of(b"0123"), "embstr");
        assert_eq!(name_of(b"-0"), "embstr");
        assert_eq!(name_of(b" 1"), "embstr");
        assert_eq!(name_of(b"9223372036854775808"), "embstr");
        assert_eq!(name_of(&[b'a'; 44]), "embstr");
        assert_eq!(name_of(&[b'a'; 45]), "raw");
    }

    #[test]
    fn listpack_sizes_follow_the_entry_encodings() {
        // Header 6 + end 1, then per entry body + back-length.
        assert_eq!(listpack_bytes([&b"5"[..]].into_iter()), 7 + 2);
        assert_eq!(listpack_bytes([&b"1000"[..]].into_iter()), 7 + 3);
        assert_eq!(listpack_bytes([&b"abc"[..]].into_iter()), 7 + 5);
        assert_eq!(listpack_bytes([&[b'x'; 64][..]].into_iter()), 7 + 66 + 1);
        assert_eq!(listpack_bytes([&[b'x'; 200][..]].into_iter()), 7 + 202 + 2);
    }

    #[test]
    fn defaults_are_the_configs() {
        assert_eq!(
            crate::config::Config::default().encoding_thresholds(),
            DEFAULTS
        );
    }

    #[test]
    fn outgrown_counts_only() {
        let limits = Limits::default();
        let mut set = crate::store::value::Set::default();
        for i in 0..512 {
            set.insert(i.to_string().as_bytes(), limits.set());
        }
        assert!(!limits.outgrown(&Value::Set(set.clone())));
        set.insert(b"one more", limits.set());
        assert!(limits.outgrown(&Value::Set(set)));
    }
}
