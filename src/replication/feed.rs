//! The replication stream a primary produces: every write, as the command that made it, in the
//! order the writes happened, kept in a backlog that replicas read from.
//!
//! Order. A command's entry goes into the stream while the shards it wrote are still locked: when
//! its own lock drops (the store tells its observer, [`Feed`]'s [`Observer::releasing`]), or,
//! inside EXEC and scripts, when the transaction's locks drop (`HeldLocks`' `Drop`), as one
//! `MULTI … EXEC` block. Two writes to one key are
//! therefore in the stream in the order they were applied, and a full sync, which takes every
//! database's locks, sees a keyspace that is exactly the stream up to its offset.
//!
//! Cost. Nothing of this runs until a replica attaches or the append-only file opens (`active`):
//! until then dispatch and the store check one relaxed load each.
//! The command being run is kept in a thread-local (handlers are synchronous, so it cannot be
//! confused with another's), armed by `commands::run` and written when the store saw it write.

use crate::store::changes::{Change, Observer};
use bytes::Bytes;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// How long a reader that started the stream waits before it takes its starting point (see
/// [`Feed::activate_at`]).
pub const ACTIVATION_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// Redis's default `repl-backlog-size`.
pub const DEFAULT_BACKLOG: usize = 1 << 20;
/// What a lagging replica may leave unread before it is dropped (Redis's default
/// `client-output-buffer-limit replica` hard limit).
pub const REPLICA_HARD_LIMIT: usize = 256 << 20;

/// The primary's replication stream.
pub struct Feed {
    /// Raised once the stream is kept; shared with the store, which reads it before telling the
    /// feed of a write ([`Observer::gate`]).
    active: Arc<AtomicBool>,
    backlog: Mutex<Backlog>,
    /// Woken whenever the stream grows (replica feeders wait on it).
    pub grown: tokio::sync::Notify,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            active: Arc::new(AtomicBool::new(false)),
            backlog: Mutex::new(Backlog {
                bytes: VecDeque::new(),
                start: 0,
                end: 0,
                db: None,
                size: DEFAULT_BACKLOG,
                readers: Vec::new(),
            }),
            grown: tokio::sync::Notify::new(),
        }
    }
}

/// The stream's recent bytes: `bytes` holds offsets `start..end`.
struct Backlog {
    bytes: VecDeque<u8>,
    start: u64,
    /// Redis's `master_repl_offset`: every byte ever produced.
    end: u64,
    /// The database the stream last SELECTed.
    db: Option<usize>,
    /// `repl-backlog-size`: kept for replicas that reconnect (PSYNC).
    size: usize,
    /// How far each attached replica has been sent: nothing it still needs is dropped, up to
    /// [`REPLICA_HARD_LIMIT`].
    readers: Vec<Arc<AtomicU64>>,
}

/// What the backlog looks like now (INFO replication).
pub struct BacklogState {
    pub active: bool,
    pub size: usize,
    pub first_byte: u64,
    pub histlen: u64,
}

impl Feed {
    /// True once a replica has attached: from then on writes are kept (as Redis keeps its backlog).
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// Starts keeping the stream (the first replica attaches).
    pub fn activate(&self) {
        self.active.store(true, Relaxed);
    }

    /// Starts keeping the stream at `offset` unless it is kept already; true when it starts now.
    /// A command that looked at [`Feed::active`] just before may still write unrecorded: whoever
    /// reads the stream from here waits [`ACTIVATION_GRACE`] before it takes its starting point.
    pub fn activate_at(&self, offset: u64) -> bool {
        if self.active() {
            return false;
        }
        self.restart_at(offset);
        self.activate();
        true
    }

    /// The offset of the stream's end (`master_repl_offset`).
    pub fn end(&self) -> u64 {
        self.backlog.lock().end
    }

    /// Continues the stream from `offset` (a replica that became a primary keeps its primary's
    /// numbering).
    pub fn restart_at(&self, offset: u64) {
        let mut backlog = self.backlog.lock();
        backlog.bytes.clear();
        backlog.start = offset;
        backlog.end = offset;
        backlog.db = None;
        for reader in &backlog.readers {
            reader.store(offset, Relaxed); // the append-only log goes on from here
        }
    }

    /// The next command will SELECT its database (a replica synced from here starts in 0).
    pub fn forget_db(&self) {
        self.backlog.lock().db = None;
    }

    pub fn set_size(&self, size: usize) {
        self.backlog.lock().size = size.max(16 * 1024);
    }

    pub fn state(&self) -> BacklogState {
        let backlog = self.backlog.lock();
        BacklogState {
            active: self.active(),
            size: backlog.size,
            first_byte: backlog.start + 1,
            histlen: backlog.end - backlog.start,
        }
    }

    /// A reader that will be fed from `offset` on; None when the backlog no longer holds it.
    pub fn reader_at(&self, offset: u64) -> Option<Arc<AtomicU64>> {
        let mut backlog = self.backlog.lock();
        if offset < backlog.start || offset > backlog.end {
            return None;
        }
        let reader = Arc::new(AtomicU64::new(offset));
        backlog.readers.push(reader.clone());
        Some(reader)
    }

    /// Forgets a reader (its replica went away).
    pub fn drop_reader(&self, reader: &Arc<AtomicU64>) {
        self.backlog
            .lock()
            .readers
            .retain(|r| !Arc::ptr_eq(r, reader));
    }

    /// Copies up to `max` bytes from `reader`'s offset into `out`; false when the reader fell
    /// behind what is kept (it must resynchronise).
    pub fn read(&self, reader: &AtomicU64, out: &mut Vec<u8>, max: usize) -> bool {
        let backlog = self.backlog.lock();
        let from = reader.load(Relaxed);
        if from < backlog.start {
            return false;
        }
        let skip = (from - backlog.start) as usize;
        let take = ((backlog.end - from) as usize).min(max);
        out.extend(backlog.bytes.range(skip..skip + take));
        reader.store(from + take as u64, Relaxed);
        true
    }

    /// Appends one command of database `db` (a `SELECT` first when the stream is elsewhere;
    /// `db` None for commands of no database, as PING or PUBLISH).
    pub fn append(&self, db: Option<usize>, frame: &[u8]) -> u64 {
        self.append_all(&[(db, frame)])
    }

    /// Appends commands as one block (nothing can come between them); returns the stream's end.
    pub fn append_all(&self, frames: &[(Option<usize>, &[u8])]) -> u64 {
        let end = {
            let mut backlog = self.backlog.lock();
            for (db, frame) in frames {
                if let Some(db) = *db {
                    if backlog.db != Some(db) {
                        let select =
                            encode(&[b"SELECT", itoa::Buffer::new().format(db).as_bytes()]);
                        backlog.push(&select);
                        backlog.db = Some(db);
                    }
                }
                backlog.push(frame);
            }
            backlog.trim();
            backlog.end
        };
        self.grown.notify_waiters();
        end
    }

    /// A key removed because its time was up or to make room: the replicas remove it too.
    pub fn removed(&self, db: usize, key: &[u8]) {
        self.append_now(db, encode(&[b"DEL", key]));
    }

    /// Appends a removal the store made by itself (an expiry, an eviction), inside the open EXEC
    /// or script's block if there is one.
    fn append_now(&self, db: usize, frame: Vec<u8>) {
        let batched = PENDING.with(|p| {
            let Ok(mut p) = p.try_borrow_mut() else {
                return false;
            };
            if p.batch_depth > 0 {
                p.batch.push((Some(db), frame.clone()));
                true
            } else {
                false
            }
        });
        if !batched {
            self.append(Some(db), &frame);
        }
    }
}

/// How the store feeds the stream (the server makes this feed the store's observer). The store
/// calls only while [`Feed::active`].
impl Observer for Feed {
    fn gate(&self) -> Arc<AtomicBool> {
        self.active.clone()
    }

    fn changed(&self, db: usize, key: &[u8], change: Change) {
        match change {
            Change::Expired | Change::Evicted => self.removed(db, key),
            // Its HDEL comes through `fields_removed`; the command running did not write.
            Change::FieldsExpired => {}
            _ => note_write(),
        }
    }

    fn fields_removed(&self, db: usize, key: &[u8], fields: &[Bytes]) {
        let args: Vec<&[u8]> = [&b"HDEL"[..], key]
            .into_iter()
            .chain(fields.iter().map(|f| &f[..]))
            .collect();
        self.append_now(db, encode(&args));
    }

    fn releasing(&self, expiry: &dyn Fn(&[u8]) -> Option<u64>) {
        if uncommitted() {
            commit(self, expiry);
        }
    }
}

impl Backlog {
    fn push(&mut self, frame: &[u8]) {
        self.bytes.extend(frame);
        self.end += frame.len() as u64;
    }

    /// Drops what neither the backlog size nor an attached replica needs; a replica that left
    /// more than [`REPLICA_HARD_LIMIT`] unread loses its place (and resynchronises).
    fn trim(&mut self) {
        let slowest = self.readers.iter().map(|r| r.load(Relaxed)).min();
        let mut keep_from = self.end.saturating_sub(self.size as u64);
        if let Some(slowest) = slowest {
            keep_from =
                keep_from.min(slowest.max(self.end.saturating_sub(REPLICA_HARD_LIMIT as u64)));
        }
        if keep_from > self.start {
            let drop = (keep_from - self.start) as usize;
            self.bytes.drain(..drop);
            self.start = keep_from;
        }
    }
}

/// The encoding of a command as a RESP array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    encode_into(&mut out, args.iter().copied());
    out
}

/// Appends the encoding of a command to `out`.
pub fn encode_into<'a>(out: &mut Vec<u8>, args: impl ExactSizeIterator<Item = &'a [u8]>) {
    let mut n = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(n.format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        out.push(b'$');
        out.extend_from_slice(n.format(arg.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// The command this thread is running, while a replica may need it.
#[derive(Default)]
struct Pending {
    armed: bool,
    /// The store saw the command write (or it always propagates, as PUBLISH).
    wrote: bool,
    db: Option<usize>,
    frame: Vec<u8>,
    /// For a command that sets a relative time to live: its key, whose absolute expiry follows
    /// the command (`PEXPIREAT`), so a replica expires it at the same instant.
    ttl_key: Option<Bytes>,
    /// The stream's end after this thread's last command went in (WAIT's target for its client).
    last_end: u64,
    /// Open EXECs and scripts (their commands go out as one `MULTI … EXEC`).
    batch_depth: usize,
    batch: Vec<(Option<usize>, Vec<u8>)>,
}

thread_local! {
    static PENDING: RefCell<Pending> = RefCell::new(Pending::default());
}

/// Commands that set a time to live relative to now.
const RELATIVE_TTL: &[&str] = &[
    "set",
    "setex",
    "psetex",
    "getex",
    "expire",
    "pexpire",
    "restore",
    "restore-asking",
];

/// Before a write command runs (the feed is active): remembers it, to go into the stream if it
/// writes. `db` is None for a command of no database; `always` for one that propagates without
/// writing (PUBLISH).
pub fn arm(name: &str, db: Option<usize>, args: &[&[u8]], always: bool) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        p.armed = true;
        p.wrote = always;
        p.db = db;
        p.frame.clear();
        encode_into(&mut p.frame, args.iter().copied());
        p.ttl_key = RELATIVE_TTL
            .contains(&name)
            .then(|| args.get(1).map(|k| Bytes::copy_from_slice(k)))
            .flatten();
    });
}

/// A handler whose command would not replay the same (SPOP's random picks, XADD's generated id)
/// says what the replicas must run instead.
pub fn propagate_as(args: &[&[u8]]) {
    propagate_as_all(&[args]);
}

/// [`propagate_as`] for an effect that replays as several commands, run in this order.
pub fn propagate_as_all(commands: &[&[&[u8]]]) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.armed {
            p.frame.clear();
            for args in commands {
                encode_into(&mut p.frame, args.iter().copied());
            }
        }
    });
}

/// The store wrote on this thread.
#[inline]
pub fn note_write() {
    PENDING.with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            if p.armed {
                p.wrote = true;
            }
        }
    });
}

/// Puts the armed command into the stream if it wrote (`expiry` reads a key's absolute expiry
/// under the locks still held). Called when a command's lock drops, and after the command.
pub fn commit(feed: &Feed, expiry: impl FnOnce(&[u8]) -> Option<u64>) {
    let taken = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if !(p.armed && p.wrote) {
            return None;
        }
        p.armed = false;
        Some((p.db, p.ttl_key.take()))
    });
    let Some((db, ttl_key)) = taken else {
        return;
    };
    // No borrow is held here: `expiry` may lock (and so commit, finding nothing armed).
    let expire_at = ttl_key.as_deref().and_then(expiry).filter(|&at| at != 0);
    let then_expire = ttl_key.zip(expire_at).map(|(key, at)| {
        let at = itoa::Buffer::new().format(at).as_bytes().to_vec();
        encode(&[b"PEXPIREAT", &key, &at])
    });
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.batch_depth > 0 {
            let frame = p.frame.clone();
            p.batch.push((db, frame));
            p.batch.extend(then_expire.map(|f| (db, f)));
            return;
        }
        // The frame goes from this thread's buffer straight into the backlog.
        p.last_end = match &then_expire {
            Some(extra) => feed.append_all(&[(db, &p.frame), (db, extra)]),
            None => feed.append(db, &p.frame),
        };
    });
}

/// The stream's end after the last command this thread put in it, taken once.
pub fn take_last_end() -> Option<u64> {
    PENDING.with(|p| Some(std::mem::take(&mut p.borrow_mut().last_end)).filter(|&end| end != 0))
}

/// After a command: what it did not write is forgotten.
pub fn disarm() {
    PENDING.with(|p| p.borrow_mut().armed = false);
}

/// True when an armed command wrote and is not in the stream yet.
pub fn uncommitted() -> bool {
    PENDING.with(|p| {
        let p = p.borrow();
        p.armed && p.wrote
    })
}

/// An EXEC or a script takes its locks: its commands will go out together.
pub fn begin_batch() {
    PENDING.with(|p| p.borrow_mut().batch_depth += 1);
}

/// An EXEC or a script releases its locks (still held during this call): its commands go into the
/// stream as one `MULTI … EXEC` block (a single command alone, as Redis).
pub fn end_batch(feed: &Feed) {
    let batch = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        p.batch_depth = p.batch_depth.saturating_sub(1);
        if p.batch_depth == 0 {
            std::mem::take(&mut p.batch)
        } else {
            Vec::new()
        }
    });
    let end = match batch.len() {
        0 => return,
        1 => feed.append(batch[0].0, &batch[0].1),
        _ => {
            let multi = encode(&[b"MULTI"]);
            let exec = encode(&[b"EXEC"]);
            let mut frames: Vec<(Option<usize>, &[u8])> = Vec::with_capacity(batch.len() + 2);
            // MULTI goes after the first command's SELECT, so the block runs in one database
            // switch as Redis writes it.
            frames.push((batch[0].0, &multi));
            frames.extend(batch.iter().map(|(db, f)| (*db, f.as_slice())));
            frames.push((None, &exec));
            feed.append_all(&frames)
        }
    };
    PENDING.with(|p| p.borrow_mut().last_end = end);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, Value};

    /// Everything in `feed`'s stream so far.
    fn stream(feed: &Feed) -> Vec<u8> {
        let reader = feed.reader_at(feed.state().first_byte - 1).expect("kept");
        let mut out = Vec::new();
        assert!(feed.read(&reader, &mut out, usize::MAX));
        out
    }

    /// The store tells its observer of a command's write while the shards are locked, with the
    /// absolute expiry read under them; of an expiry as a DEL; and nothing while the feed is
    /// not kept.
    #[test]
    fn a_store_feeds_its_observer_only_while_the_stream_is_kept() {
        let store = Store::new();
        let feed = Arc::new(Feed::default());
        store.observe(feed.clone());
        let write = |key: &[u8], expire_at: u64| {
            arm("set", Some(0), &[b"SET", key, b"v", b"PX", b"60000"], false);
            let mut locked = store.lock_one(0, key);
            locked.set(key, Value::Str("v".into()), expire_at);
            drop(locked);
            disarm();
        };
        write(b"before", 0);
        assert_eq!(feed.end(), 0, "nothing is kept before the stream starts");

        feed.activate();
        let at = crate::clock::unix_ms() + 60_000;
        write(b"k", at);
        let pexpireat = encode(&[b"PEXPIREAT", b"k", at.to_string().as_bytes()]);
        let mut expected = encode(&[b"SELECT", b"0"]);
        expected.extend(encode(&[b"SET", b"k", b"v", b"PX", b"60000"]));
        expected.extend(&pexpireat);
        assert_eq!(stream(&feed), expected);

        // A key found expired is removed here and on the replicas, as a DEL.
        let mut locked = store.lock_one(0, b"gone");
        locked.set(b"gone", Value::Str("v".into()), 1);
        assert!(locked.get(b"gone").is_none());
        drop(locked);
        expected.extend(encode(&[b"DEL", b"gone"]));
        assert_eq!(
            stream(&feed),
            expected,
            "an unarmed write adds nothing else"
        );
    }
}
