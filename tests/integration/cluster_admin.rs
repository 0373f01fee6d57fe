//! CLUSTER's administration subcommands (ADDSLOTS … LINKS) on three real `stmd` nodes
//! (127.0.0.2/3/4) and a throwaway Postgres: each change is the cluster's (seen on the other
//! nodes), keys are never left behind by a slot leaving its node, and the error texts are a real
//! `redis-server --cluster-enabled yes`'s where the two can be compared. Skipped, loudly, without
//! PostgreSQL or redis-cli (unless STMD_REQUIRE_POSTGRES=1, as in `.ci/run`).

use crate::common;

use common::cluster::{cluster_prerequisites, eventually, free_port, Node, RealRedisCluster};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use stmd::cluster::key_slot;

/// Long enough that no failover happens during the test.
const NODE_TIMEOUT_MS: u64 = 60_000;

/// A key whose slot is `slot`'s neighbourhood: the first `prefix<i>` in `range`.
fn key_in(range: std::ops::RangeInclusive<u16>, prefix: &str) -> String {
    (0..100_000)
        .map(|i| format!("{prefix}{i}"))
        .find(|k| range.contains(&key_slot(k.as_bytes())))
        .expect("a key in range")
}

fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    eventually(what, Duration::from_secs(10), &mut check);
}

#[test]
fn cluster_admin_subcommands_change_the_shared_configuration() {
    let Some(pg) = cluster_prerequisites() else {
        return;
    };
    let started = Instant::now();
    let url = pg.url();
    let ips = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
    let nodes: Vec<Node> = ips
        .iter()
        .map(|ip| Node::start(ip, free_port(ip), &url, NODE_TIMEOUT_MS))
        .collect();
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    let ids: Vec<String> = nodes.iter().map(|n| n.cli(&["CLUSTER", "MYID"])).collect();
    let (a_id, b_id, c_id) = (&ids[0], &ids[1], &ids[2]);
    for node in &nodes {
        wait_for("every node to know the three", || {
            node.cli(&["CLUSTER", "NODES"]).lines().count() == 3
        });
    }
    let redis = RealRedisCluster::start(1);
    let redis_id = redis.cli(&["CLUSTER", "MYID"]);

    // Slot assignment: each node takes half, and every node sees it.
    assert_eq!(a.cli(&["CLUSTER", "ADDSLOTSRANGE", "0", "8191"]), "OK");
    assert_eq!(redis.cli(&["CLUSTER", "ADDSLOTSRANGE", "0", "8191"]), "OK");
    assert_eq!(b.cli(&["CLUSTER", "ADDSLOTSRANGE", "8192", "16383"]), "OK");
    assert!(
        b.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"),
        "the node that asked follows the change before it answers"
    );
    for node in &nodes {
        wait_for("every node to see all slots assigned", || {
            node.cli(&["CLUSTER", "INFO"])
                .contains("cluster_slots_assigned:16384")
        });
    }
    let slots = c.cli(&["CLUSTER", "SLOTS"]);
    assert!(slots.contains(&a.port.to_string()) && slots.contains(&b.port.to_string()));

    // Redis's error texts, compared with redis-server's (same slots 0-8191 on both).
    let same: Vec<Vec<&str>> = vec![
        vec!["CLUSTER", "ADDSLOTS", "5"],
        vec!["CLUSTER", "ADDSLOTS", "99999"],
        vec!["CLUSTER", "ADDSLOTS", "x"],
        vec!["CLUSTER", "ADDSLOTS"],
        vec!["CLUSTER", "DELSLOTS", "1", "1"],
        vec!["CLUSTER", "ADDSLOTSRANGE", "10", "5"],
        vec!["CLUSTER", "ADDSLOTSRANGE", "10"],
        vec!["CLUSTER", "ADDSLOTSRANGE", "-1", "5"],
        vec!["CLUSTER", "ADDSLOTSRANGE", "1", "2", "3"],
        vec!["CLUSTER", "DELSLOTSRANGE", "1", "1", "1", "2"],
        vec!["CLUSTER", "SETSLOT", "7", "STABLE"],
        vec!["CLUSTER", "SETSLOT", "7", "foo"],
        vec!["CLUSTER", "SETSLOT", "7"],
        vec!["CLUSTER", "SETSLOT", "99999", "STABLE"],
        vec!["CLUSTER", "SETSLOT", "7", "NODE", "abc"],
        vec!["CLUSTER", "SETSLOT", "7", "NODE", "abc", "x"],
        vec!["CLUSTER", "MEET", "1.2.3.x", "7000"],
        vec!["CLUSTER", "MEET", "127.0.0.1", "99999"],
        vec!["CLUSTER", "MEET", "127.0.0.1", "abc"],
        vec!["CLUSTER", "MEET", "127.0.0.1", "7000", "x"],
        vec!["CLUSTER", "MEET", "127.0.0.1"],
        vec!["CLUSTER", "FORGET", "abc"],
        vec!["CLUSTER", "REPLICATE", "abc"],
        vec!["CLUSTER", "RESET", "foo"],
        vec!["CLUSTER", "RESET", "HARD", "x"],
        vec!["CLUSTER", "SET-CONFIG-EPOCH", "-1"],
        vec!["CLUSTER", "SET-CONFIG-EPOCH", "x"],
        vec!["CLUSTER", "COUNT-FAILURE-REPORTS", "abc"],
        vec!["CLUSTER", "BUMPEPOCH", "x"],
        vec!["CLUSTER", "SAVECONFIG"],
        vec!["CLUSTER", "FLUSHSLOTS", "x"],
    ];
    for args in &same {
        assert_eq!(a.cli(args), redis.cli(args), "{args:?}");
    }
    for (stmd_id, redis_id) in [(a_id, &redis_id)] {
        for sub in ["FORGET", "REPLICATE"] {
            assert_eq!(
                a.cli(&["CLUSTER", sub, stmd_id]),
                redis.cli(&["CLUSTER", sub, redis_id]),
                "{sub} myself"
            );
        }
        assert_eq!(
            a.cli(&["CLUSTER", "COUNT-FAILURE-REPORTS", stmd_id]),
            redis.cli(&["CLUSTER", "COUNT-FAILURE-REPORTS", redis_id])
        );
    }
    // COMMAND INFO of every new subcommand as redis-server's.
    for sub in [
        "addslots",
        "addslotsrange",
        "bumpepoch",
        "count-failure-reports",
        "delslots",
        "delslotsrange",
        "flushslots",
        "forget",
        "links",
        "meet",
        "replicate",
        "reset",
        "saveconfig",
        "set-config-epoch",
        "setslot",
    ] {
        let name = format!("cluster|{sub}");
        assert_eq!(
            a.cli(&["COMMAND", "INFO", &name]),
            redis.cli(&["COMMAND", "INFO", &name]),
            "{name}"
        );
    }
    let help = a.cli(&["CLUSTER", "HELP"]);
    for line in [
        "ADDSLOTSRANGE <start slot>",
        "SETSLOT <slot>",
        "LINKS",
        "FORGET <node-id>",
    ] {
        assert!(help.contains(line), "{line} in {help}");
    }
    assert_eq!(a.cli(&["CLUSTER", "LINKS"]), "");
    // Inside MULTI/EXEC a configuration change is refused (EXEC holds the keyspace it scans).
    let mut multi = Command::new("redis-cli")
        .args(["-h", a.ip, "-p", &a.port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    std::io::Write::write_all(
        multi.stdin.as_mut().expect("stdin"),
        b"MULTI\nCLUSTER ADDSLOTS 1\nCLUSTER SAVECONFIG\nEXEC\n",
    )
    .expect("write");
    drop(multi.stdin.take());
    let exec = multi.wait_with_output().expect("redis-cli");
    let exec = String::from_utf8_lossy(&exec.stdout);
    assert!(
        exec.contains("ERR CLUSTER ADDSLOTS cannot run inside MULTI/EXEC") && exec.contains("OK"),
        "{exec}"
    );
    assert_eq!(a.cli(&["CLUSTER", "SAVECONFIG"]), "OK");
    // So is it from a script, which holds the keyspace the same way.
    let script = "return redis.call('CLUSTER', 'BUMPEPOCH')";
    let refused = a.cli(&["EVAL", script, "0"]);
    assert!(
        refused.contains("CLUSTER BUMPEPOCH cannot run inside MULTI/EXEC or a script"),
        "{refused}"
    );
    drop(redis);

    // A slot with keys never leaves its node through these subcommands.
    let key = key_in(0..=99, "kept");
    let slot = key_slot(key.as_bytes()).to_string();
    assert_eq!(a.cli(&["SET", &key, "v"]), "OK");
    let refused = b.cli(&["CLUSTER", "DELSLOTS", &slot]);
    assert!(
        refused.starts_with(&format!("ERR Slot {slot} still holds keys on node {a_id}"))
            && refused.contains("stmd cluster move-slots"),
        "{refused}"
    );
    assert_eq!(
        a.cli(&["CLUSTER", "SETSLOT", &slot, "NODE", b_id]),
        format!("ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot. (stmd cluster move-slots moves it with its keys)")
    );
    assert!(b
        .cli(&["CLUSTER", "SETSLOT", &slot, "NODE", b_id])
        .contains(&format!("while node {a_id} still holds keys")));
    assert!(a
        .cli(&["CLUSTER", "DELSLOTSRANGE", "0", "99"])
        .starts_with(&format!("ERR Slot {slot} still holds keys")));
    assert_eq!(
        a.cli(&["CLUSTER", "FLUSHSLOTS"]),
        "ERR DB must be empty to perform CLUSTER FLUSHSLOTS."
    );
    assert_eq!(
        a.cli(&["CLUSTER", "RESET"]),
        "ERR CLUSTER RESET can't be called with master nodes containing keys"
    );
    assert_eq!(b.cli_c(&["GET", &key]), "v");
    assert!(c.cli(&["CLUSTER", "NODES"]).contains(" 0-8191"));

    // Keyless slots move: deleted on A, seen unassigned on C; SETSLOT NODE gives one to B.
    assert_eq!(a.cli(&["CLUSTER", "DELSLOTSRANGE", "100", "199"]), "OK");
    assert_eq!(
        a.cli(&["CLUSTER", "DELSLOTS", "150"]),
        "ERR Slot 150 is already unassigned"
    );
    wait_for("C to see 100-199 unassigned", || {
        c.cli(&["CLUSTER", "INFO"])
            .contains("cluster_slots_assigned:16284")
    });
    assert_eq!(a.cli(&["CLUSTER", "SETSLOT", "150", "NODE", b_id]), "OK");
    assert_eq!(a.cli(&["CLUSTER", "SETSLOT", "150", "NODE", b_id]), "OK");
    wait_for("C to see slot 150 on B", || {
        c.cli(&["CLUSTER", "NODES"])
            .lines()
            .any(|l| l.starts_with(b_id.as_str()) && l.contains(" 150 "))
    });
    assert_eq!(
        a.cli(&["CLUSTER", "ADDSLOTSRANGE", "100", "149", "151", "199"]),
        "OK"
    );
    assert_eq!(
        a.cli(&["CLUSTER", "ADDSLOTS", "150"]),
        "ERR Slot 150 is already busy"
    );
    // B holds no keys: FLUSHSLOTS gives up its slots, for every node; it takes them back.
    assert_eq!(b.cli(&["DBSIZE"]), "0");
    assert_eq!(b.cli(&["CLUSTER", "FLUSHSLOTS"]), "OK");
    wait_for("A to see B's slots (8192-16383 and 150) unassigned", || {
        a.cli(&["CLUSTER", "INFO"])
            .contains("cluster_slots_assigned:8191")
    });
    assert_eq!(b.cli(&["CLUSTER", "ADDSLOTSRANGE", "8192", "16383"]), "OK");
    assert_eq!(b.cli(&["CLUSTER", "ADDSLOTS", "150"]), "OK");

    // MEET: a registered node is already met; an unknown address is told how nodes join.
    assert_eq!(a.cli(&["CLUSTER", "MEET", b.ip, &b.port.to_string()]), "OK");
    assert!(a
        .cli(&["CLUSTER", "MEET", "127.0.0.9", "1234"])
        .starts_with("ERR no stmd node at 127.0.0.9:1234 is registered"));

    // REPLICATE, FORGET, RESET, COUNT-FAILURE-REPORTS.
    assert_eq!(
        a.cli(&["CLUSTER", "REPLICATE", b_id]),
        "ERR To set a master the node must be empty and without assigned slots."
    );
    assert_eq!(c.cli(&["CLUSTER", "REPLICATE", a_id]), "OK");
    wait_for("A to see C as its replica", || {
        a.cli(&["CLUSTER", "REPLICAS", a_id])
            .contains(c_id.as_str())
    });
    wait_for("C to copy A's key", || c.cli(&["DBSIZE"]) == "1");
    assert_eq!(
        b.cli(&["CLUSTER", "REPLICATE", c_id]),
        "ERR I can only replicate a master, not a replica."
    );
    assert_eq!(
        c.cli(&["CLUSTER", "FORGET", a_id]),
        "ERR Can't forget my master!"
    );
    assert!(b
        .cli(&["CLUSTER", "FORGET", a_id])
        .contains("is the primary of 1 replicas"));
    assert_eq!(b.cli(&["CLUSTER", "COUNT-FAILURE-REPORTS", c_id]), "0");
    assert_eq!(
        c.cli(&["CLUSTER", "FLUSHSLOTS"]),
        "ERR DB must be empty to perform CLUSTER FLUSHSLOTS."
    );
    assert_eq!(c.cli(&["CLUSTER", "RESET", "SOFT"]), "OK");
    assert_eq!(
        c.cli(&["DBSIZE"]),
        "0",
        "a reset replica empties its keyspace"
    );
    wait_for("A to see C as a primary", || {
        a.cli(&["CLUSTER", "NODES"])
            .lines()
            .any(|l| l.starts_with(c_id.as_str()) && l.contains(" master - "))
    });
    assert!(b.cli(&["CLUSTER", "FORGET", a_id]).contains("still owns"));
    // redis-cli --cluster del-node sends FORGET to every other node (the first removes C for
    // all; the others answer OK for a node forgotten within the minute), then RESET SOFT to C.
    let deleted = Command::new("redis-cli")
        .args(["--cluster", "del-node", &b.addr(), c_id])
        .output()
        .expect("redis-cli --cluster del-node");
    assert!(
        deleted.status.success(),
        "{}",
        String::from_utf8_lossy(&deleted.stdout)
    );
    wait_for("A to forget C", || {
        a.cli(&["CLUSTER", "NODES"]).lines().count() == 2
    });
    assert_eq!(b.cli(&["CLUSTER", "FORGET", c_id]), "OK");

    // The epoch: one for every node, never set by hand.
    let epoch = a.info_field("cluster_current_epoch");
    assert_eq!(a.cli(&["CLUSTER", "BUMPEPOCH"]), format!("STILL {epoch}"));
    assert_eq!(
        a.cli(&["CLUSTER", "SET-CONFIG-EPOCH", "5"]),
        "ERR The user can assign a config epoch only when the node does not know any other node."
    );
    assert_eq!(a.cli_c(&["GET", &key]), "v", "no key lost");
    eprintln!("cluster_admin: {:?}", started.elapsed());
}
