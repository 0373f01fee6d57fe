//! A stream's consumer groups: creating and destroying them and their consumers, delivering new
//! and pending entries, acknowledging, claiming (XCLAIM, XAUTOCLAIM) and the pending summaries.
//! The logic lives here, beside the entries it reads, so that it is the same for every caller and
//! can be tested without a connection: everything takes plain values (ids, counts, consumer names,
//! `now` in milliseconds) and returns ids, counts or a [`StreamError`]. `commands/streams.rs`
//! parses the arguments, shapes the replies and signals waiters and keyspace events.

use super::stream::{
    Consumer, Group, Nack, RefPolicy, Stream, StreamError, StreamId, INVALID_READ,
};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::ops::Bound;

impl Consumer {
    /// Milliseconds since the consumer was last seen (XINFO CONSUMERS' `idle`).
    pub fn idle(&self, now: u64) -> u64 {
        now.saturating_sub(self.seen_time)
    }

    /// Milliseconds since it last read or claimed, -1 when it never did (XINFO's `inactive`).
    pub fn inactive(&self, now: u64) -> i64 {
        self.active_time
            .map_or(-1, |t| now.saturating_sub(t) as i64)
    }
}

/// XPENDING's summary form: how many are pending, the lowest and highest pending ids and how
/// many each consumer holds (only consumers holding some).
#[derive(Debug, PartialEq, Eq)]
pub struct PendingSummary<'a> {
    pub count: usize,
    pub first: StreamId,
    pub last: StreamId,
    pub consumers: Vec<(&'a Bytes, usize)>,
}

/// One row of XPENDING's extended form.
#[derive(Debug, PartialEq, Eq)]
pub struct Pending<'a> {
    pub id: StreamId,
    pub consumer: &'a Bytes,
    /// Milliseconds since the last delivery; negative when the delivery time (XCLAIM TIME) is
    /// in the future.
    pub idle: i64,
    pub delivery_count: u64,
}

/// What XDELEX and XACKDEL did with one id; the reply's integer is [`DeleteOutcome::code`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// Deleted (XACKDEL: acknowledged, and the entry is gone).
    Deleted,
    /// No such entry (XACKDEL: not pending in the group).
    NotFound,
    /// Kept because a group still needs it (ACKED).
    Referenced,
}

impl DeleteOutcome {
    /// Redis 8.2's reply code.
    pub fn code(self) -> i64 {
        match self {
            DeleteOutcome::Deleted => 1,
            DeleteOutcome::NotFound => -1,
            DeleteOutcome::Referenced => 2,
        }
    }
}

/// XCLAIM's options, as given.
#[derive(Clone, Copy, Debug)]
pub struct ClaimOptions {
    /// Entries delivered less than this many milliseconds ago stay with their consumer.
    pub min_idle: i64,
    /// The delivery time to record (IDLE, TIME): `None`, a negative time or one in the future
    /// records `now`, as Redis does.
    pub delivery_time: Option<i64>,
    /// RETRYCOUNT: the delivery count to record; a negative one is ignored, as Redis does.
    pub retry_count: Option<i64>,
    /// FORCE: an entry that is in the stream but not pending is claimed anyway.
    pub force: bool,
    /// JUSTID: the delivery count is left as it is.
    pub justid: bool,
    /// LASTID: the group's last delivered id moves up to it.
    pub last_id: StreamId,
}

/// XAUTOCLAIM's arguments: where the scan starts, how many entries to claim (or drop), and as
/// for XCLAIM the minimum idle time and JUSTID.
#[derive(Clone, Copy, Debug)]
pub struct AutoClaimArgs {
    pub start: StreamId,
    pub count: i64,
    pub min_idle: i64,
    pub justid: bool,
}

/// What XAUTOCLAIM did: the cursor to continue from (0-0 when the scan reached the end), the
/// ids claimed, and the pending ids whose entries were gone (dropped from the group).
#[derive(Debug, PartialEq, Eq)]
pub struct AutoClaim {
    pub next: StreamId,
    pub claimed: Vec<StreamId>,
    pub deleted: Vec<StreamId>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// XGROUP CREATECONSUMER: false when the consumer exists already.
    pub fn create_consumer(&mut self, name: &[u8], now: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(
            Bytes::copy_from_slice(name),
            Consumer {
                seen_time: now,
                ..Consumer::default()
            },
        );
        true
    }

    /// A reader (XREADGROUP) is seen at `now`, created if new: true when it was created.
    pub fn see_consumer(&mut self, name: &Bytes, now: u64) -> bool {
        let created = !self.consumers.contains_key(name);
        self.consumers.entry(name.clone()).or_default().seen_time = now;
        created
    }

    /// XGROUP DELCONSUMER: the consumer goes with its pending entries; `None` when there is no
    /// such consumer, else how many pending entries went with it.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Drops `id` from the group's and its consumer's pending lists: true when it was pending.
    pub(super) fn forget(&mut self, id: StreamId) -> bool {
        let Some(nack) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(&nack.consumer) {
            c.pel.remove(&id);
        }
        true
    }

    /// XACK: how many of `ids` were pending (each counted once).
    pub fn ack(&mut self, ids: &[StreamId]) -> usize {
        ids.iter().filter(|id| self.forget(**id)).count()
    }

    /// Moves the pending entry `id` to `consumer` (created if needed), which is then seen and
    /// active at `now`.
    fn claim_to(&mut self, id: StreamId, consumer: &Bytes, now: u64) {
        let Some(nack) = self.pel.get_mut(&id) else {
            return;
        };
        if nack.consumer != *consumer {
            if let Some(old) = self.consumers.get_mut(&nack.consumer) {
                old.pel.remove(&id);
            }
            nack.consumer = consumer.clone();
        }
        let c = self.consumers.entry(consumer.clone()).or_default();
        c.pel.insert(id);
        c.seen_time = now;
        c.active_time = Some(now);
    }

    /// XPENDING's summary; `None` when nothing is pending.
    pub fn pending_summary(&self) -> Option<PendingSummary<'_>> {
        let (first, _) = self.pel.first_key_value()?;
        let (last, _) = self.pel.last_key_value()?;
        Some(PendingSummary {
            count: self.pel.len(),
            first: *first,
            last: *last,
            consumers: self
                .consumers
                .iter()
                .filter(|(_, c)| !c.pel.is_empty())
                .map(|(name, c)| (name, c.pel.len()))
                .collect(),
        })
    }

    /// XPENDING's extended form: at most `count` pending entries from `start` to `end`
    /// (inclusive), of `consumer` only if given, idle at least `min_idle` ms (0: any).
    pub fn pending(
        &self,
        start: StreamId,
        end: StreamId,
        consumer: Option<&[u8]>,
        min_idle: i64,
        count: usize,
        now: u64,
    ) -> Vec<Pending<'_>> {
        if start > end {
            return Vec::new();
        }
        let ids: Box<dyn Iterator<Item = StreamId> + '_> = match consumer {
            Some(name) => match self.consumers.get(name) {
                Some(c) => Box::new(c.pel.range(start..=end).copied()),
                None => return Vec::new(),
            },
            None => Box::new(self.pel.range(start..=end).map(|(id, _)| *id)),
        };
        ids.filter_map(|id| {
            let nack = self.pel.get(&id)?;
            let idle = (now as i64).wrapping_sub(nack.delivery_time as i64);
            (min_idle == 0 || idle >= min_idle).then_some(Pending {
                id,
                consumer: &nack.consumer,
                idle,
                delivery_count: nack.delivery_count,
            })
        })
        .take(count)
        .collect()
    }
}

impl Stream {
    /// XGROUP CREATE: a group whose last delivered id is `last_id`.
    pub fn create_group(
        &mut self,
        name: &[u8],
        last_id: StreamId,
        entries_read: i64,
    ) -> Result<(), StreamError> {
        if self.groups.contains_key(name) {
            return Err(StreamError::GroupExists);
        }
        self.groups.insert(
            Bytes::copy_from_slice(name),
            Group::new(last_id, entries_read),
        );
        Ok(())
    }

    /// XGROUP DESTROY: true when the group existed.
    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        self.groups.remove(name).is_some()
    }

    /// XGROUP SETID: the group's last delivered id and read counter, as given (no check against
    /// the entries, as Redis). False when there is no such group.
    pub fn set_group_id(&mut self, name: &[u8], id: StreamId, entries_read: i64) -> bool {
        let Some(g) = self.groups.get_mut(name) else {
            return false;
        };
        g.last_id = id;
        g.entries_read = entries_read;
        true
    }

    /// Whether the stream holds entries after the group's last delivered id (XREADGROUP `>`
    /// has something to deliver); false for no such group.
    pub fn has_undelivered(&self, group: &[u8]) -> bool {
        let Some(g) = self.groups.get(group) else {
            return false;
        };
        self.last_entry_id().is_some_and(|top| top > g.last_id)
    }

    /// XREADGROUP `>`: delivers at most `count` (0: all) entries after the group's last id to
    /// `consumer`, moving the group's last id and read counter along. Unless `noack`, each
    /// becomes pending for `consumer` (taken from another consumer that held it, after
    /// XGROUP SETID moved the group back), with one delivery at `now`. Returns the ids.
    pub fn deliver_new(
        &mut self,
        group: &[u8],
        consumer: &Bytes,
        count: usize,
        noack: bool,
        now: u64,
    ) -> Vec<StreamId> {
        let Some(start) = self.groups.get(group).map(|g| g.last_id) else {
            return Vec::new();
        };
        let limit = if count == 0 { usize::MAX } else { count };
        let picked: Vec<StreamId> = match start.incr() {
            Some(from) => self
                .range(from, StreamId::MAX)
                .take(limit)
                .map(|(id, _)| id)
                .collect(),
            None => Vec::new(),
        };
        for &id in &picked {
            self.advance_group(group, id);
            let Some(g) = self.groups.get_mut(group) else {
                continue;
            };
            if !noack {
                let nack = Nack {
                    consumer: consumer.clone(),
                    delivery_time: now,
                    delivery_count: 1,
                };
                if let Some(old) = g.pel.insert(id, nack) {
                    if let Some(c) = g.consumers.get_mut(&old.consumer) {
                        c.pel.remove(&id);
                    }
                }
                if let Some(c) = g.consumers.get_mut(consumer) {
                    c.pel.insert(id);
                }
            }
        }
        if !picked.is_empty() {
            if let Some(c) = self
                .groups
                .get_mut(group)
                .and_then(|g| g.consumers.get_mut(consumer))
            {
                c.active_time = Some(now);
            }
        }
        picked
    }

    /// XREADGROUP with an id: at most `count` (0: all) of the consumer's own pending ids after
    /// `after`. Each one still in the stream counts one more delivery at `now`; one whose entry
    /// is gone is returned all the same (the reply shows it without fields).
    pub fn deliver_history(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        after: StreamId,
        count: usize,
        now: u64,
    ) -> Vec<StreamId> {
        let Some(start) = after.incr() else {
            return Vec::new();
        };
        let limit = if count == 0 { usize::MAX } else { count };
        let Stream {
            entries, groups, ..
        } = self;
        let Some(g) = groups.get_mut(group) else {
            return Vec::new();
        };
        let ids: Vec<StreamId> = g
            .consumers
            .get(consumer)
            .map(|c| c.pel.range(start..).take(limit).copied().collect())
            .unwrap_or_default();
        for id in &ids {
            if entries.get(*id).is_some() {
                if let Some(n) = g.pel.get_mut(id) {
                    n.delivery_time = now;
                    n.delivery_count += 1;
                }
            }
        }
        ids
    }

    /// XCLAIM: gives `consumer` each of `ids` that is pending and idle long enough (or, with
    /// FORCE, in the stream and not pending), in the order given. A pending id whose entry is
    /// gone is dropped from the group. `None` when there is no such group; else the ids claimed.
    pub fn claim(
        &mut self,
        group: &[u8],
        consumer: &Bytes,
        ids: &[StreamId],
        opts: ClaimOptions,
        now: u64,
    ) -> Option<Vec<StreamId>> {
        let Stream {
            entries, groups, ..
        } = self;
        let g = groups.get_mut(group)?;
        let now_i = now as i64;
        let delivery_time = match opts.delivery_time {
            Some(t) if (0..=now_i).contains(&t) => t as u64,
            _ => now,
        };
        let retry_count = opts.retry_count.filter(|n| *n >= 0);
        if opts.last_id > g.last_id {
            g.last_id = opts.last_id;
        }
        let mut claimed = Vec::new();
        for &id in ids {
            if entries.get(id).is_none() {
                g.forget(id);
                continue;
            }
            let mut fresh = false;
            if opts.force && !g.pel.contains_key(&id) {
                g.pel.insert(
                    id,
                    Nack {
                        consumer: Bytes::new(),
                        delivery_time: now,
                        delivery_count: 1,
                    },
                );
                fresh = true;
            }
            let Some(nack) = g.pel.get_mut(&id) else {
                continue;
            };
            if !fresh
                && opts.min_idle != 0
                && now_i.wrapping_sub(nack.delivery_time as i64) < opts.min_idle
            {
                continue;
            }
            nack.delivery_time = delivery_time;
            if let Some(n) = retry_count {
                nack.delivery_count = n as u64;
            } else if !opts.justid {
                nack.delivery_count += 1;
            }
            g.claim_to(id, consumer, now);
            claimed.push(id);
        }
        Some(claimed)
    }

    /// XAUTOCLAIM: scans the group's pending entries from `start`, claiming for `consumer` those
    /// idle at least `min_idle` ms (0: any) until `count` are claimed or dropped (a pending id
    /// whose entry is gone is dropped and counts), looking at no more than ten times `count`.
    /// Unless `justid`, each claim counts one more delivery. `None` when there is no such group.
    pub fn autoclaim(
        &mut self,
        group: &[u8],
        consumer: &Bytes,
        args: AutoClaimArgs,
        now: u64,
    ) -> Option<AutoClaim> {
        let AutoClaimArgs {
            start,
            mut count,
            min_idle,
            justid,
        } = args;
        let Stream {
            entries, groups, ..
        } = self;
        let g = groups.get_mut(group)?;
        let mut attempts = count.saturating_mul(10);
        let mut claimed = Vec::new();
        let mut deleted = Vec::new();
        let after = |g: &Group, prev: Option<StreamId>| match prev {
            None => g.pel.range(start..).next().map(|(id, _)| *id),
            Some(prev) => g
                .pel
                .range((Bound::Excluded(prev), Bound::Unbounded))
                .next()
                .map(|(id, _)| *id),
        };
        // The last pending id looked at; `Some(MAX)` once the scan ran out.
        let mut last_seen: Option<StreamId> = None;
        while attempts > 0 && count > 0 {
            attempts -= 1;
            let Some(id) = after(g, last_seen) else {
                last_seen = Some(StreamId::MAX);
                break;
            };
            last_seen = Some(id);
            if entries.get(id).is_none() {
                g.forget(id);
                deleted.push(id);
                count -= 1;
                continue;
            }
            let Some(nack) = g.pel.get_mut(&id) else {
                continue;
            };
            if min_idle != 0 && (now as i64).wrapping_sub(nack.delivery_time as i64) < min_idle {
                continue;
            }
            nack.delivery_time = now;
            if !justid {
                nack.delivery_count += 1;
            }
            g.claim_to(id, consumer, now);
            claimed.push(id);
            count -= 1;
        }
        let next = match last_seen {
            Some(StreamId::MAX) => StreamId::MIN,
            prev => after(g, prev).unwrap_or(StreamId::MIN),
        };
        Some(AutoClaim {
            next,
            claimed,
            deleted,
        })
    }

    /// XDELEX: deletes each of `ids` under `policy`, answering per id (in order) 1 when the entry
    /// was deleted, -1 when the stream has no such entry, 2 when ACKED kept it because a group
    /// still needs it. DELREF drops the id from every pending list even when the entry is gone.
    pub fn delete_with(&mut self, ids: &[StreamId], policy: RefPolicy) -> Vec<DeleteOutcome> {
        ids.iter()
            .map(|&id| {
                if policy == RefPolicy::Acked && self.referenced(id) {
                    return DeleteOutcome::Referenced;
                }
                if policy == RefPolicy::DelRef {
                    self.unreference(id);
                }
                if self.delete_entries(&[id]) == 1 {
                    DeleteOutcome::Deleted
                } else {
                    DeleteOutcome::NotFound
                }
            })
            .collect()
    }

    /// XACKDEL: acknowledges each of `ids` in `group` and deletes its entry under `policy`. Per
    /// id: -1 when it was not pending in the group (nothing done), 2 when it was acknowledged but
    /// ACKED kept the entry for another group, 1 when it was acknowledged and the entry is gone
    /// (deleted now, or already). `None` when there is no such group.
    pub fn ack_delete(
        &mut self,
        group: &[u8],
        ids: &[StreamId],
        policy: RefPolicy,
    ) -> Option<Vec<DeleteOutcome>> {
        self.groups.get(group)?;
        Some(
            ids.iter()
                .map(|&id| {
                    if !self.groups.get_mut(group).is_some_and(|g| g.forget(id)) {
                        return DeleteOutcome::NotFound;
                    }
                    if policy == RefPolicy::Acked && self.referenced(id) {
                        return DeleteOutcome::Referenced;
                    }
                    if policy == RefPolicy::DelRef {
                        self.unreference(id);
                    }
                    self.delete_entries(&[id]);
                    DeleteOutcome::Deleted
                })
                .collect(),
        )
    }

    /// XINFO's `entries-read` and `lag` of a group; `None` where Redis cannot tell them.
    pub fn read_progress(&self, g: &Group) -> (Option<i64>, Option<i64>) {
        let entries_read = (g.entries_read != INVALID_READ).then_some(g.entries_read);
        (entries_read, self.lag(g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::stream::Fields;

    /// A stream with entries 1-0 ..= n-0 and a group `g` from 0-0.
    fn stream_with_group(n: u64) -> Stream {
        let mut s = Stream::default();
        for i in 1..=n {
            s.append(StreamId::new(i, 0), Fields::pack(&[b"f", b"v"]));
        }
        s.create_group(b"g", StreamId::MIN, 0).unwrap();
        s
    }

    fn id(ms: u64) -> StreamId {
        StreamId::new(ms, 0)
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn scan(start: StreamId, count: i64, min_idle: i64, justid: bool) -> AutoClaimArgs {
        AutoClaimArgs {
            start,
            count,
            min_idle,
            justid,
        }
    }

    fn opts() -> ClaimOptions {
        ClaimOptions {
            min_idle: 0,
            delivery_time: None,
            retry_count: None,
            force: false,
            justid: false,
            last_id: StreamId::MIN,
        }
    }

    #[test]
    fn a_group_name_is_taken_once() {
        let mut s = stream_with_group(1);
        assert_eq!(
            s.create_group(b"g", id(5), 3),
            Err(StreamError::GroupExists)
        );
        assert_eq!(s.groups[&b"g"[..]].last_id, StreamId::MIN);
        assert!(s.destroy_group(b"g"));
        assert!(!s.destroy_group(b"g"));
    }

    #[test]
    fn deliver_new_moves_the_group_and_makes_entries_pending() {
        let mut s = stream_with_group(5);
        let alice = b("alice");
        assert!(s
            .groups
            .get_mut(&b"g"[..])
            .unwrap()
            .see_consumer(&alice, 10));
        assert!(s.has_undelivered(b"g"));
        assert_eq!(
            s.deliver_new(b"g", &alice, 2, false, 100),
            vec![id(1), id(2)]
        );
        let g = &s.groups[&b"g"[..]];
        assert_eq!(g.last_id, id(2));
        assert_eq!(g.entries_read, 2);
        assert_eq!(g.pel.len(), 2);
        assert_eq!(g.pel[&id(1)].delivery_count, 1);
        assert_eq!(g.pel[&id(1)].delivery_time, 100);
        let c = &g.consumers[&alice];
        assert_eq!(
            c.pel.iter().copied().collect::<Vec<_>>(),
            vec![id(1), id(2)]
        );
        assert_eq!((c.seen_time, c.active_time), (10, Some(100)));
        // NOACK moves the group on without pending entries.
        assert_eq!(s.deliver_new(b"g", &alice, 0, true, 200).len(), 3);
        assert_eq!(s.groups[&b"g"[..]].pel.len(), 2);
        assert!(!s.has_undelivered(b"g"));
        assert_eq!(s.read_progress(&s.groups[&b"g"[..]]), (Some(5), Some(0)));
    }

    #[test]
    fn redelivery_after_setid_moves_the_entry_to_the_new_reader() {
        let mut s = stream_with_group(2);
        let (alice, bob) = (b("alice"), b("bob"));
        let g = s.groups.get_mut(&b"g"[..]).unwrap();
        g.see_consumer(&alice, 0);
        g.see_consumer(&bob, 0);
        s.deliver_new(b"g", &alice, 0, false, 1);
        assert!(s.set_group_id(b"g", StreamId::MIN, INVALID_READ));
        assert_eq!(s.deliver_new(b"g", &bob, 1, false, 2), vec![id(1)]);
        let g = &s.groups[&b"g"[..]];
        assert_eq!(g.pel[&id(1)].consumer, bob);
        assert!(!g.consumers[&alice].pel.contains(&id(1)));
        assert!(g.consumers[&bob].pel.contains(&id(1)));
    }

    #[test]
    fn history_counts_a_delivery_for_live_entries_only() {
        let mut s = stream_with_group(3);
        let alice = b("alice");
        s.groups.get_mut(&b"g"[..]).unwrap().see_consumer(&alice, 0);
        s.deliver_new(b"g", &alice, 0, false, 1);
        assert!(s.delete(id(2)));
        assert_eq!(
            s.deliver_history(b"g", &alice, StreamId::MIN, 0, 50),
            vec![id(1), id(2), id(3)]
        );
        let g = &s.groups[&b"g"[..]];
        assert_eq!(g.pel[&id(1)].delivery_count, 2);
        assert_eq!(g.pel[&id(1)].delivery_time, 50);
        assert_eq!(g.pel[&id(2)].delivery_count, 1);
        assert_eq!(s.deliver_history(b"g", &alice, id(1), 1, 60), vec![id(2)]);
        assert!(s
            .deliver_history(b"g", &alice, StreamId::MAX, 0, 60)
            .is_empty());
        assert!(s
            .deliver_history(b"g", b"nobody", StreamId::MIN, 0, 60)
            .is_empty());
    }

    #[test]
    fn claim_respects_min_idle_and_counts_deliveries() {
        let mut s = stream_with_group(3);
        let (alice, bob) = (b("alice"), b("bob"));
        s.groups.get_mut(&b"g"[..]).unwrap().see_consumer(&alice, 0);
        s.deliver_new(b"g", &alice, 0, false, 1000);
        let idle_500 = ClaimOptions {
            min_idle: 500,
            ..opts()
        };
        // 100 ms later nothing is idle enough.
        assert_eq!(
            s.claim(b"g", &bob, &[id(1), id(2)], idle_500, 1100),
            Some(vec![])
        );
        assert_eq!(s.groups[&b"g"[..]].pel[&id(1)].consumer, alice);
        // 600 ms later both are, and each counts one more delivery.
        assert_eq!(
            s.claim(b"g", &bob, &[id(2), id(1)], idle_500, 1600),
            Some(vec![id(2), id(1)])
        );
        let g = &s.groups[&b"g"[..]];
        assert_eq!(g.pel[&id(1)].consumer, bob);
        assert_eq!(g.pel[&id(1)].delivery_count, 2);
        assert_eq!(g.pel[&id(1)].delivery_time, 1600);
        assert_eq!(g.consumers[&alice].pel.len(), 1);
        assert_eq!(g.consumers[&bob].pel.len(), 2);
        assert_eq!(g.consumers[&bob].active_time, Some(1600));
        // JUSTID leaves the count; RETRYCOUNT sets it; TIME in the future records now.
        let justid = ClaimOptions {
            justid: true,
            ..opts()
        };
        s.claim(b"g", &alice, &[id(1)], justid, 1700).unwrap();
        assert_eq!(s.groups[&b"g"[..]].pel[&id(1)].delivery_count, 2);
        let retry = ClaimOptions {
            retry_count: Some(7),
            delivery_time: Some(99_999),
            ..opts()
        };
        s.claim(b"g", &alice, &[id(1)], retry, 1800).unwrap();
        let n = &s.groups[&b"g"[..]].pel[&id(1)];
        assert_eq!((n.delivery_count, n.delivery_time), (7, 1800));
        assert_eq!(s.claim(b"nogroup", &alice, &[id(1)], opts(), 0), None);
    }

    #[test]
    fn claim_drops_deleted_entries_and_forces_unpending_ones() {
        let mut s = stream_with_group(3);
        let alice = b("alice");
        s.deliver_new(b"g", &alice, 1, false, 0);
        assert!(s.delete(id(1)));
        let force = ClaimOptions {
            force: true,
            last_id: id(9),
            ..opts()
        };
        assert_eq!(
            s.claim(b"g", &alice, &[id(1), id(3), id(7)], force, 10),
            Some(vec![id(3)])
        );
        let g = &s.groups[&b"g"[..]];
        assert!(!g.pel.contains_key(&id(1)));
        assert_eq!(g.pel[&id(3)].consumer, alice);
        assert_eq!(g.pel[&id(3)].delivery_count, 2);
        assert_eq!(g.last_id, id(9));
    }

    #[test]
    fn autoclaim_scans_from_the_cursor_and_reports_deleted_ids() {
        let mut s = stream_with_group(6);
        let (alice, bob) = (b("alice"), b("bob"));
        s.deliver_new(b"g", &alice, 0, false, 0);
        assert!(s.delete(id(2)));
        let got = s
            .autoclaim(b"g", &bob, scan(StreamId::MIN, 3, 0, false), 10)
            .unwrap();
        assert_eq!(got.claimed, vec![id(1), id(3)]);
        assert_eq!(got.deleted, vec![id(2)]);
        assert_eq!(got.next, id(4));
        assert_eq!(s.groups[&b"g"[..]].pel[&id(3)].delivery_count, 2);
        let rest = s
            .autoclaim(b"g", &bob, scan(got.next, 10, 0, true), 20)
            .unwrap();
        assert_eq!(rest.claimed, vec![id(4), id(5), id(6)]);
        assert_eq!(rest.next, StreamId::MIN);
        assert_eq!(s.groups[&b"g"[..]].pel[&id(4)].delivery_count, 1);
        // Nothing idle 1 s: nothing claimed, and the scan still ends.
        let none = s.autoclaim(b"g", &alice, scan(StreamId::MIN, 2, 1000, false), 30);
        assert_eq!(
            none,
            Some(AutoClaim {
                next: StreamId::MIN,
                claimed: vec![],
                deleted: vec![]
            })
        );
        assert_eq!(
            s.autoclaim(b"x", &alice, scan(StreamId::MIN, 2, 0, false), 0),
            None
        );
    }

    #[test]
    fn ack_and_delconsumer_empty_the_pending_lists() {
        let mut s = stream_with_group(4);
        let (alice, bob) = (b("alice"), b("bob"));
        let g = s.groups.get_mut(&b"g"[..]).unwrap();
        g.see_consumer(&alice, 0);
        g.see_consumer(&bob, 0);
        s.deliver_new(b"g", &alice, 2, false, 0);
        s.deliver_new(b"g", &bob, 2, false, 0);
        let g = s.groups.get_mut(&b"g"[..]).unwrap();
        assert_eq!(g.ack(&[id(1), id(1), id(9)]), 1);
        assert!(!g.consumers[&alice].pel.contains(&id(1)));
        assert!(g.create_consumer(b"carol", 5));
        assert!(!g.create_consumer(b"carol", 6));
        assert_eq!(g.consumers[&b"carol"[..]].seen_time, 5);
        assert_eq!(g.delete_consumer(b"bob"), Some(2));
        assert_eq!(g.delete_consumer(b"bob"), None);
        assert_eq!(g.pel.keys().copied().collect::<Vec<_>>(), vec![id(2)]);
    }

    #[test]
    fn pending_summaries_and_rows() {
        let mut s = stream_with_group(4);
        let (alice, bob) = (b("alice"), b("bob"));
        let g = s.groups.get_mut(&b"g"[..]).unwrap();
        assert_eq!(g.pending_summary(), None);
        g.create_consumer(b"idle", 0);
        g.see_consumer(&alice, 0);
        g.see_consumer(&bob, 0);
        s.deliver_new(b"g", &alice, 3, false, 100);
        s.deliver_new(b"g", &bob, 1, false, 400);
        let g = &s.groups[&b"g"[..]];
        assert_eq!(
            g.pending_summary(),
            Some(PendingSummary {
                count: 4,
                first: id(1),
                last: id(4),
                consumers: vec![(&alice, 3), (&bob, 1)],
            })
        );
        let rows = g.pending(StreamId::MIN, StreamId::MAX, None, 0, 10, 500);
        assert_eq!(rows.len(), 4);
        assert_eq!(
            rows[3],
            Pending {
                id: id(4),
                consumer: &bob,
                idle: 100,
                delivery_count: 1
            }
        );
        let idle = g.pending(StreamId::MIN, StreamId::MAX, None, 200, 10, 500);
        assert_eq!(
            idle.iter().map(|p| p.id).collect::<Vec<_>>(),
            [id(1), id(2), id(3)]
        );
        let some = g.pending(id(2), StreamId::MAX, Some(b"alice"), 0, 1, 500);
        assert_eq!(some.iter().map(|p| p.id).collect::<Vec<_>>(), [id(2)]);
        assert!(g.pending(id(3), id(2), None, 0, 10, 500).is_empty());
        assert!(g
            .pending(StreamId::MIN, StreamId::MAX, Some(b"x"), 0, 10, 500)
            .is_empty());
        assert!(g
            .pending(StreamId::MIN, StreamId::MAX, None, 0, 0, 500)
            .is_empty());
    }

    #[test]
    fn lag_is_unknown_after_a_deletion_inside_the_unread_part() {
        let mut s = stream_with_group(5);
        let alice = b("alice");
        s.deliver_new(b"g", &alice, 2, false, 0);
        assert_eq!(s.read_progress(&s.groups[&b"g"[..]]), (Some(2), Some(3)));
        // A deletion after the group's last id: Redis cannot count what is left to read.
        assert_eq!(s.delete_entries(&[id(4)]), 1);
        assert_eq!(s.read_progress(&s.groups[&b"g"[..]]), (Some(2), None));
        // Reading past the deleted id makes the counter an estimate again: all read, lag 0.
        s.deliver_new(b"g", &alice, 0, false, 0);
        assert_eq!(s.read_progress(&s.groups[&b"g"[..]]), (Some(5), Some(0)));
    }

    /// Entries 1..=n, groups `g` and `h` from 0-0, `g` delivered everything to alice.
    fn two_groups(n: u64) -> Stream {
        let mut s = stream_with_group(n);
        s.create_group(b"h", StreamId::MIN, 0).unwrap();
        s.deliver_new(b"g", &b("alice"), 0, false, 0);
        s
    }

    #[test]
    fn acked_keeps_what_a_group_still_needs() {
        let mut s = two_groups(3);
        // `h` has not been delivered anything: every entry is still needed.
        assert!(s.referenced(id(1)));
        s.deliver_new(b"h", &b("bob"), 2, true, 0);
        // `h` read 1 and 2 without pending them; `g` still has them pending.
        assert!(s.referenced(id(1)));
        s.groups.get_mut(&b"g"[..]).unwrap().ack(&[id(1)]);
        assert!(!s.referenced(id(1)));
        assert!(s.referenced(id(3)));
        use DeleteOutcome::*;
        assert_eq!(
            s.delete_with(&[id(1), id(2), id(3), id(9)], RefPolicy::Acked),
            vec![Deleted, Referenced, Referenced, Referenced]
        );
        assert_eq!(s.len(), 2);
        // No groups, nothing needed.
        s.groups.clear();
        assert_eq!(
            s.delete_with(&[id(2), id(2)], RefPolicy::Acked),
            vec![Deleted, NotFound]
        );
    }

    #[test]
    fn delref_drops_every_reference_and_keepref_none() {
        let mut s = two_groups(3);
        s.deliver_new(b"h", &b("bob"), 0, false, 0);
        use DeleteOutcome::*;
        assert_eq!(s.delete_with(&[id(1)], RefPolicy::KeepRef), vec![Deleted]);
        assert!(s.groups[&b"g"[..]].pel.contains_key(&id(1)));
        // The entry is gone, its dangling references go all the same.
        assert_eq!(
            s.delete_with(&[id(1), id(2)], RefPolicy::DelRef),
            vec![NotFound, Deleted]
        );
        for g in s.groups.values() {
            assert_eq!(g.pel.keys().copied().collect::<Vec<_>>(), vec![id(3)]);
            assert!(g.consumers.values().all(|c| !c.pel.contains(&id(1))));
        }
        assert_eq!((s.max_deleted, s.first_id), (id(2), id(3)));
    }

    #[test]
    fn ack_delete_acknowledges_then_deletes() {
        let mut s = two_groups(3);
        s.deliver_new(b"h", &b("bob"), 0, false, 0);
        use DeleteOutcome::*;
        assert_eq!(s.ack_delete(b"x", &[id(1)], RefPolicy::KeepRef), None);
        // ACKED: acknowledged in g, kept for h.
        assert_eq!(
            s.ack_delete(b"g", &[id(1), id(1)], RefPolicy::Acked),
            Some(vec![Referenced, NotFound])
        );
        assert_eq!(s.len(), 3);
        assert_eq!(
            s.ack_delete(b"h", &[id(1)], RefPolicy::Acked),
            Some(vec![Deleted])
        );
        assert_eq!(s.len(), 2);
        // KEEPREF: h keeps its reference; acknowledging it later answers 1 though the entry is
        // already gone.
        assert_eq!(
            s.ack_delete(b"g", &[id(2)], RefPolicy::KeepRef),
            Some(vec![Deleted])
        );
        assert!(s.groups[&b"h"[..]].pel.contains_key(&id(2)));
        assert_eq!(
            s.ack_delete(b"h", &[id(2)], RefPolicy::KeepRef),
            Some(vec![Deleted])
        );
        // DELREF: h's reference goes too.
        assert_eq!(
            s.ack_delete(b"g", &[id(3)], RefPolicy::DelRef),
            Some(vec![Deleted])
        );
        assert!(s.groups.values().all(|g| g.pel.is_empty()));
        assert!(s.is_empty());
    }

    #[test]
    fn trimming_by_policy() {
        use crate::store::stream::Trim;
        // KEEPREF trims as before and leaves the pending lists.
        let mut s = two_groups(5);
        assert_eq!(s.trim(Trim::MaxLen(3), false, 0, RefPolicy::KeepRef), 2);
        assert_eq!(s.groups[&b"g"[..]].pel.len(), 5);
        // DELREF drops the trimmed ids from the pending lists.
        let mut s = two_groups(5);
        assert_eq!(s.trim(Trim::MinId(id(3)), false, 0, RefPolicy::DelRef), 2);
        assert_eq!(
            s.groups[&b"g"[..]].pel.keys().copied().collect::<Vec<_>>(),
            vec![id(3), id(4), id(5)]
        );
        // ACKED skips what a group needs: g has 1 pending, h read up to 3 (none pending).
        let mut s = two_groups(5);
        s.deliver_new(b"h", &b("bob"), 3, true, 0);
        s.groups
            .get_mut(&b"g"[..])
            .unwrap()
            .ack(&[id(2), id(3), id(4)]);
        assert_eq!(s.trim(Trim::MaxLen(2), false, 0, RefPolicy::Acked), 2);
        assert_eq!(
            s.iter().map(|(i, _)| i).collect::<Vec<_>>(),
            vec![id(1), id(4), id(5)]
        );
        // Approximate trimming keeps a node holding a needed entry whole.
        let mut s = two_groups(5);
        assert_eq!(s.trim(Trim::MaxLen(0), true, 0, RefPolicy::Acked), 0);
        assert_eq!(s.len(), 5);
    }

    #[test]
    fn acked_trimming_passes_a_node_it_keeps() {
        use crate::store::stream::Trim;
        // Three nodes of 100 entries; the group has only entry 50 pending.
        let mut s = Stream::default();
        for i in 1..=300 {
            s.append(id(i), Fields::pack(&[b"f", b"v"]));
        }
        s.create_group(b"g", id(300), 300).unwrap();
        s.groups.get_mut(&b"g"[..]).unwrap().pel.insert(
            id(50),
            Nack {
                consumer: b("alice"),
                delivery_time: 0,
                delivery_count: 1,
            },
        );
        assert_eq!(
            s.trim(Trim::MinId(id(250)), false, 0, RefPolicy::Acked),
            248
        );
        assert_eq!(
            s.iter().map(|(i, _)| i).take(2).collect::<Vec<_>>(),
            vec![id(50), id(250)]
        );
        assert_eq!(s.first_id, id(50));
    }

    #[test]
    fn consumer_idle_and_inactive_times() {
        let mut g = Group::new(StreamId::MIN, INVALID_READ);
        g.create_consumer(b"c", 100);
        let c = &g.consumers[&b"c"[..]];
        assert_eq!((c.idle(150), c.inactive(150)), (50, -1));
        assert_eq!(c.idle(50), 0);
    }
}
