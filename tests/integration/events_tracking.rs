//! Client-side caching over real TCP: RESP3 `invalidate` pushes in default mode, BCAST with
//! prefixes, OPTIN/OPTOUT, NOLOOP, RESP2 redirection to `__redis__:invalidate`, the bounded
//! tracking table and FLUSHALL's null invalidation. Replies to the CLIENT subcommands are compared
//! with a real redis-server in conformance/corpus/tracking.txt.

use crate::common;
use crate::types_support;

use common::stm::ok;
use common::{resp, RawConn, TestServer};
use std::time::Duration;
use types_support::{args, assert_silent, raw3};

async fn rt(conn: &mut RawConn, command: &str, expected: &[u8]) {
    conn.roundtrip(&resp(&args(command)), expected).await;
}

fn invalidate(keys: &[&str]) -> Vec<u8> {
    let mut out = format!(">2\r\n$10\r\ninvalidate\r\n*{}\r\n", keys.len()).into_bytes();
    for k in keys {
        out.extend_from_slice(format!("${}\r\n{k}\r\n", k.len()).as_bytes());
    }
    out
}

async fn expect_push(conn: &mut RawConn, expected: &[u8]) {
    assert_eq!(
        String::from_utf8_lossy(&conn.read_reply().await),
        String::from_utf8_lossy(expected)
    );
}

const QUIET: Duration = Duration::from_millis(200);

#[tokio::test]
async fn default_mode_invalidates_keys_read_once_per_change() {
    let server = TestServer::start().await;
    let mut cache = raw3(&server).await;
    let mut writer = server.client().await;
    rt(&mut cache, "CLIENT TRACKING on", b"+OK\r\n").await;
    ok(&mut writer, &["SET", "a", "1"]).await;
    rt(&mut cache, "GET a", b"$1\r\n1\r\n").await;
    rt(&mut cache, "GET b", b"_\r\n").await; // misses are tracked too
    ok(&mut writer, &["SET", "a", "2"]).await;
    expect_push(&mut cache, &invalidate(&["a"])).await;
    // Invalidated keys are forgotten until read again.
    ok(&mut writer, &["SET", "a", "3"]).await;
    ok(&mut writer, &["SET", "b", "1"]).await;
    expect_push(&mut cache, &invalidate(&["b"])).await;
    // Expiry invalidates too.
    ok(&mut writer, &["SET", "e", "1", "PX", "50"]).await;
    rt(&mut cache, "GET e", b"$1\r\n1\r\n").await;
    expect_push(&mut cache, &invalidate(&["e"])).await;
    // Writes to untracked keys and reads by others send nothing.
    ok(&mut writer, &["SET", "other", "1"]).await;
    assert_silent(&mut cache, QUIET).await;
    rt(&mut cache, "CLIENT TRACKING off", b"+OK\r\n").await;
    rt(&mut cache, "GET a", b"$1\r\n3\r\n").await;
    ok(&mut writer, &["SET", "a", "4"]).await;
    assert_silent(&mut cache, QUIET).await;
}

#[tokio::test]
async fn bcast_sends_every_change_under_the_prefixes() {
    let server = TestServer::start().await;
    let mut cache = raw3(&server).await;
    let mut writer = server.client().await;
    rt(
        &mut cache,
        "CLIENT TRACKING on BCAST PREFIX user: PREFIX chan:",
        b"+OK\r\n",
    )
    .await;
    ok(&mut writer, &["SET", "user:1", "x"]).await;
    expect_push(&mut cache, &invalidate(&["user:1"])).await;
    ok(&mut writer, &["SET", "nomatch", "x"]).await;
    ok(
        &mut writer,
        &["MSET", "user:3", "a", "user:2", "b", "chan:9", "c"],
    )
    .await;
    // One message per prefix, keys sorted, as Redis batches them.
    let first = cache.read_reply().await;
    let second = cache.read_reply().await;
    let mut got = vec![first, second];
    got.sort();
    let mut want = vec![invalidate(&["chan:9"]), invalidate(&["user:2", "user:3"])];
    want.sort();
    assert_eq!(got, want);
    assert_silent(&mut cache, QUIET).await;
}

#[tokio::test]
async fn optin_and_optout_follow_client_caching() {
    let server = TestServer::start().await;
    let mut writer = server.client().await;

    let mut optin = raw3(&server).await;
    rt(&mut optin, "CLIENT TRACKING on OPTIN", b"+OK\r\n").await;
    rt(&mut optin, "GET in1", b"_\r\n").await;
    rt(&mut optin, "CLIENT CACHING yes", b"+OK\r\n").await;
    rt(&mut optin, "GET in2", b"_\r\n").await;
    rt(&mut optin, "GET in3", b"_\r\n").await; // CACHING applies to one command only
    ok(&mut writer, &["MSET", "in1", "1", "in2", "2", "in3", "3"]).await;
    expect_push(&mut optin, &invalidate(&["in2"])).await;
    assert_silent(&mut optin, QUIET).await;

    let mut optout = raw3(&server).await;
    rt(&mut optout, "CLIENT TRACKING on OPTOUT", b"+OK\r\n").await;
    rt(&mut optout, "CLIENT CACHING no", b"+OK\r\n").await;
    rt(&mut optout, "GET out1", b"_\r\n").await;
    rt(&mut optout, "GET out2", b"_\r\n").await;
    ok(&mut writer, &["MSET", "out1", "1", "out2", "2"]).await;
    expect_push(&mut optout, &invalidate(&["out2"])).await;
    assert_silent(&mut optout, QUIET).await;
}

#[tokio::test]
async fn noloop_skips_the_clients_own_writes() {
    let server = TestServer::start().await;
    let mut cache = raw3(&server).await;
    rt(&mut cache, "CLIENT TRACKING on", b"+OK\r\n").await;
    rt(&mut cache, "GET k", b"_\r\n").await;
    rt(&mut cache, "SET k 1", b"+OK\r\n").await;
    expect_push(&mut cache, &invalidate(&["k"])).await;

    rt(&mut cache, "CLIENT TRACKING on NOLOOP", b"+OK\r\n").await;
    rt(&mut cache, "GET k", b"$1\r\n1\r\n").await;
    rt(&mut cache, "SET k 2", b"+OK\r\n").await;
    assert_silent(&mut cache, QUIET).await;
    // The key is no longer tracked after its own write either (as in Redis).
    rt(&mut cache, "GET k", b"$1\r\n2\r\n").await;
    let mut writer = server.client().await;
    ok(&mut writer, &["SET", "k", "3"]).await;
    expect_push(&mut cache, &invalidate(&["k"])).await;
}

#[tokio::test]
async fn resp2_redirect_delivers_on_the_invalidate_channel() {
    let server = TestServer::start().await;
    let mut listener = server.raw().await;
    rt(
        &mut listener,
        "SUBSCRIBE __redis__:invalidate",
        b"*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n",
    )
    .await;
    let mut probe = server.client().await;
    let clients = common::stm::text(&ok(&mut probe, &["CLIENT", "LIST"]).await);
    let listener_id = clients
        .lines()
        .find(|l| l.contains("cmd=subscribe"))
        .and_then(|l| l.split(' ').next())
        .and_then(|id| id.strip_prefix("id="))
        .expect("listener in CLIENT LIST")
        .to_string();

    let mut cache = server.raw().await;
    rt(
        &mut cache,
        &format!("CLIENT TRACKING on REDIRECT {listener_id}"),
        b"+OK\r\n",
    )
    .await;
    rt(
        &mut cache,
        "CLIENT GETREDIR",
        format!(":{listener_id}\r\n").as_bytes(),
    )
    .await;
    rt(&mut cache, "GET r", b"$-1\r\n").await;
    ok(&mut probe, &["SET", "r", "1"]).await;
    expect_push(
        &mut listener,
        b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nr\r\n",
    )
    .await;
    ok(&mut probe, &["FLUSHALL"]).await;
    expect_push(
        &mut listener,
        b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n",
    )
    .await;
    // Nothing ever reaches the RESP2 tracking client itself.
    assert_silent(&mut cache, QUIET).await;
}

#[tokio::test]
async fn a_full_table_drops_and_invalidates_keys() {
    let server = TestServer::start_with(|c| c.tracking_table_max_keys = 2).await;
    let mut cache = raw3(&server).await;
    rt(&mut cache, "CLIENT TRACKING on", b"+OK\r\n").await;
    rt(&mut cache, "MGET t1 t2", b"*2\r\n_\r\n_\r\n").await;
    assert_silent(&mut cache, QUIET).await;
    // A third key overflows the table: one of the three is dropped and invalidated at once.
    rt(&mut cache, "GET t3", b"_\r\n").await;
    let dropped = cache.read_reply().await;
    let which = ["t1", "t2", "t3"]
        .into_iter()
        .find(|k| dropped == invalidate(&[k]))
        .unwrap_or_else(|| panic!("{:?}", String::from_utf8_lossy(&dropped)));
    assert_silent(&mut cache, QUIET).await;
    // The other two are still tracked; the dropped one is not.
    let mut writer = server.client().await;
    ok(&mut writer, &["MSET", "t1", "1", "t2", "2", "t3", "3"]).await;
    let mut rest = vec![cache.read_reply().await, cache.read_reply().await];
    rest.sort();
    let mut want: Vec<Vec<u8>> = ["t1", "t2", "t3"]
        .into_iter()
        .filter(|k| *k != which)
        .map(|k| invalidate(&[k]))
        .collect();
    want.sort();
    assert_eq!(rest, want);
    // CONFIG SET changes the bound at run time.
    ok(
        &mut writer,
        &["CONFIG", "SET", "tracking-table-max-keys", "0"],
    )
    .await;
    assert_eq!(
        common::stm::strings(&ok(&mut writer, &["CONFIG", "GET", "tracking-table-max-keys"]).await),
        vec!["tracking-table-max-keys", "0"]
    );
}

#[tokio::test]
async fn flushall_sends_a_null_invalidation_to_every_tracking_client() {
    let server = TestServer::start().await;
    let mut default_mode = raw3(&server).await;
    let mut bcast = raw3(&server).await;
    rt(&mut default_mode, "CLIENT TRACKING on", b"+OK\r\n").await;
    rt(&mut bcast, "CLIENT TRACKING on BCAST", b"+OK\r\n").await;
    let mut writer = server.client().await;
    ok(&mut writer, &["FLUSHALL"]).await;
    for conn in [&mut default_mode, &mut bcast] {
        expect_push(conn, b">2\r\n$10\r\ninvalidate\r\n_\r\n").await;
    }
}

/// INFO's `tracking_total_keys` (keys in the table), `_items` (client ids over all keys) and
/// `_prefixes` (distinct BCAST prefixes) follow what clients track, as Redis counts them.
#[tokio::test]
async fn info_counts_the_tracking_table() {
    let server = TestServer::start().await;
    let mut first = raw3(&server).await;
    let mut second = raw3(&server).await;
    let mut bcast = raw3(&server).await;
    let mut other = raw3(&server).await;
    let mut admin = server.client().await;
    rt(&mut first, "CLIENT TRACKING on", b"+OK\r\n").await;
    rt(&mut second, "CLIENT TRACKING on", b"+OK\r\n").await;
    rt(&mut first, "GET a", b"_\r\n").await;
    rt(&mut first, "GET b", b"_\r\n").await;
    rt(&mut second, "GET a", b"_\r\n").await;
    rt(
        &mut bcast,
        "CLIENT TRACKING on BCAST PREFIX user: PREFIX chan:",
        b"+OK\r\n",
    )
    .await;
    rt(
        &mut other,
        "CLIENT TRACKING on BCAST PREFIX user:",
        b"+OK\r\n",
    )
    .await;
    let text: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(&mut admin)
        .await
        .expect("INFO");
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(str::trim)
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(field("tracking_total_keys"), "2");
    assert_eq!(field("tracking_total_items"), "3");
    assert_eq!(field("tracking_total_prefixes"), "2");
}
