//! FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]: a primary hands its role to one
//! of its replicas without losing an acknowledged write (Redis 6.2's coordinated failover).
//!
//! The primary pauses its clients' writes until the target (without TO: any replica) has
//! acknowledged everything the primary produced (`waiting-for-sync`). Then it follows the target (`failover-in-progress`), asking it with
//! `PSYNC <replid> <offset> FAILOVER` to take over; the target, a replica of this history,
//! promotes itself (as REPLICAOF NO ONE) and continues the history (+CONTINUE). The pause ends
//! when the target answered: the writers that waited get READONLY here. A TIMEOUT that passes
//! aborts the failover (writes resume here), unless FORCE: then the primary follows the target
//! anyway. A target that refuses the PSYNC, or ABORT, makes this node a primary again.

use super::replica::{follow, stop_following, Target};
use super::Host;
use crate::protocol::Reply;
use crate::store::pause::PauseMode;
use parking_lot::Mutex;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};

/// How often the primary checks its replicas' acknowledgements while it waits for them.
const CHECK_EVERY: Duration = Duration::from_millis(100);

/// Where a failover is (INFO's `master_failover_state`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    #[default]
    None,
    WaitingForSync,
    InProgress,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::None => "no-failover",
            Phase::WaitingForSync => "waiting-for-sync",
            Phase::InProgress => "failover-in-progress",
        }
    }
}

/// The failover in progress, if any.
#[derive(Default)]
struct Plan {
    phase: Phase,
    /// The replica to hand over to; None until one caught up when FAILOVER named none.
    target: Option<Target>,
    deadline: Option<Instant>,
    force: bool,
}

#[derive(Default)]
pub struct Failover {
    plan: Mutex<Plan>,
    /// Woken when a failover starts.
    started: Notify,
}

impl Failover {
    pub fn phase(&self) -> Phase {
        self.plan.lock().phase
    }

    /// The PSYNC of a link made while handing over was answered: `accepted` (CONTINUE or
    /// FULLRESYNC) ends the failover here, a refusal aborts it.
    pub fn target_answered(&self, host: &impl Host, accepted: bool) {
        if self.phase() != Phase::InProgress {
            return;
        }
        if accepted {
            tracing::info!("FAILOVER done: following the new primary");
            self.finish(host);
        } else {
            self.abort(host, "the failover target rejected the PSYNC request");
        }
    }

    /// Back to no failover; client writes resume (here they get READONLY if the hand-over was
    /// made).
    fn finish(&self, host: &impl Host) {
        *self.plan.lock() = Plan::default();
        host.store().pause.unpause();
    }

    /// Ends the failover; after the hand-over started, this node is a primary again.
    fn abort(&self, host: &impl Host, why: &str) {
        tracing::warn!(why, "FAILOVER aborted");
        if self.phase() == Phase::InProgress {
            stop_following(host);
        }
        self.finish(host);
    }
}

/// Redis's texts.
const IN_PROGRESS: &str = "ERR FAILOVER already in progress.";
const NOT_ON_A_REPLICA: &str = "ERR FAILOVER is not valid when server is a replica.";
const NO_REPLICAS: &str = "ERR FAILOVER requires connected replicas.";
const FORCE_NEEDS: &str =
    "ERR FAILOVER with force option requires both a timeout and target HOST and IP.";

/// FAILOVER's arguments, parsed by the command.
#[derive(Default)]
pub struct Request {
    pub to: Option<Target>,
    pub timeout_ms: Option<i64>,
    pub force: bool,
    pub abort: bool,
}

impl Failover {
    /// FAILOVER: starts the failover `request` asks for, or aborts the one under way (ABORT).
    pub fn request(&self, host: &impl Host, request: Request) -> Result<(), Reply> {
        let failover = self;
        if request.abort {
            if failover.phase() == Phase::None {
                return Err(Reply::error("ERR No failover in progress."));
            }
            failover.abort(host, "FAILOVER ABORT");
            return Ok(());
        }
        let mut plan = failover.plan.lock();
        if plan.phase != Phase::None {
            return Err(Reply::error(IN_PROGRESS));
        }
        if host.replication().replica.following() {
            return Err(Reply::error(NOT_ON_A_REPLICA));
        }
        let replicas = host.replication().master.replicas();
        if replicas.is_empty() {
            return Err(Reply::error(NO_REPLICAS));
        }
        if request.force && (request.timeout_ms.is_none() || request.to.is_none()) {
            return Err(Reply::error(FORCE_NEEDS));
        }
        if let Some(to) = &request.to {
            let Some(replica) = replicas
                .iter()
                .find(|r| r.ip == to.host && r.port == to.port)
            else {
                return Err(Reply::error(
                    "ERR FAILOVER target HOST and PORT is not a replica.",
                ));
            };
            if !replica.online() {
                return Err(Reply::error("ERR FAILOVER target replica is not online."));
            }
        }
        tracing::info!(target = ?request.to, "FAILOVER requested");
        *plan = Plan {
            phase: Phase::WaitingForSync,
            target: request.to,
            deadline: request
                .timeout_ms
                .map(|ms| Instant::now() + Duration::from_millis(ms as u64)),
            force: request.force,
        };
        drop(plan);
        // Until the failover ends: ten years is "no end" for an Instant.
        let forever = Instant::now() + Duration::from_secs(10 * 365 * 24 * 3600);
        host.store().pause.pause(forever, PauseMode::Write);
        failover.started.notify_one();
        Ok(())
    }
}

/// The failover driver, one task per server: waits for FAILOVER, then for a replica to catch up
/// (or the timeout), then hands over, and aborts a hand-over still unanswered at the timeout
/// (without TIMEOUT it waits for the target or ABORT); until `stop`.
pub async fn run(host: Arc<impl Host>, mut stop: watch::Receiver<bool>) {
    let host = &*host;
    let failover = &host.replication().failover;
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = failover.started.notified() => {}
        }
        loop {
            match failover.phase() {
                Phase::None => break,
                Phase::WaitingForSync => {
                    if let Some(target) = caught_up_or_abandoned(host) {
                        hand_over(host, target);
                    }
                }
                // The target never answered the hand-over's PSYNC in time: primary again.
                Phase::InProgress => {
                    if failover
                        .plan
                        .lock()
                        .deadline
                        .is_some_and(|at| at <= Instant::now())
                    {
                        failover.abort(host, "the failover target did not answer in time");
                    }
                }
            }
            tokio::select! {
                _ = stop.changed() => return,
                _ = tokio::time::sleep(CHECK_EVERY) => {}
            }
        }
    }
}

/// While waiting for sync: the replica to hand over to once it acknowledged everything (or the
/// timeout passed with FORCE); aborts when the timeout passed without FORCE. As in Redis, no
/// `REPLCONF GETACK` is sent meanwhile (it would move the offset the replicas must reach): the
/// replicas' own acknowledgements, every second, tell.
fn caught_up_or_abandoned(host: &impl Host) -> Option<Target> {
    let failover = &host.replication().failover;
    let plan = failover.plan.lock();
    if plan.phase != Phase::WaitingForSync {
        return None;
    }
    let produced = host.replication().feed.end();
    let caught_up = host.replication().master.replicas().into_iter().find(|r| {
        let chosen = plan
            .target
            .as_ref()
            .is_none_or(|t| t.host == r.ip && t.port == r.port);
        chosen && r.online() && r.acked.load(Relaxed) >= produced
    });
    if let Some(replica) = caught_up {
        return Some(Target {
            host: replica.ip.clone(),
            port: replica.port,
        });
    }
    if plan.deadline.is_some_and(|at| at <= Instant::now()) {
        if plan.force {
            return plan.target.clone();
        }
        drop(plan);
        failover.abort(host, "the replica did not catch up before the timeout");
        return None;
    }
    None
}

/// Follows `target`, continuing this node's history there: the link's PSYNC carries FAILOVER.
fn hand_over(host: &impl Host, target: Target) {
    {
        let mut plan = host.replication().failover.plan.lock();
        plan.phase = Phase::InProgress;
        plan.target = Some(target.clone());
    }
    tracing::info!(host = %target.host, port = target.port, "FAILOVER: the target is in sync, handing over");
    follow(host, target.host, target.port, true);
}

/// The target's side: `PSYNC <replid> <offset> FAILOVER` from its primary promotes it, when the
/// history is its own (Redis's texts otherwise).
pub fn take_over(host: &impl Host, replid: &[u8]) -> Result<(), Reply> {
    if !host.replication().replica.following() {
        return Err(Reply::error(
            "ERR PSYNC FAILOVER can't be sent to a master.",
        ));
    }
    if replid != host.replication().replid.lock().as_bytes() {
        return Err(Reply::error(
            "ERR PSYNC FAILOVER replid must match my replid.",
        ));
    }
    tracing::info!("MASTER MODE enabled (failover request from the primary)");
    stop_following(host);
    Ok(())
}
