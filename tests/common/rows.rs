//! The scope rows behind a test server: which back end it writes to, reading and changing the rows
//! directly, and waiting until the writer has caught up.
#![allow(dead_code)]

use super::stm::info_field;
use redis::aio::MultiplexedConnection;
use sqlx::Row;
use std::time::{Duration, Instant};
use stmd::config::Config;

/// Where a test server keeps its rows.
#[derive(Clone)]
pub enum Backend {
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl Backend {
    pub fn configure(&self, c: &mut Config) {
        c.no_database = false;
        match self {
            Backend::Sqlite(dir) => c.dir = dir.clone(),
            Backend::Postgres(url) => c.database_url = Some(url.clone()),
        }
    }

    /// Every row as one line: kind server user channel persona lineage summary categories turns refreshed.
    pub async fn rows(&self) -> Vec<String> {
        const COLUMNS: &str = "scope_kind || ' ' || COALESCE(server_disc_id, '-') || ' ' || COALESCE(user_disc_id, '-') || ' ' \
            || channel_disc_id || ' ' || COALESCE(persona_id, 0) || ' ' || COALESCE(persona_lineage_id, -1) || ' ' \
            || COALESCE(summary, '-') || ' ' || CAST(categories AS TEXT) || ' ' || turns_since_refresh || ' ' || last_refreshed_turn AS line";
        let sql = format!("SELECT {COLUMNS} FROM short_term_memories ORDER BY line");
        let lines: Vec<String> = match self {
            Backend::Sqlite(dir) => {
                let pool = sqlx::SqlitePool::connect(&self.sqlite_url(dir))
                    .await
                    .expect("sqlite");
                let rows = sqlx::query(&sql).fetch_all(&pool).await.expect("rows");
                rows.iter().map(|r| r.get::<String, _>("line")).collect()
            }
            Backend::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.expect("postgres");
                let rows = sqlx::query(&sql).fetch_all(&pool).await.expect("rows");
                rows.iter().map(|r| r.get::<String, _>("line")).collect()
            }
        };
        lines
    }

    fn sqlite_url(&self, dir: &std::path::Path) -> String {
        format!("sqlite://{}", dir.join("stmd.db").display())
    }

    /// Sets `updated_at` of the rows of `channel` to `days` ago, bypassing the trigger that keeps it
    /// current (on Postgres the trigger always fires, so this session replicates instead).
    pub async fn age_rows(&self, channel: &str, days: u32) {
        match self {
            Backend::Sqlite(dir) => {
                let pool = sqlx::SqlitePool::connect(&self.sqlite_url(dir))
                    .await
                    .expect("sqlite");
                // The SQLite trigger fires only when updated_at itself is left unchanged.
                sqlx::query(
                    "UPDATE short_term_memories SET updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now', ?) \
                     WHERE channel_disc_id = ?",
                )
                .bind(format!("-{days} days"))
                .bind(channel)
                .execute(&pool)
                .await
                .expect("age rows");
            }
            Backend::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.expect("postgres");
                let mut tx = pool.begin().await.expect("begin");
                sqlx::query("SET LOCAL session_replication_role = replica")
                    .execute(&mut *tx)
                    .await
                    .expect("replica role");
                sqlx::query(
                    "UPDATE short_term_memories SET updated_at = now() - make_interval(days => $1) \
                     WHERE channel_disc_id = $2",
                )
                .bind(days as i32)
                .bind(channel)
                .execute(&mut *tx)
                .await
                .expect("age rows");
                tx.commit().await.expect("commit");
            }
        }
    }
}

/// Waits until every queued row operation has been written.
pub async fn wait_flushed(con: &mut MultiplexedConnection) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let queued = info_field(con, "stm", "stm_persist_queued").await;
        let written = info_field(con, "stm", "stm_persist_written").await;
        if queued == written && info_field(con, "stm", "stm_persist_db_up").await == 1 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "rows not flushed: {written}/{queued} written"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
