//! Moving slots with their keys: real `stmd` nodes on 127.0.0.2/3/4 and a throwaway
//! Postgres; `stmd cluster move-slots` runs while several redis-rs clients write (following
//! MOVED), and every acknowledged write must be on the new owner afterwards, with TTLs, STM
//! entries and blocked clients right. Skipped, loudly, without PostgreSQL or redis-cli (unless
//! STMD_REQUIRE_POSTGRES=1, as in `.ci/run`).

use crate::common;

use common::cluster::{admin, cluster_prerequisites, eventually, free_port, text, Node};
use common::stm::capture_args;
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use stmd::cluster::key_slot;

/// Long enough that no failover happens while a node is down on purpose.
const NODE_TIMEOUT_MS: u64 = 120_000;

/// The slots moved under load (all on the first node after `create`).
const MOVED: std::ops::RangeInclusive<u16> = 0..=299;

/// `count` keys (with `prefix`) whose slots lie in `range`.
fn keys_in(range: std::ops::RangeInclusive<u16>, prefix: &str, count: usize) -> Vec<String> {
    (0..1_000_000)
        .map(|i| format!("{prefix}{i}"))
        .filter(|k| range.contains(&key_slot(k.as_bytes())))
        .take(count)
        .collect()
}

/// A client that follows MOVED, as cluster clients do: one connection per node, by address.
struct Follower {
    conns: HashMap<String, MultiplexedConnection>,
    first: String,
}

impl Follower {
    fn new(first: &str) -> Follower {
        Follower {
            conns: HashMap::new(),
            first: first.to_string(),
        }
    }

    async fn run(&mut self, args: &[&str]) -> redis::RedisResult<redis::Value> {
        let mut addr = self.first.clone();
        for _ in 0..16 {
            if !self.conns.contains_key(&addr) {
                let client = redis::Client::open(format!("redis://{addr}/"))?;
                let config = redis::AsyncConnectionConfig::new()
                    .set_response_timeout(Some(Duration::from_secs(30)));
                let con = client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                self.conns.insert(addr.clone(), con);
            }
            let con = self.conns.get_mut(&addr).expect("connected");
            let mut command = redis::cmd(args[0]);
            for arg in &args[1..] {
                command.arg(*arg);
            }
            match command.query_async::<redis::Value>(con).await {
                Err(err) if err.code() == Some("MOVED") => {
                    let (node, _slot) = err.redirect_node().expect("a MOVED names a node");
                    addr = node.to_string();
                }
                other => return other,
            }
        }
        panic!("more than 16 redirections for {args:?}");
    }
}

fn start_cluster(url: &str, count: usize) -> Vec<Node> {
    let ips = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
    let nodes: Vec<Node> = ips[..count]
        .iter()
        .map(|ip| Node::start(ip, free_port(ip), url, NODE_TIMEOUT_MS))
        .collect();
    let names = nodes.iter().map(Node::addr).collect::<Vec<_>>().join(",");
    let created = admin(url, &["create", "--nodes", &names]);
    assert!(created.status.success(), "{}", text(&created));
    for node in &nodes {
        eventually(
            "every node to follow epoch 1",
            Duration::from_secs(20),
            || {
                node.cli(&["CLUSTER", "INFO"])
                    .contains("cluster_current_epoch:1")
            },
        );
    }
    nodes
}

/// The pause figures of a move-slots report: (max ms, median ms).
fn pauses(report: &str) -> (f64, f64) {
    let number = |after: &str| -> f64 {
        let at = report
            .find(after)
            .unwrap_or_else(|| panic!("{after} in {report}"))
            + after.len();
        report[at..]
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a number after {after} in {report}"))
    };
    (number("pause per batch: max "), number(", median "))
}

#[test]
fn slots_move_with_their_keys_under_write_load() {
    let Some(pg) = cluster_prerequisites() else {
        return;
    };
    let url = pg.url();
    let nodes = start_cluster(&url, 2);
    let (source, target) = (&nodes[0], &nodes[1]);

    // Keys with and without a TTL, and an STM capture, in the slots about to move.
    let still = keys_in(MOVED, "still", 400);
    for (i, key) in still.iter().enumerate() {
        let reply = match i % 2 {
            0 => source.cli(&["SET", key, &format!("v{i}")]),
            _ => source.cli(&["SET", key, &format!("v{i}"), "PX", "600000"]),
        };
        assert_eq!(reply, "OK");
    }
    let channel = keys_in(MOVED, "chan", 1).remove(0);
    let capture = capture_args(
        "u9",
        &channel,
        "DM",
        "-",
        "-",
        "remember the moved slot",
        "noted",
    );
    assert!(source.cli(&capture).contains(&channel));
    let summary = [
        "STM.SUMMARY",
        "USER",
        "u9",
        "CHANNEL",
        &channel,
        "SERVER",
        "DM",
        "TEXT",
        "summary of the moved channel",
    ];
    let said = source.cli(&summary);
    assert!(!said.starts_with("ERR"), "{said}");
    let user_key = format!("shortterm:user:u9:{{{channel}}}");

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    // A client blocked on a key of a moved slot.
    let list = keys_in(MOVED, "list", 1).remove(0);
    let blocked = {
        let addr = source.addr();
        let list = list.clone();
        runtime.spawn(async move {
            let client = redis::Client::open(format!("redis://{addr}/")).expect("client");
            let mut con = client
                .get_multiplexed_async_connection_with_config(
                    &redis::AsyncConnectionConfig::new().set_response_timeout(None),
                )
                .await
                .expect("connect");
            redis::cmd("BLPOP")
                .arg(&list)
                .arg(0)
                .query_async::<redis::Value>(&mut con)
                .await
        })
    };
    eventually("the BLPOP to block", Duration::from_secs(10), || {
        source
            .cli(&["INFO", "clients"])
            .contains("blocked_clients:1")
    });

    // Writers: each owns its keys (half in the moving slots), writes increasing values and keeps
    // the last acknowledged one.
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let mut keys = keys_in(MOVED, &format!("w{w}m"), 20);
            keys.extend(keys_in(1000..=16383, &format!("w{w}o"), 5));
            let stop = stop.clone();
            let first = source.addr();
            runtime.spawn(async move {
                let mut client = Follower::new(&first);
                let mut acked: HashMap<String, u64> = HashMap::new();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) || n < 200 {
                    n += 1;
                    let key = &keys[n as usize % keys.len()];
                    let value = n.to_string();
                    client
                        .run(&["SET", key, &value])
                        .await
                        .unwrap_or_else(|e| panic!("SET {key}: {e}"));
                    acked.insert(key.clone(), n);
                }
                acked
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(300));
    let range = format!("{}-{}", MOVED.start(), MOVED.end());
    let moved = admin(
        &url,
        &["move-slots", "--slots", &range, "--to", &target.addr()],
    );
    let report = text(&moved);
    assert!(moved.status.success(), "{report}");
    assert!(report.contains("moved 300 slots (0-299)"), "{report}");
    let (max_ms, median_ms) = pauses(&report);
    eprintln!("move-slots under load: {report}");
    eprintln!("pause per batch: max {max_ms} ms, median {median_ms} ms");
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<HashMap<String, u64>> = writers
        .into_iter()
        .map(|w| runtime.block_on(w).expect("writer"))
        .collect();

    // Every acknowledged write is on its slot's owner; the moved ones on the new owner itself.
    for (key, value) in acked.iter().flatten() {
        let read = match MOVED.contains(&key_slot(key.as_bytes())) {
            true => target.cli(&["GET", key]),
            false => source.cli_c(&["GET", key]),
        };
        assert_eq!(read, value.to_string(), "{key}");
    }
    for (i, key) in still.iter().enumerate() {
        assert_eq!(target.cli(&["GET", key]), format!("v{i}"), "{key}");
        let ttl: i64 = target.cli(&["PTTL", key]).parse().expect("a TTL");
        match i % 2 {
            0 => assert_eq!(ttl, -1, "{key} had no TTL"),
            _ => assert!(ttl > 500_000 && ttl <= 600_000, "{key}: PTTL {ttl}"),
        }
    }
    // The old owner holds none of the moved keys any more and redirects to the new one.
    for slot in MOVED {
        assert_eq!(
            source.cli(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]),
            "0",
            "slot {slot}"
        );
    }
    let slot = key_slot(still[0].as_bytes());
    assert_eq!(
        source.cli(&["GET", &still[0]]),
        format!("MOVED {slot} {}", target.addr())
    );
    // STM: the entry moved, indexed on the new owner (STM.CONTEXT reads it through the index).
    assert!(target
        .cli(&["STM.GET", &user_key])
        .contains("remember the moved slot"));
    // Another channel of the user reads it through the owner index: on the new owner (a channel
    // in the moved slots); no more in the old one's index (its `CLUSTER PEER … STM.CONTEXT`
    // answer, this node's entries only, from a channel it still owns), though STM.CONTEXT received
    // there, being owner-wide, gets it once from the new owner.
    let others = |node: &Node, range: std::ops::RangeInclusive<u16>, head: &[&str]| {
        let other = keys_in(range, "other", 1).remove(0);
        let tail = ["USER", "u9", "CHANNEL", &other, "SERVER", "DM"];
        node.cli(&[head, &tail[..]].concat())
    };
    let moved = "summary of the moved channel";
    let context = others(target, MOVED, &["STM.CONTEXT"]);
    assert_eq!(context.matches(moved).count(), 1, "{context}");
    let context = others(source, 1000..=8000, &["STM.CONTEXT"]);
    assert_eq!(context.matches(moved).count(), 1, "{context}");
    let source_id = source.cli(&["CLUSTER", "MYID"]);
    let head = ["CLUSTER", "PEER", &source_id, "STM.CONTEXT"];
    let own = others(source, 1000..=8000, &head);
    assert!(!own.contains(moved) && !own.starts_with("ERR"), "{own}");
    // The blocked client was redirected, as Redis does.
    let answer = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(20), blocked).await })
        .expect("the BLPOP to be answered")
        .expect("task");
    let err = answer.expect_err("a MOVED error");
    assert_eq!(err.code(), Some("MOVED"), "{err}");
    let target_addr = target.addr();
    assert_eq!(
        err.redirect_node(),
        Some((target_addr.as_str(), key_slot(list.as_bytes()))),
        "{err}"
    );
    // INFO shows the pause; the source counted what it handed over.
    assert!(source.info_count("cluster_keys_migrated_out") >= 400);
    assert_eq!(source.info_count("cluster_slots_migrated_out"), 300);
    assert_eq!(source.info_count("cluster_migrations_done"), 1);
    let max_info: f64 = source
        .info_field("cluster_migration_pause_max_ms")
        .parse()
        .expect("a pause");
    assert!(max_info > 0.0);
    drop(pg);
}

#[test]
fn a_move_to_a_dead_target_leaves_keys_and_map_on_the_source() {
    let Some(pg) = cluster_prerequisites() else {
        return;
    };
    let url = pg.url();
    let mut nodes = start_cluster(&url, 3);
    let keys = keys_in(0..=99, "stay", 50);
    for key in &keys {
        assert_eq!(nodes[0].cli(&["SET", key, key, "EX", "1000"]), "OK");
    }
    // The target dies before the move: its connection fails before any flip.
    nodes[2].kill_9();
    let failed = admin(
        &url,
        &["move-slots", "--slots", "0-99", "--to", &nodes[2].addr()],
    );
    let report = text(&failed);
    assert!(!failed.status.success(), "{report}");
    assert!(report.contains("cannot connect to the target"), "{report}");
    assert!(report.contains("stay on the source"), "{report}");
    // The map is unchanged (epoch 1, slot 0 still the first node's) and the keys are served.
    let status = text(&admin(&url, &["status"]));
    assert!(status.starts_with("epoch 1,"), "{status}");
    assert!(nodes[0]
        .cli(&["CLUSTER", "INFO"])
        .contains("cluster_current_epoch:1"));
    for key in &keys {
        assert_eq!(nodes[0].cli(&["GET", key]), *key);
        let ttl: i64 = nodes[0].cli(&["TTL", key]).parse().expect("a TTL");
        assert!(ttl > 900, "{key}: TTL {ttl}");
    }
    assert_eq!(nodes[0].info_count("cluster_migrations_failed"), 1);
    // An unknown target is refused before anything is asked of a node.
    let wrong = admin(&url, &["move-slots", "--slots", "0", "--to", "127.0.0.9:1"]);
    assert!(!wrong.status.success());
    drop(pg);
}
