//! The typed values a key can hold.

use super::stream::Stream;
use super::zset::ZSet;
use crate::stm::StmEntry;
use bytes::Bytes;
use std::collections::VecDeque;

pub use super::hash::Hash;
pub use super::set::Set;

/// One key's value. Strings and collection members are `Bytes` copied out of the read buffer, so a
/// stored value never keeps a whole request buffer alive.
#[derive(Debug)]
pub enum Value {
    Str(Bytes),
    List(VecDeque<Bytes>),
    // Not boxed: a hash or set is one buffer and a count while small (its map form is boxed inside).
    Hash(Hash),
    Set(Set),
    // Boxed, like ZSet and Stm, so that every slot of the keyspace stays small: a slot holds the
    // largest variant, and an unboxed index map would make every string key pay for it.
    ZSet(Box<ZSet>),
    Stm(Box<StmEntry>),
    Stream(Box<Stream>),
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
        }
    }
}
