//! Moving slots with their keys (`stmd cluster move-slots`).
//!
//! The admin tool records a request in Postgres (`stmd_cluster_migrations`); the source node sees
//! it when it follows the configuration (NOTIFY or the poll), claims it and carries it out here:
//!
//! 1. it connects to the target over RESP (authenticating with its own `requirepass`, which the
//!    nodes of a cluster share);
//! 2. it cuts the slots into batches (at most [`BATCH_SLOTS`] slots and, past the first slot,
//!    about [`BATCH_KEYS`] keys), and for each batch:
//!    - pauses the batch's slots ([`SlotGate::pause`]): new commands on them wait in their
//!      connection, and the commands already running anywhere are let finish, so nothing can
//!      change the slots' keys any more;
//!    - sends each key as `ASKING` + `RESTORE key ttl payload REPLACE` (Redis's DUMP format, the
//!      remaining TTL in ms); the target indexes STM entries on insert as on a capture;
//!    - flips the batch's owner in one configuration transaction (epoch + 1), which refuses when
//!      a slot changed owner meanwhile; installs the new map at once, and waits (bounded) until
//!      the target follows it too, so a redirected client is not sent back;
//!    - ends the pause: the waiting commands run again and get `MOVED`, as do clients blocked
//!      (BLPOP…) on the batch's keys, which are woken; then removes the keys here (which takes
//!      them out of this node's STM index).
//! 3. it marks the request done, with what moved and the pauses, or failed with the reason.
//!
//! A failure before a batch's flip (target down, a refused RESTORE, Postgres unreachable) ends
//! the pause and leaves the batch's keys and owner on the source; the copies already sent are
//! deleted from the target when it still answers. Batches flipped before stay moved.

use super::coordinator::Coordinator;
use super::peers::encode as request;
use super::Host;
use super::{key_slot, Cluster, NodeInfo, SLOTS};
use redis_protocol::resp2::types::OwnedFrame;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// At most this many slots are paused together.
const BATCH_SLOTS: usize = 64;
/// A batch takes further slots only while it holds fewer keys than this.
const BATCH_KEYS: usize = 2000;
/// RESTOREs sent before their replies are read.
const PIPELINE: usize = 256;
/// How long a pause waits for the commands already running to finish (a long script) before the
/// batch is given up.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);
/// Any one exchange with the target.
const IO_LIMIT: Duration = Duration::from_secs(10);
/// How long the pause waits for the target to follow the new map.
const FOLLOW_LIMIT: Duration = Duration::from_secs(2);

/// The slots being handed over and the commands running on this node, so a batch can be
/// paused with nothing half-done: every keyed command enters the gate before it checks its slot
/// ([`SlotGate::enter`]) and stays inside until it has run.
pub struct SlotGate {
    paused: Box<[AtomicBool]>,
    /// Some slot is paused (the common case, none, costs one load).
    any: AtomicBool,
    /// Commands enter `inside[turn & 1]`; a pause moves the turn on and waits for the other
    /// counter to drain, so a stream of new commands cannot hold it up.
    turn: AtomicUsize,
    inside: [AtomicUsize; 2],
    resumed: Notify,
    /// A migration is running on this node (one at a time).
    pub busy: AtomicBool,
}

impl Default for SlotGate {
    fn default() -> Self {
        SlotGate {
            paused: (0..SLOTS).map(|_| AtomicBool::new(false)).collect(),
            any: AtomicBool::new(false),
            turn: AtomicUsize::new(0),
            inside: [AtomicUsize::new(0), AtomicUsize::new(0)],
            resumed: Notify::new(),
            busy: AtomicBool::new(false),
        }
    }
}

/// A command inside the gate; leaving is dropping it.
pub struct Inside<'a>(&'a AtomicUsize);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl SlotGate {
    /// Enters the gate for a command on `slot`; None when the slot is paused (the command must
    /// wait for [`SlotGate::resumed`] and then be dispatched again). Sequentially consistent:
    /// either the pause sees this command inside and waits for it, or this command sees the pause.
    pub fn enter(&self, slot: u16) -> Option<Inside<'_>> {
        let counter = &self.inside[self.turn.load(SeqCst) & 1];
        counter.fetch_add(1, SeqCst);
        let inside = Inside(counter);
        if self.any.load(SeqCst) && self.paused[usize::from(slot)].load(SeqCst) {
            return None;
        }
        Some(inside)
    }

    /// Whether some slot is paused.
    pub fn pausing(&self) -> bool {
        self.any.load(SeqCst)
    }

    /// Resolves when no slot is paused any more (at once when none is).
    pub async fn resumed(&self) {
        let notified = self.resumed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !self.pausing() {
            return;
        }
        notified.await;
    }

    /// Pauses `slots` and waits until every command that entered before has left. Gives up (and
    /// resumes) after `limit`.
    async fn pause(&self, slots: &[u16], limit: Duration) -> Result<(), String> {
        for &slot in slots {
            self.paused[usize::from(slot)].store(true, SeqCst);
        }
        self.any.store(true, SeqCst);
        let before = &self.inside[self.turn.fetch_add(1, SeqCst) & 1];
        let deadline = Instant::now() + limit;
        let mut spins = 0u32;
        while before.load(SeqCst) != 0 {
            if Instant::now() > deadline {
                self.resume(slots);
                return Err(format!(
                    "commands still running after {} s kept the slots from pausing (a long script?)",
                    limit.as_secs()
                ));
            }
            // Commands take microseconds: yield first, sleep only when one takes longer.
            spins += 1;
            match spins {
                0..=1000 => tokio::task::yield_now().await,
                _ => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
        Ok(())
    }

    /// Ends the pause of `slots`; the commands waiting on them are dispatched again.
    fn resume(&self, slots: &[u16]) {
        for &slot in slots {
            self.paused[usize::from(slot)].store(false, SeqCst);
        }
        self.any.store(false, SeqCst);
        self.resumed.notify_waiters();
    }
}

/// Claims this node's next migration request, if it runs none, and carries it out in its own
/// task (the follower keeps heartbeating meanwhile).
pub async fn take_request(
    cluster: &Arc<Cluster>,
    host: &Arc<impl Host>,
    coordinator: &Coordinator,
) {
    if cluster.gate.busy.swap(true, SeqCst) {
        return;
    }
    let claimed = match coordinator.claim_migration(&cluster.me.id).await {
        Ok(Some(request)) => request,
        Ok(None) => {
            cluster.gate.busy.store(false, SeqCst);
            return;
        }
        Err(err) => {
            cluster.gate.busy.store(false, SeqCst);
            tracing::warn!(%err, "cannot read the slot migration requests");
            return;
        }
    };
    let (cluster, host, coordinator) = (cluster.clone(), host.clone(), coordinator.clone());
    tokio::spawn(async move {
        let (id, target, slots) = claimed;
        tracing::info!(id, %target, %slots, "slot migration started");
        let outcome = carry_out(&cluster, &*host, &coordinator, &target, &slots).await;
        let (ok, line) = match outcome {
            Ok(line) => (true, line),
            Err(line) => (false, line),
        };
        use std::sync::atomic::Ordering::Relaxed;
        let counter = match ok {
            true => &cluster.stats.migrations_done,
            false => &cluster.stats.migrations_failed,
        };
        counter.fetch_add(1, Relaxed);
        match ok {
            true => tracing::info!(id, result = %line, "slot migration done"),
            false => tracing::warn!(id, result = %line, "slot migration failed"),
        }
        if let Err(err) = coordinator.finish_migration(id, ok, &line).await {
            tracing::warn!(id, %err, "cannot record the end of a slot migration");
        }
        cluster.gate.busy.store(false, SeqCst);
    });
}

/// What a migration moved so far.
#[derive(Default)]
struct Moved {
    slots: Vec<u16>,
    keys: usize,
    /// Each batch's pause, in microseconds.
    pauses_us: Vec<u64>,
    epochs: Option<(u64, u64)>,
}

impl Moved {
    fn describe(&self, target: &NodeInfo) -> String {
        let mut pauses = self.pauses_us.clone();
        pauses.sort_unstable();
        let ms = |us: u64| us as f64 / 1000.0;
        let median = pauses.get(pauses.len() / 2).copied().unwrap_or(0);
        let max = pauses.last().copied().unwrap_or(0);
        let epochs = match self.epochs {
            Some((old, new)) => format!("; epoch {old} -> {new}"),
            None => String::new(),
        };
        format!(
            "moved {} slots ({}) and {} keys to {} {} in {} batches; pause per batch: max {:.3} ms, median {:.3} ms{epochs}",
            self.slots.len(),
            super::admin::render_ranges(&super::admin::to_ranges(&self.slots)),
            self.keys,
            target.id,
            target.addr(),
            self.pauses_us.len(),
            ms(max),
            ms(median),
        )
    }
}

async fn carry_out(
    cluster: &Cluster,
    host: &impl Host,
    coordinator: &Coordinator,
    target_id: &str,
    slots_text: &str,
) -> Result<String, String> {
    let map = cluster.map();
    let target = map
        .node(target_id)
        .cloned()
        .ok_or_else(|| format!("the target node {target_id} is not registered"))?;
    let me = cluster.me.id.as_str();
    let mut slots = Vec::new();
    for (first, last) in super::parse_slot_ranges(slots_text)? {
        for slot in first..=last {
            if map.owner(slot).is_none_or(|n| n.id != me) {
                return Err(format!(
                    "slot {slot} is not owned by the source node {me} (epoch {})",
                    map.epoch
                ));
            }
            slots.push(slot);
        }
    }
    slots.sort_unstable();
    slots.dedup();
    let password = host.config().read().requirepass.clone();
    let mut link = Link::connect(&target.addr(), &password)
        .await
        .map_err(|e| format!("{e}; nothing was moved: the keys and owners stay on the source"))?;
    let mut moved = Moved::default();
    for batch in batches(&slots, &keys_per_slot(host, &slots)) {
        if let Err(err) = move_batch(
            cluster,
            host,
            coordinator,
            &target,
            &mut link,
            &batch,
            &mut moved,
        )
        .await
        {
            let before = match moved.slots.is_empty() {
                true => "nothing was moved".to_string(),
                false => format!("before it, {}", moved.describe(&target)),
            };
            return Err(format!(
                "slots {}: {err}; their keys and owner stay on the source ({before})",
                super::admin::render_ranges(&super::admin::to_ranges(&batch))
            ));
        }
    }
    Ok(moved.describe(&target))
}

/// How many keys each of `slots` holds now (an estimate for cutting batches).
fn keys_per_slot(host: &impl Host, slots: &[u16]) -> Vec<usize> {
    let mut wanted = vec![false; SLOTS];
    for &slot in slots {
        wanted[usize::from(slot)] = true;
    }
    let mut counts = vec![0usize; SLOTS];
    let store = &host.store();
    if store.existing(0).is_some() {
        for shard in 0..store.shard_count() {
            store.lock_shard(0, shard).for_each(|key, _| {
                let slot = usize::from(key_slot(key));
                if wanted[slot] {
                    counts[slot] += 1;
                }
            });
        }
    }
    counts
}

/// Cuts `slots` (ascending) into batches of at most [`BATCH_SLOTS`] slots and about
/// [`BATCH_KEYS`] keys (a slot holding more is a batch of its own).
fn batches(slots: &[u16], counts: &[usize]) -> Vec<Vec<u16>> {
    let mut out: Vec<Vec<u16>> = Vec::new();
    let mut keys = 0usize;
    for &slot in slots {
        let here = counts.get(usize::from(slot)).copied().unwrap_or(0);
        match out.last_mut() {
            Some(batch) if batch.len() < BATCH_SLOTS && keys + here <= BATCH_KEYS => {
                batch.push(slot);
                keys += here;
            }
            _ => {
                out.push(vec![slot]);
                keys = here;
            }
        }
    }
    out
}

/// One key on its way: name, DUMP payload and remaining TTL in ms (0: none).
struct Item {
    key: Vec<u8>,
    payload: Vec<u8>,
    ttl_ms: u64,
}

/// The live keys of the slots marked in `in_batch`, read shard by shard.
fn collect(host: &impl Host, in_batch: &[bool]) -> Vec<Item> {
    let store = &host.store();
    let mut items = Vec::new();
    if store.existing(0).is_none() {
        return items;
    }
    for shard in 0..store.shard_count() {
        let locked = store.lock_shard(0, shard);
        let now = locked.now;
        locked.for_each(|key, entry| {
            if in_batch[usize::from(key_slot(key))] {
                items.push(Item {
                    key: key.to_vec(),
                    payload: crate::rdb::dump(&entry.value),
                    ttl_ms: match entry.expire_at() {
                        0 => 0,
                        at => at.saturating_sub(now).max(1),
                    },
                });
            }
        });
    }
    items
}

async fn move_batch(
    cluster: &Cluster,
    host: &impl Host,
    coordinator: &Coordinator,
    target: &NodeInfo,
    link: &mut Link,
    batch: &[u16],
    moved: &mut Moved,
) -> Result<(), String> {
    let mut in_batch = vec![false; SLOTS];
    for &slot in batch {
        in_batch[usize::from(slot)] = true;
    }
    let started = Instant::now();
    cluster.gate.pause(batch, DRAIN_LIMIT).await?;
    let items = collect(host, &in_batch);
    let copied = async {
        link.restore_all(&items).await?;
        let me = cluster.me.id.clone();
        coordinator
            .change(|_, owners| {
                for &slot in batch {
                    let owner = &mut owners[usize::from(slot)];
                    if owner.as_deref() != Some(me.as_str()) {
                        return Err(format!("slot {slot} changed owner during the move"));
                    }
                    *owner = Some(target.id.clone());
                }
                Ok(String::new())
            })
            .await
    }
    .await;
    let (old_epoch, new_epoch) = match copied {
        Ok((old, new, _)) => (old, new),
        Err(err) => {
            cluster.gate.resume(batch);
            link.remove_copies(&items).await;
            return Err(err);
        }
    };
    // Serve the new map at once (the notification may take a moment), then let the target catch
    // up before the waiting clients are sent to it.
    let mut next = (*cluster.map()).clone();
    next.epoch = new_epoch;
    match next.index_of(&target.id) {
        Some(index) => {
            for &slot in batch {
                next.owners[usize::from(slot)] = index as u16;
            }
            cluster.follow(next, host.pubsub());
        }
        None => {
            if let Ok(map) = coordinator.load().await {
                cluster.follow(map, host.pubsub());
            }
        }
    }
    link.await_epoch(new_epoch).await;
    cluster.gate.resume(batch);
    let pause_us = started.elapsed().as_micros() as u64;
    record_pause(cluster, pause_us);
    // Clients blocked on the batch's keys run their command again and are redirected.
    if let Some(space) = host.store().existing(0) {
        space
            .waiters
            .wake_all_where(|key| in_batch[usize::from(key_slot(key))]);
    }
    for item in &items {
        host.store().lock_one(0, &item.key).remove(&item.key);
    }
    // No command made these changes: their notes must not be published with the next command.
    crate::store::changes::take();
    moved.slots.extend_from_slice(batch);
    moved.keys += items.len();
    moved.pauses_us.push(pause_us);
    moved.epochs = Some((moved.epochs.map_or(old_epoch, |(old, _)| old), new_epoch));
    use std::sync::atomic::Ordering::Relaxed;
    cluster
        .stats
        .slots_migrated_out
        .fetch_add(batch.len() as u64, Relaxed);
    cluster
        .stats
        .keys_migrated_out
        .fetch_add(items.len() as u64, Relaxed);
    Ok(())
}

fn record_pause(cluster: &Cluster, pause_us: u64) {
    use std::sync::atomic::Ordering::Relaxed;
    cluster
        .stats
        .migration_pause_last_us
        .store(pause_us, Relaxed);
    cluster
        .stats
        .migration_pause_max_us
        .fetch_max(pause_us, Relaxed);
}

/// The connection to the target node, each step bounded by [`IO_LIMIT`].
struct Link(super::peers::Link);

impl Link {
    async fn connect(addr: &str, password: &str) -> Result<Link, String> {
        tokio::time::timeout(IO_LIMIT, super::peers::Link::connect(addr, password))
            .await
            .map_err(|_| format!("connecting to the target {addr} timed out"))?
            .map(Link)
            .map_err(|e| format!("cannot connect to the target {addr}: {e}"))
    }

    async fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        tokio::time::timeout(IO_LIMIT, self.0.send(bytes))
            .await
            .map_err(|_| "writing to the target timed out".to_string())?
            .map_err(|e| format!("writing to the target failed: {e}"))
    }

    async fn reply(&mut self) -> Result<OwnedFrame, String> {
        tokio::time::timeout(IO_LIMIT, self.0.reply())
            .await
            .map_err(|_| "the target did not answer in time".to_string())?
            .map_err(|e| format!("reading from the target failed: {e}"))
    }

    async fn expect_ok(&mut self, what: &str) -> Result<(), String> {
        match self.reply().await? {
            OwnedFrame::SimpleString(s) if s == b"OK" => Ok(()),
            OwnedFrame::Error(e) => Err(format!("the target refused {what}: {e}")),
            other => Err(format!("the target answered {what} with {other:?}")),
        }
    }

    /// Sends every item as ASKING + RESTORE … REPLACE, pipelined, and checks every reply.
    async fn restore_all(&mut self, items: &[Item]) -> Result<(), String> {
        for chunk in items.chunks(PIPELINE) {
            let mut out = Vec::new();
            for item in chunk {
                let ttl = item.ttl_ms.to_string();
                request(&mut out, &[b"ASKING"]);
                request(
                    &mut out,
                    &[
                        b"RESTORE",
                        &item.key,
                        ttl.as_bytes(),
                        &item.payload,
                        b"REPLACE",
                    ],
                );
            }
            self.send(&out).await?;
            for _ in chunk {
                self.expect_ok("ASKING").await?;
                self.expect_ok("RESTORE").await?;
            }
        }
        Ok(())
    }

    /// After a failed flip: deletes the copies sent for a batch, when the target still answers
    /// (best effort; the target does not serve these slots, so a copy left there is not read).
    async fn remove_copies(&mut self, items: &[Item]) {
        for chunk in items.chunks(PIPELINE) {
            let mut out = Vec::new();
            for item in chunk {
                request(&mut out, &[b"ASKING"]);
                request(&mut out, &[b"DEL", &item.key]);
            }
            if self.send(&out).await.is_err() {
                return;
            }
            for _ in 0..chunk.len() * 2 {
                if self.reply().await.is_err() {
                    return;
                }
            }
        }
    }

    /// Waits (at most [`FOLLOW_LIMIT`]) until the target has installed `epoch`.
    async fn await_epoch(&mut self, epoch: u64) {
        let deadline = Instant::now() + FOLLOW_LIMIT;
        let mut out = Vec::new();
        request(&mut out, &[b"CLUSTER", b"INFO"]);
        while Instant::now() < deadline {
            if self.send(&out).await.is_err() {
                return;
            }
            let text = match self.reply().await {
                Ok(OwnedFrame::BulkString(text)) => text,
                _ => return,
            };
            let current = String::from_utf8_lossy(&text)
                .lines()
                .find_map(|line| line.strip_prefix("cluster_current_epoch:"))
                .and_then(|n| n.trim().parse::<u64>().ok());
            if current.is_some_and(|current| current >= epoch) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_hold_few_slots_and_about_so_many_keys() {
        let mut counts = vec![0usize; SLOTS];
        counts[3] = BATCH_KEYS + 1; // a slot fuller than a batch is a batch of its own
        counts[4] = 1;
        let slots: Vec<u16> = (0..200).collect();
        let cut = batches(&slots, &counts);
        assert_eq!(cut[0], [0, 1, 2]);
        assert_eq!(cut[1], [3]);
        assert_eq!(cut[2].first(), Some(&4));
        assert!(cut.iter().all(|b| b.len() <= BATCH_SLOTS));
        assert_eq!(cut.concat(), slots, "every slot once, in order");
    }

    #[test]
    fn a_paused_slot_turns_commands_away_until_resumed() {
        let gate = SlotGate::default();
        let inside = gate.enter(7).expect("not paused");
        drop(inside);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime
            .block_on(gate.pause(&[7], Duration::from_secs(1)))
            .expect("nothing inside");
        assert!(gate.enter(7).is_none());
        assert!(gate.enter(8).is_some(), "other slots run");
        gate.resume(&[7]);
        assert!(gate.enter(7).is_some());
        // A command inside keeps a pause from completing.
        let held = gate.enter(9).expect("not paused");
        assert!(runtime
            .block_on(gate.pause(&[9], Duration::from_millis(50)))
            .is_err());
        assert!(gate.enter(9).is_some(), "a failed pause resumes its slots");
        drop(held);
    }
}
