//! The database side of the scope rows: connecting (Postgres URL or the embedded SQLite file),
//! migrations, writing folded batches, and reading rows back at start-up. The SQL is the same for
//! both back ends except where noted in [`Dialect`].

use super::fold::{Delta, Segment};
use super::PersistOp;
use crate::stm::{Scope, ScopeKey};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::query::Query;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Pool, Postgres, QueryBuilder, Row, Sqlite};
use std::path::Path;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::Duration;

/// Most rows per INSERT statement, a power of two (Postgres allows 65535 parameters, SQLite
/// 32766; we bind at most 10 per row). Each row count's text is prepared once per connection, at
/// a cost that grows with its rows; past a few hundred rows a statement saves nothing more per
/// row, so the largest stays at 256.
const ROWS_PER_STATEMENT: usize = 256;

const CONFLICT_TARGET: &str = " ON CONFLICT (scope_kind, COALESCE(server_disc_id, ''), COALESCE(user_disc_id, ''), channel_disc_id, COALESCE(persona_id, 0)) ";

/// Where the differences between the back ends live.
struct Dialect {
    /// Appended to the categories parameter (Postgres stores JSONB).
    json_cast: &'static str,
    /// Placeholders are `$1`, `$2`, ... (Postgres) rather than `?` (SQLite).
    numbered_parameters: bool,
    /// Rows with distilled memory updated within `$1` seconds, with `updated_at` in Unix ms.
    warm_sql: &'static str,
    /// The upsert texts, built on first use.
    upserts: UpsertTexts,
}

static POSTGRES: Dialect = Dialect {
    json_cast: "::jsonb",
    numbered_parameters: true,
    warm_sql: "SELECT scope_kind, server_disc_id, user_disc_id, channel_disc_id, persona_id, persona_lineage_id, \
               categories::text AS categories, summary, turns_since_refresh, last_refreshed_turn, \
               (EXTRACT(EPOCH FROM updated_at) * 1000)::BIGINT AS updated_ms \
               FROM short_term_memories \
               WHERE updated_at > now() - make_interval(secs => $1::double precision) \
               AND ((summary IS NOT NULL AND summary <> '') OR categories <> '{}'::jsonb)",
    upserts: [const { OnceLock::new() }; SHAPES.len() * CHUNK_SIZES],
};

static SQLITE: Dialect = Dialect {
    json_cast: "",
    numbered_parameters: false,
    warm_sql: "SELECT scope_kind, server_disc_id, user_disc_id, channel_disc_id, persona_id, persona_lineage_id, \
               categories, summary, turns_since_refresh, last_refreshed_turn, \
               CAST((julianday(updated_at) - 2440587.5) * 86400000.0 AS INTEGER) AS updated_ms \
               FROM short_term_memories \
               WHERE julianday(updated_at) > julianday('now') - ($1 / 86400.0) \
               AND ((summary IS NOT NULL AND summary <> '') OR categories <> '{}')",
    upserts: [const { OnceLock::new() }; SHAPES.len() * CHUNK_SIZES],
};

/// A connected back end.
#[derive(Clone)]
pub enum Database {
    Postgres(Pool<Postgres>),
    Sqlite(Pool<Sqlite>),
}

/// A row with distilled memory, read back at start-up.
#[derive(Debug, Clone, PartialEq)]
pub struct WarmRow {
    pub scope: ScopeKey,
    pub lineage: Option<i64>,
    pub summary: Option<String>,
    pub categories: Vec<(String, String)>,
    pub turns_since_refresh: i64,
    pub last_refreshed_turn: i64,
    pub updated_ms: u64,
}

impl Database {
    /// Opens a lazy pool: nothing is contacted until the first statement, so opening never waits;
    /// only the warm start waits for the database, and at most `stm-restore-timeout`.
    pub fn open(url: Option<&str>, dir: &Path) -> Result<Database, String> {
        match url {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                let options = PgConnectOptions::from_str(url).map_err(|e| e.to_string())?;
                let pool = PgPoolOptions::new()
                    .max_connections(2)
                    .acquire_timeout(Duration::from_secs(5))
                    .connect_lazy_with(options);
                Ok(Database::Postgres(pool))
            }
            Some(url) if url.starts_with("sqlite:") => {
                Self::sqlite(SqliteConnectOptions::from_str(url).map_err(|e| e.to_string())?)
            }
            Some(url) => Err(format!(
                "unsupported database URL '{url}' (postgres:// or sqlite:)"
            )),
            None => Self::sqlite(SqliteConnectOptions::new().filename(dir.join("stmd.db"))),
        }
    }

    /// The embedded file, tuned for the writer's load: batches of inserts at random places in the
    /// scope index of a file that only grows. With SQLite's defaults each batch read its B-tree
    /// pages back through `pread` (a 2 MiB page cache), spilled every multi-row statement's undo
    /// pages to a temporary file, and checkpointed every 1,000 WAL pages (a `fsync` and a rewrite
    /// of the same hot pages every few batches). What each setting may take is in
    /// docs/persistence.md. Durability is unchanged: WAL with `synchronous = NORMAL`.
    fn sqlite(options: SqliteConnectOptions) -> Result<Database, String> {
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5))
            // Up to 32 MiB of page cache (negative: KiB), allocated as pages are used: the pages
            // changed since the last checkpoint live in the WAL, and are read back from here.
            .pragma("cache_size", "-32768")
            // Reads of the database file through a mapping instead of a syscall per page: address
            // space, not memory (the kernel's page cache holds the pages and can drop them).
            .pragma("mmap_size", "1073741824")
            // A multi-row upsert's statement journal in memory instead of a temporary file.
            .pragma("temp_store", "MEMORY")
            // Checkpoint every 4,000 WAL pages (16 MiB) rather than 1,000: a page changed by many
            // batches is copied into the file once per checkpoint, and fsyncs are fewer.
            .pragma("wal_autocheckpoint", "4000");
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy_with(options);
        Ok(Database::Sqlite(pool))
    }

    /// Which back end, for logs and INFO.
    pub fn kind(&self) -> &'static str {
        match self {
            Database::Postgres(_) => "postgres",
            Database::Sqlite(_) => "sqlite",
        }
    }

    /// Creates the tables and indexes when missing.
    pub async fn migrate(&self) -> Result<(), sqlx::Error> {
        match self {
            Database::Postgres(pool) => migrate_postgres(pool).await?,
            Database::Sqlite(pool) => sqlx::migrate!("./migrations/sqlite").run(pool).await?,
        }
        Ok(())
    }

    /// Writes a folded batch in one transaction; returns the number of statements sent.
    pub async fn write(&self, segments: &[Segment]) -> Result<u64, sqlx::Error> {
        match self {
            Database::Postgres(pool) => write_segments_pg(pool, segments, &POSTGRES).await,
            Database::Sqlite(pool) => write_segments_sqlite(pool, segments, &SQLITE).await,
        }
    }

    /// Rows with a summary or categories updated within `max_age_secs`.
    pub async fn load_recent(&self, max_age_secs: u64) -> Result<Vec<WarmRow>, sqlx::Error> {
        let secs = max_age_secs as f64;
        match self {
            Database::Postgres(pool) => {
                let rows = sqlx::query(POSTGRES.warm_sql)
                    .bind(secs)
                    .fetch_all(pool)
                    .await?;
                rows.iter().map(warm_row).collect()
            }
            Database::Sqlite(pool) => {
                let rows = sqlx::query(SQLITE.warm_sql)
                    .bind(secs)
                    .fetch_all(pool)
                    .await?;
                rows.iter().map(warm_row).collect()
            }
        }
    }

    pub async fn close(&self) {
        match self {
            Database::Postgres(pool) => pool.close().await,
            Database::Sqlite(pool) => pool.close().await,
        }
    }
}

fn text(b: &Option<bytes::Bytes>) -> Option<String> {
    b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned())
}

/// Persona and lineage ids are INTEGER columns.
fn int32(v: Option<i64>) -> Option<i32> {
    v.and_then(|v| i32::try_from(v).ok())
}

fn clamp32(v: i64) -> i32 {
    v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

fn categories_json(categories: &[(String, String)]) -> String {
    let map: serde_json::Map<String, serde_json::Value> = categories
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// The bound values of one row's identity.
struct Identity {
    kind: &'static str,
    server: Option<String>,
    user: Option<String>,
    channel: String,
    persona: Option<i32>,
}

fn identity(scope: &ScopeKey) -> Identity {
    Identity {
        kind: scope.scope.as_str(),
        server: text(&scope.server),
        user: match scope.scope {
            Scope::User => text(&scope.user),
            Scope::Server => None,
        },
        channel: String::from_utf8_lossy(&scope.channel).into_owned(),
        persona: scope.persona.and_then(|p| i32::try_from(p).ok()),
    }
}

/// Which columns a distilled write sets; each combination is one statement shape.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Shape {
    /// Ensure and ticks only: insert if missing, add turns.
    Counters,
    Summary,
    Categories,
    Both,
}

/// Every shape, in the order a batch writes them (and [`UpsertTexts`] indexes them).
const SHAPES: [Shape; 4] = [
    Shape::Counters,
    Shape::Summary,
    Shape::Categories,
    Shape::Both,
];

impl Shape {
    /// Whether the shape writes (summary, categories).
    fn columns(self) -> (bool, bool) {
        (
            matches!(self, Shape::Summary | Shape::Both),
            matches!(self, Shape::Categories | Shape::Both),
        )
    }
}

fn shape(delta: &Delta) -> Shape {
    match (delta.summary.is_some(), delta.categories.is_some()) {
        (false, false) if !delta.reset => Shape::Counters,
        (true, false) => Shape::Summary,
        (false, true) => Shape::Categories,
        _ => Shape::Both,
    }
}

macro_rules! impl_write_segments {
    ($name:ident, $db:ty) => {
        async fn $name(
            pool: &Pool<$db>,
            segments: &[Segment],
            dialect: &'static Dialect,
        ) -> Result<u64, sqlx::Error> {
            let mut tx = pool.begin().await?;
            let mut statements = 0u64;
            for segment in segments {
                match segment {
                    Segment::Forget(op) => {
                        forget_query::<$db>(op).build().execute(&mut *tx).await?;
                        statements += 1;
                    }
                    Segment::Deltas(deltas) => {
                        for wanted in SHAPES {
                            let rows: Vec<&(ScopeKey, Delta)> =
                                deltas.iter().filter(|(_, d)| shape(d) == wanted).collect();
                            for chunk in statement_chunks(&rows) {
                                upsert_query::<$db>(chunk, wanted, dialect)
                                    .execute(&mut *tx)
                                    .await?;
                                statements += 1;
                            }
                        }
                    }
                }
            }
            tx.commit().await?;
            Ok(statements)
        }
    };
}

impl_write_segments!(write_segments_pg, Postgres);
impl_write_segments!(write_segments_sqlite, Sqlite);

/// Splits rows into chunks whose sizes are powers of two up to [`ROWS_PER_STATEMENT`], so the
/// statement texts come from a small set and each connection's prepared-statement cache hits
/// (a statement per distinct row count would be parsed and planned anew almost every batch).
fn statement_chunks<T>(mut rows: &[T]) -> impl Iterator<Item = &[T]> {
    std::iter::from_fn(move || {
        if rows.is_empty() {
            return None;
        }
        let take = rows.len().min(ROWS_PER_STATEMENT);
        let take = 1 << take.ilog2();
        let (chunk, rest) = rows.split_at(take);
        rows = rest;
        Some(chunk)
    })
}

/// How many chunk sizes [`statement_chunks`] makes: 1, 2, 4, ... [`ROWS_PER_STATEMENT`].
const CHUNK_SIZES: usize = ROWS_PER_STATEMENT.ilog2() as usize + 1;

/// One upsert text per (shape, chunk size), built on first use and kept for the process's life:
/// the writer binds every batch's values to a ready text instead of assembling the SQL again for
/// each statement (which cost as much as binding the values).
type UpsertTexts = [OnceLock<String>; SHAPES.len() * CHUNK_SIZES];

/// The text of the upsert of `rows` deltas (a power of two) of `shape`.
fn upsert_sql(dialect: &'static Dialect, shape: Shape, rows: usize) -> &'static str {
    let index = shape as usize * CHUNK_SIZES + rows.ilog2() as usize;
    dialect.upserts[index].get_or_init(|| upsert_text(dialect, shape, rows))
}

/// Builds the upsert text: `rows` tuples of placeholders, then the conflict clause.
fn upsert_text(dialect: &Dialect, shape: Shape, rows: usize) -> String {
    let (with_summary, with_categories) = shape.columns();
    let mut sql = String::from(
        "INSERT INTO short_term_memories (scope_kind, server_disc_id, user_disc_id, channel_disc_id, \
         persona_id, persona_lineage_id, turns_since_refresh, last_refreshed_turn",
    );
    if with_summary {
        sql.push_str(", summary");
    }
    if with_categories {
        sql.push_str(", categories");
    }
    sql.push_str(") VALUES ");
    let columns = 8 + usize::from(with_summary) + usize::from(with_categories);
    let mut parameter = 0;
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..columns {
            if column > 0 {
                sql.push_str(", ");
            }
            parameter += 1;
            if dialect.numbered_parameters {
                sql.push('$');
                sql.push_str(&parameter.to_string());
            } else {
                sql.push('?');
            }
        }
        if with_categories {
            sql.push_str(dialect.json_cast);
        }
        sql.push(')');
    }
    sql.push_str(CONFLICT_TARGET);
    if shape == Shape::Counters {
        // An ensure never overwrites; only real ticks change the row.
        sql.push_str(
            "DO UPDATE SET turns_since_refresh = short_term_memories.turns_since_refresh + excluded.turns_since_refresh \
             WHERE excluded.turns_since_refresh <> 0",
        );
    } else {
        sql.push_str(
            "DO UPDATE SET turns_since_refresh = excluded.turns_since_refresh, \
             last_refreshed_turn = short_term_memories.last_refreshed_turn + excluded.last_refreshed_turn, \
             persona_lineage_id = excluded.persona_lineage_id",
        );
        if with_summary {
            sql.push_str(", summary = excluded.summary");
        }
        if with_categories {
            sql.push_str(", categories = excluded.categories");
        }
    }
    sql
}

/// One multi-row upsert of deltas of the same shape: the cached text with the rows' values bound
/// in the text's column order.
fn upsert_query<'q, DB>(
    rows: &[&(ScopeKey, Delta)],
    shape: Shape,
    dialect: &'static Dialect,
) -> Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>
where
    DB: sqlx::Database,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<String>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i32: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i32>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let (with_summary, with_categories) = shape.columns();
    let mut query = sqlx::query::<DB>(upsert_sql(dialect, shape, rows.len()));
    for (scope, delta) in rows {
        let id = identity(scope);
        query = query
            .bind(id.kind)
            .bind(id.server)
            .bind(id.user)
            .bind(id.channel)
            .bind(id.persona)
            .bind(int32(delta.insert_lineage))
            .bind(clamp32(delta.add_turns))
            .bind(clamp32(delta.refreshes));
        if with_summary {
            query = query.bind(delta.summary.clone().flatten());
        }
        if with_categories {
            query = query.bind(categories_json(
                delta.categories.as_deref().unwrap_or_default(),
            ));
        }
    }
    query
}

/// The DELETE of a forget operation.
fn forget_query<'q, DB>(op: &PersistOp) -> QueryBuilder<'q, DB>
where
    DB: sqlx::Database,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<String>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i32: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i32>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let mut qb = QueryBuilder::<DB>::new("DELETE FROM short_term_memories WHERE ");
    match op {
        PersistOp::ForgetChannel { channel } => {
            qb.push("channel_disc_id = ")
                .push_bind(String::from_utf8_lossy(channel).into_owned());
        }
        PersistOp::ForgetUser { user } => {
            qb.push("scope_kind = 'user' AND user_disc_id = ")
                .push_bind(String::from_utf8_lossy(user).into_owned());
        }
        PersistOp::ForgetScope { scope } => {
            let id = identity(scope);
            qb.push("scope_kind = ")
                .push_bind(id.kind)
                .push(" AND channel_disc_id = ")
                .push_bind(id.channel)
                .push(" AND COALESCE(persona_id, 0) = ")
                .push_bind(id.persona.unwrap_or(0));
            match scope.scope {
                Scope::User => {
                    // A user key does not name its server: match the user's row in any server.
                    qb.push(" AND user_disc_id = ").push_bind(id.user);
                }
                Scope::Server => {
                    qb.push(" AND server_disc_id = ").push_bind(id.server);
                }
            }
        }
        _ => {
            qb.push("FALSE");
        }
    }
    qb
}

/// The scope a row belongs to, from its identity columns.
pub(super) fn row_scope<R: Row>(row: &R) -> Result<ScopeKey, sqlx::Error>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<i32>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    let kind: String = row.try_get("scope_kind")?;
    let scope = if kind == "server" {
        Scope::Server
    } else {
        Scope::User
    };
    let bytes = |s: Option<String>| s.map(bytes::Bytes::from);
    let persona: Option<i32> = row.try_get("persona_id")?;
    Ok(ScopeKey {
        scope,
        user: match scope {
            Scope::User => bytes(row.try_get("user_disc_id")?),
            Scope::Server => None,
        },
        server: bytes(row.try_get("server_disc_id")?),
        channel: bytes::Bytes::from(row.try_get::<String, _>("channel_disc_id")?),
        persona: persona.filter(|p| *p > 0).map(|p| p as u64),
    })
}

fn warm_row<R: Row>(row: &R) -> Result<WarmRow, sqlx::Error>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i32: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<i32>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    let categories_text: String = row.try_get("categories")?;
    let categories = match serde_json::from_str::<serde_json::Value>(&categories_text) {
        Ok(serde_json::Value::Object(map)) => {
            let mut pairs: Vec<(String, String)> = map
                .into_iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => (k, s),
                    other => (k, other.to_string()),
                })
                .collect();
            pairs.sort();
            pairs
        }
        _ => Vec::new(),
    };
    Ok(WarmRow {
        scope: row_scope(row)?,
        lineage: row
            .try_get::<Option<i32>, _>("persona_lineage_id")?
            .map(i64::from),
        summary: row.try_get("summary")?,
        categories,
        turns_since_refresh: i64::from(row.try_get::<i32, _>("turns_since_refresh")?),
        last_refreshed_turn: i64::from(row.try_get::<i32, _>("last_refreshed_turn")?),
        updated_ms: row.try_get::<i64, _>("updated_ms")?.max(0) as u64,
    })
}

/// Runs the Postgres migrations (the scope rows and the cluster tables). One place, so the
/// persistence and the cluster coordinator always agree on the schema.
pub async fn migrate_postgres(pool: &Pool<Postgres>) -> Result<(), sqlx::Error> {
    sqlx::migrate!("./migrations/postgres").run(pool).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_chunks_are_powers_of_two_and_cover_every_row() {
        for n in [0usize, 1, 2, 3, 7, 100, 1024, 1025, 5000] {
            let rows: Vec<usize> = (0..n).collect();
            let chunks: Vec<&[usize]> = statement_chunks(&rows).collect();
            assert!(chunks
                .iter()
                .all(|c| c.len().is_power_of_two() && c.len() <= ROWS_PER_STATEMENT));
            assert_eq!(chunks.concat(), rows, "n = {n}");
        }
    }

    #[test]
    fn upsert_texts_have_one_placeholder_per_bound_value_and_are_cached() {
        for shape in SHAPES {
            let (with_summary, with_categories) = shape.columns();
            let columns = 8 + usize::from(with_summary) + usize::from(with_categories);
            for rows in [1usize, 2, 8, ROWS_PER_STATEMENT] {
                let values = rows * columns;
                let sqlite = upsert_sql(&SQLITE, shape, rows);
                assert_eq!(sqlite.matches('?').count(), values, "{shape:?} x {rows}");
                assert!(std::ptr::eq(sqlite, upsert_sql(&SQLITE, shape, rows)));
                let postgres = upsert_sql(&POSTGRES, shape, rows);
                assert_eq!(postgres.matches('$').count(), values, "{shape:?} x {rows}");
                assert!(postgres.contains(&format!("${values}")));
                assert!(!postgres.contains(&format!("${}", values + 1)));
                assert_eq!(
                    postgres.matches("::jsonb").count(),
                    if with_categories { rows } else { 0 }
                );
            }
        }
    }
}
