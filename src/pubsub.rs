//! Pub/Sub: who is subscribed to which channel or pattern, and delivery into each subscriber's
//! mailbox.
//!
//! PUBLISH runs on the publisher's task and must never wait for a subscriber, so each subscribed
//! connection owns a bounded mailbox (a tokio `mpsc` channel) that its connection loop `select!`s
//! on beside the socket, writing whatever arrived in one write. A subscriber that cannot keep up is
//! disconnected, as Redis does at its pub/sub output-buffer limit: more than [`MAILBOX_MESSAGES`]
//! messages waiting, more bytes than the `pubsub` class's hard limit of `client-output-buffer-limit`
//! (32mb by default), or at least its soft limit (8mb) for its soft seconds (60) in a row. Memory
//! stays bounded and the publisher is never slowed down by a slow reader.

use crate::clients::ClientInfo;
use crate::glob;
use crate::output_limit::{ClassLimit, ClientClass};
use crate::protocol::Reply;
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Most messages waiting in one subscriber's mailbox.
pub const MAILBOX_MESSAGES: usize = 16 * 1024;

/// One item on its way to one connection's mailbox.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// A published message; `pattern` is the pattern that matched, for `pmessage`; `sharded` for
    /// SPUBLISH's `smessage`.
    Message {
        pattern: Option<Bytes>,
        channel: Bytes,
        payload: Bytes,
        sharded: bool,
    },
    /// One MONITOR line, already encoded (`+<time> [0 <addr>] "cmd" …\r\n`): the same bytes in
    /// RESP2 and RESP3, as Redis sends them.
    Monitor(Bytes),
    /// Any other out-of-band frame (tracking's `invalidate` pushes); `size` is its approximate
    /// byte count for the mailbox limits.
    Frame { reply: Reply, size: usize },
    /// Cluster mode: this shard channel's slot left the node ([`PubSub::drop_shard_channels`]).
    /// The connection drops it from its own set and is told with `sunsubscribe`, as Redis does.
    ShardChannelGone(Bytes),
}

impl Delivery {
    fn size(&self) -> usize {
        match self {
            Delivery::Message {
                pattern,
                channel,
                payload,
                ..
            } => channel.len() + payload.len() + pattern.as_ref().map_or(0, |p| p.len()),
            Delivery::Monitor(line) => line.len(),
            Delivery::Frame { size, .. } => *size,
            Delivery::ShardChannelGone(channel) => channel.len(),
        }
    }
}

/// A `[kind, name, count]` (un)subscribe confirmation: a push in RESP3, an array in RESP2.
pub fn confirmation(kind: &'static str, name: Option<&Bytes>, count: usize) -> Reply {
    Reply::Push(vec![
        Reply::bulk_str(kind),
        name.map_or(Reply::Nil, |n| Reply::Bulk(n.clone())),
        Reply::Int(count as i64),
    ])
}

/// The sending side of a subscriber's mailbox, shared by every channel it is subscribed to.
pub struct Mailbox {
    tx: mpsc::Sender<Delivery>,
    queued_bytes: AtomicUsize,
    /// The output-buffer limit of `class` when the mailbox was made (a CONFIG SET applies to
    /// mailboxes made afterwards).
    limit: ClassLimit,
    /// `pubsub` for subscribers; `normal` for MONITOR, as Redis classes monitors.
    class: ClientClass,
    /// Milliseconds after the client connected when the queue reached the soft limit, plus one
    /// (0: below the soft limit).
    soft_since: AtomicU64,
    client: Arc<ClientInfo>,
}

impl Mailbox {
    /// Queues a message; false (and the subscriber is disconnected) when the mailbox is over its
    /// limits.
    pub fn deliver(&self, delivery: Delivery) -> bool {
        let size = delivery.size();
        let queued = self.queued_bytes.fetch_add(size, Ordering::AcqRel) + size;
        let over = if self.limit.over_hard(queued) {
            Some("hard")
        } else if self.over_soft_too_long(queued) {
            Some("soft")
        } else {
            None
        };
        let full = over.is_none() && self.tx.try_send(delivery).is_err();
        if over.is_some() || full {
            self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
            if !self.tx.is_closed() && !self.client.is_killed() {
                let limit = over.unwrap_or("message count");
                self.client.close_for_output_limit(self.class, limit);
            }
            return false;
        }
        true
    }

    /// True when the queue has been at least the soft limit for the soft seconds; starts that clock
    /// when the queue reaches it.
    fn over_soft_too_long(&self, queued: usize) -> bool {
        let Some(allowed) = self.limit.soft_deadline(queued) else {
            return false;
        };
        // Milliseconds since the client connected, plus one: 0 stays "not over the limit".
        let now = crate::clock::monotonic_ms().saturating_sub(self.client.connected_at_ms) + 1;
        match self
            .soft_since
            .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => false,
            Err(since) => now.saturating_sub(since) >= allowed.as_millis() as u64,
        }
    }

    /// The client this mailbox belongs to.
    pub fn client(&self) -> &Arc<ClientInfo> {
        &self.client
    }

    /// Called by the subscriber's connection for each message it takes out.
    pub fn taken(&self, delivery: &Delivery) {
        let size = delivery.size();
        let queued = self.queued_bytes.fetch_sub(size, Ordering::AcqRel) - size;
        if self.limit.soft_deadline(queued).is_none() {
            self.soft_since.store(0, Ordering::Release);
        }
    }
}

/// One connection's subscriptions and the receiving side of its mailbox (created on the first
/// SUBSCRIBE, so connections that never subscribe pay nothing).
#[derive(Default)]
pub struct Subscriptions {
    pub channels: HashSet<Bytes>,
    pub patterns: HashSet<Bytes>,
    /// Shard channels (SSUBSCRIBE): a namespace of their own, reached only by SPUBLISH.
    pub shard_channels: HashSet<Bytes>,
    pub mailbox: Option<Arc<Mailbox>>,
    pub inbox: Option<mpsc::Receiver<Delivery>>,
}

impl Subscriptions {
    /// Channels plus patterns: the count every (P)(UN)SUBSCRIBE confirmation carries (shard
    /// channels are counted apart, in S(UN)SUBSCRIBE's confirmations).
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// True with any subscription at all (RESP2 subscriber mode).
    pub fn any(&self) -> bool {
        self.count() + self.shard_channels.len() > 0
    }

    /// What a delivery taken from the mailbox writes: the `message` / `pmessage` / `smessage`
    /// frame (a push in RESP3, an array in RESP2), the monitor line, or the `sunsubscribe` of a
    /// shard channel whose slot left the node (None when the connection had already left it).
    pub fn frame(&mut self, delivery: &Delivery) -> Option<Reply> {
        let (pattern, channel, payload, sharded) = match delivery {
            Delivery::Message {
                pattern,
                channel,
                payload,
                sharded,
            } => (pattern, channel, payload, *sharded),
            Delivery::Monitor(line) => return Some(Reply::Raw(line.clone())),
            Delivery::Frame { reply, .. } => return Some(reply.clone()),
            Delivery::ShardChannelGone(channel) => {
                return self.shard_channels.remove(channel).then(|| {
                    confirmation("sunsubscribe", Some(channel), self.shard_channels.len())
                });
            }
        };
        let mut items = Vec::with_capacity(4);
        match pattern {
            Some(pattern) => {
                items.push(Reply::bulk_str("pmessage"));
                items.push(Reply::Bulk(pattern.clone()));
            }
            None if sharded => items.push(Reply::bulk_str("smessage")),
            None => items.push(Reply::bulk_str("message")),
        }
        items.push(Reply::Bulk(channel.clone()));
        items.push(Reply::Bulk(payload.clone()));
        Some(Reply::Push(items))
    }

    /// This connection's mailbox, created on first use with `class`'s output-buffer `limit`.
    pub fn mailbox(
        &mut self,
        client: &Arc<ClientInfo>,
        class: ClientClass,
        limit: ClassLimit,
    ) -> Arc<Mailbox> {
        // Also MONITOR's: one mailbox per connection, whatever arrives in it.
        if let Some(mailbox) = &self.mailbox {
            return mailbox.clone();
        }
        let (tx, rx) = mpsc::channel(MAILBOX_MESSAGES);
        let mailbox = Arc::new(Mailbox {
            tx,
            queued_bytes: AtomicUsize::new(0),
            limit,
            class,
            soft_since: AtomicU64::new(0),
            client: client.clone(),
        });
        self.mailbox = Some(mailbox.clone());
        self.inbox = Some(rx);
        mailbox
    }
}

type Subscribers = HashMap<Bytes, HashMap<u64, Arc<Mailbox>>>;

/// The server-wide subscription registry.
#[derive(Default)]
pub struct PubSub {
    channels: RwLock<Subscribers>,
    patterns: RwLock<Subscribers>,
    shard_channels: RwLock<Subscribers>,
}

fn add(map: &RwLock<Subscribers>, name: &Bytes, mailbox: &Arc<Mailbox>) {
    map.write()
        .entry(name.clone())
        .or_default()
        .insert(mailbox.client.id, mailbox.clone());
}

fn remove(map: &RwLock<Subscribers>, name: &[u8], client: u64) {
    let mut map = map.write();
    if let Some(subs) = map.get_mut(name) {
        subs.remove(&client);
        if subs.is_empty() {
            map.remove(name);
        }
    }
}

impl PubSub {
    pub fn subscribe(&self, channel: &Bytes, mailbox: &Arc<Mailbox>) {
        add(&self.channels, channel, mailbox);
    }

    pub fn unsubscribe(&self, channel: &[u8], client: u64) {
        remove(&self.channels, channel, client);
    }

    pub fn psubscribe(&self, pattern: &Bytes, mailbox: &Arc<Mailbox>) {
        add(&self.patterns, pattern, mailbox);
    }

    pub fn punsubscribe(&self, pattern: &[u8], client: u64) {
        remove(&self.patterns, pattern, client);
    }

    pub fn ssubscribe(&self, channel: &Bytes, mailbox: &Arc<Mailbox>) {
        add(&self.shard_channels, channel, mailbox);
    }

    pub fn sunsubscribe(&self, channel: &[u8], client: u64) {
        remove(&self.shard_channels, channel, client);
    }

    /// Removes every subscription of a connection that is going away.
    pub fn forget(&self, subs: &Subscriptions, client: u64) {
        for channel in &subs.channels {
            self.unsubscribe(channel, client);
        }
        for pattern in &subs.patterns {
            self.punsubscribe(pattern, client);
        }
        for channel in &subs.shard_channels {
            self.sunsubscribe(channel, client);
        }
    }

    /// Cluster mode, after a new slot map: removes the shard channels `kept` refuses (their slot
    /// left this node) and tells each of their subscribers' connections
    /// ([`Delivery::ShardChannelGone`]). Returns how many subscriptions were dropped.
    pub fn drop_shard_channels(&self, kept: impl Fn(&[u8]) -> bool) -> usize {
        let gone: Vec<(Bytes, HashMap<u64, Arc<Mailbox>>)> = {
            let mut map = self.shard_channels.write();
            let names: Vec<Bytes> = map.keys().filter(|c| !kept(&c[..])).cloned().collect();
            names
                .into_iter()
                .filter_map(|name| map.remove_entry(&name))
                .collect()
        };
        let mut dropped = 0;
        for (channel, subs) in gone {
            for mailbox in subs.values() {
                mailbox.deliver(Delivery::ShardChannelGone(channel.clone()));
                dropped += 1;
            }
        }
        dropped
    }

    /// SPUBLISH: delivers to the shard channel's subscribers only (no patterns); returns how many
    /// took the message.
    pub fn spublish(&self, channel: &[u8], payload: &[u8]) -> usize {
        let map = self.shard_channels.read();
        let Some(subs) = map.get(channel) else {
            return 0;
        };
        let channel = Bytes::copy_from_slice(channel);
        let payload = Bytes::copy_from_slice(payload);
        subs.values()
            .filter(|mailbox| {
                mailbox.deliver(Delivery::Message {
                    pattern: None,
                    channel: channel.clone(),
                    payload: payload.clone(),
                    sharded: true,
                })
            })
            .count()
    }

    /// Delivers to channel subscribers, then to matching pattern subscribers; returns how many
    /// mailboxes took the message (a client subscribed both ways counts twice, as in Redis).
    pub fn publish(&self, channel: &[u8], payload: &[u8]) -> usize {
        let channel = Bytes::copy_from_slice(channel);
        let payload = Bytes::copy_from_slice(payload);
        let mut received = 0;
        if let Some(subs) = self.channels.read().get(&channel) {
            for mailbox in subs.values() {
                let delivery = Delivery::Message {
                    pattern: None,
                    channel: channel.clone(),
                    payload: payload.clone(),
                    sharded: false,
                };
                received += usize::from(mailbox.deliver(delivery));
            }
        }
        for (pattern, subs) in self.patterns.read().iter() {
            if !glob::matches(pattern, &channel, false) {
                continue;
            }
            for mailbox in subs.values() {
                let delivery = Delivery::Message {
                    pattern: Some(pattern.clone()),
                    channel: channel.clone(),
                    payload: payload.clone(),
                    sharded: false,
                };
                received += usize::from(mailbox.deliver(delivery));
            }
        }
        received
    }

    /// The clients among `clients` subscribed to a channel, pattern or shard channel that
    /// `allowed(name, is_pattern)` refuses: ACL changes close them (Redis's
    /// `ACLKillPubsubClientsIfNeeded`). One pass over the registry; ACL changes are rare.
    pub fn refused_subscribers(
        &self,
        clients: &HashSet<u64>,
        allowed: impl Fn(&[u8], bool) -> bool,
    ) -> HashSet<u64> {
        let mut refused = HashSet::new();
        let maps = [
            (&self.channels, false),
            (&self.patterns, true),
            (&self.shard_channels, false),
        ];
        for (map, pattern) in maps {
            for (name, subs) in map.read().iter() {
                if subs
                    .keys()
                    .any(|id| clients.contains(id) && !refused.contains(id))
                    && !allowed(name, pattern)
                {
                    refused.extend(subs.keys().filter(|id| clients.contains(id)));
                }
            }
        }
        refused
    }

    /// Active channels (with at least one subscriber), optionally filtered by a glob; shard
    /// channels with `sharded`.
    pub fn channels(&self, pattern: Option<&[u8]>, sharded: bool) -> Vec<Bytes> {
        let map = if sharded {
            &self.shard_channels
        } else {
            &self.channels
        };
        map.read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob::matches(p, c, false)))
            .cloned()
            .collect()
    }

    /// The mailbox of client `id` if it is subscribed to `channel` (tracking's redirection).
    pub fn subscriber(&self, channel: &[u8], id: u64) -> Option<Arc<Mailbox>> {
        self.channels.read().get(channel)?.get(&id).cloned()
    }

    /// Subscribers of a channel (of a shard channel with `sharded`).
    pub fn numsub(&self, channel: &[u8], sharded: bool) -> usize {
        let map = if sharded {
            &self.shard_channels
        } else {
            &self.channels
        };
        map.read().get(channel).map_or(0, |s| s.len())
    }

    /// Number of distinct patterns subscribed to (by anyone), as Redis 7 counts.
    pub fn numpat(&self) -> usize {
        self.patterns.read().len()
    }
}
