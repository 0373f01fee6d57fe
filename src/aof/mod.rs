//! The append-only file, as Redis 7's (`appendonly yes`): every write, as the replication stream
//! carries it, appended to a file in `dir/appenddirname` and flushed to the disk as
//! `appendfsync` says; BGREWRITEAOF (and the automatic rewrite) starts a new base from the
//! dataset; a restart loads the base and replays the increments. The files are Redis's
//! (`manifest`), so an `appendonlydir` moves between stmd and Redis both ways.
//!
//! The log is a reader of the replication stream (`replication::feed`), which puts every write in
//! order while the writer's locks are held, and rewrites what would not replay the same (relative
//! TTLs, SPOP, XADD `*`). One thread ([`writer`]) owns the files: it copies the stream into the
//! increment, syncs it, and rewrites. What the stream carries for replicas only stays out of the
//! file: PING, REPLCONF, PUBLISH, and the `STM.*` commands (raw messages never go to disk, as the
//! snapshots; the scope rows bring the summaries back).

pub mod load;
pub mod manifest;
mod tail;
mod writer;

pub use tail::write_now;
pub use writer::{open_at_start, spawn};

use crate::config::values::Fsync;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::time::Duration;

/// What the append-only file reaches of the server beyond what snapshots do (a rewrite takes a
/// snapshot image): its own state and replication's (WAIT and WAITAOF waiters, the offset). The
/// server's shared state implements it, so this module never sees the server.
pub trait Host: crate::snapshot::Host {
    fn aof(&self) -> &Aof;
    fn replication(&self) -> &crate::replication::Replication;
}

pub const REWRITE_IN_PROGRESS: &str =
    "ERR Background append only file rewriting already in progress";
pub const BGSAVE_REFUSED: &str = "ERR An AOF log rewriting in progress: can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.";

/// What BGREWRITEAOF did.
pub enum Rewrite {
    Started,
    /// A background save runs: the rewrite starts when it ends, as Redis does.
    Scheduled,
}

/// The state the writer thread shares with the commands.
pub struct Aof {
    /// The log is open and every write goes into it (INFO's `aof_enabled`).
    on: AtomicBool,
    /// The open log's `appendfsync` (0 while the log is off), which says what a reply to a write
    /// waits for: its write in the file (`everysec`, `no`: as Redis writes the log before it
    /// replies, so a crash of the process loses nothing acknowledged), or synced (`always`).
    mode: AtomicU8,
    /// The increment, written by whichever thread gets there first (see [`tail`]).
    tail: parking_lot::Mutex<Option<tail::Tail>>,
    /// `aof-timestamp-enabled`, as the writer thread last read it.
    timestamps: AtomicBool,
    /// The stream's offset up to which every write is in the file.
    written: AtomicU64,
    /// The stream's offset up to which every write is in the file and synced (`no`: written).
    synced: AtomicU64,
    /// Woken when `written` or `synced` grows, or the log closes.
    pub progressed: tokio::sync::Notify,
    /// Wakes the writer: CONFIG SET, BGREWRITEAOF, shutdown.
    wake: tokio::sync::Notify,
    rewrite_wanted: AtomicBool,
    rewrite_scheduled: AtomicBool,
    stop: AtomicBool,
    /// Unix ms at which the running rewrite began (0: none runs).
    rewriting_since_ms: AtomicU64,
    last_rewrite_secs: AtomicI64,
    rewrites: AtomicU64,
    consecutive_failures: AtomicU64,
    last_rewrite_ok: AtomicBool,
    last_write_ok: AtomicBool,
    /// The base and the increments, in bytes (INFO's `aof_current_size`), and the base alone
    /// after the last rewrite (`aof_base_size`): the automatic rewrite compares them.
    current_size: AtomicU64,
    base_size: AtomicU64,
    /// A replica's marks: its own stream's end after commands of its primary were applied, and
    /// the primary's offset then; read off as the log syncs, for `REPLCONF ACK … FACK`.
    applied_marks: parking_lot::Mutex<std::collections::VecDeque<(u64, u64)>>,
    /// The primary's offset up to which this replica's log is synced.
    primary_synced: AtomicU64,
}

impl Default for Aof {
    fn default() -> Self {
        Aof {
            on: AtomicBool::new(false),
            mode: AtomicU8::new(0),
            tail: parking_lot::Mutex::new(None),
            timestamps: AtomicBool::new(false),
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            progressed: tokio::sync::Notify::new(),
            wake: tokio::sync::Notify::new(),
            rewrite_wanted: AtomicBool::new(false),
            rewrite_scheduled: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            rewriting_since_ms: AtomicU64::new(0),
            last_rewrite_secs: AtomicI64::new(-1),
            rewrites: AtomicU64::new(0),
            consecutive_failures: AtomicU64::new(0),
            last_rewrite_ok: AtomicBool::new(true),
            last_write_ok: AtomicBool::new(true),
            current_size: AtomicU64::new(0),
            base_size: AtomicU64::new(0),
            applied_marks: Default::default(),
            primary_synced: AtomicU64::new(0),
        }
    }
}

impl Aof {
    /// True while every write goes into the log.
    #[inline]
    pub fn on(&self) -> bool {
        self.on.load(Relaxed)
    }

    /// The open log's `appendfsync`; None while the log is off.
    fn policy(&self) -> Option<Fsync> {
        match self.mode.load(Relaxed) {
            1 => Some(Fsync::Always),
            2 => Some(Fsync::Everysec),
            3 => Some(Fsync::No),
            _ => None,
        }
    }

    fn set_policy(&self, policy: Option<Fsync>) {
        let mode = match policy {
            None => 0,
            Some(Fsync::Always) => 1,
            Some(Fsync::Everysec) => 2,
            Some(Fsync::No) => 3,
        };
        self.mode.store(mode, Relaxed);
    }

    /// The stream offset up to which the log is on the disk.
    pub fn synced(&self) -> u64 {
        self.synced.load(Relaxed)
    }

    /// True while a rewrite runs.
    pub fn rewriting(&self) -> bool {
        self.rewriting_since_ms.load(Relaxed) != 0
    }

    /// CONFIG SET changed the settings: the writer opens or closes the log, and takes the new
    /// `appendfsync`.
    pub fn configure(&self) {
        self.wake.notify_one();
    }

    /// BGREWRITEAOF.
    pub fn request_rewrite(&self, bgsave_running: bool) -> Result<Rewrite, &'static str> {
        if self.rewriting() || self.rewrite_wanted.load(Relaxed) {
            return Err(REWRITE_IN_PROGRESS);
        }
        if bgsave_running {
            self.rewrite_scheduled.store(true, Relaxed);
            self.wake.notify_one();
            return Ok(Rewrite::Scheduled);
        }
        // In progress from now on, as Redis's is once BGREWRITEAOF answers.
        self.rewriting_since_ms
            .store(crate::store::now_ms(), Relaxed);
        self.rewrite_wanted.store(true, Relaxed);
        self.wake.notify_one();
        Ok(Rewrite::Started)
    }

    /// A replica loaded its primary's dataset: the log starts again from a base of it (the
    /// commands logged before describe the data replaced).
    pub fn rewrite_after_sync(&self) {
        if self.on() {
            self.rewrite_wanted.store(true, Relaxed);
            self.wake.notify_one();
        }
    }

    /// A replica applied its primary's commands up to `primary_offset`, which its own stream
    /// (the log's source) holds up to `stream_end`.
    pub fn mark_applied(&self, stream_end: u64, primary_offset: u64) {
        if self.on() {
            let mut marks = self.applied_marks.lock();
            if marks.back().is_none_or(|&(end, _)| end != stream_end) {
                marks.push_back((stream_end, primary_offset));
            }
        }
    }

    /// A replica's `FACK`: the primary's offset up to which the log is synced; None while the log
    /// is off (nothing to report, as a replica without a log).
    pub fn synced_primary_offset(&self) -> Option<u64> {
        if !self.on() {
            return None;
        }
        let synced = self.synced();
        let mut marks = self.applied_marks.lock();
        while let Some(&(end, primary)) = marks.front() {
            if end > synced {
                break;
            }
            self.primary_synced.fetch_max(primary, Relaxed);
            marks.pop_front();
        }
        Some(self.primary_synced.load(Relaxed))
    }

    /// Tells the writer to finish: the last writes go into the file and it is synced.
    pub fn stop(&self) {
        self.stop.store(true, Relaxed);
        self.wake.notify_one();
    }

    /// INFO persistence's AOF fields, in Redis's order (after the snapshot fields).
    pub fn info_fields(&self) -> Vec<(&'static str, String)> {
        let since = self.rewriting_since_ms.load(Relaxed);
        let current = crate::clock::secs_since(since, crate::store::now_ms());
        let status = |ok: &AtomicBool| if ok.load(Relaxed) { "ok" } else { "err" }.to_string();
        let mut fields = vec![
            ("aof_enabled", u8::from(self.on()).to_string()),
            ("aof_rewrite_in_progress", u8::from(since != 0).to_string()),
            (
                "aof_rewrite_scheduled",
                u8::from(self.rewrite_scheduled.load(Relaxed)).to_string(),
            ),
            (
                "aof_last_rewrite_time_sec",
                self.last_rewrite_secs.load(Relaxed).to_string(),
            ),
            ("aof_current_rewrite_time_sec", current.to_string()),
            ("aof_last_bgrewrite_status", status(&self.last_rewrite_ok)),
            ("aof_rewrites", self.rewrites.load(Relaxed).to_string()),
            (
                "aof_rewrites_consecutive_failures",
                self.consecutive_failures.load(Relaxed).to_string(),
            ),
            ("aof_last_write_status", status(&self.last_write_ok)),
            ("aof_last_cow_size", "0".into()),
            ("module_fork_in_progress", "0".into()),
            ("module_fork_last_cow_size", "0".into()),
        ];
        if self.on() {
            fields.extend([
                (
                    "aof_current_size",
                    self.current_size.load(Relaxed).to_string(),
                ),
                ("aof_base_size", self.base_size.load(Relaxed).to_string()),
                (
                    "aof_pending_rewrite",
                    u8::from(self.rewrite_scheduled.load(Relaxed)).to_string(),
                ),
                ("aof_buffer_length", "0".into()),
                ("aof_pending_bio_fsync", "0".into()),
                ("aof_delayed_fsync", "0".into()),
            ]);
        }
        fields
    }
}

/// Before replies go out: makes sure the client's last write (`offset` in the stream) is in the
/// log (synced under `appendfsync always`), writing it on this thread when no one has yet. One load
/// while the log is off.
pub async fn before_reply(host: &impl Host, offset: u64) {
    let aof = host.aof();
    let reached = |aof: &Aof| match aof.policy() {
        None => true,
        Some(Fsync::Always) => aof.synced.load(Relaxed) >= offset,
        Some(_) => aof.written.load(Relaxed) >= offset,
    };
    if reached(aof) {
        return;
    }
    write_now(host);
    // Not there yet only while the writer thread has the log (a failure, a rewrite's switch).
    while !reached(aof) {
        let progressed = aof.progressed.notified();
        tokio::pin!(progressed);
        progressed.as_mut().enable();
        if reached(aof) {
            return;
        }
        // Bounded, so a log closed meanwhile never leaves a client waiting.
        let _ = tokio::time::timeout(Duration::from_millis(100), progressed).await;
        write_now(host);
    }
}

/// The log's synced part grew, or the log closed: replies held back and WAITAOF look again.
fn wake_waiters(host: &impl Host) {
    host.aof().progressed.notify_waiters();
    host.replication().master.acks.wake_all_where(|_| true);
}

/// The stream's commands that stay out of the log: what only replicas need, and the STM commands
/// (their raw messages never go to disk).
fn stays_out(command: &[u8]) -> bool {
    const REPLICAS_ONLY: [&[u8]; 4] = [b"ping", b"replconf", b"publish", b"spublish"];
    REPLICAS_ONLY
        .iter()
        .any(|c| command.eq_ignore_ascii_case(c))
        || command
            .get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"stm."))
}

/// Copies the whole commands at the start of `stream` into `out`, leaving out those that
/// [`stays_out`]; returns the bytes read (a command cut short at the end is left for later: the
/// stream is the encoder's output, whole commands, cut only where a read stopped).
pub fn keep_loggable(stream: &[u8], out: &mut Vec<u8>) -> usize {
    let mut pos = 0;
    while let Some((len, first)) = command_at(&stream[pos..]) {
        if !stays_out(first) {
            out.extend_from_slice(&stream[pos..pos + len]);
        }
        pos += len;
    }
    pos
}

/// The length of the RESP array of bulks at the start of `buf` and its first argument; None when
/// it is cut short (or not such an array).
fn command_at(buf: &[u8]) -> Option<(usize, &[u8])> {
    let (count, mut pos) = header(buf, b'*')?;
    let mut first: &[u8] = b"";
    for i in 0..count {
        let (len, start) = header(&buf[pos..], b'$')?;
        let start = pos + start;
        let end = start.checked_add(len)?;
        if buf.get(end..end + 2)? != b"\r\n" {
            return None;
        }
        if i == 0 {
            first = &buf[start..end];
        }
        pos = end + 2;
    }
    Some((pos, first))
}

/// `<kind><digits>\r\n` at the start of `buf`: the number and the bytes it took.
fn header(buf: &[u8], kind: u8) -> Option<(usize, usize)> {
    if *buf.first()? != kind {
        return None;
    }
    let end = buf.iter().position(|&b| b == b'\r')?;
    if buf.get(end + 1)? != &b'\n' {
        return None;
    }
    let n = std::str::from_utf8(&buf[1..end]).ok()?.parse().ok()?;
    Some((n, end + 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::feed::encode;

    #[test]
    fn the_log_keeps_writes_and_leaves_out_replica_and_stm_traffic() {
        let mut stream = Vec::new();
        for command in [
            &[&b"SELECT"[..], b"0"][..],
            &[b"SET", b"k", b"v"],
            &[b"PING"],
            &[b"STM.CAPTURE", b"u", b"c", b"p", b"secret"],
            &[b"PUBLISH", b"ch", b"m"],
            &[b"REPLCONF", b"GETACK", b"*"],
            &[b"MULTI"],
            &[b"INCR", b"n"],
            &[b"EXEC"],
        ] {
            stream.extend(encode(command));
        }
        let whole = stream.len();
        stream.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$1\r\nx"); // cut short
        let mut out = Vec::new();
        let used = keep_loggable(&stream, &mut out);
        assert_eq!(used, whole, "the cut-short command waits for its rest");
        let mut expected = Vec::new();
        for command in [
            &[&b"SELECT"[..], b"0"][..],
            &[b"SET", b"k", b"v"],
            &[b"MULTI"],
            &[b"INCR", b"n"],
            &[b"EXEC"],
        ] {
            expected.extend(encode(command));
        }
        assert_eq!(out, expected);
        assert!(!out.windows(6).any(|w| w == b"secret"));
    }
}
