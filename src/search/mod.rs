//! Secondary indexes over HASH and JSON keys, as RediSearch serves them through the `FT.*`
//! commands (Redis 8 ships them in its core; the agent frameworks' Redis libraries need them).
//!
//! - [`schema`]: an index's definition (FT.CREATE's arguments).
//! - [`index`]: one index's documents and the structures queries read.
//! - [`text`]: TEXT fields' tokenizer and stemmer.
//! - [`stm_doc`]: an STM entry as a document (`FT.CREATE … ON STM`).
//! - [`query`]: the query language (`FT.SEARCH`/`FT.AGGREGATE`'s first argument) parsed into a
//!   tree, without knowing any index.
//! - [`vector`]: the index of a VECTOR field (FLAT and HNSW), KNN and range queries.
//! - [`exec`]: that tree run over an index: doc ids and their scores.
//! - [`explain`]: that tree written as FT.EXPLAIN's text.
//! - [`aggregate`]: `FT.AGGREGATE`'s pipeline (GROUPBY/REDUCE, APPLY, FILTER, SORTBY, LIMIT) over
//!   rows of loaded fields.
//! - [`cursor`]: `FT.AGGREGATE`'s results sent in chunks, and the cursors that keep them.
//!
//! ## Following the keyspace
//!
//! The indexes follow the keyspace through the store's change record (`store::changes`): while
//! an index exists, `events` keeps the store noting changes and hands each batch to [`note`]
//! (the keys of database 0: RediSearch indexes only database 0). After a command, dispatch calls
//! [`Registry::apply_pending`] (the expiry cycle and the memory meter do after their ticks): the
//! keys noted are read again and each index that covers them is brought up to date before the
//! reply goes out (FLUSHALL/FLUSHDB of database 0 drop every index, as in RediSearch 2.10), so a
//! document is searchable as soon as its write is acknowledged. A document keeps its key's
//! expiry time, and a query leaves out those whose time has passed ([`index::Data::expired`]):
//! an expired key is deleted only by the expiry cycle or an access, but no read sees it. A command
//! run inside EXEC or a script holds shard locks: its keys wait in the thread's list until the
//! EXEC or script ends and dispatch applies them. When no index exists the cost is the store's
//! one relaxed load of `listening` (shared with keyspace notifications and tracking).
//!
//! ## Lock order
//!
//! Registry map (briefly, to clone an index's `Arc`) → an index's data lock → shard locks. The
//! indexer takes an index's lock, then the shard of each key it reads; a command's handler
//! takes shard locks but never an index lock while holding them: writes apply to indexes only
//! after their handler released its shards (and an EXEC or a script only after its end), and
//! FT.SEARCH releases the index lock before it reads the documents it returns. So no thread
//! waits for an index lock while holding a shard lock, and no cycle can form. Reading the value
//! under the index's lock means two writers of one key cannot leave the older value indexed:
//! whichever applies last reads the key's latest value.

pub mod aggregate;
pub mod cursor;
pub mod exec;
pub mod explain;
pub mod index;
pub mod query;
pub mod schema;
pub mod stm_doc;
pub mod text;
pub mod vector;

use crate::store::changes::{Change, Noted};
use crate::store::Store;
use bytes::Bytes;
use index::Data;
use parking_lot::RwLock;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// One index: its name, its data behind its lock, and the usage FT.INFO reports.
pub struct Index {
    pub name: String,
    pub data: RwLock<Data>,
    /// FT.CREATE's arguments after the index name, as given, then FT.ALTER's added fields (the
    /// stored definition continues SCHEMA's field list). Behind a lock of its own that is taken
    /// with no other lock acquired under it, so a snapshot reads the definitions while it holds
    /// every shard (the data lock comes before shard locks: it cannot).
    definition: parking_lot::Mutex<Vec<Bytes>>,
    /// FT.INFO's `number_of_uses`: the FT.* commands that named the index.
    pub uses: AtomicU64,
    /// FT.INFO's `dialect_stats`: bit `d - 1` set once a query ran in dialect `d`.
    pub dialects: AtomicU8,
}

impl Index {
    /// FT.ALTER's fields join the stored definition.
    pub fn extend_definition(&self, added: &[Bytes]) {
        self.definition.lock().extend_from_slice(added);
    }

    /// A command named the index.
    pub fn used(&self) {
        self.uses.fetch_add(1, Ordering::Relaxed);
    }

    /// A query ran in `dialect` (1 to 4).
    pub fn queried_in(&self, dialect: u32) {
        if (1..=4).contains(&dialect) {
            self.dialects
                .fetch_or(1 << (dialect - 1), Ordering::Relaxed);
        }
    }
}

/// What was noted on this thread for the indexes, waiting for [`Registry::apply_pending`].
#[derive(Clone)]
enum Pending {
    Key(Bytes),
    /// Database 0 was emptied: every index is dropped.
    Flushed,
}

thread_local! {
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

/// Keeps the keys of database 0 among `noted` for the indexes (called by `events` while an index
/// exists).
pub fn note(noted: &[Noted]) {
    PENDING.with(|pending| {
        let mut pending = pending.borrow_mut();
        for n in noted.iter().filter(|n| n.db == 0) {
            match n.change {
                Change::Missed => {}
                Change::Flushed => pending.push(Pending::Flushed),
                _ => pending.push(Pending::Key(n.key.clone())),
            }
        }
    });
}

/// Drops what was noted on this thread: the dataset it was noted of has just been replaced with
/// its indexes (a replay's notes, a flush among them, belong to the replay's own registry and
/// were left here when no index listened; applied later, the flush would drop the indexes put
/// back).
fn forget_pending() {
    PENDING.with(|pending| pending.borrow_mut().clear());
}

/// FT.CONFIG's settings that change behaviour.
#[derive(Debug, Clone)]
pub struct Settings {
    pub default_dialect: u32,
    pub timeout_ms: u64,
    pub max_search_results: u64,
    pub max_aggregate_results: u64,
    pub min_prefix: u64,
    pub max_expansions: u64,
    pub cursor_max_idle_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            default_dialect: 1,
            timeout_ms: 500,
            max_search_results: 1_000_000,
            max_aggregate_results: u64::MAX,
            min_prefix: 2,
            max_expansions: 200,
            cursor_max_idle_ms: 300_000,
        }
    }
}

/// Every index of the server, by name, and their aliases.
pub struct Registry {
    store: Arc<Store>,
    indexes: RwLock<BTreeMap<String, Arc<Index>>>,
    /// Alias → index name.
    aliases: RwLock<HashMap<String, String>>,
    pub settings: RwLock<Settings>,
    /// FT.AGGREGATE's open cursors (of every index).
    pub cursors: parking_lot::Mutex<cursor::Cursors>,
}

impl Registry {
    pub fn new(store: Arc<Store>) -> Registry {
        Registry {
            store,
            indexes: RwLock::new(BTreeMap::new()),
            aliases: RwLock::new(HashMap::new()),
            settings: RwLock::new(Settings::default()),
            cursors: parking_lot::Mutex::new(cursor::Cursors::default()),
        }
    }

    /// True while at least one index exists (the store must note changes then).
    pub fn any(&self) -> bool {
        !self.indexes.read().is_empty()
    }

    /// The index called `name`, or the index `name` is an alias of.
    pub fn get(&self, name: &str) -> Option<Arc<Index>> {
        let indexes = self.indexes.read();
        if let Some(index) = indexes.get(name) {
            return Some(index.clone());
        }
        let target = self.aliases.read().get(name).cloned()?;
        indexes.get(&target).cloned()
    }

    /// The index called `name` itself (not through an alias).
    pub fn get_exact(&self, name: &str) -> Option<Arc<Index>> {
        self.indexes.read().get(name).cloned()
    }

    pub fn names(&self) -> Vec<String> {
        self.indexes.read().keys().cloned().collect()
    }

    /// Every index with its FT.CREATE arguments (after the name), for the snapshot. Safe under
    /// shard locks: the map's lock and each definition's are held briefly by everyone, with no
    /// shard lock taken inside them, and no index's data lock is taken.
    pub fn definitions(&self) -> Vec<(String, Vec<Bytes>)> {
        self.indexes
            .read()
            .values()
            .map(|i| (i.name.clone(), i.definition.lock().clone()))
            .collect()
    }

    /// Every alias and the index it names, for the snapshot.
    pub fn aliases(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .aliases
            .read()
            .iter()
            .map(|(a, t)| (a.clone(), t.clone()))
            .collect();
        out.sort();
        out
    }

    /// Replaces every index and alias by `other`'s (the registry an append-only file's replay
    /// built over this registry's store): its indexes are up to date with the keys already, so
    /// nothing is scanned again.
    pub fn adopt(&self, other: Registry) {
        forget_pending();
        let indexes = std::mem::take(&mut *other.indexes.write());
        let aliases = std::mem::take(&mut *other.aliases.write());
        *self.indexes.write() = indexes;
        *self.aliases.write() = aliases;
    }

    /// Replaces every index and alias by those of a file's `definitions` (name, FT.CREATE's
    /// arguments) and `aliases` (alias, index), each index scanning the keys in the background
    /// (see [`Registry::restore`]). A definition that does not parse (a file of another
    /// version) is skipped, named in the log.
    pub fn restore_all(&self, definitions: &[(String, Vec<Bytes>)], aliases: &[(String, String)]) {
        forget_pending();
        self.clear();
        for (name, args) in definitions {
            if let Err(why) = self.restore(name, args) {
                tracing::warn!(index = %name, %why, "index definition in the file not restored");
            }
        }
        for (alias, name) in aliases {
            if let Err(why) = self.alias_add(alias, name, false) {
                tracing::warn!(%alias, index = %name, %why, "index alias in the file not restored");
            }
        }
    }

    /// Creates index `name` from FT.CREATE's arguments after the name, and starts its initial
    /// scan unless SKIPINITIALSCAN. `Err`: RediSearch's error text.
    pub fn create(&self, name: &str, args: &[Bytes]) -> Result<(), String> {
        self.add(name, args, false)
    }

    /// Brings back index `name` from a snapshot's definition: as [`Registry::create`], but the
    /// keys already stored are always scanned (they are the documents it had, SKIPINITIALSCAN or
    /// not).
    pub fn restore(&self, name: &str, args: &[Bytes]) -> Result<(), String> {
        self.add(name, args, true)
    }

    fn add(&self, name: &str, args: &[Bytes], always_scan: bool) -> Result<(), String> {
        if self.indexes.read().contains_key(name) {
            return Err("Index already exists".into());
        }
        let def = schema::parse(args)?;
        let skip = def.skip_initial_scan && !always_scan;
        let index = Arc::new(Index {
            name: name.to_string(),
            data: RwLock::new(Data::new(def)),
            definition: parking_lot::Mutex::new(args.to_vec()),
            uses: AtomicU64::new(0),
            dialects: AtomicU8::new(0),
        });
        {
            let mut indexes = self.indexes.write();
            if indexes.contains_key(name) {
                return Err("Index already exists".into());
            }
            indexes.insert(name.to_string(), index.clone());
        }
        if !skip {
            self.scan(index, true);
        }
        Ok(())
    }

    /// Removes index `name` (not an alias) and its aliases; its data, for FT.DROPINDEX DD.
    pub fn drop_index(&self, name: &str) -> Option<Arc<Index>> {
        let index = self.indexes.write().remove(name)?;
        self.aliases.write().retain(|_, target| target != name);
        self.cursors.lock().drop_index(name);
        Some(index)
    }

    /// Removes every index (FLUSHALL/FLUSHDB of database 0, a snapshot load that replaces
    /// them).
    pub fn clear(&self) {
        self.indexes.write().clear();
        self.aliases.write().clear();
        self.cursors.lock().clear();
    }

    pub fn aliases_of(&self, name: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .aliases
            .read()
            .iter()
            .filter(|(_, t)| *t == name)
            .map(|(a, _)| a.clone())
            .collect();
        out.sort();
        out
    }

    /// FT.ALIASADD (`update`: FT.ALIASUPDATE, which may move an existing alias).
    pub fn alias_add(&self, alias: &str, name: &str, update: bool) -> Result<(), String> {
        if !self.indexes.read().contains_key(name) {
            return Err("Unknown index name (or name is an alias itself)".into());
        }
        let mut aliases = self.aliases.write();
        if !update && aliases.contains_key(alias) {
            return Err("Alias already exists".into());
        }
        if self.indexes.read().contains_key(alias) {
            return Err("Alias already exists".into());
        }
        aliases.insert(alias.to_string(), name.to_string());
        Ok(())
    }

    pub fn alias_del(&self, alias: &str) -> Result<(), String> {
        self.aliases
            .write()
            .remove(alias)
            .map(|_| ())
            .ok_or_else(|| "Alias does not exist".into())
    }

    /// Brings the indexes up to date with the keys noted on this thread (see the module
    /// documentation). Call only while this thread holds no shard lock. A flush of database 0
    /// drops every index, as RediSearch does on FLUSHALL/FLUSHDB: true then, and the caller
    /// lowers the store's change record when no index is left.
    pub fn apply_pending(&self) -> bool {
        self.apply_noted(
            |index| Some(index.data.write()),
            |def, key| self.read_stored(def, key),
        )
        .unwrap_or(false)
    }

    /// As [`Registry::apply_pending`], for a command inside EXEC or a script that reads an
    /// index after the transaction's own writes (RediSearch indexes each write as it happens):
    /// this thread holds shard locks, so `read` gives a key of database 0 (extracted for
    /// `def`, with its expiry) through them, and each index's lock is waited for at most
    /// `wait`, its holder being perhaps an indexer waiting for one of those shards. None when
    /// one was not had: the notes stay for the end of the EXEC or script.
    pub fn apply_pending_holding(
        &self,
        wait: std::time::Duration,
        read: impl FnMut(&schema::Definition, &[u8]) -> (index::Extracted, u64),
    ) -> Option<bool> {
        self.apply_noted(|index| index.data.try_write_for(wait), read)
    }

    /// The notes of this thread applied: each index locked by `lock` (None: give up, the notes
    /// put back) and each noted key it covers read by `read`.
    fn apply_noted(
        &self,
        lock: impl for<'i> Fn(&'i Index) -> Option<parking_lot::RwLockWriteGuard<'i, Data>>,
        read: impl FnMut(&schema::Definition, &[u8]) -> (index::Extracted, u64),
    ) -> Option<bool> {
        let mut pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
        if pending.is_empty() {
            return Some(false);
        }
        let flushed = self.apply(&pending, lock, read);
        // The list goes back for the next command's keys, so that noting allocates only when
        // a command changes more keys than any before it on this thread (up to a bound: one
        // large write does not keep its list's memory for good).
        pending.clear();
        if pending.capacity() <= 1024 {
            PENDING.with(|p| {
                let mut p = p.borrow_mut();
                if p.capacity() == 0 {
                    *p = pending;
                }
            });
        }
        flushed
    }

    /// [`Registry::apply_noted`] for the keys taken from the thread's list.
    fn apply(
        &self,
        pending: &[Pending],
        lock: impl for<'i> Fn(&'i Index) -> Option<parking_lot::RwLockWriteGuard<'i, Data>>,
        mut read: impl FnMut(&schema::Definition, &[u8]) -> (index::Extracted, u64),
    ) -> Option<bool> {
        let flushed = pending.iter().rposition(|p| matches!(p, Pending::Flushed));
        if flushed.is_some() {
            self.clear();
        }
        let after = flushed.map_or(0, |at| at + 1);
        // Inline vectors: a write to an indexed key allocates nothing here.
        let indexes: SmallVec<[Arc<Index>; 4]> = self.indexes.read().values().cloned().collect();
        let mut keys: SmallVec<[&Bytes; 16]> = SmallVec::new();
        for index in &indexes {
            let Some(mut data) = lock(index) else {
                // Applying a key twice changes nothing: every note goes back, the flush as
                // done (the indexes it dropped are gone).
                PENDING.with(|p| {
                    let mut p = p.borrow_mut();
                    let mut kept: Vec<Pending> = pending[after..].to_vec();
                    kept.append(&mut p);
                    *p = kept;
                });
                return None;
            };
            keys.clear();
            for p in &pending[after..] {
                if let Pending::Key(key) = p {
                    if data.def.covers(key) && !keys.contains(&key) {
                        keys.push(key);
                    }
                }
            }
            for key in &keys {
                let (extracted, expire_at) = read(&data.def, key);
                data.put(key, extracted, expire_at);
            }
        }
        Some(flushed.is_some())
    }

    /// `key` of database 0 as `def` indexes it, with its expiry (its shard locked while the
    /// value is read).
    fn read_stored(&self, def: &schema::Definition, key: &[u8]) -> (index::Extracted, u64) {
        let locked = self.store.lock_one(0, key);
        let entries = locked.entries_of(&[key]);
        match entries.first() {
            Some((_, entry)) => (index::extract(def, &entry.value), entry.expire_at()),
            None => (None, 0),
        }
    }

    /// Indexes the keys already stored, one shard at a time under the index's lock, on a thread
    /// of its own: queries are served meanwhile (FT.INFO shows `indexing` and the share done).
    /// `skip_indexed` (a new index): a key the write path indexed since the index was created
    /// already holds its latest value there; indexing it again would give it a new document id,
    /// so documents written right after FT.CREATE would come in another order than RediSearch's
    /// (which orders equal scores by id). FT.ALTER passes false: every key gains the new fields.
    pub fn scan(&self, index: Arc<Index>, skip_indexed: bool) {
        // The index is registered, so every later write reaches it through the write path: with
        // nothing stored there is nothing to scan, and FT.INFO shows it indexed at once, as
        // RediSearch's does.
        if self.store.db_len(0) == 0 {
            let mut data = index.data.write();
            data.indexing = false;
            data.scanned = 1.0;
            return;
        }
        index.data.write().indexing = true;
        index.data.write().scanned = 0.0;
        let store = self.store.clone();
        let spawned = std::thread::Builder::new()
            .name("ft-scan".into())
            .spawn(move || scan_all(&store, &index, skip_indexed));
        if let Err(e) = spawned {
            tracing::warn!("could not start an index scan thread: {e}");
        }
    }

    /// Every index (FT.ALTER's re-scan, the snapshot's rebuild).
    pub fn all(&self) -> Vec<Arc<Index>> {
        self.indexes.read().values().cloned().collect()
    }
}

/// The initial scan of `index` (see [`Registry::scan`]).
fn scan_all(store: &Store, index: &Index, skip_indexed: bool) {
    let shards = store.shard_count();
    for shard in 0..shards {
        let mut data = index.data.write();
        let found: Vec<(Bytes, index::Extracted, u64)> = {
            let locked = store.lock_shard(0, shard);
            let mut found = Vec::new();
            locked.for_each_in_shard(shard, |key, entry| {
                if data.def.covers(key) && !(skip_indexed && data.id_of(key).is_some()) {
                    let extracted = index::extract(&data.def, &entry.value);
                    if extracted.is_some() {
                        let key = Bytes::copy_from_slice(key);
                        found.push((key, extracted, entry.expire_at()));
                    }
                }
            });
            found
        };
        // Read under both locks, so the latest value: the write path cannot overtake it.
        for (key, extracted, expire_at) in found {
            data.put(&key, extracted, expire_at);
        }
        data.scanned = (shard + 1) as f64 / shards as f64;
    }
    let mut data = index.data.write();
    data.indexing = false;
    data.scanned = 1.0;
}
