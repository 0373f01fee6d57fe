//! FCALL, FCALL_RO and FUNCTION (LOAD, LIST, DELETE, FLUSH, STATS, KILL, HELP). Functions run
//! through the scripts' call path ([`super::scripting::run_script`]); the libraries live in the
//! engine (`crate::scripting::functions`). FUNCTION DUMP and RESTORE use Redis's payload: one
//! `RDB_OPCODE_FUNCTION2` record (the library's code as an RDB string) per library, then the RDB
//! footer of [`crate::rdb::seal`], so payloads move between Redis 7 and stmd both ways.

use super::scripting::engine_or_busy;
use super::{CmdResult, Ctx};
use crate::protocol::Reply;
use crate::scripting::functions::FUNCTION_FLAGS;
use crate::scripting::BusyCheck;
use bytes::Bytes;

pub fn fcall(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Judged once the function is found (Redis looks the function up first).
    let numkeys =
        super::args::int(args[2]).map_err(|_| Reply::error("ERR Bad number of keys provided"));
    super::scripting::run_script(ctx, args, numkeys, true, |engine| {
        engine
            .function(args[1])
            .ok_or_else(|| "ERR Function not found".to_string())
    })
}

pub fn function(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1].to_ascii_lowercase();
    let outcome = run_subcommand(ctx, args, &sub);
    // A library change touches no key, so the store never notes it: say it wrote, so that it goes
    // to the replicas and into the append-only log as Redis propagates it (found by DEBUG LOADAOF).
    if outcome.is_ok() && matches!(&sub[..], b"load" | b"delete" | b"flush" | b"restore") {
        crate::replication::feed::note_write();
    }
    outcome
}

fn run_subcommand(ctx: &mut Ctx, args: &[&[u8]], sub: &[u8]) -> CmdResult {
    match sub {
        b"kill" => ctx
            .shared
            .scripting
            .run
            .kill(true)
            .map(|()| Reply::OK)
            .map_err(Reply::error),
        b"stats" => stats(ctx),
        b"dump" => dump(ctx),
        b"restore" => restore(ctx, args),
        b"load" => load(ctx, args),
        b"list" => list(ctx, args),
        b"delete" => {
            let name = String::from_utf8_lossy(args[2]);
            let scripting = &ctx.shared.scripting;
            let mut engine = engine_or_busy(ctx)?;
            let removed = engine.functions.remove(&name);
            scripting.record_usage(&engine);
            match removed {
                true => Ok(Reply::OK),
                false => Err(Reply::error("ERR Library not found")),
            }
        }
        b"flush" => {
            let mode_ok = match args.len() {
                2 => true,
                3 => {
                    args[2].eq_ignore_ascii_case(b"sync") || args[2].eq_ignore_ascii_case(b"async")
                }
                _ => false,
            };
            if !mode_ok {
                return Err(if args.len() == 3 {
                    Reply::error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
                } else {
                    subcommand_syntax(args)
                });
            }
            let scripting = &ctx.shared.scripting;
            let mut engine = engine_or_busy(ctx)?;
            engine.functions.clear();
            scripting.record_usage(&engine);
            Ok(Reply::OK)
        }
        _ => Ok(Reply::Array(
            FUNCTION_HELP
                .iter()
                .map(|line| Reply::Status((*line).into()))
                .collect(),
        )),
    }
}

/// Redis's RDB opcode of one function library in a FUNCTION DUMP payload.
const RDB_OPCODE_FUNCTION2: u8 = 245;

/// FUNCTION DUMP: every library's code, sealed as a DUMP payload.
fn dump(ctx: &mut Ctx) -> CmdResult {
    let codes = engine_or_busy(ctx)?.functions.codes();
    let mut body = Vec::new();
    for code in codes {
        body.push(RDB_OPCODE_FUNCTION2);
        crate::rdb::put_len(&mut body, code.len() as u64);
        body.extend_from_slice(&code);
    }
    Ok(Reply::Bulk(crate::rdb::seal(body).into()))
}

/// `ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP.`
fn subcommand_syntax(args: &[&[u8]]) -> Reply {
    Reply::Error(
        format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
            super::printable(args[1], 128)
        )
        .into(),
    )
}

/// FUNCTION RESTORE payload [FLUSH | APPEND | REPLACE]: all the payload's libraries or none.
fn restore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    use crate::scripting::functions::RestorePolicy;
    if args.len() > 4 {
        return Err(subcommand_syntax(args));
    }
    let policy =
        match args.get(3) {
            None => RestorePolicy::Append,
            Some(p) if p.eq_ignore_ascii_case(b"flush") => RestorePolicy::Flush,
            Some(p) if p.eq_ignore_ascii_case(b"append") => RestorePolicy::Append,
            Some(p) if p.eq_ignore_ascii_case(b"replace") => RestorePolicy::Replace,
            Some(_) => return Err(Reply::error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
        };
    let body = crate::rdb::unseal(args[2])
        .map_err(|_| Reply::error("ERR DUMP payload version or checksum are wrong"))?;
    let mut reader = crate::rdb::RdbReader::new(body);
    let mut codes = Vec::new();
    while !reader.is_empty() {
        let opcode = reader.byte().map_err(|_| Reply::error(BAD_PAYLOAD))?;
        if opcode != RDB_OPCODE_FUNCTION2 {
            return Err(Reply::error("ERR given type is not a function"));
        }
        codes.push(reader.string().map_err(|_| Reply::error(BAD_PAYLOAD))?);
    }
    let scripting = &ctx.shared.scripting;
    let mut engine = engine_or_busy(ctx)?;
    let restored = engine.restore_functions(&codes, policy);
    scripting.record_usage(&engine);
    restored.map(|()| Reply::OK).map_err(|e| {
        // RESTORE names a colliding library without the quotes FUNCTION LOAD puts around it.
        let text = match e.strip_prefix("ERR Library '") {
            Some(rest) if rest.ends_with("' already exists") => {
                format!("ERR Library {}", rest.replacen("' already", " already", 1))
            }
            _ => e,
        };
        Reply::Error(text.into())
    })
}

/// A payload whose checksum holds but whose records cannot be read.
const BAD_PAYLOAD: &str = "ERR payload is not a valid functions dump";

/// FUNCTION LOAD [REPLACE] code
fn load(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut replace = false;
    for option in &args[2..args.len() - 1] {
        if option.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else {
            return Err(Reply::Error(
                format!(
                    "ERR Unknown option given: {}",
                    String::from_utf8_lossy(option)
                )
                .into(),
            ));
        }
    }
    let code = args[args.len() - 1];
    let scripting = &ctx.shared.scripting;
    let mut engine = engine_or_busy(ctx)?;
    let loaded = engine.load_function_library(code, replace);
    scripting.record_usage(&engine);
    loaded.map(Reply::bulk).map_err(|e| Reply::Error(e.into()))
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]
fn list(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut at = 2;
    while at < args.len() {
        let option = args[at];
        if option.eq_ignore_ascii_case(b"withcode") && !with_code {
            with_code = true;
        } else if option.eq_ignore_ascii_case(b"libraryname") && pattern.is_none() {
            at += 1;
            let Some(p) = args.get(at) else {
                return Err(Reply::error("ERR library name argument was not given"));
            };
            pattern = Some(p);
        } else {
            return Err(Reply::Error(
                format!("ERR Unknown argument {}", String::from_utf8_lossy(option)).into(),
            ));
        }
        at += 1;
    }
    let engine = engine_or_busy(ctx)?;
    let libraries = engine
        .functions
        .libraries()
        .filter(|l| pattern.is_none_or(|p| crate::glob::matches(p, l.name.as_bytes(), false)))
        .map(|library| {
            let functions = library
                .functions
                .iter()
                .map(|f| {
                    Reply::Map(vec![
                        (Reply::bulk("name"), Reply::bulk(f.name.clone())),
                        (
                            Reply::bulk("description"),
                            f.description.clone().map_or(Reply::Nil, Reply::bulk),
                        ),
                        (
                            Reply::bulk("flags"),
                            Reply::Set(
                                FUNCTION_FLAGS
                                    .iter()
                                    .filter(|flag| f.flag_names.iter().any(|n| n == *flag))
                                    .map(|flag| Reply::Status((*flag).into()))
                                    .collect(),
                            ),
                        ),
                    ])
                })
                .collect();
            let mut fields = vec![
                (
                    Reply::bulk("library_name"),
                    Reply::bulk(library.name.clone()),
                ),
                (Reply::bulk("engine"), Reply::bulk("LUA")),
                (Reply::bulk("functions"), Reply::Array(functions)),
            ];
            if with_code {
                fields.push((
                    Reply::bulk("library_code"),
                    Reply::Bulk(library.code.clone()),
                ));
            }
            Reply::Map(fields)
        })
        .collect();
    Ok(Reply::Array(libraries))
}

/// FUNCTION STATS: the running function (BUSY while an eval script runs, as Redis) and the
/// engine's counts.
fn stats(ctx: &mut Ctx) -> CmdResult {
    let scripting = &ctx.shared.scripting;
    if scripting.run.is_active() {
        if let Some(running) = scripting.current_function() {
            return Ok(stats_reply(scripting.usage(), Some(running)));
        }
        // An eval script holds the engine: wait for it like any command, or BUSY.
        let threshold = ctx.shared.config.read().busy_reply_threshold;
        match scripting.run.check(threshold) {
            BusyCheck::Busy(text) => return Err(Reply::error(text)),
            BusyCheck::Free | BusyCheck::Wait => {}
        }
    }
    let engine = engine_or_busy(ctx)?;
    Ok(stats_reply(engine.usage(), None))
}

fn stats_reply(
    usage: crate::scripting::ScriptUsage,
    running: Option<(String, Vec<Bytes>, std::time::Duration)>,
) -> Reply {
    let running = match running {
        None => Reply::Nil,
        Some((name, command, ran)) => Reply::Map(vec![
            (Reply::bulk("name"), Reply::bulk(name)),
            (
                Reply::bulk("command"),
                Reply::Array(command.into_iter().map(Reply::Bulk).collect()),
            ),
            (
                Reply::bulk("duration_ms"),
                Reply::Int(ran.as_millis() as i64),
            ),
        ]),
    };
    Reply::Map(vec![
        (Reply::bulk("running_script"), running),
        (
            Reply::bulk("engines"),
            Reply::Map(vec![(
                Reply::bulk("LUA"),
                Reply::Map(vec![
                    (
                        Reply::bulk("libraries_count"),
                        Reply::Int(usage.libraries as i64),
                    ),
                    (
                        Reply::bulk("functions_count"),
                        Reply::Int(usage.functions as i64),
                    ),
                ]),
            )]),
        ),
    ])
}

const FUNCTION_HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Print this help.",
];
