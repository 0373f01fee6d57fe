//! Scripts that never end on their own, killed with SCRIPT KILL / FUNCTION KILL, and library
//! bodies that never end, on stmd and on a real redis-server: the same kill reply, the same error
//! for the script's caller, and a second client answered PONG within 1 s of the kill. Kinds that
//! wedge redis-server itself (a loop in a coroutine or in an xpcall handler: Redis's hook does
//! not reach them) are checked on stmd alone.

use crate::common::{self, real_redis::RealRedis, TestServer};
use redis::aio::MultiplexedConnection;
use std::time::{Duration, Instant};

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

/// SIGTERM while a script runs: the server keeps accepting connections (so SCRIPT KILL can reach
/// the script) and shuts down as soon as the script is killed, as Redis does.
#[tokio::test]
async fn a_signal_during_a_script_takes_effect_when_the_script_is_killed() {
    let mut server = common::Binary::start(&["--busy-reply-threshold", "100"]);
    server.wait_accepting();
    let mut caller = connect(server.port).await;
    let running = tokio::spawn(async move {
        redis::cmd("EVAL")
            .arg(&["while 1 do end", "0"])
            .query_async::<redis::Value>(&mut caller)
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
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

/// A script that wrote cannot be killed; while it runs, a SIGINT waits for it, and a second SIGINT
/// exits at once ("You insist... exiting now."), as Redis's signal handler does.
#[tokio::test]
async fn a_second_sigint_exits_at_once_while_an_unkillable_script_runs() {
    let mut server = common::Binary::start(&["--busy-reply-threshold", "100"]);
    server.wait_accepting();
    let mut caller = connect(server.port).await;
    let _running = tokio::spawn(async move {
        redis::cmd("EVAL")
            .arg(&["redis.call('set', 'k', 'v') while 1 do end", "0"])
            .query_async::<redis::Value>(&mut caller)
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut admin = connect(server.port).await;
    let refused = redis::cmd("SCRIPT")
        .arg("KILL")
        .query_async::<String>(&mut admin)
        .await
        .expect_err("UNKILLABLE");
    assert_eq!(refused.code(), Some("UNKILLABLE"));
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
