//! Cluster mode with every cluster client docs/cluster.md routes: ioredis `Cluster` and
//! node-redis `createCluster` (conformance/node/cluster.js), the redis-rs cluster client and
//! `redis-cli -c`, each running a standard workload and a bot's STM workload over many channels
//! against three real `stmd` nodes on 127.0.0.2/3/4 and a throwaway Postgres, with no CROSSSLOT
//! error. (redis-py `RedisCluster` and `redis-cli --cluster check` are in tests/cluster_mode.rs.)
//! Skipped, loudly, without PostgreSQL, redis-cli, node or the Node modules, unless
//! STMD_REQUIRE_POSTGRES=1 (as in `.ci/run`), where the Node modules are installed with `npm ci`.

use crate::common;

use common::cluster::{admin, cluster_prerequisites, eventually, free_port, text, Node};
use common::postgres::PgCluster;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Starts three nodes and gives them the slots; `None` when the test is skipped.
fn three_nodes() -> Option<(PgCluster, [Node; 3])> {
    let pg = cluster_prerequisites()?;
    let url = pg.url();
    let nodes = [
        Node::start("127.0.0.2", free_port("127.0.0.2"), &url, 5000),
        Node::start("127.0.0.3", free_port("127.0.0.3"), &url, 5000),
        Node::start("127.0.0.4", free_port("127.0.0.4"), &url, 5000),
    ];
    let names = nodes.iter().map(Node::addr).collect::<Vec<_>>().join(",");
    let created = admin(&url, &["create", "--nodes", &names]);
    assert!(created.status.success(), "{}", text(&created));
    for node in &nodes {
        eventually(
            "every node to follow epoch 1",
            Duration::from_secs(15),
            || node.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"),
        );
    }
    Some((pg, nodes))
}

/// The channels of the STM workloads: enough that every node owns some.
fn channels(prefix: &str) -> Vec<String> {
    (0..24).map(|i| format!("{prefix}{i}")).collect()
}

/// conformance/node has its modules: installed here with `npm ci` when `.ci/run` requires the
/// test (as conformance/run does), else the test is skipped with a message.
fn node_modules_ready(dir: &Path) -> bool {
    let has_node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let installed =
        || dir.join("node_modules/ioredis").is_dir() && dir.join("node_modules/redis").is_dir();
    if has_node && installed() {
        return true;
    }
    if std::env::var("STMD_REQUIRE_POSTGRES").as_deref() != Ok("1") {
        eprintln!("\n*** SKIPPED: node or conformance/node/node_modules is missing (run `npm ci` in conformance/node); the ioredis and node-redis cluster checks did not run ***\n");
        return false;
    }
    assert!(
        has_node,
        "STMD_REQUIRE_POSTGRES=1 but node is not installed"
    );
    let npm = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .output()
        .expect("run npm ci");
    assert!(npm.status.success(), "npm ci: {}", text(&npm));
    installed()
}

#[test]
fn ioredis_and_node_redis_clusters_run_standard_and_stm_workloads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/node");
    if !node_modules_ready(&dir) {
        return;
    }
    let Some((_pg, nodes)) = three_nodes() else {
        return;
    };
    let output = Command::new("node")
        .arg(dir.join("cluster.js"))
        .arg(nodes[0].addr())
        .output()
        .expect("run node cluster.js");
    let report = text(&output);
    assert!(output.status.success(), "{report}");
    assert!(
        report.contains("ioredis Cluster: standard and STM workloads passed"),
        "{report}"
    );
    assert!(
        report.contains("node-redis createCluster: standard and STM workloads passed"),
        "{report}"
    );
    // The workloads spread over the three nodes.
    for node in &nodes {
        assert!(node.info_count("stm_captures") > 0, "{}", node.addr());
    }
}

#[test]
fn the_redis_rs_cluster_client_runs_standard_and_stm_workloads() {
    let Some((_pg, nodes)) = three_nodes() else {
        return;
    };
    let urls: Vec<String> = nodes
        .iter()
        .map(|n| format!("redis://{}/", n.addr()))
        .collect();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = redis::cluster::ClusterClient::new(urls).expect("cluster client");
        let mut con = client
            .get_async_connection()
            .await
            .expect("connect to the cluster");
        // Standard workload over many slots.
        for i in 0..100 {
            let () = redis::cmd("SET")
                .arg(format!("rs:k{i}"))
                .arg(i)
                .query_async(&mut con)
                .await
                .expect("SET");
        }
        for i in 0..100 {
            let value: i64 = redis::cmd("GET")
                .arg(format!("rs:k{i}"))
                .query_async(&mut con)
                .await
                .expect("GET");
            assert_eq!(value, i);
            let n: i64 = redis::cmd("INCR")
                .arg(format!("rs:n{i}"))
                .query_async(&mut con)
                .await
                .expect("INCR");
            assert_eq!(n, 1);
        }
        let added: i64 = redis::cmd("HSET")
            .arg("rs:h")
            .arg(&["a", "1", "b", "2"])
            .query_async(&mut con)
            .await
            .expect("HSET");
        assert_eq!(added, 2);
        let pushed: i64 = redis::cmd("RPUSH")
            .arg("rs:l")
            .arg(&["x", "y", "z"])
            .query_async(&mut con)
            .await
            .expect("RPUSH");
        assert_eq!(pushed, 3);
        let list: Vec<String> = redis::cmd("LRANGE")
            .arg("rs:l")
            .arg(0)
            .arg(-1)
            .query_async(&mut con)
            .await
            .expect("LRANGE");
        assert_eq!(list, ["x", "y", "z"]);
        // MULTI within one hash tag.
        let (set, incr, get): (String, i64, String) = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg("{rs}a")
            .arg("1")
            .cmd("INCR")
            .arg("{rs}b")
            .cmd("GET")
            .arg("{rs}a")
            .query_async(&mut con)
            .await
            .expect("MULTI/EXEC within {rs}");
        assert_eq!((set.as_str(), incr, get.as_str()), ("OK", 1, "1"));
        // EVAL within one slot.
        let sum: i64 = redis::cmd("EVAL")
            .arg("redis.call('set', KEYS[1], ARGV[1]); return redis.call('incrby', KEYS[2], ARGV[1])")
            .arg(2)
            .arg(&["{rs}x", "{rs}y"])
            .arg(5)
            .query_async(&mut con)
            .await
            .expect("EVAL within {rs}");
        assert_eq!(sum, 5);

        // The STM workload: redis-rs routes a module command by its first argument, so the
        // scope commands reach some node and follow MOVED to the channel's owner.
        for channel in channels("rs") {
            let user_key = format!("shortterm:user:u1:{{{channel}}}:3");
            let server_key = format!("shortterm:server:s1:{{{channel}}}:3");
            let keys: Vec<String> = redis::cmd("STM.CAPTURE")
                .arg(&["USER", "u1", "CHANNEL", &channel, "SERVER", "s1"])
                .arg(&[
                    "MSG", "user", "Alice", "hello", "REPLY", "3", "-", "Nova", "hi",
                ])
                .query_async(&mut con)
                .await
                .expect("STM.CAPTURE");
            assert_eq!(keys, [user_key.clone(), server_key.clone()]);
            let entry: String = redis::cmd("STM.GET")
                .arg(user_key.as_str())
                .arg(&["FORMAT", "JSON"])
                .query_async(&mut con)
                .await
                .expect("STM.GET");
            assert!(entry.contains("hello"), "{entry}");
            let turns: i64 = redis::cmd("STM.TICK")
                .arg(server_key.as_str())
                .arg(&["BY", "2"])
                .query_async(&mut con)
                .await
                .expect("STM.TICK");
            assert_eq!(turns, 3);
            let summary = format!("summary of {channel}");
            let keys: Vec<String> = redis::cmd("STM.SUMMARY")
                .arg(&["USER", "u1", "CHANNEL", &channel, "SERVER", "s1"])
                .arg(&["PERSONA", "3", "TEXT", &summary])
                .query_async(&mut con)
                .await
                .expect("STM.SUMMARY");
            assert_eq!(keys, [user_key.clone(), server_key.clone()]);
            let context: String = redis::cmd("STM.CONTEXT")
                .arg(&["USER", "u1", "CHANNEL", &channel, "SERVER", "s1"])
                .arg(&["PERSONA", "3", "FORMAT", "JSON"])
                .query_async(&mut con)
                .await
                .expect("STM.CONTEXT");
            assert!(context.contains(&summary), "{context}");
            let forgotten: i64 = redis::cmd("STM.FORGET")
                .arg(&["CHANNEL", &channel])
                .query_async(&mut con)
                .await
                .expect("STM.FORGET CHANNEL");
            assert_eq!(forgotten, 2);
            let gone: Option<String> = redis::cmd("STM.GET")
                .arg(user_key.as_str())
                .query_async(&mut con)
                .await
                .expect("STM.GET");
            assert_eq!(gone, None);
        }
    });
    for node in &nodes {
        assert!(node.info_count("stm_captures") > 0, "{}", node.addr());
    }
}

#[test]
fn redis_cli_follows_moved_through_the_stm_workload() {
    let Some((_pg, nodes)) = three_nodes() else {
        return;
    };
    for (i, channel) in channels("cli").iter().enumerate() {
        // Each call starts at a node that may not own the channel: -c follows MOVED.
        let node = &nodes[i % 3];
        let user_key = format!("shortterm:user:u1:{{{channel}}}");
        let server_key = format!("shortterm:server:s1:{{{channel}}}");
        let scope = ["USER", "u1", "CHANNEL", channel, "SERVER", "s1"];
        let capture = [
            &["STM.CAPTURE"][..],
            &scope,
            &["MSG", "user", "-", "hello", "REPLY", "-", "-", "-", "hi"],
        ]
        .concat();
        assert_eq!(
            node.cli_c(&capture),
            format!("{user_key}\n{server_key}"),
            "{channel}"
        );
        assert!(node.cli_c(&["STM.GET", &user_key]).contains("hello"));
        assert_eq!(node.cli_c(&["STM.TICK", &server_key]), "2");
        let summary = format!("summary of {channel}");
        let args = [&["STM.SUMMARY"][..], &scope, &["TEXT", &summary]].concat();
        assert_eq!(node.cli_c(&args), format!("{user_key}\n{server_key}"));
        let args = [&["STM.CONTEXT"][..], &scope, &["FORMAT", "JSON"]].concat();
        assert!(node.cli_c(&args).contains(&summary), "{channel}");
        assert_eq!(node.cli_c(&["STM.FORGET", "CHANNEL", channel]), "2");
        assert_eq!(node.cli_c(&["STM.GET", &user_key]), "");
    }
    for node in &nodes {
        assert!(node.info_count("stm_captures") > 0, "{}", node.addr());
        assert!(
            node.info_count("cluster_moved_redirections") > 0,
            "{}",
            node.addr()
        );
    }
}
