//! Counters split into per-thread stripes and summed when read. Every client thread bumps its own
//! cache line, so the counters the hot path touches on every command (commands processed, bytes
//! in and out, keyspace hits, per-command calls) never bounce between cores; readers (INFO, the
//! metrics endpoint) pay the sum instead, which is rare.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::LazyLock;

/// Number of stripes: twice the cores (threads beyond the cores share a stripe, which is still
/// correct, only slower), a power of two between 8 and 128.
pub static STRIPES: LazyLock<usize> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    (cores * 2).next_power_of_two().clamp(8, 128)
});

thread_local! {
    /// This thread's stripe, handed out round-robin on first use.
    static STRIPE: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % *STRIPES
    };
}

/// The calling thread's stripe, in `0..STRIPES`.
pub fn stripe() -> usize {
    STRIPE.with(|s| *s)
}

/// One counter on a cache line of its own (128 bytes: adjacent-line prefetchers pair lines).
#[repr(align(128))]
#[derive(Default)]
struct Padded(AtomicU64);

/// A striped counter: `add` touches only the calling thread's line.
pub struct Counter {
    cells: Box<[Padded]>,
}

impl Default for Counter {
    fn default() -> Self {
        Counter {
            cells: (0..*STRIPES).map(|_| Padded::default()).collect(),
        }
    }
}

impl Counter {
    pub fn add(&self, n: u64) {
        // `stripe()` is below STRIPES, the length of `cells`.
        self.cells[stripe()].0.fetch_add(n, Ordering::Relaxed);
    }

    /// The sum over every stripe.
    pub fn get(&self) -> u64 {
        self.cells
            .iter()
            .fold(0u64, |sum, c| sum.wrapping_add(c.0.load(Ordering::Relaxed)))
    }

    /// `AtomicU64::fetch_add`'s shape: adds, and returns the total before (exact only when no
    /// other thread adds at the same time; callers use it to decide whether to log).
    pub fn fetch_add(&self, n: u64, _order: Ordering) -> u64 {
        self.add(n);
        self.get().wrapping_sub(n)
    }

    pub fn reset(&self) {
        for cell in self.cells.iter() {
            cell.0.store(0, Ordering::Relaxed);
        }
    }
}

/// A counter's current total, striped or plain (for the readers: INFO, the metrics endpoint).
pub trait Total {
    fn total(&self) -> u64;
}

impl Total for Counter {
    fn total(&self) -> u64 {
        self.get()
    }
}

impl Total for AtomicU64 {
    fn total(&self) -> u64 {
        self.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_add_up() {
        let counter = std::sync::Arc::new(Counter::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let counter = counter.clone();
                std::thread::spawn(move || (0..1000).for_each(|_| counter.add(2)))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(counter.get(), 8000);
        counter.reset();
        assert_eq!(counter.get(), 0);
    }
}
