//! Helpers for the STM tests: running commands and turning STM.GET replies into JSON for assertions.
#![allow(dead_code)]

use redis::aio::MultiplexedConnection;
use redis::Value;
use serde_json::{json, Map, Value as Json};

/// Runs a command given as words and returns the raw reply (errors become `Err(text)`).
pub async fn run(con: &mut MultiplexedConnection, words: &[&str]) -> Result<Value, String> {
    let mut cmd = redis::cmd(words[0]);
    for w in &words[1..] {
        cmd.arg(*w);
    }
    cmd.query_async::<Value>(con).await.map_err(|e| {
        // "ERR syntax error" style text: code plus detail.
        match (e.code(), e.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            _ => e.to_string(),
        }
    })
}

/// Like [`run`], panicking on an error reply.
pub async fn ok(con: &mut MultiplexedConnection, words: &[&str]) -> Value {
    match run(con, words).await {
        Ok(v) => v,
        Err(e) => panic!("{words:?} failed: {e}"),
    }
}

pub fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::Okay => "OK".into(),
        other => panic!("not a string: {other:?}"),
    }
}

pub fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) | Value::Set(items) => items.iter().map(text).collect(),
        other => panic!("not an array: {other:?}"),
    }
}

pub fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

/// A scalar reply as JSON (maps and arrays handled by the callers).
fn scalar(v: &Value) -> Json {
    match v {
        Value::Nil => Json::Null,
        Value::Int(n) => json!(n),
        Value::BulkString(_) | Value::SimpleString(_) => json!(text(v)),
        other => panic!("unexpected scalar {other:?}"),
    }
}

fn pairs_of(v: &Value, resp3: bool) -> Vec<(&Value, &Value)> {
    match (v, resp3) {
        (Value::Map(pairs), true) => pairs.iter().map(|(k, v)| (k, v)).collect(),
        (Value::Array(items), false) => {
            assert!(items.len() % 2 == 0, "RESP2 map must have an even length");
            items.chunks(2).map(|c| (&c[0], &c[1])).collect()
        }
        (other, _) => panic!(
            "expected a {} map, got {other:?}",
            if resp3 { "RESP3" } else { "RESP2 flat" }
        ),
    }
}

/// Converts an STM.GET reply (RESP3 map, or RESP2 flat array when `resp3` is false) into JSON of
/// the same shape as `FORMAT JSON`, checking the exact field order on the way.
pub fn entry_json(v: &Value, resp3: bool) -> Json {
    const FIELDS: [&str; 15] = [
        "key",
        "scope",
        "user",
        "server",
        "channel",
        "parent",
        "persona",
        "lineage",
        "messages",
        "summary",
        "categories",
        "turns_since_refresh",
        "last_refreshed_turn",
        "last_updated",
        "ttl",
    ];
    let pairs = pairs_of(v, resp3);
    let names: Vec<String> = pairs.iter().map(|(k, _)| text(k)).collect();
    assert_eq!(names, FIELDS, "STM.GET field order");
    let mut out = Map::new();
    for (k, v) in pairs {
        let name = text(k);
        let value = match name.as_str() {
            "messages" => match v {
                Value::Array(items) => Json::Array(
                    items
                        .iter()
                        .map(|m| {
                            let fields = pairs_of(m, resp3);
                            let names: Vec<String> = fields.iter().map(|(k, _)| text(k)).collect();
                            assert_eq!(names, ["role", "speaker", "content", "ts"]);
                            Json::Object(
                                fields
                                    .into_iter()
                                    .map(|(k, v)| (text(k), scalar(v)))
                                    .collect(),
                            )
                        })
                        .collect(),
                ),
                other => panic!("messages not an array: {other:?}"),
            },
            "categories" => Json::Object(
                pairs_of(v, resp3)
                    .into_iter()
                    .map(|(k, v)| (text(k), scalar(v)))
                    .collect(),
            ),
            _ => scalar(v),
        };
        out.insert(name, value);
    }
    Json::Object(out)
}

/// Message contents of an entry (JSON form), oldest first.
pub fn contents(entry: &Json) -> Vec<String> {
    entry["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["content"].as_str().expect("content").to_string())
        .collect()
}

/// Reads one `INFO` field as an integer.
pub async fn info_field(con: &mut MultiplexedConnection, section: &str, field: &str) -> i64 {
    let info = text(&ok(con, &["INFO", section]).await);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("{field} missing from INFO {section}"))
        .trim()
        .parse()
        .expect("integer field")
}

/// The arguments of an STM.CAPTURE of one exchange: `user` says `said` in `channel` of `server`
/// (`DM` for none), and `persona` (`-` for none) answers `answer` in `lineage` (`-` for none).
pub fn capture_args(
    user: &str,
    channel: &str,
    server: &str,
    persona: &str,
    lineage: &str,
    said: &str,
    answer: &str,
) -> Vec<String> {
    [
        "STM.CAPTURE",
        "USER",
        user,
        "CHANNEL",
        channel,
        "SERVER",
        server,
        "MSG",
        "user",
        "-",
        said,
        "REPLY",
        persona,
        lineage,
        "-",
        answer,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// One STM.CAPTURE of a single user message and one reply by `persona` with `lineage`; returns
/// the keys written.
pub async fn capture(
    con: &mut MultiplexedConnection,
    user: &str,
    channel: &str,
    server: &str,
    persona: &str,
    lineage: &str,
    msg: &str,
) -> Vec<String> {
    let words = capture_args(user, channel, server, persona, lineage, msg, "reply");
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    strings(&ok(con, &words).await)
}
