//! `--unixsocket` and `--unixsocketperm` on the real `stmd` binary: a client on the Unix socket
//! (the `redis` crate, and redis-cli where it is installed) is served like a TCP one and is
//! shown as Redis 7 shows it (`addr=<path>:0`, flag `U`, MONITOR's `unix:<path>`); a file left at
//! the path is replaced at start, the socket gets the permissions asked for and is removed at
//! shutdown.

use redis::Commands;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn unix_client(path: &std::path::Path) -> redis::Connection {
    let addr = redis::ConnectionAddr::Unix(path.to_path_buf());
    let client = redis::Client::open(addr).expect("client");
    client
        .get_connection()
        .expect("connect over the Unix socket")
}

/// The server, killed if the test ends early.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn clients_on_the_unix_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("stmd.sock");
    // A file left at the path (a crashed server's socket) is replaced, as Redis does.
    std::fs::write(&socket, b"stale").expect("stale file");
    let mut stmd = Command::new(env!("CARGO_BIN_EXE_stmd"));
    // The environment must not change what the flags say.
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("STMD_")) {
        stmd.env_remove(key);
    }
    let child = stmd
        .args(["--port", "0", "--no-database", "--log-level", "warn"])
        .args(["--unixsocketperm", "700", "--enable-debug-command", "local"])
        .arg("--unixsocket")
        .arg(&socket)
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn stmd");
    let mut child = Killed(child);
    let started = Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(started.elapsed() < Duration::from_secs(10), "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let meta = std::fs::metadata(&socket).expect("socket");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);

    let path = socket.display().to_string();
    let mut con = unix_client(&socket);
    let _: () = con.set("k", "v").expect("SET");
    assert_eq!(con.get::<_, String>("k").expect("GET"), "v");
    let info: String = redis::cmd("CLIENT")
        .arg("INFO")
        .query(&mut con)
        .expect("CLIENT INFO");
    assert!(
        info.contains(&format!(" addr={path}:0 laddr={path}:0 ")) && info.contains(" flags=U "),
        "{info}"
    );
    let config: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("unixsocket*")
        .query(&mut con)
        .expect("CONFIG GET");
    assert_eq!(
        config,
        ["unixsocket", path.as_str(), "unixsocketperm", "700"]
    );
    let immutable = redis::cmd("CONFIG")
        .arg("SET")
        .arg("unixsocketperm")
        .arg("777")
        .query::<String>(&mut con)
        .expect_err("immutable");
    assert!(
        immutable.to_string().contains("can't set immutable config"),
        "{immutable}"
    );
    // No TCP port (`--port 0` with a Unix socket), as Redis's `port 0`.
    let server: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut con)
        .expect("INFO");
    assert!(server.contains("tcp_port:0\r\n"), "{server}");
    // A Unix socket client is local (`enable-debug-command local`).
    let debug: String = redis::cmd("DEBUG")
        .arg("SLEEP")
        .arg("0")
        .query(&mut con)
        .expect("DEBUG over the Unix socket");
    assert_eq!(debug, "OK");

    // MONITOR names the socket's clients `unix:<path>`.
    let mut monitor = unix_client(&socket);
    let ok: String = redis::cmd("MONITOR").query(&mut monitor).expect("MONITOR");
    assert_eq!(ok, "OK");
    let _: () = con.set("watched", "1").expect("SET");
    let line = monitor.recv_response().expect("a MONITOR line");
    let line = <String as redis::FromRedisValue>::from_redis_value(line).expect("status");
    assert!(
        line.contains(&format!("[0 unix:{path}] \"SET\" \"watched\" \"1\"")),
        "{line}"
    );

    if Command::new("redis-cli").arg("--version").output().is_ok() {
        let pong = Command::new("redis-cli")
            .arg("-s")
            .arg(&socket)
            .arg("PING")
            .output()
            .expect("redis-cli -s");
        assert_eq!(String::from_utf8_lossy(&pong.stdout).trim(), "PONG");
    }

    // Shutdown removes the socket.
    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut con);
    let status = child.0.wait().expect("stmd exits");
    assert!(status.success(), "{status}");
    assert!(!socket.exists(), "the socket is removed at shutdown");
}
