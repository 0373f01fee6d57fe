//! The thread that owns the append-only files: it opens the log (at start, or when CONFIG SET
//! turns it on), copies the stream into the increment, syncs it as `appendfsync` says, rewrites
//! the base (BGREWRITEAOF, or when the log has grown `auto-aof-rewrite-percentage` over its last
//! base) and closes the log (CONFIG SET appendonly no, shutdown).
//!
//! A rewrite takes the dataset at one instant (`snapshot::image`, every database locked, as a full
//! sync does) and starts a new increment at the stream's offset of that instant, so the new base
//! and the increments after it are exactly the dataset; the base is written by a second thread
//! while this one goes on logging, and the manifest names the new set once the base is on disk.
//! Until then the manifest names the old base, the old increments and the new one: a crash
//! mid-rewrite loads the old set and replays on.

use super::manifest::{sync_dir, Manifest, Names, Part};
use super::tail::Tail;
use super::{wake_waiters, Host};
use crate::config::values::Fsync;
use crate::replication::feed::Feed;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the thread writes what no reply waited for, and looks at its settings and a
/// rewrite's progress.
const TICK: Duration = Duration::from_millis(100);
/// How long after a failure to open the log it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The open log: the files the manifest names (the increment being written is in
/// [`super::Aof`]'s tail, shared with the connections).
pub struct Log {
    manifest: Manifest,
    /// The increment opened a second time, to sync it without holding the tail.
    sync_handle: File,
    last_sync: Instant,
    base_size: u64,
}

/// A rewrite whose base is being written by its own thread.
struct Running {
    base: Part,
    temp: PathBuf,
    /// The first increment after the new base.
    first_incr: u64,
    thread: std::thread::JoinHandle<io::Result<u64>>,
    started: Instant,
}

/// Opens the log at start, before any client is served: the files the manifest names (the last
/// increment continued), or a first base of the loaded dataset and an increment.
pub fn open_at_start(host: &impl Host) -> Result<Option<Log>, String> {
    if !host.config().read().appendonly {
        return Ok(None);
    }
    host.replication().feed.activate(); // nobody runs a command yet: no grace needed
    let names = Names::of(&host.config().read());
    let failed = |err: io::Error| {
        format!(
            "cannot open the append only file in {}: {err}",
            names.dir.display()
        )
    };
    match names.read()? {
        Some(manifest) => continue_log(host, &names, manifest).map_err(failed),
        None => begin(host, &names).map_err(failed),
    }
    .map(Some)
}

/// The log of a manifest loaded at start: its last increment continued (a new one if it names
/// none).
fn continue_log(host: &impl Host, names: &Names, mut manifest: Manifest) -> io::Result<Log> {
    let feed = &host.replication().feed;
    feed.forget_db();
    let reader = reader_at_end(feed)?;
    let (incr, new) = match manifest.incrs.last() {
        Some(last) => (
            std::fs::OpenOptions::new()
                .append(true)
                .open(names.path(last))?,
            false,
        ),
        None => {
            let part = names.incr(manifest.next_incr_seq());
            let file = create(&names.path(&part))?;
            manifest.incrs.push(part);
            (file, true)
        }
    };
    if new {
        names.write(&manifest)?;
    }
    Log::new(host, manifest, incr, reader, names)
}

/// A new log from the dataset as it is: a base, an empty increment and a manifest naming just
/// them (files of an earlier log are removed). The stream is read from the base's instant on.
fn begin(host: &impl Host, names: &Names) -> io::Result<Log> {
    std::fs::create_dir_all(&names.dir)?;
    let old = names.read().ok().flatten();
    let feed = &host.replication().feed;
    let (bytes, reader) = crate::snapshot::image(host, || {
        feed.forget_db();
        reader_at_end(feed)
    })?;
    let reader = reader?;
    let written = (|| {
        let incr_part = names.incr(old.as_ref().map_or(1, Manifest::next_incr_seq));
        let incr = create(&names.path(&incr_part))?;
        let manifest = install_base(names, old.as_ref(), &bytes, vec![incr_part])?;
        Ok((manifest, incr))
    })();
    match written {
        Ok((manifest, incr)) => {
            let log = Log::new(host, manifest, incr, reader, names)?;
            tracing::info!(dir = %names.dir.display(), "append only file opened with a new base");
            Ok(log)
        }
        Err(err) => {
            feed.drop_reader(&reader);
            Err(err)
        }
    }
}

/// Writes `bytes` as the base after `old`'s, then a manifest naming it and `incrs`, and removes
/// the files `old` named that the new manifest does not.
fn install_base(
    names: &Names,
    old: Option<&Manifest>,
    bytes: &[u8],
    incrs: Vec<Part>,
) -> io::Result<Manifest> {
    let base = names.base(old.map_or(1, Manifest::next_base_seq));
    let temp = temp_base(names);
    write_file(&temp, bytes)?;
    std::fs::rename(&temp, names.path(&base))?;
    let manifest = Manifest {
        base: Some(base),
        incrs,
    };
    names.write(&manifest)?;
    if let Some(old) = old {
        remove_unlisted(names, old, &manifest);
    }
    Ok(manifest)
}

fn reader_at_end(feed: &Feed) -> io::Result<Arc<AtomicU64>> {
    feed.reader_at(feed.end())
        .ok_or_else(|| io::Error::other("the stream's end is not readable"))
}

fn create(path: &std::path::Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

fn temp_base(names: &Names) -> PathBuf {
    names
        .dir
        .join(format!("temp-rewriteaof-bg-{}.rdb", std::process::id()))
}

/// Writes `bytes` to `path` and syncs it; the size written.
fn write_file(path: &std::path::Path, bytes: &[u8]) -> io::Result<u64> {
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(bytes.len() as u64)
}

/// Removes the files `old` named that `new` does not (after `new` is the manifest).
fn remove_unlisted(names: &Names, old: &Manifest, new: &Manifest) {
    let listed = |part: &Part| new.base.as_ref() == Some(part) || new.incrs.contains(part);
    for part in old.base.iter().chain(old.incrs.iter()) {
        if !listed(part) {
            if let Err(err) = std::fs::remove_file(names.path(part)) {
                tracing::warn!(file = %part.name, %err, "cannot remove an old append only file");
            }
        }
    }
}

fn file_size(names: &Names, part: &Part) -> u64 {
    std::fs::metadata(names.path(part)).map_or(0, |m| m.len())
}

impl Log {
    /// The log of these files; the increment goes into the tail the connections share.
    fn new(
        host: &impl Host,
        manifest: Manifest,
        incr: File,
        reader: Arc<AtomicU64>,
        names: &Names,
    ) -> io::Result<Log> {
        let base_size = manifest.base.as_ref().map_or(0, |b| file_size(names, b));
        let incr_size = manifest.incrs.iter().map(|i| file_size(names, i)).sum();
        let log = Log {
            manifest,
            sync_handle: incr.try_clone()?,
            last_sync: Instant::now(),
            base_size,
        };
        *host.aof().tail.lock() = Some(Tail::new(incr, reader, incr_size));
        log.publish_sizes(host);
        Ok(log)
    }

    /// Writes what the stream holds (up to `upto`) and syncs as `policy` says (`force`: now,
    /// whatever it says); publishes how far the log is. The sync runs without the tail's lock
    /// (connections go on writing meanwhile), on the increment opened a second time.
    fn write(
        &mut self,
        host: &impl Host,
        policy: Fsync,
        upto: Option<u64>,
        force: bool,
    ) -> io::Result<()> {
        let aof = host.aof();
        let due = force
            || match policy {
                Fsync::Always => true,
                Fsync::Everysec => self.last_sync.elapsed() >= Duration::from_secs(1),
                Fsync::No => false,
            };
        let (done, numbering, sync) = {
            let mut tail = aof.tail.lock();
            let Some(tail) = tail.as_mut() else {
                return Ok(());
            };
            if let Some(err) = tail.failed.take() {
                return Err(err);
            }
            tail.append(&host.replication().feed, upto, aof.timestamps.load(Relaxed))?;
            let done = tail.done();
            if aof.written.swap(done, Relaxed) != done {
                aof.progressed.notify_waiters();
            }
            let sync = tail.unsynced && due;
            if sync {
                tail.unsynced = false;
                tail.syncing = true;
            } else if !tail.unsynced || policy == Fsync::No {
                // On the disk as far as it goes (`no`: as far as it is written).
                if aof.synced.swap(done, Relaxed) != done {
                    wake_waiters(host);
                }
            }
            (done, tail.numbering, sync)
        };
        if sync {
            self.sync_handle.sync_data()?;
            self.last_sync = Instant::now();
            let mut tail = aof.tail.lock();
            if let Some(tail) = tail.as_mut() {
                tail.syncing = false;
                if tail.numbering == numbering && aof.synced.fetch_max(done, Relaxed) < done {
                    wake_waiters(host);
                }
            }
        }
        Ok(())
    }

    fn publish_sizes(&self, host: &impl Host) {
        let aof = host.aof();
        let incr_size = aof.tail.lock().as_ref().map_or(0, |t| t.incr_size);
        aof.base_size.store(self.base_size, Relaxed);
        aof.current_size.store(self.base_size + incr_size, Relaxed);
    }

    /// True when the log has grown enough over its base for an automatic rewrite.
    fn rewrite_due(&self, host: &impl Host) -> bool {
        let config = host.config().read();
        let percentage = config.auto_aof_rewrite_percentage;
        let current = host.aof().current_size.load(Relaxed);
        if percentage == 0 || current < config.auto_aof_rewrite_min_size {
            return false;
        }
        let base = self.base_size.max(1);
        (current * 100 / base).saturating_sub(100) >= percentage
    }
}

/// Starts the writer thread; it runs until [`super::Aof::stop`].
pub fn spawn(host: Arc<impl Host>, log: Option<Log>) -> io::Result<std::thread::JoinHandle<()>> {
    // A runtime of its own for its waits (the notifications and a timer), so the server's
    // runtime shutting down never pulls the timer from under a last write.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    host.aof().on.store(log.is_some(), Relaxed);
    std::thread::Builder::new()
        .name("stmd-aof".into())
        .spawn(move || {
            Writer {
                host,
                log,
                running: None,
                retry_at: None,
            }
            .run(&runtime)
        })
}

struct Writer<H: Host> {
    host: Arc<H>,
    log: Option<Log>,
    running: Option<Running>,
    /// After a failure to open or write the log: when to open it again.
    retry_at: Option<Instant>,
}

impl<H: Host> Writer<H> {
    fn run(mut self, runtime: &tokio::runtime::Runtime) {
        let host = self.host.clone();
        let aof = host.aof();
        loop {
            if aof.stop.load(Relaxed) {
                break;
            }
            let (wanted, policy) = {
                let config = host.config().read();
                aof.timestamps.store(config.aof_timestamp_enabled, Relaxed);
                (config.appendonly, config.appendfsync)
            };
            if let Err(err) = self.step(wanted, policy) {
                self.fail(&err);
            }
            // Not woken by the stream's growth: the connections write what their replies wait
            // for (see `tail`), and a wake-up per write would cost the workers' core more than
            // the write itself.
            runtime.block_on(async {
                tokio::select! {
                    _ = aof.wake.notified() => {}
                    _ = tokio::time::sleep(TICK) => {}
                }
            });
        }
        self.close();
    }

    /// One turn: open or close the log as wanted, rewrite if asked, copy and sync the stream.
    fn step(&mut self, wanted: bool, policy: Fsync) -> io::Result<()> {
        let host = self.host.clone();
        let aof = host.aof();
        if !wanted {
            self.close();
            if aof.rewrite_wanted.swap(false, Relaxed) {
                self.rewrite_closed()?;
            }
        } else if self.log.is_none() && self.retry_at.is_none_or(|at| Instant::now() >= at) {
            self.open_now()?;
        }
        if aof.rewrite_scheduled.load(Relaxed) && !host.snapshots().busy() {
            aof.rewrite_scheduled.store(false, Relaxed);
            aof.rewrite_wanted.store(true, Relaxed);
        }
        if self
            .running
            .as_ref()
            .is_some_and(|r| r.thread.is_finished())
        {
            self.finish_running();
        }
        let Some(log) = &mut self.log else {
            return Ok(());
        };
        aof.set_policy(Some(policy));
        log.write(&*host, policy, None, false)?;
        log.publish_sizes(&*host);
        let due = aof.rewrite_wanted.load(Relaxed) || log.rewrite_due(&*host);
        if self.running.is_none() && due {
            aof.rewrite_wanted.store(false, Relaxed);
            self.start_rewrite()?;
        }
        Ok(())
    }

    /// Opens the log when CONFIG SET (or a retry) asks for it: a rewrite of the dataset as it is.
    fn open_now(&mut self) -> io::Result<()> {
        let host = self.host.clone();
        let feed = &host.replication().feed;
        if feed.activate_at(host.replication().offset()) {
            // A command that looked at the stream before it was kept and writes after the base's
            // instant would be in neither: let such commands finish first.
            std::thread::sleep(crate::replication::feed::ACTIVATION_GRACE);
        }
        let names = Names::of(&host.config().read());
        let started = Instant::now();
        self.mark_rewriting(true);
        let opened = begin(&*host, &names);
        self.mark_rewriting(false);
        self.rewrite_done(opened.is_ok(), started);
        host.aof().rewrite_wanted.store(false, Relaxed); // the opening was one
        self.log = Some(opened?);
        self.retry_at = None;
        host.aof().on.store(true, Relaxed);
        Ok(())
    }

    /// BGREWRITEAOF while the log is off: a base of the dataset and a manifest naming only it.
    fn rewrite_closed(&mut self) -> io::Result<()> {
        let host = self.host.clone();
        let names = Names::of(&host.config().read());
        let started = Instant::now();
        self.mark_rewriting(true);
        let result = (|| {
            std::fs::create_dir_all(&names.dir)?;
            let old = names.read().ok().flatten();
            let (bytes, ()) = crate::snapshot::image(&*host, || ())?;
            install_base(&names, old.as_ref(), &bytes, Vec::new()).map(drop)
        })();
        self.mark_rewriting(false);
        self.rewrite_done(result.is_ok(), started);
        result
    }

    /// A rewrite while the log is open: the dataset at one instant, a new increment from there,
    /// the base written by another thread.
    fn start_rewrite(&mut self) -> io::Result<()> {
        let host = self.host.clone();
        let aof = host.aof();
        let feed = &host.replication().feed;
        let names = Names::of(&host.config().read());
        if self.log.is_none() {
            return Ok(());
        }
        let started = Instant::now();
        self.mark_rewriting(true);
        // The tail is taken at the base's instant, so no connection writes past it into the old
        // increment.
        let (bytes, (reader, mut tail)) = crate::snapshot::image(&*host, || {
            feed.forget_db();
            (reader_at_end(feed), aof.tail.lock())
        })?;
        let reader = reader?;
        // What came before the base's instant goes to the old increment, synced.
        let split = reader.load(Relaxed);
        let log = self.log.as_mut().expect("checked above");
        let switched = (|| {
            let open = tail
                .as_mut()
                .ok_or_else(|| io::Error::other("the log is closed"))?;
            if let Some(err) = open.failed.take() {
                return Err(err);
            }
            open.append(feed, Some(split), aof.timestamps.load(Relaxed))?;
            open.incr.sync_data()?;
            let part = names.incr(log.manifest.next_incr_seq());
            let incr = create(&names.path(&part))?;
            log.manifest.incrs.push(part.clone());
            names.write(&log.manifest)?;
            log.sync_handle = incr.try_clone()?;
            log.last_sync = Instant::now();
            feed.drop_reader(&open.switch(incr, reader.clone()));
            Ok(part)
        })();
        let part = match switched {
            Ok(part) => part,
            Err(err) => {
                drop(tail);
                feed.drop_reader(&reader);
                self.mark_rewriting(false);
                self.rewrite_done(false, started);
                return Err(err);
            }
        };
        aof.written.store(split, Relaxed);
        aof.synced.store(split, Relaxed);
        drop(tail);
        wake_waiters(&*host);
        let temp = temp_base(&names);
        let base = names.base(log.manifest.next_base_seq());
        let writing = temp.clone();
        let thread = std::thread::Builder::new()
            .name("stmd-aof-base".into())
            .spawn(move || write_file(&writing, &bytes))?;
        self.running = Some(Running {
            base,
            temp,
            first_incr: part.seq,
            thread,
            started,
        });
        Ok(())
    }

    /// The base of a rewrite is written (or failed): the manifest names the new set, the old
    /// files go.
    fn finish_running(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        let host = self.host.clone();
        let names = Names::of(&host.config().read());
        let written = running
            .thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the base writer panicked")));
        let installed = written.and_then(|size| {
            std::fs::rename(&running.temp, names.path(&running.base))?;
            sync_dir(&names.dir)?;
            Ok(size)
        });
        let ok = match (installed, self.log.as_mut()) {
            (Ok(size), Some(log)) => {
                let old = log.manifest.clone();
                log.manifest = Manifest {
                    base: Some(running.base.clone()),
                    incrs: old
                        .incrs
                        .iter()
                        .filter(|i| i.seq >= running.first_incr)
                        .cloned()
                        .collect(),
                };
                match names.write(&log.manifest) {
                    Ok(()) => {
                        remove_unlisted(&names, &old, &log.manifest);
                        log.base_size = size;
                        let incr_size = log
                            .manifest
                            .incrs
                            .iter()
                            .map(|i| file_size(&names, i))
                            .sum();
                        if let Some(tail) = host.aof().tail.lock().as_mut() {
                            tail.incr_size = incr_size;
                        }
                        log.publish_sizes(&*host);
                        true
                    }
                    Err(err) => {
                        log.manifest = old;
                        tracing::warn!(%err, "cannot write the append only file's manifest");
                        false
                    }
                }
            }
            (Ok(_), None) => false, // closed meanwhile: the new base is not named
            (Err(err), _) => {
                tracing::warn!(%err, "cannot write the append only file's new base");
                false
            }
        };
        if !ok {
            let _ = std::fs::remove_file(&running.temp);
            let _ = std::fs::remove_file(names.path(&running.base));
        }
        self.mark_rewriting(false);
        self.rewrite_done(ok, running.started);
    }

    /// Closes the log: the last writes go in and are synced.
    fn close(&mut self) {
        if self.log.is_none() {
            return;
        }
        self.finish_running();
        let host = self.host.clone();
        let aof = host.aof();
        if let Some(mut log) = self.log.take() {
            if let Err(err) = log.write(&*host, Fsync::Always, None, true) {
                tracing::warn!(%err, "cannot finish the append only file");
            }
        }
        self.give_up_tail();
        aof.on.store(false, Relaxed);
        wake_waiters(&*host);
    }

    /// Writing failed: the log is given up and opened again (a new base of everything) after a
    /// pause, so nothing acknowledged meanwhile is missing from it.
    fn fail(&mut self, err: &io::Error) {
        tracing::warn!(%err, "append only file: writing failed; it is rewritten in a moment");
        let host = self.host.clone();
        host.aof().last_write_ok.store(false, Relaxed);
        if let Some(running) = self.running.take() {
            let _ = running.thread.join();
            let _ = std::fs::remove_file(&running.temp);
            self.rewrite_done(false, running.started);
        }
        self.log = None;
        self.give_up_tail();
        self.mark_rewriting(false);
        host.aof().on.store(false, Relaxed);
        wake_waiters(&*host);
        self.retry_at = Some(Instant::now() + RETRY_AFTER);
    }

    /// The connections stop writing the log, and the stream stops keeping bytes for it.
    fn give_up_tail(&self) {
        let aof = &self.host.aof();
        aof.set_policy(None);
        if let Some(tail) = aof.tail.lock().take() {
            self.host.replication().feed.drop_reader(&tail.reader);
        }
    }

    fn mark_rewriting(&self, running: bool) {
        let at = if running { crate::store::now_ms() } else { 0 };
        self.host.aof().rewriting_since_ms.store(at, Relaxed);
    }

    fn rewrite_done(&self, ok: bool, started: Instant) {
        let aof = &self.host.aof();
        aof.rewrites.fetch_add(1, Relaxed);
        aof.last_rewrite_ok.store(ok, Relaxed);
        aof.last_rewrite_secs
            .store(started.elapsed().as_secs() as i64, Relaxed);
        if ok {
            aof.consecutive_failures.store(0, Relaxed);
            aof.last_write_ok.store(true, Relaxed);
        } else {
            aof.consecutive_failures.fetch_add(1, Relaxed);
        }
    }
}
