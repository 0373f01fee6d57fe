//! ACL and its subcommands: SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, GENPASS, LOG,
//! DRYRUN, LOAD, SAVE, HELP. The users and the check live in `crate::acl`.

use super::args::{int, is};
use super::categories;
use super::connection::help_reply;
use super::{err, CmdResult, Ctx};
use crate::acl::rules::{merge_selector_args, User};
use crate::acl::{self, IDS};
use crate::protocol::Reply;

const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Print this help.",
];

const NO_ACLFILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

pub fn acl(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if is(sub, "SETUSER") {
        setuser(ctx, args)
    } else if is(sub, "GETUSER") {
        Ok(ctx
            .shared
            .acl
            .get(args[2])
            .map_or(Reply::Nil, |u| getuser(&u)))
    } else if is(sub, "DELUSER") {
        deluser(ctx, &args[2..])
    } else if is(sub, "LIST") {
        Ok(Reply::Array(
            ctx.shared
                .acl
                .all()
                .iter()
                .map(|u| Reply::bulk(u.describe()))
                .collect(),
        ))
    } else if is(sub, "USERS") {
        Ok(Reply::Array(
            ctx.shared.acl.names().iter().map(Reply::bulk).collect(),
        ))
    } else if is(sub, "WHOAMI") {
        Ok(Reply::bulk(&ctx.conn.user.name))
    } else if is(sub, "CAT") {
        cat(args)
    } else if is(sub, "GENPASS") {
        genpass(args)
    } else if is(sub, "LOG") {
        log(ctx, args)
    } else if is(sub, "DRYRUN") {
        dryrun(ctx, args)
    } else if is(sub, "LOAD") {
        load(ctx)
    } else if is(sub, "SAVE") {
        save(ctx)
    } else {
        Ok(help_reply(HELP))
    }
}

/// Redis's error for a subcommand given too many arguments.
fn sub_arity(args: &[&[u8]]) -> Reply {
    Reply::Error(
        format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try ACL HELP.",
            super::printable(args[1], 128)
        )
        .into(),
    )
}

fn setuser(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = args[2];
    let rules =
        merge_selector_args(&args[3..]).map_err(|e| Reply::Error(format!("ERR {e}").into()))?;
    let channels = ctx.shared.config.read().acl_pubsub_default;
    let mut user = match ctx.shared.acl.get(name) {
        Some(existing) => (*existing).clone(),
        None => User::new(name, channels),
    };
    for rule in &rules {
        user.apply(rule, channels).map_err(|e| {
            Reply::Error(
                format!(
                    "ERR Error in ACL SETUSER modifier '{}': {}",
                    super::printable(rule, usize::MAX),
                    e.text()
                )
                .into(),
            )
        })?;
    }
    user.refresh();
    let disabled = !user.enabled;
    ctx.shared.acl.put(user);
    if disabled {
        disconnect_users(ctx, name);
    } else {
        disconnect_revoked_subscribers(ctx, name);
    }
    Ok(Reply::OK)
}

/// Closes every connection authenticated as `name` (deleted or disabled), this one after its
/// reply, as Redis does.
fn disconnect_users(ctx: &mut Ctx, name: &[u8]) {
    let me = ctx.conn.info.id;
    for client in ctx.shared.clients.all() {
        if client.user.lock().as_bytes() != name {
            continue;
        }
        if client.id == me {
            ctx.conn.close_after_reply = true;
        } else {
            client.kill();
        }
    }
}

/// Closes the connections of `name` subscribed (SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE) to a channel
/// or pattern its channel rules no longer allow, this one after its reply, as Redis 7 does.
fn disconnect_revoked_subscribers(ctx: &mut Ctx, name: &[u8]) {
    let Some(user) = ctx.shared.acl.get(name) else {
        return;
    };
    if user.unrestricted || user.root.all_channels {
        return;
    }
    let clients: Vec<_> = ctx
        .shared
        .clients
        .all()
        .into_iter()
        .filter(|c| c.user.lock().as_bytes() == name)
        .collect();
    if clients.is_empty() {
        return;
    }
    let ids = clients.iter().map(|c| c.id).collect();
    let refused = ctx
        .shared
        .pubsub
        .refused_subscribers(&ids, |channel, pattern| {
            acl::may_use_channel(&user, channel, pattern)
        });
    let me = ctx.conn.info.id;
    for client in clients.iter().filter(|c| refused.contains(&c.id)) {
        if client.id == me {
            ctx.conn.close_after_reply = true;
        } else {
            client.kill();
        }
    }
}

fn getuser(user: &User) -> Reply {
    let text = |s: &str| Reply::bulk(s);
    let selector_map = |s: &acl::rules::Selector| {
        Reply::Map(vec![
            (text("commands"), text(&s.describe_commands())),
            (text("keys"), text(&s.describe_keys())),
            (text("channels"), text(&s.describe_channels())),
        ])
    };
    Reply::Map(vec![
        (
            text("flags"),
            Reply::Set(user.flags().into_iter().map(text).collect()),
        ),
        (
            text("passwords"),
            Reply::Array(user.passwords.iter().map(|p| text(p)).collect()),
        ),
        (text("commands"), text(&user.root.describe_commands())),
        (text("keys"), text(&user.root.describe_keys())),
        (text("channels"), text(&user.root.describe_channels())),
        (
            text("selectors"),
            Reply::Array(user.selectors.iter().map(selector_map).collect()),
        ),
    ])
}

fn deluser(ctx: &mut Ctx, names: &[&[u8]]) -> CmdResult {
    if names.iter().any(|n| *n == b"default") {
        return Err(Reply::error("ERR The 'default' user cannot be removed"));
    }
    let mut deleted = 0;
    for name in names {
        if ctx.shared.acl.remove(name) {
            deleted += 1;
            disconnect_users(ctx, name);
        }
    }
    Ok(Reply::Int(deleted))
}

fn cat(args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => Ok(Reply::Array(
            categories::NAMES
                .iter()
                .map(|(_, name)| Reply::bulk(name))
                .collect(),
        )),
        3 => {
            let bit = categories::by_name(args[2]).ok_or_else(|| {
                Reply::Error(
                    format!(
                        "ERR Unknown category '{}'",
                        super::printable(args[2], usize::MAX)
                    )
                    .into(),
                )
            })?;
            Ok(Reply::Array(
                IDS.rows
                    .iter()
                    .filter(|row| categories::of(row) & bit != 0)
                    .map(|row| Reply::bulk(row.name))
                    .collect(),
            ))
        }
        _ => Err(sub_arity(args)),
    }
}

fn genpass(args: &[&[u8]]) -> CmdResult {
    let bits = match args.len() {
        2 => 256,
        3 => int(args[2]).map_err(|_| Reply::error(err::NOT_INTEGER))?,
        _ => return Err(sub_arity(args)),
    };
    if !(1..=4096).contains(&bits) {
        return Err(Reply::error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"));
    }
    let chars = (bits as usize).div_ceil(4);
    let hex: String = (0..chars)
        .map(|_| char::from(b"0123456789abcdef"[rand::random::<usize>() % 16]))
        .collect();
    Ok(Reply::bulk(hex))
}

fn log(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let count = match args.len() {
        2 => 10,
        3 if is(args[2], "RESET") => {
            ctx.shared.acl.log.lock().reset();
            return Ok(Reply::OK);
        }
        3 => {
            // A negative count shows nothing, as Redis.
            int(args[2])
                .map_err(|_| Reply::error(err::NOT_INTEGER))?
                .max(0) as usize
        }
        _ => return Err(sub_arity(args)),
    };
    Ok(ctx.shared.acl.log.lock().render(count))
}

fn dryrun(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let Some(user) = ctx.shared.acl.get(args[2]) else {
        return Err(Reply::Error(
            format!(
                "ERR User '{}' not found",
                super::printable(args[2], usize::MAX)
            )
            .into(),
        ));
    };
    let request = &args[3..];
    let Some(cmd) = ctx.shared.commands.lookup(request[0]) else {
        return Err(Reply::Error(
            format!(
                "ERR Command '{}' not found",
                super::printable(request[0], usize::MAX)
            )
            .into(),
        ));
    };
    if !cmd.arity_ok(request.len()) {
        return Err(Reply::Error(super::wrong_arity(cmd.name).into()));
    }
    let effective = cmd.resolve(request).map_err(|e| Reply::Error(e.into()))?;
    let computed = effective.acl_keys.map(|find| find(ctx, request));
    let keys = computed
        .as_deref()
        .map_or(acl::Keys::Specs, acl::Keys::Computed);
    match acl::check(&user, effective, request, keys) {
        Ok(()) => Ok(Reply::OK),
        Err(refusal) => Ok(Reply::bulk(acl::message(
            refusal, &user, effective, request, keys, true,
        ))),
    }
}

fn aclfile(ctx: &Ctx) -> Option<std::path::PathBuf> {
    ctx.shared
        .config
        .read()
        .aclfile
        .clone()
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
}

fn load(ctx: &mut Ctx) -> CmdResult {
    let Some(path) = aclfile(ctx) else {
        return Err(Reply::error(NO_ACLFILE));
    };
    let channels = ctx.shared.config.read().acl_pubsub_default;
    let users =
        acl::file::load(&path, channels).map_err(|e| Reply::Error(format!("ERR {e}").into()))?;
    let before = ctx.shared.acl.names();
    ctx.shared.acl.replace_all(users);
    // Connections of users that are gone or now disabled are closed, as Redis does.
    for name in before {
        match ctx.shared.acl.get(&name) {
            Some(user) if user.enabled => disconnect_revoked_subscribers(ctx, &name),
            _ => disconnect_users(ctx, &name),
        }
    }
    Ok(Reply::OK)
}

fn save(ctx: &mut Ctx) -> CmdResult {
    let Some(path) = aclfile(ctx) else {
        return Err(Reply::error(NO_ACLFILE));
    };
    acl::file::save(&path, &ctx.shared.acl.all()).map_err(|e| {
        tracing::warn!(error = %e, "ACL SAVE failed");
        Reply::error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
    })?;
    Ok(Reply::OK)
}
