//! BUSY, SCRIPT KILL and SHUTDOWN NOSAVE while a script runs, over real TCP. Every read has a
//! timeout (tests/common), so a server that stops answering fails the test instead of hanging CI;
//! the threshold is lowered with CONFIG SET so each test takes about a second.

mod common;

use common::{resp, RawConn, TestServer};
use std::time::{Duration, Instant};

const BUSY: &[u8] =
    b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

/// A server whose busy-reply-threshold is `ms`, set the way an operator would.
async fn server_with_threshold(ms: &str) -> TestServer {
    let server = TestServer::start().await;
    let mut admin = server.raw().await;
    admin
        .roundtrip(
            &resp(&[b"CONFIG", b"SET", b"busy-reply-threshold", ms.as_bytes()]),
            b"+OK\r\n",
        )
        .await;
    admin
        .roundtrip(
            &resp(&[b"CONFIG", b"GET", b"lua-time-limit"]),
            format!("*2\r\n$14\r\nlua-time-limit\r\n${}\r\n{ms}\r\n", ms.len()).as_bytes(),
        )
        .await;
    server
}

fn text(reply: Vec<u8>) -> String {
    String::from_utf8_lossy(&reply).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_then_script_kill_from_other_connections() {
    let server = server_with_threshold("300").await;
    let mut looping = server.raw().await;
    looping
        .send(&resp(&[b"EVAL", b"while true do end", b"0"]))
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Sent under the threshold: it waits (as it would queue in Redis), then answers BUSY.
    let mut early = server.raw().await;
    let sent = Instant::now();
    early.roundtrip(&resp(&[b"GET", b"k"]), BUSY).await;
    assert!(
        sent.elapsed() >= Duration::from_millis(150),
        "{:?}",
        sent.elapsed()
    );

    let mut other = server.raw().await;
    other.roundtrip(&resp(&[b"PING"]), BUSY).await;
    other.roundtrip(&resp(&[b"SET", b"k", b"v"]), BUSY).await;
    other
        .roundtrip(&resp(&[b"SCRIPT", b"LOAD", b"return 1"]), BUSY)
        .await;
    // SHUTDOWN without NOSAVE is refused while busy; the server keeps running.
    other.roundtrip(&resp(&[b"SHUTDOWN"]), BUSY).await;
    let mut killer = server.raw().await;
    killer
        .roundtrip(&resp(&[b"SCRIPT", b"KILL"]), b"+OK\r\n")
        .await;

    let reply = text(looping.read_reply().await);
    let sha = stmd::scripting::sha1_hex(b"while true do end");
    assert_eq!(
        reply,
        format!(
            "-ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1.\r\n"
        )
    );
    // Everyone goes on, the killed connection included, and nothing was written.
    other.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n").await;
    other.roundtrip(&resp(&[b"GET", b"k"]), b"$-1\r\n").await;
    looping.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n").await;
    killer
        .roundtrip(
            &resp(&[b"SCRIPT", b"KILL"]),
            b"-NOTBUSY No scripts in execution right now.\r\n",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_under_the_threshold_waits_for_the_script() {
    let server = TestServer::start().await;
    let mut scripted = server.raw().await;
    // About a few hundred milliseconds of Lua, then a write the waiting reader must see.
    scripted
        .send(&resp(&[
            b"EVAL",
            b"local n = 0 for i = 1, 10000000 do n = n + 1 end redis.call('set', KEYS[1], n) return n",
            b"1",
            b"counted",
        ]))
        .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut reader = server.raw().await;
    reader
        .roundtrip(&resp(&[b"GET", b"counted"]), b"$8\r\n10000000\r\n")
        .await;
    let done = tokio::time::timeout(Duration::from_secs(30), scripted.read_reply()).await;
    assert_eq!(done.expect("script ends"), b":10000000\r\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_wrote_cannot_be_killed_but_shutdown_nosave_stops_the_server() {
    let mut server = server_with_threshold("100").await;
    let mut writer = server.raw().await;
    writer
        .send(&resp(&[
            b"EVAL",
            b"redis.call('set', KEYS[1], 'v') while true do end",
            b"1",
            b"written",
        ]))
        .await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    let mut killer = server.raw().await;
    killer.roundtrip(&resp(&[b"SCRIPT", b"KILL"]), b"-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n").await;
    killer.roundtrip(&resp(&[b"GET", b"written"]), BUSY).await;
    killer.send(&resp(&[b"SHUTDOWN", b"NOSAVE"])).await;
    assert!(
        killer.is_closed().await,
        "SHUTDOWN NOSAVE closes the connection"
    );
    let task = server.task.take().expect("server task");
    let stopped = tokio::time::timeout(Duration::from_secs(10), task).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the server stops while the script was running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_busy_commands_still_run() {
    let server = server_with_threshold("100").await;
    let mut looping = server.raw().await;
    looping
        .send(&resp(&[b"EVAL", b"while true do end", b"0"]))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut other: RawConn = server.raw().await;
    other.roundtrip(&resp(&[b"MULTI"]), b"+OK\r\n").await;
    other.roundtrip(&resp(&[b"DISCARD"]), b"+OK\r\n").await;
    let hello = text(other.command(&[b"HELLO", b"2"]).await);
    assert!(hello.starts_with("*14\r\n"), "{hello}");
    other
        .roundtrip(&resp(&[b"SCRIPT", b"KILL"]), b"+OK\r\n")
        .await;
    let killed = text(looping.read_reply().await);
    assert!(killed.starts_with("-ERR Script killed by user"), "{killed}");
}
