//! Pub/Sub in RESP2 (subscriber mode) and RESP3 (push frames beside normal replies), byte for byte.
//! Expected bytes are the replies observed from redis-server 7.0.15 for the same sequences.

use crate::common;
use crate::types_support;

use common::{resp, RawConn, TestServer};
use std::time::Duration;
use types_support::{args, assert_silent, raw3};

async fn rt(conn: &mut RawConn, command: &str, expected: &[u8]) {
    conn.roundtrip(&resp(&args(command)), expected).await;
}

#[tokio::test]
async fn resp2_subscriber_mode_matches_redis() {
    let server = TestServer::start().await;
    let mut sub = server.raw().await;
    let mut publisher = server.raw().await;
    rt(
        &mut sub,
        "SUBSCRIBE ch other",
        b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$5\r\nother\r\n:2\r\n",
    )
    .await;
    rt(
        &mut sub,
        "PSUBSCRIBE c*",
        b"*3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:3\r\n",
    )
    .await;
    rt(&mut publisher, "PUBLISH ch hello", b":2\r\n").await;
    let messages = b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$5\r\nhello\r\n";
    assert_eq!(sub.read_n(messages.len()).await, messages);
    rt(&mut sub, "PING", b"*2\r\n$4\r\npong\r\n$0\r\n\r\n").await;
    rt(&mut sub, "PING hi", b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n").await;
    rt(
        &mut publisher,
        "PUBSUB NUMSUB ch other nope",
        b"*6\r\n$2\r\nch\r\n:1\r\n$5\r\nother\r\n:1\r\n$4\r\nnope\r\n:0\r\n",
    )
    .await;
    rt(&mut publisher, "PUBSUB NUMPAT", b":1\r\n").await;
    rt(
        &mut publisher,
        "PUBSUB CHANNELS o*",
        b"*1\r\n$5\r\nother\r\n",
    )
    .await;
    rt(
        &mut sub,
        "GET x",
        b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n",
    )
    .await;
    rt(
        &mut sub,
        "UNSUBSCRIBE ch",
        b"*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:2\r\n",
    )
    .await;
    rt(&mut publisher, "PUBLISH ch again", b":1\r\n").await;
    // The pattern message published before PUNSUBSCRIBE arrives before its confirmation.
    rt(
        &mut sub,
        "PUNSUBSCRIBE",
        b"*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$5\r\nagain\r\n*3\r\n$12\r\npunsubscribe\r\n$2\r\nc*\r\n:1\r\n",
    )
    .await;
    rt(
        &mut sub,
        "UNSUBSCRIBE",
        b"*3\r\n$11\r\nunsubscribe\r\n$5\r\nother\r\n:0\r\n",
    )
    .await;
    rt(
        &mut sub,
        "UNSUBSCRIBE",
        b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n",
    )
    .await;
    // Out of subscriber mode: ordinary commands work again.
    rt(&mut sub, "GET x", b"$-1\r\n").await;
    rt(&mut sub, "PING", b"+PONG\r\n").await;
}

#[tokio::test]
async fn resp3_pushes_arrive_beside_normal_replies() {
    let server = TestServer::start().await;
    let mut sub = raw3(&server).await;
    let mut publisher = server.raw().await;
    rt(
        &mut sub,
        "SUBSCRIBE x",
        b">3\r\n$9\r\nsubscribe\r\n$1\r\nx\r\n:1\r\n",
    )
    .await;
    rt(&mut publisher, "PUBLISH x m3", b":1\r\n").await;
    // RESP3 allows any command while subscribed; the message comes first (it arrived first).
    rt(
        &mut sub,
        "GET x",
        b">3\r\n$7\r\nmessage\r\n$1\r\nx\r\n$2\r\nm3\r\n_\r\n",
    )
    .await;
    rt(&mut sub, "PING", b"+PONG\r\n").await;
    rt(&mut sub, "SET k v", b"+OK\r\n").await;
    rt(&mut publisher, "PUBLISH x later", b":1\r\n").await;
    let push = b">3\r\n$7\r\nmessage\r\n$1\r\nx\r\n$5\r\nlater\r\n";
    assert_eq!(sub.read_n(push.len()).await, push);
    rt(
        &mut sub,
        "UNSUBSCRIBE",
        b">3\r\n$11\r\nunsubscribe\r\n$1\r\nx\r\n:0\r\n",
    )
    .await;
    rt(
        &mut sub,
        "UNSUBSCRIBE",
        b">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n",
    )
    .await;
}

#[tokio::test]
async fn reset_leaves_subscriber_mode_and_drops_subscriptions() {
    let server = TestServer::start().await;
    let mut sub = server.raw().await;
    let mut publisher = server.raw().await;
    rt(
        &mut sub,
        "SUBSCRIBE x",
        b"*3\r\n$9\r\nsubscribe\r\n$1\r\nx\r\n:1\r\n",
    )
    .await;
    rt(&mut sub, "RESET", b"+RESET\r\n").await;
    rt(&mut publisher, "PUBLISH x m4", b":0\r\n").await;
    rt(&mut sub, "PING", b"+PONG\r\n").await;
    assert_silent(&mut sub, Duration::from_millis(50)).await;
}

#[tokio::test]
async fn a_disconnected_subscriber_is_forgotten() {
    let server = TestServer::start().await;
    let mut publisher = server.raw().await;
    {
        let mut sub = server.raw().await;
        rt(
            &mut sub,
            "PSUBSCRIBE news.*",
            b"*3\r\n$10\r\npsubscribe\r\n$6\r\nnews.*\r\n:1\r\n",
        )
        .await;
        rt(
            &mut sub,
            "SUBSCRIBE news.a",
            b"*3\r\n$9\r\nsubscribe\r\n$6\r\nnews.a\r\n:2\r\n",
        )
        .await;
        rt(&mut publisher, "PUBLISH news.a x", b":2\r\n").await;
    }
    // The server notices the close asynchronously; poll briefly.
    for _ in 0..100 {
        publisher.send(&resp(&args("PUBLISH news.a y"))).await;
        if publisher.read_n(4).await == b":0\r\n" {
            rt(&mut publisher, "PUBSUB NUMPAT", b":0\r\n").await;
            rt(&mut publisher, "PUBSUB CHANNELS", b"*0\r\n").await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("subscriber still registered after disconnecting");
}

#[tokio::test]
async fn pubsub_errors_match_redis() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    rt(
        &mut c,
        "PUBSUB FOO",
        b"-ERR unknown subcommand 'FOO'. Try PUBSUB HELP.\r\n",
    )
    .await;
    rt(
        &mut c,
        "PUBSUB NUMPAT x",
        b"-ERR wrong number of arguments for 'pubsub|numpat' command\r\n",
    )
    .await;
    rt(
        &mut c,
        "PUBLISH",
        b"-ERR wrong number of arguments for 'publish' command\r\n",
    )
    .await;
    rt(
        &mut c,
        "SUBSCRIBE",
        b"-ERR wrong number of arguments for 'subscribe' command\r\n",
    )
    .await;
    rt(&mut c, "PUBSUB NUMSUB", b"*0\r\n").await;
}

#[tokio::test]
async fn a_subscriber_that_never_reads_is_disconnected_not_buffered_forever() {
    let server = TestServer::start().await;
    let mut slow = server.raw().await;
    rt(
        &mut slow,
        "SUBSCRIBE firehose",
        b"*3\r\n$9\r\nsubscribe\r\n$8\r\nfirehose\r\n:1\r\n",
    )
    .await;
    // 1 MiB messages: the socket buffers fill, then the 32 MiB mailbox, then the server gives up
    // on the subscriber instead of holding more.
    let payload = vec![b'x'; 1024 * 1024];
    let mut publisher = server.raw().await;
    let mut dropped = false;
    for _ in 0..200 {
        publisher
            .send(&resp(&[b"PUBLISH", b"firehose", &payload]))
            .await;
        if publisher.read_n(4).await == b":0\r\n" {
            dropped = true;
            break;
        }
    }
    assert!(dropped, "the slow subscriber was never cut off");
    // Its connection closes (asynchronously) and its subscription goes with it.
    assert!(slow.is_closed().await);
    rt(
        &mut publisher,
        "PUBSUB NUMSUB firehose",
        b"*2\r\n$8\r\nfirehose\r\n:0\r\n",
    )
    .await;
}

#[tokio::test]
async fn subscribe_inside_multi_answers_inside_exec_like_redis() {
    let server = TestServer::start().await;
    let mut c = raw3(&server).await;
    rt(&mut c, "MULTI", b"+OK\r\n").await;
    rt(&mut c, "SUBSCRIBE c", b"+QUEUED\r\n").await;
    rt(
        &mut c,
        "EXEC",
        b"*1\r\n>3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n",
    )
    .await;
}
