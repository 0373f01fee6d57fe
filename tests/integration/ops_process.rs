//! The process around the server, as Redis's options set it up: `daemonize` (a detached process
//! in a session of its own), `supervised` (systemd's `sd_notify`, upstart's SIGSTOP) and
//! `tcp-backlog` (the listen queue, as `ss` shows it). Each test runs the real binary.

use crate::common;
use crate::ops_config_file::config_get;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant};

/// Fields of `/proc/<pid>/stat` after the command name: state, ppid, pgrp, session, …
fn proc_stat(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    Some(after_name.split_whitespace().map(str::to_string).collect())
}

/// Polls `check` every 20 ms for up to 10 s.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn assert_serves(con: &mut redis::aio::MultiplexedConnection) {
    let pong: String = redis::cmd("PING").query_async(con).await.expect("PING");
    assert_eq!(pong, "PONG");
}

/// Kills the daemon if the test ends before it stopped it.
struct Daemon(u32);

impl Drop for Daemon {
    fn drop(&mut self) {
        if proc_stat(self.0).is_some_and(|f| f[0] != "Z") {
            // Not `common::send_signal`: no assertion (a panic) inside a drop.
            let _ = std::process::Command::new("kill")
                .args(["-9", &self.0.to_string()])
                .status();
        }
    }
}

#[tokio::test]
async fn daemonize_detaches_into_a_session_of_its_own_and_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("stmd.pid");
    let (dir_arg, pid_arg) = (
        dir.path().display().to_string(),
        pidfile.display().to_string(),
    );
    let mut server = common::Binary::start(&[
        "--daemonize",
        "yes",
        "--pidfile",
        &pid_arg,
        "--dir",
        &dir_arg,
    ]);
    let status = server.exit_within(Duration::from_secs(10));
    assert!(
        status.is_some_and(|s| s.success()),
        "the started process exits at once: {status:?}"
    );
    eventually("the pidfile", || pidfile.exists());
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("pidfile")
        .trim()
        .parse()
        .expect("a pid");
    let _daemon = Daemon(pid);
    assert_ne!(pid, server.pid(), "the daemon is the forked child");
    let stat = proc_stat(pid).expect("the daemon runs");
    assert_eq!(stat[3], pid.to_string(), "a session of its own (setsid)");
    let mut con = server.client().await;
    assert_serves(&mut con).await;
    assert_eq!(config_get(&mut con, "daemonize").await, "yes");
    common::send_signal(pid, "TERM");
    eventually("the pidfile removed at shutdown", || !pidfile.exists());
}

/// A datagram socket standing for systemd's notification socket.
fn notify_socket(dir: &Path) -> (UnixDatagram, String) {
    let path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("bind the notify socket");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    (socket, path.display().to_string())
}

fn receive(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 1024];
    let n = socket.recv(&mut buf).expect("a notification within 10 s");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[tokio::test]
async fn supervised_systemd_says_ready_once_it_serves_and_stopping_at_shutdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (socket, path) = notify_socket(dir.path());
    let mut server = common::Binary::start_with_env(
        &["--supervised", "systemd"],
        &[("NOTIFY_SOCKET", path.as_str())],
    );
    let ready = receive(&socket);
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready:?}");
    assert!(
        ready.contains("STATUS=Ready to accept connections"),
        "{ready:?}"
    );
    // Ready means serving: the first connection needs no retry.
    let client = redis::Client::open(format!("redis://127.0.0.1:{}", server.port)).expect("url");
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .expect("connects at once after READY=1");
    assert_serves(&mut con).await;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut con)
        .await
        .expect("INFO");
    assert!(info.contains("process_supervised:systemd\r\n"), "{info}");
    let status = server.stop_with("TERM");
    assert!(status.success(), "{status}");
    assert_eq!(receive(&socket), "STOPPING=1\n");
}

#[tokio::test]
async fn supervised_auto_finds_an_abstract_socket_and_no_sends_nothing() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("stmd-test-notify-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(&name).expect("name");
    let socket = UnixDatagram::bind_addr(&address).expect("bind abstract");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let env_value = format!("@{name}");
    let env = [("NOTIFY_SOCKET", env_value.as_str())];
    let mut server = common::Binary::start_with_env(&["--supervised", "auto"], &env);
    assert!(receive(&socket).contains("READY=1"));
    let status = server.stop_with("TERM");
    assert!(status.success(), "{status}");
    assert_eq!(receive(&socket), "STOPPING=1\n");

    let mut server = common::Binary::start_with_env(&["--supervised", "no"], &env);
    let mut con = server.client().await;
    assert_serves(&mut con).await;
    let status = server.stop_with("TERM");
    assert!(status.success(), "{status}");
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let mut buf = [0u8; 64];
    assert!(
        socket.recv(&mut buf).is_err(),
        "supervised no: no notification"
    );
}

#[tokio::test]
async fn supervised_upstart_stops_itself_until_resumed() {
    let server =
        common::Binary::start_with_env(&["--supervised", "upstart"], &[("UPSTART_JOB", "stmd")]);
    let pid = server.pid();
    eventually("the SIGSTOP", || {
        proc_stat(pid).is_some_and(|f| f[0] == "T")
    });
    common::send_signal(pid, "CONT");
    let mut con = server.client().await;
    assert_serves(&mut con).await;
}

#[tokio::test]
async fn tcp_backlog_is_the_listen_queue() {
    let server = common::Binary::start(&["--tcp-backlog", "100"]);
    let mut con = server.client().await;
    assert_eq!(config_get(&mut con, "tcp-backlog").await, "100");
    // `ss` shows a listening socket's backlog as its Send-Q.
    let out = std::process::Command::new("ss")
        .args(["-ltnH", &format!("sport = :{}", server.port)])
        .output()
        .expect("ss (iproute2)");
    let listing = String::from_utf8_lossy(&out.stdout);
    let send_q: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert_eq!(send_q, ["100"], "{listing}");
}
