//! DUMP and RESTORE against a real redis-server, both ways, for every type both servers store:
//! a payload DUMPed by Redis restores into stmd with the same contents, and one DUMPed by stmd
//! restores into Redis. Small values use the compact encodings (listpack, intset), big ones (1,000
//! elements, long strings) the plain ones and LZF; where both servers build a value the same way
//! the payload bytes must be equal too. STM entries restore into stmd only.

use crate::common;

use common::real_redis::RealRedis;
use common::stm::{capture, ok, run};
use common::TestServer;
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;

/// The ways a key is filled, each through ordinary commands both servers answer the same.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Text,
    Integer,
    List,
    Hash,
    IntSet,
    Set,
    ZSet,
}

pub const KINDS: [Kind; 7] = [
    Kind::Text,
    Kind::Integer,
    Kind::List,
    Kind::Hash,
    Kind::IntSet,
    Kind::Set,
    Kind::ZSet,
];

async fn query(con: &mut Conn, cmd: &redis::Cmd) -> Value {
    cmd.query_async(con)
        .await
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// Fills `key` with a value of `kind` of `size` elements (a string of about 12 × `size` bytes).
pub async fn fill(con: &mut Conn, kind: Kind, key: &str, size: usize) {
    let mut cmd = match kind {
        Kind::Text => {
            let text: String = (0..size).map(|i| format!("word{} ", i % 17)).collect();
            redis::cmd("SET").arg(key).arg(text).clone()
        }
        Kind::Integer => redis::cmd("SET")
            .arg(key)
            .arg(-70_000 - size as i64)
            .clone(),
        Kind::List => redis::cmd("RPUSH").arg(key).clone(),
        Kind::Hash => redis::cmd("HSET").arg(key).clone(),
        Kind::IntSet | Kind::Set => redis::cmd("SADD").arg(key).clone(),
        Kind::ZSet => redis::cmd("ZADD").arg(key).clone(),
    };
    for i in 0..size {
        match kind {
            Kind::Text | Kind::Integer => break,
            Kind::List => cmd.arg(if i % 3 == 0 {
                (i as i64 * 1_000_003 - 5_000).to_string()
            } else {
                format!("item-{i}")
            }),
            Kind::Hash => cmd.arg(format!("field{i}")).arg(if i % 2 == 0 {
                i.to_string()
            } else {
                format!("value {i}")
            }),
            Kind::IntSet => cmd.arg(i as i64 * 7 - 3),
            Kind::Set => cmd.arg(format!("member:{i}")),
            Kind::ZSet => cmd
                .arg(if i % 4 == 0 {
                    (i as f64) / 8.0
                } else {
                    -(i as f64)
                })
                .arg(format!("m{i}")),
        };
    }
    query(con, &cmd).await;
    // A long element: over the listpack limits and compressible, so LZF is used inside.
    let long = "0123456789".repeat(20);
    let extra = match kind {
        Kind::List => Some(redis::cmd("RPUSH").arg(key).arg(&long).clone()),
        Kind::Hash => Some(redis::cmd("HSET").arg(key).arg("long").arg(&long).clone()),
        _ => None,
    };
    if let (Some(extra), true) = (extra, size > 100) {
        query(con, &extra).await;
    }
}

/// What `key` holds, in an order that does not depend on the server's encoding.
pub async fn contents(con: &mut Conn, key: &str) -> Vec<String> {
    let kind = match query(con, redis::cmd("TYPE").arg(key)).await {
        Value::SimpleString(s) => s,
        Value::Okay => "ok".into(),
        other => panic!("TYPE: {other:?}"),
    };
    let (cmd, sort) = match kind.as_str() {
        "string" => (redis::cmd("GET").arg(key).clone(), false),
        "list" => (redis::cmd("LRANGE").arg(key).arg(0).arg(-1).clone(), false),
        "hash" => (redis::cmd("HGETALL").arg(key).clone(), true),
        "set" => (redis::cmd("SMEMBERS").arg(key).clone(), true),
        "zset" => (
            redis::cmd("ZRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .clone(),
            false,
        ),
        other => panic!("unexpected type {other}"),
    };
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    };
    let mut items: Vec<String> = match query(con, &cmd).await {
        Value::Array(items) => {
            if kind == "hash" {
                items
                    .chunks(2)
                    .map(|p| format!("{}={}", text(&p[0]), text(&p[1])))
                    .collect()
            } else {
                items.iter().map(text).collect()
            }
        }
        single => vec![text(&single)],
    };
    if sort {
        items.sort();
    }
    items.insert(0, kind);
    items
}

async fn dump(con: &mut Conn, key: &str) -> Vec<u8> {
    match query(con, redis::cmd("DUMP").arg(key)).await {
        Value::BulkString(payload) => payload,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

async fn restore(con: &mut Conn, key: &str, ttl: u64, payload: &[u8]) -> Result<(), String> {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(ttl)
        .arg(payload)
        .arg("REPLACE")
        .query_async::<()>(con)
        .await
        .map_err(|e| e.to_string())
}

/// Encodings both servers build identically from the same commands (so the bytes match).
fn same_bytes_expected(kind: Kind, size: usize) -> bool {
    match kind {
        Kind::Text | Kind::Integer | Kind::List => true,
        // Over `set-max-intset-entries` (512) Redis uses a hash table.
        Kind::IntSet => size <= 512,
        // Listpacks keep insertion order; Redis's hash tables have their own order, and Redis
        // 7.0 keeps even small sets of strings in one.
        Kind::Hash => size <= 100,
        Kind::Set => false,
        Kind::ZSet => true,
    }
}

#[tokio::test]
async fn payloads_move_between_redis_and_stmd_both_ways() {
    let redis_server = RealRedis::start();
    let mut redis = redis_server.client().await;
    let server = TestServer::start().await;
    let mut stmd = server.client().await;
    for size in [5usize, 1000] {
        for kind in KINDS {
            let key = format!("{kind:?}-{size}");
            fill(&mut redis, kind, &key, size).await;
            let from_redis = dump(&mut redis, &key).await;
            restore(&mut stmd, &key, 0, &from_redis)
                .await
                .unwrap_or_else(|e| panic!("{key}: Redis's payload refused: {e}"));
            let expected = contents(&mut redis, &key).await;
            assert_eq!(contents(&mut stmd, &key).await, expected, "{key} into stmd");

            let copy = format!("{key}-back");
            fill(&mut stmd, kind, &copy, size).await;
            let from_stmd = dump(&mut stmd, &copy).await;
            restore(&mut redis, &copy, 60_000, &from_stmd)
                .await
                .unwrap_or_else(|e| panic!("{key}: stmd's payload refused by Redis: {e}"));
            assert_eq!(
                contents(&mut redis, &copy).await,
                expected,
                "{key} into Redis"
            );
            let ttl = query(&mut redis, redis::cmd("PTTL").arg(&copy)).await;
            assert!(matches!(ttl, Value::Int(t) if t > 50_000), "{key}: {ttl:?}");
            if same_bytes_expected(kind, size) {
                let first_difference = from_stmd.iter().zip(&from_redis).position(|(a, b)| a != b);
                assert!(
                    from_stmd == from_redis,
                    "{key}: stmd's DUMP ({} bytes) differs from Redis's ({} bytes) at {first_difference:?}",
                    from_stmd.len(),
                    from_redis.len()
                );
            }
        }
    }
}

#[tokio::test]
async fn stm_entries_restore_into_stmd_exactly_and_redis_refuses_them() {
    let redis_server = RealRedis::start();
    let mut redis = redis_server.client().await;
    let server = TestServer::start().await;
    let mut stmd = server.client().await;
    let keys = capture(&mut stmd, "u1", "c1", "s1", "3", "12", "hello there").await;
    let key = &keys[0];
    ok(
        &mut stmd,
        &[
            "STM.SUMMARY",
            "USER",
            "u1",
            "CHANNEL",
            "c1",
            "SERVER",
            "s1",
            "PERSONA",
            "3",
            "TEXT",
            "a summary",
        ],
    )
    .await;
    let payload = dump(&mut stmd, key).await;
    let refused = restore(&mut redis, "stm", 0, &payload).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("Bad data format")),
        "{refused:?}"
    );
    // Into another key of stmd: the same entry, and a new DUMP gives the same bytes.
    ok(&mut stmd, &["DEL", key]).await;
    restore(&mut stmd, key, 0, &payload)
        .await
        .expect("stmd restores its own STM payload");
    assert_eq!(dump(&mut stmd, key).await, payload);
    let got = ok(&mut stmd, &["STM.GET", key, "FORMAT", "JSON"]).await;
    let json = common::stm::text(&got);
    assert!(
        json.contains("hello there") && json.contains("a summary"),
        "{json}"
    );
    // STM.RECENT finds it again through the index the restore rebuilt.
    let recent = run(&mut stmd, &["STM.RECENT", "USER", "u1"]).await;
    assert!(format!("{recent:?}").contains("hello there"), "{recent:?}");
}

/// A function library with one read-only function, `everyf`, answering 42.
pub const LIBRARY: &str = "#!lua name=everylib\nredis.register_function{function_name='everyf', callback=function() return 42 end, flags={'no-writes'}}";

/// Keys of every kind, small and large, a stream, an HLL, a key with a TTL, one in database 2 and a
/// function library.
pub async fn fill_everything(con: &mut Conn) -> Vec<String> {
    let mut keys = Vec::new();
    for size in [5usize, 1000] {
        for kind in KINDS {
            let key = format!("{kind:?}-{size}");
            fill(con, kind, &key, size).await;
            keys.push(key);
        }
    }
    ok(con, &["XADD", "stream", "1-1", "f", "v"]).await;
    ok(con, &["XADD", "stream", "2-1", "g", "w"]).await;
    ok(con, &["XGROUP", "CREATE", "stream", "grp", "0"]).await;
    ok(con, &["PFADD", "hll", "a", "b", "c"]).await;
    ok(con, &["SET", "ttl", "v", "EX", "1000"]).await;
    ok(con, &["FUNCTION", "LOAD", LIBRARY]).await;
    ok(con, &["SELECT", "2"]).await;
    ok(con, &["SET", "in-db-2", "two"]).await;
    ok(con, &["SELECT", "0"]).await;
    keys
}
