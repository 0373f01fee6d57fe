//! FT.AGGREGATE and its cursors over real TCP: a cursor read to its end gives every row once
//! and then closes, an idle cursor expires, the cursors of a client that dropped stay bounded
//! (and readable by others until they expire), and hostile pipelines get errors while other
//! clients keep being answered.

use crate::common;

use common::stm::{ok, run, text};
use common::TestServer;
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;

/// `n` documents `d:0…` with `name` (`n0`…), `group` (i % 3) and a sortable `age` (= i).
async fn people(con: &mut Conn, n: usize) {
    ok(
        con,
        &[
            "FT.CREATE",
            "idx",
            "ON",
            "HASH",
            "PREFIX",
            "1",
            "d:",
            "SCHEMA",
            "name",
            "TEXT",
            "group",
            "TAG",
            "age",
            "NUMERIC",
            "SORTABLE",
        ],
    )
    .await;
    for i in 0..n {
        let (key, name, group, age) = (
            format!("d:{i}"),
            format!("n{i}"),
            (i % 3).to_string(),
            i.to_string(),
        );
        ok(
            con,
            &["HSET", &key, "name", &name, "group", &group, "age", &age],
        )
        .await;
    }
}

/// A RESP2 chunk `[total, [k, v, …], …]`: its rows as (property, value) lists.
fn rows(chunk: &Value) -> Vec<Vec<(String, String)>> {
    let Value::Array(items) = chunk else {
        panic!("not an array: {chunk:?}")
    };
    assert!(matches!(items.first(), Some(Value::Int(_))), "{chunk:?}");
    items[1..]
        .iter()
        .map(|row| {
            let Value::Array(flat) = row else {
                panic!("row not an array: {row:?}")
            };
            flat.chunks(2)
                .map(|kv| (text(&kv[0]), text(&kv[1])))
                .collect()
        })
        .collect()
}

/// A WITHCURSOR or FT.CURSOR READ reply: (its chunk's rows, the cursor id).
fn cursor_reply(reply: &Value) -> (Vec<Vec<(String, String)>>, i64) {
    let Value::Array(pair) = reply else {
        panic!("not an array: {reply:?}")
    };
    let [chunk, Value::Int(id)] = &pair[..] else {
        panic!("not [chunk, id]: {reply:?}")
    };
    (rows(chunk), *id)
}

#[tokio::test]
async fn aggregate_groups_sorts_and_filters_the_matched_documents() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    people(&mut con, 9).await;
    let reply = ok(
        &mut con,
        &[
            "FT.AGGREGATE",
            "idx",
            "@age:[2 +inf]",
            "GROUPBY",
            "1",
            "@group",
            "REDUCE",
            "COUNT",
            "0",
            "AS",
            "n",
            "REDUCE",
            "SUM",
            "1",
            "@age",
            "AS",
            "total",
            "SORTBY",
            "2",
            "@total",
            "DESC",
        ],
    )
    .await;
    // Ages 2..8 by group: 0 → 3, 6 (9); 1 → 4, 7 (11); 2 → 2, 5, 8 (15).
    let got = rows(&reply);
    let pairs = |g: &str, n: &str, t: &str| {
        vec![
            ("group".to_string(), g.to_string()),
            ("n".to_string(), n.to_string()),
            ("total".to_string(), t.to_string()),
        ]
    };
    assert_eq!(
        got,
        vec![
            pairs("2", "3", "15"),
            pairs("1", "2", "11"),
            pairs("0", "2", "9")
        ]
    );
    let reply = ok(
        &mut con,
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "LOAD",
            "1",
            "@name",
            "APPLY",
            "@age * 10",
            "AS",
            "x",
            "FILTER",
            "@x >= 70",
        ],
    )
    .await;
    let names: Vec<String> = rows(&reply).iter().map(|r| r[0].1.clone()).collect();
    assert_eq!(names, ["n7", "n8"]);
}

#[tokio::test]
async fn a_cursor_reads_every_row_once_then_closes() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    people(&mut con, 25).await;
    let first = ok(
        &mut con,
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "LOAD",
            "1",
            "@name",
            "SORTBY",
            "2",
            "@age",
            "ASC",
            "MAX",
            "100",
            "WITHCURSOR",
            "COUNT",
            "10",
        ],
    )
    .await;
    let (mut seen, mut id) = cursor_reply(&first);
    assert_eq!(seen.len(), 10);
    assert_ne!(id, 0);
    let mut reads = 0;
    while id != 0 {
        reads += 1;
        assert!(reads < 10, "the cursor never closed");
        let next = ok(&mut con, &["FT.CURSOR", "READ", "idx", &id.to_string()]).await;
        let (more, next_id) = cursor_reply(&next);
        seen.extend(more);
        id = next_id;
    }
    // 25 rows in order, none twice; 10 + 10 + 5: the short read closes the cursor.
    assert_eq!(reads, 2);
    let names: Vec<String> = seen.iter().map(|r| r[0].1.clone()).collect();
    let expected: Vec<String> = (0..25).map(|i| format!("n{i}")).collect();
    assert_eq!(names, expected);
    // A read of a closed cursor, and COUNT on READ.
    let gone = run(&mut con, &["FT.CURSOR", "READ", "idx", "1"]).await;
    assert_eq!(gone.unwrap_err(), "Cursor not found");
    let first = ok(
        &mut con,
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "LOAD",
            "1",
            "@name",
            "WITHCURSOR",
            "COUNT",
            "2",
        ],
    )
    .await;
    let (_, id) = cursor_reply(&first);
    let next = ok(
        &mut con,
        &["FT.CURSOR", "READ", "idx", &id.to_string(), "COUNT", "5"],
    )
    .await;
    assert_eq!(cursor_reply(&next).0.len(), 5);
    assert_eq!(
        ok(&mut con, &["FT.CURSOR", "DEL", "idx", &id.to_string()]).await,
        Value::Okay
    );
    let deleted = run(&mut con, &["FT.CURSOR", "READ", "idx", &id.to_string()]).await;
    assert_eq!(deleted.unwrap_err(), "Cursor not found");
}

#[tokio::test]
async fn an_idle_cursor_expires() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    people(&mut con, 5).await;
    let first = ok(
        &mut con,
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "LOAD",
            "1",
            "@name",
            "WITHCURSOR",
            "COUNT",
            "1",
            "MAXIDLE",
            "200",
        ],
    )
    .await;
    let (_, id) = cursor_reply(&first);
    // Read within MAXIDLE: still there (each read restarts the idle time).
    let next = ok(&mut con, &["FT.CURSOR", "READ", "idx", &id.to_string()]).await;
    assert_eq!(cursor_reply(&next).1, id);
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let expired = run(&mut con, &["FT.CURSOR", "READ", "idx", &id.to_string()]).await;
    assert_eq!(expired.unwrap_err(), "Cursor not found");
}

#[tokio::test]
async fn a_dropped_clients_cursors_stay_bounded() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    people(&mut con, 3).await;
    let open = |con: &mut Conn| {
        let mut con = con.clone();
        async move {
            run(
                &mut con,
                &[
                    "FT.AGGREGATE",
                    "idx",
                    "*",
                    "LOAD",
                    "1",
                    "@name",
                    "WITHCURSOR",
                    "COUNT",
                    "1",
                    "MAXIDLE",
                    "1500",
                ],
            )
            .await
        }
    };
    // A client opens cursors up to the cap and goes away.
    let mut ids = Vec::new();
    {
        let mut gone = server.client().await;
        loop {
            match open(&mut gone).await {
                Ok(reply) => ids.push(cursor_reply(&reply).1),
                Err(e) => {
                    assert_eq!(e, "Too many cursors allocated for index");
                    break;
                }
            }
            assert!(ids.len() <= 128, "no cap on cursors");
        }
    }
    assert_eq!(ids.len(), 128);
    // Its cursors are the index's: another client reads one; new ones are refused until
    // the idle ones expire.
    let next = ok(&mut con, &["FT.CURSOR", "READ", "idx", &ids[0].to_string()]).await;
    assert_eq!(cursor_reply(&next).0.len(), 1);
    assert_eq!(
        open(&mut con).await.unwrap_err(),
        "Too many cursors allocated for index"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1700)).await;
    assert!(
        open(&mut con).await.is_ok(),
        "expired cursors still counted"
    );
    // Dropping the index drops its cursors.
    ok(&mut con, &["FT.DROPINDEX", "idx"]).await;
    let dropped = run(&mut con, &["FT.CURSOR", "READ", "idx", &ids[1].to_string()]).await;
    assert_eq!(dropped.unwrap_err(), "Cursor not found");
}

#[tokio::test]
async fn hostile_pipelines_get_errors_while_others_are_answered() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let mut other = server.client().await;
    people(&mut con, 4).await;
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "FT.AGGREGATE",
                "idx",
                "*",
                "GROUPBY",
                "1",
                "@group",
                "REDUCE",
                "SUM",
                "0",
            ],
            "Missing arguments for SUM",
        ),
        (
            &[
                "FT.AGGREGATE",
                "idx",
                "*",
                "GROUPBY",
                "1",
                "@group",
                "REDUCE",
                "SUM",
                "99",
                "@age",
            ],
            "Bad arguments for SUM: Expected an argument, but none provided",
        ),
        (
            &[
                "FT.AGGREGATE",
                "idx",
                "*",
                "GROUPBY",
                "1",
                "@group",
                "REDUCE",
                "NOPE",
                "0",
            ],
            "No such reducer: NOPE",
        ),
        (
            &[
                "FT.AGGREGATE",
                "idx",
                "*",
                "APPLY",
                "nosuchfn(@age)",
                "AS",
                "x",
            ],
            "Unknown function name 'nosuchfn'",
        ),
        (
            &["FT.AGGREGATE", "idx", "*", "APPLY", "((((((((", "AS", "x"],
            "Syntax error",
        ),
        (
            &["FT.AGGREGATE", "idx", "*", "WITHCURSOR", "COUNT", "0"],
            "Bad arguments for COUNT: Value is outside acceptable bounds",
        ),
        (&["FT.AGGREGATE", "nosuch", "*"], "nosuch: no such index"),
        (&["FT.CURSOR", "READ", "idx", "x"], "Bad cursor ID"),
    ];
    for (words, error) in cases {
        let got = run(&mut con, words).await.expect_err("an error");
        assert!(got.contains(error), "{words:?}: {got}");
        assert_eq!(
            ok(&mut other, &["PING"]).await,
            Value::SimpleString("PONG".into())
        );
    }
    // A huge LIMIT or SORTBY MAX allocates nothing for the rows it does not have.
    for words in [
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "LOAD",
            "1",
            "@name",
            "LIMIT",
            "0",
            "99999999999",
        ][..],
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "SORTBY",
            "2",
            "@age",
            "DESC",
            "MAX",
            "4294967295",
        ],
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "LOAD",
            "1",
            "@name",
            "LIMIT",
            "99999999999",
            "1",
        ],
    ] {
        let reply = ok(&mut con, words).await;
        assert!(rows(&reply).len() <= 4, "{words:?}: {reply:?}");
    }
    assert_eq!(
        ok(&mut other, &["PING"]).await,
        Value::SimpleString("PONG".into())
    );
}
