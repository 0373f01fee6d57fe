//! Keyspace notifications and client-side caching: both react to the changes the store notes
//! (`store::changes`), after each command (from dispatch) and after each tick of the active expiry
//! cycle and the memory meter. Nothing here runs while nobody listens: the store then notes
//! nothing and dispatch skips the call on one relaxed load.

pub mod names;
pub mod tracking;

pub use crate::config::values::class;
use crate::config::values::NotifyFlags;
use crate::pubsub::PubSub;
use crate::spec::command::{Command, READONLY};
use crate::store::changes::{self, Change, Noted};
use crate::store::Store;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

/// What events reach of the server: the store (whose changes they publish), Pub/Sub (where
/// they go), the client list (a tracking redirection's target) and their own state. The
/// server's shared state implements it, so this module never sees the server.
pub trait Host {
    fn store(&self) -> &crate::store::Store;
    fn pubsub(&self) -> &crate::pubsub::PubSub;
    fn clients(&self) -> &crate::clients::ClientRegistry;
    fn events(&self) -> &Events;
    fn search(&self) -> &crate::search::Registry;
}

/// Where a batch of noted changes came from.
pub struct Origin<'a> {
    /// The command that made them (None: the expiry cycle or the memory meter).
    pub cmd: Option<&'a Command>,
    /// The client that made them (0: none), for tracking's NOLOOP.
    pub writer: u64,
}

/// Notification settings and the tracking state of a server.
pub struct Events {
    flags: AtomicU32,
    /// Set while a search index exists: its keys are handed to `crate::search` too.
    indexing: AtomicBool,
    pub tracking: tracking::Tracking,
    store: Arc<Store>,
}

impl Events {
    pub fn new(config: &crate::config::Config, store: Arc<Store>) -> Events {
        let events = Events {
            flags: AtomicU32::new(0),
            indexing: AtomicBool::new(false),
            tracking: Default::default(),
            store,
        };
        events.configure(config);
        events
    }

    /// Applies `notify-keyspace-events` and `tracking-table-max-keys` (at start and after
    /// CONFIG SET).
    pub fn configure(&self, config: &crate::config::Config) {
        self.flags.store(config.notify_keyspace_events.0, Relaxed);
        self.tracking
            .max_keys
            .store(config.tracking_table_max_keys, Relaxed);
        self.update_gate();
    }

    /// Tells the store whether to note changes: only while notifications are on, someone
    /// tracks keys or a search index follows the keyspace.
    pub fn update_gate(&self) {
        let listening = NotifyFlags(self.flags.load(Relaxed)).active()
            || self.tracking.client_count() > 0
            || self.indexing.load(Relaxed);
        self.store.listening.store(listening, Relaxed);
    }

    /// Whether a search index exists (FT.CREATE, FT.DROPINDEX, a snapshot's definitions).
    pub fn set_indexing(&self, on: bool) {
        self.indexing.store(on, Relaxed);
        self.update_gate();
    }

    /// Publishes the events and sends the invalidations of what was noted on this thread, and
    /// hands the keys to the search indexes while one exists (they apply them once no shard
    /// lock is held: `crate::search`).
    pub fn publish(&self, host: &impl Host, origin: Origin<'_>) {
        let pubsub = host.pubsub();
        let noted = changes::take();
        if noted.is_empty() {
            return;
        }
        if self.indexing.load(Relaxed) {
            crate::search::note(&noted);
        }
        let flags = NotifyFlags(self.flags.load(Relaxed));
        if flags.active() {
            self.notify(pubsub, flags.0, &noted, &origin);
        }
        if self.tracking.client_count() > 0 {
            self.tracking.invalidate_noted(host, &noted, origin.writer);
        }
    }

    /// Turns noted changes into Redis's events: the command's own event for its writes (unless
    /// its handler named them), `del` for removals, and the outcome events (`new`, `expired`,
    /// `evicted`, `keymiss`) whatever the command.
    fn notify(&self, pubsub: &PubSub, flags: u32, noted: &[Noted], origin: &Origin<'_>) {
        let named_by_handler = noted
            .iter()
            .any(|n| matches!(n.change, Change::Event { .. }));
        let own = origin.cmd.and_then(|c| names::command_event(c.name));
        let reads = origin.cmd.is_some_and(|c| c.has(READONLY));
        let mut last: Option<(usize, Bytes, &'static str)> = None;
        let mut fire = |class: u32, name: &'static str, db: usize, key: &Bytes| {
            // A handler that reaches the same key twice (a lookup, then a change) is one event.
            if last
                .as_ref()
                .is_some_and(|(d, k, n)| *d == db && k == key && *n == name)
            {
                return;
            }
            last = Some((db, key.clone(), name));
            if flags & class != 0 {
                fire_event(pubsub, flags, db, name, key);
            }
        };
        for n in noted {
            let key = &n.key;
            match n.change {
                Change::Created | Change::Written => {
                    if n.change == Change::Created {
                        fire(class::NEW, "new", n.db, key);
                    }
                    if let (false, Some(own)) = (named_by_handler, own) {
                        fire(own.class, own.name, n.db, key);
                    }
                }
                Change::Removed if !named_by_handler => match own {
                    Some(own) if own.on_removal => fire(own.class, own.name, n.db, key),
                    _ => fire(class::GENERIC, "del", n.db, key),
                },
                Change::Removed | Change::Flushed => {}
                Change::Expired => fire(class::EXPIRED, "expired", n.db, key),
                Change::FieldsExpired => fire(class::HASH, "hexpired", n.db, key),
                Change::Evicted => fire(class::EVICTED, "evicted", n.db, key),
                Change::Missed if reads => fire(class::KEY_MISS, "keymiss", n.db, key),
                Change::Missed => {}
                Change::Event { class, name } => fire(class, name, n.db, key),
            }
        }
    }
}

/// Publishes one event on `__keyspace@<db>__:<key>` and/or `__keyevent@<db>__:<event>`.
fn fire_event(pubsub: &PubSub, flags: u32, db: usize, event: &str, key: &[u8]) {
    if flags & class::KEYSPACE != 0 {
        let mut channel = format!("__keyspace@{db}__:").into_bytes();
        channel.extend_from_slice(key);
        pubsub.publish(&channel, event.as_bytes());
    }
    if flags & class::KEYEVENT != 0 {
        let channel = format!("__keyevent@{db}__:{event}");
        pubsub.publish(channel.as_bytes(), key);
    }
}

/// The expiry cycle's and the memory meter's call after each tick.
pub fn after_background_work(host: &impl Host) {
    if host.store().listening.load(Relaxed) {
        let origin = Origin {
            cmd: None,
            writer: 0,
        };
        host.events().publish(host, origin);
        if host.search().apply_pending() {
            host.events().set_indexing(host.search().any());
        }
    } else {
        // Notes from just before the gate closed must not linger until it opens again.
        changes::take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_render_as_redis_renders_them() {
        for (given, shown) in [
            ("", ""),
            ("KEA", "AKE"),
            ("AKEnm", "AKEm"),
            ("Elshzxetdgn$", "AE"),
            ("gn", "gn"),
            ("Ex", "xE"),
            ("g$lshzxetdKE", "AKE"),
            ("Kgl", "glK"),
            ("KS", "SK"),
            ("EAS", "ASE"),
        ] {
            let flags = NotifyFlags::parse(given).expect("valid");
            assert_eq!(flags.to_string(), shown, "{given}");
        }
        assert!(NotifyFlags::parse("KEq").is_err());
        assert!(!NotifyFlags::parse("KE").expect("valid").active());
        assert!(!NotifyFlags::parse("A").expect("valid").active());
        assert!(NotifyFlags::parse("Ex").expect("valid").active());
    }
}
