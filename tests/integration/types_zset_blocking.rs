//! BZPOPMIN, BZPOPMAX, BZMPOP, BLMPOP with several clients (FIFO order, wake-ups from EXEC,
//! timeouts, MULTI never blocks), ZRANK/ZREVRANK WITHSCORE (Redis 7.2) and ZRANDMEMBER's shapes.
//! Waiters are known to be queued by polling INFO's `blocked_clients`, not by sleeping.

use crate::common;
use crate::types_support;

use common::{resp, RawConn, TestServer};
use std::time::{Duration, Instant};
use types_support::{args, assert_silent, raw3};

/// Waits (up to 5 s) until the server counts `n` blocked clients.
async fn wait_blocked(server: &TestServer, n: usize) {
    let mut client = server.client().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("clients")
            .query_async(&mut client)
            .await
            .expect("info");
        let blocked = info
            .lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .expect("blocked_clients field");
        if blocked == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "blocked_clients stayed {blocked}, wanted {n}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Sends a blocking command and waits until the server has queued it as the `nth` blocked client.
async fn block(server: &TestServer, conn: &mut RawConn, command: &str, nth: usize) {
    conn.send(&resp(&args(command))).await;
    wait_blocked(server, nth).await;
}

#[tokio::test]
async fn bzpopmin_waiters_are_served_first_come_first_served() {
    let server = TestServer::start().await;
    let mut waiters = Vec::new();
    for i in 0..3 {
        let mut w = server.raw().await;
        block(&server, &mut w, "BZPOPMIN z 0", i + 1).await;
        waiters.push(w);
    }
    let mut adder = server.raw().await;
    adder
        .roundtrip(&resp(&args("ZADD z 3 c 1 a 2 b")), b":3\r\n")
        .await;
    for (w, (member, score)) in waiters.iter_mut().zip([("a", 1), ("b", 2), ("c", 3)]) {
        let expected = format!("*3\r\n$1\r\nz\r\n$1\r\n{member}\r\n$1\r\n{score}\r\n");
        assert_eq!(w.read_n(expected.len()).await, expected.as_bytes());
    }
    wait_blocked(&server, 0).await;
    adder.roundtrip(&resp(&args("EXISTS z")), b":0\r\n").await;

    // One member at a time: each ZADD serves the longest-waiting client, whatever it runs.
    block(&server, &mut waiters[0], "BZPOPMAX q 0", 1).await;
    block(&server, &mut waiters[1], "BZMPOP 0 1 q MIN COUNT 5", 2).await;
    block(&server, &mut waiters[2], "BZPOPMIN other q 0", 3).await;
    adder.roundtrip(&resp(&args("ZADD q 1 x")), b":1\r\n").await;
    let expected = b"*3\r\n$1\r\nq\r\n$1\r\nx\r\n$1\r\n1\r\n";
    assert_eq!(waiters[0].read_n(expected.len()).await, expected);
    adder.roundtrip(&resp(&args("ZADD q 2 y")), b":1\r\n").await;
    let expected = b"*2\r\n$1\r\nq\r\n*1\r\n*2\r\n$1\r\ny\r\n$1\r\n2\r\n";
    assert_eq!(waiters[1].read_n(expected.len()).await, expected);
    adder.roundtrip(&resp(&args("ZADD q 3 z")), b":1\r\n").await;
    let expected = b"*3\r\n$1\r\nq\r\n$1\r\nz\r\n$1\r\n3\r\n";
    assert_eq!(waiters[2].read_n(expected.len()).await, expected);
}

#[tokio::test]
async fn a_zadd_inside_exec_wakes_the_waiter_after_exec() {
    let server = TestServer::start().await;
    let mut waiter = server.raw().await;
    block(&server, &mut waiter, "BZMPOP 0 2 a b MAX COUNT 10", 1).await;
    let mut tx = server.raw().await;
    tx.roundtrip(&resp(&args("MULTI")), b"+OK\r\n").await;
    tx.roundtrip(&resp(&args("ZADD b 1 one")), b"+QUEUED\r\n")
        .await;
    tx.roundtrip(&resp(&args("ZADD b 2 two")), b"+QUEUED\r\n")
        .await;
    tx.roundtrip(&resp(&args("EXEC")), b"*2\r\n:1\r\n:1\r\n")
        .await;
    // Both members were added before the waiter ran: it gets them both.
    let expected =
        b"*2\r\n$1\r\nb\r\n*2\r\n*2\r\n$3\r\ntwo\r\n$1\r\n2\r\n*2\r\n$3\r\none\r\n$1\r\n1\r\n";
    assert_eq!(waiter.read_n(expected.len()).await, expected);
}

#[tokio::test]
async fn blmpop_is_woken_by_a_push_and_serves_fifo() {
    let server = TestServer::start().await;
    let mut first = server.raw().await;
    block(&server, &mut first, "BLMPOP 0 2 l1 l2 LEFT COUNT 2", 1).await;
    let mut second = server.raw().await;
    block(&server, &mut second, "BLMPOP 0 1 l2 RIGHT", 2).await;
    let mut pusher = server.raw().await;
    pusher
        .roundtrip(&resp(&args("RPUSH l2 a b c")), b":3\r\n")
        .await;
    let expected = b"*2\r\n$2\r\nl2\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n";
    assert_eq!(first.read_n(expected.len()).await, expected);
    let expected = b"*2\r\n$2\r\nl2\r\n*1\r\n$1\r\nc\r\n";
    assert_eq!(second.read_n(expected.len()).await, expected);
    wait_blocked(&server, 0).await;
}

#[tokio::test]
async fn timeouts_answer_nil_and_multi_never_blocks() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    for command in [
        "BZPOPMIN z 0.1",
        "BZPOPMAX z 0.1",
        "BZMPOP 0.1 1 z MIN",
        "BLMPOP 0.1 1 l LEFT",
    ] {
        let started = Instant::now();
        c.roundtrip(&resp(&args(command)), b"*-1\r\n").await;
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(90), "{command}: {waited:?}");
        assert!(
            waited < Duration::from_millis(2000),
            "{command}: {waited:?}"
        );
    }
    let mut c3 = raw3(&server).await;
    c3.roundtrip(&resp(&args("BZMPOP 0.05 1 z MAX")), b"_\r\n")
        .await;
    c3.roundtrip(&resp(&args("BZPOPMIN z 0.05")), b"_\r\n")
        .await;

    c.roundtrip(&resp(&args("MULTI")), b"+OK\r\n").await;
    for command in ["BZPOPMIN z 0", "BZMPOP 0 1 z MIN", "BLMPOP 0 1 l LEFT"] {
        c.roundtrip(&resp(&args(command)), b"+QUEUED\r\n").await;
    }
    c.roundtrip(&resp(&args("EXEC")), b"*3\r\n*-1\r\n*-1\r\n*-1\r\n")
        .await;
    assert_silent(&mut c, Duration::from_millis(30)).await;
}

#[tokio::test]
async fn zrank_withscore_answers_rank_and_score() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&args("ZADD z 1 a 2.5 b 3 c")), b":3\r\n")
        .await;
    for (command, reply) in [
        ("ZRANK z b WITHSCORE", &b"*2\r\n:1\r\n$3\r\n2.5\r\n"[..]),
        ("ZREVRANK z b withscore", b"*2\r\n:1\r\n$3\r\n2.5\r\n"),
        ("ZRANK z c WITHSCORE", b"*2\r\n:2\r\n$1\r\n3\r\n"),
        ("ZREVRANK z c WITHSCORE", b"*2\r\n:0\r\n$1\r\n3\r\n"),
        ("ZRANK z nope WITHSCORE", b"*-1\r\n"),
        ("ZRANK missing a WITHSCORE", b"*-1\r\n"),
        ("ZRANK z nope", b"$-1\r\n"),
        ("ZRANK z a WITHSCORES", b"-ERR syntax error\r\n"),
        (
            "ZRANK z a WITHSCORE x",
            b"-ERR wrong number of arguments for 'zrank' command\r\n",
        ),
    ] {
        c.roundtrip(&resp(&args(command)), reply).await;
    }
    let mut c3 = raw3(&server).await;
    c3.roundtrip(&resp(&args("ZRANK z b WITHSCORE")), b"*2\r\n:1\r\n,2.5\r\n")
        .await;
    c3.roundtrip(&resp(&args("ZRANK z x WITHSCORE")), b"_\r\n")
        .await;
}

#[tokio::test]
async fn zrandmember_returns_members_of_the_set_in_redis_shapes() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let members = ["a", "b", "c", "d", "e"];
    for (i, m) in members.iter().enumerate() {
        let _: i64 = redis::cmd("ZADD")
            .arg("z")
            .arg(i as f64)
            .arg(m)
            .query_async(&mut client)
            .await
            .expect("zadd");
    }
    let one: String = redis::cmd("ZRANDMEMBER")
        .arg("z")
        .query_async(&mut client)
        .await
        .expect("zrandmember");
    assert!(members.contains(&one.as_str()));
    // A positive count: distinct members, at most the set's size.
    let some: Vec<String> = redis::cmd("ZRANDMEMBER")
        .arg("z")
        .arg(3)
        .query_async(&mut client)
        .await
        .expect("zrandmember 3");
    assert_eq!(some.len(), 3);
    let mut distinct = some.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{some:?}");
    assert!(some.iter().all(|m| members.contains(&m.as_str())));
    let all: Vec<String> = redis::cmd("ZRANDMEMBER")
        .arg("z")
        .arg(50)
        .query_async(&mut client)
        .await
        .expect("zrandmember 50");
    assert_eq!(all.len(), 5);
    // A negative count: exactly |count| members, repeats allowed.
    let many: Vec<String> = redis::cmd("ZRANDMEMBER")
        .arg("z")
        .arg(-20)
        .query_async(&mut client)
        .await
        .expect("zrandmember -20");
    assert_eq!(many.len(), 20);
    assert!(many.iter().all(|m| members.contains(&m.as_str())));
    // WITHSCORES: each member with its own score.
    let scored: Vec<(String, f64)> = redis::cmd("ZRANDMEMBER")
        .arg("z")
        .arg(-8)
        .arg("WITHSCORES")
        .query_async(&mut client)
        .await
        .expect("zrandmember withscores");
    assert_eq!(scored.len(), 8);
    for (m, s) in scored {
        let i = members.iter().position(|x| *x == m).expect("a member");
        assert_eq!(s, i as f64);
    }
    // RESP3 nests each pair with a double score.
    let mut c3 = raw3(&server).await;
    c3.send(&resp(&args("ZRANDMEMBER z 1 WITHSCORES"))).await;
    let reply = c3.read_reply().await;
    assert!(reply.starts_with(b"*1\r\n*2\r\n$1\r\n"), "{reply:?}");
    assert!(reply.windows(3).any(|w| w == b"\r\n,"), "{reply:?}");
}
