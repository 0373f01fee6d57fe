//! Lazy freeing: UNLINK and FLUSHALL/FLUSHDB ASYNC give the memory back on a background thread,
//! and INFO counts what is pending and what was freed (`lazyfree_pending_objects`,
//! `lazyfreed_objects`) as redis-server does for the same commands. The stmd binary runs in its
//! own process, so `used_memory` is its dataset's alone.

use crate::common;

use common::real_redis::RealRedis;
use common::Binary;
use std::time::{Duration, Instant};

type Con = redis::aio::MultiplexedConnection;

async fn info_field(con: &mut Con, field: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(con)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in INFO memory"))
        .trim()
        .parse()
        .unwrap()
}

/// Waits (up to 20 s) until nothing is pending, and returns `lazyfreed_objects` then.
async fn settled_freed(con: &mut Con) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    while info_field(con, "lazyfree_pending_objects").await != 0 {
        assert!(
            Instant::now() < deadline,
            "lazy frees still pending after 20 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    info_field(con, "lazyfreed_objects").await
}

/// A set of `n` members of 24 bytes (a hash table in Redis and stmd: far past 64 allocations).
async fn big_set(con: &mut Con, key: &str, n: usize) {
    for batch in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let members: Vec<String> = batch.iter().map(|i| format!("member-{i:017}")).collect();
        let _: i64 = redis::cmd("SADD")
            .arg(key)
            .arg(&members)
            .query_async(con)
            .await
            .unwrap();
    }
}

/// The same commands on stmd and on redis-server leave the same lazyfree counters: a big UNLINK
/// counts one object, a small UNLINK and a DEL none, FLUSHALL/FLUSHDB ASYNC one per key, a SYNC
/// flush none.
async fn lazyfree_steps(con: &mut Con) -> Vec<u64> {
    let mut seen = vec![settled_freed(con).await];
    big_set(con, "big", 20_000).await;
    let _: () = redis::cmd("SET")
        .arg("small")
        .arg("v")
        .query_async(con)
        .await
        .unwrap();
    let unlinked: i64 = redis::cmd("UNLINK")
        .arg("big")
        .arg("small")
        .arg("missing")
        .query_async(con)
        .await
        .unwrap();
    assert_eq!(unlinked, 2);
    seen.push(settled_freed(con).await);
    big_set(con, "big", 20_000).await;
    let deleted: i64 = redis::cmd("DEL").arg("big").query_async(con).await.unwrap();
    assert_eq!(deleted, 1);
    seen.push(settled_freed(con).await);
    for db in [0, 1] {
        let _: () = redis::cmd("SELECT").arg(db).query_async(con).await.unwrap();
        for i in 0..(100 + db * 50) {
            let _: () = redis::cmd("SET")
                .arg(format!("k{i}"))
                .arg(i)
                .query_async(con)
                .await
                .unwrap();
        }
    }
    let _: () = redis::cmd("FLUSHDB")
        .arg("ASYNC")
        .query_async(con)
        .await
        .unwrap(); // db 1: 150 keys
    let size: i64 = redis::cmd("DBSIZE").query_async(con).await.unwrap();
    assert_eq!(
        size, 0,
        "FLUSHDB ASYNC empties the database before it answers"
    );
    seen.push(settled_freed(con).await);
    let _: () = redis::cmd("FLUSHALL")
        .arg("ASYNC")
        .query_async(con)
        .await
        .unwrap(); // db 0: 100 keys
    seen.push(settled_freed(con).await);
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async(con)
        .await
        .unwrap();
    let _: () = redis::cmd("FLUSHALL")
        .arg("SYNC")
        .query_async(con)
        .await
        .unwrap();
    seen.push(settled_freed(con).await);
    seen
}

#[tokio::test]
async fn lazyfree_counters_follow_redis() {
    let redis = RealRedis::start();
    let stmd = Binary::start(&[]);
    let mut theirs = redis.client().await;
    let mut mine = stmd.client().await;
    let expected = lazyfree_steps(&mut theirs).await;
    assert_eq!(
        expected,
        vec![0, 1, 1, 151, 251, 251],
        "redis-server's counters"
    );
    assert_eq!(lazyfree_steps(&mut mine).await, expected);
}

#[tokio::test]
async fn unlink_and_flush_async_give_memory_back() {
    let stmd = Binary::start(&[]);
    let mut con = stmd.client().await;
    let empty = info_field(&mut con, "used_memory").await;
    big_set(&mut con, "big", 200_000).await;
    let full = info_field(&mut con, "used_memory").await;
    assert!(
        full > empty + 4_000_000,
        "200,000 members take memory: {empty} -> {full}"
    );
    let unlinked: i64 = redis::cmd("UNLINK")
        .arg("big")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(unlinked, 1);
    assert_eq!(settled_freed(&mut con).await, 1);
    let after = info_field(&mut con, "used_memory").await;
    assert!(
        after < empty + (full - empty) / 4,
        "UNLINK gives the set's memory back: {empty} -> {full} -> {after}"
    );

    big_set(&mut con, "a", 100_000).await;
    big_set(&mut con, "b", 100_000).await;
    let full = info_field(&mut con, "used_memory").await;
    let _: () = redis::cmd("FLUSHALL")
        .arg("ASYNC")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(settled_freed(&mut con).await, 3);
    let after = info_field(&mut con, "used_memory").await;
    assert!(
        after < empty + (full - empty) / 4,
        "FLUSHALL ASYNC gives the sets' memory back: {empty} -> {full} -> {after}"
    );
}
