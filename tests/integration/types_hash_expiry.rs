//! Hash-field expiration (Redis 7.4/8.0) over real TCP: the active cycle removes expired fields
//! and then the hash with no command reaching them, publishing `hexpired` and `del`; a replica
//! gets the TTLs as absolute times and the primary's HDEL of expired fields; DUMP/RESTORE and a
//! snapshot reload keep the TTLs. The replies of each command are in
//! conformance/corpus/hash_field_expiry.txt.

use crate::common;
use crate::replication_primary::caught_up;

use common::stm::{ok, run};
use common::{resp, TestServer};
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;
use std::time::{Duration, Instant};

async fn int(con: &mut Conn, words: &[&str]) -> i64 {
    match ok(con, words).await {
        Value::Int(n) => n,
        other => panic!("{words:?}: {other:?}"),
    }
}

async fn ints(con: &mut Conn, words: &[&str]) -> Vec<i64> {
    match ok(con, words).await {
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::Int(n) => n,
                other => panic!("{words:?}: {other:?}"),
            })
            .collect(),
        other => panic!("{words:?}: {other:?}"),
    }
}

async fn info_field(con: &mut Conn, section: &str, name: &str) -> String {
    let text = match ok(con, &["INFO", section]).await {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::VerbatimString { text, .. } => text,
        other => panic!("INFO: {other:?}"),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .trim()
        .to_string()
}

/// Polls `check` every 20 ms until it holds, for at most 5 s.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check().await {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_active_cycle_expires_fields_then_the_hash_and_publishes_hexpired() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(
        &mut con,
        &["CONFIG", "SET", "notify-keyspace-events", "Egh"],
    )
    .await;
    let mut sub = server.raw().await;
    sub.send(&resp(&[b"PSUBSCRIBE", b"__keyevent@0__:*"])).await;
    sub.read_reply().await;

    // A small hash (packed form) and a large one (map form), each with one lasting field.
    ok(
        &mut con,
        &["HSET", "small", "a", "1", "b", "2", "keep", "3"],
    )
    .await;
    let mut large = vec!["HSET", "large"];
    let names: Vec<String> = (0..300).map(|i| format!("f{i}")).collect();
    for n in &names {
        large.extend([n.as_str(), "v"]);
    }
    ok(&mut con, &large).await;
    assert_eq!(
        ints(
            &mut con,
            &["HPEXPIRE", "small", "100", "FIELDS", "2", "a", "b"]
        )
        .await,
        vec![1, 1]
    );
    let mut expire_large = vec!["HPEXPIRE", "large", "100", "FIELDS", "299"];
    expire_large.extend(names[1..].iter().map(String::as_str));
    assert_eq!(ints(&mut con, &expire_large).await, vec![1; 299]);
    assert_eq!(
        info_field(&mut con, "keyspace", "db0").await,
        "keys=2,expires=0,avg_ttl=0,subexpiry=2"
    );

    // Nothing reads them: the cycle alone removes the fields.
    eventually("the fields' expiry", || {
        let mut con = con.clone();
        async move { int(&mut con, &["HLEN", "large"]).await == 1 }
    })
    .await;
    eventually("the small hash's expiry", || {
        let mut con = con.clone();
        async move { int(&mut con, &["HLEN", "small"]).await == 1 }
    })
    .await;
    assert_eq!(
        info_field(&mut con, "stats", "expired_subkeys").await,
        "301"
    );
    assert_eq!(info_field(&mut con, "stats", "expired_keys").await, "0");
    assert_eq!(
        info_field(&mut con, "keyspace", "db0").await,
        "keys=2,expires=0,avg_ttl=0,subexpiry=0"
    );

    // The last field going takes the hash with it.
    ints(
        &mut con,
        &["HPEXPIRE", "small", "50", "FIELDS", "1", "keep"],
    )
    .await;
    eventually("the hash's removal", || {
        let mut con = con.clone();
        async move { int(&mut con, &["EXISTS", "small"]).await == 0 }
    })
    .await;

    // `hset` twice, `hexpire` for each HPEXPIRE, `hexpired` for each hash the cycle reached,
    // then `del` for the emptied one.
    let mut events = Vec::new();
    while events.len() < 9 {
        let frame = String::from_utf8(sub.read_reply().await).expect("utf8");
        let parts: Vec<&str> = frame.split("\r\n").collect();
        events.push(format!("{} {}", parts[6], parts[8]));
    }
    let hexpired: Vec<&String> = events.iter().filter(|e| e.contains("hexpired")).collect();
    assert_eq!(hexpired.len(), 3, "{events:?}");
    assert_eq!(
        events.last().map(String::as_str),
        Some("__keyevent@0__:del small"),
        "{events:?}"
    );
    assert_eq!(
        events.iter().filter(|e| e.contains(":hexpire ")).count(),
        3,
        "{events:?}"
    );
}

#[tokio::test]
async fn a_replica_gets_absolute_ttls_and_the_primarys_hdel() {
    let primary_server = TestServer::start().await;
    let mut primary = primary_server.client().await;
    let target = format!("127.0.0.1 {}", primary_server.addr.port());
    let replica_server = TestServer::start_with(move |c| c.replicaof = target).await;
    let mut replica = replica_server.client().await;
    caught_up(&mut primary, &mut replica).await;

    ok(&mut primary, &["HSET", "h", "a", "1", "b", "2", "c", "3"]).await;
    ints(&mut primary, &["HEXPIRE", "h", "1000", "FIELDS", "1", "a"]).await;
    ok(
        &mut primary,
        &["HSETEX", "h", "EX", "2000", "FIELDS", "1", "c", "30"],
    )
    .await;
    ok(
        &mut primary,
        &["HGETEX", "h", "PX", "300", "FIELDS", "1", "b"],
    )
    .await;
    caught_up(&mut primary, &mut replica).await;
    let times = ["HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c"];
    let on_primary = ints(&mut primary, &times).await;
    assert!(on_primary.iter().all(|&t| t > 0), "{on_primary:?}");
    assert_eq!(
        ints(&mut replica, &times).await,
        on_primary,
        "the same instants"
    );

    // The primary expires b (its cycle or a read) and sends HDEL: the replica then drops it too.
    eventually("b's expiry on the primary", || {
        let mut primary = primary.clone();
        async move { int(&mut primary, &["HLEN", "h"]).await == 2 }
    })
    .await;
    caught_up(&mut primary, &mut replica).await;
    assert_eq!(int(&mut replica, &["HLEN", "h"]).await, 2);
    assert_eq!(
        ok(&mut replica, &["HGET", "h", "b"]).await,
        Value::Nil,
        "gone on the replica"
    );
    // A past time deletes at once, on both.
    assert_eq!(
        ints(&mut primary, &["HPEXPIREAT", "h", "1", "FIELDS", "1", "a"]).await,
        vec![2]
    );
    caught_up(&mut primary, &mut replica).await;
    assert_eq!(int(&mut replica, &["HLEN", "h"]).await, 1);
    assert_eq!(
        ok(&mut replica, &["HGET", "h", "c"]).await,
        Value::BulkString(b"30".to_vec())
    );
}

/// A replica removes no field itself: one past its time while the primary has not yet expired it
/// (its active cycle off, no read there) reads as gone on the replica but stays stored until the
/// primary's HDEL arrives, as Redis's replicas hide expired keys until their DEL.
#[tokio::test]
async fn a_replica_hides_a_field_past_its_time_until_the_primarys_hdel() {
    let primary_server =
        TestServer::start_with(|c| c.enable_debug_command = stmd::config::ProtectedCommand::Yes)
            .await;
    let mut primary = primary_server.client().await;
    let target = format!("127.0.0.1 {}", primary_server.addr.port());
    let replica_server = TestServer::start_with(move |c| c.replicaof = target).await;
    let mut replica = replica_server.client().await;
    caught_up(&mut primary, &mut replica).await;

    ok(&mut primary, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]).await;
    ok(&mut primary, &["HSET", "h", "a", "1", "b", "2"]).await;
    ints(&mut primary, &["HPEXPIRE", "h", "100", "FIELDS", "1", "a"]).await;
    caught_up(&mut primary, &mut replica).await;
    tokio::time::sleep(Duration::from_millis(250)).await;

    // Hidden from reads on the replica, still stored (HLEN counts stored fields, as in Redis).
    assert_eq!(ok(&mut replica, &["HGET", "h", "a"]).await, Value::Nil);
    assert_eq!(int(&mut replica, &["HEXISTS", "h", "a"]).await, 0);
    assert_eq!(
        ok(&mut replica, &["HGETALL", "h"]).await,
        Value::Array(vec![
            Value::BulkString(b"b".to_vec()),
            Value::BulkString(b"2".to_vec())
        ])
    );
    assert_eq!(
        int(&mut replica, &["HLEN", "h"]).await,
        2,
        "kept until HDEL"
    );

    // A read on the primary expires the field there and sends HDEL: the replica drops it too.
    assert_eq!(ok(&mut primary, &["HGET", "h", "a"]).await, Value::Nil);
    caught_up(&mut primary, &mut replica).await;
    assert_eq!(int(&mut replica, &["HLEN", "h"]).await, 1);
    assert_eq!(int(&mut primary, &["HLEN", "h"]).await, 1);
}

#[tokio::test]
async fn dump_restore_and_a_reload_keep_field_ttls() {
    // Its own directory: DEBUG RELOAD writes a snapshot there.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    let server = TestServer::start_with(move |c| {
        c.dir = path;
        c.enable_debug_command = stmd::config::ProtectedCommand::Yes;
    })
    .await;
    let mut con = server.client().await;
    ok(&mut con, &["HSET", "h", "a", "1", "b", "2"]).await;
    ints(&mut con, &["HEXPIRE", "h", "1000", "FIELDS", "1", "a"]).await;
    let times = ["HPEXPIRETIME", "h", "FIELDS", "2", "a", "b"];
    let before = ints(&mut con, &times).await;
    assert_eq!(before[1], -1);
    assert!(before[0] > 0);

    let payload = match ok(&mut con, &["DUMP", "h"]).await {
        Value::BulkString(b) => b,
        other => panic!("DUMP: {other:?}"),
    };
    assert_eq!(payload[0], 25, "Redis 7.4's listpack with TTLs");
    let restored: redis::RedisResult<Value> = redis::cmd("RESTORE")
        .arg("copy")
        .arg(0)
        .arg(&payload)
        .query_async(&mut con)
        .await;
    assert!(restored.is_ok(), "{restored:?}");
    let copy_times = ["HPEXPIRETIME", "copy", "FIELDS", "2", "a", "b"];
    assert_eq!(ints(&mut con, &copy_times).await, before);
    assert_eq!(
        run(&mut con, &["OBJECT", "ENCODING", "copy"]).await,
        Ok(Value::BulkString(b"listpackex".to_vec()))
    );

    ok(&mut con, &["DEBUG", "RELOAD"]).await;
    assert_eq!(ints(&mut con, &times).await, before);
    assert_eq!(ints(&mut con, &copy_times).await, before);
    assert_eq!(
        info_field(&mut con, "keyspace", "db0").await,
        "keys=2,expires=0,avg_ttl=0,subexpiry=2"
    );
}
