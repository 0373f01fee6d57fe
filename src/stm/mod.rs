//! Short-term memory: the entry type stored under `shortterm:…` keys, the key format and scopes.

pub mod capture;
pub mod compress;
pub mod context;
pub mod index;
pub mod messages;
pub mod render;
pub mod text;

use bytes::Bytes;
pub use messages::{Ids, Message, Snapshot};

/// Which scope an entry belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `shortterm:user:<user>:<channel>[:<persona>]`: one user's view across channels.
    User,
    /// `shortterm:server:<server>:<channel>[:<persona>]`: a channel's shared history.
    Server,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Server => "server",
        }
    }
}

/// Prefix of every STM key.
pub const KEY_PREFIX: &str = "shortterm:";

/// The identity of one scope: what its key and its database row are made of.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ScopeKey {
    pub scope: Scope,
    /// The user (user scope only).
    pub user: Option<Bytes>,
    /// The server (server scope; user scope in a server channel; None in DMs).
    pub server: Option<Bytes>,
    pub channel: Bytes,
    /// None for persona `0` / absent.
    pub persona: Option<u64>,
}

impl ScopeKey {
    /// `shortterm:user:<user>:<channel>[:<persona>]` or `shortterm:server:<server>:<channel>[:<persona>]`;
    /// in cluster mode the channel is the hash tag, `shortterm:user:<user>:{<channel>}[:<persona>]`,
    /// so every key of one conversation lives in the slot of its channel ([`cluster_keys`]).
    pub fn key(&self) -> Bytes {
        let owner = match self.scope {
            Scope::User => self.user.as_deref(),
            Scope::Server => self.server.as_deref(),
        }
        .unwrap_or_default();
        let tagged = cluster_keys();
        let mut key =
            Vec::with_capacity(KEY_PREFIX.len() + 10 + owner.len() + self.channel.len() + 12);
        key.extend_from_slice(KEY_PREFIX.as_bytes());
        key.extend_from_slice(self.scope.as_str().as_bytes());
        key.push(b':');
        key.extend_from_slice(owner);
        key.push(b':');
        if tagged {
            key.push(b'{');
        }
        key.extend_from_slice(&self.channel);
        if tagged {
            key.push(b'}');
        }
        if let Some(persona) = self.persona {
            key.push(b':');
            key.extend_from_slice(itoa::Buffer::new().format(persona).as_bytes());
        }
        Bytes::from(key)
    }

    /// The scopes one conversation writes: the user scope, then the server scope unless in a DM.
    pub fn for_turn(
        user: &Bytes,
        server: Option<&Bytes>,
        channel: &Bytes,
        persona: Option<u64>,
    ) -> Vec<ScopeKey> {
        // Sized for both scopes at once: a push that grows the vector costs a reallocation.
        let mut scopes = Vec::with_capacity(2);
        scopes.push(ScopeKey {
            scope: Scope::User,
            user: Some(user.clone()),
            server: server.cloned(),
            channel: channel.clone(),
            persona,
        });
        if let Some(server) = server {
            scopes.push(ScopeKey {
                scope: Scope::Server,
                user: None,
                server: Some(server.clone()),
                channel: channel.clone(),
                persona,
            });
        }
        scopes
    }

    /// Reads a key of exactly the form [`ScopeKey::key`] writes. A user-scope key does not name its
    /// server, so `server` is None for it.
    pub fn parse(key: &[u8]) -> Option<ScopeKey> {
        let rest = key.strip_prefix(KEY_PREFIX.as_bytes())?;
        let mut parts = rest.split(|&b| b == b':');
        let scope = match parts.next()? {
            b"user" => Scope::User,
            b"server" => Scope::Server,
            _ => return None,
        };
        let owner = parts.next().filter(|id| valid_id(id))?;
        let channel = parts.next()?;
        let channel = if cluster_keys() {
            channel.strip_prefix(b"{")?.strip_suffix(b"}")?
        } else {
            channel
        };
        let channel = Some(channel).filter(|id| valid_id(id))?;
        let persona = match parts.next() {
            None => None,
            Some(p) => Some(parse_persona_suffix(p)?),
        };
        if parts.next().is_some() {
            return None;
        }
        let owner = Bytes::copy_from_slice(owner);
        let (user, server) = match scope {
            Scope::User => (Some(owner), None),
            Scope::Server => (None, Some(owner)),
        };
        Some(ScopeKey {
            scope,
            user,
            server,
            channel: Bytes::copy_from_slice(channel),
            persona,
        })
    }
}

/// A persona suffix: a positive integer without leading zeros.
fn parse_persona_suffix(text: &[u8]) -> Option<u64> {
    if text.first().is_none_or(|&b| b == b'0') || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// Ids are 1 to 64 bytes without `:`, whitespace or control characters; in cluster mode also
/// without `{` and `}`, which would move the keys' hash tag off the channel.
pub fn valid_id(id: &[u8]) -> bool {
    let tagged = cluster_keys();
    (1..=64).contains(&id.len())
        && id.iter().all(|&b| {
            b != b':'
                && !b.is_ascii_whitespace()
                && !b.is_ascii_control()
                && !(tagged && (b == b'{' || b == b'}'))
        })
}

/// Set once at start-up in cluster mode: STM keys carry the channel as their hash tag.
static CLUSTER_KEYS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether STM keys are written in the cluster format. It is a property of the process (a node is
/// a cluster node for its whole life, and every key it restores or builds must agree), so it is
/// process-wide rather than threaded through every caller of [`ScopeKey::key`].
pub fn cluster_keys() -> bool {
    CLUSTER_KEYS.load(Ordering::Relaxed)
}

/// Switches the key format to the cluster one; called by the server before anything builds a key.
pub fn use_cluster_keys() {
    CLUSTER_KEYS.store(true, Ordering::Relaxed);
}

/// A persona argument: a non-negative integer; `0` or `-` mean none.
pub fn parse_persona(text: &[u8]) -> Option<Option<u64>> {
    if text == b"-" {
        return Some(None);
    }
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value: u64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    Some((value != 0).then_some(value))
}

/// A lineage argument: an integer, or `-` for none.
pub fn parse_lineage(text: &[u8]) -> Option<Option<i64>> {
    if text == b"-" {
        return Some(None);
    }
    crate::protocol::parse_i64_strict(text).map(Some)
}

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Model,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Model => "model",
        }
    }
}

/// One STM entry: a scope's last messages plus its distilled memory and cadence counters.
#[derive(Clone, Debug, PartialEq)]
pub struct StmEntry {
    pub scope: Scope,
    /// None for persona `0` / absent.
    persona: Option<NonZeroU64>,
    pub lineage: Option<i64>,
    /// The ids (user, server, channel, parent) and the messages, oldest first. Shared by the user
    /// and server entries of one capture (a capture replaces the whole snapshot).
    snapshot: Snapshot,
    /// None until a summary or categories write (or a row or payload that carries one).
    distilled: Option<Box<Distilled>>,
    pub turns_since_refresh: i64,
    /// Time of the last write (capture, summary or categories) in ms.
    pub last_updated: u64,
    /// Orders writes made in the same millisecond (STM.RECENT's newest-first).
    pub write_seq: u64,
    /// Whether this process has already queued the ensure of this scope's row: captures then
    /// skip it ([`PersistHandle::ensure_row`]). Never stored or copied.
    pub row: RowMark,
}

/// The forget epoch ([`PersistHandle::ensure_row`]) in which this process queued the ensure of an
/// entry's row; 0 for never. Transient process state, not part of the entry's value: a clone (a
/// copied key, a dump, a replica's copy) starts at 0 and every entry compares equal whatever its
/// mark, and nothing loaded from a file, a payload, a primary or the database carries one, so
/// the first capture of an entry in a process always ensures its row.
#[derive(Debug, Default)]
pub struct RowMark(pub(crate) u32);

impl Clone for RowMark {
    fn clone(&self) -> RowMark {
        RowMark::default()
    }
}

impl PartialEq for RowMark {
    fn eq(&self, _: &RowMark) -> bool {
        true
    }
}

impl StmEntry {
    /// A new entry for `scope` with nothing remembered yet.
    pub fn new(scope: &ScopeKey, now: u64) -> StmEntry {
        let ids = Ids {
            user: scope.user.as_deref(),
            server: scope.server.as_deref(),
            channel: &scope.channel,
            parent: None,
        };
        StmEntry {
            scope: scope.scope,
            persona: scope.persona.and_then(NonZeroU64::new),
            lineage: None,
            snapshot: Snapshot::new(ids, [], 0),
            distilled: None,
            turns_since_refresh: 0,
            last_updated: now,
            write_seq: 0,
            row: RowMark::default(),
        }
    }

    /// The user (user scope only; a capture's snapshot names its user in the server entry too).
    pub fn user(&self) -> Option<&[u8]> {
        self.snapshot
            .ids()
            .user
            .filter(|_| self.scope == Scope::User)
    }

    /// The server (server scope; user scope in a server channel; None in DMs).
    pub fn server(&self) -> Option<&[u8]> {
        self.snapshot.ids().server
    }

    pub fn channel(&self) -> &[u8] {
        self.snapshot.ids().channel
    }

    pub fn parent(&self) -> Option<&[u8]> {
        self.snapshot.ids().parent
    }

    pub fn persona(&self) -> Option<u64> {
        self.persona.map(NonZeroU64::get)
    }

    pub fn summary(&self) -> Option<&str> {
        self.distilled.as_ref()?.summary.as_deref()
    }

    /// slug → text, sorted by slug.
    pub fn categories(&self) -> &[(String, String)] {
        self.distilled
            .as_ref()
            .map_or(&[], |d| d.categories.as_slice())
    }

    pub fn last_refreshed_turn(&self) -> i64 {
        self.distilled.as_ref().map_or(0, |d| d.last_refreshed_turn)
    }

    /// The distilled memory, to change it (made empty when there is none yet).
    pub fn distilled_mut(&mut self) -> &mut Distilled {
        self.distilled.get_or_insert_default()
    }

    /// Replaces the distilled memory (none is kept for an empty one).
    pub fn set_distilled(&mut self, distilled: Distilled) {
        self.distilled = (distilled != Distilled::default()).then(|| Box::new(distilled));
    }

    /// The messages, oldest first: the block itself, or a plain copy of it when the idle pass
    /// has compressed it.
    pub fn messages(&self) -> std::borrow::Cow<'_, Snapshot> {
        self.snapshot.decompressed()
    }

    /// The block as held, compressed or not (its size for `MEMORY USAGE`, the idle pass).
    pub fn block(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Puts `to` in place of the block when it is still `from` (the idle pass compressed `from`
    /// outside the shard's lock; a capture since then has replaced it). True when it did.
    pub fn replace_block(&mut self, from: &Snapshot, to: &Snapshot) -> bool {
        let same = self.snapshot.same_block(from);
        if same {
            self.snapshot = to.clone();
        }
        same
    }

    /// Takes a capture's snapshot (messages and parent), keeping this entry's user, server and
    /// channel: the snapshot is shared when it was made for them, copied with them otherwise.
    pub fn set_snapshot(&mut self, snapshot: &Snapshot) {
        let theirs = snapshot.ids();
        let mine = Ids {
            user: self.user(),
            server: self.server(),
            channel: self.channel(),
            parent: theirs.parent,
        };
        let user_of_theirs = theirs.user.filter(|_| self.scope == Scope::User);
        self.snapshot = if (user_of_theirs, theirs.server, theirs.channel)
            == (mine.user, mine.server, mine.channel)
        {
            snapshot.clone()
        } else {
            snapshot.with_ids(mine)
        };
    }

    /// Records a write (capture, summary, categories) at `now`.
    pub fn touch(&mut self, now: u64) {
        static WRITES: AtomicU64 = AtomicU64::new(1);
        self.last_updated = now;
        self.write_seq = WRITES.fetch_add(1, Ordering::Relaxed);
    }

    /// Distilled memory (a summary or categories) earns the longer expiry.
    pub fn has_distilled(&self) -> bool {
        self.summary().is_some_and(|s| !s.is_empty()) || !self.categories().is_empty()
    }

    /// The identity of this entry's scope (for its row).
    pub fn scope_key(&self) -> ScopeKey {
        ScopeKey {
            scope: self.scope,
            user: self.user().map(Bytes::copy_from_slice),
            server: self.server().map(Bytes::copy_from_slice),
            channel: Bytes::copy_from_slice(self.channel()),
            persona: self.persona(),
        }
    }
}

/// What the model distilled from a conversation, apart from the entry: most entries never get
/// any, and it is larger than the rest of an entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Distilled {
    pub summary: Option<String>,
    /// slug → text, sorted by slug.
    pub categories: Vec<(String, String)>,
    pub last_refreshed_turn: i64,
}

use crate::config::Config;
use crate::scope_rows::PersistHandle;
use crate::store::Store;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use text::TextCleaner;

/// Cumulative STM counters for `INFO stm` (reset by CONFIG RESETSTAT, not by FLUSHALL).
#[derive(Default)]
pub struct StmStats {
    pub captures: AtomicU64,
    pub skipped_stop: AtomicU64,
    pub skipped_privacy: AtomicU64,
    pub skipped_no_messages: AtomicU64,
    pub skipped_no_replies: AtomicU64,
    pub skipped_empty: AtomicU64,
    pub ticks: AtomicU64,
    pub summaries: AtomicU64,
    pub category_writes: AtomicU64,
    pub forgets: AtomicU64,
    /// Blocks the idle pass compressed, and their bytes before and after.
    pub compressions: AtomicU64,
    pub compressed_bytes_in: AtomicU64,
    pub compressed_bytes_out: AtomicU64,
}

impl StmStats {
    fn counters(&self) -> [(&'static str, &AtomicU64); 13] {
        [
            ("stm_captures", &self.captures),
            ("stm_skipped_stop", &self.skipped_stop),
            ("stm_skipped_privacy", &self.skipped_privacy),
            ("stm_skipped_no_messages", &self.skipped_no_messages),
            ("stm_skipped_no_replies", &self.skipped_no_replies),
            ("stm_skipped_empty", &self.skipped_empty),
            ("stm_ticks", &self.ticks),
            ("stm_summaries", &self.summaries),
            ("stm_category_writes", &self.category_writes),
            ("stm_forgets", &self.forgets),
            ("stm_compressions", &self.compressions),
            ("stm_compressed_bytes_in", &self.compressed_bytes_in),
            ("stm_compressed_bytes_out", &self.compressed_bytes_out),
        ]
    }
}

/// Server-wide STM state: the compiled cleaning rules and the counters.
pub struct StmState {
    pub cleaner: TextCleaner,
    pub stats: StmStats,
    pub persist: PersistHandle,
}

impl StmState {
    /// Compiles the configured strip patterns; a bad pattern is a start-up error.
    pub fn new(config: &Config, persist: PersistHandle) -> Result<StmState, String> {
        let cleaner = TextCleaner::new(&config.stm_strip_patterns)
            .map_err(|e| format!("invalid --stm-strip-pattern: {e}"))?;
        Ok(StmState {
            cleaner,
            stats: StmStats::default(),
            persist,
        })
    }

    pub fn reset_stats(&self) {
        for (_, counter) in self.stats.counters() {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// The lines of `INFO stm`.
    pub fn render_info(&self, store: &Store, line: &mut dyn FnMut(&str, String)) {
        line("stm_entries", stm_entries(store).to_string());
        line(
            "stm_expired_entries",
            store
                .expired_stm_entries
                .load(Ordering::Relaxed)
                .to_string(),
        );
        for (name, counter) in self.stats.counters() {
            line(name, counter.load(Ordering::Relaxed).to_string());
        }
        self.persist.render_info(line);
    }
}

/// STM entries in every database (SWAPDB and MOVE can carry them out of database 0).
pub fn stm_entries(store: &Store) -> usize {
    store
        .existing_dbs()
        .map(|(_, space)| index::of(space).len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_shares_a_snapshot_of_its_ids_and_copies_one_of_other_ids() {
        // Within jemalloc's 80-byte class: every STM key pays for its entry.
        assert!(size_of::<StmEntry>() <= 80, "{}", size_of::<StmEntry>());
        let user = Bytes::from_static(b"u1");
        let server = Bytes::from_static(b"s1");
        let channel = Bytes::from_static(b"c1");
        let scopes = ScopeKey::for_turn(&user, Some(&server), &channel, Some(2));
        let ids = Ids {
            user: Some(b"u1"),
            server: Some(b"s1"),
            channel: b"c1",
            parent: Some(b"p1"),
        };
        let snapshot = Snapshot::new(ids, [(Role::User, None, "hi")], 5);
        for scope in &scopes {
            let mut entry = StmEntry::new(scope, 5);
            entry.set_snapshot(&snapshot);
            assert_eq!(*entry.messages(), snapshot, "shared as it is");
            assert!(entry.block().same_block(&snapshot));
            assert_eq!(entry.scope_key(), *scope);
            assert_eq!(entry.parent(), Some(&b"p1"[..]));
            assert_eq!(entry.persona(), Some(2));
        }
        let elsewhere = ScopeKey {
            channel: Bytes::from_static(b"c2"),
            ..scopes[1].clone()
        };
        let mut entry = StmEntry::new(&elsewhere, 5);
        entry.set_snapshot(&snapshot);
        assert_eq!(entry.scope_key(), elsewhere, "an entry keeps its own ids");
        assert_eq!(entry.parent(), Some(&b"p1"[..]));
        assert!(entry.messages().iter().eq(snapshot.iter()));
        assert_eq!(entry.summary(), None);
        entry.distilled_mut().summary = Some("s".into());
        assert!(entry.has_distilled());
        entry.set_distilled(Distilled::default());
        assert_eq!(entry, {
            let mut fresh = StmEntry::new(&elsewhere, 5);
            fresh.set_snapshot(&snapshot);
            fresh
        });
    }
}
