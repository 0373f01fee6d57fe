//! The append-only file: the `appendonlydir` stmd writes loads into a real redis-server with the
//! same contents and Redis's loads into stmd; nothing acknowledged is lost to a `kill -9` (a reply
//! comes after its write is in the file; WAITAOF confirms the sync); BGREWRITEAOF and CONFIG SET
//! appendonly switch files as Redis does; a log cut short loads up to its last whole command; STM
//! messages never reach the disk.

use crate::common;
use crate::keys_dump::fill_everything;
use crate::ops_snapshot::{check_everything, info_field, persistence};

use common::real_redis::RealRedis;
use common::stm::{capture, ok, run};
use common::{Binary, TestServer};
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// The `#TS:<seconds>` annotations in the increments of `dir`'s log.
fn timestamps(dir: &Path) -> Vec<u64> {
    let mut found = Vec::new();
    for file in log_files(dir).iter().filter(|f| f.ends_with(".incr.aof")) {
        let text = std::fs::read(dir.join("appendonlydir").join(file)).expect("read");
        for line in text.split(|&b| b == b'\n') {
            if let Some(seconds) = line.strip_prefix(b"#TS:") {
                let seconds = std::str::from_utf8(seconds).expect("utf-8").trim_end();
                found.push(seconds.parse().expect("seconds"));
            }
        }
    }
    found
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// The files of `dir/appendonlydir`, by name.
fn log_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("appendonlydir"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn manifest(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).expect("manifest")
}

/// Copies `from/appendonlydir` into a new directory (a live server's log as a crash leaves it).
fn copy_log(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().expect("tempdir");
    let target = to.path().join("appendonlydir");
    std::fs::create_dir(&target).expect("mkdir");
    for entry in std::fs::read_dir(from.join("appendonlydir")).expect("log dir") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), target.join(entry.file_name())).expect("copy");
    }
    to
}

async fn until_info(con: &mut Conn, field: &str, value: &str) -> String {
    let mut info = String::new();
    for _ in 0..100 {
        info = persistence(con).await;
        if info_field(&info, field) == value {
            return info;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{field} never became {value}: {info}");
}

/// Waits until this connection's writes are on the disk (WAITAOF 1 0 0 answers [1, 0]).
async fn synced(con: &mut Conn) {
    con.set_response_timeout(Duration::from_secs(10)); // `everysec`: up to a second
    assert_eq!(
        ok(con, &["WAITAOF", "1", "0", "5000"]).await,
        Value::Array(vec![Value::Int(1), Value::Int(0)])
    );
}

/// Writes that the stream rewrites before they reach the log: relative TTLs, SPOP, XADD `*`, a
/// transaction over two databases, a script.
async fn write_more(con: &mut Conn) {
    ok(con, &["INCR", "counter"]).await;
    ok(con, &["SET", "px", "v", "PX", "600000"]).await;
    ok(con, &["SADD", "popped", "a", "b", "c"]).await;
    ok(con, &["SPOP", "popped"]).await;
    ok(con, &["XADD", "events", "*", "f", "v"]).await;
    ok(con, &["MULTI"]).await;
    ok(con, &["INCR", "counter"]).await;
    ok(con, &["SELECT", "3"]).await;
    ok(con, &["SET", "in-db-3", "three"]).await;
    ok(con, &["SELECT", "0"]).await;
    ok(con, &["EXEC"]).await;
    ok(
        con,
        &[
            "EVAL",
            "return redis.call('INCRBY', KEYS[1], 5)",
            "1",
            "counter",
        ],
    )
    .await;
}

async fn same_values(a: &mut Conn, b: &mut Conn, commands: &[&[&str]]) {
    for command in commands {
        assert_eq!(ok(a, command).await, ok(b, command).await, "{command:?}");
    }
}

const MORE: &[&[&str]] = &[
    &["GET", "counter"],
    &["GET", "px"],
    &["SORT", "popped", "ALPHA"],
    &["XRANGE", "events", "-", "+"],
    &["PEXPIRETIME", "px"],
];

#[tokio::test]
async fn logs_move_between_stmd_and_redis_both_ways() {
    // stmd writes, Redis reads (the log copied as a crash would leave it), with timestamp
    // annotations both ways.
    let dir = tempfile::tempdir().expect("tempdir");
    let began = unix_now();
    let server = {
        let dir = dir.path().to_path_buf();
        TestServer::start_with(move |c| {
            c.dir = dir;
            c.appendonly = true;
            c.aof_timestamp_enabled = true;
        })
        .await
    };
    let mut stmd = server.client().await;
    let keys = fill_everything(&mut stmd).await;
    assert_eq!(
        ok(&mut stmd, &["BGREWRITEAOF"]).await,
        Value::SimpleString("Background append only file rewriting started".into())
    );
    write_more(&mut stmd).await;
    capture(&mut stmd, "u1", "c1", "s1", "3", "12", "the secret word").await;
    until_info(&mut stmd, "aof_rewrites", "1").await;
    // A write the new increment file surely holds: the ones above may all have reached the
    // rewrite's base, and the annotations below are read from the increment files.
    ok(&mut stmd, &["SET", "after-the-rewrite", "1"]).await;
    synced(&mut stmd).await;
    assert!(manifest(dir.path()).starts_with("file appendonly.aof.2.base.rdb seq 2 type b\n"));
    for file in log_files(dir.path()) {
        let bytes = std::fs::read(dir.path().join("appendonlydir").join(&file)).expect("read");
        assert!(
            !bytes.windows(11).any(|w| w == b"secret word"),
            "an STM message reached {file}"
        );
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ok(&mut stmd, &["SET", "a-second-later", "1"]).await;
    synced(&mut stmd).await;
    // One annotation per second with writes, in order, within the test's time.
    let stamps = timestamps(dir.path());
    assert!(stamps.len() >= 2, "{stamps:?}");
    assert!(stamps.windows(2).all(|w| w[0] < w[1]), "{stamps:?}");
    assert!(
        stamps[0] >= began && stamps[stamps.len() - 1] <= unix_now(),
        "{stamps:?}"
    );
    let copy = copy_log(dir.path());
    let redis_server = RealRedis::start_with(&[
        "--dir",
        &copy.path().display().to_string(),
        "--appendonly",
        "yes",
    ]);
    let mut redis = redis_server.client().await;
    check_everything(&mut redis, &mut stmd, &keys).await;
    same_values(&mut redis, &mut stmd, MORE).await;
    ok(&mut redis, &["SELECT", "3"]).await;
    assert_eq!(
        ok(&mut redis, &["GET", "in-db-3"]).await,
        Value::BulkString(b"three".to_vec())
    );
    drop(server);

    // Redis writes, stmd reads.
    let redis_dir = tempfile::tempdir().expect("tempdir");
    let writer = RealRedis::start_with(&[
        "--dir",
        &redis_dir.path().display().to_string(),
        "--appendonly",
        "yes",
        "--aof-timestamp-enabled",
        "yes",
    ]);
    let mut from_redis = writer.client().await;
    let keys = fill_everything(&mut from_redis).await;
    write_more(&mut from_redis).await;
    tokio::time::sleep(Duration::from_millis(1500)).await; // Redis's everysec
    let copy = copy_log(redis_dir.path());
    assert!(
        !timestamps(copy.path()).is_empty(),
        "Redis wrote no annotation"
    );
    let server = TestServer::start_in(copy.path(), true).await;
    let mut stmd = server.client().await;
    check_everything(&mut stmd, &mut from_redis, &keys).await;
    same_values(&mut stmd, &mut from_redis, MORE).await;
    let info = persistence(&mut stmd).await;
    assert_eq!(info_field(&info, "aof_enabled"), "1", "{info}");
    // stmd goes on writing the last increment Redis left.
    ok(&mut stmd, &["SET", "after", "1"]).await;
    synced(&mut stmd).await;
    drop(server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = TestServer::start_in(copy.path(), true).await;
    let mut stmd = server.client().await;
    assert_eq!(
        ok(&mut stmd, &["GET", "after"]).await,
        Value::BulkString(b"1".to_vec())
    );
    same_values(&mut stmd, &mut from_redis, MORE).await;
}

#[tokio::test]
async fn nothing_acknowledged_is_lost_to_a_kill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_arg = dir.path().display().to_string();
    // appendfsync always: every reply comes after its write is on the disk.
    let server = Binary::start(&[
        "--dir",
        &dir_arg,
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let mut con = server.client().await;
    for _ in 0..200 {
        ok(&mut con, &["INCR", "acked"]).await;
    }
    drop(server); // SIGKILL
    let server = Binary::start(&["--dir", &dir_arg, "--appendonly", "yes"]);
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["GET", "acked"]).await,
        Value::BulkString(b"200".to_vec())
    );
    // everysec: what WAITAOF confirmed survives.
    for _ in 0..100 {
        ok(&mut con, &["INCR", "acked"]).await;
    }
    synced(&mut con).await;
    drop(server);
    let server = Binary::start(&["--dir", &dir_arg, "--appendonly", "yes"]);
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["GET", "acked"]).await,
        Value::BulkString(b"300".to_vec())
    );
    // everysec: a reply comes after its write is in the file (as Redis's), so a crash of the
    // process alone loses nothing acknowledged even before the second's sync.
    for _ in 0..50 {
        ok(&mut con, &["INCR", "acked"]).await;
    }
    drop(server);
    let server = Binary::start(&["--dir", &dir_arg, "--appendonly", "yes"]);
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["GET", "acked"]).await,
        Value::BulkString(b"350".to_vec())
    );
    // A write no reply waits for (connections write the log before their replies) goes into the
    // log too, within the second of `everysec`.
    let mut unanswered = tokio::net::TcpStream::connect(("127.0.0.1", server.port))
        .await
        .expect("connect");
    unanswered
        .write_all(b"CLIENT REPLY OFF\r\nSET unanswered yes\r\n")
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    drop(server);
    let server = Binary::start(&["--dir", &dir_arg, "--appendonly", "yes"]);
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["GET", "unanswered"]).await,
        Value::BulkString(b"yes".to_vec())
    );
}

#[tokio::test]
async fn config_set_and_bgrewriteaof_switch_files_as_redis_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), false).await;
    let mut con = server.client().await;
    for (args, error) in [
        (&["WAITAOF", "1", "0", "0"][..], "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."),
        (&["WAITAOF", "2", "0", "0"], "ERR value is out of range, value must between 0 and 1"),
        (&["WAITAOF", "0", "-1", "0"], "ERR value is out of range, must be positive"),
        (&["WAITAOF", "0", "0", "-1"], "ERR timeout is negative"),
        (&["WAITAOF", "0", "0", "x"], "ERR timeout is not an integer or out of range"),
        (&["CONFIG", "SET", "appendfsync", "sometimes"], "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: everysec, always, no"),
        (&["CONFIG", "SET", "appenddirname", "x"], "ERR CONFIG SET failed (possibly related to argument 'appenddirname') - can't set immutable config"),
    ] {
        assert_eq!(run(&mut con, args).await, Err(error.to_string()), "{args:?}");
    }
    assert_eq!(
        ok(&mut con, &["WAITAOF", "0", "0", "0"]).await,
        Value::Array(vec![Value::Int(0), Value::Int(0)])
    );
    // BGREWRITEAOF with the log off writes a base alone.
    ok(&mut con, &["SET", "before", "1"]).await;
    ok(&mut con, &["BGREWRITEAOF"]).await;
    until_info(&mut con, "aof_rewrites", "1").await;
    assert_eq!(
        manifest(dir.path()),
        "file appendonly.aof.1.base.rdb seq 1 type b\n"
    );
    assert_eq!(info_field(&persistence(&mut con).await, "aof_enabled"), "0");

    // CONFIG SET appendonly yes: a new base of the dataset, then every write.
    ok(&mut con, &["CONFIG", "SET", "appendonly", "yes"]).await;
    until_info(&mut con, "aof_enabled", "1").await;
    assert_eq!(
        manifest(dir.path()),
        "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    assert_eq!(
        log_files(dir.path()),
        [
            "appendonly.aof.1.incr.aof",
            "appendonly.aof.2.base.rdb",
            "appendonly.aof.manifest"
        ]
    );
    // Writes go on while a rewrite runs; all of them are in base + increments after it.
    let writer = {
        let mut con = server.client().await;
        tokio::spawn(async move {
            for i in 0..2000 {
                ok(&mut con, &["RPUSH", "during", &i.to_string()]).await;
            }
            synced(&mut con).await;
        })
    };
    ok(&mut con, &["BGREWRITEAOF"]).await;
    writer.await.expect("writer");
    until_info(&mut con, "aof_rewrites", "3").await;
    let info = persistence(&mut con).await;
    assert_eq!(info_field(&info, "aof_last_bgrewrite_status"), "ok");
    assert!(manifest(dir.path()).starts_with("file appendonly.aof.3.base.rdb seq 3 type b\n"));
    assert_eq!(
        log_files(dir.path()),
        [
            "appendonly.aof.2.incr.aof",
            "appendonly.aof.3.base.rdb",
            "appendonly.aof.manifest"
        ]
    );
    // appendonly no: the log stops; what came after is not in it.
    ok(&mut con, &["CONFIG", "SET", "appendonly", "no"]).await;
    until_info(&mut con, "aof_enabled", "0").await;
    ok(&mut con, &["SET", "unlogged", "1"]).await;
    drop(server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    assert_eq!(ok(&mut con, &["LLEN", "during"]).await, Value::Int(2000));
    assert_eq!(
        ok(&mut con, &["LINDEX", "during", "-1"]).await,
        Value::BulkString(b"1999".to_vec())
    );
    assert_eq!(
        ok(&mut con, &["EXISTS", "before", "unlogged"]).await,
        Value::Int(1)
    );
}

#[tokio::test]
async fn a_log_cut_short_loads_up_to_its_last_whole_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    ok(&mut con, &["SET", "whole", "1"]).await;
    synced(&mut con).await;
    drop(server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let incr = dir.path().join("appendonlydir/appendonly.aof.1.incr.aof");
    let whole = std::fs::metadata(&incr).expect("incr").len();
    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&incr)
            .expect("open");
        // A transaction cut short, as a crash mid-write leaves it.
        file.write_all(b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$1\r\n1\r\n*3\r\n$3\r\nSET\r\n$1")
            .expect("append");
    }
    // aof-load-truncated no: the start is refused, naming the file.
    let mut refused = TestServer::start_with({
        let dir = dir.path().to_path_buf();
        move |c| {
            c.dir = dir;
            c.appendonly = true;
            c.aof_load_truncated = false;
        }
    })
    .await;
    let stopped = tokio::time::timeout(Duration::from_secs(5), refused.task.take().expect("task"))
        .await
        .expect("the start fails at once")
        .expect("joined");
    let err = stopped.expect_err("refused").to_string();
    assert!(err.contains("appendonly.aof.1.incr.aof"), "{err}");
    // By default it loads what is whole and cuts the file back to it (before the MULTI).
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["GET", "whole"]).await,
        Value::BulkString(b"1".to_vec())
    );
    assert_eq!(ok(&mut con, &["EXISTS", "half"]).await, Value::Int(0));
    assert_eq!(std::fs::metadata(&incr).expect("incr").len(), whole);
    ok(&mut con, &["SET", "next", "1"]).await;
    synced(&mut con).await;
    drop(server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["EXISTS", "whole", "next", "half"]).await,
        Value::Int(2)
    );
}

#[tokio::test]
async fn a_dump_rdb_becomes_the_first_base_when_the_log_is_turned_on() {
    // Redis would start empty here (and lose dump.rdb at its next save); stmd loads it.
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), false).await;
    let mut con = server.client().await;
    ok(&mut con, &["SET", "from-rdb", "1"]).await;
    assert_eq!(ok(&mut con, &["SAVE"]).await, Value::Okay);
    drop(server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["GET", "from-rdb"]).await,
        Value::BulkString(b"1".to_vec())
    );
    assert!(manifest(dir.path()).starts_with("file appendonly.aof.1.base.rdb seq 1 type b\n"));
}

#[tokio::test]
async fn a_replica_logs_what_it_applies() {
    let primary_server = TestServer::start().await;
    let mut primary = primary_server.client().await;
    ok(&mut primary, &["SET", "synced", "1"]).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let target = format!("127.0.0.1 {}", primary_server.addr.port());
    let replica_server = TestServer::start_with({
        let dir = dir.path().to_path_buf();
        move |c| {
            c.dir = dir;
            c.appendonly = true;
            c.replicaof = target;
        }
    })
    .await;
    let mut replica = replica_server.client().await;
    crate::replication_primary::caught_up(&mut primary, &mut replica).await;
    // The full sync replaced the dataset: the log starts again from a base of it.
    until_info(&mut replica, "aof_rewrites", "1").await;
    ok(&mut primary, &["INCR", "synced"]).await;
    ok(&mut primary, &["SET", "streamed", "v", "EX", "100"]).await;
    capture(&mut primary, "u1", "c1", "s1", "3", "-", "the secret word").await;
    crate::replication_primary::caught_up(&mut primary, &mut replica).await;
    // The replica reports how far its log is synced (REPLCONF ACK … FACK): the primary's
    // WAITAOF counts it once the replica's log holds this client's last write.
    primary.set_response_timeout(Duration::from_secs(10));
    assert_eq!(
        ok(&mut primary, &["WAITAOF", "0", "1", "5000"]).await,
        Value::Array(vec![Value::Int(0), Value::Int(1)])
    );
    assert_eq!(
        run(&mut replica, &["WAITAOF", "1", "0", "0"]).await,
        Err("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.".into())
    );
    tokio::time::sleep(Duration::from_millis(1300)).await; // everysec
    let expiry = ok(&mut primary, &["PEXPIRETIME", "streamed"]).await;
    drop(replica_server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    for file in log_files(dir.path()) {
        let bytes = std::fs::read(dir.path().join("appendonlydir").join(&file)).expect("read");
        assert!(
            !bytes.windows(11).any(|w| w == b"secret word"),
            "an STM message reached {file}"
        );
    }
    // Restarted on its own (no primary), the log gives back what the stream brought.
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["GET", "synced"]).await,
        Value::BulkString(b"2".to_vec())
    );
    assert_eq!(ok(&mut con, &["PEXPIRETIME", "streamed"]).await, expiry);
}
