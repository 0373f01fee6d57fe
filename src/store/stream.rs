//! The stream type: entries ordered by a 128-bit id in a B-tree, each entry's fields packed into
//! one allocation, plus the consumer groups. Redis keeps entries in listpack nodes of at most
//! `stream-node-max-entries` (100) entries; we keep a light record of those node boundaries so
//! that approximate trimming (`~`) removes exactly what Redis would remove.

use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// Entries per node before a new one starts (Redis's `stream-node-max-entries` default).
pub const NODE_MAX_ENTRIES: u32 = 100;
/// A node's listpack size past which a new one starts (Redis's `stream-node-max-bytes` default).
pub const NODE_MAX_BYTES: usize = 4096;

/// The bytes an integer takes as a listpack element (encoding and back length).
fn lp_int_size(v: i64) -> usize {
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
fn lp_element_size(element: &[u8]) -> usize {
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

/// A hash of an entry's field names, to tell whether they equal a node's master fields.
fn names_hash<'a>(names: impl Iterator<Item = &'a [u8]>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for name in names {
        for b in name.iter().chain(&[0xff, 0xfe]) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
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
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// One entry's field/value pairs, packed as `len(varint) bytes` items in one allocation.
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

    pub fn heap_bytes(&self) -> usize {
        self.0.len()
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

/// A listpack node as Redis would have it: where it starts, its last appended id, how many
/// entries it holds in all (live and deleted) and how many are live.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    pub last: StreamId,
    pub total: u32,
    pub live: u32,
    /// The size of Redis's listpack for this node (deletions only flag entries: it never shrinks).
    pub bytes: u32,
    /// [`names_hash`] of the master entry's fields (those of the node's first entry).
    pub master: u64,
}

impl Node {
    /// A node whose first entry has the field names `names`: its master entry's bytes.
    pub fn start<'a>(id: StreamId, names: impl Iterator<Item = &'a [u8]> + Clone) -> Node {
        let count = names.clone().count();
        let bytes = 7 + lp_int_size(0) * 3 + lp_int_size(count as i64);
        let bytes = bytes + names.clone().map(lp_element_size).sum::<usize>();
        Node {
            last: id,
            total: 0,
            live: 0,
            bytes: bytes.min(u32::MAX as usize) as u32,
            master: names_hash(names),
        }
    }

    /// Accounts for one more entry appended to this node, as `streamAppendItem` encodes it.
    pub fn add(&mut self, start: StreamId, id: StreamId, fields: &Fields) {
        let same = names_hash(fields.iter().step_by(2)) == self.master;
        let pairs = fields.iter().count() / 2;
        let mut bytes = lp_int_size(if same { 2 } else { 0 })
            + lp_int_size(id.ms.wrapping_sub(start.ms) as i64)
            + lp_int_size(id.seq.wrapping_sub(start.seq) as i64);
        if same {
            bytes += fields
                .iter()
                .skip(1)
                .step_by(2)
                .map(lp_element_size)
                .sum::<usize>();
            bytes += lp_int_size(pairs as i64 + 3);
        } else {
            bytes += lp_int_size(pairs as i64);
            bytes += fields.iter().map(lp_element_size).sum::<usize>();
            bytes += lp_int_size(pairs as i64 * 2 + 4);
        }
        self.bytes = (self.bytes as usize + bytes).min(u32::MAX as usize) as u32;
        self.total += 1;
        self.live += 1;
        self.last = id;
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

#[derive(Clone, Debug, Default)]
pub struct Stream {
    pub entries: BTreeMap<StreamId, Fields>,
    /// Listpack nodes by their first (master) id.
    pub nodes: BTreeMap<StreamId, Node>,
    pub last_id: StreamId,
    /// Redis's recorded first id (0-0 when empty).
    pub first_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Bytes, Group>,
}

/// How XADD/XTRIM trim.
#[derive(Clone, Copy, Debug)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

impl Stream {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends an entry with an id greater than `last_id` (checked by the caller).
    pub fn append(&mut self, id: StreamId, fields: Fields) {
        // Redis 7's rule: a new node when the tail's listpack plus the new strings would reach
        // `stream-node-max-bytes`, or when it holds `stream-node-max-entries` (deleted included).
        let strings: usize = fields.iter().map(<[u8]>::len).sum();
        let tail = self.nodes.iter_mut().next_back().filter(|(_, node)| {
            (node.bytes as usize) + strings < NODE_MAX_BYTES && node.total < NODE_MAX_ENTRIES
        });
        match tail {
            Some((start, node)) => node.add(*start, id, &fields),
            None => {
                let mut node = Node::start(id, fields.iter().step_by(2));
                node.add(id, id, &fields);
                self.nodes.insert(id, node);
            }
        }
        self.entries.insert(id, fields);
        self.last_id = id;
        self.entries_added += 1;
        if self.entries.len() == 1 {
            self.first_id = id;
        }
    }

    /// Deletes one entry (XDEL): true when it existed. A node left with no live entry goes.
    pub fn delete(&mut self, id: StreamId) -> bool {
        if self.entries.remove(&id).is_none() {
            return false;
        }
        if let Some((&start, node)) = self.nodes.range_mut(..=id).next_back() {
            node.live = node.live.saturating_sub(1);
            if node.live == 0 {
                self.nodes.remove(&start);
            }
        }
        true
    }

    /// The first live id, if any.
    pub fn first_entry_id(&self) -> Option<StreamId> {
        self.entries.keys().next().copied()
    }

    /// The last live id, if any.
    pub fn last_entry_id(&self) -> Option<StreamId> {
        self.entries.keys().next_back().copied()
    }

    /// Redis's `streamTrim`: removes whole nodes from the head while allowed, then (exact only)
    /// entries inside the next node. `limit` 0 means no limit. Returns the number removed.
    pub fn trim(&mut self, trim: Trim, approx: bool, limit: u64) -> u64 {
        if let Trim::MaxLen(max) = trim {
            if self.entries.len() as u64 <= max {
                return 0;
            }
        }
        let mut deleted = 0u64;
        while let Some((&start, &node)) = self.nodes.iter().next() {
            let live = u64::from(node.live);
            if limit != 0 && deleted + live > limit {
                break;
            }
            let remove_node = match trim {
                Trim::MaxLen(max) => self.entries.len() as u64 - live >= max,
                Trim::MinId(min) => node.last < min,
            };
            let end = self
                .nodes
                .range((std::ops::Bound::Excluded(start), std::ops::Bound::Unbounded))
                .next()
                .map(|(k, _)| *k);
            if remove_node {
                self.nodes.remove(&start);
                let ids: Vec<StreamId> = match end {
                    Some(end) => self.entries.range(start..end).map(|(k, _)| *k).collect(),
                    None => self.entries.range(start..).map(|(k, _)| *k).collect(),
                };
                for id in &ids {
                    self.entries.remove(id);
                }
                deleted += ids.len() as u64;
                continue;
            }
            if approx {
                break;
            }
            let ids: Vec<StreamId> = match end {
                Some(end) => self.entries.range(start..end).map(|(k, _)| *k).collect(),
                None => self.entries.range(start..).map(|(k, _)| *k).collect(),
            };
            for id in ids {
                let stop = match trim {
                    Trim::MaxLen(max) => self.entries.len() as u64 <= max,
                    Trim::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                self.entries.remove(&id);
                if let Some(n) = self.nodes.get_mut(&start) {
                    n.live = n.live.saturating_sub(1);
                }
                deleted += 1;
            }
            break;
        }
        if deleted > 0 {
            self.first_id = self.first_entry_id().unwrap_or(StreamId::MIN);
        }
        deleted
    }

    /// Approximate heap bytes (MEMORY USAGE).
    pub fn memory(&self) -> usize {
        let entries: usize = self
            .entries
            .values()
            // The packed fields in their allocator size class, plus the B-tree slot and node
            // share (about 64 bytes an entry measured with 100,000 one-field entries).
            .map(|f| f.heap_bytes().div_ceil(16) * 16 + 64)
            .sum::<usize>();
        let groups: usize = self
            .groups
            .values()
            .map(|g| 64 + g.pel.len() * 80 + g.consumers.len() * 64)
            .sum();
        std::mem::size_of::<Stream>() + entries + self.nodes.len() * 48 + groups
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
        if self.entries.is_empty() && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        } else if id > self.last_id {
            return INVALID_READ;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            if id < self.first_id {
                return added - self.entries.len() as i64;
            } else if id == self.first_id {
                return added - self.entries.len() as i64 + 1;
            }
        }
        INVALID_READ
    }

    /// Redis's `streamRangeHasTombstones` (`end` `None` = to the end).
    pub fn range_has_tombstones(&self, start: StreamId, end: Option<StreamId>) -> bool {
        if self.entries.is_empty() || self.max_deleted.is_zero() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let long = vec![b'x'; 300];
        let f = Fields::pack(&[&b"a"[..], b"", &long[..]]);
        let items: Vec<&[u8]> = f.iter().collect();
        assert_eq!(items, vec![&b"a"[..], b"", &long[..]]);
    }

    #[test]
    fn approximate_trim_removes_whole_nodes() {
        let mut s = Stream::default();
        for i in 1..=250 {
            s.append(StreamId::new(i, 0), Fields::pack(&[b"f", b"v"]));
        }
        assert_eq!(s.nodes.len(), 3);
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.trim(Trim::MaxLen(120), false, 0), 30);
        assert_eq!(s.len(), 120);
        assert_eq!(s.first_id, StreamId::new(131, 0));
    }
}
