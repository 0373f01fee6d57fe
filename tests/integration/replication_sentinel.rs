//! Redis Sentinel (the real one: `redis-server <file> --sentinel`) monitoring a group of stmd
//! servers: three Sentinels find the primary, its two replicas and each other (through the
//! `__sentinel__:hello` channel on the stmd servers); a stopped primary is failed over (one replica
//! promoted, the other moved to it, the writes go on), the old primary comes back as a replica;
//! `SENTINEL failover` hands the role over again; redis-py's Sentinel client finds the primary.
//! Also what Sentinel relies on, checked on its own: `replica-priority`, `replica-announced`,
//! `replica-announce-ip|port` (against a real redis-server primary), and the partial resync of a
//! replica moved to its promoted sibling and of a demoted primary.

use crate::common;
use crate::replication_primary::caught_up;

use common::real_redis::RealRedis;
use common::stm::{ok, run};
use common::{Binary, TestServer};
use redis::Value;
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NAME: &str = "mymaster";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

/// One real Sentinel with its own directory and configuration file, killed on drop.
struct Sentinel {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Sentinel {
    fn start(primary_port: u16) -> Sentinel {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let path = dir.path().display().to_string();
        let config = format!(
            "port {port}\nbind 127.0.0.1\ndir {path}\nlogfile {path}/sentinel.log\n\
             loglevel verbose\nsentinel resolve-hostnames no\n\
             sentinel monitor {NAME} 127.0.0.1 {primary_port} 2\n\
             sentinel down-after-milliseconds {NAME} 1000\n\
             sentinel failover-timeout {NAME} 5000\n"
        );
        let file = dir.path().join("sentinel.conf");
        std::fs::write(&file, config).expect("write sentinel.conf");
        let child = Command::new("redis-server")
            .arg(&file)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (Debian package redis-server)");
        Sentinel { child, port, dir }
    }

    /// Its log's events (the connection chatter of `loglevel verbose` left out).
    fn events(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sentinel.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.contains(" - Accepted ") && !l.contains(" - Client closed "))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One command on a fresh connection (Sentinel kills clients' connections when it reconfigures a
/// server, and a stopped server never answers), within 2 s.
async fn query(port: u16, words: &[&str]) -> Result<Value, String> {
    let attempt = async {
        let client =
            redis::Client::open(format!("redis://127.0.0.1:{port}/")).map_err(|e| e.to_string())?;
        let mut con = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| e.to_string())?;
        run(&mut con, words).await
    };
    tokio::time::timeout(Duration::from_secs(2), attempt)
        .await
        .unwrap_or_else(|_| Err("no answer within 2 s".into()))
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

/// `SENTINEL replicas|sentinels` records: field name to value.
fn records(value: &Value) -> Vec<HashMap<String, String>> {
    let Value::Array(items) = value else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item {
            Value::Array(pairs) => Some(
                pairs
                    .chunks(2)
                    .filter(|pair| pair.len() == 2)
                    .map(|pair| (text(&pair[0]), text(&pair[1])))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// The primary's port as this Sentinel names it.
async fn primary_port(sentinel: &Sentinel) -> Option<u16> {
    let reply = query(
        sentinel.port,
        &["SENTINEL", "get-master-addr-by-name", NAME],
    )
    .await
    .ok()?;
    match reply {
        Value::Array(addr) if addr.len() == 2 && text(&addr[0]) == "127.0.0.1" => {
            text(&addr[1]).parse().ok()
        }
        _ => None,
    }
}

/// The replicas this Sentinel lists, by port.
async fn replicas(sentinel: &Sentinel) -> HashMap<u16, HashMap<String, String>> {
    let reply = query(sentinel.port, &["SENTINEL", "replicas", NAME])
        .await
        .unwrap_or(Value::Nil);
    records(&reply)
        .into_iter()
        .filter_map(|r| Some((r.get("port")?.parse().ok()?, r)))
        .collect()
}

/// True when this Sentinel lists `ports` as healthy replicas (flags exactly `slave`: not
/// `s_down`, not `disconnected`) following `primary`.
async fn lists_replicas(sentinel: &Sentinel, ports: &[u16], primary: u16) -> bool {
    let listed = replicas(sentinel).await;
    ports.iter().all(|port| {
        listed.get(port).is_some_and(|r| {
            r.get("flags").map(String::as_str) == Some("slave")
                && r.get("master-link-status").map(String::as_str) == Some("ok")
                && r.get("master-port") == Some(&primary.to_string())
        })
    })
}

/// ROLE of a server: "slave of <port> connected", or "master".
async fn role(port: u16) -> String {
    match query(port, &["ROLE"]).await {
        Ok(Value::Array(role)) if role.len() == 5 => {
            format!("slave of {} {}", text(&role[2]), text(&role[3]))
        }
        Ok(Value::Array(role)) if !role.is_empty() => text(&role[0]),
        other => format!("{other:?}"),
    }
}

async fn get(port: u16, key: &str) -> Option<String> {
    match query(port, &["GET", key]).await {
        Ok(Value::BulkString(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
        _ => None,
    }
}

/// Polls `check` every 100 ms for up to `secs`; on a timeout fails with the Sentinels' events.
async fn eventually(
    what: &str,
    secs: u64,
    sentinels: &[Sentinel],
    mut check: impl AsyncFnMut() -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check().await {
        if Instant::now() >= deadline {
            let logs: Vec<String> = sentinels
                .iter()
                .map(|s| format!("--- sentinel {}:\n{}", s.port, s.events()))
                .collect();
            panic!("timed out ({secs} s) waiting: {what}\n{}", logs.join("\n"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every Sentinel names `port` as the primary.
async fn all_name_primary(sentinels: &[Sentinel], port: u16) -> bool {
    for sentinel in sentinels {
        if primary_port(sentinel).await != Some(port) {
            return false;
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_monitors_and_fails_over_stmd() {
    let started = Instant::now();
    let primary = Binary::start(&[]);
    primary.wait_accepting();
    let of = format!("127.0.0.1 {}", primary.port);
    // `keeper` is never promoted (replica-priority 0, which Sentinel reads from INFO), so each
    // failover's choice is known: `heir` first, then the old primary.
    let keeper = Binary::start(&["--replicaof", &of, "--replica-priority", "0"]);
    let heir = Binary::start(&["--replicaof", &of]);
    keeper.wait_accepting();
    heir.wait_accepting();
    for replica in [keeper.port, heir.port] {
        let want = format!("slave of {} connected", primary.port);
        eventually("the replicas are linked", 10, &[], async || {
            role(replica).await == want
        })
        .await;
    }
    let sentinels: Vec<Sentinel> = (0..3).map(|_| Sentinel::start(primary.port)).collect();

    // Monitoring: the primary, its replicas (from its INFO), the other Sentinels (from their
    // hello messages on the stmd servers' `__sentinel__:hello` channel).
    for sentinel in &sentinels {
        eventually("the primary named", 10, &sentinels, async || {
            primary_port(sentinel).await == Some(primary.port)
        })
        .await;
        eventually("both replicas listed", 15, &sentinels, async || {
            lists_replicas(sentinel, &[keeper.port, heir.port], primary.port).await
        })
        .await;
        let listed = replicas(sentinel).await;
        assert_eq!(listed[&keeper.port]["slave-priority"], "0");
        assert_eq!(listed[&heir.port]["slave-priority"], "100");
        let others: Vec<u16> = sentinels
            .iter()
            .map(|s| s.port)
            .filter(|&p| p != sentinel.port)
            .collect();
        eventually(
            "the other two Sentinels found",
            15,
            &sentinels,
            async || {
                let reply = query(sentinel.port, &["SENTINEL", "sentinels", NAME]).await;
                let found = records(&reply.unwrap_or(Value::Nil));
                let mut ports: Vec<u16> = found
                    .iter()
                    .filter(|r| r.get("flags").map(String::as_str) == Some("sentinel"))
                    .filter_map(|r| r.get("port")?.parse().ok())
                    .collect();
                ports.sort_unstable();
                let mut want = others.clone();
                want.sort_unstable();
                ports == want
            },
        )
        .await;
    }

    // Writes on the primary reach the replicas.
    assert_eq!(
        query(primary.port, &["SET", "before", "1"]).await,
        Ok(Value::Okay)
    );
    for replica in [keeper.port, heir.port] {
        eventually("the write replicated", 10, &sentinels, async || {
            get(replica, "before").await.as_deref() == Some("1")
        })
        .await;
    }

    // The primary stops: the Sentinels agree it is down, elect a leader, promote `heir` and move
    // `keeper` to it.
    common::send_signal(primary.pid(), "STOP");
    eventually(
        "every Sentinel names the promoted replica",
        30,
        &sentinels,
        async || all_name_primary(&sentinels, heir.port).await,
    )
    .await;
    let logs: Vec<String> = sentinels.iter().map(Sentinel::events).collect();
    let with = |event: &str| logs.iter().filter(|l| l.contains(event)).count();
    // The leader saw the primary objectively down (its quorum of 2 agreeing), at least two
    // Sentinels voted, one was elected.
    assert!(with("+odown master mymaster") >= 1, "{logs:#?}");
    assert!(with("+vote-for-leader") >= 2, "{logs:#?}");
    assert_eq!(with("+elected-leader master mymaster"), 1, "{logs:#?}");
    let promoted = format!("+promoted-slave slave 127.0.0.1:{}", heir.port);
    assert_eq!(with(&promoted), 1, "{logs:#?}");
    assert_eq!(role(heir.port).await, "master");
    let follows_heir = format!("slave of {} connected", heir.port);
    eventually(
        "keeper follows the promoted replica",
        15,
        &sentinels,
        async || role(keeper.port).await == follows_heir,
    )
    .await;
    assert_eq!(
        query(heir.port, &["SET", "after", "2"]).await,
        Ok(Value::Okay)
    );
    eventually(
        "the new primary's write replicated",
        10,
        &sentinels,
        async || get(keeper.port, "after").await.as_deref() == Some("2"),
    )
    .await;
    assert_eq!(get(heir.port, "before").await.as_deref(), Some("1"));
    assert_eq!(get(keeper.port, "before").await.as_deref(), Some("1"));

    // The old primary resumes, still a primary in its own eyes: Sentinel makes it a replica of
    // the new one (REPLICAOF), and it takes the new primary's data.
    common::send_signal(primary.pid(), "CONT");
    eventually(
        "the old primary follows the new one",
        30,
        &sentinels,
        async || role(primary.port).await == follows_heir,
    )
    .await;
    eventually(
        "the old primary has the new data",
        10,
        &sentinels,
        async || get(primary.port, "after").await.as_deref() == Some("2"),
    )
    .await;
    for sentinel in &sentinels {
        eventually(
            "the old primary listed as a replica",
            15,
            &sentinels,
            async || lists_replicas(sentinel, &[primary.port, keeper.port], heir.port).await,
        )
        .await;
    }

    // A manual failover: the old primary is the only candidate (keeper has priority 0).
    eventually("SENTINEL failover accepted", 15, &sentinels, async || {
        query(sentinels[0].port, &["SENTINEL", "failover", NAME]).await == Ok(Value::Okay)
    })
    .await;
    eventually(
        "every Sentinel names the old primary again",
        20,
        &sentinels,
        async || all_name_primary(&sentinels, primary.port).await,
    )
    .await;
    let follows_primary = format!("slave of {} connected", primary.port);
    for replica in [keeper.port, heir.port] {
        eventually(
            "the others follow the old primary again",
            30,
            &sentinels,
            async || role(replica).await == follows_primary,
        )
        .await;
    }
    assert_eq!(
        query(primary.port, &["SET", "manual", "3"]).await,
        Ok(Value::Okay)
    );
    for replica in [keeper.port, heir.port] {
        eventually(
            "the write after the manual failover",
            10,
            &sentinels,
            async || {
                get(replica, "manual").await.as_deref() == Some("3")
                    && get(replica, "after").await.as_deref() == Some("2")
            },
        )
        .await;
    }

    // A client library's Sentinel support finds the primary and a replica.
    if let Some(python) = common::cluster::python_with_redis_py("redis-py's Sentinel client") {
        for sentinel in &sentinels {
            eventually(
                "both replicas listed after the manual failover",
                20,
                &sentinels,
                async || lists_replicas(sentinel, &[keeper.port, heir.port], primary.port).await,
            )
            .await;
        }
        let script = r#"
import sys, time
from redis.sentinel import Sentinel
ports, want = [int(p) for p in sys.argv[1:4]], int(sys.argv[4])
sentinel = Sentinel([("127.0.0.1", p) for p in ports], socket_timeout=2)
assert sentinel.discover_master("mymaster") == ("127.0.0.1", want), sentinel.discover_master("mymaster")
assert len(sentinel.discover_slaves("mymaster")) == 2, sentinel.discover_slaves("mymaster")
primary = sentinel.master_for("mymaster", socket_timeout=2)
primary.set("from-redis-py", "hello")
assert primary.get("from-redis-py") == b"hello"
replica = sentinel.slave_for("mymaster", socket_timeout=2)
for _ in range(100):
    if replica.get("from-redis-py") == b"hello":
        break
    time.sleep(0.05)
else:
    sys.exit("the replica never had the key")
print("redis-py ok")
"#;
        let mut args: Vec<String> = sentinels.iter().map(|s| s.port.to_string()).collect();
        args.push(primary.port.to_string());
        let out = Command::new(python)
            .arg("-c")
            .arg(script)
            .args(&args)
            .output()
            .expect("run python");
        assert!(
            out.status.success(),
            "redis-py: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!(
        "sentinel scenario: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

async fn info_field(
    con: &mut redis::aio::MultiplexedConnection,
    section: &str,
    name: &str,
) -> String {
    let info = common::stm::text(&ok(con, &["INFO", section]).await);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// What Sentinel reads from a replica's INFO (`slave_priority`, `replica_announced`) follows the
/// settings, and `replica-announce-ip|port` is what the primary (a real redis-server) shows.
#[tokio::test]
async fn replica_priority_and_announced_address() {
    let redis = RealRedis::start();
    let port = redis.port;
    let server = TestServer::start_with(move |c| {
        c.replicaof = format!("127.0.0.1 {port}");
        c.replica_announce_ip = "10.1.2.3".into();
        c.replica_announce_port = 7777;
    })
    .await;
    let mut primary = redis.client().await;
    common::until("the announced replica", async || {
        info_field(&mut primary, "replication", "slave0")
            .await
            .starts_with("ip=10.1.2.3,port=7777,state=online")
    })
    .await;
    let mut replica = server.client().await;
    assert_eq!(
        info_field(&mut replica, "replication", "slave_priority").await,
        "100"
    );
    assert_eq!(
        info_field(&mut replica, "replication", "replica_announced").await,
        "1"
    );
    ok(&mut replica, &["CONFIG", "SET", "replica-priority", "0"]).await;
    ok(&mut replica, &["CONFIG", "SET", "replica-announced", "no"]).await;
    assert_eq!(
        info_field(&mut replica, "replication", "slave_priority").await,
        "0"
    );
    assert_eq!(
        info_field(&mut replica, "replication", "replica_announced").await,
        "0"
    );
    ok(&mut replica, &["CONFIG", "SET", "slave-priority", "7"]).await;
    assert_eq!(
        ok(&mut replica, &["CONFIG", "GET", "replica-priority"]).await,
        Value::Array(vec![
            Value::BulkString(b"replica-priority".to_vec()),
            Value::BulkString(b"7".to_vec())
        ])
    );
}

/// Sentinel's moves, one at a time: a replica moved to its promoted sibling (`REPLICAOF NO ONE`
/// there) continues its history (`+CONTINUE`, no full sync), and so does the old primary made a
/// replica of it, as with Redis's PSYNC2.
#[tokio::test]
async fn moved_replicas_and_a_demoted_primary_continue_by_partial_sync() {
    let primary = TestServer::start().await;
    let port = primary.addr.port();
    let heir = TestServer::start_with(move |c| c.replicaof = format!("127.0.0.1 {port}")).await;
    let other = TestServer::start_with(move |c| c.replicaof = format!("127.0.0.1 {port}")).await;
    let (mut p, mut h, mut o) = (
        primary.client().await,
        heir.client().await,
        other.client().await,
    );
    ok(&mut p, &["SET", "before", "1"]).await;
    caught_up(&mut p, &mut h).await;
    caught_up(&mut p, &mut o).await;

    ok(&mut h, &["REPLICAOF", "NO", "ONE"]).await;
    let heir_port = heir.addr.port().to_string();
    ok(&mut o, &["REPLICAOF", "127.0.0.1", &heir_port]).await;
    ok(&mut p, &["REPLICAOF", "127.0.0.1", &heir_port]).await;
    ok(&mut h, &["SET", "after", "2"]).await;
    caught_up(&mut h, &mut o).await;
    caught_up(&mut h, &mut p).await;
    assert_eq!(info_field(&mut h, "stats", "sync_partial_ok").await, "2");
    assert_eq!(info_field(&mut h, "stats", "sync_full").await, "0");
    for con in [&mut o, &mut p] {
        assert_eq!(
            ok(con, &["MGET", "before", "after"]).await,
            Value::Array(vec![
                Value::BulkString(b"1".to_vec()),
                Value::BulkString(b"2".to_vec())
            ])
        );
        assert_eq!(
            info_field(con, "replication", "master_replid").await,
            info_field(&mut h, "replication", "master_replid").await
        );
    }
}
