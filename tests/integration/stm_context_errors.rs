//! STM.CONTEXT's bad options: each a Redis-style error that changes nothing and leaves the
//! connection usable, in RESP2 and RESP3.

use crate::common;

use common::stm::{ok, run, text};
use common::stm_context::connections;
use common::TestServer;

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
