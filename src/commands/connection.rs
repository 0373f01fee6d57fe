//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT.

use super::args::{int, is, Cursor};
use super::{err, wrong_arity, CmdResult, Ctx};
use crate::protocol::Reply;
use bytes::Bytes;
use std::sync::atomic::Ordering;

/// The Redis version whose commands and replies we follow.
pub const REDIS_VERSION: &str = "7.2.4";

pub fn ping(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if !ctx.conn.resp3 && ctx.conn.subs.count() > 0 && args.len() <= 2 {
        // RESP2 subscriber mode answers in the shape of a pub/sub message.
        let payload = args.get(1).map_or(Reply::bulk_str(""), Reply::bulk);
        return Ok(Reply::Array(vec![Reply::bulk_str("pong"), payload]));
    }
    match args.len() {
        1 => Ok(Reply::Status("PONG".into())),
        2 => Ok(Reply::bulk(args[1])),
        _ => Err(Reply::Error(wrong_arity("ping").into())),
    }
}

pub fn echo(_ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::bulk(args[1]))
}

/// Checks a password against `requirepass`; `username` must be `default` when given.
fn check_password(ctx: &Ctx, username: Option<&[u8]>, password: &[u8]) -> bool {
    let config = ctx.shared.config.read();
    username.is_none_or(|u| u == b"default")
        && (config.requirepass.is_empty() || config.requirepass.as_bytes() == password)
}

pub fn auth(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (username, password) = match args.len() {
        2 => (None, args[1]),
        3 => (Some(args[1]), args[2]),
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    if username.is_none() && ctx.shared.config.read().requirepass.is_empty() {
        return Err(Reply::error(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ));
    }
    if !check_password(ctx, username, password) {
        return Err(Reply::error(err::WRONGPASS));
    }
    ctx.conn.authenticated = true;
    Ok(Reply::OK)
}

pub fn hello(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut protocol = None;
    if args.len() > 1 {
        let version = int(args[1])
            .map_err(|_| Reply::error("ERR Protocol version is not an integer or out of range"))?;
        if !(2..=3).contains(&version) {
            return Err(Reply::error("NOPROTO unsupported protocol version"));
        }
        protocol = Some(version == 3);
    }
    let mut cursor = Cursor::new(args, 2);
    let mut setname = None;
    while !cursor.is_done() {
        let option = cursor.next_arg()?;
        if is(option, "AUTH") && cursor.remaining() >= 2 {
            let (user, pass) = (cursor.next_arg()?, cursor.next_arg()?);
            if !check_password(ctx, Some(user), pass) {
                return Err(Reply::error(err::WRONGPASS));
            }
            ctx.conn.authenticated = true;
        } else if is(option, "SETNAME") && cursor.remaining() >= 1 {
            setname = Some(valid_client_text(cursor.next_arg()?, "Client names")?);
        } else {
            return Err(Reply::Error(
                format!(
                    "ERR Syntax error in HELLO option '{}'",
                    super::printable(option, 128)
                )
                .into(),
            ));
        }
    }
    if !ctx.conn.authenticated {
        return Err(Reply::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = setname {
        *ctx.conn.info.name.lock() = (!name.is_empty()).then_some(name);
    }
    if let Some(resp3) = protocol {
        ctx.conn.resp3 = resp3;
        ctx.conn
            .info
            .resp
            .store(if resp3 { 3 } else { 2 }, Ordering::Relaxed);
    }
    let text = |s: &'static str| Reply::bulk_str(s);
    Ok(Reply::Map(vec![
        (text("server"), text("redis")),
        (text("version"), text(REDIS_VERSION)),
        (
            text("proto"),
            Reply::Int(if ctx.conn.resp3 { 3 } else { 2 }),
        ),
        (text("id"), Reply::Int(ctx.conn.info.id as i64)),
        (text("mode"), text("standalone")),
        (text("role"), text("master")),
        (text("modules"), Reply::Array(vec![])),
    ]))
}

pub fn quit(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.conn.close_after_reply = true;
    Ok(Reply::OK)
}

pub fn reset(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let conn = &mut *ctx.conn;
    conn.multi = None;
    conn.multi_failed = false;
    conn.watched.clear();
    conn.wait = None;
    conn.block = None;
    super::pubsub::reset(ctx);
    // RESET turns tracking off, as in Redis.
    if ctx.conn.tracking.mode.take().is_some() {
        ctx.shared.events.tracking.remove(ctx.conn.info.id);
        ctx.shared.events.update_gate();
    }
    ctx.conn.tracking.caching = false;
    if ctx.conn.monitor {
        // RESET leaves MONITOR mode, as in Redis.
        ctx.shared.monitors.remove(ctx.conn.info.id);
        ctx.conn.monitor = false;
    }
    let conn = &mut *ctx.conn;
    conn.resp3 = false;
    conn.info.resp.store(2, Ordering::Relaxed);
    *conn.info.name.lock() = None;
    conn.authenticated = ctx.shared.config.read().requirepass.is_empty();
    super::databases::set_db(ctx, 0);
    Ok(Reply::Status("RESET".into()))
}

/// Client names and library names may not contain spaces, newlines or special characters.
fn valid_client_text(text: &[u8], what: &str) -> Result<Bytes, Reply> {
    if text.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(Reply::Error(
            format!("ERR {what} cannot contain spaces, newlines or special characters.").into(),
        ));
    }
    Ok(Bytes::copy_from_slice(text))
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
        Ok(Reply::Verbatim(format!("{}\n", info.describe())))
    } else if is(sub, "LIST") {
        client_list(ctx, &args[2..])
    } else if is(sub, "KILL") {
        client_kill(ctx, &args[2..])
    } else if is(sub, "TRACKING") {
        crate::events::tracking::client_tracking(ctx, args)
    } else if is(sub, "CACHING") {
        crate::events::tracking::client_caching(ctx, args)
    } else if is(sub, "GETREDIR") {
        Ok(crate::events::tracking::client_getredir(ctx))
    } else if is(sub, "TRACKINGINFO") {
        Ok(crate::events::tracking::client_trackinginfo(ctx))
    } else if is(sub, "NO-EVICT") || is(sub, "NO-TOUCH") {
        // Accepted for clients that set them; stmd neither evicts nor tracks access.
        if is(args[2], "ON") || is(args[2], "OFF") {
            Ok(Reply::OK)
        } else {
            Err(Reply::error(err::SYNTAX))
        }
    } else {
        Ok(help_reply(&[
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "GETNAME",
            "    Return the name of the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "SETINFO <option> <value>",
            "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
            "LIST [TYPE <type>] [ID <id> [<id> ...]]",
            "    Return information about client connections.",
            "KILL <ip:port> | ID <client-id> | ADDR <ip:port> | LADDR <ip:port> | SKIPME yes/no",
            "    Kill connections.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Turn invalidation messages for client-side caching on or off.",
            "CACHING (YES|NO)",
            "    Track (or not) the keys of the next command, in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the id of the client invalidations are redirected to.",
            "TRACKINGINFO",
            "    Describe the tracking state of the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Accepted; stmd never evicts clients.",
            "NO-TOUCH (ON|OFF)",
            "    Accepted; stmd does not track key access times.",
            "HELP",
            "    Print this help.",
        ]))
    }
}

/// A HELP reply: one status line per entry, as Redis's `addReplyHelp`.
pub fn help_reply(lines: &[&'static str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::Status((*l).into())).collect())
}

fn client_list(ctx: &mut Ctx, filters: &[&[u8]]) -> CmdResult {
    let mut ids: Option<Vec<u64>> = None;
    let mut cursor = Cursor::new(filters, 0);
    while !cursor.is_done() {
        let option = cursor.next_arg()?;
        if is(option, "TYPE") {
            let kind = cursor.next_arg()?;
            if !["normal", "master", "replica", "pubsub"]
                .iter()
                .any(|k| is(kind, k))
            {
                return Err(Reply::Error(
                    format!("ERR Unknown client type '{}'", super::printable(kind, 64)).into(),
                ));
            }
            if !is(kind, "normal") {
                ids = Some(Vec::new());
            }
        } else if is(option, "ID") {
            let mut wanted = Vec::new();
            while !cursor.is_done() {
                let id = int(cursor.next_arg()?)
                    .ok()
                    .filter(|&id| id > 0)
                    .ok_or_else(|| Reply::error("ERR Invalid client ID"))?;
                wanted.push(id as u64);
            }
            if wanted.is_empty() {
                return Err(Reply::error(err::SYNTAX));
            }
            ids = Some(wanted);
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let mut text = String::new();
    for client in ctx.shared.clients.all() {
        if ids.as_ref().is_none_or(|ids| ids.contains(&client.id)) {
            text.push_str(&client.describe());
            text.push('\n');
        }
    }
    Ok(Reply::Verbatim(text))
}

fn client_kill(ctx: &mut Ctx, filters: &[&[u8]]) -> CmdResult {
    // Old form: CLIENT KILL ip:port → +OK or an error.
    if filters.len() == 1 {
        let addr = String::from_utf8_lossy(filters[0]);
        let target = ctx
            .shared
            .clients
            .all()
            .into_iter()
            .find(|c| c.addr.to_string() == addr);
        return match target {
            Some(client) => {
                client.kill();
                if client.id == ctx.conn.info.id {
                    ctx.conn.close_after_reply = true;
                }
                Ok(Reply::OK)
            }
            None => Err(Reply::error("ERR No such client")),
        };
    }
    let mut cursor = Cursor::new(filters, 0);
    let mut id = None;
    let mut addr = None;
    let mut laddr = None;
    let mut skip_me = true;
    while !cursor.is_done() {
        let option = cursor.next_arg()?;
        let value = cursor.next_arg()?;
        if is(option, "ID") {
            id = Some(
                int(value)
                    .ok()
                    .filter(|&v| v > 0)
                    .ok_or_else(|| Reply::error("ERR client-id should be greater than 0"))?
                    as u64,
            );
        } else if is(option, "ADDR") {
            addr = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(option, "LADDR") {
            laddr = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(option, "SKIPME") {
            skip_me = if is(value, "yes") {
                true
            } else if is(value, "no") {
                false
            } else {
                return Err(Reply::error(err::SYNTAX));
            };
        } else if is(option, "TYPE") || is(option, "USER") || is(option, "MAXAGE") {
            // Accepted for compatibility; every client is a normal client of the default user.
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let me = ctx.conn.info.id;
    let mut killed = 0;
    for client in ctx.shared.clients.all() {
        let matches = id.is_none_or(|id| client.id == id)
            && addr.as_ref().is_none_or(|a| client.addr.to_string() == *a)
            && laddr
                .as_ref()
                .is_none_or(|a| client.laddr.to_string() == *a);
        if matches && !(skip_me && client.id == me) {
            client.kill();
            if client.id == me {
                ctx.conn.close_after_reply = true;
            }
            killed += 1;
        }
    }
    Ok(Reply::Int(killed))
}
