//! SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB. The registry and the
//! mailboxes are in `crate::pubsub`; the connection loop writes what arrives.

use super::args::is;
use super::{unknown_subcommand, CmdResult, Ctx};
use crate::protocol::Reply;
use bytes::{Bytes, BytesMut};

/// Commands a RESP2 connection may still run once it has subscriptions.
pub fn allowed_while_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

/// Redis's error for any other command in RESP2 subscriber mode.
pub fn not_allowed_while_subscribed(name: &str) -> Reply {
    Reply::Error(
        format!(
            "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
        )
        .into(),
    )
}

/// A `[kind, name, count]` confirmation frame; one per channel, so a single command can answer
/// with several frames (returned pre-encoded, as Redis writes them back to back).
fn confirmation(
    out: &mut BytesMut,
    resp3: bool,
    kind: &'static str,
    name: Option<&Bytes>,
    count: usize,
) {
    Reply::Push(vec![
        Reply::bulk_str(kind),
        name.map_or(Reply::Nil, |n| Reply::Bulk(n.clone())),
        Reply::Int(count as i64),
    ])
    .encode(resp3, out);
}

/// SUBSCRIBE and PSUBSCRIBE.
pub fn subscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pattern = is(args[0], "psubscribe");
    let client = ctx.conn.info.clone();
    let limit = ctx.shared.config.read().client_output_buffer_limit.pubsub;
    let mailbox = ctx
        .conn
        .subs
        .mailbox(&client, crate::output_limit::ClientClass::PubSub, limit);
    let resp3 = ctx.conn.resp3;
    let mut out = BytesMut::new();
    for name in &args[1..] {
        let name = Bytes::copy_from_slice(name);
        let subs = &mut ctx.conn.subs;
        let added = if pattern {
            subs.patterns.insert(name.clone())
        } else {
            subs.channels.insert(name.clone())
        };
        if added {
            if pattern {
                ctx.shared.pubsub.psubscribe(&name, &mailbox);
            } else {
                ctx.shared.pubsub.subscribe(&name, &mailbox);
            }
        }
        let kind = if pattern { "psubscribe" } else { "subscribe" };
        confirmation(&mut out, resp3, kind, Some(&name), ctx.conn.subs.count());
    }
    Ok(Reply::Raw(out.freeze()))
}

/// UNSUBSCRIBE and PUNSUBSCRIBE; without arguments, from everything of that kind.
pub fn unsubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let pattern = is(args[0], "punsubscribe");
    Ok(Reply::Raw(unsubscribe_from(ctx, pattern, &args[1..])))
}

fn unsubscribe_from(ctx: &mut Ctx, pattern: bool, names: &[&[u8]]) -> Bytes {
    let kind = if pattern {
        "punsubscribe"
    } else {
        "unsubscribe"
    };
    let id = ctx.conn.info.id;
    let resp3 = ctx.conn.resp3;
    let mut names: Vec<Bytes> = names.iter().map(|n| Bytes::copy_from_slice(n)).collect();
    if names.is_empty() {
        let current = if pattern {
            &ctx.conn.subs.patterns
        } else {
            &ctx.conn.subs.channels
        };
        names = current.iter().cloned().collect();
        names.sort();
    }
    let mut out = BytesMut::new();
    if names.is_empty() {
        confirmation(&mut out, resp3, kind, None, ctx.conn.subs.count());
    }
    for name in &names {
        let subs = &mut ctx.conn.subs;
        let removed = if pattern {
            subs.patterns.remove(name)
        } else {
            subs.channels.remove(name)
        };
        if removed {
            if pattern {
                ctx.shared.pubsub.punsubscribe(name, id);
            } else {
                ctx.shared.pubsub.unsubscribe(name, id);
            }
        }
        confirmation(&mut out, resp3, kind, Some(name), ctx.conn.subs.count());
    }
    out.freeze()
}

/// Drops every subscription without replying (RESET).
pub fn reset(ctx: &mut Ctx) {
    let subs = std::mem::take(&mut ctx.conn.subs);
    ctx.shared.pubsub.forget(&subs, ctx.conn.info.id);
}

pub fn publish(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::Int(
        ctx.shared.pubsub.publish(args[1], args[2]) as i64
    ))
}

/// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | HELP.
pub fn pubsub(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let registry = &ctx.shared.pubsub;
    if is(sub, "CHANNELS") && args.len() <= 3 {
        let mut channels = registry.channels(args.get(2).copied());
        channels.sort();
        Ok(Reply::Array(
            channels.into_iter().map(Reply::Bulk).collect(),
        ))
    } else if is(sub, "NUMSUB") {
        let mut items = Vec::with_capacity((args.len() - 2) * 2);
        for channel in &args[2..] {
            items.push(Reply::bulk(channel));
            items.push(Reply::Int(registry.numsub(channel) as i64));
        }
        Ok(Reply::Array(items))
    } else if is(sub, "NUMPAT") && args.len() == 2 {
        Ok(Reply::Int(registry.numpat() as i64))
    } else if is(sub, "HELP") && args.len() == 2 {
        Ok(Reply::Array(
            [
                "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CHANNELS [<pattern>]",
                "    Return the currently active channels matching a <pattern> (default: '*').",
                "NUMPAT",
                "    Return number of subscriptions to patterns.",
                "NUMSUB [<channel> ...]",
                "    Return the number of subscribers for the specified channels, excluding",
                "    pattern subscriptions(default: no channels).",
                "HELP",
                "    Print this help.",
            ]
            .iter()
            .map(|line| Reply::Status((*line).into()))
            .collect(),
        ))
    } else if let Some(name) = ["channels", "numpat", "help"].iter().find(|s| is(sub, s)) {
        Err(Reply::Error(
            format!("ERR wrong number of arguments for 'pubsub|{name}' command").into(),
        ))
    } else {
        Err(unknown_subcommand(sub, "PUBSUB"))
    }
}
