//! Server commands: CONFIG, TIME, SHUTDOWN, LASTSAVE, MODULE (COMMAND is in `command_info.rs`).

use super::args::is;
use super::connection::help_reply;
use super::{err, CmdResult, Ctx};
use crate::config::{find_setting, settings, ProtectedCommand, Setting};
use crate::glob;
use crate::protocol::Reply;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn config(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if is(sub, "GET") {
        Ok(Reply::Map(config_get(ctx, &args[2..])))
    } else if is(sub, "SET") {
        if args.len() % 2 != 0 {
            return Err(Reply::error(err::SYNTAX));
        }
        // As Redis, in two passes: first every name (unknown, immutable, protected, duplicate:
        // the first such pair answers), then every value on a copy, so a bad pair changes
        // nothing.
        let mut pairs: Vec<(Setting, &[u8])> = Vec::new();
        for pair in args[2..].chunks(2) {
            let name = String::from_utf8_lossy(pair[0]).into_owned();
            let failed = |why: &str| set_failed(&name, why);
            let Some(setting) = find_setting(pair[0]) else {
                return Err(Reply::Error(
                    format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'")
                        .into(),
                ));
            };
            let refusal = match setting {
                Setting::Inert(index, _) => crate::config::inert::INERT[index].refusal(),
                // Redis refuses these unless `enable-protected-configs`, which stmd keeps off.
                Setting::Live(..) if ["dir", "dbfilename"].contains(&setting.name()) => {
                    Some("can't set protected config")
                }
                Setting::Live(param, _) => {
                    param.set.is_none().then_some("can't set immutable config")
                }
            };
            if let Some(why) = refusal {
                return Err(failed(why));
            }
            // By name: an option and its alias are two names (the later pair wins), as in Redis.
            if pairs.iter().any(|(s, _)| s.name() == setting.name()) {
                return Err(failed("duplicate parameter"));
            }
            pairs.push((setting, pair[1]));
        }
        let mut updated = ctx.shared.config.read().clone();
        // The first TLS setting set: the TLS configuration is rebuilt (also for the same value,
        // so that CONFIG SET of an unchanged file name reloads a rotated certificate).
        let mut tls_setting: Option<&str> = None;
        for (setting, value) in &pairs {
            // A value error names the parameter as Redis's table does (lower case).
            let failed = |why: &str| set_failed(setting.name(), why);
            let value = String::from_utf8_lossy(value);
            match setting {
                Setting::Inert(index, _) => {
                    let row = &crate::config::inert::INERT[*index];
                    let normalised = row.parse(&value).map_err(|why| failed(&why))?;
                    updated.inert.set(*index, normalised);
                }
                Setting::Live(param, _) => {
                    if let Some(set) = param.set {
                        set(&mut updated, &value).map_err(|why| failed(&why))?;
                    }
                    if setting.name().starts_with("tls-") {
                        tls_setting = tls_setting.or(Some(setting.name()));
                    }
                }
            }
        }
        // `port`: listen on the new port now (a port that cannot be bound fails the command);
        // the accept loop takes the listener once the change is made.
        let new_listener = match updated.port != ctx.shared.config.read().port {
            false => None,
            true if ctx.shared.cluster.is_some() => {
                // The cluster's configuration records each node's client port.
                return Err(set_failed("port", "can't set immutable config"));
            }
            true if updated.port == 0 => Some(None),
            true => {
                let listener = crate::net::listen_tcp(
                    &updated.bind,
                    updated.port,
                    updated.tcp_backlog,
                )
                .map_err(|why| {
                    tracing::warn!(%why, port = updated.port, "CONFIG SET port: cannot listen");
                    set_failed("port", "Unable to listen on this port. Check server logs.")
                })?;
                Some(Some(listener))
            }
        };
        let tls = match tls_setting {
            Some(name) => Some(ctx.shared.tls.prepare(&updated).map_err(|why| {
                tracing::warn!(%why, "CONFIG SET: TLS configuration not updated");
                set_failed(name, &format!("Unable to update TLS configuration: {why}"))
            })?),
            None => None,
        };
        ctx.shared
            .slowlog
            .configure(updated.slowlog_log_slower_than, updated.slowlog_max_len);
        ctx.shared.store.memory.configure(&updated);
        ctx.shared
            .replication
            .feed
            .set_size(updated.repl_backlog_size as usize);
        ctx.shared
            .store
            .encoding_limits
            .configure(&updated.encoding_thresholds());
        ctx.shared.events.configure(&updated);
        ctx.shared.replication.master.configure(&updated);
        ctx.shared
            .latency
            .set_threshold(updated.latency_monitor_threshold);
        ctx.shared
            .command_stats
            .latency_tracking
            .store(updated.latency_tracking, Ordering::Relaxed);
        let requirepass_changed = ctx.shared.config.read().requirepass != updated.requirepass;
        if requirepass_changed {
            ctx.shared.acl.set_requirepass(&updated.requirepass);
        }
        ctx.shared.acl.log.lock().trim(updated.acllog_max_len);
        let log_level = ctx.shared.config.read().log_level != updated.log_level;
        let log_level = log_level.then(|| updated.log_level.clone());
        *ctx.shared.config.write() = updated;
        if let Some(filter) = log_level {
            crate::config::apply_log_level(&filter);
        }
        if let Some(listener) = new_listener {
            let port = listener
                .as_ref()
                .and_then(|l| l.local_addr().ok())
                .map_or(0, |a| a.port());
            ctx.shared.tcp_port.store(port, Ordering::Relaxed);
            *ctx.shared.new_listener.lock() = Some(listener);
            ctx.shared.listener_changed.notify_one();
            tracing::info!(port, "CONFIG SET port: listening on the new port");
        }
        if let Some(tls) = tls {
            ctx.shared.tls.install(tls);
        }
        ctx.shared.aof.configure();
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
        ctx.shared.acl.reset_stats();
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
        crate::config::file::rewrite(file, &config)
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
            "    Print this help.",
        ]))
    }
}

/// Redis's CONFIG SET error for the parameter `name`.
fn set_failed(name: &str, why: &str) -> Reply {
    Reply::Error(
        format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}").into(),
    )
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
    Ok(Reply::Int(ctx.shared.snapshots.last_save() as i64))
}

/// The function libraries' codes, for a snapshot written by this command.
fn function_codes(ctx: &mut Ctx) -> Result<Vec<bytes::Bytes>, Reply> {
    Ok(super::scripting::engine_or_busy(ctx)?.functions.codes())
}

/// SAVE: the whole keyspace to `dir/dbfilename` now (see `crate::snapshot`).
pub fn save(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let functions = function_codes(ctx)?;
    let shared = ctx.shared;
    crate::worker::off_worker(|| crate::snapshot::save(shared, &functions))
        .map(|()| Reply::OK)
        .map_err(|why| match why.as_str() {
            crate::snapshot::IN_PROGRESS => Reply::error(crate::snapshot::IN_PROGRESS),
            _ => Reply::error("ERR"),
        })
}

/// BGSAVE [SCHEDULE]
pub fn bgsave(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let schedule = match &args[1..] {
        [] => false,
        [word] if is(word, "SCHEDULE") => true,
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    // The log's rewrite and a save could run together here (no fork), but Redis runs one child
    // at a time and answers so.
    if ctx.shared.aof.rewriting() && !schedule {
        return Err(Reply::error(crate::aof::BGSAVE_REFUSED));
    }
    match ctx.shared.snapshots.request_background(schedule) {
        Ok(crate::snapshot::Background::Started) => {
            Ok(Reply::Status("Background saving started".into()))
        }
        Ok(crate::snapshot::Background::Scheduled) => {
            Ok(Reply::Status("Background saving scheduled".into()))
        }
        Err(text) => Err(Reply::error(text)),
    }
}

pub fn bgrewriteaof(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let shared = ctx.shared;
    match shared.aof.request_rewrite(shared.snapshots.busy()) {
        Ok(crate::aof::Rewrite::Started) => Ok(Reply::Status(
            "Background append only file rewriting started".into(),
        )),
        Ok(crate::aof::Rewrite::Scheduled) => Ok(Reply::Status(
            "Background append only file rewriting scheduled".into(),
        )),
        Err(text) => Err(Reply::error(text)),
    }
}

pub fn shutdown(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    for arg in &args[1..] {
        if !["NOSAVE", "SAVE", "NOW", "FORCE", "ABORT"]
            .iter()
            .any(|w| is(arg, w))
        {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    let flag = |word: &str| args[1..].iter().any(|a| is(a, word));
    let (nosave, save, force) = (flag("NOSAVE"), flag("SAVE"), flag("FORCE"));
    // ABORT goes alone, and NOSAVE with SAVE is no choice: Redis's "illegal combo".
    let other_flags = nosave || save || force || flag("NOW");
    if (flag("ABORT") && other_flags) || (nosave && save) {
        return Err(Reply::error(err::SYNTAX));
    }
    if flag("ABORT") {
        return Err(Reply::error("ERR No shutdown in progress."));
    }
    if !ctx.conn.authenticated {
        return Err(Reply::error(err::NOAUTH));
    }
    let threshold = ctx.shared.config.read().busy_reply_threshold;
    (ctx.shared.scripting.run)
        .before_shutdown(nosave, threshold)
        .map_err(Reply::error)?;
    // As Redis: save now if asked or if `save` rules are set, and stay up if that fails (unless
    // FORCE). What other clients write until the connections have drained is saved after.
    use crate::snapshot::AtShutdown;
    let by_rules = !nosave && !ctx.shared.config.read().save.is_empty();
    if save || by_rules {
        let functions = function_codes(ctx)?;
        let shared = ctx.shared;
        if crate::worker::off_worker(|| crate::snapshot::save_waiting(shared, &functions)).is_err()
            && !force
        {
            return Err(Reply::error("ERR Errors trying to SHUTDOWN. Check logs."));
        }
    }
    ctx.shared.snapshots.set_at_shutdown(match (nosave, save) {
        (true, _) => AtShutdown::NoSave,
        (_, true) => AtShutdown::Save,
        _ => AtShutdown::ByRules,
    });
    let now = flag("NOW");
    ctx.shared
        .shutdown_now
        .store(now, std::sync::atomic::Ordering::Relaxed);
    tracing::info!(client = ctx.conn.info.id, "SHUTDOWN requested by a client");
    ctx.shared.shutdown_requested.notify_one();
    // Like Redis, a successful SHUTDOWN closes the connection without a reply.
    ctx.conn.close_after_reply = true;
    Ok(Reply::Raw(bytes::Bytes::new()))
}

/// MODULE LIST | LOAD | LOADEX | UNLOAD | HELP. stmd loads no Redis modules: the list holds the
/// modules it serves built in (`spec::BUILTIN_MODULES`), and LOAD, LOADEX and UNLOAD (behind
/// `enable-module-command`, as in Redis) answer what Redis answers for a module it cannot load or
/// has not loaded.
pub fn module(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if is(sub, "LIST") {
        let entry = |&(name, version): &(&str, u32)| {
            Reply::Map(vec![
                (Reply::bulk("name"), Reply::bulk(name)),
                (Reply::bulk("ver"), Reply::Int(i64::from(version))),
                (Reply::bulk("path"), Reply::bulk("")),
                (Reply::bulk("args"), Reply::Array(Vec::new())),
            ])
        };
        return Ok(Reply::Array(
            crate::spec::BUILTIN_MODULES.iter().map(entry).collect(),
        ));
    }
    if is(sub, "HELP") {
        return Ok(help_reply(&[
            "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
            "HELP",
            "    Print this help.",
        ]));
    }
    let setting = ctx.shared.config.read().enable_module_command;
    if !setting.allows(ctx.conn.info.addr.is_local()) {
        return Err(Reply::Error(
            ProtectedCommand::refusal("MODULE", "enable-module-command").into(),
        ));
    }
    if is(sub, "UNLOAD") {
        return Err(Reply::error(
            "ERR Error unloading module: no such module with that name",
        ));
    }
    Err(Reply::error(
        "ERR Error loading the extension. Please check the server logs.",
    ))
}
