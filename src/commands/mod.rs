//! Dispatch: one table lookup without allocating, then the checks every command shares (arity,
//! authentication, MULTI queueing), done once here, then the handler.

pub mod acl;
pub mod args;
pub mod bitmaps;
pub mod blocking_lists;
pub mod client;
pub mod cluster;
pub mod cluster_admin;
pub mod collection_scan;
pub mod command_info;
pub mod connection;
pub mod databases;
pub mod debug;
pub mod docs;
pub mod dump;
pub mod functions;
pub mod geo;
pub mod hash_expiry;
pub mod hashes;
pub mod hyperloglog;
pub mod info;
pub mod introspection;
pub mod json;
pub mod keys;
pub mod lcs;
pub mod lists;
pub mod log_replay;
pub mod migrate;
pub mod mpop;
pub mod ops;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod search;
pub mod search_gather;
pub mod server;
pub mod sets;
mod shared;
pub mod sort;
pub mod stm;
pub mod stm_context;
pub mod streams;
pub mod strings;
pub mod subcommands;
pub mod table;
pub mod tracking;
pub mod transactions;
pub mod typed;
pub mod zalgebra;
pub mod zrange;
pub mod zsets;

use crate::clients::ClientInfo;
use crate::protocol::Reply;
use crate::scripting::BusyCheck;
pub use crate::spec::{categories, keyspec, printable, wrong_arity};
use crate::store::blocking::WaitGuard;
use crate::store::eviction::OOM;
use crate::store::Locked;
use bytes::Bytes;
pub use shared::Shared;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
pub use table::{lookup, Command, COMMANDS};

/// What a handler returns: `Err` carries an error reply, so handlers can use `?` on argument parsing.
pub type CmdResult = Result<Reply, Reply>;

/// A command handler. `args[0]` is the command name, as in Redis's argv.
pub type Handler = fn(&mut Ctx<'_, '_>, &[&[u8]]) -> CmdResult;

/// The exact error texts shared by many commands.
pub use crate::spec::errors as err;

/// Per-connection state that commands read and change.
pub struct ConnState {
    pub info: Arc<ClientInfo>,
    pub resp3: bool,
    pub authenticated: bool,
    /// The ACL user the connection acts as: a snapshot, refreshed when the users change.
    pub user: Arc<crate::acl::User>,
    /// The users' generation the snapshot was taken at.
    pub user_generation: u64,
    /// Set by QUIT: the connection closes once this reply is written.
    pub close_after_reply: bool,
    /// Commands queued since MULTI (owned copies: the read buffer moves on).
    pub multi: Option<Vec<Vec<Bytes>>>,
    /// A command failed to queue: EXEC must answer EXECABORT.
    pub multi_failed: bool,
    /// WATCHed keys with the version each had when watched.
    pub watched: Vec<databases::Watched>,
    /// The selected database (SELECT); every key command works in it.
    pub db: usize,
    /// Set by a blocking command that found nothing: the connection loop waits, then reruns it.
    pub block: Option<BlockRequest>,
    /// This connection's place in the queues of the keys it is blocked on (kept across reruns).
    pub wait: Option<WaitGuard>,
    /// Pub/Sub subscriptions and the mailbox messages arrive in.
    pub subs: crate::pubsub::Subscriptions,
    /// In MONITOR mode: other clients' commands arrive in the mailbox.
    pub monitor: bool,
    /// CLIENT TRACKING mode and CLIENT CACHING flag.
    pub tracking: crate::events::tracking::ConnTracking,
    /// Set by dispatch when a script call is in progress: the command did not run; the
    /// connection waits for the script (or the BUSY threshold) and dispatches it again.
    pub script_wait: bool,
    /// With `script_wait`: the command is a script waiting for the engine, not for the end of
    /// every script call in progress.
    pub script_turn: bool,
    /// A script's `redis.call` is running: MONITOR shows its commands as `lua`'s.
    pub in_script: bool,
    /// CLIENT NO-TOUCH: this client's reads do not refresh keys' access clocks.
    pub no_touch: bool,
    /// CLIENT NO-EVICT (shown in CLIENT LIST; stmd never evicts clients).
    pub no_evict: bool,
    /// CLIENT REPLY ON/OFF/SKIP.
    pub replies: client::ReplyMode,
    /// Set by dispatch when CLIENT PAUSE holds the command: the connection loop waits for the
    /// pause to end, then runs it again.
    pub postponed: bool,
    /// A blocked XREAD/XREADGROUP's ids as resolved at its first attempt (`$`).
    pub blocked_read: Option<streams::BlockedRead>,
    /// Set by ASKING (cluster mode): the next command may RESTORE or DEL a key of a slot this
    /// node does not own (a slot migration's copy).
    pub asking: bool,
    /// Set by READONLY, cleared by READWRITE (cluster mode): on a replica, reads of its primary's
    /// slots are served here instead of redirected.
    pub readonly: bool,
    /// The link to the primary this node follows (Redis's master client): its commands are
    /// obeyed whatever the ACL, READONLY, MISCONF, OOM or CLIENT PAUSE would say.
    pub from_primary: bool,
    /// The replication stream's end after this client's last write (WAIT waits for it).
    pub repl_offset: u64,
    /// Set by SYNC/PSYNC: the connection becomes a replica's feed once the reply is written.
    pub replica_handoff: Option<crate::replication::master::Handoff>,
    /// What this connection said with REPLCONF (a replica about to SYNC).
    pub replconf: crate::replication::master::ReplConf,
}

/// What a blocking command asks of the connection loop when it has to wait.
#[derive(Debug)]
pub struct BlockRequest {
    /// When to give up; `None` waits forever.
    pub deadline: Option<std::time::Instant>,
    /// The reply on timeout.
    pub timeout_reply: Reply,
}

impl ConnState {
    pub fn new(info: Arc<ClientInfo>, authenticated: bool) -> Self {
        ConnState {
            info,
            resp3: false,
            authenticated,
            user: Arc::new(crate::acl::User::default_user()),
            user_generation: 0,
            close_after_reply: false,
            multi: None,
            multi_failed: false,
            watched: Vec::new(),
            db: 0,
            block: None,
            wait: None,
            subs: Default::default(),
            monitor: false,
            tracking: Default::default(),
            script_wait: false,
            script_turn: false,
            in_script: false,
            no_touch: false,
            no_evict: false,
            replies: Default::default(),
            postponed: false,
            blocked_read: None,
            asking: false,
            readonly: false,
            from_primary: false,
            repl_offset: 0,
            replica_handoff: None,
            replconf: Default::default(),
        }
    }
}

/// What a handler sees: the shared server, its connection, and (inside EXEC) the held locks of
/// the databases the transaction touches.
pub struct Ctx<'c, 's> {
    pub shared: &'s Shared,
    pub conn: &'c mut ConnState,
    held: Option<&'c mut databases::HeldLocks<'s>>,
}

/// The shards a command locked itself, or the whole-keyspace lock EXEC holds.
pub enum KeyLock<'g, 's> {
    Own(Locked<'s>),
    Held(&'g mut Locked<'s>),
}

impl<'s> Deref for KeyLock<'_, 's> {
    type Target = Locked<'s>;
    fn deref(&self) -> &Locked<'s> {
        match self {
            KeyLock::Own(l) => l,
            KeyLock::Held(l) => l,
        }
    }
}

impl<'s> DerefMut for KeyLock<'_, 's> {
    fn deref_mut(&mut self) -> &mut Locked<'s> {
        match self {
            KeyLock::Own(l) => l,
            KeyLock::Held(l) => l,
        }
    }
}

impl<'c, 's> Ctx<'c, 's> {
    pub fn new(shared: &'s Shared, conn: &'c mut ConnState) -> Self {
        Ctx {
            shared,
            conn,
            held: None,
        }
    }

    /// Locks the shards of `keys` in the selected database (or reuses EXEC's lock) for one
    /// atomic command.
    #[inline]
    pub fn lock<K: AsRef<[u8]>>(&mut self, keys: &[K]) -> KeyLock<'_, 's> {
        let (store, db, touch) = (&self.shared.store, self.conn.db, !self.conn.no_touch);
        let mut lock = match self.held_view(db) {
            Some(held) => KeyLock::Held(held),
            None if keys.len() == 1 => KeyLock::Own(store.lock_one(db, keys[0].as_ref())),
            None => KeyLock::Own(store.lock(db, keys)),
        };
        lock.touch = touch;
        lock
    }

    /// Locks the whole selected database (or reuses EXEC's lock).
    pub fn lock_all(&mut self) -> KeyLock<'_, 's> {
        let db = self.conn.db;
        self.lock_all_of(db)
    }

    /// Locks the whole of database `db` (or reuses EXEC's lock of it).
    pub fn lock_all_of(&mut self, db: usize) -> KeyLock<'_, 's> {
        let (store, touch) = (&self.shared.store, !self.conn.no_touch);
        let mut lock = match self.held_view(db) {
            Some(held) => KeyLock::Held(held),
            None => KeyLock::Own(store.lock_all(db)),
        };
        lock.touch = touch;
        lock
    }

    /// Locks `first` and `second` of two different databases at once (MOVE, SWAPDB), the lower
    /// database first and backing off, as every multi-database lock does (`store::in_order`).
    /// Inside EXEC the transaction's locks are reused.
    pub fn lock_two(
        &mut self,
        first: (usize, databases::Span<'_>),
        second: (usize, databases::Span<'_>),
    ) -> (KeyLock<'_, 's>, KeyLock<'_, 's>) {
        let store: &'s crate::store::Store = &self.shared.store;
        let acquire = |(db, span): &(usize, databases::Span<'_>)| match span {
            databases::Span::Keys(keys) => store.lock(*db, keys),
            databases::Span::All => store.lock_all(*db),
        };
        let touch = !self.conn.no_touch;
        let (mut a, mut b) = if let Some(held) = self.held.as_deref_mut() {
            held.reach(store, first.0);
            held.reach(store, second.0);
            let (a, b) = held.pair_mut(first.0, second.0);
            let a = a.map_or_else(|| KeyLock::Own(acquire(&first)), KeyLock::Held);
            let b = b.map_or_else(|| KeyLock::Own(acquire(&second)), KeyLock::Held);
            (a, b)
        } else {
            let try_acquire = |(db, span): &(usize, databases::Span<'_>)| match span {
                databases::Span::Keys(keys) => store.try_lock(*db, keys),
                databases::Span::All => store.try_lock_all(*db),
            };
            let swapped = first.0 > second.0;
            let order = if swapped {
                [&second, &first]
            } else {
                [&first, &second]
            };
            let mut both =
                crate::store::in_order(2, |n| acquire(order[n]), |n| try_acquire(order[n]));
            if swapped {
                both.swap(0, 1);
            }
            let mut both = both.into_iter().map(KeyLock::Own);
            match (both.next(), both.next()) {
                (Some(a), Some(b)) => (a, b),
                _ => unreachable!("in_order locks both"),
            }
        };
        a.touch = touch;
        b.touch = touch;
        (a, b)
    }

    /// The held view of database `db` (EXEC's or a script's), if this command runs under one;
    /// a script gets one for a database it selected.
    pub(crate) fn held_view(&mut self, db: usize) -> Option<&mut Locked<'s>> {
        let store = &self.shared.store;
        let held = self.held.as_deref_mut()?;
        held.reach(store, db);
        held.get_mut(db)
    }

    /// EXEC's lock of database `db`, when this command runs inside an EXEC that holds it.
    pub fn held_lock(&self, db: usize) -> Option<&Locked<'s>> {
        self.held.as_deref().and_then(|held| held.get(db))
    }

    /// True while running the commands of an EXEC or a script (blocking commands must not block
    /// then: they answer at once, as with an element or as timed out).
    pub fn in_exec(&self) -> bool {
        self.held.is_some()
    }
}

/// Runs one request.
pub fn dispatch(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Reply {
    let Some(cmd) = ctx.shared.commands.lookup(args[0]) else {
        return reject(ctx, None, args, unknown_command(args));
    };
    // CLIENT LIST's `cmd`: the last command found, even if refused or queued (as Redis).
    ctx.conn.info.published.set_last_command(
        crate::command_stats::CommandStats::index(cmd),
        // Only commands without keys can be containers: a GET copies nothing.
        if cmd.first_key == 0 { args } else { &[] },
    );
    if !cmd.arity_ok(args.len()) {
        return reject(ctx, Some(cmd), args, wrong_arity(cmd.name));
    }
    // A container's subcommand: known, with its own arity; its row's flags rule what follows.
    let effective = match cmd.resolve(args) {
        Ok(effective) => effective,
        // An unknown subcommand counts as no command at all (no commandstats line), as Redis.
        Err(text) => return reject(ctx, None, args, text),
    };
    if !ctx.conn.authenticated && !effective.has(table::NO_AUTH) {
        return reject(ctx, Some(cmd), args, err::NOAUTH.to_string());
    }
    if let Err(error) = acl_check(ctx, effective, args, "toplevel") {
        return reject(ctx, Some(cmd), args, error);
    }
    // Cluster mode: the keys' slot must be this node's (MOVED, CROSSSLOT, CLUSTERDOWN otherwise).
    let shared = ctx.shared;
    // Held until the command has run, so a slot migration's pause waits for it.
    let mut _inside_gate = None;
    if let Some(cluster) = &shared.cluster {
        use crate::cluster::routing::{admit, Admission, Request};
        let asking = std::mem::take(&mut ctx.conn.asking);
        let request = Request {
            cmd,
            effective,
            args,
            queued: ctx.conn.multi.as_deref(),
            names: &shared.commands,
            asking,
            from_primary: ctx.conn.from_primary,
            in_exec: ctx.in_exec(),
            readonly_without_writes: ctx.conn.readonly
                && !(cmd.name == "exec" && queued_write(ctx)),
        };
        match admit(cluster, request) {
            Admission::Run(inside) => _inside_gate = inside,
            // The slot is being handed over: the connection waits, then dispatches it again.
            Admission::Wait => {
                ctx.conn.postponed = true;
                return Reply::Nil;
            }
            Admission::Refuse(error) if cmd.name == "exec" => {
                // As Redis: a redirected EXEC discards the transaction and answers the redirection
                // itself (not EXECABORT), so the client can retry it on the right node.
                ctx.conn.multi = None;
                ctx.conn.multi_failed = false;
                ctx.conn.watched.clear();
                count_rejection(ctx, Some(cmd), args, &error);
                return Reply::Error(error.into());
            }
            Admission::Refuse(error) => return reject(ctx, Some(cmd), args, error),
        }
    }
    if !effective.has(table::ALLOW_BUSY) && ctx.shared.scripting.run.is_active() {
        let threshold = ctx.shared.config.read().busy_reply_threshold;
        match ctx.shared.scripting.run.check(threshold) {
            BusyCheck::Free => {}
            // The primary's command is never refused BUSY: it waits for the script's end (or,
            // itself a script, for the engine), as Redis holds its master's stream meanwhile.
            _ if ctx.conn.from_primary => {
                ctx.conn.script_wait = true;
                ctx.conn.script_turn = cmd.has(table::RUNS_SCRIPT);
                return Reply::Nil;
            }
            BusyCheck::Busy(text) => return reject(ctx, Some(cmd), args, text.to_string()),
            // Another script (EVAL, FCALL…) queues behind it on the engine lock, off the tokio
            // worker, instead of every waiting script being woken at each script's end.
            BusyCheck::Wait if cmd.has(table::RUNS_SCRIPT) => {}
            // Nothing has happened yet: the connection waits, then dispatches it again.
            BusyCheck::Wait => {
                ctx.conn.script_wait = true;
                return Reply::Nil;
            }
        }
    }
    // Named as Redis names it: a subcommand by its full name (`client|list`); a refused EXEC
    // answers EXECABORT (`reject`).
    if !ctx.conn.resp3 && ctx.conn.subs.any() && !pubsub::allowed_while_subscribed(cmd.name) {
        let error = pubsub::not_allowed_while_subscribed(effective.name);
        return reject(ctx, Some(cmd), args, error);
    }
    let obey = ctx.conn.from_primary;
    if !obey && ctx.shared.store.pause.freezes_keyspace() && client::paused(ctx, effective) {
        ctx.conn.postponed = true;
        return Reply::Nil; // not sent: the command runs again when the pause ends
    }
    if !obey
        && ctx.shared.snapshots.refuses_writes(&ctx.shared.config)
        && writes_or_ping(ctx, cmd, effective)
    {
        return reject(ctx, Some(cmd), args, crate::snapshot::MISCONF.to_string());
    }
    // A primary without enough good replicas (`min-replicas-to-write`), then a replica, refuse
    // their clients' writes (an EXEC with a queued write too), after MISCONF as in Redis.
    let replication = &ctx.shared.replication;
    let write = || effective.has(table::WRITE) || (cmd.name == "exec" && queued_write(ctx));
    if !obey
        && replication
            .master
            .refuses_writes(replication.replica.following())
        && write()
    {
        let refusal = crate::replication::master::NOREPLICAS.to_string();
        return reject(ctx, Some(cmd), args, refusal);
    }
    if !obey && replication.replica.refuses_writes(&ctx.shared.config) && write() {
        let refusal = crate::replication::replica::READONLY.to_string();
        return reject(ctx, Some(cmd), args, refusal);
    }
    // A stale replica (`replica-serve-stale-data no`) serves only the commands flagged `stale`
    // (INFO, REPLICAOF, CONFIG…), and EXEC only when all it queued are.
    if !obey
        && replication.replica.is_stale(&ctx.shared.config)
        && (!effective.has(table::STALE)
            || (cmd.name == "exec" && queued_any(ctx, |c| !c.has(table::STALE))))
    {
        let refusal = crate::replication::replica::MASTERDOWN.to_string();
        return reject(ctx, Some(cmd), args, refusal);
    }
    if ctx.conn.multi.is_some() && !cmd.has(table::NOT_QUEUED) {
        if effective.has(table::NO_MULTI) {
            return reject(ctx, Some(cmd), args, err::NOT_IN_MULTI.to_string());
        }
        // Queueing itself takes memory: over the limit, nothing is queued (as Redis).
        if !obey && !ctx.shared.store.make_room() {
            return reject(ctx, Some(cmd), args, OOM.to_string());
        }
        return transactions::queue(ctx, args);
    }
    if effective.has(table::DENYOOM) && !obey && !ctx.shared.store.make_room() {
        let refused = reject(ctx, Some(cmd), args, OOM.to_string());
        // What the failed eviction did remove is still announced.
        if ctx
            .shared
            .store
            .listening
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            publish_events(ctx, cmd);
        }
        return refused;
    }
    // A script call while another script holds the engine waits for its turn in its connection,
    // without blocking a thread (EXEC's own scripts take the engine under EXEC's locks instead).
    if cmd.has(table::RUNS_SCRIPT)
        && ctx.held.is_none()
        && ctx.shared.scripting.engine_taken()
        && !ctx.shared.scripting.run.brief_holder()
    {
        ctx.conn.script_wait = true;
        ctx.conn.script_turn = true;
        return Reply::Nil;
    }
    run(ctx, cmd, args)
}

/// What Redis refuses after a failed background save: a write, an EXEC with a queued write, and
/// PING (so that a health check notices).
fn writes_or_ping(ctx: &Ctx<'_, '_>, cmd: &Command, effective: &Command) -> bool {
    effective.has(table::WRITE) || cmd.name == "ping" || (cmd.name == "exec" && queued_write(ctx))
}

/// Publishes the keyspace events and tracking invalidations of what `cmd` changed (called only
/// while the store notes changes), and brings the search indexes up to date with it unless the
/// command runs inside EXEC or a script, whose shard locks are still held: the EXEC or script
/// command does it when it ends (`crate::search`'s lock order).
fn publish_events(ctx: &Ctx<'_, '_>, cmd: &Command) {
    let origin = crate::events::Origin {
        cmd: Some(cmd),
        writer: ctx.conn.info.id,
    };
    ctx.shared.events.publish(ctx.shared, origin);
    if ctx.held.is_none() && ctx.shared.search.apply_pending() {
        ctx.shared.events.set_indexing(ctx.shared.search.any());
    }
}

/// True when the transaction queued a write (what EXEC would run).
pub(crate) fn queued_write(ctx: &Ctx<'_, '_>) -> bool {
    queued_any(ctx, |c| c.has(table::WRITE))
}

/// True when some command queued in MULTI (its subcommand's row for a container) is `such`.
fn queued_any(ctx: &Ctx<'_, '_>, such: impl Fn(&Command) -> bool) -> bool {
    ctx.conn.multi.iter().flatten().any(|queued| {
        ctx.shared
            .commands
            .lookup(&queued[0])
            .map(|c| match queued.get(1) {
                Some(sub) if !c.subcommands.is_empty() => c.subcommand(sub).unwrap_or(c),
                _ => c,
            })
            .is_some_and(&such)
    })
}

/// Takes a fresh snapshot of the connection's user when the users changed since the last one.
#[inline]
pub fn refresh_user(ctx: &mut Ctx<'_, '_>) {
    let generation = ctx.shared.acl.generation();
    if ctx.conn.user_generation != generation {
        if let Some(user) = ctx.shared.acl.get(&ctx.conn.user.name) {
            ctx.conn.user = user;
        }
        ctx.conn.user_generation = generation;
    }
}

/// The ACL check of one command (`cmd` is the subcommand's row for a container): `Err` is the
/// NOPERM error text, counted in INFO and recorded in the ACL log under `context` (`toplevel`,
/// `multi`, `lua`).
#[inline]
pub fn acl_check(
    ctx: &mut Ctx<'_, '_>,
    cmd: &Command,
    args: &[&[u8]],
    context: &'static str,
) -> Result<(), String> {
    acl_verdict(ctx, cmd, args, |ctx, refusal, keys| {
        let context = if context == "toplevel" && ctx.conn.multi.is_some() {
            "multi"
        } else {
            context
        };
        let user = ctx.conn.user.clone();
        let object = match refusal.denied {
            crate::acl::Denied::Command | crate::acl::Denied::Auth => cmd.name.to_string(),
            _ => String::from_utf8_lossy(keys.refused(refusal, args)).into_owned(),
        };
        acl_log(ctx, refusal.denied, context, object, user.name_str());
        Err(format!(
            "NOPERM {}",
            crate::acl::message(refusal, &user, cmd, args, keys, false)
        ))
    })
}

/// `redis.acl_check_cmd`: whether the connection's user may run `cmd` with `args` (a question,
/// so nothing is counted or logged).
pub fn acl_permits(ctx: &mut Ctx<'_, '_>, cmd: &Command, args: &[&[u8]]) -> bool {
    acl_verdict(ctx, cmd, args, |_, _, _| Err(())).is_ok()
}

/// The ACL check itself: Ok when the user may run it, else what `refused` makes of the refusal
/// and the keys the command names.
fn acl_verdict<E>(
    ctx: &mut Ctx<'_, '_>,
    cmd: &Command,
    args: &[&[u8]],
    refused: impl FnOnce(&mut Ctx<'_, '_>, crate::acl::Refusal, crate::acl::Keys<'_>) -> Result<(), E>,
) -> Result<(), E> {
    refresh_user(ctx);
    if ctx.conn.user.unrestricted || !ctx.conn.authenticated || ctx.conn.from_primary {
        return Ok(());
    }
    let computed = cmd.acl_keys.map(|find| find(ctx, args));
    let keys = computed
        .as_deref()
        .map_or(crate::acl::Keys::Specs, crate::acl::Keys::Computed);
    match crate::acl::check(&ctx.conn.user, cmd, args, keys) {
        Ok(()) => Ok(()),
        Err(refusal) => refused(ctx, refusal, keys),
    }
}

/// For a command that filters the keys it finds while running (STM.RECENT): true when the
/// connection's user may access `key` with `need` ([`crate::acl::rules::READ`], `WRITE`).
pub fn acl_key_allowed(ctx: &Ctx<'_, '_>, key: &[u8], need: u8) -> bool {
    !ctx.conn.authenticated || crate::acl::may_access_key(&ctx.conn.user, key, need)
}

/// Counts a refusal (INFO stats) and records it in the ACL log.
pub fn acl_log(
    ctx: &Ctx<'_, '_>,
    denied: crate::acl::Denied,
    context: &'static str,
    object: String,
    username: String,
) {
    ctx.shared.acl.count(denied);
    let max_len = ctx.shared.config.read().acllog_max_len;
    let client_info = ctx.conn.info.describe();
    ctx.shared.acl.log.lock().add(
        denied.reason(),
        context,
        object,
        username,
        client_info,
        max_len,
    );
}

/// A command refused before running. Inside MULTI it dooms the transaction; a refused EXEC
/// discards it at once with `EXECABORT`, as Redis does.
fn reject(ctx: &mut Ctx<'_, '_>, cmd: Option<&Command>, args: &[&[u8]], error: String) -> Reply {
    count_rejection(ctx, cmd, args, &error);
    // A refused EXEC (a wrong arity, NOAUTH, NOPERM…) answers EXECABORT and drops the
    // transaction and the watched keys even outside MULTI, as Redis's `rejectCommand`.
    let exec = cmd.is_some_and(|c| c.name == "exec");
    if ctx.conn.multi.is_none() && !exec {
        return Reply::Error(error.into());
    }
    if exec {
        ctx.conn.multi = None;
        ctx.conn.multi_failed = false;
        ctx.conn.watched.clear();
        let reason = error.strip_prefix("ERR ").unwrap_or(&error);
        return Reply::Error(
            format!("EXECABORT Transaction discarded because of: {reason}").into(),
        );
    }
    ctx.conn.multi_failed = true;
    Reply::Error(error.into())
}

/// Counts an error reply for a command refused before it ran (INFO errorstats, `rejected_calls`).
fn count_rejection(ctx: &Ctx<'_, '_>, cmd: Option<&Command>, args: &[&[u8]], error: &str) {
    crate::metrics::Stats::add(&ctx.shared.stats.total_error_replies, 1);
    ctx.shared.command_stats.rejected(cmd, args, error);
}

/// Calls the handler of an already checked command, timing it for the SLOWLOG and the metrics,
/// and shows it to monitors.
pub fn run(ctx: &mut Ctx<'_, '_>, cmd: &'static Command, args: &[&[u8]]) -> Reply {
    // A blocked command is rerun on every wake-up; monitors saw it the first time.
    let rerun = ctx.conn.wait.is_some();
    // The subcommand's row for a container (its flags and keys), else the command's.
    let effective = cmd.effective(args);
    if ctx.conn.tracking.mode.is_some() {
        tracking::before_command(ctx, effective, args);
    }
    let time = crate::clock::CommandTime::start();
    // MONITOR: admin commands are never shown; scripts (SKIP_MONITOR) before the commands they
    // run, as Redis feeds them; every other command once it ran (in the database it left selected).
    let monitored = ctx.shared.monitors.active() && !rerun && !effective.has(table::ADMIN);
    if monitored && effective.has(table::SKIP_MONITOR) {
        feed_monitors(ctx, cmd, args);
    }
    // Checked when the command runs, not when MULTI queues it: a SELECT earlier in the same
    // transaction changes the database the command runs in.
    // Replication: a write (or PUBLISH) goes into the stream if it changed something. Scripts
    // and EXEC are not sent themselves: the commands they run are.
    let feed = &ctx.shared.replication.feed;
    let replicating = feed.active();
    // A replica's applied commands go into its own stream only for its append-only log (no
    // replica follows a replica).
    let propagating = replicating
        && (!ctx.conn.from_primary || ctx.shared.aof.on())
        && effective.has(table::WRITE | table::MAY_REPLICATE | table::REWRITES_ON_READ)
        && !cmd.has(table::RUNS_SCRIPT);
    if propagating {
        let writes = effective.has(table::WRITE | table::REWRITES_ON_READ);
        let db = writes.then_some(ctx.conn.db);
        crate::replication::feed::arm(cmd.name, db, args, !writes);
    }
    let outcome = if ctx.conn.db != 0 && cmd.has(table::DB_ZERO_ONLY) {
        Err(databases::db_zero_only(ctx.conn.db))
    } else if effective.has(table::CHANGES_CLUSTER) && ctx.in_exec() && ctx.shared.cluster.is_some()
    {
        Err(Reply::error(format!(
            "ERR {} cannot run inside MULTI/EXEC or a script in stmd (it waits for the cluster configuration)",
            effective.name.replace('|', " ").to_uppercase()
        )))
    } else {
        (effective.handler)(ctx, args)
    };
    if propagating {
        propagate_after(ctx);
    }
    if replicating {
        // WAIT's target: the stream as far as this client's last write.
        if let Some(end) = crate::replication::feed::take_last_end() {
            ctx.conn.repl_offset = end;
        }
    }
    let reply = match outcome {
        Ok(reply) | Err(reply) => reply,
    };
    // Keyspace events and tracking invalidations: one load when nobody listens.
    if ctx
        .shared
        .store
        .listening
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        publish_events(ctx, cmd);
    }
    if ctx.conn.tracking.caching {
        tracking::after_command(ctx, cmd);
    }
    let nanos = time.elapsed_ns();
    let micros = nanos / 1000;
    let shared = ctx.shared;
    // Per-thread counters: no cache line shared with other cores is written here.
    shared.command_stats.observe(cmd, args, nanos, &reply);
    shared.latency.observe(
        if effective.has(table::FAST) {
            "fast-command"
        } else {
            "command"
        },
        micros,
    );
    if reply.is_error() {
        crate::metrics::Stats::add(&shared.stats.total_error_replies, 1);
    }
    // EXEC (`skip_slowlog`) is not logged itself: the commands it ran are, one by one (as in Redis).
    if shared.slowlog.is_slow(micros) && !effective.has(table::SKIP_SLOWLOG) {
        let info = &ctx.conn.info;
        let name = info.name.lock().clone().unwrap_or_default();
        shared
            .slowlog
            .record(&redacted(cmd, args), micros, info.addr.to_string(), name);
    }
    if monitored && !effective.has(table::SKIP_MONITOR) {
        feed_monitors(ctx, cmd, args);
    }
    reply
}

fn feed_monitors(ctx: &Ctx<'_, '_>, cmd: &Command, args: &[&[u8]]) {
    let client = (!ctx.conn.in_script).then_some(&ctx.conn.info.addr);
    let shown = redacted(cmd, args);
    ctx.shared.monitors.feed(ctx.conn.db, client, &shown);
}

/// The arguments as the SLOWLOG and MONITOR show them: passwords replaced by `(redacted)`.
fn redacted<'a>(cmd: &Command, args: &[&'a [u8]]) -> smallvec::SmallVec<[&'a [u8]; 16]> {
    const HIDDEN: &[u8] = b"(redacted)";
    let mut shown: smallvec::SmallVec<[&[u8]; 16]> = args.iter().copied().collect();
    match cmd.name {
        "auth" => shown[1..].iter_mut().for_each(|a| *a = HIDDEN),
        "hello" => {
            if let Some(at) = shown.iter().position(|a| a.eq_ignore_ascii_case(b"auth")) {
                shown
                    .iter_mut()
                    .skip(at + 1)
                    .take(2)
                    .for_each(|a| *a = HIDDEN);
            }
        }
        _ => {}
    }
    shown
}

/// Redis's text for an unknown command, quoting the start of its arguments.
fn unknown_command(args: &[&[u8]]) -> String {
    let mut text = format!(
        "ERR unknown command '{}', with args beginning with: ",
        printable(args[0], 128)
    );
    let mut budget = 128usize;
    for arg in &args[1..] {
        if budget == 0 {
            break;
        }
        let shown = printable(arg, budget);
        budget = budget.saturating_sub(shown.len());
        text.push_str(&format!("'{shown}' "));
    }
    text
}

/// `ERR unknown subcommand 'x'. Try CLIENT HELP.`
pub fn unknown_subcommand(sub: &[u8], container: &str) -> Reply {
    Reply::Error(
        format!(
            "ERR unknown subcommand '{}'. Try {} HELP.",
            printable(sub, 128),
            container
        )
        .into(),
    )
}

/// After a write command ran: if it wrote and its own lock did not already put it in the stream
/// (it ran under EXEC's or a script's locks, or wrote no key), it goes in now.
fn propagate_after(ctx: &mut Ctx<'_, '_>) {
    if crate::replication::feed::uncommitted() {
        let db = ctx.conn.db;
        let store = &ctx.shared.store;
        let feed_of = &ctx.shared.replication.feed;
        match ctx.held_view(db) {
            Some(view) => crate::replication::feed::commit(feed_of, |key| view.expiry_of(key)),
            None => crate::replication::feed::commit(feed_of, |key| {
                store.lock_one(db, key).expiry_of(key)
            }),
        }
    }
    crate::replication::feed::disarm();
}
