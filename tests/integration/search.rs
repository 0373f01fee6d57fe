//! FT.* indexes over real TCP: a document is searchable as soon as its write is acknowledged
//! (HSET, HDEL, DEL, expiry, FLUSHALL, JSON.SET, writes inside MULTI/EXEC and a Lua script),
//! TAG/NUMERIC/TEXT queries and KNN over FLOAT32 vectors answer what the data says, and hostile
//! input gets an error while the connection keeps answering.

use crate::common;

use common::search::{ids, search};
use common::stm::{ok, run, text};
use common::{until, TestServer};
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;

async fn create_docs_index(con: &mut Conn) {
    ok(
        con,
        &[
            "FT.CREATE",
            "idx",
            "ON",
            "HASH",
            "PREFIX",
            "1",
            "doc:",
            "SCHEMA",
            "title",
            "TEXT",
            "n",
            "NUMERIC",
            "SORTABLE",
            "tag",
            "TAG",
        ],
    )
    .await;
}

#[tokio::test]
async fn hash_writes_are_searchable_once_acknowledged() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    create_docs_index(&mut con).await;
    ok(
        &mut con,
        &[
            "HSET",
            "doc:1",
            "title",
            "hello world",
            "n",
            "5",
            "tag",
            "red",
        ],
    )
    .await;
    ok(
        &mut con,
        &[
            "HSET",
            "doc:2",
            "title",
            "other things",
            "n",
            "7",
            "tag",
            "blue",
        ],
    )
    .await;
    ok(
        &mut con,
        &["HSET", "other:1", "title", "hello", "tag", "red"],
    )
    .await;
    // Only the prefix's keys, and each query kind finds what the data says.
    assert_eq!(search(&mut con, "idx", "hello", &[]).await, ["doc:1"]);
    assert_eq!(search(&mut con, "idx", "@tag:{blue}", &[]).await, ["doc:2"]);
    assert_eq!(search(&mut con, "idx", "@n:[6 +inf]", &[]).await, ["doc:2"]);
    assert_eq!(
        search(&mut con, "idx", "*", &["SORTBY", "n", "DESC"]).await,
        ["doc:2", "doc:1"]
    );
    assert_eq!(
        search(&mut con, "idx", "@tag:{red} @n:[0 10]", &[]).await,
        ["doc:1"]
    );
    // The document's fields come back as they are now.
    let full = ok(
        &mut con,
        &["FT.SEARCH", "idx", "@tag:{red}", "RETURN", "1", "title"],
    )
    .await;
    assert_eq!(
        full,
        Value::Array(vec![
            Value::Int(1),
            Value::BulkString(b"doc:1".to_vec()),
            Value::Array(vec![
                Value::BulkString(b"title".to_vec()),
                Value::BulkString(b"hello world".to_vec()),
            ]),
        ])
    );

    // Changing a field moves the document at once.
    ok(&mut con, &["HSET", "doc:1", "tag", "green", "n", "50"]).await;
    assert!(search(&mut con, "idx", "@tag:{red}", &[]).await.is_empty());
    assert_eq!(
        search(&mut con, "idx", "@tag:{green}", &[]).await,
        ["doc:1"]
    );
    assert_eq!(search(&mut con, "idx", "@n:[40 60]", &[]).await, ["doc:1"]);
    // HDEL of an indexed field: the document no longer matches on it.
    ok(&mut con, &["HDEL", "doc:1", "tag"]).await;
    assert!(search(&mut con, "idx", "@tag:{green}", &[])
        .await
        .is_empty());
    assert_eq!(search(&mut con, "idx", "hello", &[]).await, ["doc:1"]);
    // DEL: the document is gone.
    ok(&mut con, &["DEL", "doc:1"]).await;
    assert!(search(&mut con, "idx", "hello", &[]).await.is_empty());
    assert_eq!(search(&mut con, "idx", "*", &[]).await, ["doc:2"]);
    // A key turned into another type leaves the index.
    ok(&mut con, &["DEL", "doc:2"]).await;
    ok(&mut con, &["SET", "doc:2", "plain"]).await;
    assert!(search(&mut con, "idx", "*", &[]).await.is_empty());
}

#[tokio::test]
async fn an_expired_document_leaves_the_results() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    create_docs_index(&mut con).await;
    ok(&mut con, &["HSET", "doc:1", "title", "stays", "tag", "a"]).await;
    ok(&mut con, &["HSET", "doc:2", "title", "goes", "tag", "a"]).await;
    ok(&mut con, &["PEXPIRE", "doc:2", "100"]).await;
    assert_eq!(
        search(&mut con, "idx", "@tag:{a}", &["SORTBY", "n"])
            .await
            .len(),
        2
    );
    // Nobody reads the key: the active expiry cycle deletes it and the index follows.
    until("the expired document leaves the index", async || {
        search(&mut con, "idx", "@tag:{a}", &[]).await == ["doc:1"]
    })
    .await;
    assert!(search(&mut con, "idx", "goes", &[]).await.is_empty());
    assert_eq!(
        ok(&mut con, &["EXISTS", "doc:2"]).await,
        Value::Int(0),
        "the index dropped a key that still exists"
    );
}

#[tokio::test]
async fn flushall_drops_every_index() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    create_docs_index(&mut con).await;
    ok(&mut con, &["HSET", "doc:1", "title", "hello"]).await;
    ok(&mut con, &["FLUSHALL"]).await;
    // As RediSearch 2.10 does: the definitions go with the data.
    assert_eq!(ok(&mut con, &["FT._LIST"]).await, Value::Array(vec![]));
    assert_eq!(
        run(&mut con, &["FT.SEARCH", "idx", "*"]).await,
        Err("idx: no such index".to_string())
    );
    // The name is free again and a new index sees new writes.
    create_docs_index(&mut con).await;
    ok(&mut con, &["HSET", "doc:9", "title", "again"]).await;
    assert_eq!(search(&mut con, "idx", "again", &[]).await, ["doc:9"]);
}

#[tokio::test]
async fn json_documents_are_indexed_through_their_paths() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(
        &mut con,
        &[
            "FT.CREATE",
            "j",
            "ON",
            "JSON",
            "PREFIX",
            "1",
            "j:",
            "SCHEMA",
            "$.a",
            "AS",
            "a",
            "TEXT",
            "$.t",
            "AS",
            "t",
            "TAG",
            "$.n",
            "AS",
            "n",
            "NUMERIC",
        ],
    )
    .await;
    ok(
        &mut con,
        &["JSON.SET", "j:1", "$", r#"{"a":"quick fox","t":"x","n":3}"#],
    )
    .await;
    ok(
        &mut con,
        &["JSON.SET", "j:2", "$", r#"{"a":"lazy dog","t":"y","n":9}"#],
    )
    .await;
    assert_eq!(search(&mut con, "j", "@a:fox", &[]).await, ["j:1"]);
    assert_eq!(search(&mut con, "j", "@t:{y}", &[]).await, ["j:2"]);
    assert_eq!(search(&mut con, "j", "@n:[5 10]", &[]).await, ["j:2"]);
    let reply = ok(&mut con, &["FT.SEARCH", "j", "@t:{x}", "RETURN", "1", "a"]).await;
    assert_eq!(
        reply,
        Value::Array(vec![
            Value::Int(1),
            Value::BulkString(b"j:1".to_vec()),
            Value::Array(vec![
                Value::BulkString(b"a".to_vec()),
                Value::BulkString(b"quick fox".to_vec()),
            ]),
        ])
    );
    // A write to one path re-indexes the document.
    ok(&mut con, &["JSON.SET", "j:1", "$.t", r#""y""#]).await;
    assert_eq!(
        search(&mut con, "j", "@t:{y}", &["SORTBY", "n"]).await,
        ["j:1", "j:2"]
    );
    ok(&mut con, &["JSON.DEL", "j:2"]).await;
    assert_eq!(search(&mut con, "j", "@t:{y}", &[]).await, ["j:1"]);
}

#[tokio::test]
async fn writes_inside_exec_and_scripts_are_indexed() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    create_docs_index(&mut con).await;
    let mut tx = redis::pipe();
    tx.atomic()
        .cmd("HSET")
        .arg(&["doc:1", "tag", "tx", "n", "1"])
        .cmd("HSET")
        .arg(&["doc:2", "tag", "tx", "n", "2"])
        .cmd("DEL")
        .arg("doc:3");
    let _: Value = tx.query_async(&mut con).await.expect("EXEC");
    assert_eq!(
        search(&mut con, "idx", "@tag:{tx}", &["SORTBY", "n"]).await,
        ["doc:1", "doc:2"]
    );
    let script = "redis.call('HSET', KEYS[1], 'tag', 'lua', 'n', '3') \
                  redis.call('HDEL', KEYS[2], 'tag') return 1";
    ok(&mut con, &["EVAL", script, "2", "doc:3", "doc:1"]).await;
    assert_eq!(search(&mut con, "idx", "@tag:{lua}", &[]).await, ["doc:3"]);
    assert_eq!(search(&mut con, "idx", "@tag:{tx}", &[]).await, ["doc:2"]);
}

fn f32_blob(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[tokio::test]
async fn knn_orders_float32_vectors_by_distance() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(
        &mut con,
        &[
            "FT.CREATE",
            "v",
            "ON",
            "HASH",
            "PREFIX",
            "1",
            "v:",
            "SCHEMA",
            "g",
            "TAG",
            "v",
            "VECTOR",
            "FLAT",
            "6",
            "TYPE",
            "FLOAT32",
            "DIM",
            "2",
            "DISTANCE_METRIC",
            "L2",
        ],
    )
    .await;
    for (key, point, group) in [
        ("v:1", [0.0f32, 0.0], "a"),
        ("v:2", [1.0, 0.0], "a"),
        ("v:3", [0.0, 3.0], "b"),
        ("v:4", [5.0, 5.0], "a"),
    ] {
        let _: Value = redis::cmd("HSET")
            .arg(key)
            .arg("g")
            .arg(group)
            .arg("v")
            .arg(f32_blob(&point))
            .query_async(&mut con)
            .await
            .expect("HSET");
    }
    let query = f32_blob(&[0.9, 0.1]);
    // Squared L2 from (0.9, 0.1): v:2 0.02, v:1 0.82, v:3 9.43, v:4 36.82.
    let knn = |q: &str, k: &Vec<u8>| {
        let mut cmd = redis::cmd("FT.SEARCH");
        cmd.arg("v").arg(q).arg("NOCONTENT").arg("PARAMS").arg(2);
        cmd.arg("q").arg(k.clone()).arg("DIALECT").arg(2);
        cmd
    };
    let reply: Value = knn("*=>[KNN 3 @v $q]", &query)
        .query_async(&mut con)
        .await
        .expect("KNN");
    assert_eq!(ids(&reply), ["v:2", "v:1", "v:3"]);
    // Pre-filtered: only group a, nearest two.
    let reply: Value = knn("(@g:{a})=>[KNN 2 @v $q]", &query)
        .query_async(&mut con)
        .await
        .expect("filtered KNN");
    assert_eq!(ids(&reply), ["v:2", "v:1"]);
    // Moving a vector moves its rank at once.
    let _: Value = redis::cmd("HSET")
        .arg("v:4")
        .arg("v")
        .arg(f32_blob(&[0.9, 0.0]))
        .query_async(&mut con)
        .await
        .expect("HSET");
    let reply: Value = knn("*=>[KNN 2 @v $q]", &query)
        .query_async(&mut con)
        .await
        .expect("KNN after the move");
    assert_eq!(ids(&reply), ["v:4", "v:2"]);
}

#[tokio::test]
async fn hostile_input_gets_errors_and_the_connection_answers() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    create_docs_index(&mut con).await;
    ok(&mut con, &["HSET", "doc:1", "title", "hello", "n", "1"]).await;
    let cases: &[(&[&str], &str)] = &[
        (&["FT.SEARCH", "nosuch", "*"], "nosuch: no such index"),
        (
            &["FT.SEARCH", "idx", "*", "LIMIT", "0", "100000000"],
            "LIMIT exceeds maximum of 1000000",
        ),
        (
            &["FT.SEARCH", "idx", "@title:("],
            "Syntax error at offset 7 near title",
        ),
        (
            &["FT.CREATE", "bad", "SCHEMA", "a", "FOO"],
            "Invalid field type for field `a`",
        ),
        (
            &["FT.CREATE", "idx", "SCHEMA", "a", "TEXT"],
            "Index already exists",
        ),
        (&["FT.INFO", "nosuch"], "Unknown index name"),
        (&["FT.DROPINDEX", "nosuch"], "Unknown Index name"),
    ];
    for (words, error) in cases {
        let got = run(&mut con, words).await.expect_err("an error");
        assert!(got.contains(error), "{words:?}: {got}");
        assert_eq!(
            ok(&mut con, &["PING"]).await,
            Value::SimpleString("PONG".into())
        );
    }
    // Arbitrary bytes as a query never bring the server down.
    for query in [
        "((((((((((",
        "@",
        "@n:[",
        "*=>[KNN",
        "\u{0}\u{ff}",
        "@tag:{",
        "~~~|||",
    ] {
        let _ = run(&mut con, &["FT.SEARCH", "idx", query]).await;
        assert_eq!(
            ok(&mut con, &["PING"]).await,
            Value::SimpleString("PONG".into())
        );
    }
    // Nothing changed: the index still answers as before.
    assert_eq!(search(&mut con, "idx", "hello", &[]).await, ["doc:1"]);
    assert_eq!(
        common::stm::strings(&ok(&mut con, &["FT._LIST"]).await),
        ["idx"]
    );
}

#[tokio::test]
async fn index_definitions_survive_a_restart_from_the_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), false).await;
    let mut con = server.client().await;
    create_docs_index(&mut con).await;
    // Created over no keys with SKIPINITIALSCAN: after the restart it still covers its documents.
    ok(
        &mut con,
        &[
            "FT.CREATE",
            "late",
            "ON",
            "HASH",
            "PREFIX",
            "1",
            "doc:",
            "SKIPINITIALSCAN",
            "SCHEMA",
            "tag",
            "TAG",
        ],
    )
    .await;
    ok(
        &mut con,
        &["FT.ALTER", "idx", "SCHEMA", "ADD", "extra", "NUMERIC"],
    )
    .await;
    ok(
        &mut con,
        &[
            "HSET", "doc:1", "title", "hello", "tag", "red", "extra", "3",
        ],
    )
    .await;
    ok(
        &mut con,
        &["HSET", "doc:2", "title", "bye", "tag", "blue", "n", "2"],
    )
    .await;
    ok(&mut con, &["SAVE"]).await;
    drop(con);
    server.shutdown().await.expect("shutdown");

    let server = TestServer::start_in(dir.path(), false).await;
    let mut con = server.client().await;
    let mut names = common::stm::strings(&ok(&mut con, &["FT._LIST"]).await);
    names.sort();
    assert_eq!(names, ["idx", "late"]);
    // The documents are indexed again in the background, each field as defined (FT.ALTER's too).
    until("the restored indexes cover the documents", async || {
        search(&mut con, "late", "@tag:{blue}", &[]).await == ["doc:2"]
            && search(&mut con, "idx", "*", &[]).await.len() == 2
    })
    .await;
    assert_eq!(search(&mut con, "idx", "hello", &[]).await, ["doc:1"]);
    assert_eq!(
        search(&mut con, "idx", "@extra:[3 3]", &[]).await,
        ["doc:1"]
    );
    assert_eq!(search(&mut con, "idx", "@n:[2 2]", &[]).await, ["doc:2"]);
    // And they follow writes again.
    ok(
        &mut con,
        &["HSET", "doc:3", "title", "hello again", "tag", "red"],
    )
    .await;
    assert_eq!(
        search(&mut con, "idx", "hello", &["SORTBY", "n"])
            .await
            .len(),
        2
    );
    assert_eq!(search(&mut con, "late", "@tag:{red}", &[]).await.len(), 2);
}

/// The value after `name` in a RESP2 name/value list.
fn field<'v>(list: &'v Value, name: &str) -> &'v Value {
    let Value::Array(items) = list else {
        panic!("not an array: {list:?}")
    };
    let at = items
        .iter()
        .step_by(2)
        .position(|k| matches!(k, Value::SimpleString(_) | Value::BulkString(_)) && text(k) == name)
        .unwrap_or_else(|| panic!("no {name} in {list:?}"));
    &items[at * 2 + 1]
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

#[tokio::test]
async fn ft_info_lists_vector_parameters_and_the_indexing_errors() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(
        &mut con,
        &[
            "FT.CREATE",
            "e",
            "ON",
            "HASH",
            "PREFIX",
            "1",
            "d:",
            "SCHEMA",
            "n",
            "NUMERIC",
            "g",
            "GEO",
            "v",
            "VECTOR",
            "HNSW",
            "10",
            "TYPE",
            "FLOAT32",
            "DIM",
            "2",
            "DISTANCE_METRIC",
            "COSINE",
            "M",
            "8",
            "EF_CONSTRUCTION",
            "100",
            "t",
            "TAG",
        ],
    )
    .await;
    ok(&mut con, &["HSET", "d:1", "n", "abc"]).await;
    ok(&mut con, &["HSET", "d:2", "g", "999,999"]).await;
    ok(&mut con, &["HSET", "d:3", "v", "abc"]).await;
    let _: Value = redis::cmd("HSET")
        .arg("d:4")
        .arg("n")
        .arg(7)
        .arg("v")
        .arg(f32_blob(&[1.0, 0.0]))
        .query_async(&mut con)
        .await
        .expect("HSET");
    let info = ok(&mut con, &["FT.INFO", "e"]).await;
    assert_eq!(int(field(&info, "num_docs")), 1);
    assert_eq!(int(field(&info, "hash_indexing_failures")), 3);

    // redisvl reads a vector field's parameters from position 6 of its attribute list.
    let Value::Array(attributes) = field(&info, "attributes") else {
        panic!("attributes: {info:?}")
    };
    let Value::Array(v) = &attributes[2] else {
        panic!("{attributes:?}")
    };
    let words: Vec<String> = v
        .iter()
        .map(|w| match w {
            Value::Int(n) => n.to_string(),
            other => text(other),
        })
        .collect();
    assert_eq!(
        words,
        [
            "identifier",
            "v",
            "attribute",
            "v",
            "type",
            "VECTOR",
            "algorithm",
            "HNSW",
            "data_type",
            "FLOAT32",
            "dim",
            "2",
            "distance_metric",
            "COSINE",
            "M",
            "8",
            "ef_construction",
            "100"
        ]
    );

    // The index's errors: the count and the last one; each field's own.
    let errors = field(&info, "Index Errors");
    assert_eq!(int(field(errors, "indexing failures")), 3);
    assert_eq!(
        text(field(errors, "last indexing error")),
        "Could not add vector with blob size 3 (expected size 8)"
    );
    assert_eq!(text(field(errors, "last indexing error key")), "d:3");
    let Value::Array(fields) = field(&info, "field statistics") else {
        panic!("field statistics: {info:?}")
    };
    let last_errors: Vec<(i64, String)> = fields
        .iter()
        .map(|f| {
            let e = field(f, "Index Errors");
            (
                int(field(e, "indexing failures")),
                text(field(e, "last indexing error")),
            )
        })
        .collect();
    assert_eq!(
        last_errors,
        [
            (1, "Invalid numeric value: 'abc'".to_string()),
            (
                1,
                "Invalid geo coordinates: 999.000000, 999.000000".to_string()
            ),
            (
                1,
                "Could not add vector with blob size 3 (expected size 8)".to_string()
            ),
            (0, "N/A".to_string()),
        ]
    );
    // Memory figures are estimates but not nothing once documents are indexed.
    let total = text(field(&info, "total_index_memory_sz_mb"));
    assert!(total.parse::<f64>().is_ok_and(|mb| mb > 0.0), "{total}");
}

#[tokio::test]
async fn a_vector_range_distance_is_a_field_to_return_and_sort_on() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(
        &mut con,
        &[
            "FT.CREATE",
            "v",
            "ON",
            "HASH",
            "PREFIX",
            "1",
            "v:",
            "SCHEMA",
            "v",
            "VECTOR",
            "FLAT",
            "6",
            "TYPE",
            "FLOAT32",
            "DIM",
            "2",
            "DISTANCE_METRIC",
            "L2",
        ],
    )
    .await;
    for (key, point) in [
        ("v:1", [0.0f32, 0.0]),
        ("v:2", [1.0, 0.0]),
        ("v:3", [0.0, 3.0]),
    ] {
        let _: Value = redis::cmd("HSET")
            .arg(key)
            .arg("v")
            .arg(f32_blob(&point))
            .query_async(&mut con)
            .await
            .expect("HSET");
    }
    // Squared L2 from (1, 0): v:2 0, v:1 1, v:3 10 (outside 5).
    let reply: Value = redis::cmd("FT.SEARCH")
        .arg("v")
        .arg("@v:[VECTOR_RANGE 5 $q]=>{$YIELD_DISTANCE_AS: d}")
        .arg("RETURN")
        .arg(1)
        .arg("d")
        .arg("SORTBY")
        .arg("d")
        .arg("DESC")
        .arg("PARAMS")
        .arg(2)
        .arg("q")
        .arg(f32_blob(&[1.0, 0.0]))
        .arg("DIALECT")
        .arg(2)
        .query_async(&mut con)
        .await
        .expect("range query");
    let Value::Array(items) = &reply else {
        panic!("{reply:?}")
    };
    assert_eq!(int(&items[0]), 2);
    assert_eq!(text(&items[1]), "v:1");
    assert_eq!(text(field(&items[2], "d")), "1");
    assert_eq!(text(&items[3]), "v:2");
    assert_eq!(text(field(&items[4], "d")), "0");
}
