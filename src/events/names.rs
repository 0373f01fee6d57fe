//! Each writing command's own keyspace event, as Redis 7.2 names it (its `notifyKeyspaceEvent`
//! calls). This is the data the generic path reads; the few commands whose events depend on the
//! outcome (RENAME, LMOVE, SMOVE, ZADD INCR, SET/SETEX/GETEX with an expiry) name their events
//! in their handlers through `Locked::notify`.

use super::class;

/// A command's event for the keys it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnEvent {
    pub class: u32,
    pub name: &'static str,
    /// Also the event for keys the command removes (STM.FORGET), instead of `del`.
    pub on_removal: bool,
}

const fn ev(class: u32, name: &'static str) -> Option<OwnEvent> {
    Some(OwnEvent {
        class,
        name,
        on_removal: false,
    })
}

/// The event of `command` (lower-case table name) for the keys it writes; None for commands
/// whose only key events are the generic ones (`del`, `expired`, `new`…).
pub fn command_event(command: &str) -> Option<OwnEvent> {
    use class::*;
    match command {
        "expire" | "pexpire" | "expireat" | "pexpireat" => ev(GENERIC, "expire"),
        "persist" => ev(GENERIC, "persist"),
        "set" | "setnx" | "setex" | "psetex" | "getset" | "mset" | "msetnx" => ev(STRING, "set"),
        "incr" | "decr" | "incrby" | "decrby" => ev(STRING, "incrby"),
        "incrbyfloat" => ev(STRING, "incrbyfloat"),
        "append" => ev(STRING, "append"),
        "setrange" => ev(STRING, "setrange"),
        "setbit" | "bitfield" => ev(STRING, "setbit"),
        "bitop" => ev(STRING, "set"),
        "pfadd" | "pfmerge" => ev(STRING, "pfadd"),
        "lpush" | "lpushx" => ev(LIST, "lpush"),
        "rpush" | "rpushx" => ev(LIST, "rpush"),
        "lpop" | "blpop" => ev(LIST, "lpop"),
        "rpop" | "brpop" => ev(LIST, "rpop"),
        "lset" => ev(LIST, "lset"),
        "lrem" => ev(LIST, "lrem"),
        "ltrim" => ev(LIST, "ltrim"),
        "linsert" => ev(LIST, "linsert"),
        "hset" | "hmset" | "hsetnx" => ev(HASH, "hset"),
        "hdel" => ev(HASH, "hdel"),
        "hincrby" => ev(HASH, "hincrby"),
        "hincrbyfloat" => ev(HASH, "hincrbyfloat"),
        "sadd" => ev(SET, "sadd"),
        "srem" => ev(SET, "srem"),
        "spop" => ev(SET, "spop"),
        "sinterstore" => ev(SET, "sinterstore"),
        "sunionstore" => ev(SET, "sunionstore"),
        "sdiffstore" => ev(SET, "sdiffstore"),
        "zadd" | "geoadd" => ev(ZSET, "zadd"),
        "zincrby" => ev(ZSET, "zincr"),
        "zrem" => ev(ZSET, "zrem"),
        "zremrangebyscore" => ev(ZSET, "zremrangebyscore"),
        "zremrangebyrank" => ev(ZSET, "zremrangebyrank"),
        "zremrangebylex" => ev(ZSET, "zremrangebylex"),
        "zpopmin" => ev(ZSET, "zpopmin"),
        "zpopmax" | "bzpopmax" => ev(ZSET, "zpopmax"),
        "bzpopmin" => ev(ZSET, "zpopmin"),
        "zunionstore" => ev(ZSET, "zunionstore"),
        "zinterstore" => ev(ZSET, "zinterstore"),
        "zdiffstore" => ev(ZSET, "zdiffstore"),
        "zrangestore" => ev(ZSET, "zrangestore"),
        // RedisJSON's events, in the module class (`d`); JSON.FORGET is JSON.DEL's alias, and
        // JSON.DEL's event names the removal of a whole key too.
        "json.set" => ev(MODULE, "json.set"),
        "json.mset" => ev(MODULE, "json.mset"),
        "json.merge" => ev(MODULE, "json.merge"),
        "json.del" | "json.forget" => Some(OwnEvent {
            class: MODULE,
            name: "json.del",
            on_removal: true,
        }),
        "json.numincrby" => ev(MODULE, "json.numincrby"),
        "json.nummultby" => ev(MODULE, "json.nummultby"),
        "json.toggle" => ev(MODULE, "json.toggle"),
        "json.strappend" => ev(MODULE, "json.strappend"),
        "json.arrappend" => ev(MODULE, "json.arrappend"),
        "json.arrinsert" => ev(MODULE, "json.arrinsert"),
        "json.arrpop" => ev(MODULE, "json.arrpop"),
        "json.arrtrim" => ev(MODULE, "json.arrtrim"),
        "json.clear" => ev(MODULE, "json.clear"),
        "stm.capture" => ev(STM, "stm.capture"),
        "stm.summary" => ev(STM, "stm.summary"),
        "stm.categories" => ev(STM, "stm.categories"),
        "stm.tick" => ev(STM, "stm.tick"),
        "stm.forget" => Some(OwnEvent {
            class: STM,
            name: "stm.forget",
            on_removal: true,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::command::{rows, WRITE};

    /// Every writing command either has its own event or only removes keys / names its events in
    /// its handler: a new writing command must be placed in one of these lists.
    #[test]
    fn every_writing_command_is_covered() {
        // SWAPDB publishes no key events in Redis either.
        const GENERIC_ONLY: &[&str] = &[
            "del", "unlink", "getdel", "delifeq", "flushdb", "flushall", "swapdb", "migrate",
        ];
        const NAMED_BY_HANDLER: &[&str] = &[
            "rename",
            "renamenx",
            "getex",
            "lmove",
            "rpoplpush",
            "blmove",
            "brpoplpush",
            "smove",
            "move",
            "restore",
            "restore-asking",
            "copy",
            "georadius",
            "georadiusbymember",
            "geosearchstore",
            "sort",
            "zmpop",
            "bzmpop",
            "lmpop",
            "blmpop",
            // Hash-field expiration: `hexpire`/`hdel`/`hpersist`/`hset` by outcome, as Redis.
            "hexpire",
            "hpexpire",
            "hexpireat",
            "hpexpireat",
            "hpersist",
            "hgetdel",
            "hgetex",
            "hsetex",
            // Streams name their events in their handlers (`xadd` and `xtrim` from one XADD,
            // `xdel` from XDELEX/XACKDEL, `xgroup-*`, `xsetid`…), and XACK/XCLAIM/XAUTOCLAIM
            // publish none, as in Redis.
            "xadd",
            "xtrim",
            "xdel",
            "xdelex",
            "xackdel",
            "xsetid",
            "xgroup",
            "xreadgroup",
            "xack",
            "xclaim",
            "xautoclaim",
        ];
        // PFDEBUG GETREG/TODENSE rewrite a value in place without an event, as in Redis.
        const NO_EVENT: &[&str] = &["pfdebug"];
        // FT.* commands write index definitions, not keys (FT.DROPINDEX DD's deletions are the
        // store's, with their generic `del`), as RediSearch publishes none.
        let search_index = |name: &str| name.starts_with("ft.");
        for c in rows().iter().filter(|c| c.has(WRITE)) {
            assert!(
                command_event(c.name).is_some()
                    || search_index(c.name)
                    || GENERIC_ONLY.contains(&c.name)
                    || NO_EVENT.contains(&c.name)
                    || NAMED_BY_HANDLER.contains(&c.name),
                "{} has no keyspace event",
                c.name
            );
        }
    }
}
