//! Helpers for the STM.CONTEXT tests: every call made in RESP (2 or 3) and in `FORMAT JSON`, the
//! RESP map turned into JSON and checked equal to the JSON reply.
#![allow(dead_code)]

use super::stm::{ok, text};
use super::TestServer;
use redis::aio::MultiplexedConnection;
use redis::Value;
use serde_json::{json, Map, Value as Json};

pub const MINUTE: u64 = 60_000;
pub const HOUR: u64 = 60 * MINUTE;
pub const DAY: u64 = 24 * HOUR;

pub fn pairs(v: &Value, resp3: bool) -> Vec<(&Value, &Value)> {
    match (v, resp3) {
        (Value::Map(pairs), true) => pairs.iter().map(|(k, v)| (k, v)).collect(),
        (Value::Array(items), false) => {
            assert!(items.len() % 2 == 0, "RESP2 map must have an even length");
            items.chunks(2).map(|c| (&c[0], &c[1])).collect()
        }
        (other, _) => panic!("expected a map (resp3: {resp3}), got {other:?}"),
    }
}

pub fn string_array(v: &Value) -> Json {
    match v {
        Value::Array(items) => Json::Array(items.iter().map(|i| json!(text(i))).collect()),
        other => panic!("not an array: {other:?}"),
    }
}

/// The RESP reply as the JSON object `FORMAT JSON` gives, checking field order and types.
pub fn context_json(v: &Value, resp3: bool) -> Json {
    let pairs = pairs(v, resp3);
    let names: Vec<String> = pairs.iter().map(|(k, _)| text(k)).collect();
    assert_eq!(names, ["items", "nudge", "turns_since_refresh", "keys"]);
    let mut out = Map::new();
    for (k, v) in pairs {
        let value = match (text(k).as_str(), v) {
            ("items" | "keys", v) => string_array(v),
            ("nudge", Value::Boolean(b)) if resp3 => json!(b),
            ("nudge", Value::Int(n)) if !resp3 => json!(*n == 1),
            ("turns_since_refresh", Value::Int(n)) => json!(n),
            (name, other) => panic!("unexpected {name}: {other:?} (resp3: {resp3})"),
        };
        out.insert(text(k), value);
    }
    Json::Object(out)
}

/// Runs STM.CONTEXT with `words` (after the command name) in RESP and in JSON; both must agree.
pub async fn context(con: &mut MultiplexedConnection, resp3: bool, words: &[&str]) -> Json {
    let mut command = vec!["STM.CONTEXT"];
    command.extend_from_slice(words);
    let resp = context_json(&ok(con, &command).await, resp3);
    command.extend_from_slice(&["FORMAT", "JSON"]);
    let json: Json = serde_json::from_str(&text(&ok(con, &command).await)).expect("JSON reply");
    assert_eq!(resp, json, "RESP and FORMAT JSON differ for {words:?}");
    json
}

pub fn items(reply: &Json) -> Vec<String> {
    reply["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i.as_str().expect("string item").to_string())
        .collect()
}

pub fn keys(reply: &Json) -> Vec<String> {
    reply["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|i| i.as_str().expect("string key").to_string())
        .collect()
}

/// A capture with explicit speakers (`-` for none) and lineage.
#[allow(clippy::too_many_arguments)]
pub async fn capture(
    con: &mut MultiplexedConnection,
    user: &str,
    channel: &str,
    server: &str,
    persona: &str,
    lineage: &str,
    messages: &[(&str, &str, &str)],
    reply: (&str, &str),
) {
    let mut words = vec![
        "STM.CAPTURE",
        "USER",
        user,
        "CHANNEL",
        channel,
        "SERVER",
        server,
    ];
    for (role, speaker, content) in messages {
        words.extend_from_slice(&["MSG", role, speaker, content]);
    }
    words.extend_from_slice(&["REPLY", persona, lineage, reply.0, reply.1]);
    let keys = ok(con, &words).await;
    assert!(
        matches!(keys, Value::Array(ref k) if !k.is_empty()),
        "{words:?}"
    );
}

/// The entry's last write time (ms), from STM.GET.
pub async fn written_at(con: &mut MultiplexedConnection, key: &str) -> u64 {
    let entry: Json =
        serde_json::from_str(&text(&ok(con, &["STM.GET", key, "FORMAT", "JSON"]).await))
            .expect("entry JSON");
    entry["last_updated"].as_u64().expect("last_updated")
}

pub async fn connections(server: &TestServer) -> [(bool, MultiplexedConnection); 2] {
    [
        (false, server.client().await),
        (true, server.client3().await),
    ]
}
