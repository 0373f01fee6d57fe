//! The idle pass (docs/stm.md, "Memory"): a conversation not captured for `stm-compress-after`
//! seconds has its messages compressed; every read sees the same messages, a capture or a summary
//! onto it works as on a plain one, and the DUMP encoding does not change. Over real TCP.

use crate::common;

use common::stm::{info_field, int, ok, run, text};
use common::{until, TestServer};
use redis::aio::MultiplexedConnection;
use redis::Value;
use stmd::config::ProtectedCommand;

const USER_KEY: &str = "shortterm:user:u1:c1";
const SERVER_KEY: &str = "shortterm:server:s1:c1";

/// Chat text long enough to compress: English sentences of different lengths, ~250 bytes each.
fn said(i: usize) -> String {
    let sentences = [
        "The meeting moved to Thursday afternoon because half of the team is travelling.",
        "Could you send me the notes from yesterday so I can catch up before the review?",
        "I think the second draft reads better, but the introduction is still too long.",
        "Let us keep the budget as it is and look at the numbers again next month.",
        "She said the train was late again, so she will join the call from her phone.",
    ];
    (0..3)
        .map(|k| sentences[(i + k) % sentences.len()])
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(" (message {i}, café ☕)")
}

async fn capture(con: &mut MultiplexedConnection, user: &str, first: usize) {
    let texts: Vec<String> = (first..first + 6).map(said).collect();
    let mut words = vec!["STM.CAPTURE", "USER", user, "CHANNEL", "c1", "SERVER", "s1"];
    for (i, t) in texts[..5].iter().enumerate() {
        words.extend([
            "MSG",
            "user",
            if i % 2 == 0 { "Alice" } else { "-" },
            t.as_str(),
        ]);
    }
    words.extend(["REPLY", "-", "-", "Nova", texts[5].as_str()]);
    ok(con, &words).await;
}

/// `v` without its `ttl` fields (at any depth, in maps, flat RESP2 pairs and JSON text): the
/// only part of a read that moves with the clock.
fn without_ttl(v: Value) -> Value {
    let is_ttl = |k: &Value| {
        matches!(k, Value::BulkString(b) if b == b"ttl")
            || matches!(k, Value::SimpleString(s) if s == "ttl")
    };
    match v {
        Value::Map(pairs) => Value::Map(
            pairs
                .into_iter()
                .filter(|(k, _)| !is_ttl(k))
                .map(|(k, v)| (k, without_ttl(v)))
                .collect(),
        ),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            let mut items = items.into_iter().peekable();
            while let Some(item) = items.next() {
                if is_ttl(&item) && items.peek().is_some_and(|v| matches!(v, Value::Int(_))) {
                    items.next();
                } else {
                    out.push(without_ttl(item));
                }
            }
            Value::Array(out)
        }
        Value::BulkString(b) => match serde_json::from_slice::<serde_json::Value>(&b) {
            Ok(mut json) if json.is_object() || json.is_array() => {
                strip_json(&mut json);
                Value::BulkString(json.to_string().into_bytes())
            }
            _ => Value::BulkString(b),
        },
        other => other,
    }
}

fn strip_json(json: &mut serde_json::Value) {
    match json {
        serde_json::Value::Object(o) => {
            o.remove("ttl");
            o.values_mut().for_each(strip_json);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_json),
        _ => {}
    }
}

/// Everything a client can read of the conversation: both entries by STM.GET (as sent, and as
/// JSON), DUMP and DEBUG DIGEST-VALUE, STM.CONTEXT and STM.RECENT.
async fn reads(con: &mut MultiplexedConnection) -> Vec<Value> {
    let mut out = Vec::new();
    for key in [USER_KEY, SERVER_KEY] {
        out.push(ok(con, &["STM.GET", key]).await);
        out.push(ok(con, &["STM.GET", key, "FORMAT", "JSON"]).await);
        out.push(ok(con, &["DUMP", key]).await);
        out.push(ok(con, &["DEBUG", "DIGEST-VALUE", key]).await);
    }
    let context = [
        "STM.CONTEXT",
        "USER",
        "u1",
        "CHANNEL",
        "c1",
        "SERVER",
        "s1",
        "NOW",
        "1",
    ];
    out.push(ok(con, &context).await);
    out.push(ok(con, &["STM.RECENT", "USER", "u1"]).await);
    out.push(ok(con, &["STM.RECENT", "SERVER", "s1", "FORMAT", "JSON"]).await);
    out.into_iter().map(without_ttl).collect()
}

async fn compressions(con: &mut MultiplexedConnection) -> i64 {
    info_field(con, "stm", "stm_compressions").await
}

async fn wait_compressed(con: &mut MultiplexedConnection, at_least: i64) {
    until("the idle pass compressed", async || {
        compressions(con).await >= at_least
    })
    .await;
}

/// Waits until `key`'s MEMORY USAGE is below `limit`: the pass swaps the block of each entry
/// when it walks the entry's shard, so the second of two entries may follow by up to a walk.
async fn wait_smaller(con: &mut MultiplexedConnection, key: &str, limit: i64) -> i64 {
    let mut usage = 0;
    until("the entry holds the compressed block", async || {
        usage = int(&ok(con, &["MEMORY", "USAGE", key]).await);
        usage < limit
    })
    .await;
    usage
}

async fn start(after_secs: u64, dir: &std::path::Path) -> TestServer {
    let dir = dir.to_path_buf();
    TestServer::start_with(move |c| {
        c.stm_compress_after = after_secs;
        c.dir = dir;
        c.enable_debug_command = ProtectedCommand::Yes;
    })
    .await
}

#[tokio::test]
async fn stm_compress_an_idle_conversation_reads_back_identical_in_both_protocols() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(1, dir.path()).await;
    for resp3 in [false, true] {
        let mut con = if resp3 {
            server.client3().await
        } else {
            server.client().await
        };
        ok(&mut con, &["FLUSHALL"]).await;
        let before_count = compressions(&mut con).await;
        capture(&mut con, "u1", 0).await;
        let before = reads(&mut con).await;
        let usage = int(&ok(&mut con, &["MEMORY", "USAGE", USER_KEY]).await);
        wait_compressed(&mut con, before_count + 1).await;
        wait_smaller(&mut con, USER_KEY, usage * 3 / 4).await;
        wait_smaller(&mut con, SERVER_KEY, usage * 3 / 4).await;
        assert_eq!(reads(&mut con).await, before, "resp3: {resp3}");
        // Both entries share one compressed block: one compression for the capture.
        assert_eq!(compressions(&mut con).await, before_count + 1);
    }
}

#[tokio::test]
async fn stm_compress_counters_say_what_was_compressed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(1, dir.path()).await;
    let mut con = server.client().await;
    assert_eq!(compressions(&mut con).await, 0);
    assert_eq!(
        info_field(&mut con, "stm", "stm_compressed_bytes_in").await,
        0
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_compressed_bytes_out").await,
        0
    );
    capture(&mut con, "u1", 0).await;
    capture(&mut con, "u2", 3).await;
    wait_compressed(&mut con, 2).await;
    // u1's block is held by its user entry alone (u2's capture replaced the server entry's), u2's
    // by both of its entries: two blocks, each compressed once.
    assert_eq!(compressions(&mut con).await, 2);
    let bytes_in = info_field(&mut con, "stm", "stm_compressed_bytes_in").await;
    let bytes_out = info_field(&mut con, "stm", "stm_compressed_bytes_out").await;
    assert!(bytes_in > 2 * 6 * 250, "{bytes_in}");
    assert!(
        bytes_out > 0 && bytes_out * 2 < bytes_in,
        "{bytes_in} → {bytes_out}"
    );
    ok(&mut con, &["CONFIG", "RESETSTAT"]).await;
    assert_eq!(compressions(&mut con).await, 0);
    assert_eq!(
        info_field(&mut con, "stm", "stm_compressed_bytes_in").await,
        0
    );
}

#[tokio::test]
async fn stm_compress_a_capture_and_a_summary_onto_a_compressed_conversation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(1, dir.path()).await;
    let mut con = server.client().await;
    capture(&mut con, "u1", 0).await;
    wait_compressed(&mut con, 1).await;
    ok(
        &mut con,
        &[
            "STM.SUMMARY",
            "USER",
            "u1",
            "CHANNEL",
            "c1",
            "SERVER",
            "s1",
            "TEXT",
            "they met",
        ],
    )
    .await;
    capture(&mut con, "u1", 10).await;
    // What a server that never compressed holds after the same writes.
    let plain_dir = tempfile::tempdir().expect("tempdir");
    let plain = start(0, plain_dir.path()).await;
    let mut plain_con = plain.client().await;
    capture(&mut plain_con, "u1", 0).await;
    ok(
        &mut plain_con,
        &[
            "STM.SUMMARY",
            "USER",
            "u1",
            "CHANNEL",
            "c1",
            "SERVER",
            "s1",
            "TEXT",
            "they met",
        ],
    )
    .await;
    capture(&mut plain_con, "u1", 10).await;
    for key in [USER_KEY, SERVER_KEY] {
        let mut ours = ok(&mut con, &["STM.GET", key, "FORMAT", "JSON"]).await;
        let mut theirs = ok(&mut plain_con, &["STM.GET", key, "FORMAT", "JSON"]).await;
        let strip = |v: &mut Value| {
            // The times differ between the two servers; the messages and memory must not.
            let mut json: serde_json::Value = serde_json::from_str(&text(v)).expect("STM.GET JSON");
            for field in ["last_updated", "ttl", "expires_in", "expire_at"] {
                json.as_object_mut().map(|o| o.remove(field));
            }
            for m in json["messages"].as_array_mut().into_iter().flatten() {
                m.as_object_mut().map(|o| o.remove("ts"));
            }
            *v = Value::BulkString(json.to_string().into_bytes());
        };
        strip(&mut ours);
        strip(&mut theirs);
        assert_eq!(ours, theirs, "{key}");
        assert!(text(&ours).contains("they met") && text(&ours).contains("message 10"));
    }
}

#[tokio::test]
async fn stm_compress_debug_reload_and_restore_keep_the_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(1, dir.path()).await;
    let mut con = server.client().await;
    capture(&mut con, "u1", 0).await;
    let before = reads(&mut con).await;
    wait_compressed(&mut con, 1).await;
    // DEBUG RELOAD keeps STM entries as they are (no file holds them).
    assert_eq!(ok(&mut con, &["DEBUG", "RELOAD"]).await, Value::Okay);
    assert_eq!(reads(&mut con).await, before, "after DEBUG RELOAD");
    // A compressed entry's DUMP payload is the plain encoding: restored on a server that never
    // compresses, it reads back the same.
    let other_dir = tempfile::tempdir().expect("tempdir");
    let plain = start(0, other_dir.path()).await;
    let mut plain_con = plain.client().await;
    for key in [USER_KEY, SERVER_KEY] {
        let Value::BulkString(payload) = ok(&mut con, &["DUMP", key]).await else {
            panic!("DUMP {key}");
        };
        let expire_at = int(&ok(&mut con, &["PEXPIRETIME", key]).await);
        let restored: Value = redis::cmd("RESTORE")
            .arg(key)
            .arg(expire_at)
            .arg(payload)
            .arg("ABSTTL")
            .query_async(&mut plain_con)
            .await
            .expect("RESTORE");
        assert_eq!(restored, Value::Okay);
    }
    assert_eq!(
        reads(&mut plain_con).await,
        before,
        "restored on a plain server"
    );
}

#[tokio::test]
async fn stm_compress_after_0_never_compresses_and_config_set_changes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let never = start(0, dir.path()).await;
    let mut con = never.client().await;
    let other_dir = tempfile::tempdir().expect("tempdir");
    let compressing = start(1, other_dir.path()).await;
    let mut other = compressing.client().await;
    let default = TestServer::start().await;
    let get = ok(
        &mut default.client().await,
        &["CONFIG", "GET", "stm-compress-after"],
    )
    .await;
    assert_eq!(common::stm::strings(&get), ["stm-compress-after", "30"]);
    capture(&mut con, "u1", 0).await;
    capture(&mut other, "u1", 0).await;
    let usage = int(&ok(&mut con, &["MEMORY", "USAGE", USER_KEY]).await);
    // Both conversations are idle alike; by the time the other server compressed its own, this
    // one's pass has walked every shard too (both walk every second).
    wait_compressed(&mut other, 1).await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(compressions(&mut con).await, 0);
    assert_eq!(
        int(&ok(&mut con, &["MEMORY", "USAGE", USER_KEY]).await),
        usage
    );

    // Bad values change nothing; a good one takes effect at the pass's next tick.
    for bad in ["-1", "abc", "1.5", ""] {
        assert!(
            run(&mut con, &["CONFIG", "SET", "stm-compress-after", bad])
                .await
                .is_err(),
            "{bad}"
        );
    }
    let get = ok(&mut con, &["CONFIG", "GET", "stm-compress-after"]).await;
    assert_eq!(common::stm::strings(&get), ["stm-compress-after", "0"]);
    ok(&mut con, &["CONFIG", "SET", "stm-compress-after", "1"]).await;
    let get = ok(&mut con, &["CONFIG", "GET", "stm-compress-after"]).await;
    assert_eq!(common::stm::strings(&get), ["stm-compress-after", "1"]);
    wait_compressed(&mut con, 1).await;
    wait_smaller(&mut con, USER_KEY, usage).await;
}
