//! The latency monitor behind LATENCY LATEST/HISTORY/RESET/GRAPH/DOCTOR: events (`command`,
//! `fast-command`) that took at least `latency-monitor-threshold` milliseconds, one sample per
//! second per event (the worst of that second), the last 160 kept, as Redis keeps them.
//!
//! The hot path reads one atomic threshold (0: off, the default) and takes the lock only for a
//! command that was slow enough to record.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

/// Samples kept per event.
pub const HISTORY_LEN: usize = 160;

/// One second's worst latency of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Unix time, seconds.
    pub time: u64,
    pub millis: u64,
}

/// An event's samples and its all-time worst.
#[derive(Default, Debug, Clone)]
pub struct EventHistory {
    pub samples: VecDeque<Sample>,
    pub max: u64,
}

#[derive(Default)]
pub struct LatencyMonitor {
    threshold_ms: AtomicU64,
    events: Mutex<Vec<(&'static str, EventHistory)>>,
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl LatencyMonitor {
    pub fn new(threshold_ms: u64) -> LatencyMonitor {
        let monitor = LatencyMonitor::default();
        monitor.set_threshold(threshold_ms);
        monitor
    }

    pub fn set_threshold(&self, millis: u64) {
        self.threshold_ms.store(millis, Ordering::Relaxed);
    }

    pub fn threshold(&self) -> u64 {
        self.threshold_ms.load(Ordering::Relaxed)
    }

    /// Records `event` if monitoring is on and `micros` reaches the threshold.
    pub fn observe(&self, event: &'static str, micros: u64) {
        let threshold = self.threshold();
        if threshold == 0 || micros / 1000 < threshold {
            return;
        }
        self.add_sample(event, micros / 1000, unix_secs());
    }

    fn add_sample(&self, event: &'static str, millis: u64, time: u64) {
        let mut events = self.events.lock();
        let at = match events.iter().position(|(name, _)| *name == event) {
            Some(at) => at,
            None => {
                events.push((event, EventHistory::default()));
                events.len() - 1
            }
        };
        let history = &mut events[at].1;
        history.max = history.max.max(millis);
        match history.samples.back_mut() {
            Some(last) if last.time == time => last.millis = last.millis.max(millis),
            _ => {
                if history.samples.len() == HISTORY_LEN {
                    history.samples.pop_front();
                }
                history.samples.push_back(Sample { time, millis });
            }
        }
    }

    /// Every event with samples, in the order they first happened.
    pub fn events(&self) -> Vec<(&'static str, EventHistory)> {
        self.events.lock().clone()
    }

    pub fn history(&self, event: &[u8]) -> Option<EventHistory> {
        self.events
            .lock()
            .iter()
            .find(|(name, _)| name.as_bytes().eq_ignore_ascii_case(event))
            .map(|(_, h)| h.clone())
    }

    /// Forgets the named events (all when `names` is empty); returns how many were forgotten.
    pub fn reset(&self, names: &[&[u8]]) -> usize {
        let mut events = self.events.lock();
        let before = events.len();
        if names.is_empty() {
            events.clear();
        } else {
            events.retain(|(name, _)| {
                !names
                    .iter()
                    .any(|n| n.eq_ignore_ascii_case(name.as_bytes()))
            });
        }
        before - events.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_keeping_the_worst() {
        let monitor = LatencyMonitor::new(10);
        monitor.add_sample("command", 12, 100);
        monitor.add_sample("command", 30, 100);
        monitor.add_sample("command", 11, 101);
        let h = monitor.history(b"COMMAND").unwrap();
        assert_eq!(
            h.samples,
            [
                Sample {
                    time: 100,
                    millis: 30
                },
                Sample {
                    time: 101,
                    millis: 11
                }
            ]
        );
        assert_eq!(h.max, 30);
        for t in 0..200 {
            monitor.add_sample("command", 10, 1000 + t);
        }
        assert_eq!(
            monitor.history(b"command").unwrap().samples.len(),
            HISTORY_LEN
        );
        assert_eq!(monitor.reset(&[b"nosuch"]), 0);
        assert_eq!(monitor.reset(&[]), 1);
    }

    #[test]
    fn below_the_threshold_or_off_records_nothing() {
        let monitor = LatencyMonitor::new(0);
        monitor.observe("command", 5_000_000);
        monitor.set_threshold(5);
        monitor.observe("command", 4_999);
        assert!(monitor.events().is_empty());
        monitor.observe("command", 5_000);
        assert_eq!(monitor.events().len(), 1);
    }
}
