//! CLIENT PAUSE: while a pause holds, commands of the paused kind wait (asynchronously, in their
//! connection task) and the keyspace neither expires nor evicts keys, as in Redis: a failover tool
//! pauses writes so that nothing changes while it switches primaries.
//!
//! Dispatch reads one relaxed atomic per command ([`Pause::holds`]); the mutex is only taken while
//! a pause is set, so an unpaused server pays nothing else.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::time::Instant;
use tokio::sync::Notify;

/// What a pause holds back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseMode {
    /// Commands that may write (Redis's `write` and `may-replicate` flags, EXEC of such a queue).
    Write = 1,
    /// Every client command.
    All = 2,
}

/// The server's pause state. Lives in the [`super::Store`], which its expiry and eviction
/// consult.
#[derive(Default)]
pub struct Pause {
    /// 0: not paused; else the [`PauseMode`] as a number. Cleared when the pause ends.
    mode: AtomicU8,
    /// When the current pause ends (set together with `mode`, under this lock).
    end: Mutex<Option<Instant>>,
    /// Woken when the pause ends early (CLIENT UNPAUSE) or is changed.
    changed: Notify,
    /// Clients waiting for the pause to end (counted in INFO's `blocked_clients`, as Redis does).
    waiting: AtomicUsize,
}

impl Pause {
    /// Pauses until `end` in `mode`. A pause already set keeps its later end and its stricter
    /// mode, as Redis keeps the most restrictive of several pauses.
    pub fn pause(&self, end: Instant, mode: PauseMode) {
        let mut current = self.end.lock();
        // The mode is read from the atomic, not through `mode()`, which would take the lock held
        // here again (parking_lot's mutex is not reentrant).
        let old_mode = match self.mode.load(Relaxed) {
            1 => Some(PauseMode::Write),
            2 => Some(PauseMode::All),
            _ => None,
        };
        let (end, mode) = match (*current, old_mode) {
            (Some(old_end), Some(old_mode)) if old_end > Instant::now() => {
                (end.max(old_end), mode.max(old_mode))
            }
            _ => (end, mode),
        };
        *current = Some(end);
        self.mode.store(mode as u8, Relaxed);
        self.changed.notify_waiters();
    }

    /// Ends the pause now (CLIENT UNPAUSE): the waiting clients run their commands.
    pub fn unpause(&self) {
        let mut current = self.end.lock();
        *current = None;
        self.mode.store(0, Relaxed);
        self.changed.notify_waiters();
    }

    /// The mode of the pause in force, if any (an expired pause is cleared on the way).
    pub fn mode(&self) -> Option<PauseMode> {
        match self.mode.load(Relaxed) {
            0 => None,
            _ => self.still_in_force(),
        }
    }

    #[cold]
    fn still_in_force(&self) -> Option<PauseMode> {
        let mut end = self.end.lock();
        match *end {
            Some(at) if at > Instant::now() => match self.mode.load(Relaxed) {
                1 => Some(PauseMode::Write),
                2 => Some(PauseMode::All),
                _ => None,
            },
            _ => {
                *end = None;
                self.mode.store(0, Relaxed);
                self.changed.notify_waiters();
                None
            }
        }
    }

    /// True when a command must wait now; `may_write` says it may change the keyspace or
    /// replicate (only such commands wait under a WRITE pause).
    #[inline]
    pub fn holds(&self, may_write: bool) -> bool {
        match self.mode.load(Relaxed) {
            0 => false,
            1 if !may_write => false,
            _ => self.still_in_force().is_some(),
        }
    }

    /// True while any pause is set: keys are then neither expired nor evicted (a read still sees
    /// an expired key as gone). One relaxed load while no pause is set.
    #[inline]
    pub fn freezes_keyspace(&self) -> bool {
        self.mode.load(Relaxed) != 0 && self.still_in_force().is_some()
    }

    /// Resolves when the pause ends or changes; the caller checks again. Never blocks a thread.
    pub async fn changed(&self) {
        let notified = self.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let end = *self.end.lock();
        let Some(end) = end else {
            return;
        };
        self.waiting.fetch_add(1, Relaxed);
        let _leave = WaitingGuard(&self.waiting);
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(end.into()) => {
                self.still_in_force();
            }
        }
    }

    /// Clients waiting for the pause to end.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Relaxed)
    }
}

/// Takes a waiting client off the count however its wait ends (also when the task is dropped).
struct WaitingGuard<'a>(&'a AtomicUsize);

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_stricter_mode_and_the_later_end_win() {
        let pause = Pause::default();
        let now = Instant::now();
        pause.pause(now + Duration::from_secs(60), PauseMode::All);
        pause.pause(now + Duration::from_millis(1), PauseMode::Write);
        assert_eq!(pause.mode(), Some(PauseMode::All));
        assert!(pause.holds(false));
        pause.unpause();
        assert!(!pause.holds(true));
        assert!(!pause.freezes_keyspace());
    }

    #[test]
    fn a_write_pause_lets_reads_through_and_ends_by_itself() {
        let pause = Pause::default();
        pause.pause(Instant::now() + Duration::from_millis(30), PauseMode::Write);
        assert!(!pause.holds(false));
        assert!(pause.holds(true));
        std::thread::sleep(Duration::from_millis(40));
        assert!(!pause.holds(true));
        assert_eq!(pause.mode(), None);
    }
}
