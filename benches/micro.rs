//! Micro-benchmarks of the hot path, one piece at a time: request decoding, dispatch of a
//! command to the store, reply encoding, STM text cleaning, and a whole STM.CAPTURE applied to the
//! store, and STM.CONTEXT's read side. They show which piece a change moved; the side-by-side figures against Redis come from
//! `benches/compare`.
//!
//! Run: `cargo bench --bench micro` (criterion; add a name to run one group, e.g. `-- decode`).

#[path = "../tests/common/mod.rs"]
mod common;

use bytes::BytesMut;
use clap::Parser;
use common::resp;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::sync::Arc;
use stmd::commands::Shared;
use stmd::commands::{dispatch, ConnState, Ctx};
use stmd::config::Config;
use stmd::protocol::{parse_request, Limits, Reply};
use stmd::scope_rows::PersistHandle;
use stmd::stm::text::TextCleaner;
use stmd::store::Store;

const LIMITS: Limits = Limits {
    max_bulk_len: 512 * 1024 * 1024,
    max_args: 1024 * 1024,
    authenticated: true,
};

/// A turn as bots send it: ten 300-byte messages and one reply (the benches/compare workload).
fn capture_args(user: &str) -> Vec<Vec<u8>> {
    let text = "x".repeat(300);
    let mut args: Vec<Vec<u8>> = ["STM.CAPTURE", "USER", user, "CHANNEL", "c1", "SERVER", "s1"]
        .iter()
        .map(|a| a.as_bytes().to_vec())
        .collect();
    for i in 0..10 {
        for a in ["MSG", "user", "-"] {
            args.push(a.as_bytes().to_vec());
        }
        args.push(format!("m{i}{text}").into_bytes());
    }
    for a in ["REPLY", "1", "-", "-"] {
        args.push(a.as_bytes().to_vec());
    }
    args.push(format!("r{text}").into_bytes());
    args
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    let set = resp(&[b"SET", b"key:000123", b"xxx"]);
    let capture: Vec<u8> = {
        let args = capture_args("u1");
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        resp(&refs)
    };
    let mut ranges = Vec::new();
    for (name, bytes) in [("set", &set), ("stm_capture", &capture)] {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| parse_request(black_box(bytes), LIMITS, &mut ranges))
        });
    }
    group.bench_function("inline_ping", |b| {
        b.iter(|| parse_request(black_box(b"PING\r\n"), LIMITS, &mut ranges))
    });
    group.finish();
}

/// A server's shared state with no listener and no database: what a connection dispatches into.
fn shared() -> Shared {
    let config = Config::parse_from(["stmd", "--no-database"]);
    let addr = "127.0.0.1:6379".parse().expect("address");
    Shared::new(
        config,
        addr,
        Arc::new(Store::new()),
        PersistHandle::disabled(),
    )
    .expect("shared")
}

fn run(shared: &Shared, conn: &mut ConnState, args: &[Vec<u8>]) -> Reply {
    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    dispatch(&mut Ctx::new(shared, conn), &refs)
}

fn to_args(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

fn dispatch_commands(c: &mut Criterion) {
    let shared = shared();
    let addr = stmd::clients::ClientAddr::Tcp(shared.local_addr);
    let mut conn = ConnState::new(shared.clients.register(addr.clone(), addr, -1), true);
    let mut group = c.benchmark_group("dispatch");
    let set = to_args(&["SET", "key:000123", "xxx"]);
    let get = to_args(&["GET", "key:000123"]);
    let incr = to_args(&["INCR", "counter"]);
    let lpush = to_args(&["LPUSH", "list", "xxx"]);
    let lrange = to_args(&["LRANGE", "list100", "0", "99"]);
    for i in 0..100 {
        run(
            &shared,
            &mut conn,
            &to_args(&["RPUSH", "list100", &i.to_string()]),
        );
    }
    for (name, args) in [
        ("set", &set),
        ("get", &get),
        ("incr", &incr),
        ("lpush", &lpush),
        ("lrange_100", &lrange),
    ] {
        group.bench_function(name, |b| b.iter(|| run(&shared, &mut conn, args)));
    }
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    let bulk = Reply::bulk(vec![b'x'; 3]);
    let array = Reply::Array((0..100).map(|i| Reply::bulk(i.to_string())).collect());
    let mut out = BytesMut::with_capacity(64 * 1024);
    for (name, reply) in [("ok", &Reply::OK), ("bulk", &bulk), ("array_100", &array)] {
        for (protocol, resp3) in [("resp2", false), ("resp3", true)] {
            group.bench_function(format!("{name}_{protocol}"), |b| {
                b.iter(|| {
                    out.clear();
                    black_box(reply).encode(resp3, &mut out);
                })
            });
        }
    }
    group.finish();
}

fn clean(c: &mut Criterion) {
    let mut group = c.benchmark_group("clean");
    let cleaner = TextCleaner::default();
    let plain = format!("m0{}", "x".repeat(300));
    let busy = "hey <:wave:123456789012345678> look `code <:a:123456789012345678>`\n\n\n  \
                [System: Message metadata: edited] done  \n"
        .repeat(4);
    for (name, text) in [("plain_300b", &plain), ("emoji_annotation_code", &busy)] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| b.iter(|| cleaner.clean_cow(black_box(text))));
    }
    group.finish();
}

fn capture(c: &mut Criterion) {
    let shared = shared();
    let addr = stmd::clients::ClientAddr::Tcp(shared.local_addr);
    let mut conn = ConnState::new(shared.clients.register(addr.clone(), addr, -1), true);
    let mut group = c.benchmark_group("capture");
    // Each iteration a new user: the entry, its index slots and its row operation are all new.
    let mut user = 0u64;
    group.bench_function("stm_capture_new_user", |b| {
        b.iter_batched(
            || {
                user += 1;
                capture_args(&format!("u{user}"))
            },
            |args| run(&shared, &mut conn, &args),
            BatchSize::SmallInput,
        )
    });
    let same = capture_args("u0");
    group.bench_function("stm_capture_same_user", |b| {
        b.iter(|| run(&shared, &mut conn, &same))
    });
    group.finish();
}

/// STM.CONTEXT over a server with four other channels (ten 300-byte messages each, one with a
/// summary), next to the STM.GET + STM.RECENT pair it replaces, all without the network.
fn context(c: &mut Criterion) {
    let shared = shared();
    let addr = stmd::clients::ClientAddr::Tcp(shared.local_addr);
    let mut conn = ConnState::new(shared.clients.register(addr.clone(), addr, -1), true);
    for channel in ["c1", "c2", "c3", "c4", "c5"] {
        let mut args = capture_args("u1");
        args[4] = channel.as_bytes().to_vec();
        run(&shared, &mut conn, &args);
    }
    let summary = "Alice and Nova talked about the weather. ".repeat(10);
    run(
        &shared,
        &mut conn,
        &to_args(&[
            "STM.SUMMARY",
            "USER",
            "u1",
            "CHANNEL",
            "c2",
            "SERVER",
            "s1",
            "PERSONA",
            "1",
            "TEXT",
            &summary,
        ]),
    );
    let mut group = c.benchmark_group("context");
    let context = to_args(&[
        "STM.CONTEXT",
        "USER",
        "u1",
        "CHANNEL",
        "c1",
        "SERVER",
        "s1",
        "PERSONA",
        "1",
    ]);
    let mut context_json = context.clone();
    context_json.extend(to_args(&["FORMAT", "JSON"]));
    let get = to_args(&["STM.GET", "shortterm:server:s1:c1:1", "FORMAT", "JSON"]);
    let recent = to_args(&[
        "STM.RECENT",
        "SERVER",
        "s1",
        "EXCLUDE",
        "c1",
        "LIMIT",
        "3",
        "FORMAT",
        "JSON",
    ]);
    group.bench_function("stm_context", |b| {
        b.iter(|| run(&shared, &mut conn, &context))
    });
    group.bench_function("stm_context_json", |b| {
        b.iter(|| run(&shared, &mut conn, &context_json))
    });
    group.bench_function("stm_get_plus_recent_json", |b| {
        b.iter(|| {
            (
                run(&shared, &mut conn, &get),
                run(&shared, &mut conn, &recent),
            )
        })
    });
    group.finish();
}

/// ZRANK of the middle member and ZRANGE by index in the middle of sorted sets of growing size:
/// with O(log n) ranks the time grows with the logarithm of the size, not with the size.
fn zset_ranks(c: &mut Criterion) {
    let shared = shared();
    let addr = stmd::clients::ClientAddr::Tcp(shared.local_addr);
    let mut conn = ConnState::new(shared.clients.register(addr.clone(), addr, -1), true);
    let mut group = c.benchmark_group("zset_rank");
    for size in [1_000usize, 100_000, 1_000_000] {
        let key = format!("z{size}");
        for chunk in (0..size).collect::<Vec<_>>().chunks(1_000) {
            let mut args = vec!["ZADD".to_string(), key.clone()];
            for i in chunk {
                args.push(i.to_string());
                args.push(format!("m{i}"));
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run(&shared, &mut conn, &to_args(&args));
        }
        let middle = format!("m{}", size / 2);
        let zrank = to_args(&["ZRANK", &key, &middle]);
        let mid = (size / 2).to_string();
        let zrange = to_args(&["ZRANGE", &key, &mid, &mid]);
        group.bench_function(format!("zrank_{size}"), |b| {
            b.iter(|| run(&shared, &mut conn, &zrank))
        });
        group.bench_function(format!("zrange_index_{size}"), |b| {
            b.iter(|| run(&shared, &mut conn, &zrange))
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    decode,
    dispatch_commands,
    zset_ranks,
    encode,
    clean,
    capture,
    context
);
criterion_main!(benches);
