//! STM.TICK, STM.SUMMARY, STM.CATEGORIES, STM.RECENT, STM.FORGET, expiry, standard commands on STM
//! keys and bad input, against docs/stm.md.

use crate::common;

use common::stm::{capture, contents, entry_json, info_field, int, ok, run, strings, text};
use common::TestServer;
use redis::aio::MultiplexedConnection;
use redis::Value;
use serde_json::json;
use std::time::Duration;

async fn get(con: &mut MultiplexedConnection, key: &str) -> serde_json::Value {
    entry_json(&ok(con, &["STM.GET", key]).await, false)
}

async fn pttl(con: &mut MultiplexedConnection, key: &str) -> i64 {
    int(&ok(con, &["PTTL", key]).await)
}

#[tokio::test]
async fn summary_upgrades_expiry_resets_cadence_and_is_capped() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    capture(&mut con, "u", "c", "s", "4", "-", "x").await;
    capture(&mut con, "u", "c", "s", "4", "-", "x").await;
    assert!(pttl(&mut con, "shortterm:server:s:c:4").await <= 43_200_000);
    ok(&mut con, &["CONFIG", "SET", "stm-max-summary-chars", "5"]).await;
    let keys = ok(
        &mut con,
        &[
            "STM.SUMMARY",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "PERSONA",
            "4",
            "LINEAGE",
            "8",
            "TEXT",
            "ação!!!",
        ],
    )
    .await;
    assert_eq!(
        strings(&keys),
        ["shortterm:user:u:c:4", "shortterm:server:s:c:4"]
    );
    for key in ["shortterm:user:u:c:4", "shortterm:server:s:c:4"] {
        let entry = get(&mut con, key).await;
        assert_eq!(entry["summary"], "ação!", "cut at 5 characters, not bytes");
        assert_eq!(entry["turns_since_refresh"], 0);
        assert_eq!(entry["last_refreshed_turn"], 1);
        assert_eq!(entry["lineage"], 8);
        assert_eq!(contents(&entry), ["x", "reply"], "messages kept");
        assert!(
            pttl(&mut con, key).await > 86_000_000,
            "24 h once distilled"
        );
    }
    // Clearing falls back to the 12 h expiry and never creates entries.
    let keys = ok(
        &mut con,
        &[
            "STM.SUMMARY",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "PERSONA",
            "4",
            "TEXT",
            "",
        ],
    )
    .await;
    assert_eq!(strings(&keys).len(), 2);
    assert_eq!(
        get(&mut con, "shortterm:server:s:c:4").await["summary"],
        json!(null)
    );
    assert!(pttl(&mut con, "shortterm:server:s:c:4").await <= 43_200_000);
    let keys = ok(
        &mut con,
        &[
            "STM.SUMMARY",
            "USER",
            "nobody",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "TEXT",
            "",
        ],
    )
    .await;
    assert_eq!(strings(&keys), Vec::<String>::new());
    assert_eq!(
        int(&ok(&mut con, &["EXISTS", "shortterm:user:nobody:c"]).await),
        0
    );
    assert_eq!(info_field(&mut con, "stm", "stm_summaries").await, 3);
}

#[tokio::test]
async fn summary_creates_entries_without_messages_and_skips_server_scope_in_dms() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let keys = ok(
        &mut con,
        &[
            "STM.SUMMARY",
            "LINEAGE",
            "3",
            "USER",
            "u",
            "SERVER",
            "DM",
            "CHANNEL",
            "d",
            "TEXT",
            "hello",
        ],
    )
    .await;
    assert_eq!(
        strings(&keys),
        ["shortterm:user:u:d"],
        "LINEAGE without PERSONA, options in any order"
    );
    let entry = get(&mut con, "shortterm:user:u:d").await;
    assert_eq!(entry["messages"], json!([]));
    assert_eq!(entry["summary"], "hello");
    assert_eq!(entry["lineage"], 3);
    assert_eq!(entry["server"], json!(null));
}

#[tokio::test]
async fn categories_replace_the_map_upgrade_and_clear() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    capture(&mut con, "u", "c", "s", "-", "-", "x").await;
    ok(
        &mut con,
        &[
            "STM.CATEGORIES",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "SET",
            "zeta",
            "last",
            "alpha",
            "first",
            "alpha",
            "again",
        ],
    )
    .await;
    let entry = get(&mut con, "shortterm:server:s:c").await;
    assert_eq!(
        entry["categories"],
        json!({"alpha": "again", "zeta": "last"})
    );
    assert_eq!(entry["last_refreshed_turn"], 1);
    assert!(
        pttl(&mut con, "shortterm:server:s:c").await > 86_000_000,
        "categories upgrade too"
    );
    ok(
        &mut con,
        &[
            "STM.CATEGORIES",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "SET",
            "only",
            "one",
        ],
    )
    .await;
    assert_eq!(
        get(&mut con, "shortterm:user:u:c").await["categories"],
        json!({"only": "one"}),
        "whole map replaced"
    );
    ok(
        &mut con,
        &[
            "STM.CATEGORIES",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "SET",
        ],
    )
    .await;
    assert_eq!(
        get(&mut con, "shortterm:user:u:c").await["categories"],
        json!({})
    );
    assert!(
        pttl(&mut con, "shortterm:user:u:c").await <= 43_200_000,
        "neither left: back to 12 h"
    );
    assert_eq!(info_field(&mut con, "stm", "stm_category_writes").await, 3);
}

#[tokio::test]
async fn tick_advances_without_moving_the_expiry() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    capture(&mut con, "u", "c", "s", "-", "-", "x").await;
    ok(&mut con, &["PEXPIRE", "shortterm:server:s:c", "100000"]).await;
    assert_eq!(
        ok(&mut con, &["STM.TICK", "shortterm:server:s:c"]).await,
        Value::Int(2)
    );
    assert_eq!(
        ok(&mut con, &["STM.TICK", "shortterm:server:s:c", "by", "5"]).await,
        Value::Int(7)
    );
    assert!(
        pttl(&mut con, "shortterm:server:s:c").await <= 100_000,
        "a tick is not a write"
    );
    assert_eq!(
        ok(&mut con, &["STM.TICK", "shortterm:server:s:gone"]).await,
        Value::Nil
    );
    assert_eq!(
        run(&mut con, &["STM.TICK", "not-an-stm-key"])
            .await
            .unwrap_err(),
        "ERR invalid STM key"
    );
    assert_eq!(
        run(&mut con, &["STM.TICK", "shortterm:user:u:c:007"])
            .await
            .unwrap_err(),
        "ERR invalid STM key"
    );
    for bad in ["0", "-1", "x"] {
        assert_eq!(
            run(&mut con, &["STM.TICK", "shortterm:server:s:c", "BY", bad])
                .await
                .unwrap_err(),
            "ERR BY must be a positive integer"
        );
    }
    assert_eq!(
        get(&mut con, "shortterm:server:s:c").await["turns_since_refresh"],
        7
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_ticks").await,
        3,
        "the tick of a gone entry still counts (its row is upserted)"
    );
    assert_eq!(info_field(&mut con, "stm", "stm_persist_tick_ops").await, 4);
}

#[tokio::test]
async fn recent_lists_an_owners_live_entries_newest_first() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    capture(&mut con, "u", "c1", "s1", "1", "10", "one").await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    capture(&mut con, "u", "c2", "s2", "1", "20", "two").await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    capture(&mut con, "u", "c3", "DM", "-", "-", "three").await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    capture(&mut con, "u", "c4", "s1", "2", "10", "four").await;
    capture(&mut con, "other", "c1", "s1", "1", "10", "not mine").await;

    let keys_of = |v: &Value| -> Vec<String> {
        match v {
            Value::Array(items) => items
                .iter()
                .map(|e| entry_json(e, false)["key"].as_str().unwrap().to_string())
                .collect(),
            other => panic!("{other:?}"),
        }
    };
    let recent = ok(&mut con, &["STM.RECENT", "USER", "u"]).await;
    assert_eq!(
        keys_of(&recent),
        [
            "shortterm:user:u:c4:2",
            "shortterm:user:u:c3",
            "shortterm:user:u:c2:1"
        ],
        "default limit 3, across servers"
    );
    let recent = ok(
        &mut con,
        &["STM.RECENT", "USER", "u", "EXCLUDE", "c4", "LIMIT", "10"],
    )
    .await;
    assert_eq!(
        keys_of(&recent),
        [
            "shortterm:user:u:c3",
            "shortterm:user:u:c2:1",
            "shortterm:user:u:c1:1"
        ]
    );
    let recent = ok(
        &mut con,
        &["STM.RECENT", "USER", "u", "LINEAGE", "10", "LIMIT", "10"],
    )
    .await;
    assert_eq!(
        keys_of(&recent),
        ["shortterm:user:u:c4:2", "shortterm:user:u:c1:1"]
    );
    let recent = ok(&mut con, &["STM.RECENT", "USER", "u", "LINEAGE", "-"]).await;
    assert_eq!(keys_of(&recent), ["shortterm:user:u:c3"]);
    assert_eq!(
        ok(&mut con, &["STM.RECENT", "USER", "u", "LIMIT", "0"]).await,
        Value::Array(vec![])
    );
    let recent = ok(&mut con, &["STM.RECENT", "SERVER", "s1", "LIMIT", "10"]).await;
    assert_eq!(
        keys_of(&recent),
        ["shortterm:server:s1:c1:1", "shortterm:server:s1:c4:2"],
        "the other user's capture is newest in c1"
    );
    let json_text = text(
        &ok(
            &mut con,
            &["STM.RECENT", "USER", "u", "LIMIT", "1", "FORMAT", "JSON"],
        )
        .await,
    );
    let parsed: serde_json::Value = serde_json::from_str(&json_text).expect("JSON array");
    assert_eq!(parsed[0]["key"], "shortterm:user:u:c4:2");
    assert_eq!(parsed.as_array().unwrap().len(), 1);
    // RESP3: an array of maps.
    let mut con3 = server.client3().await;
    let recent = ok(&mut con3, &["STM.RECENT", "USER", "u", "LIMIT", "1"]).await;
    match recent {
        Value::Array(items) => {
            assert_eq!(entry_json(&items[0], true)["key"], "shortterm:user:u:c4:2")
        }
        other => panic!("{other:?}"),
    }
    // Entries deleted or renamed away follow the index.
    ok(&mut con, &["DEL", "shortterm:user:u:c4:2"]).await;
    ok(&mut con, &["RENAME", "shortterm:user:u:c3", "moved"]).await;
    let recent = ok(&mut con, &["STM.RECENT", "USER", "u"]).await;
    assert_eq!(
        keys_of(&recent),
        ["moved", "shortterm:user:u:c2:1", "shortterm:user:u:c1:1"]
    );
    ok(&mut con, &["FLUSHALL"]).await;
    assert_eq!(
        ok(&mut con, &["STM.RECENT", "USER", "u"]).await,
        Value::Array(vec![])
    );
    assert_eq!(info_field(&mut con, "stm", "stm_entries").await, 0);
}

#[tokio::test]
async fn forget_deletes_entries_and_queues_row_deletions() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    capture(&mut con, "u", "c1", "s", "1", "-", "a").await;
    capture(&mut con, "u", "c1", "s", "2", "-", "b").await;
    capture(&mut con, "v", "c1", "s", "1", "-", "c").await;
    capture(&mut con, "u", "c2", "s", "1", "-", "d").await;
    ok(&mut con, &["SET", "unrelated", "1"]).await;
    // c1: u's two user entries, v's user entry, the two server entries.
    assert_eq!(
        ok(&mut con, &["STM.FORGET", "CHANNEL", "c1"]).await,
        Value::Int(5)
    );
    assert_eq!(int(&ok(&mut con, &["DBSIZE"]).await), 3);
    // u: only the user scope.
    assert_eq!(
        ok(&mut con, &["STM.FORGET", "USER", "u"]).await,
        Value::Int(1)
    );
    assert_eq!(
        int(&ok(&mut con, &["EXISTS", "shortterm:server:s:c2:1"]).await),
        1
    );
    assert_eq!(
        ok(&mut con, &["STM.FORGET", "KEY", "shortterm:server:s:c2:1"]).await,
        Value::Int(1)
    );
    assert_eq!(
        ok(&mut con, &["STM.FORGET", "KEY", "shortterm:server:s:c2:1"]).await,
        Value::Int(0)
    );
    assert_eq!(
        run(&mut con, &["STM.FORGET", "KEY", "unrelated"])
            .await
            .unwrap_err(),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(
        run(&mut con, &["STM.FORGET", "KEY", "nope"])
            .await
            .unwrap_err(),
        "ERR invalid STM key"
    );
    assert_eq!(int(&ok(&mut con, &["DBSIZE"]).await), 1);
    assert_eq!(info_field(&mut con, "stm", "stm_forgets").await, 7);
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_forget_ops").await,
        4
    );
}

#[tokio::test]
async fn standard_commands_work_on_stm_keys() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    capture(&mut con, "u", "c", "s", "-", "-", "x").await;
    ok(&mut con, &["SET", "str", "v"]).await;
    let key = "shortterm:user:u:c";
    assert_eq!(text(&ok(&mut con, &["TYPE", key]).await), "stm");
    assert_eq!(int(&ok(&mut con, &["EXISTS", key]).await), 1);
    for cmd in [
        vec!["GET", key],
        vec!["APPEND", key, "x"],
        vec!["INCR", key],
        vec!["STRLEN", key],
    ] {
        assert_eq!(
            run(&mut con, &cmd).await.unwrap_err(),
            "WRONGTYPE Operation against a key holding the wrong kind of value",
            "{cmd:?}"
        );
    }
    let scan = ok(&mut con, &["SCAN", "0", "TYPE", "stm", "COUNT", "1000"]).await;
    let Value::Array(parts) = scan else { panic!() };
    let mut found = strings(&parts[1]);
    found.sort();
    assert_eq!(found, ["shortterm:server:s:c", "shortterm:user:u:c"]);
    let mut keys = strings(&ok(&mut con, &["KEYS", "shortterm:*"]).await);
    keys.sort();
    assert_eq!(keys.len(), 2);
    assert_eq!(ok(&mut con, &["PERSIST", key]).await, Value::Int(1));
    assert_eq!(get(&mut con, key).await["ttl"], -1);
    assert_eq!(ok(&mut con, &["EXPIRE", key, "100"]).await, Value::Int(1));
    assert_eq!(int(&ok(&mut con, &["TTL", key]).await), 100);
    ok(&mut con, &["RENAME", key, "renamed"]).await;
    let entry = get(&mut con, "renamed").await;
    assert_eq!(
        (entry["key"].clone(), entry["user"].clone()),
        (json!("renamed"), json!("u"))
    );
    assert_eq!(ok(&mut con, &["UNLINK", "renamed"]).await, Value::Int(1));
    assert_eq!(ok(&mut con, &["STM.GET", "renamed"]).await, Value::Nil);
    assert_eq!(info_field(&mut con, "stm", "stm_entries").await, 1);
}

#[tokio::test]
async fn expired_entries_are_gone_everywhere_and_reclaimed_unread() {
    let server = TestServer::start_with(|c| c.stm_ttl = 1).await;
    let mut con = server.client().await;
    for i in 0..50 {
        capture(&mut con, &format!("u{i}"), "c", "s", "-", "-", "x").await;
    }
    capture(&mut con, "reader", "c2", "s", "-", "-", "x").await;
    assert_eq!(
        info_field(&mut con, "stm", "stm_entries").await,
        53,
        "50 user entries, 2 server entries, the reader's"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        ok(&mut con, &["STM.GET", "shortterm:user:reader:c2"]).await,
        Value::Nil
    );
    assert_eq!(
        int(&ok(&mut con, &["EXISTS", "shortterm:user:reader:c2"]).await),
        0
    );
    assert_eq!(
        ok(&mut con, &["STM.RECENT", "SERVER", "s"]).await,
        Value::Array(vec![])
    );
    assert_eq!(
        ok(&mut con, &["STM.TICK", "shortterm:server:s:c"]).await,
        Value::Nil
    );
    // The active cycle reclaims the rest without anyone reading them.
    let mut left = i64::MAX;
    for _ in 0..30 {
        left = info_field(&mut con, "stm", "stm_entries").await;
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, 0);
    assert_eq!(int(&ok(&mut con, &["DBSIZE"]).await), 0);
    assert_eq!(info_field(&mut con, "stm", "stm_expired_entries").await, 53);
}

#[tokio::test]
async fn summary_ttl_applies_after_a_summary() {
    let server = TestServer::start_with(|c| {
        c.stm_ttl = 1;
        c.stm_summary_ttl = 3;
    })
    .await;
    let mut con = server.client().await;
    capture(&mut con, "u", "c", "s", "-", "-", "x").await;
    ok(
        &mut con,
        &[
            "STM.SUMMARY",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "TEXT",
            "kept",
        ],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(
        get(&mut con, "shortterm:server:s:c").await["summary"],
        "kept"
    );
}

#[tokio::test]
async fn bad_input_gets_an_error_changes_nothing_and_keeps_the_connection() {
    let server = TestServer::start_with(|c| {
        c.stm_max_content_bytes = 10;
        c.stm_max_items = 3;
    })
    .await;
    let mut con = server.client().await;
    let cap = |extra: &[&'static str]| {
        let mut w = vec!["STM.CAPTURE", "USER", "u", "CHANNEL", "c", "SERVER", "s"];
        w.extend_from_slice(extra);
        w
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["STM.CAPTURE", "USER", "u"],
            "ERR wrong number of arguments for 'stm.capture' command",
        ),
        (cap(&["MSG", "user", "-"]), "ERR syntax error"),
        (cap(&["BOGUS", "x"]), "ERR syntax error"),
        (
            vec![
                "STM.CAPTURE",
                "USER",
                "u",
                "USER",
                "v",
                "CHANNEL",
                "c",
                "SERVER",
                "s",
            ],
            "ERR syntax error",
        ),
        (
            vec![
                "STM.CAPTURE",
                "USER",
                "u",
                "CHANNEL",
                "c",
                "PARENT",
                "p",
                "MSG",
                "user",
                "-",
                "x",
            ],
            "ERR USER, CHANNEL and SERVER are required",
        ),
        (
            vec!["STM.CAPTURE", "USER", "a:b", "CHANNEL", "c", "SERVER", "s"],
            "ERR invalid user id",
        ),
        (
            vec!["STM.CAPTURE", "USER", "u", "CHANNEL", "c d", "SERVER", "s"],
            "ERR invalid channel id",
        ),
        (
            vec!["STM.CAPTURE", "USER", "u", "CHANNEL", "c", "SERVER", ""],
            "ERR invalid server id",
        ),
        (cap(&["PARENT", "a\tb"]), "ERR invalid parent id"),
        (cap(&["PRIVACY", "SOME"]), "ERR invalid privacy level"),
        (
            cap(&["MSG", "robot", "-", "x"]),
            "ERR invalid role, expected user or model",
        ),
        (
            cap(&["REPLY", "-1", "-", "-", "x"]),
            "ERR invalid persona id",
        ),
        (
            cap(&["REPLY", "x", "-", "-", "x"]),
            "ERR invalid persona id",
        ),
        (
            cap(&["REPLY", "1", "1.5", "-", "x"]),
            "ERR invalid lineage id",
        ),
        (
            cap(&[
                "MSG",
                "user",
                "-",
                "01234567890",
                "REPLY",
                "-",
                "-",
                "-",
                "x",
            ]),
            "ERR MSG/REPLY content exceeds stm-max-content-bytes",
        ),
        (
            cap(&[
                "MSG", "user", "-", "a", "MSG", "user", "-", "a", "MSG", "user", "-", "a", "REPLY",
                "-", "-", "-", "x",
            ]),
            "ERR too many MSG/REPLY items (stm-max-items)",
        ),
        (cap(&["STOP", "STOP"]), "ERR syntax error"),
        (vec!["STM.GET", "k", "FORMAT", "XML"], "ERR syntax error"),
        (vec!["STM.GET", "k", "FORMAT"], "ERR syntax error"),
        (
            vec![
                "STM.SUMMARY",
                "USER",
                "u",
                "CHANNEL",
                "c",
                "SERVER",
                "s",
                "TEXT",
            ],
            "ERR wrong number of arguments for 'stm.summary' command",
        ),
        (
            vec![
                "STM.SUMMARY",
                "USER",
                "u",
                "CHANNEL",
                "c",
                "SERVER",
                "s",
                "TEXT",
                "a",
                "b",
            ],
            "ERR syntax error",
        ),
        (
            vec![
                "STM.SUMMARY",
                "USER",
                "u",
                "CHANNEL",
                "c",
                "PERSONA",
                "1",
                "TEXT",
                "a",
            ],
            "ERR USER, CHANNEL and SERVER are required",
        ),
        (
            vec![
                "STM.SUMMARY",
                "USER",
                "u",
                "CHANNEL",
                "c",
                "SERVER",
                "s",
                "PERSONA",
                "p",
                "TEXT",
                "a",
            ],
            "ERR invalid persona id",
        ),
        (
            vec![
                "STM.CATEGORIES",
                "USER",
                "u",
                "CHANNEL",
                "c",
                "SERVER",
                "s",
                "SET",
                "a",
            ],
            "ERR syntax error",
        ),
        (
            vec![
                "STM.CATEGORIES",
                "USER",
                "u",
                "CHANNEL",
                "c",
                "SERVER",
                "s",
                "SET",
                "bad slug",
                "x",
            ],
            "ERR invalid category slug",
        ),
        (
            vec!["STM.RECENT", "LIMIT", "3"],
            "ERR USER or SERVER is required",
        ),
        (
            vec!["STM.RECENT", "USER", "u", "SERVER", "s"],
            "ERR syntax error",
        ),
        (
            vec!["STM.RECENT", "USER", "u", "LIMIT", "-1"],
            "ERR value is out of range, must be positive",
        ),
        (
            vec!["STM.RECENT", "USER", "u", "LIMIT", "x"],
            "ERR value is out of range, must be positive",
        ),
        (
            vec!["STM.RECENT", "USER", "u", "LINEAGE", "x"],
            "ERR invalid lineage id",
        ),
        (vec!["STM.FORGET", "TOPIC", "x"], "ERR syntax error"),
        (
            vec!["STM.FORGET", "CHANNEL"],
            "ERR wrong number of arguments for 'stm.forget' command",
        ),
        (vec!["STM.FORGET", "USER", "a:b"], "ERR invalid user id"),
    ];
    for (words, expected) in &cases {
        assert_eq!(
            run(&mut con, words).await.unwrap_err(),
            *expected,
            "{words:?}"
        );
    }
    assert_eq!(
        int(&ok(&mut con, &["DBSIZE"]).await),
        0,
        "nothing was written"
    );
    assert_eq!(info_field(&mut con, "stm", "stm_captures").await, 0);
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_ensure_ops").await,
        0
    );
    assert_eq!(
        text(&ok(&mut con, &["PING"]).await),
        "PONG",
        "the connection is still usable"
    );
    // A 64-byte id is fine, 65 is not.
    let long = "x".repeat(64);
    ok(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            &long,
            "CHANNEL",
            "c",
            "SERVER",
            "DM",
            "MSG",
            "user",
            "-",
            "a",
            "REPLY",
            "-",
            "-",
            "-",
            "b",
        ],
    )
    .await;
    let too_long = "x".repeat(65);
    assert_eq!(
        run(
            &mut con,
            &[
                "STM.CAPTURE",
                "USER",
                &too_long,
                "CHANNEL",
                "c",
                "SERVER",
                "DM"
            ]
        )
        .await
        .unwrap_err(),
        "ERR invalid user id"
    );
}
