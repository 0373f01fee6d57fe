//! Protocol edges over raw TCP, byte for byte. Expected bytes are what Redis 7.0.15 sends for the
//! same input (checked against a real redis-server).

mod common;

use common::{resp, RawConn, TestServer};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// Asserts nothing arrives within a short wait (the server is still waiting for more input).
async fn assert_silent(conn: &mut RawConn) {
    let mut buf = [0u8; 64];
    match tokio::time::timeout(Duration::from_millis(30), conn.stream.read(&mut buf)).await {
        Err(_) => {}
        Ok(Ok(0)) => panic!("connection closed"),
        Ok(Ok(n)) => panic!("unexpected bytes {:?}", String::from_utf8_lossy(&buf[..n])),
        Ok(Err(e)) => panic!("read error {e}"),
    }
}

/// Resident memory of this process (the in-process server), from INFO memory.
async fn rss(conn: &mut RawConn) -> u64 {
    let reply = conn.command(&[b"INFO", b"memory"]).await;
    let text = String::from_utf8_lossy(&reply);
    text.lines()
        .find_map(|l| l.strip_prefix("used_memory_rss:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory_rss in INFO memory")
}

#[tokio::test]
async fn inline_commands_work_like_telnet_and_redis_benchmark() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    conn.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    conn.roundtrip(b"PING\n", b"+PONG\r\n").await;
    conn.roundtrip(b"\r\n\r\n\n  PING  \r\n", b"+PONG\r\n")
        .await;
    conn.roundtrip(b"SET k \"a b\"\r\nGET k\r\n", b"+OK\r\n$3\r\na b\r\n")
        .await;
    conn.roundtrip(b"SET k 'it\\'s'\r\nGET k\r\n", b"+OK\r\n$4\r\nit's\r\n")
        .await;
    // Double quotes understand C escapes, including hex bytes (sdssplitargs).
    conn.roundtrip(
        b"ECHO \"\\x00\\xff\\r\\n\\\"\"\r\n",
        b"$5\r\n\x00\xff\r\n\"\r\n",
    )
    .await;
    conn.roundtrip(
        b"NOSUCH a b\r\n",
        b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n",
    )
    .await;
    // Inline and multibulk mixed in one write.
    conn.roundtrip(
        b"PING\r\n*1\r\n$4\r\nPING\r\nPING\r\n",
        b"+PONG\r\n+PONG\r\n+PONG\r\n",
    )
    .await;
    conn.roundtrip(
        b"SET k \"ab\r\n",
        b"-ERR Protocol error: unbalanced quotes in request\r\n",
    )
    .await;
    assert!(conn.is_closed().await);
}

#[tokio::test]
async fn ten_thousand_pipelined_commands_in_one_write_reply_in_order() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    let mut request = Vec::new();
    let mut expected = Vec::new();
    for i in 1..=10_000u32 {
        if i % 2 == 0 {
            request.extend(resp(&[b"INCR", b"counter"]));
            expected.extend(format!(":{}\r\n", i / 2).into_bytes());
        } else {
            let key = format!("key:{i}");
            request.extend(resp(&[b"SET", key.as_bytes(), key.as_bytes()]));
            expected.extend(b"+OK\r\n");
        }
    }
    request.extend(resp(&[b"GET", b"key:9999"]));
    expected.extend(b"$8\r\nkey:9999\r\n");
    conn.send(&request).await;
    let got = conn.read_n(expected.len()).await;
    assert!(got == expected, "pipelined replies differ");
    assert_silent(&mut conn).await;
    conn.roundtrip(&resp(&[b"DBSIZE"]), b":5001\r\n").await;
}

#[tokio::test]
async fn a_request_split_at_every_byte_is_answered_once_complete() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    let requests: [(&[u8], &[u8]); 3] = [
        (
            b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$7\r\nv\r\n\x00al\xff\r\n",
            b"+OK\r\n",
        ),
        (
            b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n",
            b"$7\r\nv\r\n\x00al\xff\r\n",
        ),
        (b"ECHO \"a b\"\r\n", b"$3\r\na b\r\n"),
    ];
    for (request, reply) in requests {
        for (i, byte) in request.iter().enumerate() {
            conn.send(&[*byte]).await;
            if i + 1 < request.len() {
                // The server must keep waiting; 1 ms between bytes makes each its own read.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let got = conn.read_n(reply.len()).await;
        assert_eq!(
            got,
            reply,
            "reply to {:?}",
            String::from_utf8_lossy(request)
        );
        assert_silent(&mut conn).await;
    }
}

#[tokio::test]
async fn every_prefix_of_a_request_gets_no_reply() {
    let server = TestServer::start().await;
    let request = b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n";
    for cut in 1..request.len() {
        let mut conn = server.raw().await;
        conn.send(&request[..cut]).await;
        assert_silent(&mut conn).await;
        conn.send(&request[cut..]).await;
        assert_eq!(conn.read_n(8).await, b"$2\r\nhi\r\n", "cut at {cut}");
    }
}

#[tokio::test]
async fn too_many_arguments_is_refused_and_the_connection_closes() {
    let server = TestServer::start_with(|c| c.proto_max_multibulk_len = 3).await;
    let mut conn = server.raw().await;
    conn.roundtrip(&resp(&[b"SET", b"k", b"v"]), b"+OK\r\n")
        .await;
    conn.roundtrip(
        b"*4\r\n",
        b"-ERR Protocol error: invalid multibulk length\r\n",
    )
    .await;
    assert!(conn.is_closed().await);
}

#[tokio::test]
async fn a_bulk_over_proto_max_bulk_len_is_refused_after_config_set() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    conn.roundtrip(
        &resp(&[b"CONFIG", b"SET", b"proto-max-bulk-len", b"10"]),
        b"+OK\r\n",
    )
    .await;
    conn.roundtrip(&resp(&[b"SET", b"k", b"0123456789"]), b"+OK\r\n")
        .await;
    conn.roundtrip(
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$11\r\n",
        b"-ERR Protocol error: invalid bulk length\r\n",
    )
    .await;
    assert!(conn.is_closed().await);
    // Over Redis's hard maximum as well, and negative lengths.
    for request in [
        &b"*1\r\n$600000000\r\n"[..],
        b"*1\r\n$-5\r\n",
        b"*1\r\n$x\r\n",
    ] {
        let mut conn = server.raw().await;
        conn.roundtrip(request, b"-ERR Protocol error: invalid bulk length\r\n")
            .await;
        assert!(conn.is_closed().await);
    }
    let mut conn = server.raw().await;
    conn.roundtrip(
        b"*3000000000\r\n",
        b"-ERR Protocol error: invalid multibulk length\r\n",
    )
    .await;
    assert!(conn.is_closed().await);
}

/// Virtual size of this process (the server runs in-process). Unlike RSS it grows as soon as memory
/// is reserved, touched or not, so it shows an allocation of a declared length.
fn virtual_size() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

#[tokio::test]
async fn a_declared_length_is_not_allocated_before_its_bytes_arrive() {
    let server = TestServer::start().await;
    let mut probe = server.raw().await;
    let (rss_before, size_before) = (rss(&mut probe).await, virtual_size());
    // 500 MB declared (within the default 512mb limit) and nothing sent after it, on 4 connections:
    // a server that reserved the declared length would grow by 2 GB.
    let mut waiting = Vec::new();
    for _ in 0..4 {
        let mut conn = server.raw().await;
        conn.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000000\r\n")
            .await;
        waiting.push(conn);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    for conn in &mut waiting {
        assert_silent(conn).await; // still waiting for the value, not closed
    }
    let (rss_after, size_after) = (rss(&mut probe).await, virtual_size());
    assert!(
        rss_after < rss_before + 64 * 1024 * 1024,
        "RSS grew from {rss_before} to {rss_after} bytes"
    );
    if size_before > 0 {
        assert!(
            size_after < size_before + 1024 * 1024 * 1024,
            "virtual size grew from {size_before} to {size_after} bytes"
        );
    }
    // The value that did arrive is bounded by client-query-buffer-limit, not the declared length.
    probe.roundtrip(&resp(&[b"DBSIZE"]), b":0\r\n").await;
}

#[tokio::test]
async fn garbage_gets_redis_replies_then_valid_commands_still_work() {
    let server = TestServer::start().await;
    // A non-bulk element inside a multibulk cannot be resynchronised: error and close.
    let mut conn = server.raw().await;
    conn.roundtrip(
        b"*1\r\n:5\r\nPING\r\n",
        b"-ERR Protocol error: expected '$', got ':'\r\n",
    )
    .await;
    assert!(conn.is_closed().await);
    // Lines that do not start with '*' are inline commands: an unknown command, then PING works.
    let mut conn = server.raw().await;
    conn.roundtrip(
        b"$4\r\nPING\r\n:1\r\nPING\r\n",
        b"-ERR unknown command '$4', with args beginning with: \r\n+PONG\r\n-ERR unknown command ':1', with args beginning with: \r\n+PONG\r\n",
    )
    .await;
    // Empty multibulks are skipped, as in Redis.
    conn.roundtrip(b"*0\r\n*-1\r\nPING\r\n", b"+PONG\r\n").await;
    // Header lines end at '\r' as in Redis: a bare '\n' makes the count invalid.
    conn.roundtrip(
        b"*1\n$4\r\nPING\r\n",
        b"-ERR Protocol error: invalid multibulk length\r\n",
    )
    .await;
    assert!(conn.is_closed().await);
    let mut conn = server.raw().await;
    conn.roundtrip(
        b"*2\r\n$4\r\nPING\r\n*1\r\n",
        b"-ERR Protocol error: expected '$', got '*'\r\n",
    )
    .await;
    assert!(conn.is_closed().await);
    // The two bytes after a bulk argument are skipped unchecked, as Redis does.
    let mut conn = server.raw().await;
    conn.roundtrip(
        b"*1\r\n$4\r\nPINGXY*1\r\n$4\r\nPING\r\n",
        b"+PONG\r\n+PONG\r\n",
    )
    .await;
    let mut conn = server.raw().await;
    conn.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
}

/// Found by the `decode` fuzz target: an empty header line where a bulk header belongs panicked the
/// decoder (the connection task died without a reply). Redis replies as below; a line end in the
/// error is shown as a space.
#[tokio::test]
async fn an_empty_or_bare_line_feed_bulk_header_gets_the_redis_error() {
    let server = TestServer::start().await;
    for request in [
        &b"*1\r\n\r\nPING\r\n"[..],
        b"*1\r\n\nx\r\n",
        b"*2\r\n$1\r\na\r\n\r\n",
    ] {
        let mut conn = server.raw().await;
        conn.roundtrip(request, b"-ERR Protocol error: expected '$', got ' '\r\n")
            .await;
        assert!(conn.is_closed().await);
    }
    let mut conn = server.raw().await;
    conn.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
}

#[tokio::test]
async fn keys_and_values_are_binary_safe() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    let key: &[u8] = b"k\x00\r\n\xff\xfe";
    let value: &[u8] = b"\x00\r\n$3\r\n\x80 v";
    conn.roundtrip(&resp(&[b"SET", key, value]), b"+OK\r\n")
        .await;
    let mut expected = format!("${}\r\n", value.len()).into_bytes();
    expected.extend_from_slice(value);
    expected.extend_from_slice(b"\r\n");
    conn.roundtrip(&resp(&[b"GET", key]), &expected).await;
    conn.roundtrip(&resp(&[b"STRLEN", key]), b":10\r\n").await;
    conn.roundtrip(&resp(&[b"EXISTS", key, b"k"]), b":1\r\n")
        .await;
    let mut keys = b"*1\r\n$6\r\n".to_vec();
    keys.extend_from_slice(key);
    keys.extend_from_slice(b"\r\n");
    conn.roundtrip(&resp(&[b"KEYS", b"k*"]), &keys).await;
    conn.roundtrip(&resp(&[b"APPEND", key, b"\x00"]), b":11\r\n")
        .await;
    conn.roundtrip(&resp(&[b"GETRANGE", key, b"-2", b"-1"]), b"$2\r\nv\x00\r\n")
        .await;
    conn.roundtrip(&resp(&[b"DEL", key]), b":1\r\n").await;
}

#[tokio::test]
async fn the_query_buffer_limit_closes_a_client() {
    let server = TestServer::start_with(|c| c.client_query_buffer_limit = 64 * 1024).await;
    let mut conn = server.raw().await;
    conn.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n").await;
    // A 1 MB value is within proto-max-bulk-len but its bytes overflow the query buffer limit.
    conn.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n")
        .await;
    conn.send(&vec![b'x'; 200 * 1024]).await;
    assert!(conn.is_closed().await, "the server must close the client");
    let mut other = server.raw().await;
    other.roundtrip(&resp(&[b"EXISTS", b"k"]), b":0\r\n").await;
    // An inline line without a newline is bounded too (Redis's 64 KB PROTO_INLINE_MAX_SIZE).
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    conn.send(&vec![b'a'; 70 * 1024]).await;
    let reply = conn.read_reply().await;
    assert_eq!(reply, b"-ERR Protocol error: too big inline request\r\n");
    assert!(conn.is_closed().await);
}

#[tokio::test]
async fn strangers_get_redis_small_limits_until_they_authenticate() {
    let server = TestServer::start_with(|c| c.requirepass = "secret".into()).await;
    let mut conn = server.raw().await;
    conn.roundtrip(b"PING\r\n", b"-NOAUTH Authentication required.\r\n")
        .await;
    conn.roundtrip(
        b"*11\r\n",
        b"-ERR Protocol error: unauthenticated multibulk length\r\n",
    )
    .await;
    assert!(conn.is_closed().await);
    let mut conn = server.raw().await;
    conn.roundtrip(
        b"*2\r\n$4\r\nECHO\r\n$16385\r\n",
        b"-ERR Protocol error: unauthenticated bulk length\r\n",
    )
    .await;
    assert!(conn.is_closed().await);
    // AUTH earlier in the same write lifts the limit for what follows it.
    let mut conn = server.raw().await;
    let mut batch = resp(&[b"AUTH", b"secret"]);
    batch.extend(resp(&[b"ECHO", &[b'z'; 20000]]));
    conn.send(&batch).await;
    assert_eq!(conn.read_n(5).await, b"+OK\r\n");
    let echoed = conn.read_reply().await;
    assert!(echoed.starts_with(b"$20000\r\nzzz"));
}
