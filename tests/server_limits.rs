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
