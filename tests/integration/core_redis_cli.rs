//! redis-cli against the real `stmd` binary: PING, SET/GET, RESP3 and `--pipe` mass insertion.
//! Skipped, loudly, where redis-cli is not installed (`.ci/run` installs redis-tools).

use std::io::Write;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn redis_cli_available() -> bool {
    Command::new("redis-cli")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The stmd binary on a free port, killed when dropped.
struct Binary {
    child: Child,
    port: u16,
}

impl Binary {
    fn start() -> Binary {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_stmd"))
            .args(["--port", &port.to_string(), "--log-level", "warn"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start stmd");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "stmd did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Binary { child, port }
    }

    fn cli(&self, args: &[&str]) -> String {
        let output = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("run redis-cli");
        assert!(output.status.success(), "redis-cli {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn redis_cli_talks_to_the_binary() {
    if !redis_cli_available() {
        eprintln!("\n\n*** SKIPPED redis_cli_talks_to_the_binary: redis-cli is not installed (apt-get install redis-tools) ***\n");
        return;
    }
    let stmd = Binary::start();
    assert_eq!(stmd.cli(&["ping"]), "PONG\n");
    assert_eq!(stmd.cli(&["set", "greeting", "hello world"]), "OK\n");
    assert_eq!(stmd.cli(&["get", "greeting"]), "hello world\n");
    assert_eq!(stmd.cli(&["--no-raw", "get", "nokey"]), "(nil)\n");
    assert_eq!(stmd.cli(&["--no-raw", "incr", "n"]), "(integer) 1\n");
    assert_eq!(stmd.cli(&["-3", "--no-raw", "get", "nokey"]), "(nil)\n");
    assert_eq!(
        stmd.cli(&["--no-raw", "get"]),
        "(error) ERR wrong number of arguments for 'get' command\n"
    );

    // Mass insertion: raw RESP on stdin, as the Redis documentation describes.
    let mut input = Vec::new();
    for i in 0..10_000 {
        let (key, value) = (format!("mass:{i}"), format!("value:{i}"));
        input.extend(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
                key.len(),
                value.len()
            )
            .into_bytes(),
        );
    }
    let mut pipe = Command::new("redis-cli")
        .args(["-p", &stmd.port.to_string(), "--pipe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli --pipe");
    pipe.stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write");
    let output = pipe.wait_with_output().expect("redis-cli --pipe");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    assert!(report.contains("errors: 0, replies: 10000"), "{report}");
    assert_eq!(stmd.cli(&["dbsize"]), "10002\n");
    assert_eq!(stmd.cli(&["get", "mass:9999"]), "value:9999\n");

    // SHUTDOWN from redis-cli stops the process with exit status 0.
    let mut stmd = stmd;
    let _ = Command::new("redis-cli")
        .args(["-p", &stmd.port.to_string(), "shutdown"])
        .output();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = stmd.child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "stmd did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}
