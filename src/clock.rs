//! The monotonic clock as a plain count of nanoseconds, for what runs on every request: timing a
//! command (commandstats, SLOWLOG, latency) and a connection's last-active time and reply peak.
//! `Instant::elapsed` reads the same clock but spends several times more instructions in its
//! checked `Timespec` arithmetic; in the per-request profile the three readings of a GET cost
//! ~300 instructions, about a third of what stmd spent over Redis per request. The wall clock
//! is read the same way, once per command ([`CommandTime`]).

/// Nanoseconds on the monotonic clock (an arbitrary start, never going back).
#[inline]
pub fn monotonic_ns() -> u64 {
    read_ns(libc::CLOCK_MONOTONIC)
}

/// Milliseconds since the Unix epoch on the wall clock (0 for a clock set before 1970).
#[inline]
pub fn unix_ms() -> u64 {
    read_ns(libc::CLOCK_REALTIME) / 1_000_000
}

#[inline]
fn read_ns(clock: libc::clockid_t) -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes only the `timespec` it is given, which is a valid, exclusive
    // local. Both clocks we read exist on every Linux, so it cannot fail (it would leave `now` at
    // 0). (glibc's call, through the vDSO: the `rustix` crate's own vDSO lookup crashes under
    // valgrind.)
    unsafe { libc::clock_gettime(clock, &mut now) };
    if now.tv_sec < 0 {
        return 0;
    }
    (now.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(now.tv_nsec as u64)
}

thread_local! {
    /// The Unix time (ms) of the command running on this thread, read when it started; 0 between
    /// commands.
    static COMMAND_TIME_MS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A command's time, as Redis 7.2's `commandTimeSnapshot`: the wall clock read once when a
/// command starts, by which every key it touches is judged expired or not and from which its
/// relative expiry times count. The commands EXEC and a script run (`redis.call`) run at the time
/// of their EXEC or script, as in Redis. The same reading starts the command's duration (for
/// commandstats, SLOWLOG and latency), which is read on the wall clock too, as Redis does: one
/// clock reading fewer per command than a monotonic duration and a separate "now".
pub struct CommandTime {
    started_ns: u64,
    /// Set the thread's command time (a command not run by another): clears it when dropped.
    outer: bool,
}

impl CommandTime {
    pub fn start() -> CommandTime {
        let started_ns = read_ns(libc::CLOCK_REALTIME);
        let outer = COMMAND_TIME_MS.with(|time| {
            let outer = time.get() == 0;
            if outer {
                time.set((started_ns / 1_000_000).max(1));
            }
            outer
        });
        CommandTime { started_ns, outer }
    }

    /// Nanoseconds since the start (0 when the wall clock was set back meanwhile).
    pub fn elapsed_ns(&self) -> u64 {
        read_ns(libc::CLOCK_REALTIME).saturating_sub(self.started_ns)
    }
}

impl Drop for CommandTime {
    fn drop(&mut self) {
        if self.outer {
            COMMAND_TIME_MS.with(|time| time.set(0));
        }
    }
}

/// The running command's time (see [`CommandTime`]), else the wall clock now: Unix ms.
#[inline]
pub fn command_time_ms() -> u64 {
    match COMMAND_TIME_MS.with(std::cell::Cell::get) {
        0 => unix_ms(),
        time => time,
    }
}

/// Milliseconds on the same clock.
#[inline]
pub fn monotonic_ms() -> u64 {
    monotonic_ns() / 1_000_000
}

/// INFO's "seconds since" a millisecond mark on the same clock as `now_ms`: -1 for no mark (0).
pub fn secs_since(mark_ms: u64, now_ms: u64) -> i64 {
    match mark_ms {
        0 => -1,
        at => (now_ms.saturating_sub(at) / 1000) as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_moves_forward_with_std_instant() {
        let (ours, std) = (monotonic_ns(), std::time::Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (ours_later, std_later) = (monotonic_ns(), std::time::Instant::now());
        let ours_elapsed = ours_later - ours;
        let std_elapsed = (std_later - std).as_nanos() as u64;
        assert!(ours_elapsed >= 20_000_000, "{ours_elapsed}");
        // Both read CLOCK_MONOTONIC: the two intervals differ only by the reads' own time.
        assert!(ours_elapsed.abs_diff(std_elapsed) < 5_000_000);
    }

    #[test]
    fn the_wall_clock_agrees_with_system_time() {
        let std = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        assert!(unix_ms().abs_diff(std) < 1_000, "{} vs {std}", unix_ms());
    }
}
