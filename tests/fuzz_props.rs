//! Property tests run in CI: the request decoder never panics and decodes a stream the same however
//! it is split, and arbitrary STM argument vectors never panic and never write on error.

use proptest::prelude::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use stmd::commands::{self, ConnState, Ctx};
use stmd::config::Config;
use stmd::persist::PersistHandle;
use stmd::protocol::{parse_request, Limits, Parsed};
use stmd::server::Shared;
use stmd::store::Store;

const LIMITS: Limits = Limits {
    max_bulk_len: 1 << 20,
    max_args: 1 << 16,
    authenticated: true,
};

/// What a connection would do with the bytes: each request's arguments, or the closing error.
#[derive(Debug, PartialEq)]
enum Event {
    Request(Vec<Vec<u8>>),
    Error(String),
}

/// Decodes as much of `buf` as is complete, appending events; returns bytes consumed and whether
/// the stream ended in a protocol error.
fn drain(buf: &[u8], events: &mut Vec<Event>) -> (usize, bool) {
    let mut ranges = Vec::new();
    let mut pos = 0;
    loop {
        match parse_request(&buf[pos..], LIMITS, &mut ranges) {
            Parsed::Request(used) => {
                let args = ranges
                    .iter()
                    .map(|&(s, e)| buf[pos + s..pos + e].to_vec())
                    .collect();
                events.push(Event::Request(args));
                pos += used;
            }
            Parsed::Inline(used, args) => {
                events.push(Event::Request(args));
                pos += used;
            }
            Parsed::Incomplete { .. } => return (pos, false),
            Parsed::Error(e) => {
                events.push(Event::Error(e));
                return (pos, true);
            }
        }
    }
}

fn decode_whole(buf: &[u8]) -> Vec<Event> {
    let mut events = Vec::new();
    drain(buf, &mut events);
    events
}

fn decode_split(buf: &[u8], cuts: &[usize]) -> Vec<Event> {
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

fn multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn request() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(prop::collection::vec(any::<u8>(), 0..24), 1..6).prop_map(|a| multibulk(&a)),
        1 => "[A-Za-z]{1,8}( [A-Za-z0-9\"']{0,8}){0,3}\r?\n".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..16),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_split_decodes_like_one_piece(
        requests in prop::collection::vec(request(), 1..8),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let stream: Vec<u8> = requests.concat();
        prop_assert_eq!(decode_split(&stream, &cuts), decode_whole(&stream));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_whole(&bytes);
        let _ = decode_split(&bytes, &[1, 7, 33]);
    }
}

/// An in-process server state: dispatch without sockets, so thousands of cases run quickly.
fn shared() -> Arc<Shared> {
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

const WORDS: &[&str] = &[
    "USER",
    "CHANNEL",
    "SERVER",
    "PARENT",
    "PRIVACY",
    "STOP",
    "MSG",
    "REPLY",
    "PERSONA",
    "LINEAGE",
    "TEXT",
    "SET",
    "EXCLUDE",
    "LIMIT",
    "FORMAT",
    "BY",
    "KEY",
    "JSON",
    "RESP",
    "DM",
    "FULL",
    "user",
    "model",
    "-",
    "0",
    "1",
    "7",
    "-3",
    "u1",
    "c1",
    "s1",
    "",
    "a:b",
    "x y",
    "shortterm:user:u1:c1",
    "shortterm:server:s1:c1:7",
    "99999999999999999999",
    "héllo",
    "<:e:123456789012345678>",
];

fn stm_command() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let name = prop::sample::select(vec![
        "STM.CAPTURE",
        "STM.GET",
        "STM.TICK",
        "STM.SUMMARY",
        "STM.CATEGORIES",
        "STM.RECENT",
        "STM.FORGET",
    ]);
    let arg = prop_oneof![
        4 => prop::sample::select(WORDS.to_vec()).prop_map(|w| w.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..12),
    ];
    (name, prop::collection::vec(arg, 0..16)).prop_map(|(n, mut args)| {
        args.insert(0, n.as_bytes().to_vec());
        args
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn stm_commands_never_panic_and_never_write_on_error(args in stm_command()) {
        let shared = shared();
        let info = shared.clients.register("127.0.0.1:1".parse().expect("addr"), shared.local_addr);
        let mut conn = ConnState::new(info, true);
        // A string where a capture in server s1, channel c1 would write: WRONGTYPE must undo nothing.
        let setup: [&[u8]; 3] = [b"SET", b"shortterm:server:s1:c1", b"plain"];
        let argv: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let reply = {
            let mut ctx = Ctx::new(&shared, &mut conn);
            prop_assert!(!commands::dispatch(&mut ctx, &setup).is_error());
            commands::dispatch(&mut ctx, &argv)
        };
        if reply.is_error() {
            prop_assert_eq!(shared.store.len(), 1, "an error wrote keys: {:?}", reply);
            let emitted: u64 = shared.stm.persist.stats.emitted.iter().map(|c| c.load(Ordering::Relaxed)).sum();
            prop_assert_eq!(emitted, 0, "an error queued row operations: {:?}", reply);
        }
    }
}
