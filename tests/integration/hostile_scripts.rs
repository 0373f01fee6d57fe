//! Scripts that never end on their own, killed with SCRIPT KILL / FUNCTION KILL, and library
//! bodies that never end, on stmd and on a real redis-server: the same kill reply, the same error
//! for the script's caller, and a second client answered PONG within 1 s of the kill. Kinds that
//! wedge redis-server itself (a loop in a coroutine or in an xpcall handler: Redis's hook does
//! not reach them) are checked on stmd alone.

use crate::common::{self, real_redis::RealRedis, RawConn, TestServer};
use redis::aio::MultiplexedConnection;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// A connection that waits 10 s for a reply (the client's default, 500 ms, is shorter than a
/// FUNCTION LOAD's limit and than a script's run before its kill).
async fn connect(port: u16) -> MultiplexedConnection {
    let mut conn = common::connect_retrying(port, "server").await;
    conn.set_response_timeout(Duration::from_secs(10));
    conn
}

/// What a reply or error reads as, for comparing the two servers.
fn outcome(reply: redis::RedisResult<redis::Value>) -> String {
    match reply {
        Ok(value) => format!("{value:?}"),
        // The code and text when the client parsed them, and its own rendering (which carries the
        // text for the errors it does not parse, e.g. `ERR Error registering functions: …`).
        Err(err) => format!(
            "{} {} ({err})",
            err.code().unwrap_or("?"),
            err.detail().unwrap_or("")
        ),
    }
}

/// Starts `call` (an EVAL or FCALL) on its own connection, kills it with `kill` 300 ms later,
/// and returns the kill's reply and the caller's; asserts PING answers within 1 s of the kill.
async fn run_and_kill(port: u16, call: redis::Cmd, kill: &[&str]) -> (String, String) {
    let mut admin = connect(port).await;
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "busy-reply-threshold", "100"])
        .query_async(&mut admin)
        .await
        .expect("config set");
    let mut caller = connect(port).await;
    let running = tokio::spawn(async move { call.query_async::<redis::Value>(&mut caller).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut killer = connect(port).await;
    let killed = outcome(
        redis::cmd(kill[0])
            .arg(&kill[1..])
            .query_async(&mut killer)
            .await,
    );
    let at = Instant::now();
    let mut pinger = connect(port).await;
    loop {
        let pong = tokio::time::timeout(
            Duration::from_millis(500),
            redis::cmd("PING").query_async::<String>(&mut pinger),
        )
        .await;
        if matches!(&pong, Ok(Ok(p)) if p == "PONG") {
            break;
        }
        assert!(
            at.elapsed() < Duration::from_secs(1),
            "no PONG within 1 s of the kill: {pong:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ended = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the killed script ends")
        .expect("task");
    (killed, outcome(ended))
}

fn eval(body: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(body).arg(0);
    cmd
}

/// Killable on both servers: the same replies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_scripts_are_killed_as_on_redis() {
    let real = RealRedis::start();
    let stmd = TestServer::start().await;
    for body in [
        "while true do end",
        "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end",
        "while 1 do pcall(function() while 1 do end end) end",
        "while 1 do xpcall(function() while 1 do end end, function(e) return e end) end",
    ] {
        let expected = run_and_kill(real.port, eval(body), &["SCRIPT", "KILL"]).await;
        let got = run_and_kill(stmd.addr.port(), eval(body), &["SCRIPT", "KILL"]).await;
        assert_eq!(got, expected, "{body}");
        assert_eq!(got.0, "ok", "{body}");
    }
}

/// Loops Redis's hook cannot stop (it wedges): stmd stops them the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_scripts_redis_cannot_kill_are_killed() {
    let stmd = TestServer::start().await;
    for body in [
        "local f = coroutine.wrap(function() while 1 do end end) while 1 do pcall(f) end",
        "while 1 do pcall(coroutine.wrap(function() while 1 do end end)) end",
        "while 1 do xpcall(function() error('x') end, function() while 1 do end end) end",
        "while 1 do pcall(function() local t = {} while 1 do t[#t+1] = string.rep('x', 1e5) end end) end",
    ] {
        let (killed, ended) = run_and_kill(stmd.addr.port(), eval(body), &["SCRIPT", "KILL"]).await;
        assert_eq!(killed, "ok", "{body}");
        assert!(
            ended.contains("Script killed by user with SCRIPT KILL..."),
            "{body}: {ended}"
        );
    }
}

/// FUNCTION KILL of a function looping in pcall; a library body that never ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_functions_and_library_loads_as_on_redis() {
    let real = RealRedis::start();
    let stmd = TestServer::start().await;
    for port in [real.port, stmd.addr.port()] {
        let mut admin = connect(port).await;
        let at = Instant::now();
        let load = outcome(
            redis::cmd("FUNCTION")
                .arg("LOAD")
                .arg("#!lua name=spin\nlocal a = 1 while 1 do a = a + 1 end")
                .query_async(&mut admin)
                .await,
        );
        assert!(
            load.contains("Error registering functions: ERR FUNCTION LOAD timeout"),
            "{load}"
        );
        assert!(at.elapsed() < Duration::from_secs(3), "{:?}", at.elapsed());
        let loaded: String = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("#!lua name=hostile\nredis.register_function('spin', function() while 1 do pcall(function() while 1 do end end) end end)")
            .query_async(&mut admin)
            .await
            .expect("load");
        assert_eq!(loaded, "hostile");
        let mut call = redis::cmd("FCALL");
        call.arg("spin").arg(0);
        let (killed, ended) = run_and_kill(port, call, &["FUNCTION", "KILL"]).await;
        assert_eq!(killed, "ok");
        assert!(
            ended.contains(
                "Script killed by user with SCRIPT KILL... script: spin, on @user_function:2."
            ),
            "{ended}"
        );
    }
}

/// Starts `body` as an EVAL on its own connection and lets it run 300 ms (past the 100 ms
/// busy-reply-threshold the caller sets); returns the caller's pending reply.
async fn start_eval(port: u16, body: &str) -> JoinHandle<redis::RedisResult<redis::Value>> {
    let mut caller = connect(port).await;
    let call = eval(body);
    let running = tokio::spawn(async move { call.query_async::<redis::Value>(&mut caller).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    running
}

/// A spawned stmd (busy-reply-threshold 100 ms, `extra` arguments) running `body` as an EVAL
/// for 300 ms: the process and the caller's pending reply.
async fn binary_running(
    body: &str,
    extra: &[&str],
) -> (common::Binary, JoinHandle<redis::RedisResult<redis::Value>>) {
    let args = [&["--busy-reply-threshold", "100"], extra].concat();
    let server = common::Binary::start(&args);
    server.wait_accepting();
    let running = start_eval(server.port, body).await;
    (server, running)
}

/// A script that wrote, then loops: SCRIPT KILL may not stop it.
const WRITES_THEN_LOOPS: &str = "redis.call('set', 'k', 'v') while 1 do end";

/// What another client sends while a read-only script runs past busy-reply-threshold, in order
/// on one connection: `true` when the whole reply is compared, `false` when only its kind (the
/// servers' HELLO name their versions).
const WHILE_BUSY: &[(&[&str], bool)] = &[
    (&["GET", "a"], true),
    (&["SET", "a", "b"], true),
    (&["MSET", "a", "1", "b", "2"], true),
    (&["SUNIONSTORE", "d", "s1", "s2"], true),
    (&["BLPOP", "l", "0"], true),
    (&["INFO"], true),
    (&["CLIENT", "LIST"], true),
    (&["CLIENT", "ID"], true),
    (&["CONFIG", "GET", "maxmemory"], true),
    (&["PING"], true),
    (&["ECHO", "x"], true),
    (&["SELECT", "1"], true),
    (&["SUBSCRIBE", "c"], true),
    (&["SHUTDOWN"], true),
    (&["FUNCTION", "KILL"], true),
    (&["AUTH", "x"], true),
    (&["HELLO", "2"], false),
    (&["WATCH", "a"], true),
    (&["MULTI"], true),
    (&["GET", "a"], true),
    (&["EXEC"], true),
    (&["DISCARD"], true),
    (&["RESET"], true),
];

/// The replies to [`WHILE_BUSY`] while `while true do end` runs, each within 500 ms; then SCRIPT
/// KILL, and PING answered within 1 s of it.
async fn replies_while_busy(port: u16) -> Vec<String> {
    let mut admin = connect(port).await;
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "busy-reply-threshold", "100"])
        .query_async(&mut admin)
        .await
        .expect("config set");
    let mut other = RawConn {
        stream: tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect"),
    };
    let running = start_eval(port, "while true do end").await;
    let mut replies = Vec::new();
    for (args, whole) in WHILE_BUSY {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let at = Instant::now();
        let reply = other.command(&args).await;
        assert!(
            at.elapsed() < Duration::from_millis(500),
            "{args:?} answered after {:?}",
            at.elapsed()
        );
        let reply = String::from_utf8_lossy(&reply).into_owned();
        replies.push(match whole {
            true => reply,
            false => reply[..1].to_string(),
        });
    }
    let killed = other.command(&[b"SCRIPT", b"KILL"]).await;
    assert_eq!(killed, b"+OK\r\n");
    // The script ends at its next hook: until then PING is still BUSY.
    let at = Instant::now();
    while other.command(&[b"PING"]).await != b"+PONG\r\n" {
        assert!(
            at.elapsed() < Duration::from_secs(1),
            "no PONG within 1 s of the kill"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ended = outcome(running.await.expect("caller"));
    assert!(ended.contains("Script killed by user"), "{ended}");
    replies
}

/// While a script runs past busy-reply-threshold every command but the few Redis flags
/// `allow-busy` gets -BUSY at once (a blocking one too; MULTI is accepted, a queued command is
/// refused and EXEC aborts), the same replies as redis-server's, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_replies_at_once_per_command_kind_as_on_redis() {
    let _watchdog = common::watchdog("busy replies", Duration::from_secs(60));
    let real = RealRedis::start();
    let stmd = TestServer::start().await;
    let expected = replies_while_busy(real.port).await;
    let got = replies_while_busy(stmd.addr.port()).await;
    let busy = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
    // What redis-server answered, pinned, so the comparison cannot pass on an empty list.
    assert_eq!(expected[0], busy);
    assert_eq!(expected[18], "+OK\r\n", "MULTI");
    assert_eq!(expected[19], busy, "queued GET");
    assert!(expected[20].starts_with("-EXECABORT"), "{}", expected[20]);
    for ((args, _), (got, expected)) in WHILE_BUSY.iter().zip(got.iter().zip(&expected)) {
        assert_eq!(got, expected, "{args:?}");
    }
}

/// SIGTERM while a script runs: the server keeps accepting connections (so SCRIPT KILL can reach
/// the script) and shuts down as soon as the script is killed, as Redis does.
#[tokio::test]
async fn a_signal_during_a_script_takes_effect_when_the_script_is_killed() {
    let (mut server, running) = binary_running("while 1 do end", &[]).await;
    server.signal("TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        server.exit_within(Duration::ZERO).is_none(),
        "exited before the script ended"
    );
    let mut admin = connect(server.port).await; // still accepting
    let killed: String = redis::cmd("SCRIPT")
        .arg("KILL")
        .query_async(&mut admin)
        .await
        .expect("SCRIPT KILL");
    assert_eq!(killed, "OK");
    let status = server.exit_within(Duration::from_secs(5));
    assert!(
        status.is_some_and(|s| s.success()),
        "no clean exit after the kill: {status:?}"
    );
    let caller = running.await.expect("caller");
    assert!(
        caller.is_err(),
        "the killed script's caller gets an error: {caller:?}"
    );
}

/// SCRIPT KILL refuses a script that wrote (UNKILLABLE).
async fn assert_unkillable(port: u16) {
    let mut admin = connect(port).await;
    let refused = redis::cmd("SCRIPT")
        .arg("KILL")
        .query_async::<String>(&mut admin)
        .await
        .expect_err("UNKILLABLE");
    assert_eq!(refused.code(), Some("UNKILLABLE"));
}

/// A script that wrote cannot be killed; while it runs, a SIGINT waits for it, and a second SIGINT
/// exits at once ("You insist... exiting now."), as Redis's signal handler does.
#[tokio::test]
async fn a_second_sigint_exits_at_once_while_an_unkillable_script_runs() {
    let (mut server, _running) = binary_running(WRITES_THEN_LOOPS, &[]).await;
    assert_unkillable(server.port).await;
    server.signal("INT");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        server.exit_within(Duration::ZERO).is_none(),
        "exited on the first SIGINT"
    );
    server.signal("INT");
    let status = server.exit_within(Duration::from_secs(2));
    assert!(
        status.is_some_and(|s| s.code() == Some(1)),
        "no exit on the second SIGINT: {status:?}"
    );
}

/// SHUTDOWN NOSAVE is the way out of an unkillable script: the process exits promptly, without
/// saving though save points are set (a plain SHUTDOWN is refused with -BUSY), as Redis does.
#[tokio::test]
async fn shutdown_nosave_ends_an_unkillable_script_without_saving() {
    let dir = tempfile::tempdir().expect("dir");
    let dir_arg = dir.path().to_str().expect("utf-8 path");
    let (mut server, running) =
        binary_running(WRITES_THEN_LOOPS, &["--dir", dir_arg, "--save", "3600 1"]).await;
    assert_unkillable(server.port).await;
    let mut admin = connect(server.port).await;
    let refused = redis::cmd("SHUTDOWN")
        .query_async::<String>(&mut admin)
        .await
        .expect_err("BUSY");
    assert_eq!(refused.code(), Some("BUSY"));
    let at = Instant::now();
    // The connection closes without a reply.
    let _ = redis::cmd("SHUTDOWN")
        .arg("NOSAVE")
        .query_async::<redis::Value>(&mut admin)
        .await;
    let status = server.exit_within(Duration::from_secs(3));
    assert!(
        status.is_some_and(|s| s.success()),
        "no clean exit within 3 s of SHUTDOWN NOSAVE: {status:?}"
    );
    assert!(at.elapsed() < Duration::from_secs(3), "{:?}", at.elapsed());
    let written: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.map(|e| e.file_name()))
        .collect();
    assert!(written.is_empty(), "files written: {written:?}");
    let caller = outcome(running.await.expect("caller"));
    assert!(caller.contains("Script killed by user"), "{caller}");
}

/// `used_memory_lua` after 10,000 pipelined calls of a tiny script.
async fn lua_memory_after_tiny_scripts(port: u16, distinct: bool) -> u64 {
    let mut conn = connect(port).await;
    let mut pipe = redis::pipe();
    for i in 0..10_000 {
        pipe.cmd("EVAL")
            .arg(format!(
                "return {{1,2,3,'x{}'}}",
                if distinct { i } else { 0 }
            ))
            .arg(0);
    }
    let replies: Vec<redis::Value> = pipe.query_async(&mut conn).await.expect("pipeline");
    assert_eq!(replies.len(), 10_000);
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut conn)
        .await
        .expect("info");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory_lua:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory_lua")
}

/// A script's garbage is collected as scripts run (a step every 50 calls, as Redis does), so many
/// tiny scripts leave the Lua heap near its live size. Measured after 10,000 calls of one body:
/// redis-server 7.0 29,696 bytes (32,768 at start), stmd 64,098 (85,575 at start: its state
/// holds more libraries and the prelude), 138,818 without the steps (Lua's own cycle lets the heap
/// reach twice its live size). With 10,000 distinct bodies redis-server keeps every script in its
/// Lua state (4,952,064 bytes); stmd keeps the newest 500 EVAL scripts, as Redis 7.4 does:
/// 257,195 bytes, 594,331 without the steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lua_memory_stays_small_after_many_tiny_scripts() {
    let real = RealRedis::start();
    let stmd = TestServer::start().await;
    let redis_same = lua_memory_after_tiny_scripts(real.port, false).await;
    assert!(redis_same < 64 << 10, "redis-server: {redis_same}");
    let same = lua_memory_after_tiny_scripts(stmd.addr.port(), false).await;
    assert!(same < 100 << 10, "one body: {same}");
    let distinct = lua_memory_after_tiny_scripts(stmd.addr.port(), true).await;
    assert!(distinct < 400 << 10, "distinct bodies: {distinct}");
}
