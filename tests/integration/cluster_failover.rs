//! Cluster failover: three real `stmd` nodes on 127.0.0.2/3/4 and a throwaway
//! Postgres; one node is killed with `kill -9`, the live ones reassign its slots through Postgres,
//! warm its STM summaries from the rows, and clients following MOVED read them back. Skipped,
//! loudly, without PostgreSQL or redis-cli (unless STMD_REQUIRE_POSTGRES=1, as in `.ci/run`).

use crate::common;

use common::cluster::{cluster_prerequisites, eventually, free_port, Node};
use common::postgres::PgCluster;
use common::stm::capture_args;
use std::process::Command;
use std::time::{Duration, Instant};
use stmd::cluster::key_slot;

/// `--cluster-node-timeout` of these nodes, in ms: short, so a failover takes seconds.
const NODE_TIMEOUT_MS: u64 = 2000;

/// `count` channel names whose slots lie in `range`.
fn channels_in(range: std::ops::RangeInclusive<u16>, prefix: &str, count: usize) -> Vec<String> {
    (0..100_000)
        .map(|i| format!("{prefix}{i}"))
        .filter(|c| range.contains(&key_slot(c.as_bytes())))
        .take(count)
        .collect()
}

fn cluster_check(node: &Node) -> (bool, String) {
    let out = Command::new("redis-cli")
        .args(["--cluster", "check", &node.addr()])
        .output()
        .expect("run redis-cli --cluster check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn summary_args<'a>(channel: &'a str, text: &'a str) -> [&'a str; 9] {
    [
        "STM.SUMMARY",
        "USER",
        "u1",
        "CHANNEL",
        channel,
        "SERVER",
        "DM",
        "TEXT",
        text,
    ]
}

#[test]
fn a_killed_nodes_slots_are_taken_over_and_its_summaries_come_back() {
    let Some(pg) = cluster_prerequisites() else {
        return;
    };
    let url = pg.url();
    let mut nodes = vec![
        Node::start("127.0.0.2", free_port("127.0.0.2"), &url, NODE_TIMEOUT_MS),
        Node::start("127.0.0.3", free_port("127.0.0.3"), &url, NODE_TIMEOUT_MS),
        Node::start("127.0.0.4", free_port("127.0.0.4"), &url, NODE_TIMEOUT_MS),
    ];
    let names = nodes.iter().map(Node::addr).collect::<Vec<_>>().join(",");
    let created = Command::new(env!("CARGO_BIN_EXE_stmd"))
        .args([
            "cluster",
            "create",
            "--nodes",
            &names,
            "--database-url",
            &url,
        ])
        .output()
        .expect("run stmd cluster create");
    assert!(created.status.success(), "{created:?}");
    for node in &nodes {
        eventually(
            "every node to follow epoch 1",
            Duration::from_secs(10),
            || node.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"),
        );
    }
    let victim_id = nodes[1].cli(&["CLUSTER", "MYID"]);
    assert_eq!(nodes[1].info_field("cluster_my_slots"), "5462");

    // Captures and summaries on every node, through any node (clients follow MOVED).
    let mut all = Vec::new();
    for (i, range, count) in [
        (0, 0..=5460, 4),
        (1, 5461..=10922, 12),
        (2, 10923..=16383, 4),
    ] {
        for channel in channels_in(range, &format!("n{i}c"), count) {
            all.push((i, channel));
        }
    }
    for (_, channel) in &all {
        let capture = capture_args("u1", channel, "DM", "-", "-", "hello", "hi");
        assert!(nodes[2].cli_c(&capture).contains("shortterm:user:u1"));
        let text = format!("draft of {channel}");
        assert_eq!(
            nodes[0].cli_c(&summary_args(channel, &text)),
            format!("shortterm:user:u1:{{{channel}}}")
        );
    }
    let plain = channels_in(5461..=10922, "plain", 1).remove(0);
    assert_eq!(nodes[0].cli_c(&["SET", &plain, "v"]), "OK");
    assert_eq!(nodes[1].cli(&["GET", &plain]), "v");
    // Acknowledged and written: the victim's scope rows are in Postgres before the kill (the
    // bound of what a kill loses is what its writer had not yet written).
    eventually("the victim's rows", Duration::from_secs(10), || {
        nodes[1].info_count("stm_persist_written") > 0
            && nodes[1].info_field("stm_persist_queue_depth") == "0"
    });
    // An empty queue can still mean a batch in flight: give its commit a moment.
    std::thread::sleep(Duration::from_millis(300));

    // A fourth node, owning nothing, starts now: its start-up warm restores only the rows of its
    // own slots, so none. Then the summaries change: a takeover must serve the rows' newer state.
    nodes.push(Node::start(
        "127.0.0.2",
        free_port("127.0.0.2"),
        &url,
        NODE_TIMEOUT_MS,
    ));
    eventually(
        "the fourth node's warm start",
        Duration::from_secs(10),
        || nodes[3].info_field("stm_persist_restore_done") == "1",
    );
    assert_eq!(nodes[3].info_count("stm_persist_restored"), 0);
    assert_eq!(nodes[3].info_field("cluster_my_slots"), "0");
    let written = nodes[1].info_count("stm_persist_written");
    for (_, channel) in &all {
        let text = format!("summary of {channel}");
        assert_eq!(
            nodes[3].cli_c(&summary_args(channel, &text)),
            format!("shortterm:user:u1:{{{channel}}}")
        );
    }
    eventually("the victim's new rows", Duration::from_secs(10), || {
        nodes[1].info_count("stm_persist_written") > written
            && nodes[1].info_field("stm_persist_queue_depth") == "0"
    });
    std::thread::sleep(Duration::from_millis(300));

    nodes[1].kill_9();
    let killed = Instant::now();
    let limit = Duration::from_millis(NODE_TIMEOUT_MS) + Duration::from_secs(5);
    for survivor in [&nodes[0], &nodes[2], &nodes[3]] {
        let own_id = survivor.cli(&["CLUSTER", "MYID"]);
        eventually("the victim's slots to be reassigned", limit, || {
            let map = survivor.cli(&["CLUSTER", "SLOTS"]);
            !map.contains(&victim_id) && map.contains(&own_id)
        });
    }
    let took = killed.elapsed();
    eprintln!(
        "failover: slots reassigned {took:?} after kill -9 (node timeout {NODE_TIMEOUT_MS} ms)"
    );
    assert!(took <= limit, "{took:?}");
    let mine = |n: &Node| n.info_count("cluster_my_slots");
    let live = [&nodes[0], &nodes[2], &nodes[3]];
    eventually(
        "the survivors on the new map",
        Duration::from_secs(5),
        || live.iter().map(|n| mine(n)).sum::<u64>() == 16384,
    );
    // 5462 slots over three live nodes in address order (127.0.0.2:7510, :7511, 127.0.0.4).
    assert_eq!(mine(&nodes[0]), 5461 + 1821);
    assert_eq!(mine(&nodes[3]), 1821);
    assert_eq!(mine(&nodes[2]), 5461 + 1820);
    let sum = |field: &str| live.iter().map(|n| n.info_count(field)).sum::<u64>();
    // Exactly one node changed the map (the configuration row's lock), once.
    assert_eq!(sum("cluster_failovers_performed"), 1);
    assert_eq!(sum("cluster_slots_taken_over"), 5462);
    let epoch = nodes[0].info_field("cluster_current_epoch");
    assert_eq!(epoch, "2");
    assert_eq!(nodes[2].info_field("cluster_current_epoch"), epoch);
    assert_eq!(nodes[3].info_field("cluster_current_epoch"), epoch);
    let warmed = sum("cluster_takeover_summaries_warmed");
    assert!(
        warmed >= 12,
        "the victim's 12 summaries were warmed: {warmed}"
    );

    // Every acknowledged summary reads back, the victim's from their new owners.
    for (_, channel) in &all {
        let key = format!("shortterm:user:u1:{{{channel}}}");
        for client in live {
            let entry = client.cli_c(&["STM.GET", &key]);
            assert!(
                entry.contains(&format!("summary of {channel}")) && !entry.contains("draft"),
                "{channel}: {entry}"
            );
        }
    }
    // The victim's plain keys are lost (no replicas); its slots take writes again.
    assert_eq!(nodes[0].cli_c(&["GET", &plain]), "");
    assert_eq!(nodes[2].cli_c(&["SET", &plain, "w"]), "OK");
    assert_eq!(nodes[0].cli_c(&["GET", &plain]), "w");

    // redis-cli's checker accepts the cluster without the dead node.
    let (ok, text) = cluster_check(&nodes[0]);
    assert!(ok, "{text}");
    assert!(text.contains("[OK] All 16384 slots covered."), "{text}");
    assert!(text.contains("3 masters"), "{text}");

    // The dead node comes back with the old epoch in nobody's memory but its own: it learns the
    // new map and owns nothing, answering MOVED for its former slots.
    nodes[1].spawn();
    assert_eq!(nodes[1].cli(&["CLUSTER", "MYID"]), victim_id);
    eventually(
        "the returned node to follow",
        Duration::from_secs(10),
        || nodes[1].info_field("cluster_current_epoch") == epoch,
    );
    assert_eq!(nodes[1].info_field("cluster_my_slots"), "0");
    let moved = nodes[1].cli(&["GET", &plain]);
    assert!(moved.starts_with("MOVED"), "{moved}");
    let (_, channel) = all.iter().find(|(i, _)| *i == 1).expect("a victim channel");
    let key = format!("shortterm:user:u1:{{{channel}}}");
    assert!(nodes[1].cli(&["STM.GET", &key]).starts_with("MOVED"));
    assert!(nodes[1]
        .cli_c(&["STM.GET", &key])
        .contains(&format!("summary of {channel}")));
    // Nothing changed hands on its return: no reclaim, no new epoch.
    std::thread::sleep(Duration::from_millis(NODE_TIMEOUT_MS));
    assert_eq!(nodes[0].info_field("cluster_current_epoch"), epoch);
    assert_eq!(mine(&nodes[1]), 0);
    let (ok, text) = cluster_check(&nodes[1]);
    assert!(ok, "{text}");
    drop(pg);
}

/// The cause of a skipped warm: a dead node restarted right after the failover heartbeats again,
/// so a new owner that reads the new map only then would judge the takeover a plain move by that
/// heartbeat. The failover's record tells it apart. Driven through the coordinator itself against
/// a real Postgres, so the order of the steps is exact.
#[test]
fn a_takeover_is_told_from_a_move_even_when_the_dead_node_is_back() {
    use stmd::cluster::coordinator::Coordinator;
    use stmd::cluster::{taken_over, NodeInfo};
    let Some(pg) = PgCluster::start() else {
        return;
    };
    let url = pg.url();
    const TIMEOUT_MS: u64 = 300;
    let node = |ip: &str, id: char| NodeInfo {
        id: id.to_string().repeat(40),
        ip: ip.to_string(),
        port: 7000,
        heartbeat_age_ms: 0,
        primary: None,
        repl_offset: 0,
    };
    let (a, b, c) = (
        node("127.0.0.2", 'a'),
        node("127.0.0.3", 'b'),
        node("127.0.0.4", 'c'),
    );
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let coordinator = Coordinator::connect(&url).await.expect("connect");
        for n in [&a, &b, &c] {
            coordinator.register(n).await.expect("register");
        }
        let created = common::cluster::admin(&url, &["create"]);
        assert!(created.status.success(), "{created:?}");
        let before = coordinator.load().await.expect("load");
        // c stops heartbeating; a and b go on until c is older than the timeout.
        let started = Instant::now();
        loop {
            for n in [&a, &b] {
                assert!(coordinator.heartbeat(&n.id, 0).await.expect("heartbeat"));
            }
            let map = coordinator.load().await.expect("load");
            if map
                .node(&c.id)
                .is_some_and(|n| n.heartbeat_age_ms > TIMEOUT_MS)
            {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "c never aged");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let done = coordinator
            .fail_over(&a.id, TIMEOUT_MS)
            .await
            .expect("failover")
            .expect("c's slots were reassigned");
        assert_eq!(done.dead, std::slice::from_ref(&c.id));
        // c restarts before b reads the new map: it registers, with a fresh heartbeat.
        coordinator.register(&c).await.expect("c is back");
        let after = coordinator.load().await.expect("load");
        let record = coordinator
            .failed_between(before.epoch, after.epoch)
            .await
            .expect("the failover record");
        assert_eq!(record, std::slice::from_ref(&c.id));
        let gained_by_b = taken_over(&before, &after, &b.id, TIMEOUT_MS, &record);
        assert!(!gained_by_b.is_empty(), "b was given some of c's slots");
        assert!(gained_by_b
            .iter()
            .all(|&slot| before.owner(slot).is_some_and(|n| n.id == c.id)));
        assert!(
            taken_over(&before, &after, &b.id, TIMEOUT_MS, &[]).is_empty(),
            "judged by heartbeats alone, c's return hides the takeover"
        );
        // A later plain move is not a takeover.
        assert!(coordinator
            .failed_between(after.epoch, after.epoch + 1)
            .await
            .expect("no record")
            .is_empty());
        coordinator.close().await;
    });
    drop(pg);
}
