//! FT.* indexes through everything that reloads a dataset, over real TCP with real server
//! processes: a restart from the snapshot (an altered index, an alias), a restart from the
//! append-only file (commands only, and a base written by a rewrite followed by commands),
//! DEBUG RELOAD, an stmd replica (the full sync brings the primary's indexes, the stream its
//! later definitions and writes); and a key whose time has passed is no result even before the
//! expiry cycle deletes it.

use crate::common;
use crate::replication_primary::caught_up;

use common::search::search;
use common::stm::{ok, run, strings};
use common::{until, TestServer};
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;
use stmd::config::ProtectedCommand;

/// FT._LIST, sorted.
async fn list(con: &mut Conn) -> Vec<String> {
    let mut names = strings(&ok(con, &["FT._LIST"]).await);
    names.sort();
    names
}

/// One field of FT.INFO's reply.
async fn info_field(con: &mut Conn, index: &str, name: &str) -> Value {
    let reply = ok(con, &["FT.INFO", index]).await;
    let Value::Array(items) = &reply else {
        panic!("not an array: {reply:?}")
    };
    items
        .chunks(2)
        .find(|pair| common::stm::text(&pair[0]) == name)
        .map(|pair| pair[1].clone())
        .unwrap_or_else(|| panic!("no {name} in {reply:?}"))
}

/// Waits until the index's background scan is over.
async fn scanned(con: &mut Conn, index: &str) {
    until("the index scan ends", async || {
        info_field(con, index, "indexing").await == Value::Int(0)
    })
    .await;
}

/// `docs`: TEXT title, NUMERIC n, TAG tag over `doc:`; then FT.ALTER adds NUMERIC extra, and
/// the alias `current` names it.
async fn define(con: &mut Conn) {
    ok(
        con,
        &[
            "FT.CREATE",
            "docs",
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
    ok(
        con,
        &["FT.ALTER", "docs", "SCHEMA", "ADD", "extra", "NUMERIC"],
    )
    .await;
    ok(con, &["FT.ALIASADD", "current", "docs"]).await;
}

async fn write_docs(con: &mut Conn) {
    ok(
        con,
        &[
            "HSET",
            "doc:1",
            "title",
            "hello world",
            "n",
            "1",
            "tag",
            "red",
            "extra",
            "7",
        ],
    )
    .await;
    ok(
        con,
        &["HSET", "doc:2", "title", "goodbye", "n", "2", "tag", "blue"],
    )
    .await;
}

/// What [`define`] and [`write_docs`] made answers as they made it: every field (FT.ALTER's
/// too), through the index's name and its alias.
async fn check_docs(con: &mut Conn) {
    assert_eq!(list(con).await, ["docs"]);
    scanned(con, "docs").await;
    assert_eq!(search(con, "docs", "hello", &[]).await, ["doc:1"]);
    assert_eq!(search(con, "current", "@tag:{blue}", &[]).await, ["doc:2"]);
    assert_eq!(search(con, "current", "@extra:[7 7]", &[]).await, ["doc:1"]);
    assert_eq!(
        search(con, "docs", "*", &["SORTBY", "n", "DESC"]).await,
        ["doc:2", "doc:1"]
    );
}

#[tokio::test]
async fn an_altered_index_and_its_alias_survive_a_restart_from_the_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), false).await;
    let mut con = server.client().await;
    define(&mut con).await;
    write_docs(&mut con).await;
    check_docs(&mut con).await;
    ok(&mut con, &["SAVE"]).await;
    drop(con);
    server.shutdown().await.expect("shutdown");

    let server = TestServer::start_in(dir.path(), false).await;
    let mut con = server.client().await;
    check_docs(&mut con).await;
    // The alias is an alias again, not an index: FT.ALIASDEL removes it, the index stays.
    ok(&mut con, &["FT.ALIASDEL", "current"]).await;
    let gone = run(&mut con, &["FT.SEARCH", "current", "*"]).await;
    assert!(
        gone.as_ref().is_err_and(|e| e.contains("no such index")),
        "{gone:?}"
    );
    assert_eq!(search(&mut con, "docs", "hello", &[]).await, ["doc:1"]);
}

#[tokio::test]
async fn indexes_survive_a_restart_from_the_append_only_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    define(&mut con).await;
    write_docs(&mut con).await;
    // An index dropped later, and one whose documents went with it (DD): neither comes back.
    ok(
        &mut con,
        &[
            "FT.CREATE",
            "gone",
            "PREFIX",
            "1",
            "tmp:",
            "SCHEMA",
            "t",
            "TAG",
        ],
    )
    .await;
    ok(&mut con, &["HSET", "tmp:1", "t", "x"]).await;
    ok(&mut con, &["FT.DROPINDEX", "gone", "DD"]).await;
    drop(con);
    server.shutdown().await.expect("shutdown");

    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    check_docs(&mut con).await;
    assert_eq!(ok(&mut con, &["EXISTS", "tmp:1"]).await, Value::Int(0));
    // They follow writes after the start.
    ok(&mut con, &["HSET", "doc:3", "title", "hello again"]).await;
    assert_eq!(
        search(&mut con, "current", "hello", &["SORTBY", "n"])
            .await
            .len(),
        2
    );
}

#[tokio::test]
async fn indexes_survive_a_restart_from_a_rewritten_append_only_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    define(&mut con).await;
    write_docs(&mut con).await;
    // The rewrite's base (an RDB image) carries the definitions; what follows is commands that
    // apply to them.
    ok(&mut con, &["BGREWRITEAOF"]).await;
    until("the rewrite ends", async || {
        let info = common::stm::text(&ok(&mut con, &["INFO", "persistence"]).await);
        info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrites:1")
    })
    .await;
    ok(
        &mut con,
        &["FT.ALTER", "docs", "SCHEMA", "ADD", "more", "TAG"],
    )
    .await;
    ok(
        &mut con,
        &["HSET", "doc:4", "title", "later", "more", "yes"],
    )
    .await;
    ok(&mut con, &["FT.ALIASUPDATE", "other", "docs"]).await;
    drop(con);
    server.shutdown().await.expect("shutdown");

    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    scanned(&mut con, "docs").await;
    assert_eq!(search(&mut con, "docs", "hello", &[]).await, ["doc:1"]);
    assert_eq!(
        search(&mut con, "current", "@extra:[7 7]", &[]).await,
        ["doc:1"]
    );
    assert_eq!(
        search(&mut con, "other", "@more:{yes}", &[]).await,
        ["doc:4"]
    );
}

#[tokio::test]
async fn debug_reload_keeps_the_indexes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), false).await;
    let mut con = server.client().await;
    define(&mut con).await;
    write_docs(&mut con).await;
    ok(&mut con, &["DEBUG", "RELOAD"]).await;
    check_docs(&mut con).await;
    // And they follow writes after it.
    ok(&mut con, &["DEL", "doc:1"]).await;
    assert!(search(&mut con, "docs", "hello", &[]).await.is_empty());
    // FLUSHALL still drops them, as RediSearch does.
    ok(&mut con, &["FLUSHALL"]).await;
    ok(&mut con, &["DEBUG", "RELOAD"]).await;
    assert!(list(&mut con).await.is_empty());
}

#[tokio::test]
#[ignore = "fails about one run in three: the LOADAOF replay's notes left on its pool thread can drop the adopted indexes; not fixed yet (docs/search.md)"]
async fn debug_loadaof_keeps_the_indexes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path(), true).await;
    let mut con = server.client().await;
    define(&mut con).await;
    write_docs(&mut con).await;
    ok(&mut con, &["DEBUG", "LOADAOF"]).await;
    // The background cycle runs in between: what the replay noted must not reach the indexes
    // put back (its flush would drop them).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    check_docs(&mut con).await;
}

#[tokio::test]
async fn a_replica_serves_the_primarys_indexes_and_follows_them() {
    let primary_server =
        TestServer::start_with(|c| c.enable_debug_command = ProtectedCommand::Yes).await;
    let mut primary = primary_server.client().await;
    define(&mut primary).await;
    write_docs(&mut primary).await;
    let target = format!("127.0.0.1 {}", primary_server.addr.port());
    let replica_server = TestServer::start_with(move |c| c.replicaof = target).await;
    let mut replica = replica_server.client().await;
    caught_up(&mut primary, &mut replica).await;
    // The full sync brought the definitions, the alias and FT.ALTER's field.
    check_docs(&mut replica).await;

    // Later writes, and later definitions, arrive by the stream.
    ok(
        &mut primary,
        &["HSET", "doc:3", "title", "hello there", "n", "3"],
    )
    .await;
    ok(&mut primary, &["DEL", "doc:2"]).await;
    ok(
        &mut primary,
        &[
            "FT.CREATE",
            "later",
            "PREFIX",
            "1",
            "doc:",
            "SCHEMA",
            "n",
            "NUMERIC",
        ],
    )
    .await;
    ok(&mut primary, &["FT.ALIASADD", "newest", "later"]).await;
    ok(&mut primary, &["FT.ALIASDEL", "current"]).await;
    caught_up(&mut primary, &mut replica).await;
    assert_eq!(
        search(&mut replica, "docs", "hello", &["SORTBY", "n"]).await,
        ["doc:1", "doc:3"]
    );
    assert!(search(&mut replica, "docs", "@tag:{blue}", &[])
        .await
        .is_empty());
    assert_eq!(list(&mut replica).await, ["docs", "later"]);
    scanned(&mut replica, "later").await;
    assert_eq!(
        search(&mut replica, "newest", "@n:[3 3]", &[]).await,
        ["doc:3"]
    );
    let gone = run(&mut replica, &["FT.SEARCH", "current", "*"]).await;
    assert!(
        gone.as_ref().is_err_and(|e| e.contains("no such index")),
        "{gone:?}"
    );
    // A client of the replica cannot change a definition.
    let refused = run(&mut replica, &["FT.DROPINDEX", "docs"]).await;
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("READONLY")),
        "{refused:?}"
    );
    ok(&mut primary, &["FT.DROPINDEX", "later"]).await;
    caught_up(&mut primary, &mut replica).await;
    assert_eq!(list(&mut replica).await, ["docs"]);
}

#[tokio::test]
async fn a_key_whose_time_has_passed_is_no_result() {
    let server = TestServer::start_with(|c| c.enable_debug_command = ProtectedCommand::Yes).await;
    let mut con = server.client().await;
    define(&mut con).await;
    write_docs(&mut con).await;
    ok(
        &mut con,
        &["HSET", "doc:3", "title", "hello later", "n", "3"],
    )
    .await;
    // EXPIRE changes no value: the document keeps its place among equal scores.
    ok(&mut con, &["EXPIRE", "doc:1", "1000"]).await;
    assert_eq!(
        search(&mut con, "docs", "hello", &[]).await,
        ["doc:1", "doc:3"]
    );
    // With the active expiry cycle off, nothing deletes the key but an access.
    ok(&mut con, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]).await;
    ok(&mut con, &["PEXPIRE", "doc:1", "50"]).await;
    tokio::time::sleep(std::time::Duration::from_millis(120)).await;
    assert_eq!(search(&mut con, "docs", "hello", &[]).await, ["doc:3"]);
    assert_eq!(
        search(&mut con, "docs", "@tag:{red}", &[]).await,
        Vec::<String>::new()
    );
    assert_eq!(
        search(&mut con, "docs", "*", &["SORTBY", "n"]).await,
        ["doc:2", "doc:3"]
    );
    assert_eq!(
        search(&mut con, "docs", "-goodbye", &[]).await,
        ["doc:3"],
        "a negation's complement leaves it out too"
    );
    // Still indexed until deleted: FT.INFO counts it, as RediSearch does.
    assert_eq!(
        info_field(&mut con, "docs", "num_docs").await,
        Value::Int(3)
    );
    // An access deletes it, and the index lets it go.
    assert_eq!(ok(&mut con, &["EXISTS", "doc:1"]).await, Value::Int(0));
    assert_eq!(
        info_field(&mut con, "docs", "num_docs").await,
        Value::Int(2)
    );
    // PERSIST in time keeps a document a result.
    ok(&mut con, &["PEXPIRE", "doc:3", "100000"]).await;
    ok(&mut con, &["PERSIST", "doc:3"]).await;
    assert_eq!(search(&mut con, "docs", "hello", &[]).await, ["doc:3"]);
}

/// redis-cli against a single (non-cluster) node.
fn single_cli(single: &common::Binary, flags: &[&str], args: &[&str]) -> String {
    let output = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &single.port.to_string()])
        .args(flags)
        .args(args)
        .output()
        .expect("run redis-cli");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// FT.SEARCH on any node of a three-node cluster gathers every primary's documents: the same
/// reply as one node holding them all, the page cut after the merge (RESP2 and RESP3); a node
/// without the index makes it an error, as does a stopped node.
#[test]
fn cluster_search_gathers_from_every_primary() {
    use common::cluster::{cluster_prerequisites, eventually};
    let Some(pg) = cluster_prerequisites() else {
        return;
    };
    let mut nodes = crate::cluster_fanout::start_cluster(&pg.url());
    let single = common::Binary::start(&[]);
    eventually(
        "the single node to start",
        std::time::Duration::from_secs(15),
        || single_cli(&single, &[], &["PING"]) == "PONG",
    );
    let create = [
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
    ];
    // A definition is per node: the client sends it to each.
    for node in &nodes {
        assert_eq!(node.cli(&create), "OK");
    }
    assert_eq!(single_cli(&single, &[], &create), "OK");
    for i in 0..12 {
        let (key, n) = (format!("doc:{i}"), i.to_string());
        let tag = if i % 3 == 0 { "red" } else { "blue" };
        let title = format!("hello number {i}");
        let hset = ["HSET", &key, "title", &title, "n", &n, "tag", tag];
        assert_eq!(nodes[i % 3].cli_c(&hset), "3");
        assert_eq!(single_cli(&single, &[], &hset), "3");
    }
    for node in &nodes {
        assert!(
            node.cli(&["DBSIZE"]).parse::<u64>().expect("DBSIZE") > 0,
            "every node holds some"
        );
    }
    let queries: [&[&str]; 6] = [
        &[
            "FT.SEARCH",
            "idx",
            "*",
            "SORTBY",
            "n",
            "ASC",
            "LIMIT",
            "0",
            "20",
        ],
        &[
            "FT.SEARCH",
            "idx",
            "*",
            "SORTBY",
            "n",
            "DESC",
            "LIMIT",
            "3",
            "4",
        ],
        &["FT.SEARCH", "idx", "@tag:{red}", "SORTBY", "n", "NOCONTENT"],
        &[
            "FT.SEARCH",
            "idx",
            "hello",
            "SORTBY",
            "n",
            "RETURN",
            "1",
            "title",
            "LIMIT",
            "10",
            "5",
        ],
        &["FT.SEARCH", "idx", "@n:[4 6]", "SORTBY", "n", "DESC"],
        &["FT.SEARCH", "idx", "*", "LIMIT", "0", "0"],
    ];
    for flags in [&[][..], &["-3"][..]] {
        for query in queries {
            let expected = single_cli(&single, flags, query);
            for node in &nodes {
                assert_eq!(
                    node.cli_with(flags, query),
                    expected,
                    "{flags:?} {query:?} on {}",
                    node.addr()
                );
            }
        }
    }
    // Results without SORTBY: every document, each once (per-node scores order them).
    let mut ids: Vec<String> = nodes[1]
        .cli(&[
            "FT.SEARCH",
            "idx",
            "hello",
            "NOCONTENT",
            "LIMIT",
            "0",
            "100",
        ])
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect();
    ids.sort();
    let mut all: Vec<String> = (0..12).map(|i| format!("doc:{i}")).collect();
    all.sort();
    assert_eq!(ids, all);
    // A query error is the receiving node's own.
    assert_eq!(
        nodes[0].cli(&["FT.SEARCH", "idx", "@n:[abc"]),
        single_cli(&single, &[], &["FT.SEARCH", "idx", "@n:[abc"])
    );
    // A node without the index: an error naming it, never a partial answer.
    assert_eq!(nodes[2].cli(&["FT.DROPINDEX", "idx"]), "OK");
    let refused = nodes[0].cli(&["FT.SEARCH", "idx", "*"]);
    assert!(
        refused.starts_with("ERR cluster node") && refused.contains("no such index"),
        "{refused}"
    );
    assert_eq!(nodes[2].cli(&create), "OK");
    eventually(
        "the re-created index covers the node's keys",
        std::time::Duration::from_secs(15),
        || nodes[0].cli(&["FT.SEARCH", "idx", "*", "LIMIT", "0", "0"]) == "12",
    );
    // A stopped node: an error within the answer timeout.
    nodes[1].stop();
    let failed = nodes[0].cli(&["FT.SEARCH", "idx", "*"]);
    assert!(failed.starts_with("ERR cluster node"), "{failed}");
}
