//! The writer task: connects and migrates (retrying while the database is down), restores recent
//! rows with distilled memory into the keyspace, then drains the queue in folded batches, retrying
//! a failed batch with exponential backoff. On shutdown it writes what is left within a bounded time.

use super::db::Database;
use super::fold::fold;
use super::{PersistOp, PersistStats};
use crate::store::Store;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// Most operations folded into one batch.
const MAX_BATCH: usize = 20_000;
/// How long the writer keeps gathering after the first operation of a batch. Under load one
/// transaction then carries the operations of hundreds of captures instead of a few: fewer
/// commits, and each database page touched is written once per batch, not once per capture. A
/// lone write waits at most this long; commands never wait for it.
const GATHER: Duration = Duration::from_millis(20);
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
}

/// Why a retry loop ended without success.
struct Stopped;

impl Writer {
    pub async fn run(mut self) {
        let db = self.db.clone();
        let ready = self
            .retry_until_stopped("migrate", || {
                let db = db.clone();
                async move { db.migrate().await }
            })
            .await;
        if ready.is_ok() {
            self.restore().await;
            while let Some(batch) = self.next_batch().await {
                if self.write_with_retry(batch.clone()).await.is_err() {
                    // Stopped while the database was failing: keep the batch for the drain.
                    self.drain(batch).await;
                    self.db.close().await;
                    return;
                }
            }
        }
        self.drain(Vec::new()).await;
        self.db.close().await;
    }

    /// Waits for the next operations (or the stop signal) and takes what else is queued.
    async fn next_batch(&mut self) -> Option<Vec<PersistOp>> {
        let first = tokio::select! {
            op = self.queue.recv() => op?,
            _ = self.stop.wait_for(|stop| *stop) => return None,
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
        Some(batch)
    }

    async fn write_with_retry(&mut self, ops: Vec<PersistOp>) -> Result<(), Stopped> {
        let count = ops.len() as u64;
        let segments = fold(ops);
        let db = self.db.clone();
        let stats = self.stats.clone();
        self.retry_until_stopped("write", || {
            let (db, segments, stats) = (db.clone(), segments.clone(), stats.clone());
            async move {
                let statements = db.write(&segments).await?;
                stats.statements.fetch_add(statements, Ordering::Relaxed);
                stats.batches.fetch_add(1, Ordering::Relaxed);
                stats.written.fetch_add(count, Ordering::Relaxed);
                Ok(())
            }
        })
        .await
    }

    /// Runs `attempt` until it succeeds, backing off exponentially; gives up when stop is signalled.
    async fn retry_until_stopped<F, Fut>(
        &mut self,
        what: &str,
        mut attempt: F,
    ) -> Result<(), Stopped>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(), sqlx::Error>>,
    {
        let mut backoff = FIRST_BACKOFF;
        loop {
            match attempt().await {
                Ok(()) => {
                    self.mark_up();
                    return Ok(());
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

    /// Loads recent rows with distilled memory back as entries (a live entry always wins).
    async fn restore(&mut self) {
        match self.db.load_recent(self.summary_ttl_secs).await {
            Ok(rows) => {
                let ttl_ms = self.summary_ttl_secs.saturating_mul(1000);
                let restored = rows
                    .into_iter()
                    .filter(|row| crate::stm::restore(&self.store, row, ttl_ms))
                    .count();
                self.stats
                    .restored
                    .store(restored as u64, Ordering::Relaxed);
                tracing::info!(
                    restored,
                    "restored short-term memory summaries from the database"
                );
            }
            Err(err) => tracing::warn!(%err, "could not load summaries from the database"),
        }
    }

    /// Writes `pending` and whatever is still queued, trying until [`DRAIN_TIMEOUT`] has passed.
    async fn drain(&mut self, mut pending: Vec<PersistOp>) {
        while let Ok(op) = self.queue.try_recv() {
            pending.push(op);
        }
        if pending.is_empty() {
            return;
        }
        let count = pending.len();
        let segments = fold(pending);
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
