//! The increment being written, and who writes it. The stream's bytes go into the file from the
//! thread that needs them there first: a connection whose reply waits for its write
//! ([`super::before_reply`]) writes everything the stream holds by then (the writes of every
//! connection served in the same turn of its worker, since replies go at the end of a turn) and,
//! under `appendfsync always`, syncs the file, as Redis's event loop writes and syncs the log once
//! per turn before it sends the replies. No other thread is woken for it: handing the sync to the
//! writer thread instead cost more (`-P 1` SET under `always`: 50,600/s against 66,000, with 3x
//! the context switches). The writer thread writes what no reply waits for (DELs of expired keys,
//! a replica's applied commands) on its tick, syncs `everysec` off the connections' path, and
//! switches the file when it rewrites.

use super::{keep_loggable, Host};
use crate::config::values::Fsync;
use crate::replication::feed::Feed;
use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// How much of the stream is copied per read.
const CHUNK: usize = 4 << 20;

/// The open increment and the log's place in the stream.
pub(super) struct Tail {
    pub(super) incr: File,
    /// Where the log reads the stream.
    pub(super) reader: Arc<AtomicU64>,
    /// Stream bytes read that do not make a whole command yet.
    carry: Vec<u8>,
    /// Where the last read ended: the reader elsewhere means the stream was renumbered (a
    /// replica promoted by REPLICAOF NO ONE), and the carried bytes belong to no command.
    read_to: u64,
    out: Vec<u8>,
    /// Bytes in the increments since the base (INFO's `aof_current_size` less the base).
    pub(super) incr_size: u64,
    /// Written since the last sync.
    pub(super) unsynced: bool,
    /// The writer thread syncs without the lock: what it syncs may not be on the disk yet.
    pub(super) syncing: bool,
    /// A write or sync failed: the writer thread gives the log up (and opens it again).
    pub(super) failed: Option<io::Error>,
    /// Counts the stream's renumberings: a sync's offset is published only in its numbering.
    pub(super) numbering: u64,
    /// The second of the last `#TS:` annotation (`aof-timestamp-enabled`).
    stamped: u64,
}

impl Tail {
    pub(super) fn new(incr: File, reader: Arc<AtomicU64>, incr_size: u64) -> Tail {
        Tail {
            incr,
            read_to: reader.load(Relaxed),
            reader,
            carry: Vec::new(),
            out: Vec::new(),
            incr_size,
            unsynced: false,
            syncing: false,
            failed: None,
            numbering: 0,
            stamped: 0,
        }
    }

    /// The stream's offset up to which every command is in the file (written, maybe not synced).
    pub(super) fn done(&self) -> u64 {
        self.reader.load(Relaxed) - self.carry.len() as u64
    }

    /// Copies what the stream holds (up to `upto`) into the increment; with `stamp`
    /// (`aof-timestamp-enabled`), a `#TS:<unix seconds>` line goes before the commands of each new
    /// second, as Redis writes it.
    pub(super) fn append(&mut self, feed: &Feed, upto: Option<u64>, stamp: bool) -> io::Result<()> {
        if self.reader.load(Relaxed) != self.read_to {
            self.carry.clear();
            self.numbering += 1;
        }
        loop {
            let max = match upto {
                Some(end) => (end.saturating_sub(self.reader.load(Relaxed)) as usize).min(CHUNK),
                None => CHUNK,
            };
            let before = self.carry.len();
            if max == 0 {
                return Ok(());
            }
            if !feed.read(&self.reader, &mut self.carry, max) {
                return Err(io::Error::other("the log fell behind the stream"));
            }
            self.read_to = self.reader.load(Relaxed);
            if self.carry.len() == before {
                return Ok(());
            }
            let now = crate::store::now_ms() / 1000;
            let stamped = stamp && now > self.stamped;
            if stamped {
                self.out
                    .extend_from_slice(format!("#TS:{now}\r\n").as_bytes());
            }
            let annotation = self.out.len();
            let used = keep_loggable(&self.carry, &mut self.out);
            self.carry.drain(..used);
            if self.out.len() == annotation {
                self.out.clear(); // no command to annotate
            } else if stamped {
                self.stamped = now;
            }
            if !self.out.is_empty() {
                self.incr.write_all(&self.out)?;
                self.incr_size += self.out.len() as u64;
                self.unsynced = true;
                self.out.clear();
            }
        }
    }

    /// Continues in a new increment from `reader`'s place (a rewrite's split).
    pub(super) fn switch(&mut self, incr: File, reader: Arc<AtomicU64>) -> Arc<AtomicU64> {
        self.incr = incr;
        self.read_to = reader.load(Relaxed);
        self.carry.clear();
        self.unsynced = false;
        self.stamped = 0; // a new increment starts with its time
        std::mem::replace(&mut self.reader, reader)
    }
}

/// Writes what the stream holds into the log on this thread (synced under `appendfsync always`),
/// and publishes how far it is. Nothing when the log is closed or failed; a failure is left to the
/// writer thread, which is woken for it.
pub fn write_now(host: &impl Host) {
    let aof = host.aof();
    let Some(policy) = aof.policy() else {
        return;
    };
    let mut tail = aof.tail.lock();
    let Some(open) = tail.as_mut().filter(|t| t.failed.is_none()) else {
        return;
    };
    let stamp = aof.timestamps.load(Relaxed);
    let result = open
        .append(&host.replication().feed, None, stamp)
        .and_then(|()| {
            if policy == Fsync::Always && (open.unsynced || open.syncing) {
                open.incr.sync_data()?;
                open.unsynced = false;
            }
            Ok(())
        });
    if let Err(err) = result {
        open.failed = Some(err);
        drop(tail);
        aof.wake.notify_one();
        return;
    }
    let done = open.done();
    // Synced just now under `always`; under `no`, written is as far as the log goes.
    let synced = policy != Fsync::Everysec;
    // Stores, not maxima: under the tail's lock `done` only grows, but for a renumbering.
    let grew = aof.written.swap(done, Relaxed) != done;
    let synced_grew = synced && aof.synced.swap(done, Relaxed) != done;
    drop(tail);
    if synced_grew {
        super::wake_waiters(host);
    } else if grew {
        aof.progressed.notify_waiters();
    }
}
