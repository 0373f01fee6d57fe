//! The one command table. Everything about a command that is data lives here: name, arity, flags,
//! key positions and key specs, ACL categories, tips, subcommands, group, summary, syntax and
//! handler. Dispatch checks it centrally; COMMAND, COMMAND INFO/DOCS/COUNT/LIST/GETKEYS are
//! rendered from it.
//!
//! A row is `name, arity, flags, (first, last, step), group, since, handler, syntax, summary`,
//! then optionally `complexity: "…"`, `doc_flags`/`deprecated_since`/`replaced_by` (COMMAND
//! DOCS), `keys: &[…]` (key specs, see [`super::keyspec`]), `acl: cat::…` (categories beyond the
//! derived ones, see [`super::categories`]), `tips: &[…]` and `subcommands: …` (rows of their
//! own, in `subcommands.rs`). A row without them is a command with no keys,
//! tips or subcommands; the tests check that first/last/step agree with the key specs.

use super::categories as cat;
use super::databases;
use super::dump;
use super::functions;
use super::hash_expiry as hexp;
use super::keyspec::*;
use super::migrate;
use super::scripting as lua;
use super::stm_context;
use super::streams;
use super::subcommands::*;
use super::{acl, command_info, CmdResult, Ctx};
use super::{
    bitmaps, blocking_lists as blists, debug, geo, hashes, hyperloglog as hll, info, introspection,
    json, lcs, lists, mpop, pubsub, replication, search, sets, sort, zalgebra, zrange, zsets,
};
use super::{connection as conn, keys, ops, server, stm, strings, transactions as tx, Handler};
use crate::protocol::Reply;
/// The rows' type, the flags and the lookup are `spec`'s (L0: the layers below the commands read
/// them too); handlers name them here as `table::…`.
pub use crate::spec::command::*;

/// The command layer's side of the rows: its handler types and the table below.
impl Binding for Stmd {
    type Handler = Handler;
    type AclKeys = AclKeys;
    #[inline]
    fn rows() -> &'static [Command] {
        COMMANDS
    }
}

/// The keys a request will touch, for a command whose key specs cannot say (the `STM.*`
/// commands: their specs name the CHANNEL argument, `incomplete`, for routing; the keys are
/// `shortterm:…` names built from the arguments or found in the STM index). The ACL check tests
/// these instead of the specs: write access for a `write` command, read access otherwise. An
/// empty list when the arguments do not parse (the handler then answers the error).
pub type AclKeys = fn(&Ctx<'_, '_>, &[&[u8]]) -> Vec<bytes::Bytes>;

/// The handler of [`BASE`]; every row names its own.
fn no_handler(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    Err(Reply::error("ERR no handler"))
}

/// The defaults of a row's optional fields.
pub const BASE: Command = Command::base(no_handler);

/// Rows of [`Command`]s; the fields after the summary (`keys: …, acl: …, tips: …,
/// subcommands: …`) are optional.
macro_rules! commands {
    ($( $name:literal, $arity:expr, $flags:expr, ($first:expr, $last:expr, $step:expr), $group:literal, $since:literal, $handler:path, $syntax:literal, $summary:literal $(, $field:ident: $value:expr)* ; )*) => {
        &[ $( Command {
            name: $name, arity: $arity, flags: $flags, first_key: $first, last_key: $last,
            step: $step, group: $group, summary: $summary, since: $since, syntax: $syntax,
            handler: $handler, $( $field: $value, )* ..$crate::commands::table::BASE
        }, )* ]
    };
}
pub(crate) use commands;

/// The key-spec notes of the script-running commands (Redis's words are a fact about the spec:
/// the script's use of its keys cannot be known, so the worst is assumed).
const SCRIPT_KEYS_RW: &str =
    "Keys a script touches cannot be known in advance: the worst, RW and UPDATE, is assumed";
const SCRIPT_KEYS_RO: &str =
    "Keys a script touches cannot be known in advance: the worst, RO and ACCESS, is assumed";

/// Every command stmd knows, grouped as Redis groups them.
pub static COMMANDS: &[Command] = commands![
    // connection
    "ping", -1, FAST, (0, 0, 0), "connection", "1.0.0", conn::ping, "[message]", "Returns the server's liveliness response.",
        complexity: "O(1)", tips: &["request_policy:all_shards", "response_policy:all_succeeded"];
    "echo", 2, LOADING | STALE | FAST, (0, 0, 0), "connection", "1.0.0", conn::echo, "message", "Returns the given string.",
        complexity: "O(1)";
    "hello", -1, NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY, (0, 0, 0), "connection", "6.0.0", conn::hello, "[protover [AUTH username password] [SETNAME clientname]]", "Handshakes with the Redis server.",
        complexity: "O(1)";
    "auth", -2, NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY, (0, 0, 0), "connection", "1.0.0", conn::auth, "[username] password", "Authenticates the connection.",
        complexity: "O(1)";
    "select", 2, LOADING | STALE | FAST, (0, 0, 0), "connection", "1.0.0", databases::select, "index", "Changes the selected database.",
        complexity: "O(1)";
    "quit", -1, NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | NOT_QUEUED, (0, 0, 0), "connection", "1.0.0", conn::quit, "", "Closes the connection.",
        complexity: "O(1)";
    "reset", 1, NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | NOT_QUEUED, (0, 0, 0), "connection", "6.2.0", conn::reset, "", "Resets the connection.",
        complexity: "O(1)";
    "client", -2, 0, (0, 0, 0), "connection", "2.4.0", conn::client, "", "A container for client connection commands.",
        complexity: "Depends on the subcommand.", subcommands: CLIENT_SUBCOMMANDS;
    // cluster mode
    "cluster", -2, 0, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "", "A container for Redis Cluster commands.",
        complexity: "Depends on the subcommand.", subcommands: CLUSTER_SUBCOMMANDS;
    "readonly", 1, LOADING | STALE | FAST, (0, 0, 0), "cluster", "3.0.0", super::cluster::accept, "", "Enables read-only queries for a connection to a Redis Cluster replica node.",
        complexity: "O(1)", acl: cat::CONNECTION;
    "readwrite", 1, LOADING | STALE | FAST, (0, 0, 0), "cluster", "3.0.0", super::cluster::accept, "", "Enables read-write queries for a connection to a Redis Cluster replica node.",
        complexity: "O(1)", acl: cat::CONNECTION;
    "asking", 1, FAST, (0, 0, 0), "cluster", "3.0.0", super::cluster::accept, "", "Signals that a cluster client is following an -ASK redirect.",
        complexity: "O(1)", acl: cat::CONNECTION;
    // server
    "info", -1, LOADING | STALE, (0, 0, 0), "server", "1.0.0", info::info, "[section [section ...]]", "Returns information and statistics about the server.",
        complexity: "O(1)", acl: cat::DANGEROUS, tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"];
    // ACL.
    "acl", -2, 0, (0, 0, 0), "server", "6.0.0", acl::acl, "", "A container for Access List Control commands.",
        complexity: "Depends on the subcommand.", subcommands: ACL_SUBCOMMANDS;
    "config", -2, 0, (0, 0, 0), "server", "2.0.0", server::config, "", "A container for server configuration commands.",
        complexity: "Depends on the subcommand.", subcommands: CONFIG_SUBCOMMANDS;
    "module", -2, 0, (0, 0, 0), "server", "4.0.0", server::module, "", "A container for module commands.",
        complexity: "Depends on the subcommand.", subcommands: MODULE_SUBCOMMANDS;
    "slowlog", -2, 0, (0, 0, 0), "server", "2.2.12", ops::slowlog, "", "A container for slow log commands.",
        complexity: "Depends on the subcommand.", subcommands: SLOWLOG_SUBCOMMANDS;
    "monitor", 1, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "1.0.0", ops::monitor, "", "Listens for all requests received by the server in real-time.";
    "command", -1, LOADING | STALE, (0, 0, 0), "server", "2.8.13", command_info::command, "", "Returns detailed information about all commands.",
        complexity: "O(N), N the commands.", acl: cat::CONNECTION, tips: &["nondeterministic_output_order"], subcommands: COMMAND_SUBCOMMANDS;
    "dbsize", 1, READONLY | FAST, (0, 0, 0), "server", "1.0.0", databases::dbsize, "", "Returns the number of keys in the database.",
        complexity: "O(1)", acl: cat::KEYSPACE, tips: &["request_policy:all_shards", "response_policy:agg_sum"];
    "flushdb", -1, WRITE, (0, 0, 0), "server", "1.0.0", databases::flushdb, "[ASYNC | SYNC]", "Removes all keys from the current database.",
        complexity: "O(N), N the keys of the database.", acl: cat::KEYSPACE | cat::DANGEROUS, tips: &["request_policy:all_shards", "response_policy:all_succeeded"];
    "flushall", -1, WRITE, (0, 0, 0), "server", "1.0.0", databases::flushall, "[ASYNC | SYNC]", "Removes all keys from all databases.",
        complexity: "O(N), N the keys of every database.", acl: cat::KEYSPACE | cat::DANGEROUS, tips: &["request_policy:all_shards", "response_policy:all_succeeded"];
    "time", 1, LOADING | STALE | FAST, (0, 0, 0), "server", "2.6.0", server::time, "", "Returns the server time.",
        complexity: "O(1)", tips: &["nondeterministic_output"];
    "shutdown", -1, ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY, (0, 0, 0), "server", "1.0.0", server::shutdown, "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]", "Stops the server.",
        complexity: "O(N) with a save (SAVE, or `save` rules set), N the keys of every database; else O(1).";
    "save", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, (0, 0, 0), "server", "1.0.0", server::save, "", "Synchronously saves the database(s) to disk.",
        complexity: "O(N), N the keys of every database: every database is locked while the file is written.";
    "bgsave", -1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, (0, 0, 0), "server", "1.0.0", server::bgsave, "[SCHEDULE]", "Asynchronously saves the database(s) to disk.",
        complexity: "O(1) to start; the save walks the keys one shard at a time in the background.";
    "bgrewriteaof", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, (0, 0, 0), "server", "1.0.0", server::bgrewriteaof, "", "Asynchronously rewrites the append-only file to disk.",
        complexity: "O(N), N the keys of every database, locked while the new base is encoded; it is written in the background.";
    "lastsave", 1, LOADING | STALE | FAST, (0, 0, 0), "server", "1.0.0", server::lastsave, "", "Returns the Unix timestamp of the last successful save to disk.",
        complexity: "O(1)", acl: cat::ADMIN | cat::DANGEROUS, tips: &["nondeterministic_output"];
    "latency", -2, 0, (0, 0, 0), "server", "2.8.13", introspection::latency, "", "A container for latency diagnostics commands.",
        complexity: "Depends on the subcommand.", subcommands: LATENCY_SUBCOMMANDS;
    "memory", -2, 0, (0, 0, 0), "server", "4.0.0", introspection::memory, "", "A container for memory diagnostics commands.",
        complexity: "Depends on the subcommand.", subcommands: MEMORY_SUBCOMMANDS;
    "role", 1, NOSCRIPT | LOADING | STALE | FAST, (0, 0, 0), "server", "2.8.12", introspection::role, "", "Returns the replication role.",
        complexity: "O(1)", acl: cat::ADMIN | cat::DANGEROUS;
    "replicaof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, (0, 0, 0), "server", "5.0.0", replication::replicaof, "<host port | NO ONE>", "Configures a server as replica of another, or promotes it to a master.",
        complexity: "O(1) to answer; the full sync that follows is O(N), N the primary's keys.";
    "slaveof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, (0, 0, 0), "server", "1.0.0", replication::replicaof, "<host port | NO ONE>", "Sets a Redis server as a replica of another, or promotes it to being a master.",
        complexity: "O(1) to answer; the full sync that follows is O(N), N the primary's keys.", doc_flags: &["deprecated"], deprecated_since: "5.0.0", replaced_by: "`REPLICAOF`";
    "failover", -1, ADMIN | NOSCRIPT | STALE, (0, 0, 0), "server", "6.2.0", replication::failover, "[TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]", "Starts a coordinated failover from this primary to one of its replicas.",
        complexity: "O(1)";
    "wait", 3, 0, (0, 0, 0), "generic", "3.0.0", replication::wait, "numreplicas timeout", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.",
        complexity: "O(1)", acl: cat::NO_GROUP | cat::CONNECTION, tips: &["request_policy:all_shards", "response_policy:agg_min"];
    "waitaof", 4, BLOCKING, (0, 0, 0), "generic", "7.2.0", replication::waitaof, "numlocal numreplicas timeout", "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the primary and/or replicas.",
        complexity: "O(1)", acl: cat::NO_GROUP | cat::CONNECTION, tips: &["request_policy:all_shards", "response_policy:agg_min"];
    "sync", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, (0, 0, 0), "server", "1.0.0", replication::sync, "", "An internal command used in replication.";
    "psync", -3, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, (0, 0, 0), "server", "2.8.0", replication::psync, "replicationid offset", "An internal command used in replication.";
    "replconf", -1, ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY, (0, 0, 0), "server", "3.0.0", replication::replconf, "", "An internal command for configuring the replication stream.",
        complexity: "O(1)", doc_flags: &["syscmd"];
    "lolwut", -1, READONLY | FAST, (0, 0, 0), "server", "5.0.0", introspection::lolwut, "[VERSION version]", "Displays computer art and the Redis version.";
    "debug", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "1.0.0", debug::debug, "", "A container for debugging commands.",
        complexity: "Depends on the subcommand.", doc_flags: &["syscmd"];
    // transactions
    "multi", 1, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED, (0, 0, 0), "transactions", "1.2.0", tx::multi, "", "Starts a transaction.",
        complexity: "O(1)";
    "exec", 1, NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | NOT_QUEUED, (0, 0, 0), "transactions", "1.2.0", tx::exec, "", "Executes all commands in a transaction.",
        complexity: "The sum of the queued commands' costs.";
    "discard", 1, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED, (0, 0, 0), "transactions", "2.0.0", tx::discard, "", "Discards a transaction.",
        complexity: "O(N), N the queued commands.";
    "watch", -2, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED, (1, -1, 1), "transactions", "2.2.0", tx::watch, "key [key ...]", "Monitors changes to keys to determine the execution of a transaction.",
        complexity: "O(N), N the keys watched.", keys: &[keys_to_end(RO, 1)];
    "unwatch", 1, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, (0, 0, 0), "transactions", "2.2.0", tx::unwatch, "", "Forgets about watched keys of a transaction.",
        complexity: "O(1)";
    // generic
    "del", -2, WRITE, (1, -1, 1), "generic", "1.0.0", keys::del, "key [key ...]", "Deletes one or more keys.",
        complexity: "O(N), N the keys, plus O(M) for a collection of M elements.", keys: &[keys_to_end(RM | DELETE, 1)], tips: &["request_policy:multi_shard", "response_policy:agg_sum"];
    "unlink", -2, WRITE | FAST, (1, -1, 1), "generic", "4.0.0", keys::del, "key [key ...]", "Asynchronously deletes one or more keys.",
        complexity: "O(N), N the keys, plus O(M) for a collection of M elements.", keys: &[keys_to_end(RM | DELETE, 1)], tips: &["request_policy:multi_shard", "response_policy:agg_sum"];
    "exists", -2, READONLY | FAST, (1, -1, 1), "generic", "1.0.0", keys::exists, "key [key ...]", "Determines whether one or more keys exist.",
        complexity: "O(N), N the keys given.", keys: &[keys_to_end(RO, 1)], tips: &["request_policy:multi_shard", "response_policy:agg_sum"];
    "type", 2, READONLY | FAST, (1, 1, 1), "generic", "1.0.0", keys::type_, "key", "Determines the type of value stored at a key.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "expire", -3, WRITE | FAST, (1, 1, 1), "generic", "1.0.0", keys::expire, "key seconds [NX | XX | GT | LT]", "Sets the expiration time of a key in seconds.",
        complexity: "O(1)", keys: &[key(RW | UPDATE, 1)];
    "pexpire", -3, WRITE | FAST, (1, 1, 1), "generic", "2.6.0", keys::expire, "key milliseconds [NX | XX | GT | LT]", "Sets the expiration time of a key in milliseconds.",
        complexity: "O(1)", keys: &[key(RW | UPDATE, 1)];
    "expireat", -3, WRITE | FAST, (1, 1, 1), "generic", "1.2.0", keys::expire, "key unix-time-seconds [NX | XX | GT | LT]", "Sets the expiration time of a key to a Unix timestamp.",
        complexity: "O(1)", keys: &[key(RW | UPDATE, 1)];
    "pexpireat", -3, WRITE | FAST, (1, 1, 1), "generic", "2.6.0", keys::expire, "key unix-time-milliseconds [NX | XX | GT | LT]", "Sets the expiration time of a key to a Unix milliseconds timestamp.",
        complexity: "O(1)", keys: &[key(RW | UPDATE, 1)];
    "ttl", 2, READONLY | FAST, (1, 1, 1), "generic", "1.0.0", keys::ttl, "key", "Returns the expiration time in seconds of a key.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    "pttl", 2, READONLY | FAST, (1, 1, 1), "generic", "2.6.0", keys::ttl, "key", "Returns the expiration time in milliseconds of a key.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    "expiretime", 2, READONLY | FAST, (1, 1, 1), "generic", "7.0.0", keys::ttl, "key", "Returns the expiration time of a key as a Unix timestamp.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)];
    "pexpiretime", 2, READONLY | FAST, (1, 1, 1), "generic", "7.0.0", keys::ttl, "key", "Returns the expiration time of a key as a Unix milliseconds timestamp.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)];
    "persist", 2, WRITE | FAST, (1, 1, 1), "generic", "2.2.0", keys::persist, "key", "Removes the expiration time of a key.",
        complexity: "O(1)", keys: &[key(RW | UPDATE, 1)];
    "keys", 2, READONLY, (0, 0, 0), "generic", "1.0.0", keys::keys, "pattern", "Returns all key names that match a pattern.",
        complexity: "O(N), N the keys of the database.", acl: cat::DANGEROUS, tips: &["request_policy:all_shards", "nondeterministic_output_order"];
    "scan", -2, READONLY, (0, 0, 0), "generic", "2.8.0", keys::scan, "cursor [MATCH pattern] [COUNT count] [TYPE type]", "Iterates over the key names in the database.",
        complexity: "O(1) per call; O(N) for a whole iteration, N the keys.", tips: &["nondeterministic_output", "request_policy:special"];
    "object", -2, 0, (0, 0, 0), "generic", "2.2.3", keys::object, "", "A container for object introspection commands.",
        complexity: "Depends on the subcommand.", subcommands: OBJECT_SUBCOMMANDS;
    "rename", 3, WRITE, (1, 2, 1), "generic", "1.0.0", keys::rename, "key newkey", "Renames a key and overwrites the destination.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | DELETE, 1), key(OW | UPDATE, 2)];
    "renamenx", 3, WRITE | FAST, (1, 2, 1), "generic", "1.0.0", keys::rename, "key newkey", "Renames a key only when the target key name doesn't exist.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | DELETE, 1), key(OW | INSERT, 2)];
    "randomkey", 1, READONLY, (0, 0, 0), "generic", "1.0.0", keys::randomkey, "", "Returns a random key name from the database.",
        complexity: "O(1)", tips: &["request_policy:all_shards", "nondeterministic_output"];
    "move", 3, WRITE | FAST, (1, 1, 1), "generic", "1.0.0", databases::move_key, "key db", "Moves a key to another database.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "dump", 2, READONLY, (1, 1, 1), "generic", "2.6.0", dump::dump, "key", "Returns a serialized representation of the value stored at a key.",
        complexity: "O(1) to reach the key, plus O(N*M) to serialize N elements of average size M.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    "restore", -4, WRITE | DENYOOM, (1, 1, 1), "generic", "2.6.0", dump::restore, "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]", "Creates a key from the serialized representation of a value.",
        complexity: "O(1) to create the key, plus O(N*M) to rebuild N elements of average size M.", acl: cat::DANGEROUS, keys: &[key(OW | UPDATE, 1)];
    "migrate", -6, WRITE, (3, 3, 1), "generic", "2.6.0", migrate::migrate, "host port <key | \"\"> destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2 username password] [KEYS key [key ...]]", "Atomically transfers a key from one Redis instance to another.",
        complexity: "O(N) to dump and delete the keys here plus the target's RESTORE, N the keys' elements.", acl: cat::DANGEROUS, tips: &["nondeterministic_output"], keys: &[key(RW | ACCESS | DELETE, 3), keyword(RW | ACCESS | DELETE | INCOMPLETE, "KEYS", -2, -1, 1, 0)];
    "restore-asking", -4, WRITE | DENYOOM | ASKING, (1, 1, 1), "server", "3.0.0", dump::restore, "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]", "An internal command for migrating keys in a cluster.",
        complexity: "O(1) to create the key, plus O(N*M) to rebuild N elements of average size M.", acl: cat::KEYSPACE | cat::DANGEROUS, doc_flags: &["syscmd"], keys: &[key(OW | UPDATE, 1)];
    "copy", -3, WRITE | DENYOOM, (1, 2, 1), "generic", "6.2.0", dump::copy, "source destination [DB destination-db] [REPLACE]", "Copies the value of a key to a new key.",
        complexity: "O(N), N the elements of the source value.", keys: &[key(RO | ACCESS, 1), key(OW | UPDATE, 2)];
    "touch", -2, READONLY | FAST, (1, -1, 1), "generic", "3.2.1", dump::touch, "key [key ...]", "Returns the number of existing keys out of those specified after updating the time they were last accessed.",
        complexity: "O(N), N the keys given.", keys: &[keys_to_end(RO, 1)], tips: &["request_policy:multi_shard", "response_policy:agg_sum"];
    "swapdb", 3, WRITE | FAST, (0, 0, 0), "server", "4.0.0", databases::swapdb, "index1 index2", "Swaps two Redis databases.",
        complexity: "O(N), N the clients blocked on keys of either database.", acl: cat::KEYSPACE | cat::DANGEROUS;
    // string
    "get", 2, READONLY | FAST, (1, 1, 1), "string", "1.0.0", strings::get, "key", "Returns the string value of a key.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)];
    "set", -3, WRITE | DENYOOM, (1, 1, 1), "string", "1.0.0", strings::set, "key value [NX | XX | IFEQ comparison-value] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]", "Sets the string value of a key, ignoring its type.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE | VARIABLE_FLAGS, 1).with_notes("RW and ACCESS only with GET, which returns the old value, or IFEQ, which compares it; OW and UPDATE without them.")];
    "setnx", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::setnx, "key value", "Set the string value of a key only when the key doesn't exist.",
        complexity: "O(1)", keys: &[key(OW | INSERT, 1)];
    "setex", 4, WRITE | DENYOOM, (1, 1, 1), "string", "2.0.0", strings::setex, "key seconds value", "Sets the string value and expiration time of a key.",
        complexity: "O(1)", keys: &[key(OW | UPDATE, 1)];
    "psetex", 4, WRITE | DENYOOM, (1, 1, 1), "string", "2.6.0", strings::setex, "key milliseconds value", "Sets both string value and expiration time in milliseconds of a key.",
        complexity: "O(1)", keys: &[key(OW | UPDATE, 1)];
    "getset", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::getset, "key value", "Returns the previous string value of a key after setting it to a new value.",
        complexity: "O(1)", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`SET` with `GET`", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "delifeq", 3, WRITE | FAST, (1, 1, 1), "string", "9.0.0", strings::delifeq, "key value", "Deletes the key if its value matches the given string.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | DELETE, 1)];
    "getdel", 2, WRITE | FAST, (1, 1, 1), "string", "6.2.0", strings::getdel, "key", "Returns the string value of a key after deleting the key.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | DELETE, 1)];
    "getex", -2, WRITE | FAST, (1, 1, 1), "string", "6.2.0", strings::getex, "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]", "Returns the string value of a key after setting its expiration time.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1).with_notes("RW and UPDATE: the time to live may change.")];
    "mget", -2, READONLY | FAST, (1, -1, 1), "string", "1.0.0", strings::mget, "key [key ...]", "Atomically returns the string values of one or more keys.",
        complexity: "O(N), N the keys.", keys: &[keys_to_end(RO | ACCESS, 1)], tips: &["request_policy:multi_shard"];
    "mset", -3, WRITE | DENYOOM, (1, -1, 2), "string", "1.0.1", strings::mset, "key value [key value ...]", "Atomically creates or modifies the string values of one or more keys.",
        complexity: "O(N), N the keys.", keys: &[range(OW | UPDATE, 1, -1, 2, 0)], tips: &["request_policy:multi_shard", "response_policy:all_succeeded"];
    "msetnx", -3, WRITE | DENYOOM, (1, -1, 2), "string", "1.0.1", strings::mset, "key value [key value ...]", "Atomically modifies the string values of one or more keys only when all keys don't exist.",
        complexity: "O(N), N the keys.", keys: &[range(OW | INSERT, 1, -1, 2, 0)], tips: &["request_policy:multi_shard", "response_policy:agg_min"];
    "incr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::incr, "key", "Increments the integer value of a key by one.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "decr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::incr, "key", "Decrements the integer value of a key by one.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "incrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::incr, "key increment", "Increments the integer value of a key by a number.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "decrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", strings::incr, "key decrement", "Decrements a number from the integer value of a key.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "incrbyfloat", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "2.6.0", strings::incrbyfloat, "key increment", "Increment the floating point value of a key by a number.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "append", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "2.0.0", strings::append, "key value", "Appends a string to the value of a key.",
        complexity: "O(M) amortised, M the appended length.", keys: &[key(RW | INSERT, 1)];
    "strlen", 2, READONLY | FAST, (1, 1, 1), "string", "2.2.0", strings::strlen, "key", "Returns the length of a string value.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "getrange", 4, READONLY, (1, 1, 1), "string", "2.4.0", strings::getrange, "key start end", "Returns a substring of the string stored at a key.",
        complexity: "O(N), N the length returned.", keys: &[key(RO | ACCESS, 1)];
    "substr", 4, READONLY, (1, 1, 1), "string", "1.0.0", strings::getrange, "key start end", "Returns a substring from a string value.",
        complexity: "O(N), N the length returned.", doc_flags: &["deprecated"], deprecated_since: "2.0.0", replaced_by: "`GETRANGE`", keys: &[key(RO | ACCESS, 1)];
    "setrange", 4, WRITE | DENYOOM, (1, 1, 1), "string", "2.2.0", strings::setrange, "key offset value", "Overwrites a part of a string value with another by an offset.",
        complexity: "O(M), M the length written, plus growing the value.", keys: &[key(RW | UPDATE, 1)];
    // bitmaps, HyperLogLog, LCS
    "setbit", 4, WRITE | DENYOOM, (1, 1, 1), "bitmap", "2.2.0", bitmaps::setbit, "key offset value", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.",
        complexity: "O(1), plus growing the value.", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "getbit", 3, READONLY | FAST, (1, 1, 1), "bitmap", "2.2.0", bitmaps::getbit, "key offset", "Returns a bit value by offset.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)];
    "bitcount", -2, READONLY, (1, 1, 1), "bitmap", "2.6.0", bitmaps::bitcount, "key [start end [BYTE | BIT]]", "Counts the number of set bits (population counting) in a string.",
        complexity: "O(N), N the bytes counted.", keys: &[key(RO | ACCESS, 1)];
    "bitpos", -3, READONLY, (1, 1, 1), "bitmap", "2.8.7", bitmaps::bitpos, "key bit [start [end [BYTE | BIT]]]", "Finds the first set (1) or clear (0) bit in a string.",
        complexity: "O(N), N the bytes searched.", keys: &[key(RO | ACCESS, 1)];
    "bitop", -4, WRITE | DENYOOM, (2, -1, 1), "bitmap", "2.6.0", bitmaps::bitop, "<AND | OR | XOR | NOT | DIFF | DIFF1 | ANDOR | ONE> destkey key [key ...]", "Performs bitwise operations on multiple strings, and stores the result.",
        complexity: "O(N), N the longest source's length.", keys: &[key(OW | UPDATE, 2), keys_to_end(RO | ACCESS, 3)];
    "bitfield", -2, WRITE | DENYOOM, (1, 1, 1), "bitmap", "3.2.0", bitmaps::bitfield, "key [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>] <SET encoding offset value | INCRBY encoding offset increment> [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>] <SET encoding offset value | INCRBY encoding offset increment> ...]]", "Performs arbitrary bitfield integer operations on strings.",
        complexity: "O(1) per subcommand.", keys: &[key(RW | ACCESS | UPDATE | VARIABLE_FLAGS, 1).with_notes("This command allows both access and modification of the key")];
    "bitfield_ro", -2, READONLY | FAST, (1, 1, 1), "bitmap", "6.0.0", bitmaps::bitfield_ro, "key [GET encoding offset [GET encoding offset ...]]", "Performs arbitrary read-only bitfield integer operations on strings.",
        complexity: "O(1) per subcommand.", keys: &[key(RO | ACCESS, 1)];
    "pfadd", -2, WRITE | DENYOOM | FAST, (1, 1, 1), "hyperloglog", "2.8.9", hll::pfadd, "key [element [element ...]]", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.",
        complexity: "O(1) per element.", keys: &[key(RW | INSERT, 1)];
    "pfcount", -2, READONLY | REWRITES_ON_READ, (1, -1, 1), "hyperloglog", "2.8.9", hll::pfcount, "key [key ...]", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).",
        complexity: "O(1) for one key (cached), O(N) for N keys merged.", keys: &[keys_to_end(RW | ACCESS, 1).with_notes("RW because it may change the internal representation of the key, and propagate to replicas")];
    "pfmerge", -2, WRITE | DENYOOM, (1, -1, 1), "hyperloglog", "2.8.9", hll::pfmerge, "destkey [sourcekey [sourcekey ...]]", "Merges one or more HyperLogLog values into a single key.",
        complexity: "O(N), N the HyperLogLogs merged.", keys: &[key(RW | ACCESS | INSERT, 1), keys_to_end(RO | ACCESS, 2)];
    "pfdebug", 3, WRITE | DENYOOM | ADMIN, (2, 2, 1), "hyperloglog", "2.8.9", hll::pfdebug, "subcommand key", "Internal commands for debugging HyperLogLog values.",
        complexity: "N/A", doc_flags: &["syscmd"], keys: &[key(RW | ACCESS, 2)];
    "pfselftest", 1, ADMIN, (0, 0, 0), "hyperloglog", "2.8.9", hll::pfselftest, "", "An internal command for testing HyperLogLog values.",
        complexity: "N/A", doc_flags: &["syscmd"];
    "lcs", -3, READONLY, (1, 2, 1), "string", "7.0.0", lcs::lcs, "key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]", "Finds the longest common substring.",
        complexity: "O(N*M), N and M the lengths of the two strings.", keys: &[range(RO | ACCESS, 1, 1, 1, 0)];
    // list
    "lpush", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "list", "1.0.0", lists::push, "key element [element ...]", "Prepends one or more elements to a list. Creates the key if it doesn't exist.",
        complexity: "O(N), N the elements pushed.", keys: &[key(RW | INSERT, 1)];
    "rpush", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "list", "1.0.0", lists::push, "key element [element ...]", "Appends one or more elements to a list. Creates the key if it doesn't exist.",
        complexity: "O(N), N the elements pushed.", keys: &[key(RW | INSERT, 1)];
    "lpushx", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "list", "2.2.0", lists::push, "key element [element ...]", "Prepends one or more elements to a list only when the list exists.",
        complexity: "O(N), N the elements pushed.", keys: &[key(RW | INSERT, 1)];
    "rpushx", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "list", "2.2.0", lists::push, "key element [element ...]", "Appends an element to a list only when the list exists.",
        complexity: "O(N), N the elements pushed.", keys: &[key(RW | INSERT, 1)];
    "lpop", -2, WRITE | FAST, (1, 1, 1), "list", "1.0.0", lists::pop, "key [count]", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.",
        complexity: "O(N), N the elements popped.", keys: &[key(RW | ACCESS | DELETE, 1)];
    "rpop", -2, WRITE | FAST, (1, 1, 1), "list", "1.0.0", lists::pop, "key [count]", "Returns and removes the last elements of a list. Deletes the list if the last element was popped.",
        complexity: "O(N), N the elements popped.", keys: &[key(RW | ACCESS | DELETE, 1)];
    "lrange", 4, READONLY, (1, 1, 1), "list", "1.0.0", lists::lrange, "key start stop", "Returns a range of elements from a list.",
        complexity: "O(N), N the elements returned.", keys: &[key(RO | ACCESS, 1)];
    "llen", 2, READONLY | FAST, (1, 1, 1), "list", "1.0.0", lists::llen, "key", "Returns the length of a list.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "lindex", 3, READONLY, (1, 1, 1), "list", "1.0.0", lists::lindex, "key index", "Returns an element from a list by its index.",
        complexity: "O(1): lists are deques.", keys: &[key(RO | ACCESS, 1)];
    "lset", 4, WRITE | DENYOOM, (1, 1, 1), "list", "1.0.0", lists::lset, "key index element", "Sets the value of an element in a list by its index.",
        complexity: "O(1): lists are deques.", keys: &[key(RW | UPDATE, 1)];
    "lrem", 4, WRITE, (1, 1, 1), "list", "1.0.0", lists::lrem, "key count element", "Removes elements from a list. Deletes the list if the last element was removed.",
        complexity: "O(N), N the length of the list.", keys: &[key(RW | DELETE, 1)];
    "ltrim", 4, WRITE, (1, 1, 1), "list", "1.0.0", lists::ltrim, "key start stop", "Removes elements from both ends a list. Deletes the list if all elements were trimmed.",
        complexity: "O(N), N the elements removed.", keys: &[key(RW | DELETE, 1)];
    "linsert", 5, WRITE | DENYOOM, (1, 1, 1), "list", "2.2.0", lists::linsert, "key <BEFORE | AFTER> pivot element", "Inserts an element before or after another element in a list.",
        complexity: "O(N), N the length of the list.", keys: &[key(RW | INSERT, 1)];
    "lpos", -3, READONLY, (1, 1, 1), "list", "6.0.6", lists::lpos, "key element [RANK rank] [COUNT num-matches] [MAXLEN len]", "Returns the index of matching elements in a list.",
        complexity: "O(N), N the length of the list (MAXLEN bounds it).", keys: &[key(RO | ACCESS, 1)];
    "lmove", 5, WRITE | DENYOOM, (1, 2, 1), "list", "6.2.0", lists::lmove, "source destination <LEFT | RIGHT> <LEFT | RIGHT>", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | DELETE, 1), key(RW | INSERT, 2)];
    "rpoplpush", 3, WRITE | DENYOOM, (1, 2, 1), "list", "1.2.0", lists::lmove, "source destination", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.",
        complexity: "O(1)", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`LMOVE` with `RIGHT` `LEFT`", keys: &[key(RW | ACCESS | DELETE, 1), key(RW | INSERT, 2)];
    "blpop", -3, WRITE | BLOCKING, (1, -2, 1), "list", "2.0.0", blists::bpop, "key [key ...] timeout", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        complexity: "O(N), N the keys.", keys: &[range(RW | ACCESS | DELETE, 1, -2, 1, 0)];
    "brpop", -3, WRITE | BLOCKING, (1, -2, 1), "list", "2.0.0", blists::bpop, "key [key ...] timeout", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        complexity: "O(N), N the keys.", keys: &[range(RW | ACCESS | DELETE, 1, -2, 1, 0)];
    "blmove", 6, WRITE | DENYOOM | BLOCKING, (1, 2, 1), "list", "6.2.0", blists::blmove, "source destination <LEFT | RIGHT> <LEFT | RIGHT> timeout", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | DELETE, 1), key(RW | INSERT, 2)];
    "brpoplpush", 4, WRITE | DENYOOM | BLOCKING, (1, 2, 1), "list", "2.2.0", blists::blmove, "source destination timeout", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.",
        complexity: "O(1)", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`BLMOVE` with `RIGHT` `LEFT`", keys: &[key(RW | ACCESS | DELETE, 1), key(RW | INSERT, 2)];
    // hash
    "hset", -4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hset, "key field value [field value ...]", "Creates or modifies the value of a field in a hash.",
        complexity: "O(N), N the pairs set.", keys: &[key(RW | UPDATE, 1)];
    "hmset", -4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hset, "key field value [field value ...]", "Sets the values of multiple fields.",
        complexity: "O(N), N the pairs set.", doc_flags: &["deprecated"], deprecated_since: "4.0.0", replaced_by: "`HSET` with several field-value pairs", keys: &[key(RW | UPDATE, 1)];
    "hsetnx", 4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hsetnx, "key field value", "Sets the value of a field in a hash only when the field doesn't exist.",
        complexity: "O(1)", keys: &[key(RW | INSERT, 1)];
    "hget", 3, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hget, "key field", "Returns the value of a field in a hash.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)];
    "hmget", -3, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hmget, "key field [field ...]", "Returns the values of all fields in a hash.",
        complexity: "O(N), N the fields asked for.", keys: &[key(RO | ACCESS, 1)];
    "hgetall", 2, READONLY, (1, 1, 1), "hash", "2.0.0", hashes::hgetall, "key", "Returns all fields and values in a hash.",
        complexity: "O(N), N the fields of the hash.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output_order"];
    "hkeys", 2, READONLY, (1, 1, 1), "hash", "2.0.0", hashes::hkeys, "key", "Returns all fields in a hash.",
        complexity: "O(N), N the fields of the hash.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output_order"];
    "hvals", 2, READONLY, (1, 1, 1), "hash", "2.0.0", hashes::hkeys, "key", "Returns all values in a hash.",
        complexity: "O(N), N the fields of the hash.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output_order"];
    "hdel", -3, WRITE | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hdel, "key field [field ...]", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.",
        complexity: "O(N), N the fields removed.", keys: &[key(RW | DELETE, 1)];
    "hlen", 2, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hlen, "key", "Returns the number of fields in a hash.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "hexists", 3, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hexists, "key field", "Determines whether a field exists in a hash.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "hstrlen", 3, READONLY | FAST, (1, 1, 1), "hash", "3.2.0", hashes::hstrlen, "key field", "Returns the length of the value of a field.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "hincrby", 4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.0.0", hashes::hincrby, "key field increment", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "hincrbyfloat", 4, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "2.6.0", hashes::hincrbyfloat, "key field increment", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "hrandfield", -2, READONLY, (1, 1, 1), "hash", "6.2.0", hashes::hrandfield, "key [count [WITHVALUES]]", "Returns one or more random fields from a hash.",
        complexity: "O(N), N the fields returned.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    "hscan", -3, READONLY, (1, 1, 1), "hash", "2.8.0", hashes::hscan, "key cursor [MATCH pattern] [COUNT count] [NOVALUES]", "Iterates over fields and values of a hash.",
        complexity: "O(1) per call; O(N) for a whole iteration, N the elements.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    "hexpire", -6, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "7.4.0", hexp::hexpire, "key seconds [NX | XX | GT | LT] FIELDS numfields field [field ...]", "Set expiry for hash field using relative time to expire (seconds).",
        complexity: "O(N), N the fields given.", keys: &[key(RW | UPDATE, 1)];
    "hpexpire", -6, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "7.4.0", hexp::hexpire, "key milliseconds [NX | XX | GT | LT] FIELDS numfields field [field ...]", "Set expiry for hash field using relative time to expire (milliseconds).",
        complexity: "O(N), N the fields given.", keys: &[key(RW | UPDATE, 1)];
    "hexpireat", -6, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "7.4.0", hexp::hexpire, "key unix-time-seconds [NX | XX | GT | LT] FIELDS numfields field [field ...]", "Set expiry for hash field using an absolute Unix timestamp (seconds).",
        complexity: "O(N), N the fields given.", keys: &[key(RW | UPDATE, 1)];
    "hpexpireat", -6, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "7.4.0", hexp::hexpire, "key unix-time-milliseconds [NX | XX | GT | LT] FIELDS numfields field [field ...]", "Set expiry for hash field using an absolute Unix timestamp (milliseconds).",
        complexity: "O(N), N the fields given.", keys: &[key(RW | UPDATE, 1)];
    "httl", -5, READONLY | FAST, (1, 1, 1), "hash", "7.4.0", hexp::httl, "key FIELDS numfields field [field ...]", "Returns the TTL in seconds of a hash field.",
        complexity: "O(N), N the fields given.", keys: &[key(RO | ACCESS, 1)];
    "hpttl", -5, READONLY | FAST, (1, 1, 1), "hash", "7.4.0", hexp::httl, "key FIELDS numfields field [field ...]", "Returns the TTL in milliseconds of a hash field.",
        complexity: "O(N), N the fields given.", keys: &[key(RO | ACCESS, 1)];
    "hexpiretime", -5, READONLY | FAST, (1, 1, 1), "hash", "7.4.0", hexp::httl, "key FIELDS numfields field [field ...]", "Returns the expiration time of a hash field as a Unix timestamp, in seconds.",
        complexity: "O(N), N the fields given.", keys: &[key(RO | ACCESS, 1)];
    "hpexpiretime", -5, READONLY | FAST, (1, 1, 1), "hash", "7.4.0", hexp::httl, "key FIELDS numfields field [field ...]", "Returns the expiration time of a hash field as a Unix timestamp, in msec.",
        complexity: "O(N), N the fields given.", keys: &[key(RO | ACCESS, 1)];
    "hpersist", -5, WRITE | FAST, (1, 1, 1), "hash", "7.4.0", hexp::hpersist, "key FIELDS numfields field [field ...]", "Removes the expiration time for each specified field.",
        complexity: "O(N), N the fields given.", keys: &[key(RW | UPDATE, 1)];
    "hgetdel", -5, WRITE | FAST, (1, 1, 1), "hash", "8.0.0", hexp::hgetdel, "key FIELDS numfields field [field ...]", "Returns the value of a field and deletes it from the hash.",
        complexity: "O(N), N the fields given.", keys: &[key(RW | ACCESS | DELETE, 1)];
    "hgetex", -5, WRITE | FAST, (1, 1, 1), "hash", "8.0.0", hexp::hgetex, "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST] FIELDS numfields field [field ...]", "Get the value of one or more fields of a given hash key, and optionally set their expiration.",
        complexity: "O(N), N the fields given.", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "hsetex", -6, WRITE | DENYOOM | FAST, (1, 1, 1), "hash", "8.0.0", hexp::hsetex, "key [FNX | FXX] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL] FIELDS numfields field value [field value ...]", "Set the value of one or more fields of a given hash key, and optionally set their expiration.",
        complexity: "O(N), N the fields set.", keys: &[key(RW | UPDATE, 1)];
    // set
    "sadd", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "set", "1.0.0", sets::sadd, "key member [member ...]", "Adds one or more members to a set. Creates the key if it doesn't exist.",
        complexity: "O(N), N the members added.", keys: &[key(RW | INSERT, 1)];
    "srem", -3, WRITE | FAST, (1, 1, 1), "set", "1.0.0", sets::srem, "key member [member ...]", "Removes one or more members from a set. Deletes the set if the last member was removed.",
        complexity: "O(N), N the members removed.", keys: &[key(RW | DELETE, 1)];
    "smembers", 2, READONLY, (1, 1, 1), "set", "1.0.0", sets::smembers, "key", "Returns all members of a set.",
        complexity: "O(N), N the members.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output_order"];
    "sismember", 3, READONLY | FAST, (1, 1, 1), "set", "1.0.0", sets::sismember, "key member", "Determines whether a member belongs to a set.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "smismember", -3, READONLY | FAST, (1, 1, 1), "set", "6.2.0", sets::smismember, "key member [member ...]", "Determines whether multiple members belong to a set.",
        complexity: "O(N), N the members checked.", keys: &[key(RO | ACCESS, 1)];
    "scard", 2, READONLY | FAST, (1, 1, 1), "set", "1.0.0", sets::scard, "key", "Returns the number of members in a set.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "spop", -2, WRITE | FAST, (1, 1, 1), "set", "1.0.0", sets::spop, "key [count]", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.",
        complexity: "O(1) without a count, else O(N), N the count.", keys: &[key(RW | ACCESS | DELETE, 1)], tips: &["nondeterministic_output"];
    "srandmember", -2, READONLY, (1, 1, 1), "set", "1.0.0", sets::srandmember, "key [count]", "Get one or multiple random members from a set.",
        complexity: "O(1) without a count, else O(N), N the absolute count.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    "smove", 4, WRITE | FAST, (1, 2, 1), "set", "1.0.0", sets::smove, "source destination member", "Moves a member from one set to another.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | DELETE, 1), key(RW | INSERT, 2)];
    "sinter", -2, READONLY, (1, -1, 1), "set", "1.0.0", sets::algebra, "key [key ...]", "Returns the intersect of multiple sets.",
        complexity: "O(N*M), N the smallest set's size, M the sets.", keys: &[keys_to_end(RO | ACCESS, 1)], tips: &["nondeterministic_output_order"];
    "sunion", -2, READONLY, (1, -1, 1), "set", "1.0.0", sets::algebra, "key [key ...]", "Returns the union of multiple sets.",
        complexity: "O(N), N the members of all the sets.", keys: &[keys_to_end(RO | ACCESS, 1)], tips: &["nondeterministic_output_order"];
    "sdiff", -2, READONLY, (1, -1, 1), "set", "1.0.0", sets::algebra, "key [key ...]", "Returns the difference of multiple sets.",
        complexity: "O(N), N the members of all the sets.", keys: &[keys_to_end(RO | ACCESS, 1)], tips: &["nondeterministic_output_order"];
    "sinterstore", -3, WRITE | DENYOOM, (1, -1, 1), "set", "1.0.0", sets::algebra_store, "destination key [key ...]", "Stores the intersect of multiple sets in a key.",
        complexity: "O(N*M), N the smallest set's size, M the sets.", keys: &[key(RW | UPDATE, 1), keys_to_end(RO | ACCESS, 2)];
    "sunionstore", -3, WRITE | DENYOOM, (1, -1, 1), "set", "1.0.0", sets::algebra_store, "destination key [key ...]", "Stores the union of multiple sets in a key.",
        complexity: "O(N), N the members of all the sets.", keys: &[key(OW | UPDATE, 1), keys_to_end(RO | ACCESS, 2)];
    "sdiffstore", -3, WRITE | DENYOOM, (1, -1, 1), "set", "1.0.0", sets::algebra_store, "destination key [key ...]", "Stores the difference of multiple sets in a key.",
        complexity: "O(N), N the members of all the sets.", keys: &[key(OW | UPDATE, 1), keys_to_end(RO | ACCESS, 2)];
    "sintercard", -3, READONLY, (0, 0, 0), "set", "7.0.0", sets::sintercard, "numkeys key [key ...] [LIMIT limit]", "Returns the number of members of the intersect of multiple sets.",
        complexity: "O(N*M), N the smallest set's size, M the sets.", keys: &[keynum(RO | ACCESS, 1, 0, 1, 1)];
    "sscan", -3, READONLY, (1, 1, 1), "set", "2.8.0", sets::sscan, "key cursor [MATCH pattern] [COUNT count]", "Iterates over members of a set.",
        complexity: "O(1) per call; O(N) for a whole iteration, N the elements.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    // geo (geosort helper)
    "geoadd", -5, WRITE | DENYOOM, (1, 1, 1), "geo", "3.2.0", geo::geoadd, "key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]", "Adds one or more members to a geospatial index. The key is created if it doesn't exist.",
        complexity: "O(log N) per member added, N the size of the sorted set.", keys: &[key(RW | UPDATE, 1)];
    "geodist", -4, READONLY, (1, 1, 1), "geo", "3.2.0", geo::geodist, "key member1 member2 [M | KM | FT | MI]", "Returns the distance between two members of a geospatial index.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)];
    "geohash", -2, READONLY, (1, 1, 1), "geo", "3.2.0", geo::geohash_cmd, "key [member [member ...]]", "Returns members from a geospatial index as geohash strings.",
        complexity: "O(1) per member asked for.", keys: &[key(RO | ACCESS, 1)];
    "geopos", -2, READONLY, (1, 1, 1), "geo", "3.2.0", geo::geopos, "key [member [member ...]]", "Returns the longitude and latitude of members from a geospatial index.",
        complexity: "O(1) per member asked for.", keys: &[key(RO | ACCESS, 1)];
    "geosearch", -7, READONLY, (1, 1, 1), "geo", "6.2.0", geo::geosearch, "key <FROMMEMBER member | FROMLONLAT longitude latitude> <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>> [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]", "Queries a geospatial index for members inside an area of a box or a circle.",
        complexity: "O(N+log(M)), N the members in the cells around the shape, M the members inside it.", keys: &[key(RO | ACCESS, 1)];
    "geosearchstore", -8, WRITE | DENYOOM, (1, 2, 1), "geo", "6.2.0", geo::geosearchstore, "destination source <FROMMEMBER member | FROMLONLAT longitude latitude> <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>> [ASC | DESC] [COUNT count [ANY]] [STOREDIST]", "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.",
        complexity: "O(N+log(M)), N the members in the cells around the shape, M the members inside it.", keys: &[key(OW | UPDATE, 1), key(RO | ACCESS, 2)];
    "georadius", -6, WRITE | DENYOOM, (1, 1, 1), "geo", "3.2.0", geo::georadius, "key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]", "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.",
        complexity: "O(N+log(M)), N the members in the cells around the circle, M the members inside it.", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument", keys: &[key(RO | ACCESS, 1), keyword(OW | UPDATE, "STORE", 6, 0, 1, 0), keyword(OW | UPDATE, "STOREDIST", 6, 0, 1, 0)];
    "georadius_ro", -6, READONLY, (1, 1, 1), "geo", "3.2.10", geo::georadius, "key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]", "Returns members from a geospatial index that are within a distance from a coordinate.",
        complexity: "O(N+log(M)), N the members in the cells around the circle, M the members inside it.", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`GEOSEARCH` with the `BYRADIUS` argument", keys: &[key(RO | ACCESS, 1)];
    "georadiusbymember", -5, WRITE | DENYOOM, (1, 1, 1), "geo", "3.2.0", geo::georadiusbymember, "key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]", "Queries a geospatial index for members within a distance from a member, optionally stores the result.",
        complexity: "O(N+log(M)), N the members in the cells around the circle, M the members inside it.", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments", keys: &[key(RO | ACCESS, 1), keyword(OW | UPDATE, "STORE", 5, 0, 1, 0), keyword(OW | UPDATE, "STOREDIST", 5, 0, 1, 0)];
    "georadiusbymember_ro", -5, READONLY, (1, 1, 1), "geo", "3.2.10", geo::georadiusbymember, "key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]", "Returns members from a geospatial index that are within a distance from a member.",
        complexity: "O(N+log(M)), N the members in the cells around the circle, M the members inside it.", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments", keys: &[key(RO | ACCESS, 1)];
    // sort (geosort helper)
    "sort", -2, WRITE | DENYOOM, (1, 1, 1), "generic", "1.0.0", sort::sort, "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA] [STORE destination]", "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.",
        complexity: "O(N+M*log(M)), N the elements of the collection, M the elements returned.", keys: &[key(RO | ACCESS, 1), unknown(RO | ACCESS).with_notes("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"), unknown(OW | UPDATE).with_notes("For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array")], acl: cat::NO_GROUP | cat::SET | cat::SORTEDSET | cat::LIST | cat::DANGEROUS;
    "sort_ro", -2, READONLY, (1, 1, 1), "generic", "7.0.0", sort::sort_ro, "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA]", "Returns the sorted elements of a list, a set, or a sorted set.",
        complexity: "O(N+M*log(M)), N the elements of the collection, M the elements returned.", keys: &[key(RO | ACCESS, 1), unknown(RO | ACCESS).with_notes("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort")], acl: cat::NO_GROUP | cat::SET | cat::SORTEDSET | cat::LIST | cat::DANGEROUS;
    // sorted set
    "zadd", -4, WRITE | DENYOOM | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zadd, "key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.",
        complexity: "O(log N) per member added, N the size of the sorted set.", keys: &[key(RW | UPDATE, 1)];
    "zincrby", 4, WRITE | DENYOOM | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zincrby, "key increment member", "Increments the score of a member in a sorted set.",
        complexity: "O(log N), N the size of the sorted set.", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "zscore", 3, READONLY | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zscore, "key member", "Returns the score of a member in a sorted set.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)];
    "zmscore", -3, READONLY | FAST, (1, 1, 1), "sorted-set", "6.2.0", zsets::zmscore, "key member [member ...]", "Returns the score of one or more members in a sorted set.",
        complexity: "O(N), N the members asked for.", keys: &[key(RO | ACCESS, 1)];
    "zcard", 2, READONLY | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zcard, "key", "Returns the number of members in a sorted set.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "zcount", 4, READONLY | FAST, (1, 1, 1), "sorted-set", "2.0.0", zrange::zcount, "key min max", "Returns the count of members in a sorted set that have scores within a range.",
        complexity: "O(log N), N the size of the sorted set.", keys: &[key(RO | ACCESS, 1)];
    "zlexcount", 4, READONLY | FAST, (1, 1, 1), "sorted-set", "2.8.9", zrange::zcount, "key min max", "Returns the number of members in a sorted set within a lexicographical range.",
        complexity: "O(log N), N the size of the sorted set.", keys: &[key(RO | ACCESS, 1)];
    "zrank", -3, READONLY | FAST, (1, 1, 1), "sorted-set", "2.0.0", zsets::zrank, "key member [WITHSCORE]", "Returns the index of a member in a sorted set ordered by ascending scores.",
        complexity: "O(log N), N the size of the sorted set.", keys: &[key(RO | ACCESS, 1)];
    "zrevrank", -3, READONLY | FAST, (1, 1, 1), "sorted-set", "2.0.0", zsets::zrank, "key member [WITHSCORE]", "Returns the index of a member in a sorted set ordered by descending scores.",
        complexity: "O(log N), N the size of the sorted set.", keys: &[key(RO | ACCESS, 1)];
    "zrange", -4, READONLY, (1, 1, 1), "sorted-set", "1.2.0", zrange::zrange, "key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]", "Returns members in a sorted set within a range of indexes.",
        complexity: "O(log N + M), N the size of the sorted set, M the members returned.", keys: &[key(RO | ACCESS, 1)];
    "zrangebyscore", -4, READONLY, (1, 1, 1), "sorted-set", "1.0.5", zrange::zrange, "key min max [WITHSCORES] [LIMIT offset count]", "Returns members in a sorted set within a range of scores.",
        complexity: "O(log N + M), N the size of the sorted set, M the members returned.", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with `BYSCORE`", keys: &[key(RO | ACCESS, 1)];
    "zrevrange", -4, READONLY, (1, 1, 1), "sorted-set", "1.2.0", zrange::zrange, "key start stop [WITHSCORES]", "Returns members in a sorted set within a range of indexes in reverse order.",
        complexity: "O(log N + M), N the size of the sorted set, M the members returned.", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with `REV`", keys: &[key(RO | ACCESS, 1)];
    "zrevrangebyscore", -4, READONLY, (1, 1, 1), "sorted-set", "2.2.0", zrange::zrange, "key max min [WITHSCORES] [LIMIT offset count]", "Returns members in a sorted set within a range of scores in reverse order.",
        complexity: "O(log N + M), N the size of the sorted set, M the members returned.", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with `REV` and `BYSCORE`", keys: &[key(RO | ACCESS, 1)];
    "zrangebylex", -4, READONLY, (1, 1, 1), "sorted-set", "2.8.9", zrange::zrange, "key min max [LIMIT offset count]", "Returns members in a sorted set within a lexicographical range.",
        complexity: "O(log N + M), N the size of the sorted set, M the members returned.", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with `BYLEX`", keys: &[key(RO | ACCESS, 1)];
    "zrevrangebylex", -4, READONLY, (1, 1, 1), "sorted-set", "2.8.9", zrange::zrange, "key max min [LIMIT offset count]", "Returns members in a sorted set within a lexicographical range in reverse order.",
        complexity: "O(log N + M), N the size of the sorted set, M the members returned.", doc_flags: &["deprecated"], deprecated_since: "6.2.0", replaced_by: "`ZRANGE` with `REV` and `BYLEX`", keys: &[key(RO | ACCESS, 1)];
    "zrem", -3, WRITE | FAST, (1, 1, 1), "sorted-set", "1.2.0", zsets::zrem, "key member [member ...]", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.",
        complexity: "O(M log N), M the members removed, N the size of the sorted set.", keys: &[key(RW | DELETE, 1)];
    "zremrangebyscore", 4, WRITE, (1, 1, 1), "sorted-set", "1.2.0", zrange::zremrange, "key min max", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.",
        complexity: "O(log N + M), N the size of the sorted set, M the members removed.", keys: &[key(RW | DELETE, 1)];
    "zremrangebyrank", 4, WRITE, (1, 1, 1), "sorted-set", "2.0.0", zrange::zremrange, "key start stop", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.",
        complexity: "O(log N + M), N the size of the sorted set, M the members removed.", keys: &[key(RW | DELETE, 1)];
    "zremrangebylex", 4, WRITE, (1, 1, 1), "sorted-set", "2.8.9", zrange::zremrange, "key min max", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.",
        complexity: "O(log N + M), N the size of the sorted set, M the members removed.", keys: &[key(RW | DELETE, 1)];
    "zpopmin", -2, WRITE | FAST, (1, 1, 1), "sorted-set", "5.0.0", zsets::zpop, "key [count]", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
        complexity: "O(M log N), M the members popped, N the size of the sorted set.", keys: &[key(RW | ACCESS | DELETE, 1)];
    "zpopmax", -2, WRITE | FAST, (1, 1, 1), "sorted-set", "5.0.0", zsets::zpop, "key [count]", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
        complexity: "O(M log N), M the members popped, N the size of the sorted set.", keys: &[key(RW | ACCESS | DELETE, 1)];
    "zscan", -3, READONLY, (1, 1, 1), "sorted-set", "2.8.0", zsets::zscan, "key cursor [MATCH pattern] [COUNT count] [NOSCORES]", "Iterates over members and scores of a sorted set.",
        complexity: "O(1) per call; O(N) for a whole iteration, N the elements.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    // sorted-set algebra, pops and LMPOP/BLMPOP
    "zunion", -3, READONLY, (0, 0, 0), "sorted-set", "6.2.0", zalgebra::zalgebra, "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>] [WITHSCORES]", "Returns the union of multiple sorted sets.",
        complexity: "O(N) + O(M*log(M)), N the sum of the input sizes, M the result's size.", keys: &[keynum(RO | ACCESS, 1, 0, 1, 1)];
    "zinter", -3, READONLY, (0, 0, 0), "sorted-set", "6.2.0", zalgebra::zalgebra, "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>] [WITHSCORES]", "Returns the intersect of multiple sorted sets.",
        complexity: "O(N*K) + O(M*log(M)), N the smallest input, K the inputs, M the result's size.", keys: &[keynum(RO | ACCESS, 1, 0, 1, 1)];
    "zdiff", -3, READONLY, (0, 0, 0), "sorted-set", "6.2.0", zalgebra::zalgebra, "numkeys key [key ...] [WITHSCORES]", "Returns the difference between multiple sorted sets.",
        complexity: "O(L + (N-K)log(N)), L the total input size, N the first input's size, K the result's size.", keys: &[keynum(RO | ACCESS, 1, 0, 1, 1)];
    "zunionstore", -4, WRITE | DENYOOM, (1, 1, 1), "sorted-set", "2.0.0", zalgebra::zalgebra_store, "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>]", "Stores the union of multiple sorted sets in a key.",
        complexity: "O(N) + O(M*log(M)), N the sum of the input sizes, M the result's size.", keys: &[key(OW | UPDATE, 1), keynum(RO | ACCESS, 2, 0, 1, 1)];
    "zinterstore", -4, WRITE | DENYOOM, (1, 1, 1), "sorted-set", "2.0.0", zalgebra::zalgebra_store, "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>]", "Stores the intersect of multiple sorted sets in a key.",
        complexity: "O(N*K) + O(M*log(M)), N the smallest input, K the inputs, M the result's size.", keys: &[key(OW | UPDATE, 1), keynum(RO | ACCESS, 2, 0, 1, 1)];
    "zdiffstore", -4, WRITE | DENYOOM, (1, 1, 1), "sorted-set", "6.2.0", zalgebra::zalgebra_store, "destination numkeys key [key ...]", "Stores the difference of multiple sorted sets in a key.",
        complexity: "O(L + (N-K)log(N)), L the total input size, N the first input's size, K the result's size.", keys: &[key(OW | UPDATE, 1), keynum(RO | ACCESS, 2, 0, 1, 1)];
    "zintercard", -3, READONLY, (0, 0, 0), "sorted-set", "7.0.0", zalgebra::zintercard, "numkeys key [key ...] [LIMIT limit]", "Returns the number of members of the intersect of multiple sorted sets.",
        complexity: "O(N*K), N the smallest input, K the inputs.", keys: &[keynum(RO | ACCESS, 1, 0, 1, 1)];
    "zrangestore", -5, WRITE | DENYOOM, (1, 2, 1), "sorted-set", "6.2.0", zrange::zrangestore, "dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]", "Stores a range of members from sorted set in a key.",
        complexity: "O(log N + M), N the source's size, M the members stored.", keys: &[key(OW | UPDATE, 1), key(RO | ACCESS, 2)];
    "zrandmember", -2, READONLY, (1, 1, 1), "sorted-set", "6.2.0", zalgebra::zrandmember, "key [count [WITHSCORES]]", "Returns one or more random members from a sorted set.",
        complexity: "O(N), N the members returned.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    "zmpop", -4, WRITE, (0, 0, 0), "sorted-set", "7.0.0", mpop::zmpop, "numkeys key [key ...] <MIN | MAX> [COUNT count]", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.",
        complexity: "O(K) + O(M*log(N)), K the keys, N the size of the sorted set, M the members popped.", keys: &[keynum(RW | ACCESS | DELETE, 1, 0, 1, 1)];
    "bzmpop", -5, WRITE | BLOCKING, (0, 0, 0), "sorted-set", "7.0.0", mpop::bzmpop, "timeout numkeys key [key ...] <MIN | MAX> [COUNT count]", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
        complexity: "O(K) + O(M*log(N)), K the keys, N the size of the sorted set, M the members popped.", keys: &[keynum(RW | ACCESS | DELETE, 2, 0, 1, 1)];
    "bzpopmin", -3, WRITE | BLOCKING | FAST, (1, -2, 1), "sorted-set", "5.0.0", mpop::bzpop, "key [key ...] timeout", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
        complexity: "O(log N), N the size of the sorted set.", keys: &[range(RW | ACCESS | DELETE, 1, -2, 1, 0)];
    "bzpopmax", -3, WRITE | BLOCKING | FAST, (1, -2, 1), "sorted-set", "5.0.0", mpop::bzpop, "key [key ...] timeout", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.",
        complexity: "O(log N), N the size of the sorted set.", keys: &[range(RW | ACCESS | DELETE, 1, -2, 1, 0)];
    "lmpop", -4, WRITE, (0, 0, 0), "list", "7.0.0", mpop::lmpop, "numkeys key [key ...] <LEFT | RIGHT> [COUNT count]", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.",
        complexity: "O(N+M), N the keys, M the elements returned.", keys: &[keynum(RW | ACCESS | DELETE, 1, 0, 1, 1)];
    "blmpop", -5, WRITE | BLOCKING, (0, 0, 0), "list", "7.0.0", mpop::blmpop, "timeout numkeys key [key ...] <LEFT | RIGHT> [COUNT count]", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        complexity: "O(N+M), N the keys, M the elements returned.", keys: &[keynum(RW | ACCESS | DELETE, 2, 0, 1, 1)];
    // pubsub
    "subscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE, (0, 0, 0), "pubsub", "2.0.0", pubsub::subscribe, "channel [channel ...]", "Listens for messages published to channels.",
        complexity: "O(N), N the channels.";
    "unsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE, (0, 0, 0), "pubsub", "2.0.0", pubsub::unsubscribe, "[channel [channel ...]]", "Stops listening to messages posted to channels.",
        complexity: "O(N), N the channels left.";
    "psubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE, (0, 0, 0), "pubsub", "2.0.0", pubsub::subscribe, "pattern [pattern ...]", "Listens for messages published to channels that match one or more patterns.",
        complexity: "O(N), N the patterns.";
    "punsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE, (0, 0, 0), "pubsub", "2.0.0", pubsub::unsubscribe, "[pattern [pattern ...]]", "Stops listening to messages published to channels that match one or more patterns.",
        complexity: "O(N), N the patterns left.";
    "publish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE, (0, 0, 0), "pubsub", "2.0.0", pubsub::publish, "channel message", "Posts a message to a channel.",
        complexity: "O(N+M), N the channel's subscribers, M the patterns subscribed.";
    "ssubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE, (1, -1, 1), "pubsub", "7.0.0", pubsub::subscribe, "shardchannel [shardchannel ...]", "Listens for messages published to shard channels.",
        complexity: "O(N), N the shard channels.", keys: &[keys_to_end(NOT_KEY, 1)];
    "sunsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE, (1, -1, 1), "pubsub", "7.0.0", pubsub::unsubscribe, "[shardchannel [shardchannel ...]]", "Stops listening to messages posted to shard channels.",
        complexity: "O(N), N the shard channels left.", keys: &[keys_to_end(NOT_KEY, 1)];
    "spublish", 3, PUBSUB | LOADING | STALE | FAST, (1, 1, 1), "pubsub", "7.0.0", pubsub::spublish, "shardchannel message", "Posts a message to a shard channel.",
        complexity: "O(N), N the shard channel's subscribers.", keys: &[key(NOT_KEY, 1)];
    "pubsub", -2, 0, (0, 0, 0), "pubsub", "2.8.0", pubsub::pubsub, "", "A container for Pub/Sub commands.",
        complexity: "Depends on the subcommand.", subcommands: PUBSUB_SUBCOMMANDS;
    // scripting
    "eval", -3, NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | RUNS_SCRIPT, (0, 0, 0), "scripting", "2.6.0", lua::eval, "script numkeys [key [key ...]] [arg [arg ...]]", "Runs a Lua script on the server.",
        complexity: "Depends on the script.", keys: &[keynum(RW | ACCESS | UPDATE, 2, 0, 1, 1).with_notes(SCRIPT_KEYS_RW)];
    "evalsha", -3, NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | RUNS_SCRIPT, (0, 0, 0), "scripting", "2.6.0", lua::evalsha, "sha1 numkeys [key [key ...]] [arg [arg ...]]", "Runs a cached Lua script by its SHA1 digest.",
        complexity: "Depends on the script.", keys: &[keynum(RW | ACCESS | UPDATE, 2, 0, 1, 1)];
    "eval_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | RUNS_SCRIPT, (0, 0, 0), "scripting", "7.0.0", lua::eval, "script numkeys [key [key ...]] [arg [arg ...]]", "Runs a read-only Lua script on the server.",
        complexity: "Depends on the script.", keys: &[keynum(RO | ACCESS, 2, 0, 1, 1).with_notes(SCRIPT_KEYS_RO)];
    "evalsha_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | RUNS_SCRIPT, (0, 0, 0), "scripting", "7.0.0", lua::evalsha, "sha1 numkeys [key [key ...]] [arg [arg ...]]", "Runs a cached read-only Lua script by its SHA1 digest.",
        complexity: "Depends on the script.", keys: &[keynum(RO | ACCESS, 2, 0, 1, 1)];
    "fcall", -3, NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | RUNS_SCRIPT, (0, 0, 0), "scripting", "7.0.0", functions::fcall, "function numkeys [key [key ...]] [arg [arg ...]]", "Calls a function of a loaded library.",
        complexity: "Depends on the function.", keys: &[keynum(RW | ACCESS | UPDATE, 2, 0, 1, 1).with_notes(SCRIPT_KEYS_RW)];
    "fcall_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | RUNS_SCRIPT, (0, 0, 0), "scripting", "7.0.0", functions::fcall, "function numkeys [key [key ...]] [arg [arg ...]]", "Calls a read-only function of a loaded library.",
        complexity: "Depends on the function.", keys: &[keynum(RO | ACCESS, 2, 0, 1, 1).with_notes(SCRIPT_KEYS_RO)];
    "script", -2, 0, (0, 0, 0), "scripting", "2.6.0", lua::script, "", "A container for the Lua script cache's commands.",
        complexity: "Depends on the subcommand.", subcommands: SCRIPT_SUBCOMMANDS;
    "function", -2, 0, (0, 0, 0), "scripting", "7.0.0", functions::function, "", "A container for the function libraries' commands.",
        complexity: "Depends on the subcommand.", subcommands: FUNCTION_SUBCOMMANDS;
    // short-term memory
    "stm.capture", -7, WRITE | DENYOOM | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::capture, "USER user-id CHANNEL channel-id SERVER <server-id | DM> [PARENT parent-channel-id] [PRIVACY <MINIMAL | PARTIAL | FULL | 0 | 1 | 2>] [STOP] [MSG <user | model> <speaker | -> content [MSG ...]] [REPLY <persona-id | -> <lineage-id | -> <speaker | -> content [REPLY ...]]", "Records a delivered turn in the user and server short-term memory of each persona.",
        complexity: "O(P), P the personas of the turn (two keys each).", keys: &[keyword(RW | INSERT | INCOMPLETE, "CHANNEL", 1, 0, 1, 0)], acl_keys: Some(stm::capture_keys);
    "stm.get", -2, READONLY | FAST | DB_ZERO_ONLY, (1, 1, 1), "stm", "0.1.0", stm::get, "key [FORMAT <RESP | JSON>]", "Returns a short-term memory entry.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 1)];
    "stm.tick", -2, WRITE | DENYOOM | FAST | DB_ZERO_ONLY, (1, 1, 1), "stm", "0.1.0", stm::tick, "key [BY increment]", "Advances the summary cadence counter of a short-term memory entry.",
        complexity: "O(1)", keys: &[key(RW | ACCESS | UPDATE, 1)];
    "stm.summary", -9, WRITE | DENYOOM | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::summary, "USER user-id CHANNEL channel-id SERVER <server-id | DM> [PERSONA <persona-id | -> [LINEAGE <lineage-id | ->]] TEXT summary", "Writes the summary of a conversation's short-term memory.",
        complexity: "O(1): two keys.", keys: &[keyword(RW | UPDATE | INCOMPLETE, "CHANNEL", 1, 0, 1, 0)], acl_keys: Some(stm::summary_keys);
    "stm.categories", -8, WRITE | DENYOOM | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::categories, "USER user-id CHANNEL channel-id SERVER <server-id | DM> [PERSONA <persona-id | -> [LINEAGE <lineage-id | ->]] SET [slug text ...]", "Replaces the categories of a conversation's short-term memory.",
        complexity: "O(C), C the categories given.", keys: &[keyword(RW | UPDATE | INCOMPLETE, "CHANNEL", 1, 0, 1, 0)], acl_keys: Some(stm::categories_keys);
    "stm.recent", -3, READONLY | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::recent, "<USER user-id | SERVER server-id> [EXCLUDE channel-id] [LINEAGE <lineage-id | ->] [LIMIT count] [FORMAT <RESP | JSON>]", "Returns an owner's most recently written short-term memory entries across channels.",
        complexity: "O(N), N the entries of the owner.";
    "stm.forget", 3, WRITE | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm::forget, "<CHANNEL channel-id | USER user-id | KEY key>", "Deletes short-term memory entries and their scope rows.",
        complexity: "O(N), N the entries removed.", keys: &[keyword(RM | DELETE | INCOMPLETE, "CHANNEL", 1, 0, 1, 0), keyword(RM | DELETE, "KEY", 1, 0, 1, 0)], acl_keys: Some(stm::forget_keys);
    "stm.context", -7, READONLY | DB_ZERO_ONLY, (0, 0, 0), "stm", "0.1.0", stm_context::context, "USER user-id CHANNEL channel-id SERVER <server-id | DM> [PERSONA <persona-id | ->] [LINEAGE <lineage-id | ->] [BOT name] [OTHERS count] [CRUDE count] [MODE <SUPERSEDE | CRUDE_SUMMARY>] [CADENCE turns] [CROSS-SERVER] [NOW unix-time-milliseconds] [FORMAT <RESP | JSON>]", "Returns the prompt-ready short-term memory blocks of a conversation.",
        complexity: "O(N), N the entries read.", keys: &[keyword(RO | ACCESS | INCOMPLETE, "CHANNEL", 1, 0, 1, 0)], acl_keys: Some(stm_context::context_keys);
    // streams
    "xadd", -5, WRITE | DENYOOM | FAST, (1, 1, 1), "stream", "5.0.0", streams::xadd, "key [NOMKSTREAM] [KEEPREF | DELREF | ACKED] [<MAXLEN | MINID> [= | ~] threshold [LIMIT count]] <* | id> field value [field value ...]", "Appends a new entry to a stream. Creates the key if it doesn't exist.",
        complexity: "O(1) when adding an entry; O(N) trimming, N the entries evicted.", keys: &[key(RW | UPDATE, 1).with_notes("UPDATE instead of INSERT because of the optional trimming feature")], tips: &["nondeterministic_output"];
    "xlen", 2, READONLY | FAST, (1, 1, 1), "stream", "5.0.0", streams::xlen, "key", "Returns the number of entries in a stream.",
        complexity: "O(1)", keys: &[key(RO, 1)];
    "xrange", -4, READONLY, (1, 1, 1), "stream", "5.0.0", streams::xrange, "key start end [COUNT count]", "Returns the entries of a stream within a range of ids.",
        complexity: "O(log N + M), M the entries returned.", keys: &[key(RO | ACCESS, 1)];
    "xrevrange", -4, READONLY, (1, 1, 1), "stream", "5.0.0", streams::xrange, "key end start [COUNT count]", "Returns the entries of a stream within a range of ids, in reverse order.",
        complexity: "O(log N + M), M the entries returned.", keys: &[key(RO | ACCESS, 1)];
    "xdel", -3, WRITE | FAST, (1, 1, 1), "stream", "5.0.0", streams::xdel, "key id [id ...]", "Removes entries from a stream, returning how many were removed.",
        complexity: "O(log N) per entry.", keys: &[key(RW | DELETE, 1)];
    "xtrim", -4, WRITE, (1, 1, 1), "stream", "5.0.0", streams::xtrim, "key <MAXLEN | MINID> [= | ~] threshold [LIMIT count] [KEEPREF | DELREF | ACKED]", "Removes the oldest entries of a stream.",
        complexity: "O(N), N the entries evicted.", keys: &[key(RW | DELETE, 1)], tips: &["nondeterministic_output"];
    "xdelex", -5, WRITE | FAST, (1, 1, 1), "stream", "8.2.0", streams::xdelex, "key [KEEPREF | DELREF | ACKED] IDS numids id [id ...]", "Deletes one or multiple entries from the stream.",
        complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.", keys: &[key(RW | DELETE, 1)];
    "xackdel", -6, WRITE | FAST, (1, 1, 1), "stream", "8.2.0", streams::xackdel, "key group [KEEPREF | DELREF | ACKED] IDS numids id [id ...]", "Acknowledges and deletes one or multiple messages for a stream consumer group.",
        complexity: "O(1) for each entry ID processed.", keys: &[key(RW | UPDATE | DELETE, 1)];
    "xsetid", -3, WRITE | DENYOOM | FAST, (1, 1, 1), "stream", "5.0.0", streams::xsetid, "key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]", "An internal command for replicating stream values.",
        complexity: "O(1)", keys: &[key(RW | UPDATE, 1)];
    "xread", -4, READONLY | BLOCKING, (0, 0, 0), "stream", "5.0.0", streams::xread, "[COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]", "Returns entries of one or more streams newer than the ids given. Blocks until one is available otherwise.",
        complexity: "O(M) per stream, M the entries returned.", keys: &[keyword(RO | ACCESS, "STREAMS", 1, -1, 1, 2)];
    "xreadgroup", -7, WRITE | BLOCKING, (0, 0, 0), "stream", "5.0.0", streams::xread, "GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]", "Returns new or historical entries of streams for a consumer of a group. Blocks until an entry is available otherwise.",
        complexity: "O(M) per stream, M the entries returned.", keys: &[keyword(RO | ACCESS, "STREAMS", 4, -1, 1, 2)];
    "xack", -4, WRITE | FAST, (1, 1, 1), "stream", "5.0.0", streams::xack, "key group id [id ...]", "Acknowledges entries of a consumer group's pending list.",
        complexity: "O(1) per id.", keys: &[key(RW | UPDATE, 1)];
    "xpending", -3, READONLY, (1, 1, 1), "stream", "5.0.0", streams::xpending, "key group [[IDLE min-idle-time] start end count [consumer]]", "Returns information about a consumer group's pending entries.",
        complexity: "O(N), N the entries returned.", keys: &[key(RO | ACCESS, 1)], tips: &["nondeterministic_output"];
    "xclaim", -6, WRITE | FAST, (1, 1, 1), "stream", "5.0.0", streams::xclaim, "key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]", "Changes the owner of pending entries of a consumer group.",
        complexity: "O(log N) per id.", keys: &[key(RW | UPDATE, 1)], tips: &["nondeterministic_output"];
    "xautoclaim", -6, WRITE | FAST, (1, 1, 1), "stream", "6.2.0", streams::xautoclaim, "key group consumer min-idle-time start [COUNT count] [JUSTID]", "Changes the owner of the pending entries idle for long enough, as if XCLAIMed.",
        complexity: "O(1) per entry examined.", keys: &[key(RW | DELETE, 1)], tips: &["nondeterministic_output"];
    "xgroup", -2, 0, (0, 0, 0), "stream", "5.0.0", streams::xgroup, "", "A container for consumer groups commands.",
        complexity: "Depends on the subcommand.", subcommands: XGROUP_SUBCOMMANDS;
    "xinfo", -2, 0, (0, 0, 0), "stream", "5.0.0", streams::xinfo, "", "A container for stream introspection commands.",
        complexity: "Depends on the subcommand.", subcommands: XINFO_SUBCOMMANDS;
    // JSON (RedisJSON's command set as Redis 8 serves it; the group and @json are a module's)
    "json.set", -4, WRITE | DENYOOM, (1, 1, 1), "module", "1.0.0", json::set, "key path value [NX | XX]", "Sets or updates the JSON value at a path.",
        complexity: "O(M+N), M the size of the original value (if it exists), N the size of the new value.", keys: &[key(RW | UPDATE, 1)], acl: cat::JSON;
    "json.get", -2, READONLY, (1, 1, 1), "module", "1.0.0", json::get, "key [INDENT indent] [NEWLINE newline] [SPACE space] [FORMAT <STRING | EXPAND1 | EXPAND>] [path [path ...]]", "Gets the value at one or more paths in JSON serialized form.",
        complexity: "O(N), N the size of the JSON value.", keys: &[key(RO | ACCESS, 1)], acl: cat::JSON;
    "json.mget", -3, READONLY, (1, -2, 1), "module", "1.0.0", json::mget, "key [key ...] path", "Returns the values at a path from one or more keys.",
        complexity: "O(M*N), M the keys, N the size of the value.", keys: &[range(RO | ACCESS, 1, -2, 1, 0)], acl: cat::JSON;
    "json.mset", -4, WRITE | DENYOOM, (1, -1, 3), "module", "2.6.0", json::mset, "key path value [key path value ...]", "Sets or updates the JSON values of one or more keys.",
        complexity: "O(K*(M+N)), K the keys, M the size of the original value, N the size of the new value.", keys: &[range(RW | UPDATE, 1, -1, 3, 0)], acl: cat::JSON;
    "json.merge", -4, WRITE | DENYOOM, (1, 1, 1), "module", "2.6.0", json::merge, "key path value", "Merges a JSON value into the values at a path (RFC 7396).",
        complexity: "O(M+N), M the size of the original value, N the size of the new value.", keys: &[key(RW | UPDATE, 1)], acl: cat::JSON;
    "json.del", -2, WRITE, (1, 1, 1), "module", "1.0.0", json::del, "key [path]", "Deletes a value.",
        complexity: "O(N), N the size of the deleted value.", keys: &[key(RW | DELETE, 1)], acl: cat::JSON;
    "json.forget", -2, WRITE, (1, 1, 1), "module", "1.0.0", json::del, "key [path]", "Deletes a value.",
        complexity: "O(N), N the size of the deleted value.", keys: &[key(RW | DELETE, 1)], acl: cat::JSON;
    "json.type", -2, READONLY, (1, 1, 1), "module", "1.0.0", json::type_, "key [path]", "Returns the type of the JSON value at a path.",
        complexity: "O(1) per value matched.", keys: &[key(RO, 1)], acl: cat::JSON;
    "json.numincrby", 4, WRITE, (1, 1, 1), "module", "1.0.0", json::numop, "key path value", "Increments the numeric value at a path by a value.",
        complexity: "O(1) per value matched.", keys: &[key(RW | UPDATE, 1)], acl: cat::JSON;
    "json.nummultby", 4, WRITE, (1, 1, 1), "module", "1.0.0", json::numop, "key path value", "Multiplies the numeric value at a path by a value.",
        complexity: "O(1) per value matched.", keys: &[key(RW | UPDATE, 1)], acl: cat::JSON;
    "json.toggle", 3, WRITE, (1, 1, 1), "module", "2.0.0", json::toggle, "key path", "Toggles a boolean value.",
        complexity: "O(1) per value matched.", keys: &[key(RW | UPDATE, 1)], acl: cat::JSON;
    "json.strappend", -3, WRITE | DENYOOM, (1, 1, 1), "module", "1.0.0", json::strappend, "key [path] value", "Appends a string to the JSON strings at a path.",
        complexity: "O(1) per value matched.", keys: &[key(RW | UPDATE, 1)], acl: cat::JSON;
    "json.strlen", -2, READONLY, (1, 1, 1), "module", "1.0.0", json::strlen, "key [path]", "Returns the length of the JSON strings at a path.",
        complexity: "O(1) per value matched.", keys: &[key(RO, 1)], acl: cat::JSON;
    "json.arrappend", -3, WRITE | DENYOOM, (1, 1, 1), "module", "1.0.0", json::arrappend, "key path value [value ...]", "Appends one or more JSON values to the arrays at a path.",
        complexity: "O(1) per value appended and array matched.", keys: &[key(RW | UPDATE, 1)], acl: cat::JSON;
    "json.arrindex", -4, READONLY, (1, 1, 1), "module", "1.0.0", json::arrindex, "key path value [start [stop]]", "Returns the index of the first occurrence of a JSON value in the arrays at a path.",
        complexity: "O(N), N the size of the array.", keys: &[key(RO, 1)], acl: cat::JSON;
    "json.arrinsert", -5, WRITE | DENYOOM, (1, 1, 1), "module", "1.0.0", json::arrinsert, "key path index value [value ...]", "Inserts JSON values into the arrays at a path before an index.",
        complexity: "O(N), N the size of the array.", keys: &[key(RW | UPDATE, 1)], acl: cat::JSON;
    "json.arrlen", -2, READONLY, (1, 1, 1), "module", "1.0.0", json::arrlen, "key [path]", "Returns the length of the arrays at a path.",
        complexity: "O(1) per value matched.", keys: &[key(RO, 1)], acl: cat::JSON;
    "json.arrpop", -2, WRITE, (1, 1, 1), "module", "1.0.0", json::arrpop, "key [path [index]]", "Removes and returns the element at an index of the arrays at a path.",
        complexity: "O(N), N the size of the array.", keys: &[key(RW | ACCESS | DELETE, 1)], acl: cat::JSON;
    "json.arrtrim", 5, WRITE, (1, 1, 1), "module", "1.0.0", json::arrtrim, "key path start stop", "Trims the arrays at a path to a range of indexes.",
        complexity: "O(N), N the size of the array.", keys: &[key(RW | DELETE, 1)], acl: cat::JSON;
    "json.objkeys", -2, READONLY, (1, 1, 1), "module", "1.0.0", json::objkeys, "key [path]", "Returns the member names of the objects at a path.",
        complexity: "O(N), N the members of the object.", keys: &[key(RO, 1)], acl: cat::JSON;
    "json.objlen", -2, READONLY, (1, 1, 1), "module", "1.0.0", json::objlen, "key [path]", "Returns the number of members of the objects at a path.",
        complexity: "O(1) per value matched.", keys: &[key(RO, 1)], acl: cat::JSON;
    "json.clear", -2, WRITE, (1, 1, 1), "module", "2.0.0", json::clear, "key [path]", "Empties arrays and objects and sets numbers to 0 at a path.",
        complexity: "O(N), N the size of the values cleared.", keys: &[key(RW | UPDATE, 1)], acl: cat::JSON;
    "json.resp", -2, READONLY, (1, 1, 1), "module", "1.0.0", json::resp, "key [path]", "Returns the JSON value at a path in Redis Serialization Protocol (RESP).",
        complexity: "O(N), N the size of the value.", keys: &[key(RO, 1)], acl: cat::JSON;
    "json.debug", -2, READONLY, (0, 0, 0), "module", "1.0.0", json::debug, "<MEMORY key [path] | HELP>", "Debugging container command: MEMORY reports a value's memory use, HELP lists the subcommands.",
        complexity: "N/A", keys: &[keyword(RO, "MEMORY", 1, 0, 1, 0)], acl: cat::JSON;
    // Search (RediSearch's command set as Redis 8 serves it; index names are not keys)
    "ft.create", -1, WRITE | DENYOOM, (0, 0, 0), "module", "1.0.0", search::create, "index [ON <HASH | JSON>] [PREFIX count prefix [prefix ...]] [FILTER filter] [LANGUAGE default_lang] [LANGUAGE_FIELD lang_attribute] [SCORE default_score] [SCORE_FIELD score_attribute] [PAYLOAD_FIELD payload_attribute] [MAXTEXTFIELDS] [TEMPORARY seconds] [NOOFFSETS] [NOHL] [NOFIELDS] [NOFREQS] [STOPWORDS count [stopword [stopword ...]]] [SKIPINITIALSCAN] SCHEMA field_name [AS alias] <TEXT | TAG | NUMERIC | GEO | VECTOR | GEOSHAPE> [WITHSUFFIXTRIE] [INDEXEMPTY] [INDEXMISSING] [SORTABLE [UNF]] [NOINDEX] [field_name ...]", "Creates an index with the given spec.",
        complexity: "O(K) at creation where K is the number of fields, O(N) if scanning the keyspace is triggered, where N is the number of keys in the keyspace", acl: cat::SEARCH;
    "ft.dropindex", -1, WRITE, (0, 0, 0), "module", "2.0.0", search::dropindex, "index [DD]", "Deletes the index.",
        complexity: "O(1) or O(N) if documents are deleted, where N is the number of keys in the keyspace", acl: cat::SEARCH;
    "ft.del", -1, WRITE, (0, 0, 0), "module", "1.0.0", search::del, "index key [DD]", "Deletes a key once the index exists (deprecated in RediSearch 2).",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.alter", -1, WRITE | DENYOOM, (0, 0, 0), "module", "1.0.0", search::alter, "index [SKIPINITIALSCAN] SCHEMA ADD field options", "Adds a new field to the index.",
        complexity: "O(N) where N is the number of keys in the keyspace", acl: cat::SEARCH;
    "ft.aliasadd", -1, WRITE | DENYOOM, (0, 0, 0), "module", "1.0.0", search::aliasadd, "alias index", "Adds an alias to the index.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.aliasupdate", -1, WRITE | DENYOOM, (0, 0, 0), "module", "1.0.0", search::aliasadd, "alias index", "Adds or updates an alias to the index.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.aliasdel", -1, WRITE, (0, 0, 0), "module", "1.0.0", search::aliasdel, "alias", "Deletes an alias from the index.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.info", -1, READONLY, (0, 0, 0), "module", "1.0.0", search::info, "index", "Returns information and statistics on the index.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft._list", -1, READONLY, (0, 0, 0), "module", "2.0.0", search::list, "", "Returns a list of all existing indexes.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.tagvals", -1, READONLY, (0, 0, 0), "module", "1.0.0", search::tagvals, "index field_name", "Returns the distinct tags indexed in a Tag field.",
        complexity: "O(N)", acl: cat::SEARCH;
    "ft.config", -1, READONLY, (0, 0, 0), "module", "1.0.0", search::config, "<GET option | SET option value | HELP option>", "Gets or sets a RediSearch configuration parameter.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.search", -1, READONLY, (0, 0, 0), "module", "1.0.0", search::search, "index query [NOCONTENT] [VERBATIM] [NOSTOPWORDS] [WITHSCORES] [FILTER numeric_field min max [FILTER numeric_field min max ...]] [GEOFILTER geo_field lon lat radius <m | km | mi | ft>] [INKEYS count key [key ...]] [INFIELDS count field [field ...]] [RETURN count identifier [AS property] [identifier [AS property] ...]] [SLOP slop] [TIMEOUT timeout] [INORDER] [LANGUAGE language] [SCORER scorer] [SORTBY sortby [ASC | DESC] [WITHCOUNT]] [LIMIT offset num] [PARAMS nargs name value [name value ...]] [DIALECT dialect]", "Searches the index with a textual query, returning either documents or just ids.",
        complexity: "O(N)", acl: cat::SEARCH;
    "ft.aggregate", -1, READONLY, (0, 0, 0), "module", "1.1.0", search::aggregate, "index query [VERBATIM] [LOAD count field [field ...]] [TIMEOUT timeout] [GROUPBY nargs property [property ...] [REDUCE function nargs arg [arg ...] [AS name] [REDUCE function nargs arg [arg ...] [AS name] ...]] ...] [SORTBY nargs [property <ASC | DESC> [property <ASC | DESC> ...]] [MAX num]] [APPLY expression AS name [APPLY expression AS name ...]] [LIMIT offset num] [FILTER filter] [WITHCURSOR [COUNT read_size] [MAXIDLE idle_time]] [PARAMS nargs name value [name value ...]] [ADDSCORES] [DIALECT dialect]", "Run a search query on an index and perform aggregate transformations on the results.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.cursor", -1, READONLY, (0, 0, 0), "module", "1.1.0", search::cursor, "<READ index cursor_id [COUNT read_size] | DEL index cursor_id>", "Reads from or deletes a cursor of FT.AGGREGATE's results.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.explain", -1, READONLY, (0, 0, 0), "module", "1.0.0", search::explain, "index query [DIALECT dialect]", "Returns the execution plan for a complex query.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.explaincli", -1, READONLY, (0, 0, 0), "module", "1.0.0", search::explain, "index query [DIALECT dialect]", "Returns the execution plan for a complex query, one line per element.",
        complexity: "O(1)", acl: cat::SEARCH;
    "ft.profile", -1, READONLY, (0, 0, 0), "module", "2.2.0", search::profile, "index <SEARCH | AGGREGATE> [LIMITED] QUERY query", "Performs a FT.SEARCH or FT.AGGREGATE command and collects performance information.",
        complexity: "O(N)", acl: cat::SEARCH;
];

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
}
