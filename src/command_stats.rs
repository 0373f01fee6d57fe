//! Per-command statistics (INFO commandstats / latencystats / errorstats, LATENCY HISTOGRAM, the
//! metrics endpoint), kept per thread stripe (see [`crate::percpu`]) and summed when read, so
//! counting a command never writes a cache line another core is writing.
//!
//! Each command of the static table has a slot per stripe, found from the command's position in
//! the table (no hashing on the hot path). Container commands (CONFIG, CLIENT…) are counted per
//! subcommand as `config|get`, as Redis counts them, in a small per-stripe list.

use crate::percpu::{stripe, STRIPES};
use crate::protocol::Reply;
use crate::spec::{rows, Command};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Commands whose first argument names a subcommand, counted as `container|sub` (Redis's list).
pub const CONTAINERS: &[&str] = &[
    "acl", "client", "cluster", "command", "config", "function", "latency", "memory", "module",
    "object", "pubsub", "script", "slowlog", "xgroup", "xinfo",
];
/// Distinct error codes tracked, as Redis's cap; later new codes are not counted by code.
const MAX_ERROR_CODES: usize = 128;
/// Distinct subcommand names tracked per stripe (a bound against odd handlers).
const MAX_SUBCOMMANDS: usize = 256;

/// Latency histogram: values in nanoseconds; exact below 32 ns, then 16 buckets per power of two
/// (6% wide), up to 2^40 ns (18 minutes), larger values in the last bucket.
const EXACT: usize = 32;
const SUB_BITS: u32 = 4;
const MAX_EXPONENT: u32 = 40;
pub const BUCKETS: usize = EXACT + (((MAX_EXPONENT - 5 + 1) as usize) << SUB_BITS);

fn bucket_of(nanos: u64) -> usize {
    if nanos < EXACT as u64 {
        return nanos as usize;
    }
    let exponent = 63 - nanos.leading_zeros();
    if exponent > MAX_EXPONENT {
        return BUCKETS - 1;
    }
    let sub = ((nanos >> (exponent - SUB_BITS)) & ((1 << SUB_BITS) - 1)) as usize;
    EXACT + (((exponent - 5) as usize) << SUB_BITS) + sub
}

/// The largest value (ns) that falls in `bucket`.
pub fn bucket_upper(bucket: usize) -> u64 {
    if bucket < EXACT {
        return bucket as u64;
    }
    let exponent = ((bucket - EXACT) >> SUB_BITS) as u32 + 5;
    let sub = ((bucket - EXACT) & ((1 << SUB_BITS) - 1)) as u64;
    let width = 1u64 << (exponent - SUB_BITS);
    ((1 << SUB_BITS) + sub) * width + width - 1
}

/// One command's counters in one stripe.
#[repr(align(64))]
#[derive(Default)]
struct Slot {
    calls: AtomicU64,
    nanos: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
    /// Allocated on the first call, so unused commands cost no histogram.
    histogram: OnceLock<Box<[AtomicU64]>>,
}

impl Slot {
    fn record(&self, nanos: u64, latency_tracking: bool) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
        if !latency_tracking {
            return;
        }
        let histogram = self
            .histogram
            .get_or_init(|| (0..BUCKETS).map(|_| AtomicU64::new(0)).collect());
        histogram[bucket_of(nanos)].fetch_add(1, Ordering::Relaxed);
    }

    fn reset(&self) {
        for c in [&self.calls, &self.nanos, &self.rejected, &self.failed] {
            c.store(0, Ordering::Relaxed);
        }
        if let Some(h) = self.histogram.get() {
            h.iter().for_each(|b| b.store(0, Ordering::Relaxed));
        }
    }

    fn add_to(&self, totals: &mut CommandTotals) {
        totals.calls += self.calls.load(Ordering::Relaxed);
        totals.nanos += self.nanos.load(Ordering::Relaxed);
        totals.rejected_calls += self.rejected.load(Ordering::Relaxed);
        totals.failed_calls += self.failed.load(Ordering::Relaxed);
        if let Some(h) = self.histogram.get() {
            if totals.histogram.is_empty() {
                totals.histogram = vec![0; BUCKETS];
            }
            for (sum, b) in totals.histogram.iter_mut().zip(h.iter()) {
                *sum += b.load(Ordering::Relaxed);
            }
        }
    }
}

/// One thread stripe's counters.
#[repr(align(128))]
struct Stripe {
    commands: Box<[Slot]>,
    subcommands: Mutex<Vec<(String, Slot)>>,
    /// Error replies by code (`ERR`, `WRONGTYPE`…).
    errors: Mutex<Vec<(String, u64)>>,
}

/// A command's (or subcommand's) counters summed over the stripes.
#[derive(Default, Debug, Clone)]
pub struct CommandTotals {
    /// `get`, or `config|get` for a subcommand.
    pub name: String,
    pub calls: u64,
    pub nanos: u64,
    pub rejected_calls: u64,
    pub failed_calls: u64,
    /// Counts per [`bucket_of`] bucket (empty when nothing was timed).
    pub histogram: Vec<u64>,
}

impl CommandTotals {
    pub fn usec(&self) -> u64 {
        self.nanos / 1000
    }

    /// The latency (µs) at or below which `percent` of the calls ran (a bucket's upper bound).
    pub fn percentile_usec(&self, percent: f64) -> f64 {
        let total: u64 = self.histogram.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let wanted = ((percent / 100.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, count) in self.histogram.iter().enumerate() {
            seen += count;
            if seen >= wanted {
                return bucket_upper(bucket) as f64 / 1000.0;
            }
        }
        bucket_upper(BUCKETS - 1) as f64 / 1000.0
    }

    /// Calls that ran in at most `nanos` (counted by whole buckets).
    pub fn count_at_most(&self, nanos: u64) -> u64 {
        self.histogram
            .iter()
            .enumerate()
            .take_while(|(b, _)| bucket_upper(*b) <= nanos)
            .map(|(_, c)| c)
            .sum()
    }
}

/// Every command's counters and the error counts.
pub struct CommandStats {
    stripes: Box<[Stripe]>,
    /// `latency-tracking`: whether calls feed the latency histograms.
    pub latency_tracking: AtomicBool,
}

impl Default for CommandStats {
    fn default() -> Self {
        Self::new()
    }
}

/// What a call's reply means for its counters.
enum Outcome {
    Ok,
    Failed,
    Rejected,
}

impl CommandStats {
    pub fn new() -> CommandStats {
        CommandStats {
            stripes: (0..*STRIPES)
                .map(|_| Stripe {
                    commands: (0..rows().len()).map(|_| Slot::default()).collect(),
                    subcommands: Mutex::new(Vec::new()),
                    errors: Mutex::new(Vec::new()),
                })
                .collect(),
            latency_tracking: AtomicBool::new(true),
        }
    }

    fn stripe(&self) -> &Stripe {
        // `stripe()` is below STRIPES, the length of `stripes`.
        &self.stripes[stripe()]
    }

    /// The table position of `cmd` (a reference into `rows()`), computed from addresses.
    pub fn index(cmd: &Command) -> Option<usize> {
        let base = rows().as_ptr() as usize;
        let offset = (cmd as *const Command as usize).checked_sub(base)?;
        let index = offset / std::mem::size_of::<Command>();
        (index < rows().len()).then_some(index)
    }

    /// The `container|sub` name a call is counted under, or None for a plain command.
    fn subcommand_name(cmd: &Command, args: &[&[u8]]) -> Option<String> {
        if args.len() < 2 || !CONTAINERS.contains(&cmd.name) {
            return None;
        }
        let sub = args[1];
        let plausible = !sub.is_empty()
            && sub.len() <= 32
            && sub
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
        plausible.then(|| {
            format!(
                "{}|{}",
                cmd.name,
                String::from_utf8_lossy(sub).to_lowercase()
            )
        })
    }

    /// Applies `f` to the slot `cmd` (with `args`) is counted in, in this thread's stripe.
    fn with_slot(&self, cmd: &Command, args: &[&[u8]], f: impl FnOnce(&Slot)) {
        let stripe = self.stripe();
        if CONTAINERS.contains(&cmd.name) && args.len() >= 2 {
            let Some(name) = Self::subcommand_name(cmd, args) else {
                return;
            };
            let mut subs = stripe.subcommands.lock();
            if let Some((_, slot)) = subs.iter().find(|(n, _)| *n == name) {
                return f(slot);
            }
            if subs.len() < MAX_SUBCOMMANDS {
                subs.push((name, Slot::default()));
                if let Some((_, slot)) = subs.last() {
                    f(slot);
                }
            }
            return;
        }
        if let Some(slot) = Self::index(cmd).and_then(|i| stripe.commands.get(i)) {
            f(slot);
        }
    }

    /// Counts a call that ran for `nanos` and answered `reply`: `failed_calls` when the reply is
    /// an error; a subcommand's own arity error counts as rejected (Redis checks it before
    /// running), and an unknown subcommand counts under no command (Redis finds none).
    pub fn observe(&self, cmd: &Command, args: &[&[u8]], nanos: u64, reply: &Reply) {
        let outcome = match reply {
            Reply::Error(text) => {
                self.count_error(text);
                if text.starts_with("ERR unknown subcommand") {
                    return;
                }
                if text.starts_with("ERR wrong number of arguments for") {
                    Outcome::Rejected
                } else {
                    Outcome::Failed
                }
            }
            _ => Outcome::Ok,
        };
        let latency_tracking = self.latency_tracking.load(Ordering::Relaxed);
        self.with_slot(cmd, args, |slot| match outcome {
            Outcome::Rejected => {
                slot.rejected.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Failed => {
                slot.failed.fetch_add(1, Ordering::Relaxed);
                slot.record(nanos, latency_tracking);
            }
            Outcome::Ok => slot.record(nanos, latency_tracking),
        });
    }

    /// Counts a command refused before it ran (arity, authentication, OOM…) with `error`.
    pub fn rejected(&self, cmd: Option<&Command>, args: &[&[u8]], error: &str) {
        self.count_error(error);
        if let Some(cmd) = cmd {
            self.with_slot(cmd, args, |slot| {
                slot.rejected.fetch_add(1, Ordering::Relaxed);
            });
        }
    }

    /// Counts an error reply under its code: the first word (`ERR`, `WRONGTYPE`, `NOAUTH`…).
    pub fn count_error(&self, text: &str) {
        let code = text.split(' ').next().unwrap_or("ERR");
        let code = if code.is_empty() { "ERR" } else { code };
        let mut errors = self.stripe().errors.lock();
        if let Some((_, n)) = errors.iter_mut().find(|(c, _)| c == code) {
            *n += 1;
        } else if errors.len() < MAX_ERROR_CODES {
            errors.push((code.to_string(), 1));
        }
    }

    /// Every command and subcommand called (or rejected) at least once, in table order, each
    /// container's subcommands after it in name order.
    pub fn totals(&self) -> Vec<CommandTotals> {
        let mut out = Vec::new();
        for (i, cmd) in rows().iter().enumerate() {
            let mut totals = CommandTotals {
                name: cmd.name.to_string(),
                ..Default::default()
            };
            for stripe in self.stripes.iter() {
                stripe.commands[i].add_to(&mut totals);
            }
            if totals.calls + totals.rejected_calls + totals.failed_calls > 0 {
                out.push(totals);
            }
            if CONTAINERS.contains(&cmd.name) {
                out.extend(self.subcommand_totals(cmd.name));
            }
        }
        out
    }

    fn subcommand_totals(&self, container: &str) -> Vec<CommandTotals> {
        let prefix = format!("{container}|");
        let mut found: Vec<CommandTotals> = Vec::new();
        for stripe in self.stripes.iter() {
            for (name, slot) in stripe.subcommands.lock().iter() {
                if !name.starts_with(&prefix) {
                    continue;
                }
                let at = match found.iter().position(|t| t.name == *name) {
                    Some(at) => at,
                    None => {
                        found.push(CommandTotals {
                            name: name.clone(),
                            ..Default::default()
                        });
                        found.len() - 1
                    }
                };
                slot.add_to(&mut found[at]);
            }
        }
        found.retain(|t| t.calls + t.rejected_calls + t.failed_calls > 0);
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    /// Error counts by code, in code order.
    pub fn errors(&self) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = Vec::new();
        for stripe in self.stripes.iter() {
            for (code, n) in stripe.errors.lock().iter() {
                match out.iter_mut().find(|(c, _)| c == code) {
                    Some((_, sum)) => *sum += n,
                    None => out.push((code.clone(), *n)),
                }
            }
        }
        out.retain(|(_, n)| *n > 0);
        out.sort();
        out
    }

    /// CONFIG RESETSTAT: every command's and error's counts back to zero.
    pub fn reset(&self) {
        for stripe in self.stripes.iter() {
            stripe.commands.iter().for_each(Slot::reset);
            stripe.subcommands.lock().clear();
            stripe.errors.lock().clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_cover_their_values() {
        let mut last = 0;
        for nanos in (0..5000u64).chain([1 << 20, 123_456_789, 1 << 39]) {
            let b = bucket_of(nanos);
            assert!(b < BUCKETS);
            assert!(bucket_upper(b) >= nanos, "{nanos} in bucket {b}");
            assert!(
                b == 0 || bucket_upper(b - 1) < nanos,
                "{nanos} in bucket {b}"
            );
            assert!(b >= last || nanos >= 5000);
            last = b;
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_come_from_the_histogram() {
        let mut totals = CommandTotals {
            histogram: vec![0; BUCKETS],
            ..Default::default()
        };
        for nanos in [1_000u64; 98].into_iter().chain([50_000, 900_000]) {
            totals.histogram[bucket_of(nanos)] += 1;
        }
        let p50 = totals.percentile_usec(50.0);
        assert!((1.0..1.07).contains(&p50), "{p50}");
        let p99 = totals.percentile_usec(99.0);
        assert!((50.0..53.5).contains(&p99), "{p99}");
        let p999 = totals.percentile_usec(99.9);
        assert!((900.0..960.0).contains(&p999), "{p999}");
        assert_eq!(totals.count_at_most(10_000), 98);
    }
}
