//! The STM.* commands: argument parsing and locking here, the domain logic in `crate::stm`.

use super::args::{is, Cursor};
use super::{err, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::scope_rows::PersistOp;
use crate::stm::capture::{self, entry_at, CaptureRequest, MessageItem, ReplyItem, Skip, Ttls};
use crate::stm::{
    parse_lineage, parse_persona, render, valid_id, Role, Scope, ScopeKey, StmEntry, StmStats,
};
use crate::store::Value;
use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};

fn error(text: &'static str) -> Reply {
    Reply::error(text)
}

/// An id argument (user, channel, server, parent), or `ERR invalid <what> id`.
fn id<'a>(arg: &'a [u8], what: &'static str) -> Result<&'a [u8], Reply> {
    if valid_id(arg) {
        Ok(arg)
    } else {
        Err(Reply::Error(format!("ERR invalid {what} id").into()))
    }
}

/// `SERVER <id|DM>`: None for a direct message.
fn server_id(arg: &[u8]) -> Result<Option<&[u8]>, Reply> {
    if is(arg, "DM") {
        Ok(None)
    } else {
        id(arg, "server").map(Some)
    }
}

fn speaker(arg: &[u8]) -> Result<Option<&[u8]>, Reply> {
    if arg == b"-" {
        return Ok(None);
    }
    if arg.is_empty() || arg.len() > 256 || arg.iter().any(u8::is_ascii_control) {
        return Err(error("ERR invalid speaker"));
    }
    Ok(Some(arg))
}

fn persona(arg: &[u8]) -> Result<Option<u64>, Reply> {
    parse_persona(arg).ok_or_else(|| error("ERR invalid persona id"))
}

fn lineage(arg: &[u8]) -> Result<Option<i64>, Reply> {
    parse_lineage(arg).ok_or_else(|| error("ERR invalid lineage id"))
}

/// Sets a once-only option, or answers a syntax error when it was already given.
pub(super) fn once<T>(slot: &mut Option<T>, value: T) -> Result<(), Reply> {
    if slot.is_some() {
        return Err(Reply::error(err::SYNTAX));
    }
    *slot = Some(value);
    Ok(())
}

/// Limits read from the live configuration once per command.
struct Limits {
    max_messages: usize,
    max_content: usize,
    max_items: usize,
    max_summary_chars: usize,
    ttls: Ttls,
}

fn limits(ctx: &Ctx) -> Limits {
    let c = ctx.shared.config.read();
    Limits {
        max_messages: c.stm_max_messages as usize,
        max_content: c.stm_max_content_bytes as usize,
        max_items: c.stm_max_items as usize,
        max_summary_chars: c.stm_max_summary_chars as usize,
        ttls: Ttls {
            plain: c.stm_ttl.saturating_mul(1000),
            distilled: c.stm_summary_ttl.saturating_mul(1000),
        },
    }
}

fn parse_capture<'a>(args: &[&'a [u8]], limits: &Limits) -> Result<CaptureRequest<'a>, Reply> {
    let (mut user, mut channel, mut server, mut parent, mut privacy) =
        (None, None, None, None, None);
    let mut stop = false;
    // A MSG takes four arguments: room for every one the request can hold, allocated once.
    let mut messages = Vec::with_capacity(args.len() / 4);
    let mut replies = Vec::new();
    let mut c = Cursor::new(args, 1);
    let content = |arg: &'a [u8]| {
        if arg.len() > limits.max_content {
            Err(error("ERR MSG/REPLY content exceeds stm-max-content-bytes"))
        } else {
            Ok(arg)
        }
    };
    while !c.is_done() {
        let option = c.next_arg()?;
        if is(option, "USER") {
            once(&mut user, id(c.next_arg()?, "user")?)?;
        } else if is(option, "CHANNEL") {
            once(&mut channel, id(c.next_arg()?, "channel")?)?;
        } else if is(option, "SERVER") {
            once(&mut server, server_id(c.next_arg()?)?)?;
        } else if is(option, "PARENT") {
            once(&mut parent, id(c.next_arg()?, "parent")?)?;
        } else if is(option, "PRIVACY") {
            let level = c.next_arg()?;
            let full = match () {
                _ if is(level, "MINIMAL") || level == b"0" => false,
                _ if is(level, "PARTIAL") || level == b"1" => false,
                _ if is(level, "FULL") || level == b"2" => true,
                _ => return Err(error("ERR invalid privacy level")),
            };
            once(&mut privacy, full)?;
        } else if is(option, "STOP") {
            if stop {
                return Err(Reply::error(err::SYNTAX));
            }
            stop = true;
        } else if is(option, "MSG") {
            let role = c.next_arg()?;
            let role = if is(role, "user") {
                Role::User
            } else if is(role, "model") {
                Role::Model
            } else {
                return Err(error("ERR invalid role, expected user or model"));
            };
            let speaker = speaker(c.next_arg()?)?;
            messages.push(MessageItem {
                role,
                speaker,
                content: content(c.next_arg()?)?,
            });
        } else if is(option, "REPLY") {
            let persona = persona(c.next_arg()?)?;
            let lineage = lineage(c.next_arg()?)?;
            let speaker = speaker(c.next_arg()?)?;
            replies.push(ReplyItem {
                persona,
                lineage,
                speaker,
                content: content(c.next_arg()?)?,
            });
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        if messages.len() + replies.len() > limits.max_items {
            return Err(error("ERR too many MSG/REPLY items (stm-max-items)"));
        }
    }
    let (Some(user), Some(channel), Some(server)) = (user, channel, server) else {
        return Err(error("ERR USER, CHANNEL and SERVER are required"));
    };
    Ok(CaptureRequest {
        user,
        channel,
        server,
        parent,
        privacy_full: privacy.unwrap_or(false),
        stop,
        messages,
        replies,
    })
}

fn skip_counter(stats: &StmStats, skip: Skip) -> &AtomicU64 {
    match skip {
        Skip::Stop => &stats.skipped_stop,
        Skip::Privacy => &stats.skipped_privacy,
        Skip::NoMessages => &stats.skipped_no_messages,
        Skip::NoReplies => &stats.skipped_no_replies,
        Skip::Empty => &stats.skipped_empty,
    }
}

fn key_array(keys: Vec<Bytes>) -> Reply {
    Reply::Array(keys.into_iter().map(Reply::Bulk).collect())
}

/// The keys STM.CAPTURE would write, for the ACL check (none when it would skip or not parse).
pub fn capture_keys(ctx: &Ctx, args: &[&[u8]]) -> Vec<Bytes> {
    let limits = limits(ctx);
    parse_capture(args, &limits)
        .ok()
        .and_then(|req| {
            capture::plan(
                &req,
                &ctx.shared.stm.cleaner,
                limits.max_messages,
                crate::store::now_ms(),
            )
            .ok()
        })
        .map(|plan| plan.keys())
        .unwrap_or_default()
}

/// The keys STM.SUMMARY would write, for the ACL check.
pub fn summary_keys(_ctx: &Ctx, args: &[&[u8]]) -> Vec<Bytes> {
    target_keys(args, "TEXT")
}

/// The keys STM.CATEGORIES would write, for the ACL check.
pub fn categories_keys(_ctx: &Ctx, args: &[&[u8]]) -> Vec<Bytes> {
    target_keys(args, "SET")
}

fn target_keys(args: &[&[u8]], tail: &str) -> Vec<Bytes> {
    parse_target(args, tail)
        .map(|(target, _)| target.scopes().iter().map(ScopeKey::key).collect())
        .unwrap_or_default()
}

pub fn capture(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let limits = limits(ctx);
    let req = parse_capture(args, &limits)?;
    let now = crate::store::now_ms();
    let plan = match capture::plan(&req, &ctx.shared.stm.cleaner, limits.max_messages, now) {
        Ok(plan) => plan,
        Err(skip) => {
            skip_counter(&ctx.shared.stm.stats, skip).fetch_add(1, Ordering::Relaxed);
            return Ok(Reply::Array(vec![]));
        }
    };
    let keys = plan.keys();
    let shared = ctx.shared;
    let mut locked = ctx.lock(&keys);
    if capture::any_wrong_type(&mut locked, &keys) {
        return Err(Reply::error(err::WRONGTYPE));
    }
    capture::apply(&mut locked, &plan, limits.ttls, &shared.stm.persist);
    shared.stm.stats.captures.fetch_add(1, Ordering::Relaxed);
    Ok(key_array(keys))
}

/// The STM entry at a key for reading: Ok(None) when absent, WRONGTYPE for another type.
fn read_entry<'l>(
    locked: &'l mut crate::store::Locked,
    key: &[u8],
) -> Result<Option<(&'l StmEntry, u64)>, Reply> {
    match locked.get(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Stm(entry) => Ok(Some((entry, e.expire_at()))),
            _ => Err(Reply::error(err::WRONGTYPE)),
        },
    }
}

/// `FORMAT RESP|JSON`; true for JSON.
pub(super) fn format_json(arg: &[u8]) -> Result<bool, Reply> {
    if is(arg, "JSON") {
        Ok(true)
    } else if is(arg, "RESP") {
        Ok(false)
    } else {
        Err(Reply::error(err::SYNTAX))
    }
}

pub fn get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let json = match args {
        [_, _] => false,
        [_, _, kw, value] if is(kw, "FORMAT") => format_json(value)?,
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    let key = args[1];
    let mut locked = ctx.lock(&[key]);
    let now = locked.now;
    let Some((entry, expire_at)) = read_entry(&mut locked, key)? else {
        return Ok(Reply::Nil);
    };
    Ok(if json {
        Reply::Bulk(
            render::to_json(key, entry, expire_at, now)
                .to_string()
                .into(),
        )
    } else {
        render::to_reply(key, entry, expire_at, now)
    })
}

pub fn tick(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let Some(parsed) = ScopeKey::parse(key) else {
        return Err(error("ERR invalid STM key"));
    };
    let by = match &args[2..] {
        [] => 1,
        [kw, n] if is(kw, "BY") => super::args::int(n)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| error("ERR BY must be a positive integer"))?,
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    let shared = ctx.shared;
    let mut locked = ctx.lock(&[key]);
    let (count, scope) = match entry_at(&mut locked, key)? {
        Some(entry) => {
            entry.turns_since_refresh = entry.turns_since_refresh.saturating_add(by);
            (Reply::Int(entry.turns_since_refresh), entry.scope_key())
        }
        None => (Reply::Nil, parsed),
    };
    shared.stm.persist.send(PersistOp::Tick { scope, by });
    shared.stm.stats.ticks.fetch_add(1, Ordering::Relaxed);
    Ok(count)
}

/// The common head of STM.SUMMARY and STM.CATEGORIES.
pub(super) struct Target<'a> {
    pub(super) user: &'a [u8],
    pub(super) channel: &'a [u8],
    pub(super) server: Option<&'a [u8]>,
    pub(super) persona: Option<u64>,
    pub(super) lineage: Option<Option<i64>>,
}

impl Target<'_> {
    /// The user scope, then the server scope unless in a DM.
    fn scopes(&self) -> Vec<ScopeKey> {
        ScopeKey::for_turn(
            &Bytes::copy_from_slice(self.user),
            self.server.map(Bytes::copy_from_slice).as_ref(),
            &Bytes::copy_from_slice(self.channel),
            self.persona,
        )
    }
}

/// Parses `USER … CHANNEL … SERVER … [PERSONA …] [LINEAGE …]` plus the command's own `tail`
/// keyword (TEXT or SET), returning where the tail's arguments start.
/// The options that name a conversation (USER, CHANNEL, SERVER, PERSONA, LINEAGE), gathered from
/// an STM command's arguments in any order, each at most once.
#[derive(Default)]
pub(super) struct TargetOptions<'a> {
    user: Option<&'a [u8]>,
    channel: Option<&'a [u8]>,
    server: Option<Option<&'a [u8]>>,
    persona: Option<Option<u64>>,
    lineage: Option<Option<i64>>,
}

impl<'a> TargetOptions<'a> {
    /// Takes `option` and its value from `c` if it is one of these options; false if it is not.
    pub(super) fn take(&mut self, option: &[u8], c: &mut Cursor<'_, 'a>) -> Result<bool, Reply> {
        if is(option, "USER") {
            once(&mut self.user, id(c.next_arg()?, "user")?)?;
        } else if is(option, "CHANNEL") {
            once(&mut self.channel, id(c.next_arg()?, "channel")?)?;
        } else if is(option, "SERVER") {
            once(&mut self.server, server_id(c.next_arg()?)?)?;
        } else if is(option, "PERSONA") {
            once(&mut self.persona, persona(c.next_arg()?)?)?;
        } else if is(option, "LINEAGE") {
            once(&mut self.lineage, lineage(c.next_arg()?)?)?;
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    /// The conversation, once USER, CHANNEL and SERVER were all given.
    pub(super) fn finish(self) -> Result<Target<'a>, Reply> {
        let (Some(user), Some(channel), Some(server)) = (self.user, self.channel, self.server)
        else {
            return Err(error("ERR USER, CHANNEL and SERVER are required"));
        };
        Ok(Target {
            user,
            channel,
            server,
            persona: self.persona.flatten(),
            lineage: self.lineage,
        })
    }
}

fn parse_target<'a>(args: &[&'a [u8]], tail: &str) -> Result<(Target<'a>, usize), Reply> {
    let mut options = TargetOptions::default();
    let mut c = Cursor::new(args, 1);
    let tail_at = loop {
        let option = c.next_arg()?;
        if is(option, tail) {
            break c.position();
        }
        if !options.take(option, &mut c)? {
            return Err(Reply::error(err::SYNTAX));
        }
    };
    Ok((options.finish()?, tail_at))
}

/// Cuts `text` to at most `max` characters, at a character boundary.
fn cap_chars(text: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(text);
    match text.char_indices().nth(max) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text.into_owned(),
    }
}

/// Writes distilled memory (summary or categories) to a target's entries and rows.
fn write_distilled(
    ctx: &mut Ctx,
    target: &Target,
    clearing: bool,
    update: &dyn Fn(&mut StmEntry),
    op: &dyn Fn(ScopeKey, Option<i64>) -> PersistOp,
    counter: &AtomicU64,
) -> CmdResult {
    let limits = limits(ctx);
    let scopes = target.scopes();
    let keys: Vec<Bytes> = scopes.iter().map(ScopeKey::key).collect();
    let shared = ctx.shared;
    let mut locked = ctx.lock(&keys);
    if capture::any_wrong_type(&mut locked, &keys) {
        return Err(Reply::error(err::WRONGTYPE));
    }
    let now = locked.now;
    let mut written = Vec::new();
    for (scope, key) in scopes.into_iter().zip(keys) {
        let mut fresh = None;
        let entry: &mut StmEntry = match entry_at(&mut locked, &key) {
            Ok(Some(entry)) => entry,
            _ if clearing => {
                shared.stm.persist.send(op(scope, target.lineage.flatten()));
                continue;
            }
            _ => fresh.insert(StmEntry::new(&scope, now)),
        };
        update(entry);
        if let Some(lineage) = target.lineage {
            entry.lineage = lineage;
        }
        entry.turns_since_refresh = 0;
        entry.distilled_mut().last_refreshed_turn += 1;
        entry.touch(now);
        let deadline = limits.ttls.deadline(entry, now);
        let lineage = entry.lineage;
        match fresh {
            Some(entry) => {
                locked.set(&key, Value::Stm(Box::new(entry)), deadline);
            }
            None => {
                locked.set_expiry(&key, deadline);
            }
        }
        shared.stm.persist.send(op(scope, lineage));
        written.push(key);
    }
    counter.fetch_add(1, Ordering::Relaxed);
    Ok(key_array(written))
}

pub fn summary(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (target, at) = parse_target(args, "TEXT")?;
    if args.len() != at + 1 {
        return Err(Reply::error(err::SYNTAX));
    }
    let max = limits(ctx).max_summary_chars;
    let text = cap_chars(args[at], max);
    let summary = (!text.is_empty()).then_some(text);
    let clearing = summary.is_none();
    write_distilled(
        ctx,
        &target,
        clearing,
        &|entry| entry.distilled_mut().summary = summary.clone(),
        &|scope, lineage| PersistOp::Summary {
            scope,
            lineage,
            summary: summary.clone(),
        },
        &ctx.shared.stm.stats.summaries,
    )
}

/// A category slug: 1 to 64 bytes of letters, digits, `_`, `-`, `.`.
fn valid_slug(slug: &[u8]) -> bool {
    (1..=64).contains(&slug.len())
        && slug
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

pub fn categories(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (target, at) = parse_target(args, "SET")?;
    let pairs = &args[at..];
    if pairs.len() % 2 != 0 {
        return Err(Reply::error(err::SYNTAX));
    }
    let max = limits(ctx).max_summary_chars;
    let mut map: Vec<(String, String)> = Vec::new();
    for pair in pairs.chunks(2) {
        if !valid_slug(pair[0]) {
            return Err(error("ERR invalid category slug"));
        }
        let slug = String::from_utf8_lossy(pair[0]).into_owned();
        let body = cap_chars(pair[1], max);
        map.retain(|(s, _)| *s != slug);
        if !body.is_empty() {
            map.push((slug, body));
        }
    }
    map.sort();
    let clearing = map.is_empty();
    write_distilled(
        ctx,
        &target,
        clearing,
        &|entry| entry.distilled_mut().categories = map.clone(),
        &|scope, lineage| PersistOp::Categories {
            scope,
            lineage,
            categories: map.clone(),
        },
        &ctx.shared.stm.stats.category_writes,
    )
}

/// In cluster mode, the keys of slots this node owns: the warm start may have restored copies of
/// other nodes' slots, which their owners answer for.
pub fn owned(ctx: &Ctx, mut keys: Vec<Bytes>) -> Vec<Bytes> {
    if let Some(cluster) = &ctx.shared.cluster {
        keys.retain(|key| cluster.owns(crate::cluster::key_slot(key)));
    }
    keys
}

/// One STM.RECENT entry: its order (`last_updated`, then the node's write sequence; newest
/// first) and its rendered form (a RESP reply, or its JSON text as a bulk string).
type RecentItem = ((u64, u64), Reply);

pub fn recent(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (mut found, limit, json) = recent_local(ctx, args)?;
    if let Some(cluster) = ctx.shared.cluster.clone() {
        // Owner-wide: every other primary answers from its own owner index (`recent_peer`),
        // encoded in this client's protocol; the newest `limit` of all win.
        let protocol: &[u8] = if ctx.conn.resp3 { b"3" } else { b"2" };
        let mut request: Vec<&[u8]> = vec![b"STM.RECENT", protocol];
        request.extend_from_slice(&args[1..]);
        for frame in ask_peers(ctx, &cluster, &request)? {
            found.extend(peer_items(frame, json)?);
        }
        found.sort_by_key(|(order, _)| std::cmp::Reverse(*order));
        found.truncate(limit);
    }
    let items = found.into_iter().map(|(_, item)| item);
    if json {
        let texts: Vec<String> = items
            .map(|item| match item {
                Reply::Bulk(text) => String::from_utf8_lossy(&text).into_owned(),
                _ => String::new(),
            })
            .collect();
        return Ok(Reply::Bulk(format!("[{}]", texts.join(",")).into()));
    }
    Ok(Reply::Array(items.collect()))
}

/// Asks every other primary (see [`crate::cluster::peers`]), off the tokio worker.
pub(super) fn ask_peers(
    ctx: &Ctx,
    cluster: &std::sync::Arc<crate::cluster::Cluster>,
    request: &[&[u8]],
) -> Result<Vec<redis_protocol::resp2::types::OwnedFrame>, Reply> {
    let password = ctx.shared.config.read().requirepass.clone();
    crate::cluster::peers::ask_all(cluster, &password, request).map_err(Reply::error)
}

/// One row of a peer's answer to an owner-wide read (STM.RECENT, STM.CONTEXT):
/// `[last_updated, write_seq, bulk…]`, the order the asking node merges by.
pub(super) fn peer_row<const N: usize>(order: (u64, u64), bulks: [Bytes; N]) -> Reply {
    let mut row = vec![Reply::Int(order.0 as i64), Reply::Int(order.1 as i64)];
    row.extend(bulks.into_iter().map(Reply::Bulk));
    Reply::Array(row)
}

/// A decoded [`peer_row`]: its order and its `N` bulk strings.
pub(super) type PeerRow<const N: usize> = ((u64, u64), [Bytes; N]);

/// A peer's answer of [`peer_row`]s, each with `N` bulk strings; anything else is an error naming
/// `command`.
pub(super) fn peer_rows<const N: usize>(
    frame: redis_protocol::resp2::types::OwnedFrame,
    command: &str,
) -> Result<Vec<PeerRow<N>>, Reply> {
    use redis_protocol::resp2::types::OwnedFrame as F;
    let bad = || {
        Reply::error(format!(
            "ERR a cluster node answered {command} in an unexpected form"
        ))
    };
    let F::Array(rows) = frame else {
        return Err(bad());
    };
    rows.into_iter()
        .map(|row| {
            let F::Array(parts) = row else {
                return Err(bad());
            };
            let mut parts = parts.into_iter();
            let (Some(F::Integer(updated)), Some(F::Integer(seq))) = (parts.next(), parts.next())
            else {
                return Err(bad());
            };
            let bulks: Vec<Bytes> = parts
                .map(|part| match part {
                    F::BulkString(body) => Ok(Bytes::from(body)),
                    _ => Err(bad()),
                })
                .collect::<Result<_, _>>()?;
            let bulks = <[Bytes; N]>::try_from(bulks).map_err(|_| bad())?;
            Ok(((updated as u64, seq as u64), bulks))
        })
        .collect()
}

/// A peer's `recent_peer` answer as items.
fn peer_items(
    frame: redis_protocol::resp2::types::OwnedFrame,
    json: bool,
) -> Result<Vec<RecentItem>, Reply> {
    Ok(peer_rows::<1>(frame, "STM.RECENT")?
        .into_iter()
        .map(|(order, [body])| {
            let item = if json {
                Reply::Bulk(body)
            } else {
                Reply::Raw(body)
            };
            (order, item)
        })
        .collect())
}

/// `CLUSTER PEER <me> STM.RECENT <2|3> <STM.RECENT's arguments>`: this node's entries only, each
/// as `[last_updated, write_seq, rendered]`, rendered in the asking client's protocol.
pub fn recent_peer(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let resp3 = match args.get(1).copied() {
        Some(b"2") => false,
        Some(b"3") => true,
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    let mut local: Vec<&[u8]> = vec![args[0]];
    local.extend_from_slice(&args[2..]);
    let (found, _, _) = recent_local(ctx, &local)?;
    Ok(Reply::Array(
        found
            .into_iter()
            .map(|(order, item)| {
                let body = match item {
                    Reply::Bulk(text) => text,
                    resp => {
                        let mut out = bytes::BytesMut::new();
                        resp.encode(resp3, &mut out);
                        out.freeze()
                    }
                };
                peer_row(order, [body])
            })
            .collect(),
    ))
}

/// STM.RECENT from this node's owner index: the newest `limit` items, the limit, and whether
/// the client asked for JSON.
fn recent_local(ctx: &mut Ctx, args: &[&[u8]]) -> Result<(Vec<RecentItem>, usize, bool), Reply> {
    let (mut owner, mut exclude, mut lineage_filter, mut limit, mut json) =
        (None, None, None, None, None);
    let mut c = Cursor::new(args, 1);
    while !c.is_done() {
        let option = c.next_arg()?;
        if is(option, "USER") {
            once(&mut owner, (Scope::User, id(c.next_arg()?, "user")?))?;
        } else if is(option, "SERVER") {
            once(&mut owner, (Scope::Server, id(c.next_arg()?, "server")?))?;
        } else if is(option, "EXCLUDE") {
            once(&mut exclude, id(c.next_arg()?, "channel")?)?;
        } else if is(option, "LINEAGE") {
            once(&mut lineage_filter, lineage(c.next_arg()?)?)?;
        } else if is(option, "LIMIT") {
            once(&mut limit, super::args::count(c.next_arg()?)?)?;
        } else if is(option, "FORMAT") {
            once(&mut json, format_json(c.next_arg()?)?)?;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let Some((scope, owner)) = owner else {
        return Err(error("ERR USER or SERVER is required"));
    };
    let limit = limit.unwrap_or(3);
    let json = json.unwrap_or(false);
    let index = crate::stm::index::of(ctx.shared.store.db(ctx.conn.db));
    let keys = match scope {
        Scope::User => index.user_keys(owner),
        Scope::Server => index.server_keys(owner),
    };
    // ACL: the entries of keys the user may not read are left out (filtered, not refused).
    let keys: Vec<Bytes> = owned(ctx, keys)
        .into_iter()
        .filter(|k| super::acl_key_allowed(ctx, k, crate::acl::rules::READ))
        .collect();
    let locked = ctx.lock(&keys);
    let now = locked.now;
    let mut found: Vec<(&[u8], &StmEntry, u64)> = Vec::new();
    for (key, entry) in locked.entries_of(&keys) {
        if let Value::Stm(stm) = &entry.value {
            let keep = exclude.is_none_or(|c| stm.channel() != c)
                && lineage_filter.is_none_or(|l| stm.lineage == l);
            if keep {
                found.push((key, stm, entry.expire_at()));
            }
        }
    }
    found.sort_by_key(|(_, e, _)| std::cmp::Reverse((e.last_updated, e.write_seq)));
    found.truncate(limit);
    let items = found
        .iter()
        .map(|(k, e, at)| {
            let item = if json {
                Reply::Bulk(render::to_json(k, e, *at, now).to_string().into())
            } else {
                render::to_reply(k, e, *at, now)
            };
            ((e.last_updated, e.write_seq), item)
        })
        .collect();
    Ok((items, limit, json))
}

/// The keys STM.FORGET would remove, from the STM index, for the ACL check: a user whose key
/// rules do not cover all of them is refused and nothing is deleted.
pub fn forget_keys(ctx: &Ctx, args: &[&[u8]]) -> Vec<Bytes> {
    forget_plan(ctx, args)
        .map(|(keys, _)| keys)
        .unwrap_or_default()
}

/// The keys a forget removes, and the row operation for the persistence.
fn forget_plan(ctx: &Ctx, args: &[&[u8]]) -> Result<(Vec<Bytes>, Option<PersistOp>), Reply> {
    let (kind, value) = (args[1], args[2]);
    let index = crate::stm::index::of(ctx.shared.store.db(ctx.conn.db));
    let (keys, op): (Vec<Bytes>, Option<PersistOp>) = if is(kind, "CHANNEL") {
        let channel = id(value, "channel")?;
        (
            index.channel_keys(channel),
            Some(PersistOp::ForgetChannel {
                channel: Bytes::copy_from_slice(channel),
            }),
        )
    } else if is(kind, "USER") {
        let user = id(value, "user")?;
        (
            owned(ctx, index.user_keys(user)),
            Some(PersistOp::ForgetUser {
                user: Bytes::copy_from_slice(user),
            }),
        )
    } else if is(kind, "KEY") {
        (vec![Bytes::copy_from_slice(value)], None)
    } else {
        return Err(Reply::error(err::SYNTAX));
    };
    Ok((keys, op))
}

pub fn forget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let local = forget_local(ctx, args)?;
    let Some(cluster) = ctx.shared.cluster.clone().filter(|_| is(args[1], "USER")) else {
        return Ok(local);
    };
    // Owner-wide: the user's entries on every other primary too (`CLUSTER PEER … STM.FORGET`
    // runs `forget_local` there); the counts add up.
    let mut deleted = match local {
        Reply::Int(n) => n,
        _ => 0,
    };
    for frame in ask_peers(ctx, &cluster, &[b"STM.FORGET", b"USER", args[2]])? {
        match frame {
            redis_protocol::resp2::types::OwnedFrame::Integer(n) => deleted += n,
            _ => {
                return Err(error(
                    "ERR a cluster node answered STM.FORGET in an unexpected form",
                ))
            }
        }
    }
    Ok(Reply::Int(deleted))
}

/// STM.FORGET on this node's entries only.
pub fn forget_local(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // The ACL check (dispatch) ran over the same keys: `forget_keys`.
    let (keys, op) = forget_plan(ctx, args)?;
    let shared = ctx.shared;
    let mut locked = ctx.lock(&keys);
    let mut deleted = 0;
    let mut key_scope = None;
    for key in &keys {
        let entry = match locked.get(key).map(|e| &e.value) {
            Some(Value::Stm(entry)) => entry,
            Some(_) if op.is_none() => return Err(Reply::error(err::WRONGTYPE)),
            _ => continue,
        };
        // The index may be a moment old: delete only what still matches.
        let matches = match &op {
            Some(PersistOp::ForgetChannel { channel }) => entry.channel() == *channel,
            Some(PersistOp::ForgetUser { user }) => {
                entry.scope == Scope::User && entry.user() == Some(user)
            }
            _ => true,
        };
        if matches {
            if op.is_none() {
                key_scope = Some(entry.scope_key());
            }
            locked.remove(key);
            deleted += 1;
        }
    }
    let op = match op {
        Some(op) => op,
        None => match key_scope.or_else(|| ScopeKey::parse(args[2])) {
            Some(scope) => PersistOp::ForgetScope { scope },
            None => return Err(error("ERR invalid STM key")),
        },
    };
    shared.stm.persist.send(op);
    shared
        .stm
        .stats
        .forgets
        .fetch_add(deleted, Ordering::Relaxed);
    Ok(Reply::Int(deleted as i64))
}
