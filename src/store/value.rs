//! The typed values a key can hold.

use super::stream::Stream;
use super::tags::Tags;
use super::zset::ZSet;
use super::CompactBytes;
use crate::stm::StmEntry;
use bytes::Bytes;
use std::collections::VecDeque;

pub use super::hash::Hash;
pub use super::set::Set;

/// One key's value, 32 bytes (see `keyspace_slots_stay_small`). Strings and collection members
/// are copied out of the read buffer, so a stored value never keeps a whole request buffer alive.
#[derive(Debug)]
pub enum Value {
    Str(CompactBytes),
    // Boxed: a deque's 32 bytes would make every key's entry pay for it.
    List(Box<VecDeque<Bytes>>),
    // Not boxed: a hash, set or sorted set is one exact buffer and a count while small (its large
    // form is boxed inside), no larger than a string.
    Hash(Hash),
    Set(Set),
    ZSet(ZSet),
    // Boxed, so that every slot of the keyspace stays small: a slot holds the largest variant,
    // and an unboxed STM entry or stream would make every string key pay for it.
    Stm(Box<StmEntry>),
    Stream(Box<Stream>),
    /// A JSON document (the JSON.* commands), boxed as the STM entry is.
    Json(Box<super::json::Doc>),
}

impl Value {
    /// The name TYPE and `SCAN … TYPE` use.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stm(_) => "stm",
            Value::Stream(_) => "stream",
            // The name RedisJSON registers its module type under, which TYPE reports.
            Value::Json(_) => "ReJSON-RL",
        }
    }

    /// The names this value is also found under, for the keyspace's tag index (see
    /// [`super::tags`]): an STM entry's owner and channel; none for the other types.
    #[inline]
    pub fn tags(&self) -> Tags<'_> {
        match self {
            Value::Stm(entry) => entry.tags(),
            _ => [None, None],
        }
    }
}
