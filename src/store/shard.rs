//! One shard's table of keys: hashbrown's `HashTable` of 8-byte pointers, each to a [`Node`], one
//! heap block sized exactly for a key's [`Entry`] and its name (what Redis keeps in a dictEntry
//! and the key's sds, in one block).
//!
//! Why not `(name, Entry)` slots in the table itself: a table has room for a quarter to a half of
//! its slots again as empty ones, and 72-byte slots made that room cost more than a key's own
//! data (a 100,000-key database's tables took ~105 bytes per key). 8-byte slots leave ~13 bytes
//! per key of table; a key of up to 15 bytes then takes one 64-byte block.

use super::Entry;
use hashbrown::hash_table::{self, HashTable};
use std::alloc::{self, Layout};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

pub(super) type Hasher = ahash::RandomState;

/// Where a node's name length starts: right after the entry.
const LENGTH_AT: usize = size_of::<Entry>();
/// A name length below this takes one byte; a longer one this marker byte and 8 more.
const LONG_LENGTH: u8 = u8::MAX;

/// A key's entry and name in one heap block: `[Entry][length: 1 or 9 bytes][name]`. Owns its
/// block as a `Box` would.
pub(super) struct Node(NonNull<Entry>);

// SAFETY: a `Node` is the only pointer to its block, which it owns and frees as a `Box<Entry>`
// would its value; `Entry` is `Send + Sync`, so sending or sharing a `Node` is as sound as
// sending or sharing a `Box<Entry>`.
unsafe impl Send for Node {}
// SAFETY: as for `Send` above.
unsafe impl Sync for Node {}

/// The bytes a name of `len` bytes takes in a node, with its length.
fn name_bytes(len: usize) -> usize {
    if len < usize::from(LONG_LENGTH) {
        1 + len
    } else {
        9 + len
    }
}

/// The block of a node whose name has `len` bytes.
fn layout(len: usize) -> Layout {
    Layout::from_size_align(LENGTH_AT + name_bytes(len), align_of::<Entry>())
        .expect("a key's length fits in memory")
}

impl Node {
    pub fn new(name: &[u8], entry: Entry) -> Node {
        let layout = layout(name.len());
        // SAFETY: the layout's size is at least that of an `Entry`, so not zero.
        let Some(block) = NonNull::new(unsafe { alloc::alloc(layout) }) else {
            alloc::handle_alloc_error(layout)
        };
        // SAFETY: the block is `layout.size()` bytes aligned for `Entry`: the entry goes at its
        // start, the length right after it and the name after the length, which is exactly
        // `layout.size()` bytes in all; the length is written unaligned.
        unsafe {
            block.cast::<Entry>().as_ptr().write(entry);
            let mut at = block.as_ptr().add(LENGTH_AT);
            if name.len() < usize::from(LONG_LENGTH) {
                at.write(name.len() as u8);
                at = at.add(1);
            } else {
                at.write(LONG_LENGTH);
                at.add(1)
                    .cast::<[u8; 8]>()
                    .write_unaligned((name.len() as u64).to_le_bytes());
                at = at.add(9);
            }
            std::ptr::copy_nonoverlapping(name.as_ptr(), at, name.len());
        }
        Node(block.cast())
    }

    pub fn entry(&self) -> &Entry {
        // SAFETY: `new` wrote an entry at the start of the block, which lives as long as `self`.
        unsafe { self.0.as_ref() }
    }

    pub fn entry_mut(&mut self) -> &mut Entry {
        // SAFETY: as in `entry`; `&mut self` makes this the only reference to it.
        unsafe { self.0.as_mut() }
    }

    pub fn name(&self) -> &[u8] {
        // SAFETY: `new` wrote the length at `LENGTH_AT` (one byte, or the marker and 8 bytes)
        // and that many name bytes right after it, all inside the block, which lives as long as
        // `self` and is never written through a shared reference.
        unsafe {
            let at = self.0.as_ptr().cast::<u8>().add(LENGTH_AT);
            let short = at.read();
            if short != LONG_LENGTH {
                std::slice::from_raw_parts(at.add(1), usize::from(short))
            } else {
                let len = u64::from_le_bytes(at.add(1).cast::<[u8; 8]>().read_unaligned());
                std::slice::from_raw_parts(at.add(9), len as usize)
            }
        }
    }

    /// Frees the block and gives back the entry.
    pub fn into_entry(self) -> Entry {
        let node = ManuallyDrop::new(self);
        let layout = layout(node.name().len());
        // SAFETY: the entry is read out once and the block freed with the layout it was
        // allocated with; `ManuallyDrop` keeps `Drop` from dropping or freeing either again.
        unsafe {
            let entry = node.0.as_ptr().read();
            alloc::dealloc(node.0.as_ptr().cast(), layout);
            entry
        }
    }

    /// The heap bytes of a node named `name`, as the allocator is asked for them.
    #[cfg(test)]
    pub fn block_size(name: &[u8]) -> usize {
        layout(name.len()).size()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let layout = layout(self.name().len());
        // SAFETY: the entry was written by `new` and is dropped once, here; then the block is
        // freed with the layout it was allocated with. Nothing uses the node afterwards.
        unsafe {
            std::ptr::drop_in_place(self.0.as_ptr());
            alloc::dealloc(self.0.as_ptr().cast(), layout);
        }
    }
}

/// The keys of one shard. Lookups take the key's hash from the caller (one hash per key per
/// command); the table rehashes names with `hasher` when it grows.
pub(super) struct Shard {
    table: HashTable<Node>,
    hasher: Hasher,
    /// No key of the shard expires before this (Unix ms; `u64::MAX`: none has an expiry). Every
    /// write of an expiry lowers it, the expiry cycle sets it exactly after a sweep, and skips
    /// the shard until then: a bound, never later than the earliest expiry.
    expiry_bound: u64,
    /// The shard's hashes with field TTLs, by their earliest ([`super::field_expiry`]).
    pub fields: super::field_expiry::FieldQueue,
}

impl Shard {
    pub fn new(hasher: Hasher) -> Shard {
        Shard {
            table: HashTable::new(),
            hasher,
            expiry_bound: u64::MAX,
            fields: Default::default(),
        }
    }

    /// See [`Shard::expiry_bound`]'s field.
    pub fn expiry_bound(&self) -> u64 {
        self.expiry_bound
    }

    /// A key of the shard now expires at `at` (0: never).
    pub fn note_expiry(&mut self, at: u64) {
        if at != 0 {
            self.expiry_bound = self.expiry_bound.min(at);
        }
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    pub fn find(&self, hash: u64, name: &[u8]) -> Option<&Node> {
        self.table.find(hash, |n| n.name() == name)
    }

    /// The slot of `name`: its node, or where a new one goes (one probe for both).
    pub fn slot(&mut self, hash: u64, name: &[u8]) -> hash_table::Entry<'_, Node> {
        let hasher = &self.hasher;
        self.table
            .entry(hash, |n| n.name() == name, |n| hasher.hash_one(n.name()))
    }

    /// The slot of `name` if it is there, to read, change or remove (one probe for all three).
    pub fn occupied(
        &mut self,
        hash: u64,
        name: &[u8],
    ) -> Option<hash_table::OccupiedEntry<'_, Node>> {
        self.table.find_entry(hash, |n| n.name() == name).ok()
    }

    /// Removes the node of `name`; a hash's entry in the field-expiry queue goes with it.
    pub fn remove(&mut self, hash: u64, name: &[u8]) -> Option<Node> {
        let node = self
            .table
            .find_entry(hash, |n| n.name() == name)
            .ok()?
            .remove()
            .0;
        self.fields.forget(hash, &node.entry().value);
        Some(node)
    }

    /// The node of `name` if it is there and not `expired`; an expired one is removed (with
    /// its field-expiry queue entry) and given back as `Err(Some(node))` unless `keep_expired`
    /// (then `Err(None)`).
    pub fn live(
        &mut self,
        hash: u64,
        name: &[u8],
        expired: impl FnOnce(&Node) -> bool,
        keep_expired: bool,
    ) -> Option<Result<&mut Node, Option<Node>>> {
        let found = self.table.find_entry(hash, |n| n.name() == name).ok()?;
        if !expired(found.get()) {
            return Some(Ok(found.into_mut()));
        }
        if keep_expired {
            return Some(Err(None));
        }
        let node = found.remove().0;
        self.fields.forget(hash, &node.entry().value);
        Some(Err(Some(node)))
    }

    /// The first node of key hash `hash` that `matches` (the field-expiry queue, which knows
    /// its hashes by key hash only).
    pub fn find_mut(
        &mut self,
        hash: u64,
        mut matches: impl FnMut(&Node) -> bool,
    ) -> Option<&mut Node> {
        self.table.find_mut(hash, |n| matches(n))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Node> {
        self.table.iter()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Node> {
        self.table.iter_mut()
    }

    /// Drops the nodes expired at `now`, passing each to `expired` first, and sets the expiry
    /// bound to the earliest expiry left; returns how many were dropped.
    pub fn remove_expired(&mut self, now: u64, mut expired: impl FnMut(&Node)) -> usize {
        let (mut removed, mut earliest) = (0, u64::MAX);
        let (fields, hasher) = (&mut self.fields, &self.hasher);
        self.table.retain(|node| {
            let at = node.entry().expire_at();
            if at == 0 {
                true
            } else if at <= now {
                expired(node);
                if matches!(&node.entry().value, super::Value::Hash(h) if h.queued() != 0) {
                    fields.forget(hasher.hash_one(node.name()), &node.entry().value);
                }
                removed += 1;
                false
            } else {
                earliest = earliest.min(at);
                true
            }
        });
        self.expiry_bound = earliest;
        removed
    }

    /// Removes every node, and gives the table's memory back.
    pub fn drain(&mut self) -> impl Iterator<Item = Node> {
        self.expiry_bound = u64::MAX;
        self.fields.clear();
        std::mem::replace(&mut self.table, HashTable::new()).into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Value;

    fn entry(v: &str) -> Entry {
        Entry {
            value: Value::Str(v.into()),
            expire_at: 7,
            stamp: 0,
        }
    }

    #[test]
    fn a_node_keeps_its_name_and_entry_of_any_length() {
        for len in [0, 1, 15, 254, 255, 256, 70_000] {
            let name: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut node = Node::new(&name, entry("v"));
            assert_eq!(node.name(), &name[..], "length {len}");
            node.entry_mut().expire_at = 9;
            assert_eq!(node.entry().expire_at, 9);
            let back = node.into_entry();
            assert!(matches!(back.value, Value::Str(v) if v == "v"));
        }
    }

    #[test]
    fn a_short_key_takes_one_64_byte_block() {
        // 48 bytes of entry, a length byte and up to 15 name bytes: jemalloc's 64-byte class.
        assert_eq!(size_of::<Node>(), 8);
        assert_eq!(Node::block_size(b"h:000000012345"), 63);
        assert_eq!(Node::block_size(&[b'k'; 15]), 64);
        assert_eq!(Node::block_size(&[b'k'; 255]), 48 + 9 + 255);
    }

    #[test]
    fn the_table_finds_inserts_removes_and_survives_growth() {
        let hasher = Hasher::new();
        let mut shard = Shard::new(hasher.clone());
        for i in 0..1000 {
            let name = format!("key:{i}");
            let hash = hasher.hash_one(name.as_bytes());
            let mut entry = entry(&name);
            if name.ends_with('7') {
                entry.expire_at = 100 + i;
            }
            shard.note_expiry(entry.expire_at);
            match shard.slot(hash, name.as_bytes()) {
                hash_table::Entry::Vacant(v) => {
                    v.insert(Node::new(name.as_bytes(), entry));
                }
                hash_table::Entry::Occupied(_) => panic!("{name} twice"),
            }
        }
        assert_eq!(shard.len(), 1000);
        for i in 0..1000 {
            let name = format!("key:{i}");
            let hash = hasher.hash_one(name.as_bytes());
            let found = shard.find(hash, name.as_bytes()).map(Node::entry);
            assert!(
                matches!(found, Some(e) if matches!(&e.value, Value::Str(v) if v == name.as_str()))
            );
        }
        let hash = hasher.hash_one(b"key:5".as_slice());
        assert!(shard.remove(hash, b"key:5").is_some());
        assert!(shard.find(hash, b"key:5").is_none());
        assert_eq!(shard.expiry_bound(), 7);
        let mut expired = 0;
        assert_eq!(shard.remove_expired(8, |_| expired += 1), 899);
        assert_eq!(expired, 899);
        assert_eq!(shard.len(), 100, "the keys ending in 7 expire later");
        assert_eq!(
            shard.expiry_bound(),
            107,
            "key:7's expiry, the earliest left"
        );
        assert_eq!(shard.drain().count(), 100);
        assert!(shard.is_empty());
    }
}
