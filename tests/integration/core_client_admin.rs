//! CLIENT's control of other connections (PAUSE/UNPAUSE, UNBLOCK, KILL's filters), of its own
//! (REPLY, NO-TOUCH) and CLIENT LIST's fields, with several real clients over real TCP.

use crate::common;

use common::stm::info_field;
use common::{resp, RawConn, TestServer};
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Redis 7.2's CLIENT LIST fields, in order.
const FIELDS: &[&str] = &[
    "id",
    "addr",
    "laddr",
    "fd",
    "name",
    "age",
    "idle",
    "flags",
    "db",
    "sub",
    "psub",
    "ssub",
    "multi",
    "qbuf",
    "qbuf-free",
    "argv-mem",
    "multi-mem",
    "rbs",
    "rbp",
    "obl",
    "oll",
    "omem",
    "tot-mem",
    "events",
    "cmd",
    "user",
    "redir",
    "resp",
    "lib-name",
    "lib-ver",
];

async fn cmd<T: redis::FromRedisValue>(con: &mut MultiplexedConnection, args: &[&str]) -> T {
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command.query_async(con).await.expect("command")
}

/// CLIENT LIST as one field map per client, checking every line has Redis 7.2's fields in order.
async fn client_list(con: &mut MultiplexedConnection) -> Vec<HashMap<String, String>> {
    let text: String = cmd(con, &["CLIENT", "LIST"]).await;
    text.lines()
        .map(|line| {
            let pairs: Vec<(String, String)> = line
                .split(' ')
                .map(|field| {
                    let (k, v) = field.split_once('=').expect("field=value");
                    (k.to_string(), v.to_string())
                })
                .collect();
            let names: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(names, FIELDS, "fields of {line}");
            pairs.into_iter().collect()
        })
        .collect()
}

async fn entry_of(con: &mut MultiplexedConnection, id: i64) -> HashMap<String, String> {
    client_list(con)
        .await
        .into_iter()
        .find(|c| c["id"] == id.to_string())
        .expect("client listed")
}

async fn raw_id(raw: &mut RawConn) -> i64 {
    let reply = raw.command(&[b"CLIENT", b"ID"]).await;
    String::from_utf8_lossy(&reply[1..reply.len() - 2])
        .parse()
        .expect("id")
}

/// Waits (up to 5 s) until CLIENT LIST shows client `id` with flag letter `flag`.
async fn wait_for_flag(con: &mut MultiplexedConnection, id: i64, flag: char) {
    for _ in 0..500 {
        if entry_of(con, id).await["flags"].contains(flag) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("client {id} never showed flag {flag}");
}

/// True when nothing arrives on `raw` for `ms` milliseconds.
async fn silent_for(raw: &mut RawConn, ms: u64) -> bool {
    let mut byte = [0u8; 1];
    tokio::time::timeout(
        Duration::from_millis(ms),
        tokio::io::AsyncReadExt::read(&mut raw.stream, &mut byte),
    )
    .await
    .is_err()
}

#[tokio::test]
async fn pause_write_lets_reads_through_and_holds_writes_until_unpause() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    let mut writer = server.raw().await;
    let writer_id = raw_id(&mut writer).await;
    writer
        .roundtrip(&resp(&[b"SET", b"k", b"v1"]), b"+OK\r\n")
        .await;
    let _: () = cmd(&mut admin, &["CLIENT", "PAUSE", "100000", "WRITE"]).await;

    // Reads (and a read-only transaction) run at once.
    writer
        .roundtrip(&resp(&[b"GET", b"k"]), b"$2\r\nv1\r\n")
        .await;
    writer.roundtrip(&resp(&[b"MULTI"]), b"+OK\r\n").await;
    writer
        .roundtrip(&resp(&[b"GET", b"k"]), b"+QUEUED\r\n")
        .await;
    writer
        .roundtrip(&resp(&[b"EXEC"]), b"*1\r\n$2\r\nv1\r\n")
        .await;

    // A write and a PUBLISH wait, and what is pipelined behind them waits too.
    let mut publisher = server.raw().await;
    publisher.send(&resp(&[b"PUBLISH", b"ch", b"m"])).await;
    writer.send(&resp(&[b"SET", b"k", b"v2"])).await;
    writer.send(&resp(&[b"GET", b"k"])).await;
    wait_for_flag(&mut admin, writer_id, 'b').await;
    assert!(
        silent_for(&mut writer, 200).await,
        "SET ran during the pause"
    );
    assert!(silent_for(&mut publisher, 10).await, "PUBLISH ran");
    assert_eq!(
        info_field(&mut admin, "clients", "blocked_clients").await,
        2
    );
    let value: String = cmd(&mut admin, &["GET", "k"]).await;
    assert_eq!(value, "v1");
    // CLIENT UNBLOCK cannot cut a pause short.
    let unblocked: i64 = cmd(&mut admin, &["CLIENT", "UNBLOCK", &writer_id.to_string()]).await;
    assert_eq!(unblocked, 0);

    let _: () = cmd(&mut admin, &["CLIENT", "UNPAUSE"]).await;
    assert_eq!(writer.read_reply().await, b"+OK\r\n");
    assert_eq!(writer.read_reply().await, b"$2\r\nv2\r\n");
    assert_eq!(publisher.read_reply().await, b":0\r\n");
    assert_eq!(
        info_field(&mut admin, "clients", "blocked_clients").await,
        0
    );
}

#[tokio::test]
async fn pause_all_holds_every_command_until_its_timeout() {
    let server = TestServer::start().await;
    let mut admin = server.raw().await;
    let mut other = server.raw().await;
    let started = Instant::now();
    admin
        .roundtrip(&resp(&[b"CLIENT", b"PAUSE", b"300", b"ALL"]), b"+OK\r\n")
        .await;
    // A shorter, milder pause does not shorten or soften the first one.
    admin
        .roundtrip(&resp(&[b"CLIENT", b"PAUSE", b"10", b"WRITE"]), b"+OK\r\n")
        .await;
    other.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n").await;
    assert!(started.elapsed() >= Duration::from_millis(280));
    admin.roundtrip(&resp(&[b"GET", b"x"]), b"$-1\r\n").await;
}

#[tokio::test]
async fn keys_do_not_expire_during_a_pause_but_read_as_gone() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let _: () = cmd(&mut con, &["SET", "k", "v", "PX", "30"]).await;
    let _: () = cmd(&mut con, &["CLIENT", "PAUSE", "100000", "WRITE"]).await;
    tokio::time::sleep(Duration::from_millis(150)).await; // several active expiry ticks
    let value: Option<String> = cmd(&mut con, &["GET", "k"]).await;
    assert_eq!(value, None);
    assert_eq!(info_field(&mut con, "stats", "expired_keys").await, 0);
    let _: () = cmd(&mut con, &["CLIENT", "UNPAUSE"]).await;
    let value: Option<String> = cmd(&mut con, &["GET", "k"]).await;
    assert_eq!(value, None);
    assert_eq!(info_field(&mut con, "stats", "expired_keys").await, 1);
}

#[tokio::test]
async fn unblock_answers_as_a_timeout_or_with_an_error() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    for (reason, reply) in [
        ("TIMEOUT", &b"*-1\r\n"[..]),
        (
            "ERROR",
            &b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"[..],
        ),
    ] {
        let mut blocked = server.raw().await;
        let id = raw_id(&mut blocked).await;
        let not_yet: i64 = cmd(&mut admin, &["CLIENT", "UNBLOCK", &id.to_string(), reason]).await;
        assert_eq!(not_yet, 0, "not blocked yet");
        blocked.send(&resp(&[b"BLPOP", b"list", b"0"])).await;
        blocked.send(&resp(&[b"PING"])).await;
        wait_for_flag(&mut admin, id, 'b').await;
        let entry = entry_of(&mut admin, id).await;
        assert_eq!(entry["cmd"], "blpop");
        assert_eq!(entry["argv-mem"], "10");
        let done: i64 = cmd(&mut admin, &["CLIENT", "UNBLOCK", &id.to_string(), reason]).await;
        assert_eq!(done, 1);
        assert_eq!(blocked.read_reply().await, reply);
        assert_eq!(blocked.read_reply().await, b"+PONG\r\n");
    }
    // The list was never popped by the unblocked clients.
    let _: () = cmd(&mut admin, &["RPUSH", "list", "a"]).await;
    let len: i64 = cmd(&mut admin, &["LLEN", "list"]).await;
    assert_eq!(len, 1);
}

#[tokio::test]
async fn reply_off_and_skip_drop_exactly_the_replies_redis_drops() {
    let server = TestServer::start().await;
    let mut raw = server.raw().await;
    let mut batch = resp(&[b"CLIENT", b"REPLY", b"SKIP"]);
    batch.extend(resp(&[b"SET", b"a", b"1"]));
    batch.extend(resp(&[b"GET", b"a"]));
    raw.roundtrip(&batch, b"$1\r\n1\r\n").await;

    let mut batch = resp(&[b"CLIENT", b"REPLY", b"OFF"]);
    batch.extend(resp(&[b"SET", b"b", b"2"]));
    batch.extend(resp(&[b"GET", b"b"]));
    batch.extend(resp(&[b"NOSUCHCOMMAND"]));
    batch.extend(resp(&[b"CLIENT", b"REPLY", b"SKIP"])); // no effect while OFF
    batch.extend(resp(&[b"CLIENT", b"REPLY", b"ON"]));
    batch.extend(resp(&[b"GET", b"b"]));
    raw.roundtrip(&batch, b"+OK\r\n$1\r\n2\r\n").await;
    raw.roundtrip(
        &resp(&[b"CLIENT", b"REPLY", b"MAYBE"]),
        b"-ERR syntax error\r\n",
    )
    .await;
}

#[tokio::test]
async fn no_touch_clients_leave_idle_time_alone_and_type_exists_watch_ttl_never_touch() {
    let server = TestServer::start().await;
    let mut normal = server.client().await;
    let mut quiet = server.client().await;
    let _: () = cmd(&mut normal, &["SET", "k", "v"]).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let _: () = cmd(&mut quiet, &["CLIENT", "NO-TOUCH", "ON"]).await;
    let _: String = cmd(&mut quiet, &["GET", "k"]).await;
    let _: String = cmd(&mut normal, &["TYPE", "k"]).await;
    let _: i64 = cmd(&mut normal, &["EXISTS", "k"]).await;
    for ttl in ["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"] {
        let _: i64 = cmd(&mut normal, &[ttl, "k"]).await;
    }
    let _: () = cmd(&mut normal, &["WATCH", "k"]).await;
    let idle: i64 = cmd(&mut normal, &["OBJECT", "IDLETIME", "k"]).await;
    assert!(idle >= 2, "idle {idle}");
    let id: i64 = cmd(&mut quiet, &["CLIENT", "ID"]).await;
    assert!(entry_of(&mut normal, id).await["flags"].contains('T'));
    let _: () = cmd(&mut quiet, &["CLIENT", "NO-TOUCH", "OFF"]).await;
    let _: String = cmd(&mut quiet, &["GET", "k"]).await;
    let idle: i64 = cmd(&mut normal, &["OBJECT", "IDLETIME", "k"]).await;
    assert_eq!(idle, 0);
}

/// MAXAGE (Redis 7.4) kills the connections connected for longer than the age, in whole seconds,
/// and spares the younger ones, the caller included.
#[tokio::test]
async fn kill_maxage_takes_only_older_connections() {
    let server = TestServer::start().await;
    let mut old = server.raw().await;
    let old_id = raw_id(&mut old).await;
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let mut young = server.raw().await;
    let young_id = raw_id(&mut young).await;
    let mut admin = server.client().await;

    let count: i64 = cmd(&mut admin, &["CLIENT", "KILL", "MAXAGE", "1"]).await;
    assert_eq!(count, 1, "only the connection older than a second");
    assert!(old.is_closed().await);
    let ids: Vec<String> = client_list(&mut admin)
        .await
        .into_iter()
        .map(|c| c["id"].clone())
        .collect();
    assert!(!ids.contains(&old_id.to_string()), "{ids:?}");
    assert!(ids.contains(&young_id.to_string()), "{ids:?}");
    assert_eq!(young.command(&[b"PING"]).await, b"+PONG\r\n");
    let count: i64 = cmd(&mut admin, &["CLIENT", "KILL", "MAXAGE", "1000"]).await;
    assert_eq!(count, 0);
}

#[tokio::test]
async fn kill_filters_combine_and_count() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    let mut subscriber = server.raw().await;
    let subscriber_id = raw_id(&mut subscriber).await;
    subscriber.send(&resp(&[b"SUBSCRIBE", b"ch"])).await;
    subscriber.read_reply().await;
    let mut normal = server.raw().await;
    let normal_id = raw_id(&mut normal).await;
    let normal_addr = entry_of(&mut admin, normal_id).await["addr"].clone();

    let kill = |args: &'static [&'static str]| {
        let mut all = vec!["CLIENT", "KILL"];
        all.extend_from_slice(args);
        all
    };
    let count: i64 = cmd(&mut admin, &kill(&["TYPE", "master"])).await;
    assert_eq!(count, 0);
    let count: i64 = cmd(&mut admin, &kill(&["MAXAGE", "1000"])).await;
    assert_eq!(count, 0);
    let id = normal_id.to_string();
    let count: i64 = cmd(&mut admin, &["CLIENT", "KILL", "ID", &id, "TYPE", "pubsub"]).await;
    assert_eq!(count, 0, "AND of the filters");
    let err = redis::cmd("CLIENT")
        .arg(&["KILL", "USER", "nobody"])
        .query_async::<i64>(&mut admin)
        .await
        .expect_err("unknown user");
    assert!(err.to_string().contains("No such user 'nobody'"), "{err}");

    let count: i64 = cmd(&mut admin, &kill(&["TYPE", "pubsub", "USER", "default"])).await;
    assert_eq!(count, 1);
    assert!(subscriber.is_closed().await);
    assert!(!client_list(&mut admin)
        .await
        .iter()
        .any(|c| c["id"] == subscriber_id.to_string()));

    let count: i64 = cmd(&mut admin, &["CLIENT", "KILL", "ADDR", &normal_addr]).await;
    assert_eq!(count, 1);
    assert!(normal.is_closed().await);

    // The old form answers OK, or an error when nobody matches.
    let mut third = server.raw().await;
    let third_id = raw_id(&mut third).await;
    let third_addr = entry_of(&mut admin, third_id).await["addr"].clone();
    let _: () = cmd(&mut admin, &["CLIENT", "KILL", &third_addr]).await;
    assert!(third.is_closed().await);
    let err = redis::cmd("CLIENT")
        .arg(&["KILL", &third_addr])
        .query_async::<()>(&mut admin)
        .await
        .expect_err("gone");
    assert!(err.to_string().contains("No such client"), "{err}");

    // LADDR matches everyone on this port; SKIPME (default yes) spares the caller.
    let mut last = server.raw().await;
    let laddr = entry_of(&mut admin, raw_id(&mut last).await).await["laddr"].clone();
    let count: i64 = cmd(&mut admin, &["CLIENT", "KILL", "LADDR", &laddr]).await;
    assert_eq!(count, 1);
    assert!(last.is_closed().await);
    let me: i64 = cmd(&mut admin, &["CLIENT", "ID"]).await;
    assert!(client_list(&mut admin)
        .await
        .iter()
        .any(|c| c["id"] == me.to_string()));
}

#[tokio::test]
async fn client_list_fields_tell_the_truth() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    let me: i64 = cmd(&mut admin, &["CLIENT", "ID"]).await;
    let mine = entry_of(&mut admin, me).await;
    assert_eq!(mine["cmd"], "client|list");
    assert_eq!(mine["flags"], "N");
    assert_eq!(mine["events"], "r");
    assert_eq!(mine["multi"], "-1");
    assert_eq!(mine["user"], "default");
    assert_eq!(mine["redir"], "-1");
    assert_eq!(mine["ssub"], "0");
    assert_eq!(mine["lib-name"], "redis-rs");
    assert!(mine["fd"].parse::<i32>().expect("fd") > 2);
    assert!(mine["argv-mem"].parse::<u64>().expect("argv-mem") >= 10);
    let tot: u64 = mine["tot-mem"].parse().expect("tot-mem");
    let qbuf_free: u64 = mine["qbuf-free"].parse().expect("qbuf-free");
    assert!(tot > qbuf_free);

    // A client in MULTI with two queued commands, in database 3.
    let mut tx = server.raw().await;
    let tx_id = raw_id(&mut tx).await;
    tx.roundtrip(&resp(&[b"SELECT", b"3"]), b"+OK\r\n").await;
    tx.roundtrip(&resp(&[b"MULTI"]), b"+OK\r\n").await;
    tx.roundtrip(&resp(&[b"SET", b"key", b"value"]), b"+QUEUED\r\n")
        .await;
    tx.roundtrip(&resp(&[b"INCR", b"n"]), b"+QUEUED\r\n").await;
    let entry = entry_of(&mut admin, tx_id).await;
    assert_eq!(entry["flags"], "x");
    assert_eq!(entry["multi"], "2");
    assert_eq!(entry["db"], "3");
    assert_eq!(entry["cmd"], "incr");
    assert!(entry["multi-mem"].parse::<u64>().expect("multi-mem") >= 17);
    assert_eq!(entry["argv-mem"], "0");

    // A subscriber with a channel and a pattern, tracking with redirection, no-evict.
    let mut sub = server.raw().await;
    let sub_id = raw_id(&mut sub).await;
    sub.roundtrip(
        &resp(&[
            b"CLIENT",
            b"TRACKING",
            b"ON",
            b"REDIRECT",
            me.to_string().as_bytes(),
        ]),
        b"+OK\r\n",
    )
    .await;
    sub.roundtrip(&resp(&[b"CLIENT", b"NO-EVICT", b"ON"]), b"+OK\r\n")
        .await;
    sub.send(&resp(&[b"SUBSCRIBE", b"ch"])).await;
    sub.read_reply().await;
    sub.send(&resp(&[b"PSUBSCRIBE", b"p*"])).await;
    sub.read_reply().await;
    let entry = entry_of(&mut admin, sub_id).await;
    assert_eq!(entry["flags"], "Pte");
    assert_eq!((entry["sub"].as_str(), entry["psub"].as_str()), ("1", "1"));
    assert_eq!(entry["redir"], me.to_string());
    assert_eq!(entry["cmd"], "psubscribe");

    // CLIENT LIST TYPE and ID select.
    let text: String = cmd(&mut admin, &["CLIENT", "LIST", "TYPE", "pubsub"]).await;
    assert_eq!(text.lines().count(), 1);
    assert!(text.starts_with(&format!("id={sub_id} ")));
    let text: String = cmd(&mut admin, &["CLIENT", "LIST", "TYPE", "replica"]).await;
    assert_eq!(text, "");
    let text: String = cmd(
        &mut admin,
        &["CLIENT", "LIST", "ID", &tx_id.to_string(), "0"],
    )
    .await;
    assert_eq!(text.lines().count(), 1);
    let info: String = cmd(&mut admin, &["CLIENT", "INFO"]).await;
    assert!(info.contains(" cmd=client|info "), "{info}");

    // INFO's figures from the same records: every client's memory, socket reads and writes.
    let all_clients = info_field(&mut admin, "memory", "mem_clients_normal").await;
    assert!(
        all_clients as u64 > tot,
        "{all_clients} vs one client's {tot}"
    );
    let reads = info_field(&mut admin, "stats", "total_reads_processed").await;
    let writes = info_field(&mut admin, "stats", "total_writes_processed").await;
    assert!(
        reads >= 10 && writes >= 10,
        "reads {reads}, writes {writes}"
    );
    assert_eq!(
        info_field(&mut admin, "clients", "client_recent_max_output_buffer").await,
        0
    );
    assert!(info_field(&mut admin, "clients", "client_recent_max_input_buffer").await > 0);
}

/// Sends 2 MiB of a request that never ends, which the server holds in the query buffer. The
/// server may close the socket before it read everything.
async fn send_partial_request(client: &mut RawConn) {
    let mut request = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4000000\r\n".to_vec();
    request.resize(request.len() + (2 << 20), b'x');
    let _ = tokio::io::AsyncWriteExt::write_all(&mut client.stream, &request).await;
}

/// `maxmemory-clients`: past the limit the client holding the most memory is closed; a CLIENT
/// NO-EVICT client never is, though its memory counts (as in Redis 7).
#[tokio::test]
async fn maxmemory_clients_closes_the_client_holding_the_most() {
    let server = TestServer::start_with(|c| {
        c.maxmemory_clients = stmd::config::ClientsMemory::Bytes(1 << 20);
    })
    .await;
    let mut control = server.raw().await;
    control
        .roundtrip(&resp(&[b"CLIENT", b"NO-EVICT", b"ON"]), b"+OK\r\n")
        .await;
    let mut small = server.raw().await;
    small.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    let mut big = server.raw().await;
    send_partial_request(&mut big).await;
    assert!(
        big.is_closed().await,
        "the client holding the most is closed"
    );
    small.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    let stats = control.command(&[b"INFO", b"stats"]).await;
    let stats = String::from_utf8_lossy(&stats);
    assert!(stats.contains("\r\nevicted_clients:1\r\n"), "{stats}");

    // A NO-EVICT client over the limit stays.
    small
        .roundtrip(&resp(&[b"CLIENT", b"NO-EVICT", b"ON"]), b"+OK\r\n")
        .await;
    send_partial_request(&mut small).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let list = control.command(&[b"CLIENT", b"LIST"]).await;
    assert_eq!(String::from_utf8_lossy(&list).matches("flags=e").count(), 2);

    // The limit as Redis takes and shows it: bytes, or a percentage of maxmemory.
    for (set, shown) in [
        (&b"10%"[..], &b"10%"[..]),
        (b"1mb", b"1048576"),
        (b"0", b"0"),
    ] {
        let reply = control
            .command(&[b"CONFIG", b"SET", b"maxmemory-clients", set])
            .await;
        assert_eq!(reply, b"+OK\r\n");
        let got = control
            .command(&[b"CONFIG", b"GET", b"maxmemory-clients"])
            .await;
        let want = [
            &b"*2\r\n$17\r\nmaxmemory-clients\r\n$"[..],
            shown.len().to_string().as_bytes(),
            b"\r\n",
            shown,
            b"\r\n",
        ]
        .concat();
        assert_eq!(got, want);
    }
    let refused = control
        .command(&[b"CONFIG", b"SET", b"maxmemory-clients", b"101%"])
        .await;
    assert_eq!(
        String::from_utf8_lossy(&refused),
        "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - percentage argument must be less or equal to 100\r\n"
    );
}
