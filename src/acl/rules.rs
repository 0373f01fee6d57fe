//! Users and their rules, with Redis 7.2's rule syntax: `on`/`off`, passwords (`>p`, `<p`, `#h`,
//! `!h`, `nopass`, `resetpass`), key patterns (`~p`, `%R~p`, `%W~p`, `%RW~p`, `allkeys`,
//! `resetkeys`), channel patterns (`&p`, `allchannels`, `resetchannels`), commands (`+cmd`,
//! `-cmd`, `+cmd|sub`, `+@cat`, `-@cat`, `allcommands`, `nocommands`), selectors `(…)`,
//! `clearselectors` and `reset`. A user is a value: ACL SETUSER applies its rules to a copy and
//! swaps the copy in only when every rule was valid.

use crate::config::values::ChannelDefault;
use crate::spec::{categories, lookup, Command};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::LazyLock;

/// Read permission on a key pattern (`%R~`).
pub const READ: u8 = 1;
/// Write permission on a key pattern (`%W~`).
pub const WRITE: u8 = 2;

/// Every command and subcommand row, by id (the index of its bit in a selector's bitmap).
pub struct CommandIds {
    pub rows: Vec<&'static Command>,
    /// Looked up for every command of a restricted user: ahash, not SipHash.
    by_addr: HashMap<usize, usize, ahash::RandomState>,
}

/// The ids of the command table's rows.
pub static IDS: LazyLock<CommandIds> = LazyLock::new(|| {
    let mut rows = Vec::new();
    for cmd in crate::spec::rows() {
        rows.push(cmd);
        rows.extend(cmd.subcommands.iter());
    }
    let by_addr = rows
        .iter()
        .enumerate()
        .map(|(id, cmd)| (*cmd as *const Command as usize, id))
        .collect();
    CommandIds { rows, by_addr }
});

impl CommandIds {
    /// The id of a row of the command table.
    #[inline]
    pub fn of(&self, cmd: &Command) -> Option<usize> {
        self.by_addr.get(&(cmd as *const Command as usize)).copied()
    }

    fn words(&self) -> usize {
        self.rows.len().div_ceil(64)
    }
}

/// One key pattern and what it allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub flags: u8,
    /// Sorted once: most patterns are a literal or `prefix*`, checked without the glob matcher.
    pub shape: crate::glob::Shape,
}

/// A set of permissions: the user's root one and each `(…)` selector.
#[derive(Clone, Debug)]
pub struct Selector {
    allowed: Vec<u64>,
    /// Set by `+@all`/`allcommands`: described as starting from `+@all`.
    pub all_commands: bool,
    /// The command rules as given, compacted as Redis 7.2 compacts them (ACL LIST shows them).
    pub command_rules: Vec<String>,
    /// Redis's first-arg rules (`+select|0`): a command without subcommands that is not allowed
    /// as a whole is allowed when its first argument is one of these (by command id; lowercase,
    /// compared without case as Redis does).
    first_args: Vec<(usize, Vec<u8>)>,
    pub keys: Vec<KeyPattern>,
    pub all_keys: bool,
    pub channels: Vec<Vec<u8>>,
    pub all_channels: bool,
}

/// Why a rule was refused, with Redis's texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    Syntax,
    Unknown,
    KeysAfterAll,
    ChannelsAfterAll,
    NoSuchPassword,
    BadHash,
    SubcommandOfPlain,
}

impl RuleError {
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::KeysAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelsAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandOfPlain => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

impl Selector {
    /// A selector that allows nothing (`-@all`, no keys, no channels).
    pub fn new() -> Selector {
        Selector {
            allowed: vec![0; IDS.words()],
            all_commands: false,
            command_rules: Vec::new(),
            first_args: Vec::new(),
            keys: Vec::new(),
            all_keys: false,
            channels: Vec::new(),
            all_channels: false,
        }
    }

    /// A new selector: nothing allowed but the channels of `channels`.
    pub fn starting(channels: ChannelDefault) -> Selector {
        Selector {
            all_channels: channels == ChannelDefault::All,
            ..Selector::new()
        }
    }

    #[inline]
    pub fn allows_id(&self, id: usize) -> bool {
        self.allowed
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    /// Whether the command with this id may run with these arguments (`args[0]` is its name): as
    /// a whole, or by a first-arg rule.
    #[inline]
    pub fn allows_command(&self, id: usize, args: &[&[u8]]) -> bool {
        self.allows_id(id)
            || args.get(1).is_some_and(|first| {
                self.first_args
                    .iter()
                    .any(|(i, arg)| *i == id && arg.eq_ignore_ascii_case(first))
            })
    }

    /// Allowing or denying a command as a whole drops its first-arg rules, as in Redis.
    fn set_id(&mut self, id: usize, on: bool) {
        if !self.first_args.is_empty() {
            self.first_args.retain(|(i, _)| *i != id);
        }
        if let Some(w) = self.allowed.get_mut(id / 64) {
            if on {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
            }
        }
    }

    /// `+cmd` / `-cmd`: a command and all its subcommands.
    fn set_command(&mut self, cmd: &'static Command, on: bool) {
        if let Some(id) = IDS.of(cmd) {
            self.set_id(id, on);
        }
        for sub in cmd.subcommands {
            if let Some(id) = IDS.of(sub) {
                self.set_id(id, on);
            }
        }
    }

    fn set_category(&mut self, cat: u32, on: bool) {
        for (id, row) in IDS.rows.iter().enumerate() {
            if categories::of(row) & cat != 0 {
                self.set_id(id, on);
            }
        }
    }

    /// Redis 7.2's `ACLUpdateCommandRules`: a rule replaces earlier rules on the same command (a
    /// command's rule also replaces its subcommands' ones), then is appended.
    fn update_rules(&mut self, rule: &str, allow: bool) {
        let rule = rule.to_ascii_lowercase();
        self.command_rules.retain(|existing| {
            let body = &existing[1..];
            !(body == rule
                || (body.len() > rule.len()
                    && body.starts_with(&rule)
                    && body.as_bytes()[rule.len()] == b'|'))
        });
        self.command_rules
            .push(format!("{}{}", if allow { '+' } else { '-' }, rule));
    }

    /// Applies one selector rule.
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match &lower[..] {
            b"allkeys" => {
                self.all_keys = true;
                self.keys.clear();
                return Ok(());
            }
            b"resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
                return Ok(());
            }
            b"allchannels" => {
                self.all_channels = true;
                self.channels.clear();
                return Ok(());
            }
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
                return Ok(());
            }
            b"allcommands" | b"+@all" => {
                self.allowed.iter_mut().for_each(|w| *w = u64::MAX);
                self.all_commands = true;
                self.command_rules.clear();
                self.first_args.clear();
                return Ok(());
            }
            b"nocommands" | b"-@all" => {
                self.allowed.iter_mut().for_each(|w| *w = 0);
                self.all_commands = false;
                self.command_rules.clear();
                self.first_args.clear();
                return Ok(());
            }
            _ => {}
        }
        match op.first() {
            Some(b'~') | Some(b'%') => self.add_key_pattern(op),
            Some(b'&') => {
                if self.all_channels {
                    return Err(RuleError::ChannelsAfterAll);
                }
                let pattern = &op[1..];
                if pattern == b"*" {
                    self.all_channels = true;
                    self.channels.clear();
                } else if !self.channels.iter().any(|c| c == pattern) {
                    self.channels.push(pattern.to_vec());
                }
                Ok(())
            }
            Some(&sign @ (b'+' | b'-')) => {
                let allow = sign == b'+';
                let name = std::str::from_utf8(&op[1..]).map_err(|_| RuleError::Unknown)?;
                if let Some(cat) = name.strip_prefix('@') {
                    let bit = categories::by_name(cat.as_bytes()).ok_or(RuleError::Unknown)?;
                    self.update_rules(name, allow);
                    self.set_category(bit, allow);
                    return Ok(());
                }
                let (main, sub) = match name.split_once('|') {
                    Some((main, sub)) => (main, Some(sub)),
                    None => (name, None),
                };
                let cmd = lookup(main.as_bytes()).ok_or(RuleError::Unknown)?;
                match sub {
                    None => self.set_command(cmd, allow),
                    Some("") if allow => return Err(RuleError::Syntax),
                    Some(sub) if cmd.subcommands.is_empty() => {
                        // Redis's first-arg rule (`+select|0`): the command with this first
                        // argument only. There is no `-` form, nor one with two `|`.
                        if !allow || sub.contains('|') {
                            return Err(RuleError::Unknown);
                        }
                        let arg = sub.to_ascii_lowercase().into_bytes();
                        if let Some(id) = IDS.of(cmd) {
                            if !self.first_args.iter().any(|(i, a)| *i == id && *a == arg) {
                                self.first_args.push((id, arg));
                            }
                        }
                    }
                    Some(sub) => {
                        if let Some((sub, _)) = sub.split_once('|') {
                            // `+config|get|x`: a first-arg rule on a subcommand.
                            return Err(if allow && cmd.subcommand(sub.as_bytes()).is_some() {
                                RuleError::SubcommandOfPlain
                            } else {
                                RuleError::Unknown
                            });
                        }
                        let row = cmd.subcommand(sub.as_bytes()).ok_or(RuleError::Unknown)?;
                        if let Some(id) = IDS.of(row) {
                            self.set_id(id, allow);
                        }
                    }
                }
                self.update_rules(name, allow);
                Ok(())
            }
            _ => Err(RuleError::Syntax),
        }
    }

    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeysAfterAll);
        }
        let mut flags = 0u8;
        let mut offset = 1;
        if op[0] == b'%' {
            while offset < op.len() {
                let c = op[offset].to_ascii_uppercase();
                if c == b'R' && flags & READ == 0 {
                    flags |= READ;
                } else if c == b'W' && flags & WRITE == 0 {
                    flags |= WRITE;
                } else if c == b'~' {
                    offset += 1;
                    break;
                } else {
                    return Err(RuleError::Syntax);
                }
                offset += 1;
            }
        } else {
            flags = READ | WRITE;
        }
        let pattern = op.get(offset..).unwrap_or_default();
        if pattern == b"*" && flags == READ | WRITE {
            self.all_keys = true;
            self.keys.clear();
        } else if let Some(existing) = self.keys.iter_mut().find(|k| k.pattern == pattern) {
            existing.flags |= flags;
        } else {
            self.keys.push(KeyPattern {
                pattern: pattern.to_vec(),
                flags,
                shape: crate::glob::Shape::of(pattern),
            });
        }
        Ok(())
    }

    /// True when the selector allows a key with the permissions `need` (READ, WRITE, both or
    /// neither).
    #[inline]
    pub fn allows_key(&self, key: &[u8], need: u8) -> bool {
        self.all_keys
            || self
                .keys
                .iter()
                .any(|k| k.flags & need == need && k.shape.matches(&k.pattern, key))
    }

    /// True when the selector allows a channel; `literal` (PSUBSCRIBE's patterns) must equal one
    /// of the user's patterns.
    #[inline]
    pub fn allows_channel(&self, channel: &[u8], literal: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|p| {
                if literal {
                    p == channel
                } else {
                    crate::glob::matches(p, channel, false)
                }
            })
    }

    /// The keys part of a description: `~*`, or each pattern.
    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let parts: Vec<String> = self
            .keys
            .iter()
            .map(|k| {
                let prefix = match k.flags {
                    f if f == READ | WRITE => "~",
                    READ => "%R~",
                    WRITE => "%W~",
                    _ => "%~",
                };
                format!("{prefix}{}", String::from_utf8_lossy(&k.pattern))
            })
            .collect();
        parts.join(" ")
    }

    /// The channels part, as ACL GETUSER shows it (no `resetchannels`).
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let parts: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        parts.join(" ")
    }

    /// The command rules: `+@all`/`-@all` then the rules as given.
    pub fn describe_commands(&self) -> String {
        let mut out = String::from(if self.all_commands { "+@all" } else { "-@all" });
        for rule in &self.command_rules {
            out.push(' ');
            out.push_str(rule);
        }
        out
    }

    /// The whole selector as ACL LIST shows it.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let keys = self.describe_keys();
        if !keys.is_empty() {
            parts.push(keys);
        }
        if self.all_channels {
            parts.push("&*".into());
        } else {
            parts.push("resetchannels".into());
            let channels = self.describe_channels();
            if !channels.is_empty() {
                parts.push(channels);
            }
        }
        parts.push(self.describe_commands());
        parts.join(" ")
    }

    /// True when the selector allows every command, key and channel.
    pub fn is_unrestricted(&self) -> bool {
        self.all_keys && self.all_channels && self.allowed.iter().all(|w| *w == u64::MAX)
    }
}

impl Default for Selector {
    fn default() -> Self {
        Selector::new()
    }
}

/// One user.
#[derive(Clone, Debug)]
pub struct User {
    pub name: Vec<u8>,
    pub enabled: bool,
    pub nopass: bool,
    /// `sanitize-payload` / `skip-sanitize-payload` as set (shown when set).
    pub sanitize: Option<bool>,
    /// SHA-256 digests, lower-case hex, in the order added.
    pub passwords: Vec<String>,
    pub root: Selector,
    pub selectors: Vec<Selector>,
    /// Precomputed: the root selector allows everything (the check is skipped).
    pub unrestricted: bool,
}

/// The lower-case hex SHA-256 of a password.
pub fn hash_password(password: &[u8]) -> String {
    let digest = Sha256::digest(password);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn valid_hash(hash: &[u8]) -> bool {
    hash.len() == 64 && hash.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

impl User {
    /// A new user: off, no passwords, no permissions but the channels of `channels`.
    pub fn new(name: &[u8], channels: ChannelDefault) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            root: Selector::starting(channels),
            selectors: Vec::new(),
            unrestricted: false,
        }
    }

    /// The `default` user of a fresh server: on, nopass, everything allowed.
    pub fn default_user() -> User {
        let mut user = User::new(b"default", ChannelDefault::Reset);
        for rule in ["on", "nopass", "~*", "&*", "+@all"] {
            let _ = user.apply(rule.as_bytes(), ChannelDefault::Reset);
        }
        user.refresh();
        user
    }

    pub fn name_str(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }

    /// Recomputes what is derived from the rules.
    pub fn refresh(&mut self) {
        self.unrestricted = self.root.is_unrestricted();
    }

    /// True when `password` authenticates this user (enabled or not: the caller checks).
    pub fn password_ok(&self, password: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let hash = hash_password(password);
        self.passwords.contains(&hash)
    }

    /// Applies one rule (one SETUSER argument, a whole `(…)` selector included), under the
    /// server's `acl-pubsub-default` (`channels`).
    pub fn apply(&mut self, op: &[u8], channels: ChannelDefault) -> Result<(), RuleError> {
        if op.len() >= 2 && op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut selector = Selector::starting(channels);
            for part in op[1..op.len() - 1].split(|&b| b == b' ') {
                if part.is_empty() {
                    continue;
                }
                selector.apply(part)?;
            }
            self.selectors.push(selector);
            return Ok(());
        }
        let lower = op.to_ascii_lowercase();
        match &lower[..] {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"skip-sanitize-payload" => self.sanitize = Some(false),
            b"sanitize-payload" => self.sanitize = Some(true),
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"clearselectors" => self.selectors.clear(),
            b"reset" => {
                for rule in [
                    "resetpass",
                    "resetkeys",
                    "resetchannels",
                    "off",
                    "clearselectors",
                    "-@all",
                ] {
                    self.apply(rule.as_bytes(), channels)?;
                }
                if channels == ChannelDefault::All {
                    self.apply(b"allchannels", channels)?;
                }
                self.sanitize = Some(true);
            }
            _ => match op.first() {
                Some(b'>') | Some(b'#') => {
                    let hash = if op[0] == b'>' {
                        hash_password(&op[1..])
                    } else {
                        if !valid_hash(&op[1..]) {
                            return Err(RuleError::BadHash);
                        }
                        String::from_utf8_lossy(&op[1..]).into_owned()
                    };
                    if !self.passwords.contains(&hash) {
                        self.passwords.push(hash);
                    }
                    self.nopass = false;
                }
                Some(b'<') | Some(b'!') => {
                    let hash = if op[0] == b'<' {
                        hash_password(&op[1..])
                    } else {
                        if !valid_hash(&op[1..]) {
                            return Err(RuleError::BadHash);
                        }
                        String::from_utf8_lossy(&op[1..]).into_owned()
                    };
                    let before = self.passwords.len();
                    self.passwords.retain(|p| *p != hash);
                    if self.passwords.len() == before {
                        return Err(RuleError::NoSuchPassword);
                    }
                    self.nopass = false;
                }
                _ => self.root.apply(op)?,
            },
        }
        Ok(())
    }

    /// The flags ACL GETUSER lists.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize {
            Some(true) => flags.push("sanitize-payload"),
            Some(false) => flags.push("skip-sanitize-payload"),
            None => {}
        }
        flags
    }

    /// The user as one ACL LIST line (and ACL file line).
    pub fn describe(&self) -> String {
        let mut out = format!("user {}", self.name_str());
        for flag in self.flags() {
            out.push(' ');
            out.push_str(flag);
        }
        for hash in &self.passwords {
            out.push_str(" #");
            out.push_str(hash);
        }
        out.push(' ');
        out.push_str(&self.root.describe());
        for selector in &self.selectors {
            out.push_str(" (");
            out.push_str(&selector.describe());
            out.push(')');
        }
        out
    }
}

/// Joins arguments split inside a selector (`(+get`, `~x)`) into one rule, as Redis's
/// `ACLMergeSelectorArguments`. The error names the argument that opened the selector.
pub fn merge_selector_args(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, String> {
    let mut merged = Vec::new();
    let mut open: Option<(Vec<u8>, usize)> = None;
    for (i, arg) in args.iter().enumerate() {
        match open.as_mut() {
            Some((acc, _)) => {
                acc.push(b' ');
                acc.extend_from_slice(arg);
                if arg.last() == Some(&b')') {
                    if let Some((acc, _)) = open.take() {
                        merged.push(acc);
                    }
                }
            }
            None => {
                if arg.first() == Some(&b'(') && arg.last() != Some(&b')') {
                    open = Some((arg.to_vec(), i));
                } else {
                    merged.push(arg.to_vec());
                }
            }
        }
    }
    if let Some((_, start)) = open {
        return Err(format!(
            "Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(args[start])
        ));
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(rules: &[&str]) -> Result<User, RuleError> {
        let mut u = User::new(b"u", ChannelDefault::Reset);
        for r in rules {
            u.apply(r.as_bytes(), ChannelDefault::Reset)?;
        }
        u.refresh();
        Ok(u)
    }

    #[test]
    fn describes_as_redis_lists() {
        let u = user(&["on", ">p1", "~a*", "%R~b*", "&ch*", "+get", "+@all", "-get"]).unwrap();
        assert_eq!(
            u.describe(),
            "user u on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~a* %R~b* resetchannels &ch* +@all -get"
        );
        let u = user(&["+get", "+set", "-get", "+@read", "(+set ~x*)"]).unwrap();
        assert_eq!(
            u.describe(),
            "user u off resetchannels -@all +set -get +@read (~x* resetchannels -@all +set)"
        );
        assert_eq!(
            User::default_user().describe(),
            "user default on nopass ~* &* +@all"
        );
    }

    #[test]
    fn bad_rules_are_refused() {
        assert_eq!(user(&["bogus"]).err(), Some(RuleError::Syntax));
        assert_eq!(user(&["+nosuch"]).err(), Some(RuleError::Unknown));
        assert_eq!(user(&["+@nosuch"]).err(), Some(RuleError::Unknown));
        assert_eq!(
            user(&["allkeys", "~x"]).err(),
            Some(RuleError::KeysAfterAll)
        );
        assert_eq!(user(&["&*", "&x"]).err(), Some(RuleError::ChannelsAfterAll));
        assert_eq!(user(&["<nope"]).err(), Some(RuleError::NoSuchPassword));
        assert_eq!(user(&["#abc"]).err(), Some(RuleError::BadHash));
        assert_eq!(user(&["%X~a"]).err(), Some(RuleError::Syntax));
    }

    #[test]
    fn permissions_follow_the_rules() {
        let u = user(&["%R~r*", "~w*", "+@read"]).unwrap();
        assert!(u.root.allows_key(b"r1", READ));
        assert!(!u.root.allows_key(b"r1", WRITE));
        assert!(u.root.allows_key(b"w1", READ | WRITE));
        assert!(!u.root.allows_key(b"x", 0));
        let get = lookup(b"get").unwrap();
        let set = lookup(b"set").unwrap();
        assert!(u.root.allows_id(IDS.of(get).unwrap()));
        assert!(!u.root.allows_id(IDS.of(set).unwrap()));
        let u = user(&["+client|id"]).unwrap();
        let client = lookup(b"client").unwrap();
        assert!(u
            .root
            .allows_id(IDS.of(client.subcommand(b"id").unwrap()).unwrap()));
        assert!(!u
            .root
            .allows_id(IDS.of(client.subcommand(b"kill").unwrap()).unwrap()));
    }

    #[test]
    fn selectors_merge_and_report_unmatched() {
        let args: Vec<&[u8]> = vec![b"on", b"(+get", b"~x)", b"(+set ~y)"];
        assert_eq!(
            merge_selector_args(&args).unwrap(),
            vec![b"on".to_vec(), b"(+get ~x)".to_vec(), b"(+set ~y)".to_vec()]
        );
        let args: Vec<&[u8]> = vec![b"(", b"x"];
        assert_eq!(
            merge_selector_args(&args).unwrap_err(),
            "Unmatched parenthesis in acl selector starting at '('."
        );
    }
}
