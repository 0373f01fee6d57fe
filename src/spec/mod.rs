//! What every layer may know about the commands without knowing the handlers: the command
//! table's rows and their lookup ([`command`]), key specs ([`keyspec`]), ACL categories
//! ([`categories`]), the exact error texts many commands share and the Redis version stmd
//! reports (docs/architecture.md, L0).

pub mod categories;
pub mod command;
pub mod keyspec;

pub use command::{lookup, rows, Binding, Command, CommandNames, Row, Stmd};

/// The exact error texts shared by many commands (handlers name them `err::…`).
pub mod errors {
    pub const SYNTAX: &str = "ERR syntax error";
    pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
    pub const NOT_FLOAT: &str = "ERR value is not a valid float";
    pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    pub const NOAUTH: &str = "NOAUTH Authentication required.";
    pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
    pub const NO_SUCH_KEY: &str = "ERR no such key";
    pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
    pub const NOT_IN_MULTI: &str = "ERR Command not allowed inside a transaction";
}

/// The Redis version stmd answers as (INFO `redis_version`, HELLO, LOLWUT, scripts'
/// `REDIS_VERSION`, the RDB files' `redis-ver`): Redis 7.2's replies plus every command Redis 7.4
/// added (hash-field expiry, HSCAN NOVALUES, CLIENT KILL MAXAGE, XREAD `+`), so a client that
/// enables 7.4's commands by this version finds them served.
pub const REDIS_VERSION: &str = "7.4.0";

/// The Redis modules whose commands stmd serves built in, with the module version each answers
/// as: MODULE LIST and INFO `modules` list them as Redis 8 lists its bundled modules, because
/// clients check there before they send a module's commands (redis-py's test gates, redisvl's and
/// redis-om's start-up checks). The versions are those of the Redis Stack that paired with
/// Redis 7.4, whose commands these are.
pub const BUILTIN_MODULES: &[(&str, u32)] = &[("ReJSON", 20800), ("search", 21005)];

/// `ERR wrong number of arguments for 'get' command`.
pub fn wrong_arity(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// An argument shown inside an error: at most `max` bytes, lossy UTF-8, no line breaks.
pub fn printable(arg: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&arg[..arg.len().min(max)]).replace(['\r', '\n'], " ")
}
