//! STM.CONTEXT against the STM contract (README "Short-term memory"), over real TCP. Every call is
//! made three ways: RESP2 or RESP3 (each test runs both) and `FORMAT JSON`; the RESP map is turned
//! into JSON and must equal the JSON reply, so each assertion holds for all three forms.

mod common;

use common::stm::{ok, run, text};
use common::TestServer;
use redis::aio::MultiplexedConnection;
use redis::Value;
use serde_json::{json, Map, Value as Json};

const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

fn pairs(v: &Value, resp3: bool) -> Vec<(&Value, &Value)> {
    match (v, resp3) {
        (Value::Map(pairs), true) => pairs.iter().map(|(k, v)| (k, v)).collect(),
        (Value::Array(items), false) => {
            assert!(items.len() % 2 == 0, "RESP2 map must have an even length");
            items.chunks(2).map(|c| (&c[0], &c[1])).collect()
        }
        (other, _) => panic!("expected a map (resp3: {resp3}), got {other:?}"),
    }
}

fn string_array(v: &Value) -> Json {
    match v {
        Value::Array(items) => Json::Array(items.iter().map(|i| json!(text(i))).collect()),
        other => panic!("not an array: {other:?}"),
    }
}

/// The RESP reply as the JSON object `FORMAT JSON` gives, checking field order and types.
fn context_json(v: &Value, resp3: bool) -> Json {
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
async fn context(con: &mut MultiplexedConnection, resp3: bool, words: &[&str]) -> Json {
    let mut command = vec!["STM.CONTEXT"];
    command.extend_from_slice(words);
    let resp = context_json(&ok(con, &command).await, resp3);
    command.extend_from_slice(&["FORMAT", "JSON"]);
    let json: Json = serde_json::from_str(&text(&ok(con, &command).await)).expect("JSON reply");
    assert_eq!(resp, json, "RESP and FORMAT JSON differ for {words:?}");
    json
}

fn items(reply: &Json) -> Vec<String> {
    reply["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i.as_str().expect("string item").to_string())
        .collect()
}

fn keys(reply: &Json) -> Vec<String> {
    reply["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|i| i.as_str().expect("string key").to_string())
        .collect()
}

/// A capture with explicit speakers (`-` for none) and lineage.
#[allow(clippy::too_many_arguments)]
async fn capture(
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
async fn written_at(con: &mut MultiplexedConnection, key: &str) -> u64 {
    let entry: Json =
        serde_json::from_str(&text(&ok(con, &["STM.GET", key, "FORMAT", "JSON"]).await))
            .expect("entry JSON");
    entry["last_updated"].as_u64().expect("last_updated")
}

async fn connections(server: &TestServer) -> [(bool, MultiplexedConnection); 2] {
    [
        (false, server.client().await),
        (true, server.client3().await),
    ]
}

#[tokio::test]
async fn relative_times_cover_every_bucket_and_singular() {
    let server = TestServer::start().await;
    for (resp3, mut con) in connections(&server).await {
        ok(&mut con, &["FLUSHALL"]).await;
        capture(
            &mut con,
            "u1",
            "c2",
            "s1",
            "-",
            "-",
            &[("user", "-", "hi")],
            ("-", "yo"),
        )
        .await;
        let at = written_at(&mut con, "shortterm:server:s1:c2").await;
        let cases = [
            (0, "just now"),
            (MINUTE - 1, "just now"),
            (MINUTE, "1 minute ago"),
            (2 * MINUTE + 59_999, "2 minutes ago"),
            (HOUR, "1 hour ago"),
            (5 * HOUR, "5 hours ago"),
            (DAY, "1 day ago"),
            (6 * DAY + 23 * HOUR, "6 days ago"),
            (7 * DAY, "over a week ago"),
        ];
        for (age, when) in cases {
            let now = (at + age).to_string();
            let reply = context(
                &mut con,
                resp3,
                &[
                    "USER",
                    "u1",
                    "CHANNEL",
                    "c1",
                    "SERVER",
                    "s1",
                    "NOW",
                    now.as_str(),
                ],
            )
            .await;
            assert_eq!(
                items(&reply),
                [format!(
                    "[System: the assistant remembers a recent conversation in <#c2> ({when}):\n\
                     Someone: \"hi\"\nthe assistant: \"yo\"]"
                )],
                "age {age} ms"
            );
        }
        // A NOW before the write reads as "just now"; without NOW the server clock is used.
        let reply = context(
            &mut con,
            resp3,
            &["USER", "u1", "CHANNEL", "c1", "SERVER", "s1", "NOW", "0"],
        )
        .await;
        assert!(items(&reply)[0].contains("(just now)"));
        let reply = context(
            &mut con,
            resp3,
            &["USER", "u1", "CHANNEL", "c1", "SERVER", "s1"],
        )
        .await;
        assert!(items(&reply)[0].contains("(just now)"));
    }
}

#[tokio::test]
async fn content_is_categories_else_summary_else_crude_lines() {
    let server = TestServer::start().await;
    for (resp3, mut con) in connections(&server).await {
        ok(&mut con, &["FLUSHALL"]).await;
        let messages = [
            ("user", "Alice", "first"),
            ("user", "-", "says \"hi\"\nand more"),
            ("model", "-", "unnamed reply"),
        ];
        capture(
            &mut con,
            "u1",
            "c2",
            "s1",
            "3",
            "12",
            &messages,
            ("Nova", "named reply"),
        )
        .await;
        let at = written_at(&mut con, "shortterm:server:s1:c2:3").await;
        let now = (at + 3 * MINUTE).to_string();
        let base = [
            "user",
            "u1",
            "channel",
            "c1",
            "server",
            "s1",
            "now",
            now.as_str(),
        ];
        let ask = |extra: &[&'static str]| {
            let mut words = base.to_vec();
            words.extend_from_slice(extra);
            words
        };
        let head = "[System: Nova remembers a recent conversation in <#c2> (3 minutes ago):\n";
        let crude4 = "Alice: \"first\"\nSomeone: \"says \"hi\"\nand more\"\n\
                      Nova: \"unnamed reply\"\nNova: \"named reply\"";
        let reply = context(&mut con, resp3, &ask(&["BOT", "Nova"])).await;
        assert_eq!(items(&reply), [format!("{head}{crude4}]")]);
        assert_eq!(keys(&reply), ["shortterm:server:s1:c2:3"]);
        // CRUDE keeps the newest messages, oldest of them first; the default name is the assistant.
        let reply = context(&mut con, resp3, &ask(&["CRUDE", "2"])).await;
        assert_eq!(
            items(&reply),
            ["[System: the assistant remembers a recent conversation in <#c2> (3 minutes ago):\n\
              the assistant: \"unnamed reply\"\nNova: \"named reply\"]"]
        );
        // Nothing to show: no block, no key.
        let reply = context(&mut con, resp3, &ask(&["CRUDE", "0"])).await;
        assert_eq!(items(&reply), Vec::<String>::new());
        assert_eq!(keys(&reply), Vec::<String>::new());

        // A summary supersedes the crude lines. Writing it restarts the entry's clock.
        let summary = "Alice said hi.";
        ok(
            &mut con,
            &[
                "STM.SUMMARY",
                "USER",
                "u1",
                "CHANNEL",
                "c2",
                "SERVER",
                "s1",
                "PERSONA",
                "3",
                "TEXT",
                summary,
            ],
        )
        .await;
        let at = written_at(&mut con, "shortterm:server:s1:c2:3").await;
        let now = (at + HOUR).to_string();
        let ask = |extra: &[&'static str]| {
            let mut words = vec![
                "USER",
                "u1",
                "CHANNEL",
                "c1",
                "SERVER",
                "s1",
                "NOW",
                now.as_str(),
            ];
            words.extend_from_slice(extra);
            words
        };
        let head = "[System: Nova remembers a recent conversation in <#c2> (1 hour ago):\n";
        let reply = context(&mut con, resp3, &ask(&["BOT", "Nova"])).await;
        assert_eq!(items(&reply), [format!("{head}{summary}]")]);
        let reply = context(
            &mut con,
            resp3,
            &ask(&["BOT", "Nova", "MODE", "crude_summary"]),
        )
        .await;
        assert_eq!(
            items(&reply),
            [format!(
                "{head}{summary}\nRecent raw messages from <#c2>:\n{crude4}]"
            )]
        );

        // Categories supersede the summary, as `slug: text` lines in slug order.
        ok(
            &mut con,
            &[
                "STM.CATEGORIES",
                "USER",
                "u1",
                "CHANNEL",
                "c2",
                "SERVER",
                "s1",
                "PERSONA",
                "3",
                "SET",
                "topic",
                "greetings",
                "mood",
                "cheerful",
            ],
        )
        .await;
        let at = written_at(&mut con, "shortterm:server:s1:c2:3").await;
        let now = (at + 2 * DAY).to_string();
        let ask = |extra: &[&'static str]| {
            let mut words = vec![
                "USER",
                "u1",
                "CHANNEL",
                "c1",
                "SERVER",
                "s1",
                "NOW",
                now.as_str(),
            ];
            words.extend_from_slice(extra);
            words
        };
        let head = "[System: Nova remembers a recent conversation in <#c2> (2 days ago):\n";
        let cats = "mood: cheerful\ntopic: greetings";
        let reply = context(&mut con, resp3, &ask(&["BOT", "Nova", "MODE", "SUPERSEDE"])).await;
        assert_eq!(items(&reply), [format!("{head}{cats}]")]);
        let reply = context(
            &mut con,
            resp3,
            &ask(&["BOT", "Nova", "MODE", "CRUDE_SUMMARY", "CRUDE", "1"]),
        )
        .await;
        assert_eq!(
            items(&reply),
            [format!(
                "{head}{cats}\nRecent raw messages from <#c2>:\nNova: \"named reply\"]"
            )]
        );
        // An entry with a summary but no messages gets no raw-messages part.
        ok(
            &mut con,
            &[
                "STM.SUMMARY",
                "USER",
                "u1",
                "CHANNEL",
                "c4",
                "SERVER",
                "s1",
                "PERSONA",
                "3",
                "TEXT",
                "Quiet.",
            ],
        )
        .await;
        let reply = context(
            &mut con,
            resp3,
            &ask(&["MODE", "CRUDE_SUMMARY", "OTHERS", "1"]),
        )
        .await;
        assert_eq!(items(&reply).len(), 1);
        assert!(
            items(&reply)[0].ends_with("):\nQuiet.]"),
            "{:?}",
            items(&reply)
        );
        assert_eq!(keys(&reply), ["shortterm:server:s1:c4:3"]);
    }
}

#[tokio::test]
async fn live_scope_block_nudge_and_key_order() {
    let server = TestServer::start().await;
    for (resp3, mut con) in connections(&server).await {
        ok(&mut con, &["FLUSHALL"]).await;
        let here = [
            "USER", "u1", "CHANNEL", "c1", "SERVER", "s1", "PERSONA", "3",
        ];
        let with = |extra: &[&'static str]| {
            let mut words = here.to_vec();
            words.extend_from_slice(extra);
            words
        };
        // No entry at all: nothing, no nudge, 0 turns.
        let reply = context(&mut con, resp3, &here).await;
        assert_eq!(
            reply,
            json!({"items": [], "nudge": false, "turns_since_refresh": 0, "keys": []})
        );
        let reply = context(&mut con, resp3, &with(&["CADENCE", "1"])).await;
        assert_eq!(reply["nudge"], json!(false), "no live entry never nudges");

        capture(
            &mut con,
            "u1",
            "c1",
            "s1",
            "3",
            "12",
            &[("user", "Al", "hi")],
            ("Nova", "yo"),
        )
        .await;
        let reply = context(&mut con, resp3, &here).await;
        // Raw messages of this conversation are not repeated; one turn is below the cadence.
        assert_eq!(
            reply,
            json!({"items": [], "nudge": false, "turns_since_refresh": 1, "keys": []})
        );
        let reply = context(&mut con, resp3, &with(&["CADENCE", "1"])).await;
        assert_eq!(reply["nudge"], json!(true));
        ok(
            &mut con,
            &["STM.TICK", "shortterm:server:s1:c1:3", "BY", "3"],
        )
        .await;
        let reply = context(&mut con, resp3, &here).await;
        assert_eq!(
            (reply["turns_since_refresh"].clone(), reply["nudge"].clone()),
            (json!(4), json!(false))
        );
        ok(&mut con, &["STM.TICK", "shortterm:server:s1:c1:3"]).await;
        let reply = context(&mut con, resp3, &here).await;
        assert_eq!(
            (reply["turns_since_refresh"].clone(), reply["nudge"].clone()),
            (json!(5), json!(true))
        );
        // PERSONA selects the live scope: persona none has no entry here.
        let reply = context(
            &mut con,
            resp3,
            &["USER", "u1", "CHANNEL", "c1", "SERVER", "s1"],
        )
        .await;
        assert_eq!(reply["turns_since_refresh"], json!(0));

        // A summary on the live scope is its block, after the other channels' blocks.
        capture(
            &mut con,
            "u2",
            "c2",
            "s1",
            "3",
            "12",
            &[("user", "Bo", "hey")],
            ("Nova", "hi Bo"),
        )
        .await;
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
                "PERSONA",
                "3",
                "TEXT",
                "Al says hi.",
            ],
        )
        .await;
        let reply = context(&mut con, resp3, &with(&["BOT", "Nova"])).await;
        let items_now = items(&reply);
        assert_eq!(items_now.len(), 2, "{items_now:?}");
        assert!(items_now[0]
            .starts_with("[System: Nova remembers a recent conversation in <#c2> (just now):\n"));
        assert_eq!(
            items_now[1],
            "[System: Nova's short term memory for this ongoing conversation:\nAl says hi.]"
        );
        assert_eq!(
            keys(&reply),
            ["shortterm:server:s1:c2:3", "shortterm:server:s1:c1:3"]
        );
        assert_eq!(
            (reply["turns_since_refresh"].clone(), reply["nudge"].clone()),
            (json!(0), json!(false))
        );

        // In a DM the live scope is the user entry.
        capture(
            &mut con,
            "u1",
            "d1",
            "DM",
            "3",
            "12",
            &[("user", "Al", "psst")],
            ("Nova", "yes?"),
        )
        .await;
        ok(
            &mut con,
            &[
                "STM.CATEGORIES",
                "USER",
                "u1",
                "CHANNEL",
                "d1",
                "SERVER",
                "dm",
                "PERSONA",
                "3",
                "SET",
                "secret",
                "cake",
            ],
        )
        .await;
        let reply = context(
            &mut con,
            resp3,
            &[
                "USER", "u1", "CHANNEL", "d1", "SERVER", "DM", "PERSONA", "3", "OTHERS", "0",
            ],
        )
        .await;
        assert_eq!(
            reply,
            json!({
                "items": ["[System: the assistant's short term memory for this ongoing conversation:\nsecret: cake]"],
                "nudge": false,
                "turns_since_refresh": 0,
                "keys": ["shortterm:user:u1:d1:3"],
            })
        );
    }
}

#[tokio::test]
async fn lineage_filter_others_limit_and_newest_first() {
    let server = TestServer::start().await;
    for (resp3, mut con) in connections(&server).await {
        ok(&mut con, &["FLUSHALL"]).await;
        for (channel, persona, lineage) in [
            ("c2", "3", "12"),
            ("c3", "4", "13"),
            ("c4", "5", "12"),
            ("c5", "-", "-"),
            ("c1", "3", "12"), // the current channel: never an other-channel memory
        ] {
            capture(
                &mut con,
                "u1",
                channel,
                "s1",
                persona,
                lineage,
                &[("user", "-", channel)],
                ("-", "ok"),
            )
            .await;
        }
        // c2 written again: now the newest.
        capture(
            &mut con,
            "u1",
            "c2",
            "s1",
            "3",
            "12",
            &[("user", "-", "c2 again")],
            ("-", "ok"),
        )
        .await;
        let base = ["USER", "u1", "CHANNEL", "c1", "SERVER", "s1"];
        let with = |extra: &[&'static str]| {
            let mut words = base.to_vec();
            words.extend_from_slice(extra);
            words
        };
        let reply = context(&mut con, resp3, &base).await;
        assert_eq!(
            keys(&reply),
            [
                "shortterm:server:s1:c2:3",
                "shortterm:server:s1:c5",
                "shortterm:server:s1:c4:5"
            ],
            "default OTHERS is 3, newest write first"
        );
        assert!(items(&reply)[0].ends_with("Someone: \"c2 again\"\nthe assistant: \"ok\"]"));
        let reply = context(&mut con, resp3, &with(&["OTHERS", "10"])).await;
        assert_eq!(keys(&reply).len(), 4);
        let reply = context(&mut con, resp3, &with(&["OTHERS", "1"])).await;
        assert_eq!(keys(&reply), ["shortterm:server:s1:c2:3"]);
        let reply = context(&mut con, resp3, &with(&["OTHERS", "0"])).await;
        assert_eq!(items(&reply), Vec::<String>::new());
        let reply = context(&mut con, resp3, &with(&["LINEAGE", "12"])).await;
        assert_eq!(
            keys(&reply),
            ["shortterm:server:s1:c2:3", "shortterm:server:s1:c4:5"]
        );
        let reply = context(&mut con, resp3, &with(&["LINEAGE", "13", "PERSONA", "4"])).await;
        assert_eq!(keys(&reply), ["shortterm:server:s1:c3:4"]);
        let reply = context(&mut con, resp3, &with(&["LINEAGE", "-"])).await;
        assert_eq!(keys(&reply), ["shortterm:server:s1:c5"]);
        let reply = context(&mut con, resp3, &with(&["LINEAGE", "99"])).await;
        assert_eq!(keys(&reply), Vec::<String>::new());
    }
}

#[tokio::test]
async fn server_cross_server_and_dm_choose_their_entries() {
    let server = TestServer::start().await;
    for (resp3, mut con) in connections(&server).await {
        ok(&mut con, &["FLUSHALL"]).await;
        let turn = [("user", "-", "x")];
        capture(&mut con, "u1", "c1", "s1", "-", "-", &turn, ("-", "ok")).await; // here
        capture(&mut con, "u1", "c2", "s1", "-", "-", &turn, ("-", "ok")).await;
        capture(&mut con, "u2", "c3", "s1", "-", "-", &turn, ("-", "ok")).await; // another user
        capture(&mut con, "u1", "c5", "s2", "-", "-", &turn, ("-", "ok")).await; // another server
        capture(&mut con, "u1", "d9", "DM", "-", "-", &turn, ("-", "ok")).await; // a DM
        capture(&mut con, "u2", "c6", "s2", "-", "-", &turn, ("-", "ok")).await; // nobody's business
        let in_server = [
            "USER", "u1", "CHANNEL", "c1", "SERVER", "s1", "OTHERS", "10",
        ];
        let reply = context(&mut con, resp3, &in_server).await;
        assert_eq!(
            keys(&reply),
            ["shortterm:server:s1:c3", "shortterm:server:s1:c2"],
            "in a server: that server's channels, every user's"
        );
        let mut cross = in_server.to_vec();
        cross.push("cross-server");
        let reply = context(&mut con, resp3, &cross).await;
        assert_eq!(
            keys(&reply),
            [
                "shortterm:user:u1:c5",
                "shortterm:server:s1:c3",
                "shortterm:server:s1:c2"
            ],
            "CROSS-SERVER adds the user's entries of other servers, never a DM"
        );
        let in_dm = [
            "USER", "u1", "CHANNEL", "d9", "SERVER", "DM", "OTHERS", "10",
        ];
        let reply = context(&mut con, resp3, &in_dm).await;
        assert_eq!(
            keys(&reply),
            [
                "shortterm:user:u1:c5",
                "shortterm:user:u1:c2",
                "shortterm:user:u1:c1"
            ],
            "in a DM: the user's own entries everywhere else"
        );
        assert!(items(&reply)[2].contains("conversation in <#c1> ("));
    }
}

#[tokio::test]
async fn bad_options_are_errors_and_the_connection_stays_usable() {
    let server = TestServer::start().await;
    for (_, mut con) in connections(&server).await {
        ok(&mut con, &["FLUSHALL"]).await;
        ok(&mut con, &["SET", "shortterm:server:s1:c1", "plain"]).await;
        let base = ["STM.CONTEXT", "USER", "u1", "CHANNEL", "c1", "SERVER", "s2"];
        let with = |extra: &[&'static str]| {
            let mut words = base.to_vec();
            words.extend_from_slice(extra);
            words
        };
        let cases: Vec<(Vec<&str>, &str)> = vec![
            (
                vec!["STM.CONTEXT", "USER", "u1"],
                "ERR wrong number of arguments for 'stm.context' command",
            ),
            (
                vec!["STM.CONTEXT", "USER", "u1", "CHANNEL", "c1", "PERSONA", "3"],
                "ERR USER, CHANNEL and SERVER are required",
            ),
            (with(&["USER", "u2"]), "ERR syntax error"),
            (with(&["OTHERS", "1", "OTHERS", "2"]), "ERR syntax error"),
            (with(&["CROSS-SERVER", "CROSS-SERVER"]), "ERR syntax error"),
            (
                with(&["FORMAT", "JSON", "FORMAT", "JSON"]),
                "ERR syntax error",
            ),
            (with(&["LIMIT", "3"]), "ERR syntax error"),
            (with(&["OTHERS"]), "ERR syntax error"),
            (with(&["MODE", "RAW"]), "ERR syntax error"),
            (with(&["FORMAT", "XML"]), "ERR syntax error"),
            (
                vec![
                    "STM.CONTEXT",
                    "USER",
                    "a:b",
                    "CHANNEL",
                    "c1",
                    "SERVER",
                    "s1",
                ],
                "ERR invalid user id",
            ),
            (
                vec![
                    "STM.CONTEXT",
                    "USER",
                    "u1",
                    "CHANNEL",
                    "c 1",
                    "SERVER",
                    "s1",
                ],
                "ERR invalid channel id",
            ),
            (
                vec!["STM.CONTEXT", "USER", "u1", "CHANNEL", "c1", "SERVER", ""],
                "ERR invalid server id",
            ),
            (with(&["PERSONA", "x"]), "ERR invalid persona id"),
            (with(&["LINEAGE", "1.5"]), "ERR invalid lineage id"),
            (
                with(&["OTHERS", "-1"]),
                "ERR value is out of range, must be positive",
            ),
            (
                with(&["CRUDE", "many"]),
                "ERR value is out of range, must be positive",
            ),
            (
                with(&["NOW", "-5"]),
                "ERR value is out of range, must be positive",
            ),
            (
                with(&["CADENCE", "0"]),
                "ERR CADENCE must be a positive integer",
            ),
            (
                with(&["CADENCE", "x"]),
                "ERR CADENCE must be a positive integer",
            ),
            (with(&["BOT", ""]), "ERR invalid bot name"),
            (with(&["BOT", "two\nlines"]), "ERR invalid bot name"),
            (
                vec!["STM.CONTEXT", "USER", "u1", "CHANNEL", "c1", "SERVER", "s1"],
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
        ];
        for (words, want) in cases {
            assert_eq!(
                run(&mut con, &words).await,
                Err(want.to_string()),
                "{words:?}"
            );
            assert_eq!(
                text(&ok(&mut con, &["PING"]).await),
                "PONG",
                "after {words:?}"
            );
        }
        assert_eq!(
            text(&ok(&mut con, &["GET", "shortterm:server:s1:c1"]).await),
            "plain"
        );
    }
}
