//! Durable scope rows, on the embedded SQLite file and on a real PostgreSQL: rows follow the
//! commands, summaries come back after a restart, and a database that is down, killed or slow never
//! fails or delays a command.

use crate::common;

use common::postgres::PgCluster;
use common::rows::{wait_flushed, Backend};
use common::stm::{entry_json, info_field, ok, text};
use common::TestServer;
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// A capture whose message text must never reach the database.
async fn capture(
    con: &mut MultiplexedConnection,
    user: &str,
    channel: &str,
    server: &str,
    persona: &str,
) {
    common::stm::capture(con, user, channel, server, persona, "5", "secret words").await;
}

async fn rows_follow_the_commands(backend: Backend) {
    let b = backend.clone();
    let server = TestServer::start_with(move |c| b.configure(c)).await;
    let mut con = server.client().await;
    for _ in 0..3 {
        capture(&mut con, "u1", "c1", "s1", "7").await;
    }
    capture(&mut con, "u2", "dm", "DM", "-").await;
    ok(&mut con, &["STM.TICK", "shortterm:user:u2:dm", "BY", "4"]).await;
    wait_flushed(&mut con).await;
    assert_eq!(
        backend.rows().await,
        [
            "server s1 - c1 7 5 - {} 3 0",
            "user - u2 dm 0 5 - {} 5 0",
            "user s1 u1 c1 7 5 - {} 0 0",
        ],
        "one row per scope; ticks summed on the live scope; no message text"
    );
    ok(
        &mut con,
        &[
            "STM.SUMMARY",
            "USER",
            "u1",
            "CHANNEL",
            "c1",
            "SERVER",
            "s1",
            "PERSONA",
            "7",
            "LINEAGE",
            "6",
            "TEXT",
            "they met",
        ],
    )
    .await;
    capture(&mut con, "u1", "c1", "s1", "7").await;
    ok(
        &mut con,
        &[
            "STM.CATEGORIES",
            "USER",
            "u2",
            "CHANNEL",
            "dm",
            "SERVER",
            "DM",
            "SET",
            "likes",
            "tea",
        ],
    )
    .await;
    wait_flushed(&mut con).await;
    let rows = backend.rows().await;
    let categories = |line: &str| line.replace("{\"likes\": \"tea\"}", "{\"likes\":\"tea\"}");
    let rows: Vec<String> = rows.iter().map(|l| categories(l)).collect();
    assert_eq!(
        rows,
        [
            "server s1 - c1 7 6 they met {} 1 1",
            "user - u2 dm 0 5 - {\"likes\":\"tea\"} 0 1",
            "user s1 u1 c1 7 6 they met {} 0 1",
        ],
        "a summary resets the turns, counts a refresh, and later ticks add again"
    );
    for line in &rows {
        assert!(
            !line.contains("secret words"),
            "raw messages never reach the database"
        );
    }
    assert_eq!(
        ok(&mut con, &["STM.FORGET", "CHANNEL", "c1"]).await,
        Value::Int(2)
    );
    assert_eq!(
        ok(&mut con, &["STM.FORGET", "USER", "u2"]).await,
        Value::Int(1)
    );
    wait_flushed(&mut con).await;
    assert_eq!(backend.rows().await, Vec::<String>::new());
    assert!(info_field(&mut con, "stm", "stm_persist_statements").await > 0);
}

async fn summaries_survive_a_restart(backend: Backend) {
    let b = backend.clone();
    let first = TestServer::start_with(move |c| b.configure(c)).await;
    let mut con = first.client().await;
    capture(&mut con, "u", "c", "s", "3").await;
    capture(&mut con, "u", "c", "s", "3").await;
    ok(
        &mut con,
        &[
            "STM.SUMMARY",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "PERSONA",
            "3",
            "TEXT",
            "remember me",
        ],
    )
    .await;
    capture(&mut con, "u", "c", "s", "3").await;
    capture(&mut con, "plain", "c2", "s", "-").await;
    // No wait: a graceful shutdown must flush what is queued.
    drop(con);
    first.shutdown().await.expect("clean shutdown");

    let b = backend.clone();
    let second = TestServer::start_with(move |c| b.configure(c)).await;
    let mut con = second.client().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_field(&mut con, "stm", "stm_persist_restored").await == 0 {
        assert!(Instant::now() < deadline, "nothing restored");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_restored").await,
        2,
        "the user and server entries with a summary"
    );
    let entry = entry_json(
        &ok(&mut con, &["STM.GET", "shortterm:server:s:c:3"]).await,
        false,
    );
    assert_eq!(entry["summary"], "remember me");
    assert_eq!(
        entry["messages"],
        serde_json::json!([]),
        "messages are never persisted"
    );
    assert_eq!(entry["turns_since_refresh"], 1);
    assert_eq!(entry["last_refreshed_turn"], 1);
    assert_eq!(entry["lineage"], 5);
    let ttl = entry["ttl"].as_i64().expect("ttl");
    assert!(
        (86_000_000..=86_400_000).contains(&ttl),
        "expires as if last written at updated_at: {ttl}"
    );
    let user = entry_json(
        &ok(&mut con, &["STM.GET", "shortterm:user:u:c:3"]).await,
        false,
    );
    assert_eq!(user["server"], "s");
    assert_eq!(
        ok(&mut con, &["STM.GET", "shortterm:user:plain:c2"]).await,
        Value::Nil,
        "rows without a summary are not restored"
    );
    assert_eq!(text(&ok(&mut con, &["PING"]).await), "PONG");
}

#[tokio::test]
async fn sqlite_rows_follow_the_commands() {
    let dir = tempfile::tempdir().expect("dir");
    rows_follow_the_commands(Backend::Sqlite(dir.path().to_path_buf())).await;
}

#[tokio::test]
async fn sqlite_summaries_survive_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    summaries_survive_a_restart(Backend::Sqlite(dir.path().to_path_buf())).await;
}

#[tokio::test]
async fn sqlite_is_the_default_file_in_dir() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().to_path_buf();
    let server = TestServer::start_with(move |c| {
        c.no_database = false;
        c.dir = path;
    })
    .await;
    let mut con = server.client().await;
    capture(&mut con, "u", "c", "s", "-").await;
    wait_flushed(&mut con).await;
    assert!(Path::new(&dir.path().join("stmd.db")).exists());
    assert_eq!(info_field(&mut con, "stm", "stm_persist_enabled").await, 1);
}

#[tokio::test]
async fn postgres_rows_follow_the_commands() {
    let Some(pg) = PgCluster::start() else { return };
    rows_follow_the_commands(Backend::Postgres(pg.url())).await;
}

#[tokio::test]
async fn postgres_summaries_survive_a_restart() {
    let Some(pg) = PgCluster::start() else { return };
    summaries_survive_a_restart(Backend::Postgres(pg.url())).await;
}

async fn ensure_ops(con: &mut MultiplexedConnection) -> i64 {
    info_field(con, "stm", "stm_persist_ensure_ops").await
}

/// A capture queues the ensure of a scope's row once per entry and process: later captures of a
/// live conversation queue only the live scope's tick. An entry that is new again (forgotten,
/// reloaded) ensures its row again, and so does every entry after a forget (which may have deleted
/// rows of entries it did not remove).
async fn a_row_is_ensured_once_per_entry(backend: Backend) {
    let b = backend.clone();
    let server = TestServer::start_with(move |c| {
        b.configure(c);
        c.enable_debug_command = stmd::config::ProtectedCommand::Yes;
    })
    .await;
    let mut con = server.client().await;
    capture(&mut con, "u1", "c1", "s1", "7").await;
    assert_eq!(
        ensure_ops(&mut con).await,
        2,
        "the user and the server scope"
    );
    capture(&mut con, "u1", "c1", "s1", "7").await;
    capture(&mut con, "u1", "c1", "s1", "7").await;
    assert_eq!(
        ensure_ops(&mut con).await,
        2,
        "a live conversation's later captures ensure nothing"
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_tick_ops").await,
        3,
        "every capture still ticks the live scope"
    );
    capture(&mut con, "u2", "c1", "s1", "7").await;
    assert_eq!(ensure_ops(&mut con).await, 3, "only the new user's scope");
    wait_flushed(&mut con).await;
    assert_eq!(
        backend.rows().await,
        [
            "server s1 - c1 7 5 - {} 4 0",
            "user s1 u1 c1 7 5 - {} 0 0",
            "user s1 u2 c1 7 5 - {} 0 0",
        ]
    );

    assert_eq!(
        ok(&mut con, &["STM.FORGET", "KEY", "shortterm:user:u1:c1:7"]).await,
        Value::Int(1)
    );
    wait_flushed(&mut con).await;
    assert_eq!(
        backend.rows().await.len(),
        2,
        "the forgotten row is deleted"
    );
    capture(&mut con, "u1", "c1", "s1", "7").await;
    assert_eq!(
        ensure_ops(&mut con).await,
        5,
        "after a forget: the new entry's row, and the server scope's again"
    );
    wait_flushed(&mut con).await;
    assert_eq!(
        backend.rows().await,
        [
            "server s1 - c1 7 5 - {} 5 0",
            "user s1 u1 c1 7 5 - {} 0 0",
            "user s1 u2 c1 7 5 - {} 0 0",
        ],
        "the forgotten scope's row is back"
    );

    // An entry ensured before the forget ensures once more (the forget may have deleted its
    // row): u2's, not the server scope's, ensured since. DEBUG RELOAD keeps STM entries as they
    // are (no file holds them), marks included.
    assert_eq!(ok(&mut con, &["DEBUG", "RELOAD"]).await, Value::Okay);
    capture(&mut con, "u2", "c1", "s1", "7").await;
    capture(&mut con, "u2", "c1", "s1", "7").await;
    assert_eq!(
        ensure_ops(&mut con).await,
        6,
        "u2's row once after the forget"
    );
    wait_flushed(&mut con).await;
    assert_eq!(backend.rows().await.len(), 3);
}

#[tokio::test]
async fn sqlite_a_row_is_ensured_once_per_entry() {
    let dir = tempfile::tempdir().expect("dir");
    a_row_is_ensured_once_per_entry(Backend::Sqlite(dir.path().to_path_buf())).await;
}

#[tokio::test]
async fn postgres_a_row_is_ensured_once_per_entry() {
    let Some(pg) = PgCluster::start() else { return };
    a_row_is_ensured_once_per_entry(Backend::Postgres(pg.url())).await;
}

/// Runs `n` captures on `con`, each on its own channel, returning the slowest command's time.
async fn capture_many(con: &mut MultiplexedConnection, tag: &str, n: usize) -> Duration {
    let mut slowest = Duration::ZERO;
    for i in 0..n {
        let started = Instant::now();
        let channel = format!("{tag}{i}");
        capture(con, "u", &channel, "s", "-").await;
        slowest = slowest.max(started.elapsed());
    }
    slowest
}

#[tokio::test]
async fn postgres_down_then_back_loses_no_row_and_blocks_no_command() {
    let Some(pg) = PgCluster::start() else { return };
    let url = pg.url();
    let server = TestServer::start_with(move |c| {
        c.no_database = false;
        c.database_url = Some(url);
    })
    .await;
    let mut con = server.client().await;
    capture_many(&mut con, "up", 50).await;
    wait_flushed(&mut con).await;

    pg.stop_server();
    // Every command still succeeds at once while the database is down.
    let slowest = capture_many(&mut con, "down", 300).await;
    assert!(
        slowest < Duration::from_secs(1),
        "a command waited on the database: {slowest:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_field(&mut con, "stm", "stm_persist_db_up").await == 1 {
        assert!(Instant::now() < deadline, "the outage was never noticed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(info_field(&mut con, "stm", "stm_persist_retries").await > 0);

    pg.start_server();
    wait_flushed(&mut con).await;
    let rows = Backend::Postgres(pg.url()).rows().await;
    assert_eq!(
        rows.len(),
        2 * 350,
        "every scope of every capture has its row"
    );
    assert_eq!(info_field(&mut con, "stm", "stm_persist_dropped").await, 0);
}

#[tokio::test]
async fn postgres_writer_connection_killed_recovers() {
    let Some(pg) = PgCluster::start() else { return };
    let url = pg.url();
    let server = TestServer::start_with(move |c| {
        c.no_database = false;
        c.database_url = Some(url);
    })
    .await;
    let mut con = server.client().await;
    capture_many(&mut con, "a", 20).await;
    wait_flushed(&mut con).await;
    let admin = sqlx::PgPool::connect(&pg.url()).await.expect("admin");
    let killed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE pid <> pg_backend_pid() AND datname = current_database()) AS k",
    )
    .fetch_one(&admin)
    .await
    .expect("terminate");
    assert!(killed >= 1, "the writer's connection existed");
    capture_many(&mut con, "b", 20).await;
    wait_flushed(&mut con).await;
    assert_eq!(Backend::Postgres(pg.url()).rows().await.len(), 80);
}

#[tokio::test]
async fn postgres_slow_database_does_not_slow_commands() {
    let Some(pg) = PgCluster::start() else { return };
    let url = pg.url();
    let server = TestServer::start_with(move |c| {
        c.no_database = false;
        c.database_url = Some(url);
    })
    .await;
    let mut con = server.client().await;
    capture_many(&mut con, "warm", 1).await;
    wait_flushed(&mut con).await;
    let admin = sqlx::PgPool::connect(&pg.url()).await.expect("admin");
    sqlx::raw_sql(
        "CREATE FUNCTION slow_down() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END; $$ LANGUAGE plpgsql; \
         CREATE TRIGGER slow_down BEFORE INSERT ON short_term_memories FOR EACH STATEMENT EXECUTE FUNCTION slow_down();",
    )
    .execute(&admin)
    .await
    .expect("slow trigger");
    let started = Instant::now();
    let slowest = capture_many(&mut con, "slow", 100).await;
    let total = started.elapsed();
    assert!(
        slowest < Duration::from_millis(500),
        "a command waited on the slow database: {slowest:?}"
    );
    assert!(
        total < Duration::from_secs(5),
        "100 captures took {total:?}"
    );
    wait_flushed(&mut con).await;
    assert_eq!(Backend::Postgres(pg.url()).rows().await.len(), 202);
}

#[tokio::test]
async fn a_full_queue_drops_and_counts_but_commands_succeed() {
    let Some(pg) = PgCluster::start() else { return };
    pg.stop_server();
    let url = pg.url();
    let server = TestServer::start_with(move |c| {
        c.no_database = false;
        c.database_url = Some(url);
        c.stm_persist_queue = 10;
        // The database is down on purpose: serve at once instead of waiting for the restore.
        c.stm_restore_timeout = 0;
    })
    .await;
    let mut con = server.client().await;
    capture_many(&mut con, "q", 50).await;
    let dropped = info_field(&mut con, "stm", "stm_persist_dropped").await;
    assert!(dropped > 0, "operations beyond the queue are dropped");
    assert_eq!(info_field(&mut con, "stm", "stm_captures").await, 50);
    assert_eq!(
        info_field(&mut con, "stm", "stm_entries").await,
        100,
        "memory is unaffected"
    );

    // A dropped ensure leaves its entry unmarked: once the database is back, the next capture of
    // each conversation ensures the rows that never reached it (one at a time: the queue is 10).
    pg.start_server();
    wait_flushed(&mut con).await;
    assert!(Backend::Postgres(pg.url()).rows().await.len() < 100);
    for i in 0..50 {
        capture(&mut con, "u", &format!("q{i}"), "s", "-").await;
        wait_flushed(&mut con).await;
    }
    assert_eq!(
        Backend::Postgres(pg.url()).rows().await.len(),
        100,
        "every scope has its row"
    );
}
