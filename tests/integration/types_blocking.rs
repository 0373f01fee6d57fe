//! BLPOP, BRPOP, BLMOVE: timeouts, FIFO wake-up order, wake-ups from other connections and from
//! EXEC, non-blocking behaviour inside MULTI, disconnects while blocked, and no element lost or
//! delivered twice under concurrency.

use crate::common;
use crate::types_support;

use common::{resp, RawConn, TestServer};
use redis::AsyncCommands;
use std::time::{Duration, Instant};
use types_support::{args, assert_silent, raw3};

/// Sends a command without waiting for its reply.
async fn send(conn: &mut RawConn, command: &str) {
    conn.send(&resp(&args(command))).await;
}

/// Sends a blocking command and gives the server time to queue the client, so arrival order
/// between connections is the order of the calls.
async fn block(conn: &mut RawConn, command: &str) {
    send(conn, command).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test]
async fn timeout_answers_a_nil_array_after_about_the_timeout() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let started = Instant::now();
    c.roundtrip(&resp(&args("BLPOP nokey 0.2")), b"*-1\r\n")
        .await;
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(190), "{waited:?}");
    assert!(waited < Duration::from_millis(1500), "{waited:?}");
    // BLMOVE also answers a nil *array* on timeout (observed on redis-server 7.0.15).
    c.roundtrip(&resp(&args("BLMOVE a b LEFT RIGHT 0.05")), b"*-1\r\n")
        .await;
    c.roundtrip(&resp(&args("BRPOPLPUSH a b 0.05")), b"*-1\r\n")
        .await;
    let mut c3 = raw3(&server).await;
    c3.roundtrip(&resp(&args("BRPOP nokey 0.05")), b"_\r\n")
        .await;
}

#[tokio::test]
async fn bad_timeouts_are_refused_with_redis_errors() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    for (command, reply) in [
        ("BLPOP k -1", &b"-ERR timeout is negative\r\n"[..]),
        ("BLPOP k inf", b"-ERR timeout is negative\r\n"),
        (
            "BRPOP k abc",
            b"-ERR timeout is not a float or out of range\r\n",
        ),
        (
            "BLMOVE a b LEFT RIGHT 1x",
            b"-ERR timeout is not a float or out of range\r\n",
        ),
        ("BLMOVE a b UP RIGHT 0", b"-ERR syntax error\r\n"),
        (
            "BLPOP k",
            b"-ERR wrong number of arguments for 'blpop' command\r\n",
        ),
    ] {
        c.roundtrip(&resp(&args(command)), reply).await;
    }
    c.roundtrip(&resp(&args("SET s v")), b"+OK\r\n").await;
    c.roundtrip(
        &resp(&args("BLPOP s 0")),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    )
    .await;
}

#[tokio::test]
async fn a_push_from_another_connection_wakes_the_waiter() {
    let server = TestServer::start().await;
    let mut waiter = server.raw().await;
    block(&mut waiter, "BRPOP empty other 0").await;
    assert_silent(&mut waiter, Duration::from_millis(100)).await;
    let mut client = server.client().await;
    let len: i64 = client.lpush("other", "v").await.expect("lpush");
    assert_eq!(len, 1);
    let reply = waiter
        .read_n(b"*2\r\n$5\r\nother\r\n$1\r\nv\r\n".len())
        .await;
    assert_eq!(reply, b"*2\r\n$5\r\nother\r\n$1\r\nv\r\n");
    let exists: i64 = client.exists("other").await.expect("exists");
    assert_eq!(exists, 0, "the popped list was emptied and deleted");
}

#[tokio::test]
async fn three_waiters_are_served_first_come_first_served() {
    let server = TestServer::start().await;
    let mut waiters = Vec::new();
    for _ in 0..3 {
        let mut w = server.raw().await;
        block(&mut w, "BLPOP q 0").await;
        waiters.push(w);
    }
    let mut pusher = server.raw().await;
    pusher
        .roundtrip(&resp(&args("RPUSH q a b c")), b":3\r\n")
        .await;
    for (w, item) in waiters.iter_mut().zip(["a", "b", "c"]) {
        let expected = format!("*2\r\n$1\r\nq\r\n$1\r\n{item}\r\n");
        assert_eq!(w.read_n(expected.len()).await, expected.as_bytes());
    }

    // One element at a time: each push serves the longest-waiting client.
    for w in waiters.iter_mut() {
        block(w, "BRPOP q2 0").await;
    }
    for (i, item) in ["x", "y", "z"].iter().enumerate() {
        pusher
            .roundtrip(&resp(&args(&format!("LPUSH q2 {item}"))), b":1\r\n")
            .await;
        let expected = format!("*2\r\n$2\r\nq2\r\n$1\r\n{item}\r\n");
        assert_eq!(waiters[i].read_n(expected.len()).await, expected.as_bytes());
    }
}

#[tokio::test]
async fn a_newcomer_does_not_overtake_queued_waiters() {
    let server = TestServer::start().await;
    let mut first = server.raw().await;
    block(&mut first, "BLPOP k 0").await;
    let mut second = server.raw().await;
    block(&mut second, "BLPOP k 0").await;
    // One write: the push, then a new BLPOP that runs before the woken waiters do. It must queue
    // behind them (as in Redis, where the push serves them before the next command runs).
    let mut newcomer = server.raw().await;
    let mut pipeline = resp(&args("RPUSH k 1 2"));
    pipeline.extend(resp(&args("BLPOP k 0")));
    newcomer.send(&pipeline).await;
    assert_eq!(newcomer.read_n(4).await, b":2\r\n");
    assert_eq!(first.read_n(18).await, b"*2\r\n$1\r\nk\r\n$1\r\n1\r\n");
    assert_eq!(second.read_n(18).await, b"*2\r\n$1\r\nk\r\n$1\r\n2\r\n");
    assert_silent(&mut newcomer, Duration::from_millis(50)).await;
    let mut pusher = server.raw().await;
    pusher.roundtrip(&resp(&args("RPUSH k 3")), b":1\r\n").await;
    assert_eq!(newcomer.read_n(18).await, b"*2\r\n$1\r\nk\r\n$1\r\n3\r\n");
}

#[tokio::test]
async fn pushes_inside_exec_wake_waiters_only_after_exec() {
    let server = TestServer::start().await;
    let mut waiter = server.raw().await;
    block(&mut waiter, "BLPOP k 0").await;
    let mut tx = server.raw().await;
    tx.roundtrip(&resp(&args("MULTI")), b"+OK\r\n").await;
    tx.roundtrip(&resp(&args("RPUSH k a b")), b"+QUEUED\r\n")
        .await;
    tx.roundtrip(&resp(&args("LPOP k")), b"+QUEUED\r\n").await;
    assert_silent(&mut waiter, Duration::from_millis(50)).await;
    tx.roundtrip(&resp(&args("EXEC")), b"*2\r\n:2\r\n$1\r\na\r\n")
        .await;
    // The waiter sees the state after EXEC: "a" was popped inside the transaction.
    assert_eq!(waiter.read_n(18).await, b"*2\r\n$1\r\nk\r\n$1\r\nb\r\n");

    // A transaction that pushes and pops everything leaves the waiter blocked.
    block(&mut waiter, "BLPOP k 0").await;
    tx.roundtrip(&resp(&args("MULTI")), b"+OK\r\n").await;
    tx.roundtrip(&resp(&args("RPUSH k x")), b"+QUEUED\r\n")
        .await;
    tx.roundtrip(&resp(&args("RPOP k")), b"+QUEUED\r\n").await;
    tx.roundtrip(&resp(&args("EXEC")), b"*2\r\n:1\r\n$1\r\nx\r\n")
        .await;
    assert_silent(&mut waiter, Duration::from_millis(100)).await;
    tx.roundtrip(&resp(&args("RPUSH k y")), b":1\r\n").await;
    assert_eq!(waiter.read_n(18).await, b"*2\r\n$1\r\nk\r\n$1\r\ny\r\n");
}

#[tokio::test]
async fn blocking_commands_inside_multi_do_not_block() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&args("RPUSH full v")), b":1\r\n").await;
    c.roundtrip(&resp(&args("MULTI")), b"+OK\r\n").await;
    for command in [
        "BLPOP empty 0",
        "BLMOVE empty dst LEFT LEFT 0",
        "BRPOP full 0",
        "BRPOP full 0",
    ] {
        c.roundtrip(&resp(&args(command)), b"+QUEUED\r\n").await;
    }
    // Observed on redis-server 7.0.15: BLPOP → nil array, BLMOVE → nil bulk.
    c.roundtrip(
        &resp(&args("EXEC")),
        b"*4\r\n*-1\r\n$-1\r\n*2\r\n$4\r\nfull\r\n$1\r\nv\r\n*-1\r\n",
    )
    .await;
}

#[tokio::test]
async fn a_client_that_disconnects_while_blocked_takes_nothing() {
    let server = TestServer::start().await;
    let mut gone = server.raw().await;
    block(&mut gone, "BLPOP k 0").await;
    drop(gone);
    let mut stays = server.raw().await;
    block(&mut stays, "BLPOP k 0").await;
    let mut client = server.client().await;
    let _: i64 = client.rpush("k", "only").await.expect("rpush");
    assert_eq!(stays.read_n(21).await, b"*2\r\n$1\r\nk\r\n$4\r\nonly\r\n");
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query_async(&mut client)
        .await
        .expect("info");
    assert!(info.contains("blocked_clients:0"), "{info}");
}

#[tokio::test]
async fn blmove_moves_the_element_when_it_arrives() {
    let server = TestServer::start().await;
    let mut waiter = server.raw().await;
    block(&mut waiter, "BLMOVE src dst RIGHT LEFT 0").await;
    let mut client = server.client().await;
    let _: i64 = client.rpush("src", &["a", "b"]).await.expect("rpush");
    assert_eq!(waiter.read_n(7).await, b"$1\r\nb\r\n");
    let dst: Vec<String> = client.lrange("dst", 0, -1).await.expect("lrange");
    let src: Vec<String> = client.lrange("src", 0, -1).await.expect("lrange");
    assert_eq!((dst, src), (vec!["b".to_string()], vec!["a".to_string()]));
}

#[tokio::test]
async fn requests_pipelined_behind_a_blocked_one_wait_their_turn() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let mut pipeline = resp(&args("BLPOP k 0"));
    pipeline.extend(resp(&args("PING")));
    c.send(&pipeline).await;
    assert_silent(&mut c, Duration::from_millis(100)).await;
    let mut other = server.raw().await;
    other.roundtrip(&resp(&args("LPUSH k v")), b":1\r\n").await;
    let expected = b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n+PONG\r\n";
    assert_eq!(c.read_n(expected.len()).await, expected);
}

#[tokio::test]
async fn a_list_renamed_onto_a_waited_key_serves_the_waiter() {
    let server = TestServer::start().await;
    let mut waiter = server.raw().await;
    block(&mut waiter, "BLPOP target 0").await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&args("RPUSH staging v")), b":1\r\n")
        .await;
    c.roundtrip(&resp(&args("RENAME staging target")), b"+OK\r\n")
        .await;
    assert_eq!(
        waiter.read_n(23).await,
        b"*2\r\n$6\r\ntarget\r\n$1\r\nv\r\n"
    );
}

#[tokio::test]
async fn concurrent_waiters_get_every_element_exactly_once() {
    let server = TestServer::start().await;
    const WAITERS: usize = 4;
    const ITEMS: usize = 200;
    let mut tasks = Vec::new();
    for _ in 0..WAITERS {
        let mut con = server.client().await;
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            loop {
                let item: Option<(String, String)> = con.blpop("work", 0.3).await.expect("blpop");
                match item {
                    Some((_, value)) => got.push(value),
                    None => return got,
                }
            }
        }));
    }
    let mut pushers = Vec::new();
    for p in 0..2 {
        let mut con = server.client().await;
        pushers.push(tokio::spawn(async move {
            for i in 0..ITEMS / 2 {
                let _: i64 = con.rpush("work", format!("{p}-{i}")).await.expect("rpush");
            }
        }));
    }
    for p in pushers {
        p.await.expect("pusher");
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("waiter"));
    }
    all.sort();
    let mut expected: Vec<String> = (0..2)
        .flat_map(|p| (0..ITEMS / 2).map(move |i| format!("{p}-{i}")))
        .collect();
    expected.sort();
    assert_eq!(all, expected);
}

#[tokio::test]
async fn blocked_clients_and_subscribers_are_exempt_from_the_idle_timeout() {
    let server = TestServer::start_with(|c| c.timeout = 1).await;
    let mut waiter = server.raw().await;
    block(&mut waiter, "BLPOP k 0").await;
    let mut sub = server.raw().await;
    sub.roundtrip(
        &resp(&args("SUBSCRIBE ch")),
        b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
    )
    .await;
    let mut idle = server.raw().await;
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert!(idle.is_closed().await, "an ordinary idle client is closed");
    let mut pusher = server.raw().await;
    pusher.roundtrip(&resp(&args("RPUSH k v")), b":1\r\n").await;
    assert_eq!(waiter.read_n(18).await, b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n");
    pusher
        .roundtrip(&resp(&args("PUBLISH ch hi")), b":1\r\n")
        .await;
    let message = b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n";
    assert_eq!(sub.read_n(message.len()).await, message);
}
