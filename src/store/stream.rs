//! The stream type: entries ordered by a 128-bit id, plus the consumer groups. As Redis does,
//! entries live in nodes of at most `stream-node-max-entries` (100) entries, each node one packed
//! buffer ([`Node`]) in a B-tree keyed by the node's start id. The node boundaries are Redis's
//! own, so approximate trimming (`~`) removes exactly what Redis would remove.
//!
//! The data logic of the stream commands lives here and in `stream_group` (the consumer groups'
//! methods, which import this file and not the other way round):
//! it takes plain values and returns plain results or a [`StreamError`], so the command handlers
//! only parse arguments and shape replies.

pub use super::stream_node::{EntryFields, Node};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// Entries per node before a new one starts (Redis's `stream-node-max-entries` default).
pub const NODE_MAX_ENTRIES: u32 = 100;
/// A node's listpack size past which a new one starts (Redis's `stream-node-max-bytes` default).
pub const NODE_MAX_BYTES: usize = 4096;

/// The bytes an integer takes as a listpack element (encoding and back length).
pub(super) fn lp_int_size(v: i64) -> usize {
    match v {
        0..=127 => 2,
        -4096..=4095 => 3,
        _ if i16::try_from(v).is_ok() => 4,
        -8_388_608..=8_388_607 => 5,
        _ if i32::try_from(v).is_ok() => 6,
        _ => 10,
    }
}

/// The bytes `element` takes in a listpack, stored as an integer when it spells one, as
/// Redis's `lpAppend` does.
pub(super) fn lp_element_size(element: &[u8]) -> usize {
    if !element.is_empty() && element.len() <= 20 {
        if let Some(v) = std::str::from_utf8(element)
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .filter(|v| itoa::Buffer::new().format(*v).as_bytes() == element)
        {
            return lp_int_size(v);
        }
    }
    let len = element.len();
    let entry = match len {
        0..=63 => 1 + len,
        64..=4095 => 2 + len,
        _ => 5 + len,
    };
    entry
        + match entry {
            0..=127 => 1,
            128..=16382 => 2,
            16383..=2_097_150 => 3,
            2_097_151..=268_435_454 => 4,
            _ => 5,
        }
}

/// A stream entry id, `<ms>-<seq>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub fn new(ms: u64, seq: u64) -> Self {
        StreamId { ms, seq }
    }

    /// The next id, or `None` past the last possible one.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            (self.ms != u64::MAX).then(|| StreamId::new(self.ms + 1, 0))
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous id, or `None` before 0-0.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            (self.ms != 0).then(|| StreamId::new(self.ms - 1, u64::MAX))
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// `f` of the id's text (`ms-seq`), formatted on the stack: range replies print one id per
    /// entry, and `Display` costs several times as much.
    pub fn with_text<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        let mut text = [0u8; 41];
        let (mut ms, mut seq) = (itoa::Buffer::new(), itoa::Buffer::new());
        let (ms, seq) = (
            ms.format(self.ms).as_bytes(),
            seq.format(self.seq).as_bytes(),
        );
        text[..ms.len()].copy_from_slice(ms);
        text[ms.len()] = b'-';
        let end = ms.len() + 1 + seq.len();
        text[ms.len() + 1..end].copy_from_slice(seq);
        f(&text[..end])
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// One entry's field/value pairs on their way in (XADD, a load), packed as `len(varint) bytes`
/// items in one allocation.
#[derive(Clone, Debug)]
pub struct Fields(Box<[u8]>);

fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

impl Fields {
    pub fn pack<T: AsRef<[u8]>>(items: &[T]) -> Fields {
        let total: usize = items.iter().map(|i| i.as_ref().len() + 2).sum();
        let mut out = Vec::with_capacity(total);
        for item in items {
            let item = item.as_ref();
            put_varint(&mut out, item.len());
            out.extend_from_slice(item);
        }
        Fields(out.into_boxed_slice())
    }

    /// The items (field, value, field, value, …).
    pub fn iter(&self) -> FieldsIter<'_> {
        FieldsIter(&self.0)
    }
}

#[derive(Clone)]
pub struct FieldsIter<'a>(&'a [u8]);

impl<'a> Iterator for FieldsIter<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let mut len = 0usize;
        let mut shift = 0;
        let mut at = 0;
        loop {
            let byte = *self.0.get(at)?;
            at += 1;
            len |= ((byte & 0x7f) as usize) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        let item = self.0.get(at..at + len)?;
        self.0 = &self.0[at + len..];
        Some(item)
    }
}

/// A pending (delivered, not acknowledged) entry of a group.
#[derive(Clone, Debug)]
pub struct Nack {
    pub consumer: Bytes,
    pub delivery_time: u64,
    pub delivery_count: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Consumer {
    pub seen_time: u64,
    /// Last time the consumer read or claimed something; `None` until then.
    pub active_time: Option<u64>,
    pub pel: BTreeSet<StreamId>,
}

#[derive(Clone, Debug)]
pub struct Group {
    pub last_id: StreamId,
    /// [`INVALID_READ`] when unknown.
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Bytes, Consumer>,
}

/// The entries: nodes by their start (master) id; a node holds the entries from its start id up
/// to the next node's.
#[derive(Clone, Default)]
pub struct Entries {
    nodes: BTreeMap<StreamId, Node>,
    /// Live entries.
    len: usize,
}

#[derive(Clone, Default)]
pub struct Stream {
    /// Apart from the groups, so a command can read entries while it changes a group.
    pub entries: Entries,
    pub last_id: StreamId,
    /// Redis's recorded first id (0-0 when empty).
    pub first_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Bytes, Group>,
}

/// Why a stream operation refused; the command layer turns each into Redis's error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// XADD: the last id is the largest possible one.
    Exhausted,
    /// XADD: the id is not above the last one.
    IdTooSmall,
    /// XSETID: the id is below the largest deleted id.
    BelowMaxDeleted,
    /// XSETID: the id is below the last entry's.
    BelowTop,
    /// XSETID: ENTRIESADDED is below the stream's length.
    EntriesAddedBelowLength,
    /// XGROUP CREATE: the group exists.
    GroupExists,
}

/// How XADD/XTRIM trim.
#[derive(Clone, Copy, Debug)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

/// What deleting an entry (XDELEX, XACKDEL, XADD/XTRIM trimming) does about the consumer
/// groups' references to it (Redis 8.2's KEEPREF | DELREF | ACKED).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RefPolicy {
    /// Delete the entry; the groups' pending lists keep it (XDEL's way).
    #[default]
    KeepRef,
    /// Delete the entry and drop it from every group's pending list.
    DelRef,
    /// Delete the entry only when no group still needs it (see [`Stream::referenced`]).
    Acked,
}

impl Entries {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The nodes by start id (XINFO's radix-tree figures, the RDB form).
    pub fn nodes(&self) -> &BTreeMap<StreamId, Node> {
        &self.nodes
    }

    /// The node that holds `id`, if any: the last one starting at or before it.
    fn node_of(&self, id: StreamId) -> Option<(&StreamId, &Node)> {
        self.nodes.range(..=id).next_back()
    }

    /// The live entry `id`.
    pub fn get(&self, id: StreamId) -> Option<EntryFields<'_>> {
        let (start, node) = self.node_of(id)?;
        node.get(*start, id)
    }

    /// Live entries with `start <= id <= end`, ascending: O(log n) to the first node.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = (StreamId, EntryFields<'_>)> + '_ {
        let from = self.node_of(start).map_or(start, |(k, _)| *k);
        self.nodes
            .range(from..)
            .take_while(move |(k, _)| **k <= end)
            .flat_map(|(k, node)| node.entries(*k))
            .skip_while(move |(id, _)| *id < start)
            .take_while(move |(id, _)| *id <= end)
    }

    /// The same entries as [`Stream::range`], descending (each node is read forwards once, at
    /// most `stream-node-max-entries` entries, then handed out backwards).
    pub fn range_rev(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = (StreamId, EntryFields<'_>)> + '_ {
        self.nodes
            .range(..=end)
            .rev()
            .take_while(move |(_, node)| node.last >= start)
            .flat_map(|(k, node)| {
                let mut all: Vec<_> = node.entries(*k).collect();
                all.reverse();
                all
            })
            .skip_while(move |(id, _)| *id > end)
            .take_while(move |(id, _)| *id >= start)
    }

    /// Every live entry, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (StreamId, EntryFields<'_>)> + '_ {
        self.range(StreamId::MIN, StreamId::MAX)
    }

    /// The first live id, if any.
    pub fn first_entry_id(&self) -> Option<StreamId> {
        self.iter().next().map(|(id, _)| id)
    }

    /// The last live id, if any.
    pub fn last_entry_id(&self) -> Option<StreamId> {
        // Only the head node can be empty (exact MINID trimming leaves it, as Redis does).
        self.nodes
            .iter()
            .rev()
            .find_map(|(start, node)| node.entries(*start).last().map(|(id, _)| id))
    }
}

impl Stream {
    pub fn len(&self) -> usize {
        self.entries.len
    }

    pub fn is_empty(&self) -> bool {
        self.entries.len == 0
    }

    pub fn nodes(&self) -> &BTreeMap<StreamId, Node> {
        &self.entries.nodes
    }

    pub fn get(&self, id: StreamId) -> Option<EntryFields<'_>> {
        self.entries.get(id)
    }

    /// See [`Entries::range`].
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = (StreamId, EntryFields<'_>)> + '_ {
        self.entries.range(start, end)
    }

    /// See [`Entries::range_rev`].
    pub fn range_rev(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = (StreamId, EntryFields<'_>)> + '_ {
        self.entries.range_rev(start, end)
    }

    pub fn iter(&self) -> impl Iterator<Item = (StreamId, EntryFields<'_>)> + '_ {
        self.entries.iter()
    }

    pub fn first_entry_id(&self) -> Option<StreamId> {
        self.entries.first_entry_id()
    }

    pub fn last_entry_id(&self) -> Option<StreamId> {
        self.entries.last_entry_id()
    }

    /// Appends an entry with an id greater than `last_id` (checked by the caller).
    pub fn append(&mut self, id: StreamId, fields: Fields) {
        // Redis 7's rule: a new node when the tail's listpack plus the new strings would reach
        // `stream-node-max-bytes`, or when it holds `stream-node-max-entries` (deleted included).
        let strings: usize = fields.iter().map(<[u8]>::len).sum();
        let tail = self.entries.nodes.iter_mut().next_back();
        match tail {
            Some((start, node))
                if (node.bytes as usize) + strings < NODE_MAX_BYTES
                    && node.total < NODE_MAX_ENTRIES =>
            {
                node.add(*start, id, &fields)
            }
            tail => {
                if let Some((_, old)) = tail {
                    old.seal();
                }
                let mut node = Node::start(id, fields.iter().step_by(2));
                node.add(id, id, &fields);
                self.entries.nodes.insert(id, node);
            }
        }
        self.entries.len += 1;
        self.last_id = id;
        self.entries_added += 1;
        if self.entries.len == 1 {
            self.first_id = id;
        }
    }

    /// XADD's id: `requested` is the id argument and whether its sequence was given (`<ms>-*`
    /// when not), `None` for `*` (the clock's `now`, or one past the last id when the clock is
    /// behind it).
    pub fn next_id(
        &self,
        requested: Option<(StreamId, bool)>,
        now: u64,
    ) -> Result<StreamId, StreamError> {
        if self.last_id == StreamId::MAX {
            return Err(StreamError::Exhausted);
        }
        let id = match requested {
            Some((id, true)) => id,
            Some((id, false)) if self.last_id.ms == id.ms => self
                .last_id
                .incr()
                .filter(|n| n.ms == id.ms)
                .ok_or(StreamError::IdTooSmall)?,
            Some((id, false)) => id,
            None if now > self.last_id.ms => StreamId::new(now, 0),
            None => self.last_id.incr().ok_or(StreamError::IdTooSmall)?,
        };
        if id <= self.last_id {
            return Err(StreamError::IdTooSmall);
        }
        Ok(id)
    }

    /// XSETID: the last id, and the entries-added counter and largest deleted id when given.
    /// The last id may not go below the largest deleted id (Redis 7.2) nor the last entry, nor
    /// the counter below the length.
    pub fn set_last_id(
        &mut self,
        id: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) -> Result<(), StreamError> {
        if id < self.max_deleted {
            return Err(StreamError::BelowMaxDeleted);
        }
        if let Some(top) = self.last_entry_id() {
            if id < top {
                return Err(StreamError::BelowTop);
            }
            if entries_added.is_some_and(|n| (self.len() as u64) > n) {
                return Err(StreamError::EntriesAddedBelowLength);
            }
        }
        self.last_id = id;
        if let Some(n) = entries_added {
            self.entries_added = n;
        }
        if let Some(id) = max_deleted {
            self.max_deleted = id;
        }
        Ok(())
    }

    /// XDEL: deletes the entries of `ids` that exist, keeping the largest deleted id and the
    /// recorded first id as Redis does. Returns how many were deleted.
    pub fn delete_entries(&mut self, ids: &[StreamId]) -> usize {
        let mut deleted = 0;
        let mut first_entry = false;
        for &id in ids {
            if self.delete(id) {
                if id == self.first_id {
                    first_entry = true;
                }
                if id > self.max_deleted {
                    self.max_deleted = id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.is_empty() {
                self.first_id = StreamId::MIN;
            } else if first_entry {
                self.first_id = self.first_entry_id().unwrap_or(StreamId::MAX);
            }
        }
        deleted
    }

    /// Adds a node read from an RDB file (its live entries already in it, `live` of them).
    pub fn insert_loaded_node(&mut self, start: StreamId, node: Node) {
        self.entries.len += node.live as usize;
        self.entries.nodes.insert(start, node);
    }

    /// Deletes one entry (XDEL): true when it existed. A node left with no live entry goes.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&start, node)) = self.entries.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        if !node.delete(start, id) {
            return false;
        }
        if node.live == 0 {
            self.entries.nodes.remove(&start);
        }
        self.entries.len -= 1;
        true
    }

    /// Redis's `streamTrim`: removes whole nodes from the head while allowed, then (exact only)
    /// entries inside the next node. `limit` 0 means no limit. Returns the number removed.
    ///
    /// `policy` is what happens to the groups' references ([`RefPolicy`]): DELREF drops each
    /// removed entry from every pending list; ACKED skips the entries a group still needs, so a
    /// node holding one is not removed whole but entry by entry (exact trimming only: `~` stops
    /// there), and MAXLEN then takes later unneeded entries in their place, down to the length.
    pub fn trim(&mut self, trim: Trim, approx: bool, limit: u64, policy: RefPolicy) -> u64 {
        if let Trim::MaxLen(max) = trim {
            if self.entries.len as u64 <= max {
                return 0;
            }
        }
        let mut deleted = 0u64;
        // ACKED: the nodes before this one keep entries a group still needs.
        let mut from = StreamId::MIN;
        while let Some((&start, node)) = self.entries.nodes.range(from..).next() {
            let live = u64::from(node.live);
            if limit != 0 && deleted + live > limit {
                break;
            }
            let remove_node = match trim {
                Trim::MaxLen(max) => self.entries.len as u64 - live >= max,
                Trim::MinId(min) => node.last < min,
            };
            let ids = || node.entries(start).map(|(id, _)| id).collect::<Vec<_>>();
            let needed = policy == RefPolicy::Acked
                && remove_node
                && node.entries(start).any(|(id, _)| self.referenced(id));
            if remove_node && !needed {
                if policy == RefPolicy::DelRef {
                    for id in ids() {
                        self.unreference(id);
                    }
                }
                self.entries.nodes.remove(&start);
                self.entries.len -= live as usize;
                deleted += live;
                continue;
            }
            if approx {
                break;
            }
            for id in ids() {
                let stop = match trim {
                    Trim::MaxLen(max) => self.entries.len as u64 <= max,
                    Trim::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                if policy == RefPolicy::Acked && self.referenced(id) {
                    continue;
                }
                if policy == RefPolicy::DelRef {
                    self.unreference(id);
                }
                // Never the node's last live entry: a node that would empty was removed above,
                // and one that ACKED keeps holds an entry it skipped.
                if let Some(n) = self.entries.nodes.get_mut(&start) {
                    if n.delete(start, id) {
                        self.entries.len -= 1;
                        deleted += 1;
                    }
                }
            }
            // A node kept only for entries ACKED skipped: trimming goes on after it.
            match (needed, start.incr()) {
                (true, Some(next)) => from = next,
                _ => break,
            }
        }
        if deleted > 0 {
            self.first_id = self.first_entry_id().unwrap_or(StreamId::MIN);
        }
        deleted
    }

    /// Whether a consumer group still needs `id` (Redis 8.2's ACKED keeps it then): it is pending
    /// in a group, or a group has not been delivered it yet (it is after the group's last
    /// delivered id). A stream without groups needs nothing.
    pub fn referenced(&self, id: StreamId) -> bool {
        self.groups
            .values()
            .any(|g| id > g.last_id || g.pel.contains_key(&id))
    }

    /// DELREF: drops `id` from every group's pending list (and its consumer's).
    pub fn unreference(&mut self, id: StreamId) {
        for g in self.groups.values_mut() {
            g.forget(id);
        }
    }

    /// Approximate heap bytes (MEMORY USAGE).
    pub fn memory(&self) -> usize {
        let nodes: usize = self
            .nodes()
            .values()
            .map(|n| n.heap_bytes() + std::mem::size_of::<Node>() + 16)
            .sum();
        let groups: usize = self
            .groups
            .values()
            .map(|g| 64 + g.pel.len() * 80 + g.consumers.len() * 64)
            .sum();
        std::mem::size_of::<Stream>() + nodes + groups
    }

    /// XINFO's `lag` of a group (Redis's `streamReplyWithCGLag`); `None` when unknowable.
    pub fn lag(&self, group: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if group.entries_read != INVALID_READ && !self.range_has_tombstones(group.last_id, None) {
            return Some(self.entries_added as i64 - group.entries_read);
        }
        let read = self.estimate_entries_read(group.last_id);
        (read != INVALID_READ).then(|| self.entries_added as i64 - read)
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`; [`INVALID_READ`] when unknowable.
    pub fn estimate_entries_read(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        let added = self.entries_added as i64;
        if self.is_empty() && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        } else if id > self.last_id {
            return INVALID_READ;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            if id < self.first_id {
                return added - self.entries.len as i64;
            } else if id == self.first_id {
                return added - self.entries.len as i64 + 1;
            }
        }
        INVALID_READ
    }

    /// Redis's `streamRangeHasTombstones` (`end` `None` = to the end).
    pub fn range_has_tombstones(&self, start: StreamId, end: Option<StreamId>) -> bool {
        if self.is_empty() || self.max_deleted.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted && self.max_deleted <= end.unwrap_or(StreamId::MAX)
    }

    /// Moves a group's last delivered id forward to `id`, keeping its read counter as Redis.
    pub fn advance_group(&mut self, name: &[u8], id: StreamId) {
        let has_tombstones = self.range_has_tombstones(id, None);
        let estimate = self.estimate_entries_read(id);
        let added = self.entries_added;
        if let Some(group) = self.groups.get_mut(name) {
            if id > group.last_id {
                if group.entries_read != INVALID_READ && !has_tombstones {
                    group.entries_read += 1;
                } else if added != 0 {
                    group.entries_read = estimate;
                }
                group.last_id = id;
            }
        }
    }
}

/// A group's read counter when unknown (Redis's `SCG_INVALID_ENTRIES_READ`).
pub const INVALID_READ: i64 = -1;

/// The live entries and the bookkeeping, not the nodes' bytes: a stream and its RDB round trip
/// (which drops deleted entries from the buffers) look the same.
impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries: Vec<(StreamId, Vec<&[u8]>)> =
            self.iter().map(|(id, e)| (id, e.collect())).collect();
        f.debug_struct("Stream")
            .field("entries", &entries)
            .field("nodes", self.nodes())
            .field("last_id", &self.last_id)
            .field("first_id", &self.first_id)
            .field("max_deleted", &self.max_deleted)
            .field("entries_added", &self.entries_added)
            .field("groups", &self.groups)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_text_matches_display() {
        for id in [
            StreamId::MIN,
            StreamId::new(1, 2),
            StreamId::new(1_733_392_000_000, 7),
            StreamId::MAX,
        ] {
            let text = id.with_text(|t| t.to_vec());
            assert_eq!(text, id.to_string().into_bytes());
        }
    }

    #[test]
    fn fields_round_trip() {
        let long = vec![b'x'; 300];
        let f = Fields::pack(&[&b"a"[..], b"", &long[..]]);
        let items: Vec<&[u8]> = f.iter().collect();
        assert_eq!(items, vec![&b"a"[..], b"", &long[..]]);
    }

    /// Random appends (shared and own field names, long values), deletions and trims against a
    /// `BTreeMap` model: the same entries by id, range in both directions, first and last.
    #[test]
    fn packed_nodes_match_the_btree_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(14);
        for round in 0..60 {
            let mut s = Stream::default();
            let mut model: BTreeMap<StreamId, Vec<Vec<u8>>> = BTreeMap::new();
            let mut next = StreamId::new(rng.gen_range(0..1u64 << 50), 0);
            for step in 0..rng.gen_range(1..700) {
                match rng.gen_range(0..20) {
                    0..=14 => {
                        next = if rng.gen_bool(0.5) {
                            StreamId::new(next.ms, next.seq + rng.gen_range(1..1000))
                        } else {
                            StreamId::new(next.ms + rng.gen_range(1..100_000), rng.gen_range(0..3))
                        };
                        let pairs = rng.gen_range(1..4);
                        let items: Vec<Vec<u8>> = (0..pairs * 2)
                            .map(|i| match (i % 2, rng.gen_range(0..4)) {
                                (0, 0) => format!("name{}", rng.gen_range(0..3)).into_bytes(),
                                (0, _) => format!("f{}", i / 2).into_bytes(),
                                (_, 0) => vec![b'x'; rng.gen_range(0..600)],
                                _ => rng.gen_range(0..100_000).to_string().into_bytes(),
                            })
                            .collect();
                        s.append(next, Fields::pack(&items));
                        model.insert(next, items);
                    }
                    15..=17 => {
                        let id = match model.keys().nth(rng.gen_range(0..model.len().max(1))) {
                            Some(id) if rng.gen_bool(0.8) => *id,
                            _ => StreamId::new(rng.gen_range(0..1u64 << 51), 0),
                        };
                        assert_eq!(s.delete(id), model.remove(&id).is_some(), "round {round}");
                    }
                    _ => {
                        let trim = if rng.gen_bool(0.5) {
                            Trim::MaxLen(rng.gen_range(0..model.len() as u64 + 10))
                        } else {
                            let ids: Vec<_> = model.keys().copied().collect();
                            Trim::MinId(
                                ids.get(rng.gen_range(0..ids.len() + 1))
                                    .copied()
                                    .unwrap_or(next),
                            )
                        };
                        let removed = s.trim(
                            trim,
                            rng.gen_bool(0.5),
                            rng.gen_range(0..3) * 50,
                            RefPolicy::KeepRef,
                        );
                        // Trimming takes from the head.
                        for _ in 0..removed {
                            model.pop_first();
                        }
                    }
                }
                let as_vec = |it: &mut dyn Iterator<Item = (StreamId, EntryFields<'_>)>| {
                    it.map(|(id, f)| (id, f.map(<[u8]>::to_vec).collect::<Vec<_>>()))
                        .collect::<Vec<_>>()
                };
                let theirs: Vec<_> = model.iter().map(|(k, v)| (*k, v.clone())).collect();
                assert_eq!(as_vec(&mut s.iter()), theirs, "round {round} step {step}");
                assert_eq!(s.len(), model.len());
                assert_eq!(s.first_entry_id(), model.keys().next().copied());
                assert_eq!(s.last_entry_id(), model.keys().next_back().copied());
                if let (Some(a), Some(b)) = (model.keys().next(), model.keys().next_back()) {
                    let lo = StreamId::new(rng.gen_range(a.ms..=b.ms), rng.gen_range(0..2000));
                    let hi = StreamId::new(rng.gen_range(lo.ms..=b.ms + 1), rng.gen_range(0..2000));
                    let want: Vec<_> = model
                        .range(lo..=hi.max(lo))
                        .map(|(k, v)| (*k, v.clone()))
                        .collect();
                    assert_eq!(as_vec(&mut s.range(lo, hi.max(lo))), want);
                    let mut rev = want.clone();
                    rev.reverse();
                    assert_eq!(as_vec(&mut s.range_rev(lo, hi.max(lo))), rev);
                    let probe = theirs[rng.gen_range(0..theirs.len())].0;
                    assert_eq!(
                        s.get(probe)
                            .map(|f| f.map(<[u8]>::to_vec).collect::<Vec<_>>()),
                        model.get(&probe).cloned()
                    );
                }
                assert!(s.nodes().values().skip(1).all(|n| n.live > 0));
                assert!(s.nodes().values().all(|n| n.total <= NODE_MAX_ENTRIES));
            }
        }
    }

    fn stream_of(ids: &[u64]) -> Stream {
        let mut s = Stream::default();
        for ms in ids {
            s.append(StreamId::new(*ms, 0), Fields::pack(&[b"f", b"v"]));
        }
        s
    }

    #[test]
    fn next_id_follows_the_last_id() {
        let s = stream_of(&[5]);
        let at = |ms, seq| StreamId::new(ms, seq);
        assert_eq!(s.next_id(None, 9), Ok(at(9, 0)));
        // A clock behind the last id: one past it.
        assert_eq!(s.next_id(None, 3), Ok(at(5, 1)));
        assert_eq!(s.next_id(Some((at(5, 0), false)), 0), Ok(at(5, 1)));
        assert_eq!(s.next_id(Some((at(7, 0), false)), 0), Ok(at(7, 0)));
        assert_eq!(
            s.next_id(Some((at(4, 0), false)), 0),
            Err(StreamError::IdTooSmall)
        );
        assert_eq!(
            s.next_id(Some((at(5, 0), true)), 0),
            Err(StreamError::IdTooSmall)
        );
        assert_eq!(s.next_id(Some((at(5, 3), true)), 0), Ok(at(5, 3)));
        let mut full = stream_of(&[1]);
        full.last_id = StreamId::new(5, u64::MAX);
        assert_eq!(
            full.next_id(Some((at(5, 0), false)), 0),
            Err(StreamError::IdTooSmall)
        );
        full.last_id = StreamId::MAX;
        assert_eq!(full.next_id(None, 0), Err(StreamError::Exhausted));
    }

    #[test]
    fn xdel_keeps_the_largest_deleted_and_the_first_id() {
        let mut s = stream_of(&[1, 2, 3]);
        let id = |ms| StreamId::new(ms, 0);
        assert_eq!(s.delete_entries(&[id(2), id(2), id(9)]), 1);
        assert_eq!((s.max_deleted, s.first_id), (id(2), id(1)));
        assert_eq!(s.delete_entries(&[id(1)]), 1);
        assert_eq!((s.max_deleted, s.first_id), (id(2), id(3)));
        assert_eq!(s.delete_entries(&[id(3)]), 1);
        assert_eq!(
            (s.max_deleted, s.first_id, s.len()),
            (id(3), StreamId::MIN, 0)
        );
        assert_eq!(s.entries_added, 3);
    }

    #[test]
    fn xsetid_refuses_to_go_back_and_changes_nothing_then() {
        let mut s = stream_of(&[1, 5]);
        let id = |ms| StreamId::new(ms, 0);
        s.delete_entries(&[id(1)]);
        assert_eq!(s.set_last_id(id(4), None, None), Err(StreamError::BelowTop));
        assert_eq!(
            s.set_last_id(id(9), Some(0), None),
            Err(StreamError::EntriesAddedBelowLength)
        );
        s.delete_entries(&[id(5)]);
        assert_eq!(
            s.set_last_id(id(4), None, None),
            Err(StreamError::BelowMaxDeleted)
        );
        assert_eq!((s.last_id, s.entries_added), (id(5), 2));
        // Empty: the length no longer bounds the counter.
        assert_eq!(s.set_last_id(id(9), Some(0), Some(id(8))), Ok(()));
        assert_eq!(
            (s.last_id, s.entries_added, s.max_deleted),
            (id(9), 0, id(8))
        );
    }

    #[test]
    fn approximate_trim_removes_whole_nodes() {
        let mut s = Stream::default();
        for i in 1..=250 {
            s.append(StreamId::new(i, 0), Fields::pack(&[b"f", b"v"]));
        }
        assert_eq!(s.nodes().len(), 3);
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0, RefPolicy::KeepRef), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.trim(Trim::MaxLen(120), false, 0, RefPolicy::KeepRef), 30);
        assert_eq!(s.len(), 120);
        assert_eq!(s.first_id, StreamId::new(131, 0));
    }
}
