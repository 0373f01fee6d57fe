//! `maxmemory` and `maxmemory-policy`: OOM refusals, eviction per policy, MULTI/EXEC, STM entries.
//! Each test runs the real binary in its own process, so used memory is that server's alone.

use crate::common;

use common::stm::{info_field, int, ok, run};
use common::Binary;
use redis::aio::MultiplexedConnection;
use std::time::Duration;

const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// SETs `prefix:0..n` to 1 KiB values (with `EX ttl` when given), pipelined.
async fn fill(con: &mut MultiplexedConnection, prefix: &str, n: usize, ttl: Option<u64>) {
    let value = vec![b'v'; 1024];
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let mut pipe = redis::pipe();
        for i in chunk {
            let cmd = pipe.cmd("SET").arg(format!("{prefix}:{i}")).arg(&value);
            if let Some(ttl) = ttl {
                cmd.arg("EX").arg(ttl);
            }
            cmd.ignore();
        }
        pipe.query_async::<()>(con).await.expect("fill");
    }
}

/// How many of `prefix:0..n` exist.
async fn surviving(con: &mut MultiplexedConnection, prefix: &str, n: usize) -> usize {
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.cmd("EXISTS").arg(format!("{prefix}:{i}"));
    }
    let found: Vec<i64> = pipe.query_async(con).await.expect("exists");
    found.iter().filter(|&&e| e == 1).count()
}

async fn used_memory(con: &mut MultiplexedConnection) -> i64 {
    info_field(con, "memory", "used_memory").await
}

/// Sets `maxmemory` to the memory used now: any growth from here on is over the limit.
async fn limit_to_current_use(con: &mut MultiplexedConnection) -> i64 {
    let used = used_memory(con).await;
    ok(con, &["CONFIG", "SET", "maxmemory", &used.to_string()]).await;
    used
}

#[tokio::test]
async fn noeviction_refuses_growing_commands_but_reads_and_deletes_work() {
    let server = Binary::start(&[]);
    let mut con = server.client().await;
    // The limit: what the empty server uses plus half the data. (`used / 2` is not: the empty
    // server's own ~4 MB is about this fill's size, so deleting it all may leave it over.)
    let empty = used_memory(&mut con).await;
    fill(&mut con, "k", 4000, None).await;
    let used = used_memory(&mut con).await;
    let limit = empty + (used - empty) / 2;
    ok(
        &mut con,
        &["CONFIG", "SET", "maxmemory", &limit.to_string()],
    )
    .await;

    for words in [
        &["SET", "new", "v"][..],
        &["SET", "k:1", "v"],
        &["INCR", "counter"],
        &["LPUSH", "list", "a"],
        &["HSET", "h", "f", "v"],
    ] {
        assert_eq!(
            run(&mut con, words).await,
            Err(OOM.to_string()),
            "{words:?}"
        );
    }
    assert_eq!(
        run(&mut con, &["EXISTS", "new"]).await,
        Ok(redis::Value::Int(0))
    );
    assert_eq!(
        int(&ok(&mut con, &["STRLEN", "k:1"]).await),
        1024,
        "SET k:1 changed nothing"
    );
    ok(&mut con, &["GET", "k:5"]).await;
    assert_eq!(int(&ok(&mut con, &["EXPIRE", "k:5", "100"]).await), 1);
    assert_eq!(int(&ok(&mut con, &["DEL", "k:5"]).await), 1);
    assert_eq!(info_field(&mut con, "stats", "evicted_keys").await, 0);
    let info = common::stm::text(&ok(&mut con, &["INFO", "memory"]).await);
    assert!(info.contains("maxmemory_policy:noeviction\r\n"), "{info}");
    assert!(info.contains(&format!("maxmemory:{limit}\r\n")), "{info}");

    // Deleting what was stored makes room again.
    let mut pipe = redis::pipe();
    for i in 0..4000 {
        pipe.cmd("DEL").arg(format!("k:{i}")).ignore();
    }
    pipe.query_async::<()>(&mut con).await.expect("del");
    ok(&mut con, &["SET", "new", "v"]).await;
    assert_eq!(common::stm::text(&ok(&mut con, &["GET", "new"]).await), "v");
}

#[tokio::test]
async fn over_the_limit_multi_refuses_to_queue_and_exec_aborts() {
    let server = Binary::start(&[]);
    let mut con = server.client().await;
    let mut raw = server.raw().await;
    fill(&mut con, "k", 500, None).await;
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "1"]).await;
    raw.roundtrip(b"MULTI\r\n", b"+OK\r\n").await;
    let oom = format!("-{OOM}\r\n");
    raw.roundtrip(b"SET a 1\r\n", oom.as_bytes()).await;
    raw.roundtrip(b"GET k:1\r\n", oom.as_bytes()).await;
    raw.roundtrip(
        b"EXEC\r\n",
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    )
    .await;

    // Queued under the limit, executed over it: EXEC itself is refused.
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "0"]).await;
    raw.roundtrip(b"MULTI\r\n", b"+OK\r\n").await;
    raw.roundtrip(b"SET a 1\r\n", b"+QUEUED\r\n").await;
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "1"]).await;
    let abort = format!("-EXECABORT Transaction discarded because of: {OOM}\r\n");
    raw.roundtrip(b"EXEC\r\n", abort.as_bytes()).await;
    assert_eq!(int(&ok(&mut con, &["EXISTS", "a"]).await), 0);

    // A transaction of reads still runs.
    raw.roundtrip(b"MULTI\r\n", b"+OK\r\n").await;
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "0"]).await;
    raw.roundtrip(b"EXISTS k:1\r\n", b"+QUEUED\r\n").await;
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "1"]).await;
    raw.roundtrip(b"EXEC\r\n", b"*1\r\n:1\r\n").await;
}

#[tokio::test]
async fn stm_capture_over_the_limit_is_refused_and_writes_nothing() {
    let server = Binary::start(&[]);
    let mut con = server.client().await;
    fill(&mut con, "k", 500, None).await;
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "1"]).await;
    let capture = [
        "STM.CAPTURE",
        "USER",
        "u1",
        "CHANNEL",
        "c1",
        "SERVER",
        "s1",
        "MSG",
        "user",
        "-",
        "hi",
        "REPLY",
        "3",
        "-",
        "Nova",
        "hello",
    ];
    assert_eq!(run(&mut con, &capture).await, Err(OOM.to_string()));
    assert_eq!(info_field(&mut con, "stm", "stm_entries").await, 0);
    assert_eq!(info_field(&mut con, "stm", "stm_captures").await, 0);
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_ensure_ops").await,
        0
    );
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "0"]).await;
    ok(&mut con, &capture).await;
    assert_eq!(info_field(&mut con, "stm", "stm_entries").await, 2);
}

#[tokio::test]
async fn allkeys_lru_keeps_the_keys_that_are_read() {
    let server = Binary::start(&["--maxmemory-policy", "allkeys-lru"]);
    let mut con = server.client().await;
    fill(&mut con, "cold", 3000, None).await;
    // The LRU clock counts seconds: the hot keys' reads must fall in a later second.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(int(&ok(&mut con, &["OBJECT", "IDLETIME", "cold:0"]).await) >= 1);
    let mut pipe = redis::pipe();
    for i in 0..300 {
        pipe.cmd("GET").arg(format!("cold:{i}")).ignore();
    }
    pipe.query_async::<()>(&mut con)
        .await
        .expect("read hot keys");
    limit_to_current_use(&mut con).await;
    fill(&mut con, "new", 2000, None).await;

    let hot = surviving(&mut con, "cold", 300).await;
    let cold = surviving(&mut con, "cold", 3000).await - hot;
    let evicted = info_field(&mut con, "stats", "evicted_keys").await;
    assert!(evicted >= 1500, "only {evicted} keys evicted");
    assert!(hot >= 240, "only {hot} of 300 recently read keys survived");
    assert!(cold <= 1350, "{cold} of 2700 cold keys survived");
}

#[tokio::test]
async fn volatile_lru_evicts_only_keys_with_a_ttl_then_refuses() {
    let server = Binary::start(&["--maxmemory-policy", "volatile-lru"]);
    let mut con = server.client().await;
    fill(&mut con, "persistent", 1000, None).await;
    fill(&mut con, "volatile", 1000, Some(3600)).await;
    limit_to_current_use(&mut con).await;
    let value = vec![b'v'; 1024];
    let mut written = 0;
    let refused = loop {
        let reply: redis::RedisResult<()> = redis::cmd("SET")
            .arg(format!("more:{written}"))
            .arg(&value)
            .query_async(&mut con)
            .await;
        match reply {
            Ok(()) => written += 1,
            Err(e) => break e,
        }
        assert!(written < 5000, "never refused");
    };
    assert_eq!(refused.code(), Some("OOM"));
    assert_eq!(surviving(&mut con, "persistent", 1000).await, 1000);
    assert_eq!(surviving(&mut con, "more", written).await, written);
    let volatile = surviving(&mut con, "volatile", 1000).await;
    assert!(
        volatile <= 100,
        "{volatile} keys with a TTL left, yet a write was refused"
    );
    assert!(written >= 500, "refused after only {written} writes");
    let evicted = info_field(&mut con, "stats", "evicted_keys").await;
    assert_eq!(evicted as usize, 1000 - volatile);
}

#[tokio::test]
async fn volatile_ttl_evicts_the_soonest_to_expire_first() {
    let server = Binary::start(&["--maxmemory-policy", "volatile-ttl"]);
    let mut con = server.client().await;
    fill(&mut con, "short", 1500, Some(1000)).await;
    fill(&mut con, "long", 1500, Some(100_000)).await;
    limit_to_current_use(&mut con).await;
    fill(&mut con, "plain", 700, None).await;
    let short = surviving(&mut con, "short", 1500).await;
    let long = surviving(&mut con, "long", 1500).await;
    assert_eq!(surviving(&mut con, "plain", 700).await, 700);
    assert!(short <= 1100, "{short} of 1500 short-TTL keys survived");
    assert!(long >= 1400, "only {long} of 1500 long-TTL keys survived");
}

#[tokio::test]
async fn allkeys_random_keeps_used_memory_near_the_limit() {
    let server = Binary::start(&["--maxmemory-policy", "allkeys-random"]);
    let mut con = server.client().await;
    fill(&mut con, "k", 1000, None).await;
    let limit = used_memory(&mut con).await + 2 * 1024 * 1024;
    ok(
        &mut con,
        &["CONFIG", "SET", "maxmemory", &limit.to_string()],
    )
    .await;
    fill(&mut con, "more", 12_000, None).await;
    let used = used_memory(&mut con).await;
    let slack = 256 * 1024;
    assert!(
        used <= limit + slack,
        "used {used} > maxmemory {limit} + {slack}"
    );
    assert!(info_field(&mut con, "stats", "evicted_keys").await > 5000);
    ok(&mut con, &["SET", "last", "v"]).await;
}

#[tokio::test]
async fn an_evicted_key_counts_as_changed_for_watch() {
    let server = Binary::start(&["--maxmemory-policy", "allkeys-random"]);
    let mut con = server.client().await;
    let mut raw = server.raw().await;
    ok(&mut con, &["SET", "watched", "1"]).await;
    raw.roundtrip(b"WATCH watched\r\n", b"+OK\r\n").await;
    raw.roundtrip(b"MULTI\r\n", b"+OK\r\n").await;
    raw.roundtrip(b"GET watched\r\n", b"+QUEUED\r\n").await;
    // A limit no data fits under: the next write evicts every key, then is refused.
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "1"]).await;
    assert_eq!(
        run(&mut con, &["SET", "other", "v"]).await,
        Err(OOM.to_string())
    );
    assert_eq!(int(&ok(&mut con, &["DBSIZE"]).await), 0);
    assert!(info_field(&mut con, "stats", "evicted_keys").await >= 1);
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "0"]).await;
    raw.roundtrip(b"EXEC\r\n", b"*-1\r\n").await;
}

#[tokio::test]
async fn flags_and_config_set_use_redis_formats_and_errors() {
    let server = Binary::start(&[
        "--maxmemory",
        "100mb",
        "--maxmemory-policy",
        "volatile-ttl",
        "--maxmemory-samples",
        "10",
    ]);
    let mut con = server.client().await;
    let get = |v: redis::Value| common::stm::strings(&v);
    // CONFIG GET's order is not Redis's contract (its dictionary's order): compared as pairs.
    let mut pairs: Vec<(String, String)> =
        get(ok(&mut con, &["CONFIG", "GET", "maxmemory*"]).await)
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect();
    pairs.sort();
    let expected = [
        ("maxmemory", "104857600"),
        // Redis's other maxmemory options, accepted and reported (src/config/inert.rs).
        ("maxmemory-clients", "0"),
        ("maxmemory-eviction-tenacity", "10"),
        ("maxmemory-policy", "volatile-ttl"),
        ("maxmemory-samples", "10"),
    ];
    assert_eq!(pairs, expected.map(|(k, v)| (k.to_string(), v.to_string())));
    let info = common::stm::text(&ok(&mut con, &["INFO", "memory"]).await);
    assert!(
        info.contains(
            "maxmemory:104857600\r\nmaxmemory_human:100.00M\r\nmaxmemory_policy:volatile-ttl\r\n"
        ),
        "{info}"
    );
    ok(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "2GB",
            "maxmemory-policy",
            "ALLKEYS-LRU",
        ],
    )
    .await;
    assert_eq!(
        get(ok(
            &mut con,
            &["CONFIG", "GET", "maxmemory", "maxmemory-policy"]
        )
        .await),
        ["maxmemory", "2147483648", "maxmemory-policy", "allkeys-lru"]
    );
    let failed = |name: &str, why: &str| {
        Err(format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
        ))
    };
    for bad in ["1.5gb", "-1", "abc"] {
        assert_eq!(
            run(&mut con, &["CONFIG", "SET", "maxmemory", bad]).await,
            failed("maxmemory", "argument must be a memory value")
        );
    }
    assert_eq!(
        run(
            &mut con,
            &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]
        )
        .await,
        failed(
            "maxmemory-policy",
            "argument(s) must be one of the following: volatile-lru, volatile-random, \
             volatile-ttl, allkeys-lru, allkeys-random, noeviction"
        )
    );
    assert_eq!(
        run(&mut con, &["CONFIG", "SET", "maxmemory-samples", "0"]).await,
        failed(
            "maxmemory-samples",
            "argument must be between 1 and 2147483647 inclusive"
        )
    );
    assert_eq!(
        get(ok(
            &mut con,
            &["CONFIG", "GET", "maxmemory", "maxmemory-samples"]
        )
        .await),
        ["maxmemory", "2147483648", "maxmemory-samples", "10"],
        "refused values change nothing"
    );
}

#[tokio::test]
async fn evicted_stm_entries_leave_the_stm_index() {
    let server = Binary::start(&["--maxmemory-policy", "allkeys-random"]);
    let mut con = server.client().await;
    // 2 KiB messages: the entries then hold enough memory to make room for the fill's pipelined
    // commands in flight (entries of a few bytes' text are too small to, since they take ~200
    // bytes each, and everything, entries included, would be evicted first).
    let message = "hello ".repeat(350);
    for i in 0..300 {
        let (user, channel) = (format!("u{}", i % 10), format!("c{i}"));
        common::stm::capture(&mut con, &user, &channel, "s1", "3", "-", &message).await;
    }
    assert_eq!(info_field(&mut con, "stm", "stm_entries").await, 600);
    limit_to_current_use(&mut con).await;
    fill(&mut con, "k", 1000, None).await;
    // No eviction after this point (the background one may still run while the machine is
    // loaded): the keys read below and the index then describe the same keyspace.
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "0"]).await;

    let stm_keys: Vec<String> = redis::cmd("KEYS")
        .arg("shortterm:*")
        .query_async(&mut con)
        .await
        .expect("keys");
    assert!(
        stm_keys.len() < 550,
        "only {} of 600 entries evicted",
        600 - stm_keys.len()
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_entries").await,
        stm_keys.len() as i64
    );
    assert_eq!(
        info_field(&mut con, "stm", "stm_persist_forget_ops").await,
        0,
        "no row changes"
    );
    // STM.RECENT lists only entries that are still there.
    for user in 0..10 {
        let recent = ok(
            &mut con,
            &[
                "STM.RECENT",
                "USER",
                &format!("u{user}"),
                "LIMIT",
                "100",
                "FORMAT",
                "JSON",
            ],
        )
        .await;
        let entries: serde_json::Value =
            serde_json::from_str(&common::stm::text(&recent)).expect("json");
        let listed = entries.as_array().expect("array");
        let live = stm_keys
            .iter()
            .filter(|k| k.starts_with(&format!("shortterm:user:u{user}:")))
            .count();
        assert_eq!(listed.len(), live, "user u{user}");
    }
}

#[tokio::test]
async fn a_limit_far_below_the_data_is_reached_in_the_background_without_refusing() {
    let server = Binary::start(&["--maxmemory-policy", "allkeys-random"]);
    let mut con = server.client().await;
    let start = used_memory(&mut con).await;
    fill(&mut con, "k", 20_000, None).await;
    // Half the data must go (emptied hash tables keep their size, so not all of it could).
    let limit = (start + used_memory(&mut con).await) / 2;
    ok(
        &mut con,
        &["CONFIG", "SET", "maxmemory", &limit.to_string()],
    )
    .await;
    // About 10,000 keys must go; one write evicts for at most a millisecond, then runs.
    ok(&mut con, &["SET", "one", "v"]).await;
    let right_after = info_field(&mut con, "stats", "evicted_keys").await;
    assert!(
        right_after < 9_000,
        "{right_after} keys evicted by one write"
    );
    // No more writes: the meter goes on evicting.
    let mut used = used_memory(&mut con).await;
    for _ in 0..200 {
        if used <= limit + 256 * 1024 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        used = used_memory(&mut con).await;
    }
    assert!(used <= limit + 256 * 1024, "used {used}, limit {limit}");
    assert!(info_field(&mut con, "stats", "evicted_keys").await >= 9_000);
}
