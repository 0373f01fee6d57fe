//! The configuration file: redis.conf syntax (one directive per line, `#` comments, Redis's
//! quoting, `include`), turned into the same flags the command line takes, so every setting is
//! parsed and checked by one parser. Precedence: file < `STMD_*` environment < command-line flags.
//! `CONFIG REWRITE` writes the current settings back into the file, keeping its comments.

use crate::config::inert::INERT;
use crate::config::{Config, PARAMS};
use clap::{CommandFactory, FromArgMatches};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// One directive of a file: its name (lower case), its arguments, and where it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Directive {
    pub name: String,
    pub args: Vec<String>,
    pub file: PathBuf,
    pub line_no: usize,
    pub line: String,
}

/// Includes nested deeper than this are refused (an include loop would never end).
const MAX_INCLUDE_DEPTH: usize = 16;

/// Directives that may be repeated, each line adding to the setting rather than replacing it.
const ACCUMULATING: &[&str] = &["client-output-buffer-limit", "save"];

/// Redis's `loglevel` names, as `tracing` filters; anything else is taken as a tracing filter.
fn log_level_from_redis(level: &str) -> String {
    crate::config::log_level_filter(level)
        .map(str::to_string)
        .unwrap_or_else(|_| level.to_string())
}

/// Splits a line into arguments as redis.conf does: whitespace separates; `"…"` takes the escapes
/// `\n \r \t \b \a \\ \" \xHH`; `'…'` takes `\'`; a closing quote must end the argument.
pub fn split_args(line: &str) -> Result<Vec<String>, String> {
    const UNBALANCED: &str = "Unbalanced quotes in configuration line";
    let bytes = line.as_bytes();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() {
            return Ok(args);
        }
        let mut current: Vec<u8> = Vec::new();
        let mut quote: Option<u8> = None;
        loop {
            let Some(&c) = bytes.get(i) else {
                if quote.is_some() {
                    return Err(UNBALANCED.into());
                }
                break;
            };
            match quote {
                Some(b'"') if c == b'\\' && i + 1 < bytes.len() => {
                    let next = bytes[i + 1];
                    let hex = bytes.get(i + 2..i + 4).and_then(|h| {
                        std::str::from_utf8(h)
                            .ok()
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                    });
                    match (next, hex) {
                        (b'x', Some(value)) => {
                            current.push(value);
                            i += 4;
                            continue;
                        }
                        (b'n', _) => current.push(b'\n'),
                        (b'r', _) => current.push(b'\r'),
                        (b't', _) => current.push(b'\t'),
                        (b'b', _) => current.push(8),
                        (b'a', _) => current.push(7),
                        (other, _) => current.push(other),
                    }
                    i += 2;
                    continue;
                }
                Some(b'\'') if c == b'\\' && bytes.get(i + 1) == Some(&b'\'') => {
                    current.push(b'\'');
                    i += 2;
                    continue;
                }
                Some(q) if c == q => {
                    // The closing quote must be followed by a space or the end of the line.
                    if bytes.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
                        return Err(UNBALANCED.into());
                    }
                    i += 1;
                    break;
                }
                Some(_) => current.push(c),
                None if c.is_ascii_whitespace() => break,
                None if c == b'"' || c == b'\'' => quote = Some(c),
                None => current.push(c),
            }
            i += 1;
        }
        args.push(String::from_utf8_lossy(&current).into_owned());
    }
}

/// Reads a file and the files it includes, in order. `include` takes a path or a glob in its last
/// component (`include /etc/stmd/conf.d/*.conf`), as Redis 7 does.
pub fn read(path: &Path) -> Result<Vec<Directive>, String> {
    let mut out = Vec::new();
    read_into(path, 0, &mut out)?;
    Ok(out)
}

fn read_into(path: &Path, depth: usize, out: &mut Vec<Directive>) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "Fatal error, can't open config file '{}': {e}",
            path.display()
        )
    })?;
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fail = |why: &str| fatal(path, index + 1, line, why);
        let mut args = split_args(line).map_err(|why| fail(&why))?;
        if args.is_empty() {
            continue;
        }
        let name = args.remove(0).to_ascii_lowercase();
        if name == "include" {
            if args.len() != 1 {
                return Err(fail("Bad directive or wrong number of arguments"));
            }
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(fail("Includes nested too deep (an include loop?)"));
            }
            for included in expand_include(&args[0]).map_err(|why| fail(&why))? {
                read_into(&included, depth + 1, out)?;
            }
            continue;
        }
        out.push(Directive {
            name,
            args,
            file: path.to_path_buf(),
            line_no: index + 1,
            line: line.to_string(),
        });
    }
    Ok(())
}

/// The files an `include` names: the path itself, or the sorted matches of a glob in its last
/// component (no match is not an error, as in Redis).
fn expand_include(pattern: &str) -> Result<Vec<PathBuf>, String> {
    let path = Path::new(pattern);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?', '[']) {
        return Ok(vec![path.to_path_buf()]);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let entries =
        std::fs::read_dir(&dir).map_err(|e| format!("Cannot read '{}': {e}", dir.display()))?;
    let mut matches: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            crate::glob::matches(
                name.as_bytes(),
                entry.file_name().to_string_lossy().as_bytes(),
                false,
            )
        })
        .map(|entry| entry.path())
        .filter(|p| p.is_file())
        .collect();
    matches.sort();
    Ok(matches)
}

/// Redis's start-up error for a bad configuration line, naming the file and the line.
fn fatal(file: &Path, line_no: usize, line: &str, why: &str) -> String {
    format!(
        "\n*** FATAL CONFIG FILE ERROR (stmd) ***\nReading the configuration file {}, at line {line_no}\n>>> '{line}'\n{why}",
        file.display()
    )
}

/// Builds the configuration from the process's arguments: `stmd [config-file] [--flag value]…`.
/// clap's own errors, `--help` and `--version` exit the process as `Config::parse` does.
pub fn load(args: impl IntoIterator<Item = OsString>) -> Result<Config, String> {
    load_with_env(args, |name| std::env::var_os(name).is_some())
}

fn load_with_env(
    args: impl IntoIterator<Item = OsString>,
    env_is_set: impl Fn(&str) -> bool,
) -> Result<Config, String> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let program = if args.is_empty() {
        OsString::from("stmd")
    } else {
        args.remove(0)
    };
    let file = match args.first() {
        Some(first) if !first.to_string_lossy().starts_with('-') => {
            Some(PathBuf::from(args.remove(0)))
        }
        _ => None,
    };
    let mut argv = vec![program];
    let mut warnings = Vec::new();
    let mut inert = crate::config::inert::InertValues::default();
    if let Some(file) = &file {
        for directive in merge_accumulating(read(file)?) {
            match flags_for(&directive, &env_is_set)? {
                Flags::Set(flags) => argv.extend(flags.into_iter().map(OsString::from)),
                Flags::Inert(index, value) => {
                    if value != INERT[index].default {
                        warnings.push(format!(
                            "{}:{}: '{}' is accepted for Redis compatibility and has no effect in stmd (it is kept as '{value}', shown by CONFIG GET)",
                            directive.file.display(),
                            directive.line_no,
                            directive.name
                        ));
                    }
                    inert.set(index, value);
                }
                Flags::None => {}
            }
        }
    }
    argv.extend(args);
    let matches = Config::command()
        .args_override_self(true)
        .try_get_matches_from(argv)
        .unwrap_or_else(|e| e.exit());
    let mut config = Config::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    config.config_file = file.map(|file| std::path::absolute(&file).unwrap_or(file));
    config.config_warnings = warnings;
    config.inert = inert;
    Ok(config)
}

/// Lines of an accumulating directive become one directive with all their arguments.
fn merge_accumulating(directives: Vec<Directive>) -> Vec<Directive> {
    let mut out: Vec<Directive> = Vec::with_capacity(directives.len());
    for directive in directives {
        let earlier = out
            .iter_mut()
            .find(|d| d.name == directive.name && ACCUMULATING.contains(&d.name.as_str()));
        match earlier {
            // `save ""` clears the rules before it, as in Redis.
            Some(earlier) if directive.args == [""] => earlier.args = directive.args,
            Some(earlier) => earlier.args.extend(directive.args),
            None => out.push(directive),
        }
    }
    out
}

enum Flags {
    /// Command-line tokens for the directive.
    Set(Vec<String>),
    /// A Redis option stmd checks and keeps without acting on it: its row and its value.
    Inert(usize, String),
    /// Nothing to do (an ignored option at its value, or overridden by the environment).
    None,
}

/// Turns one directive into the flags the command line would take, checking it on its own so an
/// error names its line.
fn flags_for(directive: &Directive, env_is_set: &impl Fn(&str) -> bool) -> Result<Flags, String> {
    let fail = |why: &str| fatal(&directive.file, directive.line_no, &directive.line, why);
    let (name, args): (&str, Vec<String>) = match directive.name.as_str() {
        "loglevel" => (
            "log-level",
            directive
                .args
                .iter()
                .map(|a| log_level_from_redis(a))
                .collect(),
        ),
        "bind" => (
            "bind",
            bind_address(&directive.args).map_err(|why| fail(&why))?,
        ),
        // Redis's older names (`slaveof`, `hash-max-ziplist-entries`…): a setting's aliases.
        other => (setting_named(other), directive.args.clone()),
    };
    let command = Config::command();
    let Some(arg) = command.get_arguments().find(|a| a.get_long() == Some(name)) else {
        let Some((index, row)) = crate::config::inert::find(name) else {
            return Err(fail("Bad directive or wrong number of arguments"));
        };
        // As Redis: one argument, unless the option takes several words.
        if !row.multi_arg() && directive.args.len() != 1 {
            return Err(fail("wrong number of arguments"));
        }
        let value = row
            .parse(&directive.args.join(" "))
            .map_err(|why| fail(&why))?;
        return Ok(Flags::Inert(index, value));
    };
    if arg
        .get_env()
        .is_some_and(|env| env_is_set(&env.to_string_lossy()))
    {
        return Ok(Flags::None);
    }
    let flag = format!("--{name}");
    let tokens = if !arg.get_action().takes_values() {
        match args.as_slice() {
            [v] if v.eq_ignore_ascii_case("yes") => vec![flag],
            [v] if v.eq_ignore_ascii_case("no") => vec![],
            _ => return Err(fail("argument must be 'yes' or 'no'")),
        }
    } else if arg.get_num_args().is_some_and(|n| n.min_values() > 1) {
        let wanted = arg.get_num_args().map_or(1, |n| n.min_values());
        if args.len() != wanted {
            return Err(fail("Bad directive or wrong number of arguments"));
        }
        std::iter::once(flag).chain(args).collect()
    } else {
        if args.is_empty() {
            return Err(fail("Bad directive or wrong number of arguments"));
        }
        vec![flag, args.join(" ")]
    };
    // Check the directive alone, so that a bad value is reported with its line.
    Config::command()
        .args_override_self(true)
        .try_get_matches_from(std::iter::once("stmd".to_string()).chain(tokens.iter().cloned()))
        .map_err(|e| fail(first_line(&e.to_string())))?;
    Ok(Flags::Set(tokens))
}

/// The setting a directive's name is an alias of (its first name, which is its flag's), or the
/// name itself.
fn setting_named(name: &str) -> &str {
    PARAMS
        .iter()
        .filter_map(|p| p.names.split_first())
        .find(|(_, aliases)| aliases.contains(&name))
        .map_or(name, |(first, _)| first)
}

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or(text);
    line.strip_prefix("error: ").unwrap_or(line)
}

/// `bind` takes several addresses in Redis; stmd listens on one. The first is used; further ones
/// must be optional (Redis's `-` prefix) and are skipped. `*` is every IPv4 address.
fn bind_address(args: &[String]) -> Result<Vec<String>, String> {
    let Some((first, rest)) = args.split_first() else {
        return Err("Bad directive or wrong number of arguments".into());
    };
    if let Some(required) = rest.iter().find(|a| !a.starts_with('-')) {
        return Err(format!(
            "stmd listens on one address: put '{required}' first or mark it optional with '-'"
        ));
    }
    let address = first.trim_start_matches('-');
    Ok(vec![if address == "*" {
        "0.0.0.0".to_string()
    } else {
        address.to_string()
    }])
}

/// The file directive a CONFIG parameter is written back under, if it has one: a parameter that is
/// also a flag, or `loglevel`. (`database` only shows where rows go; it is not a directive.)
fn rewritable(name: &str) -> bool {
    name == "loglevel"
        || Config::command()
            .get_arguments()
            .any(|a| a.get_long() == Some(name))
}

/// A redis.conf line: `replicaof` takes its host and port as two arguments, as Redis writes it;
/// any other value is one argument.
fn directive(name: &str, value: &str) -> String {
    if name == "replicaof" {
        format!("{name} {value}")
    } else {
        format!("{name} {}", quote(value))
    }
}

/// A value as one redis.conf argument list: plain words stay as they are; anything else is quoted.
fn quote(value: &str) -> String {
    let plain = !value.is_empty()
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.contains("  ")
        && value
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\'' && b != b'\\' || b == b' ');
    if plain {
        return value.to_string();
    }
    quote_always(value)
}

/// A value as one double-quoted redis.conf argument, with Redis's escapes.
fn quote_always(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The text of `file` rewritten with `config`'s settings, as CONFIG REWRITE does: the first line of
/// each parameter gets its current value, later lines of it go, comments and other lines stay, and
/// parameters that differ from their defaults and had no line are appended at the end.
pub fn rewritten(original: &str, config: &Config) -> String {
    const MARKER: &str = "# Generated by CONFIG REWRITE";
    let defaults = Config::default();
    // (name, alias, line, changed): stmd's parameters, then the inert Redis options (whose lines
    // under their alias are theirs too, rewritten under the name, as Redis does).
    let mut params: Vec<(&str, Option<&str>, String, bool)> = PARAMS
        .iter()
        .filter_map(|p| Some((*p.names.first()?, p)))
        .filter(|(name, _)| rewritable(name))
        .map(|(name, p)| {
            let value = (p.get)(config);
            let changed = value != (p.get)(&defaults);
            (name, None, directive(name, &value), changed)
        })
        .collect();
    params.extend(INERT.iter().enumerate().map(|(index, row)| {
        let value = config.inert.get(index);
        // An option of one argument keeps a value with spaces in one quoted word.
        let line = match row.multi_arg() || !value.contains(' ') {
            true => directive(row.name, value),
            false => format!("{} {}", row.name, quote_always(value)),
        };
        (row.name, row.alias, line, value != row.default)
    }));
    let mut written: Vec<&str> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for raw in original.lines() {
        let name = split_args(raw.trim())
            .ok()
            .filter(|_| !raw.trim_start().starts_with('#'))
            .and_then(|args| args.into_iter().next())
            .map(|n| n.to_ascii_lowercase());
        let param = name
            .as_deref()
            .map(|n| if n == "log-level" { "loglevel" } else { n })
            .and_then(|n| params.iter().find(|p| p.0 == n || p.1 == Some(n)));
        match param {
            // A cluster node's primary is the cluster's to say, not the file's (as Redis: the
            // line is removed).
            Some(p) if p.0 == "replicaof" && config.cluster_enabled => {}
            Some(p) if written.contains(&p.0) => {}
            Some(p) => {
                written.push(p.0);
                lines.push(p.2.clone());
            }
            None => lines.push(raw.to_string()),
        }
    }
    let mut appended = Vec::new();
    for (name, _, line, changed) in &params {
        let cluster_primary = *name == "replicaof" && config.cluster_enabled;
        if !written.contains(name) && *changed && !cluster_primary {
            appended.push(line.clone());
        }
    }
    if !appended.is_empty() {
        if !lines.iter().any(|l| l == MARKER) {
            lines.push(MARKER.to_string());
        }
        lines.extend(appended);
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// CONFIG REWRITE: replaces the file atomically (a temporary file renamed over it).
pub fn rewrite(file: &Path, config: &Config) -> std::io::Result<()> {
    let original = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let text = rewritten(&original, config);
    let mut temp = file.as_os_str().to_owned();
    temp.push(".rewrite.tmp");
    let temp = PathBuf::from(temp);
    {
        use std::io::Write;
        let mut out = std::fs::File::create(&temp)?;
        out.write_all(text.as_bytes())?;
        out.sync_all()?;
    }
    std::fs::rename(&temp, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        split_args(line).expect("splits")
    }

    #[test]
    fn lines_split_as_redis_conf_does() {
        assert_eq!(args("  port   7000 "), ["port", "7000"]);
        assert_eq!(
            args(r#"requirepass "a b\"c\x41\n""#),
            ["requirepass", "a b\"cA\n"]
        );
        assert_eq!(args(r"name 'it\'s' x"), ["name", "it's", "x"]);
        assert_eq!(args(r#"save """#), ["save", ""]);
        assert_eq!(
            args(r#"a"b c" d"#),
            ["ab c", "d"],
            "a quote inside a word opens a quoted part"
        );
        for bad in [r#"x "open"#, r#"x "a"b"#, "x 'a'b", "x 'open"] {
            assert!(split_args(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn quoting_round_trips_through_the_splitter() {
        for value in [
            "plain",
            "normal 0 0 0",
            "",
            "a  b",
            " lead",
            "q\"uote",
            "back\\slash",
            "tab\tnl\n",
            "caf\u{e9}",
        ] {
            let line = format!("name {}", quote(value));
            // The reader joins a directive's arguments with one space, so that is the round trip.
            assert_eq!(args(&line)[1..].join(" "), value, "{line}");
        }
    }

    fn load_file(text: &str, extra: &[&str], env: &[&str]) -> Result<Config, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("stmd.conf");
        std::fs::write(&path, text).expect("write");
        let mut argv: Vec<OsString> = vec!["stmd".into(), path.into_os_string()];
        argv.extend(extra.iter().map(OsString::from));
        load_with_env(argv, |name| env.contains(&name))
    }

    #[test]
    fn save_lines_accumulate_and_an_empty_one_clears_them() {
        let rules = |text: &str| load_file(text, &[], &[]).expect("loads").save.to_string();
        assert_eq!(rules("save 900 1\nsave 300 10\n"), "900 1 300 10");
        assert_eq!(rules("save 900 1\nsave \"\"\nsave 60 5\n"), "60 5");
        assert_eq!(rules("save 900 1\nsave \"\"\n"), "");
        assert_eq!(rules("dbfilename snap.rdb\n"), "");
        assert!(load_file("save 900\n", &[], &[]).is_err(), "an odd count");
        assert!(
            load_file("dbfilename a/b.rdb\n", &[], &[]).is_err(),
            "a path"
        );
    }

    #[test]
    fn a_file_sets_flags_with_units_booleans_and_redis_names() {
        let c = load_file(
            "# comment\nport 7001\nmaxmemory 2mb\nprotected-mode no\nno-database yes\nloglevel warning\n\
             client-output-buffer-limit pubsub 1mb 512kb 10\nclient-output-buffer-limit normal 0 0 0\n\
             appendonly no\nrename-command FLUSHALL \"\"\n",
            &[],
            &[],
        )
        .expect("loads");
        assert_eq!(
            (c.port, c.maxmemory, c.protected_mode),
            (7001, 2 * 1024 * 1024, false)
        );
        assert!(c.no_database);
        assert_eq!(c.log_level, "warn");
        assert_eq!(c.client_output_buffer_limit.pubsub.hard, 1024 * 1024);
        assert_eq!(c.rename_command, ["FLUSHALL", ""]);
        assert!(c.config_warnings.is_empty());
    }

    #[test]
    fn cluster_directives_set_the_cluster_flags() {
        let c = load_file(
            "cluster-enabled yes\ncluster-announce-ip 127.0.0.2\ncluster-announce-port 7001\ncluster-node-timeout 5000\n",
            &[],
            &[],
        )
        .expect("loads");
        assert!(c.cluster_enabled);
        assert_eq!(c.cluster_announce_ip.as_deref(), Some("127.0.0.2"));
        assert_eq!(
            (c.cluster_announce_port, c.cluster_node_timeout),
            (7001, 5000)
        );
        assert!(c.config_warnings.is_empty(), "{:?}", c.config_warnings);
        let c =
            load_file("cluster-enabled no\n", &["--cluster-enabled", "yes"], &[]).expect("loads");
        assert!(c.cluster_enabled, "the flag beats the file");
        assert!(load_file("cluster-node-timeout 0\n", &[], &[]).is_err());
    }

    #[test]
    fn flags_beat_the_environment_which_beats_the_file() {
        let c = load_file("port 7001\ntimeout 5\n", &["--port", "7002"], &[]).expect("loads");
        assert_eq!((c.port, c.timeout), (7002, 5));
        let c = load_file("timeout 5\n", &[], &["STMD_TIMEOUT"]).expect("loads");
        assert_eq!(
            c.timeout, 0,
            "the file's value gives way to the environment's"
        );
    }

    #[test]
    fn bad_lines_are_errors_naming_the_line() {
        let e = load_file("port 7001\nno-such-option 1\n", &[], &[]).expect_err("refused");
        assert!(
            e.contains("at line 2") && e.contains("no-such-option 1"),
            "{e}"
        );
        let e = load_file("\n\nmaxmemory lots\n", &[], &[]).expect_err("refused");
        assert!(e.contains("at line 3"), "{e}");
        let e = load_file("port \"7001\n", &[], &[]).expect_err("refused");
        assert!(e.contains("Unbalanced quotes"), "{e}");
        let e = load_file("protected-mode maybe\n", &[], &[]).expect_err("refused");
        assert!(e.contains("at line 1"), "{e}");
    }

    #[test]
    fn ignored_redis_options_warn_only_when_set_to_something_else() {
        let c =
            load_file("save \"\"\nlazyfree-lazy-eviction yes\nhz 10\n", &[], &[]).expect("loads");
        assert_eq!(c.config_warnings.len(), 1, "{:?}", c.config_warnings);
        assert!(c.config_warnings[0].contains("lazyfree-lazy-eviction"));
    }

    #[test]
    fn inert_options_are_checked_and_kept() {
        let value = |c: &Config, name: &str| {
            let (index, _) = crate::config::inert::find(name).expect("inert");
            c.inert.get(index).to_string()
        };
        let c = load_file(
            "hz 1000\nstream-node-max-bytes 1mb\nREPL-DISKLESS-LOAD SwapDB\nslave-lazy-flush YES\n\
             oom-score-adj-values 1 2 3\nbind-source-addr \"a b\"\n",
            &[],
            &[],
        )
        .expect("loads");
        assert_eq!(value(&c, "hz"), "500");
        assert_eq!(value(&c, "stream-node-max-bytes"), "1048576");
        assert_eq!(value(&c, "repl-diskless-load"), "swapdb");
        assert_eq!(value(&c, "replica-lazy-flush"), "yes");
        assert_eq!(value(&c, "oom-score-adj-values"), "1 2 3");
        assert_eq!(value(&c, "bind-source-addr"), "a b");
        assert_eq!(c.config_warnings.len(), 6, "{:?}", c.config_warnings);
        for (text, why) in [
            ("\nhz abc\n", "argument couldn't be parsed into an integer"),
            (
                "\nactive-defrag-cycle-max 100\n",
                "argument must be between 1 and 99 inclusive",
            ),
            ("\nactivedefrag maybe\n", "argument must be 'yes' or 'no'"),
            (
                "\nstream-node-max-bytes 1zb\n",
                "argument must be a memory value",
            ),
            ("\nhz 1 2\n", "wrong number of arguments"),
            ("\noom-score-adj-values 1 2\n", "wrong number of arguments"),
            (
                "\noom-score-adj sometimes\n",
                "argument(s) must be one of the following: no, yes, relative, absolute",
            ),
        ] {
            let e = load_file(text, &[], &[]).expect_err("refused");
            assert!(e.contains("at line 2") && e.ends_with(why), "{text}: {e}");
        }
        // Immutable options are set by the file.
        let c = load_file("io-threads 4\n", &[], &[]).expect("loads");
        assert_eq!(value(&c, "io-threads"), "4");
        // CONFIG REWRITE writes them back, under their name, quoted when one word has spaces.
        let c =
            load_file("slave-lazy-flush yes\nbind-source-addr \"a b\"\n", &[], &[]).expect("loads");
        let text = rewritten("slave-lazy-flush yes\nhz 10\n", &c);
        assert_eq!(
            text,
            "replica-lazy-flush yes\nhz 10\n# Generated by CONFIG REWRITE\nbind-source-addr \"a b\"\n"
        );
        assert_eq!(
            rewritten(&text, &c),
            text,
            "a second rewrite changes nothing"
        );
    }

    #[test]
    fn includes_are_read_in_place_with_globs() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("conf.d")).expect("mkdir");
        std::fs::write(dir.path().join("conf.d/a.conf"), "timeout 7\n").expect("write");
        std::fs::write(
            dir.path().join("conf.d/b.conf"),
            "timeout 8\nmaxclients 9\n",
        )
        .expect("write");
        let main = dir.path().join("stmd.conf");
        std::fs::write(
            &main,
            format!(
                "timeout 1\ninclude {}/conf.d/*.conf\nmaxclients 10\n",
                dir.path().display()
            ),
        )
        .expect("write");
        let c = load_with_env(vec!["stmd".into(), main.clone().into_os_string()], |_| {
            false
        })
        .expect("loads");
        assert_eq!(
            (c.timeout, c.maxclients),
            (8, 10),
            "later lines win, includes in place"
        );
        std::fs::write(&main, format!("include {}\n", main.display())).expect("write");
        let e = load_with_env(vec!["stmd".into(), main.into_os_string()], |_| false)
            .expect_err("a loop is refused");
        assert!(e.contains("nested too deep"), "{e}");
    }

    #[test]
    fn rewrite_keeps_comments_replaces_values_and_appends_changes() {
        let c = Config {
            maxclients: 77,
            timeout: 12,
            requirepass: "two words".into(),
            ..Config::default()
        };
        let original = "# my server\nmaxclients 5\n\n# again\nMAXCLIENTS 6\nhz 10\n";
        let text = rewritten(original, &c);
        assert_eq!(
            text,
            "# my server\nmaxclients 77\n\n# again\nhz 10\n# Generated by CONFIG REWRITE\ntimeout 12\nrequirepass two words\n"
        );
        assert_eq!(
            rewritten(&text, &c),
            text,
            "a second rewrite changes nothing"
        );
    }

    #[test]
    fn a_cluster_node_rewrites_no_replicaof() {
        let c = Config {
            port: 7001,
            cluster_enabled: true,
            replicaof: "127.0.0.2 7000".into(),
            ..Config::default()
        };
        assert_eq!(
            rewritten(
                "port 7001\nreplicaof 10.0.0.5 6380\ncluster-enabled yes\n",
                &c
            ),
            "port 7001\ncluster-enabled yes\n"
        );
        let standalone = Config {
            cluster_enabled: false,
            ..c
        };
        assert_eq!(
            rewritten("port 7001\ncluster-enabled no\n", &standalone),
            "port 7001\ncluster-enabled no\n# Generated by CONFIG REWRITE\nreplicaof 127.0.0.2 7000\n"
        );
    }

    #[test]
    fn replication_directives_and_their_old_names() {
        let c = load_file(
            "slaveof 10.0.0.5 6380\nslave-read-only no\nmasterauth pw\n",
            &[],
            &[],
        )
        .expect("loads");
        assert_eq!(c.replicaof, "10.0.0.5 6380");
        assert!(!c.replica_read_only);
        assert_eq!(c.masterauth, "pw");
        let c = load_file("replicaof db.internal 6379\n", &[], &[]).expect("loads");
        assert_eq!(c.replicaof, "db.internal 6379");
        assert!(load_file("replicaof db.internal port\n", &[], &[]).is_err());
        // Every alias of the CONFIG table is a directive too, as in Redis.
        let c = load_file(
            "hash-max-ziplist-entries 64\nlua-time-limit 100\nmin-slaves-to-write 2\n",
            &[],
            &[],
        )
        .expect("loads");
        assert_eq!(c.hash_max_listpack_entries, 64);
        assert_eq!(c.busy_reply_threshold, 100);
        assert_eq!(c.min_replicas_to_write, 2);
    }

    #[test]
    fn unixsocketperm_is_octal() {
        let c = load_file("unixsocket /tmp/s.sock\nunixsocketperm 750\n", &[], &[]).expect("loads");
        assert_eq!(
            (c.unixsocket.as_str(), c.unixsocketperm),
            ("/tmp/s.sock", 0o750)
        );
        assert!(load_file("unixsocketperm 800\n", &[], &[]).is_err());
        assert!(load_file("unixsocketperm 1777\n", &[], &[]).is_err());
    }

    #[test]
    fn every_cli_flag_is_a_directive_and_the_example_file_loads() {
        let example = include_str!("../../stmd.conf");
        for arg in Config::command().get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if arg.is_hide_set() || matches!(long, "help" | "version") {
                continue;
            }
            assert!(
                example.contains(&format!("\n# {long} "))
                    || example.contains(&format!("\n{long} ")),
                "stmd.conf documents '{long}'"
            );
        }
        let c = load_file(example, &[], &[]).expect("the example loads");
        assert_eq!(c.port, 6379);
    }
}
