//! Cluster-mode test harness: real `stmd` nodes (the release binary) on 127.0.0.x ports, driven
//! with redis-cli, and the `stmd cluster` admin tool.

use std::ffi::OsStr;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn redis_cli_available() -> bool {
    Command::new("redis-cli")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What every cluster test needs first: redis-cli and a throwaway Postgres. None, with a message,
/// when either is missing (`PgCluster::start` fails instead when `.ci/run` requires Postgres).
pub fn cluster_prerequisites() -> Option<super::postgres::PgCluster> {
    if !redis_cli_available() {
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
        let status = Command::new("kill")
            .args(["-9", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
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

/// The arguments of an STM.CAPTURE of one exchange: `user` says `said` in `channel` of `server`
/// (`DM` for none), and the bot answers `answer` in `lineage` (`-` for none).
pub fn stm_capture(
    user: &str,
    channel: &str,
    server: &str,
    said: &str,
    lineage: &str,
    answer: &str,
) -> Vec<String> {
    [
        "STM.CAPTURE",
        "USER",
        user,
        "CHANNEL",
        channel,
        "SERVER",
        server,
        "MSG",
        "user",
        "-",
        said,
        "REPLY",
        "-",
        lineage,
        "-",
        answer,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
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
