//! Keyspace notifications over real TCP: events per class on both channel kinds, `expired` from
//! the active cycle, `evicted` from eviction, and STM entries' own events (class `S`).
//! Per-command event names are compared with a real redis-server in conformance/corpus/events.txt.

use crate::common;

use common::stm::{ok, run, strings};
use common::{resp, RawConn, TestServer};
use std::collections::BTreeSet;
use std::time::Duration;

/// A RESP2 connection subscribed to `pattern`.
async fn subscriber(server: &TestServer, pattern: &str) -> RawConn {
    let mut sub = server.raw().await;
    sub.send(&resp(&[b"PSUBSCRIBE", pattern.as_bytes()])).await;
    sub.read_reply().await;
    sub
}

/// The next `pmessage` as (channel, payload).
async fn next_event(sub: &mut RawConn) -> (String, String) {
    let frame = String::from_utf8(sub.read_reply().await).expect("utf8 frame");
    let parts: Vec<&str> = frame.split("\r\n").collect();
    // *4 $8 pmessage $n pattern $n channel $n payload
    assert_eq!(parts[2], "pmessage", "{frame:?}");
    (parts[6].to_string(), parts[8].to_string())
}

async fn next_events(sub: &mut RawConn, n: usize) -> Vec<(String, String)> {
    let mut got = Vec::new();
    for _ in 0..n {
        got.push(next_event(sub).await);
    }
    got
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(c, p)| (c.to_string(), p.to_string()))
        .collect()
}

#[tokio::test]
async fn each_class_publishes_on_keyspace_and_keyevent_channels() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(
        &mut con,
        &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
    )
    .await;
    let mut sub = subscriber(&server, "__key*@0__:*").await;
    for words in [
        &["SET", "k", "v"][..],
        &["LPUSH", "l", "a"],
        &["HSET", "h", "f", "v"],
        &["SADD", "s", "m"],
        &["ZADD", "z", "1", "m"],
        &["EXPIRE", "k", "100"],
        &["DEL", "k"],
    ] {
        ok(&mut con, words).await;
    }
    let got = next_events(&mut sub, 14).await;
    let mut expected = Vec::new();
    for (key, event) in [
        ("k", "set"),
        ("l", "lpush"),
        ("h", "hset"),
        ("s", "sadd"),
        ("z", "zadd"),
        ("k", "expire"),
        ("k", "del"),
    ] {
        expected.push((format!("__keyspace@0__:{key}"), event.to_string()));
        expected.push((format!("__keyevent@0__:{event}"), key.to_string()));
    }
    assert_eq!(got, expected);

    // Only the classes asked for: `l` alone lets the list event through, not the string one.
    ok(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "El"]).await;
    ok(&mut con, &["SET", "k2", "v"]).await;
    ok(&mut con, &["RPUSH", "l", "b"]).await;
    assert_eq!(
        next_event(&mut sub).await,
        ("__keyevent@0__:rpush".into(), "l".into())
    );

    // Off: nothing at all (the PING reply is the next frame).
    ok(&mut con, &["CONFIG", "SET", "notify-keyspace-events", ""]).await;
    ok(&mut con, &["RPUSH", "l", "c"]).await;
    sub.roundtrip(b"PING\r\n", b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        .await;
}

#[tokio::test]
async fn new_and_keymiss_come_only_when_asked_for() {
    let server = TestServer::start_with(|c| {
        c.notify_keyspace_events =
            stmd::config::values::NotifyFlags::parse("Egnm$").expect("flags");
    })
    .await;
    let mut con = server.client().await;
    let mut sub = subscriber(&server, "__keyevent@0__:*").await;
    ok(&mut con, &["SET", "a", "1"]).await;
    ok(&mut con, &["SET", "a", "2"]).await;
    ok(&mut con, &["GET", "nope"]).await;
    ok(&mut con, &["DEL", "nope"]).await; // a write that finds nothing: no keymiss, no del
    ok(&mut con, &["DEL", "a"]).await;
    assert_eq!(
        next_events(&mut sub, 5).await,
        pairs(&[
            ("__keyevent@0__:new", "a"),
            ("__keyevent@0__:set", "a"),
            ("__keyevent@0__:set", "a"),
            ("__keyevent@0__:keymiss", "nope"),
            ("__keyevent@0__:del", "a"),
        ])
    );
}

#[tokio::test]
async fn active_expiry_publishes_expired_without_any_access() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "Ex"]).await;
    let mut sub = subscriber(&server, "__keyevent@0__:*").await;
    ok(&mut con, &["SET", "short", "v", "PX", "30"]).await;
    ok(&mut con, &["SET", "long", "v", "EX", "100"]).await;
    // Nobody touches `short`: the active cycle (100 ms ticks) must find it.
    assert_eq!(
        next_event(&mut sub).await,
        ("__keyevent@0__:expired".into(), "short".into())
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    sub.roundtrip(b"PING\r\n", b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        .await;
}

#[tokio::test]
async fn eviction_publishes_evicted() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    ok(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "Ee"]).await;
    for k in ["e1", "e2", "e3"] {
        ok(&mut con, &["SET", k, "v"]).await;
    }
    let mut sub = subscriber(&server, "__keyevent@0__:*").await;
    ok(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    )
    .await;
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "1"]).await;
    // Over the limit with everything evictable: the write evicts all three, then is refused.
    let refused = run(&mut con, &["SET", "x", "v"]).await;
    assert!(refused.is_err(), "{refused:?}");
    let mut evicted = BTreeSet::new();
    for _ in 0..3 {
        let (channel, key) = next_event(&mut sub).await;
        assert_eq!(channel, "__keyevent@0__:evicted");
        evicted.insert(key);
    }
    assert_eq!(
        evicted,
        BTreeSet::from(["e1".into(), "e2".into(), "e3".into()])
    );
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "0"]).await;
}

#[tokio::test]
async fn stm_entries_publish_their_own_class() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    // `A` is Redis's classes only: STM events need `S`.
    ok(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "EA"]).await;
    let mut sub = subscriber(&server, "__keyevent@0__:stm.*").await;
    let capture = [
        "STM.CAPTURE",
        "USER",
        "u1",
        "CHANNEL",
        "c1",
        "SERVER",
        "DM",
        "MSG",
        "user",
        "alice",
        "hello",
        "REPLY",
        "3",
        "-",
        "Nova",
        "hi",
    ];
    ok(&mut con, &capture).await;
    sub.roundtrip(b"PING\r\n", b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        .await;

    ok(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "ES"]).await;
    assert_eq!(
        ok(&mut con, &["CONFIG", "GET", "notify-keyspace-events"]).await,
        redis::Value::Array(vec![
            redis::Value::BulkString(b"notify-keyspace-events".to_vec()),
            redis::Value::BulkString(b"SE".to_vec()),
        ])
    );
    ok(&mut con, &capture).await;
    let keys = strings(&ok(&mut con, &["KEYS", "*"]).await);
    assert!(!keys.is_empty());
    let mut captured = BTreeSet::new();
    for _ in 0..keys.len() {
        let (channel, key) = next_event(&mut sub).await;
        assert_eq!(channel, "__keyevent@0__:stm.capture");
        captured.insert(key);
    }
    assert_eq!(captured, keys.iter().cloned().collect::<BTreeSet<_>>());

    ok(&mut con, &["STM.TICK", &keys[0], "BY", "2"]).await;
    assert_eq!(
        next_event(&mut sub).await,
        ("__keyevent@0__:stm.tick".into(), keys[0].clone())
    );
    ok(&mut con, &["STM.FORGET", "KEY", &keys[0]]).await;
    assert_eq!(
        next_event(&mut sub).await,
        ("__keyevent@0__:stm.forget".into(), keys[0].clone())
    );
}
