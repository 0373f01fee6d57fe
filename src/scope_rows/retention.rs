//! Row retention: rows not updated for `stm-row-retention-days` are deleted, as the bot's janitor
//! did. The writer runs the sweep between batches (so it never races the writes it sequences),
//! once soon after start and then every period (a day; `--stm-retention-sweep-ms` is a hidden test
//! knob). Rows whose entry is live are kept: a user-scope row that only ever sees captures is never
//! updated (an ensure changes nothing), yet it belongs to a conversation that is going on.

use super::db::{row_scope, Database};
use crate::stm::ScopeKey;
use crate::store::Store;
use sqlx::{QueryBuilder, Row};
use std::time::Duration;

/// Rows looked at (and deleted) per round trip, so one sweep never holds a huge result.
const ROWS_PER_ROUND: i64 = 1000;

/// Far enough back for any retention, near enough for both back ends' date arithmetic.
const MAX_DAYS: u64 = 365_000;

/// The retention settings the writer sweeps with.
#[derive(Clone, Copy, Debug)]
pub struct Retention {
    /// `stm-row-retention-days`; 0 keeps rows forever.
    pub days: u64,
    /// Time between sweeps.
    pub period: Duration,
}

/// The SQL of each back end: `$1` is the retention in days (an integer on Postgres, an SQLite
/// date modifier such as `-90 days`), `$2` the last id already looked at, `$3` the round size.
const PG_STALE: &str = "SELECT stm_id::BIGINT AS id, scope_kind, server_disc_id, user_disc_id, \
     channel_disc_id, persona_id FROM short_term_memories \
     WHERE updated_at < now() - make_interval(days => $1) AND stm_id > $2 ORDER BY stm_id LIMIT $3";
const PG_STILL_STALE: &str = "updated_at < now() - make_interval(days => ";
const SQLITE_STALE: &str = "SELECT stm_id AS id, scope_kind, server_disc_id, user_disc_id, \
     channel_disc_id, persona_id FROM short_term_memories \
     WHERE updated_at < strftime('%Y-%m-%d %H:%M:%f', 'now', $1) AND stm_id > $2 ORDER BY stm_id LIMIT $3";
const SQLITE_STILL_STALE: &str = "updated_at < strftime('%Y-%m-%d %H:%M:%f', 'now', ";

/// A row past retention.
struct StaleRow {
    id: i64,
    scope: ScopeKey,
}

fn stale_row<R: Row>(row: &R) -> Result<StaleRow, sqlx::Error>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<i32>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    Ok(StaleRow {
        id: row.try_get("id")?,
        scope: row_scope(row)?,
    })
}

/// Whether the entry of `scope` is live in memory.
fn is_live(store: &Store, scope: &ScopeKey) -> bool {
    let key = scope.key();
    store.lock_one(0, &key).peek(&key).is_some()
}

impl Database {
    /// Deletes the rows not updated for `days` whose entries are not live; returns how many.
    pub async fn sweep(&self, days: u64, store: &Store) -> Result<u64, sqlx::Error> {
        let days = days.min(MAX_DAYS);
        let mut after = 0i64;
        let mut deleted = 0u64;
        loop {
            let stale = self.stale_rows(days, after).await?;
            let Some(last) = stale.last() else {
                return Ok(deleted);
            };
            after = last.id;
            let doomed: Vec<i64> = stale
                .iter()
                .filter(|row| !is_live(store, &row.scope))
                .map(|row| row.id)
                .collect();
            if !doomed.is_empty() {
                deleted += self.delete_stale(days, &doomed).await?;
            }
            if (stale.len() as i64) < ROWS_PER_ROUND {
                return Ok(deleted);
            }
        }
    }

    async fn stale_rows(&self, days: u64, after: i64) -> Result<Vec<StaleRow>, sqlx::Error> {
        match self {
            Database::Postgres(pool) => {
                let rows = sqlx::query(PG_STALE)
                    .bind(days as i32)
                    .bind(after)
                    .bind(ROWS_PER_ROUND)
                    .fetch_all(pool)
                    .await?;
                rows.iter().map(stale_row).collect()
            }
            Database::Sqlite(pool) => {
                let rows = sqlx::query(SQLITE_STALE)
                    .bind(format!("-{days} days"))
                    .bind(after)
                    .bind(ROWS_PER_ROUND)
                    .fetch_all(pool)
                    .await?;
                rows.iter().map(stale_row).collect()
            }
        }
    }

    /// Deletes the rows `ids` that are still past retention (another writer sharing the table
    /// may have updated one since it was read).
    async fn delete_stale(&self, days: u64, ids: &[i64]) -> Result<u64, sqlx::Error> {
        match self {
            Database::Postgres(pool) => {
                let mut qb = QueryBuilder::new("DELETE FROM short_term_memories WHERE ");
                qb.push(PG_STILL_STALE).push_bind(days as i32).push(")");
                push_ids(&mut qb, ids);
                Ok(qb.build().execute(pool).await?.rows_affected())
            }
            Database::Sqlite(pool) => {
                let mut qb = QueryBuilder::new("DELETE FROM short_term_memories WHERE ");
                qb.push(SQLITE_STILL_STALE)
                    .push_bind(format!("-{days} days"))
                    .push(")");
                push_ids(&mut qb, ids);
                Ok(qb.build().execute(pool).await?.rows_affected())
            }
        }
    }
}

/// ` AND stm_id IN (…)`.
fn push_ids<'q, DB>(qb: &mut QueryBuilder<'q, DB>, ids: &[i64])
where
    DB: sqlx::Database,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    qb.push(" AND stm_id IN (");
    let mut list = qb.separated(", ");
    for id in ids {
        list.push_bind(*id);
    }
    list.push_unseparated(")");
}
