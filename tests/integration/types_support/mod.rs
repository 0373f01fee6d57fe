//! Helpers shared by the `types_*` integration tests.
#![allow(dead_code)]

pub mod redis_replies;

use crate::common::{resp, RawConn, TestServer};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// Splits a table command on spaces (table commands never need spaces inside an argument).
pub fn args(command: &str) -> Vec<&[u8]> {
    command.split(' ').map(str::as_bytes).collect()
}

/// Sends each command on one connection and asserts the reply is exactly the recorded one.
pub async fn run_table(conn: &mut RawConn, cases: &[(&str, &[u8])]) {
    for (command, expected) in cases {
        conn.roundtrip(&resp(&args(command)), expected).await;
    }
}

/// Reads until the bytes received end with `suffix` (for replies whose length varies, like HELLO).
pub async fn read_until(conn: &mut RawConn, suffix: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(suffix) {
        let n = tokio::time::timeout(Duration::from_secs(5), conn.stream.read(&mut buf))
            .await
            .expect("timed out waiting for reply")
            .expect("read");
        assert!(
            n > 0,
            "connection closed; got so far: {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// A raw connection switched to RESP3.
pub async fn raw3(server: &TestServer) -> RawConn {
    let mut conn = server.raw().await;
    conn.send(&resp(&args("HELLO 3"))).await;
    read_until(&mut conn, b"$7\r\nmodules\r\n*0\r\n").await;
    conn
}

/// Asserts nothing arrives on `conn` within `wait`.
pub async fn assert_silent(conn: &mut RawConn, wait: Duration) {
    let mut buf = [0u8; 256];
    if let Ok(Ok(n)) = tokio::time::timeout(wait, conn.stream.read(&mut buf)).await {
        panic!("unexpected bytes: {:?}", String::from_utf8_lossy(&buf[..n]));
    }
}
