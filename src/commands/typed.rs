//! Typed access to collection values for the list, hash, set and sorted-set handlers: WRONGTYPE for
//! a key of another type, creation on first write, and deletion of a collection that became empty
//! (Redis never keeps an empty aggregate).

use super::err;
use crate::protocol::Reply;
use crate::store::value::{Hash, Set};
use crate::store::zset::ZSet;
use crate::store::{Locked, Value};
use bytes::Bytes;
use std::borrow::{Borrow, BorrowMut};
use std::collections::VecDeque;

pub type List = VecDeque<Bytes>;

pub fn wrongtype() -> Reply {
    Reply::error(err::WRONGTYPE)
}

/// Generates, for one collection type: a read accessor, a write accessor (the version changes,
/// for WATCH, only once the type is known to match), a create-on-write accessor and a
/// delete-when-empty check.
macro_rules! typed_access {
    ($get:ident, $get_mut:ident, $get_or_create:ident, $variant:ident, $ty:ty, $new:expr) => {
        pub fn $get<'l>(locked: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<&'l $ty>, Reply> {
            match locked.get(key).map(|e| &e.value) {
                None => Ok(None),
                Some(Value::$variant(v)) => Ok(Some(v.borrow())),
                Some(_) => Err(wrongtype()),
            }
        }

        pub fn $get_mut<'l>(
            locked: &'l mut Locked<'_>,
            key: &[u8],
        ) -> Result<Option<&'l mut $ty>, Reply> {
            match locked.get(key).map(|e| &e.value) {
                None => return Ok(None),
                Some(Value::$variant(_)) => {}
                Some(_) => return Err(wrongtype()),
            }
            match locked.get_mut(key).map(|e| &mut e.value) {
                Some(Value::$variant(v)) => Ok(Some(v.borrow_mut())),
                _ => Ok(None),
            }
        }

        pub fn $get_or_create<'l>(
            locked: &'l mut Locked<'_>,
            key: &[u8],
        ) -> Result<&'l mut $ty, Reply> {
            match locked.get(key).map(|e| &e.value) {
                None => {
                    locked.set(key, Value::$variant($new), 0);
                }
                Some(Value::$variant(_)) => {}
                Some(_) => return Err(wrongtype()),
            }
            match locked.get_mut(key).map(|e| &mut e.value) {
                Some(Value::$variant(v)) => Ok(v.borrow_mut()),
                _ => Err(wrongtype()),
            }
        }
    };
}

typed_access!(list, list_mut, list_or_create, List, List, Box::default());
typed_access!(hash, hash_mut, hash_or_create, Hash, Hash, Hash::default());
typed_access!(set, set_mut, set_or_create, Set, Set, Set::default());
typed_access!(
    zset,
    zset_mut,
    zset_or_create,
    ZSet,
    ZSet,
    Default::default()
);

/// Deletes `key` when it holds an empty collection (after a removal).
pub fn remove_if_empty(locked: &mut Locked<'_>, key: &[u8]) {
    let empty = match locked.get(key).map(|e| &e.value) {
        Some(Value::List(v)) => v.is_empty(),
        Some(Value::Hash(v)) => v.is_empty(),
        Some(Value::Set(v)) => v.is_empty(),
        Some(Value::ZSet(v)) => v.is_empty(),
        _ => false,
    };
    if empty {
        locked.remove(key);
    }
}
