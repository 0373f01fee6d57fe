//! Short-term memory: the entry type stored under `shortterm:…` keys, the key format and scopes.

pub mod index;
pub mod text;

use bytes::Bytes;

/// Which scope an entry belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `shortterm:user:<user>:<channel>[:<persona>]`: one user's view across channels.
    User,
    /// `shortterm:server:<server>:<channel>[:<persona>]`: a channel's shared history.
    Server,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Server => "server",
        }
    }
}

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Model,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Model => "model",
        }
    }
}

/// One remembered message, cleaned before storage.
#[derive(Clone, Debug, PartialEq)]
pub struct StmMessage {
    pub role: Role,
    pub speaker: Option<Box<str>>,
    pub content: Box<str>,
    /// Capture time in ms.
    pub ts: u64,
}

/// One STM entry: a scope's last messages plus its distilled memory and cadence counters.
#[derive(Clone, Debug, PartialEq)]
pub struct StmEntry {
    pub scope: Scope,
    pub user: Option<Bytes>,
    pub server: Option<Bytes>,
    pub channel: Bytes,
    pub parent: Option<Bytes>,
    pub persona: Option<u64>,
    pub lineage: Option<i64>,
    pub messages: Vec<StmMessage>,
    pub summary: Option<String>,
    /// slug → text, sorted by slug.
    pub categories: Vec<(String, String)>,
    pub turns_since_refresh: i64,
    pub last_refreshed_turn: i64,
    /// Time of the last write (capture, summary or categories) in ms.
    pub last_updated: u64,
}

use crate::config::Config;
use crate::store::Store;
use std::sync::atomic::{AtomicU64, Ordering};
use text::TextCleaner;

/// Cumulative STM counters for `INFO stm` (reset by CONFIG RESETSTAT, not by FLUSHALL).
#[derive(Default)]
pub struct StmStats {
    pub captures: AtomicU64,
    pub skipped_stop: AtomicU64,
    pub skipped_privacy: AtomicU64,
    pub skipped_no_messages: AtomicU64,
    pub skipped_no_replies: AtomicU64,
    pub skipped_empty: AtomicU64,
    pub ticks: AtomicU64,
    pub summaries: AtomicU64,
    pub category_writes: AtomicU64,
    pub forgets: AtomicU64,
}

impl StmStats {
    fn counters(&self) -> [(&'static str, &AtomicU64); 10] {
        [
            ("stm_captures", &self.captures),
            ("stm_skipped_stop", &self.skipped_stop),
            ("stm_skipped_privacy", &self.skipped_privacy),
            ("stm_skipped_no_messages", &self.skipped_no_messages),
            ("stm_skipped_no_replies", &self.skipped_no_replies),
            ("stm_skipped_empty", &self.skipped_empty),
            ("stm_ticks", &self.ticks),
            ("stm_summaries", &self.summaries),
            ("stm_category_writes", &self.category_writes),
            ("stm_forgets", &self.forgets),
        ]
    }
}

/// Server-wide STM state: the compiled cleaning rules and the counters.
pub struct StmState {
    pub cleaner: TextCleaner,
    pub stats: StmStats,
}

impl StmState {
    /// Compiles the configured strip patterns; a bad pattern is a start-up error.
    pub fn new(config: &Config) -> Result<StmState, String> {
        let cleaner = TextCleaner::new(&config.stm_strip_patterns)
            .map_err(|e| format!("invalid --stm-strip-pattern: {e}"))?;
        Ok(StmState {
            cleaner,
            stats: StmStats::default(),
        })
    }

    pub fn reset_stats(&self) {
        for (_, counter) in self.stats.counters() {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// The lines of `INFO stm`.
    pub fn render_info(&self, store: &Store, line: &mut dyn FnMut(&str, String)) {
        line("stm_entries", store.stm_index.len().to_string());
        line(
            "stm_expired_entries",
            store
                .expired_stm_entries
                .load(Ordering::Relaxed)
                .to_string(),
        );
        for (name, counter) in self.stats.counters() {
            line(name, counter.load(Ordering::Relaxed).to_string());
        }
    }
}
