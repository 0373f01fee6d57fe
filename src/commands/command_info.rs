//! COMMAND and its subcommands (COUNT, LIST, INFO, DOCS, GETKEYS, GETKEYSANDFLAGS, HELP), rendered
//! from the one command table in Redis 7's layout: flags, first/last/step, ACL categories, tips,
//! key specs and subcommands for INFO; summary, since, group, arguments and subcommands for DOCS.

use super::args::is;
use super::connection::help_reply;
use super::table::{lookup, Command, COMMANDS};
use super::{categories, err, keyspec, CmdResult, Ctx};
use crate::glob;
use crate::protocol::Reply;

/// A command or subcommand by its full name (`get`, `config|get`), case-insensitively, as
/// COMMAND INFO / DOCS look them up. A `|` name of a command without subcommands is unknown.
pub fn lookup_full(name: &[u8]) -> Option<&'static Command> {
    let mut parts = name.split(|&b| b == b'|');
    let cmd = lookup(parts.next()?)?;
    match (parts.next(), parts.next()) {
        (None, _) => Some(cmd),
        (Some(sub), None) => cmd.subcommand(sub),
        _ => None,
    }
}

/// Every command and subcommand, containers first then their subcommands, as COMMAND LIST walks
/// them.
fn every_command() -> impl Iterator<Item = &'static Command> {
    COMMANDS
        .iter()
        .flat_map(|cmd| std::iter::once(cmd).chain(cmd.subcommands.iter()))
}

fn status_set(items: impl Iterator<Item = &'static str>) -> Reply {
    Reply::Set(items.map(|s| Reply::Status(s.into())).collect())
}

/// One COMMAND / COMMAND INFO entry, in Redis 7's ten-field layout.
pub fn info(cmd: &'static Command) -> Reply {
    Reply::Array(vec![
        Reply::bulk_str(cmd.name),
        Reply::Int(cmd.arity.into()),
        status_set(cmd.flag_names()),
        Reply::Int(cmd.first_key.into()),
        Reply::Int(cmd.last_key.into()),
        Reply::Int(cmd.step.into()),
        Reply::Set(
            categories::names(categories::of(cmd))
                .map(|name| Reply::Status(format!("@{name}").into()))
                .collect(),
        ),
        Reply::Set(cmd.tips.iter().map(|tip| Reply::bulk_str(tip)).collect()),
        Reply::Set(cmd.keys.iter().map(keyspec::render).collect()),
        // Redis: an empty set without subcommands, else an array.
        if cmd.subcommands.is_empty() {
            Reply::Set(Vec::new())
        } else {
            Reply::Array(cmd.subcommands.iter().map(info).collect())
        },
    ])
}

/// One COMMAND DOCS entry, its fields in Redis's order (Redis's `history` is not kept).
fn docs(cmd: &'static Command) -> Reply {
    let text = |s: &'static str| Reply::bulk_str(s);
    let mut fields = vec![
        (text("summary"), text(cmd.summary)),
        (text("since"), text(cmd.since)),
        (text("group"), text(cmd.group)),
    ];
    if !cmd.complexity.is_empty() {
        fields.push((text("complexity"), text(cmd.complexity)));
    }
    if !cmd.doc_flags.is_empty() {
        fields.push((text("doc_flags"), status_set(cmd.doc_flags.iter().copied())));
    }
    if !cmd.deprecated_since.is_empty() {
        fields.push((text("deprecated_since"), text(cmd.deprecated_since)));
        fields.push((text("replaced_by"), text(cmd.replaced_by)));
    }
    let arguments = super::docs::parse(cmd.syntax);
    if !arguments.is_empty() {
        fields.push((
            text("arguments"),
            super::docs::render_with_keys(&arguments, cmd.keys.len()),
        ));
    }
    if !cmd.subcommands.is_empty() {
        fields.push((
            text("subcommands"),
            Reply::Map(
                cmd.subcommands
                    .iter()
                    .map(|sub| (text(sub.name), docs(sub)))
                    .collect(),
            ),
        ));
    }
    Reply::Map(fields)
}

pub fn command(_ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() == 1 {
        return Ok(Reply::Array(COMMANDS.iter().map(info).collect()));
    }
    // Dispatch has checked the subcommand and its arity.
    let sub = args[1];
    if is(sub, "COUNT") {
        Ok(Reply::Int(COMMANDS.len() as i64))
    } else if is(sub, "LIST") {
        list(&args[2..])
    } else if is(sub, "INFO") {
        if args.len() == 2 {
            return Ok(Reply::Array(COMMANDS.iter().map(info).collect()));
        }
        Ok(Reply::Array(
            args[2..]
                .iter()
                .map(|name| lookup_full(name).map_or(Reply::Nil, info))
                .collect(),
        ))
    } else if is(sub, "DOCS") {
        let chosen: Vec<&'static Command> = if args.len() == 2 {
            COMMANDS.iter().collect()
        } else {
            args[2..].iter().filter_map(|n| lookup_full(n)).collect()
        };
        Ok(Reply::Map(
            chosen
                .into_iter()
                .map(|c| (Reply::bulk_str(c.name), docs(c)))
                .collect(),
        ))
    } else if is(sub, "GETKEYS") || is(sub, "GETKEYSANDFLAGS") {
        getkeys(&args[2..], is(sub, "GETKEYSANDFLAGS"))
    } else {
        // Redis 7.2's text (src/server.c): 7.0's lines, 7.2's footer.
        Ok(help_reply(&[
            "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
            "HELP",
            "    Print this help.",
        ]))
    }
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS: the keys of `target` (a full request) per its key specs,
/// with Redis's errors.
fn getkeys(target: &[&[u8]], with_flags: bool) -> CmdResult {
    let cmd = lookup(target[0]).and_then(|cmd| {
        if cmd.subcommands.is_empty() || target.len() < 2 {
            Some(cmd)
        } else {
            cmd.subcommand(target[1])
        }
    });
    let Some(cmd) = cmd else {
        return Err(Reply::error("ERR Invalid command specified"));
    };
    if cmd
        .keys
        .iter()
        .all(|spec| spec.flags & keyspec::NOT_KEY != 0)
    {
        return Err(Reply::error("ERR The command has no key arguments"));
    }
    if !cmd.arity_ok(target.len()) {
        return Err(Reply::error(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    let keys = match keyspec::keys_with_flags(cmd, target) {
        Some(keys) if !keys.is_empty() => keys,
        _ if cmd.has(super::table::NO_MANDATORY_KEYS) => keyspec::KeyList::new(),
        _ => return Err(Reply::error("ERR Invalid arguments specified for command")),
    };
    Ok(Reply::Array(
        keys.into_iter()
            .map(|(at, flags)| {
                let key = Reply::bulk(target[at]);
                if with_flags {
                    Reply::Array(vec![key, keyspec::render_flags(flags)])
                } else {
                    key
                }
            })
            .collect(),
    ))
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]: commands and
/// subcommands (by full name), as Redis lists them.
fn list(filter: &[&[u8]]) -> CmdResult {
    let keep: Box<dyn Fn(&Command) -> bool> = match filter {
        [] => Box::new(|_| true),
        [by, kind, value] if is(by, "FILTERBY") => {
            let value = value.to_vec();
            if is(kind, "MODULE") {
                Box::new(|_| false) // no modules
            } else if is(kind, "ACLCAT") {
                let wanted = categories::by_name(&value).unwrap_or(0);
                Box::new(move |c| categories::of(c) & wanted != 0)
            } else if is(kind, "PATTERN") {
                Box::new(move |c| glob::matches(&value, c.name.as_bytes(), true))
            } else {
                return Err(Reply::error(err::SYNTAX));
            }
        }
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    Ok(Reply::Array(
        every_command()
            .filter(|c| keep(c))
            .map(|c| Reply::bulk_str(c.name))
            .collect(),
    ))
}
