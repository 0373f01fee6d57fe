//! Connection limits: `maxclients` and the idle `timeout`.

mod common;

use common::TestServer;
use std::time::Duration;

#[tokio::test]
async fn idle_clients_are_closed_after_timeout() {
    let server = TestServer::start_with(|c| c.timeout = 1).await;
    let mut idle = server.raw().await;
    let mut busy = server.raw().await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        busy.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    }
    assert!(idle.is_closed().await, "the idle client was closed");
    busy.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
}

#[tokio::test]
async fn connections_over_maxclients_are_refused() {
    let server = TestServer::start_with(|c| c.maxclients = 2).await;
    let mut first = server.raw().await;
    let mut second = server.raw().await;
    first.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    second.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    let mut third = server.raw().await;
    let expected = b"-ERR max number of clients reached\r\n";
    assert_eq!(third.read_n(expected.len()).await, expected);
    assert!(third.is_closed().await);
    drop(first);
    // The slot frees once the server sees the close.
    let mut ok = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut again = server.raw().await;
        again.send(b"PING\r\n").await;
        if again.read_n(7).await == b"+PONG\r\n" {
            ok = true;
            break;
        }
    }
    assert!(ok, "a freed slot is reusable");
}

/// Resident memory of the server process (this test process), from INFO.
async fn rss(con: &mut redis::aio::MultiplexedConnection) -> i64 {
    common::stm::info_field(con, "memory", "used_memory_rss").await
}

#[tokio::test]
async fn a_pipeline_of_large_replies_is_written_in_pieces_not_buffered_whole() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let value = vec![b'v'; 1024 * 1024];
    redis::cmd("SET")
        .arg("big")
        .arg(&value)
        .query_async::<()>(&mut con)
        .await
        .expect("set");
    let before = rss(&mut con).await;
    // 400 MB of replies requested in one write, by a client that does not read for a while.
    let mut raw = server.raw().await;
    let requests: Vec<u8> = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n".repeat(400);
    raw.send(&requests).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = rss(&mut con).await;
    assert!(
        during - before < 100 * 1024 * 1024,
        "the server buffered the replies: RSS grew by {} MB",
        (during - before) >> 20
    );
    // Every reply still arrives, complete and in order.
    let header = b"$1048576\r\n";
    for _ in 0..400 {
        assert_eq!(raw.read_n(header.len()).await, header);
        let body = raw.read_n(value.len() + 2).await;
        assert!(body[..value.len()].iter().all(|&b| b == b'v'));
    }
}

#[tokio::test]
async fn used_memory_tracks_the_real_growth_of_a_large_fill() {
    let server = common::Binary::start(&[]);
    let mut con = server.client().await;
    let before_used = common::stm::info_field(&mut con, "memory", "used_memory").await;
    let before_rss = rss(&mut con).await;
    let value = vec![b'x'; 64 * 1024];
    for chunk in 0..30 {
        let mut pipe = redis::pipe();
        for i in 0..100 {
            pipe.cmd("SET")
                .arg(format!("fill:{chunk}:{i}"))
                .arg(&value)
                .ignore();
        }
        pipe.query_async::<()>(&mut con).await.expect("fill");
    }
    let grew_used = common::stm::info_field(&mut con, "memory", "used_memory").await - before_used;
    let grew_rss = rss(&mut con).await - before_rss;
    let fill = 3000 * 64 * 1024;
    assert!(
        grew_used >= fill,
        "used_memory grew {grew_used}, less than the {fill} bytes stored"
    );
    let off = (grew_used - grew_rss).abs() as f64 / grew_rss as f64;
    assert!(
        off < 0.15,
        "used_memory grew {grew_used}, RSS grew {grew_rss}: {:.1}% apart",
        off * 100.0
    );
}

#[tokio::test]
async fn dangerous_commands_can_be_renamed_or_disabled() {
    let server = TestServer::start_with(|c| {
        c.rename_command = ["FLUSHALL", "", "CONFIG", "ADMINCONFIG"]
            .map(String::from)
            .to_vec();
    })
    .await;
    let mut raw = server.raw().await;
    raw.roundtrip(
        b"*1\r\n$8\r\nFLUSHALL\r\n",
        b"-ERR unknown command 'FLUSHALL', with args beginning with: \r\n",
    )
    .await;
    raw.roundtrip(
        b"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$7\r\ntimeout\r\n",
        b"-ERR unknown command 'CONFIG', with args beginning with: 'GET' 'timeout' \r\n",
    )
    .await;
    raw.roundtrip(
        b"*3\r\n$11\r\nADMINCONFIG\r\n$3\r\nGET\r\n$7\r\ntimeout\r\n",
        b"*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n",
    )
    .await;
    // Inside MULTI the renamed name is queued and run too.
    raw.roundtrip(b"MULTI\r\n", b"+OK\r\n").await;
    raw.roundtrip(b"ADMINCONFIG GET timeout\r\n", b"+QUEUED\r\n")
        .await;
    raw.roundtrip(b"EXEC\r\n", b"*1\r\n*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n")
        .await;
}
