//! The capture pipeline: skip conditions, cleaning, one entry per persona in both scopes, the cap,
//! the sliding expiry, the live-scope tick and the scope-row operations. Cleaning runs before any
//! lock is taken; only [`apply`] touches the keyspace.

use super::text::TextCleaner;
use super::{Ids, Role, Scope, ScopeKey, Snapshot, StmEntry};
use crate::protocol::Reply;
use crate::scope_rows::{PersistHandle, PersistOp};
use crate::store::{Locked, Value};
use bytes::Bytes;
use std::borrow::Cow;

/// One `MSG` item as sent.
pub struct MessageItem<'a> {
    pub role: Role,
    pub speaker: Option<&'a [u8]>,
    pub content: &'a [u8],
}

/// One `REPLY` item as sent.
pub struct ReplyItem<'a> {
    pub persona: Option<u64>,
    pub lineage: Option<i64>,
    pub speaker: Option<&'a [u8]>,
    pub content: &'a [u8],
}

/// A parsed STM.CAPTURE.
pub struct CaptureRequest<'a> {
    pub user: &'a [u8],
    pub channel: &'a [u8],
    /// None for a direct message (`SERVER DM`).
    pub server: Option<&'a [u8]>,
    pub parent: Option<&'a [u8]>,
    pub privacy_full: bool,
    pub stop: bool,
    pub messages: Vec<MessageItem<'a>>,
    pub replies: Vec<ReplyItem<'a>>,
}

/// Why a capture wrote nothing (each counted in `INFO stm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    Stop,
    Privacy,
    NoMessages,
    NoReplies,
    /// Cleaning left no item at all.
    Empty,
}

/// What a capture will write: the cleaned snapshot and the scopes of each persona.
pub struct CapturePlan {
    /// The cleaned messages with the conversation's ids and parent.
    pub snapshot: Snapshot,
    /// Per persona, in order of its first REPLY: its lineage and its scopes (user, then server).
    pub personas: Vec<(Option<i64>, Vec<ScopeKey>)>,
    /// True in a DM: the user scope is the live scope.
    pub direct_message: bool,
    /// The capture's clock: message times, `last_updated` and the expiry all use it.
    pub now: u64,
}

impl CapturePlan {
    /// Every key the capture writes, in reply order (user key, then server key, per persona).
    pub fn keys(&self) -> Vec<Bytes> {
        self.personas
            .iter()
            .flat_map(|(_, scopes)| scopes.iter().map(ScopeKey::key))
            .collect()
    }
}

/// The first skip condition that holds for the command as sent, in the spec's order.
pub fn skip_reason(req: &CaptureRequest) -> Option<Skip> {
    if req.stop {
        Some(Skip::Stop)
    } else if req.privacy_full {
        Some(Skip::Privacy)
    } else if req.messages.is_empty() {
        Some(Skip::NoMessages)
    } else if req.replies.is_empty() {
        Some(Skip::NoReplies)
    } else {
        None
    }
}

/// The text of an argument. Valid UTF-8 (nearly always) is borrowed after the fast check;
/// `from_utf8_lossy` alone walks every byte several times slower.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Cleans the items and lays out the entries to write, or says why nothing is written.
pub fn plan(
    req: &CaptureRequest,
    cleaner: &TextCleaner,
    max_messages: usize,
    now: u64,
) -> Result<CapturePlan, Skip> {
    if let Some(skip) = skip_reason(req) {
        return Err(skip);
    }
    let conversation = req
        .messages
        .iter()
        .map(|m| (m.role, m.speaker, m.content))
        .chain(
            req.replies
                .iter()
                .map(|r| (Role::Model, r.speaker, r.content)),
        );
    let mut cleaned: Vec<(Role, Option<Cow<'_, str>>, Cow<'_, str>)> =
        Vec::with_capacity(req.messages.len() + req.replies.len());
    for (role, speaker, content) in conversation {
        let content = match text(content) {
            Cow::Borrowed(content) => cleaner.clean_cow(content),
            Cow::Owned(content) => Cow::Owned(cleaner.clean(&content)),
        };
        if !content.is_empty() {
            cleaned.push((role, speaker.map(text), content));
        }
    }
    if cleaned.is_empty() {
        return Err(Skip::Empty);
    }
    let keep_from = cleaned.len().saturating_sub(max_messages);
    let ids = Ids {
        user: Some(req.user),
        server: req.server,
        channel: req.channel,
        parent: req.parent,
    };
    let snapshot = Snapshot::new(
        ids,
        cleaned[keep_from..]
            .iter()
            .map(|(role, speaker, content)| (*role, speaker.as_deref(), content.as_ref())),
        now,
    );

    let user = Bytes::copy_from_slice(req.user);
    let channel = Bytes::copy_from_slice(req.channel);
    let server = req.server.map(Bytes::copy_from_slice);
    let mut personas: Vec<(Option<u64>, Option<i64>, Vec<ScopeKey>)> = Vec::new();
    for reply in &req.replies {
        if personas.iter().any(|(p, _, _)| *p == reply.persona) {
            continue;
        }
        let scopes = ScopeKey::for_turn(&user, server.as_ref(), &channel, reply.persona);
        personas.push((reply.persona, reply.lineage, scopes));
    }
    Ok(CapturePlan {
        snapshot,
        personas: personas.into_iter().map(|(_, l, s)| (l, s)).collect(),
        direct_message: server.is_none(),
        now,
    })
}

/// Expiry settings in ms.
#[derive(Clone, Copy)]
pub struct Ttls {
    pub plain: u64,
    pub distilled: u64,
}

impl Ttls {
    /// The deadline of an entry written at `now`.
    pub fn deadline(&self, entry: &StmEntry, now: u64) -> u64 {
        now + if entry.has_distilled() {
            self.distilled
        } else {
            self.plain
        }
    }
}

/// The STM entry at `key` for a write: Ok(None) when absent, WRONGTYPE for another type.
pub fn entry_at<'l>(locked: &'l mut Locked, key: &[u8]) -> Result<Option<&'l mut StmEntry>, Reply> {
    match locked.get_mut(key).map(|e| &mut e.value) {
        None => Ok(None),
        Some(Value::Stm(entry)) => Ok(Some(entry)),
        Some(_) => Err(Reply::error(crate::spec::errors::WRONGTYPE)),
    }
}

/// True when any of `keys` holds a value that is not an STM entry.
pub fn any_wrong_type(locked: &mut Locked, keys: &[Bytes]) -> bool {
    keys.iter().any(|k| {
        locked
            .get(k)
            .is_some_and(|e| !matches!(e.value, Value::Stm(_)))
    })
}

/// Writes the plan into the locked keys (the caller locked `plan.keys()` and checked their types).
pub fn apply(locked: &mut Locked, plan: &CapturePlan, ttls: Ttls, persist: &PersistHandle) {
    let now = plan.now;
    for (lineage, scopes) in &plan.personas {
        for scope in scopes {
            let live = (scope.scope == Scope::Server) != plan.direct_message;
            let key = scope.key();
            let deadline = match entry_at(locked, &key) {
                Ok(Some(entry)) => {
                    write_snapshot(entry, plan, *lineage, live, now);
                    persist.ensure_row(&mut entry.row, scope, *lineage);
                    Some(ttls.deadline(entry, now))
                }
                _ => None,
            };
            match deadline {
                Some(at) => {
                    locked.set_expiry(&key, at);
                }
                None => {
                    let mut entry = StmEntry::new(scope, now);
                    write_snapshot(&mut entry, plan, *lineage, live, now);
                    persist.ensure_row(&mut entry.row, scope, *lineage);
                    let at = ttls.deadline(&entry, now);
                    locked.set(&key, Value::Stm(Box::new(entry)), at);
                }
            }
            if live {
                persist.send(PersistOp::Tick {
                    scope: scope.clone(),
                    by: 1,
                });
            }
        }
    }
}

/// A capture replaces the messages, parent and lineage, keeps distilled memory and counters.
fn write_snapshot(
    entry: &mut StmEntry,
    plan: &CapturePlan,
    lineage: Option<i64>,
    live: bool,
    now: u64,
) {
    entry.set_snapshot(&plan.snapshot);
    entry.lineage = lineage;
    entry.touch(now);
    if live {
        entry.turns_since_refresh += 1;
    }
}
