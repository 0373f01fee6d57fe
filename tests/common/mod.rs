//! Test harness: a real stmd server in-process on 127.0.0.1:0, reached over real TCP.
#![allow(dead_code)]

pub mod cluster;
pub mod postgres;
pub mod real_redis;
pub mod rows;
pub mod search;
pub mod stm;
pub mod stm_context;

use std::net::SocketAddr;
use std::time::Duration;
use stmd::config::Config;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A running server; dropping it shuts the server down.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub task: Option<tokio::task::JoinHandle<stmd::Result<()>>>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(|_| {}).await
    }

    /// Starts a server whose configuration `tweak` may change first.
    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> TestServer {
        // No database unless a test asks for one: tests must not leave files behind.
        let mut config = Config {
            port: 0,
            no_database: true,
            ..Config::default()
        };
        tweak(&mut config);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(stmd::server::run(listener, config, async move {
            let _ = stopped.await;
        }));
        TestServer {
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Starts a server whose files (snapshot, append-only file when `appendonly`) live in `dir`,
    /// with DEBUG enabled: the durability tests restart from, reload and inspect those files.
    pub async fn start_in(dir: &std::path::Path, appendonly: bool) -> TestServer {
        let dir = dir.to_path_buf();
        Self::start_with(move |c| {
            c.dir = dir;
            c.appendonly = appendonly;
            c.enable_debug_command = stmd::config::ProtectedCommand::Yes;
        })
        .await
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    pub fn url_resp3(&self) -> String {
        format!("redis://{}/?protocol=resp3", self.addr)
    }

    /// A multiplexed async connection speaking RESP2.
    pub async fn client(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .expect("client")
            .get_multiplexed_async_connection()
            .await
            .expect("connect")
    }

    /// A multiplexed async connection speaking RESP3 (HELLO 3).
    pub async fn client3(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url_resp3())
            .expect("client")
            .get_multiplexed_async_connection()
            .await
            .expect("connect")
    }

    /// A raw TCP connection for byte-exact protocol tests.
    pub async fn raw(&self) -> RawConn {
        RawConn {
            stream: TcpStream::connect(self.addr).await.expect("connect"),
        }
    }

    /// Stops the server and waits for it to return.
    pub async fn shutdown(mut self) -> stmd::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.expect("server task"),
            None => Ok(()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The real binary on a free port, in its own process (so its memory figures are the server's
/// alone), with the `STMD_*` environment cleared; killed on drop.
pub struct Binary {
    child: std::process::Child,
    pub port: u16,
}

impl Binary {
    /// Starts `stmd --port <free> --no-database --log-level warn <extra>`.
    pub fn start(extra: &[&str]) -> Binary {
        Binary::spawn(None, "warn", extra, &[])
    }

    /// Starts `stmd --port <free> --no-database --log-level <level> <extra>`, for tests that
    /// read the lines below warnings.
    pub fn start_at_level(level: &str, extra: &[&str]) -> Binary {
        Binary::spawn(None, level, extra, &[])
    }

    /// Starts `stmd --port <free> --no-database --log-level warn <extra>` with `env` set.
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Binary {
        Binary::spawn(None, "warn", extra, env)
    }

    /// Starts `stmd <file> --port <free> --no-database --log-level warn <extra>` with `env` set.
    pub fn start_from_file(file: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Binary {
        Binary::spawn(Some(file), "warn", extra, env)
    }

    fn spawn(
        file: Option<&std::path::Path>,
        level: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Binary {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("port");
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_stmd"));
        for (key, _) in std::env::vars() {
            if key.starts_with("STMD_") {
                cmd.env_remove(key);
            }
        }
        let child = cmd
            .args(file)
            .args(["--port", &port.to_string(), "--no-database"])
            .args(["--log-level", level])
            .args(extra)
            .envs(env.iter().copied())
            .spawn()
            .expect("spawn stmd");
        Binary { child, port }
    }

    /// A connection, retried while the server starts (up to 5 s).
    pub async fn client(&self) -> redis::aio::MultiplexedConnection {
        connect_retrying(self.port, "stmd").await
    }

    /// A raw TCP connection for byte-exact protocol tests.
    pub async fn raw(&self) -> RawConn {
        RawConn {
            stream: TcpStream::connect(("127.0.0.1", self.port))
                .await
                .expect("connect"),
        }
    }

    /// Sends the signal (`TERM`, `INT`, …) and waits for the server to exit.
    pub fn stop_with(&mut self, signal: &str) -> std::process::ExitStatus {
        self.signal(signal);
        self.child.wait().expect("stmd exits")
    }

    /// The process id of the started process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (a `kill -s` name) without waiting.
    pub fn signal(&self, signal: &str) {
        send_signal(self.child.id(), signal);
    }

    /// Blocks until the server accepts TCP connections (up to 10 s), for tests driving it with
    /// command-line tools.
    pub fn wait_accepting(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "stmd did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The exit status if the process ends within `limit`.
    pub fn exit_within(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `kill -s <signal> <pid>` (`TERM`, `STOP`, `KILL`, …), for a process a test started.
pub fn send_signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -s {signal} {pid}");
}

/// Whether redis-cli is installed (`.ci/run` installs redis-tools; tests skip loudly without it).
pub fn redis_cli_available() -> bool {
    std::process::Command::new("redis-cli")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Waits until `check` holds, polling every 50 ms, up to 10 s (then fails naming `what`).
pub async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A connection to a server starting in another process on `port`, retried for up to 5 s.
pub async fn connect_retrying(port: u16, server: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).expect("client");
    for _ in 0..100 {
        if let Ok(con) = client.get_multiplexed_async_connection().await {
            return con;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{server} did not start on port {port}");
}

/// A plain socket: send bytes, read exactly the bytes expected back.
pub struct RawConn {
    pub stream: TcpStream,
}

impl RawConn {
    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// Reads until `n` bytes arrived (or fails after 5 s).
    pub async fn read_n(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        tokio::time::timeout(Duration::from_secs(5), self.stream.read_exact(&mut buf))
            .await
            .expect("timed out reading reply")
            .expect("read");
        buf
    }

    /// Sends `request` and asserts the reply is exactly `expected`.
    pub async fn roundtrip(&mut self, request: &[u8], expected: &[u8]) {
        self.send(request).await;
        let got = self.read_n(expected.len()).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "reply to {:?}",
            String::from_utf8_lossy(request)
        );
    }

    /// Reads exactly one RESP2/RESP3 reply frame (fails after 5 s).
    pub async fn read_reply(&mut self) -> Vec<u8> {
        let mut frame = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), self.read_frame(&mut frame))
            .await
            .expect("timed out reading reply");
        frame
    }

    async fn read_line(&mut self, frame: &mut Vec<u8>) -> Vec<u8> {
        let start = frame.len();
        while !frame[start..].ends_with(b"\r\n") {
            let mut byte = [0u8; 1];
            self.stream.read_exact(&mut byte).await.expect("read");
            frame.push(byte[0]);
        }
        frame[start + 1..frame.len() - 2].to_vec()
    }

    fn read_frame<'a>(
        &'a mut self,
        frame: &'a mut Vec<u8>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>> {
        Box::pin(async move {
            let kind_at = frame.len();
            let header = self.read_line(frame).await;
            let kind = frame[kind_at];
            let n: i64 = std::str::from_utf8(&header)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            match kind {
                b'$' | b'=' | b'!' if n >= 0 => {
                    let mut body = vec![0u8; n as usize + 2];
                    self.stream.read_exact(&mut body).await.expect("read");
                    frame.extend_from_slice(&body);
                }
                b'*' | b'~' | b'>' | b'%' | b'|' if n > 0 => {
                    let items = if matches!(kind, b'%' | b'|') {
                        n * 2
                    } else {
                        n
                    };
                    for _ in 0..items {
                        self.read_frame(frame).await;
                    }
                }
                _ => {}
            }
        })
    }

    /// Sends one command and returns its whole reply frame.
    pub async fn command(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(&resp(args)).await;
        self.read_reply().await
    }

    /// True when the server closed the connection (EOF within 5 s).
    pub async fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 256];
        loop {
            match tokio::time::timeout(Duration::from_secs(5), self.stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }
}

/// Encodes a command as a RESP multibulk request.
pub fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Ends the test process if the test that holds it runs longer than `limit`: a script or a
/// blocked client left running forever would otherwise keep the runtime (and CI) from ever
/// finishing. Dropping it (the test ended, passed or failed) disarms it, so a long suite is not
/// cut short by an earlier test's timer.
pub struct Watchdog(std::sync::Arc<std::sync::atomic::AtomicBool>);

pub fn watchdog(name: &'static str, limit: Duration) -> Watchdog {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let watched = done.clone();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if watched.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if !watched.load(Ordering::Relaxed) {
            eprintln!("{name}: a test ran for {limit:?}; aborting");
            std::process::exit(101);
        }
    });
    Watchdog(done)
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
