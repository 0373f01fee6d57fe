//! Counters shared by INFO and the metrics endpoint. Relaxed atomics: they are statistics,
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
    /// Clients closed for passing their `client-output-buffer-limit`.
    pub client_output_buffer_limit_disconnections: AtomicU64,
    /// TLS connections that failed or timed out in the handshake.
    pub tls_handshake_failures: AtomicU64,
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
            &self.client_output_buffer_limit_disconnections,
            &self.tls_handshake_failures,
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

/// Upper bounds (µs) of the command latency histogram buckets; the last bucket is +Inf.
pub const LATENCY_BUCKETS_US: [u64; 12] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 100_000, 1_000_000,
];

/// Count and latency of one command. Buckets are stored per bucket (not cumulative), so an
/// observation is three relaxed increments; scrapes add them up.
#[derive(Default)]
pub struct CommandCounters {
    pub calls: AtomicU64,
    pub micros: AtomicU64,
    pub buckets: [AtomicU64; LATENCY_BUCKETS_US.len() + 1],
}

/// Per-command counters, one slot per entry of the static command table, so the hot path does no
/// hashing and no locking: the slot is found from the command's position in the table.
pub struct CommandStats {
    slots: Vec<CommandCounters>,
}

impl Default for CommandStats {
    fn default() -> Self {
        Self::new()
    }
}

impl CommandStats {
    pub fn new() -> CommandStats {
        CommandStats {
            slots: (0..crate::commands::COMMANDS.len())
                .map(|_| CommandCounters::default())
                .collect(),
        }
    }

    /// The table position of `cmd` (a reference into `COMMANDS`), computed from addresses.
    fn slot(&self, cmd: &crate::commands::Command) -> Option<&CommandCounters> {
        let base = crate::commands::COMMANDS.as_ptr() as usize;
        let offset = (cmd as *const crate::commands::Command as usize).checked_sub(base)?;
        self.slots
            .get(offset / std::mem::size_of::<crate::commands::Command>())
    }

    pub fn observe(&self, cmd: &crate::commands::Command, micros: u64) {
        let Some(slot) = self.slot(cmd) else {
            return;
        };
        slot.calls.fetch_add(1, Ordering::Relaxed);
        slot.micros.fetch_add(micros, Ordering::Relaxed);
        let bucket = LATENCY_BUCKETS_US
            .iter()
            .position(|&le| micros <= le)
            .unwrap_or(LATENCY_BUCKETS_US.len());
        slot.buckets[bucket].fetch_add(1, Ordering::Relaxed);
    }

    /// `(command name, counters)` for every command called at least once.
    pub fn called(&self) -> impl Iterator<Item = (&'static str, &CommandCounters)> {
        crate::commands::COMMANDS
            .iter()
            .zip(&self.slots)
            .filter(|(_, c)| c.calls.load(Ordering::Relaxed) > 0)
            .map(|(cmd, c)| (cmd.name, c))
    }
}
