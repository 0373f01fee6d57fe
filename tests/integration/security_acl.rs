//! ACL over real TCP: users and their rules as the clients of a shared stmd see them.
//! The bot-shard profile, read-only key rules, disconnection of a deleted user, the ACL file round
//! trip, scripts, MULTI, Pub/Sub channels (and subscribers closed when they are revoked), CLIENT
//! LIST/KILL USER, the INFO counters and the STM commands whose keys are computed (CAPTURE,
//! FORGET) or filtered (RECENT).

use crate::common;

use common::stm::{capture, info_field, ok, run, strings, text};
use common::{RawConn, TestServer};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// A connection authenticated as `user` (the client sends `AUTH user pass` / `HELLO`).
async fn login(server: &TestServer, user: &str, pass: &str) -> MultiplexedConnection {
    redis::Client::open(format!("redis://{user}:{pass}@{}", server.addr))
        .expect("client")
        .get_multiplexed_async_connection()
        .await
        .expect("login")
}

/// A request in RESP.
fn resp(words: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n{w}\r\n", w.len()).as_bytes());
    }
    out
}

/// Sends one request on a raw connection and returns its reply as text.
async fn raw_cmd(raw: &mut RawConn, words: &[&str]) -> String {
    raw.send(&resp(words)).await;
    String::from_utf8_lossy(&raw.read_reply().await).into_owned()
}

/// True when the server closes `raw` within 5 s.
async fn closed(raw: &mut RawConn) -> bool {
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), raw.stream.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

const BOT: &[&str] = &[
    "ACL",
    "SETUSER",
    "bot",
    "on",
    ">botpw",
    "resetkeys",
    "~shortterm:*",
    "~ratelimit:*",
    "-@all",
    "+@stm",
    "+get",
    "+set",
    "+incr",
    "+expire",
    "+ping",
    "+acl|whoami",
];

#[tokio::test]
async fn bot_profile_captures_and_reads_but_cannot_flush_nor_read_elsewhere() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    ok(&mut admin, BOT).await;
    ok(&mut admin, &["SET", "other:1", "secret"]).await;
    let mut bot = login(&server, "bot", "botpw").await;
    assert_eq!(text(&ok(&mut bot, &["ACL", "WHOAMI"]).await), "bot");
    let keys = capture(&mut bot, "u1", "c1", "s1", "7", "-", "hello").await;
    assert_eq!(keys, ["shortterm:user:u1:c1:7", "shortterm:server:s1:c1:7"]);
    ok(&mut bot, &["STM.GET", "shortterm:user:u1:c1:7"]).await;
    ok(&mut bot, &["INCR", "ratelimit:u1"]).await;
    assert_eq!(
        run(&mut bot, &["FLUSHALL"]).await.unwrap_err(),
        "NOPERM User bot has no permissions to run the 'flushall' command"
    );
    assert_eq!(
        run(&mut bot, &["GET", "other:1"]).await.unwrap_err(),
        "NOPERM No permissions to access a key"
    );
    assert_eq!(
        run(&mut bot, &["CONFIG", "SET", "maxmemory", "1"])
            .await
            .unwrap_err(),
        "NOPERM User bot has no permissions to run the 'config|set' command"
    );
    // Nothing was flushed.
    assert_eq!(
        text(&ok(&mut admin, &["GET", "other:1"]).await),
        "secret".to_string()
    );
}

#[tokio::test]
async fn stm_capture_checks_the_keys_it_would_write() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    // Only the user scope of u1: a capture in a server also writes the server scope.
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "narrow",
            "on",
            ">pw",
            "~shortterm:user:u1:*",
            "+@stm",
        ],
    )
    .await;
    let mut narrow = login(&server, "narrow", "pw").await;
    let words = [
        "STM.CAPTURE",
        "USER",
        "u1",
        "CHANNEL",
        "c1",
        "SERVER",
        "s1",
        "MSG",
        "user",
        "-",
        "hi",
        "REPLY",
        "-",
        "-",
        "-",
        "hello",
    ];
    assert_eq!(
        run(&mut narrow, &words).await.unwrap_err(),
        "NOPERM No permissions to access a key"
    );
    assert_eq!(int(ok(&mut admin, &["DBSIZE"]).await), 0, "nothing written");
    let mut words_dm = words;
    words_dm[6] = "DM";
    assert_eq!(
        strings(&ok(&mut narrow, &words_dm).await),
        ["shortterm:user:u1:c1"]
    );
    // The refused key is named in the ACL log.
    let log = ok(&mut admin, &["ACL", "LOG", "1"]).await;
    let entry = format!("{log:?}");
    assert!(entry.contains("shortterm:server:s1:c1"), "{entry}");
    // ACL DRYRUN names it too.
    assert_eq!(
        text(
            &ok(
                &mut admin,
                &[&["ACL", "DRYRUN", "narrow"][..], &words[..]].concat()
            )
            .await
        ),
        "User narrow has no permissions to access the 'shortterm:server:s1:c1' key"
    );
}

fn int(v: Value) -> i64 {
    match v {
        Value::Int(n) => n,
        other => panic!("not an integer: {other:?}"),
    }
}

#[tokio::test]
async fn read_only_key_rules_refuse_writes() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    ok(&mut admin, &["SET", "dash:1", "v"]).await;
    ok(
        &mut admin,
        &["ACL", "SETUSER", "dash", "on", ">pw", "%R~dash:*", "+@all"],
    )
    .await;
    let mut dash = login(&server, "dash", "pw").await;
    assert_eq!(text(&ok(&mut dash, &["GET", "dash:1"]).await), "v");
    for words in [
        &["SET", "dash:1", "x"][..],
        &["DEL", "dash:1"],
        &["APPEND", "dash:1", "x"],
        &["COPY", "dash:1", "dash:2"],
    ] {
        assert_eq!(
            run(&mut dash, words).await.unwrap_err(),
            "NOPERM No permissions to access a key",
            "{words:?}"
        );
    }
    assert_eq!(text(&ok(&mut admin, &["GET", "dash:1"]).await), "v");
}

#[tokio::test]
async fn deleting_or_disabling_a_user_disconnects_it() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    ok(&mut admin, &["ACL", "SETUSER", "bob", "on", ">pw", "+@all"]).await;
    ok(&mut admin, &["ACL", "SETUSER", "amy", "on", ">pw", "+@all"]).await;
    let mut bob = server.raw().await;
    assert_eq!(raw_cmd(&mut bob, &["AUTH", "bob", "pw"]).await, "+OK\r\n");
    let mut amy = server.raw().await;
    assert_eq!(raw_cmd(&mut amy, &["AUTH", "amy", "pw"]).await, "+OK\r\n");
    assert_eq!(int(ok(&mut admin, &["ACL", "DELUSER", "bob"]).await), 1);
    assert!(closed(&mut bob).await, "a deleted user's connection closes");
    ok(&mut admin, &["ACL", "SETUSER", "amy", "off"]).await;
    assert!(
        closed(&mut amy).await,
        "a disabled user's connection closes"
    );
    assert_eq!(
        run(&mut admin, &["PING"]).await.ok(),
        Some(Value::SimpleString("PONG".into()))
    );
}

#[tokio::test]
async fn acl_save_then_load_round_trips_through_the_aclfile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("users.acl");
    std::fs::write(
        &path,
        "user default on nopass ~* &* +@all\nuser ops on >opspw ~* &* +@all\n",
    )
    .expect("write");
    let file = path.to_string_lossy().into_owned();
    let server = TestServer::start_with(|c| c.aclfile = Some(file.clone())).await;
    let mut admin = server.client().await;
    // ACL SAVE syncs the file to disk: slower than the client's default 500 ms on a busy machine.
    admin.set_response_timeout(Duration::from_secs(10));
    assert_eq!(
        strings(&ok(&mut admin, &["ACL", "USERS"]).await),
        ["default", "ops"]
    );
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "bot",
            "on",
            ">botpw",
            "~shortterm:*",
            "&alerts",
            "-@all",
            "+@stm",
            "(+get",
            "%R~cfg:*)",
        ],
    )
    .await;
    let before = strings(&ok(&mut admin, &["ACL", "LIST"]).await);
    ok(&mut admin, &["ACL", "SAVE"]).await;
    let saved = std::fs::read_to_string(&path).expect("read");
    assert_eq!(saved.lines().collect::<Vec<_>>(), before);
    ok(&mut admin, &["ACL", "DELUSER", "bot"]).await;
    ok(
        &mut admin,
        &["ACL", "SETUSER", "temp", "on", "nopass", "+@all"],
    )
    .await;
    let mut temp = server.raw().await;
    assert_eq!(raw_cmd(&mut temp, &["AUTH", "temp", "x"]).await, "+OK\r\n");
    ok(&mut admin, &["ACL", "LOAD"]).await;
    assert!(
        closed(&mut temp).await,
        "a user the file lacks is gone, its connection closed"
    );
    assert_eq!(strings(&ok(&mut admin, &["ACL", "LIST"]).await), before);
    // The loaded user works.
    let mut bot = login(&server, "bot", "botpw").await;
    assert_eq!(
        run(&mut bot, &["GET", "x"]).await.unwrap_err(),
        "NOPERM No permissions to access a key"
    );
    ok(&mut bot, &["GET", "cfg:1"]).await;
    // A bad file is refused whole, naming the line; the users stay as they were.
    std::fs::write(&path, "user a on\nuser b on +nosuch\n").expect("write");
    let error = run(&mut admin, &["ACL", "LOAD"]).await.unwrap_err();
    assert!(error.contains("/2: "), "{error}");
    assert_eq!(strings(&ok(&mut admin, &["ACL", "LIST"]).await), before);
}

#[tokio::test]
async fn a_bad_aclfile_stops_the_start_naming_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("users.acl");
    std::fs::write(&path, "user default on nopass ~* +@all\nuser x on bogus\n").expect("write");
    let file = path.to_string_lossy().into_owned();
    let mut server = TestServer::start_with(|c| c.aclfile = Some(file.clone())).await;
    let task = server.task.take().expect("task");
    let result = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("start-up ends")
        .expect("join");
    let error = result
        .expect_err("a bad ACL file is a start-up error")
        .to_string();
    assert!(error.contains("/2: "), "{error}");
}

#[tokio::test]
async fn a_script_runs_as_its_caller_and_a_denied_call_fails_inside() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    ok(&mut admin, &["SET", "b1", "hidden"]).await;
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "bob",
            "on",
            ">pw",
            "~a*",
            "+@all",
            "-flushall",
        ],
    )
    .await;
    let mut bob = login(&server, "bob", "pw").await;
    let error = run(&mut bob, &["EVAL", "return redis.call('flushall')", "0"])
        .await
        .unwrap_err();
    assert!(
        error.starts_with("NOPERM User bob has no permissions to run the 'flushall' command"),
        "{error}"
    );
    let error = run(&mut bob, &["EVAL", "return redis.call('get', 'b1')", "0"])
        .await
        .unwrap_err();
    assert!(
        error.starts_with("NOPERM No permissions to access a key"),
        "{error}"
    );
    // pcall returns the error to the script.
    let caught = ok(
        &mut bob,
        &[
            "EVAL",
            "local r = redis.pcall('get', 'b1'); return r['err']",
            "0",
        ],
    )
    .await;
    assert!(text(&caught).starts_with("NOPERM"), "{caught:?}");
    assert_eq!(
        text(&ok(&mut admin, &["GET", "b1"]).await),
        "hidden",
        "nothing flushed"
    );
    let log = format!("{:?}", ok(&mut admin, &["ACL", "LOG", "1"]).await);
    assert!(log.contains("lua"), "{log}");
}

#[tokio::test]
async fn multi_checks_each_queued_command() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    ok(
        &mut admin,
        &["ACL", "SETUSER", "bob", "on", ">pw", "~a*", "+@all"],
    )
    .await;
    let mut bob = login(&server, "bob", "pw").await;
    ok(&mut bob, &["MULTI"]).await;
    assert_eq!(
        run(&mut bob, &["SET", "a1", "x"]).await.ok(),
        Some(Value::SimpleString("QUEUED".into()))
    );
    assert_eq!(
        run(&mut bob, &["SET", "b1", "x"]).await.unwrap_err(),
        "NOPERM No permissions to access a key"
    );
    let error = run(&mut bob, &["EXEC"]).await.unwrap_err();
    assert!(error.starts_with("EXECABORT"), "{error}");
    assert_eq!(
        run(&mut admin, &["EXISTS", "a1"]).await.ok(),
        Some(Value::Int(0)),
        "the doomed transaction ran nothing"
    );
    let log = format!("{:?}", ok(&mut admin, &["ACL", "LOG", "1"]).await);
    assert!(log.contains("multi"), "{log}");
    // EXEC checks again: rules changed after queuing refuse the command there.
    let mut raw = server.raw().await;
    assert_eq!(raw_cmd(&mut raw, &["AUTH", "bob", "pw"]).await, "+OK\r\n");
    assert_eq!(raw_cmd(&mut raw, &["MULTI"]).await, "+OK\r\n");
    assert_eq!(raw_cmd(&mut raw, &["SET", "a1", "x"]).await, "+QUEUED\r\n");
    assert_eq!(raw_cmd(&mut raw, &["GET", "a1"]).await, "+QUEUED\r\n");
    ok(&mut admin, &["ACL", "SETUSER", "bob", "-set"]).await;
    assert_eq!(
        raw_cmd(&mut raw, &["EXEC"]).await,
        "*2\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n$-1\r\n"
    );
}

#[tokio::test]
async fn channels_are_checked_on_subscribe_psubscribe_and_publish() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "bob",
            "on",
            ">pw",
            "resetchannels",
            "&news.*",
            "+@all",
        ],
    )
    .await;
    let mut bob = server.raw().await;
    assert_eq!(raw_cmd(&mut bob, &["AUTH", "bob", "pw"]).await, "+OK\r\n");
    let refused = "-NOPERM No permissions to access a channel\r\n";
    assert_eq!(raw_cmd(&mut bob, &["PUBLISH", "other", "m"]).await, refused);
    assert_eq!(
        raw_cmd(&mut bob, &["PUBLISH", "news.a", "m"]).await,
        ":0\r\n"
    );
    assert_eq!(raw_cmd(&mut bob, &["SUBSCRIBE", "other"]).await, refused);
    // A pattern must be covered literally by a pattern rule (Redis 7).
    assert_eq!(raw_cmd(&mut bob, &["PSUBSCRIBE", "news.a*"]).await, refused);
    assert_eq!(
        raw_cmd(&mut bob, &["PSUBSCRIBE", "news.*"]).await,
        "*3\r\n$10\r\npsubscribe\r\n$6\r\nnews.*\r\n:1\r\n"
    );
    assert_eq!(
        raw_cmd(&mut bob, &["SUBSCRIBE", "news.x"]).await,
        "*3\r\n$9\r\nsubscribe\r\n$6\r\nnews.x\r\n:2\r\n"
    );
}

/// True when `raw` still answers (a subscribed RESP2 connection answers PING with `pong`).
async fn answers(raw: &mut RawConn) -> bool {
    let reply = raw_cmd(raw, &["PING"]).await;
    reply == "*2\r\n$4\r\npong\r\n$0\r\n\r\n" || reply == "+PONG\r\n"
}

/// A connection logged in as `user` and subscribed with `words` (SUBSCRIBE, PSUBSCRIBE…).
async fn subscribed(server: &TestServer, user: &str, words: &[&str]) -> RawConn {
    let mut raw = server.raw().await;
    assert_eq!(raw_cmd(&mut raw, &["AUTH", user, "pw"]).await, "+OK\r\n");
    if !words.is_empty() {
        let reply = raw_cmd(&mut raw, words).await;
        assert!(reply.starts_with("*3\r\n"), "{words:?}: {reply}");
    }
    raw
}

#[tokio::test]
async fn revoking_channels_disconnects_the_users_subscribers_to_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("users.acl");
    std::fs::write(&path, "user default on nopass ~* &* +@all\n").expect("write");
    let file = path.to_string_lossy().into_owned();
    let server = TestServer::start_with(|c| c.aclfile = Some(file.clone())).await;
    let mut admin = server.client().await;
    let pubuser = |channels: &[&'static str]| {
        let mut words = vec![
            "ACL",
            "SETUSER",
            "pub",
            "on",
            ">pw",
            "+@all",
            "resetchannels",
        ];
        words.extend_from_slice(channels);
        words
    };
    ok(&mut admin, &pubuser(&["&news.*", "&alerts"])).await;
    ok(
        &mut admin,
        &["ACL", "SETUSER", "other", "on", ">pw", "+@all", "&*"],
    )
    .await;
    let mut sub = subscribed(&server, "pub", &["SUBSCRIBE", "news.a"]).await;
    let mut psub = subscribed(&server, "pub", &["PSUBSCRIBE", "news.*"]).await;
    let mut ssub = subscribed(&server, "pub", &["SSUBSCRIBE", "alerts"]).await;
    let mut idle = subscribed(&server, "pub", &[]).await;
    let mut others = subscribed(&server, "other", &["PSUBSCRIBE", "news.*"]).await;

    // A change that leaves every subscription allowed closes nothing.
    ok(&mut admin, &["ACL", "SETUSER", "pub", "-flushall"]).await;
    for raw in [&mut sub, &mut psub, &mut ssub, &mut idle, &mut others] {
        assert!(answers(raw).await);
    }
    // `news.*` is no longer a channel rule: the pattern subscriber goes (a pattern must equal a
    // rule, as in Redis 7); `news.a` and `alerts` are still allowed.
    ok(&mut admin, &pubuser(&["&news.a", "&alerts"])).await;
    assert!(closed(&mut psub).await, "PSUBSCRIBE news.* revoked");
    for raw in [&mut sub, &mut ssub, &mut idle, &mut others] {
        assert!(answers(raw).await);
    }
    // The shard channel is revoked.
    ok(&mut admin, &pubuser(&["&news.*"])).await;
    assert!(closed(&mut ssub).await, "SSUBSCRIBE alerts revoked");
    for raw in [&mut sub, &mut idle, &mut others] {
        assert!(answers(raw).await);
    }
    // ACL LOAD from a file where `pub` may use other channels only: its subscriber goes, its
    // connection without subscriptions and the other user's subscriber stay.
    std::fs::write(
        &path,
        "user default on nopass ~* &* +@all\nuser pub on >pw &elsewhere +@all\nuser other on >pw &* +@all\n",
    )
    .expect("write");
    ok(&mut admin, &["ACL", "LOAD"]).await;
    assert!(
        closed(&mut sub).await,
        "SUBSCRIBE news.a revoked by ACL LOAD"
    );
    for raw in [&mut idle, &mut others] {
        assert!(answers(raw).await);
    }
}

#[tokio::test]
async fn client_list_shows_the_user_and_client_kill_user_closes_its_connections() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    ok(&mut admin, &["ACL", "SETUSER", "bob", "on", ">pw", "+@all"]).await;
    let mut bob = server.raw().await;
    assert_eq!(raw_cmd(&mut bob, &["AUTH", "bob", "pw"]).await, "+OK\r\n");
    let list = text(&ok(&mut admin, &["CLIENT", "LIST"]).await);
    assert!(list.contains(" user=bob "), "{list}");
    assert!(list.contains(" user=default "), "{list}");
    assert_eq!(
        run(&mut admin, &["CLIENT", "KILL", "USER", "nosuch"])
            .await
            .unwrap_err(),
        "ERR No such user 'nosuch'"
    );
    assert_eq!(
        int(ok(&mut admin, &["CLIENT", "KILL", "USER", "bob"]).await),
        1
    );
    assert!(closed(&mut bob).await);
}

#[tokio::test]
async fn info_counts_denied_auths_commands_keys_and_channels() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "bob",
            "on",
            ">pw",
            "~a*",
            "resetchannels",
            "&ok",
            "+@all",
            "-flushall",
        ],
    )
    .await;
    let fields = [
        "acl_access_denied_auth",
        "acl_access_denied_cmd",
        "acl_access_denied_key",
        "acl_access_denied_channel",
    ];
    for field in fields {
        assert_eq!(info_field(&mut admin, "stats", field).await, 0, "{field}");
    }
    let mut raw = server.raw().await;
    assert!(raw_cmd(&mut raw, &["AUTH", "bob", "bad"])
        .await
        .starts_with("-WRONGPASS invalid username-password pair or user is disabled."));
    let mut bob = login(&server, "bob", "pw").await;
    run(&mut bob, &["FLUSHALL"]).await.unwrap_err();
    run(&mut bob, &["GET", "b"]).await.unwrap_err();
    run(&mut bob, &["GET", "b"]).await.unwrap_err();
    run(&mut bob, &["PUBLISH", "no", "m"]).await.unwrap_err();
    for (field, n) in fields.iter().zip([1, 1, 2, 1]) {
        assert_eq!(info_field(&mut admin, "stats", field).await, n, "{field}");
    }
    // The log holds one entry per kind (the two GETs are one entry counted twice).
    let log = ok(&mut admin, &["ACL", "LOG"]).await;
    let Value::Array(entries) = log else {
        panic!("{log:?}")
    };
    assert_eq!(entries.len(), 4);
    let first = format!("{:?}", entries[0]);
    for field in [
        "count",
        "reason",
        "context",
        "object",
        "username",
        "client-info",
    ] {
        assert!(first.contains(field), "{field} in {first}");
    }
    ok(&mut admin, &["CONFIG", "RESETSTAT"]).await;
    assert_eq!(
        info_field(&mut admin, "stats", "acl_access_denied_key").await,
        0
    );
}

#[tokio::test]
async fn stm_forget_over_keys_not_covered_is_refused_and_deletes_nothing() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    capture(&mut admin, "u1", "c1", "s1", "7", "-", "a").await;
    capture(&mut admin, "u1", "c2", "s2", "7", "-", "b").await;
    // May forget in server s1's channels only.
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "mod",
            "on",
            ">pw",
            "~shortterm:*:c1*",
            "+@stm",
        ],
    )
    .await;
    let mut moderator = login(&server, "mod", "pw").await;
    let before = int(ok(&mut admin, &["DBSIZE"]).await);
    assert_eq!(before, 4);
    assert_eq!(
        run(&mut moderator, &["STM.FORGET", "USER", "u1"])
            .await
            .unwrap_err(),
        "NOPERM No permissions to access a key"
    );
    assert_eq!(
        int(ok(&mut admin, &["DBSIZE"]).await),
        before,
        "nothing deleted"
    );
    assert_eq!(
        int(ok(&mut moderator, &["STM.FORGET", "CHANNEL", "c1"]).await),
        2
    );
    assert_eq!(int(ok(&mut admin, &["DBSIZE"]).await), 2);
    assert_eq!(
        run(
            &mut moderator,
            &["STM.FORGET", "KEY", "shortterm:user:u1:c2:7"]
        )
        .await
        .unwrap_err(),
        "NOPERM No permissions to access a key"
    );
}

#[tokio::test]
async fn stm_recent_leaves_out_the_entries_the_user_may_not_read() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    capture(&mut admin, "u1", "c1", "s1", "7", "-", "a").await;
    capture(&mut admin, "u1", "c2", "s2", "7", "-", "b").await;
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "reader",
            "on",
            ">pw",
            "%R~shortterm:user:u1:c2*",
            "+@stm",
        ],
    )
    .await;
    let all = ok(&mut admin, &["STM.RECENT", "USER", "u1", "LIMIT", "10"]).await;
    let Value::Array(all) = all else {
        panic!("{all:?}")
    };
    assert_eq!(all.len(), 2);
    let mut reader = login(&server, "reader", "pw").await;
    let mine = ok(
        &mut reader,
        &["STM.RECENT", "USER", "u1", "LIMIT", "10", "FORMAT", "JSON"],
    )
    .await;
    let mine: serde_json::Value = serde_json::from_str(&text(&mine)).expect("json");
    let keys: Vec<&str> = mine
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|e| e["key"].as_str())
        .collect();
    assert_eq!(keys, ["shortterm:user:u1:c2:7"]);
}

/// `+select|0` (a first-arg rule on a command without subcommands) lets the user run SELECT 0
/// and nothing else of SELECT; allowing SELECT as a whole, then denying it, drops the rule.
#[tokio::test]
async fn first_arg_rule_allows_that_first_argument_only() {
    let server = TestServer::start().await;
    let mut admin = server.raw().await;
    let rules = [
        "ACL",
        "SETUSER",
        "u",
        "on",
        ">pw",
        "-@all",
        "+select|0",
        "+auth",
    ];
    assert_eq!(raw_cmd(&mut admin, &rules).await, "+OK\r\n");
    let mut user = server.raw().await;
    assert_eq!(raw_cmd(&mut user, &["AUTH", "u", "pw"]).await, "+OK\r\n");
    assert_eq!(raw_cmd(&mut user, &["SELECT", "0"]).await, "+OK\r\n");
    let denied = "-NOPERM User u has no permissions to run the 'select' command\r\n";
    assert_eq!(raw_cmd(&mut user, &["SELECT", "1"]).await, denied);
    assert_eq!(raw_cmd(&mut user, &["SELECT", "00"]).await, denied);
    let shown = raw_cmd(&mut admin, &["ACL", "LIST"]).await;
    assert!(shown.contains("-@all +select|0 +auth"), "{shown}");
    let more = ["ACL", "SETUSER", "u", "+select", "-select"];
    assert_eq!(raw_cmd(&mut admin, &more).await, "+OK\r\n");
    assert_eq!(raw_cmd(&mut user, &["SELECT", "0"]).await, denied);
    let minus = ["ACL", "SETUSER", "u", "-select|0"];
    assert_eq!(
        raw_cmd(&mut admin, &minus).await,
        "-ERR Error in ACL SETUSER modifier '-select|0': Unknown command or category name in ACL\r\n"
    );
}
