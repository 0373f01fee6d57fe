//! FAILOVER: an stmd primary hands its role to its stmd replica while a client writes (every
//! acknowledged write is on the new primary, the writer then gets READONLY); stmd and a real
//! redis-server fail over to each other both ways; a replica that never catches up makes the
//! failover time out (writes paused meanwhile, then resumed), and ABORT ends one; Redis's errors.

use crate::common;

use common::real_redis::RealRedis;
use common::stm::{ok, run};
use common::{until, TestServer};
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;
use std::time::{Duration, Instant};

async fn info_field(con: &mut Conn, name: &str) -> String {
    let text = match ok(con, &["INFO", "replication"]).await {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::VerbatimString { text, .. } => text,
        other => panic!("INFO: {other:?}"),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Polls `field` of INFO replication until it is `want`, up to 10 s.
async fn until_field(con: &mut Conn, field: &str, want: &str) {
    let what = format!("INFO {field}:{want}");
    until(&what, async || info_field(con, field).await == want).await;
}

async fn exists(con: &mut Conn, key: &str) -> bool {
    ok(con, &["EXISTS", key]).await == Value::Int(1)
}

/// A client that waits for its replies as long as they take (a paused write).
async fn patient_client(port: u16) -> Conn {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .expect("client")
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new().set_response_timeout(None),
        )
        .await
        .expect("connect")
}

async fn reply(con: &mut Conn, words: &[&str]) -> String {
    match run(con, words).await {
        Ok(Value::Okay) => "OK".into(),
        Ok(other) => format!("{other:?}"),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_stmd_replica_takes_over_without_losing_an_acknowledged_write() {
    let primary = TestServer::start().await;
    let port = primary.addr.port();
    let replica = TestServer::start_with(|c| c.replicaof = format!("127.0.0.1 {port}")).await;
    let (mut old, mut new) = (primary.client().await, replica.client().await);
    until_field(&mut new, "master_link_status", "up").await;
    let replica_port = replica.addr.port().to_string();

    // Redis's errors.
    assert_eq!(
        reply(&mut new, &["FAILOVER"]).await,
        "ERR FAILOVER is not valid when server is a replica."
    );
    assert_eq!(
        reply(&mut old, &["FAILOVER", "ABORT"]).await,
        "ERR No failover in progress."
    );
    assert_eq!(
        reply(&mut old, &["FAILOVER", "TO", "127.0.0.1", "1"]).await,
        "ERR FAILOVER target HOST and PORT is not a replica."
    );
    assert_eq!(
        reply(
            &mut old,
            &["FAILOVER", "TO", "127.0.0.1", &replica_port, "FORCE"]
        )
        .await,
        "ERR FAILOVER with force option requires both a timeout and target HOST and IP."
    );
    assert_eq!(
        info_field(&mut old, "master_failover_state").await,
        "no-failover"
    );

    // A client writes without pause; its acknowledged INCRs are counted until it is refused.
    let mut writer = patient_client(port).await;
    let writes = tokio::spawn(async move {
        let mut acknowledged = 0i64;
        loop {
            match run(&mut writer, &["INCR", "counter"]).await {
                Ok(Value::Int(n)) => {
                    acknowledged += 1;
                    assert_eq!(n, acknowledged, "each INCR counts once");
                }
                Ok(other) => panic!("INCR: {other:?}"),
                Err(e) => return (acknowledged, e),
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let request = [
        "FAILOVER",
        "TO",
        "127.0.0.1",
        &replica_port,
        "TIMEOUT",
        "5000",
    ];
    assert_eq!(reply(&mut old, &request).await, "OK");
    let (acknowledged, refusal) = writes.await.expect("writer");
    assert!(acknowledged > 0);
    assert_eq!(
        refusal,
        "READONLY You can't write against a read only replica."
    );

    until_field(&mut new, "role", "master").await;
    until_field(&mut old, "master_link_status", "up").await;
    assert_eq!(
        info_field(&mut old, "master_failover_state").await,
        "no-failover"
    );
    assert_eq!(
        info_field(&mut new, "master_failover_state").await,
        "no-failover"
    );
    assert_eq!(
        ok(&mut new, &["GET", "counter"]).await,
        Value::BulkString(acknowledged.to_string().into_bytes()),
        "every acknowledged write is on the new primary"
    );
    // The new primary's writes reach the old one, now its replica.
    ok(&mut new, &["SET", "after", "1"]).await;
    until("the old primary follows the new one", async || {
        exists(&mut old, "after").await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stmd_and_a_real_redis_fail_over_to_each_other() {
    let server = TestServer::start().await;
    let port = server.addr.port();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_arg = dir.path().to_str().expect("utf-8 path");
    let redis = RealRedis::start_with(&[
        "--replicaof",
        "127.0.0.1",
        &port.to_string(),
        "--dir",
        dir_arg,
    ]);
    let (mut stmd, mut real) = (server.client().await, redis.client().await);
    ok(&mut stmd, &["SET", "from-stmd", "1"]).await;
    until_field(&mut real, "master_link_status", "up").await;

    // stmd → Redis, to any replica (Redis is the one).
    assert_eq!(
        reply(&mut stmd, &["FAILOVER", "TIMEOUT", "5000"]).await,
        "OK"
    );
    until_field(&mut real, "role", "master").await;
    until_field(&mut stmd, "master_link_status", "up").await;
    assert_eq!(
        ok(&mut real, &["GET", "from-stmd"]).await,
        Value::BulkString(b"1".to_vec())
    );
    ok(&mut real, &["SET", "from-redis", "2"]).await;

    // Redis → stmd: Redis's hand-over PSYNC … FAILOVER promotes stmd.
    assert_eq!(reply(&mut real, &["FAILOVER"]).await, "OK");
    until_field(&mut stmd, "role", "master").await;
    until_field(&mut real, "master_link_status", "up").await;
    assert_eq!(
        ok(&mut stmd, &["GET", "from-redis"]).await,
        Value::BulkString(b"2".to_vec())
    );
    ok(&mut stmd, &["SET", "again", "3"]).await;
    until("Redis follows stmd again", async || {
        exists(&mut real, "again").await
    })
    .await;
}

/// A replica that takes the full sync and never acknowledges anything.
async fn silent_replica(primary: &TestServer) -> common::RawConn {
    let mut raw = primary.raw().await;
    let conf = common::resp(&[b"REPLCONF", b"listening-port", b"4321"]);
    raw.send(&conf).await;
    raw.read_reply().await;
    raw.send(&common::resp(&[b"PSYNC", b"?", b"-1"])).await;
    raw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_wait_until_a_failover_times_out_or_is_aborted() {
    let primary = TestServer::start().await;
    let mut con = primary.client().await;
    let _silent = silent_replica(&primary).await;
    until_field(
        &mut con,
        "slave0",
        "ip=127.0.0.1,port=4321,state=online,offset=0,lag=0",
    )
    .await;
    // Something it never acknowledges.
    ok(&mut con, &["SET", "k", "first"]).await;

    let request = ["FAILOVER", "TO", "127.0.0.1", "4321", "TIMEOUT", "600"];
    assert_eq!(reply(&mut con, &request).await, "OK");
    assert_eq!(
        info_field(&mut con, "master_failover_state").await,
        "waiting-for-sync"
    );
    assert_eq!(
        reply(&mut con, &request).await,
        "ERR FAILOVER already in progress."
    );
    // A write waits while the failover waits for the replica, and runs once it timed out.
    let mut writer = patient_client(primary.addr.port()).await;
    let started = Instant::now();
    assert_eq!(reply(&mut writer, &["SET", "k", "v"]).await, "OK");
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    until_field(&mut con, "master_failover_state", "no-failover").await;
    assert_eq!(info_field(&mut con, "role").await, "master");

    // ABORT ends a failover at once; reads were never held.
    assert_eq!(
        reply(&mut con, &["FAILOVER", "TO", "127.0.0.1", "4321"]).await,
        "OK"
    );
    assert_eq!(
        ok(&mut con, &["GET", "k"]).await,
        Value::BulkString(b"v".to_vec())
    );
    assert_eq!(reply(&mut con, &["FAILOVER", "ABORT"]).await, "OK");
    assert_eq!(
        info_field(&mut con, "master_failover_state").await,
        "no-failover"
    );
    assert_eq!(reply(&mut writer, &["SET", "k", "w"]).await, "OK");
}
