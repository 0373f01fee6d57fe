//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, and the call path FCALL shares. A script runs
//! holding the shards it reaches (under EXEC's views and engine, when it is queued in a
//! transaction) while dispatch parks other commands, so no other client sees half of it; its
//! `redis.call`s go through the same checks Redis makes for scripts, then the normal handlers.

use super::databases::HeldLocks;
use super::{table, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::scripting::{BusyCheck, EngineGuard, Loaded, Request, ScriptFlags};
use crate::store::eviction::OOM;
use bytes::Bytes;
use std::time::Duration;

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// What a running script may do, fixed when it starts.
struct Permissions {
    read_only: bool,
    /// Over maxmemory when the script started (Redis judges OOM once, before the script).
    out_of_memory: bool,
    /// Cluster mode: the slot the script's keys are in (its declared keys', else its first
    /// `redis.call`'s), unless the script has `allow-cross-slot-keys`.
    slot: std::cell::Cell<Option<u16>>,
    cross_slot: bool,
}

pub fn eval(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let numkeys = super::args::int(args[2])?;
    run_script(ctx, args, Ok(numkeys), false, |engine| {
        engine.load(args[1], true)
    })
}

pub fn evalsha(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let numkeys = super::args::int(args[2])?;
    run_script(ctx, args, Ok(numkeys), false, |engine| {
        engine.lookup(args[1]).ok_or_else(|| NOSCRIPT.to_string())
    })
}

/// A script call's arguments: its keys, then the others.
type KeysAndArgs<'a> = (&'a [&'a [u8]], &'a [&'a [u8]]);

/// The keys and the other arguments of a script call, split at `numkeys`.
fn split_keys<'a>(args: &'a [&'a [u8]], numkeys: i64) -> Result<KeysAndArgs<'a>, Reply> {
    if numkeys > (args.len() - 3) as i64 {
        return Err(Reply::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if numkeys < 0 {
        return Err(Reply::error("ERR Number of keys can't be negative"));
    }
    Ok(args[3..].split_at(numkeys as usize))
}

/// Runs a script or function. `args`: name, script, sha or function, numkeys, keys…, args…
/// `numkeys` as the caller parsed it: EVAL and EVALSHA refuse a bad one before looking at the
/// script; FCALL (`function`) looks its function up first and judges `numkeys` once it is found
/// (Redis's order).
pub fn run_script(
    ctx: &mut Ctx,
    args: &[&[u8]],
    numkeys: Result<i64, Reply>,
    function: bool,
    find: impl FnOnce(&mut crate::scripting::Engine) -> Result<Loaded, String>,
) -> CmdResult {
    let (keys, argv, keys_error) = match numkeys.and_then(|n| split_keys(args, n)) {
        Ok((keys, argv)) => (keys, argv, None),
        Err(e) if function => (&[][..], &[][..], Some(e)),
        Err(e) => return Err(e),
    };
    let read_only_command =
        args[0].len() > 3 && args[0][args[0].len() - 3..].eq_ignore_ascii_case(b"_ro");
    let shared = ctx.shared;
    // Judged before any lock: making room may evict, which locks shards itself.
    let out_of_memory = shared.store.memory.is_limited() && !shared.store.make_room();
    let script = Script {
        args,
        keys,
        argv,
        keys_error,
        read_only_command,
        out_of_memory,
    };
    // The common case: no transaction, the engine free. The script runs right here on the tokio
    // worker (a thread hand-off costs more than a short script), holding the shards it reaches;
    // one that runs long moves off the worker as it goes (`RunState::maybe_hand_off`).
    if ctx.held.is_none() {
        if let Some(mut engine) = shared.scripting.engine_for_worker() {
            // Announced before any shard is locked, as below.
            let active = shared.scripting.activate();
            let mut locks =
                HeldLocks::as_needed(&shared.store, &shared.replication.feed, ctx.conn.db);
            let reply = execute(ctx, &mut locks, &mut engine, find, &script, true);
            // The shards first: the next script, woken by the engine's release, finds both free.
            drop(locks);
            drop(engine);
            drop(active);
            return reply;
        }
    }
    // Announced before any lock, so other connections wait for it asynchronously (dispatch).
    let _active = shared.scripting.activate();
    // The engine and the script itself may take long: neither blocks a tokio worker.
    crate::worker::off_worker(|| match ctx.held.take() {
        Some(held) => {
            // EXEC took the engine before its locks (`transactions::exec`).
            let mut engine = held
                .engine
                .take()
                .unwrap_or_else(|| shared.scripting.engine());
            let reply = execute(ctx, held, &mut engine, find, &script, false);
            held.engine = Some(engine);
            ctx.held = Some(held);
            reply
        }
        None => {
            let mut engine = shared.scripting.engine();
            let mut own =
                HeldLocks::as_needed(&shared.store, &shared.replication.feed, ctx.conn.db);
            let reply = execute(ctx, &mut own, &mut engine, find, &script, false);
            drop(own);
            reply
        }
    })
}

/// One script call's arguments, split.
struct Script<'a> {
    args: &'a [&'a [u8]],
    keys: &'a [&'a [u8]],
    argv: &'a [&'a [u8]],
    /// FCALL's bad `numkeys`, answered once its function is found.
    keys_error: Option<Reply>,
    read_only_command: bool,
    out_of_memory: bool,
}

/// Runs a script holding its locks (`locks`) and the engine. `inline`: on the tokio worker.
fn execute<'s>(
    ctx: &mut Ctx<'_, 's>,
    locks: &mut HeldLocks<'s>,
    engine: &mut EngineGuard<'s>,
    find: impl FnOnce(&mut crate::scripting::Engine) -> Result<Loaded, String>,
    script: &Script<'_>,
    inline: bool,
) -> CmdResult {
    let shared = ctx.shared;
    let loaded = match find(engine) {
        Ok(loaded) => loaded,
        Err(e) => {
            shared.scripting.record_usage(engine);
            return Err(Reply::Error(e.into()));
        }
    };
    if let Some(error) = &script.keys_error {
        shared.scripting.record_usage(engine);
        return Err(error.clone());
    }
    let flags: ScriptFlags = loaded.flags;
    if flags.shebang && !flags.no_writes && (script.read_only_command || script.out_of_memory) {
        // Refused, but EVAL may have cached it.
        shared.scripting.record_usage(engine);
    }
    if flags.shebang && !flags.no_writes && shared.snapshots.refuses_writes(&shared.config) {
        shared.scripting.record_usage(engine);
        return Err(Reply::error(crate::snapshot::MISCONF_SCRIPT));
    }
    if flags.shebang && !flags.no_writes && script.read_only_command {
        return Err(Reply::error(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    // A replica's clients may not run a script declared to write; its primary may.
    if flags.shebang
        && !flags.no_writes
        && !ctx.conn.from_primary
        && shared.replication.replica.refuses_writes(&shared.config)
    {
        return Err(Reply::error(crate::replication::replica::READONLY));
    }
    let replication = &shared.replication;
    if flags.shebang
        && !flags.no_writes
        && replication
            .master
            .refuses_writes(replication.replica.following())
    {
        return Err(Reply::error(crate::replication::master::NOREPLICAS));
    }
    // A script without `allow-stale` (one without a shebang included) does not run on a stale
    // replica.
    if !flags.allow_stale && !ctx.conn.from_primary && replication.replica.is_stale(&shared.config)
    {
        return Err(Reply::error(crate::replication::replica::MASTERDOWN));
    }
    if flags.shebang && !flags.no_writes && !flags.allow_oom && script.out_of_memory {
        return Err(Reply::error(OOM));
    }
    if flags.shebang && flags.no_cluster && shared.cluster.is_some() {
        return Err(Reply::error(
            "ERR Can not run script on cluster, 'no-cluster' flag is set.",
        ));
    }
    let permissions = Permissions {
        read_only: script.read_only_command || flags.no_writes,
        out_of_memory: script.out_of_memory && !flags.allow_oom,
        slot: std::cell::Cell::new(
            script
                .keys
                .first()
                .filter(|_| shared.cluster.is_some())
                .map(|key| crate::cluster::key_slot(key)),
        ),
        cross_slot: flags.allow_cross_slot_keys,
    };
    let mut inner = Ctx {
        shared,
        conn: &mut *ctx.conn,
        held: Some(locks),
    };
    if loaded.is_function {
        let command = script
            .args
            .iter()
            .map(|a| Bytes::copy_from_slice(a))
            .collect();
        shared
            .scripting
            .set_current_function(Some((loaded.sha.clone(), command)));
    }
    let running = shared.scripting.running(loaded.is_function);
    shared.scripting.run.set_inline(inline);
    let caller_db = inner.conn.db;
    let reply = engine.invoke(
        &loaded,
        script.keys,
        script.argv,
        &mut |call, request| match request {
            Request::Run { resp3 } => call_from_script(&mut inner, call, resp3, &permissions),
            Request::AclCheck => acl_check_from_script(&mut inner, call),
        },
    );
    // A SELECT inside the script is the script's: its caller stays in its database (Redis).
    if inner.conn.db != caller_db {
        inner.conn.db = caller_db;
        inner
            .conn
            .info
            .db
            .store(caller_db as u64, std::sync::atomic::Ordering::Relaxed);
    }
    drop(running);
    if loaded.is_function {
        shared.scripting.set_current_function(None);
    }
    shared.scripting.record_usage(engine);
    Ok(reply)
}

/// `redis.acl_check_cmd`: whether the script's caller may run the command (as Redis, its arity is
/// not checked; a container's unknown subcommand is an unknown command).
fn acl_check_from_script(ctx: &mut Ctx, args: &[&[u8]]) -> Reply {
    match script_command(&ctx.shared.commands, args) {
        Some((_, effective)) => Reply::Bool(super::acl_permits(ctx, effective, args)),
        None => Reply::error("ERR Invalid command passed to redis.acl_check_cmd()"),
    }
}

/// A script's command and the row whose checks apply: a container's subcommand is looked up as
/// Redis does (an unknown one is an unknown command), and its own arity and flags apply (`CONFIG
/// GET` is `noscript`, as `CONFIG` is not).
fn script_command(
    commands: &table::CommandNames,
    args: &[&[u8]],
) -> Option<(&'static table::Command, &'static table::Command)> {
    let cmd = commands.lookup(args[0])?;
    match (cmd.subcommands.is_empty(), args.get(1)) {
        (false, Some(sub)) => Some((cmd, cmd.subcommand(sub)?)),
        _ => Some((cmd, cmd)),
    }
}

/// One `redis.call` / `redis.pcall`: Redis's script checks in Redis's order, then the handler.
fn call_from_script(ctx: &mut Ctx, args: &[&[u8]], resp3: bool, may: &Permissions) -> Reply {
    ctx.shared.scripting.run.maybe_hand_off();
    const UNKNOWN: &str = "ERR Unknown Redis command called from script";
    let Some((cmd, effective)) = script_command(&ctx.shared.commands, args) else {
        return Reply::error(UNKNOWN);
    };
    if !effective.arity_ok(args.len()) {
        return Reply::error("ERR Wrong number of args calling Redis command from script");
    }
    if effective.has(table::NOSCRIPT) {
        return Reply::error("ERR This Redis command is not allowed from script");
    }
    // The script runs as its caller's user: a denied command fails inside the script.
    if let Err(error) = super::acl_check(ctx, effective, args, "lua") {
        return Reply::Error(error.into());
    }
    // Cluster mode: a script touches only keys of this node, in one slot (Redis's texts).
    let shared = ctx.shared;
    if let Some(cluster) = &shared.cluster {
        let slot = match crate::cluster::routing::slot_of(effective, args) {
            Ok(Some(slot)) if cluster.owns(slot) => Some(slot),
            Ok(None) => None,
            _ => {
                return Reply::error(
                    "ERR Script attempted to access a non local key in a cluster node",
                )
            }
        };
        match (slot, may.slot.get()) {
            (Some(slot), Some(first)) if slot != first && !may.cross_slot => {
                return Reply::error(
                    "ERR Script attempted to access keys that do not hash to the same slot",
                )
            }
            (Some(slot), None) => may.slot.set(Some(slot)),
            _ => {}
        }
    }
    if effective.has(table::WRITE) {
        if may.read_only {
            return Reply::error("ERR Write commands are not allowed from read-only scripts.");
        }
        if !ctx.conn.from_primary
            && ctx
                .shared
                .replication
                .replica
                .refuses_writes(&ctx.shared.config)
        {
            return Reply::error(crate::replication::replica::READONLY);
        }
        if ctx.shared.snapshots.refuses_writes(&ctx.shared.config) {
            return Reply::error(crate::snapshot::MISCONF);
        }
        let replication = &ctx.shared.replication;
        if !ctx.conn.from_primary
            && replication
                .master
                .refuses_writes(replication.replica.following())
        {
            return Reply::error(crate::replication::master::NOREPLICAS);
        }
        if effective.has(table::DENYOOM) && may.out_of_memory {
            return Reply::error(OOM);
        }
        ctx.shared.scripting.run.mark_write();
    }
    if !effective.has(table::STALE)
        && !ctx.conn.from_primary
        && ctx.shared.replication.replica.is_stale(&ctx.shared.config)
    {
        return Reply::error(crate::replication::replica::STALE_IN_SCRIPT);
    }
    // The script has its own protocol (redis.setresp), not its caller's.
    let caller_resp3 = std::mem::replace(&mut ctx.conn.resp3, resp3);
    ctx.conn.in_script = true;
    let reply = super::run(ctx, cmd, args);
    ctx.conn.in_script = false;
    ctx.conn.resp3 = caller_resp3;
    reply
}

pub fn script(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1].to_ascii_lowercase();
    let scripting = &ctx.shared.scripting;
    match &sub[..] {
        // Redis's Lua debugger (LDB) is not part of stmd.
        b"debug" => Err(Reply::error("ERR SCRIPT DEBUG is not supported by stmd")),
        b"kill" => scripting
            .run
            .kill(false)
            .map(|()| Reply::OK)
            .map_err(Reply::error),
        b"load" => {
            let mut engine = engine_or_busy(ctx)?;
            let loaded = engine.load(args[2], false);
            scripting.record_usage(&engine);
            let loaded = loaded.map_err(|e| Reply::Error(e.into()))?;
            Ok(Reply::bulk(loaded.sha))
        }
        b"exists" => {
            let engine = engine_or_busy(ctx)?;
            Ok(Reply::Array(
                args[2..]
                    .iter()
                    .map(|sha| Reply::Int(i64::from(engine.exists(sha))))
                    .collect(),
            ))
        }
        b"flush" => {
            if args.len() > 3
                || (args.len() == 3
                    && !args[2].eq_ignore_ascii_case(b"sync")
                    && !args[2].eq_ignore_ascii_case(b"async"))
            {
                return Err(Reply::error(
                    "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
                ));
            }
            let mut engine = engine_or_busy(ctx)?;
            engine.flush();
            scripting.record_usage(&engine);
            Ok(Reply::OK)
        }
        _ => Ok(Reply::Array(
            SCRIPT_HELP
                .iter()
                .map(|line| Reply::Status((*line).into()))
                .collect(),
        )),
    }
}

/// The engine for SCRIPT's and FUNCTION's other subcommands: EXEC's, when they run in a
/// transaction (it took the engine before its locks); else taken here, waiting for a running
/// script like any command, or BUSY once it passes the threshold. The wait is off the tokio
/// worker.
pub fn engine_or_busy<'a, 's>(ctx: &'a mut Ctx<'_, 's>) -> Result<EngineRef<'a, 's>, Reply> {
    let shared = ctx.shared;
    if let Some(engine) = ctx.held.as_deref_mut().and_then(|h| h.engine.as_mut()) {
        return Ok(EngineRef::Lent(engine));
    }
    crate::worker::off_worker(|| loop {
        if let Some(engine) = shared.scripting.try_engine(Duration::from_millis(5)) {
            return Ok(EngineRef::Own(engine));
        }
        let threshold = shared.config.read().busy_reply_threshold;
        if let BusyCheck::Busy(text) = shared.scripting.run.check(threshold) {
            return Err(Reply::error(text));
        }
    })
}

/// The engine a command took itself, or the one its EXEC holds.
pub enum EngineRef<'a, 's> {
    Own(EngineGuard<'s>),
    Lent(&'a mut EngineGuard<'s>),
}

impl std::ops::Deref for EngineRef<'_, '_> {
    type Target = crate::scripting::Engine;
    fn deref(&self) -> &Self::Target {
        match self {
            EngineRef::Own(engine) => engine,
            EngineRef::Lent(engine) => engine,
        }
    }
}

impl std::ops::DerefMut for EngineRef<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            EngineRef::Own(engine) => engine,
            EngineRef::Lent(engine) => engine,
        }
    }
}

const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Print this help.",
];
