//! The Prometheus endpoint, scraped over HTTP after running commands.

use crate::common;

use common::TestServer;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A free loopback port for the metrics listener.
fn free_addr() -> String {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    probe.local_addr().expect("addr").to_string()
}

/// One HTTP GET; returns (status line, body).
async fn get(addr: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connect to metrics");
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: test\r\nAccept: */*\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut response = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        stream.read_to_string(&mut response),
    )
    .await
    .expect("response in time")
    .expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("head and body");
    let status = head.lines().next().unwrap_or_default().to_string();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|n| n.parse().ok())
        .expect("Content-Length");
    assert_eq!(length, body.len());
    (status, body.to_string())
}

fn has_line(body: &str, line: &str) {
    assert!(
        body.lines().any(|l| l == line),
        "missing line {line:?} in:\n{body}"
    );
}

#[tokio::test]
async fn scrape_shows_commands_keys_stm_and_persistence() {
    let metrics = free_addr();
    let server = TestServer::start_with(|c| c.metrics_addr = Some(metrics.clone())).await;
    let mut raw = server.raw().await;
    for key in ["a", "b", "a"] {
        raw.roundtrip(&common::resp(&[b"SET", key.as_bytes(), b"1"]), b"+OK\r\n")
            .await;
    }
    raw.roundtrip(&common::resp(&[b"GET", b"a"]), b"$1\r\n1\r\n")
        .await;
    raw.roundtrip(
        &common::resp(&[b"INCRBY", b"a", b"x"]),
        b"-ERR value is not an integer or out of range\r\n",
    )
    .await;
    raw.roundtrip(
        &common::resp(&[b"INCR", b"nope", b"extra"]),
        b"-ERR wrong number of arguments for 'incr' command\r\n",
    )
    .await;
    let captured = raw
        .command(&[
            b"STM.CAPTURE",
            b"USER",
            b"1001",
            b"CHANNEL",
            b"7",
            b"SERVER",
            b"42",
            b"MSG",
            b"user",
            b"Alice",
            b"hi there",
            b"REPLY",
            b"3",
            b"12",
            b"Nova",
            b"Hello Alice!",
        ])
        .await;
    assert!(
        captured.starts_with(b"*2\r\n"),
        "{}",
        String::from_utf8_lossy(&captured)
    );
    raw.command(&[
        b"STM.CAPTURE",
        b"USER",
        b"1001",
        b"CHANNEL",
        b"7",
        b"SERVER",
        b"42",
        b"STOP",
        b"MSG",
        b"user",
        b"Alice",
        b"bye",
        b"REPLY",
        b"3",
        b"12",
        b"Nova",
        b"ok",
    ])
    .await;

    let (status, body) = get(&metrics, "/metrics").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    has_line(&body, "# TYPE stmd_commands_total counter");
    has_line(&body, r#"stmd_commands_total{command="set"} 3"#);
    has_line(&body, r#"stmd_commands_total{command="get"} 1"#);
    has_line(&body, "# TYPE stmd_command_duration_seconds histogram");
    has_line(
        &body,
        r#"stmd_command_duration_seconds_count{command="set"} 3"#,
    );
    has_line(
        &body,
        r#"stmd_command_duration_seconds_bucket{command="set",le="+Inf"} 3"#,
    );
    has_line(&body, r#"stmd_commands_total{command="incrby"} 1"#);
    has_line(
        &body,
        r#"stmd_command_duration_seconds_bucket{command="set",le="1"} 3"#,
    );
    // A command refused for its arity never ran: it is not counted by name.
    assert!(!body.contains(r#"command="incr""#), "{body}");
    // Both errors count, the refused INCR too (as Redis counts rejected calls in total_error_replies).
    has_line(&body, "stmd_error_replies_total 2");
    has_line(&body, "stmd_connected_clients 1");
    // a, b and the two scope keys of the capture.
    has_line(&body, "stmd_keys 4");
    has_line(&body, "stmd_stm_entries 2");
    has_line(&body, "stmd_stm_captures_total 1");
    has_line(&body, r#"stmd_stm_skipped_total{reason="stop"} 1"#);
    has_line(&body, r#"stmd_stm_skipped_total{reason="privacy"} 0"#);
    has_line(&body, "stmd_persist_queue_depth 0");
    has_line(&body, "stmd_persist_dropped_total 0");
    has_line(&body, r#"stmd_persist_database_up{backend="none"} 0"#);
    let rss = body
        .lines()
        .find_map(|l| l.strip_prefix("stmd_resident_memory_bytes "))
        .and_then(|n| n.parse::<u64>().ok())
        .expect("rss line");
    assert!(rss > 0);

    let (status, _) = get(&metrics, "/other").await;
    assert_eq!(status, "HTTP/1.1 404 Not Found");
}
