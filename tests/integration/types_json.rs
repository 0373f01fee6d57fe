//! JSON documents over their whole life: DUMP/RESTORE and COPY give equal documents (equal
//! DEBUG DIGEST-VALUE), DEBUG RELOAD and a restart from the RDB file or from a rewritten
//! append-only file bring them back with their TTL, a replica receives the JSON writes, and the
//! JSON commands publish RedisJSON's keyspace events (module class `d`).

use crate::common;
use crate::replication_primary::caught_up;

use common::stm::{ok, run};
use common::TestServer;
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;
use std::time::Duration;
use stmd::config::ProtectedCommand;

/// A document with every JSON type, nested, with key order that is not alphabetical.
const DOC: &str = r#"{"z":1,"a":[1.5,"two",null,true,{"k":[]}],"m":{"y":-3,"b":"é\n"},"big":18446744073709551615}"#;

fn bulk(text: &str) -> Value {
    Value::BulkString(text.as_bytes().to_vec())
}

/// Writes the test documents: `doc` (with a TTL) and `doc2` changed in place after it was set.
async fn write_docs(con: &mut Conn) {
    assert_eq!(ok(con, &["JSON.SET", "doc", "$", DOC]).await, Value::Okay);
    ok(con, &["EXPIRE", "doc", "1000"]).await;
    ok(con, &["JSON.SET", "doc2", "$", r#"{"n":1,"list":[]}"#]).await;
    ok(con, &["JSON.NUMINCRBY", "doc2", "$.n", "2.5"]).await;
    ok(con, &["JSON.ARRAPPEND", "doc2", "$.list", "1", r#""x""#]).await;
}

/// MEMORY USAGE of `key`.
async fn usage(con: &mut Conn, key: &str) -> i64 {
    match ok(con, &["MEMORY", "USAGE", key]).await {
        Value::Int(n) => n,
        other => panic!("MEMORY USAGE {other:?}"),
    }
}

/// The documents as [`write_docs`] left them, and the TTL still set.
async fn check_docs(con: &mut Conn) {
    assert_eq!(ok(con, &["JSON.GET", "doc"]).await, bulk(DOC));
    assert_eq!(
        ok(con, &["JSON.GET", "doc2"]).await,
        bulk(r#"{"n":3.5,"list":[1,"x"]}"#)
    );
    assert_eq!(
        ok(con, &["TYPE", "doc"]).await,
        Value::SimpleString("ReJSON-RL".into())
    );
    let Value::Int(ttl) = ok(con, &["TTL", "doc"]).await else {
        panic!("TTL is an integer");
    };
    assert!((900..=1000).contains(&ttl), "ttl {ttl}");
}

#[tokio::test]
async fn dump_restore_and_copy_give_equal_documents() {
    let server = TestServer::start_with(|c| c.enable_debug_command = ProtectedCommand::Yes).await;
    let mut con = server.client().await;
    write_docs(&mut con).await;
    let Value::BulkString(payload) = ok(&mut con, &["DUMP", "doc"]).await else {
        panic!("DUMP gives a payload");
    };
    // Redis's module value: type 7, then RedisJSON's module id (encoding version 3).
    assert_eq!(payload[0], 7);
    let restored: Value = redis::cmd("RESTORE")
        .arg("restored")
        .arg(0)
        .arg(&payload)
        .query_async(&mut con)
        .await
        .expect("RESTORE");
    assert_eq!(restored, Value::Okay);
    assert_eq!(ok(&mut con, &["JSON.GET", "restored"]).await, bulk(DOC));
    // Without a TTL (the digest marks one): the original, its restored dump and its copy.
    ok(&mut con, &["PERSIST", "doc"]).await;
    ok(&mut con, &["COPY", "doc", "copy2"]).await;
    let digests = ok(
        &mut con,
        &["DEBUG", "DIGEST-VALUE", "doc", "restored", "copy2"],
    )
    .await;
    let Value::Array(d) = digests else {
        panic!("digests: {digests:?}");
    };
    assert_eq!(d[0], d[1]);
    assert_eq!(d[0], d[2]);
    // A change to the copy is not seen in the original.
    ok(&mut con, &["JSON.SET", "copy2", "$.z", "2"]).await;
    assert_eq!(ok(&mut con, &["JSON.GET", "doc", "$.z"]).await, bulk("[1]"));
    let Value::Array(d) = ok(&mut con, &["DEBUG", "DIGEST-VALUE", "doc", "copy2"]).await else {
        panic!("digests");
    };
    assert_ne!(d[0], d[1]);
    // A damaged payload is refused and changes nothing.
    let mut damaged = payload.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 0x55;
    let refused = redis::cmd("RESTORE")
        .arg("bad")
        .arg(0)
        .arg(&damaged)
        .query_async::<Value>(&mut con)
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(ok(&mut con, &["EXISTS", "bad"]).await, Value::Int(0));
    // MEMORY USAGE reports what the document holds: its text (at least its length) while it was
    // only written whole, more once a path read has built its tree beside it, and more for a
    // larger document held the same way.
    ok(&mut con, &["JSON.SET", "whole", "$", DOC]).await;
    ok(&mut con, &["JSON.SET", "small", "$", r#"{"n":1}"#]).await;
    let (text_only, small) = (
        usage(&mut con, "whole").await,
        usage(&mut con, "small").await,
    );
    assert!(
        text_only >= DOC.len() as i64 && text_only > small,
        "{text_only} {small}"
    );
    ok(&mut con, &["JSON.GET", "whole", "$.z"]).await;
    ok(&mut con, &["JSON.GET", "small", "$.n"]).await;
    let (both, small_both) = (
        usage(&mut con, "whole").await,
        usage(&mut con, "small").await,
    );
    assert!(
        both > text_only && both > small_both,
        "{both} {text_only} {small_both}"
    );
}

/// A document written whole is kept as its compact text and answered from it, until a write
/// changes it: after every kind of JSON.* write, the whole document (JSON.GET with no path, with
/// `$`, JSON.MGET) is what the changed tree prints (JSON.GET with empty layout options prints the
/// tree on every call) and what a fresh parse of it prints, and it differs from before the write.
#[tokio::test]
async fn every_write_shows_in_the_next_whole_read() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let writes: &[&[&str]] = &[
        &["JSON.SET", "d", "$.z", "7"],
        &["JSON.SET", "d", "$.new", r#"{"x":[1]}"#],
        &["JSON.SET", "d", "$", r#"{"other":true}"#],
        &["JSON.MSET", "d", "$.m.y", "2", "d", "$.z", "3"],
        &["JSON.MERGE", "d", "$", r#"{"m":{"b":null},"q":1}"#],
        &["JSON.DEL", "d", "$.a[1]"],
        &["JSON.FORGET", "d", "$.z"],
        &["JSON.ARRAPPEND", "d", "$.a", "3"],
        &["JSON.ARRINSERT", "d", "$.a", "0", r#""first""#],
        &["JSON.ARRPOP", "d", "$.a"],
        &["JSON.ARRTRIM", "d", "$.a", "0", "1"],
        &["JSON.CLEAR", "d", "$.m"],
        &["JSON.TOGGLE", "d", "$.a[3]"],
        &["JSON.NUMINCRBY", "d", "$.z", "1"],
        &["JSON.NUMMULTBY", "d", "$.z", "1.5"],
        &["JSON.STRAPPEND", "d", "$.a[1]", r#""!""#],
    ];
    for write in writes {
        for read_path_first in [false, true] {
            ok(&mut con, &["JSON.SET", "d", "$", DOC]).await;
            assert_eq!(ok(&mut con, &["JSON.GET", "d"]).await, bulk(DOC));
            if read_path_first {
                // The tree is built beside the kept text before the write.
                ok(&mut con, &["JSON.GET", "d", "$.a"]).await;
            }
            ok(&mut con, write).await;
            let Value::BulkString(whole) = ok(&mut con, &["JSON.GET", "d"]).await else {
                panic!("JSON.GET after {write:?}");
            };
            let whole = String::from_utf8(whole).expect("UTF-8");
            assert_ne!(whole, DOC, "{write:?} changed the document");
            let printed = ok(
                &mut con,
                &["JSON.GET", "d", "INDENT", "", "NEWLINE", "", "SPACE", ""],
            )
            .await;
            assert_eq!(bulk(&whole), printed, "after {write:?}");
            let reparsed: serde_json::Value = serde_json::from_str(&whole).expect("JSON");
            assert_eq!(
                serde_json::to_string(&reparsed).expect("print"),
                whole,
                "after {write:?}"
            );
            assert_eq!(
                ok(&mut con, &["JSON.GET", "d", "$"]).await,
                bulk(&format!("[{whole}]"))
            );
            assert_eq!(
                ok(&mut con, &["JSON.MGET", "d", "."]).await,
                Value::Array(vec![bulk(&whole)])
            );
        }
    }
}

#[tokio::test]
async fn documents_survive_reload_restart_and_aof_rewrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), false).await;
    let mut con = server.client().await;
    write_docs(&mut con).await;
    assert_eq!(ok(&mut con, &["DEBUG", "RELOAD"]).await, Value::Okay);
    check_docs(&mut con).await;
    // The RDB file read by a fresh server.
    ok(&mut con, &["SAVE"]).await;
    server.shutdown().await.expect("shutdown");
    let server = TestServer::start_in(dir.path(), false).await;
    let mut con = server.client().await;
    check_docs(&mut con).await;
    server.shutdown().await.expect("shutdown");

    // The append-only file: writes after the rewrite are in the increment, the rest in the base.
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    ok(&mut con, &["JSON.SET", "doc", "$", r#"{"old":true}"#]).await;
    ok(&mut con, &["BGREWRITEAOF"]).await;
    common::until("the rewrite", async || {
        let info: String = redis::cmd("INFO")
            .arg("persistence")
            .query_async(&mut con)
            .await
            .expect("INFO");
        info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrites:1")
    })
    .await;
    write_docs(&mut con).await;
    ok(&mut con, &["JSON.DEL", "doc", "$.m.y"]).await;
    con.set_response_timeout(Duration::from_secs(10)); // `everysec`: up to a second
    assert_eq!(
        ok(&mut con, &["WAITAOF", "1", "0", "5000"]).await,
        Value::Array(vec![Value::Int(1), Value::Int(0)])
    );
    server.shutdown().await.expect("shutdown");
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    assert_eq!(
        ok(&mut con, &["JSON.GET", "doc", "$.m"]).await,
        bulk(r#"[{"b":"é\n"}]"#)
    );
    assert_eq!(
        ok(&mut con, &["JSON.GET", "doc2"]).await,
        bulk(r#"{"n":3.5,"list":[1,"x"]}"#)
    );
}

#[tokio::test]
async fn a_replica_receives_json_writes() {
    let primary_server =
        TestServer::start_with(|c| c.enable_debug_command = ProtectedCommand::Yes).await;
    let mut primary = primary_server.client().await;
    // Before the replica: arrives in the full sync (the RDB image).
    ok(&mut primary, &["JSON.SET", "synced", "$", DOC]).await;
    let target = format!("127.0.0.1 {}", primary_server.addr.port());
    let replica_server = TestServer::start_with(move |c| {
        c.replicaof = target;
        c.enable_debug_command = ProtectedCommand::Yes;
    })
    .await;
    let mut replica = replica_server.client().await;
    caught_up(&mut primary, &mut replica).await;
    // After it: the commands by the stream.
    write_docs(&mut primary).await;
    ok(&mut primary, &["JSON.ARRPOP", "doc", "$.a", "0"]).await;
    ok(&mut primary, &["JSON.TOGGLE", "doc", "$.a[2]"]).await;
    ok(
        &mut primary,
        &["JSON.MERGE", "doc2", "$", r#"{"n":null,"o":{"p":1}}"#],
    )
    .await;
    ok(&mut primary, &["JSON.DEL", "synced", "$.m"]).await;
    // A write that changes nothing is not sent (nothing to find).
    ok(&mut primary, &["JSON.ARRAPPEND", "doc", "$.nothere", "1"]).await;
    caught_up(&mut primary, &mut replica).await;
    let keys = ["DEBUG", "DIGEST-VALUE", "synced", "doc", "doc2"];
    assert_eq!(ok(&mut replica, &keys).await, ok(&mut primary, &keys).await);
    assert_eq!(
        ok(&mut replica, &["JSON.GET", "doc2"]).await,
        bulk(r#"{"list":[1,"x"],"o":{"p":1}}"#)
    );
    let refused = run(&mut replica, &["JSON.SET", "x", "$", "1"]).await;
    assert!(
        refused.as_ref().is_err_and(|e| e.starts_with("READONLY")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn json_commands_publish_module_events() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "Ed"]).await;
    let client = redis::Client::open(server.url()).expect("client");
    let mut pubsub = client.get_async_pubsub().await.expect("pubsub");
    pubsub
        .psubscribe("__keyevent@0__:*")
        .await
        .expect("psubscribe");
    ok(
        &mut con,
        &[
            "JSON.SET",
            "doc",
            "$",
            r#"{"a":[1],"n":1,"s":"x","t":true}"#,
        ],
    )
    .await;
    ok(&mut con, &["JSON.ARRAPPEND", "doc", "$.a", "2"]).await;
    // Nothing found: no change, no event.
    ok(&mut con, &["JSON.ARRAPPEND", "doc", "$.n", "2"]).await;
    ok(&mut con, &["JSON.NUMINCRBY", "doc", "$.n", "1"]).await;
    ok(&mut con, &["JSON.STRAPPEND", "doc", "$.s", r#""y""#]).await;
    ok(&mut con, &["JSON.TOGGLE", "doc", "$.t"]).await;
    ok(&mut con, &["JSON.DEL", "doc", "$.a"]).await;
    ok(&mut con, &["JSON.DEL", "doc"]).await;
    // A plain SET is not a module event: the class filter leaves it out.
    ok(&mut con, &["SET", "plain", "v"]).await;
    ok(&mut con, &["JSON.SET", "last", "$", "1"]).await;
    let mut stream = pubsub.on_message();
    let mut seen = Vec::new();
    use futures_util::StreamExt;
    while seen.len() < 8 {
        let msg = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("an event in time")
            .expect("a message");
        let event = msg
            .get_channel_name()
            .trim_start_matches("__keyevent@0__:")
            .to_string();
        let key: String = msg.get_payload().expect("key");
        seen.push(format!("{event} {key}"));
    }
    assert_eq!(
        seen,
        [
            "json.set doc",
            "json.arrappend doc",
            "json.numincrby doc",
            "json.strappend doc",
            "json.toggle doc",
            "json.del doc",
            "json.del doc",
            "json.set last",
        ]
    );
}
