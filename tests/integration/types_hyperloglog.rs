//! HyperLogLog and LCS against a real redis-server: the same commands go to both servers and the
//! replies must be equal, including the HLL values' bytes (GET) through thousands of elements,
//! the sparse-to-dense promotion, merges of sparse and dense values, Redis-made values stored in
//! stmd, and LCS over many generated string pairs.

use crate::common;

use common::real_redis::RealRedis;
use common::Binary;
use redis::aio::MultiplexedConnection as Conn;
use redis::Value;

/// A reply, or the error's code and text, so errors compare too.
async fn reply(con: &mut Conn, cmd: &redis::Cmd) -> Result<Value, String> {
    cmd.query_async(con)
        .await
        .map_err(|e| format!("{:?} {:?}", e.code(), e.detail()))
}

/// Runs `cmd` on both servers, asserts equal replies and returns Redis's.
async fn both(stmd: &mut Conn, redis: &mut Conn, cmd: &redis::Cmd) -> Result<Value, String> {
    let expected = reply(redis, cmd).await;
    let got = reply(stmd, cmd).await;
    assert_eq!(got, expected, "{cmd:?}");
    expected
}

fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

fn pfadd(key: &str, elements: impl IntoIterator<Item = String>) -> redis::Cmd {
    let mut c = redis::cmd("PFADD");
    c.arg(key);
    for e in elements {
        c.arg(e);
    }
    c
}

async fn bytes(con: &mut Conn, key: &str) -> Vec<u8> {
    match reply(con, &cmd(&["GET", key])).await {
        Ok(Value::BulkString(b)) => b,
        other => panic!("GET {key}: {other:?}"),
    }
}

/// Small deterministic generator (xorshift), so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[tokio::test]
async fn hll_bytes_and_counts_match_redis_through_growth() {
    let redis_server = RealRedis::start();
    let mut redis = redis_server.client().await;
    let server = Binary::start(&[]);
    let mut stmd = server.client().await;
    // Default limit (3000 bytes): sparse, then dense around a thousand elements.
    let mut saw_dense = false;
    let mut added = 0;
    for batch in 0..60 {
        let size = if batch < 20 { 7 } else { 211 };
        let elements = (added..added + size).map(|i| format!("element:{i}"));
        added += size;
        both(&mut stmd, &mut redis, &pfadd("h", elements))
            .await
            .unwrap();
        assert_eq!(
            bytes(&mut stmd, "h").await,
            bytes(&mut redis, "h").await,
            "after {added}"
        );
        let count = both(&mut stmd, &mut redis, &cmd(&["PFCOUNT", "h"])).await;
        assert!(matches!(count, Ok(Value::Int(n)) if n > 0));
        // The cached cardinality is now written into the value.
        assert_eq!(
            bytes(&mut stmd, "h").await,
            bytes(&mut redis, "h").await,
            "after {added}"
        );
        let encoding = both(&mut stmd, &mut redis, &cmd(&["PFDEBUG", "ENCODING", "h"])).await;
        saw_dense |= encoding == Ok(Value::SimpleString("dense".into()));
    }
    assert!(saw_dense, "{added} elements never made the value dense");
    // Adding elements already counted changes nothing.
    let again = (0..50).map(|i| format!("element:{i}"));
    assert_eq!(
        both(&mut stmd, &mut redis, &pfadd("h", again)).await,
        Ok(Value::Int(0))
    );
    both(&mut stmd, &mut redis, &cmd(&["PFDEBUG", "GETREG", "h"]))
        .await
        .unwrap();

    // A higher limit keeps 12000 elements sparse (long runs of equal registers merge into VAL
    // opcodes of up to 4); TODENSE then agrees too.
    for con in [&mut stmd, &mut redis] {
        reply(
            con,
            &cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "60000"]),
        )
        .await
        .unwrap();
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..24 {
        let elements: Vec<String> = (0..500).map(|_| format!("{:x}", rng.next())).collect();
        both(&mut stmd, &mut redis, &pfadd("s", elements))
            .await
            .unwrap();
        assert_eq!(bytes(&mut stmd, "s").await, bytes(&mut redis, "s").await);
        both(&mut stmd, &mut redis, &cmd(&["PFCOUNT", "s"]))
            .await
            .unwrap();
    }
    assert_eq!(
        both(&mut stmd, &mut redis, &cmd(&["PFDEBUG", "ENCODING", "s"])).await,
        Ok(Value::SimpleString("sparse".into()))
    );
    both(&mut stmd, &mut redis, &cmd(&["PFDEBUG", "DECODE", "s"]))
        .await
        .unwrap();
    both(&mut stmd, &mut redis, &cmd(&["PFDEBUG", "TODENSE", "s"]))
        .await
        .unwrap();
    assert_eq!(bytes(&mut stmd, "s").await, bytes(&mut redis, "s").await);
}

#[tokio::test]
async fn hll_merges_of_sparse_and_dense_match_redis() {
    let redis_server = RealRedis::start();
    let mut redis = redis_server.client().await;
    let server = Binary::start(&[]);
    let mut stmd = server.client().await;
    let sizes = [("tiny", 3), ("small", 150), ("mid", 700), ("big", 5000)];
    for (key, size) in sizes {
        for chunk in (0..size).collect::<Vec<_>>().chunks(500) {
            let elements = chunk.iter().map(|i| format!("{key}-{i}"));
            both(&mut stmd, &mut redis, &pfadd(key, elements))
                .await
                .unwrap();
        }
        both(&mut stmd, &mut redis, &cmd(&["PFDEBUG", "ENCODING", key]))
            .await
            .unwrap();
    }
    let names: Vec<&str> = sizes.iter().map(|(k, _)| *k).collect();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i..] {
            let dest = format!("m-{a}-{b}");
            both(&mut stmd, &mut redis, &cmd(&["PFMERGE", &dest, a, b]))
                .await
                .unwrap();
            assert_eq!(
                bytes(&mut stmd, &dest).await,
                bytes(&mut redis, &dest).await,
                "{dest}"
            );
            both(&mut stmd, &mut redis, &cmd(&["PFCOUNT", &dest]))
                .await
                .unwrap();
            both(&mut stmd, &mut redis, &cmd(&["PFCOUNT", a, b, "nokey"]))
                .await
                .unwrap();
            // Merging into an existing source.
            let into = format!("into-{a}-{b}");
            both(&mut stmd, &mut redis, &cmd(&["PFMERGE", &into, a]))
                .await
                .unwrap();
            both(&mut stmd, &mut redis, &cmd(&["PFMERGE", &into, b]))
                .await
                .unwrap();
            assert_eq!(
                bytes(&mut stmd, &into).await,
                bytes(&mut redis, &into).await,
                "{into}"
            );
        }
    }
    both(
        &mut stmd,
        &mut redis,
        &cmd(&["PFCOUNT", "tiny", "small", "mid", "big"]),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn redis_made_hll_values_work_in_stmd() {
    let redis_server = RealRedis::start();
    let mut redis = redis_server.client().await;
    let server = Binary::start(&[]);
    let mut stmd = server.client().await;
    for (key, size) in [("sparse", 80usize), ("dense", 4000)] {
        for chunk in (0..size).collect::<Vec<_>>().chunks(500) {
            let elements = chunk.iter().map(|i| format!("r{i}"));
            reply(&mut redis, &pfadd(key, elements)).await.unwrap();
        }
        let made = bytes(&mut redis, key).await;
        let set = redis::cmd("SET").arg(key).arg(&made).clone();
        reply(&mut stmd, &set).await.unwrap();
        both(&mut stmd, &mut redis, &cmd(&["PFCOUNT", key]))
            .await
            .unwrap();
        let more = (0..300).map(|i| format!("more{i}"));
        both(&mut stmd, &mut redis, &pfadd(key, more))
            .await
            .unwrap();
        both(&mut stmd, &mut redis, &cmd(&["PFCOUNT", key]))
            .await
            .unwrap();
        assert_eq!(
            bytes(&mut stmd, key).await,
            bytes(&mut redis, key).await,
            "{key}"
        );
    }
    // And the other way: stmd's values are valid HLLs for Redis.
    let elements = (0..2500).map(|i| format!("s{i}"));
    both(&mut stmd, &mut redis, &pfadd("mine", elements))
        .await
        .unwrap();
    let made = bytes(&mut stmd, "mine").await;
    let set = redis::cmd("SET").arg("copy").arg(&made).clone();
    both(&mut stmd, &mut redis, &set).await.unwrap();
    both(&mut stmd, &mut redis, &cmd(&["PFCOUNT", "copy"]))
        .await
        .unwrap();
}

#[tokio::test]
async fn lcs_matches_redis_on_generated_strings() {
    let redis_server = RealRedis::start();
    let mut redis = redis_server.client().await;
    let server = Binary::start(&[]);
    let mut stmd = server.client().await;
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for round in 0..150 {
        // Small alphabets give many and long common runs.
        let alphabet = 2 + round % 5;
        let mut text = |len: u64| -> Vec<u8> {
            (0..len)
                .map(|_| b'a' + (rng.next() % alphabet) as u8)
                .collect()
        };
        let (la, lb) = (round % 40, (round * 7) % 53);
        let (a, b) = (text(la), text(lb));
        reply(
            &mut redis,
            redis::cmd("MSET").arg("a").arg(&a).arg("b").arg(&b),
        )
        .await
        .unwrap();
        reply(
            &mut stmd,
            redis::cmd("MSET").arg("a").arg(&a).arg("b").arg(&b),
        )
        .await
        .unwrap();
        let min = (round % 4).to_string();
        for args in [
            vec!["LCS", "a", "b"],
            vec!["LCS", "b", "a", "LEN"],
            vec!["LCS", "a", "b", "IDX"],
            vec!["LCS", "a", "b", "IDX", "WITHMATCHLEN"],
            vec!["LCS", "b", "a", "IDX", "MINMATCHLEN", &min, "WITHMATCHLEN"],
        ] {
            both(&mut stmd, &mut redis, &cmd(&args)).await.unwrap();
        }
    }
}
