//! Streams in Redis's RDB form: `RDB_TYPE_STREAM_LISTPACKS_2` (Redis 7.0, written and read), and
//! `_LISTPACKS` (6.x) and `_LISTPACKS_3` (7.2) read.
//!
//! Layout: the nodes (each its master id as 16 big-endian bytes and a listpack of entries, ids
//! delta-encoded against the master id, field names omitted when they equal the master entry's),
//! then length, last id, first id, max deleted id, entries added, and the groups with their
//! pending entries and consumers. A node is written with its live entries only (its deleted
//! ones, flagged in memory, are left out), the first live entry's fields as the master fields.

use super::decode::RdbReader;
use super::encode::{put_len, put_string};
use super::listpack::{read_listpack, ListpackWriter};
use super::{types, RdbError};
use crate::store::stream::{Consumer, EntryFields, Fields, Group, Nack, Node, Stream, StreamId};
use bytes::Bytes;
use std::collections::BTreeMap;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

fn id_bytes(id: StreamId) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&id.ms.to_be_bytes());
    out[8..].copy_from_slice(&id.seq.to_be_bytes());
    out
}

fn id_from(bytes: &[u8]) -> Result<StreamId, RdbError> {
    if bytes.len() != 16 {
        return Err(RdbError::BadData);
    }
    let ms = u64::from_be_bytes(bytes[..8].try_into().map_err(|_| RdbError::BadData)?);
    let seq = u64::from_be_bytes(bytes[8..].try_into().map_err(|_| RdbError::BadData)?);
    Ok(StreamId::new(ms, seq))
}

fn push_int(lp: &mut ListpackWriter, v: i64) {
    lp.push(itoa::Buffer::new().format(v).as_bytes());
}

/// One node's listpack, as Redis's `streamAppendItem` builds it.
fn node_listpack(start: StreamId, node: &Node) -> Vec<u8> {
    let range: Vec<(StreamId, EntryFields<'_>)> = node.entries(start).collect();
    let mut lp = ListpackWriter::default();
    let master: Vec<&[u8]> = range
        .first()
        .map(|(_, f)| f.clone().step_by(2).collect())
        .unwrap_or_default();
    push_int(&mut lp, range.len() as i64);
    push_int(&mut lp, 0);
    push_int(&mut lp, master.len() as i64);
    for field in &master {
        lp.push(field);
    }
    push_int(&mut lp, 0);
    for (id, fields) in range {
        let items: Vec<&[u8]> = fields.collect();
        let names: Vec<&[u8]> = items.iter().step_by(2).copied().collect();
        let same = names == master;
        push_int(&mut lp, if same { FLAG_SAMEFIELDS } else { 0 });
        push_int(&mut lp, id.ms.wrapping_sub(start.ms) as i64);
        push_int(&mut lp, id.seq.wrapping_sub(start.seq) as i64);
        let pairs = names.len() as i64;
        if same {
            for value in items.iter().skip(1).step_by(2) {
                lp.push(value);
            }
        } else {
            push_int(&mut lp, pairs);
            for item in &items {
                lp.push(item);
            }
        }
        push_int(&mut lp, if same { pairs + 3 } else { pairs * 2 + 4 });
    }
    lp.finish()
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// Writes `s` as `RDB_TYPE_STREAM_LISTPACKS_2` (type byte included).
pub fn encode(out: &mut Vec<u8>, s: &Stream) {
    out.push(types::STREAM_LISTPACKS_2);
    put_len(out, s.nodes().len() as u64);
    for (start, node) in s.nodes() {
        put_string(out, &id_bytes(*start));
        put_string(out, &node_listpack(*start, node));
    }
    put_len(out, s.len() as u64);
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted);
    put_len(out, s.entries_added);
    put_len(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        put_string(out, name);
        put_id(out, g.last_id);
        put_len(out, g.entries_read as u64);
        put_len(out, g.pel.len() as u64);
        for (id, nack) in &g.pel {
            out.extend_from_slice(&id_bytes(*id));
            out.extend_from_slice(&nack.delivery_time.to_le_bytes());
            put_len(out, nack.delivery_count);
        }
        put_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            put_string(out, cname);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            put_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&id_bytes(*id));
            }
        }
    }
}

fn int_of(item: &[u8]) -> Result<i64, RdbError> {
    std::str::from_utf8(item)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or(RdbError::BadData)
}

/// Reads one node: its live entries and Redis's bookkeeping.
fn read_node(master_id: StreamId, lp: &[Bytes], blob_len: usize) -> Result<Node, RdbError> {
    let mut items = lp.iter();
    let mut next = || items.next().ok_or(RdbError::BadData);
    let count = int_of(next()?)?;
    let deleted = int_of(next()?)?;
    let nmaster = usize::try_from(int_of(next()?)?).map_err(|_| RdbError::BadData)?;
    let mut master = Vec::with_capacity(nmaster.min(lp.len()));
    for _ in 0..nmaster {
        master.push(next()?.clone());
    }
    if int_of(next()?)? != 0 {
        return Err(RdbError::BadData);
    }
    let total = count.checked_add(deleted).ok_or(RdbError::BadData)?;
    let mut node = Node::start(master_id, master.iter().map(|b| &b[..]));
    let mut last = master_id;
    let mut prev: Option<StreamId> = None;
    let mut live = 0u32;
    for _ in 0..total {
        let flags = int_of(next()?)?;
        let ms = master_id.ms.wrapping_add(int_of(next()?)? as u64);
        let seq = master_id.seq.wrapping_add(int_of(next()?)? as u64);
        let id = StreamId::new(ms, seq);
        let mut fields: Vec<Bytes> = Vec::new();
        if flags & FLAG_SAMEFIELDS != 0 {
            for name in &master {
                fields.push(name.clone());
                fields.push(next()?.clone());
            }
        } else {
            let n = usize::try_from(int_of(next()?)?).map_err(|_| RdbError::BadData)?;
            for _ in 0..n.saturating_mul(2) {
                fields.push(next()?.clone());
            }
        }
        next()?; // lp-count
        if id < master_id || prev.is_some_and(|p| id <= p) {
            return Err(RdbError::BadData);
        }
        prev = Some(id);
        last = id;
        if flags & FLAG_DELETED == 0 {
            node.push_loaded(master_id, id, &Fields::pack(&fields));
            live += 1;
        }
    }
    if next().is_ok() {
        return Err(RdbError::BadData);
    }
    node.last = last;
    node.total = u32::try_from(total).map_err(|_| RdbError::BadData)?;
    node.live = live;
    node.bytes = u32::try_from(blob_len).map_err(|_| RdbError::BadData)?;
    Ok(node)
}

fn read_id(r: &mut RdbReader<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId::new(r.len()?, r.len()?))
}

fn read_ms(r: &mut RdbReader<'_>) -> Result<u64, RdbError> {
    Ok(u64::from_le_bytes(
        r.take(8)?.try_into().map_err(|_| RdbError::BadData)?,
    ))
}

/// Reads a stream of RDB type `kind` (`STREAM_LISTPACKS`, `_2` or `_3`).
pub fn decode(r: &mut RdbReader<'_>, kind: u8) -> Result<Stream, RdbError> {
    let mut s = Stream::default();
    let nodes = r.len()?;
    for _ in 0..nodes {
        let master_id = id_from(&r.string()?)?;
        let blob = r.string()?;
        let lp = read_listpack(&blob)?;
        if lp.is_empty() {
            return Err(RdbError::BadData);
        }
        let node = read_node(master_id, &lp, blob.len())?;
        if s.nodes()
            .last_key_value()
            .is_some_and(|(k, n)| *k >= master_id || n.last >= master_id)
        {
            return Err(RdbError::BadData);
        }
        if node.live > 0 {
            s.insert_loaded_node(master_id, node);
        }
    }
    let length = r.len()?;
    s.last_id = read_id(r)?;
    if kind == types::STREAM_LISTPACKS {
        s.entries_added = length;
        s.first_id = s.first_entry_id().unwrap_or_default();
    } else {
        s.first_id = read_id(r)?;
        s.max_deleted = read_id(r)?;
        s.entries_added = r.len()?;
    }
    if length != s.len() as u64 || s.last_entry_id().is_some_and(|top| top > s.last_id) {
        return Err(RdbError::BadData);
    }
    let groups = r.len()?;
    for _ in 0..groups {
        let name = r.string()?;
        let last_id = read_id(r)?;
        let entries_read = if kind == types::STREAM_LISTPACKS {
            s.estimate_entries_read(last_id)
        } else {
            r.len()? as i64
        };
        let mut pel = BTreeMap::new();
        let pending = r.len()?;
        for _ in 0..pending {
            let id = id_from(r.take(16)?)?;
            let delivery_time = read_ms(r)?;
            let delivery_count = r.len()?;
            pel.insert(
                id,
                Nack {
                    consumer: Bytes::new(),
                    delivery_time,
                    delivery_count,
                },
            );
        }
        let mut consumers = BTreeMap::new();
        let mut owned_total = 0usize;
        let count = r.len()?;
        for _ in 0..count {
            let cname = r.string()?;
            let seen_time = read_ms(r)?;
            let active_time = if kind == types::STREAM_LISTPACKS_3 {
                let t = read_ms(r)?;
                (t as i64 != -1).then_some(t)
            } else {
                Some(seen_time)
            };
            let mut consumer = Consumer {
                seen_time,
                active_time,
                pel: Default::default(),
            };
            let owned = r.len()?;
            for _ in 0..owned {
                let id = id_from(r.take(16)?)?;
                let nack: &mut Nack = pel.get_mut(&id).ok_or(RdbError::BadData)?;
                nack.consumer = cname.clone();
                if consumer.pel.insert(id) {
                    owned_total += 1;
                }
            }
            consumers.insert(cname, consumer);
        }
        // Every pending entry belongs to a consumer.
        if owned_total != pel.len() {
            return Err(RdbError::BadData);
        }
        s.groups.insert(
            name,
            Group {
                last_id,
                entries_read,
                pel,
                consumers,
            },
        );
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_survives_encode_and_decode() {
        let mut s = Stream::default();
        for i in 1..=150u64 {
            let value = format!("v{i}");
            let fields: [&[u8]; 2] = if i % 7 == 0 {
                [b"other", value.as_bytes()]
            } else {
                [b"f", value.as_bytes()]
            };
            s.append(StreamId::new(i, 0), Fields::pack(&fields));
        }
        s.delete(StreamId::new(3, 0));
        s.max_deleted = StreamId::new(3, 0);
        let consumer = Bytes::from_static(b"alice");
        let mut group = Group {
            last_id: StreamId::new(2, 0),
            entries_read: 2,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        };
        group.pel.insert(
            StreamId::new(2, 0),
            Nack {
                consumer: consumer.clone(),
                delivery_time: 1_700_000_000_000,
                delivery_count: 3,
            },
        );
        let mut c = Consumer {
            seen_time: 1_700_000_000_001,
            active_time: Some(1_700_000_000_001),
            pel: Default::default(),
        };
        c.pel.insert(StreamId::new(2, 0));
        group.consumers.insert(consumer, c);
        s.groups.insert(Bytes::from_static(b"g"), group);

        let mut out = Vec::new();
        encode(&mut out, &s);
        assert_eq!(out[0], types::STREAM_LISTPACKS_2);
        let back = decode(&mut RdbReader::new(&out[1..]), out[0]).expect("decodes");
        assert_eq!(back.len(), 149);
        let items = |s: &Stream| -> Vec<(StreamId, Vec<Vec<u8>>)> {
            s.iter()
                .map(|(id, f)| (id, f.map(<[u8]>::to_vec).collect()))
                .collect()
        };
        assert_eq!(items(&back), items(&s));
        let nodes = |s: &Stream| -> Vec<(StreamId, u32)> {
            s.nodes().iter().map(|(k, n)| (*k, n.live)).collect()
        };
        assert_eq!(nodes(&back), nodes(&s));
        assert_eq!(
            (
                back.last_id,
                back.first_id,
                back.max_deleted,
                back.entries_added
            ),
            (s.last_id, s.first_id, s.max_deleted, s.entries_added)
        );
        let g = back.groups.get(&b"g"[..]).expect("group");
        assert_eq!((g.last_id, g.entries_read), (StreamId::new(2, 0), 2));
        let nack = g.pel.get(&StreamId::new(2, 0)).expect("pending");
        assert_eq!(
            (&nack.consumer[..], nack.delivery_count),
            (&b"alice"[..], 3)
        );
        assert_eq!(
            g.consumers.get(&b"alice"[..]).map(|c| c.seen_time),
            Some(1_700_000_000_001)
        );
        // A truncated payload is refused, never a panic.
        for cut in [1, out.len() / 2, out.len() - 1] {
            assert!(decode(&mut RdbReader::new(&out[1..cut]), out[0]).is_err());
        }
    }
}
