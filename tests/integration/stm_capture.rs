//! STM.CAPTURE and STM.GET against docs/stm.md, over real TCP in RESP2 and RESP3.

use crate::common;

use common::stm::{contents, entry_json, info_field, int, ok, run, strings, text};
use common::TestServer;
use redis::Value;
use serde_json::json;

const EMOJI: &str = "<:wave:123456789012345678>";

#[tokio::test]
async fn capture_writes_both_scopes_per_persona_in_order() {
    let server = TestServer::start().await;
    for resp3 in [false, true] {
        let mut con = if resp3 {
            server.client3().await
        } else {
            server.client().await
        };
        ok(&mut con, &["FLUSHALL"]).await;
        let keys = ok(
            &mut con,
            &[
                "STM.CAPTURE",
                "USER",
                "u1",
                "CHANNEL",
                "c1",
                "SERVER",
                "s1",
                "PARENT",
                "p9",
                "MSG",
                "user",
                "Alice",
                "hi",
                "REPLY",
                "7",
                "12",
                "Nova",
                "hello",
                "REPLY",
                "-",
                "-",
                "-",
                "plain",
                "REPLY",
                "7",
                "99",
                "Nova",
                "again",
            ],
        )
        .await;
        assert_eq!(
            strings(&keys),
            [
                "shortterm:user:u1:c1:7",
                "shortterm:server:s1:c1:7",
                "shortterm:user:u1:c1",
                "shortterm:server:s1:c1",
            ]
        );
        let raw = ok(&mut con, &["STM.GET", "shortterm:user:u1:c1:7"]).await;
        let entry = entry_json(&raw, resp3);
        assert_eq!(entry["key"], "shortterm:user:u1:c1:7");
        assert_eq!(entry["scope"], "user");
        assert_eq!(entry["user"], "u1");
        assert_eq!(
            entry["server"], "s1",
            "a user-scope entry made in a server carries its id"
        );
        assert_eq!(entry["channel"], "c1");
        assert_eq!(entry["parent"], "p9");
        assert_eq!(entry["persona"], 7);
        assert_eq!(entry["lineage"], 12, "lineage of the persona's first REPLY");
        assert_eq!(entry["summary"], json!(null));
        assert_eq!(entry["categories"], json!({}));
        assert_eq!(
            entry["turns_since_refresh"], 0,
            "the user scope is not live in a server"
        );
        assert_eq!(
            contents(&entry),
            ["hi", "hello", "plain", "again"],
            "every persona gets all replies"
        );
        let roles: Vec<&str> = entry["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "model", "model", "model"]);
        assert_eq!(
            entry["messages"][2]["speaker"],
            json!(null),
            "speaker '-' is nil"
        );
        let ttl = entry["ttl"].as_i64().unwrap();
        assert!(
            (43_190_000..=43_200_000).contains(&ttl),
            "12 h expiry, got {ttl}"
        );

        let server_entry = entry_json(
            &ok(&mut con, &["STM.GET", "shortterm:server:s1:c1"]).await,
            resp3,
        );
        assert_eq!(server_entry["scope"], "server");
        assert_eq!(server_entry["user"], json!(null));
        assert_eq!(server_entry["persona"], json!(null));
        assert_eq!(server_entry["lineage"], json!(null));
        assert_eq!(
            server_entry["turns_since_refresh"], 1,
            "the server scope is live"
        );
        assert_eq!(
            ok(&mut con, &["STM.GET", "shortterm:user:nobody:c1"]).await,
            Value::Nil
        );
    }
}

#[tokio::test]
async fn resp2_resp3_and_json_show_the_same_entry() {
    let server = TestServer::start().await;
    let mut c2 = server.client().await;
    let mut c3 = server.client3().await;
    ok(
        &mut c2,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "MSG",
            "user",
            "-",
            "x",
            "REPLY",
            "1",
            "-",
            "A",
            "y",
        ],
    )
    .await;
    ok(
        &mut c2,
        &[
            "STM.CATEGORIES",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "PERSONA",
            "1",
            "SET",
            "mood",
            "happy",
        ],
    )
    .await;
    let strip_ttl = |mut j: serde_json::Value| {
        j["ttl"] = json!(0);
        j
    };
    let resp2 = strip_ttl(entry_json(
        &ok(&mut c2, &["STM.GET", "shortterm:server:s:c:1"]).await,
        false,
    ));
    let resp3 = strip_ttl(entry_json(
        &ok(&mut c3, &["STM.GET", "shortterm:server:s:c:1"]).await,
        true,
    ));
    let raw_json = text(
        &ok(
            &mut c2,
            &["STM.GET", "shortterm:server:s:c:1", "FORMAT", "JSON"],
        )
        .await,
    );
    let parsed = strip_ttl(serde_json::from_str(&raw_json).expect("valid JSON"));
    assert_eq!(resp2, resp3);
    assert_eq!(resp2, parsed);
    assert_eq!(parsed["categories"], json!({"mood": "happy"}));
    // FORMAT RESP is the default, spelled out.
    let explicit = strip_ttl(entry_json(
        &ok(
            &mut c3,
            &["STM.GET", "shortterm:server:s:c:1", "format", "resp"],
        )
        .await,
        true,
    ));
    assert_eq!(explicit, resp3);
}

#[tokio::test]
async fn direct_messages_skip_the_server_scope_and_tick_the_user_scope() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let keys = ok(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "dmchan",
            "SERVER",
            "DM",
            "MSG",
            "user",
            "-",
            "hey",
            "REPLY",
            "3",
            "-",
            "P",
            "yo",
        ],
    )
    .await;
    assert_eq!(strings(&keys), ["shortterm:user:u:dmchan:3"]);
    let entry = entry_json(
        &ok(&mut con, &["STM.GET", "shortterm:user:u:dmchan:3"]).await,
        false,
    );
    assert_eq!(entry["server"], json!(null));
    assert_eq!(entry["turns_since_refresh"], 1);
    assert_eq!(int(&ok(&mut con, &["DBSIZE"]).await), 1);
}

#[tokio::test]
async fn skip_conditions_are_judged_in_order_and_counted_once() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let base = ["STM.CAPTURE", "USER", "u", "CHANNEL", "c", "SERVER", "s"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "STOP", "PRIVACY", "FULL", "MSG", "user", "-", "a", "REPLY", "1", "-", "-", "b",
            ],
            "stm_skipped_stop",
        ),
        (vec!["PRIVACY", "2"], "stm_skipped_privacy"),
        (vec!["REPLY", "1", "-", "-", "b"], "stm_skipped_no_messages"),
        (vec![], "stm_skipped_no_messages"),
        (vec!["MSG", "user", "-", "a"], "stm_skipped_no_replies"),
        (
            vec![
                "MSG",
                "user",
                "-",
                "  \n\n ",
                "REPLY",
                "1",
                "-",
                "-",
                "[System: Message metadata: only]",
            ],
            "stm_skipped_empty",
        ),
    ];
    for (extra, counter) in &cases {
        let words: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let reply = ok(&mut con, &words).await;
        assert_eq!(reply, Value::Array(vec![]), "{extra:?}");
        assert_eq!(
            int(&ok(&mut con, &["DBSIZE"]).await),
            0,
            "{extra:?} wrote nothing"
        );
        let _ = counter;
    }
    assert_eq!(info_field(&mut con, "stm", "stm_skipped_stop").await, 1);
    assert_eq!(info_field(&mut con, "stm", "stm_skipped_privacy").await, 1);
    assert_eq!(
        info_field(&mut con, "stm", "stm_skipped_no_messages").await,
        2
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_skipped_no_replies").await,
        1
    );
    assert_eq!(info_field(&mut con, "stm", "stm_skipped_empty").await, 1);
    assert_eq!(info_field(&mut con, "stm", "stm_captures").await, 0);
    // PARTIAL privacy is not a skip.
    let written = ok(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "PRIVACY",
            "partial",
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
    assert_eq!(strings(&written).len(), 2);
    // FLUSHALL keeps the counters; CONFIG RESETSTAT clears them.
    ok(&mut con, &["FLUSHALL"]).await;
    assert_eq!(
        info_field(&mut con, "stm", "stm_skipped_no_messages").await,
        2
    );
    ok(&mut con, &["CONFIG", "RESETSTAT"]).await;
    assert_eq!(
        info_field(&mut con, "stm", "stm_skipped_no_messages").await,
        0
    );
    assert_eq!(info_field(&mut con, "stm", "stm_captures").await, 0);
}

#[tokio::test]
async fn text_is_cleaned_before_storage_and_empty_items_are_dropped() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let code = format!("see `{EMOJI}` and\n```\n{EMOJI}\n```");
    let annotated = "Hi [System: This message (ID: 42) was sent by X] there  \n\n\n<a:dance:12345678901234567890>";
    ok(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "DM",
            "MSG",
            "user",
            "-",
            &format!("  hello {EMOJI}\t\n"),
            "MSG",
            "user",
            "-",
            "[System: Reactions on this message: 👍]",
            "MSG",
            "model",
            "-",
            &code,
            "REPLY",
            "-",
            "-",
            "-",
            annotated,
        ],
    )
    .await;
    let entry = entry_json(
        &ok(&mut con, &["STM.GET", "shortterm:user:u:c"]).await,
        false,
    );
    assert_eq!(
        contents(&entry),
        ["hello :wave:", &code[..], "Hi  there\n:dance:"],
        "emoji outside code only, annotations and blank runs removed, empty message dropped"
    );
}

#[tokio::test]
async fn extra_strip_patterns_from_config_apply() {
    let server =
        TestServer::start_with(|c| c.stm_strip_patterns = vec![r"\(ref:\d+\)".into()]).await;
    let mut con = server.client().await;
    ok(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "DM",
            "MSG",
            "user",
            "-",
            "see (ref:12) this",
            "REPLY",
            "-",
            "-",
            "-",
            "ok",
        ],
    )
    .await;
    let entry = entry_json(
        &ok(&mut con, &["STM.GET", "shortterm:user:u:c"]).await,
        false,
    );
    assert_eq!(contents(&entry), ["see  this", "ok"]);
}

#[tokio::test]
async fn capture_keeps_the_newest_messages_and_replaces_the_list() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let mut words: Vec<String> = "STM.CAPTURE USER u CHANNEL c SERVER s"
        .split(' ')
        .map(String::from)
        .collect();
    for i in 0..12 {
        words.extend(["MSG".into(), "user".into(), "-".into(), format!("m{i}")]);
    }
    words.extend(["REPLY", "-", "-", "-", "r"].map(String::from));
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    ok(&mut con, &refs).await;
    let entry = entry_json(
        &ok(&mut con, &["STM.GET", "shortterm:server:s:c"]).await,
        false,
    );
    let expected: Vec<String> = (0..12)
        .map(|i| format!("m{i}"))
        .chain(["r".to_string()])
        .collect();
    assert_eq!(contents(&entry), expected[expected.len() - 10..].to_vec());
    assert_eq!(contents(&entry).len(), 10);

    ok(&mut con, &["CONFIG", "SET", "stm-max-messages", "2"]).await;
    ok(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "MSG",
            "user",
            "-",
            "new1",
            "MSG",
            "user",
            "-",
            "new2",
            "REPLY",
            "-",
            "-",
            "-",
            "new3",
        ],
    )
    .await;
    let entry = entry_json(
        &ok(&mut con, &["STM.GET", "shortterm:server:s:c"]).await,
        false,
    );
    assert_eq!(
        contents(&entry),
        ["new2", "new3"],
        "the snapshot replaces, newest kept"
    );
}

#[tokio::test]
async fn capture_preserves_distilled_memory_and_counters_but_sets_identity() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let capture = |parent: &'static str, lineage: &'static str| {
        vec![
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "PARENT",
            parent,
            "MSG",
            "user",
            "-",
            "x",
            "REPLY",
            "5",
            lineage,
            "-",
            "y",
        ]
    };
    ok(&mut con, &capture("p1", "1")).await;
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
            "PERSONA",
            "5",
            "TEXT",
            "sum",
        ],
    )
    .await;
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
            "PERSONA",
            "5",
            "SET",
            "a",
            "b",
        ],
    )
    .await;
    ok(&mut con, &capture("p2", "2")).await;
    ok(&mut con, &capture("p2", "2")).await;
    let entry = entry_json(
        &ok(&mut con, &["STM.GET", "shortterm:server:s:c:5"]).await,
        false,
    );
    assert_eq!(entry["summary"], "sum");
    assert_eq!(entry["categories"], json!({"a": "b"}));
    assert_eq!(entry["turns_since_refresh"], 2);
    assert_eq!(entry["last_refreshed_turn"], 2);
    assert_eq!(entry["parent"], "p2");
    assert_eq!(entry["lineage"], 2);
    let ttl = entry["ttl"].as_i64().unwrap();
    assert!(
        ttl > 86_000_000,
        "distilled entries keep the 24 h expiry across captures: {ttl}"
    );
}

#[tokio::test]
async fn capture_onto_another_type_is_wrongtype_and_writes_nothing() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(&mut con, &["SET", "shortterm:server:s:c", "plain string"]).await;
    let err = run(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "MSG",
            "user",
            "-",
            "x",
            "REPLY",
            "-",
            "-",
            "-",
            "y",
        ],
    )
    .await;
    assert_eq!(
        err.unwrap_err(),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(
        int(&ok(&mut con, &["EXISTS", "shortterm:user:u:c"]).await),
        0,
        "the user scope was not written either"
    );
    assert_eq!(
        text(&ok(&mut con, &["GET", "shortterm:server:s:c"]).await),
        "plain string"
    );
    assert_eq!(
        run(&mut con, &["STM.GET", "shortterm:server:s:c"])
            .await
            .unwrap_err(),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
}

#[tokio::test]
async fn many_clients_capturing_into_one_channel_lose_no_update() {
    let server = TestServer::start().await;
    let clients = 16;
    let per_client = 40;
    let mut tasks = Vec::new();
    for c in 0..clients {
        let mut con = server.client().await;
        tasks.push(tokio::spawn(async move {
            for i in 0..per_client {
                let user = format!("user{c}");
                let msg = format!("m{c}-{i}");
                ok(
                    &mut con,
                    &[
                        "STM.CAPTURE",
                        "USER",
                        &user,
                        "CHANNEL",
                        "shared",
                        "SERVER",
                        "guild",
                        "MSG",
                        "user",
                        "-",
                        &msg,
                        "REPLY",
                        "9",
                        "-",
                        "-",
                        "r",
                    ],
                )
                .await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("client task");
    }
    let mut con = server.client().await;
    let entry = entry_json(
        &ok(&mut con, &["STM.GET", "shortterm:server:guild:shared:9"]).await,
        false,
    );
    assert_eq!(
        entry["turns_since_refresh"],
        clients * per_client,
        "every tick counted"
    );
    assert_eq!(contents(&entry).len(), 2);
    assert_eq!(
        info_field(&mut con, "stm", "stm_captures").await,
        clients * per_client
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_entries").await,
        clients + 1
    );
    for c in 0..clients {
        let entry = entry_json(
            &ok(
                &mut con,
                &["STM.GET", &format!("shortterm:user:user{c}:shared:9")],
            )
            .await,
            false,
        );
        assert_eq!(
            contents(&entry),
            [format!("m{c}-{}", per_client - 1), "r".to_string()]
        );
    }
}

#[tokio::test]
async fn capture_emits_row_operations_for_each_scope() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "MSG",
            "user",
            "-",
            "x",
            "REPLY",
            "1",
            "-",
            "-",
            "y",
            "REPLY",
            "2",
            "-",
            "-",
            "z",
        ],
    )
    .await;
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_ensure_ops").await,
        4,
        "a row per written scope"
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_tick_ops").await,
        2,
        "one tick per persona's live scope"
    );
    ok(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "STOP",
            "MSG",
            "user",
            "-",
            "x",
            "REPLY",
            "1",
            "-",
            "-",
            "y",
        ],
    )
    .await;
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_ensure_ops").await,
        4,
        "a skip emits nothing"
    );
    ok(
        &mut con,
        &[
            "STM.CAPTURE",
            "USER",
            "u",
            "CHANNEL",
            "c",
            "SERVER",
            "s",
            "MSG",
            "user",
            "-",
            "x",
            "REPLY",
            "2",
            "-",
            "-",
            "z",
        ],
    )
    .await;
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_ensure_ops").await,
        4,
        "rows already ensured by this process are not ensured again"
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_tick_ops").await,
        3,
        "but the live scope ticks at every capture"
    );
}
