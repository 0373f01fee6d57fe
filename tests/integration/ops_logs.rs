//! The real binary: `--version`, and `--log-format json` writing one parseable object per line.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn stmd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stmd"));
    // The environment must not change what the flags say.
    for (key, _) in std::env::vars() {
        if key.starts_with("STMD_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

#[test]
fn version_flag_prints_the_crate_version() {
    let out = stmd().arg("--version").output().expect("run stmd");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("stmd {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn json_logs_are_one_object_per_line_from_start_to_stop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = stmd()
        .args(["--log-format", "json", "--port", "0", "--bind", "127.0.0.1"])
        .args(["--maxclients", "1"])
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stmd");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines: Vec<serde_json::Value> = Vec::new();
    let next = |lines: &mut Vec<serde_json::Value>| {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a log line in time");
        let value: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        lines.push(value.clone());
        value
    };
    let ready = loop {
        let value = next(&mut lines);
        if value["message"] == "stmd ready to accept connections" {
            break value;
        }
    };
    assert_eq!(ready["level"], "INFO");
    assert_eq!(ready["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(ready["database"], "sqlite");
    let addr = ready["addr"].as_str().expect("addr field").to_string();
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );
    assert!(ready["timestamp"].is_string());

    // A few commands log nothing at info; SHUTDOWN logs the request and the stop.
    let mut conn = TcpStream::connect(&addr).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok();
    conn.write_all(b"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
        .expect("write");
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while got.len() < b"+PONG\r\n+OK\r\n".len() {
        let n = conn.read(&mut buf).expect("read");
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"+PONG\r\n+OK\r\n");
    // A second client is refused (maxclients 1): a protection that logs one warning.
    let mut refused = TcpStream::connect(&addr).expect("connect");
    refused.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut text = String::new();
    refused.read_to_string(&mut text).expect("read refusal");
    assert_eq!(text, "-ERR max number of clients reached\r\n");
    conn.write_all(b"*1\r\n$8\r\nSHUTDOWN\r\n").expect("write");

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "no stop line: {lines:?}");
        if next(&mut lines)["message"] == "stmd stopped" {
            break;
        }
    }
    let status = child.wait().expect("wait");
    assert!(status.success());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .ok();
    assert_eq!(stderr, "", "nothing on stderr");
    for line in &lines {
        assert!(
            line["level"].is_string() && line["message"].is_string(),
            "{line}"
        );
        // Never one line per command at info.
        let message = line["message"].as_str().unwrap_or_default();
        assert!(!message.to_ascii_lowercase().contains("ping"), "{line}");
    }
    assert!(lines
        .iter()
        .any(|l| l["message"] == "scope rows go to the database" && l["database"] == "sqlite"));
    let refusal = lines
        .iter()
        .find(|l| l["message"] == "max number of clients reached: connection refused")
        .unwrap_or_else(|| panic!("no refusal line: {lines:?}"));
    assert_eq!(refusal["level"], "WARN");
    assert_eq!(refusal["maxclients"], 1);
    assert_eq!(refusal["rejected"], 1);
}

/// `--logfile` (appended to, opened anew per line: a file moved away by logrotate is followed by
/// a new one) and `--pidfile` (written at start, removed at shutdown); a log file that cannot be
/// opened stops the start, as in Redis.
#[test]
fn logfile_and_pidfile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (log, pid) = (dir.path().join("stmd.log"), dir.path().join("stmd.pid"));
    let mut child = stmd()
        .args(["--log-format", "json", "--port", "0", "--bind", "127.0.0.1"])
        .args(["--enable-debug-command", "yes"])
        .arg("--logfile")
        .arg(&log)
        .arg("--pidfile")
        .arg(&pid)
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn stmd");
    let lines = |path: &std::path::Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    };
    let wait_for = |path: &std::path::Path, message: &str| -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(line) = lines(path).into_iter().find(|l| l["message"] == message) {
                return line;
            }
            assert!(Instant::now() < deadline, "no {message:?} in {path:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let ready = wait_for(&log, "stmd ready to accept connections");
    assert_eq!(
        std::fs::read_to_string(&pid).expect("pidfile"),
        format!("{}\n", child.id())
    );
    let addr = ready["addr"].as_str().expect("addr").to_string();
    let mut conn = TcpStream::connect(&addr).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut ask = |request: &[u8], expected: &[u8]| {
        conn.write_all(request).expect("write");
        let mut got = vec![0u8; expected.len()];
        conn.read_exact(&mut got).expect("read");
        assert_eq!(got, expected);
    };
    ask(
        b"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$7\r\npidfile\r\n",
        format!(
            "*2\r\n$7\r\npidfile\r\n${}\r\n{}\r\n",
            pid.display().to_string().len(),
            pid.display()
        )
        .as_bytes(),
    );
    // logrotate moves the file away: the next line starts a new one.
    let rotated = dir.path().join("stmd.log.1");
    std::fs::rename(&log, &rotated).expect("rotate");
    ask(
        b"*3\r\n$5\r\nDEBUG\r\n$3\r\nLOG\r\n$7\r\nrotated\r\n",
        b"+OK\r\n",
    );
    wait_for(&log, "DEBUG LOG: rotated");
    ask(b"*1\r\n$8\r\nSHUTDOWN\r\n", b"");
    assert!(child.wait().expect("wait").success());
    wait_for(&log, "stmd stopped");
    assert!(!pid.exists(), "the pidfile is removed at shutdown");
    assert!(lines(&rotated).iter().any(|l| l == &ready));
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .ok();
    assert_eq!(stdout, "", "the log went to the file only");

    let out = stmd()
        .args(["--port", "0", "--logfile"])
        .arg(dir.path().join("missing/stmd.log"))
        .output()
        .expect("run stmd");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("Can't open the log file: "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn syslog_enabled_sends_each_line_to_the_system_log_with_its_severity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket_path = dir.path().join("log.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let socket_arg = socket_path.to_str().expect("path");
    // At the default log level (info), where `common::Binary::start` runs at warn.
    let server = crate::common::Binary::start_at_level(
        "info",
        &[
            "--syslog-enabled",
            "yes",
            "--syslog-ident",
            "stmd-test",
            "--syslog-facility",
            "local3",
            "--syslog-socket",
            socket_arg,
        ],
    );
    let pid = server.pid();
    // local3 is facility 19: notice (stmd's info) is <157>, warning <156>.
    let prefix = format!("stmd-test[{pid}]: ");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen
        .iter()
        .any(|l: &String| l.contains("ready to accept connections"))
    {
        let n = socket.recv(&mut buf).expect("a datagram in time");
        seen.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    let with = |text: &str| seen.iter().find(|l| l.contains(text)).expect(text).clone();
    let ready = with("ready to accept connections");
    assert!(
        ready.starts_with("<157>") && ready.contains(&prefix),
        "{ready}"
    );
    let warning = with("--no-database");
    assert!(
        warning.starts_with("<156>") && warning.contains(&prefix),
        "{warning}"
    );

    let mut con = server.client().await;
    let get = |name: &'static str| {
        let mut con = con.clone();
        async move { crate::ops_config_file::config_get(&mut con, name).await }
    };
    assert_eq!(get("syslog-enabled").await, "yes");
    assert_eq!(get("syslog-ident").await, "stmd-test");
    assert_eq!(get("syslog-facility").await, "local3");
    let refused: redis::RedisResult<()> = redis::cmd("CONFIG")
        .arg("SET")
        .arg("syslog-ident")
        .arg("other")
        .query_async(&mut con)
        .await;
    let text = format!("{:?}", refused.expect_err("immutable"));
    assert!(text.contains("can't set immutable config"), "{text}");
}

#[test]
fn a_bad_syslog_facility_stops_the_start() {
    let out = stmd()
        .args([
            "--port",
            "0",
            "--no-database",
            "--syslog-facility",
            "local9",
        ])
        .output()
        .expect("run stmd");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("local9"), "{err}");
}

/// CONFIG SET loglevel changes what the running server logs: `nothing` silences even warnings,
/// `warning` lets them through but not the informational lines.
#[test]
fn config_set_loglevel_changes_what_is_logged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("stmd.log");
    let mut child = stmd()
        .args(["--log-format", "json", "--port", "0", "--bind", "127.0.0.1"])
        .args(["--enable-debug-command", "yes"])
        .arg("--logfile")
        .arg(&log)
        .arg("--dir")
        .arg(dir.path())
        .spawn()
        .expect("spawn stmd");
    let lines = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    };
    let wait_for = |message: &str| -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(line) = lines().into_iter().find(|l| l["message"] == message) {
                return line;
            }
            assert!(Instant::now() < deadline, "no {message:?} in the log");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let ready = wait_for("stmd ready to accept connections");
    let addr = ready["addr"].as_str().expect("addr").to_string();
    let mut conn = TcpStream::connect(&addr).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut ask = |words: &[&str], expected: &[u8]| {
        let mut request = format!("*{}\r\n", words.len());
        for w in words {
            request.push_str(&format!("${}\r\n{w}\r\n", w.len()));
        }
        conn.write_all(request.as_bytes()).expect("write");
        let mut got = vec![0u8; expected.len()];
        conn.read_exact(&mut got).expect("read");
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected)
        );
    };
    ask(
        &["CONFIG", "GET", "loglevel"],
        b"*2\r\n$8\r\nloglevel\r\n$6\r\nnotice\r\n",
    );
    ask(&["CONFIG", "SET", "loglevel", "nothing"], b"+OK\r\n");
    ask(&["DEBUG", "LOG", "hidden"], b"+OK\r\n");
    ask(&["CONFIG", "SET", "loglevel", "WARNING"], b"+OK\r\n");
    ask(
        &["CONFIG", "GET", "loglevel"],
        b"*2\r\n$8\r\nloglevel\r\n$7\r\nwarning\r\n",
    );
    ask(&["DEBUG", "LOG", "shown"], b"+OK\r\n");
    wait_for("DEBUG LOG: shown");
    ask(&["SHUTDOWN"], b"");
    assert!(child.wait().expect("wait").success());
    let messages: Vec<String> = lines()
        .iter()
        .map(|l| l["message"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        !messages.iter().any(|m| m == "DEBUG LOG: hidden"),
        "{messages:?}"
    );
    assert!(
        !messages.iter().any(|m| m.starts_with("SHUTDOWN requested")),
        "an informational line at loglevel warning: {messages:?}"
    );
}
