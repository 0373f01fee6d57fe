//! Expiry: lazy on access, the active cycle reclaiming keys nobody reads, and TTL bookkeeping.

use crate::common;

use common::{RawConn, TestServer};
use std::time::{Duration, Instant};

fn int(reply: &[u8]) -> i64 {
    assert_eq!(reply[0], b':', "{}", String::from_utf8_lossy(reply));
    std::str::from_utf8(&reply[1..reply.len() - 2])
        .expect("utf8")
        .parse()
        .expect("integer")
}

async fn info_field(conn: &mut RawConn, section: &[u8], field: &str) -> String {
    let reply = conn.command(&[b"INFO", section]).await;
    String::from_utf8_lossy(&reply)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_else(|| panic!("{field} missing from INFO"))
}

#[tokio::test]
async fn an_expired_key_is_gone_on_access() {
    let server = TestServer::start().await;
    let mut con = server.raw().await;
    assert_eq!(
        con.command(&[b"SET", b"k", b"v", b"PX", b"50"]).await,
        b"+OK\r\n"
    );
    assert_eq!(con.command(&[b"GET", b"k"]).await, b"$1\r\nv\r\n");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(con.command(&[b"GET", b"k"]).await, b"$-1\r\n");
    assert_eq!(con.command(&[b"EXISTS", b"k"]).await, b":0\r\n");
    assert_eq!(con.command(&[b"TTL", b"k"]).await, b":-2\r\n");
    // Every kind of access sees it gone, and a write starts afresh without the old TTL.
    con.command(&[b"SET", b"k", b"v", b"PX", b"30"]).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(con.command(&[b"APPEND", b"k", b"w"]).await, b":1\r\n");
    assert_eq!(con.command(&[b"TTL", b"k"]).await, b":-1\r\n");
    con.command(&[b"SET", b"n", b"5", b"PX", b"30"]).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(con.command(&[b"INCR", b"n"]).await, b":1\r\n");
    con.command(&[b"SET", b"r", b"v", b"PX", b"30"]).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(
        con.command(&[b"RENAME", b"r", b"s"]).await,
        b"-ERR no such key\r\n"
    );
    assert_eq!(con.command(&[b"SET", b"x", b"1", b"NX"]).await, b"+OK\r\n");
}

#[tokio::test]
async fn the_active_cycle_reclaims_expired_keys_without_reads() {
    let server = TestServer::start().await;
    let mut con = server.raw().await;
    con.command(&[b"CONFIG", b"RESETSTAT"]).await;
    let mut batch = Vec::new();
    for i in 0..1000 {
        batch.extend(common::resp(&[
            b"SET",
            format!("t{i}").as_bytes(),
            b"v",
            b"PX",
            b"100",
        ]));
    }
    batch.extend(common::resp(&[b"SET", b"keeper", b"v"]));
    con.send(&batch).await;
    con.read_n(1001 * 5).await;
    assert_eq!(con.command(&[b"DBSIZE"]).await, b":1001\r\n");
    // avg_ttl: the mean time left in ms over the keys with a TTL, at most the 100 ms given.
    let db0 = info_field(&mut con, b"keyspace", "db0").await;
    let avg_ttl: u64 = db0
        .strip_prefix("keys=1001,expires=1000,avg_ttl=")
        .and_then(|rest| rest.strip_suffix(",subexpiry=0"))
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("{db0}"));
    assert!(avg_ttl <= 100, "{db0}");
    // An expiry given later to a key that had none (its shard's expiry bound moves earlier).
    assert_eq!(con.command(&[b"SET", b"late", b"v"]).await, b"+OK\r\n");
    assert_eq!(con.command(&[b"PEXPIRE", b"late", b"100"]).await, b":1\r\n");
    // DBSIZE counts keys not reclaimed yet (as Redis), so it only drops when the cycle runs.
    let start = Instant::now();
    loop {
        let size = int(&con.command(&[b"DBSIZE"]).await);
        if size == 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{size} keys left after 3 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(info_field(&mut con, b"stats", "expired_keys").await, "1001");
    assert_eq!(con.command(&[b"GET", b"keeper"]).await, b"$1\r\nv\r\n");
}

#[tokio::test]
async fn ttl_values_and_the_commands_that_keep_or_clear_them() {
    let server = TestServer::start().await;
    let mut con = server.raw().await;
    con.command(&[b"SET", b"k", b"v", b"EX", b"100"]).await;
    assert_eq!(con.command(&[b"TTL", b"k"]).await, b":100\r\n");
    let pttl = int(&con.command(&[b"PTTL", b"k"]).await);
    assert!((99_000..=100_000).contains(&pttl), "{pttl}");
    let at = int(&con.command(&[b"PEXPIRETIME", b"k"]).await);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    assert!((at - now_ms - 100_000).abs() < 1000, "{at} vs {now_ms}");
    assert_eq!(
        int(&con.command(&[b"EXPIRETIME", b"k"]).await),
        (at + 500) / 1000
    );

    // KEEPTTL keeps it, a plain SET clears it, GETSET clears it, INCR and APPEND keep it.
    con.command(&[b"SET", b"k", b"w", b"KEEPTTL"]).await;
    assert_eq!(con.command(&[b"TTL", b"k"]).await, b":100\r\n");
    con.command(&[b"APPEND", b"k", b"x"]).await;
    assert_eq!(con.command(&[b"TTL", b"k"]).await, b":100\r\n");
    con.command(&[b"SET", b"k", b"1"]).await;
    assert_eq!(con.command(&[b"TTL", b"k"]).await, b":-1\r\n");
    con.command(&[b"EXPIRE", b"k", b"50"]).await;
    con.command(&[b"INCRBY", b"k", b"2"]).await;
    assert_eq!(con.command(&[b"TTL", b"k"]).await, b":50\r\n");
    con.command(&[b"GETSET", b"k", b"z"]).await;
    assert_eq!(con.command(&[b"TTL", b"k"]).await, b":-1\r\n");

    // GETEX PERSIST removes it; GETEX with no option leaves it.
    con.command(&[b"SET", b"g", b"v", b"EX", b"100"]).await;
    assert_eq!(con.command(&[b"GETEX", b"g"]).await, b"$1\r\nv\r\n");
    assert_eq!(con.command(&[b"TTL", b"g"]).await, b":100\r\n");
    assert_eq!(
        con.command(&[b"GETEX", b"g", b"PERSIST"]).await,
        b"$1\r\nv\r\n"
    );
    assert_eq!(con.command(&[b"TTL", b"g"]).await, b":-1\r\n");

    // A negative or past expiry deletes the key at once (and counts as done).
    for request in [
        &[&b"EXPIRE"[..], b"g", b"-1"][..],
        &[b"PEXPIRE", b"g", b"-100"],
        &[b"EXPIREAT", b"g", b"1"],
        &[b"PEXPIREAT", b"g", b"0"],
        &[b"GETEX", b"g", b"PXAT", b"1"],
    ] {
        con.command(&[b"SET", b"g", b"v"]).await;
        let reply = con.command(request).await;
        assert!(reply == b":1\r\n" || reply == b"$1\r\nv\r\n", "{request:?}");
        assert_eq!(
            con.command(&[b"EXISTS", b"g"]).await,
            b":0\r\n",
            "{request:?}"
        );
    }
    // RENAME carries the TTL to the new name.
    con.command(&[b"SET", b"from", b"v", b"EX", b"70"]).await;
    con.command(&[b"RENAME", b"from", b"to"]).await;
    assert_eq!(con.command(&[b"TTL", b"to"]).await, b":70\r\n");
}

/// INFO's `expired_stale_perc` follows the share of expired keys the active cycle meets.
#[tokio::test]
async fn expired_stale_perc_estimates_the_expired_share() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    assert_eq!(
        info_field(&mut conn, b"stats", "expired_stale_perc").await,
        "0.00"
    );
    for i in 0..200 {
        let key = format!("k{i}");
        let ttl: &[u8] = if i % 2 == 0 { b"1" } else { b"100000" };
        conn.command(&[b"SET", key.as_bytes(), b"v", b"PX", ttl])
            .await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let percent: f64 = info_field(&mut conn, b"stats", "expired_stale_perc")
        .await
        .parse()
        .expect("a percentage");
    assert!(percent > 0.0 && percent <= 50.0, "{percent}");
}

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// The integer that ends a raw reply (`…:<n>\r\n`).
fn trailing_int(reply: &str) -> i64 {
    let last = reply.trim_end().rsplit(':').next().expect("an integer");
    last.parse().expect("an integer")
}

/// Redis 7.2's command time snapshot: EXEC's commands and a script's `redis.call`s run at the
/// time their EXEC or script started. A key that expires meanwhile is still there for them, and
/// relative expiry times count from that time, not from when each command ran.
#[tokio::test]
async fn exec_and_scripts_run_at_the_time_they_started() {
    let server =
        TestServer::start_with(|c| c.enable_debug_command = stmd::config::ProtectedCommand::Yes)
            .await;
    let mut con = server.raw().await;
    assert_eq!(con.command(&[b"MULTI"]).await, b"+OK\r\n");
    for queued in [
        &[&b"SET"[..], b"k", b"v", b"PX", b"100"][..],
        &[b"DEBUG", b"SLEEP", b"0.2"],
        &[b"GET", b"k"],
        &[b"SET", b"j", b"v", b"PX", b"100000"],
        &[b"PEXPIRETIME", b"j"],
    ] {
        assert_eq!(con.command(queued).await, b"+QUEUED\r\n");
    }
    let before = unix_ms();
    let reply = con.command(&[b"EXEC"]).await;
    let after = unix_ms();
    let text = String::from_utf8_lossy(&reply).into_owned();
    assert!(
        text.starts_with("*5\r\n+OK\r\n+OK\r\n$1\r\nv\r\n+OK\r\n:"),
        "{text}"
    );
    let expires_at = trailing_int(&text);
    let started = expires_at - 100_000;
    assert!(
        (before..=after - 200).contains(&started),
        "EXEC's time {started} is not its start (sent {before}, answered {after})"
    );
    assert_eq!(con.command(&[b"GET", b"k"]).await, b"$-1\r\n");

    // A script: busy for 150 ms by the real clock (TIME), yet its commands see its start.
    con.command(&[b"SET", b"k", b"v", b"PX", b"50"]).await;
    let script =
        b"local function now() local t = redis.call('TIME') return t[1] * 1000 + t[2] / 1000 end \
        local start = now() repeat until now() - start >= 150 \
        redis.call('SET', KEYS[2], 'v', 'PX', 100000) \
        return {redis.call('GET', KEYS[1]), redis.call('PEXPIRETIME', KEYS[2])}";
    let before = unix_ms();
    let reply = con.command(&[b"EVAL", script, b"2", b"k", b"j"]).await;
    let after = unix_ms();
    let text = String::from_utf8_lossy(&reply).into_owned();
    assert!(text.starts_with("*2\r\n$1\r\nv\r\n:"), "{text}");
    let expires_at = trailing_int(&text);
    let started = expires_at - 100_000;
    assert!(
        (before..=after - 150).contains(&started),
        "the script's time {started} is not its start (sent {before}, answered {after})"
    );
    assert_eq!(con.command(&[b"GET", b"k"]).await, b"$-1\r\n");
}
