//! SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB. The registry and the
//! mailboxes are in `crate::pubsub`; the connection loop writes what arrives.

use super::args::is;
use super::{unknown_subcommand, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::pubsub::Subscriptions;
use bytes::{Bytes, BytesMut};
use std::collections::HashSet;

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
pub fn not_allowed_while_subscribed(name: &str) -> String {
    format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
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
    crate::pubsub::confirmation(kind, name, count).encode(resp3, out);
}

/// The three kinds of subscription, each with its own set on the connection and in the registry.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn of(command: &[u8]) -> Kind {
        if is(command, "psubscribe") || is(command, "punsubscribe") {
            Kind::Pattern
        } else if is(command, "ssubscribe") || is(command, "sunsubscribe") {
            Kind::Shard
        } else {
            Kind::Channel
        }
    }

    fn names(self, subscribe: bool) -> &'static str {
        match (self, subscribe) {
            (Kind::Channel, true) => "subscribe",
            (Kind::Pattern, true) => "psubscribe",
            (Kind::Shard, true) => "ssubscribe",
            (Kind::Channel, false) => "unsubscribe",
            (Kind::Pattern, false) => "punsubscribe",
            (Kind::Shard, false) => "sunsubscribe",
        }
    }

    fn set(self, subs: &mut Subscriptions) -> &mut HashSet<Bytes> {
        match self {
            Kind::Channel => &mut subs.channels,
            Kind::Pattern => &mut subs.patterns,
            Kind::Shard => &mut subs.shard_channels,
        }
    }

    /// The count a confirmation carries: shard channels are counted apart, as Redis does.
    fn count(self, subs: &Subscriptions) -> usize {
        match self {
            Kind::Shard => subs.shard_channels.len(),
            _ => subs.count(),
        }
    }
}

/// SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE.
pub fn subscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let kind = Kind::of(args[0]);
    // Redis refuses SSUBSCRIBE where a client cannot block (MULTI); SUBSCRIBE stays allowed there.
    if kind == Kind::Shard && ctx.in_exec() {
        return Err(Reply::error(
            "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client",
        ));
    }
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
        if kind.set(&mut ctx.conn.subs).insert(name.clone()) {
            let registry = &ctx.shared.pubsub;
            match kind {
                Kind::Channel => registry.subscribe(&name, &mailbox),
                Kind::Pattern => registry.psubscribe(&name, &mailbox),
                Kind::Shard => registry.ssubscribe(&name, &mailbox),
            }
        }
        let count = kind.count(&ctx.conn.subs);
        confirmation(&mut out, resp3, kind.names(true), Some(&name), count);
    }
    Ok(confirmations(ctx, out))
}

/// UNSUBSCRIBE, PUNSUBSCRIBE and SUNSUBSCRIBE; without arguments, from everything of that kind.
pub fn unsubscribe(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let kind = Kind::of(args[0]);
    let id = ctx.conn.info.id;
    let resp3 = ctx.conn.resp3;
    let mut names: Vec<Bytes> = args[1..]
        .iter()
        .map(|n| Bytes::copy_from_slice(n))
        .collect();
    if names.is_empty() {
        names = kind.set(&mut ctx.conn.subs).iter().cloned().collect();
        names.sort();
    }
    let mut out = BytesMut::new();
    if names.is_empty() {
        let count = kind.count(&ctx.conn.subs);
        confirmation(&mut out, resp3, kind.names(false), None, count);
    }
    for name in &names {
        if kind.set(&mut ctx.conn.subs).remove(name) {
            let registry = &ctx.shared.pubsub;
            match kind {
                Kind::Channel => registry.unsubscribe(name, id),
                Kind::Pattern => registry.punsubscribe(name, id),
                Kind::Shard => registry.sunsubscribe(name, id),
            }
        }
        let count = kind.count(&ctx.conn.subs);
        confirmation(&mut out, resp3, kind.names(false), Some(name), count);
    }
    Ok(confirmations(ctx, out))
}

/// Hands a command's confirmations to the connection as out-of-band frames, which CLIENT REPLY
/// OFF and SKIP do not silence (as in Redis 7.2); the command itself then has no reply of its
/// own. Inside EXEC they stay the command's reply: they are elements of EXEC's array.
fn confirmations(ctx: &mut Ctx, out: BytesMut) -> Reply {
    if ctx.in_exec() {
        return Reply::Raw(out.freeze());
    }
    ctx.conn.replies.pushes().extend_from_slice(&out);
    Reply::Raw(bytes::Bytes::new())
}

/// Drops every subscription without replying (RESET).
pub fn reset(ctx: &mut Ctx) {
    let subs = std::mem::take(&mut ctx.conn.subs);
    ctx.shared.pubsub.forget(&subs, ctx.conn.info.id);
}

pub fn publish(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let received = ctx.shared.pubsub.publish(args[1], args[2]) as i64;
    // A replica applying its primary's stream delivers locally only: the primary forwarded it.
    if let Some(cluster) = ctx
        .shared
        .cluster
        .as_ref()
        .filter(|_| !ctx.conn.from_primary)
    {
        // Every other node delivers it to its own subscribers; as in Redis Cluster, the reply
        // counts this node's receivers only.
        let password = ctx.shared.config.read().requirepass.clone();
        crate::cluster::peers::forward(cluster, &password, &[b"PUBLISH", args[1], args[2]]);
    }
    Ok(Reply::Int(received))
}

/// SPUBLISH shardchannel message: shard-channel subscribers only.
pub fn spublish(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::Int(
        ctx.shared.pubsub.spublish(args[1], args[2]) as i64
    ))
}

/// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | SHARDCHANNELS [pattern] |
/// SHARDNUMSUB [shardchannel ...] | HELP.
pub fn pubsub(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let registry = &ctx.shared.pubsub;
    let sharded = sub.len() > 5 && sub[..5].eq_ignore_ascii_case(b"SHARD");
    if (is(sub, "CHANNELS") || is(sub, "SHARDCHANNELS")) && args.len() <= 3 {
        let mut channels = registry.channels(args.get(2).copied(), sharded);
        channels.sort();
        Ok(Reply::Array(
            channels.into_iter().map(Reply::Bulk).collect(),
        ))
    } else if is(sub, "NUMSUB") || is(sub, "SHARDNUMSUB") {
        let mut items = Vec::with_capacity((args.len() - 2) * 2);
        for channel in &args[2..] {
            items.push(Reply::bulk(channel));
            items.push(Reply::Int(registry.numsub(channel, sharded) as i64));
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
                "SHARDCHANNELS [<pattern>]",
                "    Return the currently active shard level channels matching a <pattern> (default: '*').",
                "SHARDNUMSUB [<shardchannel> ...]",
                "    Return the number of subscribers for the specified shard level channel(s)",
                "HELP",
                "    Print this help.",
            ]
            .iter()
            .map(|line| Reply::Status((*line).into()))
            .collect(),
        ))
    } else if is(sub, "CHANNELS") || is(sub, "SHARDCHANNELS") {
        // Redis's words for a known subcommand with too many arguments (its own check, not the
        // table's arity).
        Err(Reply::Error(
            format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
                String::from_utf8_lossy(sub)
            )
            .into(),
        ))
    } else if let Some(name) = ["numpat", "help"].iter().find(|s| is(sub, s)) {
        Err(Reply::Error(
            format!("ERR wrong number of arguments for 'pubsub|{name}' command").into(),
        ))
    } else {
        Err(unknown_subcommand(sub, "PUBSUB"))
    }
}
