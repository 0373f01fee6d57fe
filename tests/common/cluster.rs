//! Cluster-mode test harness: real `stmd` nodes (the release binary) on 127.0.0.x ports, driven
//! with redis-cli, and the `stmd cluster` admin tool.

use std::ffi::OsStr;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// What every cluster test needs first: redis-cli and a throwaway Postgres. None, with a message,
/// when either is missing (`PgCluster::start` fails instead when `.ci/run` requires Postgres).
pub fn cluster_prerequisites() -> Option<super::postgres::PgCluster> {
    if !super::redis_cli_available() {
        eprintln!("\n*** SKIPPED: redis-cli is not installed ***\n");
        return None;
    }
    super::postgres::PgCluster::start()
}

pub fn free_port(ip: &str) -> u16 {
    TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// One stmd cluster node, killed when dropped.
pub struct Node {
    pub ip: &'static str,
    pub port: u16,
    dir: tempfile::TempDir,
    url: String,
    /// `--cluster-node-timeout`, in ms.
    node_timeout_ms: u64,
    child: Option<Child>,
}

impl Node {
    pub fn start(ip: &'static str, port: u16, url: &str, node_timeout_ms: u64) -> Node {
        let mut node = Node {
            ip,
            port,
            dir: tempfile::tempdir().expect("tempdir"),
            url: url.to_string(),
            node_timeout_ms,
            child: None,
        };
        node.spawn();
        node
    }

    /// Starts (or restarts) the node's process in its directory, and waits for its PING.
    pub fn spawn(&mut self) {
        let child = Command::new(env!("CARGO_BIN_EXE_stmd"))
            .args(["--bind", self.ip, "--port", &self.port.to_string()])
            .args(["--cluster-enabled", "yes", "--database-url", &self.url])
            .args(["--cluster-node-timeout", &self.node_timeout_ms.to_string()])
            .args(["--log-level", "warn"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start stmd");
        self.child = Some(child);
        let started = Instant::now();
        while self.cli(&["PING"]) != "PONG" {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "node {} did not start",
                self.addr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `kill -9 <pid>`: no shutdown, no drain of queued rows.
    pub fn kill_9(&mut self) {
        let mut child = self.child.take().expect("running");
        super::send_signal(child.id(), "KILL");
        let _ = child.wait();
    }

    /// The running process's id (for `kill -STOP`/`-CONT` by PID).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    /// redis-cli's output, trimmed (errors print as their text when stdout is not a terminal).
    pub fn cli<S: AsRef<OsStr>>(&self, args: &[S]) -> String {
        self.cli_with(&[], args)
    }

    /// redis-cli -c: follows MOVED redirections as a cluster client.
    pub fn cli_c<S: AsRef<OsStr>>(&self, args: &[S]) -> String {
        self.cli_with(&["-c"], args)
    }

    pub fn cli_with<S: AsRef<OsStr>>(&self, flags: &[&str], args: &[S]) -> String {
        let output = Command::new("redis-cli")
            .args(["-h", self.ip, "-p", &self.port.to_string()])
            .args(flags)
            .args(args)
            .output()
            .expect("run redis-cli");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// An INFO field, read from the section its name starts with (`cluster_…`, `stm_…`).
    pub fn info_field(&self, field: &str) -> String {
        let section = field.split('_').next().unwrap_or_default();
        let text = self.cli(&["INFO", section]);
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    pub fn info_count(&self, field: &str) -> u64 {
        self.info_field(field)
            .parse()
            .unwrap_or_else(|_| panic!("{field} on {}", self.addr()))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A Python that has redis-py, for the checks run with redis-py's cluster client: the one
/// STMD_CLUSTER_PYTHON names (`.ci/run` sets it, and then it must have redis-py), else the
/// conformance venv's (`conformance/venv` makes it). None, with a loud message naming the `check`
/// that did not run, when there is none.
pub fn python_with_redis_py(check: &str) -> Option<PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var_os("STMD_CLUSTER_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("conformance/.venv/bin/python"));
    let has_redis_py = Command::new(&python)
        .args(["-c", "import redis"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_redis_py {
        return Some(python);
    }
    assert!(
        std::env::var_os("STMD_CLUSTER_PYTHON").is_none(),
        "STMD_CLUSTER_PYTHON={} has no redis-py",
        python.display()
    );
    eprintln!("\n*** SKIPPED: no Python with redis-py (set STMD_CLUSTER_PYTHON or run conformance/venv); {check} did not run ***\n");
    None
}

/// `stmd cluster <args> --database-url <url>`.
pub fn admin(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stmd"))
        .arg("cluster")
        .args(args)
        .args(["--database-url", url])
        .output()
        .expect("run stmd cluster")
}

/// A process's stdout and stderr, as text.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Waits until `check` holds, for up to `limit`; returns how long it took.
pub fn eventually(what: &str, limit: Duration, mut check: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

/// Real redis-servers in cluster mode on 127.0.0.1, killed when dropped: [`RealRedisCluster::start`]
/// leaves them apart and without slots, [`RealRedisCluster::joined`] gives them the slots as
/// `redis-cli --cluster create` lays them out and joins them. The reference for stmd's cluster
/// replies.
pub struct RealRedisCluster {
    children: Vec<Child>,
    ports: Vec<u16>,
    bus_ports: Vec<u16>,
    dir: tempfile::TempDir,
}

impl RealRedisCluster {
    pub fn start(nodes: usize) -> RealRedisCluster {
        let mut cluster = RealRedisCluster {
            children: Vec::new(),
            ports: Vec::new(),
            bus_ports: Vec::new(),
            dir: tempfile::tempdir().expect("tempdir"),
        };
        for i in 0..nodes {
            let (port, bus) = (free_port("127.0.0.1"), free_port("127.0.0.1"));
            let child = Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--cluster-port", &bus.to_string()])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-config-file", &format!("nodes-{i}.conf")])
                .arg("--dir")
                .arg(cluster.dir.path())
                .stdout(Stdio::null())
                .spawn()
                .expect("redis-server must be installed");
            cluster.children.push(child);
            cluster.ports.push(port);
            cluster.bus_ports.push(bus);
        }
        eventually("redis-server to start", Duration::from_secs(10), || {
            cluster
                .ports
                .iter()
                .all(|&p| cli_at(p, &["PING"]) == "PONG")
        });
        cluster
    }

    /// `nodes` servers sharing the slots and knowing each other, the cluster's state ok. Slots
    /// and MEETs by hand: `redis-cli --cluster create` waits in steps of a second.
    pub fn joined(nodes: usize) -> RealRedisCluster {
        let cluster = RealRedisCluster::start(nodes);
        let ranges = stmd::cluster::even_ranges(nodes);
        for (&port, (first, last)) in cluster.ports.iter().zip(ranges) {
            let (first, last) = (first.to_string(), last.to_string());
            let added = cli_at(port, &["CLUSTER", "ADDSLOTSRANGE", &first, &last]);
            assert_eq!(added, "OK", "ADDSLOTSRANGE {first} {last}");
        }
        // The bus ports are free ones, not port + 10000: MEET names them.
        for (port, bus) in cluster.ports[1..].iter().zip(&cluster.bus_ports[1..]) {
            let (port, bus) = (port.to_string(), bus.to_string());
            let met = cluster.cli(&["CLUSTER", "MEET", "127.0.0.1", &port, &bus]);
            assert_eq!(met, "OK", "MEET {port}");
        }
        eventually(
            "the redis cluster to converge",
            Duration::from_secs(10),
            || {
                cluster
                    .ports
                    .iter()
                    .all(|&p| cli_at(p, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
            },
        );
        cluster
    }

    /// The first node's address (it owns slot 0 when joined).
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.ports[0])
    }

    /// redis-cli's answer from the first node, trimmed.
    pub fn cli(&self, args: &[&str]) -> String {
        cli_at(self.ports[0], args)
    }
}

fn cli_at(port: u16, args: &[&str]) -> String {
    let output = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

impl Drop for RealRedisCluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
