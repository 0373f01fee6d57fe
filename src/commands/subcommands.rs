//! The subcommands of the container commands (CLIENT, CONFIG, COMMAND, …), rows like the
//! top-level ones in `table.rs`, named `container|sub` as Redis names them. Dispatch checks a
//! request's subcommand and its arity against these, then runs the row's handler (the
//! container's, which reads the subcommand itself, or one of the subcommand's own); COMMAND INFO
//! and DOCS render them under their container.

use super::categories as cat;
use super::keyspec::*;
use super::scripting as lua;
use super::streams;
use super::table::*;
use super::{
    acl, command_info, connection as conn, functions, introspection, keys, ops, pubsub, server,
};

/// CLIENT's subcommands.
pub const CLIENT_SUBCOMMANDS: &[Command] = commands![
    "client|id", 2, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "5.0.0", conn::client, "", "Returns the unique id of the connection.",
        complexity: "O(1)";
    "client|info", 2, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "6.2.0", conn::client, "", "Returns this connection's line of CLIENT LIST.",
        complexity: "O(1)", tips: &["nondeterministic_output"];
    "client|list", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "2.4.0", conn::client, "[TYPE <NORMAL | MASTER | REPLICA | PUBSUB>] [ID client-id [client-id ...]]", "Lists the open connections and their state.",
        complexity: "O(N), N the connected clients.", tips: &["nondeterministic_output"];
    "client|getname", 2, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "2.6.9", conn::client, "", "Returns the name given to the connection.",
        complexity: "O(1)";
    "client|setname", 3, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "2.6.9", conn::client, "connection-name", "Names the connection.",
        complexity: "O(1)";
    "client|setinfo", 4, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "7.2.0", conn::client, "<LIB-NAME libname | LIB-VER libver>", "Records the client library name or version of the connection.",
        complexity: "O(1)";
    "client|kill", -3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "2.4.0", conn::client, "<ip:port | [ID client-id] [TYPE <NORMAL | MASTER | SLAVE | REPLICA | PUBSUB>] [USER username] [ADDR ip:port] [LADDR ip:port] [SKIPME <YES | NO>] [MAXAGE maxage]>", "Closes connections chosen by address or by filters.",
        complexity: "O(N), N the connected clients.";
    "client|no-evict", 3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "7.0.0", conn::client, "<ON | OFF>", "Exempts the connection from client eviction, or stops doing so.",
        complexity: "O(1)";
    "client|no-touch", 3, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "7.2.0", conn::client, "<ON | OFF>", "Stops or resumes the connection's reads updating the idle time of keys.",
        complexity: "O(1)";
    "client|tracking", -3, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "6.0.0", conn::client, "<ON | OFF> [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]", "Turns client-side caching invalidations on or off for the connection.",
        complexity: "O(1), plus O(P) for P prefixes.";
    "client|caching", 3, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "6.0.0", conn::client, "<YES | NO>", "Says whether the next command's keys are tracked (OPTIN/OPTOUT modes).",
        complexity: "O(1)";
    "client|getredir", 2, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "6.0.0", conn::client, "", "Returns the id of the connection that receives this one's invalidations.",
        complexity: "O(1)";
    "client|trackinginfo", 2, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "6.2.0", conn::client, "", "Describes the connection's client-side caching state.",
        complexity: "O(1)";
    "client|pause", -3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "2.9.50", conn::client, "timeout [WRITE | ALL]", "Holds the commands of every client for a while.",
        complexity: "O(1)";
    "client|unpause", 2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "6.2.0", conn::client, "", "Ends a CLIENT PAUSE early.",
        complexity: "O(N), N the paused clients.";
    "client|unblock", -3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "5.0.0", conn::client, "client-id [TIMEOUT | ERROR]", "Wakes a connection blocked in a blocking command.",
        complexity: "O(N), N the connected clients.";
    "client|reply", 3, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "3.2.0", conn::client, "<ON | OFF | SKIP>", "Turns the server's replies to this connection off or on.",
        complexity: "O(1)";
    "client|help", 2, LOADING | STALE, (0, 0, 0), "connection", "5.0.0", conn::client, "", "Lists the CLIENT subcommands.",
        complexity: "O(1)";
];

/// ACL's subcommands.
pub const ACL_SUBCOMMANDS: &[Command] = commands![
    "acl|cat", -2, NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "[category]", "Lists the ACL categories, or the commands inside a category.",
        complexity: "O(1) since the categories and commands are a fixed set.";
    "acl|deluser", -3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "username [username ...]", "Deletes ACL users, and terminates their connections.",
        complexity: "O(1) amortized time considering the typical user.";
    "acl|dryrun", -4, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "7.0.0", acl::acl, "username command [arg [arg ...]]", "Simulates the execution of a command by a user, without executing the command.",
        complexity: "O(1).";
    "acl|genpass", -2, NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "[bits]", "Generates a pseudorandom, secure password that can be used to identify ACL users.",
        complexity: "O(1)";
    "acl|getuser", 3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "username", "Lists the ACL rules of a user.",
        complexity: "O(N). Where N is the number of password, command and pattern rules that the user has.";
    "acl|help", 2, LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "", "Returns helpful text about the different subcommands.",
        complexity: "O(1)";
    "acl|list", 2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "", "Dumps the effective rules in ACL file format.",
        complexity: "O(N). Where N is the number of configured users.";
    "acl|load", 2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "", "Reloads the rules from the configured ACL file.",
        complexity: "O(N). Where N is the number of configured users.";
    "acl|log", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "[count | RESET]", "Lists recent security events generated due to ACL rules.",
        complexity: "O(N) with N being the number of entries shown.";
    "acl|save", 2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "", "Saves the effective ACL rules in the configured ACL file.",
        complexity: "O(N). Where N is the number of configured users.";
    "acl|setuser", -3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "username [rule [rule ...]]", "Creates and modifies an ACL user and its rules.",
        complexity: "O(N). Where N is the number of rules provided.";
    "acl|users", 2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "", "Lists all ACL users.",
        complexity: "O(N). Where N is the number of configured users.";
    "acl|whoami", 2, NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", acl::acl, "", "Returns the authenticated username of the current connection.",
        complexity: "O(1)";
];

/// CLUSTER's subcommands. The administration ones (ADDSLOTS … LINKS, see
/// `super::cluster_admin`) change the shared configuration as `stmd cluster …` does.
pub const CLUSTER_SUBCOMMANDS: &[Command] = commands![
    "cluster|countkeysinslot", 3, STALE, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "slot", "Returns the number of keys in a hash slot.",
        complexity: "O(N), N the keys of the node (a scan; see docs/cluster.md).";
    "cluster|getkeysinslot", 4, STALE, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "slot count", "Returns the key names in a hash slot.",
        complexity: "O(N), N the keys of the node (a scan; see docs/cluster.md).", tips: &["nondeterministic_output"];
    "cluster|info", 2, STALE, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "", "Returns information about the state of a node.",
        complexity: "O(1)", tips: &["nondeterministic_output"];
    "cluster|keyslot", 3, STALE, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "key", "Returns the hash slot for a key.",
        complexity: "O(N), N the bytes of the key.";
    "cluster|myid", 2, STALE, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "", "Returns the ID of a node.",
        complexity: "O(1)";
    "cluster|myshardid", 2, STALE, (0, 0, 0), "cluster", "7.2.0", super::cluster::cluster, "", "Returns the shard ID of a node.",
        complexity: "O(1)", tips: &["nondeterministic_output"];
    "cluster|nodes", 2, STALE, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "", "Returns the cluster configuration for a node.",
        complexity: "O(N), N the nodes of the cluster.", tips: &["nondeterministic_output"];
    "cluster|shards", 2, STALE, (0, 0, 0), "cluster", "7.0.0", super::cluster::cluster, "", "Returns the mapping of cluster slots to shards.",
        complexity: "O(N), N the shards of the cluster.", tips: &["nondeterministic_output"];
    "cluster|slots", 2, STALE, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "", "Returns the mapping of cluster slots to nodes.",
        complexity: "O(N), N the slot ranges of the cluster.", tips: &["nondeterministic_output"];
    "cluster|replicas", 3, ADMIN | STALE, (0, 0, 0), "cluster", "5.0.0", super::cluster::cluster, "node-id", "Lists the replica nodes of a master node.",
        complexity: "O(N), N the nodes of the cluster.", tips: &["nondeterministic_output"];
    "cluster|slaves", 3, ADMIN | STALE, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "node-id", "Lists the replica nodes of a master node.",
        complexity: "O(N), N the nodes of the cluster.", tips: &["nondeterministic_output"], doc_flags: &["deprecated"], deprecated_since: "5.0.0", replaced_by: "`CLUSTER REPLICAS`";
    "cluster|failover", -2, ADMIN | STALE | NO_ASYNC_LOADING, (0, 0, 0), "cluster", "3.0.0", super::cluster::cluster, "[FORCE | TAKEOVER]", "Forces a replica to perform a manual failover of its master.",
        complexity: "O(1)";
    "cluster|addslots", -3, ADMIN | STALE | NO_ASYNC_LOADING | CHANGES_CLUSTER, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::addslots, "slot [slot ...]", "Assigns new hash slots to a node.",
        complexity: "O(N) where N is the total number of hash slot arguments";
    "cluster|addslotsrange", -4, ADMIN | STALE | NO_ASYNC_LOADING | CHANGES_CLUSTER, (0, 0, 0), "cluster", "7.0.0", super::cluster_admin::addslotsrange, "start-slot end-slot [start-slot end-slot ...]", "Assigns new hash slot ranges to a node.",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.";
    "cluster|bumpepoch", 2, ADMIN | STALE | NO_ASYNC_LOADING | CHANGES_CLUSTER, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::bumpepoch, "", "Advances the cluster config epoch.",
        complexity: "O(1)", tips: &["nondeterministic_output"];
    "cluster|count-failure-reports", 3, ADMIN | STALE, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::count_failure_reports, "node-id", "Returns the number of active failure reports active for a node.",
        complexity: "O(N) where N is the number of failure reports", tips: &["nondeterministic_output"];
    "cluster|delslots", -3, ADMIN | STALE | NO_ASYNC_LOADING | CHANGES_CLUSTER, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::delslots, "slot [slot ...]", "Sets hash slots as unbound for a node.",
        complexity: "O(N) where N is the total number of hash slot arguments";
    "cluster|delslotsrange", -4, ADMIN | STALE | NO_ASYNC_LOADING | CHANGES_CLUSTER, (0, 0, 0), "cluster", "7.0.0", super::cluster_admin::delslotsrange, "start-slot end-slot [start-slot end-slot ...]", "Sets hash slot ranges as unbound for a node.",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.";
    "cluster|flushslots", 2, ADMIN | STALE | NO_ASYNC_LOADING | CHANGES_CLUSTER, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::flushslots, "", "Deletes all slots information from a node.",
        complexity: "O(1)";
    "cluster|forget", 3, ADMIN | STALE | NO_ASYNC_LOADING | CHANGES_CLUSTER, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::forget, "node-id", "Removes a node from the nodes table.",
        complexity: "O(1)";
    "cluster|links", 2, STALE, (0, 0, 0), "cluster", "7.0.0", super::cluster_admin::links, "", "Returns a list of all TCP links to and from peer nodes.",
        complexity: "O(N) where N is the total number of Cluster nodes", tips: &["nondeterministic_output"];
    "cluster|meet", -4, ADMIN | STALE | NO_ASYNC_LOADING, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::meet, "ip port [cluster-bus-port]", "Forces a node to handshake with another node.",
        complexity: "O(1)";
    "cluster|replicate", 3, ADMIN | STALE | NO_ASYNC_LOADING | CHANGES_CLUSTER, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::replicate, "node-id", "Configure a node as replica of a master node.",
        complexity: "O(1)";
    "cluster|reset", -2, ADMIN | NOSCRIPT | STALE | CHANGES_CLUSTER, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::reset, "[HARD | SOFT]", "Resets a node.",
        complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.";
    "cluster|saveconfig", 2, ADMIN | STALE | NO_ASYNC_LOADING, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::saveconfig, "", "Forces a node to save the cluster configuration to disk.",
        complexity: "O(1)";
    "cluster|set-config-epoch", 3, ADMIN | STALE | NO_ASYNC_LOADING, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::set_config_epoch, "config-epoch", "Sets the configuration epoch for a new node.",
        complexity: "O(1)";
    "cluster|setslot", -4, ADMIN | STALE | NO_ASYNC_LOADING | CHANGES_CLUSTER, (0, 0, 0), "cluster", "3.0.0", super::cluster_admin::setslot, "slot <IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE>", "Binds a hash slot to a node.",
        complexity: "O(1)";
    "cluster|help", 2, LOADING | STALE, (0, 0, 0), "cluster", "5.0.0", super::cluster::cluster, "", "Returns helpful text about the different subcommands.",
        complexity: "O(1)";
    "cluster|peer", -4, ADMIN | NOSCRIPT | STALE, (0, 0, 0), "cluster", "0.1.0", super::cluster::cluster, "node-id <STM.RECENT <2 | 3> arguments | STM.FORGET USER user-id | PUBLISH channel message>", "stmd's node-to-node form of the owner-wide STM commands and PUBLISH forwarding (internal).",
        complexity: "O(N), N the entries read or the subscribers reached, on this node only.";
];

/// MODULE's subcommands: stmd loads no modules (see `server::module`).
pub const MODULE_SUBCOMMANDS: &[Command] = commands![
    "module|help", 2, LOADING | STALE, (0, 0, 0), "server", "5.0.0", server::module, "", "Returns helpful text about the different subcommands.",
        complexity: "O(1)";
    "module|load", -3, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, (0, 0, 0), "server", "4.0.0", server::module, "path [arg [arg ...]]", "Loads a module.",
        complexity: "O(1)";
    "module|unload", 3, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, (0, 0, 0), "server", "4.0.0", server::module, "name", "Unloads a module.",
        complexity: "O(1)";
    "module|loadex", -3, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, (0, 0, 0), "server", "7.0.0", server::module, "path [CONFIG name value [CONFIG name value ...]] [ARGS args [args ...]]", "Loads a module using extended parameters.",
        complexity: "O(1)";
    "module|list", 2, ADMIN | NOSCRIPT, (0, 0, 0), "server", "4.0.0", server::module, "", "Returns all loaded modules.",
        complexity: "O(N), N the loaded modules.", tips: &["nondeterministic_output_order"];
];

/// CONFIG's subcommands.
pub const CONFIG_SUBCOMMANDS: &[Command] = commands![
    "config|get", -3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.0.0", server::config, "parameter [parameter ...]", "Returns the values of matching configuration parameters.",
        complexity: "O(N), N the parameters named.";
    "config|set", -4, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.0.0", server::config, "parameter value [parameter value ...]", "Changes configuration parameters at run time.",
        complexity: "O(N), N the parameters named.", tips: &["request_policy:all_nodes", "response_policy:all_succeeded"];
    "config|resetstat", 2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.0.0", server::config, "", "Zeroes the statistics INFO reports.",
        complexity: "O(1)";
    "config|rewrite", 2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.8.0", server::config, "", "Writes the running configuration back to the configuration file.",
        complexity: "O(1)";
    "config|help", 2, LOADING | STALE, (0, 0, 0), "server", "5.0.0", server::config, "", "Lists the CONFIG subcommands.",
        complexity: "O(1)";
];

/// SLOWLOG's subcommands.
pub const SLOWLOG_SUBCOMMANDS: &[Command] = commands![
    "slowlog|get", -2, ADMIN | LOADING | STALE, (0, 0, 0), "server", "2.2.12", ops::slowlog, "[count]", "Returns the newest slow log entries.",
        complexity: "O(N), N the entries returned.", tips: &["request_policy:all_nodes", "nondeterministic_output"];
    "slowlog|len", 2, ADMIN | LOADING | STALE, (0, 0, 0), "server", "2.2.12", ops::slowlog, "", "Returns the number of entries in the slow log.",
        complexity: "O(1)", tips: &["request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"];
    "slowlog|reset", 2, ADMIN | LOADING | STALE, (0, 0, 0), "server", "2.2.12", ops::slowlog, "", "Empties the slow log.",
        complexity: "O(N), N the entries of the slow log.", tips: &["request_policy:all_nodes", "response_policy:all_succeeded"];
    "slowlog|help", 2, LOADING | STALE, (0, 0, 0), "server", "6.2.0", ops::slowlog, "", "Lists the SLOWLOG subcommands.",
        complexity: "O(1)";
];

/// LATENCY's subcommands.
pub const LATENCY_SUBCOMMANDS: &[Command] = commands![
    "latency|latest", 2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.8.13", introspection::latency, "", "Returns the newest spike of every latency event.",
        complexity: "O(1)", tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"];
    "latency|history", 3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.8.13", introspection::latency, "event", "Returns the recorded spikes of one latency event.",
        complexity: "O(1)", tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"];
    "latency|reset", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.8.13", introspection::latency, "[event [event ...]]", "Forgets the spikes of some or all latency events.",
        complexity: "O(1)", tips: &["request_policy:all_nodes", "response_policy:all_succeeded"];
    "latency|graph", 3, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.8.13", introspection::latency, "event", "Draws the spikes of one latency event as ASCII art.",
        complexity: "O(1)", tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"];
    "latency|doctor", 2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.8.13", introspection::latency, "", "Explains the recorded latency spikes in words.",
        complexity: "O(1)", tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"];
    "latency|histogram", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "7.0.0", introspection::latency, "[command [command ...]]", "Returns the latency distribution of commands.",
        complexity: "O(N), N the commands reported.", tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"];
    "latency|help", 2, LOADING | STALE, (0, 0, 0), "server", "2.8.13", introspection::latency, "", "Lists the LATENCY subcommands.",
        complexity: "O(1)";
];

/// MEMORY's subcommands.
pub const MEMORY_SUBCOMMANDS: &[Command] = commands![
    "memory|usage", -3, READONLY, (2, 2, 1), "server", "4.0.0", introspection::memory, "key [SAMPLES count]", "Estimates the memory a key and its value take.",
        complexity: "O(N), N the elements sampled.", keys: &[key(RO, 2)];
    "memory|stats", 2, 0, (0, 0, 0), "server", "4.0.0", introspection::memory, "", "Returns a breakdown of the server's memory use.",
        complexity: "O(1)", tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"];
    "memory|doctor", 2, 0, (0, 0, 0), "server", "4.0.0", introspection::memory, "", "Explains the server's memory use in words.",
        complexity: "O(1)", tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"];
    "memory|malloc-stats", 2, 0, (0, 0, 0), "server", "4.0.0", introspection::memory, "", "Returns the allocator's own statistics.",
        complexity: "Depends on the allocator's state.", tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"];
    "memory|purge", 2, 0, (0, 0, 0), "server", "4.0.0", introspection::memory, "", "Asks the allocator to return unused memory.",
        complexity: "Depends on the allocator's state.", tips: &["request_policy:all_shards", "response_policy:all_succeeded"];
    "memory|help", 2, LOADING | STALE, (0, 0, 0), "server", "4.0.0", introspection::memory, "", "Lists the MEMORY subcommands.",
        complexity: "O(1)";
];

/// OBJECT's subcommands.
pub const OBJECT_SUBCOMMANDS: &[Command] = commands![
    "object|encoding", 3, READONLY, (2, 2, 1), "generic", "2.2.3", keys::object, "key", "Returns the name of the encoding Redis would use for a key's value.",
        complexity: "O(1)", keys: &[key(RO, 2)], tips: &["nondeterministic_output"];
    "object|refcount", 3, READONLY, (2, 2, 1), "generic", "2.2.3", keys::object, "key", "Returns the reference count of a key's value.",
        complexity: "O(1)", keys: &[key(RO, 2)], tips: &["nondeterministic_output"];
    "object|idletime", 3, READONLY, (2, 2, 1), "generic", "2.2.3", keys::object, "key", "Returns the seconds since a key was last read or written.",
        complexity: "O(1)", keys: &[key(RO, 2)], tips: &["nondeterministic_output"];
    "object|freq", 3, READONLY, (2, 2, 1), "generic", "4.0.0", keys::object, "key", "Returns the access frequency counter of a key.",
        complexity: "O(1)", keys: &[key(RO, 2)], tips: &["nondeterministic_output"];
    "object|help", 2, LOADING | STALE, (0, 0, 0), "generic", "6.2.0", keys::object, "", "Lists the OBJECT subcommands.",
        complexity: "O(1)";
];

/// PUBSUB's subcommands.
pub const PUBSUB_SUBCOMMANDS: &[Command] = commands![
    "pubsub|channels", -2, PUBSUB | LOADING | STALE, (0, 0, 0), "pubsub", "2.8.0", pubsub::pubsub, "[pattern]", "Lists the channels with subscribers.",
        complexity: "O(N), N the channels with subscribers.";
    "pubsub|numsub", -2, PUBSUB | LOADING | STALE, (0, 0, 0), "pubsub", "2.8.0", pubsub::pubsub, "[channel [channel ...]]", "Returns the subscriber count of channels.",
        complexity: "O(N), N the channels named.";
    "pubsub|numpat", 2, PUBSUB | LOADING | STALE, (0, 0, 0), "pubsub", "2.8.0", pubsub::pubsub, "", "Returns the number of pattern subscriptions.",
        complexity: "O(1)";
    "pubsub|shardchannels", -2, PUBSUB | LOADING | STALE, (0, 0, 0), "pubsub", "7.0.0", pubsub::pubsub, "[pattern]", "Lists the shard channels with subscribers.",
        complexity: "O(N), N the shard channels with subscribers.";
    "pubsub|shardnumsub", -2, PUBSUB | LOADING | STALE, (0, 0, 0), "pubsub", "7.0.0", pubsub::pubsub, "[shardchannel [shardchannel ...]]", "Returns the subscriber count of shard channels.",
        complexity: "O(N), N the shard channels named.";
    "pubsub|help", 2, LOADING | STALE, (0, 0, 0), "pubsub", "6.2.0", pubsub::pubsub, "", "Lists the PUBSUB subcommands.",
        complexity: "O(1)", acl: cat::NO_GROUP;
];

/// COMMAND's subcommands.
pub const COMMAND_SUBCOMMANDS: &[Command] = commands![
    "command|count", 2, LOADING | STALE, (0, 0, 0), "server", "2.8.13", command_info::command, "", "Returns the number of commands.",
        complexity: "O(1)", acl: cat::CONNECTION;
    "command|list", -2, LOADING | STALE, (0, 0, 0), "server", "7.0.0", command_info::command, "[FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]", "Returns the command names, optionally filtered.",
        complexity: "O(N), N the commands.", acl: cat::CONNECTION, tips: &["nondeterministic_output_order"];
    "command|info", -2, LOADING | STALE, (0, 0, 0), "server", "2.8.13", command_info::command, "[command-name [command-name ...]]", "Returns the metadata of commands.",
        complexity: "O(N), N the commands named.", acl: cat::CONNECTION, tips: &["nondeterministic_output_order"];
    "command|docs", -2, LOADING | STALE, (0, 0, 0), "server", "7.0.0", command_info::command, "[command-name [command-name ...]]", "Returns the documentation of commands.",
        complexity: "O(N), N the commands named.", acl: cat::CONNECTION, tips: &["nondeterministic_output_order"];
    "command|getkeys", -4, LOADING | STALE, (0, 0, 0), "server", "2.8.13", command_info::command, "command [arg [arg ...]]", "Returns the keys of a full command.",
        complexity: "O(N), N the arguments of the command.", acl: cat::CONNECTION;
    "command|getkeysandflags", -4, LOADING | STALE, (0, 0, 0), "server", "7.0.0", command_info::command, "command [arg [arg ...]]", "Returns the keys of a full command with their access flags.",
        complexity: "O(N), N the arguments of the command.", acl: cat::CONNECTION;
    "command|help", 2, LOADING | STALE, (0, 0, 0), "server", "5.0.0", command_info::command, "", "Lists the COMMAND subcommands.",
        complexity: "O(1)", acl: cat::CONNECTION;
];

/// SCRIPT's subcommands.
pub const SCRIPT_SUBCOMMANDS: &[Command] = commands![
    "script|debug", 3, NOSCRIPT, (0, 0, 0), "scripting", "3.2.0", lua::script, "<YES | SYNC | NO>", "Would set the debug mode of scripts: stmd has no Lua debugger.",
        complexity: "O(1)";
    "script|exists", -3, NOSCRIPT, (0, 0, 0), "scripting", "2.6.0", lua::script, "sha1 [sha1 ...]", "Says which of the given scripts are in the script cache.",
        complexity: "O(N), N the digests given.", tips: &["request_policy:all_shards", "response_policy:agg_logical_and"];
    "script|flush", -2, NOSCRIPT, (0, 0, 0), "scripting", "2.6.0", lua::script, "[ASYNC | SYNC]", "Empties the script cache.",
        complexity: "O(N), N the cached scripts.", tips: &["request_policy:all_nodes", "response_policy:all_succeeded"];
    "script|help", 2, LOADING | STALE, (0, 0, 0), "scripting", "5.0.0", lua::script, "", "Lists the SCRIPT subcommands.",
        complexity: "O(1)";
    "script|kill", 2, NOSCRIPT | ALLOW_BUSY, (0, 0, 0), "scripting", "2.6.0", lua::script, "", "Stops the running script if it has not written.",
        complexity: "O(1)", tips: &["request_policy:all_shards", "response_policy:one_succeeded"];
    "script|load", 3, NOSCRIPT | STALE, (0, 0, 0), "scripting", "2.6.0", lua::script, "script", "Compiles a script into the cache without running it.",
        complexity: "O(N), N the script's length in bytes.", tips: &["request_policy:all_nodes", "response_policy:all_succeeded"];
];

/// FUNCTION's subcommands.
pub const FUNCTION_SUBCOMMANDS: &[Command] = commands![
    "function|delete", 3, WRITE | NOSCRIPT, (0, 0, 0), "scripting", "7.0.0", functions::function, "library-name", "Deletes a library and its functions.",
        complexity: "O(1)", tips: &["request_policy:all_shards", "response_policy:all_succeeded"];
    "function|dump", 2, NOSCRIPT, (0, 0, 0), "scripting", "7.0.0", functions::function, "", "Serializes every library into one payload for FUNCTION RESTORE.",
        complexity: "O(N), N the libraries.";
    "function|flush", -2, WRITE | NOSCRIPT, (0, 0, 0), "scripting", "7.0.0", functions::function, "[ASYNC | SYNC]", "Deletes every library.",
        complexity: "O(N), N the functions.", tips: &["request_policy:all_shards", "response_policy:all_succeeded"];
    "function|help", 2, LOADING | STALE, (0, 0, 0), "scripting", "7.0.0", functions::function, "", "Lists the FUNCTION subcommands.",
        complexity: "O(1)";
    "function|kill", 2, NOSCRIPT | ALLOW_BUSY, (0, 0, 0), "scripting", "7.0.0", functions::function, "", "Stops the running function if it has not written.",
        complexity: "O(1)", tips: &["request_policy:all_shards", "response_policy:one_succeeded"];
    "function|list", -2, NOSCRIPT, (0, 0, 0), "scripting", "7.0.0", functions::function, "[LIBRARYNAME library-name-pattern] [WITHCODE]", "Lists the libraries and their functions.",
        complexity: "O(N), N the functions.", tips: &["nondeterministic_output_order"];
    "function|load", -3, WRITE | DENYOOM | NOSCRIPT, (0, 0, 0), "scripting", "7.0.0", functions::function, "[REPLACE] function-code", "Loads a library of functions.",
        complexity: "O(1), plus compiling the code.", tips: &["request_policy:all_shards", "response_policy:all_succeeded"];
    "function|restore", -3, WRITE | DENYOOM | NOSCRIPT, (0, 0, 0), "scripting", "7.0.0", functions::function, "serialized-value [FLUSH | APPEND | REPLACE]", "Loads the libraries of a FUNCTION DUMP payload.",
        complexity: "O(N), N the functions in the payload.", tips: &["request_policy:all_shards", "response_policy:all_succeeded"];
    "function|stats", 2, NOSCRIPT | ALLOW_BUSY, (0, 0, 0), "scripting", "7.0.0", functions::function, "", "Describes the running function and the loaded libraries.",
        complexity: "O(1)", tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"];
];

/// XGROUP's subcommands.
pub const XGROUP_SUBCOMMANDS: &[Command] = commands![
    "xgroup|create", -5, WRITE | DENYOOM, (2, 2, 1), "stream", "5.0.0", streams::xgroup, "key group <id | $> [MKSTREAM] [ENTRIESREAD entries-read]", "Creates a consumer group.",
        complexity: "O(1)", keys: &[key(RW | INSERT, 2)];
    "xgroup|setid", -5, WRITE, (2, 2, 1), "stream", "5.0.0", streams::xgroup, "key group <id | $> [ENTRIESREAD entries-read]", "Sets the last delivered id of a consumer group.",
        complexity: "O(1)", keys: &[key(RW | UPDATE, 2)];
    "xgroup|destroy", 4, WRITE, (2, 2, 1), "stream", "5.0.0", streams::xgroup, "key group", "Destroys a consumer group.",
        complexity: "O(N), N the entries of its pending list.", keys: &[key(RW | DELETE, 2)];
    "xgroup|createconsumer", 5, WRITE | DENYOOM, (2, 2, 1), "stream", "6.2.0", streams::xgroup, "key group consumer", "Creates a consumer in a consumer group.",
        complexity: "O(1)", keys: &[key(RW | INSERT, 2)];
    "xgroup|delconsumer", 5, WRITE, (2, 2, 1), "stream", "5.0.0", streams::xgroup, "key group consumer", "Deletes a consumer from a consumer group.",
        complexity: "O(1)", keys: &[key(RW | DELETE, 2)];
    "xgroup|help", 2, LOADING | STALE, (0, 0, 0), "stream", "5.0.0", streams::xgroup, "", "Lists the XGROUP subcommands.",
        complexity: "O(1)";
];

/// XINFO's subcommands.
pub const XINFO_SUBCOMMANDS: &[Command] = commands![
    "xinfo|stream", -3, READONLY, (2, 2, 1), "stream", "5.0.0", streams::xinfo, "key [FULL [COUNT count]]", "Returns information about a stream.",
        complexity: "O(1); O(N) with FULL.", keys: &[key(RO | ACCESS, 2)];
    "xinfo|groups", 3, READONLY, (2, 2, 1), "stream", "5.0.0", streams::xinfo, "key", "Returns the consumer groups of a stream.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 2)];
    "xinfo|consumers", 4, READONLY, (2, 2, 1), "stream", "5.0.0", streams::xinfo, "key group", "Returns the consumers of a consumer group.",
        complexity: "O(1)", keys: &[key(RO | ACCESS, 2)], tips: &["nondeterministic_output"];
    "xinfo|help", 2, LOADING | STALE, (0, 0, 0), "stream", "5.0.0", streams::xinfo, "", "Lists the XINFO subcommands.",
        complexity: "O(1)";
];
