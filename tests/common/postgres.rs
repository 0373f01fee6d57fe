//! A throwaway PostgreSQL cluster for tests: `initdb` in a temp dir, `pg_ctl` on a free port.
//! PostgreSQL refuses to run as root, so as root the commands run as the `postgres` user.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct PgCluster {
    pub dir: tempfile::TempDir,
    pub port: u16,
    bin: PathBuf,
    as_postgres: bool,
}

/// The newest installed PostgreSQL's bin directory.
fn find_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("pg_ctl").exists() && p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

impl PgCluster {
    /// Starts a cluster, or returns None (loudly) when PostgreSQL is not installed — unless
    /// STMD_REQUIRE_POSTGRES=1, when that is a failure.
    pub fn start() -> Option<PgCluster> {
        let Some(bin) = find_bin() else {
            if std::env::var("STMD_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("STMD_REQUIRE_POSTGRES=1 but no PostgreSQL server is installed");
            }
            eprintln!("\n*** SKIPPED: no PostgreSQL server installed (apt-get install postgresql); Postgres tests did not run ***\n");
            return None;
        };
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout.starts_with(b"0\n"))
            .unwrap_or(false);
        let dir = tempfile::Builder::new()
            .prefix("stmd-pg-")
            .tempdir()
            .expect("temp dir");
        if as_postgres {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(status.success());
        }
        let cluster = PgCluster {
            dir,
            port: free_port(),
            bin,
            as_postgres,
        };
        let data = cluster.data();
        cluster.run(
            "initdb",
            &[
                "-D",
                &data,
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        cluster.start_server();
        Some(cluster)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        let output = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(args)
                .output()
        } else {
            Command::new(&exe).args(args).output()
        }
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(
            output.status.success(),
            "{tool} {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// (Re)starts the server on the same port and data.
    pub fn start_server(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log").display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
    }

    /// Stops the server at once (as a crash or an outage would).
    pub fn stop_server(&self) {
        self.run(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.data();
        let exe = self.bin.join("pg_ctl");
        let args = ["-D", data.as_str(), "-m", "immediate", "-w", "stop"];
        let _ = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(args)
                .output()
        } else {
            Command::new(&exe).args(args).output()
        };
    }
}
