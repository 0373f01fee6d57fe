//! Server commands: CONFIG, COMMAND, DBSIZE, FLUSHDB/FLUSHALL, TIME, SHUTDOWN, LASTSAVE.

use super::args::is;
use super::connection::help_reply;
use super::table::{self, lookup, Command, COMMANDS};
use super::{check_subcommand, err, CmdResult, Ctx};
use crate::config::{find_setting, settings, Setting};
use crate::glob;
use crate::protocol::Reply;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

/// CONFIG's subcommands with their Redis arities.
const CONFIG_SUBCOMMANDS: &[(&str, i32)] = &[
    ("get", -3),
    ("set", -4),
    ("resetstat", 2),
    ("rewrite", 2),
    ("help", 2),
];

pub fn config(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    check_subcommand("config", CONFIG_SUBCOMMANDS, args)?;
    let sub = args[1];
    if is(sub, "GET") {
        Ok(Reply::Map(config_get(ctx, &args[2..])))
    } else if is(sub, "SET") {
        if args.len() % 2 != 0 {
            return Err(Reply::error(err::SYNTAX));
        }
        // Validate every pair on a copy first, so a bad pair changes nothing.
        let mut updated = ctx.shared.config.read().clone();
        let mut seen: Vec<&str> = Vec::new();
        for pair in args[2..].chunks(2) {
            let name = String::from_utf8_lossy(pair[0]).into_owned();
            let failed = |why: &str| {
                Reply::Error(
                    format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
                    )
                    .into(),
                )
            };
            let Some(setting) = find_setting(pair[0]) else {
                return Err(Reply::Error(
                    format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'")
                        .into(),
                ));
            };
            if seen.contains(&setting.name()) {
                return Err(failed("duplicate parameter"));
            }
            seen.push(setting.name());
            match setting {
                // Accepted for Redis compatibility; stmd has nothing it would change.
                Setting::Inert(..) => {}
                Setting::Live(param) => {
                    let Some(set) = param.set else {
                        return Err(failed("can't set immutable config"));
                    };
                    set(&mut updated, &String::from_utf8_lossy(pair[1]))
                        .map_err(|why| failed(&why))?;
                }
            }
        }
        ctx.shared
            .slowlog
            .configure(updated.slowlog_log_slower_than, updated.slowlog_max_len);
        ctx.shared.store.memory.configure(&updated);
        ctx.shared.events.configure(&updated);
        ctx.shared
            .latency
            .set_threshold(updated.latency_monitor_threshold);
        *ctx.shared.config.write() = updated;
        Ok(Reply::OK)
    } else if is(sub, "RESETSTAT") {
        ctx.shared.stats.reset();
        ctx.shared.store.expired_keys.store(0, Ordering::Relaxed);
        ctx.shared
            .store
            .memory
            .evicted_keys
            .store(0, Ordering::Relaxed);
        ctx.shared.stm.reset_stats();
        ctx.shared.command_stats.reset();
        ctx.shared
            .memory_marks
            .reset_peak(crate::metrics::allocated_bytes());
        Ok(Reply::OK)
    } else if is(sub, "REWRITE") {
        let config = ctx.shared.config.read().clone();
        let Some(file) = &config.config_file else {
            return Err(Reply::error(
                "ERR The server is running without a config file",
            ));
        };
        crate::config_file::rewrite(file, &config)
            .map_err(|e| Reply::Error(format!("ERR Rewriting config file: {e}").into()))?;
        Ok(Reply::OK)
    } else {
        Ok(help_reply(&[
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
            "HELP",
            "    Prints this help.",
        ]))
    }
}

/// CONFIG GET: an exact name answers under the name as typed (as Redis does); a glob answers with
/// every matching parameter. Each parameter appears once.
fn config_get(ctx: &Ctx, patterns: &[&[u8]]) -> Vec<(Reply, Reply)> {
    let config = ctx.shared.config.read();
    let mut seen: Vec<&str> = Vec::new();
    let mut pairs = Vec::new();
    for pattern in patterns {
        if !pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
            if let Some(setting) = find_setting(pattern) {
                if !seen.contains(&setting.name()) {
                    seen.push(setting.name());
                    pairs.push((Reply::bulk(pattern), Reply::bulk(setting.value(&config))));
                }
            }
            continue;
        }
        for setting in settings() {
            let name = setting.name();
            if !seen.contains(&name) && glob::matches(pattern, name.as_bytes(), true) {
                seen.push(name);
                pairs.push((Reply::bulk_str(name), Reply::bulk(setting.value(&config))));
            }
        }
    }
    pairs
}

fn status_set(items: impl Iterator<Item = String>) -> Reply {
    Reply::Set(items.map(|s| Reply::Status(s.into())).collect())
}

fn acl_categories(cmd: &Command) -> impl Iterator<Item = String> {
    let mut cats = vec![format!("@{}", cmd.group)];
    if cmd.has(table::WRITE) {
        cats.push("@write".into());
    }
    if cmd.has(table::READONLY) {
        cats.push("@read".into());
    }
    cats.push(
        if cmd.has(table::FAST) {
            "@fast"
        } else {
            "@slow"
        }
        .into(),
    );
    if cmd.has(table::ADMIN) {
        cats.extend(["@admin".into(), "@dangerous".into()]);
    }
    cats.into_iter()
}

/// One COMMAND / COMMAND INFO entry, in Redis 7's ten-field layout.
fn command_info(cmd: &Command) -> Reply {
    Reply::Array(vec![
        Reply::bulk_str(cmd.name),
        Reply::Int(cmd.arity.into()),
        status_set(cmd.flag_names().map(String::from)),
        Reply::Int(cmd.first_key.into()),
        Reply::Int(cmd.last_key.into()),
        Reply::Int(cmd.step.into()),
        status_set(acl_categories(cmd)),
        Reply::Set(vec![]),
        Reply::Array(vec![]),
        Reply::Array(vec![]),
    ])
}

/// One COMMAND DOCS entry.
fn command_docs(cmd: &Command) -> Reply {
    let text = |s: &'static str| Reply::bulk_str(s);
    let mut fields = vec![
        (text("summary"), text(cmd.summary)),
        (text("since"), text(cmd.since)),
        (text("group"), text(cmd.group)),
    ];
    let arguments = super::docs::parse(cmd.syntax);
    if !arguments.is_empty() {
        fields.push((text("arguments"), super::docs::render(&arguments)));
    }
    Reply::Map(fields)
}

/// COMMAND's subcommands with their Redis arities.
const COMMAND_SUBCOMMANDS: &[(&str, i32)] = &[
    ("count", 2),
    ("list", -2),
    ("info", -2),
    ("docs", -2),
    ("getkeys", -4),
    ("getkeysandflags", -4),
    ("help", 2),
];

pub fn command(_ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() == 1 {
        return Ok(Reply::Array(COMMANDS.iter().map(command_info).collect()));
    }
    check_subcommand("command", COMMAND_SUBCOMMANDS, args)?;
    let sub = args[1];
    if is(sub, "COUNT") {
        Ok(Reply::Int(COMMANDS.len() as i64))
    } else if is(sub, "LIST") {
        command_list(&args[2..])
    } else if is(sub, "INFO") {
        if args.len() == 2 {
            return Ok(Reply::Array(COMMANDS.iter().map(command_info).collect()));
        }
        Ok(Reply::Array(
            args[2..]
                .iter()
                .map(|name| lookup(name).map_or(Reply::Nil, command_info))
                .collect(),
        ))
    } else if is(sub, "DOCS") {
        let chosen: Vec<&Command> = if args.len() == 2 {
            COMMANDS.iter().collect()
        } else {
            args[2..].iter().filter_map(|n| lookup(n)).collect()
        };
        Ok(Reply::Map(
            chosen
                .into_iter()
                .map(|c| (Reply::bulk_str(c.name), command_docs(c)))
                .collect(),
        ))
    } else if is(sub, "GETKEYS") || is(sub, "GETKEYSANDFLAGS") {
        let target = &args[2..];
        let Some(cmd) = lookup(target[0]) else {
            return Err(Reply::error("ERR Invalid command specified"));
        };
        if cmd.first_key <= 0 {
            return Err(Reply::error("ERR The command has no key arguments"));
        }
        if !cmd.arity_ok(target.len()) {
            return Err(Reply::error(
                "ERR Invalid number of arguments specified for command",
            ));
        }
        let with_flags = is(sub, "GETKEYSANDFLAGS");
        Ok(Reply::Array(
            cmd.key_positions(target.len())
                .map(|i| {
                    if with_flags {
                        let flags = super::introspection::key_flags(cmd);
                        Reply::Array(vec![
                            Reply::bulk(target[i]),
                            status_set(flags.iter().map(|f| f.to_string())),
                        ])
                    } else {
                        Reply::bulk(target[i])
                    }
                })
                .collect(),
        ))
    } else {
        Ok(help_reply(&[
            "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "(no subcommand)",
            "    Return details about all commands.",
            "COUNT",
            "    Return the total number of commands in this server.",
            "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
            "    Return a list of all commands in this server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple commands.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple commands.",
            "GETKEYS <full-command>",
            "    Return the keys from a full command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full command.",
            "HELP",
            "    Print this help.",
        ]))
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern].
fn command_list(filter: &[&[u8]]) -> CmdResult {
    let keep: Box<dyn Fn(&Command) -> bool> = match filter {
        [] => Box::new(|_| true),
        [by, kind, value] if is(by, "FILTERBY") => {
            let value = value.to_vec();
            if is(kind, "MODULE") {
                Box::new(|_| false) // no modules
            } else if is(kind, "ACLCAT") {
                Box::new(move |c| {
                    acl_categories(c).any(|cat| cat.as_bytes()[1..].eq_ignore_ascii_case(&value))
                })
            } else if is(kind, "PATTERN") {
                Box::new(move |c| glob::matches(&value, c.name.as_bytes(), true))
            } else {
                return Err(Reply::error(err::SYNTAX));
            }
        }
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    Ok(Reply::Array(
        COMMANDS
            .iter()
            .filter(|c| keep(c))
            .map(|c| Reply::bulk_str(c.name))
            .collect(),
    ))
}

pub fn time(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Reply::Array(vec![
        Reply::bulk(now.as_secs().to_string()),
        Reply::bulk(now.subsec_micros().to_string()),
    ]))
}

pub fn lastsave(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Reply::Int(
        now.as_secs()
            .saturating_sub(ctx.shared.started.elapsed().as_secs()) as i64,
    ))
}

pub fn shutdown(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    for arg in &args[1..] {
        if !["NOSAVE", "SAVE", "NOW", "FORCE", "ABORT"]
            .iter()
            .any(|w| is(arg, w))
        {
            return Err(Reply::error(err::SYNTAX));
        }
        if is(arg, "ABORT") {
            return Err(Reply::error("ERR No shutdown in progress."));
        }
    }
    if !ctx.conn.authenticated {
        return Err(Reply::error(err::NOAUTH));
    }
    let nosave = args[1..].iter().any(|a| is(a, "NOSAVE"));
    let threshold = ctx.shared.config.read().busy_reply_threshold;
    (ctx.shared.scripting.run)
        .before_shutdown(nosave, threshold)
        .map_err(Reply::error)?;
    tracing::info!(client = ctx.conn.info.id, "SHUTDOWN requested by a client");
    ctx.shared.shutdown_requested.notify_one();
    // Like Redis, a successful SHUTDOWN closes the connection without a reply.
    ctx.conn.close_after_reply = true;
    Ok(Reply::Raw(bytes::Bytes::new()))
}
