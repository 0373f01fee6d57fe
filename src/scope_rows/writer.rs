//! The writer task: connects and migrates (retrying while the database is down), restores recent
//! rows with distilled memory into the keyspace and signals the server that it may answer
//! commands, then drains the queue in folded batches, retrying a failed batch with exponential
//! backoff, and sweeps old rows between batches. On shutdown it writes what is left within a
//! bounded time.

use super::db::Database;
use super::fold::{fold, Segment};
use super::restore::{merge_row, Merge};
use super::retention::Retention;
use super::{PersistOp, PersistStats};
use crate::store::Store;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// Most operations folded into one batch.
const MAX_BATCH: usize = 20_000;
/// How long the writer keeps gathering after the first operation of a batch. Under load one
/// transaction then carries the operations of thousands of captures instead of a few: fewer
/// commits, and each database page touched is written to the WAL once per batch, not once per
/// capture (new rows land at random places in the scope index: the more a batch holds, the more
/// share each page it writes; 100 ms rather than 20 ms took a third off the writer's CPU time per
/// capture, docs/performance.md). A lone write waits at most this long; commands never wait.
const GATHER: Duration = Duration::from_millis(100);
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long shutdown keeps trying to write what is still queued.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Writer {
    pub db: Database,
    pub queue: mpsc::Receiver<PersistOp>,
    pub stats: Arc<PersistStats>,
    pub store: Arc<Store>,
    /// `stm-summary-ttl` in seconds: the age of rows restored at start-up.
    pub summary_ttl_secs: u64,
    pub stop: watch::Receiver<bool>,
    /// Set to true once the warm start is done: the server answers no command before that (or
    /// before `stm-restore-timeout`).
    pub restored: watch::Sender<bool>,
    /// In cluster mode, the warm start restores only the slots this node owns under the map it
    /// loaded at start; slots it takes over later are warmed by the failover.
    pub owns_key: Option<super::OwnsKey>,
    pub retention: Retention,
}

/// Why a retry loop ended without success.
struct Stopped;

/// What the writer does next.
enum Work {
    Write(Vec<PersistOp>),
    Sweep,
    Stop,
}

impl Writer {
    pub async fn run(mut self) {
        let db = self.db.clone();
        let ready = self
            .retry_until_stopped("migrate", || {
                let db = db.clone();
                async move { db.migrate().await }
            })
            .await;
        let restored = match ready {
            Ok(()) => self.restore().await,
            Err(stopped) => Err(stopped),
        };
        if let Ok(queued_meanwhile) = restored {
            // First sweep right after the start: a server restarted daily must still sweep.
            let mut next_sweep =
                (self.retention.days > 0).then(|| tokio::time::Instant::now() + GATHER);
            let mut work = Work::Write(queued_meanwhile);
            loop {
                match work {
                    Work::Stop => break,
                    Work::Sweep => {
                        self.sweep().await;
                        next_sweep = Some(tokio::time::Instant::now() + self.retention.period);
                    }
                    Work::Write(batch) if batch.is_empty() => {}
                    Work::Write(batch) => {
                        let count = batch.len();
                        if let Err(unwritten) = self.write_with_retry(batch).await {
                            // Stopped while the database was failing: keep the batch for the drain.
                            self.drain(unwritten, count).await;
                            self.db.close().await;
                            return;
                        }
                    }
                }
                work = self.next_work(next_sweep).await;
            }
        }
        self.drain(Vec::new(), 0).await;
        self.db.close().await;
    }

    /// Waits for the next operations (taking what else is queued), the time of the next sweep, or
    /// the stop signal.
    async fn next_work(&mut self, next_sweep: Option<tokio::time::Instant>) -> Work {
        let sweep_due = async {
            match next_sweep {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let first = tokio::select! {
            op = self.queue.recv() => match op {
                Some(op) => op,
                None => return Work::Stop,
            },
            _ = self.stop.wait_for(|stop| *stop) => return Work::Stop,
            _ = sweep_due => return Work::Sweep,
        };
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + GATHER;
        while batch.len() < MAX_BATCH {
            let next = match self.queue.try_recv() {
                Ok(op) => Some(op),
                Err(mpsc::error::TryRecvError::Disconnected) => None,
                Err(mpsc::error::TryRecvError::Empty) => {
                    tokio::time::timeout_at(deadline, self.queue.recv())
                        .await
                        .ok()
                        .flatten()
                }
            };
            match next {
                Some(op) => batch.push(op),
                None => break,
            }
        }
        Work::Write(batch)
    }

    /// Deletes the rows past retention; a failure waits for the next sweep.
    async fn sweep(&mut self) {
        match self.db.sweep(self.retention.days, &self.store).await {
            Ok(deleted) => {
                self.stats.sweeps.fetch_add(1, Ordering::Relaxed);
                self.stats.swept_rows.fetch_add(deleted, Ordering::Relaxed);
                if deleted > 0 {
                    tracing::info!(
                        deleted,
                        days = self.retention.days,
                        "retention sweep deleted old scope rows"
                    );
                }
            }
            // Not an outage of the row writes (those notice one themselves and retry): the
            // error is shown and the next sweep tries again.
            Err(err) => {
                tracing::warn!(%err, "retention sweep failed; it runs again at the next period");
                *self.stats.last_error.lock() = Some(format!("sweep: {err}"));
            }
        }
    }

    /// Folds `ops` and writes them, retrying until stopped; returns the unwritten segments then.
    async fn write_with_retry(&mut self, ops: Vec<PersistOp>) -> Result<(), Vec<Segment>> {
        let count = ops.len() as u64;
        let segments = fold(ops);
        let db = self.db.clone();
        let stats = self.stats.clone();
        let written = self
            .retry_until_stopped("write", || {
                let (db, segments, stats) = (db.clone(), &segments, &stats);
                async move {
                    let statements = db.write(segments).await?;
                    stats.statements.fetch_add(statements, Ordering::Relaxed);
                    stats.batches.fetch_add(1, Ordering::Relaxed);
                    stats.written.fetch_add(count, Ordering::Relaxed);
                    Ok(())
                }
            })
            .await;
        written.map_err(|Stopped| segments)
    }

    /// Runs `attempt` until it succeeds, backing off exponentially; gives up when stop is signalled.
    async fn retry_until_stopped<T, F, Fut>(
        &mut self,
        what: &str,
        mut attempt: F,
    ) -> Result<T, Stopped>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
    {
        let mut backoff = FIRST_BACKOFF;
        loop {
            match attempt().await {
                Ok(value) => {
                    self.mark_up();
                    return Ok(value);
                }
                Err(err) => {
                    self.mark_down(what, &err);
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = self.stop.wait_for(|stop| *stop) => return Err(Stopped),
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    fn mark_up(&self) {
        if !self.stats.up.swap(true, Ordering::Relaxed) {
            tracing::info!(
                database = self.db.kind(),
                "database is up: scope rows are being written"
            );
        }
    }

    fn mark_down(&self, what: &str, err: &sqlx::Error) {
        *self.stats.last_error.lock() = Some(format!("{what}: {err}"));
        if self.stats.up.swap(false, Ordering::Relaxed)
            || self.stats.retries.load(Ordering::Relaxed) == 0
        {
            tracing::warn!(database = self.db.kind(), %err, "database unavailable: scope rows are queued and retried");
        }
    }

    /// The warm start: loads the recent rows with distilled memory (retrying while the database
    /// is down) and merges them into the keyspace, then signals the server. Returns the operations
    /// queued meanwhile, for the writer to write first.
    ///
    /// Normally no command has been answered yet. When the server stopped waiting
    /// (`stm-restore-timeout`), commands have run since the start and their row operations are
    /// all still queued (nothing was written before this): a row that a queued forget deletes
    /// stays gone, and [`merge_row`] fills in only entries with no newer summary or categories.
    /// The queued operations are written after the merge, so the rows read here are exactly the
    /// state from before the start.
    async fn restore(&mut self) -> Result<Vec<PersistOp>, Stopped> {
        let db = self.db.clone();
        let max_age = self.summary_ttl_secs;
        let rows = self
            .retry_until_stopped("restore", || {
                let db = db.clone();
                async move { db.load_recent(max_age).await }
            })
            .await?;
        let mut pending = Vec::new();
        while let Ok(op) = self.queue.try_recv() {
            pending.push(op);
        }
        let forgets: Vec<&PersistOp> = pending
            .iter()
            .filter(|op| {
                matches!(
                    op,
                    PersistOp::ForgetChannel { .. }
                        | PersistOp::ForgetUser { .. }
                        | PersistOp::ForgetScope { .. }
                )
            })
            .collect();
        let ttl_ms = self.summary_ttl_secs.saturating_mul(1000);
        let (mut created, mut filled_in) = (0u64, 0u64);
        let owned = |key: &[u8]| self.owns_key.as_ref().is_none_or(|owns| owns(key));
        for row in &rows {
            if forgets.iter().any(|op| op.forgets(&row.scope)) || !owned(&row.scope.key()) {
                continue;
            }
            match merge_row(&self.store, row, ttl_ms) {
                Merge::Created => created += 1,
                Merge::FilledIn => filled_in += 1,
                Merge::Kept => {}
            }
        }
        // No command made these changes: their notes must not be published as part of the next
        // command this thread runs.
        crate::store::changes::take();
        self.stats
            .restored
            .store(created + filled_in, Ordering::Relaxed);
        self.stats
            .restored_merged
            .store(filled_in, Ordering::Relaxed);
        self.stats.restore_done.store(true, Ordering::Relaxed);
        let _ = self.restored.send(true);
        tracing::info!(
            restored = created + filled_in,
            merged_into_newer_entries = filled_in,
            "restored short-term memory summaries from the database"
        );
        Ok(pending)
    }

    /// Writes `pending` (the folded segments of `pending_ops` operations) and whatever is still
    /// queued, trying until [`DRAIN_TIMEOUT`] has passed.
    async fn drain(&mut self, mut segments: Vec<Segment>, pending_ops: usize) {
        let mut queued = Vec::new();
        while let Ok(op) = self.queue.try_recv() {
            queued.push(op);
        }
        let count = pending_ops + queued.len();
        if count == 0 {
            return;
        }
        // Segments run in order, so the queued operations' segments follow the pending ones.
        segments.extend(fold(queued));
        let deadline = Instant::now() + DRAIN_TIMEOUT;
        let mut backoff = FIRST_BACKOFF;
        loop {
            match tokio::time::timeout_at(deadline.into(), self.db.write(&segments)).await {
                Ok(Ok(statements)) => {
                    self.stats
                        .statements
                        .fetch_add(statements, Ordering::Relaxed);
                    self.stats.batches.fetch_add(1, Ordering::Relaxed);
                    self.stats
                        .written
                        .fetch_add(count as u64, Ordering::Relaxed);
                    tracing::info!(operations = count, "scope rows flushed on shutdown");
                    return;
                }
                Ok(Err(err)) if Instant::now() + backoff < deadline => {
                    self.mark_down("drain", &err);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Ok(Err(err)) => {
                    tracing::error!(operations = count, %err, "scope rows lost at shutdown: database unavailable");
                    return;
                }
                Err(_) => {
                    tracing::error!(
                        operations = count,
                        "scope rows lost at shutdown: database too slow"
                    );
                    return;
                }
            }
        }
    }
}
