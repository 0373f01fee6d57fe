//! Numbered databases over real TCP: SELECT, MOVE, SWAPDB (with a blocked client), FLUSHDB,
//! FLUSHALL, DBSIZE, KEYS, SCAN, RANDOMKEY per database, SELECT inside MULTI, WATCH across SWAPDB,
//! expiry in other databases, INFO keyspace, CLIENT INFO's `db=`, RESET, the `redis` crate with a
//! database in its URL, and the rule that `STM.*` works in database 0 only.

use crate::common;
use crate::types_support;

use common::{resp, RawConn, TestServer};
use std::time::{Duration, Instant};
use types_support::{args, assert_silent, run_table};

async fn run(conn: &mut RawConn, command: &str) -> String {
    conn.send(&resp(&args(command))).await;
    String::from_utf8_lossy(&conn.read_reply().await).into_owned()
}

#[tokio::test]
async fn select_reads_and_writes_per_database_with_redis_errors() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    run_table(
        &mut c,
        &[
            ("SELECT 16", b"-ERR DB index is out of range\r\n"),
            ("SELECT -1", b"-ERR DB index is out of range\r\n"),
            (
                "SELECT x",
                b"-ERR value is not an integer or out of range\r\n",
            ),
            (
                "SELECT 99999999999",
                b"-ERR value is out of range, value must between -2147483648 and 2147483647\r\n",
            ),
            ("SET k zero", b"+OK\r\n"),
            ("SET only0 x", b"+OK\r\n"),
            ("SELECT 15", b"+OK\r\n"),
            ("GET k", b"$-1\r\n"),
            ("DBSIZE", b":0\r\n"),
            ("RANDOMKEY", b"$-1\r\n"),
            ("KEYS *", b"*0\r\n"),
            ("SCAN 0", b"*2\r\n$1\r\n0\r\n*0\r\n"),
            ("SET k fifteen", b"+OK\r\n"),
            ("GET k", b"$7\r\nfifteen\r\n"),
            ("DBSIZE", b":1\r\n"),
            ("RANDOMKEY", b"$1\r\nk\r\n"),
            ("KEYS *", b"*1\r\n$1\r\nk\r\n"),
            ("SCAN 0 COUNT 1000", b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"),
            ("RENAME k k2", b"+OK\r\n"),
            ("SELECT 0", b"+OK\r\n"),
            ("GET k", b"$4\r\nzero\r\n"),
            ("EXISTS k2", b":0\r\n"),
            ("DBSIZE", b":2\r\n"),
            ("FLUSHDB ASYNC", b"+OK\r\n"),
            ("DBSIZE", b":0\r\n"),
            ("SELECT 15", b"+OK\r\n"),
            ("DBSIZE", b":1\r\n"),
            ("FLUSHDB bogus", b"-ERR syntax error\r\n"),
            ("SET other 1", b"+OK\r\n"),
            ("SELECT 3", b"+OK\r\n"),
            ("SET three 1", b"+OK\r\n"),
            ("FLUSHALL SYNC", b"+OK\r\n"),
            ("DBSIZE", b":0\r\n"),
            ("SELECT 15", b"+OK\r\n"),
            ("DBSIZE", b":0\r\n"),
        ],
    )
    .await;
    let config = run(&mut c, "CONFIG GET databases").await;
    assert_eq!(config, "*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n");
    let refused = run(&mut c, "CONFIG SET databases 4").await;
    assert!(refused.contains("can't set immutable config"), "{refused}");
}

#[tokio::test]
async fn the_databases_option_sets_the_number_of_indexes() {
    let server = TestServer::start_with(|c| c.databases = 3).await;
    let mut c = server.raw().await;
    run_table(
        &mut c,
        &[
            ("SELECT 2", b"+OK\r\n"),
            ("SELECT 3", b"-ERR DB index is out of range\r\n"),
            ("MOVE k 3", b"-ERR DB index is out of range\r\n"),
            ("SWAPDB 0 3", b"-ERR DB index is out of range\r\n"),
            (
                "CONFIG GET databases",
                b"*2\r\n$9\r\ndatabases\r\n$1\r\n3\r\n",
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn move_keeps_the_ttl_and_never_overwrites() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    run_table(
        &mut c,
        &[
            ("MOVE missing 1", b":0\r\n"),
            ("SET k v EX 100", b"+OK\r\n"),
            (
                "MOVE k 0",
                b"-ERR source and destination objects are the same\r\n",
            ),
            (
                "MOVE k x",
                b"-ERR value is not an integer or out of range\r\n",
            ),
            ("MOVE k 16", b"-ERR DB index is out of range\r\n"),
            (
                "MOVE k",
                b"-ERR wrong number of arguments for 'move' command\r\n",
            ),
            ("MOVE k 1", b":1\r\n"),
            ("EXISTS k", b":0\r\n"),
            ("SET k again", b"+OK\r\n"),
            ("MOVE k 1", b":0\r\n"),
            ("GET k", b"$5\r\nagain\r\n"),
            ("SELECT 1", b"+OK\r\n"),
            ("GET k", b"$1\r\nv\r\n"),
            ("RPUSH list a b", b":2\r\n"),
            ("MOVE list 2", b":1\r\n"),
            ("SELECT 2", b"+OK\r\n"),
            ("LRANGE list 0 -1", b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
        ],
    )
    .await;
    run(&mut c, "SELECT 1").await;
    let ttl = run(&mut c, "TTL k").await;
    assert!(
        ttl == ":100\r\n" || ttl == ":99\r\n",
        "TTL moved too: {ttl}"
    );
}

#[tokio::test]
async fn swapdb_swaps_contents_and_wakes_clients_blocked_on_keys_that_now_exist() {
    let server = TestServer::start().await;
    let mut waiter = server.raw().await;
    run(&mut waiter, "SELECT 1").await;
    waiter.send(&resp(&args("BLPOP queue 0"))).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut c = server.raw().await;
    run_table(
        &mut c,
        &[
            ("RPUSH queue job", b":1\r\n"),
            ("SET zero-only 1", b"+OK\r\n"),
        ],
    )
    .await;
    // The push went to database 0: the client blocked in database 1 keeps waiting.
    assert_silent(&mut waiter, Duration::from_millis(100)).await;
    run_table(
        &mut c,
        &[
            ("SWAPDB 0 x", b"-ERR invalid second DB index\r\n"),
            ("SWAPDB x 0", b"-ERR invalid first DB index\r\n"),
            ("SWAPDB 0 16", b"-ERR DB index is out of range\r\n"),
            ("SWAPDB 2 2", b"+OK\r\n"),
            ("SWAPDB 0 1", b"+OK\r\n"),
        ],
    )
    .await;
    let woken = waiter.read_reply().await;
    assert_eq!(woken, b"*2\r\n$5\r\nqueue\r\n$3\r\njob\r\n");
    run_table(
        &mut c,
        &[
            ("DBSIZE", b":0\r\n"),
            ("SELECT 1", b"+OK\r\n"),
            ("GET zero-only", b"$1\r\n1\r\n"),
            ("EXISTS queue", b":0\r\n"),
            // Two never-used databases swap as a no-op.
            ("SWAPDB 7 8", b"+OK\r\n"),
        ],
    )
    .await;
}

#[tokio::test]
async fn select_inside_multi_switches_the_database_for_the_commands_after_it() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    run_table(
        &mut c,
        &[
            ("MULTI", b"+OK\r\n"),
            ("SET a zero", b"+QUEUED\r\n"),
            ("SELECT 4", b"+QUEUED\r\n"),
            ("SET a four", b"+QUEUED\r\n"),
            ("MOVE a 5", b"+QUEUED\r\n"),
            ("SWAPDB 5 6", b"+QUEUED\r\n"),
            ("DBSIZE", b"+QUEUED\r\n"),
            ("EXEC", b"*6\r\n+OK\r\n+OK\r\n+OK\r\n:1\r\n+OK\r\n:0\r\n"),
            // The connection stays in the database the transaction selected, as in Redis.
            ("EXISTS a", b":0\r\n"),
            ("SELECT 6", b"+OK\r\n"),
            ("GET a", b"$4\r\nfour\r\n"),
            ("SELECT 0", b"+OK\r\n"),
            ("GET a", b"$4\r\nzero\r\n"),
            ("MULTI", b"+OK\r\n"),
            ("SELECT 2", b"+QUEUED\r\n"),
            ("FLUSHALL", b"+QUEUED\r\n"),
            ("EXEC", b"*2\r\n+OK\r\n+OK\r\n"),
            ("SELECT 6", b"+OK\r\n"),
            ("DBSIZE", b":0\r\n"),
        ],
    )
    .await;
}

#[tokio::test]
async fn watch_sees_writes_in_the_watched_database_and_swaps() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let mut other = server.raw().await;
    run_table(
        &mut c,
        &[
            ("SELECT 1", b"+OK\r\n"),
            ("SET k 1", b"+OK\r\n"),
            ("WATCH k", b"+OK\r\n"),
            ("SELECT 2", b"+OK\r\n"),
        ],
    )
    .await;
    // A write to the same name in another database is not a write to the watched key.
    run(&mut other, "SET k elsewhere").await;
    run_table(
        &mut c,
        &[
            ("MULTI", b"+OK\r\n"),
            ("SET x 1", b"+QUEUED\r\n"),
            ("EXEC", b"*1\r\n+OK\r\n"),
            ("SELECT 1", b"+OK\r\n"),
            ("WATCH k", b"+OK\r\n"),
        ],
    )
    .await;
    run(&mut other, "SWAPDB 1 3").await;
    run_table(
        &mut c,
        &[
            ("MULTI", b"+OK\r\n"),
            ("SET x 1", b"+QUEUED\r\n"),
            ("EXEC", b"*-1\r\n"),
        ],
    )
    .await;
}

#[tokio::test]
async fn stm_commands_work_in_database_zero_only() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let capture = "STM.CAPTURE USER 1001 CHANNEL 7 SERVER 42 MSG user alice hello REPLY 3 - bot hi";
    let refused = "-ERR STM commands work in database 0 only (this connection selected database 3); SELECT 0 first\r\n";
    run(&mut c, "SELECT 3").await;
    assert_eq!(run(&mut c, capture).await, refused);
    assert_eq!(run(&mut c, "STM.RECENT USER 1001").await, refused);
    assert_eq!(run(&mut c, "DBSIZE").await, ":0\r\n");
    run(&mut c, "SELECT 0").await;
    let captured = run(&mut c, capture).await;
    assert!(!captured.starts_with('-'), "{captured}");
    let recent = run(&mut c, "STM.RECENT USER 1001").await;
    assert!(recent.contains("shortterm:user:1001:7:3"), "{recent}");
    // Inside MULTI the check follows the database each command runs in.
    run(&mut c, "MULTI").await;
    run(&mut c, "SELECT 3").await;
    run(&mut c, "STM.RECENT USER 1001").await;
    let exec = run(&mut c, "EXEC").await;
    assert_eq!(exec, format!("*2\r\n+OK\r\n{refused}"));
}

#[tokio::test]
async fn expired_keys_in_other_databases_are_reclaimed_by_the_active_cycle() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    run(&mut c, "SELECT 9").await;
    for i in 0..20 {
        run(&mut c, &format!("SET k{i} v PX 30")).await;
    }
    let started = Instant::now();
    loop {
        // DBSIZE counts expired keys not reclaimed yet: only the active cycle brings it to 0.
        if run(&mut c, "DBSIZE").await == ":0\r\n" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "not reclaimed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn info_keyspace_client_info_and_reset_show_the_databases() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    run(&mut c, "SET a 1").await;
    run(&mut c, "SELECT 2").await;
    run(&mut c, "SET b 1 EX 1000").await;
    run(&mut c, "SET c 1").await;
    let info = run(&mut c, "INFO keyspace").await;
    assert!(
        info.contains("db0:keys=1,expires=0,avg_ttl=0,subexpiry=0\r\n"),
        "{info}"
    );
    assert!(info.contains("db2:keys=2,expires=1,avg_ttl="), "{info}");
    assert!(!info.contains("db1:"), "{info}");
    let me = run(&mut c, "CLIENT INFO").await;
    assert!(me.contains(" db=2 "), "{me}");
    assert_eq!(run(&mut c, "RESET").await, "+RESET\r\n");
    let me = run(&mut c, "CLIENT INFO").await;
    assert!(me.contains(" db=0 "), "{me}");
    assert_eq!(run(&mut c, "EXISTS b").await, ":0\r\n");
}

#[tokio::test]
async fn the_redis_crate_with_a_database_in_its_url_works_in_that_database() {
    let server = TestServer::start().await;
    let client = redis::Client::open(format!("{}/2", server.url())).expect("client");
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to /2");
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("in-two")
        .query_async(&mut con)
        .await
        .expect("set");
    let info: String = redis::cmd("CLIENT")
        .arg("INFO")
        .query_async(&mut con)
        .await
        .expect("client info");
    assert!(info.contains(" db=2 "), "{info}");
    let resp3 =
        redis::Client::open(format!("redis://{}/2?protocol=resp3", server.addr)).expect("client");
    let mut con3 = resp3
        .get_multiplexed_async_connection()
        .await
        .expect("connect to /2 over RESP3");
    let got: String = redis::cmd("GET")
        .arg("k")
        .query_async(&mut con3)
        .await
        .expect("get");
    assert_eq!(got, "in-two");
    let mut raw = server.raw().await;
    assert_eq!(run(&mut raw, "EXISTS k").await, ":0\r\n");
}

/// Commands that count or walk a database (INFO keyspace, MEMORY STATS, DBSIZE, RANDOMKEY, SCAN,
/// KEYS) inside MULTI/EXEC, where EXEC already holds the databases' locks: each must answer
/// instead of waiting forever on a lock its own transaction holds.
#[tokio::test]
async fn counting_and_walking_commands_answer_inside_exec() {
    let server = TestServer::start().await;
    for command in [
        &["INFO", "keyspace"][..],
        &["INFO"],
        &["INFO", "everything"],
        &["MEMORY", "STATS"],
        &["DBSIZE"],
        &["RANDOMKEY"],
        &["SCAN", "0"],
        &["KEYS", "*"],
    ] {
        let mut con = server.client().await;
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SET")
            .arg("k")
            .arg("v")
            .arg("EX")
            .arg(100)
            .ignore();
        let mut queued = redis::cmd(command[0]);
        for arg in &command[1..] {
            queued.arg(*arg);
        }
        pipe.add_command(queued);
        let reply = tokio::time::timeout(
            Duration::from_secs(5),
            pipe.query_async::<Vec<redis::Value>>(&mut con),
        )
        .await
        .unwrap_or_else(|_| panic!("{command:?} inside EXEC never answered"))
        .expect("exec");
        if command == ["INFO", "keyspace"] {
            let text: String = redis::from_redis_value(reply[0].clone()).expect("text");
            assert!(text.contains("db0:keys=1,expires=1,"), "{text}");
        }
    }
}

/// FLUSHALL empties every database at once: a transaction reading two databases never sees the
/// first one flushed and the second one still full.
#[tokio::test]
async fn flushall_empties_every_database_atomically() {
    let server = TestServer::start().await;
    let mut filler = server.client().await;
    for round in 0..3 {
        for db in [0, 1] {
            let mut pipe = redis::pipe();
            pipe.cmd("SELECT").arg(db).ignore();
            for chunk in 0..20 {
                let mut mset = redis::cmd("MSET");
                for i in 0..1000 {
                    mset.arg(format!("k{round}:{chunk}:{i}")).arg("v");
                }
                pipe.add_command(mset).ignore();
            }
            let () = pipe.query_async(&mut filler).await.expect("fill");
        }
        let mut flusher = server.client().await;
        let flush = tokio::spawn(async move {
            let () = redis::cmd("FLUSHALL")
                .query_async(&mut flusher)
                .await
                .expect("flushall");
        });
        let mut reader = server.client().await;
        loop {
            let (first, second): (i64, i64) = redis::pipe()
                .atomic()
                .cmd("SELECT")
                .arg(0)
                .ignore()
                .cmd("DBSIZE")
                .cmd("SELECT")
                .arg(1)
                .ignore()
                .cmd("DBSIZE")
                .query_async(&mut reader)
                .await
                .expect("exec");
            assert!(
                !(first == 0 && second > 0),
                "db 0 empty while db 1 holds {second}"
            );
            if first == 0 && second == 0 {
                break;
            }
        }
        flush.await.expect("flush task");
    }
}
