//! The SLOWLOG: the last commands that ran longer than `slowlog-log-slower-than` microseconds,
//! newest first, in Redis 7's entry format.
//!
//! Every command pays one clock pair and one relaxed atomic load (the threshold); the lock is
//! taken only when an entry is recorded.

use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

/// Arguments kept per entry; a longer command keeps the first 31 and a "... (N more arguments)".
pub const MAX_ARGS: usize = 32;
/// Bytes kept per argument; a longer one is cut and ends with "... (N more bytes)".
pub const MAX_ARG_BYTES: usize = 128;

/// One recorded command.
#[derive(Debug, Clone)]
pub struct SlowEntry {
    pub id: u64,
    /// Unix time in seconds when the command finished.
    pub unix_secs: u64,
    pub micros: u64,
    pub args: Vec<Bytes>,
    pub client_addr: String,
    pub client_name: Bytes,
}

/// The server's slow log. The settings are mirrored here as atomics so the per-command check does
/// not take the configuration lock.
pub struct SlowLog {
    slower_than_us: AtomicI64,
    max_len: AtomicUsize,
    next_id: AtomicU64,
    entries: Mutex<VecDeque<SlowEntry>>,
}

impl SlowLog {
    pub fn new(slower_than_us: i64, max_len: u64) -> SlowLog {
        SlowLog {
            slower_than_us: AtomicI64::new(slower_than_us),
            max_len: AtomicUsize::new(usize::try_from(max_len).unwrap_or(usize::MAX)),
            next_id: AtomicU64::new(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }

    /// Applies the settings after CONFIG SET; a shorter maximum drops the oldest entries now.
    pub fn configure(&self, slower_than_us: i64, max_len: u64) {
        let max_len = usize::try_from(max_len).unwrap_or(usize::MAX);
        self.slower_than_us.store(slower_than_us, Ordering::Relaxed);
        self.max_len.store(max_len, Ordering::Relaxed);
        let mut entries = self.entries.lock();
        entries.truncate(max_len);
    }

    /// True when a command that took `micros` belongs in the log.
    pub fn is_slow(&self, micros: u64) -> bool {
        let threshold = self.slower_than_us.load(Ordering::Relaxed);
        threshold >= 0 && micros >= threshold as u64
    }

    /// Records a command that `is_slow` accepted.
    pub fn record(&self, args: &[&[u8]], micros: u64, client_addr: String, client_name: Bytes) {
        let max_len = self.max_len.load(Ordering::Relaxed);
        if max_len == 0 {
            return;
        }
        let entry = SlowEntry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            unix_secs: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            micros,
            args: shorten_args(args),
            client_addr,
            client_name,
        };
        let mut entries = self.entries.lock();
        entries.push_front(entry);
        entries.truncate(max_len);
    }

    /// The newest `count` entries (all when `None`).
    pub fn newest(&self, count: Option<usize>) -> Vec<SlowEntry> {
        let entries = self.entries.lock();
        let count = count.unwrap_or(entries.len());
        entries.iter().take(count).cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties the log; ids keep counting up, as in Redis.
    pub fn reset(&self) {
        self.entries.lock().clear();
    }
}

/// Redis's trimming of a logged command: at most [`MAX_ARGS`] arguments of at most
/// [`MAX_ARG_BYTES`] bytes each, saying how much was left out.
pub fn shorten_args(args: &[&[u8]]) -> Vec<Bytes> {
    let kept = args.len().min(MAX_ARGS);
    let mut out = Vec::with_capacity(kept);
    for (i, arg) in args.iter().take(kept).enumerate() {
        if kept != args.len() && i == kept - 1 {
            let more = args.len() - kept + 1;
            out.push(Bytes::from(format!("... ({more} more arguments)")));
        } else if arg.len() > MAX_ARG_BYTES {
            let mut cut = arg[..MAX_ARG_BYTES].to_vec();
            cut.extend_from_slice(
                format!("... ({} more bytes)", arg.len() - MAX_ARG_BYTES).as_bytes(),
            );
            out.push(Bytes::from(cut));
        } else {
            out.push(Bytes::copy_from_slice(arg));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_commands_are_cut_like_redis() {
        let long = vec![b'x'; 130];
        let shown = shorten_args(&[b"set", b"k", &long]);
        assert_eq!(shown[2].len(), 128 + "... (2 more bytes)".len());
        assert!(shown[2].ends_with(b"x... (2 more bytes)"));
        let many: Vec<Vec<u8>> = (0..40).map(|i| i.to_string().into_bytes()).collect();
        let refs: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        let shown = shorten_args(&refs);
        assert_eq!(shown.len(), 32);
        assert_eq!(shown[30], Bytes::from_static(b"30"));
        assert_eq!(shown[31], Bytes::from_static(b"... (9 more arguments)"));
    }

    #[test]
    fn thresholds_and_length_are_honoured() {
        let log = SlowLog::new(-1, 2);
        assert!(!log.is_slow(u64::MAX));
        log.configure(0, 2);
        assert!(log.is_slow(0));
        for i in 0..3u64 {
            log.record(&[b"get"], i, "a".into(), Bytes::new());
        }
        let ids: Vec<u64> = log.newest(None).iter().map(|e| e.id).collect();
        assert_eq!(ids, [2, 1]);
        log.configure(0, 1);
        assert_eq!(log.len(), 1);
        log.reset();
        assert!(log.is_empty());
    }
}
