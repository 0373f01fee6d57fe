//! Scripting over real TCP: atomicity against concurrent clients, the sandbox, and Redis's exact
//! errors and conversions. BUSY and SCRIPT KILL are in `scripting_busy.rs`.

use crate::common;

use common::{resp, TestServer};
use redis::AsyncCommands;

async fn eval_raw(conn: &mut common::RawConn, script: &str, rest: &[&str]) -> String {
    let mut args: Vec<&[u8]> = vec![b"EVAL", script.as_bytes()];
    args.extend(rest.iter().map(|a| a.as_bytes()));
    conn.send(&resp(&args)).await;
    String::from_utf8_lossy(&conn.read_reply().await).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_are_atomic_against_concurrent_clients() {
    let server = TestServer::start().await;
    // Read-modify-write in two calls: lost updates would show if scripts interleaved.
    let script = "local v = tonumber(redis.call('get', KEYS[1]) or '0') \
                  redis.call('set', KEYS[1], v + 1) \
                  redis.call('set', KEYS[2], v + 1) return v + 1";
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let mut conn = server.client().await;
        let script = script.to_string();
        tasks.push(tokio::spawn(async move {
            for _ in 0..150 {
                let _: i64 = redis::cmd("EVAL")
                    .arg(&script)
                    .arg(2)
                    .arg("counter")
                    .arg("mirror")
                    .query_async(&mut conn)
                    .await
                    .expect("eval");
            }
        }));
    }
    // A reader never sees the two keys apart, and plain INCRs interleave between scripts.
    let mut reader = server.client().await;
    let watcher = tokio::spawn(async move {
        for _ in 0..300 {
            let (a, b): (Option<i64>, Option<i64>) =
                reader.mget(&["counter", "mirror"]).await.expect("mget");
            assert_eq!(a, b, "a reader saw half a script");
            let _: i64 = reader.incr("other", 1).await.expect("incr");
        }
    });
    for task in tasks {
        task.await.expect("writer");
    }
    watcher.await.expect("reader");
    let mut conn = server.client().await;
    let total: i64 = conn.get("counter").await.expect("get");
    assert_eq!(total, 6 * 150);
}

#[tokio::test]
async fn sandbox_refuses_the_process_and_global_writes() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    for name in [
        "os", "io", "loadfile", "dofile", "require", "print", "debug", "package",
    ] {
        let reply = eval_raw(&mut conn, &format!("return {name}"), &["0"]).await;
        assert!(
            reply.contains(&format!(
                "Script attempted to access nonexistent global variable '{name}'"
            )),
            "{name}: {reply}"
        );
    }
    for (script, line) in [
        ("x = 1", 1),
        ("_G.redis = nil", 1),
        ("\nstring.rep = nil", 2),
        ("redis.call = nil", 1),
    ] {
        let reply = eval_raw(&mut conn, script, &["0"]).await;
        assert!(
            reply.starts_with(&format!(
                "-ERR user_script:{line}: Attempt to modify a readonly table script: "
            )),
            "{script}: {reply}"
        );
    }
    for script in [
        "rawset(_G, 'x', 1)",
        "setmetatable(_G, nil)",
        "loadstring('y = 1')()",
    ] {
        let reply = eval_raw(&mut conn, script, &["0"]).await;
        assert!(
            reply.contains("Attempt to modify a readonly table"),
            "{script}: {reply}"
        );
    }
    // Nothing leaked into the globals, the connection still works.
    let reply = eval_raw(&mut conn, "return rawget(_G, 'x') == nil", &["0"]).await;
    assert_eq!(reply, ":1\r\n");
    // A script that allocates without end gets an error; the server stays up.
    let reply = eval_raw(
        &mut conn,
        "local t = {} local s = string.rep('x', 1024 * 1024) for i = 1, 100000 do t[i] = s .. i end",
        &["0"],
    )
    .await;
    assert!(reply.contains("not enough memory"), "{reply}");
    conn.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n").await;
}

#[tokio::test]
async fn errors_carry_the_script_and_line() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    conn.roundtrip(&resp(&[b"SET", b"s", b"text"]), b"+OK\r\n")
        .await;
    let reply = eval_raw(
        &mut conn,
        "local a = 1\nreturn redis.call('incr', 's')",
        &["0"],
    )
    .await;
    let want_sha = stmd::scripting::sha1_hex(b"local a = 1\nreturn redis.call('incr', 's')");
    assert_eq!(
        reply,
        format!("-ERR value is not an integer or out of range script: {want_sha}, on @user_script:2.\r\n")
    );
    // pcall gives the error as a value; a returned error table is the reply as it is.
    let reply = eval_raw(&mut conn, "return redis.pcall('incr', 's')", &["0"]).await;
    assert_eq!(reply, "-ERR value is not an integer or out of range\r\n");
    let reply = eval_raw(&mut conn, "return 1", &["-1"]).await;
    assert_eq!(reply, "-ERR Number of keys can't be negative\r\n");
    let reply = eval_raw(&mut conn, "return 1", &["2", "a"]).await;
    assert_eq!(
        reply,
        "-ERR Number of keys can't be greater than number of args\r\n"
    );
    let reply = eval_raw(&mut conn, "return +", &["0"]).await;
    assert!(
        reply.starts_with("-ERR Error compiling script (new function): user_script:1: "),
        "{reply}"
    );
    conn.roundtrip(
        &resp(&[
            b"EVALSHA",
            b"ffffffffffffffffffffffffffffffffffffffff",
            b"0",
        ]),
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n",
    )
    .await;
    // EVALSHA takes the sha in either case.
    conn.send(&resp(&[b"SCRIPT", b"LOAD", b"return ARGV[1]"]))
        .await;
    let loaded = conn.read_reply().await;
    let sha = String::from_utf8_lossy(&loaded[5..45]).to_ascii_uppercase();
    conn.roundtrip(
        &resp(&[b"EVALSHA_RO", sha.as_bytes(), b"0", b"hi"]),
        b"$2\r\nhi\r\n",
    )
    .await;
    let reply = eval_raw(&mut conn, "return redis.call('set', 'k', 'v')", &["0"]).await;
    assert_eq!(reply, "+OK\r\n");
    conn.send(&resp(&[b"EVAL_RO", b"return redis.call('del', 'k')", b"0"]))
        .await;
    let refused = String::from_utf8_lossy(&conn.read_reply().await).into_owned();
    assert!(
        refused.starts_with("-ERR Write commands are not allowed from read-only scripts. script: "),
        "{refused}"
    );
    let reply = eval_raw(&mut conn, "return redis.call('subscribe', 'c')", &["0"]).await;
    assert!(
        reply.starts_with("-ERR This Redis command is not allowed from script script: "),
        "{reply}"
    );
}

#[tokio::test]
async fn conversions_both_ways_and_stm_commands() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    assert_eq!(
        eval_raw(&mut conn, "return {1, 2.9, -2.9, 'x', nil, 5}", &["0"]).await,
        "*4\r\n:1\r\n:2\r\n:-2\r\n$1\r\nx\r\n"
    );
    assert_eq!(
        eval_raw(&mut conn, "return {ok = 'fine'}", &["0"]).await,
        "+fine\r\n"
    );
    assert_eq!(
        eval_raw(&mut conn, "return {err = 'MY bad'}", &["0"]).await,
        "-MY bad\r\n"
    );
    assert_eq!(eval_raw(&mut conn, "return false", &["0"]).await, "$-1\r\n");
    assert_eq!(eval_raw(&mut conn, "return true", &["0"]).await, ":1\r\n");
    assert_eq!(
        eval_raw(
            &mut conn,
            "return redis.call('get', 'missing') == false",
            &["0"]
        )
        .await,
        ":1\r\n"
    );
    assert_eq!(
        eval_raw(
            &mut conn,
            "return {KEYS[1], ARGV[2], #KEYS, #ARGV}",
            &["1", "k", "a", "b"]
        )
        .await,
        "*4\r\n$1\r\nk\r\n$1\r\nb\r\n:1\r\n:2\r\n"
    );
    conn.roundtrip(&resp(&[b"HSET", b"h", b"f", b"v"]), b":1\r\n")
        .await;
    // RESP3 inside the script: a map comes in as {map=…} and goes out as a map.
    conn.send(&resp(&[b"HELLO", b"3"])).await;
    let _hello = conn.read_reply().await;
    assert_eq!(
        eval_raw(
            &mut conn,
            "redis.setresp(3) local m = redis.call('hgetall', 'h') return m",
            &["0"]
        )
        .await,
        "%1\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
    assert_eq!(
        eval_raw(&mut conn, "return {double = 3.5}", &["0"]).await,
        ",3.5\r\n"
    );
    assert_eq!(
        eval_raw(&mut conn, "redis.setresp(3) return true", &["0"]).await,
        "#t\r\n"
    );
    assert_eq!(
        eval_raw(
            &mut conn,
            "redis.setresp(3) return redis.call('get', 'missing') == nil",
            &["0"]
        )
        .await,
        "#t\r\n"
    );
    // STM commands work from scripts like any other.
    let reply = eval_raw(
        &mut conn,
        "return redis.call('STM.CAPTURE', 'USER', 'u1', 'CHANNEL', 'c1', 'SERVER', 'DM', 'MSG', 'user', 'ann', 'hello there')",
        &["0"],
    )
    .await;
    assert!(!reply.starts_with('-'), "{reply}");
    let mut client = server.client().await;
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut client)
        .await
        .expect("info");
    assert!(info.contains("number_of_cached_scripts:"), "{info}");
    assert!(info.contains("used_memory_lua:"), "{info}");
}

/// Redis 7.2 lets scripts call the blocking commands and WAIT; they never block there: an empty
/// source answers as a timed-out call would, at once (a nil, which reaches Lua as false and comes
/// back as a nil bulk).
#[tokio::test]
async fn blocking_commands_in_scripts_answer_at_once() {
    let server = TestServer::start().await;
    let mut raw = server.raw().await;
    for (script, expected) in [
        ("return redis.call('blpop', 'nolist', 0)", "$-1\r\n"),
        ("return redis.call('brpop', 'nolist', 5)", "$-1\r\n"),
        (
            "return redis.call('blmove', 'nolist', 'd', 'left', 'right', 0)",
            "$-1\r\n",
        ),
        (
            "return redis.call('brpoplpush', 'nolist', 'd', 0)",
            "$-1\r\n",
        ),
        ("return redis.call('bzpopmin', 'nozset', 0)", "$-1\r\n"),
        ("return redis.call('bzpopmax', 'nozset', 0)", "$-1\r\n"),
        ("return redis.call('wait', 0, 0)", ":0\r\n"),
        (
            "redis.call('rpush', 'l', 'a') return redis.call('blpop', 'l', 0)",
            "*2\r\n$1\r\nl\r\n$1\r\na\r\n",
        ),
        (
            "redis.call('zadd', 'z', 1, 'm') return redis.call('bzpopmin', 'z', 0)",
            "*3\r\n$1\r\nz\r\n$1\r\nm\r\n$1\r\n1\r\n",
        ),
    ] {
        assert_eq!(
            eval_raw(&mut raw, script, &["0"]).await,
            expected,
            "{script}"
        );
    }
}
