//! Streams with several clients: blocking XREAD woken by XADD, XREADGROUP waiters served first
//! come first served with nothing delivered twice, wake-ups only after EXEC, BLOCK timeouts and
//! clients that disconnect while blocked.

use crate::common;
use crate::types_support;

use common::{resp, RawConn, TestServer};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use types_support::{args, assert_silent, raw3};

async fn send(conn: &mut RawConn, command: &str) {
    conn.send(&resp(&args(command))).await;
}

/// Sends a blocking command and gives the server time to queue the client, so arrival order
/// between connections is the order of the calls.
async fn block(conn: &mut RawConn, command: &str) {
    send(conn, command).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// The RESP2 reply of XREAD/XREADGROUP for one stream and entries of one `f v` pair.
fn read_reply(key: &str, entries: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!(
        "*1\r\n*2\r\n${}\r\n{key}\r\n*{}\r\n",
        key.len(),
        entries.len()
    );
    for (id, value) in entries {
        out.push_str(&format!(
            "*2\r\n${}\r\n{id}\r\n*2\r\n$1\r\nf\r\n${}\r\n{value}\r\n",
            id.len(),
            value.len()
        ));
    }
    out.into_bytes()
}

#[tokio::test]
async fn a_blocked_xread_is_woken_by_xadd() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&args("XADD s 1-1 f a")), b"$3\r\n1-1\r\n")
        .await;
    let mut reader = server.raw().await;
    // `$` means "after the last id when the command blocked": 1-1 is not delivered.
    block(&mut reader, "XREAD BLOCK 0 STREAMS s $").await;
    assert_silent(&mut reader, Duration::from_millis(100)).await;
    c.roundtrip(&resp(&args("XADD s 2-1 f b")), b"$3\r\n2-1\r\n")
        .await;
    let expected = read_reply("s", &[("2-1", "b")]);
    assert_eq!(reader.read_n(expected.len()).await, expected);

    // A waiter on a key that does not exist yet is served by the XADD that creates it; in RESP3
    // the reply is a map of key to entries.
    let mut reader3 = raw3(&server).await;
    block(&mut reader3, "XREAD COUNT 5 BLOCK 0 STREAMS other s 0 2-1").await;
    c.roundtrip(&resp(&args("XADD other 7-0 f c")), b"$3\r\n7-0\r\n")
        .await;
    let expected = b"%1\r\n$5\r\nother\r\n*1\r\n*2\r\n$3\r\n7-0\r\n*2\r\n$1\r\nf\r\n$1\r\nc\r\n";
    assert_eq!(reader3.read_n(expected.len()).await, expected);
}

#[tokio::test]
async fn block_timeout_answers_a_nil_array() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    let started = Instant::now();
    c.roundtrip(&resp(&args("XREAD BLOCK 200 STREAMS s $")), b"*-1\r\n")
        .await;
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(190), "{waited:?}");
    assert!(waited < Duration::from_millis(1500), "{waited:?}");
    c.roundtrip(&resp(&args("XGROUP CREATE s g $ MKSTREAM")), b"+OK\r\n")
        .await;
    c.roundtrip(
        &resp(&args("XREADGROUP GROUP g c BLOCK 50 STREAMS s >")),
        b"*-1\r\n",
    )
    .await;
    let mut c3 = raw3(&server).await;
    c3.roundtrip(&resp(&args("XREAD BLOCK 50 STREAMS s $")), b"_\r\n")
        .await;
    // The timed-out XREADGROUP created its consumer, with nothing pending.
    c.roundtrip(
        &resp(&args("XPENDING s g")),
        b"*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n",
    )
    .await;
}

#[tokio::test]
async fn group_waiters_get_different_entries_first_come_first_served() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&args("XGROUP CREATE s g $ MKSTREAM")), b"+OK\r\n")
        .await;
    let mut first = server.raw().await;
    block(
        &mut first,
        "XREADGROUP GROUP g alice COUNT 1 BLOCK 0 STREAMS s >",
    )
    .await;
    let mut second = server.raw().await;
    block(
        &mut second,
        "XREADGROUP GROUP g bob COUNT 1 BLOCK 0 STREAMS s >",
    )
    .await;
    c.roundtrip(&resp(&args("XADD s 1-1 f a")), b"$3\r\n1-1\r\n")
        .await;
    let expected = read_reply("s", &[("1-1", "a")]);
    assert_eq!(first.read_n(expected.len()).await, expected);
    // The first waiter took the only entry: the second one stays blocked.
    assert_silent(&mut second, Duration::from_millis(100)).await;
    c.roundtrip(&resp(&args("XADD s 2-1 f b")), b"$3\r\n2-1\r\n")
        .await;
    let expected = read_reply("s", &[("2-1", "b")]);
    assert_eq!(second.read_n(expected.len()).await, expected);
    let pending = c.command(&args("XPENDING s g - + 10")).await;
    let text = String::from_utf8_lossy(&pending);
    assert!(
        text.starts_with("*2\r\n*4\r\n$3\r\n1-1\r\n$5\r\nalice\r\n"),
        "{text}"
    );
    assert!(text.contains("*4\r\n$3\r\n2-1\r\n$3\r\nbob\r\n"), "{text}");
}

#[tokio::test]
async fn concurrent_group_readers_get_every_entry_exactly_once() {
    let server = TestServer::start().await;
    const READERS: usize = 4;
    const ENTRIES: usize = 200;
    let mut setup = server.client().await;
    let _: () = redis::cmd("XGROUP")
        .arg(&["CREATE", "work", "g", "$", "MKSTREAM"])
        .query_async(&mut setup)
        .await
        .expect("xgroup create");
    let mut tasks = Vec::new();
    for r in 0..READERS {
        let mut con = server.client().await;
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            loop {
                let reply: redis::Value = redis::cmd("XREADGROUP")
                    .arg(&["GROUP", "g", &format!("c{r}"), "COUNT", "3", "BLOCK", "300"])
                    .arg(&["STREAMS", "work", ">"])
                    .query_async(&mut con)
                    .await
                    .expect("xreadgroup");
                let values = collect_values(&reply);
                if values.is_empty() {
                    return got;
                }
                got.extend(values);
            }
        }));
    }
    let mut writers = Vec::new();
    for w in 0..2 {
        let mut con = server.client().await;
        writers.push(tokio::spawn(async move {
            for i in 0..ENTRIES / 2 {
                let _: String = redis::cmd("XADD")
                    .arg(&["work", "*", "f", &format!("{w}-{i}")])
                    .query_async(&mut con)
                    .await
                    .expect("xadd");
            }
        }));
    }
    for w in writers {
        w.await.expect("writer");
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("reader"));
    }
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), all.len(), "an entry was delivered twice");
    let expected: BTreeSet<String> = (0..2)
        .flat_map(|w| (0..ENTRIES / 2).map(move |i| format!("{w}-{i}")))
        .collect();
    assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), expected);
    let summary: redis::Value = redis::cmd("XPENDING")
        .arg(&["work", "g"])
        .query_async(&mut setup)
        .await
        .expect("xpending");
    match summary {
        redis::Value::Array(items) => {
            assert_eq!(items.first(), Some(&redis::Value::Int(ENTRIES as i64)))
        }
        other => panic!("{other:?}"),
    }
}

/// The values of the `f` fields in an XREADGROUP reply (RESP2), in order.
fn collect_values(reply: &redis::Value) -> Vec<String> {
    let mut out = Vec::new();
    let redis::Value::Array(streams) = reply else {
        return out;
    };
    for stream in streams {
        let redis::Value::Array(pair) = stream else {
            continue;
        };
        let Some(redis::Value::Array(entries)) = pair.get(1) else {
            continue;
        };
        for entry in entries {
            let redis::Value::Array(parts) = entry else {
                continue;
            };
            if let Some(redis::Value::Array(fields)) = parts.get(1) {
                if let Some(redis::Value::BulkString(v)) = fields.get(1) {
                    out.push(String::from_utf8_lossy(v).into_owned());
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn xadd_inside_exec_wakes_the_reader_only_after_exec() {
    let server = TestServer::start().await;
    let mut reader = server.raw().await;
    block(&mut reader, "XREAD BLOCK 0 STREAMS s $").await;
    let mut tx = server.raw().await;
    tx.roundtrip(&resp(&args("MULTI")), b"+OK\r\n").await;
    tx.roundtrip(&resp(&args("XADD s 1-1 f a")), b"+QUEUED\r\n")
        .await;
    tx.roundtrip(&resp(&args("XADD s 2-1 f b")), b"+QUEUED\r\n")
        .await;
    assert_silent(&mut reader, Duration::from_millis(100)).await;
    tx.roundtrip(&resp(&args("EXEC")), b"*2\r\n$3\r\n1-1\r\n$3\r\n2-1\r\n")
        .await;
    // Both entries of the transaction arrive together.
    let expected = read_reply("s", &[("1-1", "a"), ("2-1", "b")]);
    assert_eq!(reader.read_n(expected.len()).await, expected);

    // A transaction that adds and deletes leaves the reader blocked.
    block(&mut reader, "XREAD BLOCK 0 STREAMS s $").await;
    tx.roundtrip(&resp(&args("MULTI")), b"+OK\r\n").await;
    tx.roundtrip(&resp(&args("XADD s 3-1 f c")), b"+QUEUED\r\n")
        .await;
    tx.roundtrip(&resp(&args("XDEL s 3-1")), b"+QUEUED\r\n")
        .await;
    tx.roundtrip(&resp(&args("EXEC")), b"*2\r\n$3\r\n3-1\r\n:1\r\n")
        .await;
    assert_silent(&mut reader, Duration::from_millis(100)).await;
    tx.roundtrip(&resp(&args("XADD s 4-1 f d")), b"$3\r\n4-1\r\n")
        .await;
    let expected = read_reply("s", &[("4-1", "d")]);
    assert_eq!(reader.read_n(expected.len()).await, expected);
}

#[tokio::test]
async fn a_reader_that_disconnects_while_blocked_takes_nothing() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&args("XGROUP CREATE s g $ MKSTREAM")), b"+OK\r\n")
        .await;
    let mut gone = server.raw().await;
    block(
        &mut gone,
        "XREADGROUP GROUP g gone COUNT 1 BLOCK 0 STREAMS s >",
    )
    .await;
    drop(gone);
    let mut stays = server.raw().await;
    block(
        &mut stays,
        "XREADGROUP GROUP g stays COUNT 1 BLOCK 0 STREAMS s >",
    )
    .await;
    c.roundtrip(&resp(&args("XADD s 1-1 f a")), b"$3\r\n1-1\r\n")
        .await;
    let expected = read_reply("s", &[("1-1", "a")]);
    assert_eq!(stays.read_n(expected.len()).await, expected);
    // Only `stays` has a pending entry; the departed reader's consumer owns nothing.
    c.roundtrip(
        &resp(&args("XPENDING s g")),
        b"*4\r\n:1\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$5\r\nstays\r\n$1\r\n1\r\n",
    )
    .await;
    let mut info = server.client().await;
    let text: String = redis::cmd("INFO")
        .arg("clients")
        .query_async(&mut info)
        .await
        .expect("info");
    assert!(text.contains("blocked_clients:0"), "{text}");
}

#[tokio::test]
async fn destroying_the_group_answers_blocked_readers_with_nogroup() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&args("XGROUP CREATE s g $ MKSTREAM")), b"+OK\r\n")
        .await;
    let mut reader = server.raw().await;
    block(&mut reader, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >").await;
    c.roundtrip(&resp(&args("XGROUP DESTROY s g")), b":1\r\n")
        .await;
    let expected: &[u8] =
        b"-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option\r\n";
    assert_eq!(reader.read_n(expected.len()).await, expected);
    // The connection stays usable.
    reader.roundtrip(&resp(&args("PING")), b"+PONG\r\n").await;
}

#[tokio::test]
async fn a_deleted_or_replaced_stream_answers_group_readers_and_keeps_xread_waiting() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(&resp(&args("XGROUP CREATE s g $ MKSTREAM")), b"+OK\r\n")
        .await;
    let mut group_reader = server.raw().await;
    block(
        &mut group_reader,
        "XREADGROUP GROUP g c BLOCK 0 STREAMS s >",
    )
    .await;
    let mut reader = server.raw().await;
    block(&mut reader, "XREAD BLOCK 0 STREAMS s $").await;
    c.roundtrip(&resp(&args("DEL s")), b":1\r\n").await;
    // Redis 7.2 reruns the group read, which finds neither key nor group.
    let expected: &[u8] =
        b"-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option\r\n";
    assert_eq!(group_reader.read_n(expected.len()).await, expected);
    assert_silent(&mut reader, Duration::from_millis(100)).await;
    // A string in its place: XREAD still waits; a new stream serves it.
    c.roundtrip(&resp(&args("SET s text")), b"+OK\r\n").await;
    assert_silent(&mut reader, Duration::from_millis(100)).await;
    c.roundtrip(&resp(&args("DEL s")), b":1\r\n").await;
    c.roundtrip(&resp(&args("XADD s 1-1 f a")), b"$3\r\n1-1\r\n")
        .await;
    let expected = read_reply("s", &[("1-1", "a")]);
    assert_eq!(reader.read_n(expected.len()).await, expected);

    // A group reader whose stream is replaced by a string gets WRONGTYPE.
    c.roundtrip(&resp(&args("XGROUP CREATE s g $")), b"+OK\r\n")
        .await;
    block(
        &mut group_reader,
        "XREADGROUP GROUP g c BLOCK 0 STREAMS s >",
    )
    .await;
    c.roundtrip(&resp(&args("SET s text")), b"+OK\r\n").await;
    let expected: &[u8] = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    assert_eq!(group_reader.read_n(expected.len()).await, expected);
}

#[tokio::test]
async fn dump_and_restore_keep_entries_groups_and_pending_entries() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    for command in [
        "XADD s 1-1 a 1 b hello",
        "XADD s 1-2 a 2 b world",
        "XADD s 5-0 c 3",
        "XDEL s 1-2",
        "XGROUP CREATE s g 0",
        "XREADGROUP GROUP g alice COUNT 1 STREAMS s >",
        "XGROUP CREATECONSUMER s g bob",
    ] {
        c.command(&args(command)).await;
    }
    let mut client = server.client().await;
    let payload: Vec<u8> = redis::cmd("DUMP")
        .arg("s")
        .query_async(&mut client)
        .await
        .expect("dump");
    let _: () = redis::cmd("RESTORE")
        .arg("t")
        .arg(0)
        .arg(&payload)
        .query_async(&mut client)
        .await
        .expect("restore");
    for (a, b) in [
        ("XRANGE s - +", "XRANGE t - +"),
        ("XINFO STREAM s", "XINFO STREAM t"),
        ("XINFO GROUPS s", "XINFO GROUPS t"),
        ("XPENDING s g", "XPENDING t g"),
    ] {
        assert_eq!(c.command(&args(a)).await, c.command(&args(b)).await, "{b}");
    }
    // The restored stream keeps working: ids continue, the group delivers the rest.
    c.roundtrip(
        &resp(&args("XADD t 5-0 f v")),
        b"-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n",
    )
    .await;
    let expected = read_reply("t", &[]);
    let got = c.command(&args("XREADGROUP GROUP g bob STREAMS t >")).await;
    assert_ne!(got, expected);
    assert!(String::from_utf8_lossy(&got).contains("5-0"));
    // A damaged payload changes nothing.
    let mut bad = payload.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0xff;
    let refused: redis::RedisResult<()> = redis::cmd("RESTORE")
        .arg("u")
        .arg(0)
        .arg(&bad)
        .query_async(&mut client)
        .await;
    assert!(refused.is_err());
    c.roundtrip(&resp(&args("EXISTS u")), b":0\r\n").await;
}

/// Redis 8.2's reference-aware deletions (XDELEX, XACKDEL, the KEEPREF | DELREF | ACKED trimming
/// of XADD/XTRIM) replicate as given: an stmd replica, and a server started again from the
/// primary's log, end with the same entries, pending lists and stream bookkeeping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_aware_deletions_reach_a_replica_and_the_log() {
    use common::stm::ok;
    use redis::Value;
    let dir = tempfile::tempdir().expect("tempdir");
    let logged = |dir: &std::path::Path| {
        let dir = dir.to_path_buf();
        move |c: &mut stmd::config::Config| {
            c.dir = dir;
            c.appendonly = true;
        }
    };
    let primary_server = TestServer::start_with(logged(dir.path())).await;
    let mut primary = primary_server.client().await;
    let target = format!("127.0.0.1 {}", primary_server.addr.port());
    let replica_server = TestServer::start_with(move |c| c.replicaof = target).await;
    let mut replica = replica_server.client().await;
    crate::replication_primary::caught_up(&mut primary, &mut replica).await;

    let ints = |v: &[i64]| Value::Array(v.iter().map(|n| Value::Int(*n)).collect());
    for i in 1..=8 {
        let id = format!("{i}-1");
        ok(&mut primary, &["XADD", "s", &id, "f", &i.to_string()]).await;
    }
    for g in ["g1", "g2"] {
        ok(&mut primary, &["XGROUP", "CREATE", "s", g, "0"]).await;
    }
    ok(
        &mut primary,
        &["XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "s", ">"],
    )
    .await;
    let g2_reads = [
        "XREADGROUP",
        "GROUP",
        "g2",
        "bob",
        "COUNT",
        "4",
        "STREAMS",
        "s",
        ">",
    ];
    ok(&mut primary, &g2_reads).await;
    ok(&mut primary, &["XACK", "s", "g1", "1-1"]).await;
    ok(&mut primary, &["XACK", "s", "g2", "1-1", "2-1"]).await;
    let steps: &[(&[&str], &[i64])] = &[
        // 1-1 is needed by nobody; 2-1 is pending in g1; 6-1 too, and g2 has not read it.
        (
            &["XDELEX", "s", "ACKED", "IDS", "3", "1-1", "2-1", "6-1"],
            &[1, 2, 2],
        ),
        (
            &["XACKDEL", "s", "g1", "DELREF", "IDS", "2", "2-1", "3-1"],
            &[1, 1],
        ),
        (&["XDELEX", "s", "IDS", "1", "4-1"], &[1]),
    ];
    for (command, codes) in steps {
        assert_eq!(ok(&mut primary, command).await, ints(codes), "{command:?}");
    }
    let g2_rest = [
        "XREADGROUP",
        "GROUP",
        "g2",
        "bob",
        "NOACK",
        "STREAMS",
        "s",
        ">",
    ];
    ok(&mut primary, &g2_rest).await;
    ok(&mut primary, &["XACK", "s", "g1", "5-1", "6-1"]).await;
    let trimmed = ok(&mut primary, &["XTRIM", "s", "MAXLEN", "2", "ACKED"]).await;
    assert_eq!(trimmed, Value::Int(2));
    ok(
        &mut primary,
        &["XADD", "s", "MAXLEN", "1", "DELREF", "9-1", "f", "9"],
    )
    .await;

    // What every copy must show: one entry left, and 4-1 still pending in both groups (KEEPREF
    // kept it, DELREF trimming took 7-1 and 8-1 from g1).
    let views: &[&[&str]] = &[
        &["XRANGE", "s", "-", "+"],
        &["XPENDING", "s", "g1"],
        &["XPENDING", "s", "g2"],
        &["XINFO", "STREAM", "s"],
        &["XINFO", "GROUPS", "s"],
    ];
    let mut want = Vec::new();
    for view in views {
        want.push(ok(&mut primary, view).await);
    }
    let one_entry = Value::Array(vec![Value::Array(vec![
        Value::BulkString(b"9-1".to_vec()),
        Value::Array(vec![
            Value::BulkString(b"f".to_vec()),
            Value::BulkString(b"9".to_vec()),
        ]),
    ])]);
    assert_eq!(want[0], one_entry);
    for pending in &want[1..3] {
        let Value::Array(summary) = pending else {
            panic!("XPENDING: {pending:?}")
        };
        assert_eq!(summary[0], Value::Int(1));
        assert_eq!(summary[1], Value::BulkString(b"4-1".to_vec()));
    }
    crate::replication_primary::caught_up(&mut primary, &mut replica).await;
    for (view, want) in views.iter().zip(&want) {
        assert_eq!(&ok(&mut replica, view).await, want, "replica: {view:?}");
    }

    primary.set_response_timeout(Duration::from_secs(10));
    assert_eq!(
        ok(&mut primary, &["WAITAOF", "1", "0", "5000"]).await,
        ints(&[1, 0])
    );
    drop(replica_server);
    drop(primary_server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let restarted = TestServer::start_with(logged(dir.path())).await;
    let mut con = restarted.client().await;
    for (view, want) in views.iter().zip(&want) {
        assert_eq!(&ok(&mut con, view).await, want, "from the log: {view:?}");
    }
}
