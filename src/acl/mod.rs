//! Access control (Redis 7.2's ACL): users and their rules (`rules.rs`), the permission check
//! dispatch runs once per command from the command table's data (categories and key specs), the
//! ACL log, and the ACL file.
//!
//! A connection holds an `Arc<User>`: a snapshot of its user's compiled permissions. Any change to
//! the users bumps [`Acl::generation`]; a connection whose snapshot is older fetches its user
//! again before the next command (one relaxed load on the fast path).

pub mod file;
pub mod log;
pub mod rules;

use crate::config::values::ChannelDefault;
use crate::spec::command::{NO_AUTH, WRITE};
use crate::spec::keyspec::{self, KeyFlags};
use crate::spec::Command;
use parking_lot::{Mutex, RwLock};
pub use rules::{User, IDS};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Why a command was refused, in Redis's order of relevance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command,
    Key,
    Auth,
    Channel,
}

impl Denied {
    pub fn reason(self) -> &'static str {
        match self {
            Denied::Command => "command",
            Denied::Key => "key",
            Denied::Auth => "auth",
            Denied::Channel => "channel",
        }
    }
}

/// A refusal: why, and the argument index of the key or channel refused (the index in the
/// computed keys for a command with [`Command::acl_keys`]).
#[derive(Clone, Copy, Debug)]
pub struct Refusal {
    pub denied: Denied,
    pub arg: usize,
}

/// Where a request's keys are, for the check: its arguments (found by the key specs), or the
/// keys [`Command::acl_keys`] computed.
#[derive(Clone, Copy)]
pub enum Keys<'a> {
    Specs,
    Computed(&'a [bytes::Bytes]),
}

impl Keys<'_> {
    /// The name of the key or channel a refusal names.
    pub fn refused<'v>(&'v self, refusal: Refusal, args: &[&'v [u8]]) -> &'v [u8] {
        match (refusal.denied, self) {
            (Denied::Key, Keys::Computed(keys)) => {
                keys.get(refusal.arg).map_or(&[][..], |k| &k[..])
            }
            _ => args.get(refusal.arg).copied().unwrap_or_default(),
        }
    }
}

/// The server's users, ACL log and counters.
pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    /// Bumped on every change to the users.
    pub generation: AtomicU64,
    pub log: Mutex<log::AclLog>,
    pub denied_auth: AtomicU64,
    pub denied_cmd: AtomicU64,
    pub denied_key: AtomicU64,
    pub denied_channel: AtomicU64,
}

impl Default for Acl {
    fn default() -> Self {
        Acl::new()
    }
}

impl Acl {
    pub fn new() -> Acl {
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), Arc::new(User::default_user()));
        Acl {
            users: RwLock::new(users),
            generation: AtomicU64::new(1),
            log: Mutex::new(log::AclLog::default()),
            denied_auth: AtomicU64::new(0),
            denied_cmd: AtomicU64::new(0),
            denied_key: AtomicU64::new(0),
            denied_channel: AtomicU64::new(0),
        }
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    pub fn default_user(&self) -> Arc<User> {
        self.get(b"default")
            .unwrap_or_else(|| Arc::new(User::default_user()))
    }

    pub fn names(&self) -> Vec<Vec<u8>> {
        self.users.read().keys().cloned().collect()
    }

    pub fn all(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Stores `user` (new or changed).
    pub fn put(&self, user: User) {
        self.users.write().insert(user.name.clone(), Arc::new(user));
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Replaces every user at once (ACL LOAD, the ACL file at start-up).
    pub fn replace_all(&self, users: Vec<User>) {
        let mut map: BTreeMap<Vec<u8>, Arc<User>> = users
            .into_iter()
            .map(|u| (u.name.clone(), Arc::new(u)))
            .collect();
        map.entry(b"default".to_vec())
            .or_insert_with(|| Arc::new(User::default_user()));
        *self.users.write() = map;
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Removes a user; true when it existed.
    pub fn remove(&self, name: &[u8]) -> bool {
        let removed = self.users.write().remove(name).is_some();
        if removed {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        removed
    }

    /// `requirepass`: the default user gets this one password, or `nopass` when empty.
    pub fn set_requirepass(&self, password: &str) {
        let mut user = (*self.default_user()).clone();
        let _ = user.apply(b"resetpass", ChannelDefault::Reset);
        if password.is_empty() {
            let _ = user.apply(b"nopass", ChannelDefault::Reset);
        } else {
            let mut rule = b">".to_vec();
            rule.extend_from_slice(password.as_bytes());
            let _ = user.apply(&rule, ChannelDefault::Reset);
        }
        user.refresh();
        self.put(user);
    }

    /// CONFIG RESETSTAT: the INFO counters back to zero.
    pub fn reset_stats(&self) {
        for counter in [
            &self.denied_auth,
            &self.denied_cmd,
            &self.denied_key,
            &self.denied_channel,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// Counts a refusal in INFO stats.
    pub fn count(&self, denied: Denied) {
        let counter = match denied {
            Denied::Command => &self.denied_cmd,
            Denied::Key => &self.denied_key,
            Denied::Auth => &self.denied_auth,
            Denied::Channel => &self.denied_channel,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The channels a Pub/Sub command names, and whether they are literal patterns (PSUBSCRIBE).
fn channels_of<'a>(cmd: &Command, args: &'a [&'a [u8]]) -> Option<(&'a [&'a [u8]], bool)> {
    match cmd.name {
        "publish" | "spublish" => args.get(1..2).map(|c| (c, false)),
        "subscribe" | "ssubscribe" => args.get(1..).map(|c| (c, false)),
        "psubscribe" => args.get(1..).map(|c| (c, true)),
        _ => None,
    }
}

/// The read/write permissions a key spec's flags need, as Redis's `ACLSelectorCheckKey`.
fn needs(flags: KeyFlags) -> u8 {
    let mut need = 0;
    if flags & keyspec::ACCESS != 0 {
        need |= rules::READ;
    }
    if flags & (keyspec::INSERT | keyspec::DELETE | keyspec::UPDATE) != 0 {
        need |= rules::WRITE;
    }
    need
}

fn check_selector(
    selector: &rules::Selector,
    id: Option<usize>,
    cmd: &Command,
    args: &[&[u8]],
    keys: Keys<'_>,
) -> Result<(), Refusal> {
    // AUTH and HELLO (no_auth) pass the command check, as in Redis.
    if !cmd.has(NO_AUTH) && !id.is_some_and(|id| selector.allows_command(id, args)) {
        return Err(Refusal {
            denied: Denied::Command,
            arg: 0,
        });
    }
    if let (false, Keys::Computed(keys)) = (selector.all_keys, keys) {
        let need = if cmd.has(WRITE) {
            rules::WRITE
        } else {
            rules::READ
        };
        if let Some(at) = keys.iter().position(|k| !selector.allows_key(k, need)) {
            return Err(Refusal {
                denied: Denied::Key,
                arg: at,
            });
        }
    } else if !selector.all_keys && !cmd.keys.is_empty() {
        if let Some(keys) = keyspec::keys_with_flags(cmd, args) {
            for (at, flags) in keys {
                if !selector.allows_key(args[at], needs(flags)) {
                    return Err(Refusal {
                        denied: Denied::Key,
                        arg: at,
                    });
                }
            }
        }
    }
    if !selector.all_channels {
        if let Some((channels, literal)) = channels_of(cmd, args) {
            for (i, channel) in channels.iter().enumerate() {
                if !selector.allows_channel(channel, literal) {
                    return Err(Refusal {
                        denied: Denied::Channel,
                        arg: i + 1,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Redis's `ACLCheckAllUserCommandPerm`: the command (`cmd` is the subcommand's row for a
/// container) is allowed when the root selector or any selector allows it, its keys and its
/// channels. Otherwise the most relevant refusal.
pub fn check(user: &User, cmd: &Command, args: &[&[u8]], keys: Keys<'_>) -> Result<(), Refusal> {
    if user.unrestricted {
        return Ok(());
    }
    let id = IDS.of(cmd);
    let mut worst: Option<Refusal> = None;
    for selector in std::iter::once(&user.root).chain(user.selectors.iter()) {
        match check_selector(selector, id, cmd, args, keys) {
            Ok(()) => return Ok(()),
            Err(refusal) => {
                let better = worst.is_none_or(|w| {
                    refusal.denied > w.denied || (refusal.denied == w.denied && refusal.arg > w.arg)
                });
                if better {
                    worst = Some(refusal);
                }
            }
        }
    }
    Err(worst.unwrap_or(Refusal {
        denied: Denied::Command,
        arg: 0,
    }))
}

/// True when `user` may access `key` with `need` (READ/WRITE) under any of its selectors (for
/// commands that compute their keys while running, as STM.FORGET).
pub fn may_access_key(user: &User, key: &[u8], need: u8) -> bool {
    user.unrestricted
        || std::iter::once(&user.root)
            .chain(user.selectors.iter())
            .any(|s| s.allows_key(key, need))
}

/// True when `user` may subscribe to `channel` under any of its selectors; `pattern`
/// (PSUBSCRIBE's) must equal one of its channel rules, as in Redis 7.
pub fn may_use_channel(user: &User, channel: &[u8], pattern: bool) -> bool {
    user.unrestricted
        || std::iter::once(&user.root)
            .chain(user.selectors.iter())
            .any(|s| s.allows_channel(channel, pattern))
}

/// Redis 7.2's NOPERM texts (without the `NOPERM ` prefix); `verbose` (ACL DRYRUN) names the key
/// or channel.
pub fn message(
    refusal: Refusal,
    user: &User,
    cmd: &Command,
    args: &[&[u8]],
    keys: Keys<'_>,
    verbose: bool,
) -> String {
    let value = || String::from_utf8_lossy(keys.refused(refusal, args)).into_owned();
    match refusal.denied {
        Denied::Command | Denied::Auth => format!(
            "User {} has no permissions to run the '{}' command",
            user.name_str(),
            cmd.name
        ),
        Denied::Key if verbose => format!(
            "User {} has no permissions to access the '{}' key",
            user.name_str(),
            value()
        ),
        Denied::Key => "No permissions to access a key".into(),
        Denied::Channel if verbose => format!(
            "User {} has no permissions to access the '{}' channel",
            user.name_str(),
            value()
        ),
        Denied::Channel => "No permissions to access a channel".into(),
    }
}
