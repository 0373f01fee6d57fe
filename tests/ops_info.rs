//! INFO over the wire: Redis 7.2's sections and their selection, truthful fields, commandstats /
//! errorstats / latencystats after known commands, and CONFIG RESETSTAT.

mod common;

use common::TestServer;
use std::collections::HashMap;

async fn info(con: &mut redis::aio::MultiplexedConnection, sections: &[&str]) -> String {
    let mut cmd = redis::cmd("INFO");
    for s in sections {
        cmd.arg(*s);
    }
    cmd.query_async(con).await.expect("INFO")
}

fn headers(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# "))
        .map(str::trim)
        .collect()
}

fn fields(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains(':'))
        .filter_map(|l| l.trim_end().split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `calls=2,usec=15,...` as a map.
fn parts(value: &str) -> HashMap<String, String> {
    value
        .split(',')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn sections_are_selected_as_redis_selects_them() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let default = [
        "Server",
        "Clients",
        "Memory",
        "Persistence",
        "Stats",
        "Replication",
        "CPU",
        "Modules",
        "Errorstats",
        "Cluster",
        "Keyspace",
        "STM",
    ];
    assert_eq!(headers(&info(&mut con, &[]).await), default);
    assert_eq!(headers(&info(&mut con, &["default"]).await), default);
    let all = [
        "Server",
        "Clients",
        "Memory",
        "Persistence",
        "Stats",
        "Replication",
        "CPU",
        "Modules",
        "Commandstats",
        "Errorstats",
        "Latencystats",
        "Cluster",
        "Keyspace",
        "STM",
    ];
    assert_eq!(headers(&info(&mut con, &["all"]).await), all);
    assert_eq!(headers(&info(&mut con, &["EVERYTHING"]).await), all);
    // Several sections, any case, Redis's order whatever the arguments' order; unknown: nothing.
    assert_eq!(
        headers(&info(&mut con, &["KEYSPACE", "server", "nosuch"]).await),
        ["Server", "Keyspace"]
    );
    assert_eq!(info(&mut con, &["nosuch"]).await, "");
    assert_eq!(
        headers(&info(&mut con, &["default", "commandstats"]).await).len(),
        default.len() + 1
    );
}

#[tokio::test]
async fn fields_are_present_and_truthful() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async(&mut con)
        .await
        .unwrap();
    let f = fields(&info(&mut con, &["everything"]).await);
    assert_eq!(f["redis_version"], "7.4.0");
    assert_eq!(f["redis_mode"], "standalone");
    assert_eq!(f["tcp_port"], server.addr.port().to_string());
    assert_eq!(f["process_id"], std::process::id().to_string());
    assert_eq!(f["role"], "master");
    assert_eq!(f["connected_slaves"], "0");
    assert_eq!(f["master_repl_offset"], "0");
    assert_eq!(f["cluster_enabled"], "0");
    assert_eq!(f["aof_enabled"], "0");
    assert_eq!(f["loading"], "0");
    assert_eq!(f["rdb_bgsave_in_progress"], "0");
    assert!(f["mem_allocator"].starts_with("jemalloc-"));
    assert_eq!(f["db0"], "keys=1,expires=0,avg_ttl=0,subexpiry=0");
    let used: u64 = f["used_memory"].parse().unwrap();
    let peak: u64 = f["used_memory_peak"].parse().unwrap();
    let startup: u64 = f["used_memory_startup"].parse().unwrap();
    let dataset: u64 = f["used_memory_dataset"].parse().unwrap();
    assert!(used > 0 && peak >= used && startup <= used);
    assert_eq!(startup + dataset, used);
    assert!(
        f["allocator_active"].parse::<u64>().unwrap()
            >= f["allocator_allocated"].parse::<u64>().unwrap()
    );
    assert!(f["total_system_memory"].parse::<u64>().unwrap() > used);
    for cpu in [
        "used_cpu_sys",
        "used_cpu_user",
        "used_cpu_sys_children",
        "used_cpu_user_children",
        "used_cpu_sys_main_thread",
        "used_cpu_user_main_thread",
    ] {
        let seconds: f64 = f[cpu]
            .parse()
            .unwrap_or_else(|_| panic!("{cpu}: {}", f[cpu]));
        assert!(seconds >= 0.0);
        assert_eq!(f[cpu].split('.').nth(1).map(str::len), Some(6), "{cpu}");
    }
    assert!(
        f["used_cpu_user"].parse::<f64>().unwrap() + f["used_cpu_sys"].parse::<f64>().unwrap()
            > 0.0
    );
    assert!(f["total_commands_processed"].parse::<u64>().unwrap() >= 1);
    assert!(f["total_net_input_bytes"].parse::<u64>().unwrap() > 0);
}

#[tokio::test]
async fn commandstats_count_known_commands_and_subcommands() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    for i in 0..3 {
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg(i)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    let _: Option<String> = redis::cmd("GET")
        .arg("k")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: redis::Value = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query_async(&mut con)
        .await
        .unwrap();
    // A failed call (WRONGTYPE), a rejected one (arity), an unknown command and subcommand.
    let _: () = redis::cmd("LPUSH")
        .arg("list")
        .arg("x")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(redis::cmd("GET")
        .arg("list")
        .query_async::<String>(&mut con)
        .await
        .is_err());
    assert!(redis::cmd("GET")
        .query_async::<String>(&mut con)
        .await
        .is_err());
    assert!(redis::cmd("NOSUCHCMD")
        .query_async::<String>(&mut con)
        .await
        .is_err());
    assert!(redis::cmd("CONFIG")
        .arg("NOSUCH")
        .query_async::<String>(&mut con)
        .await
        .is_err());

    let f = fields(&info(&mut con, &["commandstats"]).await);
    let set = parts(&f["cmdstat_set"]);
    assert_eq!(set["calls"], "3");
    assert_eq!(set["rejected_calls"], "0");
    assert_eq!(set["failed_calls"], "0");
    let usec: f64 = set["usec"].parse().unwrap();
    let per_call: f64 = set["usec_per_call"].parse().unwrap();
    assert!((per_call * 3.0 - usec).abs() <= 3.0, "{set:?}");
    let get = parts(&f["cmdstat_get"]);
    // Two ran (one failed with WRONGTYPE); one was rejected before running.
    assert_eq!(
        (
            get["calls"].as_str(),
            get["failed_calls"].as_str(),
            get["rejected_calls"].as_str()
        ),
        ("2", "1", "1")
    );
    assert_eq!(parts(&f["cmdstat_config|get"])["calls"], "1");
    assert!(
        !f.contains_key("cmdstat_config"),
        "a container counts per subcommand"
    );
    assert!(!f.keys().any(|k| k.contains("nosuch")), "{f:?}");

    let errors = fields(&info(&mut con, &["errorstats"]).await);
    assert_eq!(errors["errorstat_WRONGTYPE"], "count=1");
    // Arity, unknown command, unknown subcommand.
    assert_eq!(errors["errorstat_ERR"], "count=3");
    let stats = fields(&info(&mut con, &["stats"]).await);
    assert_eq!(stats["total_error_replies"], "4");

    let latency = fields(&info(&mut con, &["latencystats"]).await);
    let p = parts(&latency["latency_percentiles_usec_set"]);
    let (p50, p99, p999): (f64, f64, f64) = (
        p["p50"].parse().unwrap(),
        p["p99"].parse().unwrap(),
        p["p99.9"].parse().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99 && p99 <= p999, "{p:?}");
    assert!(latency.contains_key("latency_percentiles_usec_config|get"));
}

#[tokio::test]
async fn commands_from_many_connections_add_up() {
    let server = TestServer::start().await;
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let url = server.url();
            tokio::spawn(async move {
                let mut con = redis::Client::open(url)
                    .unwrap()
                    .get_multiplexed_async_connection()
                    .await
                    .unwrap();
                for _ in 0..50 {
                    let _: i64 = redis::cmd("INCR")
                        .arg("n")
                        .query_async(&mut con)
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let mut con = server.client().await;
    let f = fields(&info(&mut con, &["commandstats"]).await);
    assert_eq!(parts(&f["cmdstat_incr"])["calls"], "400");
}

#[tokio::test]
async fn resetstat_clears_what_redis_clears() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: Option<String> = redis::cmd("GET")
        .arg("k")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(redis::cmd("GET")
        .query_async::<String>(&mut con)
        .await
        .is_err());
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut con)
        .await
        .unwrap();
    let f = fields(&info(&mut con, &["everything"]).await);
    assert!(
        !f.contains_key("cmdstat_set") && !f.contains_key("cmdstat_get"),
        "{f:?}"
    );
    assert!(!f.contains_key("latency_percentiles_usec_set"));
    assert!(!f.keys().any(|k| k.starts_with("errorstat_")));
    assert_eq!(f["keyspace_hits"], "0");
    assert_eq!(f["total_error_replies"], "0");
    // The INFO that is answering ran after the reset and is not counted yet; the keys stay.
    assert_eq!(f["db0"], "keys=1,expires=0,avg_ttl=0,subexpiry=0");
    let f = fields(&info(&mut con, &["commandstats"]).await);
    assert_eq!(parts(&f["cmdstat_info"])["calls"], "1");
}

/// `instantaneous_*` are rates sampled every 100 ms over the last 16 samples: a burst of commands
/// shows as operations and input/output kilobytes per second, and fades to 0 once traffic stops.
#[tokio::test]
async fn instantaneous_rates_follow_traffic() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let mut busy = server.client().await;
    let started = std::time::Instant::now();
    let mut seen = None;
    // Traffic for up to 3 s, checking the rates between batches.
    while started.elapsed() < std::time::Duration::from_secs(3) {
        let mut pipe = redis::pipe();
        for i in 0..200 {
            pipe.cmd("SET")
                .arg(format!("k{i}"))
                .arg("v".repeat(100))
                .ignore();
        }
        let () = pipe.query_async(&mut busy).await.expect("pipeline");
        let stats = fields(&info(&mut con, &["stats"]).await);
        let ops: u64 = stats["instantaneous_ops_per_sec"].parse().expect("ops");
        let input: f64 = stats["instantaneous_input_kbps"].parse().expect("input");
        let output: f64 = stats["instantaneous_output_kbps"].parse().expect("output");
        if ops > 0 && input > 0.0 && output > 0.0 {
            seen = Some(ops);
            break;
        }
    }
    assert!(seen.is_some(), "no rate rose under traffic");
    assert_eq!(
        fields(&info(&mut con, &["stats"]).await)["instantaneous_input_repl_kbps"],
        "0.00"
    );
    // Idle: after 16 samples without traffic (INFO itself is one command per check) the rate falls.
    tokio::time::sleep(std::time::Duration::from_millis(2000)).await;
    let ops: u64 = fields(&info(&mut con, &["stats"]).await)["instantaneous_ops_per_sec"]
        .parse()
        .expect("ops");
    assert!(
        ops < seen.unwrap_or(0),
        "rate {ops} did not fall after traffic stopped"
    );
}

/// `latency-tracking no` stops the histograms (latencystats prints its header only);
/// `latency-tracking-info-percentiles` chooses what latencystats prints, with Redis's errors.
#[tokio::test]
async fn latency_tracking_is_configurable() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let config = |args: &[&str]| {
        let mut cmd = redis::cmd("CONFIG");
        for a in args {
            cmd.arg(*a);
        }
        cmd
    };
    let _: () = config(&["SET", "latency-tracking-info-percentiles", "50 99.99 0"])
        .query_async(&mut con)
        .await
        .expect("set percentiles");
    let got: Vec<String> = config(&["GET", "latency-tracking-info-percentiles"])
        .query_async(&mut con)
        .await
        .expect("get");
    assert_eq!(got, ["latency-tracking-info-percentiles", "50 99.99 0"]);
    let _: Option<String> = redis::cmd("GET")
        .arg("x")
        .query_async(&mut con)
        .await
        .expect("GET");
    let text = info(&mut con, &["latencystats"]).await;
    let get = &fields(&text)["latency_percentiles_usec_get"];
    let names: Vec<&str> = get
        .split(',')
        .filter_map(|p| p.split_once('='))
        .map(|p| p.0)
        .collect();
    assert_eq!(names, ["p50", "p99.99", "p0"]);

    for (value, why) in [
        (
            "abc",
            "Invalid latency-tracking-info-percentiles parameters",
        ),
        (
            "101",
            "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
        ),
    ] {
        let err = config(&["SET", "latency-tracking-info-percentiles", value])
            .query_async::<()>(&mut con)
            .await
            .expect_err("refused");
        assert!(err.to_string().contains(why), "{err}");
    }

    let _: () = config(&["SET", "latency-tracking", "no"])
        .query_async(&mut con)
        .await
        .expect("off");
    let text = info(&mut con, &["latencystats"]).await;
    assert_eq!(text.trim_end(), "# Latencystats");
    let err = config(&["SET", "latency-tracking", "maybe"])
        .query_async::<()>(&mut con)
        .await
        .expect_err("refused");
    assert!(
        err.to_string().contains("argument must be 'yes' or 'no'"),
        "{err}"
    );
}
