//! The data types through the `redis` crate, in RESP2 and RESP3, as bots use them: typed results,
//! transactional pipelines (MULTI/EXEC), WATCH, and the edges a byte table cannot show well
//! (random picks, cursors over large collections, empty aggregates disappearing).

use crate::common;
use crate::types_support;

use common::{resp, TestServer};
use redis::{AsyncCommands, Value};
use std::collections::{HashMap, HashSet};
use types_support::{args, raw3};

#[tokio::test]
async fn hashes_sets_and_sorted_sets_decode_in_both_protocols() {
    let server = TestServer::start().await;
    for mut con in [server.client().await, server.client3().await] {
        let _: () = redis::cmd("FLUSHALL")
            .query_async(&mut con)
            .await
            .expect("flush");
        let _: i64 = con
            .hset_multiple("h", &[("a", "1"), ("b", "2")])
            .await
            .map(|()| 2)
            .expect("hset");
        let all: HashMap<String, String> = con.hgetall("h").await.expect("hgetall");
        assert_eq!(all.len(), 2);
        assert_eq!(all["b"], "2");
        let added: i64 = con.sadd("s", &["x", "y", "x"]).await.expect("sadd");
        assert_eq!(added, 2);
        let members: HashSet<String> = con.smembers("s").await.expect("smembers");
        assert_eq!(members, HashSet::from(["x".to_string(), "y".to_string()]));
        let _: i64 = con
            .zadd_multiple("z", &[(2.5, "b"), (1.0, "a"), (2.5, "a2")])
            .await
            .expect("zadd");
        let ranked: Vec<(String, f64)> = con.zrange_withscores("z", 0, -1).await.expect("zrange");
        assert_eq!(
            ranked,
            vec![("a".into(), 1.0), ("a2".into(), 2.5), ("b".into(), 2.5)],
            "ties are ordered by member"
        );
        let score: Option<f64> = con.zscore("z", "a2").await.expect("zscore");
        assert_eq!(score, Some(2.5));
        let rev: Vec<String> = con
            .zrevrangebyscore("z", "+inf", "(1")
            .await
            .expect("zrevrangebyscore");
        assert_eq!(rev, vec!["b", "a2"]);
    }
}

#[tokio::test]
async fn transactional_pipelines_run_atomically() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let (len, popped, card, score): (i64, Vec<String>, i64, f64) = redis::pipe()
        .atomic()
        .rpush("q", &["a", "b", "c"])
        .lpop("q", std::num::NonZeroUsize::new(2))
        .sadd("s", "m")
        .ignore()
        .scard("s")
        .zincr("z", "m", 1.5)
        .query_async(&mut con)
        .await
        .expect("pipeline");
    assert_eq!(
        (len, popped, card, score),
        (3, vec!["a".into(), "b".into()], 1, 1.5)
    );
}

#[tokio::test]
async fn exec_keeps_going_after_a_wrongtype_and_watch_sees_collection_writes() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    for (command, reply) in [
        ("SET str v", &b"+OK\r\n"[..]),
        ("MULTI", b"+OK\r\n"),
        ("LPUSH str x", b"+QUEUED\r\n"),
        ("HSET h f v", b"+QUEUED\r\n"),
        ("ZADD z 1 m", b"+QUEUED\r\n"),
        (
            "EXEC",
            b"*3\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:1\r\n:1\r\n",
        ),
        // A queued command with the wrong arity aborts the whole transaction.
        ("MULTI", b"+OK\r\n"),
        ("SADD s", b"-ERR wrong number of arguments for 'sadd' command\r\n"),
        ("SADD s m", b"+QUEUED\r\n"),
        (
            "EXEC",
            b"-EXECABORT Transaction discarded because of previous errors.\r\n",
        ),
        ("EXISTS s", b":0\r\n"),
        ("WATCH h", b"+OK\r\n"),
    ] {
        c.roundtrip(&resp(&args(command)), reply).await;
    }
    let mut other = server.client().await;
    let _: i64 = other.hincr("h", "n", 1).await.expect("hincrby");
    for (command, reply) in [
        ("MULTI", &b"+OK\r\n"[..]),
        ("HGET h f", b"+QUEUED\r\n"),
        ("EXEC", b"*-1\r\n"),
    ] {
        c.roundtrip(&resp(&args(command)), reply).await;
    }
}

#[tokio::test]
async fn emptied_aggregates_are_deleted_and_type_knows_every_type() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    for (command, reply) in [
        ("RPUSH l a", &b":1\r\n"[..]),
        ("HSET h f v", b":1\r\n"),
        ("SADD s m", b":1\r\n"),
        ("ZADD z 1 m", b":1\r\n"),
        ("TYPE l", b"+list\r\n"),
        ("TYPE h", b"+hash\r\n"),
        ("TYPE s", b"+set\r\n"),
        ("TYPE z", b"+zset\r\n"),
        (
            "SCAN 0 TYPE zset COUNT 1000",
            b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nz\r\n",
        ),
        (
            "SCAN 0 TYPE hash COUNT 1000",
            b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nh\r\n",
        ),
        ("RPOP l", b"$1\r\na\r\n"),
        ("HDEL h f", b":1\r\n"),
        ("SPOP s", b"$1\r\nm\r\n"),
        ("ZPOPMAX z", b"*2\r\n$1\r\nm\r\n$1\r\n1\r\n"),
        ("EXISTS l h s z", b":0\r\n"),
        ("RPUSH l a b", b":2\r\n"),
        ("LTRIM l 5 9", b"+OK\r\n"),
        ("ZADD z 1 a 2 b", b":2\r\n"),
        ("ZREMRANGEBYSCORE z -inf +inf", b":2\r\n"),
        ("SADD s a", b":1\r\n"),
        ("SMOVE s t a", b":1\r\n"),
        ("EXISTS l z s", b":0\r\n"),
        ("TYPE t", b"+set\r\n"),
        ("TYPE nothing", b"+none\r\n"),
    ] {
        c.roundtrip(&resp(&args(command)), reply).await;
    }
}

#[tokio::test]
async fn scores_and_float_fields_use_the_shortest_round_trip_form() {
    // Redis 7.2+ prints doubles in their shortest round-trip form (7.0 printed %.17g, e.g.
    // 0.10000000000000001); stmd follows 7.2, whose version it reports.
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    for (command, reply) in [
        ("ZADD z 0.1 f 1e20 h 123456789012345678 i", &b":3\r\n"[..]),
        (
            "ZRANGE z 0 -1 WITHSCORES",
            b"*6\r\n$1\r\nf\r\n$3\r\n0.1\r\n$1\r\ni\r\n$22\r\n1.2345678901234568e+17\r\n$1\r\nh\r\n$5\r\n1e+20\r\n",
        ),
        ("ZINCRBY z 0.2 f", b"$19\r\n0.30000000000000004\r\n"),
        ("HINCRBYFLOAT h n 10.5", b"$4\r\n10.5\r\n"),
        ("HINCRBYFLOAT h n 0.1", b"$4\r\n10.6\r\n"),
        ("HINCRBYFLOAT h n -10.6", b"$1\r\n0\r\n"),
        ("HINCRBYFLOAT h n 5.0e3", b"$4\r\n5000\r\n"),
    ] {
        c.roundtrip(&resp(&args(command)), reply).await;
    }
}

#[tokio::test]
async fn random_picks_respect_their_count_rules() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let members: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    let _: i64 = con.sadd("s", &members).await.expect("sadd");
    let distinct: Vec<String> = con
        .srandmember_multiple("s", 15)
        .await
        .expect("srandmember");
    assert_eq!(distinct.iter().collect::<HashSet<_>>().len(), 15);
    let capped: Vec<String> = con
        .srandmember_multiple("s", 50)
        .await
        .expect("srandmember");
    assert_eq!(capped.len(), 20, "a positive count never exceeds the set");
    let repeated: Vec<String> = redis::cmd("SRANDMEMBER")
        .arg("s")
        .arg(-50)
        .query_async(&mut con)
        .await
        .expect("neg");
    assert_eq!(
        repeated.len(),
        50,
        "a negative count returns exactly |count|, repeats allowed"
    );
    assert!(repeated.iter().all(|m| members.contains(m)));
    let popped: HashSet<String> = redis::cmd("SPOP")
        .arg("s")
        .arg(8)
        .query_async(&mut con)
        .await
        .expect("spop");
    assert_eq!(popped.len(), 8);
    let left: i64 = con.scard("s").await.expect("scard");
    assert_eq!(left, 12);

    let _: () = con
        .hset_multiple("h", &[("a", "1"), ("b", "2"), ("c", "3")])
        .await
        .expect("hset");
    let flat: Vec<String> = redis::cmd("HRANDFIELD")
        .arg("h")
        .arg(-4)
        .arg("WITHVALUES")
        .query_async(&mut con)
        .await
        .expect("hrandfield");
    assert_eq!(flat.len(), 8, "RESP2 flattens field, value pairs");
    for pair in flat.chunks(2) {
        assert_eq!(
            pair[1],
            ((pair[0].as_bytes()[0] - b'a' + b'1') as char).to_string()
        );
    }
    let mut c3 = raw3(&server).await;
    // RESP3 nests each field with its value (Redis 7): *2 of *2 [field, value].
    c3.send(&resp(&args("HRANDFIELD h -2 WITHVALUES"))).await;
    let reply = c3.read_n(4 + 2 * 18).await;
    assert_eq!(&reply[..4], b"*2\r\n");
    for pair in reply[4..].chunks(18) {
        let (field, value) = (pair[8], pair[15]);
        assert_eq!(&pair[..8], b"*2\r\n$1\r\n");
        assert_eq!(
            value,
            field - b'a' + b'1',
            "{:?}",
            String::from_utf8_lossy(pair)
        );
    }
}

#[tokio::test]
async fn collection_cursors_return_every_member_exactly_once() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let n = 1000;
    let fields: Vec<(String, String)> = (0..n).map(|i| (format!("f{i}"), i.to_string())).collect();
    let _: () = con.hset_multiple("h", &fields).await.expect("hset");
    let members: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
    let _: i64 = con.sadd("s", &members).await.expect("sadd");
    let scored: Vec<(f64, String)> = (0..n).map(|i| (i as f64, format!("m{i}"))).collect();
    let _: i64 = con.zadd_multiple("z", &scored).await.expect("zadd");
    for (command, key, step) in [("HSCAN", "h", 2), ("SSCAN", "s", 1), ("ZSCAN", "z", 2)] {
        let mut seen: Vec<String> = Vec::new();
        let mut cursor = 0u64;
        let mut calls = 0;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd(command)
                .arg(key)
                .arg(cursor)
                .arg("COUNT")
                .arg(37)
                .query_async(&mut con)
                .await
                .expect("scan");
            seen.extend(batch.into_iter().step_by(step));
            calls += 1;
            if next == 0 {
                break;
            }
            cursor = next;
            // Writes between calls must not make the scan skip members present throughout.
            let _: i64 = con.sadd("s", format!("extra{calls}")).await.expect("sadd");
        }
        assert!(
            calls > 10,
            "{command} should take several calls, took {calls}"
        );
        let unique: HashSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "{command} repeated a member");
        let prefix = if key == "h" { "f" } else { "m" };
        let originals = seen.iter().filter(|m| m.starts_with(prefix)).count();
        assert_eq!(originals, n, "{command} missed members");
    }
}

#[tokio::test]
async fn wrong_arity_errors_name_the_command() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    for (command, name) in [
        ("LPUSH k", "lpush"),
        ("HSET h f", "hset"),
        ("HMSET h f v x", "hmset"),
        ("SINTER", "sinter"),
        ("ZADD z", "zadd"),
        ("LPOP k 1 2", "lpop"),
        ("ZRANGE z 0", "zrange"),
        ("BLMOVE a b LEFT RIGHT", "blmove"),
    ] {
        let expected = format!("-ERR wrong number of arguments for '{name}' command\r\n");
        c.roundtrip(&resp(&args(command)), expected.as_bytes())
            .await;
    }
    let value: Value = redis::cmd("ZRANGE")
        .arg("nokey")
        .arg(0)
        .arg(-1)
        .query_async(&mut server.client().await)
        .await
        .expect("zrange");
    assert_eq!(value, Value::Array(vec![]));
}
