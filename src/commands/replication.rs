//! The primary's replication commands: SYNC and PSYNC (a replica asks for the data and the
//! stream), REPLCONF (what it says about itself), WAIT (a client waits for replicas' acks);
//! and a node's own: REPLICAOF (SLAVEOF) and FAILOVER.

use super::{args, BlockRequest, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::replication::failover::Request;
use crate::replication::master::{request_acks, Handoff};
use crate::replication::replica::{follow, stop_following, Target};
use bytes::Bytes;

/// No reply: the connection's next bytes are the replication's (or none, as for a REPLCONF ACK).
fn silent() -> CmdResult {
    Ok(Reply::Raw(Bytes::new()))
}

fn hand_over(ctx: &mut Ctx, psync: Option<(Vec<u8>, i64)>) -> CmdResult {
    if ctx.shared.replication.replica.following() {
        // A deliberate difference: Redis chains replicas; stmd's replicas feed none.
        return Err(Reply::error(
            "ERR this replica does not feed replicas of its own: replicate from its primary",
        ));
    }
    ctx.conn.replica_handoff = Some(Handoff {
        psync,
        conf: std::mem::take(&mut ctx.conn.replconf),
        pending: Default::default(),
    });
    silent()
}

/// SYNC: the old full sync (no `+FULLRESYNC` line).
pub fn sync(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    hand_over(ctx, None)
}

/// PSYNC replicationid offset: a partial sync when this node's stream still holds what follows
/// `offset` of that history, else a full one.
pub fn psync(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let offset = args::int(args[2])?;
    // `PSYNC <replid> <offset> FAILOVER`: this replica's primary hands its role over (FAILOVER).
    if args.get(3).is_some_and(|word| args::is(word, "FAILOVER")) {
        crate::replication::failover::take_over(ctx.shared, args[1])?;
    }
    hand_over(ctx, Some((args[1].to_vec(), offset)))
}

/// REPLCONF option value [option value …].
pub fn replconf(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() % 2 == 0 {
        return Err(Reply::error(super::err::SYNTAX));
    }
    for pair in args[1..].chunks(2) {
        let (option, value) = (pair[0], pair[1]);
        match option.to_ascii_lowercase().as_slice() {
            b"listening-port" => {
                let port = args::int(value)?;
                ctx.conn.replconf.listening_port = u16::try_from(port).unwrap_or(0);
            }
            b"ip-address" => {
                ctx.conn.replconf.ip_address = Some(String::from_utf8_lossy(value).into_owned())
            }
            b"capa" => {
                if value.eq_ignore_ascii_case(b"eof") {
                    ctx.conn.replconf.capa_eof = true;
                }
            }
            // Acknowledgements reach the primary on a replica's link, not here; sent by a
            // client they get no reply, as in Redis.
            b"ack" | b"fack" => return silent(),
            // Only a primary asks this, of its replicas.
            b"getack" => return silent(),
            b"rdb-only" => {
                if !(0..=1).contains(&args::int(value)?) {
                    return Err(Reply::error(
                        "ERR value is out of range, value must between 0 and 1",
                    ));
                }
            }
            b"rdb-filter-only" => {
                let text = String::from_utf8_lossy(value);
                let mut filters = text.split_whitespace();
                if let Some(other) = filters.find(|f| !f.eq_ignore_ascii_case("functions")) {
                    return Err(unsupported_filter(other));
                }
            }
            _ => {
                return Err(Reply::Error(
                    format!(
                        "ERR Unrecognized REPLCONF option: {}",
                        super::printable(option, 128)
                    )
                    .into(),
                ))
            }
        }
    }
    Ok(Reply::OK)
}

fn unsupported_filter(filter: &str) -> Reply {
    Reply::Error(format!("ERR Unsupported rdb-filter-only option: {filter}").into())
}

/// WAIT numreplicas timeout: blocks until `numreplicas` replicas acknowledged this client's last
/// write, or `timeout` ms pass (0: forever); answers how many did.
pub fn wait(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let wanted = args::int(args[1])?;
    let timeout = args::int(args[2])
        .map_err(|_| Reply::error("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    let master = &ctx.shared.replication.master;
    let acked = master.acked_at_least(ctx.conn.repl_offset) as i64;
    if acked >= wanted || ctx.in_exec() || !master.any() {
        return Ok(Reply::Int(acked));
    }
    let first = ctx.conn.wait.is_none();
    if first {
        ctx.conn.wait = Some(master.acks.register(vec![Bytes::from_static(b"wait")]));
        request_acks(&ctx.shared.replication.feed);
    }
    let deadline = (timeout > 0)
        .then(|| std::time::Instant::now() + std::time::Duration::from_millis(timeout as u64));
    ctx.conn.block = Some(BlockRequest {
        deadline: if first { deadline } else { None },
        timeout_reply: Reply::Int(acked),
    });
    Ok(Reply::Nil)
}

/// WAITAOF: blocks until this client's last write is synced to the local log (`numlocal` 1) and
/// to the logs of `numreplicas` replicas; answers how many of each have it.
pub fn waitaof(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let numlocal = args::int(args[1])?;
    if !(0..=1).contains(&numlocal) {
        return Err(Reply::error(
            "ERR value is out of range, value must between 0 and 1",
        ));
    }
    let numreplicas = args::int(args[2])?;
    if numreplicas < 0 {
        return Err(Reply::error("ERR value is out of range, must be positive"));
    }
    let timeout = args::int(args[3])
        .map_err(|_| Reply::error("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    let shared = ctx.shared;
    if shared.replication.replica.following() {
        return Err(Reply::error("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated."));
    }
    if numlocal > 0 && !shared.aof.on() {
        return Err(Reply::error(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        ));
    }
    // Replicas report how far their logs are synced with `REPLCONF ACK <offset> FACK <offset>`.
    let master = &shared.replication.master;
    let replicas = master.aof_acked_at_least(ctx.conn.repl_offset) as i64;
    let local = i64::from(shared.aof.on() && shared.aof.synced() >= ctx.conn.repl_offset);
    let counts = Reply::Array(vec![Reply::Int(local), Reply::Int(replicas)]);
    if (local >= numlocal && replicas >= numreplicas) || ctx.in_exec() {
        return Ok(counts);
    }
    let first = ctx.conn.wait.is_none();
    if first {
        ctx.conn.wait = Some(master.acks.register(vec![Bytes::from_static(b"wait")]));
        if numreplicas > 0 {
            request_acks(&shared.replication.feed);
        }
    }
    let deadline = (timeout > 0)
        .then(|| std::time::Instant::now() + std::time::Duration::from_millis(timeout as u64));
    ctx.conn.block = Some(BlockRequest {
        deadline: if first { deadline } else { None },
        timeout_reply: counts,
    });
    Ok(Reply::Nil)
}

/// ROLE's answer on a primary: its offset and each replica's address and acknowledged offset.
pub fn primary_role(ctx: &Ctx) -> Reply {
    let replication = &ctx.shared.replication;
    let replicas = replication
        .master
        .replicas()
        .iter()
        .filter(|r| r.online())
        .map(|r| {
            Reply::Array(vec![
                Reply::bulk(&r.ip),
                Reply::bulk(r.port.to_string()),
                Reply::bulk(
                    r.acked
                        .load(std::sync::atomic::Ordering::Relaxed)
                        .to_string(),
                ),
            ])
        })
        .collect();
    Reply::Array(vec![
        Reply::bulk_str("master"),
        Reply::Int(ctx.shared.replication.feed.end() as i64),
        Reply::Array(replicas),
    ])
}

/// REPLICAOF host port | NO ONE (and SLAVEOF), with Redis's replies.
pub fn replicaof(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let shared = ctx.shared;
    if shared.cluster.is_some() {
        return Err(Reply::error("ERR REPLICAOF not allowed in cluster mode."));
    }
    if args[1].eq_ignore_ascii_case(b"no") && args[2].eq_ignore_ascii_case(b"one") {
        if shared.replication.replica.following() {
            stop_following(shared);
        }
        return Ok(Reply::OK);
    }
    let port = args::int(args[2])
        .ok()
        .and_then(|p| u16::try_from(p).ok())
        .ok_or_else(|| Reply::error("ERR Invalid master port"))?;
    let host = String::from_utf8_lossy(args[1]).into_owned();
    let already = shared
        .replication
        .replica
        .target()
        .is_some_and(|t| t.host.eq_ignore_ascii_case(&host) && t.port == port);
    if already {
        return Ok(Reply::Status(
            "OK Already connected to specified master".into(),
        ));
    }
    follow(shared, host, port, true);
    Ok(Reply::OK)
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds].
pub fn failover(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let shared = ctx.shared;
    if shared.cluster.is_some() {
        return Err(Reply::error("ERR FAILOVER not allowed in cluster mode."));
    }
    let request = parse_failover(args)?;
    shared.replication.failover.request(shared, request)?;
    Ok(Reply::OK)
}

/// Parses as Redis: each option once, ABORT alone.
fn parse_failover(args: &[&[u8]]) -> Result<Request, Reply> {
    let mut request = Request::default();
    let mut at = 1;
    while at < args.len() {
        let word = args[at];
        if args::is(word, "TO") && at + 2 < args.len() && request.to.is_none() {
            let port = args::int(args[at + 2])?;
            request.to = Some(Target {
                host: String::from_utf8_lossy(args[at + 1]).into_owned(),
                port: u16::try_from(port).unwrap_or(0),
            });
            at += 2;
        } else if args::is(word, "TIMEOUT") && at + 1 < args.len() && request.timeout_ms.is_none() {
            let timeout = args::int(args[at + 1])?;
            if timeout <= 0 {
                return Err(Reply::error("ERR FAILOVER timeout must be greater than 0"));
            }
            request.timeout_ms = Some(timeout);
            at += 1;
        } else if args::is(word, "FORCE") && !request.force {
            request.force = true;
        } else if args::is(word, "ABORT") && !request.abort {
            request.abort = true;
        } else {
            return Err(Reply::error(super::err::SYNTAX));
        }
        at += 1;
    }
    if request.abort && (request.force || request.to.is_some() || request.timeout_ms.is_some()) {
        return Err(Reply::error(super::err::SYNTAX));
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Result<Request, Reply> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse_failover(&args)
    }

    #[test]
    fn options_parse_as_redis_parses_them() {
        let r = parsed("FAILOVER TO h 7 FORCE TIMEOUT 50").expect("valid");
        assert_eq!(
            r.to,
            Some(Target {
                host: "h".into(),
                port: 7
            })
        );
        assert_eq!((r.timeout_ms, r.force, r.abort), (Some(50), true, false));
        assert!(parsed("FAILOVER ABORT").expect("valid").abort);
        for bad in [
            "FAILOVER ABORT TIMEOUT 5",
            "FAILOVER FORCE FORCE",
            "FAILOVER TO h",
            "FAILOVER X",
        ] {
            assert!(
                matches!(parsed(bad), Err(Reply::Error(e)) if &*e == super::super::err::SYNTAX),
                "{bad}"
            );
        }
        assert!(
            matches!(parsed("FAILOVER TIMEOUT 0"), Err(Reply::Error(e)) if e.contains("greater than 0"))
        );
        assert!(
            matches!(parsed("FAILOVER TO h x"), Err(Reply::Error(e)) if &*e == super::super::err::NOT_INTEGER)
        );
    }
}
