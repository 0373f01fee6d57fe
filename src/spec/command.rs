//! The command table's row type and everything read from it without running a command: the
//! flags, the arity check, key positions, subcommands and the name lookup. Rows are declared once,
//! in `commands::table`, with their handlers; the layers below the commands (ACL, events, cluster
//! routing, statistics, the client list) read the rows here without knowing the handlers.
//!
//! How the handler stays out: [`Row`] is generic over a [`Binding`], which names the handler's
//! and the ACL key finder's types and hands over the rows. The command layer implements it once
//! for [`Stmd`], and [`Command`] is `Row<Stmd>`. So the lower layers name a concrete row type
//! (no generic parameter spreads through the ACL users, the statistics or the cluster state, and
//! no row is copied), dispatch still reads the handler straight from the row, and the lookup
//! by name is the same one hash lookup into the same static rows. A table injected at start-up
//! (a `OnceLock`) was the other choice; it would make every lookup check the cell and leave the
//! lookups made before the server starts (ACL rules read from a file) to an ordering rule.

use super::keyspec::{legacy_triple, KeySpec};
use std::collections::HashMap;
use std::sync::LazyLock;

// Flags, rendered by COMMAND INFO under Redis's names.
pub const WRITE: u32 = 1;
pub const READONLY: u32 = 1 << 1;
pub const DENYOOM: u32 = 1 << 2;
pub const ADMIN: u32 = 1 << 3;
pub const PUBSUB: u32 = 1 << 4;
pub const NOSCRIPT: u32 = 1 << 5;
pub const BLOCKING: u32 = 1 << 6;
pub const LOADING: u32 = 1 << 7;
pub const STALE: u32 = 1 << 8;
pub const FAST: u32 = 1 << 9;
pub const NO_AUTH: u32 = 1 << 10;
/// Runs at once even inside MULTI (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET…). Ours, not rendered.
pub const NOT_QUEUED: u32 = 1 << 11;
/// Refused inside MULTI (`ERR Command not allowed inside a transaction`), which dooms the
/// transaction. Redis 7.2 flags SHUTDOWN, SAVE, SYNC and PSYNC so; stmd has SHUTDOWN of those.
pub const NO_MULTI: u32 = 1 << 12;
/// Works in database 0 only (the `STM.*` commands): refused in any other selected database.
pub const DB_ZERO_ONLY: u32 = 1 << 13;
/// Redis's flags that stmd only reports (COMMAND INFO), for clients that read them.
pub const SKIP_MONITOR: u32 = 1 << 14;
pub const SKIP_SLOWLOG: u32 = 1 << 15;
pub const MAY_REPLICATE: u32 = 1 << 16;
pub const NO_MANDATORY_KEYS: u32 = 1 << 17;
pub const NO_ASYNC_LOADING: u32 = 1 << 18;
pub const ALLOW_BUSY: u32 = 1 << 19;
/// Runs a Lua script or function (EVAL, EVALSHA, FCALL and their `_RO` forms): it needs the
/// script engine. Ours, not rendered.
pub const RUNS_SCRIPT: u32 = 1 << 20;
/// Acts as if ASKING came first (RESTORE-ASKING): in cluster mode it may write a slot this node
/// does not own yet.
pub const ASKING: u32 = 1 << 21;
/// A read that may rewrite its key's stored bytes (PFCOUNT caches the cardinality in the HLL):
/// when it does, it goes into the replication stream and the append-only file, as in Redis, so
/// that replicas and a restart hold the same bytes. Ours, not rendered.
pub const REWRITES_ON_READ: u32 = 1 << 22;
/// Changes the cluster configuration and waits for it (CLUSTER ADDSLOTS, SETSLOT, …; some scan
/// the keyspace): refused in cluster mode where the keyspace's locks are held (inside EXEC or a
/// script), since those waits would hold every other client. Ours, not rendered.
pub const CHANGES_CLUSTER: u32 = 1 << 23;

const FLAG_NAMES: &[(u32, &str)] = &[
    (WRITE, "write"),
    (READONLY, "readonly"),
    (DENYOOM, "denyoom"),
    (ADMIN, "admin"),
    (PUBSUB, "pubsub"),
    (NOSCRIPT, "noscript"),
    (BLOCKING, "blocking"),
    (LOADING, "loading"),
    (STALE, "stale"),
    (SKIP_MONITOR, "skip_monitor"),
    (SKIP_SLOWLOG, "skip_slowlog"),
    (ASKING, "asking"),
    (FAST, "fast"),
    (NO_AUTH, "no_auth"),
    (MAY_REPLICATE, "may_replicate"),
    (NO_MANDATORY_KEYS, "no_mandatory_keys"),
    (NO_ASYNC_LOADING, "no_async_loading"),
    (NO_MULTI, "no_multi"),
];

/// What the command layer supplies to the rows: the handler's and the ACL key finder's types
/// (both take the command context, which lives above this layer) and the rows themselves.
pub trait Binding: 'static {
    /// Runs a command: `commands::Handler`.
    type Handler: Copy + Send + Sync + 'static;
    /// Finds the keys of a command whose key specs cannot say: `commands::table::AclKeys`.
    type AclKeys: Copy + Send + Sync + 'static;
    /// Every top-level command, in the table's order (subcommands are in their container's row).
    fn rows() -> &'static [Command];
}

/// stmd's command layer, the one [`Binding`] (implemented in `commands::table`).
pub enum Stmd {}

/// A row of stmd's command table.
pub type Command = Row<Stmd>;

/// Every top-level command stmd knows, in the table's order (subcommands are in their
/// container's row).
#[inline]
pub fn rows() -> &'static [Command] {
    Stmd::rows()
}

/// One command's metadata and handler.
pub struct Row<B: Binding> {
    /// Lower-case name.
    pub name: &'static str,
    /// Redis arity: exact count when positive, minimum count when negative (name included).
    pub arity: i32,
    pub flags: u32,
    pub first_key: i32,
    /// Last key position; -1 means the last argument, -2 the one before, …
    pub last_key: i32,
    pub step: i32,
    pub group: &'static str,
    pub summary: &'static str,
    /// Redis version that introduced the command (or the stmd version for STM commands).
    pub since: &'static str,
    /// Arguments after the name, in Redis's documentation notation.
    pub syntax: &'static str,
    pub handler: B::Handler,
    /// Where the keys are and what the command does to them.
    pub keys: &'static [KeySpec],
    /// ACL categories beyond those derived from flags and group ([`super::categories::of`]).
    pub acl: u32,
    /// Redis's command tips (`nondeterministic_output`, `request_policy:all_shards`, …).
    pub tips: &'static [&'static str],
    /// A container's subcommands (named `container|sub`); empty for other commands.
    pub subcommands: &'static [Row<B>],
    /// COMMAND DOCS: the time complexity, in our words ("" for none).
    pub complexity: &'static str,
    /// COMMAND DOCS `doc_flags`: `deprecated`, `syscmd`.
    pub doc_flags: &'static [&'static str],
    /// COMMAND DOCS: the version that deprecated the command, and what replaces it ("" for none).
    pub deprecated_since: &'static str,
    pub replaced_by: &'static str,
    /// For the ACL check, the keys of a command whose keys are not its arguments (`commands::table::AclKeys`);
    /// the key specs are used when None.
    pub acl_keys: Option<B::AclKeys>,
}

impl<B: Binding> Row<B> {
    /// The defaults of a row's optional fields, with the given handler.
    pub const fn base(handler: B::Handler) -> Row<B> {
        Row {
            name: "",
            arity: 0,
            flags: 0,
            first_key: 0,
            last_key: 0,
            step: 0,
            group: "",
            summary: "",
            since: "",
            syntax: "",
            handler,
            keys: &[],
            acl: 0,
            tips: &[],
            subcommands: &[],
            complexity: "",
            doc_flags: &[],
            deprecated_since: "",
            replaced_by: "",
            acl_keys: None,
        }
    }

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    /// The flags COMMAND INFO shows, in Redis's order; `movablekeys` (derived from the key specs)
    /// and `allow_busy` come after the others, as in Redis.
    pub fn flag_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        let movable = legacy_triple(self.keys).1;
        FLAG_NAMES
            .iter()
            .filter(|(bit, _)| self.has(*bit))
            .map(|(_, name)| *name)
            .chain(movable.then_some("movablekeys"))
            .chain(self.has(ALLOW_BUSY).then_some("allow_busy"))
    }

    /// The subcommand named `name` (without the `container|` prefix), case-insensitively.
    pub fn subcommand(&self, name: &[u8]) -> Option<&'static Row<B>> {
        self.subcommands.iter().find(|sub| {
            sub.name
                .split_once('|')
                .is_some_and(|(_, short)| short.as_bytes().eq_ignore_ascii_case(name))
        })
    }

    /// The row a request runs under: its subcommand's for a container with one (`CONFIG GET` →
    /// `config|get`), else this one. Redis's errors for an unknown subcommand and a subcommand's
    /// arity: `ERR unknown subcommand 'x'. Try CONFIG HELP.`,
    /// `ERR wrong number of arguments for 'config|get' command`.
    pub fn resolve(&'static self, args: &[&[u8]]) -> Result<&'static Row<B>, String> {
        if self.subcommands.is_empty() || args.len() < 2 {
            return Ok(self);
        }
        let Some(sub) = self.subcommand(args[1]) else {
            return Err(format!(
                "ERR unknown subcommand '{}'. Try {} HELP.",
                super::printable(args[1], 128),
                self.name.to_ascii_uppercase()
            ));
        };
        if !sub.arity_ok(args.len()) {
            return Err(super::wrong_arity(sub.name));
        }
        Ok(sub)
    }

    /// The row whose flags describe this request: the subcommand's when there is one.
    #[inline]
    pub fn effective(&'static self, args: &[&[u8]]) -> &'static Row<B> {
        if self.subcommands.is_empty() {
            return self;
        }
        self.resolve(args).unwrap_or(self)
    }

    /// The key arguments of a request, per first/last/step (for locking, WATCH and COMMAND GETKEYS).
    pub fn key_positions(&self, argc: usize) -> impl Iterator<Item = usize> {
        let first = self.first_key.max(0) as usize;
        let last = if self.last_key < 0 {
            (argc as i64 + i64::from(self.last_key)).max(0) as usize
        } else {
            (self.last_key as usize).min(argc.saturating_sub(1))
        };
        let step = self.step.max(1) as usize;
        let valid = self.first_key > 0;
        (first..=last).step_by(step).filter(move |_| valid)
    }
}

/// Lower-case name bytes → command. ahash, not SipHash: this lookup runs for every request.
static BY_NAME: LazyLock<HashMap<&'static [u8], &'static Command, ahash::RandomState>> =
    LazyLock::new(|| rows().iter().map(|c| (c.name.as_bytes(), c)).collect());

/// The command names a server answers to, after `--rename-command`. Without renames (the usual
/// case) lookups go straight to the static table.
#[derive(Default)]
pub struct CommandNames {
    /// Lower-case name → the command, or None for a name that was renamed away or disabled.
    renamed: Option<HashMap<String, Option<&'static Command>>>,
}

impl CommandNames {
    /// Builds the names from `[command, new name]` pairs; an unknown command is an error.
    pub fn new(pairs: &[String]) -> Result<CommandNames, String> {
        if pairs.is_empty() {
            return Ok(CommandNames::default());
        }
        let mut renamed = HashMap::new();
        for pair in pairs.chunks(2) {
            let (from, to) = (
                pair[0].to_ascii_lowercase(),
                pair.get(1)
                    .map(|s| s.to_ascii_lowercase())
                    .unwrap_or_default(),
            );
            let cmd = BY_NAME
                .get(from.as_bytes())
                .copied()
                .ok_or_else(|| format!("--rename-command: no command named '{from}'"))?;
            renamed.insert(from, None);
            if !to.is_empty() {
                renamed.insert(to, Some(cmd));
            }
        }
        Ok(CommandNames {
            renamed: Some(renamed),
        })
    }

    /// Finds a command by case-insensitive name, honouring renames.
    pub fn lookup(&self, name: &[u8]) -> Option<&'static Command> {
        match &self.renamed {
            None => lookup(name),
            Some(map) => {
                let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
                match map.get(&lower) {
                    Some(entry) => *entry,
                    None => lookup(name),
                }
            }
        }
    }
}

/// Finds a command by case-insensitive name without allocating.
pub fn lookup(name: &[u8]) -> Option<&'static Command> {
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    for (dst, src) in lower.iter_mut().zip(name) {
        *dst = src.to_ascii_lowercase();
    }
    BY_NAME.get(&*lower).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_commands_answer_to_their_new_name_only() {
        let names = CommandNames::new(&[
            "FLUSHALL".into(),
            "".into(),
            "config".into(),
            "AdminConfig".into(),
        ])
        .expect("valid renames");
        assert!(names.lookup(b"flushall").is_none());
        assert!(names.lookup(b"CONFIG").is_none());
        assert_eq!(names.lookup(b"adminconfig").map(|c| c.name), Some("config"));
        assert_eq!(names.lookup(b"get").map(|c| c.name), Some("get"));
        assert!(CommandNames::new(&["nosuch".into(), "x".into()]).is_err());
    }

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(&[b'a'; 100]).is_none());
    }

    #[test]
    fn key_positions_follow_first_last_step() {
        let mset = lookup(b"mset").expect("mset");
        assert_eq!(mset.key_positions(5).collect::<Vec<_>>(), vec![1, 3]);
        let del = lookup(b"del").expect("del");
        assert_eq!(del.key_positions(4).collect::<Vec<_>>(), vec![1, 2, 3]);
        let ping = lookup(b"ping").expect("ping");
        assert_eq!(ping.key_positions(1).count(), 0);
    }
}
