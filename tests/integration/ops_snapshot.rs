//! RDB snapshots: SAVE, BGSAVE, the `save` rules, the save at shutdown and the load at start. A
//! file stmd writes loads into a real redis-server with the same contents, and a file Redis writes
//! loads into stmd; keys, expiries, databases and function libraries survive a restart; STM
//! entries are not written (their scope rows bring them back); a damaged file stops the start.

use crate::common;
use crate::keys_dump::{contents, fill_everything};

use common::real_redis::RealRedis;
use common::stm::{capture, ok, run};
use common::TestServer;
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;
use std::path::Path;
use std::time::Duration;

async fn start_in(dir: &Path, save: &str) -> TestServer {
    let dir = dir.to_path_buf();
    let save = save.to_string();
    TestServer::start_with(move |c| {
        c.dir = dir;
        c.save = stmd::config::values::SaveRules::parse(&save).expect("rules");
    })
    .await
}

pub(crate) fn info_field(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("{name} in {info}"))
        .trim()
        .to_string()
}

pub(crate) async fn persistence(con: &mut Conn) -> String {
    match ok(con, &["INFO", "persistence"]).await {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::VerbatimString { text, .. } => text,
        other => panic!("INFO: {other:?}"),
    }
}

/// What `fill_everything` wrote is all there (contents compared with `reference`).
pub(crate) async fn check_everything(con: &mut Conn, reference: &mut Conn, keys: &[String]) {
    for key in keys {
        assert_eq!(
            contents(con, key).await,
            contents(reference, key).await,
            "{key}"
        );
    }
    let range = ["XRANGE", "stream", "-", "+"];
    assert_eq!(ok(con, &range).await, ok(reference, &range).await);
    assert_eq!(
        ok(con, &["XINFO", "GROUPS", "stream"]).await,
        ok(reference, &["XINFO", "GROUPS", "stream"]).await
    );
    assert_eq!(ok(con, &["PFCOUNT", "hll"]).await, Value::Int(3));
    assert!(matches!(ok(con, &["TTL", "ttl"]).await, Value::Int(t) if t > 900));
    assert_eq!(ok(con, &["FCALL_RO", "everyf", "0"]).await, Value::Int(42));
    ok(con, &["SELECT", "2"]).await;
    assert_eq!(
        ok(con, &["GET", "in-db-2"]).await,
        Value::BulkString(b"two".to_vec())
    );
    ok(con, &["SELECT", "0"]).await;
}

#[tokio::test]
async fn files_move_between_stmd_and_redis_both_ways() {
    // stmd writes, Redis reads.
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_in(dir.path(), "").await;
    let mut stmd = server.client().await;
    let keys = fill_everything(&mut stmd).await;
    assert_eq!(ok(&mut stmd, &["SAVE"]).await, Value::Okay);
    let redis_server = RealRedis::start_with(&["--dir", &dir.path().display().to_string()]);
    let mut redis = redis_server.client().await;
    check_everything(&mut redis, &mut stmd, &keys).await;
    drop(server);

    // Redis writes, stmd reads.
    let redis_dir = tempfile::tempdir().expect("tempdir");
    let writer = RealRedis::start_with(&["--dir", &redis_dir.path().display().to_string()]);
    let mut from_redis = writer.client().await;
    let keys = fill_everything(&mut from_redis).await;
    assert_eq!(ok(&mut from_redis, &["SAVE"]).await, Value::Okay);
    let server = start_in(redis_dir.path(), "").await;
    let mut stmd = server.client().await;
    let info = persistence(&mut stmd).await;
    assert_eq!(
        info_field(&info, "rdb_last_load_keys_loaded"),
        "18",
        "{info}"
    );
    assert_eq!(info_field(&info, "rdb_changes_since_last_save"), "0");
    check_everything(&mut stmd, &mut from_redis, &keys).await;
}

#[tokio::test]
async fn a_restart_keeps_the_keys_saved_at_shutdown_by_the_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_in(dir.path(), "3600 1").await;
    let mut con = server.client().await;
    ok(&mut con, &["SET", "kept", "1"]).await;
    ok(&mut con, &["SET", "short", "1", "PX", "300"]).await;
    ok(&mut con, &["RPUSH", "list", "a", "b"]).await;
    server.shutdown().await.expect("clean stop");
    assert!(dir.path().join("dump.rdb").exists(), "saved at shutdown");

    tokio::time::sleep(Duration::from_millis(400)).await;
    let server = start_in(dir.path(), "").await;
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["GET", "kept"]).await,
        Value::BulkString(b"1".to_vec())
    );
    assert_eq!(ok(&mut con, &["LLEN", "list"]).await, Value::Int(2));
    assert_eq!(ok(&mut con, &["EXISTS", "short"]).await, Value::Int(0));
    let info = persistence(&mut con).await;
    assert_eq!(info_field(&info, "rdb_last_load_keys_loaded"), "2");
    assert_eq!(info_field(&info, "rdb_last_load_keys_expired"), "1");

    // Without rules nothing is saved at shutdown; SHUTDOWN NOSAVE neither, even with rules.
    ok(&mut con, &["SET", "unsaved", "1"]).await;
    server.shutdown().await.expect("clean stop");
    let server = start_in(dir.path(), "1 1").await;
    let mut con = server.client().await;
    assert_eq!(ok(&mut con, &["EXISTS", "unsaved"]).await, Value::Int(0));
    ok(&mut con, &["SET", "unsaved", "1"]).await;
    assert!(run(&mut con, &["SHUTDOWN", "NOSAVE", "SAVE"])
        .await
        .is_err());
    let _ = run(&mut con, &["SHUTDOWN", "NOSAVE"]).await;
    server.shutdown().await.expect("stopped by SHUTDOWN");
    let server = start_in(dir.path(), "").await;
    let mut con = server.client().await;
    assert_eq!(ok(&mut con, &["EXISTS", "unsaved"]).await, Value::Int(0));
    assert_eq!(ok(&mut con, &["EXISTS", "kept"]).await, Value::Int(1));
}

#[tokio::test]
async fn rules_and_bgsave_write_in_the_background() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_in(dir.path(), "").await;
    let mut con = server.client().await;
    let before = match ok(&mut con, &["LASTSAVE"]).await {
        Value::Int(t) => t,
        other => panic!("LASTSAVE: {other:?}"),
    };
    assert_eq!(
        run(&mut con, &["BGSAVE", "NOW"]).await,
        Err("ERR syntax error".into())
    );
    assert_eq!(
        run(&mut con, &["CONFIG", "SET", "save", "1 2 3"]).await,
        Err(
            "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"
                .into()
        )
    );
    ok(&mut con, &["CONFIG", "SET", "save", "1 1"]).await;
    assert_eq!(
        ok(&mut con, &["CONFIG", "GET", "save"]).await,
        Value::Array(vec![
            Value::BulkString(b"save".to_vec()),
            Value::BulkString(b"1 1".to_vec())
        ])
    );
    ok(&mut con, &["SET", "by-rule", "1"]).await;
    let mut saves = String::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let info = persistence(&mut con).await;
        saves = info_field(&info, "rdb_saves");
        if saves != "0" && info_field(&info, "rdb_bgsave_in_progress") == "0" {
            assert_eq!(info_field(&info, "rdb_last_bgsave_status"), "ok");
            break;
        }
    }
    assert_ne!(saves, "0", "a rule saved within 5 s");
    assert!(dir.path().join("dump.rdb").exists());
    assert!(matches!(ok(&mut con, &["LASTSAVE"]).await, Value::Int(t) if t >= before));

    ok(&mut con, &["CONFIG", "SET", "save", ""]).await;
    ok(&mut con, &["SET", "by-bgsave", "1"]).await;
    assert_eq!(
        ok(&mut con, &["BGSAVE"]).await,
        Value::SimpleString("Background saving started".into())
    );
    // One save at a time: the second finds the first running or done.
    let second = run(&mut con, &["BGSAVE", "SCHEDULE"]).await;
    assert!(
        matches!(&second, Ok(Value::SimpleString(s)) if s == "Background saving scheduled" || s == "Background saving started"),
        "{second:?}"
    );
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if info_field(&persistence(&mut con).await, "rdb_changes_since_last_save") == "0" {
            break;
        }
    }
    server.shutdown().await.expect("clean stop");
    let server = start_in(dir.path(), "").await;
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["EXISTS", "by-rule", "by-bgsave"]).await,
        Value::Int(2)
    );
}

#[tokio::test]
async fn stm_entries_stay_out_of_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_in(dir.path(), "").await;
    let mut con = server.client().await;
    let keys = capture(&mut con, "u1", "c1", "s1", "3", "12", "hello there").await;
    assert!(!keys.is_empty());
    ok(&mut con, &["SET", "plain", "v"]).await;
    assert_eq!(ok(&mut con, &["SAVE"]).await, Value::Okay);
    let file = std::fs::read(dir.path().join("dump.rdb")).expect("file");
    assert!(
        !file.windows(11).any(|w| w == b"hello there"),
        "no raw message on disk"
    );
    server.shutdown().await.expect("clean stop");
    let server = start_in(dir.path(), "").await;
    let mut con = server.client().await;
    assert_eq!(ok(&mut con, &["DBSIZE"]).await, Value::Int(1));
    assert_eq!(ok(&mut con, &["EXISTS", &keys[0]]).await, Value::Int(0));
}

#[tokio::test]
async fn a_damaged_file_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_in(dir.path(), "").await;
    let mut con = server.client().await;
    ok(&mut con, &["SET", "k", "v"]).await;
    assert_eq!(ok(&mut con, &["SAVE"]).await, Value::Okay);
    server.shutdown().await.expect("clean stop");
    let path = dir.path().join("dump.rdb");
    let mut bytes = std::fs::read(&path).expect("file");
    let at = bytes.len() - 12;
    bytes[at] ^= 0xff;
    std::fs::write(&path, &bytes).expect("write");
    let mut server = start_in(dir.path(), "").await;
    let stopped = tokio::time::timeout(Duration::from_secs(5), server.task.take().expect("task"))
        .await
        .expect("the start fails at once")
        .expect("joined");
    let err = stopped.expect_err("refused").to_string();
    assert!(err.contains("dump.rdb"), "{err}");
}

#[tokio::test]
async fn a_failed_save_is_reported_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).expect("mkdir");
    let server = start_in(&gone, "").await;
    let mut con = server.client().await;
    ok(&mut con, &["SET", "k", "v"]).await;
    std::fs::remove_dir(&gone).expect("rmdir");
    // Redis's bare `-ERR` for a SAVE that could not write.
    server
        .raw()
        .await
        .roundtrip(b"*1\r\n$4\r\nSAVE\r\n", b"-ERR\r\n")
        .await;
    ok(&mut con, &["BGSAVE"]).await;
    let mut status = String::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let info = persistence(&mut con).await;
        if info_field(&info, "rdb_bgsave_in_progress") == "0" {
            status = info_field(&info, "rdb_last_bgsave_status");
            if status == "err" {
                assert_eq!(info_field(&info, "rdb_changes_since_last_save"), "1");
                break;
            }
        }
    }
    assert_eq!(status, "err");
    // Refused while the save fails, SHUTDOWN SAVE keeps the server up.
    assert_eq!(
        run(&mut con, &["SHUTDOWN", "SAVE"]).await,
        Err("ERR Errors trying to SHUTDOWN. Check logs.".into())
    );
    assert_eq!(
        ok(&mut con, &["GET", "k"]).await,
        Value::BulkString(b"v".to_vec())
    );
}

#[tokio::test]
async fn writes_are_refused_while_background_saves_fail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).expect("mkdir");
    let server = start_in(&gone, "1 1").await;
    let mut con = server.client().await;
    std::fs::remove_dir(&gone).expect("rmdir");
    ok(&mut con, &["SET", "k", "v"]).await;
    let misconf = Err(stmd::snapshot::MISCONF.to_string());
    let mut refused = Ok(Value::Nil);
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        refused = run(&mut con, &["SET", "k", "w"]).await;
        if refused.is_err() {
            break;
        }
    }
    assert_eq!(refused, misconf, "a rule's save failed: writes are refused");
    assert_eq!(run(&mut con, &["PING"]).await, misconf);
    assert!(
        matches!(ok(&mut con, &["GET", "k"]).await, Value::BulkString(_)),
        "reads go on"
    );
    // Scripts: a write called from one, and a script declared to write, are refused too.
    let called = run(
        &mut con,
        &["EVAL", "return redis.call('SET', 'k', 'y')", "0"],
    )
    .await;
    assert!(called.expect_err("refused").starts_with("MISCONF"));
    let reads = ["EVAL", "return redis.call('GET', 'k')", "0"];
    assert!(matches!(ok(&mut con, &reads).await, Value::BulkString(_)));
    let declared = ["EVAL", "#!lua\nreturn 1", "0"];
    let refused = run(&mut con, &declared).await.expect_err("refused");
    assert!(
        refused.contains("Writable scripts are blocked"),
        "{refused}"
    );
    let read_only = ["EVAL", "#!lua flags=no-writes\nreturn 1", "0"];
    assert_eq!(ok(&mut con, &read_only).await, Value::Int(1));
    ok(&mut con, &["MULTI"]).await;
    assert_eq!(run(&mut con, &["INCR", "n"]).await, misconf);
    assert!(run(&mut con, &["EXEC"])
        .await
        .expect_err("aborted")
        .starts_with("EXECABORT"));

    ok(
        &mut con,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"],
    )
    .await;
    ok(&mut con, &["SET", "k", "w"]).await;
    ok(
        &mut con,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"],
    )
    .await;
    assert_eq!(run(&mut con, &["SET", "k", "x"]).await, misconf);
    // A save that works again ends it.
    std::fs::create_dir(&gone).expect("mkdir");
    assert_eq!(ok(&mut con, &["SAVE"]).await, Value::Okay);
    ok(&mut con, &["SET", "k", "x"]).await;
    assert_eq!(
        ok(&mut con, &["PING"]).await,
        Value::SimpleString("PONG".into())
    );
}

/// `shutdown-on-sigterm` / `shutdown-on-sigint`: a signal's shutdown saves as its setting says
/// (`default`: when `save` rules are set, as a SHUTDOWN without flags).
#[tokio::test]
async fn signals_save_as_their_shutdown_setting_says() {
    for (signal, flags, rules, saved) in [
        ("TERM", "default", "3600 1", true),
        ("TERM", "nosave now", "3600 1", false),
        ("INT", "save", "", true),
        ("INT", "default", "", false),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let setting = match signal {
            "TERM" => "--shutdown-on-sigterm",
            _ => "--shutdown-on-sigint",
        };
        let dir_arg = dir.path().display().to_string();
        let mut server =
            common::Binary::start(&["--dir", &dir_arg, "--save", rules, setting, flags]);
        let mut con = server.client().await;
        ok(&mut con, &["SET", "k", "v"]).await;
        let status = server.stop_with(signal);
        assert!(status.success(), "{signal}: {status}");
        let file = dir.path().join("dump.rdb");
        assert_eq!(
            file.exists(),
            saved,
            "SIG{signal} with {flags:?}, save {rules:?}"
        );
    }
}

/// As Redis: a shutdown by signal whose save fails leaves the server up, serving and keeping its
/// keys; the next signal, once the save can succeed, stops it with the file written. With `force`
/// in the setting it exits anyway.
#[tokio::test]
async fn a_signal_whose_save_fails_leaves_the_server_up() {
    for force in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("mkdir");
        let data_arg = data.display().to_string();
        let flags = if force { "default force" } else { "default" };
        let mut server = common::Binary::start(&[
            "--dir",
            &data_arg,
            "--save",
            "3600 1",
            "--shutdown-on-sigterm",
            flags,
        ]);
        let mut con = server.client().await;
        ok(&mut con, &["SET", "k", "v"]).await;
        std::fs::remove_dir_all(&data).expect("rm data"); // no temporary file can be made
        server.signal("TERM");
        if force {
            let status = server.exit_within(Duration::from_secs(10));
            assert!(
                status.is_some_and(|s| s.success()),
                "force exits: {status:?}"
            );
            continue;
        }
        assert_eq!(server.exit_within(Duration::from_secs(1)), None, "stays up");
        let value: Option<String> = redis::cmd("GET")
            .arg("k")
            .query_async(&mut con)
            .await
            .expect("GET after the refused shutdown");
        assert_eq!(value.as_deref(), Some("v"));
        std::fs::create_dir(&data).expect("mkdir again");
        let status = server.stop_with("TERM");
        assert!(status.success(), "{status}");
        assert!(data.join("dump.rdb").exists(), "the second signal saved");
    }
}
