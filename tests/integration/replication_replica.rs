//! stmd as a replica of a real redis-server primary: REPLICAOF and `replicaof`, the full sync
//! (keys of every kind, a TTL, several databases, a function library; disk-based and diskless),
//! the primary's stream of writes applied here, READONLY for clients (also queued in MULTI and
//! from scripts), a password-protected primary, the link broken and made again (continued, or a
//! full sync when the primary has a new history), expired keys kept for the primary's DEL, REPLICAOF NO ONE,
//! ROLE and INFO replication.

use crate::common;
use crate::keys_dump::{contents, fill_everything};

use common::real_redis::RealRedis;
use common::stm::{ok, run};
use common::TestServer;
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;
use std::time::{Duration, Instant};

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        other => format!("{other:?}"),
    }
}

async fn info(con: &mut Conn, section: &str) -> String {
    text(&ok(con, &["INFO", section]).await)
}

fn field(info: &str, name: &str) -> Option<String> {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(|v| v.trim().to_string())
}

/// ROLE's state word on a replica (`connect`, `connecting`, `sync`, `connected`…).
async fn link_state(con: &mut Conn) -> String {
    match ok(con, &["ROLE"]).await {
        Value::Array(items) if items.len() == 5 => text(&items[3]),
        other => format!("{other:?}"),
    }
}

/// Waits (up to 15 s) until ROLE says `connected`.
async fn until_connected(con: &mut Conn) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let state = link_state(con).await;
        if state == "connected" {
            return;
        }
        assert!(Instant::now() < deadline, "the link never came up: {state}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The primary's WAIT: returns once this replica acknowledged every write made so far. Each WAIT
/// is shorter than the client's 500 ms response timeout (redis-rs's default), so a slow
/// acknowledgement is one more round, not a client-side time-out.
async fn synced(primary: &mut Conn) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if ok(primary, &["WAIT", "1", "300"]).await == Value::Int(1) {
            return;
        }
        assert!(Instant::now() < deadline, "the replica never acknowledged");
    }
}

/// Every key of databases `dbs` holds the same on both servers (KEYS, types, contents; a
/// HyperLogLog by its count).
async fn same_data(primary: &mut Conn, replica: &mut Conn, dbs: &[u32]) {
    for db in dbs {
        let db = db.to_string();
        ok(primary, &["SELECT", &db]).await;
        ok(replica, &["SELECT", &db]).await;
        let keys = |v: Value| -> Vec<String> {
            let mut keys: Vec<String> = match v {
                Value::Array(items) => items.iter().map(text).collect(),
                other => panic!("KEYS: {other:?}"),
            };
            keys.sort();
            keys
        };
        let expected = keys(ok(primary, &["KEYS", "*"]).await);
        assert_eq!(keys(ok(replica, &["KEYS", "*"]).await), expected, "db {db}");
        for key in &expected {
            let kind = text(&ok(primary, &["TYPE", key]).await);
            assert_eq!(text(&ok(replica, &["TYPE", key]).await), kind, "{key}");
            match kind.as_str() {
                "stream" => assert_eq!(
                    ok(replica, &["XRANGE", key, "-", "+"]).await,
                    ok(primary, &["XRANGE", key, "-", "+"]).await,
                    "{key}"
                ),
                _ if key.starts_with("hll") => assert_eq!(
                    ok(replica, &["PFCOUNT", key]).await,
                    ok(primary, &["PFCOUNT", key]).await
                ),
                _ => assert_eq!(
                    contents(replica, key).await,
                    contents(primary, key).await,
                    "{key}"
                ),
            }
        }
    }
    ok(primary, &["SELECT", "0"]).await;
    ok(replica, &["SELECT", "0"]).await;
}

async fn replica_of(port: u16, tweak: impl FnOnce(&mut stmd::config::Config)) -> TestServer {
    TestServer::start_with(move |c| {
        c.replicaof = format!("127.0.0.1 {port}");
        tweak(c);
    })
    .await
}

#[tokio::test]
async fn a_replica_loads_the_primary_and_applies_its_writes() {
    // Disk-based sync: the `$<len>` payload, with the primary's newlines while it saves.
    // Its file goes to a directory of its own (a file in the working directory would be
    // loaded by every redis-server the tests start there).
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_arg = dir.path().display().to_string();
    let redis = RealRedis::start_with(&["--repl-diskless-sync", "no", "--dir", &dir_arg]);
    let mut primary = redis.client().await;
    fill_everything(&mut primary).await;
    let server = replica_of(redis.port, |_| {}).await;
    let mut replica = server.client().await;
    until_connected(&mut replica).await;
    same_data(&mut primary, &mut replica, &[0, 2]).await;
    assert!(matches!(ok(&mut replica, &["TTL", "ttl"]).await, Value::Int(t) if t > 900));
    assert_eq!(
        ok(&mut replica, &["FCALL_RO", "everyf", "0"]).await,
        Value::Int(42)
    );

    // The primary's writes, one of each sort, arrive in order.
    for words in [
        &["SET", "s", "1"][..],
        &["INCR", "s"],
        &["LPUSH", "List-5", "new"],
        &["HSET", "Hash-5", "f", "changed"],
        &["ZADD", "ZSet-5", "7.5", "added"],
        &["EXPIRE", "Text-5", "500"],
        &["XADD", "stream", "3-1", "g", "w"],
        &["DEL", "Set-1000"],
    ] {
        ok(&mut primary, words).await;
    }
    redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("tx-a")
        .arg("1")
        .cmd("RPUSH")
        .arg("tx-b")
        .arg("x")
        .query_async::<()>(&mut primary)
        .await
        .expect("MULTI/EXEC");
    ok(
        &mut primary,
        &[
            "EVAL",
            "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])",
            "2",
            "ev",
            "evc",
            "v",
        ],
    )
    .await;
    ok(&mut primary, &["SELECT", "3"]).await;
    ok(&mut primary, &["SET", "in-db-3", "three"]).await;
    ok(&mut primary, &["SELECT", "2"]).await;
    ok(&mut primary, &["FLUSHDB"]).await;
    ok(&mut primary, &["SELECT", "0"]).await;
    synced(&mut primary).await;
    same_data(&mut primary, &mut replica, &[0, 2, 3]).await;
    assert!(matches!(ok(&mut replica, &["TTL", "Text-5"]).await, Value::Int(t) if t > 400));

    // Clients of the replica may read, not write: directly, queued in MULTI, from a script.
    let refused = "READONLY You can't write against a read only replica.";
    assert_eq!(
        run(&mut replica, &["SET", "x", "1"]).await,
        Err(refused.into())
    );
    let mut raw = server.raw().await;
    raw.roundtrip(b"MULTI\r\n", b"+OK\r\n").await;
    raw.roundtrip(b"SET x 1\r\n", format!("-{refused}\r\n").as_bytes())
        .await;
    raw.roundtrip(
        b"EXEC\r\n",
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    )
    .await;
    let script = run(
        &mut replica,
        &["EVAL", "return redis.call('set', 'x', '1')", "0"],
    )
    .await;
    assert!(
        script.as_ref().is_err_and(|e| e.starts_with(refused)),
        "{script:?}"
    );
    let declared = run(&mut replica, &["EVAL", "#!lua\nreturn 1", "0"]).await;
    assert_eq!(declared, Err(refused.into()));
    assert_eq!(
        ok(
            &mut replica,
            &["EVAL", "return redis.call('get', 's')", "0"]
        )
        .await,
        Value::BulkString(b"2".to_vec())
    );
    assert_eq!(
        run(&mut replica, &["GET", "x"]).await,
        Ok(Value::Nil),
        "nothing was written"
    );

    // ROLE, INFO and CLIENT LIST as Redis shows a replica.
    let repl = info(&mut replica, "replication").await;
    let primary_repl = info(&mut primary, "replication").await;
    assert_eq!(field(&repl, "role").as_deref(), Some("slave"));
    assert_eq!(field(&repl, "master_host").as_deref(), Some("127.0.0.1"));
    assert_eq!(field(&repl, "master_port"), Some(redis.port.to_string()));
    assert_eq!(field(&repl, "master_link_status").as_deref(), Some("up"));
    assert_eq!(
        field(&repl, "master_sync_in_progress").as_deref(),
        Some("0")
    );
    assert_eq!(field(&repl, "slave_read_only").as_deref(), Some("1"));
    assert_eq!(field(&repl, "master_link_down_since_seconds"), None);
    assert_eq!(
        field(&repl, "master_replid"),
        field(&primary_repl, "master_replid")
    );
    assert_eq!(
        field(&repl, "slave_repl_offset"),
        field(&primary_repl, "master_repl_offset")
    );
    match ok(&mut replica, &["ROLE"]).await {
        Value::Array(items) => {
            assert_eq!(text(&items[0]), "slave");
            assert_eq!(items[2], Value::Int(i64::from(redis.port)));
            assert_eq!(text(&items[3]), "connected");
            assert!(matches!(items[4], Value::Int(n) if n > 0));
        }
        other => panic!("ROLE: {other:?}"),
    }
    let clients = text(&ok(&mut replica, &["CLIENT", "LIST"]).await);
    assert!(
        clients
            .lines()
            .any(|l| l.contains("flags=M ") && l.contains(&format!(":{} ", redis.port))),
        "{clients}"
    );

    // NO ONE: the data stays, writes are taken, the primary's id becomes replid2.
    assert_eq!(
        ok(&mut replica, &["REPLICAOF", "NO", "ONE"]).await,
        Value::Okay
    );
    let repl = info(&mut replica, "replication").await;
    assert_eq!(field(&repl, "role").as_deref(), Some("master"));
    assert_eq!(
        field(&repl, "master_replid2"),
        field(&primary_repl, "master_replid")
    );
    assert_ne!(
        field(&repl, "master_replid"),
        field(&primary_repl, "master_replid")
    );
    ok(&mut replica, &["SET", "x", "mine"]).await;
    ok(&mut primary, &["SET", "s", "after"]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        ok(&mut replica, &["GET", "s"]).await,
        Value::BulkString(b"2".to_vec()),
        "no longer following"
    );
    let Value::Int(theirs) = ok(&mut primary, &["DBSIZE"]).await else {
        panic!("DBSIZE")
    };
    // Every key kept, and `x` of its own.
    assert_eq!(ok(&mut replica, &["DBSIZE"]).await, Value::Int(theirs + 1));
}

#[tokio::test]
async fn a_password_protected_primary_and_a_broken_link() {
    // Diskless sync (the `$EOF:<mark>` payload) from a primary that wants a password.
    let args = [
        "--requirepass",
        "s3cret",
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
        "--enable-debug-command",
        "yes",
    ];
    let redis = RealRedis::start_with(&args);
    let client =
        redis::Client::open(format!("redis://:s3cret@127.0.0.1:{}", redis.port)).expect("client");
    let connect = || async {
        for _ in 0..100 {
            if let Ok(con) = client.get_multiplexed_async_connection().await {
                return con;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not start");
    };
    let mut primary = connect().await;
    ok(&mut primary, &["SET", "before", "1"]).await;
    let server = replica_of(redis.port, |c| c.masterauth = "s3cret".into()).await;
    let mut replica = server.client().await;
    until_connected(&mut replica).await;
    assert_eq!(
        ok(&mut replica, &["GET", "before"]).await,
        Value::BulkString(b"1".to_vec())
    );

    // The primary drops the link; what it writes meanwhile arrives when the link is back (a
    // continued sync: the primary counts a partial resync).
    ok(&mut primary, &["CLIENT", "KILL", "TYPE", "replica"]).await;
    ok(&mut primary, &["SET", "meanwhile", "2"]).await;
    ok(&mut primary, &["INCR", "before"]).await;
    until_connected(&mut replica).await;
    synced(&mut primary).await;
    same_data(&mut primary, &mut replica, &[0]).await;
    let stats = info(&mut primary, "stats").await;
    assert_eq!(
        field(&stats, "sync_partial_ok").as_deref(),
        Some("1"),
        "{stats}"
    );

    // A primary with a new history (as after a restart) cannot continue the old one: the next
    // link makes a full sync, which replaces every key of the replica (one written here too).
    ok(&mut replica, &["CONFIG", "SET", "replica-read-only", "no"]).await;
    ok(&mut replica, &["SET", "local-only", "x"]).await;
    ok(&mut primary, &["DEBUG", "CHANGE-REPL-ID"]).await;
    ok(&mut primary, &["SET", "fresh", "3"]).await;
    ok(&mut primary, &["CLIENT", "KILL", "TYPE", "replica"]).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while field(&info(&mut primary, "stats").await, "sync_full").as_deref() != Some("2") {
        assert!(Instant::now() < deadline, "no second full sync");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    until_connected(&mut replica).await;
    synced(&mut primary).await;
    same_data(&mut primary, &mut replica, &[0]).await;
    assert_eq!(
        ok(&mut replica, &["EXISTS", "local-only"]).await,
        Value::Int(0)
    );
    assert_eq!(
        field(&info(&mut replica, "replication").await, "master_replid"),
        field(&info(&mut primary, "replication").await, "master_replid")
    );

    // replica-serve-stale-data no: served while the link is up, MASTERDOWN once it is down.
    ok(
        &mut replica,
        &["CONFIG", "SET", "replica-serve-stale-data", "no"],
    )
    .await;
    assert_eq!(
        ok(&mut replica, &["GET", "fresh"]).await,
        Value::BulkString(b"3".to_vec())
    );
    drop(primary);
    drop(redis);
    let deadline = Instant::now() + Duration::from_secs(15);
    let refused = loop {
        match redis::cmd("GET")
            .arg("fresh")
            .query_async::<Value>(&mut replica)
            .await
        {
            Err(err) => break err,
            Ok(_) => {
                assert!(
                    Instant::now() < deadline,
                    "still served after the link went down"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    assert_eq!(refused.code(), Some("MASTERDOWN"), "{refused}");
    assert_ne!(link_state(&mut replica).await, "connected");
}

#[tokio::test]
async fn expired_keys_wait_for_the_primary_del() {
    let redis = RealRedis::start_with(&["--enable-debug-command", "yes"]);
    let mut primary = redis.client().await;
    // The primary expires lazily only: the key stays there until it is read.
    ok(&mut primary, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]).await;
    let server = replica_of(redis.port, |_| {}).await;
    let mut replica = server.client().await;
    until_connected(&mut replica).await;
    ok(&mut primary, &["SET", "short", "v", "PX", "100"]).await;
    synced(&mut primary).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Hidden from reads, but kept: the replica does not delete it itself.
    assert_eq!(ok(&mut replica, &["GET", "short"]).await, Value::Nil);
    assert_eq!(ok(&mut replica, &["DBSIZE"]).await, Value::Int(1));
    // The primary's read expires it and sends DEL.
    assert_eq!(ok(&mut primary, &["GET", "short"]).await, Value::Nil);
    synced(&mut primary).await;
    assert_eq!(ok(&mut replica, &["DBSIZE"]).await, Value::Int(0));
}

#[tokio::test]
async fn replicaof_replies_config_and_a_primary_that_is_not_there() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let port_error = Err("ERR Invalid master port".to_string());
    assert_eq!(
        run(&mut con, &["REPLICAOF", "127.0.0.1", "x"]).await,
        port_error
    );
    assert_eq!(
        run(&mut con, &["SLAVEOF", "127.0.0.1", "65536"]).await,
        port_error
    );
    assert_eq!(run(&mut con, &["REPLICAOF", "no", "two"]).await, port_error);
    assert_eq!(ok(&mut con, &["REPLICAOF", "NO", "ONE"]).await, Value::Okay);
    assert_eq!(
        field(&info(&mut con, "replication").await, "role").as_deref(),
        Some("master")
    );

    // A port nobody listens on: the node follows it anyway and retries, refusing writes.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
        .to_string();
    assert_eq!(
        ok(&mut con, &["SLAVEOF", "127.0.0.1", &closed]).await,
        Value::Okay
    );
    assert_eq!(
        ok(&mut con, &["REPLICAOF", "127.0.0.1", &closed]).await,
        Value::SimpleString("OK Already connected to specified master".into())
    );
    let repl = info(&mut con, "replication").await;
    assert_eq!(field(&repl, "role").as_deref(), Some("slave"));
    assert_eq!(field(&repl, "master_link_status").as_deref(), Some("down"));
    assert_eq!(
        field(&repl, "master_last_io_seconds_ago").as_deref(),
        Some("-1")
    );
    assert_eq!(
        field(&repl, "master_link_down_since_seconds").as_deref(),
        Some("-1")
    );
    match ok(&mut con, &["ROLE"]).await {
        Value::Array(items) => {
            assert!(["connect", "connecting"].contains(&text(&items[3]).as_str()));
            assert_eq!(items[4], Value::Int(-1));
        }
        other => panic!("ROLE: {other:?}"),
    }
    let expected = Value::Array(vec![
        Value::BulkString(b"replicaof".to_vec()),
        Value::BulkString(format!("127.0.0.1 {closed}").into_bytes()),
    ]);
    assert_eq!(
        ok(&mut con, &["CONFIG", "GET", "replicaof"]).await,
        expected
    );
    assert!(run(&mut con, &["SET", "k", "v"]).await.is_err());
    // replica-read-only no: writes are taken while following.
    ok(&mut con, &["CONFIG", "SET", "slave-read-only", "no"]).await;
    ok(&mut con, &["SET", "k", "v"]).await;
    ok(&mut con, &["CONFIG", "SET", "replica-read-only", "yes"]).await;
    assert!(run(&mut con, &["SET", "k", "v"]).await.is_err());
    assert_eq!(ok(&mut con, &["REPLICAOF", "no", "one"]).await, Value::Okay);
    ok(&mut con, &["SET", "k", "v2"]).await;
    let expected = Value::Array(vec![
        Value::BulkString(b"slaveof".to_vec()),
        Value::BulkString(Vec::new()),
    ]);
    assert_eq!(ok(&mut con, &["CONFIG", "GET", "slaveof"]).await, expected);
}

#[tokio::test]
async fn the_primary_waits_for_a_long_script_never_answered_busy() {
    let redis = RealRedis::start();
    let mut primary = redis.client().await;
    let server = replica_of(redis.port, |c| c.busy_reply_threshold = 100).await;
    let mut replica = server.client().await;
    until_connected(&mut replica).await;
    // A read-only script runs 600 ms, past the BUSY threshold, while the primary writes.
    let spin = "local s = redis.call('time') local t = s repeat t = redis.call('time') until (t[1] - s[1]) * 1000000 + (t[2] - s[2]) > 600000 return 1";
    let mut other = server.client().await;
    let script = tokio::spawn(async move { run(&mut other, &["EVAL_RO", spin, "0"]).await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    ok(&mut primary, &["SET", "during", "script"]).await;
    assert_eq!(script.await.expect("script task"), Ok(Value::Int(1)));
    synced(&mut primary).await;
    assert_eq!(
        ok(&mut replica, &["GET", "during"]).await,
        Value::BulkString(b"script".to_vec())
    );
}
