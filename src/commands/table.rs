//! The one command table. Everything about a command that is data lives here: name, arity, flags,
//! key positions, group, summary, syntax and handler. Dispatch checks it centrally; COMMAND,
//! COMMAND INFO/DOCS/COUNT/LIST are rendered from it.

use super::databases;
use super::functions;
use super::scripting as lua;
use super::stm_context;
use super::{
    blocking_lists as blists, hashes, info, introspection, lists, pubsub, sets, zrange, zsets,
};
use super::{connection as conn, keys, ops, server, stm, strings, transactions as tx, Handler};
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
/// Runs even while a script is past `busy-reply-threshold` (Redis 7.2's `allow_busy`).
pub const ALLOW_BUSY: u32 = 1 << 14;

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
    (FAST, "fast"),
    (NO_AUTH, "no_auth"),
    (NO_MULTI, "no_multi"),
    (ALLOW_BUSY, "allow_busy"),
];

/// One command's metadata and handler.
pub struct Command {
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
    pub handler: Handler,
}

impl Command {
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

    pub fn flag_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        FLAG_NAMES
            .iter()
            .filter(|(bit, _)| self.has(*bit))
            .map(|(_, name)| *name)
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

macro_rules! commands {
    ($( $name:literal, $arity:expr, $flags:expr, ($first:expr, $last:expr, $step:expr), $group:literal, $since:literal, $handler:path, $syntax:literal, $summary:literal; )*) => {
        &[ $( Command {
            name: $name, arity: $arity, flags: $flags, first_key: $first, last_key: $last,
            step: $step, group: $group, summary: $summary, since: $since, syntax: $syntax,
            handler: $handler,
        }, )* ]
    };
}

/// Every command stmd knows, grouped as Redis groups them.
pub static COMMANDS: &[Command] = commands![
    // connection
    "ping", -1, FAST | STALE, (0, 0, 0), "connection", "1.0.0", conn::ping, "[message]", "Returns the server's liveliness response.";
    "echo", 2, FAST | STALE, (0, 0, 0), "connection", "1.0.0", conn::echo, "message", "Returns the given string.";
    "hello", -1, NO_AUTH | FAST | STALE | NOSCRIPT | LOADING | ALLOW_BUSY, (0, 0, 0), "connection", "6.0.0", conn::hello, "[protover [AUTH username password] [SETNAME clientname]]", "Handshakes with the Redis server.";
    "auth", -2, NO_AUTH | FAST | STALE | NOSCRIPT | LOADING | ALLOW_BUSY, (0, 0, 0), "connection", "1.0.0", conn::auth, "[username] password", "Authenticates the connection.";
    "select", 2, FAST | LOADING | STALE, (0, 0, 0), "connection", "1.0.0", databases::select, "index", "Changes the selected database.";
    "quit", -1, NO_AUTH | FAST | STALE | LOADING | NOSCRIPT | NOT_QUEUED | ALLOW_BUSY, (0, 0, 0), "connection", "1.0.0", conn::quit, "", "Closes the connection.";
    "reset", 1, NO_AUTH | FAST | STALE | LOADING | NOSCRIPT | NOT_QUEUED | ALLOW_BUSY, (0, 0, 0), "connection", "6.2.0", conn::reset, "", "Resets the connection.";
    "client", -2, STALE | LOADING | NOSCRIPT, (0, 0, 0), "connection", "2.4.0", conn::client, "ID | INFO | LIST | GETNAME | SETNAME connection-name | SETINFO <LIB-NAME libname | LIB-VER libver> | KILL <ip:port | ID client-id>", "A container for client connection commands.";
    // server
    "info", -1, STALE | LOADING, (0, 0, 0), "server", "1.0.0", info::info, "[section [section ...]]", "Returns information and statistics about the server.";
    "config", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.0.0", server::config, "GET parameter [parameter ...] | SET parameter value [parameter value ...] | RESETSTAT", "A container for server configuration commands.";
    "slowlog", -2, ADMIN | LOADING | STALE, (0, 0, 0), "server", "2.2.12", ops::slowlog, "GET [count] | LEN | RESET | HELP", "A container for slow log commands.";
    "monitor", 1, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "1.0.0", ops::monitor, "", "Listens for all requests received by the server in real-time.";
    "command", -1, LOADING | STALE, (0, 0, 0), "server", "2.8.13", server::command, "[COUNT | INFO [command-name ...] | DOCS [command-name ...] | LIST | GETKEYS command [arg ...]]", "Returns detailed information about all commands.";
    "dbsize", 1, READONLY | FAST, (0, 0, 0), "server", "1.0.0", databases::dbsize, "", "Returns the number of keys in the database.";
    "flushdb", -1, WRITE, (0, 0, 0), "server", "1.0.0", databases::flushdb, "[ASYNC | SYNC]", "Removes all keys from the current database.";
    "flushall", -1, WRITE, (0, 0, 0), "server", "1.0.0", databases::flushall, "[ASYNC | SYNC]", "Removes all keys from all databases.";
    "time", 1, FAST | LOADING | STALE, (0, 0, 0), "server", "2.6.0", server::time, "", "Returns the server time.";
    "shutdown", -1, ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY, (0, 0, 0), "server", "1.0.0", server::shutdown, "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]", "Stops the server.";
    "lastsave", 1, FAST | LOADING | STALE, (0, 0, 0), "server", "1.0.0", server::lastsave, "", "Returns the Unix timestamp of the last successful save to disk.";
    "latency", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.8.13", introspection::latency, "LATEST | HISTORY event | RESET [event ...] | GRAPH event | DOCTOR | HISTOGRAM [command ...] | HELP", "A container for latency diagnostics commands.";
    "memory", -2, 0, (0, 0, 0), "server", "4.0.0", introspection::memory, "USAGE key [SAMPLES count] | STATS | DOCTOR | MALLOC-STATS | PURGE | HELP", "A container for memory diagnostics commands.";
    "role", 1, NOSCRIPT | LOADING | STALE | FAST, (0, 0, 0), "server", "2.8.12", introspection::role, "", "Returns the replication role.";
    "wait", 3, 0, (0, 0, 0), "generic", "3.0.0", introspection::wait, "numreplicas timeout", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.";
    "lolwut", -1, READONLY | FAST, (0, 0, 0), "server", "5.0.0", introspection::lolwut, "[VERSION version]", "Displays computer art and the Redis version.";
    "debug", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "1.0.0", introspection::debug, "SLEEP seconds | OBJECT key | SET-ACTIVE-EXPIRE flag | HELP", "A container for debugging commands.";
    // transactions
    "multi", 1, NOSCRIPT | LOADING | STALE | FAST | NOT_QUEUED | ALLOW_BUSY, (0, 0, 0), "transactions", "1.2.0", tx::multi, "", "Starts a transaction.";
    "exec", 1, NOSCRIPT | LOADING | STALE | NOT_QUEUED, (0, 0, 0), "transactions", "1.2.0", tx::exec, "", "Executes all commands in a transaction.";
    "discard", 1, NOSCRIPT | LOADING | STALE | FAST | NOT_QUEUED | ALLOW_BUSY, (0, 0, 0), "transactions", "2.0.0", tx::discard, "", "Discards a transaction.";
    "watch", -2, NOSCRIPT | LOADING | STALE | FAST | NOT_QUEUED | ALLOW_BUSY, (1, -1, 1), "transactions", "2.2.0", tx::watch, "key [key ...]", "Monitors changes to keys to determine the execution of a transaction.";
    "unwatch", 1, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, (0, 0, 0), "transactions", "2.2.0", tx::unwatch, "", "Forgets about watched keys of a transaction.";
    // generic
    "del", -2, WRITE, (1, -1, 1), "generic", "1.0.0", keys::del, "key [key ...]", "Deletes one or more keys.";
    "unlink", -2, WRITE | FAST, (1, -1, 1), "generic", "4.0.0", keys::del, "key [key ...]", "Asynchronously deletes one or more keys.";
    "exists", -2, READONLY | FAST, (1, -1, 1), "generic", "1.0.0", keys::exists, "key [key ...]", "Determines whether one or more keys exist.";
    "type", 2, READONLY | FAST, (1, 1, 1), "generic", "1.0.0", keys::type_, "key", "Determines the type of value stored at a key.";
    "expire", -3, WRITE | FAST, (1, 1, 1), "generic", "1.0.0", keys::expire, "key seconds [NX | XX | GT | LT]", "Sets the expiration time of a key in seconds.";
    "pexpire", -3, WRITE | FAST, (1, 1, 1), "generic", "2.6.0", keys::expire, "key milliseconds [NX | XX | GT | LT]", "Sets the expiration time of a key in milliseconds.";
    "expireat", -3, WRITE | FAST, (1, 1, 1), "generic", "1.2.0", keys::expire, "key unix-time-seconds [NX | XX | GT | LT]", "Sets the expiration time of a key to a Unix timestamp.";
    "pexpireat", -3, WRITE | FAST, (1, 1, 1), "generic", "2.6.0", keys::expire, "key unix-time-milliseconds [NX | XX | GT | LT]", "Sets the expiration time of a key to a Unix milliseconds timestamp.";
    "ttl", 2, READONLY | FAST, (1, 1, 1), "generic", "1.0.0", keys::ttl, "key", "Returns the expiration time in seconds of a key.";
    "pttl", 2, READONLY | FAST, (1, 1, 1), "generic", "2.6.0", keys::ttl, "key", "Returns the expiration time in milliseconds of a key.";
    "expiretime", 2, READONLY | FAST, (1, 1, 1), "generic", "7.0.0", keys::ttl, "key", "Returns the expiration time of a key as a Unix timestamp.";
    "pexpiretime", 2, READONLY | FAST, (1, 1, 1), "generic", "7.0.0", keys::ttl, "key", "Returns the expiration time of a key as a Unix milliseconds timestamp.";
    "persist", 2, WRITE | FAST, (1, 1, 1), "generic", "2.2.0", keys::persist, "key", "Removes the expiration time of a key.";
    "keys", 2, READONLY, (0, 0, 0), "generic", "1.0.0", keys::keys, "pattern", "Returns all key names that match a pattern.";
    "scan", -2, READONLY, (0, 0, 0), "generic", "2.8.0", keys::scan, "cursor [MATCH pattern] [COUNT count] [TYPE type]", "Iterates over the key names in the database.";
    "object", -2, READONLY, (2, 2, 1), "generic", "2.2.3", keys::object, "IDLETIME key | FREQ key | HELP", "A container for object introspection commands.";
    "rename", 3, WRITE, (1, 2, 1), "generic", "1.0.0", keys::rename, "key newkey", "Renames a key and overwrites the destination.";
    "renamenx", 3, WRITE | FAST, (1, 2, 1), "generic", "1.0.0", keys::rename, "key newkey", "Renames a key only when the target key name doesn't exist.";
    "randomkey", 1, READONLY, (0, 0, 0), "generic", "1.0.0", keys::randomkey, "", "Returns a random key name from the database.";
    "move", 3, WRITE | FAST, (1, 1, 1), "generic", "1.0.0", databases::move_key, "key db", "Moves a key to another database.";
    "swapdb", 3, WRITE | FAST, (0, 0, 0), "server", "4.0.0", databases::swapdb, "index1 index2", "Swaps two Redis databases.";
    // string
    "get", 2, READONLY | FAST, (1, 1, 1), "string", "1.0.0", strings::get, "key", "Returns the string value of a key.";
    "set", -3, WRITE | DENYOOM, (1, 1, 1), "string", "1.0.0", strings::set, "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]", "Sets the string value of a key, ignoring its type.";
    "setnx", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::setnx, "key value", "Set the string value of a key only when the key doesn't exist.";
    "setex", 4, WRITE | DENYOOM, (1, 1, 1), "string", "2.0.0", strings::setex, "key seconds value", "Sets the string value and expiration time of a key.";
    "psetex", 4, WRITE | DENYOOM, (1, 1, 1), "string", "2.6.0", strings::setex, "key milliseconds value", "Sets both string value and expiration time in milliseconds of a key.";
    "getset", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::getset, "key value", "Returns the previous string value of a key after setting it to a new value.";
    "getdel", 2, WRITE | FAST, (1, 1, 1), "string", "6.2.0", strings::getdel, "key", "Returns the string value of a key after deleting the key.";
    "getex", -2, WRITE | FAST, (1, 1, 1), "string", "6.2.0", strings::getex, "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]", "Returns the string value of a key after setting its expiration time.";
    "mget", -2, READONLY | FAST, (1, -1, 1), "string", "1.0.0", strings::mget, "key [key ...]", "Atomically returns the string values of one or more keys.";
    "mset", -3, WRITE | DENYOOM, (1, -1, 2), "string", "1.0.1", strings::mset, "key value [key value ...]", "Atomically creates or modifies the string values of one or more keys.";
    "msetnx", -3, WRITE | DENYOOM, (1, -1, 2), "string", "1.0.1", strings::mset, "key value [key value ...]", "Atomically modifies the string values of one or more keys only when all keys don't exist.";
    "incr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::incr, "key", "Increments the integer value of a key by one.";
    "decr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::incr, "key", "Decrements the integer value of a key by one.";
    "incrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::incr, "key increment", "Increments the integer value of a key by a number.";
    "decrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::incr, "key decrement", "Decrements a number from the integer value of a key.";
    "incrbyfloat", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "2.6.0", strings::incrbyfloat, "key increment", "Increment the floating point value of a key by a number.";
    "append", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "2.0.0", strings::append, "key value", "Appends a string to the value of a key.";
    "strlen", 2, READONLY | FAST, (1, 1, 1), "string", "2.2.0", strings::strlen, "key", "Returns the length of a string value.";
    "getrange", 4, READONLY, (1, 1, 1), "string", "2.4.0", strings::getrange, "key start end", "Returns a substring of the string stored at a key.";
    "substr", 4, READONLY, (1, 1, 1), "string", "1.0.0", strings::getrange, "key start end", "Returns a substring from a string value.";
    "setrange", 4, WRITE | DENYOOM, (1, 1, 1), "string", "2.2.0", strings::setrange, "key offset value", "Overwrites a part of a string value with another by an offset.";
    // list
    "lpush", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "list", "1.0.0", lists::push, "key element [element ...]", "Prepends one or more elements to a list. Creates the key if it doesn't exist.";
    "rpush", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "list", "1.0.0", lists::push, "key element [element ...]", "Appends one or more elements to a list. Creates the key if it doesn't exist.";
    "lpushx", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "list", "2.2.0", lists::push, "key element [element ...]", "Prepends one or more elements to a list only when the list exists.";
    "rpushx", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "list", "2.2.0", lists::push, "key element [element ...]", "Appends an element to a list only when the list exists.";
    "lpop", -2, WRITE | FAST, (1, 1, 1), "list", "1.0.0", lists::pop, "key [count]", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.";
    "rpop", -2, WRITE | FAST, (1, 1, 1), "list", "1.0.0", lists::pop, "key [count]", "Returns and removes the last elements of a list. Deletes the list if the last element was popped.";
    "lrange", 4, READONLY, (1, 1, 1), "list", "1.0.0", lists::lrange, "key start stop", "Returns a range of elements from a list.";
    "llen", 2, READONLY | FAST, (1, 1, 1), "list", "1.0.0", lists::llen, "key", "Returns the length of a list.";
    "lindex", 3, READONLY, (1, 1, 1), "list", "1.0.0", lists::lindex, "key index", "Returns an element from a list by its index.";
    "lset", 4, WRITE | DENYOOM, (1, 1, 1), "list", "1.0.0", lists::lset, "key index element", "Sets the value of an element in a list by its index.";
    "lrem", 4, WRITE, (1, 1, 1), "list", "1.0.0", lists::lrem, "key count element", "Removes elements from a list. Deletes the list if the last element was removed.";
    "ltrim", 4, WRITE, (1, 1, 1), "list", "1.0.0", lists::ltrim, "key start stop", "Removes elements from both ends a list. Deletes the list if all elements were trimmed.";
    "linsert", 5, WRITE | DENYOOM, (1, 1, 1), "list", "2.2.0", lists::linsert, "key <BEFORE | AFTER> pivot element", "Inserts an element before or after another element in a list.";
    "lpos", -3, READONLY, (1, 1, 1), "list", "6.0.6", lists::lpos, "key element [RANK rank] [COUNT num-matches] [MAXLEN len]", "Returns the index of matching elements in a list.";
    "lmove", 5, WRITE | DENYOOM, (1, 2, 1), "list", "6.2.0", lists::lmove, "source destination <LEFT | RIGHT> <LEFT | RIGHT>", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.";
    "rpoplpush", 3, WRITE | DENYOOM, (1, 2, 1), "list", "1.2.0", lists::lmove, "source destination", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.";
    "blpop", -3, WRITE | BLOCKING, (1, -2, 1), "list", "2.0.0", blists::bpop, "key [key ...] timeout", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.";
    "brpop", -3, WRITE | BLOCKING, (1, -2, 1), "list", "2.0.0", blists::bpop, "key [key ...] timeout", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.";
    "blmove", 6, WRITE | DENYOOM | BLOCKING, (1, 2, 1), "list", "6.2.0", blists::blmove, "source destination <LEFT | RIGHT> <LEFT | RIGHT> timeout", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.";
    "brpoplpush", 4, WRITE | DENYOOM | BLOCKING, (1, 2, 1), "list", "2.2.0", blists::blmove, "source destination timeout", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.";
    // hash
    "hset", -4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hset, "key field value [field value ...]", "Creates or modifies the value of a field in a hash.";
    "hmset", -4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hset, "key field value [field value ...]", "Sets the values of multiple fields.";
    "hsetnx", 4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hsetnx, "key field value", "Sets the value of a field in a hash only when the field doesn't exist.";
    "hget", 3, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hget, "key field", "Returns the value of a field in a hash.";
    "hmget", -3, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hmget, "key field [field ...]", "Returns the values of all fields in a hash.";
    "hgetall", 2, READONLY, (1, 1, 1), "hash", "2.0.0", hashes::hgetall, "key", "Returns all fields and values in a hash.";
    "hkeys", 2, READONLY, (1, 1, 1), "hash", "2.0.0", hashes::hkeys, "key", "Returns all fields in a hash.";
    "hvals", 2, READONLY, (1, 1, 1), "hash", "2.0.0", hashes::hkeys, "key", "Returns all values in a hash.";
    "hdel", -3, WRITE | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hdel, "key field [field ...]", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.";
    "hlen", 2, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hlen, "key", "Returns the number of fields in a hash.";
    "hexists", 3, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hexists, "key field", "Determines whether a field exists in a hash.";
    "hstrlen", 3, READONLY | FAST, (1, 1, 1), "hash", "3.2.0", hashes::hstrlen, "key field", "Returns the length of the value of a field.";
    "hincrby", 4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hincrby, "key field increment", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.";
    "hincrbyfloat", 4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.6.0", hashes::hincrbyfloat, "key field increment", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.";
    "hrandfield", -2, READONLY, (1, 1, 1), "hash", "6.2.0", hashes::hrandfield, "key [count [WITHVALUES]]", "Returns one or more random fields from a hash.";
    "hscan", -3, READONLY, (1, 1, 1), "hash", "2.8.0", hashes::hscan, "key cursor [MATCH pattern] [COUNT count]", "Iterates over fields and values of a hash.";
    // set
    "sadd", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "set", "1.0.0", sets::sadd, "key member [member ...]", "Adds one or more members to a set. Creates the key if it doesn't exist.";
    "srem", -3, WRITE | FAST, (1, 1, 1), "set", "1.0.0", sets::srem, "key member [member ...]", "Removes one or more members from a set. Deletes the set if the last member was removed.";
    "smembers", 2, READONLY, (1, 1, 1), "set", "1.0.0", sets::smembers, "key", "Returns all members of a set.";
    "sismember", 3, READONLY | FAST, (1, 1, 1), "set", "1.0.0", sets::sismember, "key member", "Determines whether a member belongs to a set.";
    "smismember", -3, READONLY | FAST, (1, 1, 1), "set", "6.2.0", sets::smismember, "key member [member ...]", "Determines whether multiple members belong to a set.";
    "scard", 2, READONLY | FAST, (1, 1, 1), "set", "1.0.0", sets::scard, "key", "Returns the number of members in a set.";
    "spop", -2, WRITE | FAST, (1, 1, 1), "set", "1.0.0", sets::spop, "key [count]", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.";
    "srandmember", -2, READONLY, (1, 1, 1), "set", "1.0.0", sets::srandmember, "key [count]", "Get one or multiple random members from a set.";
    "smove", 4, WRITE | FAST, (1, 2, 1), "set", "1.0.0", sets::smove, "source destination member", "Moves a member from one set to another.";
    "sinter", -2, READONLY, (1, -1, 1), "set", "1.0.0", sets::algebra, "key [key ...]", "Returns the intersect of multiple sets.";
    "sunion", -2, READONLY, (1, -1, 1), "set", "1.0.0", sets::algebra, "key [key ...]", "Returns the union of multiple sets.";
    "sdiff", -2, READONLY, (1, -1, 1), "set", "1.0.0", sets::algebra, "key [key ...]", "Returns the difference of multiple sets.";
    "sinterstore", -3, WRITE | DENYOOM, (1, -1, 1), "set", "1.0.0", sets::algebra_store, "destination key [key ...]", "Stores the intersect of multiple sets in a key.";
    "sunionstore", -3, WRITE | DENYOOM, (1, -1, 1), "set", "1.0.0", sets::algebra_store, "destination key [key ...]", "Stores the union of multiple sets in a key.";
    "sdiffstore", -3, WRITE | DENYOOM, (1, -1, 1), "set", "1.0.0", sets::algebra_store, "destination key [key ...]", "Stores the difference of multiple sets in a key.";
    "sintercard", -3, READONLY, (0, 0, 0), "set", "7.0.0", sets::sintercard, "numkeys key [key ...] [LIMIT limit]", "Returns the number of members of the intersect of multiple sets.";
    "sscan", -3, READONLY, (1, 1, 1), "set", "2.8.0", sets::sscan, "key cursor [MATCH pattern] [COUNT count]", "Iterates over members of a set.";
    // sorted set
    "zadd", -4, WRITE | DENYOOM | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zadd, "key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.";
    "zincrby", 4, WRITE | DENYOOM | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zincrby, "key increment member", "Increments the score of a member in a sorted set.";
    "zscore", 3, READONLY | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zscore, "key member", "Returns the score of a member in a sorted set.";
    "zmscore", -3, READONLY | FAST, (1, 1, 1), "sorted-set", "6.2.0", zsets::zmscore, "key member [member ...]", "Returns the score of one or more members in a sorted set.";
    "zcard", 2, READONLY | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zcard, "key", "Returns the number of members in a sorted set.";
    "zcount", 4, READONLY | FAST, (1, 1, 1), "sorted-set", "2.0.0", zrange::zcount, "key min max", "Returns the count of members in a sorted set that have scores within a range.";
    "zlexcount", 4, READONLY | FAST, (1, 1, 1), "sorted-set", "2.8.9", zrange::zcount, "key min max", "Returns the number of members in a sorted set within a lexicographical range.";
    "zrank", 3, READONLY | FAST, (1, 1, 1), "sorted-set", "2.0.0", zsets::zrank, "key member", "Returns the index of a member in a sorted set ordered by ascending scores.";
    "zrevrank", 3, READONLY | FAST, (1, 1, 1), "sorted-set", "2.0.0", zsets::zrank, "key member", "Returns the index of a member in a sorted set ordered by descending scores.";
    "zrange", -4, READONLY, (1, 1, 1), "sorted-set", "1.2.0", zrange::zrange, "key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]", "Returns members in a sorted set within a range of indexes.";
    "zrangebyscore", -4, READONLY, (1, 1, 1), "sorted-set", "1.0.5", zrange::zrange, "key min max [WITHSCORES] [LIMIT offset count]", "Returns members in a sorted set within a range of scores.";
    "zrevrange", -4, READONLY, (1, 1, 1), "sorted-set", "1.2.0", zrange::zrange, "key start stop [WITHSCORES]", "Returns members in a sorted set within a range of indexes in reverse order.";
    "zrevrangebyscore", -4, READONLY, (1, 1, 1), "sorted-set", "2.2.0", zrange::zrange, "key max min [WITHSCORES] [LIMIT offset count]", "Returns members in a sorted set within a range of scores in reverse order.";
    "zrangebylex", -4, READONLY, (1, 1, 1), "sorted-set", "2.8.9", zrange::zrange, "key min max [LIMIT offset count]", "Returns members in a sorted set within a lexicographical range.";
    "zrevrangebylex", -4, READONLY, (1, 1, 1), "sorted-set", "2.8.9", zrange::zrange, "key max min [LIMIT offset count]", "Returns members in a sorted set within a lexicographical range in reverse order.";
    "zrem", -3, WRITE | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zrem, "key member [member ...]", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.";
    "zremrangebyscore", 4, WRITE, (1, 1, 1), "sorted-set", "1.2.0", zrange::zremrange, "key min max", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.";
    "zremrangebyrank", 4, WRITE, (1, 1, 1), "sorted-set", "2.0.0", zrange::zremrange, "key start stop", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.";
    "zremrangebylex", 4, WRITE, (1, 1, 1), "sorted-set", "2.8.9", zrange::zremrange, "key min max", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.";
    "zpopmin", -2, WRITE | FAST, (1, 1, 1), "sorted-set", "5.0.0", zsets::zpop, "key [count]", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.";
    "zpopmax", -2, WRITE | FAST, (1, 1, 1), "sorted-set", "5.0.0", zsets::zpop, "key [count]", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.";
    "zscan", -3, READONLY, (1, 1, 1), "sorted-set", "2.8.0", zsets::zscan, "key cursor [MATCH pattern] [COUNT count]", "Iterates over members and scores of a sorted set.";
    // pubsub
    "subscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE, (0, 0, 0), "pubsub", "2.0.0", pubsub::subscribe, "channel [channel ...]", "Listens for messages published to channels.";
    "unsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE, (0, 0, 0), "pubsub", "2.0.0", pubsub::unsubscribe, "[channel [channel ...]]", "Stops listening to messages posted to channels.";
    "psubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE, (0, 0, 0), "pubsub", "2.0.0", pubsub::subscribe, "pattern [pattern ...]", "Listens for messages published to channels that match one or more patterns.";
    "punsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE, (0, 0, 0), "pubsub", "2.0.0", pubsub::unsubscribe, "[pattern [pattern ...]]", "Stops listening to messages published to channels that match one or more patterns.";
    "publish", 3, PUBSUB | LOADING | STALE | FAST, (0, 0, 0), "pubsub", "2.0.0", pubsub::publish, "channel message", "Posts a message to a channel.";
    "pubsub", -2, PUBSUB | LOADING | STALE, (0, 0, 0), "pubsub", "2.8.0", pubsub::pubsub, "CHANNELS [pattern] | NUMSUB [channel [channel ...]] | NUMPAT", "A container for Pub/Sub commands.";
    // scripting
    "eval", -3, NOSCRIPT | STALE, (0, 0, 0), "scripting", "2.6.0", lua::eval, "script numkeys [key [key ...]] [arg [arg ...]]", "Executes a server-side Lua script.";
    "evalsha", -3, NOSCRIPT | STALE, (0, 0, 0), "scripting", "2.6.0", lua::evalsha, "sha1 numkeys [key [key ...]] [arg [arg ...]]", "Executes a server-side Lua script by SHA1 digest.";
    "eval_ro", -3, NOSCRIPT | STALE | READONLY, (0, 0, 0), "scripting", "7.0.0", lua::eval, "script numkeys [key [key ...]] [arg [arg ...]]", "Executes a read-only server-side Lua script.";
    "evalsha_ro", -3, NOSCRIPT | STALE | READONLY, (0, 0, 0), "scripting", "7.0.0", lua::evalsha, "sha1 numkeys [key [key ...]] [arg [arg ...]]", "Executes a read-only server-side Lua script by SHA1 digest.";
    "script", -2, NOSCRIPT | ALLOW_BUSY, (0, 0, 0), "scripting", "2.6.0", lua::script, "LOAD script | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC | SYNC] | KILL | HELP", "A container for Lua scripts management commands.";
    "fcall", -3, NOSCRIPT | STALE, (0, 0, 0), "scripting", "7.0.0", functions::fcall, "function numkeys [key [key ...]] [arg [arg ...]]", "Invokes a function.";
    "fcall_ro", -3, NOSCRIPT | STALE | READONLY, (0, 0, 0), "scripting", "7.0.0", functions::fcall, "function numkeys [key [key ...]] [arg [arg ...]]", "Invokes a read-only function.";
    "function", -2, NOSCRIPT | ALLOW_BUSY, (0, 0, 0), "scripting", "7.0.0", functions::function, "LOAD [REPLACE] function-code | LIST [LIBRARYNAME library-name-pattern] [WITHCODE] | DELETE library-name | FLUSH [ASYNC | SYNC] | STATS | KILL | HELP", "A container for function commands.";
    // short-term memory
    "stm.capture", -7, WRITE | DENYOOM | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::capture, "USER user-id CHANNEL channel-id SERVER <server-id | DM> [PARENT parent-channel-id] [PRIVACY <MINIMAL | PARTIAL | FULL | 0 | 1 | 2>] [STOP] [MSG <user | model> <speaker | -> content [MSG ...]] [REPLY <persona-id | -> <lineage-id | -> <speaker | -> content [REPLY ...]]", "Records a delivered turn in the user and server short-term memory of each persona.";
    "stm.get", -2, READONLY | FAST | DB_ZERO_ONLY, (1, 1, 1), "stm", "0.1.0", stm::get, "key [FORMAT <RESP | JSON>]", "Returns a short-term memory entry.";
    "stm.tick", -2, WRITE | DENYOOM | FAST | DB_ZERO_ONLY, (1, 1, 1), "stm", "0.1.0", stm::tick, "key [BY increment]", "Advances the summary cadence counter of a short-term memory entry.";
    "stm.summary", -9, WRITE | DENYOOM | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::summary, "USER user-id CHANNEL channel-id SERVER <server-id | DM> [PERSONA <persona-id | -> [LINEAGE <lineage-id | ->]] TEXT summary", "Writes the summary of a conversation's short-term memory.";
    "stm.categories", -8, WRITE | DENYOOM | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::categories, "USER user-id CHANNEL channel-id SERVER <server-id | DM> [PERSONA <persona-id | -> [LINEAGE <lineage-id | ->]] SET [slug text ...]", "Replaces the categories of a conversation's short-term memory.";
    "stm.recent", -3, READONLY | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::recent, "<USER user-id | SERVER server-id> [EXCLUDE channel-id] [LINEAGE <lineage-id | ->] [LIMIT count] [FORMAT <RESP | JSON>]", "Returns an owner's most recently written short-term memory entries across channels.";
    "stm.forget", 3, WRITE | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::forget, "<CHANNEL channel-id | USER user-id | KEY key>", "Deletes short-term memory entries and their scope rows.";
    "stm.context", -7, READONLY | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm_context::context, "USER user-id CHANNEL channel-id SERVER <server-id | DM> [PERSONA <persona-id | ->] [LINEAGE <lineage-id | ->] [BOT name] [OTHERS count] [CRUDE count] [MODE <SUPERSEDE | CRUDE_SUMMARY>] [CADENCE turns] [CROSS-SERVER] [NOW unix-time-milliseconds] [FORMAT <RESP | JSON>]", "Returns the prompt-ready short-term memory blocks of a conversation.";
];

/// Lower-case name bytes → command. ahash, not SipHash: this lookup runs for every request.
static BY_NAME: LazyLock<HashMap<&'static [u8], &'static Command, ahash::RandomState>> =
    LazyLock::new(|| COMMANDS.iter().map(|c| (c.name.as_bytes(), c)).collect());

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
    fn table_invariants_hold() {
        let mut names = std::collections::HashSet::new();
        for c in COMMANDS {
            assert!(names.insert(c.name), "{} listed twice", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(c.arity != 0, "{} has no arity", c.name);
            assert!(!c.group.is_empty() && !c.summary.is_empty(), "{}", c.name);
            assert!(c.summary.ends_with('.'), "{} summary", c.name);
            if c.first_key > 0 {
                assert!(c.step > 0, "{} step", c.name);
                if c.arity > 0 {
                    assert!(c.first_key < c.arity, "{} first key outside arity", c.name);
                    assert!(c.last_key < c.arity, "{} last key outside arity", c.name);
                }
            } else {
                assert_eq!((c.first_key, c.last_key, c.step), (0, 0, 0), "{}", c.name);
            }
            assert!(
                !(c.has(WRITE) && c.has(READONLY)),
                "{} is both write and readonly",
                c.name
            );
        }
    }

    /// Every command Redis 7.2 flags `no-multi` carries NO_MULTI here when stmd has it, and no
    /// other command does (Redis's list: COMMAND INFO of redis-server, flag `no_multi`).
    #[test]
    fn no_multi_matches_redis() {
        const REDIS_NO_MULTI: &[&str] = &["psync", "save", "shutdown", "sync"];
        for c in COMMANDS {
            assert_eq!(
                c.has(NO_MULTI),
                REDIS_NO_MULTI.contains(&c.name),
                "{}: no_multi differs from Redis",
                c.name
            );
            assert!(!(c.has(NO_MULTI) && c.has(NOT_QUEUED)), "{}", c.name);
        }
        assert!(lookup(b"shutdown").is_some_and(|c| c.has(NO_MULTI)));
    }

    /// Scripts may call exactly what Redis 7.2 lets them: its `noscript` commands (COMMAND INFO of
    /// redis-server 7.0, less the blocking pops and WAIT, which 7.2 runs without blocking).
    #[test]
    fn noscript_matches_redis_7_2() {
        const REDIS_NOSCRIPT: &[&str] = &[
            "acl",
            "auth",
            "bgrewriteaof",
            "bgsave",
            "client",
            "config",
            "debug",
            "discard",
            "eval",
            "eval_ro",
            "evalsha",
            "evalsha_ro",
            "exec",
            "failover",
            "fcall",
            "fcall_ro",
            "function",
            "hello",
            "latency",
            "module",
            "monitor",
            "multi",
            "psubscribe",
            "psync",
            "punsubscribe",
            "quit",
            "replconf",
            "replicaof",
            "reset",
            "role",
            "save",
            "script",
            "shutdown",
            "slaveof",
            "ssubscribe",
            "subscribe",
            "sunsubscribe",
            "sync",
            "unsubscribe",
            "unwatch",
            "watch",
        ];
        for c in COMMANDS {
            assert_eq!(
                c.has(NOSCRIPT),
                REDIS_NOSCRIPT.contains(&c.name),
                "{}: noscript differs from Redis 7.2",
                c.name
            );
        }
    }

    /// The commands that run while a script is past busy-reply-threshold are Redis's
    /// `allow_busy` ones (FUNCTION and SCRIPT: their KILL and STATS only, checked in the handler).
    #[test]
    fn allow_busy_matches_redis() {
        const REDIS_ALLOW_BUSY: &[&str] = &[
            "auth", "discard", "function", "hello", "multi", "quit", "replconf", "reset", "script",
            "shutdown", "unwatch", "watch",
        ];
        for c in COMMANDS {
            assert_eq!(
                c.has(ALLOW_BUSY),
                REDIS_ALLOW_BUSY.contains(&c.name),
                "{}: allow_busy differs from Redis",
                c.name
            );
        }
    }

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
