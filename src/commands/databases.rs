//! Numbered databases: SELECT, MOVE, SWAPDB, FLUSHDB, FLUSHALL, DBSIZE, and what EXEC and WATCH
//! need to work across them.
//!
//! Lock order, for everything that locks more than one database: ascending database index, and
//! inside one database ascending shard index. EXEC locks every database its queue can touch before
//! running it, in that order, so transactions stay atomic and deadlock-free.

use super::args::{int, is};
use super::{err, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::replication::feed::Feed;
use crate::scripting::EngineGuard;
use crate::store::{swap, Keyspace, Locked, Store};
use bytes::Bytes;
use smallvec::SmallVec;
use std::sync::atomic::Ordering;

/// What part of a database a two-database command locks.
pub enum Span<'k> {
    Keys(&'k [&'k [u8]]),
    All,
}

/// A WATCHed key: where it was and what it looked like when watched.
#[derive(Debug)]
pub struct Watched {
    pub db: usize,
    pub key: Bytes,
    /// The entry's version; None when the key did not exist.
    pub version: Option<u64>,
    /// The database's swap count then (SWAPDB changes contents without changing versions).
    pub swaps: u64,
}

impl Watched {
    /// True when the key was written (or swapped away) since it was watched, as Redis's
    /// "dirty CAS": a swap counts only if the key exists on either side of it.
    fn changed(&self, locked: &mut Locked<'_>) -> bool {
        let now = locked.version(&self.key);
        let swapped = locked.keyspace().swaps.load(Ordering::Relaxed) != self.swaps;
        now != self.version || (swapped && (now.is_some() || self.version.is_some()))
    }
}

/// The locks an EXEC or a script holds: a view of each database it touches, shards taken as
/// reached (the engine's holder may: `store::held`), or EXEC's views when a script runs in one.
pub struct HeldLocks<'s> {
    /// The stream the transaction's writes go into together.
    feed: &'s Feed,
    views: SmallVec<[Locked<'s>; 2]>,
    /// The script engine, taken by EXEC before its views (the engine's holder may wait for any
    /// shard, so no one may wait for the engine holding shards) and lent to the scripts and
    /// SCRIPT/FUNCTION commands of its queue. Declared after `views`: released last, so the
    /// next script finds both free.
    pub engine: Option<EngineGuard<'s>>,
}

impl Drop for HeldLocks<'_> {
    /// The transaction's writes go into the replication stream as one block, before its locks
    /// are released.
    fn drop(&mut self) {
        crate::replication::feed::end_batch(self.feed);
    }
}

impl<'s> HeldLocks<'s> {
    pub fn get(&self, db: usize) -> Option<&Locked<'s>> {
        self.views.iter().find(|l| l.db() == db)
    }

    pub fn get_mut(&mut self, db: usize) -> Option<&mut Locked<'s>> {
        self.views.iter_mut().find(|l| l.db() == db)
    }

    /// The locks of two different databases at once.
    pub fn pair_mut(
        &mut self,
        a: usize,
        b: usize,
    ) -> (Option<&mut Locked<'s>>, Option<&mut Locked<'s>>) {
        let (mut first, mut second) = (None, None);
        for locked in self.views.iter_mut() {
            if locked.db() == a && first.is_none() {
                first = Some(locked);
            } else if locked.db() == b && second.is_none() {
                second = Some(locked);
            }
        }
        (first, second)
    }

    /// EXEC's views of the databases `dbs` (sorted, no repeats), shards taken as reached, and
    /// of any other it selects; `engine` (which allows that) is held until they are released.
    pub fn for_exec(
        store: &'s Store,
        feed: &'s Feed,
        dbs: &[usize],
        engine: EngineGuard<'s>,
    ) -> Self {
        crate::replication::feed::begin_batch();
        HeldLocks {
            feed,
            views: dbs.iter().map(|&db| store.lock_as_needed(db)).collect(),
            engine: Some(engine),
        }
    }

    /// A script's view of database `db`, holding the shards it reaches (its caller holds the
    /// engine).
    pub fn as_needed(store: &'s Store, feed: &'s Feed, db: usize) -> Self {
        crate::replication::feed::begin_batch();
        HeldLocks {
            feed,
            views: smallvec::smallvec![store.lock_as_needed(db)],
            engine: None,
        }
    }

    /// Gives the engine's holder (a script, an EXEC) a view of database `db` if it has none yet
    /// (a database it selected), so what it does there is atomic too: it is the one locker
    /// allowed to take shards as it reaches them.
    pub fn reach(&mut self, store: &'s Store, db: usize) {
        if self.get(db).is_none() {
            self.views.push(store.lock_as_needed(db));
        }
    }

    /// True when any watched key changed since WATCH.
    pub fn any_changed(&mut self, watched: &[Watched]) -> bool {
        watched
            .iter()
            .any(|w| self.get_mut(w.db).is_some_and(|l| w.changed(l)))
    }
}

/// The databases EXEC takes a view of before running `queue`: the selected one, those of watched
/// keys, and those SELECT, MOVE, SWAPDB and FLUSHALL in the queue name (sorted, no repeats).
pub fn touched_by_exec(
    ctx: &Ctx<'_, '_>,
    queue: &[Vec<Bytes>],
    watched: &[Watched],
) -> SmallVec<[usize; 4]> {
    let store = &ctx.shared.store;
    let count = store.databases();
    // Parsed as the commands themselves parse it, so EXEC locks exactly what they will use.
    let index = |arg: Option<&Bytes>| {
        arg.and_then(|a| usize::try_from(int(a).ok()?).ok())
            .filter(|&db| db < count)
    };
    let mut dbs: SmallVec<[usize; 4]> = SmallVec::new();
    dbs.push(ctx.conn.db);
    dbs.extend(watched.iter().map(|w| w.db));
    for command in queue {
        let Some(cmd) = ctx.shared.commands.lookup(&command[0]) else {
            continue;
        };
        match cmd.name {
            "select" => dbs.extend(index(command.get(1))),
            "move" => dbs.extend(index(command.get(2))),
            // COPY … DB n: the target database (any DB word after the two keys).
            "copy" => dbs.extend(
                command
                    .iter()
                    .skip(3)
                    .position(|a| is(a, "DB"))
                    .and_then(|at| index(command.get(at + 4))),
            ),
            "swapdb" => dbs.extend([1, 2].into_iter().filter_map(|i| index(command.get(i)))),
            "flushall" => dbs.extend(store.existing_dbs().map(|(db, _)| db)),
            _ => {}
        }
    }
    dbs.sort_unstable();
    dbs.dedup();
    dbs
}

/// The error an `STM.*` command gets outside database 0.
pub fn db_zero_only(db: usize) -> Reply {
    Reply::Error(
        format!(
            "ERR STM commands work in database 0 only (this connection selected database {db}); \
             SELECT 0 first"
        )
        .into(),
    )
}

/// A database index as SELECT and MOVE read it, with Redis's errors.
fn db_index(ctx: &Ctx<'_, '_>, arg: &[u8]) -> Result<usize, Reply> {
    let n = int(arg)?;
    if i32::try_from(n).is_err() {
        return Err(Reply::error(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ));
    }
    usize::try_from(n)
        .ok()
        .filter(|&db| db < ctx.shared.store.databases())
        .ok_or_else(|| Reply::error("ERR DB index is out of range"))
}

pub fn select(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Redis Cluster has database 0 only (the integer is checked first, as Redis does).
    if ctx.shared.cluster.is_some() && int(args[1])? != 0 {
        return Err(Reply::error("ERR SELECT is not allowed in cluster mode"));
    }
    let db = db_index(ctx, args[1])?;
    set_db(ctx, db);
    Ok(Reply::OK)
}

/// Selects `db` for the connection (SELECT, RESET) and shows it in CLIENT LIST.
pub fn set_db(ctx: &mut Ctx, db: usize) {
    ctx.conn.db = db;
    ctx.conn.info.db.store(db as u64, Ordering::Relaxed);
}

/// MOVE key db: moves a key, with its time to live, to another database, unless it exists there.
pub fn move_key(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if ctx.shared.cluster.is_some() {
        return Err(Reply::error("ERR MOVE is not allowed in cluster mode"));
    }
    let key = args[1];
    let (from, to) = (ctx.conn.db, db_index(ctx, args[2])?);
    if from == to {
        return Err(Reply::error(
            "ERR source and destination objects are the same",
        ));
    }
    let keys = [key];
    let (mut source, mut target) = ctx.lock_two((from, Span::Keys(&keys)), (to, Span::Keys(&keys)));
    if !source.contains(key) || target.contains(key) {
        return Ok(Reply::Int(0));
    }
    match source.remove(key) {
        Some(entry) => {
            let (at, outgrown) = (entry.expire_at(), entry.outgrown());
            target.set(key, entry.value, at);
            if outgrown {
                target.mark_outgrown(key); // Redis moves the object: its encoding stays
            }
            // Redis's events: `move_from` in the source database, `move_to` in the target.
            source.notify(crate::events::class::GENERIC, "move_from", key);
            target.notify(crate::events::class::GENERIC, "move_to", key);
            Ok(Reply::Int(1))
        }
        None => Ok(Reply::Int(0)),
    }
}

/// SWAPDB index1 index2.
pub fn swapdb(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if ctx.shared.cluster.is_some() {
        return Err(Reply::error("ERR SWAPDB is not allowed in cluster mode"));
    }
    // Redis reads each index as a C int: beyond one, the index is invalid (not out of range).
    let parse = |arg: &[u8], which: &str| {
        int(arg)
            .ok()
            .filter(|n| i32::try_from(*n).is_ok())
            .ok_or_else(|| Reply::Error(format!("ERR invalid {which} DB index").into()))
    };
    let (a, b) = (parse(args[1], "first")?, parse(args[2], "second")?);
    let count = ctx.shared.store.databases();
    let valid = |n: i64| usize::try_from(n).ok().filter(|&db| db < count);
    let (Some(a), Some(b)) = (valid(a), valid(b)) else {
        return Err(Reply::error("ERR DB index is out of range"));
    };
    if a == b {
        return Ok(Reply::OK);
    }
    let store = &ctx.shared.store;
    if store.existing(a).is_none() && store.existing(b).is_none() && !ctx.in_exec() {
        return Ok(Reply::OK); // two never-used databases: both empty, nothing to swap
    }
    let (mut first, mut second) = ctx.lock_two((a, Span::All), (b, Span::All));
    swap::swap_databases(&mut first, &mut second)
        .map_err(|_| Reply::error("ERR SWAPDB could not lock both databases"))?;
    Ok(Reply::OK)
}

/// `[ASYNC | SYNC]`, the only argument FLUSHDB and FLUSHALL take: whether the flush frees the
/// keys' memory on the lazyfree thread (ASYNC) or before answering.
fn flush_is_async(args: &[&[u8]]) -> Result<bool, Reply> {
    match args {
        [_] => Ok(false),
        [_, mode] if is(mode, "ASYNC") => Ok(true),
        [_, mode] if is(mode, "SYNC") => Ok(false),
        _ => Err(Reply::error(err::SYNTAX)),
    }
}

fn flush(locked: &mut Locked, lazily: bool) {
    if lazily {
        locked.clear_lazily();
    } else {
        locked.clear();
    }
}

pub fn flushdb(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let lazily = flush_is_async(args)?;
    if ctx.shared.store.existing(ctx.conn.db).is_some() {
        flush(&mut ctx.lock_all(), lazily);
    }
    Ok(Reply::OK)
}

pub fn flushall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let lazily = flush_is_async(args)?;
    let dbs: SmallVec<[usize; 16]> = ctx.shared.store.existing_dbs().map(|(db, _)| db).collect();
    if ctx.in_exec() {
        // EXEC holds every database already: the flush is atomic under its locks.
        for db in dbs {
            flush(&mut ctx.lock_all_of(db), lazily);
        }
        return Ok(Reply::OK);
    }
    // Every database is locked (in ascending order, as every multi-database lock) before any is
    // emptied, so no client sees database 0 empty while database 1 is still full.
    for locked in ctx.shared.store.lock_dbs(&dbs).iter_mut() {
        flush(locked, lazily);
    }
    Ok(Reply::OK)
}

pub fn dbsize(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.in_exec() {
        // EXEC holds the database's shards: count through its lock (a read lock would deadlock).
        return Ok(Reply::Int(ctx.lock_all().stored_keys() as i64));
    }
    Ok(Reply::Int(ctx.shared.store.db_len(ctx.conn.db) as i64))
}

/// A database's figures for INFO keyspace. Inside EXEC a database the transaction holds is
/// counted through its lock: taking read locks would deadlock on it.
struct DbFigures {
    keys: usize,
    /// Keys with an expiry, and their average TTL (ms).
    expires: usize,
    avg_ttl: u64,
    /// Hashes with field TTLs (Redis 7.4's `subexpiry`).
    subexpiry: usize,
}

fn db_figures(ctx: &Ctx, db: usize, space: &Keyspace, now: u64) -> DbFigures {
    let Some(held) = ctx.held_lock(db) else {
        let (expires, avg_ttl, subexpiry) = space.expiry_stats(now);
        return DbFigures {
            keys: space.len(),
            expires,
            avg_ttl,
            subexpiry,
        };
    };
    let (mut expires, mut total, mut subexpiry) = (0usize, 0u128, 0usize);
    held.for_each(|_, entry| {
        if matches!(&entry.value, crate::store::Value::Hash(h) if h.has_ttls()) {
            subexpiry += 1;
        }
        if entry.expire_at() != 0 {
            expires += 1;
            total += u128::from(entry.expire_at().saturating_sub(now));
        }
    });
    let avg_ttl = if expires == 0 {
        0
    } else {
        (total / expires as u128) as u64
    };
    DbFigures {
        keys: held.stored_keys(),
        expires,
        avg_ttl,
        subexpiry,
    }
}

/// Keys in every database (MEMORY STATS), safe inside EXEC as [`db_figures`].
pub fn total_keys(ctx: &Ctx) -> usize {
    ctx.shared
        .store
        .existing_dbs()
        .map(|(db, space)| match ctx.held_lock(db) {
            Some(held) => held.stored_keys(),
            None => space.len(),
        })
        .sum()
}

/// INFO's keyspace section: one line per non-empty database.
pub fn keyspace_info(ctx: &Ctx, line: &mut dyn FnMut(&str, &dyn std::fmt::Display)) {
    let now = crate::store::now_ms();
    for (db, space) in ctx.shared.store.existing_dbs() {
        let f = db_figures(ctx, db, space, now);
        if f.keys == 0 {
            continue;
        }
        line(
            &format!("db{db}"),
            &format!(
                "keys={},expires={},avg_ttl={},subexpiry={}",
                f.keys, f.expires, f.avg_ttl, f.subexpiry
            ),
        );
    }
}
