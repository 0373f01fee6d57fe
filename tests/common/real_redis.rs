//! A real redis-server for differential tests: Debian's `redis-server` on a free loopback port,
//! without persistence, killed on drop. CI installs the package (`.ci/run`); a machine without
//! it fails the test that needs it, with the reason.
#![allow(dead_code)]

pub struct RealRedis {
    child: std::process::Child,
    pub port: u16,
}

impl RealRedis {
    pub fn start() -> RealRedis {
        Self::start_with(&[])
    }

    /// With extra arguments (`--dir …` to read and write a snapshot there).
    pub fn start_with(extra: &[&str]) -> RealRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("port");
        let child = std::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed (Debian package redis-server)");
        RealRedis { child, port }
    }

    /// The redis-server's process id (to stop and resume it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A connection, retried while the server starts (up to 5 s).
    pub async fn client(&self) -> redis::aio::MultiplexedConnection {
        super::connect_retrying(self.port, "redis-server").await
    }
}

impl Drop for RealRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
