//! The scope-row sink. Commands hand every change that must reach the `short_term_memories` table to
//! [`PersistHandle::send`], which never blocks and never fails the command: a full queue drops the
//! operation and counts it. The writer that drains the queue into a database lives beside it.

use crate::stm::ScopeKey;
use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;

/// One change to the scope rows, in the order commands made it.
#[derive(Clone, Debug, PartialEq)]
pub enum PersistOp {
    /// Create the scope's row if missing; never overwrite an existing one.
    EnsureRow {
        scope: ScopeKey,
        lineage: Option<i64>,
    },
    /// Add `by` to the row's `turns_since_refresh` (creating the row if missing).
    Tick { scope: ScopeKey, by: i64 },
    /// Upsert the summary (None clears it), reset `turns_since_refresh`, bump `last_refreshed_turn`.
    Summary {
        scope: ScopeKey,
        lineage: Option<i64>,
        summary: Option<String>,
    },
    /// Upsert the categories map, reset `turns_since_refresh`, bump `last_refreshed_turn`.
    Categories {
        scope: ScopeKey,
        lineage: Option<i64>,
        categories: Vec<(String, String)>,
    },
    /// Delete every row of a channel.
    ForgetChannel { channel: Bytes },
    /// Delete a user's user-scope rows.
    ForgetUser { user: Bytes },
    /// Delete one scope's row.
    ForgetScope { scope: ScopeKey },
}

impl PersistOp {
    fn kind(&self) -> usize {
        match self {
            PersistOp::EnsureRow { .. } => 0,
            PersistOp::Tick { .. } => 1,
            PersistOp::Summary { .. } => 2,
            PersistOp::Categories { .. } => 3,
            PersistOp::ForgetChannel { .. }
            | PersistOp::ForgetUser { .. }
            | PersistOp::ForgetScope { .. } => 4,
        }
    }
}

const KIND_NAMES: [&str; 5] = ["ensure", "tick", "summary", "categories", "forget"];

/// Counters of the sink, for `INFO stm`.
#[derive(Default)]
pub struct PersistStats {
    /// Operations emitted by commands, by kind.
    pub emitted: [AtomicU64; 5],
    /// Operations accepted into the queue.
    pub queued: AtomicU64,
    /// Operations dropped because the queue was full (or no database is configured).
    pub dropped: AtomicU64,
}

/// The commands' side of the sink. Cheap to call from any command: one `try_send`.
pub struct PersistHandle {
    queue: Option<mpsc::Sender<PersistOp>>,
    pub stats: PersistStats,
}

impl PersistHandle {
    /// A sink with no database: operations are counted, not stored.
    pub fn disabled() -> PersistHandle {
        PersistHandle {
            queue: None,
            stats: PersistStats::default(),
        }
    }

    /// A sink feeding `queue`.
    pub fn new(queue: mpsc::Sender<PersistOp>) -> PersistHandle {
        PersistHandle {
            queue: Some(queue),
            stats: PersistStats::default(),
        }
    }

    /// Hands `op` to the writer without waiting; a full queue drops it (counted).
    pub fn send(&self, op: PersistOp) {
        self.stats.emitted[op.kind()].fetch_add(1, Ordering::Relaxed);
        let Some(queue) = &self.queue else {
            return;
        };
        match queue.try_send(op) {
            Ok(()) => {
                self.stats.queued.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                let dropped = self.stats.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped.is_power_of_two() {
                    tracing::warn!(dropped, "scope-row queue full: operation dropped");
                }
            }
        }
    }

    /// Pending operations in the queue.
    pub fn depth(&self) -> usize {
        self.queue
            .as_ref()
            .map_or(0, |q| q.max_capacity() - q.capacity())
    }

    /// The `INFO stm` lines of the sink.
    pub fn render_info(&self, line: &mut dyn FnMut(&str, String)) {
        for (name, counter) in KIND_NAMES.iter().zip(&self.stats.emitted) {
            line(
                &format!("stm_persist_{name}_ops"),
                counter.load(Ordering::Relaxed).to_string(),
            );
        }
        line(
            "stm_persist_enabled",
            u8::from(self.queue.is_some()).to_string(),
        );
        line("stm_persist_queue_depth", self.depth().to_string());
        line(
            "stm_persist_queued",
            self.stats.queued.load(Ordering::Relaxed).to_string(),
        );
        line(
            "stm_persist_dropped",
            self.stats.dropped.load(Ordering::Relaxed).to_string(),
        );
    }
}
