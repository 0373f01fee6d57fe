//! STM.CONTEXT: the read side of a bot's turn in one round trip. Parsing, choosing the entries
//! through the owner index (never a keyspace scan) and shaping the reply live here; the wording is
//! in `crate::stm::context`.

use super::args::{count, is, Cursor};
use super::stm::{format_json, once, Target, TargetOptions};
use super::{err, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::stm::context::{live_block, other_channel_block, Mode, Style};
use crate::stm::{ScopeKey, StmEntry};
use crate::store::Value;
use bytes::Bytes;

/// The parsed command, defaults applied.
struct ContextRequest<'a> {
    user: &'a [u8],
    channel: &'a [u8],
    /// None in a direct message.
    server: Option<&'a [u8]>,
    persona: Option<u64>,
    /// None: every lineage; Some(None): only entries without one.
    lineage: Option<Option<i64>>,
    bot: String,
    others: usize,
    crude: usize,
    mode: Mode,
    cadence: i64,
    cross_server: bool,
    /// None: the server's clock.
    now: Option<u64>,
    json: bool,
}

/// `BOT <name>`: 1 to 256 bytes without control characters (it is written into the prompt, where a
/// newline would break the block).
fn bot_name(arg: &[u8]) -> Result<String, Reply> {
    if arg.is_empty() || arg.len() > 256 || arg.iter().any(u8::is_ascii_control) {
        return Err(Reply::error("ERR invalid bot name"));
    }
    Ok(String::from_utf8_lossy(arg).into_owned())
}

fn mode(arg: &[u8]) -> Result<Mode, Reply> {
    if is(arg, "SUPERSEDE") {
        Ok(Mode::Supersede)
    } else if is(arg, "CRUDE_SUMMARY") {
        Ok(Mode::CrudeSummary)
    } else {
        Err(Reply::error(err::SYNTAX))
    }
}

fn cadence(arg: &[u8]) -> Result<i64, Reply> {
    super::args::int(arg)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| Reply::error("ERR CADENCE must be a positive integer"))
}

fn parse<'a>(args: &[&'a [u8]]) -> Result<ContextRequest<'a>, Reply> {
    let mut target = TargetOptions::default();
    let (mut bot, mut others, mut crude, mut mode_of, mut cadence_of) =
        (None, None, None, None, None);
    let (mut cross_server, mut now, mut json) = (None, None, None);
    let mut c = Cursor::new(args, 1);
    while !c.is_done() {
        let option = c.next_arg()?;
        if target.take(option, &mut c)? {
            continue;
        }
        if is(option, "BOT") {
            once(&mut bot, bot_name(c.next_arg()?)?)?;
        } else if is(option, "OTHERS") {
            once(&mut others, count(c.next_arg()?)?)?;
        } else if is(option, "CRUDE") {
            once(&mut crude, count(c.next_arg()?)?)?;
        } else if is(option, "MODE") {
            once(&mut mode_of, mode(c.next_arg()?)?)?;
        } else if is(option, "CADENCE") {
            once(&mut cadence_of, cadence(c.next_arg()?)?)?;
        } else if is(option, "CROSS-SERVER") {
            once(&mut cross_server, true)?;
        } else if is(option, "NOW") {
            once(&mut now, count(c.next_arg()?)? as u64)?;
        } else if is(option, "FORMAT") {
            once(&mut json, format_json(c.next_arg()?)?)?;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let Target {
        user,
        channel,
        server,
        persona,
        lineage,
    } = target.finish()?;
    Ok(ContextRequest {
        user,
        channel,
        server,
        persona,
        lineage,
        bot: bot.unwrap_or_else(|| "the assistant".to_string()),
        others: others.unwrap_or(3),
        crude: crude.unwrap_or(6),
        mode: mode_of.unwrap_or(Mode::Supersede),
        cadence: cadence_of.unwrap_or(5),
        cross_server: cross_server.unwrap_or(false),
        now,
        json: json.unwrap_or(false),
    })
}

impl ContextRequest<'_> {
    /// The conversation's own entry: the server scope in a server, the user scope in a DM.
    fn live_key(&self) -> Bytes {
        let user = Bytes::copy_from_slice(self.user);
        let server = self.server.map(Bytes::copy_from_slice);
        let channel = Bytes::copy_from_slice(self.channel);
        let scopes = ScopeKey::for_turn(&user, server.as_ref(), &channel, self.persona);
        scopes.last().map(ScopeKey::key).unwrap_or_default()
    }

    /// How the blocks are worded (BOT, CRUDE, MODE).
    fn style(&self) -> Style<'_> {
        Style {
            bot: &self.bot,
            crude: self.crude,
            mode: self.mode,
        }
    }

    /// Whether an entry of the candidate lists belongs among the other-channel memories: not this
    /// channel, the asked lineage, and for a user-scope entry seen from a server, another server
    /// (a DM never shows in a server channel).
    fn shows_elsewhere(&self, entry: &StmEntry) -> bool {
        if entry.channel() == self.channel || self.lineage.is_some_and(|l| entry.lineage != l) {
            return false;
        }
        match (self.server, entry.scope) {
            (None, _) => true,
            (Some(here), crate::stm::Scope::User) => entry.server().is_some_and(|s| s != here),
            (Some(here), crate::stm::Scope::Server) => entry.server() == Some(here),
        }
    }
}

/// Candidates from the owner index: this server's server scopes, or the user's user scopes in a
/// DM, plus the user's user scopes of other servers with CROSS-SERVER. In cluster mode, only the
/// keys of slots this node owns: the other nodes answer for theirs (`context_peer`).
fn candidates(ctx: &Ctx, req: &ContextRequest) -> Vec<Bytes> {
    let index = crate::stm::index::of(ctx.shared.store.db(ctx.conn.db));
    let mut candidates = match req.server {
        Some(server) => index.server_keys(server),
        None => index.user_keys(req.user),
    };
    if req.server.is_some() && req.cross_server {
        candidates.extend(index.user_keys(req.user));
    }
    super::stm::owned(ctx, candidates)
}

/// The keys STM.CONTEXT would read (the candidates and the live key), for the ACL check.
pub fn context_keys(ctx: &Ctx, args: &[&[u8]]) -> Vec<Bytes> {
    parse(args)
        .map(|req| {
            let mut keys = candidates(ctx, &req);
            keys.push(req.live_key());
            keys
        })
        .unwrap_or_default()
}

/// One other-channel block: its order (`last_updated`, then the node's write sequence; newest
/// first), the entry's key and the rendered text.
type Block = ((u64, u64), Bytes, String);

/// This node's other-channel blocks among `candidates`, newest first, at most OTHERS (an entry with
/// nothing to show gives no block and does not count).
fn other_blocks(
    locked: &crate::store::Locked,
    req: &ContextRequest,
    candidates: &[Bytes],
    now: u64,
) -> Vec<Block> {
    let mut found: Vec<(&[u8], &StmEntry)> = locked
        .entries_of(candidates)
        .into_iter()
        .filter_map(|(key, e)| match &e.value {
            Value::Stm(stm) if req.shows_elsewhere(stm) => Some((key, stm.as_ref())),
            _ => None,
        })
        .collect();
    found.sort_by_key(|(_, e)| std::cmp::Reverse((e.last_updated, e.write_seq)));
    let style = req.style();
    found
        .into_iter()
        .filter_map(|(key, entry)| {
            other_channel_block(entry, &style, now).map(|block| {
                let order = (entry.last_updated, entry.write_seq);
                (order, Bytes::copy_from_slice(key), block)
            })
        })
        .take(req.others)
        .collect()
}

pub fn context(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let req = parse(args)?;
    let live_key = req.live_key();
    let (mut blocks, live, now) = {
        let candidates = candidates(ctx, &req);
        let mut keys = candidates.clone();
        keys.push(live_key.clone());
        let locked = ctx.lock(&keys);
        let now = req.now.unwrap_or(locked.now);
        // The live block (None without a summary or categories) and the live turn count.
        let live = match locked
            .entries_of(&[&live_key])
            .first()
            .map(|(_, e)| &e.value)
        {
            Some(Value::Stm(entry)) => {
                Some((live_block(entry, &req.style()), entry.turns_since_refresh))
            }
            Some(_) => return Err(Reply::error(err::WRONGTYPE)),
            None => None,
        };
        (other_blocks(&locked, &req, &candidates, now), live, now)
    };
    if let Some(cluster) = ctx.shared.cluster.clone() {
        // Owner-wide: the other channels' entries live on the nodes owning their channels' slots.
        // Every other primary answers its own blocks (`context_peer`) for this node's NOW, so the
        // relative times agree; the newest OTHERS of all win. The live entry is this node's: the
        // command is routed by its channel.
        let now_arg = now.to_string();
        let mut request: Vec<&[u8]> = args.to_vec();
        if req.now.is_none() {
            request.extend_from_slice(&[b"NOW", now_arg.as_bytes()]);
        }
        for frame in super::stm::ask_peers(ctx, &cluster, &request)? {
            let rows = super::stm::peer_rows::<2>(frame, "STM.CONTEXT")?;
            blocks.extend(rows.into_iter().map(|(order, [key, block])| {
                (order, key, String::from_utf8_lossy(&block).into_owned())
            }));
        }
        blocks.sort_by_key(|(order, _, _)| std::cmp::Reverse(*order));
        blocks.truncate(req.others);
    }
    let (mut items, mut item_keys): (Vec<String>, Vec<Bytes>) = blocks
        .into_iter()
        .map(|(_, key, block)| (block, key))
        .unzip();
    let turns = live.as_ref().map_or(0, |(_, turns)| *turns);
    let nudge = live.is_some() && turns >= req.cadence;
    if let Some((Some(block), _)) = live {
        items.push(block);
        item_keys.push(live_key);
    }
    Ok(if req.json {
        let keys: Vec<String> = item_keys
            .iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        let body = serde_json::json!({
            "items": items,
            "nudge": nudge,
            "turns_since_refresh": turns,
            "keys": keys,
        });
        Reply::Bulk(body.to_string().into())
    } else {
        Reply::Map(vec![
            (
                Reply::bulk_str("items"),
                Reply::Array(items.into_iter().map(|s| Reply::Bulk(s.into())).collect()),
            ),
            (Reply::bulk_str("nudge"), Reply::Bool(nudge)),
            (Reply::bulk_str("turns_since_refresh"), Reply::Int(turns)),
            (
                Reply::bulk_str("keys"),
                Reply::Array(item_keys.into_iter().map(Reply::Bulk).collect()),
            ),
        ])
    })
}

/// `CLUSTER PEER <me> STM.CONTEXT <STM.CONTEXT's arguments>` (the asking node always passes NOW):
/// this node's other-channel blocks, newest first, at most OTHERS, each as
/// `[last_updated, write_seq, key, block]`. No live entry: the asking node owns it.
pub fn context_peer(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let req = parse(args)?;
    let candidates = candidates(ctx, &req);
    let locked = ctx.lock(&candidates);
    let now = req.now.unwrap_or(locked.now);
    let blocks = other_blocks(&locked, &req, &candidates, now);
    Ok(Reply::Array(
        blocks
            .into_iter()
            .map(|(order, key, block)| super::stm::peer_row(order, [key, block.into()]))
            .collect(),
    ))
}
