//! CLIENT and its subcommands: identity (ID, GETNAME, SETNAME, SETINFO), introspection (INFO,
//! LIST), control of other clients (KILL, PAUSE, UNPAUSE, UNBLOCK), of this one (REPLY, NO-EVICT,
//! NO-TOUCH) and client-side caching (TRACKING & co., in `crate::events::tracking`).

use super::args::{int, is};
use super::connection::{help_reply, valid_client_text};
use super::{err, table, CmdResult, Command, ConnState, Ctx};
use crate::clients::{flag, ClientClass, ClientInfo};
use crate::protocol::Reply;
use crate::store::pause::PauseMode;
use bytes::BytesMut;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Redis 7.2's CLIENT HELP (src/networking.c). Its KILL filters are 7.2's: the `ID` and `MAXAGE`
/// lines came with 7.4, though stmd serves both filters (docs/operations.md: Clients).
const HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "HELP",
    "    Print this help.",
];

/// CLIENT REPLY's state: which replies the connection sends. Out-of-band frames a command
/// produces (Pub/Sub subscribe and unsubscribe confirmations) are kept apart in `pushes`: they go
/// out whatever the mode, as Redis 7.2 sends every frame it writes while `CLIENT_PUSHING` (under
/// RESP2 too, where the confirmations are plain arrays). Messages and invalidations never pass
/// here: they arrive through the mailbox, which CLIENT REPLY does not touch either.
#[derive(Default, Debug)]
pub struct ReplyMode {
    off: bool,
    skip_this: bool,
    skip_next: bool,
    pushes: BytesMut,
}

impl ReplyMode {
    /// Called once for each command's final reply: whether to send it. Moves SKIP on to the next
    /// command, as Redis does after every command.
    #[inline]
    fn take_send(&mut self) -> bool {
        let send = !self.off && !self.skip_this;
        self.skip_this = std::mem::take(&mut self.skip_next);
        send
    }

    /// Where a command writes its out-of-band frames (see [`ReplyMode`]).
    pub fn pushes(&mut self) -> &mut BytesMut {
        &mut self.pushes
    }

    /// Writes a command's out-of-band frames, then its final reply unless the mode drops it.
    #[inline]
    pub fn write(&mut self, reply: &Reply, resp3: bool, out: &mut BytesMut) {
        if !self.pushes.is_empty() {
            out.extend_from_slice(&self.pushes);
            self.pushes.clear();
        }
        if self.take_send() {
            reply.encode(resp3, out);
        }
    }
}

pub fn client(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let info = ctx.conn.info.clone();
    if is(sub, "ID") {
        Ok(Reply::Int(info.id as i64))
    } else if is(sub, "GETNAME") {
        Ok(info.name.lock().clone().map_or(Reply::Nil, Reply::Bulk))
    } else if is(sub, "SETNAME") {
        let name = valid_client_text(args[2], "Client names")?;
        *info.name.lock() = (!name.is_empty()).then_some(name);
        Ok(Reply::OK)
    } else if is(sub, "SETINFO") {
        let (slot, what) = if is(args[2], "LIB-NAME") {
            (&info.lib_name, "lib-name")
        } else if is(args[2], "LIB-VER") {
            (&info.lib_ver, "lib-ver")
        } else {
            return Err(Reply::Error(
                format!(
                    "ERR Unrecognized option '{}'",
                    super::printable(args[2], 128)
                )
                .into(),
            ));
        };
        let value = valid_client_text(args[3], what)?;
        *slot.lock() = (!value.is_empty()).then_some(value);
        Ok(Reply::OK)
    } else if is(sub, "INFO") {
        publish_own(ctx.conn, args);
        Ok(Reply::Verbatim(format!("{}\n", info.describe())))
    } else if is(sub, "LIST") {
        publish_own(ctx.conn, args);
        client_list(ctx, &args[2..])
    } else if is(sub, "KILL") {
        client_kill(ctx, &args[2..])
    } else if is(sub, "PAUSE") {
        client_pause(ctx, args)
    } else if is(sub, "UNPAUSE") {
        ctx.shared.store.pause.unpause();
        Ok(Reply::OK)
    } else if is(sub, "UNBLOCK") {
        client_unblock(ctx, args)
    } else if is(sub, "REPLY") {
        client_reply(ctx, args[2])
    } else if is(sub, "TRACKING") {
        super::tracking::client_tracking(ctx, args)
    } else if is(sub, "CACHING") {
        super::tracking::client_caching(ctx, args)
    } else if is(sub, "GETREDIR") {
        Ok(super::tracking::client_getredir(ctx))
    } else if is(sub, "TRACKINGINFO") {
        Ok(super::tracking::client_trackinginfo(ctx))
    } else if is(sub, "NO-EVICT") {
        ctx.conn.no_evict = on_off(args[2])?;
        Ok(Reply::OK)
    } else if is(sub, "NO-TOUCH") {
        ctx.conn.no_touch = on_off(args[2])?;
        Ok(Reply::OK)
    } else {
        Ok(help_reply(HELP))
    }
}

fn on_off(arg: &[u8]) -> Result<bool, Reply> {
    if is(arg, "ON") {
        Ok(true)
    } else if is(arg, "OFF") {
        Ok(false)
    } else {
        Err(Reply::error(err::SYNTAX))
    }
}

/// Redis's answer to a PAUSE or UNBLOCK with too many arguments (naming the subcommand as sent).
fn wrong_use(sub: &[u8]) -> Reply {
    Reply::Error(
        format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            super::printable(sub, 128)
        )
        .into(),
    )
}

/// True when CLIENT PAUSE holds `cmd` now. Only called while a pause is set: an EXEC looks at
/// its queue (it writes if any queued command may), as Redis does.
pub fn paused(ctx: &Ctx, cmd: &Command) -> bool {
    const WRITES: u32 = table::WRITE | table::MAY_REPLICATE;
    let may_write = cmd.has(WRITES)
        || (cmd.name == "exec"
            && ctx.conn.multi.as_ref().is_some_and(|queue| {
                queue.iter().any(|queued| {
                    ctx.shared
                        .commands
                        .lookup(&queued[0])
                        .is_some_and(|c| c.has(WRITES))
                })
            }));
    ctx.shared.store.pause.holds(may_write)
}

/// Publishes the connection's own state for CLIENT LIST/INFO/KILL (once per read batch, and
/// before this client lists itself). `extra` adds the flags only the connection loop knows
/// (blocked, writing).
pub fn publish(conn: &ConnState, extra: u32) {
    let p = &conn.info.published;
    let mut flags = extra;
    let mut redir = -1;
    if conn.monitor {
        flags |= flag::MONITOR;
    }
    if conn.from_primary {
        flags |= flag::MASTER;
    }
    if conn.subs.any() {
        flags |= flag::PUBSUB;
    }
    if conn.multi.is_some() {
        flags |= flag::MULTI;
    }
    if let Some(tracking) = &conn.tracking.mode {
        flags |= flag::TRACKING;
        redir = tracking.redirect as i64;
        if tracking.bcast {
            flags |= flag::TRACKING_BCAST;
        }
        if tracking.broken_redirect.load(Ordering::Relaxed) {
            flags |= flag::TRACKING_BROKEN_REDIR;
        }
    }
    if conn.close_after_reply {
        flags |= flag::CLOSE_AFTER_REPLY;
    }
    if conn.no_evict {
        flags |= flag::NO_EVICT;
    }
    if conn.no_touch {
        flags |= flag::NO_TOUCH;
    }
    p.flags.store(flags, Ordering::Relaxed);
    p.redir.store(redir, Ordering::Relaxed);
    let subs = &conn.subs;
    p.subscriptions.store(
        crate::clients::pack_subscriptions(
            subs.channels.len(),
            subs.patterns.len(),
            subs.shard_channels.len(),
        ),
        Ordering::Relaxed,
    );
    match &conn.multi {
        Some(queue) => p.multi.store(queue.len() as i64, Ordering::Relaxed),
        None => {
            p.multi.store(-1, Ordering::Relaxed);
            p.multi_mem.store(0, Ordering::Relaxed);
        }
    }
    let state_mem = std::mem::size_of::<ConnState>()
        + conn.watched.capacity() * std::mem::size_of::<super::databases::Watched>()
        + (conn.subs.count() + conn.subs.shard_channels.len())
            * std::mem::size_of::<bytes::Bytes>()
            * 2;
    p.state_mem.store(state_mem as u64, Ordering::Relaxed);
}

/// Counts a queued command's arguments in `multi-mem`.
pub fn count_queued(info: &ClientInfo, args: &[&[u8]]) {
    let bytes: usize = args
        .iter()
        .map(|a| a.len() + std::mem::size_of::<bytes::Bytes>())
        .sum();
    let p = &info.published;
    p.multi_mem.store(
        p.multi_mem.load(Ordering::Relaxed) + bytes as u64,
        Ordering::Relaxed,
    );
}

/// Before a client lists itself: its state right now, with the running command's arguments.
fn publish_own(conn: &ConnState, args: &[&[u8]]) {
    publish(conn, 0);
    let argv: usize = args.iter().map(|a| a.len()).sum();
    conn.info
        .published
        .argv_mem
        .store(argv as u64, Ordering::Relaxed);
}

/// The client types CLIENT LIST and KILL filter by (`slave` is `replica`).
fn client_type(kind: &[u8]) -> Result<ClientClass, Reply> {
    [
        ("normal", ClientClass::Normal),
        ("pubsub", ClientClass::PubSub),
        ("master", ClientClass::Master),
        ("replica", ClientClass::Replica),
        ("slave", ClientClass::Replica),
    ]
    .into_iter()
    .find(|(name, _)| is(kind, name))
    .map(|(_, class)| class)
    .ok_or_else(|| {
        Reply::Error(format!("ERR Unknown client type '{}'", super::printable(kind, 64)).into())
    })
}

fn client_list(ctx: &mut Ctx, filters: &[&[u8]]) -> CmdResult {
    let mut ids: Option<Vec<u64>> = None;
    let mut kind: Option<ClientClass> = None;
    let mut at = 0;
    while at < filters.len() {
        let option = filters[at];
        if is(option, "TYPE") && at + 1 < filters.len() {
            kind = Some(client_type(filters[at + 1])?);
            at += 2;
        } else if is(option, "ID") && at + 1 < filters.len() {
            let mut wanted = Vec::new();
            for id in &filters[at + 1..] {
                let id = int(id).map_err(|_| Reply::error("ERR Invalid client ID"))?;
                wanted.push(id);
            }
            ids = Some(
                wanted
                    .into_iter()
                    .filter_map(|id| u64::try_from(id).ok())
                    .collect(),
            );
            at = filters.len();
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let mut text = String::new();
    for client in ctx.shared.clients.all() {
        if kind.is_none_or(|k| client.class() == k)
            && ids.as_ref().is_none_or(|ids| ids.contains(&client.id))
        {
            text.push_str(&client.describe());
            text.push('\n');
        }
    }
    Ok(Reply::Verbatim(text))
}

/// CLIENT KILL's filters; a client must pass all of them (AND).
#[derive(Default)]
struct KillFilter {
    id: Option<u64>,
    kind: Option<ClientClass>,
    addr: Option<String>,
    laddr: Option<String>,
    /// Only clients connected longer than this many seconds.
    max_age: Option<u64>,
    /// Only clients authenticated as this user.
    user: Option<String>,
}

impl KillFilter {
    fn matches(&self, client: &ClientInfo) -> bool {
        self.id.is_none_or(|id| client.id == id)
            && self.user.as_ref().is_none_or(|u| *client.user.lock() == *u)
            && self.kind.is_none_or(|k| client.class() == k)
            && self
                .addr
                .as_ref()
                .is_none_or(|a| client.addr.to_string() == *a)
            && self
                .laddr
                .as_ref()
                .is_none_or(|a| client.laddr.to_string() == *a)
            && self.max_age.is_none_or(|age| client.age_secs() > age)
    }
}

fn client_kill(ctx: &mut Ctx, filters: &[&[u8]]) -> CmdResult {
    // Old form, CLIENT KILL ip:port: +OK or an error, and a client may kill itself.
    if filters.len() == 1 {
        let filter = KillFilter {
            addr: Some(String::from_utf8_lossy(filters[0]).into_owned()),
            ..Default::default()
        };
        return match kill_matching(ctx, &filter, false) {
            0 => Err(Reply::error("ERR No such client")),
            _ => Ok(Reply::OK),
        };
    }
    let mut filter = KillFilter::default();
    let mut skip_me = true;
    for pair in filters.chunks(2) {
        let [option, value] = pair else {
            return Err(Reply::error(err::SYNTAX));
        };
        if is(option, "ID") {
            let id = int(value)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| Reply::error("ERR client-id should be greater than 0"))?;
            filter.id = Some(id as u64);
        } else if is(option, "TYPE") {
            filter.kind = Some(client_type(value)?);
        } else if is(option, "ADDR") {
            filter.addr = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(option, "LADDR") {
            filter.laddr = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(option, "USER") {
            if ctx.shared.acl.get(value).is_none() {
                return Err(Reply::Error(
                    format!("ERR No such user '{}'", super::printable(value, 128)).into(),
                ));
            }
            filter.user = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(option, "SKIPME") {
            skip_me = if is(value, "yes") {
                true
            } else if is(value, "no") {
                false
            } else {
                return Err(Reply::error(err::SYNTAX));
            };
        } else if is(option, "MAXAGE") {
            // Redis 7.4 tells a word that is no number from a number that is not positive.
            let age = int(value)
                .map_err(|_| Reply::error("ERR maxage is not an integer or out of range"))?;
            if age <= 0 {
                return Err(Reply::error("ERR maxage should be greater than 0"));
            }
            filter.max_age = Some(age as u64);
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    Ok(Reply::Int(kill_matching(ctx, &filter, skip_me) as i64))
}

/// Kills the clients `filter` selects; this client closes after its reply, as in Redis.
fn kill_matching(ctx: &mut Ctx, filter: &KillFilter, skip_me: bool) -> usize {
    let me = ctx.conn.info.id;
    let mut killed = 0;
    for client in ctx.shared.clients.all() {
        if !filter.matches(&client) || (skip_me && client.id == me) {
            continue;
        }
        if client.id == me {
            ctx.conn.close_after_reply = true;
        } else {
            client.kill();
        }
        killed += 1;
    }
    killed
}

fn client_pause(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 4 {
        return Err(wrong_use(args[1]));
    }
    let mode = match args.get(3) {
        None => PauseMode::All,
        Some(mode) if is(mode, "WRITE") => PauseMode::Write,
        Some(mode) if is(mode, "ALL") => PauseMode::All,
        Some(_) => return Err(Reply::error("ERR CLIENT PAUSE mode must be WRITE or ALL")),
    };
    let millis =
        int(args[2]).map_err(|_| Reply::error("ERR timeout is not an integer or out of range"))?;
    if millis < 0 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    let now = Instant::now();
    // A timeout past what the clock can hold pauses for a century: forever, for a server.
    let end = now
        .checked_add(Duration::from_millis(millis as u64))
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600));
    ctx.shared.store.pause.pause(end, mode);
    Ok(Reply::OK)
}

fn client_unblock(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 4 {
        return Err(wrong_use(args[1]));
    }
    let with_error = match args.get(3) {
        None => false,
        Some(reason) if is(reason, "TIMEOUT") => false,
        Some(reason) if is(reason, "ERROR") => true,
        Some(_) => {
            return Err(Reply::error(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    let id = int(args[2])?;
    let unblocked = u64::try_from(id)
        .ok()
        .and_then(|id| ctx.shared.clients.get(id))
        .is_some_and(|client| client.unblock(with_error));
    Ok(Reply::Int(i64::from(unblocked)))
}

fn client_reply(ctx: &mut Ctx, mode: &[u8]) -> CmdResult {
    let replies = &mut ctx.conn.replies;
    if is(mode, "ON") {
        replies.off = false;
        replies.skip_this = false;
        replies.skip_next = false;
    } else if is(mode, "OFF") {
        replies.off = true;
    } else if is(mode, "SKIP") {
        // This command's reply is skipped too: Redis does not answer SKIP.
        if !replies.off {
            replies.skip_this = true;
            replies.skip_next = true;
        }
    } else {
        return Err(Reply::error(err::SYNTAX));
    }
    Ok(Reply::OK)
}
