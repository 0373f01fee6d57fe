//! A restart that loses nothing, and row retention, on the embedded SQLite file and on a real
//! PostgreSQL (docs/stm.md, "After a restart" and "Retention"): the restored summaries are in place
//! before the first command is answered; a database that is down at start delays the start by at
//! most `stm-restore-timeout`, and its rows merge later without overwriting newer state; rows past
//! `stm-row-retention-days` are swept, rows of live entries are not.

use crate::common;

use common::postgres::PgCluster;
use common::rows::{wait_flushed, Backend};
use common::stm::{entry_json, info_field, ok};
use common::{resp, TestServer};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::time::{Duration, Instant};
use stmd::config::Config;

async fn start(backend: &Backend, tweak: impl FnOnce(&mut Config) + Send + 'static) -> TestServer {
    let b = backend.clone();
    TestServer::start_with(move |c| {
        b.configure(c);
        tweak(c);
    })
    .await
}

/// The words of a capture of one user message and one reply by persona 3 in server `s`.
fn capture_words<'a>(user: &'a str, channel: &'a str) -> Vec<&'a str> {
    vec![
        "STM.CAPTURE",
        "USER",
        user,
        "CHANNEL",
        channel,
        "SERVER",
        "s",
        "MSG",
        "user",
        "-",
        "hello again",
        "REPLY",
        "3",
        "5",
        "-",
        "welcome back",
    ]
}

async fn capture(con: &mut MultiplexedConnection, user: &str, channel: &str) {
    ok(con, &capture_words(user, channel)).await;
}

async fn summary(con: &mut MultiplexedConnection, user: &str, channel: &str, text: &str) {
    let words = [
        "STM.SUMMARY",
        "USER",
        user,
        "CHANNEL",
        channel,
        "SERVER",
        "s",
        "PERSONA",
        "3",
        "TEXT",
        text,
    ];
    ok(con, &words).await;
}

async fn get(con: &mut MultiplexedConnection, key: &str) -> serde_json::Value {
    match ok(con, &["STM.GET", key]).await {
        Value::Nil => serde_json::Value::Null,
        reply => entry_json(&reply, false),
    }
}

/// Polls `INFO stm` until `field` is at least `at_least`.
async fn wait_for_info(con: &mut MultiplexedConnection, field: &str, at_least: i64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while info_field(con, "stm", field).await < at_least {
        assert!(
            Instant::now() < deadline,
            "{field} never reached {at_least}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn a_command_at_once_after_a_restart_sees_the_summary(backend: Backend) {
    let first = start(&backend, |_| {}).await;
    let mut con = first.client().await;
    capture(&mut con, "u", "c").await;
    summary(&mut con, "u", "c", "remember me").await;
    capture(&mut con, "u", "c").await;
    drop(con);
    first.shutdown().await.expect("clean shutdown");

    // The listener is bound before the server task runs: these go out the moment the port opens,
    // as a reconnecting bot shard's would, before the warm start can have finished.
    let opened = Instant::now();
    let second = start(&backend, |_| {}).await;
    let mut writer = second.raw().await;
    let mut reader = second.raw().await;
    writer
        .send(&resp(&as_bytes(&capture_words("u", "c"))))
        .await;
    reader
        .send(&resp(&[b"STM.GET", b"shortterm:server:s:c:3"]))
        .await;
    let sent_after = opened.elapsed();
    let captured = String::from_utf8_lossy(&writer.read_reply().await).into_owned();
    assert!(
        captured.contains("shortterm:server:s:c:3"),
        "capture reply: {captured}"
    );
    let read = String::from_utf8_lossy(&reader.read_reply().await).into_owned();
    assert!(
        read.contains("remember me"),
        "STM.GET sent {sent_after:?} after the port opened missed the summary: {read}"
    );

    let mut con = second.client().await;
    let entry = get(&mut con, "shortterm:server:s:c:3").await;
    assert_eq!(
        entry["summary"], "remember me",
        "the capture kept the summary"
    );
    assert_eq!(entry["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(entry["turns_since_refresh"], 2, "one before, one after");
    assert_eq!(entry["last_refreshed_turn"], 1);
    assert_eq!(
        get(&mut con, "shortterm:user:u:c:3").await["summary"],
        "remember me"
    );
    assert_eq!(info_field(&mut con, "stm", "stm_persist_restored").await, 2);
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_restored_merged").await,
        0,
        "restored before any command ran"
    );
}

fn as_bytes<'a>(words: &'a [&'a str]) -> Vec<&'a [u8]> {
    words.iter().map(|w| w.as_bytes()).collect()
}

#[tokio::test]
async fn sqlite_a_command_at_once_after_a_restart_sees_the_summary() {
    let dir = tempfile::tempdir().expect("dir");
    a_command_at_once_after_a_restart_sees_the_summary(Backend::Sqlite(dir.path().to_path_buf()))
        .await;
}

#[tokio::test]
async fn postgres_a_command_at_once_after_a_restart_sees_the_summary() {
    let Some(pg) = PgCluster::start() else { return };
    a_command_at_once_after_a_restart_sees_the_summary(Backend::Postgres(pg.url())).await;
}

#[tokio::test]
async fn postgres_down_at_start_delays_the_start_then_merges_without_overwriting() {
    let Some(pg) = PgCluster::start() else { return };
    let backend = Backend::Postgres(pg.url());
    let first = start(&backend, |_| {}).await;
    let mut con = first.client().await;
    // Channel a: captured again while the database is down; b: summarised anew; c: untouched;
    // d: forgotten.
    for (user, channel) in [("ua", "a"), ("ub", "b"), ("uc", "c"), ("ud", "d")] {
        capture(&mut con, user, channel).await;
        summary(&mut con, user, channel, &format!("old {channel}")).await;
    }
    capture(&mut con, "ua", "a").await;
    wait_flushed(&mut con).await;
    drop(con);
    first.shutdown().await.expect("clean shutdown");
    pg.stop_server();

    let opened = Instant::now();
    let second = start(&backend, |c| c.stm_restore_timeout = 2).await;
    let mut raw = second.raw().await;
    raw.send(&resp(&[b"PING"])).await;
    assert_eq!(raw.read_reply().await, b"+PONG\r\n");
    let waited = opened.elapsed();
    assert!(
        (Duration::from_millis(1900)..Duration::from_secs(4)).contains(&waited),
        "the start waited {waited:?} for a database that is down (timeout 2 s)"
    );

    let mut con = second.client().await;
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_restore_done").await,
        0
    );
    capture(&mut con, "ua", "a").await;
    summary(&mut con, "ub", "b", "new b").await;
    ok(&mut con, &["STM.FORGET", "CHANNEL", "d"]).await;
    assert_eq!(
        get(&mut con, "shortterm:server:s:c:3").await,
        serde_json::Value::Null,
        "nothing restored yet"
    );

    pg.start_server();
    wait_for_info(&mut con, "stm_persist_restore_done", 1).await;
    wait_flushed(&mut con).await;

    let a = get(&mut con, "shortterm:server:s:a:3").await;
    assert_eq!(a["summary"], "old a", "the late row filled in the summary");
    assert_eq!(a["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        a["turns_since_refresh"], 2,
        "the row's turn plus the new one"
    );
    assert_eq!(a["last_refreshed_turn"], 1);
    let ttl = a["ttl"].as_i64().expect("ttl");
    assert!(ttl > 43_200_000, "upgraded to stm-summary-ttl: {ttl}");
    assert_eq!(
        get(&mut con, "shortterm:user:ua:a:3").await["summary"],
        "old a"
    );
    for key in ["shortterm:server:s:b:3", "shortterm:user:ub:b:3"] {
        assert_eq!(get(&mut con, key).await["summary"], "new b", "{key}");
    }
    assert_eq!(
        get(&mut con, "shortterm:server:s:c:3").await["summary"],
        "old c"
    );
    for key in ["shortterm:server:s:d:3", "shortterm:user:ud:d:3"] {
        assert_eq!(get(&mut con, key).await, serde_json::Value::Null, "{key}");
    }
    assert_eq!(info_field(&mut con, "stm", "stm_persist_restored").await, 4);
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_restored_merged").await,
        2
    );
    let rows = backend.rows().await;
    assert!(rows.iter().all(|r| !r.contains(" d 3 ")), "{rows:?}");
    assert!(
        rows.iter()
            .any(|r| r.starts_with("server s - b 3 ") && r.contains("new b")),
        "{rows:?}"
    );
}

async fn retention_sweeps_old_rows_but_not_live_entries(backend: Backend) {
    let server = start(&backend, |c| {
        c.stm_row_retention_days = 30;
        c.stm_retention_sweep_ms = 50;
    })
    .await;
    let mut con = server.client().await;
    for channel in ["live", "gone", "recent"] {
        capture(&mut con, "u", channel).await;
    }
    wait_flushed(&mut con).await;
    for channel in ["gone", "recent"] {
        let user_key = format!("shortterm:user:u:{channel}:3");
        let server_key = format!("shortterm:server:s:{channel}:3");
        ok(&mut con, &["DEL", &user_key, &server_key]).await;
    }
    backend.age_rows("live", 100).await;
    backend.age_rows("gone", 100).await;
    backend.age_rows("recent", 10).await;
    // Two more sweeps: at least one started after the rows were aged.
    let sweeps = info_field(&mut con, "stm", "stm_persist_sweeps").await;
    wait_for_info(&mut con, "stm_persist_sweeps", sweeps + 2).await;

    let rows = backend.rows().await;
    let channels: Vec<&str> = rows
        .iter()
        .map(|r| r.split(' ').nth(3).expect("channel"))
        .collect();
    assert_eq!(
        channels,
        ["live", "recent", "live", "recent"],
        "old rows of gone entries deleted: {rows:?}"
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_swept_rows").await,
        2
    );
    let live = get(&mut con, "shortterm:server:s:live:3").await;
    assert_eq!(live["messages"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn sqlite_retention_sweeps_old_rows_but_not_live_entries() {
    let dir = tempfile::tempdir().expect("dir");
    retention_sweeps_old_rows_but_not_live_entries(Backend::Sqlite(dir.path().to_path_buf())).await;
}

#[tokio::test]
async fn postgres_retention_sweeps_old_rows_but_not_live_entries() {
    let Some(pg) = PgCluster::start() else { return };
    retention_sweeps_old_rows_but_not_live_entries(Backend::Postgres(pg.url())).await;
}

#[tokio::test]
async fn retention_zero_keeps_rows_forever() {
    let dir = tempfile::tempdir().expect("dir");
    let backend = Backend::Sqlite(dir.path().to_path_buf());
    let server = start(&backend, |c| {
        c.stm_row_retention_days = 0;
        c.stm_retention_sweep_ms = 10;
    })
    .await;
    let mut con = server.client().await;
    capture(&mut con, "u", "old").await;
    wait_flushed(&mut con).await;
    ok(&mut con, &["FLUSHALL"]).await;
    backend.age_rows("old", 10_000).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(backend.rows().await.len(), 2);
    assert_eq!(info_field(&mut con, "stm", "stm_persist_sweeps").await, 0);
}
