//! BUSY, SCRIPT KILL and SHUTDOWN NOSAVE while a script runs, over real TCP. Every read has a
//! timeout (tests/common), so a server that stops answering fails the test instead of hanging CI;
//! the threshold is lowered with CONFIG SET so each test takes about a second.

use crate::common;

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

/// Sends `EVAL <body> <keys…>` on a new connection and returns once the script is running: the
/// script announces itself on a channel first (PUBLISH runs inside scripts and is not a write), so
/// no test depends on how fast a loaded machine starts it.
async fn start_script(server: &TestServer, body: &str, keys: &[&[u8]]) -> (RawConn, String) {
    let mut listener = server.raw().await;
    let _ = listener.command(&[b"SUBSCRIBE", b"script-started"]).await;
    let body = format!("redis.call('publish', 'script-started', '1') {body}");
    let numkeys = keys.len().to_string();
    let mut request: Vec<&[u8]> = vec![b"EVAL", body.as_bytes(), numkeys.as_bytes()];
    request.extend_from_slice(keys);
    let mut scripted = server.raw().await;
    scripted.send(&resp(&request)).await;
    let message = text(listener.read_reply().await);
    assert!(message.contains("script-started"), "{message}");
    (scripted, body)
}

fn text(reply: Vec<u8>) -> String {
    String::from_utf8_lossy(&reply).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_then_script_kill_from_other_connections() {
    let _watchdog = common::watchdog("scripting_busy", Duration::from_secs(60));
    let server = server_with_threshold("300").await;
    let (mut looping, body) = start_script(&server, "while true do end", &[]).await;
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
    let sha = stmd::scripting::sha1_hex(body.as_bytes());
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
    let _watchdog = common::watchdog("scripting_busy", Duration::from_secs(60));
    let server = TestServer::start().await;
    // About a few hundred milliseconds of Lua, then a write the waiting reader must see.
    let (mut scripted, _) = start_script(
        &server,
        "local n = 0 for i = 1, 10000000 do n = n + 1 end redis.call('set', KEYS[1], n) return n",
        &[b"counted"],
    )
    .await;
    let mut reader = server.raw().await;
    reader
        .roundtrip(&resp(&[b"GET", b"counted"]), b"$8\r\n10000000\r\n")
        .await;
    let done = tokio::time::timeout(Duration::from_secs(30), scripted.read_reply()).await;
    assert_eq!(done.expect("script ends"), b":10000000\r\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_wrote_cannot_be_killed_but_shutdown_nosave_stops_the_server() {
    let _watchdog = common::watchdog("scripting_busy", Duration::from_secs(60));
    let mut server = server_with_threshold("100").await;
    let (_writer, _) = start_script(
        &server,
        "redis.call('set', KEYS[1], 'v') while true do end",
        &[b"written"],
    )
    .await;
    // Past the threshold, so that the refusals below are BUSY, not a wait.
    tokio::time::sleep(Duration::from_millis(150)).await;
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
    let _watchdog = common::watchdog("scripting_busy", Duration::from_secs(60));
    let server = server_with_threshold("100").await;
    let (mut looping, _) = start_script(&server, "while true do end", &[]).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_blocked_on_a_list_a_long_script_feeds_is_served_after_it_not_busy() {
    let _watchdog = common::watchdog("scripting_busy", Duration::from_secs(60));
    let server = server_with_threshold("100").await;
    let mut blocked = server.raw().await;
    blocked.send(&resp(&[b"BLPOP", b"queue", b"0"])).await;
    let mut admin = server.raw().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !text(admin.command(&[b"INFO", b"clients"]).await).contains("blocked_clients:1") {
        assert!(Instant::now() < deadline, "BLPOP never blocked");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Pushes at once, then runs for 400 ms: well past the 100 ms threshold.
    let (mut scripted, _) = start_script(
        &server,
        "redis.call('lpush', KEYS[1], 'x') \
         local s = redis.call('time') local start = s[1] * 1000000 + s[2] \
         while true do local t = redis.call('time') \
           if t[1] * 1000000 + t[2] - start > 400000 then break end end \
         return 1",
        &[b"queue"],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    admin.roundtrip(&resp(&[b"PING"]), BUSY).await;
    let done = tokio::time::timeout(Duration::from_secs(30), scripted.read_reply()).await;
    assert_eq!(done.expect("script ends"), b":1\r\n");
    let served = tokio::time::timeout(Duration::from_secs(10), blocked.read_reply()).await;
    assert_eq!(
        served.expect("BLPOP answers"),
        b"*2\r\n$5\r\nqueue\r\n$1\r\nx\r\n"
    );
    admin
        .roundtrip(&resp(&[b"LLEN", b"queue"]), b":0\r\n")
        .await;
}
