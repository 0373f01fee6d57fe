//! Operator commands: SLOWLOG and MONITOR.

use super::args::is;
use super::connection::help_reply;
use super::{CmdResult, Ctx};
use crate::protocol::Reply;

/// Entries SLOWLOG GET returns without a count, as in Redis.
const DEFAULT_GET: usize = 10;

pub fn slowlog(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let log = &ctx.shared.slowlog;
    if is(sub, "GET") {
        if args.len() > 3 {
            return Err(Reply::error(
                "ERR wrong number of arguments for 'slowlog|get' command",
            ));
        }
        let count = match args.get(2) {
            None => Some(DEFAULT_GET),
            Some(arg) => {
                let bad = || Reply::error("ERR count should be greater than or equal to -1");
                let n: i64 = std::str::from_utf8(arg)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(bad)?;
                match n {
                    -1 => None,
                    n if n < -1 => return Err(bad()),
                    n => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                }
            }
        };
        let entries = log
            .newest(count)
            .into_iter()
            .map(|e| {
                Reply::Array(vec![
                    Reply::Int(e.id as i64),
                    Reply::Int(e.unix_secs as i64),
                    Reply::Int(e.micros.min(i64::MAX as u64) as i64),
                    Reply::Array(e.args.into_iter().map(Reply::Bulk).collect()),
                    Reply::Bulk(e.client_addr.into()),
                    Reply::Bulk(e.client_name),
                ])
            })
            .collect();
        Ok(Reply::Array(entries))
    } else if is(sub, "LEN") {
        Ok(Reply::Int(log.len() as i64))
    } else if is(sub, "RESET") {
        log.reset();
        Ok(Reply::OK)
    } else {
        Ok(help_reply(&[
            "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
            "HELP",
            "    Print this help.",
        ]))
    }
}

/// From now on this connection receives every command other clients run (see `crate::monitor`).
pub fn monitor(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.in_exec() {
        return Err(Reply::error(
            "ERR MONITOR isn't allowed inside a transaction",
        ));
    }
    if !ctx.conn.monitor {
        // Monitors are `normal` clients for the output-buffer limits, as in Redis.
        let limit = ctx.shared.config.read().client_output_buffer_limit.normal;
        let mailbox = ctx.conn.subs.mailbox(
            &ctx.conn.info,
            crate::output_limit::ClientClass::Normal,
            limit,
        );
        ctx.shared.monitors.add(ctx.conn.info.id, mailbox);
        ctx.conn.monitor = true;
    }
    Ok(Reply::OK)
}
