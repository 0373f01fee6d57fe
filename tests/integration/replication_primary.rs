//! stmd as a primary, with a real redis-server as its replica: the full sync carries every kind of
//! key, TTLs, databases and function libraries; then the stream carries every write as it was
//! applied (relative TTLs as absolute expiries, SPOP's picks, XADD's ids, scripts and
//! transactions as MULTI/EXEC blocks, expired keys as DELs); WAIT counts the replica's acks; a
//! replica that reconnects continues from the backlog (a partial sync).

use crate::common;
use crate::keys_dump::{contents, fill_everything};

use common::real_redis::RealRedis;
use common::stm::ok;
use common::TestServer;
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;
use std::time::{Duration, Instant};

async fn info(con: &mut Conn, section: &str) -> String {
    match ok(con, &["INFO", section]).await {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::VerbatimString { text, .. } => text,
        other => panic!("INFO: {other:?}"),
    }
}

fn field(info: &str, name: &str) -> Option<String> {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(|v| v.trim().to_string())
}

async fn int(con: &mut Conn, words: &[&str]) -> i64 {
    match ok(con, words).await {
        Value::Int(n) => n,
        other => panic!("{words:?}: {other:?}"),
    }
}

/// Waits until the replica has applied everything the primary produced so far.
pub(crate) async fn caught_up(primary: &mut Conn, replica: &mut Conn) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let produced = field(&info(primary, "replication").await, "master_repl_offset");
        let replica_info = info(replica, "replication").await;
        let applied = field(&replica_info, "slave_repl_offset");
        let up = field(&replica_info, "master_link_status").as_deref() == Some("up");
        if up && produced.is_some() && produced == applied {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "replica not caught up: {produced:?} vs {applied:?}\n{replica_info}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_real_redis_replica_follows_stmd() {
    // DEBUG on: the two datasets' digests are compared at the end.
    let server =
        TestServer::start_with(|c| c.enable_debug_command = stmd::config::ProtectedCommand::Yes)
            .await;
    let mut primary = server.client().await;
    let keys = fill_everything(&mut primary).await;
    // No replica yet: WAIT answers at once.
    assert_eq!(int(&mut primary, &["WAIT", "1", "100"]).await, 0);

    let port = server.addr.port().to_string();
    // The replica writes what it receives to its dump.rdb: not in the working directory.
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_arg = dir.path().to_str().expect("utf-8 path");
    let redis = RealRedis::start_with(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--dir",
        dir_arg,
        "--enable-debug-command",
        "yes",
    ]);
    let mut replica = redis.client().await;
    caught_up(&mut primary, &mut replica).await;
    for key in &keys {
        assert_eq!(
            contents(&mut replica, key).await,
            contents(&mut primary, key).await,
            "{key}"
        );
    }
    let expiry = ["PEXPIRETIME", "ttl"];
    assert_eq!(
        int(&mut replica, &expiry).await,
        int(&mut primary, &expiry).await
    );
    // Redis lists its libraries in its dict's order, which its random hash seed decides.
    let libraries = ["FUNCTION", "LIST", "WITHCODE"];
    let in_any_order = |libs: redis::Value| match libs {
        redis::Value::Array(mut libs) => {
            libs.sort_by_key(|lib| format!("{lib:?}"));
            redis::Value::Array(libs)
        }
        other => other,
    };
    assert_eq!(
        in_any_order(ok(&mut replica, &libraries).await),
        in_any_order(ok(&mut primary, &libraries).await)
    );

    // The stream, command by command.
    ok(&mut primary, &["INCR", "Integer-5"]).await;
    ok(&mut primary, &["SET", "rel", "v", "PX", "600000"]).await;
    ok(&mut primary, &["EXPIRE", "List-1000", "5000"]).await;
    ok(&mut primary, &["SADD", "pool", "a", "b", "c", "d", "e"]).await;
    ok(&mut primary, &["SPOP", "pool", "2"]).await;
    ok(&mut primary, &["XADD", "stream", "*", "g", "w"]).await;
    // PFCOUNT caches the cardinality in the value: Redis propagates it, so the bytes agree.
    ok(&mut primary, &["PFADD", "hll", "a", "b", "c"]).await;
    assert_eq!(int(&mut primary, &["PFCOUNT", "hll"]).await, 3);
    ok(
        &mut primary,
        &[
            "EVAL",
            "redis.call('SET', KEYS[1], 'x') redis.call('APPEND', KEYS[1], 'y') return 1",
            "1",
            "scripted",
        ],
    )
    .await;
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("LPUSH")
        .arg("queued")
        .arg("1")
        .cmd("SELECT")
        .arg("3")
        .cmd("SET")
        .arg("in-db-3")
        .arg("three")
        .cmd("SELECT")
        .arg("0");
    let _: Value = pipe.query_async(&mut primary).await.expect("EXEC");
    ok(&mut primary, &["DEL", "Text-5"]).await;
    ok(&mut primary, &["SET", "short", "v", "PX", "30"]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A read finds it expired: its DEL goes to the replica.
    assert_eq!(ok(&mut primary, &["GET", "short"]).await, Value::Nil);
    assert_eq!(int(&mut primary, &["WAIT", "1", "5000"]).await, 1);
    caught_up(&mut primary, &mut replica).await;

    assert_eq!(int(&mut replica, &["EXISTS", "Text-5"]).await, 0);
    for key in [
        "Integer-5",
        "rel",
        "List-1000",
        "pool",
        "scripted",
        "queued",
        "hll",
    ] {
        assert_eq!(
            contents(&mut replica, key).await,
            contents(&mut primary, key).await,
            "{key}"
        );
        let expiry = ["PEXPIRETIME", key];
        assert_eq!(
            int(&mut replica, &expiry).await,
            int(&mut primary, &expiry).await,
            "expiry of {key}"
        );
    }
    let range = ["XRANGE", "stream", "-", "+"];
    assert_eq!(
        ok(&mut replica, &range).await,
        ok(&mut primary, &range).await
    );
    assert_eq!(
        ok(&mut replica, &["DBSIZE"]).await,
        ok(&mut primary, &["DBSIZE"]).await,
        "the expired key was deleted on the replica too"
    );
    ok(&mut replica, &["SELECT", "3"]).await;
    assert_eq!(
        ok(&mut replica, &["GET", "in-db-3"]).await,
        Value::BulkString(b"three".to_vec())
    );
    ok(&mut replica, &["SELECT", "0"]).await;
    // The whole dataset, every database, in one comparison (Redis's own digest on the replica).
    assert_eq!(
        ok(&mut replica, &["DEBUG", "DIGEST"]).await,
        ok(&mut primary, &["DEBUG", "DIGEST"]).await
    );

    let replication = info(&mut primary, "replication").await;
    assert_eq!(
        field(&replication, "connected_slaves").as_deref(),
        Some("1")
    );
    let line = field(&replication, "slave0").expect("slave0");
    assert!(line.contains("state=online"), "{line}");
    match ok(&mut primary, &["ROLE"]).await {
        Value::Array(role) => {
            assert_eq!(role[0], Value::BulkString(b"master".to_vec()));
            assert!(
                matches!(&role[2], Value::Array(r) if r.len() == 1),
                "{role:?}"
            );
        }
        other => panic!("ROLE: {other:?}"),
    }
    let stats = info(&mut primary, "stats").await;
    assert_eq!(field(&stats, "sync_full").as_deref(), Some("1"));
    let listed = common::stm::text(&ok(&mut primary, &["CLIENT", "LIST", "TYPE", "replica"]).await);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains("flags=S"), "{listed}");

    // The link drops; the replica comes back with PSYNC and gets only what it missed.
    ok(&mut replica, &["CLIENT", "KILL", "TYPE", "master"]).await;
    ok(&mut primary, &["SET", "while-away", "1"]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stats = info(&mut primary, "stats").await;
        if field(&stats, "sync_partial_ok").as_deref() == Some("1") {
            break;
        }
        assert!(Instant::now() < deadline, "no partial sync: {stats}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    caught_up(&mut primary, &mut replica).await;
    assert_eq!(
        ok(&mut replica, &["GET", "while-away"]).await,
        Value::BulkString(b"1".to_vec())
    );
    let stats = info(&mut primary, "stats").await;
    assert_eq!(field(&stats, "sync_full").as_deref(), Some("1"));
}

#[tokio::test]
async fn replconf_and_psync_arguments() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["REPLCONF", "listening-port", "6380"]).await,
        Value::Okay
    );
    let refused = common::stm::run(&mut con, &["REPLCONF", "nosuch", "1"]).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("Unrecognized REPLCONF option: nosuch")),
        "{refused:?}"
    );
    let refused = common::stm::run(&mut con, &["PSYNC", "?", "x"]).await;
    assert!(refused.is_err(), "{refused:?}");
    // Nothing attached: the stream is off and WAIT answers 0.
    let replication = info(&mut con, "replication").await;
    assert_eq!(
        field(&replication, "repl_backlog_active").as_deref(),
        Some("0")
    );
    assert_eq!(int(&mut con, &["WAIT", "0", "0"]).await, 0);
}

/// An stmd replica of an stmd primary: plain keys, a transaction, and STM captures (which a Redis
/// replica cannot run) all arrive; the replica refuses writes and cannot be followed in turn.
#[tokio::test]
async fn stmd_follows_stmd() {
    let primary_server =
        TestServer::start_with(|c| c.enable_debug_command = stmd::config::ProtectedCommand::Yes)
            .await;
    let mut primary = primary_server.client().await;
    ok(&mut primary, &["SET", "before", "1"]).await;
    common::stm::capture(&mut primary, "u1", "c1", "s1", "3", "-", "hello there").await;
    let target = format!("127.0.0.1 {}", primary_server.addr.port());
    let replica_server = TestServer::start_with(move |c| {
        c.replicaof = target;
        c.enable_debug_command = stmd::config::ProtectedCommand::Yes;
    })
    .await;
    let mut replica = replica_server.client().await;
    caught_up(&mut primary, &mut replica).await;

    ok(&mut primary, &["INCR", "before"]).await;
    ok(&mut primary, &["SET", "ttl", "v", "EX", "100"]).await;
    let keys = common::stm::capture(&mut primary, "u1", "c1", "s1", "3", "-", "second turn").await;
    caught_up(&mut primary, &mut replica).await;
    assert_eq!(
        ok(&mut replica, &["GET", "before"]).await,
        Value::BulkString(b"2".to_vec())
    );
    let expiry = ["PEXPIRETIME", "ttl"];
    assert_eq!(
        int(&mut replica, &expiry).await,
        int(&mut primary, &expiry).await
    );
    // The second capture arrived by the stream (the first, an STM entry, is not in a full sync).
    assert!(!keys.is_empty());
    for key in &keys {
        let on_replica = format!("{:?}", ok(&mut replica, &["STM.GET", key]).await);
        assert!(on_replica.contains("second turn"), "{key}: {on_replica}");
    }
    // The plain keys agree (DIGEST-VALUE); the whole digests may not: the first capture's STM
    // entries are not in a full sync.
    let plain = ["DEBUG", "DIGEST-VALUE", "before", "ttl"];
    assert_eq!(
        ok(&mut replica, &plain).await,
        ok(&mut primary, &plain).await
    );
    let refused = common::stm::run(&mut replica, &["SET", "x", "1"]).await;
    assert!(
        refused.as_ref().is_err_and(|e| e.starts_with("READONLY")),
        "{refused:?}"
    );
    let refused = common::stm::run(&mut replica, &["PSYNC", "?", "-1"]).await;
    assert!(refused.is_err(), "{refused:?}");
}

/// `min-replicas-to-write`: a primary refuses writes until enough replicas acknowledge within
/// `min-replicas-max-lag` seconds, and again once the only one is gone that long.
#[tokio::test]
async fn writes_wait_for_enough_good_replicas() {
    let primary_server = TestServer::start().await;
    let mut primary = primary_server.client().await;
    ok(
        &mut primary,
        &[
            "CONFIG",
            "SET",
            "min-replicas-to-write",
            "1",
            "min-replicas-max-lag",
            "2",
        ],
    )
    .await;
    let refused = common::stm::run(&mut primary, &["SET", "k", "v"]).await;
    assert_eq!(
        refused,
        Err("NOREPLICAS Not enough good replicas to write.".to_string())
    );
    let state = info(&mut primary, "replication").await;
    assert_eq!(
        field(&state, "min_slaves_good_slaves").as_deref(),
        Some("0")
    );
    // Reads and the replica's own traffic still go.
    assert_eq!(ok(&mut primary, &["GET", "k"]).await, Value::Nil);

    let target = format!("127.0.0.1 {}", primary_server.addr.port());
    let replica_server = TestServer::start_with(move |c| c.replicaof = target).await;
    let mut replica = replica_server.client().await;
    caught_up(&mut primary, &mut replica).await;
    ok(&mut primary, &["SET", "k", "v"]).await;
    let state = info(&mut primary, "replication").await;
    assert_eq!(
        field(&state, "min_slaves_good_slaves").as_deref(),
        Some("1")
    );
    caught_up(&mut primary, &mut replica).await;
    assert_eq!(
        ok(&mut replica, &["GET", "k"]).await,
        Value::BulkString(b"v".to_vec())
    );

    // The replica goes: once its last acknowledgement is over 2 s old, writes are refused again.
    drop(replica);
    drop(replica_server);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match common::stm::run(&mut primary, &["SET", "k", "w"]).await {
            Err(e) if e.starts_with("NOREPLICAS") => break,
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
        assert!(std::time::Instant::now() < deadline, "writes never refused");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Redis's `shutdown-timeout`: a shutdown waits, writes paused, until a lagging replica has
/// acknowledged the whole stream (here a redis-server replica stopped with SIGSTOP, resumed a
/// second later), so the replica has the last write; `now` in the signal's setting skips the wait.
#[tokio::test]
async fn shutdown_waits_for_a_lagging_replica() {
    for now in [false, true] {
        let setting = if now { "now" } else { "default" };
        let mut server =
            common::Binary::start(&["--shutdown-timeout", "10", "--shutdown-on-sigterm", setting]);
        let mut primary = server.client().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let dir_arg = dir.path().to_str().expect("utf-8 path");
        let port = server.port.to_string();
        let redis = RealRedis::start_with(&["--replicaof", "127.0.0.1", &port, "--dir", dir_arg]);
        let mut replica = redis.client().await;
        ok(&mut primary, &["SET", "first", "1"]).await;
        caught_up(&mut primary, &mut replica).await;
        common::send_signal(redis.pid(), "STOP");
        ok(&mut primary, &["SET", "last", "2"]).await;
        server.signal("TERM");
        if now {
            let status = server.exit_within(Duration::from_millis(1500));
            common::send_signal(redis.pid(), "CONT");
            assert!(status.is_some(), "now: no wait for the stopped replica");
            continue;
        }
        assert_eq!(
            server.exit_within(Duration::from_millis(1500)),
            None,
            "waits for the stopped replica"
        );
        common::send_signal(redis.pid(), "CONT");
        let status = server.exit_within(Duration::from_secs(10));
        assert!(status.is_some_and(|s| s.success()), "{status:?}");
        let last: Option<String> = redis::cmd("GET")
            .arg("last")
            .query_async(&mut replica)
            .await
            .expect("GET on the replica");
        assert_eq!(last.as_deref(), Some("2"), "the replica has the last write");
    }
}
