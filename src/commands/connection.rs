//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET (CLIENT is in `client.rs`).

pub use super::client::client;

use super::args::{int, is, Cursor};
use super::{err, wrong_arity, CmdResult, Ctx};
use crate::protocol::Reply;
use bytes::Bytes;
use std::sync::atomic::Ordering;

/// The Redis version whose commands and replies we follow.
pub use crate::spec::REDIS_VERSION;

pub fn ping(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if !ctx.conn.resp3 && ctx.conn.subs.any() && args.len() <= 2 {
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

/// Authenticates the connection as `username` (the default user when `None`). A failure is
/// counted and logged (ACL LOG, reason `auth`).
fn authenticate(ctx: &mut Ctx, username: Option<&[u8]>, password: &[u8]) -> bool {
    let name = username.unwrap_or(b"default");
    match ctx.shared.acl.get(name) {
        Some(user) if user.enabled && user.password_ok(password) => {
            *ctx.conn.info.user.lock() = user.name_str();
            ctx.conn.user = user;
            ctx.conn.user_generation = ctx.shared.acl.generation();
            ctx.conn.authenticated = true;
            true
        }
        _ => {
            super::acl_log(
                ctx,
                crate::acl::Denied::Auth,
                "toplevel",
                "AUTH".into(),
                String::from_utf8_lossy(name).into_owned(),
            );
            false
        }
    }
}

pub fn auth(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (username, password) = match args.len() {
        2 => (None, args[1]),
        3 => (Some(args[1]), args[2]),
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    if username.is_none() && ctx.shared.acl.default_user().nopass {
        return Err(Reply::error(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ));
    }
    if !authenticate(ctx, username, password) {
        return Err(Reply::error(err::WRONGPASS));
    }
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
            if !authenticate(ctx, Some(user), pass) {
                return Err(Reply::error(err::WRONGPASS));
            }
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
    conn.readonly = false;
    conn.resp3 = false;
    conn.info.resp.store(2, Ordering::Relaxed);
    *conn.info.name.lock() = None;
    let default_user = ctx.shared.acl.default_user();
    conn.authenticated = default_user.nopass && default_user.enabled;
    *conn.info.user.lock() = "default".into();
    conn.user = default_user;
    conn.user_generation = ctx.shared.acl.generation();
    super::databases::set_db(ctx, 0);
    Ok(Reply::Status("RESET".into()))
}

/// Client names and library names may not contain spaces, newlines or special characters.
pub(super) fn valid_client_text(text: &[u8], what: &str) -> Result<Bytes, Reply> {
    if text.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(Reply::Error(
            format!("ERR {what} cannot contain spaces, newlines or special characters.").into(),
        ));
    }
    Ok(Bytes::copy_from_slice(text))
}

/// A HELP reply: one status line per entry, as Redis's `addReplyHelp`.
pub fn help_reply(lines: &[&'static str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::Status((*l).into())).collect())
}
