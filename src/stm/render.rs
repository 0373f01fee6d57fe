//! How an STM entry is shown: the STM.GET fields as a RESP map (flat in RESP2) or as JSON.

use super::StmEntry;
use crate::protocol::Reply;
use serde_json::{json, Map, Value as Json};

/// The entry's `ttl` field: ms left, or -1 without expiry.
fn ttl_ms(expire_at: u64, now: u64) -> i64 {
    if expire_at == 0 {
        -1
    } else {
        expire_at.saturating_sub(now) as i64
    }
}

fn text(s: &str) -> Reply {
    Reply::bulk(s.as_bytes())
}

fn name(s: &'static str) -> Reply {
    Reply::bulk_str(s)
}

fn opt_bytes(b: Option<&[u8]>) -> Reply {
    b.map_or(Reply::Nil, Reply::bulk)
}

/// The STM.GET map of `entry` stored at `key`.
pub fn to_reply(key: &[u8], entry: &StmEntry, expire_at: u64, now: u64) -> Reply {
    let messages = entry
        .messages()
        .iter()
        .map(|m| {
            Reply::Map(vec![
                (name("role"), name(m.role.as_str())),
                (name("speaker"), m.speaker.map_or(Reply::Nil, text)),
                (name("content"), text(m.content)),
                (name("ts"), Reply::Int(m.ts as i64)),
            ])
        })
        .collect();
    let categories = entry
        .categories()
        .iter()
        .map(|(slug, body)| (text(slug), text(body)))
        .collect();
    Reply::Map(vec![
        (name("key"), Reply::bulk(key)),
        (name("scope"), name(entry.scope.as_str())),
        (name("user"), opt_bytes(entry.user())),
        (name("server"), opt_bytes(entry.server())),
        (name("channel"), Reply::bulk(entry.channel())),
        (name("parent"), opt_bytes(entry.parent())),
        (
            name("persona"),
            entry.persona().map_or(Reply::Nil, |p| Reply::Int(p as i64)),
        ),
        (
            name("lineage"),
            entry.lineage.map_or(Reply::Nil, Reply::Int),
        ),
        (name("messages"), Reply::Array(messages)),
        (name("summary"), entry.summary().map_or(Reply::Nil, text)),
        (name("categories"), Reply::Map(categories)),
        (
            name("turns_since_refresh"),
            Reply::Int(entry.turns_since_refresh),
        ),
        (
            name("last_refreshed_turn"),
            Reply::Int(entry.last_refreshed_turn()),
        ),
        (name("last_updated"), Reply::Int(entry.last_updated as i64)),
        (name("ttl"), Reply::Int(ttl_ms(expire_at, now))),
    ])
}

fn json_bytes(b: Option<&[u8]>) -> Json {
    b.map_or(Json::Null, |b| {
        Json::String(String::from_utf8_lossy(b).into_owned())
    })
}

/// The same fields as [`to_reply`], as a JSON object.
pub fn to_json(key: &[u8], entry: &StmEntry, expire_at: u64, now: u64) -> Json {
    let messages: Vec<Json> = entry
        .messages()
        .iter()
        .map(|m| {
            json!({
                "role": m.role.as_str(),
                "speaker": m.speaker,
                "content": m.content,
                "ts": m.ts,
            })
        })
        .collect();
    let categories: Map<String, Json> = entry
        .categories()
        .iter()
        .map(|(slug, body)| (slug.clone(), Json::String(body.clone())))
        .collect();
    json!({
        "key": String::from_utf8_lossy(key),
        "scope": entry.scope.as_str(),
        "user": json_bytes(entry.user()),
        "server": json_bytes(entry.server()),
        "channel": String::from_utf8_lossy(entry.channel()),
        "parent": json_bytes(entry.parent()),
        "persona": entry.persona(),
        "lineage": entry.lineage,
        "messages": messages,
        "summary": entry.summary(),
        "categories": categories,
        "turns_since_refresh": entry.turns_since_refresh,
        "last_refreshed_turn": entry.last_refreshed_turn(),
        "last_updated": entry.last_updated,
        "ttl": ttl_ms(expire_at, now),
    })
}
