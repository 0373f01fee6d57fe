//! The typed values a key can hold.

use crate::stm::StmEntry;
use bytes::Bytes;
use std::collections::VecDeque;

pub type HashValue = hashbrown::HashMap<Bytes, Bytes, ahash::RandomState>;
pub type SetValue = hashbrown::HashSet<Bytes, ahash::RandomState>;

/// One key's value. Strings and collection members are `Bytes` copied out of the read buffer, so a
/// stored value never keeps a whole request buffer alive.
#[derive(Debug)]
pub enum Value {
    Str(Bytes),
    List(VecDeque<Bytes>),
    Hash(HashValue),
    Set(SetValue),
    Stm(Box<StmEntry>),
}

impl Value {
    /// The name TYPE and `SCAN … TYPE` use.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::Stm(_) => "stm",
        }
    }
}
