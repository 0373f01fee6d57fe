//! LATENCY, MEMORY and DEBUG over the wire: the latency monitor fed by a slow command, the
//! per-command histograms, memory figures that follow the data, DEBUG behind its option, MODULE
//! LOAD/UNLOAD behind theirs.

use crate::common;

use common::TestServer;
use redis::Value;
use stmd::config::ProtectedCommand;

type Con = redis::aio::MultiplexedConnection;

async fn debug_server() -> (TestServer, Con) {
    let server = TestServer::start_with(|c| c.enable_debug_command = ProtectedCommand::Yes).await;
    let con = server.client3().await;
    (server, con)
}

fn map(value: Value) -> Vec<(String, Value)> {
    match value {
        Value::Map(pairs) => pairs
            .into_iter()
            .map(|(k, v)| match k {
                Value::BulkString(b) => (String::from_utf8_lossy(&b).into_owned(), v),
                other => panic!("key {other:?}"),
            })
            .collect(),
        other => panic!("not a map: {other:?}"),
    }
}

fn text(value: Value) -> String {
    match value {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::VerbatimString { text, .. } => text,
        Value::SimpleString(s) => s,
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn latency_monitor_records_slow_commands_over_the_threshold() {
    let (_server, mut con) = debug_server().await;
    let doctor: Value = redis::cmd("LATENCY")
        .arg("DOCTOR")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(text(doctor).contains("Latency monitoring is disabled"));
    // Off (threshold 0): a slow command leaves no event.
    let _: () = redis::cmd("DEBUG")
        .arg("SLEEP")
        .arg("0.03")
        .query_async(&mut con)
        .await
        .unwrap();
    let latest: Vec<Value> = redis::cmd("LATENCY")
        .arg("LATEST")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(latest.is_empty());

    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("latency-monitor-threshold")
        .arg("20")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("DEBUG")
        .arg("SLEEP")
        .arg("0.05")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("PING").query_async(&mut con).await.unwrap();
    let latest: Vec<(String, i64, i64, i64)> = redis::cmd("LATENCY")
        .arg("LATEST")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(latest.len(), 1, "{latest:?}");
    let (event, time, last, max) = latest[0].clone();
    assert_eq!(event, "command");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - time).abs() <= 2);
    assert!((50..1000).contains(&last) && max == last, "{latest:?}");
    let history: Vec<(i64, i64)> = redis::cmd("LATENCY")
        .arg("HISTORY")
        .arg("command")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(history, vec![(time, last)]);
    let graph: Value = redis::cmd("LATENCY")
        .arg("GRAPH")
        .arg("command")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(text(graph).starts_with(&format!("command - high {last} ms, low {last} ms")));
    let doctor: Value = redis::cmd("LATENCY")
        .arg("DOCTOR")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(text(doctor).contains("1. command: 1 latency spikes"));
    let reset: i64 = redis::cmd("LATENCY")
        .arg("RESET")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(reset, 1);
    let latest: Vec<Value> = redis::cmd("LATENCY")
        .arg("LATEST")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(latest.is_empty());
}

#[tokio::test]
async fn latency_histogram_is_cumulative_per_command() {
    let server = TestServer::start().await;
    let mut con = server.client3().await;
    for i in 0..20 {
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg(i)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    let _: Value = redis::cmd("CONFIG")
        .arg("GET")
        .arg("port")
        .query_async(&mut con)
        .await
        .unwrap();
    let reply: Value = redis::cmd("LATENCY")
        .arg("HISTOGRAM")
        .arg("set")
        .arg("config|get")
        .arg("nosuch")
        .query_async(&mut con)
        .await
        .unwrap();
    let commands = map(reply);
    let names: Vec<&str> = commands.iter().map(|(n, _)| n.as_str()).collect();
    // In command-table order, as Redis lists its command table.
    assert_eq!(names, ["config|get", "set"]);
    let set = map(commands[1].1.clone());
    assert_eq!(set[0], ("calls".to_string(), Value::Int(20)));
    assert_eq!(set[1].0, "histogram_usec");
    let Value::Map(points) = &set[1].1 else {
        panic!("{set:?}")
    };
    let mut last = (0, 0);
    for (bound, count) in points {
        let (Value::Int(bound), Value::Int(count)) = (bound, count) else {
            panic!("{points:?}")
        };
        assert!(*bound > last.0 && *count > last.1, "{points:?}");
        last = (*bound, *count);
    }
    assert_eq!(last.1, 20, "the last bucket holds every call");
}

#[tokio::test]
async fn memory_usage_follows_the_value() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let _: () = redis::cmd("SET")
        .arg("small")
        .arg("x")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg(vec![b'x'; 10_000])
        .query_async(&mut con)
        .await
        .unwrap();
    let small: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("small")
        .query_async(&mut con)
        .await
        .unwrap();
    let big: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("big")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(
        small > 0 && (10_000..11_000).contains(&big),
        "{small} {big}"
    );
    for i in 0..100 {
        let _: () = redis::cmd("RPUSH")
            .arg("list")
            .arg(format!("item-{i:04}"))
            .query_async(&mut con)
            .await
            .unwrap();
    }
    let sampled: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("list")
        .query_async(&mut con)
        .await
        .unwrap();
    let all: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("list")
        .arg("SAMPLES")
        .arg(0)
        .query_async(&mut con)
        .await
        .unwrap();
    // Every element has the same size, so sampling 5 estimates the whole list exactly.
    assert_eq!(sampled, all);
    assert!(all > 100 * 9);
    let missing: Option<i64> = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("nokey")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(missing, None);

    // A small hash, set or sorted set is one buffer in its entry, and is counted as such: five
    // one-byte elements take ten bytes (a length byte each) beside the key's 64-byte overhead
    // (Redis 7.0 says 80 for each of these; counting 40 bytes an element, as a large form costs,
    // said 270-390).
    let small: [&[&str]; 3] = [
        &[
            "HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5",
        ],
        &["SADD", "s", "a", "b", "c", "d", "e"],
        &[
            "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
        ],
    ];
    for command in small {
        let _: i64 = redis::cmd(command[0])
            .arg(&command[1..])
            .query_async(&mut con)
            .await
            .unwrap();
        let usage: i64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(command[1])
            .query_async(&mut con)
            .await
            .unwrap();
        assert!((70..=100).contains(&usage), "{command:?}: {usage}");
    }
}

#[tokio::test]
async fn memory_stats_doctor_malloc_stats_and_purge() {
    let server = TestServer::start().await;
    let mut con = server.client3().await;
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async(&mut con)
        .await
        .unwrap();
    let stats = map(redis::cmd("MEMORY")
        .arg("STATS")
        .query_async(&mut con)
        .await
        .unwrap());
    let get = |name: &str| {
        stats
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{name} missing: {stats:?}"))
    };
    assert_eq!(get("keys.count"), Value::Int(1));
    let (Value::Int(peak), Value::Int(total), Value::Int(startup)) = (
        get("peak.allocated"),
        get("total.allocated"),
        get("startup.allocated"),
    ) else {
        panic!("{stats:?}")
    };
    assert!(peak >= total && total >= startup && startup > 0);
    assert!(matches!(get("fragmentation"), Value::Double(f) if f > 0.0));
    let doctor: Value = redis::cmd("MEMORY")
        .arg("DOCTOR")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(text(doctor).contains("Sam"));
    let malloc: Value = redis::cmd("MEMORY")
        .arg("MALLOC-STATS")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(text(malloc).contains("jemalloc statistics"));
    let _: () = redis::cmd("MEMORY")
        .arg("PURGE")
        .query_async(&mut con)
        .await
        .unwrap();
}

#[tokio::test]
async fn debug_is_refused_unless_enabled() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let err = redis::cmd("DEBUG")
        .arg("SLEEP")
        .arg(0)
        .query_async::<()>(&mut con)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("DEBUG command not allowed"),
        "{err}"
    );
    let mode: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("enable-debug-command")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(mode, ["enable-debug-command", "no"]);
    let err = redis::cmd("CONFIG")
        .arg("SET")
        .arg("enable-debug-command")
        .arg("yes")
        .query_async::<()>(&mut con)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("can't set immutable config"),
        "{err}"
    );
}

/// With `enable-module-command` yes or local (a loopback client), MODULE LOAD/LOADEX/UNLOAD answer
/// what Redis answers for a module it cannot load or has not loaded; at `no` they are refused.
#[tokio::test]
async fn module_commands_follow_enable_module_command() {
    async fn reply(con: &mut Con, words: &[&str]) -> String {
        match common::stm::run(con, words).await {
            Ok(v) => format!("{v:?}"),
            Err(e) => e,
        }
    }
    // MODULE LIST names the modules stmd serves built in (JSON and search, at the versions of
    // the Redis Stack paired with Redis 7.4), whatever the setting.
    async fn lists_rejson(con: &mut Con) {
        let listed = common::stm::run(con, &["MODULE", "LIST"])
            .await
            .expect("MODULE LIST answers");
        let redis::Value::Array(modules) = listed else {
            panic!("MODULE LIST: {listed:?}")
        };
        assert_eq!(modules.len(), 2, "{modules:?}");
        let bulk = |s: &str| redis::Value::BulkString(s.as_bytes().to_vec());
        for (module, (name, version)) in modules.iter().zip([("ReJSON", 20800), ("search", 21005)])
        {
            let entry = match module {
                redis::Value::Array(flat) => flat.clone(),
                redis::Value::Map(pairs) => pairs
                    .iter()
                    .flat_map(|(k, v)| [k.clone(), v.clone()])
                    .collect(),
                other => panic!("MODULE LIST entry: {other:?}"),
            };
            assert_eq!(
                entry,
                vec![
                    bulk("name"),
                    bulk(name),
                    bulk("ver"),
                    redis::Value::Int(version),
                    bulk("path"),
                    bulk(""),
                    bulk("args"),
                    redis::Value::Array(Vec::new()),
                ]
            );
        }
    }
    for setting in [ProtectedCommand::Yes, ProtectedCommand::Local] {
        let server = TestServer::start_with(|c| c.enable_module_command = setting).await;
        let mut con = server.client().await;
        lists_rejson(&mut con).await;
        for load in [
            &["MODULE", "LOAD", "/no/such.so"][..],
            &["MODULE", "LOADEX", "/no/such.so", "ARGS", "a"],
        ] {
            assert_eq!(
                reply(&mut con, load).await,
                "ERR Error loading the extension. Please check the server logs."
            );
        }
        assert_eq!(
            reply(&mut con, &["MODULE", "UNLOAD", "nosuch"]).await,
            "ERR Error unloading module: no such module with that name"
        );
    }
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let refused = reply(&mut con, &["MODULE", "UNLOAD", "nosuch"]).await;
    assert!(
        refused.starts_with("ERR MODULE command not allowed."),
        "{refused}"
    );
    lists_rejson(&mut con).await;
}

#[tokio::test]
async fn debug_object_and_active_expire() {
    let (_server, mut con) = debug_server().await;
    let _: () = redis::cmd("SET")
        .arg("n")
        .arg(12345)
        .query_async(&mut con)
        .await
        .unwrap();
    let object: Value = redis::cmd("DEBUG")
        .arg("OBJECT")
        .arg("n")
        .query_async(&mut con)
        .await
        .unwrap();
    let object = text(object);
    assert!(
        object.contains("encoding:int") && object.contains("refcount:1"),
        "{object}"
    );
    let err = redis::cmd("DEBUG")
        .arg("OBJECT")
        .arg("nokey")
        .query_async::<()>(&mut con)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no such key"), "{err}");

    // Active expiry off: an expired key nobody reads stays stored; back on, the cycle takes it.
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(0)
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("gone")
        .arg("v")
        .arg("PX")
        .arg(30)
        .query_async(&mut con)
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let size: i64 = redis::cmd("DBSIZE").query_async(&mut con).await.unwrap();
    assert_eq!(size, 2);
    let _: () = redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(1)
        .query_async(&mut con)
        .await
        .unwrap();
    let mut size = 2;
    for _ in 0..40 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        size = redis::cmd("DBSIZE").query_async(&mut con).await.unwrap();
        if size == 1 {
            break;
        }
    }
    assert_eq!(size, 1);
}
