//! Cluster mode, phase 1: three real `stmd` processes on 127.0.0.2/3/4 and a throwaway
//! Postgres as the coordinator, driven by the `stmd cluster` admin tool, `redis-cli -c` and
//! `redis-cli --cluster check`. Skipped, loudly, without PostgreSQL or redis-cli (unless
//! STMD_REQUIRE_POSTGRES=1, as in `.ci/run`).

use crate::common;

use common::cluster::{
    admin, cluster_prerequisites, eventually, free_port, python_with_redis_py, text, Node,
    RealRedisCluster,
};
use common::stm::capture_args;
use std::process::{Command, Stdio};
use std::time::Duration;
use stmd::cluster::key_slot;

/// A key with the given slot owner range, other than `not`.
fn key_in(range: std::ops::RangeInclusive<u16>, prefix: &str, not: Option<u16>) -> String {
    (0..100_000)
        .map(|i| format!("{prefix}{i}"))
        .find(|k| {
            let slot = key_slot(k.as_bytes());
            range.contains(&slot) && Some(slot) != not
        })
        .expect("a key in range")
}

#[test]
fn cluster_enabled_without_postgres_is_a_start_up_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_stmd"))
        .args(["--port", "0", "--cluster-enabled", "yes", "--dir"])
        .arg(dir.path())
        .output()
        .expect("run stmd");
    assert!(!output.status.success());
    assert!(
        text(&output).contains("--cluster-enabled yes needs --database-url postgres://"),
        "{}",
        text(&output)
    );
    let output = admin("sqlite::memory:", &["status"]);
    assert!(!output.status.success());
    assert!(text(&output).contains("cluster mode needs --database-url postgres://"));
}

#[test]
fn three_nodes_serve_route_and_follow_the_configuration() {
    let Some(pg) = cluster_prerequisites() else {
        return;
    };
    let url = pg.url();
    let mut nodes = [
        Node::start("127.0.0.2", free_port("127.0.0.2"), &url, 3000),
        Node::start("127.0.0.3", free_port("127.0.0.3"), &url, 3000),
        Node::start("127.0.0.4", free_port("127.0.0.4"), &url, 3000),
    ];

    // Before a configuration gives it slots, a node serves no key.
    assert_eq!(
        nodes[0].cli(&["SET", "foo", "bar"]),
        "CLUSTERDOWN Hash slot not served"
    );
    assert!(nodes[0]
        .cli(&["CLUSTER", "INFO"])
        .contains("cluster_state:fail"));
    assert_eq!(
        nodes[0].cli(&["PING"]),
        "PONG",
        "keyless commands still run"
    );
    assert_eq!(nodes[0].info_field("cluster_enabled"), "1");

    // Bad requests change nothing and say why.
    let bad = admin(&url, &["create", "--nodes", "127.0.0.9:1"]);
    assert!(!bad.status.success());
    assert!(
        text(&bad).contains("no registered node '127.0.0.9:1'"),
        "{}",
        text(&bad)
    );

    let names = nodes.iter().map(Node::addr).collect::<Vec<_>>().join(",");
    let created = admin(&url, &["create", "--nodes", &names]);
    assert!(created.status.success(), "{}", text(&created));
    assert!(
        text(&created).contains("epoch 0 -> 1"),
        "{}",
        text(&created)
    );
    assert!(text(&created).contains("slots 10923-16383 (5461)"));
    for node in &nodes {
        eventually(
            "every node to follow epoch 1",
            Duration::from_secs(10),
            || node.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"),
        );
    }
    let again = admin(&url, &["create"]);
    assert!(!again.status.success());
    assert!(text(&again).contains("already has a configuration"));

    // redis-cli's own cluster checker parses CLUSTER NODES and agrees.
    let check = Command::new("redis-cli")
        .args(["--cluster", "check", &nodes[0].addr()])
        .output()
        .expect("redis-cli --cluster check");
    let report = text(&check);
    assert!(check.status.success(), "{report}");
    assert!(
        report.contains("[OK] All nodes agree about slots configuration."),
        "{report}"
    );
    assert!(report.contains("[OK] All 16384 slots covered."), "{report}");

    // The replies' shapes and texts against a real 3-node redis-server cluster.
    let redis = RealRedisCluster::joined(3);
    let shapes = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/conformance/diff/cluster_shapes.py"
        ))
        .args(["--stmd", &nodes[0].addr(), "--redis", &redis.addr()])
        .output()
        .expect("run cluster_shapes.py");
    assert!(shapes.status.success(), "{}", text(&shapes));
    assert!(text(&shapes).contains("cluster shapes: 0 differences"));
    drop(redis);

    // Clients follow MOVED: every node reads what any node wrote.
    for i in 0..20 {
        let key = format!("key:{i}");
        assert_eq!(nodes[i % 3].cli_c(&["SET", &key, &i.to_string()]), "OK");
        assert_eq!(nodes[(i + 1) % 3].cli_c(&["GET", &key]), i.to_string());
    }
    // foo is slot 12182: the third node's.
    assert_eq!(
        nodes[0].cli(&["GET", "foo"]),
        format!("MOVED 12182 {}", nodes[2].addr())
    );
    assert_ne!(nodes[0].info_field("cluster_moved_redirections"), "0");

    // MIGRATE sends RESTORE-ASKING in cluster mode: the target takes a key of a slot it does not
    // own (as during a slot move) where a plain RESTORE is redirected; the key is gone here.
    let moving = key_in(0..=5460, "migrate", None);
    assert_eq!(nodes[0].cli(&["SET", &moving, "v"]), "OK");
    let held = nodes[2].cli(&["DBSIZE"]);
    let port = nodes[2].port.to_string();
    let request = ["MIGRATE", nodes[2].ip, &port, &moving, "0", "2000"];
    assert_eq!(nodes[0].cli(&request), "OK");
    assert_eq!(nodes[0].cli(&["EXISTS", &moving]), "0");
    assert!(nodes[2]
        .cli(&["RESTORE", &moving, "0", "x"])
        .starts_with("MOVED"));
    let output = pipe(&nodes[2], &format!("ASKING\nDEL {moving}\n"));
    assert_eq!(output, "OK\n1\n", "the copy was there");
    assert_eq!(nodes[2].cli(&["DBSIZE"]), held);
    assert_eq!(
        nodes[0].cli(&["MSET", "a", "1", "b", "2"]),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
    assert_eq!(
        nodes[0].cli(&["SELECT", "1"]),
        "ERR SELECT is not allowed in cluster mode"
    );
    assert_eq!(nodes[0].cli(&["SELECT", "0"]), "OK");
    assert_eq!(nodes[0].cli(&["READONLY"]), "OK");
    assert_eq!(nodes[0].cli(&["CLUSTER", "KEYSLOT", "foo"]), "12182");
    assert_eq!(
        nodes[0].cli(&["CLUSTER", "MYID"]).len(),
        40,
        "a node id is 40 hex characters"
    );

    // A transaction stays within one slot: two slots of the same node are refused at EXEC.
    let one = key_in(0..=5460, "tx", None);
    let other = key_in(0..=5460, "tx", Some(key_slot(one.as_bytes())));
    let script = format!("MULTI\nSET {one} 1\nSET {other} 2\nEXEC\nGET {one}\n");
    let output = pipe(&nodes[0], &script);
    assert!(
        output.contains("CROSSSLOT Keys in request don't hash to the same slot"),
        "{output}"
    );
    assert_eq!(nodes[0].cli(&["EXISTS", &one]), "0", "nothing of it ran");
    let script = format!("MULTI\nSET {{{one}}}a 1\nSET {{{one}}}b 2\nEXEC\n");
    assert!(pipe(&nodes[0], &script).contains("OK\nOK"));
    let slot = key_slot(one.as_bytes()).to_string();
    assert_eq!(nodes[0].cli(&["CLUSTER", "COUNTKEYSINSLOT", &slot]), "2");
    assert_eq!(
        nodes[0]
            .cli(&["CLUSTER", "GETKEYSINSLOT", &slot, "1"])
            .lines()
            .count(),
        1
    );

    // A script stays within its declared keys' slot, unless it allows cross-slot keys.
    let (a, b) = (&one, &other);
    let refused = nodes[0].cli(&["EVAL", &format!("return redis.call('get', '{b}')"), "1", a]);
    assert!(
        refused
            .starts_with("ERR Script attempted to access keys that do not hash to the same slot"),
        "{refused}"
    );
    let allowed = format!("#!lua flags=allow-cross-slot-keys\nreturn redis.call('get', '{b}')");
    assert_eq!(nodes[0].cli(&["EVAL", &allowed, "1", a]), "");

    // STM: the channel is the hash tag, so a capture touches one slot and routes by its channel.
    let capture = capture_args("u1", "c1", "s1", "-", "-", "hello", "hi there");
    let keys = nodes[0].cli_c(&capture);
    assert!(keys.contains("shortterm:user:u1:{c1}"), "{keys}");
    assert!(keys.contains("shortterm:server:s1:{c1}"), "{keys}");
    assert_eq!(
        nodes[1].cli(&[
            "COMMAND",
            "GETKEYS",
            "STM.CAPTURE",
            "USER",
            "u1",
            "CHANNEL",
            "c1",
            "SERVER",
            "s1"
        ]),
        "c1",
        "the routing key hashes like every key of the channel"
    );
    assert!(nodes[1]
        .cli_c(&["STM.GET", "shortterm:user:u1:{c1}"])
        .contains("hi there"));
    let braced = nodes[0].cli_c(&capture_args("u{1}", "c1", "s1", "-", "-", "hi", "hi"));
    assert_eq!(
        braced, "ERR invalid user id",
        "a brace would move the hash tag"
    );
    assert!(
        nodes[0]
            .cli(&["STM.RECENT", "USER", "u1"])
            .contains("hi there"),
        "owner-wide: answered from every node (tests/cluster_fanout.rs)"
    );

    // move-slots: ownership flips, every node follows, clients follow MOVED to the new owner.
    let bad = admin(
        &url,
        &["move-slots", "--slots", "99999", "--to", &nodes[0].addr()],
    );
    assert!(!bad.status.success());
    assert!(
        text(&bad).contains("invalid slot '99999'"),
        "{}",
        text(&bad)
    );
    let bad = admin(&url, &["move-slots", "--slots", "1", "--to", "127.0.0.9:9"]);
    assert!(!bad.status.success());
    let moved = admin(
        &url,
        &["move-slots", "--slots", "12182", "--to", &nodes[0].addr()],
    );
    assert!(moved.status.success(), "{}", text(&moved));
    assert!(text(&moved).contains("epoch 1 -> 2"), "{}", text(&moved));
    eventually("the old owner to redirect", Duration::from_secs(10), || {
        nodes[2].cli(&["GET", "foo"]) == format!("MOVED 12182 {}", nodes[0].addr())
    });
    assert_eq!(nodes[2].cli_c(&["SET", "foo", "moved"]), "OK");
    assert_eq!(nodes[0].cli(&["GET", "foo"]), "moved");
    let status = text(&admin(&url, &["status"]));
    assert!(
        status.contains("epoch 2, 16384/16384 slots assigned (ok), 3 nodes"),
        "{status}"
    );

    // redis-py's RedisCluster routes plain and STM commands by itself.
    run_redis_py(&nodes[0]);

    // remove-node refuses a node that owns slots.
    let refused = admin(&url, &["remove-node", &nodes[1].addr()]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("still owns 5462 slots"),
        "{}",
        text(&refused)
    );

    // Summaries of two nodes' channels reach the shared rows; a restarted node restores only the
    // rows of its own slots. STM.CONTEXT spans the nodes: the restored entry of its own slot, and
    // the other node's entry from that node, each once.
    let ca = key_in(5461..=10922, "ca", None);
    let cb = key_in(10923..=16383, "cb", Some(12182));
    let cc = key_in(5461..=10922, "cc", Some(key_slot(ca.as_bytes())));
    for (channel, node) in [(&ca, &nodes[1]), (&cb, &nodes[2])] {
        let written = |node: &Node| -> u64 {
            let count = node.info_field("stm_persist_written");
            count.parse().expect("a count")
        };
        // Rows written before: the wait below is for this summary's own row.
        let before = written(node);
        let text = format!("summary of {channel}");
        let args = [
            "STM.SUMMARY",
            "USER",
            "u3",
            "CHANNEL",
            channel,
            "SERVER",
            "DM",
            "TEXT",
            &text,
        ];
        assert_eq!(
            nodes[0].cli_c(&args),
            format!("shortterm:user:u3:{{{channel}}}")
        );
        eventually("the summary's row", Duration::from_secs(10), || {
            written(node) > before && node.info_field("stm_persist_queue_depth") == "0"
        });
    }

    // A restarted node keeps its id, and with it its slots.
    let id = nodes[1].cli(&["CLUSTER", "MYID"]);
    nodes[1].stop();
    nodes[1].spawn();
    assert_eq!(nodes[1].cli(&["CLUSTER", "MYID"]), id);
    assert_eq!(nodes[1].info_field("cluster_my_slots"), "5462");
    let restored: u64 = nodes[1]
        .info_field("stm_persist_restored")
        .parse()
        .expect("a count");
    assert!(restored >= 1, "its channel's row was restored: {restored}");
    let count_in = |channel: &str| {
        let slot = key_slot(channel.as_bytes()).to_string();
        nodes[1].cli(&["CLUSTER", "COUNTKEYSINSLOT", &slot])
    };
    assert_eq!(count_in(&ca), "1", "the row of its own slot");
    assert_eq!(count_in(&cb), "0", "no row of another node's slot");
    let context = nodes[1].cli(&["STM.CONTEXT", "USER", "u3", "CHANNEL", &cc, "SERVER", "DM"]);
    assert_eq!(
        context.matches(&format!("summary of {ca}")).count(),
        1,
        "{context}"
    );
    assert_eq!(
        context.matches(&format!("summary of {cb}")).count(),
        1,
        "{context}"
    );
    let slots = nodes[0].cli(&["CLUSTER", "SLOTS"]);
    assert!(slots.contains(&id), "{slots}");
    drop(pg);
}

/// Several commands on one connection (redis-cli reads them from stdin), output as one text.
fn pipe(node: &Node, script: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("redis-cli")
        .args(["-h", node.ip, "-p", &node.port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("write");
    let output = child.wait_with_output().expect("redis-cli output");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// conformance/python/cluster_client.py with a Python that has redis-py (skipped, loudly, without
/// one unless STMD_CLUSTER_PYTHON names it).
fn run_redis_py(node: &Node) {
    let Some(python) = python_with_redis_py("the RedisCluster check") else {
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(&python)
        .arg(root.join("conformance/python/cluster_client.py"))
        .arg(node.addr())
        .output()
        .expect("run cluster_client.py");
    assert!(output.status.success(), "{}", text(&output));
}
