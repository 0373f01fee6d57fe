//! Counters shared by INFO (and, later, the metrics endpoint). Relaxed atomics: they are statistics,
//! not synchronisation.

use std::sync::atomic::{AtomicU64, Ordering};

/// Server-wide statistics, reset by CONFIG RESETSTAT.
#[derive(Default)]
pub struct Stats {
    pub total_connections_received: AtomicU64,
    pub total_commands_processed: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub total_net_input_bytes: AtomicU64,
    pub total_net_output_bytes: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub total_error_replies: AtomicU64,
}

impl Stats {
    pub fn reset(&self) {
        for counter in [
            &self.total_connections_received,
            &self.total_commands_processed,
            &self.rejected_connections,
            &self.total_net_input_bytes,
            &self.total_net_output_bytes,
            &self.keyspace_hits,
            &self.keyspace_misses,
            &self.total_error_replies,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        if n != 0 {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// Bytes currently allocated by the process (jemalloc's `stats.allocated`), 0 if unavailable.
pub fn allocated_bytes() -> u64 {
    // The statistics are a snapshot refreshed by advancing the epoch.
    if tikv_jemalloc_ctl::epoch::advance().is_err() {
        return 0;
    }
    tikv_jemalloc_ctl::stats::allocated::read().map_or(0, |n| n as u64)
}

/// Resident set size of this process in bytes, from /proc (0 where unavailable).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}
