//! Pushes arrive whatever CLIENT REPLY says: Pub/Sub confirmations and messages and tracking
//! invalidations still reach a client that turned its replies OFF or SKIPs one, as in Redis 7.2.
//! Also BCAST's one invalidation per matching prefix, NOLOOP in both modes and invalidation on
//! expiry. Every scenario runs against stmd and against a real redis-server, byte for byte, and
//! ends with another client getting PONG within a second (nothing stalled).

use crate::common;
use crate::types_support;

use common::real_redis::RealRedis;
use common::{resp, RawConn, TestServer};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;
use types_support::{args, assert_silent, read_until};

const QUIET: Duration = Duration::from_millis(300);

async fn connect(addr: SocketAddr) -> RawConn {
    RawConn {
        stream: TcpStream::connect(addr).await.expect("connect"),
    }
}

/// A connection that said HELLO 3.
async fn resp3(addr: SocketAddr) -> RawConn {
    let mut conn = connect(addr).await;
    conn.send(&resp(&args("HELLO 3"))).await;
    read_until(&mut conn, b"$7\r\nmodules\r\n*0\r\n").await;
    conn
}

/// Sends a command without reading anything.
async fn send(conn: &mut RawConn, command: &str) {
    conn.send(&resp(&args(command))).await;
}

/// Sends a command and asserts its reply.
async fn rt(conn: &mut RawConn, command: &str, expected: &str) {
    conn.roundtrip(&resp(&args(command)), expected.as_bytes())
        .await;
}

/// Asserts the next frame on `conn`.
async fn expect(conn: &mut RawConn, expected: &str) {
    assert_eq!(String::from_utf8_lossy(&conn.read_reply().await), expected);
}

fn push(kind: &str, name: &str, count: i64) -> String {
    format!(
        ">3\r\n${}\r\n{kind}\r\n${}\r\n{name}\r\n:{count}\r\n",
        kind.len(),
        name.len()
    )
}

fn invalidate(keys: &[&str]) -> String {
    let mut out = format!(">2\r\n$10\r\ninvalidate\r\n*{}\r\n", keys.len());
    for k in keys {
        out.push_str(&format!("${}\r\n{k}\r\n", k.len()));
    }
    out
}

/// Another client is served at once: the scenario stalled nothing.
async fn pong_within_a_second(addr: SocketAddr) {
    let mut other = connect(addr).await;
    other.send(&resp(&args("PING"))).await;
    let got = tokio::time::timeout(Duration::from_secs(1), other.read_reply())
        .await
        .expect("PONG within 1 s");
    assert_eq!(got, b"+PONG\r\n");
}

/// Runs `scenario` against stmd, then against a real redis-server (DEBUG enabled on both, for
/// SET-ACTIVE-EXPIRE).
async fn on_both(scenario: impl AsyncFn(SocketAddr)) {
    let stmd = TestServer::start_with(|c| {
        c.enable_debug_command = stmd::config::ProtectedCommand::Yes;
    })
    .await;
    scenario(stmd.addr).await;
    pong_within_a_second(stmd.addr).await;
    let real = RealRedis::start_with(&["--enable-debug-command", "yes"]);
    drop(real.client().await); // waits until it accepts connections
    let addr: SocketAddr = format!("127.0.0.1:{}", real.port).parse().expect("addr");
    scenario(addr).await;
    pong_within_a_second(addr).await;
}

#[tokio::test]
async fn resp3_reply_off_still_gets_subscribe_confirmations_and_messages() {
    on_both(async |addr| {
        let mut sub = resp3(addr).await;
        let mut publisher = connect(addr).await;
        send(&mut sub, "CLIENT REPLY OFF").await;
        send(&mut sub, "SUBSCRIBE ch other").await;
        expect(&mut sub, &push("subscribe", "ch", 1)).await;
        expect(&mut sub, &push("subscribe", "other", 2)).await;
        rt(&mut publisher, "PUBLISH ch hi", ":1\r\n").await;
        expect(&mut sub, ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n").await;
        // PING's reply is silenced; the unsubscribe confirmation after it is not.
        send(&mut sub, "PING").await;
        send(&mut sub, "UNSUBSCRIBE ch").await;
        expect(&mut sub, &push("unsubscribe", "ch", 1)).await;
        send(&mut sub, "PSUBSCRIBE p*").await;
        expect(&mut sub, &push("psubscribe", "p*", 2)).await;
        rt(&mut publisher, "PUBLISH px m", ":1\r\n").await;
        expect(
            &mut sub,
            ">4\r\n$8\r\npmessage\r\n$2\r\np*\r\n$2\r\npx\r\n$1\r\nm\r\n",
        )
        .await;
        assert_silent(&mut sub, QUIET).await;
    })
    .await;
}

#[tokio::test]
async fn resp3_reply_skip_skips_the_reply_not_the_confirmation() {
    on_both(async |addr| {
        let mut sub = resp3(addr).await;
        send(&mut sub, "CLIENT REPLY SKIP").await;
        send(&mut sub, "SUBSCRIBE ch").await;
        send(&mut sub, "PING").await;
        expect(&mut sub, &push("subscribe", "ch", 1)).await;
        expect(&mut sub, "+PONG\r\n").await;
        send(&mut sub, "CLIENT REPLY SKIP").await;
        send(&mut sub, "UNSUBSCRIBE").await;
        send(&mut sub, "PING").await;
        expect(&mut sub, &push("unsubscribe", "ch", 0)).await;
        expect(&mut sub, "+PONG\r\n").await;
        assert_silent(&mut sub, QUIET).await;
    })
    .await;
}

#[tokio::test]
async fn resp2_reply_off_still_gets_subscribe_confirmations_and_messages() {
    on_both(async |addr| {
        let mut sub = connect(addr).await;
        let mut publisher = connect(addr).await;
        send(&mut sub, "CLIENT REPLY OFF").await;
        send(&mut sub, "SUBSCRIBE ch").await;
        expect(&mut sub, "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n").await;
        rt(&mut publisher, "PUBLISH ch hi", ":1\r\n").await;
        expect(&mut sub, "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n").await;
        send(&mut sub, "PING").await;
        send(&mut sub, "UNSUBSCRIBE ch").await;
        expect(&mut sub, "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n").await;
        assert_silent(&mut sub, QUIET).await;
    })
    .await;
}

#[tokio::test]
async fn reply_off_still_gets_default_mode_invalidations() {
    on_both(async |addr| {
        let mut cache = resp3(addr).await;
        let mut writer = connect(addr).await;
        rt(&mut writer, "DEL k", ":0\r\n").await;
        rt(&mut cache, "CLIENT TRACKING ON", "+OK\r\n").await;
        send(&mut cache, "CLIENT REPLY OFF").await;
        send(&mut cache, "GET k").await;
        // The first reply after the silenced GET: the key is tracked from here on.
        send(&mut cache, "CLIENT REPLY ON").await;
        expect(&mut cache, "+OK\r\n").await;
        send(&mut cache, "CLIENT REPLY OFF").await;
        rt(&mut writer, "SET k 1", "+OK\r\n").await;
        expect(&mut cache, &invalidate(&["k"])).await;
        assert_silent(&mut cache, QUIET).await;
    })
    .await;
}

#[tokio::test]
async fn reply_off_still_gets_bcast_invalidations_one_per_matching_prefix() {
    on_both(async |addr| {
        let mut cache = resp3(addr).await;
        let mut writer = connect(addr).await;
        rt(
            &mut cache,
            "CLIENT TRACKING ON BCAST PREFIX a: PREFIX b:",
            "+OK\r\n",
        )
        .await;
        send(&mut cache, "CLIENT REPLY OFF").await;
        rt(&mut writer, "MSET a:1 x b:1 y c:1 z", "+OK\r\n").await;
        expect(&mut cache, &invalidate(&["a:1"])).await;
        expect(&mut cache, &invalidate(&["b:1"])).await;
        // A key under no prefix sends nothing.
        rt(&mut writer, "SET c:2 z", "+OK\r\n").await;
        assert_silent(&mut cache, QUIET).await;
        rt(&mut writer, "SET b:2 z", "+OK\r\n").await;
        expect(&mut cache, &invalidate(&["b:2"])).await;
        assert_silent(&mut cache, QUIET).await;
    })
    .await;
}

#[tokio::test]
async fn reply_off_still_gets_optin_invalidations_of_cached_keys_only() {
    on_both(async |addr| {
        let mut cache = resp3(addr).await;
        let mut writer = connect(addr).await;
        rt(&mut cache, "CLIENT TRACKING ON OPTIN", "+OK\r\n").await;
        send(&mut cache, "CLIENT REPLY OFF").await;
        send(&mut cache, "CLIENT CACHING YES").await;
        send(&mut cache, "GET cached").await;
        send(&mut cache, "GET uncached").await;
        send(&mut cache, "CLIENT REPLY ON").await;
        expect(&mut cache, "+OK\r\n").await;
        rt(&mut writer, "SET uncached 1", "+OK\r\n").await;
        rt(&mut writer, "SET cached 1", "+OK\r\n").await;
        expect(&mut cache, &invalidate(&["cached"])).await;
        assert_silent(&mut cache, QUIET).await;
    })
    .await;
}

#[tokio::test]
async fn noloop_default_mode_skips_own_writes() {
    on_both(async |addr| {
        let mut cache = resp3(addr).await;
        let mut writer = connect(addr).await;
        rt(&mut writer, "DEL own theirs", ":0\r\n").await;
        rt(&mut cache, "CLIENT TRACKING ON NOLOOP", "+OK\r\n").await;
        rt(&mut cache, "GET own", "_\r\n").await;
        rt(&mut cache, "GET theirs", "_\r\n").await;
        // Its own write forgets the key without telling itself.
        rt(&mut cache, "SET own 1", "+OK\r\n").await;
        rt(&mut writer, "SET own 2", "+OK\r\n").await;
        assert_silent(&mut cache, QUIET).await;
        rt(&mut writer, "SET theirs 2", "+OK\r\n").await;
        expect(&mut cache, &invalidate(&["theirs"])).await;
        assert_silent(&mut cache, QUIET).await;
    })
    .await;
}

#[tokio::test]
async fn noloop_bcast_skips_own_writes() {
    on_both(async |addr| {
        let mut cache = resp3(addr).await;
        let mut writer = connect(addr).await;
        rt(&mut cache, "CLIENT TRACKING ON BCAST NOLOOP", "+OK\r\n").await;
        rt(&mut cache, "SET x 1", "+OK\r\n").await;
        assert_silent(&mut cache, QUIET).await;
        rt(&mut writer, "SET x 2", "+OK\r\n").await;
        expect(&mut cache, &invalidate(&["x"])).await;
        assert_silent(&mut cache, QUIET).await;
    })
    .await;
}

#[tokio::test]
async fn expiry_invalidates_lazily_and_actively() {
    on_both(async |addr| {
        let mut cache = resp3(addr).await;
        let mut writer = connect(addr).await;
        rt(&mut cache, "CLIENT TRACKING ON", "+OK\r\n").await;
        // Lazy: with active expiry off, the read that finds the key expired invalidates it.
        rt(&mut writer, "DEBUG SET-ACTIVE-EXPIRE 0", "+OK\r\n").await;
        rt(&mut writer, "SET lazy v PX 100", "+OK\r\n").await;
        rt(&mut cache, "GET lazy", "$1\r\nv\r\n").await;
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_silent(&mut cache, QUIET).await;
        rt(&mut writer, "GET lazy", "$-1\r\n").await;
        expect(&mut cache, &invalidate(&["lazy"])).await;
        // Active: the expiry cycle finds it on its own.
        rt(&mut writer, "DEBUG SET-ACTIVE-EXPIRE 1", "+OK\r\n").await;
        rt(&mut writer, "SET active v PX 100", "+OK\r\n").await;
        rt(&mut cache, "GET active", "$1\r\nv\r\n").await;
        expect(&mut cache, &invalidate(&["active"])).await;
        assert_silent(&mut cache, QUIET).await;
    })
    .await;
}
