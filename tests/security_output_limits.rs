//! client-output-buffer-limit: CONFIG GET/SET in Redis's format and error texts, the soft limit
//! closing a client that pipelines large replies and never reads (with bounded memory) while a
//! reading client with the same workload stays, the hard limit closing at once on one huge reply,
//! and the pubsub class for subscribers.

mod common;

use common::stm::info_field;
use common::{resp, TestServer};
use redis::aio::MultiplexedConnection;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

async fn config_set(con: &mut MultiplexedConnection, value: &str) -> redis::RedisResult<()> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("client-output-buffer-limit")
        .arg(value)
        .query_async(con)
        .await
}

async fn config_get(con: &mut MultiplexedConnection) -> String {
    let pair: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("client-output-buffer-limit")
        .query_async(con)
        .await
        .expect("config get");
    pair[1].clone()
}

async fn disconnections(con: &mut MultiplexedConnection) -> i64 {
    info_field(con, "stats", "client_output_buffer_limit_disconnections").await
}

/// Waits up to `limit` for `want` output-limit disconnections.
async fn wait_disconnections(con: &mut MultiplexedConnection, want: i64, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if disconnections(con).await >= want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn config_get_and_set_follow_redis() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    assert_eq!(
        config_get(&mut con).await,
        "normal 268435456 1048576 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
    );
    config_set(&mut con, "NORMAL 4mb 1mb 3 replica 1kb 2k 3")
        .await
        .expect("set");
    assert_eq!(
        config_get(&mut con).await,
        "normal 4194304 1048576 3 slave 1024 2000 3 pubsub 33554432 8388608 60"
    );
    let failed = "CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - ";
    for (value, why) in [
        (
            "normal 1 2",
            "Wrong number of arguments in buffer limit configuration.",
        ),
        (
            "master 1 2 3",
            "Invalid client class specified in buffer limit configuration.",
        ),
        (
            "pubsub 1 2 3 normal x 1 1",
            "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
        ),
        (
            "normal 1 2 -1",
            "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
        ),
    ] {
        let err = config_set(&mut con, value).await.expect_err(value);
        assert_eq!(
            err.detail(),
            Some(format!("{failed}{why}").as_str()),
            "{value}"
        );
    }
    // Nothing changed, and the connection is still usable.
    assert_eq!(
        config_get(&mut con).await,
        "normal 4194304 1048576 3 slave 1024 2000 3 pubsub 33554432 8388608 60"
    );

    let flagged = TestServer::start_with(|c| {
        c.client_output_buffer_limit =
            stmd::output_limit::OutputBufferLimits::parse("normal 64mb 0 0").expect("parse")
    })
    .await;
    let mut con = flagged.client().await;
    assert_eq!(
        config_get(&mut con).await,
        "normal 67108864 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
    );
}

const MIB: usize = 1024 * 1024;

/// The real binary on a free port, so its memory is the server's alone (tests in this file run
/// in parallel in one process).
struct Binary(std::process::Child, u16);

impl Binary {
    async fn start() -> (Binary, MultiplexedConnection) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("port");
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_stmd"))
            .args([
                "--port",
                &port.to_string(),
                "--no-database",
                "--log-level",
                "error",
            ])
            .spawn()
            .expect("spawn stmd");
        let binary = Binary(child, port);
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).expect("client");
        for _ in 0..100 {
            if let Ok(con) = client.get_multiplexed_async_connection().await {
                return (binary, con);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("stmd did not start");
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_client_that_never_reads_is_closed_by_the_soft_limit_with_bounded_memory() {
    let (server, mut con) = Binary::start().await;
    config_set(&mut con, "normal 4mb 1mb 3").await.expect("set");
    let () = redis::cmd("SET")
        .arg("big")
        .arg(vec![b'v'; MIB])
        .query_async(&mut con)
        .await
        .expect("set big");
    let used_before = info_field(&mut con, "memory", "used_memory").await;
    let rss_before = info_field(&mut con, "memory", "used_memory_rss").await;

    // 2000 GETs of 1 MiB (2 GB of replies) in one pipeline, never reading a byte.
    let mut silent = tokio::net::TcpStream::connect(("127.0.0.1", server.1))
        .await
        .expect("connect");
    let mut requests = Vec::new();
    for _ in 0..2000 {
        requests.extend(resp(&[b"GET", b"big"]));
    }
    tokio::io::AsyncWriteExt::write_all(&mut silent, &requests)
        .await
        .expect("send");
    let (mut used_peak, mut rss_peak) = (used_before, rss_before);
    let start = Instant::now();
    while disconnections(&mut con).await == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "not closed by the soft limit"
        );
        used_peak = used_peak.max(info_field(&mut con, "memory", "used_memory").await);
        rss_peak = rss_peak.max(info_field(&mut con, "memory", "used_memory_rss").await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(2),
        "closed only after the soft seconds: {took:?}"
    );
    let (used, rss) = (used_peak - used_before, rss_peak - rss_before);
    println!("closed after {took:?}; used_memory grew by {used} B at most, RSS by {rss} B");
    assert!(used < 8 * MIB as i64, "used_memory grew by {used} bytes");
    assert!(rss < 16 * MIB as i64, "RSS grew by {rss} bytes");
    let clients = info_field(&mut con, "clients", "connected_clients").await;
    assert_eq!(clients, 1, "only the observer is left");
}

#[tokio::test]
async fn a_client_that_reads_the_same_replies_is_not_closed() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    config_set(&mut con, "normal 4mb 1mb 3").await.expect("set");
    let () = redis::cmd("SET")
        .arg("big")
        .arg(vec![b'v'; MIB])
        .query_async(&mut con)
        .await
        .expect("set big");
    let mut reader = server.raw().await;
    let mut requests = Vec::new();
    for _ in 0..300 {
        requests.extend(resp(&[b"GET", b"big"]));
    }
    reader.send(&requests).await;
    let reply_len = format!("${MIB}\r\n").len() + MIB + 2;
    let mut total = 0;
    let mut buf = vec![0u8; 256 * 1024];
    while total < 300 * reply_len {
        let n = tokio::time::timeout(Duration::from_secs(10), reader.stream.read(&mut buf))
            .await
            .expect("replies keep coming")
            .expect("read");
        assert!(n > 0, "closed after {total} bytes");
        total += n;
    }
    assert_eq!(total, 300 * reply_len);
    assert_eq!(disconnections(&mut con).await, 0);
    reader.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n").await;
}

#[tokio::test]
async fn one_reply_over_the_hard_limit_closes_the_client_at_once() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    config_set(&mut con, "normal 4mb 0 0").await.expect("set");
    let () = redis::cmd("SET")
        .arg("huge")
        .arg(vec![b'h'; 5 * MIB])
        .query_async(&mut con)
        .await
        .expect("set huge");
    let () = redis::cmd("SET")
        .arg("fits")
        .arg(vec![b'f'; 3 * MIB])
        .query_async(&mut con)
        .await
        .expect("set fits");

    let mut fine = server.raw().await;
    fine.send(&resp(&[b"GET", b"fits"])).await;
    let reply = fine.read_reply().await;
    assert_eq!(reply.len(), format!("${}\r\n", 3 * MIB).len() + 3 * MIB + 2);

    // The huge reply is never sent, and what was pipelined after it does not run.
    let mut greedy = server.raw().await;
    let mut requests = resp(&[b"GET", b"huge"]);
    requests.extend(resp(&[b"SET", b"after", b"1"]));
    greedy.send(&requests).await;
    let mut received = Vec::new();
    let read = tokio::time::timeout(
        Duration::from_secs(5),
        greedy.stream.read_to_end(&mut received),
    )
    .await;
    assert!(matches!(read, Ok(Ok(_)) | Ok(Err(_))), "closed at once");
    assert!(received.is_empty(), "got {} bytes", received.len());
    assert_eq!(disconnections(&mut con).await, 1);
    let exists: i64 = redis::cmd("EXISTS")
        .arg("after")
        .query_async(&mut con)
        .await
        .expect("exists");
    assert_eq!(exists, 0);
}

#[tokio::test]
async fn a_subscriber_that_does_not_read_is_closed_at_the_pubsub_limit() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    config_set(&mut con, "pubsub 256kb 0 0").await.expect("set");
    let mut subscriber = server.raw().await;
    subscriber.send(&resp(&[b"SUBSCRIBE", b"news"])).await;
    let _confirmation = subscriber.read_reply().await;

    let payload = vec![b'p'; 64 * 1024];
    let mut received = 1;
    for _ in 0..2000 {
        received = redis::cmd("PUBLISH")
            .arg("news")
            .arg(&payload)
            .query_async::<i64>(&mut con)
            .await
            .expect("publish");
        if received == 0 {
            break;
        }
    }
    assert_eq!(received, 0, "the subscriber was dropped");
    assert!(wait_disconnections(&mut con, 1, Duration::from_secs(10)).await);
    // A new subscriber under the same limit that reads gets every message.
    let mut reader = server.raw().await;
    reader.send(&resp(&[b"SUBSCRIBE", b"news"])).await;
    let _confirmation = reader.read_reply().await;
    for _ in 0..20 {
        let n: i64 = redis::cmd("PUBLISH")
            .arg("news")
            .arg(&payload)
            .query_async(&mut con)
            .await
            .expect("publish");
        assert_eq!(n, 1);
        let message = reader.read_reply().await;
        assert!(message.ends_with(b"pp\r\n"));
    }
}

#[tokio::test]
async fn a_monitor_that_does_not_read_is_closed_at_the_normal_limit() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    // Monitors are `normal` clients (as in Redis): a tight normal limit closes it, a tight
    // pubsub limit does not apply to it.
    config_set(&mut con, "normal 256kb 0 0 pubsub 1mb 0 0")
        .await
        .expect("set");
    let mut monitor = server.raw().await;
    monitor.send(&resp(&[b"MONITOR"])).await;
    let ok = monitor.read_reply().await;
    assert_eq!(ok, b"+OK\r\n");
    let payload = vec![b'p'; 64 * 1024];
    for _ in 0..2000 {
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg(&payload)
            .query_async(&mut con)
            .await
            .expect("set");
        if disconnections(&mut con).await > 0 {
            break;
        }
    }
    assert!(wait_disconnections(&mut con, 1, Duration::from_secs(10)).await);
}
