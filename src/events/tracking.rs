//! Client-side caching (`CLIENT TRACKING`): which clients may cache which keys, and the
//! invalidation messages sent when those keys change.
//!
//! Default mode: the keys a tracking client reads are remembered in one server-wide table (key →
//! client ids), bounded by `tracking-table-max-keys`; a change to a key sends `invalidate` to its
//! clients and forgets the key. BCAST mode: no table; every change to a key under one of the
//! client's prefixes is sent. A key is remembered before its read runs: a write that lands between
//! the two then invalidates a value the client never got, which is harmless, while remembering it
//! after the read could miss a write and leave a stale value cached (Redis, single-threaded, has no
//! such window).

use super::Host;
use crate::clients::ClientInfo;
use crate::protocol::Reply;
use crate::pubsub::{Delivery, Mailbox};
use crate::store::changes::{Change, Noted};
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The channel RESP2 clients receive redirected invalidations on.
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// One client's tracking mode, as CLIENT TRACKING ON set it.
pub struct TrackedClient {
    pub id: u64,
    pub info: Arc<ClientInfo>,
    pub mailbox: Arc<Mailbox>,
    /// Client id invalidations go to (0: this client itself).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// BCAST prefixes (the empty prefix when none was given: every key).
    pub prefixes: Vec<Bytes>,
    /// Set once the redirection target was found gone.
    pub broken_redirect: AtomicBool,
}

/// A connection's own tracking state.
#[derive(Default)]
pub struct ConnTracking {
    pub mode: Option<Arc<TrackedClient>>,
    /// CLIENT CACHING YES/NO was given for the next command.
    pub caching: bool,
}

/// Server-wide tracking state.
#[derive(Default)]
pub struct Tracking {
    clients: RwLock<HashMap<u64, Arc<TrackedClient>>>,
    /// `clients.len()`, readable without the lock on every command.
    count: AtomicUsize,
    bcast_count: AtomicUsize,
    /// Key → ids of the clients that may cache it (default mode).
    table: Mutex<HashMap<Bytes, SmallVec<[u64; 2]>, ahash::RandomState>>,
    /// `tracking-table-max-keys` (0: unbounded).
    pub max_keys: AtomicU64,
}

/// What INFO shows about tracking.
pub struct TrackingStats {
    pub clients: usize,
    pub keys: usize,
    pub items: usize,
    pub prefixes: usize,
}

impl Tracking {
    pub fn client_count(&self) -> usize {
        self.count.load(Relaxed)
    }

    pub fn stats(&self) -> TrackingStats {
        let table = self.table.lock();
        let clients = self.clients.read();
        TrackingStats {
            clients: clients.len(),
            keys: table.len(),
            items: table.values().map(|ids| ids.len()).sum(),
            // Redis counts the prefix table: a prefix two clients share is one.
            prefixes: clients
                .values()
                .filter(|c| c.bcast)
                .flat_map(|c| c.prefixes.iter())
                .collect::<std::collections::HashSet<_>>()
                .len(),
        }
    }

    pub fn get(&self, id: u64) -> Option<Arc<TrackedClient>> {
        self.clients.read().get(&id).cloned()
    }

    pub fn set(&self, client: Arc<TrackedClient>) {
        let mut clients = self.clients.write();
        if let Some(old) = clients.insert(client.id, client.clone()) {
            if old.bcast {
                self.bcast_count.fetch_sub(1, Relaxed);
            }
        }
        if client.bcast {
            self.bcast_count.fetch_add(1, Relaxed);
        }
        self.count.store(clients.len(), Relaxed);
    }

    /// Turns tracking off for a client (CLIENT TRACKING OFF, disconnect). Its table entries go
    /// lazily: an invalidation for a client no longer tracking is dropped.
    pub fn remove(&self, id: u64) {
        let mut clients = self.clients.write();
        if let Some(old) = clients.remove(&id) {
            if old.bcast {
                self.bcast_count.fetch_sub(1, Relaxed);
            }
        }
        self.count.store(clients.len(), Relaxed);
    }

    /// Remembers that client `id` may cache `keys`; past `tracking-table-max-keys`, evicts
    /// other keys from the table, invalidating them, as Redis does.
    pub fn remember<'k>(&self, host: &impl Host, id: u64, keys: impl Iterator<Item = &'k [u8]>) {
        let mut evicted = Vec::new();
        {
            let mut table = self.table.lock();
            for key in keys {
                let ids = table.entry(Bytes::copy_from_slice(key)).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            let max = self.max_keys.load(Relaxed) as usize;
            while max > 0 && table.len() > max {
                let Some(victim) = table.keys().next().cloned() else {
                    break;
                };
                if let Some(ids) = table.remove(&victim) {
                    evicted.push((victim, ids));
                }
            }
        }
        for (key, ids) in evicted {
            self.send_to_ids(host, &key, &ids, 0);
        }
    }

    /// Sends invalidations for the changes one command (or one background tick) made.
    /// Default-mode clients get one message per key, as in Redis; BCAST clients one message per
    /// prefix with the command's keys under it, sorted (Redis batches them per event-loop turn).
    pub fn invalidate_noted(&self, host: &impl Host, noted: &[Noted], writer: u64) {
        let mut changed: Vec<&[u8]> = Vec::new();
        // FLUSHALL notes one flush per database: clients get one null invalidation, as in Redis.
        let mut flushed = false;
        for n in noted {
            match n.change {
                Change::Created
                | Change::Written
                | Change::Removed
                | Change::Expired
                | Change::FieldsExpired
                | Change::Evicted => {
                    if !changed.contains(&&n.key[..]) {
                        changed.push(&n.key[..]);
                        let ids = self.table.lock().remove(&n.key[..]);
                        if let Some(ids) = ids {
                            self.send_to_ids(host, &n.key, &ids, writer);
                        }
                    }
                }
                Change::Flushed if !flushed => {
                    flushed = true;
                    self.invalidate_all(host);
                }
                Change::Flushed => {}
                Change::Missed | Change::Event { .. } => {}
            }
        }
        if self.bcast_count.load(Relaxed) == 0 || changed.is_empty() {
            return;
        }
        changed.sort_unstable();
        let targets: Vec<Arc<TrackedClient>> = self
            .clients
            .read()
            .values()
            .filter(|c| c.bcast && !(c.noloop && c.id == writer))
            .cloned()
            .collect();
        for client in targets {
            for prefix in &client.prefixes {
                let keys: Vec<&[u8]> = changed
                    .iter()
                    .copied()
                    .filter(|k| k.starts_with(prefix))
                    .collect();
                if !keys.is_empty() {
                    self.send(host, &client, Some(&keys));
                }
            }
        }
    }

    fn send_to_ids(&self, host: &impl Host, key: &[u8], ids: &[u64], writer: u64) {
        for &id in ids {
            let Some(client) = self.get(id) else {
                continue; // stopped tracking since it read the key
            };
            if client.bcast || (client.noloop && id == writer) {
                continue;
            }
            self.send(host, &client, Some(&[key]));
        }
    }

    /// FLUSHALL/FLUSHDB: every tracking client gets a null invalidation, the table empties.
    fn invalidate_all(&self, host: &impl Host) {
        self.table.lock().clear();
        let targets: Vec<Arc<TrackedClient>> = self.clients.read().values().cloned().collect();
        for client in targets {
            self.send(host, &client, None);
        }
    }

    /// Sends one invalidation (`None`: everything) for `client`: as a RESP3 push to itself or its
    /// redirection target, or as a `__redis__:invalidate` message to a RESP2 target subscribed to
    /// that channel. A RESP2 client without redirection gets nothing (RESP2 has no pushes), as
    /// in Redis.
    fn send(&self, host: &impl Host, client: &TrackedClient, keys: Option<&[&[u8]]>) {
        let (mailbox, as_message) = if client.redirect == 0 {
            if client.info.resp.load(Relaxed) < 3 {
                return;
            }
            (client.mailbox.clone(), false)
        } else if let Some(mailbox) = host
            .pubsub()
            .subscriber(INVALIDATE_CHANNEL, client.redirect)
        {
            let resp2 = mailbox.client().resp.load(Relaxed) < 3;
            (mailbox, resp2)
        } else if let Some(target) = self.get(client.redirect) {
            if target.info.resp.load(Relaxed) < 3 {
                return;
            }
            (target.mailbox.clone(), false)
        } else {
            if !host.clients().all().iter().any(|c| c.id == client.redirect) {
                client.broken_redirect.store(true, Relaxed);
                if client.info.resp.load(Relaxed) >= 3 {
                    let reply = Reply::Push(vec![
                        Reply::bulk_str("tracking-redir-broken"),
                        Reply::Int(client.redirect as i64),
                    ]);
                    client.mailbox.deliver(Delivery::Frame { reply, size: 48 });
                }
            }
            return;
        };
        let size = 48 + keys.map_or(0, |keys| keys.iter().map(|k| k.len() + 16).sum());
        let keys = match keys {
            Some(keys) => Reply::Array(keys.iter().map(Reply::bulk).collect()),
            None => Reply::Nil,
        };
        let reply = if as_message {
            Reply::Push(vec![
                Reply::bulk_str("message"),
                Reply::Bulk(Bytes::from_static(INVALIDATE_CHANNEL)),
                keys,
            ])
        } else {
            Reply::Push(vec![Reply::bulk_str("invalidate"), keys])
        };
        mailbox.deliver(Delivery::Frame { reply, size });
    }
}
