//! MIGRATE: moves keys to another server (Redis or stmd) with DUMP payloads and RESTORE.
//!
//! `MIGRATE host port <key | ""> destination-db timeout [COPY] [REPLACE]
//! [AUTH password | AUTH2 username password] [KEYS key [key ...]]`
//!
//! As Redis: the keys found are dumped, sent as one pipeline (`AUTH`, `SELECT db`, then a
//! `RESTORE key ttl payload [REPLACE]` per key, `RESTORE-ASKING` in cluster mode), and the keys
//! the target accepted are deleted here unless COPY (replicas get `DEL key …`; keyspace events
//! `del`). Replies and errors are Redis's: `+NOKEY` when no key exists, `-IOERR …` when the target
//! cannot be reached or does not answer within the timeout, `ERR Target instance replied with
//! error: …` for the target's first error.
//!
//! Unlike Redis, the keys are not locked while they travel: a key written here in the meantime
//! (its version changed) is kept rather than deleted, so no write is lost. Each MIGRATE opens
//! its own connection to the target (Redis keeps one per target for 10 s).

use super::args::{int, is};
use super::{err, CmdResult, Ctx};
use crate::cluster::peers::{encode, Link};
use crate::protocol::Reply;
use crate::rdb;
use crate::replication::feed;
use redis_protocol::resp2::types::OwnedFrame;
use std::time::Duration;

/// Redis's timeout when the one given is 0 or negative.
const DEFAULT_TIMEOUT_MS: u64 = 1000;

const CONNECT_FAILED: &str = "IOERR error or timeout connecting to the client";
const WRITE_FAILED: &str = "IOERR error or timeout writing to target instance";
const READ_FAILED: &str = "IOERR error or timeout reading to target instance";

/// A parsed MIGRATE request.
struct Request<'a> {
    host: &'a [u8],
    port: u16,
    db: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    /// `AUTH password` or `AUTH2 username password`: (username, password).
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    keys: &'a [&'a [u8]],
}

/// Parses as Redis does: the options first (syntax errors, KEYS with a key), then the timeout and
/// the database (`value is not an integer`).
fn parse<'a>(args: &'a [&'a [u8]]) -> Result<Request<'a>, Reply> {
    let mut request = Request {
        host: args[1],
        port: port(args[2]),
        db: 0,
        timeout: Duration::ZERO,
        copy: false,
        replace: false,
        auth: None,
        keys: &args[3..4],
    };
    let mut at = 6;
    while at < args.len() {
        let more = args.len() - 1 - at;
        let word = args[at];
        if is(word, "COPY") {
            request.copy = true;
        } else if is(word, "REPLACE") {
            request.replace = true;
        } else if is(word, "AUTH") && more >= 1 {
            request.auth = Some((None, args[at + 1]));
            at += 1;
        } else if is(word, "AUTH2") && more >= 2 {
            request.auth = Some((Some(args[at + 1]), args[at + 2]));
            at += 2;
        } else if is(word, "KEYS") {
            if !args[3].is_empty() {
                return Err(Reply::error(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            request.keys = &args[at + 1..];
            break;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        at += 1;
    }
    let timeout = int(args[5])?;
    request.db = int(args[4])?;
    request.timeout = Duration::from_millis(match timeout {
        t if t <= 0 => DEFAULT_TIMEOUT_MS,
        t => t as u64,
    });
    Ok(request)
}

/// The port as C's `atoi` reads it (Redis does): leading digits, anything else is port 0, to
/// which no connection succeeds.
fn port(arg: &[u8]) -> u16 {
    let digits = arg.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&arg[..digits])
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// A key to send: its name, its version when dumped (deleted only if still the same), its time to
/// live in ms (0: none) and its DUMP payload.
struct Outgoing<'a> {
    key: &'a [u8],
    version: u64,
    ttl_ms: u64,
    payload: Vec<u8>,
}

pub fn migrate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let request = parse(args)?;
    let outgoing = dump_keys(ctx, request.keys);
    if outgoing.is_empty() {
        return Ok(Reply::Status("NOKEY".into()));
    }
    let restore: &[u8] = match ctx.shared.cluster {
        Some(_) => b"RESTORE-ASKING",
        None => b"RESTORE",
    };
    let pipeline = pipeline(&request, restore, &outgoing);
    let outcome = transfer(&request, pipeline, outgoing.len());
    if !request.copy {
        let accepted: Vec<&Outgoing> = outgoing
            .iter()
            .zip(&outcome.restored)
            .filter(|(_, &ok)| ok)
            .map(|(key, _)| key)
            .collect();
        delete_unchanged(ctx, &accepted);
    }
    match outcome.error {
        Some(error) => Err(Reply::Error(error.into())),
        None => Ok(Reply::OK),
    }
}

/// The live keys among `keys`, dumped (a read: their idle time restarts, as in Redis).
fn dump_keys<'a>(ctx: &mut Ctx, keys: &[&'a [u8]]) -> Vec<Outgoing<'a>> {
    let mut locked = ctx.lock(keys);
    let now = locked.now;
    let mut outgoing = Vec::new();
    for &key in keys {
        let Some(entry) = locked.get(key) else {
            continue;
        };
        let ttl_ms = match entry.expire_at() {
            0 => 0,
            at => at.saturating_sub(now).max(1),
        };
        outgoing.push(Outgoing {
            key,
            version: entry.version(),
            ttl_ms,
            payload: rdb::dump(&entry.value),
        });
    }
    outgoing
}

/// `[AUTH …] SELECT db RESTORE … …` in RESP. A connection is new for every MIGRATE, so SELECT is
/// always sent (Redis sends it on a new connection too).
fn pipeline(request: &Request, restore: &[u8], outgoing: &[Outgoing]) -> Vec<u8> {
    let mut out = Vec::new();
    match request.auth {
        Some((Some(user), password)) => encode(&mut out, &[b"AUTH", user, password]),
        Some((None, password)) => encode(&mut out, &[b"AUTH", password]),
        None => {}
    }
    let db = request.db.to_string();
    encode(&mut out, &[b"SELECT", db.as_bytes()]);
    for key in outgoing {
        let ttl = key.ttl_ms.to_string();
        let mut command: Vec<&[u8]> = vec![restore, key.key, ttl.as_bytes(), &key.payload];
        if request.replace {
            command.push(b"REPLACE");
        }
        encode(&mut out, &command);
    }
    out
}

/// What the target did with the keys: which it restored, and the error to answer, if any.
struct Outcome {
    restored: Vec<bool>,
    error: Option<String>,
}

/// Sends the pipeline and reads its replies, off this tokio worker (other connections' tasks
/// move to another thread meanwhile). Each step is bounded by the request's timeout.
fn transfer(request: &Request, pipeline: Vec<u8>, keys: usize) -> Outcome {
    let failed = |error: &str| Outcome {
        restored: vec![false; keys],
        error: Some(error.to_string()),
    };
    let handle = match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            handle
        }
        // Only the tests' single-threaded runtimes: stmd itself runs on the multi-threaded one.
        _ => return failed("ERR MIGRATE needs the multi-threaded runtime"),
    };
    let host = String::from_utf8_lossy(request.host).into_owned();
    let (port, limit, auth) = (request.port, request.timeout, request.auth.is_some());
    crate::worker::off_worker(|| {
        handle.block_on(async move {
            let connected = tokio::time::timeout(limit, Link::connect((host.as_str(), port), ""));
            let mut link = match connected.await {
                Ok(Ok(link)) => link,
                // Redis connects without blocking and sees a refusal only when it writes.
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    return failed(WRITE_FAILED)
                }
                _ => return failed(CONNECT_FAILED),
            };
            match tokio::time::timeout(limit, link.send(&pipeline)).await {
                Ok(Ok(())) => {}
                _ => return failed(WRITE_FAILED),
            }
            read_replies(&mut link, limit, auth, keys).await
        })
    })
}

/// Reads the AUTH (when sent) and SELECT replies, then one per RESTORE. As Redis: an error from
/// AUTH or SELECT fails every key; the first error is the one answered; keys acknowledged
/// before the connection failed count as moved.
async fn read_replies(link: &mut Link, limit: Duration, auth: bool, keys: usize) -> Outcome {
    let mut outcome = Outcome {
        restored: Vec::with_capacity(keys),
        error: None,
    };
    let mut setup_error = None;
    for _ in 0..(1 + usize::from(auth)) {
        match tokio::time::timeout(limit, link.reply()).await {
            Ok(Ok(frame)) => setup_error = setup_error.or_else(|| error_text(&frame)),
            _ => {
                outcome.restored.resize(keys, false);
                outcome.error = Some(READ_FAILED.to_string());
                return outcome;
            }
        }
    }
    for _ in 0..keys {
        let frame = match tokio::time::timeout(limit, link.reply()).await {
            Ok(Ok(frame)) => frame,
            _ => {
                outcome.restored.resize(keys, false);
                outcome.error.get_or_insert_with(|| READ_FAILED.to_string());
                return outcome;
            }
        };
        let error = setup_error.clone().or_else(|| error_text(&frame));
        if let Some(error) = &error {
            outcome
                .error
                .get_or_insert_with(|| format!("ERR Target instance replied with error: {error}"));
        }
        outcome.restored.push(error.is_none());
    }
    outcome
}

/// The text of an error reply.
fn error_text(frame: &OwnedFrame) -> Option<String> {
    match frame {
        OwnedFrame::Error(text) => Some(text.to_string()),
        _ => None,
    }
}

/// Deletes the keys the target restored, unless they were written here since they were dumped,
/// and has replicas delete them too (`DEL key …`, as Redis propagates MIGRATE).
fn delete_unchanged(ctx: &mut Ctx, accepted: &[&Outgoing]) {
    if accepted.is_empty() {
        return;
    }
    let keys: Vec<&[u8]> = accepted.iter().map(|key| key.key).collect();
    let mut locked = ctx.lock(&keys);
    let mut deleted: Vec<&[u8]> = vec![b"DEL"];
    for key in accepted {
        if locked.version(key.key) == Some(key.version) && locked.remove(key.key).is_some() {
            deleted.push(key.key);
        }
    }
    // Before the lock drops: that is when the write goes into the replication stream.
    if deleted.len() > 1 {
        feed::propagate_as(&deleted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<&[u8]> {
        line.split(' ')
            .map(|a| if a == "''" { &b""[..] } else { a.as_bytes() })
            .collect()
    }

    #[test]
    fn the_port_is_read_as_atoi_reads_it() {
        assert_eq!(port(b"6379"), 6379);
        assert_eq!(port(b"6379abc"), 6379);
        assert_eq!(port(b"abc"), 0);
        assert_eq!(port(b"99999"), 0);
    }

    #[test]
    fn options_are_parsed_before_the_numbers() {
        let a = args("MIGRATE h 1 k x y FOO");
        assert!(matches!(parse(&a), Err(Reply::Error(e)) if &*e == err::SYNTAX));
        let a = args("MIGRATE h 1 k 0 x");
        assert!(matches!(parse(&a), Err(Reply::Error(e)) if &*e == err::NOT_INTEGER));
        let a = args("MIGRATE h 1 k 0 0 KEYS a");
        assert!(matches!(parse(&a), Err(Reply::Error(e)) if e.starts_with("ERR When using")));
        let a = args("MIGRATE h 1 k 0 0 AUTH");
        assert!(matches!(parse(&a), Err(Reply::Error(e)) if &*e == err::SYNTAX));
    }

    #[test]
    fn a_parsed_request_has_its_keys_auth_and_default_timeout() {
        let a = args("MIGRATE h 1 '' 3 0 copy AUTH2 u p REPLACE KEYS a b");
        let request = parse(&a).expect("valid");
        assert_eq!(request.keys, [&b"a"[..], b"b"]);
        assert_eq!(request.auth, Some((Some(&b"u"[..]), &b"p"[..])));
        assert!(request.copy && request.replace);
        assert_eq!(
            (request.db, request.timeout),
            (3, Duration::from_millis(1000))
        );
    }
}
