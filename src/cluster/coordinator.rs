//! Postgres as the coordinator: nodes register and heartbeat in `stmd_cluster_nodes`; the one
//! configuration (`stmd_cluster_config`'s epoch and the ranges of `stmd_cluster_slots`) is read by
//! every node and changed only by [`Coordinator::change`], one transaction that locks the
//! configuration row, rewrites the ranges, bumps the epoch and notifies `stmd_cluster`. Nodes
//! follow by LISTEN/NOTIFY, with a poll as the fallback for a lost notification or connection.

use super::{Cluster, NodeInfo, SlotMap, SLOTS};
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{PgPool, Row};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The NOTIFY channel of configuration and membership changes.
pub const CHANNEL: &str = "stmd_cluster";

/// How often a node re-reads the configuration even without a notification.
const POLL_EVERY: Duration = Duration::from_secs(1);

/// A connection pool to the coordinating Postgres.
#[derive(Clone)]
pub struct Coordinator {
    pool: PgPool,
}

/// The slot owners of a configuration being changed: one node id (or none) per slot.
pub type Owners = Vec<Option<String>>;

impl Coordinator {
    /// Connects (lazily) and creates the tables when missing. Only `postgres://` URLs: the
    /// configuration must be shared by every node.
    pub async fn connect(url: &str) -> Result<Coordinator, String> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(
                "cluster mode needs --database-url postgres://…: Postgres holds the slot map"
                    .into(),
            );
        }
        let options = PgConnectOptions::from_str(url).map_err(|e| e.to_string())?;
        let pool = PgPoolOptions::new()
            .max_connections(3)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy_with(options);
        crate::persist::db::migrate_postgres(&pool)
            .await
            .map_err(|e| format!("cannot prepare the cluster tables in Postgres: {e}"))?;
        Ok(Coordinator { pool })
    }

    /// Adds this node (or refreshes its address after a restart) and tells the others.
    pub async fn register(&self, me: &NodeInfo) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO stmd_cluster_nodes (node_id, ip, port, last_heartbeat) VALUES ($1, $2, $3, now()) \
             ON CONFLICT (node_id) DO UPDATE SET ip = EXCLUDED.ip, port = EXCLUDED.port, last_heartbeat = now()",
        )
        .bind(&me.id)
        .bind(&me.ip)
        .bind(i32::from(me.port))
        .execute(&self.pool)
        .await?;
        sqlx::query("SELECT pg_notify($1, 'nodes')")
            .bind(CHANNEL)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records that the node is alive; false when its row is gone (removed by `remove-node`).
    pub async fn heartbeat(&self, id: &str) -> Result<bool, sqlx::Error> {
        let done =
            sqlx::query("UPDATE stmd_cluster_nodes SET last_heartbeat = now() WHERE node_id = $1")
                .bind(id)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The configuration in force, read in one snapshot.
    pub async fn load(&self) -> Result<SlotMap, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await?;
        let epoch: i64 = sqlx::query("SELECT epoch FROM stmd_cluster_config WHERE id = 1")
            .fetch_optional(&mut *tx)
            .await?
            .map(|row| row.get(0))
            .unwrap_or(0);
        let nodes = sqlx::query(
            "SELECT node_id, ip, port, \
             GREATEST(0, (EXTRACT(EPOCH FROM (now() - last_heartbeat)) * 1000))::BIGINT \
             FROM stmd_cluster_nodes ORDER BY ip, port, node_id",
        )
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|row| NodeInfo {
            id: row.get(0),
            ip: row.get(1),
            port: u16::try_from(row.get::<i32, _>(2)).unwrap_or(0),
            heartbeat_age_ms: u64::try_from(row.get::<i64, _>(3)).unwrap_or(0),
        })
        .collect();
        let ranges: Vec<(u16, u16, String)> = sqlx::query(
            "SELECT slot_start, slot_end, node_id FROM stmd_cluster_slots ORDER BY slot_start",
        )
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .filter_map(|row| {
            let first = u16::try_from(row.get::<i32, _>(0)).ok()?;
            let last = u16::try_from(row.get::<i32, _>(1)).ok()?;
            Some((first, last, row.get::<String, _>(2)))
        })
        .collect();
        tx.commit().await?;
        Ok(SlotMap::new(
            u64::try_from(epoch).unwrap_or(0),
            nodes,
            &ranges,
        ))
    }

    /// Changes the configuration in one transaction: `edit` sees the registered nodes and the
    /// current owners and changes the owners (or refuses, with a message); then the ranges are
    /// rewritten, the epoch bumped and the nodes notified. Returns (old epoch, new epoch, what
    /// `edit` said it did). Concurrent changes serialise on the configuration row.
    pub async fn change(
        &self,
        edit: impl FnOnce(&[NodeInfo], &mut Owners) -> Result<String, String>,
    ) -> Result<(u64, u64, String), String> {
        let db = |e: sqlx::Error| format!("Postgres: {e}");
        let mut tx = self.pool.begin().await.map_err(db)?;
        let epoch: i64 =
            sqlx::query("SELECT epoch FROM stmd_cluster_config WHERE id = 1 FOR UPDATE")
                .fetch_one(&mut *tx)
                .await
                .map_err(db)?
                .get(0);
        let current = self.load_in(&mut tx).await.map_err(db)?;
        let mut owners: Owners = (0..SLOTS as u16)
            .map(|slot| current.owner(slot).map(|n| n.id.clone()))
            .collect();
        let said = edit(&current.nodes, &mut owners)?;
        let (mut starts, mut ends, mut ids) = (Vec::<i32>::new(), Vec::<i32>::new(), Vec::new());
        let mut slot = 0usize;
        while slot < SLOTS {
            let start = slot;
            while slot < SLOTS && owners[slot] == owners[start] {
                slot += 1;
            }
            if let Some(id) = &owners[start] {
                starts.push(start as i32);
                ends.push(slot as i32 - 1);
                ids.push(id.clone());
            }
        }
        sqlx::query("DELETE FROM stmd_cluster_slots")
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query(
            "INSERT INTO stmd_cluster_slots (slot_start, slot_end, node_id) \
             SELECT * FROM UNNEST($1::INTEGER[], $2::INTEGER[], $3::TEXT[])",
        )
        .bind(&starts)
        .bind(&ends)
        .bind(&ids)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        let new_epoch = epoch + 1;
        sqlx::query("UPDATE stmd_cluster_config SET epoch = $1, updated_at = now() WHERE id = 1")
            .bind(new_epoch)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(new_epoch.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok((epoch as u64, new_epoch as u64, said))
    }

    /// The nodes and ranges as seen inside an open transaction.
    async fn load_in(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    ) -> Result<SlotMap, sqlx::Error> {
        let nodes = sqlx::query(
            "SELECT node_id, ip, port FROM stmd_cluster_nodes ORDER BY ip, port, node_id",
        )
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .map(|row| NodeInfo {
            id: row.get(0),
            ip: row.get(1),
            port: u16::try_from(row.get::<i32, _>(2)).unwrap_or(0),
            heartbeat_age_ms: 0,
        })
        .collect();
        let ranges: Vec<(u16, u16, String)> =
            sqlx::query("SELECT slot_start, slot_end, node_id FROM stmd_cluster_slots")
                .fetch_all(&mut **tx)
                .await?
                .into_iter()
                .filter_map(|row| {
                    let first = u16::try_from(row.get::<i32, _>(0)).ok()?;
                    let last = u16::try_from(row.get::<i32, _>(1)).ok()?;
                    Some((first, last, row.get::<String, _>(2)))
                })
                .collect();
        Ok(SlotMap::new(0, nodes, &ranges))
    }

    /// Removes a node that owns no slots, bumping the epoch so every node drops it from its map.
    pub async fn remove_node(&self, id: &str) -> Result<(u64, u64), String> {
        let db = |e: sqlx::Error| format!("Postgres: {e}");
        let mut tx = self.pool.begin().await.map_err(db)?;
        let epoch: i64 =
            sqlx::query("SELECT epoch FROM stmd_cluster_config WHERE id = 1 FOR UPDATE")
                .fetch_one(&mut *tx)
                .await
                .map_err(db)?
                .get(0);
        let owned: i64 =
            sqlx::query("SELECT COALESCE(SUM(slot_end - slot_start + 1), 0)::BIGINT FROM stmd_cluster_slots WHERE node_id = $1")
                .bind(id)
                .fetch_one(&mut *tx)
                .await
                .map_err(db)?
                .get(0);
        if owned > 0 {
            return Err(format!(
                "node {id} still owns {owned} slots: move them to other nodes first (stmd cluster move-slots)"
            ));
        }
        let gone = sqlx::query("DELETE FROM stmd_cluster_nodes WHERE node_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if gone.rows_affected() == 0 {
            return Err(format!("no registered node {id}"));
        }
        let new_epoch = epoch + 1;
        sqlx::query("UPDATE stmd_cluster_config SET epoch = $1, updated_at = now() WHERE id = 1")
            .bind(new_epoch)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(new_epoch.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok((epoch as u64, new_epoch as u64))
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// Starts this node's membership: registers it, installs the configuration in force, and returns
/// the task that heartbeats and follows changes until `stop`.
pub async fn join(
    cluster: Arc<Cluster>,
    url: &str,
    stop: watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>, String> {
    let coordinator = Coordinator::connect(url).await?;
    coordinator
        .register(&cluster.me)
        .await
        .map_err(|e| format!("cannot register this node in Postgres: {e}"))?;
    let map = coordinator
        .load()
        .await
        .map_err(|e| format!("cannot read the cluster configuration: {e}"))?;
    tracing::info!(
        node_id = %cluster.me.id,
        addr = %cluster.me.addr(),
        epoch = map.epoch,
        slots = map.ranges_of(&cluster.me.id).iter().map(|(a, b)| usize::from(b - a) + 1).sum::<usize>(),
        "cluster node registered"
    );
    cluster.install(map);
    Ok(tokio::spawn(follow(cluster, coordinator, stop)))
}

/// Heartbeats and follows the configuration: a notification or the poll reloads it.
async fn follow(cluster: Arc<Cluster>, coordinator: Coordinator, mut stop: watch::Receiver<bool>) {
    let beat_every = Duration::from_millis((cluster.node_timeout_ms / 3).clamp(100, 1000));
    let mut beat = tokio::time::interval(beat_every);
    let mut poll = tokio::time::interval(POLL_EVERY);
    let mut listener: Option<PgListener> = None;
    let mut removed_logged = false;
    loop {
        if listener.is_none() {
            listener = listen(&coordinator).await;
        }
        let event = {
            let notified = async {
                match listener.as_mut() {
                    Some(l) => l.recv().await.map(|_| ()),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = stop.changed() => Event::Stop,
                _ = beat.tick() => Event::Beat,
                _ = poll.tick() => Event::Reload,
                result = notified => match result {
                    Ok(()) => Event::Reload,
                    Err(err) => Event::Lost(err),
                },
            }
        };
        match event {
            Event::Stop => break,
            Event::Beat => match coordinator.heartbeat(&cluster.me.id).await {
                Ok(true) => removed_logged = false,
                Ok(false) if !removed_logged => {
                    removed_logged = true;
                    tracing::warn!(node_id = %cluster.me.id, "this node was removed from the cluster configuration; restart it to register again");
                }
                Ok(false) => {}
                Err(err) => tracing::warn!(%err, "cluster heartbeat failed"),
            },
            Event::Lost(err) => {
                tracing::warn!(%err, "lost the cluster notification channel; polling until it is back");
                listener = None;
                // No reconnection storm: the poll keeps the node current meanwhile.
                tokio::time::sleep(POLL_EVERY).await;
            }
            Event::Reload => match coordinator.load().await {
                Ok(map) => {
                    let epoch = map.epoch;
                    if cluster.install(map) {
                        tracing::info!(epoch, "cluster configuration changed");
                    }
                }
                Err(err) => tracing::warn!(%err, "cannot read the cluster configuration"),
            },
        }
    }
    coordinator.close().await;
}

/// What woke the follower.
enum Event {
    Stop,
    Beat,
    Reload,
    Lost(sqlx::Error),
}

async fn listen(coordinator: &Coordinator) -> Option<PgListener> {
    let mut listener = PgListener::connect_with(coordinator.pool()).await.ok()?;
    listener.listen(CHANNEL).await.ok()?;
    Some(listener)
}
