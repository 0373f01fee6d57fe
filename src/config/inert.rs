//! Redis options stmd accepts, checks and keeps, but does not act on: a redis.conf written for
//! Redis 7.2 starts stmd, and CONFIG GET answers these names (as tools such as redis-benchmark and
//! exporters ask). Each option has its Redis 7.2 kind (yes/no, enum, bounded integer, memory size,
//! string…) and flags, so CONFIG SET and the configuration file check a value as Redis does (same
//! bounds, same error texts, immutable options refused), store it normalised as Redis shows it
//! (a memory size in bytes, an enum in lower case), and CONFIG GET / CONFIG REWRITE show it. The
//! value changes nothing in stmd. A file that sets one to another value than its default gets a
//! warning at start-up: the option has no effect here.
//!
//! When stmd starts to honour one of these, its row moves to `config::PARAMS` (a unit test fails
//! while a name is in both tables).

use crate::config::{parse_memory, parse_yes_no};

/// Redis's `IMMUTABLE_CONFIG`: set by the configuration file only; CONFIG SET refuses it.
pub const IMMUTABLE: u8 = 1;
/// Redis's `PROTECTED_CONFIG`: CONFIG SET refuses it unless `enable-protected-configs` (which stmd
/// keeps at `no`).
pub const PROTECTED: u8 = 2;
/// Redis's `DEBUG_CONFIG`: kept for the record (it changes nothing in CONFIG GET/SET).
pub const DEBUG: u8 = 4;

/// What values an option takes, as Redis 7.2's `standardConfig` kinds.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// `yes` or `no`, any case; shown in lower case.
    Bool,
    /// A signed integer (Redis's int, long, long long, time_t) within `min..=max`.
    Int { min: i64, max: i64 },
    /// As `Int`, then brought within `lo..=hi` rather than refused (Redis's `hz`, a hint).
    IntClamped {
        min: i64,
        max: i64,
        lo: i64,
        hi: i64,
    },
    /// An unsigned integer (uint, size_t, unsigned long long) within `min..=max`; a memory size
    /// (`1mb`, `10k`…) when `memory`. A negative integer wraps and fails the bounds, as in Redis.
    UInt { min: u64, max: u64, memory: bool },
    /// One of the names (any case); names that share a number are one value, shown by the first.
    Enum(&'static [(&'static str, u8)]),
    /// Any string.
    Text,
    /// A string the function accepts (its error is Redis's reason).
    Checked(fn(&str) -> Result<(), String>),
    /// `oom-score-adj-values`: three integers within -2000..=2000, separated by single spaces.
    OomScoreAdjValues,
}

/// One inert option: its name, Redis's older name for it, its default, kind and flags.
#[derive(Debug)]
pub struct Inert {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub default: &'static str,
    pub kind: Kind,
    pub flags: u8,
}

const INT_MAX: i64 = i32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;

const fn row(name: &'static str, default: &'static str, kind: Kind, flags: u8) -> Inert {
    Inert {
        name,
        alias: None,
        default,
        kind,
        flags,
    }
}

const fn aliased(
    name: &'static str,
    alias: &'static str,
    default: &'static str,
    kind: Kind,
) -> Inert {
    Inert {
        name,
        alias: Some(alias),
        default,
        kind,
        flags: 0,
    }
}

const fn int(min: i64, max: i64) -> Kind {
    Kind::Int { min, max }
}

const fn memory(min: u64, max: u64) -> Kind {
    Kind::UInt {
        min,
        max,
        memory: true,
    }
}

const OOM_SCORE_ADJ: &[(&str, u8)] = &[("no", 0), ("yes", 1), ("relative", 1), ("absolute", 2)];
const REPL_DISKLESS_LOAD: &[(&str, u8)] = &[("disabled", 0), ("on-empty-db", 1), ("swapdb", 2)];
const SANITIZE_DUMP_PAYLOAD: &[(&str, u8)] = &[("no", 0), ("yes", 1), ("clients", 2)];
const PROTECTED_ACTION: &[(&str, u8)] = &[("no", 0), ("yes", 1), ("local", 2)];
const ENDPOINT_TYPE: &[(&str, u8)] = &[("ip", 0), ("hostname", 1), ("unknown-endpoint", 2)];
const PROPAGATION_ERROR: &[(&str, u8)] = &[("ignore", 0), ("panic", 1), ("panic-on-replicas", 2)];

/// Sorted by name. Kinds, bounds, defaults and flags are Redis 7.2's (`src/config.c`); the values
/// are Redis's defaults, which are also true of stmd (no AOF preamble choice, no replication
/// tuning, no cluster bus, one I/O thread).
pub static INERT: &[Inert] = &[
    row("active-defrag-cycle-max", "25", int(1, 99), 0),
    row("active-defrag-cycle-min", "1", int(1, 99), 0),
    row(
        "active-defrag-ignore-bytes",
        "104857600",
        memory(1, LONG_MAX as u64),
        0,
    ),
    row("active-defrag-max-scan-fields", "1000", int(1, LONG_MAX), 0),
    row("active-defrag-threshold-lower", "10", int(0, 1000), 0),
    row("active-defrag-threshold-upper", "100", int(0, 1000), 0),
    row("active-expire-effort", "1", int(1, 10), 0),
    row("activedefrag", "no", Kind::Bool, DEBUG),
    row("activerehashing", "yes", Kind::Bool, 0),
    row("always-show-logo", "no", Kind::Bool, IMMUTABLE),
    row("aof-disable-auto-gc", "no", Kind::Bool, 0),
    row("aof-rewrite-incremental-fsync", "yes", Kind::Bool, 0),
    row("aof-use-rdb-preamble", "yes", Kind::Bool, 0),
    row("aof_rewrite_cpulist", "", Kind::Text, IMMUTABLE),
    row("bgsave_cpulist", "", Kind::Text, IMMUTABLE),
    row("bind-source-addr", "", Kind::Text, 0),
    row("bio_cpulist", "", Kind::Text, IMMUTABLE),
    row("cluster-allow-pubsubshard-when-down", "yes", Kind::Bool, 0),
    row("cluster-allow-reads-when-down", "no", Kind::Bool, 0),
    row("cluster-allow-replica-migration", "yes", Kind::Bool, 0),
    row("cluster-announce-bus-port", "0", int(0, 65535), 0),
    row(
        "cluster-announce-hostname",
        "",
        Kind::Checked(check_hostname),
        0,
    ),
    row(
        "cluster-announce-human-nodename",
        "",
        Kind::Checked(check_nodename),
        0,
    ),
    row("cluster-announce-tls-port", "0", int(0, 65535), 0),
    row("cluster-config-file", "nodes.conf", Kind::Text, IMMUTABLE),
    row("cluster-link-sendbuf-limit", "0", memory(0, u64::MAX), 0),
    row("cluster-migration-barrier", "1", int(0, INT_MAX), 0),
    row("cluster-port", "0", int(0, 65535), IMMUTABLE),
    row(
        "cluster-preferred-endpoint-type",
        "ip",
        Kind::Enum(ENDPOINT_TYPE),
        0,
    ),
    aliased(
        "cluster-replica-no-failover",
        "cluster-slave-no-failover",
        "no",
        Kind::Bool,
    ),
    aliased(
        "cluster-replica-validity-factor",
        "cluster-slave-validity-factor",
        "10",
        int(0, INT_MAX),
    ),
    row("cluster-require-full-coverage", "yes", Kind::Bool, 0),
    row("crash-log-enabled", "yes", Kind::Bool, 0),
    row("crash-memcheck-enabled", "yes", Kind::Bool, 0),
    row("disable-thp", "yes", Kind::Bool, IMMUTABLE),
    row("dynamic-hz", "yes", Kind::Bool, 0),
    row(
        "enable-protected-configs",
        "no",
        Kind::Enum(PROTECTED_ACTION),
        IMMUTABLE,
    ),
    row(
        "hz",
        "10",
        Kind::IntClamped {
            min: 0,
            max: INT_MAX,
            lo: 1,
            hi: 500,
        },
        0,
    ),
    row("ignore-warnings", "", Kind::Text, 0),
    row("io-threads", "1", int(1, 128), DEBUG | IMMUTABLE),
    row("io-threads-do-reads", "no", Kind::Bool, DEBUG | IMMUTABLE),
    row("jemalloc-bg-thread", "yes", Kind::Bool, 0),
    row("lazyfree-lazy-eviction", "no", Kind::Bool, DEBUG),
    row("lazyfree-lazy-expire", "no", Kind::Bool, DEBUG),
    row("lazyfree-lazy-server-del", "no", Kind::Bool, DEBUG),
    row("lazyfree-lazy-user-del", "no", Kind::Bool, DEBUG),
    row("lazyfree-lazy-user-flush", "no", Kind::Bool, DEBUG),
    row("lfu-decay-time", "1", int(0, INT_MAX), 0),
    row("lfu-log-factor", "10", int(0, INT_MAX), 0),
    row("locale-collate", "", Kind::Checked(check_locale), 0),
    row("maxmemory-eviction-tenacity", "10", int(0, 100), 0),
    row("no-appendfsync-on-rewrite", "no", Kind::Bool, 0),
    row("oom-score-adj", "no", Kind::Enum(OOM_SCORE_ADJ), 0),
    row(
        "oom-score-adj-values",
        "0 200 800",
        Kind::OomScoreAdjValues,
        0,
    ),
    row(
        "proc-title-template",
        "{title} {listen-addr} {server-mode}",
        Kind::Checked(check_proc_title_template),
        0,
    ),
    row(
        "propagation-error-behavior",
        "ignore",
        Kind::Enum(PROPAGATION_ERROR),
        0,
    ),
    row("rdb-del-sync-files", "no", Kind::Bool, 0),
    row("rdb-save-incremental-fsync", "yes", Kind::Bool, 0),
    row("rdbchecksum", "yes", Kind::Bool, IMMUTABLE),
    row("rdbcompression", "yes", Kind::Bool, 0),
    row(
        "repl-backlog-ttl",
        "3600",
        Kind::Int {
            min: 0,
            max: LONG_MAX,
        },
        0,
    ),
    row("repl-disable-tcp-nodelay", "no", Kind::Bool, 0),
    row(
        "repl-diskless-load",
        "disabled",
        Kind::Enum(REPL_DISKLESS_LOAD),
        DEBUG,
    ),
    row("repl-diskless-sync", "yes", Kind::Bool, DEBUG),
    row("repl-diskless-sync-delay", "5", int(0, INT_MAX), 0),
    row("repl-diskless-sync-max-replicas", "0", int(0, INT_MAX), 0),
    aliased(
        "repl-ping-replica-period",
        "repl-ping-slave-period",
        "10",
        int(1, INT_MAX),
    ),
    row("replica-ignore-disk-write-errors", "no", Kind::Bool, 0),
    aliased(
        "replica-ignore-maxmemory",
        "slave-ignore-maxmemory",
        "yes",
        Kind::Bool,
    ),
    aliased("replica-lazy-flush", "slave-lazy-flush", "no", Kind::Bool),
    row(
        "sanitize-dump-payload",
        "no",
        Kind::Enum(SANITIZE_DUMP_PAYLOAD),
        DEBUG,
    ),
    row("server_cpulist", "", Kind::Text, IMMUTABLE),
    row("set-proc-title", "yes", Kind::Bool, IMMUTABLE),
    row(
        "socket-mark-id",
        "0",
        Kind::UInt {
            min: 0,
            max: u32::MAX as u64,
            memory: false,
        },
        IMMUTABLE,
    ),
    row(
        "stream-node-max-bytes",
        "4096",
        memory(0, LONG_MAX as u64),
        0,
    ),
    row("stream-node-max-entries", "100", int(0, LONG_MAX), 0),
    row("tls-cluster", "no", Kind::Bool, 0),
    row("tls-dh-params-file", "", Kind::Text, 0),
];

impl Inert {
    /// Checks a value as Redis's CONFIG SET does and returns it as CONFIG GET shows it, or Redis's
    /// reason for refusing it.
    pub fn parse(&self, value: &str) -> Result<String, String> {
        match self.kind {
            Kind::Bool => parse_yes_no(value).map(|b| if b { "yes" } else { "no" }.to_string()),
            Kind::Int { min, max } => parse_signed(value, min, max).map(|n| n.to_string()),
            Kind::IntClamped { min, max, lo, hi } => {
                parse_signed(value, min, max).map(|n| n.clamp(lo, hi).to_string())
            }
            Kind::UInt { min, max, memory } => {
                let n = if memory {
                    parse_memory(value)
                        .map_err(|_| "argument must be a memory value".to_string())?
                } else {
                    // A negative number wraps to a large unsigned one, as Redis's cast does.
                    parse_integer(value)? as u64
                };
                if n < min || n > max {
                    return Err(format!(
                        "argument must be between {min} and {max} inclusive"
                    ));
                }
                Ok(n.to_string())
            }
            Kind::Enum(names) => {
                let found = names
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(value))
                    .map(|(_, id)| *id);
                match found.and_then(|id| names.iter().find(|(_, n)| *n == id)) {
                    Some((shown, _)) => Ok(shown.to_string()),
                    None => {
                        let all: Vec<&str> = names.iter().map(|(name, _)| *name).collect();
                        Err(format!(
                            "argument(s) must be one of the following: {}",
                            all.join(", ")
                        ))
                    }
                }
            }
            Kind::Text => Ok(value.to_string()),
            Kind::Checked(check) => check(value).map(|()| value.to_string()),
            Kind::OomScoreAdjValues => parse_oom_score_adj_values(value),
        }
    }

    /// Whether CONFIG SET refuses the option, and Redis's reason.
    pub fn refusal(&self) -> Option<&'static str> {
        if self.flags & IMMUTABLE != 0 {
            Some("can't set immutable config")
        } else if self.flags & PROTECTED != 0 {
            Some("can't set protected config")
        } else {
            None
        }
    }

    /// Whether the option takes several words in a configuration file (Redis's
    /// `MULTI_ARG_CONFIG`); the others take exactly one.
    pub fn multi_arg(&self) -> bool {
        matches!(self.kind, Kind::OomScoreAdjValues)
    }
}

/// The row of a name or alias (lower case).
pub fn find(name: &str) -> Option<(usize, &'static Inert)> {
    INERT
        .iter()
        .enumerate()
        .find(|(_, i)| i.name == name || i.alias == Some(name))
}

/// The values of the inert options, in `INERT`'s order, as CONFIG GET shows them.
#[derive(Clone, Debug, PartialEq)]
pub struct InertValues(Vec<String>);

impl Default for InertValues {
    fn default() -> Self {
        InertValues(INERT.iter().map(|i| i.default.to_string()).collect())
    }
}

impl InertValues {
    pub fn get(&self, index: usize) -> &str {
        self.0.get(index).map_or("", String::as_str)
    }

    /// Stores a value already normalised by `Inert::parse`.
    pub fn set(&mut self, index: usize, value: String) {
        if let Some(slot) = self.0.get_mut(index) {
            *slot = value;
        }
    }
}

/// An integer as Redis's `string2ll` reads it (no sign but `-`, no spaces, no leading zeros).
fn parse_integer(value: &str) -> Result<i64, String> {
    crate::protocol::parse_i64_strict(value.as_bytes())
        .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())
}

fn parse_signed(value: &str, min: i64, max: i64) -> Result<i64, String> {
    let n = parse_integer(value)?;
    if n < min || n > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(n)
}

/// Three integers separated by single spaces (two spaces make an empty word, read as 0, as
/// Redis's `strtoll` does), each within -2000..=2000; shown as three plain numbers.
fn parse_oom_score_adj_values(value: &str) -> Result<String, String> {
    const RANGE: &str = "Invalid oom-score-adj-values, elements must be between -2000 and 2000.";
    let words: Vec<&str> = if value.is_empty() {
        Vec::new()
    } else {
        value.split(' ').collect()
    };
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let mut numbers = Vec::with_capacity(3);
    for word in words {
        let n = strtoll_whole(word).ok_or(RANGE)?;
        if !(-2000..=2000).contains(&n) {
            return Err(RANGE.into());
        }
        numbers.push(n.to_string());
    }
    Ok(numbers.join(" "))
}

/// C's `strtoll(word, &end, 10)` with `*end == '\0'` required: leading whitespace and a sign are
/// allowed, an empty word is 0; None when anything follows the digits.
fn strtoll_whole(word: &str) -> Option<i64> {
    let text = word.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() {
        // No digits: strtoll stops at the word's start, which is its end only for "".
        return word.is_empty().then_some(0);
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Saturates as strtoll does; any such value is out of range anyway.
    let magnitude: i64 = digits.parse().unwrap_or(i64::MAX);
    Some(if negative { -magnitude } else { magnitude })
}

/// `cluster-announce-hostname`: Redis's length and character checks (empty: none).
fn check_hostname(value: &str) -> Result<(), String> {
    if value.len() >= 256 {
        return Err("Hostnames must be less than 256 characters".into());
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into());
    }
    Ok(())
}

/// `cluster-announce-human-nodename` (Redis 7.2): none of the characters Redis keeps out of a
/// node's auxiliary fields.
fn check_nodename(value: &str) -> Result<(), String> {
    const INVALID: &[u8] = b"!#$%&()*+;<>?@[]^{|}~";
    if value
        .bytes()
        .any(|b| !b.is_ascii_alphanumeric() && INVALID.contains(&b))
    {
        return Err("Announced human node name contained invalid character".into());
    }
    Ok(())
}

/// `locale-collate` (Redis 7.2): a locale the system knows ("" is the environment's).
fn check_locale(value: &str) -> Result<(), String> {
    const INVALID: &str = "Invalid locale name";
    let name = std::ffi::CString::new(value).map_err(|_| INVALID.to_string())?;
    // SAFETY: newlocale reads the NUL-terminated name and returns a new locale object (or null),
    // touching no global state; the object is freed at once.
    unsafe {
        let locale = libc::newlocale(libc::LC_COLLATE_MASK, name.as_ptr(), std::ptr::null_mut());
        if locale.is_null() {
            return Err(INVALID.into());
        }
        libc::freelocale(locale);
    }
    Ok(())
}

/// `proc-title-template`: Redis's template syntax (`{name}` variables, `{{` a brace) with its
/// variables only, and a title that is not empty once expanded.
fn check_proc_title_template(value: &str) -> Result<(), String> {
    const INVALID: &str = "template format is invalid or contains unknown variables";
    // What each variable may expand to when the check runs: only emptiness matters.
    let expand = |name: &str| match name {
        "title" | "server-mode" | "config-file" | "unixsocket" => Some(""),
        "listen-addr" | "port" | "tls-port" => Some("x"),
        _ => None,
    };
    let mut out = String::new();
    let mut rest = value;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if after.is_empty() {
            return Err(INVALID.into());
        }
        if let Some(quoted) = after.strip_prefix('{') {
            out.push('{');
            rest = quoted;
            continue;
        }
        let close = after.find('}').ok_or(INVALID)?;
        out.push_str(expand(&after[..close]).ok_or(INVALID)?);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    if out.trim_matches(' ').is_empty() {
        return Err(INVALID.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, value: &str) -> Result<String, String> {
        find(name).expect("an inert option").1.parse(value)
    }

    #[test]
    fn booleans_take_yes_or_no_in_any_case() {
        assert_eq!(parse("lazyfree-lazy-eviction", "YES").as_deref(), Ok("yes"));
        assert_eq!(parse("activerehashing", "No").as_deref(), Ok("no"));
        assert_eq!(
            parse("activerehashing", "1"),
            Err("argument must be 'yes' or 'no'".into())
        );
    }

    #[test]
    fn integers_are_checked_as_redis_string2ll_and_bounds() {
        assert_eq!(parse("lfu-log-factor", "7").as_deref(), Ok("7"));
        for bad in [
            "",
            "+5",
            "05",
            " 5",
            "5 ",
            "1.5",
            "abc",
            "99999999999999999999",
        ] {
            assert_eq!(
                parse("lfu-log-factor", bad),
                Err("argument couldn't be parsed into an integer".into()),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse("active-defrag-cycle-max", "100"),
            Err("argument must be between 1 and 99 inclusive".into())
        );
        assert_eq!(
            parse("repl-backlog-ttl", "-1"),
            Err("argument must be between 0 and 9223372036854775807 inclusive".into())
        );
        assert_eq!(
            parse("repl-ping-slave-period", "0"),
            Err("argument must be between 1 and 2147483647 inclusive".into())
        );
        assert_eq!(
            parse("socket-mark-id", "-1"),
            Err("argument must be between 0 and 4294967295 inclusive".into()),
            "a negative unsigned wraps"
        );
    }

    #[test]
    fn hz_is_brought_within_1_to_500() {
        assert_eq!(parse("hz", "0").as_deref(), Ok("1"));
        assert_eq!(parse("hz", "1000").as_deref(), Ok("500"));
        assert_eq!(parse("hz", "20").as_deref(), Ok("20"));
        assert!(parse("hz", "-1").is_err());
    }

    #[test]
    fn memory_sizes_read_back_in_bytes() {
        assert_eq!(
            parse("stream-node-max-bytes", "1mb").as_deref(),
            Ok("1048576")
        );
        assert_eq!(parse("stream-node-max-bytes", "2K").as_deref(), Ok("2000"));
        assert_eq!(parse("stream-node-max-bytes", "").as_deref(), Ok("0"));
        assert_eq!(parse("stream-node-max-bytes", "0010").as_deref(), Ok("10"));
        for bad in ["-1", "1zb", " 5", "5 ", "1.5mb"] {
            assert_eq!(
                parse("stream-node-max-bytes", bad),
                Err("argument must be a memory value".into()),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse("active-defrag-ignore-bytes", "0"),
            Err("argument must be between 1 and 9223372036854775807 inclusive".into())
        );
        assert_eq!(
            parse("cluster-link-sendbuf-limit", "18446744073709551615").as_deref(),
            Ok("18446744073709551615")
        );
    }

    #[test]
    fn enums_show_the_first_name_of_a_value() {
        assert_eq!(
            parse("repl-diskless-load", "SWAPDB").as_deref(),
            Ok("swapdb")
        );
        assert_eq!(parse("oom-score-adj", "relative").as_deref(), Ok("yes"));
        assert_eq!(
            parse("oom-score-adj", "yes no"),
            Err("argument(s) must be one of the following: no, yes, relative, absolute".into())
        );
    }

    #[test]
    fn special_strings() {
        assert_eq!(
            parse("oom-score-adj-values", "01 +2 3").as_deref(),
            Ok("1 2 3")
        );
        assert_eq!(
            parse("oom-score-adj-values", "1  2").as_deref(),
            Ok("1 0 2")
        );
        assert_eq!(
            parse("oom-score-adj-values", "1 2"),
            Err("wrong number of arguments".into())
        );
        assert!(parse("oom-score-adj-values", "a b c").is_err());
        assert!(parse("oom-score-adj-values", "-2001 0 0").is_err());
        assert!(parse("proc-title-template", "{title} {port}").is_ok());
        assert!(parse("proc-title-template", "{bogus}").is_err());
        assert!(parse("proc-title-template", "{title}").is_err(), "empty");
        assert!(parse("proc-title-template", "").is_err());
        assert!(parse("proc-title-template", "a {{ b").is_ok());
        assert!(parse("proc-title-template", "a {").is_err());
        assert!(parse("cluster-announce-hostname", "a_b").is_err());
        assert!(parse("cluster-announce-hostname", "node-1.example").is_ok());
        assert!(parse("cluster-announce-human-nodename", "node 1_a").is_ok());
        assert!(parse("cluster-announce-human-nodename", "a@b").is_err());
        assert!(parse("locale-collate", "").is_ok());
        assert!(parse("locale-collate", "C").is_ok());
        assert!(parse("locale-collate", "no_such_LOCALE").is_err());
    }

    #[test]
    fn immutables_are_refused_and_aliases_share_a_row() {
        for name in [
            "io-threads",
            "rdbchecksum",
            "cluster-port",
            "enable-protected-configs",
        ] {
            assert_eq!(
                find(name).expect("row").1.refusal(),
                Some("can't set immutable config")
            );
        }
        assert_eq!(find("hz").expect("row").1.refusal(), None);
        assert_eq!(
            find("slave-lazy-flush").map(|(i, _)| i),
            find("replica-lazy-flush").map(|(i, _)| i)
        );
        for row in INERT {
            assert_eq!(
                row.parse(row.default).as_deref(),
                Ok(row.default),
                "{}'s default is a value it takes, as shown",
                row.name
            );
        }
    }
}
