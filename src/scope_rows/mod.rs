//! The scope-row sink. Commands hand every change that must reach the `short_term_memories` table to
//! [`PersistHandle::send`], which never blocks and never fails the command: a full queue drops the
//! operation and counts it. The writer task drains the queue into the database, after restoring
//! the recent summaries into the keyspace ([`restore`]), and deletes old rows ([`retention`]).

pub mod db;
pub mod fold;
pub mod restore;
pub mod retention;
pub mod writer;

use crate::config::Config;
use crate::stm::{RowMark, ScopeKey};
use crate::store::Store;
use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

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

impl PersistOp {
    /// Whether this operation deletes the row of `scope` (a user-scope key does not name its
    /// server, so forgetting one matches the user's row in any server, as the DELETE does).
    pub fn forgets(&self, scope: &ScopeKey) -> bool {
        match self {
            PersistOp::ForgetChannel { channel } => scope.channel == *channel,
            PersistOp::ForgetUser { user } => {
                scope.scope == crate::stm::Scope::User && scope.user.as_ref() == Some(user)
            }
            PersistOp::ForgetScope { scope: gone } => {
                gone.scope == scope.scope
                    && gone.channel == scope.channel
                    && gone.persona == scope.persona
                    && match gone.scope {
                        crate::stm::Scope::User => gone.user == scope.user,
                        crate::stm::Scope::Server => gone.server == scope.server,
                    }
            }
            _ => false,
        }
    }
}

const KIND_NAMES: [&str; 5] = ["ensure", "tick", "summary", "categories", "forget"];
/// The [`PersistOp::kind`] of the forgets.
const FORGET_KIND: usize = 4;

/// Counters of the sink and the writer, for `INFO stm`.
#[derive(Default)]
pub struct PersistStats {
    /// Operations emitted by commands, by kind.
    pub emitted: [AtomicU64; 5],
    /// Operations accepted into the queue.
    pub queued: AtomicU64,
    /// Operations dropped because the queue was full.
    pub dropped: AtomicU64,
    /// Operations written to the database.
    pub written: AtomicU64,
    /// Batches (transactions) written.
    pub batches: AtomicU64,
    /// Data statements sent (inserts/upserts/deletes; BEGIN/COMMIT not counted).
    pub statements: AtomicU64,
    /// Failed attempts that were retried.
    pub retries: AtomicU64,
    /// Entries restored from rows at start-up.
    pub restored: AtomicU64,
    /// Of those, rows merged into entries that commands had written before the rows arrived.
    pub restored_merged: AtomicU64,
    /// Whether the warm start has finished (rows loaded and merged).
    pub restore_done: AtomicBool,
    /// Retention sweeps run, and rows they deleted.
    pub sweeps: AtomicU64,
    pub swept_rows: AtomicU64,
    /// Whether the last attempt succeeded.
    pub up: AtomicBool,
    pub last_error: Mutex<Option<String>>,
}

/// Whether this node serves a key: in cluster mode the server gives the warm start one that asks
/// the slot map, so a node restores only the scopes of the slots it owns.
pub type OwnsKey = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// The commands' side of the sink. Cheap to call from any command: one `try_send`.
pub struct PersistHandle {
    queue: Option<mpsc::Sender<PersistOp>>,
    /// "postgres", "sqlite", or "none".
    backend: &'static str,
    pub stats: Arc<PersistStats>,
    /// Set while this node is a cluster replica: its primary writes the rows of the scopes its
    /// stream changes here, so the replica sends none (they are counted as emitted only).
    muted: AtomicBool,
    /// Advanced after every forget this process queues: a row ensured in an earlier epoch may
    /// have been deleted since, so [`PersistHandle::ensure_row`] ensures it again. Starts at 1
    /// (an entry's [`RowMark`] of 0 means never ensured).
    forget_epoch: AtomicU32,
}

/// What [`start`] hands the server: the commands' sink, the writer task, and the warm start's
/// signal (true once the recent summaries are in the keyspace; the sender is dropped if the writer
/// stops first).
pub struct Started {
    pub handle: PersistHandle,
    pub writer: Option<tokio::task::JoinHandle<()>>,
    pub restored: watch::Receiver<bool>,
}

/// Opens the configured database and starts its writer; with `--no-database`, a sink that only
/// counts. The writer stops (after draining) when `stop` becomes true.
pub fn start(
    config: &Config,
    store: Arc<Store>,
    stop: watch::Receiver<bool>,
    owns_key: Option<OwnsKey>,
) -> Result<Started, String> {
    if config.no_database {
        tracing::warn!(
            "--no-database: scope rows are not stored; summaries will not survive a restart"
        );
        let handle = PersistHandle::disabled();
        handle.stats.restore_done.store(true, Ordering::Relaxed);
        return Ok(Started {
            handle,
            writer: None,
            restored: watch::channel(true).1,
        });
    }
    let db = db::Database::open(config.database_url.as_deref(), &config.dir)?;
    let capacity = (config.stm_persist_queue as usize).max(1);
    let (tx, rx) = mpsc::channel(capacity);
    let stats = Arc::new(PersistStats::default());
    let handle = PersistHandle {
        queue: Some(tx),
        backend: db.kind(),
        stats: stats.clone(),
        muted: AtomicBool::new(false),
        forget_epoch: AtomicU32::new(1),
    };
    tracing::info!(database = db.kind(), "scope rows go to the database");
    let (restored_tx, restored) = watch::channel(false);
    let writer = writer::Writer {
        db,
        queue: rx,
        stats,
        store,
        summary_ttl_secs: config.stm_summary_ttl,
        stop,
        restored: restored_tx,
        owns_key,
        retention: retention::Retention {
            days: config.stm_row_retention_days,
            period: std::time::Duration::from_millis(config.stm_retention_sweep_ms),
        },
    };
    Ok(Started {
        handle,
        writer: Some(tokio::spawn(writer.run())),
        restored,
    })
}

impl PersistHandle {
    /// A sink with no database: operations are counted, not stored.
    pub fn disabled() -> PersistHandle {
        PersistHandle {
            queue: None,
            backend: "none",
            stats: Arc::new(PersistStats::default()),
            muted: AtomicBool::new(false),
            forget_epoch: AtomicU32::new(1),
        }
    }

    /// Stops (or resumes) sending operations to the writer: a cluster replica's rows are its
    /// primary's to write.
    pub fn mute(&self, muted: bool) {
        self.muted.store(muted, Ordering::Relaxed);
    }

    /// Hands `op` to the writer without waiting; a full queue drops it (counted). Returns false
    /// when the operation will not reach the database although one is configured (dropped, or
    /// this node is muted), true when it is queued or there is no database to write to.
    pub fn send(&self, op: PersistOp) -> bool {
        let kind = op.kind();
        self.stats.emitted[kind].fetch_add(1, Ordering::Relaxed);
        let sent = match &self.queue {
            None => true,
            Some(_) if self.muted.load(Ordering::Relaxed) => false,
            Some(queue) => match queue.try_send(op) {
                Ok(()) => {
                    self.stats.queued.fetch_add(1, Ordering::Relaxed);
                    true
                }
                Err(_) => {
                    let dropped = self.stats.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                    if dropped.is_power_of_two() {
                        tracing::warn!(dropped, "scope-row queue full: operation dropped");
                    }
                    false
                }
            },
        };
        if kind == FORGET_KIND {
            // After the forget is queued: an ensure that reads the new epoch is queued behind the
            // delete, and one that read the old epoch is made again by the entry's next capture.
            // Atomic, so two forgets at once advance it twice; 0 is skipped (never ensured).
            let _ = self
                .forget_epoch
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |epoch| {
                    Some(epoch.wrapping_add(1).max(1))
                });
        }
        sent
    }

    /// Ensures the row of `scope` unless this process already queued its ensure, as recorded in
    /// the entry's `mark`, since the last forget. A capture calls it for every scope it writes:
    /// the first capture of an entry queues the insert, later ones cost a comparison (the row
    /// cannot have gone meanwhile: retention keeps the rows of live entries and forgets advance
    /// the epoch). A dropped ensure leaves the mark, so the next capture tries again.
    pub fn ensure_row(&self, mark: &mut RowMark, scope: &ScopeKey, lineage: Option<i64>) {
        let epoch = self.forget_epoch.load(Ordering::Acquire);
        if mark.0 == epoch {
            return;
        }
        let op = PersistOp::EnsureRow {
            scope: scope.clone(),
            lineage,
        };
        if self.send(op) {
            mark.0 = epoch;
        }
    }

    /// "postgres", "sqlite", or "none": for the start-up log line and metrics.
    pub fn backend(&self) -> &'static str {
        self.backend
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
        let s = &self.stats;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed).to_string();
        line("stm_persist_backend", self.backend.to_string());
        line(
            "stm_persist_enabled",
            u8::from(self.queue.is_some()).to_string(),
        );
        line(
            "stm_persist_db_up",
            u8::from(s.up.load(Ordering::Relaxed)).to_string(),
        );
        line("stm_persist_queue_depth", self.depth().to_string());
        line("stm_persist_queued", get(&s.queued));
        line("stm_persist_dropped", get(&s.dropped));
        line("stm_persist_written", get(&s.written));
        line("stm_persist_batches", get(&s.batches));
        line("stm_persist_statements", get(&s.statements));
        line("stm_persist_retries", get(&s.retries));
        line("stm_persist_restored", get(&s.restored));
        line("stm_persist_restored_merged", get(&s.restored_merged));
        line(
            "stm_persist_restore_done",
            u8::from(s.restore_done.load(Ordering::Relaxed)).to_string(),
        );
        line("stm_persist_sweeps", get(&s.sweeps));
        line("stm_persist_swept_rows", get(&s.swept_rows));
        let last_error = s.last_error.lock().clone().unwrap_or_default();
        line(
            "stm_persist_last_error",
            last_error.replace(['\r', '\n'], " "),
        );
    }
}
