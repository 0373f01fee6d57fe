//! What the property tests (tests/fuzz_props.rs) and the cargo-fuzz targets (fuzz/) both check,
//! in one place: decoding a byte stream whole or in pieces, and running one command against an
//! in-process server state while watching that an error reply wrote nothing.
//! The fuzz crate includes this file with `#[path]`; it uses only the `stmd` library.
#![allow(dead_code)]

use std::sync::atomic::Ordering;
use std::sync::Arc;
use stmd::clients::ClientAddr;
use stmd::commands::Shared;
use stmd::commands::{self, ConnState, Ctx};
use stmd::config::Config;
use stmd::protocol::{parse_request, Limits, Parsed, Reply};
use stmd::scope_rows::PersistHandle;
use stmd::store::Store;

pub const LIMITS: Limits = Limits {
    max_bulk_len: 1 << 20,
    max_args: 1 << 16,
    authenticated: true,
};

/// What a connection would do with the bytes: each request's arguments, or the closing error.
#[derive(Debug, PartialEq)]
pub enum Event {
    Request(Vec<Vec<u8>>),
    Error(String),
}

/// Decodes as much of `buf` as is complete, appending events; returns bytes consumed and whether
/// the stream ended in a protocol error. Panics when the decoder claims bytes or argument ranges
/// beyond `buf`, or when a request decodes differently without the bytes that follow it (the
/// decoder looked past the request it returned).
pub fn drain(buf: &[u8], events: &mut Vec<Event>) -> (usize, bool) {
    let mut ranges = Vec::new();
    let mut alone = Vec::new();
    let mut pos = 0;
    loop {
        let rest = &buf[pos..];
        let parsed = parse_request(rest, LIMITS, &mut ranges);
        let used = match &parsed {
            Parsed::Request(used) | Parsed::Inline(used, _) => *used,
            Parsed::Incomplete { min_total } => {
                assert!(
                    *min_total > rest.len(),
                    "incomplete yet {min_total} bytes would do"
                );
                return (pos, false);
            }
            Parsed::Error(e) => {
                events.push(Event::Error(e.clone()));
                return (pos, true);
            }
        };
        assert!(
            used > 0 && used <= rest.len(),
            "consumed {used} of {} bytes",
            rest.len()
        );
        assert_eq!(
            parse_request(&rest[..used], LIMITS, &mut alone),
            parsed,
            "the request decodes differently without the bytes after it"
        );
        let args = match parsed {
            Parsed::Inline(_, args) => args,
            _ => {
                assert_eq!(alone, ranges, "argument ranges depend on later bytes");
                ranges
                    .iter()
                    .map(|&(s, e)| {
                        assert!(
                            s <= e && e <= used,
                            "argument range {s}..{e} outside {used}"
                        );
                        rest[s..e].to_vec()
                    })
                    .collect()
            }
        };
        events.push(Event::Request(args));
        pos += used;
    }
}

pub fn decode_whole(buf: &[u8]) -> Vec<Event> {
    let mut events = Vec::new();
    drain(buf, &mut events);
    events
}

/// Decodes `buf` as a connection receiving it in pieces ending at `cuts` (taken modulo the length).
pub fn decode_split(buf: &[u8], cuts: &[usize]) -> Vec<Event> {
    let mut events = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    let mut start = 0;
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (buf.len() + 1)).collect();
    points.push(buf.len());
    points.sort_unstable();
    for end in points {
        pending.extend_from_slice(&buf[start..end.max(start)]);
        start = end.max(start);
        let (used, failed) = drain(&pending, &mut events);
        if failed {
            return events;
        }
        pending.drain(..used);
    }
    events
}

/// An in-process server state without persistence: dispatch without sockets, so thousands of
/// cases run quickly.
pub fn in_process() -> Arc<Shared> {
    let config = Config {
        no_database: true,
        ..Config::default()
    };
    let addr = "127.0.0.1:6379".parse().expect("addr");
    Arc::new(
        Shared::new(
            config,
            addr,
            Arc::new(Store::new()),
            PersistHandle::disabled(),
        )
        .expect("shared"),
    )
}

pub fn new_conn(shared: &Shared) -> ConnState {
    let info = shared.clients.register(
        ClientAddr::Tcp("127.0.0.1:1".parse().expect("addr")),
        ClientAddr::Tcp(shared.local_addr),
        -1,
    );
    ConnState::new(info, true)
}

/// Every key of every database with its version (changed by each write) and expiry: equal
/// snapshots, no write.
fn snapshot(shared: &Shared) -> Vec<(usize, Vec<u8>, u64, u64)> {
    let mut keys = Vec::new();
    let dbs: Vec<usize> = shared.store.existing_dbs().map(|(db, _)| db).collect();
    for db in dbs {
        shared
            .store
            .lock_all(db)
            .for_each(|k, e| keys.push((db, k.to_vec(), e.version(), e.expire_at())));
    }
    keys.sort_unstable();
    keys
}

fn rows_queued(shared: &Shared) -> u64 {
    let stats = &shared.stm.persist.stats;
    stats
        .emitted
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
}

/// Runs `argv` (not empty) on a fresh in-process state holding a plain string where a capture in
/// server `s1`, channel `c1` would write, so WRONGTYPE paths are reached too. Returns the reply,
/// or what an error reply changed: keys, expiries or queued STM row operations.
pub fn run_on_fresh_state(argv: &[&[u8]]) -> Result<Reply, String> {
    let shared = in_process();
    let mut conn = new_conn(&shared);
    let mut ctx = Ctx::new(&shared, &mut conn);
    let setup: [&[u8]; 3] = [b"SET", b"shortterm:server:s1:c1", b"plain"];
    assert!(!commands::dispatch(&mut ctx, &setup).is_error());
    let (keys_before, rows_before) = (snapshot(&shared), rows_queued(&shared));
    let reply = commands::dispatch(&mut ctx, argv);
    if reply.is_error() {
        if snapshot(&shared) != keys_before {
            return Err(format!("the error reply {reply:?} changed the keyspace"));
        }
        if rows_queued(&shared) != rows_before {
            return Err(format!("the error reply {reply:?} queued row operations"));
        }
    }
    Ok(reply)
}
