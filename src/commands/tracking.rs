//! Client-side caching's commands and dispatch hooks: CLIENT TRACKING, CACHING, GETREDIR and
//! TRACKINGINFO, and the reads remembered for a tracking connection. The tables and the
//! invalidation messages are `events::tracking`'s.

use super::table::{self, Command};
use super::Ctx;
use crate::events::tracking::{ConnTracking, TrackedClient};
use crate::protocol::Reply;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// Dispatch's call before a handler, for a connection in tracking mode: remembers the keys a
/// read-only command reads (default mode, per OPTIN/OPTOUT and CLIENT CACHING).
pub fn before_command(ctx: &mut Ctx<'_, '_>, cmd: &Command, args: &[&[u8]]) {
    let Some(mode) = &ctx.conn.tracking.mode else {
        return;
    };
    if !cmd.has(table::READONLY) || mode.bcast {
        return;
    }
    let caching = ctx.conn.tracking.caching;
    if (mode.optin && !caching) || (mode.optout && caching) {
        return;
    }
    let keys = cmd.key_positions(args.len()).map(|i| args[i]);
    ctx.shared
        .events
        .tracking
        .remember(ctx.shared, mode.id, keys);
}

/// Dispatch's call after a handler: CLIENT CACHING applies to the next command only (or the
/// next transaction), as in Redis.
pub fn after_command(ctx: &mut Ctx<'_, '_>, cmd: &Command) {
    if ctx.conn.tracking.caching
        && cmd.name != "client"
        && ctx.conn.multi.is_none()
        && !ctx.in_exec()
    {
        ctx.conn.tracking.caching = false;
    }
}

/// The options of CLIENT TRACKING, parsed.
#[derive(Default)]
struct TrackingOptions {
    redirect: u64,
    bcast: bool,
    optin: bool,
    optout: bool,
    noloop: bool,
    prefixes: Vec<Bytes>,
}

fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn error(text: impl Into<std::borrow::Cow<'static, str>>) -> Reply {
    Reply::Error(text.into())
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]… [BCAST] [OPTIN] [OPTOUT] [NOLOOP]`, with
/// Redis's checks in Redis's order.
pub fn client_tracking(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Result<Reply, Reply> {
    let mut o = TrackingOptions::default();
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        let arg = args[j];
        if is(arg, "redirect") && more {
            j += 1;
            if o.redirect != 0 {
                return Err(error(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = std::str::from_utf8(args[j])
                .ok()
                .and_then(|t| t.parse::<i64>().ok())
                .ok_or_else(|| error(super::err::NOT_INTEGER))?;
            let exists = u64::try_from(id)
                .ok()
                .is_some_and(|id| ctx.shared.clients.all().iter().any(|c| c.id == id));
            if !exists {
                return Err(error(
                    "ERR The client ID you want redirect to does not exist",
                ));
            }
            o.redirect = id as u64;
        } else if is(arg, "bcast") {
            o.bcast = true;
        } else if is(arg, "optin") {
            o.optin = true;
        } else if is(arg, "optout") {
            o.optout = true;
        } else if is(arg, "noloop") {
            o.noloop = true;
        } else if is(arg, "prefix") && more {
            j += 1;
            o.prefixes.push(Bytes::copy_from_slice(args[j]));
        } else {
            return Err(error(super::err::SYNTAX));
        }
        j += 1;
    }
    let current = ctx.conn.tracking.mode.clone();
    if is(args[2], "off") {
        if current.is_some() {
            ctx.conn.tracking = ConnTracking::default();
            ctx.shared.events.tracking.remove(ctx.conn.info.id);
            ctx.shared.events.update_gate();
        }
        return Ok(Reply::OK);
    }
    if !is(args[2], "on") {
        return Err(error(super::err::SYNTAX));
    }
    if !o.bcast && !o.prefixes.is_empty() {
        return Err(error("ERR PREFIX option requires BCAST mode to be enabled"));
    }
    if current.as_ref().is_some_and(|c| c.bcast != o.bcast) {
        return Err(error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if o.bcast && (o.optin || o.optout) {
        return Err(error("ERR OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if o.optin && o.optout {
        return Err(error(
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if current
        .as_ref()
        .is_some_and(|c| (o.optin && c.optout) || (o.optout && c.optin))
    {
        return Err(error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    let mut prefixes: Vec<Bytes> = current.as_ref().map_or(Vec::new(), |c| c.prefixes.clone());
    if o.bcast {
        check_prefix_collisions(&prefixes, &o.prefixes)?;
        if o.prefixes.is_empty() {
            o.prefixes.push(Bytes::new());
        }
        for p in o.prefixes {
            if !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
        prefixes.sort();
    }
    let info = ctx.conn.info.clone();
    // A tracking client is a `normal` client for the output-buffer limits, as in Redis.
    let limit = ctx.shared.config.read().client_output_buffer_limit.normal;
    let mailbox = ctx
        .conn
        .subs
        .mailbox(&info, crate::output_limit::ClientClass::Normal, limit);
    let client = Arc::new(TrackedClient {
        id: info.id,
        info,
        mailbox,
        redirect: o.redirect,
        bcast: o.bcast,
        optin: o.optin,
        optout: o.optout,
        noloop: o.noloop,
        prefixes,
        broken_redirect: AtomicBool::new(false),
    });
    ctx.conn.tracking.mode = Some(client.clone());
    ctx.shared.events.tracking.set(client);
    ctx.shared.events.update_gate();
    Ok(Reply::OK)
}

/// Redis's rule: no prefix of a client may be a prefix of another of its prefixes.
fn check_prefix_collisions(existing: &[Bytes], new: &[Bytes]) -> Result<(), Reply> {
    let overlap = |a: &[u8], b: &[u8]| {
        let n = a.len().min(b.len());
        a[..n] == b[..n]
    };
    let shown = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    for (i, p) in new.iter().enumerate() {
        if let Some(old) = existing.iter().find(|old| overlap(old, p)) {
            return Err(Reply::Error(format!("ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.", shown(p), shown(old)).into()));
        }
        if let Some(other) = new[i + 1..].iter().find(|other| overlap(p, other)) {
            return Err(Reply::Error(format!("ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.", shown(p), shown(other)).into()));
        }
    }
    Ok(())
}

/// `CLIENT CACHING YES|NO`.
pub fn client_caching(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Result<Reply, Reply> {
    let Some(mode) = &ctx.conn.tracking.mode else {
        return Err(error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"));
    };
    if is(args[2], "yes") {
        if !mode.optin {
            return Err(error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if is(args[2], "no") {
        if !mode.optout {
            return Err(error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(error(super::err::SYNTAX));
    }
    ctx.conn.tracking.caching = true;
    Ok(Reply::OK)
}

/// `CLIENT GETREDIR`: -1 when not tracking, 0 without redirection.
pub fn client_getredir(ctx: &mut Ctx<'_, '_>) -> Reply {
    Reply::Int(
        ctx.conn
            .tracking
            .mode
            .as_ref()
            .map_or(-1, |m| m.redirect as i64),
    )
}

/// `CLIENT TRACKINGINFO`: flags, redirect and prefixes, as Redis shows them.
pub fn client_trackinginfo(ctx: &mut Ctx<'_, '_>) -> Reply {
    let t = &ctx.conn.tracking;
    let mut flags = Vec::new();
    let mut redirect = -1;
    let mut prefixes = Vec::new();
    match &t.mode {
        None => flags.push(Reply::bulk_str("off")),
        Some(m) => {
            flags.push(Reply::bulk_str("on"));
            for (set, name) in [
                (m.bcast, "bcast"),
                (m.optin, "optin"),
                (m.optin && t.caching, "caching-yes"),
                (m.optout, "optout"),
                (m.optout && t.caching, "caching-no"),
                (m.noloop, "noloop"),
                (m.broken_redirect.load(Relaxed), "broken_redirect"),
            ] {
                if set {
                    flags.push(Reply::bulk_str(name));
                }
            }
            redirect = m.redirect as i64;
            prefixes = m.prefixes.iter().cloned().map(Reply::Bulk).collect();
        }
    }
    Reply::Map(vec![
        (Reply::bulk_str("flags"), Reply::Set(flags)),
        (Reply::bulk_str("redirect"), Reply::Int(redirect)),
        (Reply::bulk_str("prefixes"), Reply::Array(prefixes)),
    ])
}
