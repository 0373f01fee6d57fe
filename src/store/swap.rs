//! SWAPDB: two databases trade contents. Every database shares one hasher, so a key sits in the
//! same shard of each, and swapping the two shard tables index by index (under both databases'
//! full locks) moves every key at once without rehashing anything.

use super::{Locked, Value, SHARDS};
use std::sync::atomic::Ordering;

/// Why a swap could not run: the caller did not lock every shard of both databases.
#[derive(Debug)]
pub struct NotFullyLocked;

/// Swaps the contents of the databases `a` and `b` hold, both locked whole (`Store::lock_all`).
/// Versions, the tag index and the keys move together; blocked clients stay with their database
/// number and are woken where a list now sits at their key, as Redis does.
pub fn swap_databases(a: &mut Locked<'_>, b: &mut Locked<'_>) -> Result<(), NotFullyLocked> {
    if a.held.len() != SHARDS || b.held.len() != SHARDS {
        return Err(NotFullyLocked);
    }
    if a.db == b.db {
        return Ok(());
    }
    for slot in 0..SHARDS {
        std::mem::swap(a.held.get_mut(slot), b.held.get_mut(slot));
    }
    for (left, right) in a.space.versions.iter().zip(b.space.versions.iter()) {
        // Both shards are locked by us: nobody else bumps these counters meanwhile.
        let held = left.0.load(Ordering::Relaxed);
        left.0
            .store(right.0.load(Ordering::Relaxed), Ordering::Relaxed);
        right.0.store(held, Ordering::Relaxed);
    }
    a.space.tags.swap_with(&b.space.tags);
    after_swap(a);
    after_swap(b);
    Ok(())
}

/// Tells WATCH the contents changed and wakes clients blocked on keys that now hold a list.
fn after_swap(side: &Locked<'_>) {
    side.space.swaps.fetch_add(1, Ordering::Relaxed);
    let waiters = &side.space.waiters;
    for key in waiters.waited_keys() {
        if matches!(
            side.peek(&key).map(|e| &e.value),
            Some(Value::List(_) | Value::ZSet(_))
        ) {
            waiters.signal(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn swapped_keys_are_found_under_their_new_database() {
        let store = Store::with_databases(4);
        let keys: Vec<String> = (0..300).map(|i| format!("key{i}")).collect();
        {
            let mut zero = store.lock_all(0);
            for k in &keys {
                zero.set(k.as_bytes(), Value::Str("v".into()), 0);
            }
        }
        let mut zero = store.lock_all(0);
        let mut three = store.lock_all(3);
        swap_databases(&mut zero, &mut three).expect("both locked whole");
        assert!(keys.iter().all(|k| zero.peek(k.as_bytes()).is_none()));
        assert!(keys.iter().all(|k| three.peek(k.as_bytes()).is_some()));
        drop((zero, three));
        assert_eq!((store.db_len(0), store.db_len(3)), (0, 300));
        let mut partial = store.lock_one(1, b"x");
        let mut whole = store.lock_all(2);
        assert!(swap_databases(&mut partial, &mut whole).is_err());
    }
}
