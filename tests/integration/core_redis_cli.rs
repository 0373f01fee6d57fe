//! redis-cli against the real `stmd` binary: PING, SET/GET, RESP3 and `--pipe` mass insertion.
//! Skipped, loudly, where redis-cli is not installed (`.ci/run` installs redis-tools).

use crate::common;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn redis_cli_talks_to_the_binary() {
    if !common::redis_cli_available() {
        eprintln!("\n\n*** SKIPPED redis_cli_talks_to_the_binary: redis-cli is not installed (apt-get install redis-tools) ***\n");
        return;
    }
    let stmd = common::Binary::start(&[]);
    stmd.wait_accepting();
    assert_eq!(cli(&stmd, &["ping"]), "PONG\n");
    assert_eq!(cli(&stmd, &["set", "greeting", "hello world"]), "OK\n");
    assert_eq!(cli(&stmd, &["get", "greeting"]), "hello world\n");
    assert_eq!(cli(&stmd, &["--no-raw", "get", "nokey"]), "(nil)\n");
    assert_eq!(cli(&stmd, &["--no-raw", "incr", "n"]), "(integer) 1\n");
    assert_eq!(cli(&stmd, &["-3", "--no-raw", "get", "nokey"]), "(nil)\n");
    assert_eq!(
        cli(&stmd, &["--no-raw", "get"]),
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
    assert_eq!(cli(&stmd, &["dbsize"]), "10002\n");
    assert_eq!(cli(&stmd, &["get", "mass:9999"]), "value:9999\n");

    // SHUTDOWN from redis-cli stops the process with exit status 0.
    let mut stmd = stmd;
    let _ = Command::new("redis-cli")
        .args(["-p", &stmd.port.to_string(), "shutdown"])
        .output();
    let status = stmd.exit_within(Duration::from_secs(10));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

/// `redis-cli -p <port> <args>`: its output, which must be a success.
fn cli(stmd: &common::Binary, args: &[&str]) -> String {
    let output = Command::new("redis-cli")
        .args(["-p", &stmd.port.to_string()])
        .args(args)
        .output()
        .expect("run redis-cli");
    assert!(output.status.success(), "redis-cli {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}
