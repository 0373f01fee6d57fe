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

    /// Whether an entry of the candidate lists belongs among the other-channel memories: not this
    /// channel, the asked lineage, and for a user-scope entry seen from a server, another server
    /// (a DM never shows in a server channel).
    fn shows_elsewhere(&self, entry: &StmEntry) -> bool {
        if entry.channel == self.channel || self.lineage.is_some_and(|l| entry.lineage != l) {
            return false;
        }
        match (self.server, entry.scope) {
            (None, _) => true,
            (Some(here), crate::stm::Scope::User) => {
                entry.server.as_deref().is_some_and(|s| s != here)
            }
            (Some(here), crate::stm::Scope::Server) => entry.server.as_deref() == Some(here),
        }
    }
}

/// Candidates from the owner index: this server's server scopes, or the user's user scopes in a
/// DM, plus the user's user scopes of other servers with CROSS-SERVER.
fn candidates(ctx: &Ctx, req: &ContextRequest) -> Vec<Bytes> {
    let index = &ctx.shared.store.db(ctx.conn.db).stm_index;
    let mut candidates = match req.server {
        Some(server) => index.server_keys(server),
        None => index.user_keys(req.user),
    };
    if req.server.is_some() && req.cross_server {
        candidates.extend(index.user_keys(req.user));
    }
    // Cluster mode: only the entries of slots this node owns (gathering the other nodes' entries
    // is not done yet: README, Cluster).
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

pub fn context(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let req = parse(args)?;
    let candidates = candidates(ctx, &req);
    let live_key = req.live_key();
    let mut keys = candidates.clone();
    keys.push(live_key.clone());
    let locked = ctx.lock(&keys);
    let now = req.now.unwrap_or(locked.now);
    let live = match locked
        .entries_of(&[&live_key])
        .first()
        .map(|(_, e)| &e.value)
    {
        Some(Value::Stm(entry)) => Some(entry.as_ref()),
        Some(_) => return Err(Reply::error(err::WRONGTYPE)),
        None => None,
    };
    let mut found: Vec<(&[u8], &StmEntry)> = locked
        .entries_of(&candidates)
        .into_iter()
        .filter_map(|(key, e)| match &e.value {
            Value::Stm(stm) if req.shows_elsewhere(stm) => Some((key, stm.as_ref())),
            _ => None,
        })
        .collect();
    found.sort_by_key(|(_, e)| std::cmp::Reverse((e.last_updated, e.write_seq)));
    let style = Style {
        bot: &req.bot,
        crude: req.crude,
        mode: req.mode,
    };
    let mut items: Vec<String> = Vec::new();
    let mut item_keys: Vec<Bytes> = Vec::new();
    for (key, entry) in found {
        if items.len() >= req.others {
            break;
        }
        if let Some(block) = other_channel_block(entry, &style, now) {
            items.push(block);
            item_keys.push(Bytes::copy_from_slice(key));
        }
    }
    if let Some(block) = live.and_then(|e| live_block(e, &style)) {
        items.push(block);
        item_keys.push(live_key);
    }
    let turns = live.map_or(0, |e| e.turns_since_refresh);
    let nudge = live.is_some() && turns >= req.cadence;
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
