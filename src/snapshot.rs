//! RDB snapshots of the keyspace, as Redis keeps them: SAVE, BGSAVE, the `save` rules, the save at
//! shutdown and the load at start, in Redis's file format (`rdb::file`), so a `dump.rdb` moves
//! between stmd and Redis both ways.
//!
//! Without `fork`, a background save walks the keyspace shard by shard, each shard locked only
//! while its keys are encoded: commands on other shards go on meanwhile, and each shard is saved
//! as it was at one instant (SAVE locks every database at once, so its file is one instant, as
//! Redis's is). STM entries are not written: their durable form is their scope row (raw messages
//! never go to disk), which brings them back after a restart.

use crate::config::Config;
use crate::rdb::file::{decode_words, encode_words, read_file, FileSink, FileWriter};
use crate::scripting::Scripting;
use crate::store::{Store, Value};
use bytes::Bytes;
use parking_lot::RwLock;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// What snapshots reach of the server: the store, the configuration, their own state, the
/// script engine (whose libraries a file carries) and the search indexes (whose definitions it
/// carries). The server's shared state implements it, so this module never sees the server.
pub trait Host: Send + Sync + 'static {
    fn store(&self) -> &Store;
    fn config(&self) -> &RwLock<Config>;
    fn snapshots(&self) -> &Snapshots;
    fn scripting(&self) -> &Scripting;
    fn search(&self) -> &crate::search::Registry;
    /// The set of search indexes changed: the store notes changes while any exists.
    fn indexes_changed(&self);
}

/// The auxiliary field carrying one FT.* index definition: its name and FT.CREATE's arguments
/// (RediSearch keeps them in its module's own record, which other servers cannot read; Redis
/// skips an auxiliary field it does not know, so the file still loads there, without indexes).
const SEARCH_INDEX_AUX: &str = "stmd-ft-index";
/// The auxiliary field carrying one FT.ALIASADD: the alias, then the index's name. After every
/// index's field in a file, so the index is there when its alias is read.
const SEARCH_ALIAS_AUX: &str = "stmd-ft-alias";

/// Each index definition, then each alias, as auxiliary fields. [`image`] reads them with every
/// database locked ([`crate::search::Registry::definitions`] takes no index data lock), so they
/// belong to the image's instant: a definition command fed before the instant is in them.
fn search_aux(host: &impl Host) -> Vec<(&'static str, Vec<u8>)> {
    let search = host.search();
    let definitions = search.definitions().into_iter().map(|(name, args)| {
        let mut words = vec![Bytes::from(name)];
        words.extend(args);
        (SEARCH_INDEX_AUX, encode_words(&words))
    });
    let aliases = search.aliases().into_iter().map(|(alias, name)| {
        let words = [Bytes::from(alias), Bytes::from(name)];
        (SEARCH_ALIAS_AUX, encode_words(&words))
    });
    definitions.chain(aliases).collect()
}

/// Puts the FT.* indexes `loaded` found in place of the server's: the registry an append-only
/// file's replay built, or else the file's definitions and aliases, scanned again over the keys
/// just loaded. For the load at start, DEBUG RELOAD and LOADAOF, a replica's full sync: each
/// loads a whole dataset, indexes included, as RediSearch keeps its indexes through them.
pub fn restore_indexes(host: &impl Host, loaded: &mut Loaded) {
    let search = host.search();
    match loaded.indexes.take() {
        Some(replayed) => search.adopt(replayed),
        None => search.restore_all(&loaded.search, &loaded.aliases),
    }
    host.indexes_changed();
}

/// What a shutdown does about the final save (SHUTDOWN SAVE / NOSAVE, or by the rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum AtShutdown {
    /// Save if `save` rules are set (SHUTDOWN without a flag, SIGTERM, SIGINT).
    ByRules = 0,
    Save = 1,
    NoSave = 2,
}

/// How long the rules wait after a failed background save before trying again (Redis's
/// `CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_AFTER: Duration = Duration::from_secs(5);
/// How often the rules are checked.
const CHECK_EVERY: Duration = Duration::from_millis(100);

/// The state of saving, for LASTSAVE, INFO persistence and the background task.
pub struct Snapshots {
    /// A save is being written (SAVE or BGSAVE): one at a time.
    busy: AtomicBool,
    /// The save marked `busy` by BGSAVE or the rules, for the background task to write.
    pending: AtomicBool,
    /// BGSAVE SCHEDULE: a background save to start when the running one ends.
    scheduled: AtomicBool,
    wake: Notify,
    /// Unix seconds of the last successful save (the start time before any), LASTSAVE.
    last_save: AtomicU64,
    /// [`Store::writes_so_far`] when the last successful save began.
    writes_at_last_save: AtomicU64,
    saves: AtomicU64,
    last_bgsave_ok: AtomicBool,
    /// Seconds the last background save took (-1: none yet).
    last_bgsave_secs: AtomicI64,
    /// Unix ms at which the running background save began (0: none runs).
    bgsave_started_ms: AtomicU64,
    /// Unix ms of the last failed save, for [`RETRY_AFTER`].
    failed_at_ms: AtomicU64,
    at_shutdown: AtomicU8,
    keys_loaded: AtomicU64,
    keys_expired_at_load: AtomicU64,
}

impl Default for Snapshots {
    fn default() -> Self {
        Snapshots {
            busy: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            scheduled: AtomicBool::new(false),
            wake: Notify::new(),
            last_save: AtomicU64::new(crate::store::now_ms() / 1000),
            writes_at_last_save: AtomicU64::new(0),
            saves: AtomicU64::new(0),
            last_bgsave_ok: AtomicBool::new(true),
            last_bgsave_secs: AtomicI64::new(-1),
            bgsave_started_ms: AtomicU64::new(0),
            failed_at_ms: AtomicU64::new(0),
            at_shutdown: AtomicU8::new(AtShutdown::ByRules as u8),
            keys_loaded: AtomicU64::new(0),
            keys_expired_at_load: AtomicU64::new(0),
        }
    }
}

/// What BGSAVE did.
pub enum Background {
    Started,
    /// BGSAVE SCHEDULE while a save runs: it starts when that one ends.
    Scheduled,
}

pub const IN_PROGRESS: &str = "ERR Background save already in progress";

/// Redis's refusal of writes after a failed background save (`stop-writes-on-bgsave-error`).
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// [`MISCONF`] for a script declared with write access (a `#!lua` script without `no-writes`),
/// refused before it runs.
pub const MISCONF_SCRIPT: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts.";

impl Snapshots {
    /// True while a save is being written.
    pub fn busy(&self) -> bool {
        self.busy.load(Relaxed)
    }

    fn claim(&self) -> bool {
        self.busy
            .compare_exchange(false, true, Relaxed, Relaxed)
            .is_ok()
    }

    /// True while writes must be refused with [`MISCONF`]: the last background save failed, `save`
    /// rules are set and `stop-writes-on-bgsave-error` is on. One load per command otherwise.
    pub fn refuses_writes(&self, config: &parking_lot::RwLock<crate::config::Config>) -> bool {
        if self.last_bgsave_ok.load(Relaxed) {
            return false;
        }
        let config = config.read();
        config.stop_writes_on_bgsave_error && !config.save.is_empty()
    }

    /// LASTSAVE: Unix seconds of the last successful save.
    pub fn last_save(&self) -> u64 {
        self.last_save.load(Relaxed)
    }

    /// Writes since the last successful save began (INFO's `rdb_changes_since_last_save`).
    pub fn changes_since_save(&self, store: &Store) -> u64 {
        store
            .writes_so_far()
            .saturating_sub(self.writes_at_last_save.load(Relaxed))
    }

    /// Starts a background save (BGSAVE), or with `schedule` queues one behind the running save.
    pub fn request_background(&self, schedule: bool) -> Result<Background, &'static str> {
        if self.claim() {
            self.pending.store(true, Relaxed);
            self.wake.notify_one();
            return Ok(Background::Started);
        }
        if schedule {
            self.scheduled.store(true, Relaxed);
            return Ok(Background::Scheduled);
        }
        Err(IN_PROGRESS)
    }

    pub fn set_at_shutdown(&self, what: AtShutdown) {
        self.at_shutdown.store(what as u8, Relaxed);
    }

    /// INFO persistence's snapshot fields, in Redis's order.
    pub fn info_fields(&self, store: &Store) -> Vec<(&'static str, String)> {
        let running_since = self.bgsave_started_ms.load(Relaxed);
        let current = crate::clock::secs_since(running_since, crate::store::now_ms());
        vec![
            (
                "rdb_changes_since_last_save",
                self.changes_since_save(store).to_string(),
            ),
            (
                "rdb_bgsave_in_progress",
                u8::from(running_since != 0).to_string(),
            ),
            ("rdb_last_save_time", self.last_save().to_string()),
            (
                "rdb_last_bgsave_status",
                if self.last_bgsave_ok.load(Relaxed) {
                    "ok"
                } else {
                    "err"
                }
                .to_string(),
            ),
            (
                "rdb_last_bgsave_time_sec",
                self.last_bgsave_secs.load(Relaxed).to_string(),
            ),
            ("rdb_current_bgsave_time_sec", current.to_string()),
            ("rdb_saves", self.saves.load(Relaxed).to_string()),
            (
                "rdb_last_load_keys_expired",
                self.keys_expired_at_load.load(Relaxed).to_string(),
            ),
            (
                "rdb_last_load_keys_loaded",
                self.keys_loaded.load(Relaxed).to_string(),
            ),
        ]
    }
}

/// The file snapshots go to: `dir/dbfilename`.
pub fn file_path(host: &impl Host) -> PathBuf {
    let config = host.config().read();
    config.dir.join(&config.dbfilename)
}

/// SAVE: writes the file now, every database locked at once (one instant, as Redis's SAVE).
/// `functions` are the libraries' codes, read by the caller from the engine it may hold.
pub fn save(host: &impl Host, functions: &[Bytes]) -> Result<(), String> {
    let snapshots = host.snapshots();
    if !snapshots.claim() {
        return Err(IN_PROGRESS.into());
    }
    let result = write(host, functions, Walk::AllAtOnce);
    snapshots.busy.store(false, Relaxed);
    result
}

/// How the keyspace is read for a file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// Every database locked for the whole save (SAVE, the save at shutdown).
    AllAtOnce,
    /// One shard locked at a time (BGSAVE and the rules).
    ShardByShard,
}

/// Writes a file to a temporary name beside the target, syncs it and renames it over the target,
/// so a crash mid-save leaves the previous file whole. Records the outcome.
fn write(host: &impl Host, functions: &[Bytes], walk: Walk) -> Result<(), String> {
    let target = file_path(host);
    let temp = target.with_file_name(format!("temp-{}.rdb", std::process::id()));
    let writes_before = host.store().writes_so_far();
    host.snapshots().saves.fetch_add(1, Relaxed); // Redis counts the saves begun
    let written =
        write_to(host, functions, walk, &temp).and_then(|()| std::fs::rename(&temp, &target));
    let snapshots = host.snapshots();
    match written {
        Ok(()) => {
            snapshots
                .last_save
                .store(crate::store::now_ms() / 1000, Relaxed);
            snapshots.writes_at_last_save.store(writes_before, Relaxed);
            snapshots.last_bgsave_ok.store(true, Relaxed); // any good save ends MISCONF
            tracing::info!(file = %target.display(), "DB saved on disk");
            Ok(())
        }
        Err(err) => {
            let _ = std::fs::remove_file(&temp);
            snapshots
                .failed_at_ms
                .store(crate::store::now_ms(), Relaxed);
            tracing::warn!(file = %target.display(), %err, "cannot save the DB on disk");
            Err(format!("cannot save {}: {err}", target.display()))
        }
    }
}

/// The aux fields at the head of every file.
fn aux_fields() -> [(&'static str, String); 5] {
    [
        ("redis-ver", crate::spec::REDIS_VERSION.to_string()),
        ("redis-bits", "64".to_string()),
        ("ctime", (crate::store::now_ms() / 1000).to_string()),
        ("used-mem", crate::metrics::allocated_bytes().to_string()),
        ("aof-base", "0".to_string()),
    ]
}

/// One key into a file, unless it is an STM entry (their rows bring them back).
fn put<W: std::io::Write>(out: &mut FileWriter<W>, name: &[u8], entry: &crate::store::Entry) {
    if !matches!(entry.value, Value::Stm(_)) {
        out.key(name, &entry.value, entry.expire_at());
    }
}

/// The whole dataset as an RDB image in memory, at one instant: the script engine (so no library
/// changes) and every database are locked while it is encoded, and `at_instant` runs under those
/// locks (a full sync reads the replication offset there). Off the tokio workers only.
pub fn image<T>(host: &impl Host, at_instant: impl FnOnce() -> T) -> std::io::Result<(Vec<u8>, T)> {
    let store = host.store();
    let engine = host.scripting().engine();
    let all: Vec<usize> = (0..store.databases()).collect();
    let locked = store.lock_dbs(&all);
    let instant = at_instant();
    // At the instant: a definition command that changed the registry before it is in the image
    // (and, when its feed came after the instant, in the stream too: replayed, it fails as a
    // duplicate and changes nothing, as a load ignores such errors).
    let indexes = search_aux(host);
    let mut out = FileWriter::new(Vec::new(), &aux_fields());
    for (name, value) in &indexes {
        out.aux(name, value);
    }
    for code in engine.functions.codes() {
        out.function(&code);
    }
    for (db, keys) in all.iter().zip(locked.iter()) {
        let mut selected = false;
        for shard in 0..store.shard_count() {
            keys.for_each_in_shard(shard, |name, entry| {
                if !selected {
                    out.select_db(*db);
                    selected = true;
                }
                put(&mut out, name, entry)
            });
        }
    }
    drop(locked);
    drop(engine);
    Ok((out.finish()?, instant))
}

fn write_to(host: &impl Host, functions: &[Bytes], walk: Walk, temp: &Path) -> std::io::Result<()> {
    let store = host.store();
    let file = std::fs::File::create(temp)?;
    let mut out = FileWriter::new(BufWriter::with_capacity(1 << 20, file), &aux_fields());
    for (name, value) in search_aux(host) {
        out.aux(name, &value);
    }
    for code in functions {
        out.function(code);
    }
    let dbs: Vec<usize> = store
        .existing_dbs()
        .filter(|(_, space)| !space.is_empty())
        .map(|(db, _)| db)
        .collect();
    match walk {
        Walk::AllAtOnce => {
            let locked = store.lock_dbs(&dbs);
            for (db, keys) in dbs.iter().zip(locked.iter()) {
                out.select_db(*db);
                for shard in 0..store.shard_count() {
                    keys.for_each_in_shard(shard, |name, entry| put(&mut out, name, entry));
                    out.flush()?; // a shard at a time: the buffer never holds a database
                }
            }
        }
        Walk::ShardByShard => {
            for &db in &dbs {
                out.select_db(db);
                for shard in 0..store.shard_count() {
                    let keys = store.lock_shard(db, shard);
                    keys.for_each_in_shard(shard, |name, entry| put(&mut out, name, entry));
                    drop(keys);
                    out.flush()?;
                }
            }
        }
    }
    let file = out.finish()?.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// The libraries' codes, waiting for the engine (off the tokio workers only).
fn function_codes(host: &impl Host) -> Vec<Bytes> {
    host.scripting().engine().functions.codes()
}

/// Runs the background saves (BGSAVE, BGSAVE SCHEDULE and the `save` rules) until `stop`.
pub async fn run(host: Arc<impl Host>, mut stop: tokio::sync::watch::Receiver<bool>) {
    let snapshots = host.snapshots();
    let mut every = tokio::time::interval(CHECK_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = snapshots.wake.notified() => {}
            _ = every.tick() => {}
        }
        if !snapshots.pending.load(Relaxed) && !rules_due(&*host) {
            continue;
        }
        if !snapshots.pending.swap(false, Relaxed) && !snapshots.claim() {
            continue;
        }
        let started = Instant::now();
        snapshots
            .bgsave_started_ms
            .store(crate::store::now_ms(), Relaxed);
        tracing::info!("background saving started");
        let worker = host.clone();
        let written = tokio::task::spawn_blocking(move || {
            let functions = function_codes(&*worker);
            write(&*worker, &functions, Walk::ShardByShard)
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        if written.is_err() {
            snapshots.last_bgsave_ok.store(false, Relaxed);
        }
        snapshots
            .last_bgsave_secs
            .store(started.elapsed().as_secs() as i64, Relaxed);
        snapshots.bgsave_started_ms.store(0, Relaxed);
        snapshots.busy.store(false, Relaxed);
        if snapshots.scheduled.swap(false, Relaxed) && snapshots.claim() {
            snapshots.pending.store(true, Relaxed);
            snapshots.wake.notify_one();
        }
    }
}

/// True when a `save` rule asks for a save now (and a failed one is not too recent).
fn rules_due(host: &impl Host) -> bool {
    let snapshots = host.snapshots();
    let rules = host.config().read().save.clone();
    if rules.is_empty() || snapshots.busy.load(Relaxed) {
        return false;
    }
    let now = crate::store::now_ms();
    let failed_at = snapshots.failed_at_ms.load(Relaxed);
    if failed_at != 0 && now.saturating_sub(failed_at) < RETRY_AFTER.as_millis() as u64 {
        return false;
    }
    let since = (now / 1000).saturating_sub(snapshots.last_save());
    rules.due(snapshots.changes_since_save(host.store()), since)
}

/// The save at shutdown, after the connections have drained: as SHUTDOWN asked, else when `save`
/// rules are set and something changed since the last save.
pub fn at_shutdown(host: &impl Host) {
    // Nothing changed since the file was last written (or loaded): it already holds all.
    let unchanged =
        host.snapshots().changes_since_save(host.store()) == 0 && file_path(host).exists();
    if wanted_at_shutdown(host) && !unchanged {
        let _ = save_waiting(host, &function_codes(host));
    }
}

/// Whether the shutdown under way saves: as SHUTDOWN's flags or the signal's setting say, or
/// (no flag) when `save` rules are set.
pub fn wanted_at_shutdown(host: &impl Host) -> bool {
    match host.snapshots().at_shutdown.load(Relaxed) {
        x if x == AtShutdown::NoSave as u8 => false,
        x if x == AtShutdown::Save as u8 => true,
        _ => !host.config().read().save.is_empty(),
    }
}

/// A save now, after the background save still running if there is one (it holds `busy`): the
/// save a shutdown makes, which must not fail only because a BGSAVE was under way.
pub fn save_waiting(host: &impl Host, functions: &[Bytes]) -> Result<(), String> {
    let snapshots = host.snapshots();
    while !snapshots.claim() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let result = write(host, functions, Walk::AllAtOnce);
    snapshots.busy.store(false, Relaxed);
    result
}

/// The save a shutdown by signal makes before it stops serving, so that, as in Redis, a save
/// that fails keeps the server up (unless the setting has `force`). What clients write until the
/// connections have drained is saved after, by [`at_shutdown`].
pub fn save_before_signal_shutdown(host: &impl Host, force: bool) -> Result<(), String> {
    if force || !wanted_at_shutdown(host) {
        return Ok(());
    }
    save_waiting(host, &function_codes(host))
}

/// What the load at start found.
#[derive(Default)]
pub struct Loaded {
    /// The function libraries' codes, for the engine.
    pub functions: Vec<Bytes>,
    /// The FT.* index definitions: name and FT.CREATE's arguments after it.
    pub search: Vec<(String, Vec<Bytes>)>,
    /// The FT.* aliases: alias, index name.
    pub aliases: Vec<(String, String)>,
    /// The indexes an append-only file's replay built (its FT.* commands over its keys): taken
    /// as they are rather than `search` and `aliases` scanned again.
    pub indexes: Option<crate::search::Registry>,
    pub keys: u64,
    /// Keys whose expiry had passed: not loaded, as a primary does.
    pub expired: u64,
}

/// Loads `dir/dbfilename` into `store` if it exists, before any client is served. An unreadable
/// file stops the start with the reason, as Redis does.
pub fn load(config: &crate::config::Config, store: &Store) -> Result<Loaded, String> {
    let path = config.dir.join(&config.dbfilename);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    let started = Instant::now();
    store
        .encoding_limits
        .configure(&config.encoding_thresholds());
    let loaded = load_bytes(&bytes, store, None)
        .map_err(|why| format!("cannot load {}: {why}", path.display()))?;
    tracing::info!(
        file = %path.display(),
        keys = loaded.keys,
        expired = loaded.expired,
        ms = started.elapsed().as_millis() as u64,
        "DB loaded from disk"
    );
    Ok(loaded)
}

/// Reads a whole RDB file's bytes into `store`: at start-up key by key (`held` None, nobody is
/// served yet), or into the databases the caller holds locked whole (`held[db]`, a replica's full
/// sync), so that no client sees a half-loaded keyspace. With `held`, keys whose expiry has
/// passed are loaded too, as a Redis replica does: its primary sends their DEL.
pub fn load_bytes<'s>(
    bytes: &[u8],
    store: &'s Store,
    held: Option<&mut [crate::store::Locked<'s>]>,
) -> Result<Loaded, String> {
    let mut sink = Loader {
        store,
        databases: store.databases(),
        now: crate::store::now_ms(),
        keep_expired: held.is_some(),
        held,
        merge: false,
        loaded: Loaded::default(),
    };
    read_file(bytes, &store.encoding_limits, &mut sink)?;
    Ok(sink.loaded)
}

/// DEBUG RELOAD's load: every database locked while it is (unless `!flush`) emptied and loaded
/// from `bytes`, so no client sees half of it. Keys already expired are skipped, as at start; a
/// key already there is an error, or replaced when `merge`.
pub fn reload_bytes(
    host: &impl Host,
    bytes: &[u8],
    flush: bool,
    merge: bool,
) -> Result<Loaded, String> {
    let store = host.store();
    let dbs: Vec<usize> = (0..store.databases()).collect();
    let mut locked = store.lock_dbs(&dbs);
    if flush {
        for keys in locked.iter_mut() {
            clear_keeping_stm(keys);
        }
    }
    let mut sink = Loader {
        store,
        databases: store.databases(),
        now: crate::store::now_ms(),
        keep_expired: false,
        held: Some(&mut locked[..]),
        merge,
        loaded: Loaded::default(),
    };
    read_file(bytes, &store.encoding_limits, &mut sink)?;
    Ok(sink.loaded)
}

/// Empties a database locked whole but for its STM entries, which no file holds (their rows
/// bring them back at start): a reload from a file must not lose them.
pub fn clear_keeping_stm(keys: &mut crate::store::Locked<'_>) {
    let mut names = Vec::new();
    keys.for_each(|name, entry| {
        if matches!(entry.value, Value::Stm(_)) {
            names.push(Bytes::copy_from_slice(name));
        }
    });
    let kept: Vec<_> = names
        .into_iter()
        .filter_map(|name| keys.remove(&name).map(|entry| (name, entry)))
        .collect();
    keys.clear();
    for (name, entry) in kept {
        let at = entry.expire_at();
        keys.set(&name, entry.value, at);
    }
}

impl Snapshots {
    /// Records what the load at start found, for INFO.
    pub fn note_load(&self, loaded: &Loaded, store: &Store) {
        self.writes_at_last_save
            .store(store.writes_so_far(), Relaxed);
        self.keys_loaded.store(loaded.keys, Relaxed);
        self.keys_expired_at_load.store(loaded.expired, Relaxed);
    }
}

struct Loader<'h, 's> {
    store: &'s Store,
    databases: usize,
    now: u64,
    /// Every database, locked whole by the caller (a replica's full sync, which loads keys already
    /// expired too: the primary's DEL removes them); None: each key locks its own shard.
    held: Option<&'h mut [crate::store::Locked<'s>]>,
    /// Load keys whose expiry passed (a replica's full sync: its primary's DEL follows).
    keep_expired: bool,
    /// A key already there is replaced rather than an error (DEBUG RELOAD MERGE).
    merge: bool,
    loaded: Loaded,
}

impl FileSink for Loader<'_, '_> {
    fn key(
        &mut self,
        db: usize,
        name: Bytes,
        mut value: Value,
        expire_at: u64,
    ) -> Result<(), String> {
        if db >= self.databases {
            return Err(format!(
                "FATAL: Data file was created with a Redis server configured to handle more than {} databases. Exiting",
                self.databases
            ));
        }
        if matches!(value, Value::Stm(_)) {
            return Ok(()); // never written by a save: STM entries come back from their rows
        }
        if !self.keep_expired && expire_at != 0 && expire_at <= self.now {
            self.loaded.expired += 1; // as a primary does: an expired key is not loaded
            return Ok(());
        }
        // Hash fields whose time has passed are not loaded either, nor a hash left empty.
        if let Value::Hash(hash) = &mut value {
            if !self.keep_expired && hash.drop_expired(self.now) > 0 && hash.is_empty() {
                self.loaded.expired += 1;
                return Ok(());
            }
        }
        let mut own;
        let keys = match self.held.as_deref_mut().and_then(|held| held.get_mut(db)) {
            Some(keys) => keys,
            None => {
                own = self.store.lock_one(db, &name);
                &mut own
            }
        };
        if !self.merge && keys.contains_stored(&name) {
            return Err(format!(
                "Duplicate key '{}' found in RDB file",
                String::from_utf8_lossy(&name)
            ));
        }
        keys.set(&name, value, expire_at);
        self.loaded.keys += 1;
        Ok(())
    }

    fn function(&mut self, code: Bytes) {
        self.loaded.functions.push(code);
    }

    fn aux(&mut self, name: &[u8], value: Bytes) -> Result<(), String> {
        let field = if name == SEARCH_INDEX_AUX.as_bytes() {
            SEARCH_INDEX_AUX
        } else if name == SEARCH_ALIAS_AUX.as_bytes() {
            SEARCH_ALIAS_AUX
        } else {
            return Ok(());
        };
        let bad = || format!("Bad data format in the {field} field");
        let mut words = decode_words(&value).ok_or_else(bad)?.into_iter();
        let text = |word: Bytes| String::from_utf8_lossy(&word).into_owned();
        let first = words.next().map(text).ok_or_else(bad)?;
        if field == SEARCH_INDEX_AUX {
            self.loaded.search.push((first, words.collect()));
        } else {
            let (Some(index), None) = (words.next(), words.next()) else {
                return Err(bad());
            };
            self.loaded.aliases.push((first, text(index)));
        }
        Ok(())
    }
}
