//! MIGRATE over real TCP: stmd to stmd (COPY, REPLACE, AUTH, AUTH2, KEYS, destination database,
//! TTLs), stmd to a real redis-server and a real redis-server to stmd (Redis's MIGRATE runs our
//! RESTORE), the replies when the target refuses, is not there or does not answer, and what a
//! replica of the source sees (`DEL` for the keys moved, nothing for COPY).
//!
//! MIGRATE waits for its target off the tokio worker, which needs the multi-threaded runtime
//! stmd runs on: these tests use it too.

use crate::common;
use crate::keys_dump::{contents, fill_everything};

use common::real_redis::RealRedis;
use common::stm::{ok, run};
use common::{until, TestServer};
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;
use std::time::{Duration, Instant};

fn status(v: &Value) -> String {
    match v {
        Value::Okay => "OK".into(),
        Value::SimpleString(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// The reply to `MIGRATE <line>` (words split at spaces, `''` for the empty key): its status, or
/// the error text.
async fn migrate(con: &mut Conn, line: &str) -> String {
    let words: Vec<&str> = std::iter::once("MIGRATE")
        .chain(line.split(' ').map(|w| if w == "''" { "" } else { w }))
        .collect();
    match run(con, &words).await {
        Ok(v) => status(&v),
        Err(e) => e,
    }
}

async fn exists(con: &mut Conn, key: &str) -> bool {
    ok(con, &["EXISTS", key]).await == Value::Int(1)
}

async fn pttl(con: &mut Conn, key: &str) -> i64 {
    match ok(con, &["PTTL", key]).await {
        Value::Int(n) => n,
        other => panic!("PTTL: {other:?}"),
    }
}

async fn get(con: &mut Conn, key: &str) -> Value {
    ok(con, &["GET", key]).await
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

async fn client_of(port: u16, db: u32) -> Conn {
    redis::Client::open(format!("redis://127.0.0.1:{port}/{db}"))
        .expect("client")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

const BUSYKEY: &str =
    "ERR Target instance replied with error: BUSYKEY Target key name already exists.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_move_to_another_stmd_with_their_ttl() {
    let (source, target) = (TestServer::start().await, TestServer::start().await);
    let (mut src, mut dst) = (source.client().await, target.client().await);
    let port = target.addr.port();
    ok(&mut src, &["SET", "k", "v", "PX", "100000"]).await;
    ok(&mut src, &["RPUSH", "l", "a", "b", "c"]).await;

    assert_eq!(
        migrate(&mut src, &format!("127.0.0.1 {port} k 0 1000")).await,
        "OK"
    );
    assert!(!exists(&mut src, "k").await, "a moved key is gone here");
    assert_eq!(get(&mut dst, "k").await, bulk("v"));
    let ttl = pttl(&mut dst, "k").await;
    assert!((90_000..=100_000).contains(&ttl), "the TTL travels: {ttl}");
    // Timeout 0 is Redis's default of 1 s, not "no time at all".
    assert_eq!(
        migrate(&mut src, &format!("127.0.0.1 {port} l 0 0")).await,
        "OK"
    );
    assert_eq!(pttl(&mut dst, "l").await, -1, "no TTL stays no TTL");
    assert_eq!(contents(&mut dst, "l").await, ["list", "a", "b", "c"]);

    assert_eq!(
        migrate(&mut src, &format!("127.0.0.1 {port} k 0 1000")).await,
        "NOKEY"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_replace_keys_and_the_destination_database() {
    let (source, target) = (TestServer::start().await, TestServer::start().await);
    let (mut src, mut dst) = (source.client().await, target.client().await);
    let port = target.addr.port();
    ok(&mut src, &["MSET", "a", "1", "b", "2", "c", "3"]).await;
    ok(&mut dst, &["SET", "b", "old"]).await;

    // An existing key without REPLACE: the target's error, and the key stays here.
    assert_eq!(
        migrate(&mut src, &format!("127.0.0.1 {port} b 0 1000")).await,
        BUSYKEY
    );
    assert_eq!(get(&mut src, "b").await, bulk("2"));
    assert_eq!(get(&mut dst, "b").await, bulk("old"));

    // COPY keeps the key here; REPLACE overwrites the target's.
    let reply = migrate(&mut src, &format!("127.0.0.1 {port} b 0 1000 COPY REPLACE")).await;
    assert_eq!(reply, "OK");
    assert_eq!(get(&mut src, "b").await, bulk("2"));
    assert_eq!(get(&mut dst, "b").await, bulk("2"));

    // KEYS: the missing ones are skipped; one refused key does not keep the others from moving,
    // and only the accepted ones are deleted here.
    ok(&mut dst, &["SET", "c", "taken"]).await;
    let reply = migrate(
        &mut src,
        &format!("127.0.0.1 {port} '' 0 1000 KEYS a nokey c"),
    )
    .await;
    assert_eq!(reply, BUSYKEY);
    assert!(!exists(&mut src, "a").await);
    assert_eq!(get(&mut dst, "a").await, bulk("1"));
    assert_eq!(get(&mut src, "c").await, bulk("3"), "refused: kept here");

    // Another database on the target (SELECT), and the same again to database 0.
    let reply = migrate(&mut src, &format!("127.0.0.1 {port} c 5 1000")).await;
    assert_eq!(reply, "OK");
    let mut dst5 = client_of(target.addr.port(), 5).await;
    assert_eq!(get(&mut dst5, "c").await, bulk("3"));
    assert_eq!(get(&mut dst, "c").await, bulk("taken"));
    ok(&mut src, &["SET", "d", "4"]).await;
    let reply = migrate(&mut src, &format!("127.0.0.1 {port} d 99 1000")).await;
    assert_eq!(
        reply,
        "ERR Target instance replied with error: ERR DB index is out of range"
    );
    assert_eq!(get(&mut src, "d").await, bulk("4"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_and_auth2_log_in_to_the_target() {
    let source = TestServer::start().await;
    let target = TestServer::start_with(|c| c.requirepass = "secret".into()).await;
    let mut src = source.client().await;
    let mut dst = redis::Client::open(format!("redis://:secret@{}", target.addr))
        .expect("client")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    ok(
        &mut dst,
        &["ACL", "SETUSER", "mover", "on", ">pw", "~*", "+@all"],
    )
    .await;
    let port = target.addr.port();
    ok(&mut src, &["MSET", "a", "1", "b", "2", "c", "3"]).await;

    let reply = migrate(&mut src, &format!("127.0.0.1 {port} a 0 1000")).await;
    assert!(
        reply.starts_with("ERR Target instance replied with error: NOAUTH"),
        "{reply}"
    );
    let reply = migrate(&mut src, &format!("127.0.0.1 {port} a 0 1000 AUTH wrong")).await;
    assert_eq!(
        reply,
        "ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled."
    );
    assert!(exists(&mut src, "a").await, "nothing moved without a login");

    let reply = migrate(&mut src, &format!("127.0.0.1 {port} a 0 1000 AUTH secret")).await;
    assert_eq!(reply, "OK");
    let reply = migrate(
        &mut src,
        &format!("127.0.0.1 {port} '' 0 1000 AUTH2 mover pw KEYS b c"),
    )
    .await;
    assert_eq!(reply, "OK");
    for key in ["a", "b", "c"] {
        assert!(!exists(&mut src, key).await, "{key} moved");
        assert!(exists(&mut dst, key).await, "{key} arrived");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_type_moves_to_a_real_redis_and_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = RealRedis::start_with(&["--dir", dir.path().to_str().expect("utf-8 path")]);
    let mut real = redis.client().await;
    let server = TestServer::start().await;
    let mut stmd = server.client().await;
    let keys = fill_everything(&mut stmd).await;
    let mut expected = Vec::new();
    for key in &keys {
        expected.push(contents(&mut stmd, key).await);
    }
    ok(&mut stmd, &["PEXPIRE", &keys[0], "100000"]).await;

    // stmd → Redis, all at once.
    let (redis_port, all) = (redis.port, keys.join(" "));
    let request = format!("127.0.0.1 {redis_port} '' 0 2000 KEYS {all}");
    assert_eq!(migrate(&mut stmd, &request).await, "OK");
    for (key, want) in keys.iter().zip(&expected) {
        assert!(!exists(&mut stmd, key).await, "{key} left stmd");
        assert_eq!(&contents(&mut real, key).await, want, "{key} in Redis");
    }
    assert!(pttl(&mut real, &keys[0]).await > 90_000);

    // Redis → stmd: Redis's MIGRATE runs stmd's RESTORE.
    let stmd_port = server.addr.port();
    let request = format!("127.0.0.1 {stmd_port} '' 0 2000 KEYS {all}");
    assert_eq!(migrate(&mut real, &request).await, "OK");
    for (key, want) in keys.iter().zip(&expected) {
        assert!(!exists(&mut real, key).await, "{key} left Redis");
        assert_eq!(&contents(&mut stmd, key).await, want, "{key} back in stmd");
    }
    assert!(pttl(&mut stmd, &keys[0]).await > 90_000);

    // Both answer a refused key the same way.
    ok(&mut real, &["SET", &keys[0], "x"]).await;
    let first = &keys[0];
    let ours = migrate(&mut stmd, &format!("127.0.0.1 {redis_port} {first} 0 1000")).await;
    ok(&mut stmd, &["SET", "other", "x"]).await;
    ok(&mut real, &["SET", "other", "y"]).await;
    let theirs = migrate(&mut real, &format!("127.0.0.1 {stmd_port} other 0 1000")).await;
    assert_eq!(ours, BUSYKEY);
    assert_eq!(theirs, BUSYKEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_is_not_there_or_silent_keeps_the_keys_here() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(&mut con, &["SET", "k", "v"]).await;

    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_port = closed.local_addr().expect("addr").port();
    drop(closed);
    let reply = migrate(&mut con, &format!("127.0.0.1 {closed_port} k 0 200")).await;
    assert_eq!(reply, "IOERR error or timeout writing to target instance");
    let reply = migrate(&mut con, "nosuchhost.invalid 6379 k 0 200").await;
    assert_eq!(reply, "IOERR error or timeout connecting to the client");

    // A target that accepts and never answers: the timeout bounds the wait.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let silent_port = silent.local_addr().expect("addr").port();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let started = Instant::now();
    let reply = migrate(&mut con, &format!("127.0.0.1 {silent_port} k 0 300")).await;
    assert_eq!(reply, "IOERR error or timeout reading to target instance");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    holder.abort();
    assert_eq!(get(&mut con, "k").await, bulk("v"), "the key is still here");
    // The connection is still usable.
    assert_eq!(
        ok(&mut con, &["PING"]).await,
        Value::SimpleString("PONG".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_of_the_source_deletes_the_moved_keys_only() {
    let (source, target) = (TestServer::start().await, TestServer::start().await);
    let port = source.addr.port();
    let replica = TestServer::start_with(|c| c.replicaof = format!("127.0.0.1 {port}")).await;
    let (mut src, mut dst, mut rep) = (
        source.client().await,
        target.client().await,
        replica.client().await,
    );
    ok(
        &mut src,
        &["MSET", "moved", "1", "copied", "2", "refused", "3"],
    )
    .await;
    ok(&mut dst, &["SET", "refused", "x"]).await;
    until("the replica has the keys", async || {
        exists(&mut rep, "refused").await
    })
    .await;

    let target_port = target.addr.port();
    let reply = migrate(
        &mut src,
        &format!("127.0.0.1 {target_port} '' 0 1000 KEYS moved refused"),
    )
    .await;
    assert_eq!(reply, BUSYKEY);
    let reply = migrate(
        &mut src,
        &format!("127.0.0.1 {target_port} copied 0 1000 COPY"),
    )
    .await;
    assert_eq!(reply, "OK");
    // A write after the MIGRATEs: once the replica has it, it has whatever they sent.
    ok(&mut src, &["SET", "marker", "1"]).await;
    until("the replica has the marker", async || {
        exists(&mut rep, "marker").await
    })
    .await;
    assert!(
        !exists(&mut rep, "moved").await,
        "the replica deleted the moved key"
    );
    assert!(exists(&mut rep, "refused").await, "a refused key stays");
    assert!(exists(&mut rep, "copied").await, "COPY deletes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_keys_fire_del_events() {
    let (source, target) = (TestServer::start().await, TestServer::start().await);
    let mut src = source.client().await;
    ok(
        &mut src,
        &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
    )
    .await;
    ok(&mut src, &["MSET", "a", "1", "b", "2"]).await;
    let mut events = source.raw().await;
    events
        .send(&common::resp(&[b"PSUBSCRIBE", b"__keyevent@0__:*"]))
        .await;
    events.read_reply().await;
    let port = target.addr.port();
    let reply = migrate(&mut src, &format!("127.0.0.1 {port} a 0 1000 COPY")).await;
    assert_eq!(reply, "OK");
    let reply = migrate(&mut src, &format!("127.0.0.1 {port} b 0 1000")).await;
    assert_eq!(reply, "OK");
    // The COPY published nothing: the first event is b's del.
    let event = events.read_reply().await;
    let text = String::from_utf8_lossy(&event);
    assert!(
        text.contains("__keyevent@0__:del") && text.ends_with("$1\r\nb\r\n"),
        "{text}"
    );
}
