//! MONITOR over a raw socket: Redis's line format and quoting, what is hidden, and a monitor
//! that stops reading being disconnected.

use crate::common;

use common::{resp, TestServer};
use tokio::io::AsyncWriteExt;

/// Reads one `+…\r\n` monitor line of database 0 and splits it into (address, quoted arguments).
async fn monitor_line(raw: &mut common::RawConn) -> (String, String) {
    let (db, addr, args) = monitor_line_in(raw).await;
    assert_eq!(db, "0");
    (addr, args)
}

/// Reads one `+…\r\n` monitor line and splits it into (database, client, quoted arguments).
async fn monitor_line_in(raw: &mut common::RawConn) -> (String, String, String) {
    let frame = raw.read_reply().await;
    let text = String::from_utf8(frame).expect("monitor lines are ASCII");
    let body = text
        .strip_prefix('+')
        .and_then(|t| t.strip_suffix("\r\n"))
        .unwrap_or_else(|| panic!("not a status line: {text:?}"));
    let (time, rest) = body.split_once(" [").expect("time then [db addr]");
    let (db, rest) = rest.split_once(' ').expect("db then addr");
    let (secs, micros) = time.split_once('.').expect("secs.micros");
    assert!(secs.parse::<u64>().is_ok() && micros.len() == 6, "{time}");
    assert!(micros.bytes().all(|b| b.is_ascii_digit()), "{time}");
    let (addr, args) = rest.split_once("] ").expect("addr] args");
    (db.to_string(), addr.to_string(), args.to_string())
}

/// As Redis: the line names the database the command ran in, a script comes before the commands
/// it runs, and those are `lua`'s (in the database the script selected).
#[tokio::test]
async fn monitor_shows_the_database_and_scripts_like_redis() {
    let server = TestServer::start().await;
    let mut monitor = server.raw().await;
    monitor.roundtrip(b"MONITOR\r\n", b"+OK\r\n").await;
    let mut client = server.raw().await;
    let me = client.stream.local_addr().expect("addr").to_string();
    client
        .roundtrip(&resp(&[b"SELECT", b"3"]), b"+OK\r\n")
        .await;
    client
        .roundtrip(&resp(&[b"SET", b"a", b"b"]), b"+OK\r\n")
        .await;
    let script = b"redis.call('select', 5) return redis.call('get', 'a')";
    client
        .roundtrip(&resp(&[b"EVAL", script, b"0"]), b"$-1\r\n")
        .await;
    client
        .roundtrip(&resp(&[b"GET", b"a"]), b"$1\r\nb\r\n")
        .await;
    let eval = format!("\"EVAL\" \"{}\" \"0\"", String::from_utf8_lossy(script));
    let expected = [
        ("3", me.as_str(), "\"SELECT\" \"3\""),
        ("3", &me, "\"SET\" \"a\" \"b\""),
        ("3", &me, &eval),
        ("5", "lua", "\"select\" \"5\""),
        ("5", "lua", "\"get\" \"a\""),
        ("3", &me, "\"GET\" \"a\""),
    ];
    for (db, who, args) in expected {
        let line = monitor_line_in(&mut monitor).await;
        assert_eq!(line, (db.to_string(), who.to_string(), args.to_string()));
    }
}

#[tokio::test]
async fn monitor_shows_other_clients_commands_quoted_like_redis() {
    let server = TestServer::start().await;
    let mut monitor = server.raw().await;
    monitor.roundtrip(b"MONITOR\r\n", b"+OK\r\n").await;

    let mut client = server.raw().await;
    let client_addr = client.stream.local_addr().expect("addr").to_string();
    client
        .roundtrip(&resp(&[b"SET", b"a\"\\\x01", b"v\n\xff"]), b"+OK\r\n")
        .await;
    // Admin commands are not shown.
    client
        .roundtrip(
            &resp(&[b"CONFIG", b"GET", b"maxclients"]),
            b"*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n",
        )
        .await;
    client
        .roundtrip(
            b"MULTI\r\nPING\r\nEXEC\r\n",
            b"+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n",
        )
        .await;

    let expected = [
        r#""SET" "a\"\\\x01" "v\n\xff""#,
        r#""MULTI""#,
        r#""PING""#,
        r#""EXEC""#,
    ];
    for want in expected {
        let (addr, args) = monitor_line(&mut monitor).await;
        assert_eq!(addr, client_addr);
        assert_eq!(args, want);
    }

    // The monitor's own commands are answered, then shown to it, as Redis does.
    monitor.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    let (addr, args) = monitor_line(&mut monitor).await;
    assert_eq!(addr, monitor.stream.local_addr().expect("addr").to_string());
    assert_eq!(args, r#""PING""#);
}

#[tokio::test]
async fn a_monitor_that_stops_reading_is_disconnected() {
    let server = TestServer::start().await;
    let mut monitor = server.raw().await;
    monitor.roundtrip(b"MONITOR\r\n", b"+OK\r\n").await;

    // 60 000 pipelined SETs of 2 KB: ~120 MB of monitor lines, far more than its mailbox takes
    // (16 Ki lines) plus what the kernel's socket buffers hold (loopback autotuning can grow them
    // to ~10 MB: with only a few MB over the mailbox the test depended on how far they grew) while
    // the monitor reads nothing.
    let mut client = server.raw().await;
    let value = vec![b'v'; 2048];
    let one = resp(&[b"SET", b"k", &value]);
    let batch: Vec<u8> = one.iter().copied().cycle().take(one.len() * 1000).collect();
    let writer = tokio::spawn(async move {
        for _ in 0..60 {
            client.stream.write_all(&batch).await.expect("write");
        }
        client
    });
    // Nothing read so far; now the monitor must find its connection closed.
    let mut client = writer.await.expect("writer");
    assert!(
        monitor.is_closed().await,
        "the slow monitor was disconnected"
    );
    // The server and other clients are unaffected.
    let mut other = server.raw().await;
    other.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    client.stream.shutdown().await.ok();
}

#[tokio::test]
async fn reset_leaves_monitor_mode() {
    let server = TestServer::start().await;
    let mut monitor = server.raw().await;
    monitor.roundtrip(b"MONITOR\r\n", b"+OK\r\n").await;
    let mut client = server.raw().await;
    client.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    let (_, args) = monitor_line(&mut monitor).await;
    assert_eq!(args, r#""PING""#);
    monitor.roundtrip(b"RESET\r\n", b"+RESET\r\n").await;
    client.roundtrip(b"ECHO hi\r\n", b"$2\r\nhi\r\n").await;
    // Had the ECHO been delivered, its line would come before this reply.
    monitor.roundtrip(b"TIME\r\n", b"*2\r\n").await;
}
