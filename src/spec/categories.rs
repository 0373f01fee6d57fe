//! ACL categories (`@read`, `@string`, `@dangerous`, …, and our `@stm`) of every command and
//! subcommand, as COMMAND INFO shows them and as ACL rules will select them. Most are derived the
//! way Redis 7 derives them: from the flags (write → @write, readonly → @read, admin → @admin and
//! @dangerous, pubsub → @pubsub, fast → @fast else @slow, blocking → @blocking) and from the
//! command's group (string → @string, generic → @keyspace, stm → @stm, …). A row lists only what
//! Redis adds beyond that (its `acl:` field, e.g. `cat::DANGEROUS` on KEYS), or
//! [`NO_GROUP`] where Redis gives a command none of its group's category (WAIT).

use super::command::{self, Command};

pub const KEYSPACE: u32 = 1;
pub const READ: u32 = 1 << 1;
pub const WRITE: u32 = 1 << 2;
pub const SET: u32 = 1 << 3;
pub const SORTEDSET: u32 = 1 << 4;
pub const LIST: u32 = 1 << 5;
pub const HASH: u32 = 1 << 6;
pub const STRING: u32 = 1 << 7;
pub const BITMAP: u32 = 1 << 8;
pub const HYPERLOGLOG: u32 = 1 << 9;
pub const GEO: u32 = 1 << 10;
pub const STREAM: u32 = 1 << 11;
pub const PUBSUB: u32 = 1 << 12;
pub const ADMIN: u32 = 1 << 13;
pub const FAST: u32 = 1 << 14;
pub const SLOW: u32 = 1 << 15;
pub const BLOCKING: u32 = 1 << 16;
pub const DANGEROUS: u32 = 1 << 17;
pub const CONNECTION: u32 = 1 << 18;
pub const TRANSACTION: u32 = 1 << 19;
pub const SCRIPTING: u32 = 1 << 20;
/// Ours: the short-term memory commands (`STM.*`).
pub const STM: u32 = 1 << 21;
/// RedisJSON's module category (`JSON.*`), which Redis 8 lists after the built-in ones.
pub const JSON: u32 = 1 << 22;
/// RediSearch's module category (`FT.*`), which Redis 8 lists after the built-in ones.
pub const SEARCH: u32 = 1 << 23;
/// Not a category: in a row's `acl:`, drops the category its group would give.
pub const NO_GROUP: u32 = 1 << 31;

/// Category names, in the order Redis renders them (ours last).
pub const NAMES: &[(u32, &str)] = &[
    (KEYSPACE, "keyspace"),
    (READ, "read"),
    (WRITE, "write"),
    (SET, "set"),
    (SORTEDSET, "sortedset"),
    (LIST, "list"),
    (HASH, "hash"),
    (STRING, "string"),
    (BITMAP, "bitmap"),
    (HYPERLOGLOG, "hyperloglog"),
    (GEO, "geo"),
    (STREAM, "stream"),
    (PUBSUB, "pubsub"),
    (ADMIN, "admin"),
    (FAST, "fast"),
    (SLOW, "slow"),
    (BLOCKING, "blocking"),
    (DANGEROUS, "dangerous"),
    (CONNECTION, "connection"),
    (TRANSACTION, "transaction"),
    (SCRIPTING, "scripting"),
    (JSON, "json"),
    (SEARCH, "search"),
    (STM, "stm"),
];

/// The category a command group implies, where Redis gives every command of the group one.
fn of_group(group: &str) -> u32 {
    match group {
        "generic" => KEYSPACE,
        "string" => STRING,
        "list" => LIST,
        "hash" => HASH,
        "set" => SET,
        "sorted-set" => SORTEDSET,
        "bitmap" => BITMAP,
        "hyperloglog" => HYPERLOGLOG,
        "geo" => GEO,
        "stream" => STREAM,
        "pubsub" => PUBSUB,
        "connection" => CONNECTION,
        "transactions" => TRANSACTION,
        "scripting" => SCRIPTING,
        "stm" => STM,
        _ => 0,
    }
}

/// Every category of `cmd` (a command or a subcommand). A container (CLIENT, CONFIG…) has none
/// but @slow itself: its subcommands carry theirs, as in Redis.
pub fn of(cmd: &Command) -> u32 {
    let mut cats = cmd.acl & !NO_GROUP;
    if cmd.acl & NO_GROUP == 0 && cmd.subcommands.is_empty() {
        cats |= of_group(cmd.group);
    }
    let flag = |f: u32, cat: u32| if cmd.has(f) { cat } else { 0 };
    cats |= flag(command::WRITE, WRITE)
        | flag(command::ADMIN, ADMIN | DANGEROUS)
        | flag(command::PUBSUB, PUBSUB)
        | flag(command::FAST, FAST)
        | flag(command::BLOCKING, BLOCKING);
    // Redis keeps scripting commands out of @read.
    if cmd.has(command::READONLY) && cats & SCRIPTING == 0 {
        cats |= READ;
    }
    if cats & FAST == 0 {
        cats |= SLOW;
    }
    cats
}

/// The names of `cats`, without the `@`, in Redis's order.
pub fn names(cats: u32) -> impl Iterator<Item = &'static str> {
    NAMES
        .iter()
        .filter(move |(bit, _)| cats & bit != 0)
        .map(|(_, name)| *name)
}

/// A category by (case-insensitive) name, without the `@`.
pub fn by_name(name: &[u8]) -> Option<u32> {
    NAMES
        .iter()
        .find(|(_, n)| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|(bit, _)| *bit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::lookup;

    fn cats(name: &str) -> Vec<&'static str> {
        let mut parts = name.split('|');
        let cmd = lookup(parts.next().unwrap_or_default().as_bytes()).expect("command");
        let cmd = match parts.next() {
            Some(sub) => cmd.subcommand(sub.as_bytes()).expect("subcommand"),
            None => cmd,
        };
        names(of(cmd)).collect()
    }

    #[test]
    fn categories_are_derived_as_redis_derives_them() {
        assert_eq!(cats("get"), ["read", "string", "fast"]);
        assert_eq!(cats("keys"), ["keyspace", "read", "slow", "dangerous"]);
        assert_eq!(cats("blpop"), ["write", "list", "slow", "blocking"]);
        assert_eq!(cats("wait"), ["slow", "connection"]);
        assert_eq!(cats("client"), ["slow"]);
        assert_eq!(
            cats("client|kill"),
            ["admin", "slow", "dangerous", "connection"]
        );
        assert_eq!(cats("pubsub|help"), ["slow"]);
        assert_eq!(cats("stm.capture"), ["write", "slow", "stm"]);
        assert_eq!(by_name(b"STM"), Some(STM));
        assert_eq!(by_name(b"nosuch"), None);
    }
}
