//! An index over STM entries (`FT.CREATE … ON STM`): what a user said in any channel is one
//! FT.SEARCH, entries follow captures, summaries and FORGET, and an STM schema names only the
//! fields an entry has.

use crate::common;

use common::search::search;
use common::stm::{ok, run, strings};
use common::TestServer;
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;

async fn capture(con: &mut Conn, user: &str, channel: &str, said: &str, reply: &str) {
    ok(
        con,
        &[
            "STM.CAPTURE",
            "USER",
            user,
            "CHANNEL",
            channel,
            "SERVER",
            "s1",
            "MSG",
            "user",
            "Ann",
            said,
            "REPLY",
            "3",
            "-",
            "Bot",
            reply,
        ],
    )
    .await;
}

/// The ids `FT.SEARCH mem query` finds, sorted.
async fn found(con: &mut Conn, query: &str) -> Vec<String> {
    let mut ids = search(con, "mem", query, &[]).await;
    ids.sort();
    ids
}

#[tokio::test]
async fn an_stm_index_finds_what_a_user_said_in_any_channel() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(
        &mut con,
        &[
            "FT.CREATE",
            "mem",
            "ON",
            "STM",
            "PREFIX",
            "1",
            "shortterm:user:",
            "SCHEMA",
            "user",
            "TAG",
            "channel",
            "TAG",
            "persona",
            "TAG",
            "user_text",
            "TEXT",
            "model_text",
            "TEXT",
            "summary",
            "TEXT",
            "updated",
            "NUMERIC",
            "SORTABLE",
        ],
    )
    .await;
    capture(&mut con, "u1", "c1", "I love pizza with olives", "Noted!").await;
    capture(
        &mut con,
        "u1",
        "c2",
        "my cat sleeps all day",
        "Cats do. Pizza?",
    )
    .await;
    capture(&mut con, "u2", "c1", "pizza is overrated", "Fair.").await;

    // What u1 said about pizza, in any channel: only c1 (in c2 the persona said it).
    assert_eq!(
        found(&mut con, "@user:{u1} @user_text:pizza").await,
        ["shortterm:user:u1:c1:3"]
    );
    assert_eq!(
        found(&mut con, "@model_text:pizza").await,
        ["shortterm:user:u1:c2:3"]
    );
    // Stemming: "sleeping" finds "sleeps".
    assert_eq!(
        found(&mut con, "@user_text:sleeping").await,
        ["shortterm:user:u1:c2:3"]
    );
    // Server-scope entries are outside the prefix.
    assert_eq!(
        found(&mut con, "pizza").await,
        [
            "shortterm:user:u1:c1:3",
            "shortterm:user:u1:c2:3",
            "shortterm:user:u2:c1:3"
        ]
    );

    // A later capture replaces the entry's messages: the index follows.
    capture(&mut con, "u1", "c1", "tell me about trains", "Choo.").await;
    assert_eq!(
        found(&mut con, "@user:{u1} @user_text:pizza").await,
        Vec::<String>::new()
    );
    // A summary is searchable as soon as it is written.
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
            "Ann likes railways",
        ],
    )
    .await;
    assert_eq!(
        found(&mut con, "@summary:railway").await,
        ["shortterm:user:u1:c1:3"]
    );

    // The fields come back by name.
    let reply = ok(
        &mut con,
        &[
            "FT.SEARCH",
            "mem",
            "@user:{u2}",
            "RETURN",
            "3",
            "channel",
            "user_text",
            "persona",
        ],
    )
    .await;
    assert_eq!(
        strings(&reply.as_sequence().expect("array")[2]),
        [
            "channel",
            "c1",
            "user_text",
            "pizza is overrated",
            "persona",
            "3"
        ]
    );

    // FORGET removes the user's entries from the index.
    ok(&mut con, &["STM.FORGET", "USER", "u1"]).await;
    assert_eq!(found(&mut con, "pizza").await, ["shortterm:user:u2:c1:3"]);
}

#[tokio::test]
async fn an_stm_schema_names_only_an_entrys_fields() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    for (schema, error) in [
        (&["nickname", "TEXT"][..], "Unknown STM field `nickname`"),
        (
            &[
                "text",
                "VECTOR",
                "FLAT",
                "6",
                "TYPE",
                "FLOAT32",
                "DIM",
                "2",
                "DISTANCE_METRIC",
                "L2",
            ][..],
            "no VECTOR field",
        ),
        (&["channel", "GEO"][..], "no GEO field"),
    ] {
        let mut words = vec!["FT.CREATE", "mem", "ON", "STM", "SCHEMA"];
        words.extend_from_slice(schema);
        let got = run(&mut con, &words).await.expect_err("an error");
        assert!(got.contains(error), "{schema:?}: {got}");
    }
    assert_eq!(
        strings(&ok(&mut con, &["FT._LIST"]).await),
        Vec::<String>::new()
    );
    // A hash under an STM index's prefix is not an STM entry: not indexed.
    ok(
        &mut con,
        &["FT.CREATE", "mem", "ON", "STM", "SCHEMA", "text", "TEXT"],
    )
    .await;
    ok(&mut con, &["HSET", "shortterm:user:x:y", "text", "pizza"]).await;
    let reply = ok(&mut con, &["FT.SEARCH", "mem", "pizza", "NOCONTENT"]).await;
    assert_eq!(reply.as_sequence().expect("array")[0], Value::Int(0));
}
