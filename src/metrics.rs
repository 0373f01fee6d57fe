//! Counters shared by INFO and the metrics endpoint. Striped per thread ([`Counter`]): the hot
//! path bumps several of them per request, and one shared atomic would bounce between cores.

pub use crate::percpu::Counter;
use crate::percpu::Total;

/// Server-wide statistics, reset by CONFIG RESETSTAT.
#[derive(Default)]
pub struct Stats {
    pub total_connections_received: Counter,
    pub total_commands_processed: Counter,
    pub rejected_connections: Counter,
    pub total_net_input_bytes: Counter,
    pub total_net_output_bytes: Counter,
    pub keyspace_hits: Counter,
    pub keyspace_misses: Counter,
    pub total_error_replies: Counter,
    /// Clients closed for passing their `client-output-buffer-limit`.
    pub client_output_buffer_limit_disconnections: Counter,
    /// Clients closed for `maxmemory-clients` (INFO's `evicted_clients`).
    pub evicted_clients: Counter,
    /// TLS connections that failed or timed out in the handshake.
    pub tls_handshake_failures: Counter,
    /// Reads from and writes to client sockets (INFO's `total_reads_processed`/`_writes_`).
    pub total_reads_processed: Counter,
    pub total_writes_processed: Counter,
    /// The `instantaneous_*` rates, sampled from the totals above.
    pub instant: InstantRates,
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
            &self.evicted_clients,
            &self.tls_handshake_failures,
            &self.total_reads_processed,
            &self.total_writes_processed,
        ] {
            counter.reset();
        }
        self.instant.reset();
    }

    pub fn add(counter: &Counter, n: u64) {
        if n != 0 {
            counter.add(n);
        }
    }
}

/// INFO's `instantaneous_*` figures, sampled as Redis's cron does: every [`SAMPLE_EVERY`] the
/// running totals are read and the rate since the previous reading is kept; INFO shows the mean of
/// the last [`SAMPLES`] rates (so a burst fades out over 1.6 s, as on Redis).
#[derive(Default)]
pub struct InstantRates {
    inner: parking_lot::Mutex<RateSamples>,
}

pub const SAMPLES: usize = 16;
pub const SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Commands processed, bytes read, bytes written.
const METRICS: usize = 3;

#[derive(Default)]
struct RateSamples {
    last: Option<([u64; METRICS], std::time::Instant)>,
    /// Per-second rates, a ring of `SAMPLES` per metric.
    rates: [[f64; SAMPLES]; METRICS],
    next: usize,
}

/// What INFO prints: operations per second and network kilobytes per second.
pub struct Rates {
    pub ops_per_sec: u64,
    pub input_kbps: f64,
    pub output_kbps: f64,
}

impl InstantRates {
    /// One reading of the totals (called every [`SAMPLE_EVERY`] by the server's sampler task).
    pub fn sample(&self, stats: &Stats) {
        let now = std::time::Instant::now();
        let totals = [
            stats.total_commands_processed.total(),
            stats.total_net_input_bytes.total(),
            stats.total_net_output_bytes.total(),
        ];
        let mut inner = self.inner.lock();
        if let Some((last, at)) = inner.last {
            let secs = now.duration_since(at).as_secs_f64().max(1e-3);
            let slot = inner.next;
            for (metric, (total, before)) in totals.iter().zip(last).enumerate() {
                inner.rates[metric][slot] = total.saturating_sub(before) as f64 / secs;
            }
            inner.next = (slot + 1) % SAMPLES;
        }
        inner.last = Some((totals, now));
    }

    pub fn rates(&self) -> Rates {
        let inner = self.inner.lock();
        let mean = |metric: usize| inner.rates[metric].iter().sum::<f64>() / SAMPLES as f64;
        Rates {
            ops_per_sec: mean(0) as u64,
            input_kbps: mean(1) / 1024.0,
            output_kbps: mean(2) / 1024.0,
        }
    }

    /// CONFIG RESETSTAT: the samples start again (the totals they read were reset too).
    pub fn reset(&self) {
        *self.inner.lock() = RateSamples::default();
    }
}

/// The memory figures INFO reports beside the current ones: what the server used when it started
/// (its fixed overhead) and the most it has used (seen whenever memory is read).
pub struct MemoryMarks {
    pub startup: u64,
    peak: std::sync::atomic::AtomicU64,
}

impl MemoryMarks {
    pub fn now() -> MemoryMarks {
        let startup = allocated_bytes();
        MemoryMarks {
            startup,
            peak: startup.into(),
        }
    }

    /// Notes `used` and returns the peak including it.
    pub fn peak(&self, used: u64) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        self.peak.fetch_max(used, Relaxed).max(used)
    }

    /// CONFIG RESETSTAT: the peak starts again from `used`.
    pub fn reset_peak(&self, used: u64) {
        self.peak.store(used, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The store's memory meter reads it for eviction; INFO, the RDB header and the peak read it here.
pub use crate::store::eviction::allocated_bytes;

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

/// Upper bounds (µs) of the metrics endpoint's command latency buckets; the last bucket is +Inf.
pub const LATENCY_BUCKETS_US: [u64; 12] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 100_000, 1_000_000,
];

pub use crate::command_stats::CommandStats;

/// jemalloc's own statistics report (`malloc_stats_print`).
pub fn allocator_report() -> String {
    extern "C" fn collect(opaque: *mut std::ffi::c_void, text: *const std::ffi::c_char) {
        if opaque.is_null() || text.is_null() {
            return;
        }
        // SAFETY: `opaque` is the `&mut String` passed below, alive for the whole print call and
        // not otherwise borrowed meanwhile; `text` is a NUL-terminated string jemalloc owns for
        // the duration of this callback.
        unsafe {
            let out = &mut *(opaque as *mut String);
            out.push_str(&std::ffi::CStr::from_ptr(text).to_string_lossy());
        }
    }
    let mut out = String::new();
    // SAFETY: `collect` matches jemalloc's write callback signature; the opaque pointer is our
    // String (see `collect`), and a null options string asks for the default report.
    unsafe {
        tikv_jemalloc_sys::malloc_stats_print(
            Some(collect),
            &mut out as *mut String as *mut std::ffi::c_void,
            std::ptr::null(),
        );
    }
    out
}

/// Returns unused dirty pages of every arena to the system.
pub fn purge_allocator() {
    // 4096 is MALLCTL_ARENAS_ALL: the command applies to every arena.
    const PURGE_ALL: &[u8] = b"arena.4096.purge\0";
    // SAFETY: `arena.<i>.purge` takes and returns no value, so there is nothing to read or write
    // through the null pointers; the name is NUL-terminated.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            PURGE_ALL.as_ptr() as *const std::ffi::c_char,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}

/// getrusage for `who` (RUSAGE_SELF, RUSAGE_CHILDREN, RUSAGE_THREAD), None if it fails.
pub fn cpu_usage(who: libc::c_int) -> Option<libc::rusage> {
    // SAFETY: `usage` is a plain C struct for which all-zero bytes are a valid value, and
    // getrusage only writes into the struct we pass by pointer; it lives for the whole call.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        (libc::getrusage(who, &mut usage) == 0).then_some(usage)
    }
}

/// The allocator's figures, refreshed (jemalloc caches them until the epoch advances).
pub struct Allocator {
    pub allocated: u64,
    pub active: u64,
    pub resident: u64,
}

impl Allocator {
    pub fn read() -> Allocator {
        use tikv_jemalloc_ctl::stats;
        let _ = tikv_jemalloc_ctl::epoch::advance();
        let read = |r: tikv_jemalloc_ctl::Result<usize>| r.map_or(0, |n| n as u64);
        Allocator {
            allocated: read(stats::allocated::read()),
            active: read(stats::active::read()),
            resident: read(stats::resident::read()),
        }
    }
}

/// `jemalloc-5.3.0`, as Redis names its allocator.
pub fn allocator_name() -> String {
    let version = tikv_jemalloc_ctl::version::read().unwrap_or("unknown");
    format!("jemalloc-{}", version.split('-').next().unwrap_or(version))
}
