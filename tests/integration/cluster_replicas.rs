//! Cluster replicas: real `stmd` nodes on 127.0.0.2-5 and a throwaway Postgres. Two primaries
//! with one replica each (`stmd cluster create --replicas 1`): the replicas follow their primaries,
//! serve READONLY reads and redirect the rest; a primary killed with `kill -9` is replaced by its
//! replica with every key that had reached it, and comes back as the new primary's replica. Then a
//! manual CLUSTER FAILOVER swaps a primary and its replica while a client writes. Skipped, loudly,
//! without PostgreSQL or redis-cli (unless STMD_REQUIRE_POSTGRES=1, as in `.ci/run`).

use crate::common;

use common::cluster::{
    admin, cluster_prerequisites, eventually, free_port, python_with_redis_py, text, Node,
};
use common::stm::capture_args;
use std::time::{Duration, Instant};
use stmd::cluster::key_slot;

/// `--cluster-node-timeout` of these nodes, in ms: short, so a failover takes seconds.
const NODE_TIMEOUT_MS: u64 = 1500;

/// A field of INFO replication.
fn repl(node: &Node, field: &str) -> String {
    let text = node.cli(&["INFO", "replication"]);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// `cmdstat_<name>`'s calls on a node (0 when it never ran).
fn calls(node: &Node, name: &str) -> u64 {
    let text = node.cli(&["INFO", "commandstats"]);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// redis-py's `RedisCluster(read_from_replicas=True)` reads the keys back, some of them from the
/// replicas (which it puts in READONLY mode). Needs a Python with redis-py: STMD_CLUSTER_PYTHON
/// (`.ci/run` sets it, and then it must work) or the conformance venv; skipped, loudly, without.
fn read_from_replicas_with_redis_py(nodes: &[Node]) {
    let Some(python) = python_with_redis_py("the read_from_replicas check") else {
        return;
    };
    let before: u64 = nodes[2..].iter().map(|n| calls(n, "get")).sum();
    let script = "import sys\n\
from redis.cluster import RedisCluster\n\
host, port = sys.argv[1].split(':')\n\
rc = RedisCluster(host=host, port=int(port), read_from_replicas=True, decode_responses=True)\n\
assert all(rc.get(f'rk:{i}') == str(i) for i in range(200))\n\
rc.close()\n";
    let output = std::process::Command::new(&python)
        .args(["-c", script, &nodes[0].addr()])
        .output()
        .expect("run python");
    assert!(output.status.success(), "{}", text(&output));
    let after: u64 = nodes[2..].iter().map(|n| calls(n, "get")).sum();
    assert!(
        after > before,
        "no GET reached a replica ({before} -> {after})"
    );
    assert!(nodes[2..].iter().all(|n| calls(n, "readonly") > 0));
}

fn connect(node: &Node) -> redis::Connection {
    redis::Client::open(format!("redis://{}/", node.addr()))
        .expect("client")
        .get_connection()
        .expect("connect")
}

/// A command's reply, or its error as text (`MOVED 12182 127.0.0.2:7000`).
fn query(con: &mut redis::Connection, args: &[&str]) -> Result<redis::Value, String> {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query::<redis::Value>(con).map_err(|e| {
        // redis-rs splits a redirection into kind and detail; put Redis's text back together.
        match (e.code(), e.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            _ => e.to_string(),
        }
    })
}

fn get(con: &mut redis::Connection, key: &str) -> Result<Option<String>, String> {
    match query(con, &["GET", key])? {
        redis::Value::Nil => Ok(None),
        redis::Value::BulkString(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        other => Err(format!("unexpected {other:?}")),
    }
}

/// Two primaries and two replicas, created by `stmd cluster create --replicas 1`: nodes[0] and
/// nodes[1] own 0-8191 and 8192-16383, nodes[2] replicates nodes[0], nodes[3] nodes[1].
fn four_nodes(url: &str) -> Vec<Node> {
    let nodes: Vec<Node> = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
        .into_iter()
        .map(|ip| Node::start(ip, free_port(ip), url, NODE_TIMEOUT_MS))
        .collect();
    let names = nodes.iter().map(Node::addr).collect::<Vec<_>>().join(",");
    let created = admin(url, &["create", "--nodes", &names, "--replicas", "1"]);
    assert!(created.status.success(), "{}", text(&created));
    let said = text(&created);
    assert!(said.contains("slots 0-8191 (8192)"), "{said}");
    assert!(
        said.contains(&format!("{} replica of", nodes[2].addr())),
        "{said}"
    );
    for node in &nodes {
        eventually("every node on the map", Duration::from_secs(10), || {
            node.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok")
        });
    }
    for replica in &nodes[2..] {
        eventually("the replicas' links up", Duration::from_secs(15), || {
            repl(replica, "master_link_status") == "up"
        });
    }
    nodes
}

#[test]
fn replicas_follow_serve_readonly_reads_and_take_over_with_the_keys() {
    let Some(pg) = cluster_prerequisites() else {
        return;
    };
    let url = pg.url();
    let mut nodes = four_nodes(&url);
    let ids: Vec<String> = nodes.iter().map(|n| n.cli(&["CLUSTER", "MYID"])).collect();
    let status = text(&admin(&url, &["status"]));
    assert!(
        status.contains(&format!("{} {} heartbeat", ids[3], nodes[3].addr()))
            && status.contains(&format!("replica of {}", ids[1])),
        "{status}"
    );

    // 1,000 keys through the redis-rs cluster client (it follows the slot map).
    let urls: Vec<String> = nodes[..2]
        .iter()
        .map(|n| format!("redis://{}/", n.addr()))
        .collect();
    let client = redis::cluster::ClusterClient::new(urls).expect("cluster client");
    let mut cluster = client.get_connection().expect("cluster connection");
    let keys: Vec<String> = (0..1000).map(|i| format!("rk:{i}")).collect();
    for (i, key) in keys.iter().enumerate() {
        let () = redis::cmd("SET")
            .arg(key)
            .arg(i)
            .query(&mut cluster)
            .expect("SET");
    }
    drop(cluster);
    // Everything acknowledged has reached the replica: WAIT 1 on each primary.
    for primary in &nodes[..2] {
        assert_eq!(primary.cli(&["WAIT", "1", "2000"]), "1");
    }
    let (low, high): (Vec<&String>, Vec<&String>) =
        keys.iter().partition(|k| key_slot(k.as_bytes()) <= 8191);
    assert!(low.len() > 400 && high.len() > 400);

    // The replica: MOVED for a write, and for a read without READONLY; READONLY serves reads of
    // its primary's slots (not of the other shard's); READWRITE undoes it.
    let mut replica = connect(&nodes[2]);
    let moved = format!("MOVED {} {}", key_slot(low[0].as_bytes()), nodes[0].addr());
    assert_eq!(get(&mut replica, low[0]), Err(moved.clone()));
    assert_eq!(
        query(&mut replica, &["SET", low[0], "x"]),
        Err(moved.clone())
    );
    assert_eq!(query(&mut replica, &["READONLY"]), Ok(redis::Value::Okay));
    for (i, key) in keys.iter().enumerate() {
        if key_slot(key.as_bytes()) <= 8191 {
            assert_eq!(get(&mut replica, key), Ok(Some(i.to_string())), "{key}");
        }
    }
    assert_eq!(
        query(&mut replica, &["SET", low[0], "x"]),
        Err(moved.clone())
    );
    let other = format!("MOVED {} {}", key_slot(high[0].as_bytes()), nodes[1].addr());
    assert_eq!(get(&mut replica, high[0]), Err(other));
    assert_eq!(query(&mut replica, &["READWRITE"]), Ok(redis::Value::Okay));
    assert_eq!(get(&mut replica, low[0]), Err(moved));
    drop(replica);

    read_from_replicas_with_redis_py(&nodes);

    // Topology as Redis shows it.
    let lines = nodes[1].cli(&["CLUSTER", "NODES"]);
    let line_of = |text: &str, id: &str| {
        text.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line_of(&lines, &ids[2]).starts_with(&format!(
            "{} {}@0 slave {} 0 ",
            ids[2],
            nodes[2].addr(),
            ids[0]
        )),
        "{lines}"
    );
    assert!(line_of(&lines, &ids[2]).ends_with(" connected"), "{lines}");
    assert!(
        line_of(&lines, &ids[0]).contains(" master - 0 ")
            && line_of(&lines, &ids[0]).ends_with(" connected 0-8191"),
        "{lines}"
    );
    let mine = nodes[3].cli(&["CLUSTER", "NODES"]);
    assert!(
        line_of(&mine, &ids[3]).contains(&format!(" myself,slave {} ", ids[1])),
        "{mine}"
    );
    let replicas = nodes[0].cli(&["CLUSTER", "REPLICAS", &ids[1]]);
    assert_eq!(replicas.lines().count(), 1, "{replicas}");
    assert!(replicas.starts_with(&format!(
        "{} {}@0 slave {}",
        ids[3],
        nodes[3].addr(),
        ids[1]
    )));
    assert_eq!(
        nodes[0].cli(&["CLUSTER", "SLAVES", &ids[3]]),
        "ERR The specified node is not a master"
    );
    assert_eq!(
        nodes[0].cli(&["CLUSTER", "REPLICAS", "nosuchnode"]),
        "ERR Unknown node nosuchnode"
    );
    assert_eq!(nodes[2].cli(&["CLUSTER", "MYSHARDID"]), ids[0]);
    // CLUSTER SLOTS: each range with its primary, then its replica (each entry ends with an empty
    // map of other endpoints: redis-cli prints an empty line).
    let slots = nodes[0].cli(&["CLUSTER", "SLOTS"]);
    let want = format!(
        "0\n8191\n127.0.0.2\n{}\n{}\n\n127.0.0.4\n{}\n{}\n\n8192\n16383\n127.0.0.3\n{}\n{}\n\n127.0.0.5\n{}\n{}",
        nodes[0].port, ids[0], nodes[2].port, ids[2], nodes[1].port, ids[1], nodes[3].port, ids[3]
    );
    assert_eq!(slots, want);
    // CLUSTER SHARDS: two shards, each its primary then its replica.
    // (The replica's offset is the one of its last heartbeat: wait for one after the writes.)
    let mut shards = String::new();
    eventually(
        "the replica's offset in a heartbeat",
        Duration::from_secs(5),
        || {
            shards = nodes[0].cli(&["CLUSTER", "SHARDS"]);
            !shards.contains("replication-offset\n0\n")
        },
    );
    let flat: Vec<&str> = shards.lines().collect();
    assert_eq!(
        flat.iter().filter(|l| **l == "nodes").count(),
        2,
        "{shards}"
    );
    assert_eq!(
        flat.iter().filter(|l| **l == "replica").count(),
        2,
        "{shards}"
    );
    assert_eq!(
        flat.iter().filter(|l| **l == "master").count(),
        2,
        "{shards}"
    );
    let at = flat
        .iter()
        .position(|l| *l == ids[2])
        .expect("the replica's entry");
    assert_eq!(
        &flat[at + 1..at + 12],
        &[
            "port",
            &nodes[2].port.to_string(),
            "ip",
            "127.0.0.4",
            "endpoint",
            "127.0.0.4",
            "role",
            "replica",
            "replication-offset",
            flat[at + 10],
            "health",
        ]
    );
    assert!(
        flat[at + 10].parse::<u64>().is_ok_and(|o| o > 0),
        "{shards}"
    );
    assert_eq!(flat[at + 12], "online");
    let info = nodes[0].cli(&["CLUSTER", "INFO"]);
    assert!(
        info.contains("cluster_known_nodes:4") && info.contains("cluster_size:2"),
        "{info}"
    );
    // INFO replication on both sides.
    assert_eq!(repl(&nodes[2], "role"), "slave");
    assert_eq!(repl(&nodes[2], "master_host"), "127.0.0.2");
    assert_eq!(repl(&nodes[2], "master_port"), nodes[0].port.to_string());
    assert_eq!(repl(&nodes[0], "connected_slaves"), "1");

    // STM: a capture on the primary reaches the replica by the stream; only the primary writes
    // the scope rows.
    let channel = (0..10_000)
        .map(|i| format!("rc{i}"))
        .find(|c| key_slot(c.as_bytes()) <= 8191)
        .expect("a channel of the first shard");
    let capture = capture_args("u1", &channel, "DM", "-", "-", "hello", "hi");
    assert!(nodes[1].cli_c(&capture).contains("shortterm:user:u1"));
    assert_eq!(nodes[0].cli(&["WAIT", "1", "2000"]), "1");
    eventually("the primary's row", Duration::from_secs(10), || {
        nodes[0].info_count("stm_persist_written") > 0
    });
    assert_eq!(nodes[2].info_count("stm_persist_written"), 0);
    let stm_key = format!("shortterm:user:u1:{{{channel}}}");
    let mut replica = connect(&nodes[2]);
    assert_eq!(query(&mut replica, &["READONLY"]), Ok(redis::Value::Okay));
    eventually("the capture on the replica", Duration::from_secs(5), || {
        format!("{:?}", query(&mut replica, &["STM.GET", &stm_key])).contains("hello")
    });
    drop(replica);

    // kill -9 the first primary (after a SAVE: it restarts with those keys, which must give way
    // to the promoted node's): its replica takes its slots with the keys.
    assert_eq!(nodes[0].cli(&["SAVE"]), "OK");
    // A client writes to the primary without WAIT until the kill: what a failover loses is what
    // it acknowledged and the replica had not yet applied (the replication lag).
    let lag_keys: Vec<String> = (0..200_000)
        .map(|i| format!("lag:{i}"))
        .filter(|k| key_slot(k.as_bytes()) <= 8191)
        .collect();
    let mut writer_con = connect(&nodes[0]);
    let writer = std::thread::spawn(move || {
        let mut acknowledged = Vec::new();
        for key in lag_keys {
            match redis::cmd("SET")
                .arg(&key)
                .arg("v")
                .query::<()>(&mut writer_con)
            {
                Ok(()) => acknowledged.push(key),
                Err(_) => break,
            }
        }
        acknowledged
    });
    std::thread::sleep(Duration::from_millis(500));
    nodes[0].kill_9();
    let killed = Instant::now();
    let acknowledged = writer.join().expect("writer");
    let limit = Duration::from_millis(NODE_TIMEOUT_MS) + Duration::from_secs(6);
    eventually("the replica to own the dead primary's slots", limit, || {
        nodes[2].info_field("cluster_my_slots") == "8192"
    });
    let took = killed.elapsed();
    eprintln!(
        "failover with a replica: its slots served by the promoted replica {took:?} after kill -9 (node timeout {NODE_TIMEOUT_MS} ms)"
    );
    assert_eq!(repl(&nodes[2], "role"), "master");
    let mut promoted = connect(&nodes[2]);
    let mut lost = 0;
    for (i, key) in keys.iter().enumerate() {
        if key_slot(key.as_bytes()) <= 8191 && get(&mut promoted, key) != Ok(Some(i.to_string())) {
            lost += 1;
        }
    }
    eprintln!(
        "failover with a replica: {lost} of {} keys written with WAIT 1 lost",
        low.len()
    );
    assert_eq!(lost, 0);
    let lag_lost = acknowledged
        .iter()
        .filter(|key| get(&mut promoted, key) != Ok(Some("v".to_string())))
        .count();
    eprintln!(
        "failover with a replica: {lag_lost} of {} writes acknowledged without WAIT lost (the replication lag at the kill)",
        acknowledged.len()
    );
    assert!(acknowledged.len() > 100, "{}", acknowledged.len());
    // Every write but the last few the stream had not delivered yet.
    assert!(lag_lost < acknowledged.len() / 2, "{lag_lost}");
    assert_eq!(
        nodes[2].info_count("cluster_takeover_stale_keys_dropped"),
        0
    );
    // The promoted node accepts writes; the other nodes show it as a primary.
    assert_eq!(
        query(&mut promoted, &["SET", low[0], "after"]),
        Ok(redis::Value::Okay)
    );
    assert_eq!(
        query(&mut promoted, &["DEL", low[1]]),
        Ok(redis::Value::Int(1))
    );
    let lines = nodes[1].cli(&["CLUSTER", "NODES"]);
    assert!(
        line_of(&lines, &ids[2]).contains(" master - ")
            && line_of(&lines, &ids[2]).ends_with(" 0-8191"),
        "{lines}"
    );
    assert!(
        line_of(&lines, &ids[0]).contains(&format!(" slave,fail? {} ", ids[2])),
        "{lines}"
    );
    let shards = nodes[1].cli(&["CLUSTER", "SHARDS"]);
    let flat: Vec<&str> = shards.lines().collect();
    let at = flat
        .iter()
        .position(|l| *l == ids[2])
        .expect("the promoted entry");
    assert_eq!(flat[at + 8], "master", "{shards}");
    // STM summaries of the shard come back as before, merged without clobbering.
    assert!(nodes[2].cli(&["STM.GET", &stm_key]).contains("hello"));

    // The dead primary restarted: a replica of the promoted node, synced in full from it.
    nodes[0].spawn();
    eventually(
        "the old primary to follow the promoted one",
        Duration::from_secs(15),
        || {
            repl(&nodes[0], "master_port") == nodes[2].port.to_string()
                && repl(&nodes[0], "master_link_status") == "up"
        },
    );
    assert_eq!(nodes[0].info_field("cluster_my_slots"), "0");
    assert_eq!(nodes[2].cli(&["WAIT", "1", "2000"]), "1");
    let mut back = connect(&nodes[0]);
    assert_eq!(query(&mut back, &["READONLY"]), Ok(redis::Value::Okay));
    for (i, key) in keys.iter().enumerate() {
        if key_slot(key.as_bytes()) <= 8191 {
            let want = if key == low[0] {
                Some("after".to_string())
            } else if key == low[1] {
                None
            } else {
                Some(i.to_string())
            };
            assert_eq!(get(&mut back, key), Ok(want), "{key}");
        }
    }
    // Its plain keys are exactly the promoted node's; the STM entry is not (a full sync carries
    // no STM entries, as a snapshot does not: docs/replication.md).
    let dbsize = |n: &Node| n.cli(&["DBSIZE"]).parse::<usize>().expect("DBSIZE");
    assert_eq!(dbsize(&nodes[0]) + 1, dbsize(&nodes[2]));
}

#[test]
fn cluster_failover_swaps_a_primary_and_its_replica_while_a_client_writes() {
    let Some(pg) = cluster_prerequisites() else {
        return;
    };
    let url = pg.url();
    let nodes: Vec<Node> = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
        .into_iter()
        .map(|ip| Node::start(ip, free_port(ip), &url, NODE_TIMEOUT_MS))
        .collect();
    let (a, b, c) = (nodes[0].addr(), nodes[1].addr(), nodes[2].addr());
    let created = admin(&url, &["create", "--nodes", &format!("{a},{b}")]);
    assert!(created.status.success(), "{}", text(&created));
    // The admin tool's refusals.
    let refused = admin(&url, &["replicate", &a, "--of", &b]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("owns 8192 slots"),
        "{}",
        text(&refused)
    );
    let done = admin(&url, &["replicate", &c, "--of", &a]);
    assert!(done.status.success(), "{}", text(&done));
    assert!(
        text(&done).contains("is now a replica of"),
        "{}",
        text(&done)
    );
    let refused = admin(&url, &["replicate", &b, "--of", &c]);
    assert!(
        text(&refused).contains("owns 8192 slots"),
        "{}",
        text(&refused)
    );
    let refused = admin(&url, &["move-slots", "--slots", "0", "--to", &c]);
    assert!(
        text(&refused).contains("is a replica"),
        "{}",
        text(&refused)
    );
    let refused = admin(&url, &["remove-node", &a]);
    assert!(
        text(&refused).contains("is the primary of 1 replicas"),
        "{}",
        text(&refused)
    );
    eventually("the replica's link up", Duration::from_secs(15), || {
        repl(&nodes[2], "master_link_status") == "up"
    });

    assert_eq!(
        nodes[0].cli(&["CLUSTER", "FAILOVER"]),
        "ERR You should send CLUSTER FAILOVER to a replica"
    );
    assert_eq!(
        nodes[2].cli(&["CLUSTER", "FAILOVER", "SOFTLY"]),
        "ERR syntax error"
    );

    // A client writes to a's slots, following MOVED, while the failover runs: every write it got
    // OK for must be on the new primary.
    let key_in_a = |i: usize| {
        (i * 1000..)
            .map(|j| format!("fk:{j}"))
            .find(|k| key_slot(k.as_bytes()) <= 8191)
            .expect("a key of a")
    };
    let writer_url = format!("redis://{a}/");
    let writer = std::thread::spawn(move || {
        let client = redis::cluster::ClusterClient::new(vec![writer_url]).expect("client");
        let mut con = client.get_connection().expect("connect");
        let mut acknowledged = Vec::new();
        let started = Instant::now();
        let mut i = 0;
        while started.elapsed() < Duration::from_secs(4) {
            let key = key_in_a(i);
            if redis::cmd("SET")
                .arg(&key)
                .arg(i)
                .query::<()>(&mut con)
                .is_ok()
            {
                acknowledged.push((key, i));
            }
            i += 1;
        }
        acknowledged
    });
    std::thread::sleep(Duration::from_millis(500));
    let asked = Instant::now();
    assert_eq!(nodes[2].cli(&["CLUSTER", "FAILOVER"]), "OK");
    eventually(
        "the replica to take the slots",
        Duration::from_secs(10),
        || nodes[2].info_field("cluster_my_slots") == "8192",
    );
    eprintln!(
        "CLUSTER FAILOVER: slots swapped {:?} after the command",
        asked.elapsed()
    );
    let acknowledged = writer.join().expect("writer");
    assert!(acknowledged.len() > 50, "{}", acknowledged.len());
    let mut new_primary = connect(&nodes[2]);
    let missing: Vec<&(String, usize)> = acknowledged
        .iter()
        .filter(|(key, i)| get(&mut new_primary, key) != Ok(Some(i.to_string())))
        .collect();
    eprintln!(
        "CLUSTER FAILOVER: {} acknowledged writes, {} missing on the new primary",
        acknowledged.len(),
        missing.len()
    );
    assert!(missing.is_empty(), "{missing:?}");
    eventually(
        "the old primary to follow the new one",
        Duration::from_secs(15),
        || {
            repl(&nodes[0], "master_port") == nodes[2].port.to_string()
                && repl(&nodes[0], "master_link_status") == "up"
        },
    );
    assert_eq!(nodes[0].info_field("cluster_my_slots"), "0");

    // FORCE swaps back at once.
    assert_eq!(nodes[0].cli(&["CLUSTER", "FAILOVER", "FORCE"]), "OK");
    eventually("the FORCE swap", Duration::from_secs(10), || {
        nodes[0].info_field("cluster_my_slots") == "8192"
            && repl(&nodes[2], "master_port") == nodes[0].port.to_string()
    });
}
