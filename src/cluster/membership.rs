//! A node's membership of the cluster: it joins (registers and installs the configuration in
//! force), then heartbeats and follows the configuration by LISTEN/NOTIFY on
//! [`super::coordinator::CHANNEL`], with a poll as the fallback for a lost notification or
//! connection; it runs the failover transaction when an owner of slots falls silent, and warms
//! the slots a failover gives it.

use super::coordinator::{Coordinator, CHANNEL};
use super::Host;
use super::{Cluster, SlotMap};
use sqlx::postgres::PgListener;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often a node re-reads the configuration even without a notification.
const POLL_EVERY: Duration = Duration::from_secs(1);

/// Starts this node's membership: registers it and installs the configuration in force, before
/// the start-up warm runs (which restores only the slots this configuration gives the node).
/// [`follow`] then heartbeats and follows changes.
pub async fn join(cluster: &Cluster, url: &str) -> Result<Coordinator, String> {
    let coordinator = Coordinator::connect(url).await?;
    coordinator
        .register(&cluster.me)
        .await
        .map_err(|e| format!("cannot register this node in Postgres: {e}"))?;
    coordinator
        .fail_interrupted_migrations(&cluster.me.id)
        .await
        .map_err(|e| format!("cannot read the slot migration requests: {e}"))?;
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
    // A second handle on the same pool, for CLUSTER's administration subcommands.
    let _ = cluster.coordinator.set(coordinator.clone());
    Ok(coordinator)
}

/// Heartbeats and follows the configuration until `stop`: a notification or the poll reloads it.
/// Warming the slots a failover gave this node runs in its own task, so heartbeats go on
/// meanwhile; the new map is installed (and those slots served) once the warm is done, and no
/// other map is installed before that.
pub async fn follow<H: Host>(
    cluster: Arc<Cluster>,
    coordinator: Coordinator,
    host: Arc<H>,
    mut stop: watch::Receiver<bool>,
) {
    let beat_every = Duration::from_millis((cluster.node_timeout_ms / 3).clamp(100, 1000));
    let mut beat = tokio::time::interval(beat_every);
    let mut poll = tokio::time::interval(POLL_EVERY);
    let mut listener: Option<PgListener> = None;
    let mut removed_logged = false;
    // The warm in progress, and the map to install when it is done.
    let mut warming: Option<(tokio::task::JoinHandle<()>, SlotMap)> = None;
    // The map installed by `join`: a replica starts following its primary now.
    super::replicas::apply_role(&cluster, &*host, &cluster.map());
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
            let warmed = async {
                match warming.as_mut() {
                    Some((task, _)) => {
                        let _ = task.await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = stop.changed() => Event::Stop,
                _ = beat.tick() => Event::Beat,
                _ = poll.tick() => Event::Reload,
                () = cluster.manual.wake.notified() => Event::Manual,
                () = warmed => Event::Warmed,
                result = notified => match result {
                    Ok(()) => Event::Reload,
                    Err(err) => Event::Lost(err),
                },
            }
        };
        match event {
            Event::Stop => break,
            Event::Beat => match coordinator
                .heartbeat(&cluster.me.id, super::replicas::offset(&*host))
                .await
            {
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
            Event::Warmed => {
                if let Some((_, map)) = warming.take() {
                    let epoch = map.epoch;
                    if cluster.follow(map, host.pubsub()) {
                        tracing::info!(epoch, "cluster configuration changed");
                    }
                    super::replicas::apply_role(&cluster, &*host, &cluster.map());
                }
                // A newer map may have come meanwhile.
                poll.reset_immediately();
            }
            Event::Manual => super::replicas::start_manual(&cluster, &coordinator, &host),
            // While a warm runs, the map it is for waits; the poll after it reads the latest.
            Event::Reload if warming.is_some() => {}
            Event::Reload => match coordinator.load().await {
                Ok(map) => {
                    let epoch = map.epoch;
                    if failed_owner(&map, cluster.node_timeout_ms) {
                        fail_over(&cluster, &coordinator).await;
                    }
                    let current = cluster.map();
                    let gained = match map.epoch > current.epoch
                        && super::gains_from_others(&current, &map, &cluster.me.id)
                    {
                        true => match coordinator.failed_between(current.epoch, map.epoch).await {
                            Ok(failed) => super::taken_over(
                                &current,
                                &map,
                                &cluster.me.id,
                                cluster.node_timeout_ms,
                                &failed,
                            ),
                            Err(err) => {
                                // Without the record, a restarted dead node looks alive: retry.
                                tracing::warn!(%err, "cannot read the failover record; retrying at the next poll");
                                continue;
                            }
                        },
                        false => Vec::new(),
                    };
                    if !gained.is_empty() {
                        // A replica promoted in its primary's place stops following it at once
                        // (its keys are the slots' data) and keeps them through the warm.
                        let promoted = super::replicas::promoted(&current, &map, &cluster.me.id);
                        if promoted {
                            super::replicas::apply_role(&cluster, &*host, &map);
                        }
                        // Warm first, then serve: a client sent here by the new map finds the
                        // summaries already in place.
                        let task = tokio::spawn(warm_taken_over(
                            cluster.clone(),
                            coordinator.clone(),
                            host.clone(),
                            gained,
                            promoted,
                        ));
                        warming = Some((task, map));
                    } else {
                        // A replica made primary (CLUSTER FAILOVER) stops following before it
                        // serves the slots, so no write meets READONLY there.
                        if super::replicas::promoted(&current, &map, &cluster.me.id) {
                            super::replicas::apply_role(&cluster, &*host, &map);
                        }
                        if cluster.follow(map, host.pubsub()) {
                            tracing::info!(epoch, "cluster configuration changed");
                        }
                        super::replicas::apply_role(&cluster, &*host, &cluster.map());
                    }
                    super::migrate::take_request(&cluster, &host, &coordinator).await;
                }
                Err(err) => tracing::warn!(%err, "cannot read the cluster configuration"),
            },
        }
    }
    if let Some((task, _)) = warming {
        task.abort();
    }
    coordinator.close().await;
}

/// Whether some node that owns slots has been silent for longer than the node timeout.
fn failed_owner(map: &SlotMap, timeout_ms: u64) -> bool {
    map.assigned_ranges()
        .iter()
        .any(|(_, _, node)| node.heartbeat_age_ms > timeout_ms)
}

/// Tries the failover transaction; every live node does when it sees a failed owner, and the
/// configuration row's lock lets exactly one of them change the map.
async fn fail_over(cluster: &Cluster, coordinator: &Coordinator) {
    match coordinator
        .fail_over(&cluster.me.id, cluster.node_timeout_ms)
        .await
    {
        Ok(Some(done)) => {
            cluster
                .stats
                .failovers
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(
                dead = ?done.dead,
                given = ?done.given,
                promoted = ?done.promoted,
                epoch = done.new_epoch,
                "failover: the slots of failed nodes were reassigned to the live nodes"
            );
        }
        Ok(None) => {}
        Err(err) => tracing::warn!(%err, "failover transaction failed; retrying at the next poll"),
    }
}

/// Warms the slots a failover gave this node from the scope rows, as the start-up warm does, and
/// counts them. It runs beside the heartbeat (see [`follow`]); reading the rows is bounded by the
/// node timeout (at least 1 s), after which the slots are served without their summaries (they
/// stay in the database, and the error is logged). A `promoted` replica keeps its keys of the
/// slots (its copy of its primary's) and only fills in from the rows what they lack.
async fn warm_taken_over(
    cluster: Arc<Cluster>,
    coordinator: Coordinator,
    host: Arc<impl Host>,
    gained: Vec<u16>,
    promoted: bool,
) {
    use std::sync::atomic::Ordering::Relaxed;
    cluster
        .stats
        .slots_taken_over
        .fetch_add(gained.len() as u64, Relaxed);
    let db = crate::scope_rows::db::Database::Postgres(coordinator.pool().clone());
    let summary_ttl_secs = host.config().read().stm_summary_ttl;
    let limit = Duration::from_millis(cluster.node_timeout_ms.max(1000));
    let rows = match tokio::time::timeout(limit, db.load_recent(summary_ttl_secs)).await {
        Ok(Ok(rows)) => rows,
        Ok(Err(err)) => {
            tracing::error!(%err, slots = gained.len(), "failover: cannot read the scope rows of the slots taken over; their summaries stay in the database only");
            Vec::new()
        }
        Err(_) => {
            tracing::error!(slots = gained.len(), "failover: reading the scope rows of the slots taken over timed out; their summaries stay in the database only");
            Vec::new()
        }
    };
    let mut mine = vec![false; super::SLOTS];
    for &slot in &gained {
        mine[slot as usize] = true;
    }
    // The merge locks the keyspace's shards: off the async workers.
    let merged = tokio::task::spawn_blocking(move || {
        crate::scope_rows::restore::take_over_slots(
            host.store(),
            &rows,
            |key| mine[super::key_slot(key) as usize],
            summary_ttl_secs.saturating_mul(1000),
            promoted,
        )
    })
    .await;
    let Ok((dropped, warmed)) = merged else {
        tracing::error!("failover: the warm of the slots taken over failed");
        return;
    };
    cluster
        .stats
        .takeover_rows_warmed
        .fetch_add(warmed, Relaxed);
    cluster
        .stats
        .takeover_stale_keys_dropped
        .fetch_add(dropped, Relaxed);
    if promoted {
        tracing::warn!(
            slots = gained.len(),
            warmed,
            "failover: this replica was promoted in its failed primary's place (its keys kept; STM summaries filled in from the rows)"
        );
    } else {
        tracing::warn!(
            slots = gained.len(),
            warmed,
            stale_keys_dropped = dropped,
            "failover: took over slots of a failed node (its plain keys are lost; STM summaries warmed from the rows)"
        );
    }
}

/// What woke the follower.
enum Event {
    Stop,
    Beat,
    Reload,
    Warmed,
    Manual,
    Lost(sqlx::Error),
}

async fn listen(coordinator: &Coordinator) -> Option<PgListener> {
    let mut listener = PgListener::connect_with(coordinator.pool()).await.ok()?;
    listener.listen(CHANNEL).await.ok()?;
    Some(listener)
}
