//! Postgres as the coordinator: nodes register and heartbeat in `stmd_cluster_nodes`; the one
//! configuration (`stmd_cluster_config`'s epoch and the ranges of `stmd_cluster_slots`) is read by
//! every node and changed only by [`Coordinator::change`], one transaction that locks the
//! configuration row, rewrites the ranges, bumps the epoch and notifies `stmd_cluster`. Nodes
//! follow it as [`super::membership`] says.

use super::{NodeInfo, SlotMap, SLOTS};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Row};
use std::str::FromStr;
use std::time::Duration;

/// The NOTIFY channel of configuration and membership changes.
pub const CHANNEL: &str = "stmd_cluster";

/// A connection pool to the coordinating Postgres.
#[derive(Clone)]
pub struct Coordinator {
    pool: PgPool,
}

/// The slot owners of a configuration being changed: one node id (or none) per slot.
pub type Owners = Vec<Option<String>>;

/// What a failover transaction did.
#[derive(Debug)]
pub struct Takeover {
    pub old_epoch: u64,
    pub new_epoch: u64,
    /// The nodes found dead (heartbeat older than the node timeout).
    pub dead: Vec<String>,
    /// How many slots each live node received.
    pub given: Vec<(String, usize)>,
    /// (dead primary, the replica promoted in its place, with its slots and keys).
    pub promoted: Vec<(String, String)>,
}

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
        crate::scope_rows::db::migrate_postgres(&pool)
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

    /// Records that the node is alive and how far its replication stream has got; false when its
    /// row is gone (removed by `remove-node`).
    pub async fn heartbeat(&self, id: &str, repl_offset: u64) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "UPDATE stmd_cluster_nodes SET last_heartbeat = now(), repl_offset = $2 WHERE node_id = $1",
        )
        .bind(id)
        .bind(i64::try_from(repl_offset).unwrap_or(i64::MAX))
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
        let (nodes, ranges) = read_nodes_and_ranges(&mut tx).await?;
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
        self.change_roles(|nodes, owners, _| edit(nodes, owners))
            .await
    }

    /// [`Coordinator::change`] that may also change which primary nodes follow: `edit` pushes
    /// `(node, Some(primary) | None)` onto the roles, written in the same transaction.
    pub async fn change_roles(
        &self,
        edit: impl FnOnce(
            &[NodeInfo],
            &mut Owners,
            &mut super::replicas::Roles,
        ) -> Result<String, String>,
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
        let mut roles = Vec::new();
        let said = edit(&current.nodes, &mut owners, &mut roles)?;
        super::replicas::write_roles(&mut tx, &roles)
            .await
            .map_err(db)?;
        let new_epoch = write_owners(&mut tx, &owners, epoch).await.map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok((epoch as u64, new_epoch as u64, said))
    }

    /// The nodes and ranges as seen inside an open transaction (epoch 0: the caller holds it).
    async fn load_in(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    ) -> Result<SlotMap, sqlx::Error> {
        let (nodes, ranges) = read_nodes_and_ranges(tx).await?;
        Ok(SlotMap::new(0, nodes, &ranges))
    }

    /// Failover: in one transaction holding the configuration row's lock, gives the slots of every
    /// node whose heartbeat is older than `timeout_ms` to its live replica with the largest
    /// offset (promoted: see [`super::replicas::plan_failover`]), or without one to the live
    /// primaries, evenly; bumps the epoch and notifies. Several live nodes may try at once: the lock serialises them and the later
    /// ones find no slot left on a dead node, so exactly one changes the map (no split brain).
    /// Nothing is done when `me` itself is not live by the database's clock, or when no dead node
    /// owns slots. Returns what was reassigned.
    pub async fn fail_over(&self, me: &str, timeout_ms: u64) -> Result<Option<Takeover>, String> {
        let db = |e: sqlx::Error| format!("Postgres: {e}");
        let mut tx = self.pool.begin().await.map_err(db)?;
        let Some(epoch) =
            sqlx::query("SELECT epoch FROM stmd_cluster_config WHERE id = 1 FOR UPDATE")
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?
                .map(|row| row.get::<i64, _>(0))
        else {
            return Ok(None);
        };
        // Ages by the database's clock, read under the lock (in the map's node order): no node's
        // clock is trusted.
        let current = self.load_in(&mut tx).await.map_err(db)?;
        let members = super::replicas::members(&current, timeout_ms);
        if !members.iter().any(|m| m.id == me && m.live) {
            return Ok(None);
        }
        let mut owners: Owners = (0..SLOTS as u16)
            .map(|slot| current.owner(slot).map(|n| n.id.clone()))
            .collect();
        let plan = super::replicas::plan_failover(&members, &mut owners);
        if plan.given.is_empty() {
            return Ok(None);
        }
        let dead = plan.dead;
        let given = plan.given;
        super::replicas::write_roles(&mut tx, &plan.roles)
            .await
            .map_err(db)?;
        let new_epoch = write_owners(&mut tx, &owners, epoch).await.map_err(db)?;
        sqlx::query(
            "INSERT INTO stmd_cluster_failovers (epoch, node_id) SELECT $1, unnest($2::TEXT[]) \
             ON CONFLICT DO NOTHING",
        )
        .bind(new_epoch)
        .bind(&dead)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(Some(Takeover {
            old_epoch: epoch as u64,
            new_epoch: new_epoch as u64,
            dead,
            given,
            promoted: plan.promoted,
        }))
    }

    /// The nodes that failovers declared dead in the epochs after `old` up to `new`.
    pub async fn failed_between(&self, old: u64, new: u64) -> Result<Vec<String>, sqlx::Error> {
        let epoch = |e: u64| i64::try_from(e).unwrap_or(i64::MAX);
        Ok(sqlx::query(
            "SELECT DISTINCT node_id FROM stmd_cluster_failovers WHERE epoch > $1 AND epoch <= $2",
        )
        .bind(epoch(old))
        .bind(epoch(new))
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .map(|row| row.get(0))
        .collect())
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

    /// Records a request to move `slots` (as `0-99,200`) from `source` to `target` and wakes the
    /// nodes; the source node carries it out ([`super::migrate`]). Returns the request's id.
    pub async fn request_migration(
        &self,
        source: &str,
        target: &str,
        slots: &str,
    ) -> Result<i64, String> {
        let db = |e: sqlx::Error| format!("Postgres: {e}");
        let id: i64 = sqlx::query(
            "INSERT INTO stmd_cluster_migrations (source_id, target_id, slots) VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(source)
        .bind(target)
        .bind(slots)
        .fetch_one(&self.pool)
        .await
        .map_err(db)?
        .get(0);
        sqlx::query("SELECT pg_notify($1, 'migration')")
            .bind(CHANNEL)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(id)
    }

    /// A request's state (`pending`, `running`, `done`, `failed`) and result line.
    pub async fn migration_state(&self, id: i64) -> Result<(String, String), String> {
        let row = sqlx::query("SELECT state, result FROM stmd_cluster_migrations WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| format!("Postgres: {e}"))?;
        Ok((row.get(0), row.get(1)))
    }

    /// Gives up a request no node has claimed yet; false when the source claimed it meanwhile.
    pub async fn withdraw_migration(&self, id: i64, why: &str) -> Result<bool, String> {
        let done = sqlx::query(
            "UPDATE stmd_cluster_migrations SET state = 'failed', result = $2, updated_at = now() \
             WHERE id = $1 AND state = 'pending'",
        )
        .bind(id)
        .bind(why)
        .execute(&self.pool)
        .await
        .map_err(|e| format!("Postgres: {e}"))?;
        Ok(done.rows_affected() == 1)
    }

    /// Claims the oldest pending request whose source is `me`: (id, target id, slots).
    pub async fn claim_migration(
        &self,
        me: &str,
    ) -> Result<Option<(i64, String, String)>, sqlx::Error> {
        let row = sqlx::query(
            "UPDATE stmd_cluster_migrations SET state = 'running', updated_at = now() \
             WHERE id = (SELECT id FROM stmd_cluster_migrations WHERE source_id = $1 AND state = 'pending' \
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING id, target_id, slots",
        )
        .bind(me)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|row| (row.get(0), row.get(1), row.get(2))))
    }

    /// Ends a running request with its outcome.
    pub async fn finish_migration(
        &self,
        id: i64,
        ok: bool,
        result: &str,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE stmd_cluster_migrations SET state = $2, result = $3, updated_at = now() WHERE id = $1",
        )
        .bind(id)
        .bind(if ok { "done" } else { "failed" })
        .bind(result)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// At start-up: the requests this node was running when it stopped have failed (the slots of
    /// the batches not yet flipped are still its own).
    pub async fn fail_interrupted_migrations(&self, me: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE stmd_cluster_migrations SET state = 'failed', \
             result = 'the source node restarted during the move; the batches not flipped before stayed with it', updated_at = now() \
             WHERE source_id = $1 AND state = 'running'",
        )
        .bind(me)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(super) fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// The registered nodes (with their heartbeat age by the database's clock) and the slot ranges,
/// read with `executor` (a pool connection or an open transaction).
async fn read_nodes_and_ranges(
    executor: &mut sqlx::PgConnection,
) -> Result<(Vec<NodeInfo>, Vec<(u16, u16, String)>), sqlx::Error> {
    let nodes = sqlx::query(
        "SELECT node_id, ip, port, \
         GREATEST(0, (EXTRACT(EPOCH FROM (now() - last_heartbeat)) * 1000))::BIGINT, \
         primary_id, repl_offset \
         FROM stmd_cluster_nodes ORDER BY ip, port, node_id",
    )
    .fetch_all(&mut *executor)
    .await?
    .into_iter()
    .map(|row| NodeInfo {
        id: row.get(0),
        ip: row.get(1),
        port: u16::try_from(row.get::<i32, _>(2)).unwrap_or(0),
        heartbeat_age_ms: u64::try_from(row.get::<i64, _>(3)).unwrap_or(0),
        primary: row.get(4),
        repl_offset: u64::try_from(row.get::<i64, _>(5)).unwrap_or(0),
    })
    .collect();
    let ranges = sqlx::query(
        "SELECT slot_start, slot_end, node_id FROM stmd_cluster_slots ORDER BY slot_start",
    )
    .fetch_all(&mut *executor)
    .await?
    .into_iter()
    .filter_map(|row| {
        let first = u16::try_from(row.get::<i32, _>(0)).ok()?;
        let last = u16::try_from(row.get::<i32, _>(1)).ok()?;
        Some((first, last, row.get::<String, _>(2)))
    })
    .collect();
    Ok((nodes, ranges))
}

/// Rewrites the slot ranges from `owners`, bumps the epoch from `epoch` and notifies, inside `tx`
/// (which holds the configuration row's lock). Returns the new epoch.
async fn write_owners(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    owners: &Owners,
    epoch: i64,
) -> Result<i64, sqlx::Error> {
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
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "INSERT INTO stmd_cluster_slots (slot_start, slot_end, node_id) \
             SELECT * FROM UNNEST($1::INTEGER[], $2::INTEGER[], $3::TEXT[])",
    )
    .bind(&starts)
    .bind(&ends)
    .bind(&ids)
    .execute(&mut **tx)
    .await?;
    let new_epoch = epoch + 1;
    sqlx::query("UPDATE stmd_cluster_config SET epoch = $1, updated_at = now() WHERE id = 1")
        .bind(new_epoch)
        .execute(&mut **tx)
        .await?;
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(new_epoch.to_string())
        .execute(&mut **tx)
        .await?;
    Ok(new_epoch)
}
