//! Dispatch: one table lookup without allocating, then the checks every command shares (arity,
//! authentication, MULTI queueing), done once here, then the handler.

pub mod args;
pub mod blocking_lists;
pub mod collection_scan;
pub mod connection;
pub mod docs;
pub mod hashes;
pub mod keys;
pub mod lists;
pub mod ops;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod stm;
pub mod strings;
pub mod table;
pub mod transactions;
pub mod typed;
pub mod zrange;
pub mod zsets;

use crate::blocking::WaitGuard;
use crate::clients::ClientInfo;
use crate::protocol::Reply;
use crate::server::Shared;
use crate::store::eviction::OOM;
use crate::store::Locked;
use bytes::Bytes;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
pub use table::{lookup, Command, COMMANDS};

/// What a handler returns: `Err` carries an error reply, so handlers can use `?` on argument parsing.
pub type CmdResult = Result<Reply, Reply>;

/// A command handler. `args[0]` is the command name, as in Redis's argv.
pub type Handler = fn(&mut Ctx<'_, '_>, &[&[u8]]) -> CmdResult;

/// The exact error texts shared by many commands.
pub mod err {
    pub const SYNTAX: &str = "ERR syntax error";
    pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
    pub const NOT_FLOAT: &str = "ERR value is not a valid float";
    pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    pub const NOAUTH: &str = "NOAUTH Authentication required.";
    pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
    pub const NO_SUCH_KEY: &str = "ERR no such key";
    pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
}

/// Per-connection state that commands read and change.
pub struct ConnState {
    pub info: Arc<ClientInfo>,
    pub resp3: bool,
    pub authenticated: bool,
    /// Set by QUIT: the connection closes once this reply is written.
    pub close_after_reply: bool,
    /// Commands queued since MULTI (owned copies: the read buffer moves on).
    pub multi: Option<Vec<Vec<Bytes>>>,
    /// A command failed to queue: EXEC must answer EXECABORT.
    pub multi_failed: bool,
    /// WATCHed keys with the version each had (None: absent) when watched.
    pub watched: Vec<(Bytes, Option<u64>)>,
    /// Set by a blocking command that found nothing: the connection loop waits, then reruns it.
    pub block: Option<BlockRequest>,
    /// This connection's place in the queues of the keys it is blocked on (kept across reruns).
    pub wait: Option<WaitGuard>,
    /// Pub/Sub subscriptions and the mailbox messages arrive in.
    pub subs: crate::pubsub::Subscriptions,
    /// In MONITOR mode: other clients' commands arrive in the mailbox.
    pub monitor: bool,
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
            close_after_reply: false,
            multi: None,
            multi_failed: false,
            watched: Vec::new(),
            block: None,
            wait: None,
            subs: Default::default(),
            monitor: false,
        }
    }
}

/// What a handler sees: the shared server, its connection, and (inside EXEC) the held keyspace lock.
pub struct Ctx<'c, 's> {
    pub shared: &'s Shared,
    pub conn: &'c mut ConnState,
    held: Option<&'c mut Locked<'s>>,
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

    /// Locks the shards of `keys` (or reuses EXEC's lock) for one atomic command.
    pub fn lock<K: AsRef<[u8]>>(&mut self, keys: &[K]) -> KeyLock<'_, 's> {
        match self.held.as_deref_mut() {
            Some(held) => KeyLock::Held(held),
            None if keys.len() == 1 => KeyLock::Own(self.shared.store.lock_one(keys[0].as_ref())),
            None => KeyLock::Own(self.shared.store.lock(keys)),
        }
    }

    /// Locks the whole keyspace (or reuses EXEC's lock).
    pub fn lock_all(&mut self) -> KeyLock<'_, 's> {
        match self.held.as_deref_mut() {
            Some(held) => KeyLock::Held(held),
            None => KeyLock::Own(self.shared.store.lock_all()),
        }
    }

    /// True while running the commands of an EXEC (blocking commands must not block then).
    pub fn in_exec(&self) -> bool {
        self.held.is_some()
    }
}

/// Runs one request.
pub fn dispatch(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Reply {
    let Some(cmd) = ctx.shared.commands.lookup(args[0]) else {
        return reject(ctx, None, unknown_command(args));
    };
    if !cmd.arity_ok(args.len()) {
        return reject(ctx, Some(cmd), wrong_arity(cmd.name));
    }
    if !ctx.conn.authenticated && !cmd.has(table::NO_AUTH) {
        return reject(ctx, Some(cmd), err::NOAUTH.to_string());
    }
    if !cmd.has(table::ALLOW_BUSY) && ctx.shared.scripting.run.is_running() {
        let threshold = ctx.shared.config.read().busy_reply_threshold;
        if let Some(busy) = ctx.shared.scripting.run.busy_error(threshold) {
            return reject(ctx, Some(cmd), busy.to_string());
        }
    }
    if !ctx.conn.resp3 && ctx.conn.subs.count() > 0 && !pubsub::allowed_while_subscribed(cmd.name) {
        return pubsub::not_allowed_while_subscribed(cmd.name);
    }
    if ctx.conn.multi.is_some() && !cmd.has(table::NOT_QUEUED) {
        // Queueing itself takes memory: over the limit, nothing is queued (as Redis).
        if !ctx.shared.store.make_room() {
            return reject(ctx, Some(cmd), OOM.to_string());
        }
        return transactions::queue(ctx, args);
    }
    if cmd.has(table::DENYOOM) && !ctx.shared.store.make_room() {
        return reject(ctx, Some(cmd), OOM.to_string());
    }
    *ctx.conn.info.last_cmd.lock() = cmd.name;
    run(ctx, cmd, args)
}

/// A command refused before running. Inside MULTI it dooms the transaction; a refused EXEC
/// discards it at once with `EXECABORT`, as Redis does.
fn reject(ctx: &mut Ctx<'_, '_>, cmd: Option<&Command>, error: String) -> Reply {
    if ctx.conn.multi.is_none() {
        return Reply::Error(error.into());
    }
    if cmd.is_some_and(|c| c.name == "exec") {
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

/// Calls the handler of an already checked command, timing it for the SLOWLOG and the metrics,
/// and shows it to monitors.
pub fn run(ctx: &mut Ctx<'_, '_>, cmd: &Command, args: &[&[u8]]) -> Reply {
    // A blocked command is rerun on every wake-up; monitors saw it the first time.
    let rerun = ctx.conn.wait.is_some();
    let started = std::time::Instant::now();
    let reply = match (cmd.handler)(ctx, args) {
        Ok(reply) | Err(reply) => reply,
    };
    let micros = started.elapsed().as_micros().min(u128::from(u64::MAX)) as u64;
    let shared = ctx.shared;
    shared.command_stats.observe(cmd, micros);
    if reply.is_error() {
        crate::metrics::Stats::add(&shared.stats.total_error_replies, 1);
    }
    // EXEC is not logged itself: the commands it ran are, one by one (as in Redis).
    if shared.slowlog.is_slow(micros) && cmd.name != "exec" {
        let info = &ctx.conn.info;
        let name = info.name.lock().clone().unwrap_or_default();
        shared
            .slowlog
            .record(&redacted(cmd, args), micros, info.addr.to_string(), name);
    }
    // Admin commands (CONFIG, SHUTDOWN…) are not shown, as in Redis.
    if shared.monitors.active() && !rerun && !cmd.has(table::ADMIN) {
        shared
            .monitors
            .feed(ctx.conn.info.addr, &redacted(cmd, args));
    }
    reply
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

/// `ERR wrong number of arguments for 'get' command`.
pub fn wrong_arity(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
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

/// An argument shown inside an error: at most `max` bytes, lossy UTF-8, no line breaks.
pub fn printable(arg: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&arg[..arg.len().min(max)]).replace(['\r', '\n'], " ")
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

/// Checks the subcommand of a container command (CLIENT, CONFIG, COMMAND) against `subcommands`
/// (name, Redis arity counted over the whole request), with Redis 7's texts:
/// `ERR wrong number of arguments for 'client|setname' command` and
/// `ERR unknown subcommand 'x'. Try CLIENT HELP.`
pub fn check_subcommand(
    container: &str,
    subcommands: &[(&str, i32)],
    args: &[&[u8]],
) -> Result<(), Reply> {
    let sub = args[1];
    let Some(&(name, arity)) = subcommands
        .iter()
        .find(|(name, _)| sub.eq_ignore_ascii_case(name.as_bytes()))
    else {
        return Err(unknown_subcommand(sub, &container.to_ascii_uppercase()));
    };
    let argc = args.len() as i64;
    let arity = i64::from(arity);
    if (arity >= 0 && argc != arity) || (arity < 0 && argc < -arity) {
        return Err(Reply::Error(
            wrong_arity(&format!("{container}|{name}")).into(),
        ));
    }
    Ok(())
}
