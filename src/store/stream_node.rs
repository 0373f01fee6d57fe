//! One node of a stream: up to `stream-node-max-entries` entries packed into one buffer, as
//! Redis packs them into a listpack. Ids are stored as deltas from the node's start id, and an
//! entry whose field names equal the node's master names (those of its first entry) stores its
//! values only. A deleted entry stays in the buffer, flagged, until its whole node goes (as in
//! Redis); a node with no live entry is dropped by the stream.
//!
//! Layout: `varint n, n names` (the master names), then per entry `flags u8, varint ms delta,
//! varint seq`, then the values (same fields) or `varint pairs` and the items. Every string is
//! `varint len, bytes`.

use super::stream::{lp_element_size, lp_int_size, Fields, StreamId};

const DELETED: u8 = 1;
const SAME_FIELDS: u8 = 2;

/// A listpack node as Redis would have it (its last appended id, how many entries it holds in
/// all, live and deleted, and how many are live, its listpack's size), with our packed entries.
#[derive(Clone)]
pub struct Node {
    pub last: StreamId,
    pub total: u32,
    pub live: u32,
    /// The size of Redis's listpack for this node (deletions only flag entries: it never shrinks).
    pub bytes: u32,
    data: Vec<u8>,
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The varint at `at` and the offset after it. The buffer is written by this module only.
fn get_varint(data: &[u8], mut at: usize) -> (u64, usize) {
    let mut n = 0u64;
    let mut shift = 0;
    loop {
        let byte = data[at];
        at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return (n, at);
        }
    }
}

fn put_item(out: &mut Vec<u8>, item: &[u8]) {
    put_varint(out, item.len() as u64);
    out.extend_from_slice(item);
}

/// The offset after `count` items starting at `at`.
fn skip_items(data: &[u8], mut at: usize, count: u64) -> usize {
    for _ in 0..count {
        let (len, start) = get_varint(data, at);
        at = start + len as usize;
    }
    at
}

/// `count` items starting at `at`, read one by one.
#[derive(Clone)]
struct Items<'a> {
    data: &'a [u8],
    at: usize,
    left: u64,
}

impl<'a> Iterator for Items<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (len, start) = get_varint(self.data, self.at);
        self.at = start + len as usize;
        Some(&self.data[start..self.at])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl ExactSizeIterator for Items<'_> {}

/// One entry's items (field, value, field, value, …), read out of its node.
#[derive(Clone)]
pub struct EntryFields<'a> {
    /// The master names, for an entry that stores its values only.
    names: Option<Items<'a>>,
    items: Items<'a>,
    name_next: bool,
}

impl<'a> Iterator for EntryFields<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let Some(names) = &mut self.names else {
            return self.items.next();
        };
        self.name_next = !self.name_next;
        if self.name_next {
            names.next()
        } else {
            self.items.next()
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.items.len() + self.names.as_ref().map_or(0, Items::len);
        (left, Some(left))
    }
}

impl ExactSizeIterator for EntryFields<'_> {}

/// An entry as found in its node: id, flags, items, and where it starts in the buffer.
struct Raw<'a> {
    id: StreamId,
    flags: u8,
    fields: EntryFields<'a>,
    at: usize,
}

impl Node {
    /// A node whose first entry has the field names `names`: Redis's master entry's bytes, and
    /// the names stored once for every entry that shares them.
    pub fn start<'a>(id: StreamId, names: impl Iterator<Item = &'a [u8]> + Clone) -> Node {
        let count = names.clone().count();
        let bytes = 7 + lp_int_size(0) * 3 + lp_int_size(count as i64);
        let bytes = bytes + names.clone().map(lp_element_size).sum::<usize>();
        let mut data = Vec::new();
        put_varint(&mut data, count as u64);
        for name in names {
            put_item(&mut data, name);
        }
        Node {
            last: id,
            total: 0,
            live: 0,
            bytes: bytes.min(u32::MAX as usize) as u32,
            data,
        }
    }

    fn master_names(&self) -> Items<'_> {
        let (count, at) = get_varint(&self.data, 0);
        Items {
            data: &self.data,
            at,
            left: count,
        }
    }

    fn same_names(&self, fields: &Fields) -> bool {
        let names = self.master_names();
        names.left as usize * 2 == fields.iter().count() && names.eq(fields.iter().step_by(2))
    }

    /// Appends an entry (id above every id of the node), accounting for it as Redis's
    /// `streamAppendItem` encodes it.
    pub fn add(&mut self, start: StreamId, id: StreamId, fields: &Fields) {
        let same = self.same_names(fields);
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
        self.push(start, id, fields, same);
        self.total += 1;
        self.live += 1;
        self.last = id;
    }

    /// Stores a live entry without Redis's accounting (an RDB load sets that from the file).
    pub fn push_loaded(&mut self, start: StreamId, id: StreamId, fields: &Fields) {
        let same = self.same_names(fields);
        self.push(start, id, fields, same);
    }

    fn push(&mut self, start: StreamId, id: StreamId, fields: &Fields, same: bool) {
        self.data.push(if same { SAME_FIELDS } else { 0 });
        put_varint(&mut self.data, id.ms.wrapping_sub(start.ms));
        put_varint(&mut self.data, id.seq);
        if same {
            for value in fields.iter().skip(1).step_by(2) {
                put_item(&mut self.data, value);
            }
        } else {
            put_varint(&mut self.data, fields.iter().count() as u64 / 2);
            for item in fields.iter() {
                put_item(&mut self.data, item);
            }
        }
    }

    /// Gives back the buffer's spare capacity (a node no longer at the tail grows no more).
    pub fn seal(&mut self) {
        self.data.shrink_to_fit();
    }

    pub fn heap_bytes(&self) -> usize {
        self.data.capacity()
    }

    /// Every entry stored, deleted ones included, in id order.
    fn raw(&self, start: StreamId) -> impl Iterator<Item = Raw<'_>> + '_ {
        let data = &self.data[..];
        let (names_count, names_at) = get_varint(data, 0);
        let mut at = skip_items(data, names_at, names_count);
        std::iter::from_fn(move || {
            if at >= data.len() {
                return None;
            }
            let entry_at = at;
            let flags = data[at];
            let (ms, after) = get_varint(data, at + 1);
            let (seq, after) = get_varint(data, after);
            let id = StreamId::new(start.ms.wrapping_add(ms), seq);
            let fields = if flags & SAME_FIELDS != 0 {
                let items = Items {
                    data,
                    at: after,
                    left: names_count,
                };
                at = skip_items(data, after, names_count);
                EntryFields {
                    names: Some(Items {
                        data,
                        at: names_at,
                        left: names_count,
                    }),
                    items,
                    name_next: false,
                }
            } else {
                let (pairs, after) = get_varint(data, after);
                let items = Items {
                    data,
                    at: after,
                    left: pairs * 2,
                };
                at = skip_items(data, after, pairs * 2);
                EntryFields {
                    names: None,
                    items,
                    name_next: false,
                }
            };
            Some(Raw {
                id,
                flags,
                fields,
                at: entry_at,
            })
        })
    }

    /// The live entries in id order (`start` is the node's key).
    pub fn entries(
        &self,
        start: StreamId,
    ) -> impl Iterator<Item = (StreamId, EntryFields<'_>)> + '_ {
        self.raw(start)
            .filter(|e| e.flags & DELETED == 0)
            .map(|e| (e.id, e.fields))
    }

    /// The live entry `id`, if the node holds it.
    pub fn get(&self, start: StreamId, id: StreamId) -> Option<EntryFields<'_>> {
        self.entries(start)
            .take_while(|(e, _)| *e <= id)
            .find(|(e, _)| *e == id)
            .map(|(_, f)| f)
    }

    /// Flags the live entry `id` deleted: true when it was there. `live` drops by one.
    pub fn delete(&mut self, start: StreamId, id: StreamId) -> bool {
        let at = self
            .raw(start)
            .take_while(|e| e.id <= id)
            .find(|e| e.id == id && e.flags & DELETED == 0)
            .map(|e| e.at);
        match at {
            Some(at) => {
                self.data[at] |= DELETED;
                self.live = self.live.saturating_sub(1);
                true
            }
            None => false,
        }
    }
}

/// The node's live entries, not its bytes: two nodes holding the same entries look the same,
/// whatever deleted entries or master names their buffers carry.
impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("last", &self.last)
            .field("total", &self.total)
            .field("live", &self.live)
            .field("bytes", &self.bytes)
            .finish()
    }
}
