//! STM.CONTEXT against the STM contract (docs/stm.md), over real TCP. Every call is
//! made three ways: RESP2 or RESP3 (each test runs both) and `FORMAT JSON`; the RESP map is turned
//! into JSON and must equal the JSON reply, so each assertion holds for all three forms.

use crate::common;

use common::stm::ok;
use common::stm_context::{
    capture, connections, context, items, keys, written_at, DAY, HOUR, MINUTE,
};
use common::TestServer;
use serde_json::json;

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
