//! The fast script path under load: scripts run on their connection's tokio worker when nothing
//! else holds the engine or the database, queue behind a running script without parking threads,
//! and a script that runs long moves off its worker, so even a one-thread server keeps answering
//! (BUSY, SCRIPT KILL) while it runs. Atomicity must hold on every path.

use crate::common;

use common::{resp, TestServer};
use redis::AsyncCommands;
use std::time::{Duration, Instant};

/// Each task's result; a task still running after 60 s fails the test (a deadlock).
async fn finish_within_60s<T>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut results = Vec::with_capacity(tasks.len());
    for task in tasks {
        let finished = tokio::time::timeout(Duration::from_secs(60), task).await;
        results.push(finished.expect("no deadlock").unwrap());
    }
    results
}

/// A read-modify-write that is only correct if no other command runs between its GET and SET.
const UNSAFE_INCR: &str = "local n = tonumber(redis.call('get', KEYS[1]) or '0') \
     redis.call('set', KEYS[1], n + 1) return n + 1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_scripts_and_writers_lose_no_update() {
    let _watchdog = common::watchdog("scripting_concurrency", Duration::from_secs(90));
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(UNSAFE_INCR)
        .query_async(&mut admin)
        .await
        .unwrap();
    let (clients, calls) = (16, 150);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let mut conn = server.client().await;
        let sha = sha.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..calls {
                // Cached and uncached scripts and plain INCRs on the same key, interleaved.
                match (c + i) % 3 {
                    0 => {
                        let _: i64 = redis::cmd("EVALSHA")
                            .arg(&sha)
                            .arg(1)
                            .arg("counter")
                            .query_async(&mut conn)
                            .await
                            .unwrap();
                    }
                    1 => {
                        let body = format!("{UNSAFE_INCR} -- {c} {i}");
                        let _: i64 = redis::cmd("EVAL")
                            .arg(body)
                            .arg(1)
                            .arg("counter")
                            .query_async(&mut conn)
                            .await
                            .unwrap();
                    }
                    _ => {
                        let _: i64 = conn.incr("counter", 1).await.unwrap();
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let total: i64 = admin.get("counter").await.unwrap();
    assert_eq!(total, clients * calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_inside_exec_and_alone_do_not_deadlock() {
    let _watchdog = common::watchdog("scripting_concurrency", Duration::from_secs(90));
    let server = TestServer::start().await;
    let mut tasks = Vec::new();
    for c in 0..8 {
        let mut conn = server.client().await;
        tasks.push(tokio::spawn(async move {
            for _ in 0..60 {
                if c % 2 == 0 {
                    let (a, b): (i64, i64) = redis::pipe()
                        .atomic()
                        .cmd("EVAL")
                        .arg(UNSAFE_INCR)
                        .arg(1)
                        .arg("n")
                        .cmd("EVAL")
                        .arg(UNSAFE_INCR)
                        .arg(1)
                        .arg("n")
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                    assert_eq!(b, a + 1, "nothing ran between two scripts of one EXEC");
                } else {
                    let _: i64 = redis::cmd("EVAL")
                        .arg(UNSAFE_INCR)
                        .arg(1)
                        .arg("n")
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                }
            }
        }));
    }
    finish_within_60s(tasks).await;
    let mut admin = server.client().await;
    let total: i64 = admin.get("n").await.unwrap();
    assert_eq!(total, 4 * 60 * 2 + 4 * 60);
}

/// With one worker thread, a long script that started on it must leave it: otherwise no other
/// connection could even get its BUSY reply, nor send SCRIPT KILL.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_long_script_leaves_a_single_worker_free() {
    let _watchdog = common::watchdog("scripting_concurrency", Duration::from_secs(90));
    let server = TestServer::start_with(|c| c.threads = 1).await;
    let mut admin = server.raw().await;
    admin
        .roundtrip(
            &resp(&[b"CONFIG", b"SET", b"busy-reply-threshold", b"200"]),
            b"+OK\r\n",
        )
        .await;
    let mut looping = server.raw().await;
    let mut not_before = Instant::now();
    looping
        .send(&resp(&[b"EVAL", b"while true do end", b"0"]))
        .await;
    // Another script queued behind it waits for its turn, then answers BUSY once the endless one
    // has run past the threshold. The two connections race to the server: until the endless
    // script has started, the short one simply runs (`:1`) and is sent again. The endless script
    // started after the last short one was sent, so BUSY cannot come sooner than the threshold
    // after that send.
    let mut queued = server.raw().await;
    let reply = loop {
        let sent = Instant::now();
        queued.send(&resp(&[b"EVAL", b"return 1", b"0"])).await;
        let reply = String::from_utf8_lossy(&queued.read_reply().await).into_owned();
        if reply != ":1\r\n" {
            break reply;
        }
        not_before = sent;
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(reply.starts_with("-BUSY"), "{reply}");
    // The threshold is 200 ms; the server counts whole milliseconds.
    assert!(
        not_before.elapsed() >= Duration::from_millis(195),
        "{:?}",
        not_before.elapsed()
    );
    admin
        .roundtrip(&resp(&[b"SCRIPT", b"KILL"]), b"+OK\r\n")
        .await;
    let killed = String::from_utf8_lossy(&looping.read_reply().await).into_owned();
    assert!(killed.starts_with("-ERR Script killed by user"), "{killed}");
    // Afterwards scripts run again, on the worker.
    queued
        .roundtrip(&resp(&[b"EVAL", b"return 2", b"0"]), b":2\r\n")
        .await;
    looping.roundtrip(&resp(&[b"PING"]), b"+PONG\r\n").await;
}

/// Bumps every key named in ARGV, last first: keys it never declared, reached in no particular
/// shard order (a script locks each shard as it reaches it).
const BUMP_ALL: &str = "for i = #ARGV, 1, -1 do redis.call('incr', ARGV[i]) end return #ARGV";

fn bump_all(keys: &[String]) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(BUMP_ALL).arg(0).arg(keys);
    cmd
}

/// Scripts locking shards as they reach them, against every kind of in-order locker (MGET over
/// many shards, EXEC over the whole database, EXEC with a script and SCRIPT LOAD in it, which
/// takes the engine before its locks): no deadlock, and every reader sees all keys equal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_reaching_undeclared_keys_and_in_order_lockers_stay_atomic() {
    let _watchdog = common::watchdog("scripting_concurrency", Duration::from_secs(90));
    let server = TestServer::start().await;
    let keys: Vec<String> = (0..24).map(|i| format!("bump:{i}")).collect();
    let (clients, rounds) = (8, 400);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let mut conn = server.client().await;
        let keys = keys.clone();
        tasks.push(tokio::spawn(async move {
            let mut bumps = 0i64;
            for i in 0..rounds {
                match (c + i) % 4 {
                    0 => {
                        let n: i64 = bump_all(&keys).query_async(&mut conn).await.unwrap();
                        assert_eq!(n, keys.len() as i64);
                        bumps += 1;
                    }
                    1 => {
                        let mut pipe = redis::pipe();
                        pipe.atomic();
                        for key in &keys {
                            pipe.cmd("INCR").arg(key).ignore();
                        }
                        let () = pipe.query_async(&mut conn).await.unwrap();
                        bumps += 1;
                    }
                    2 => {
                        let (_, n): (String, i64) = redis::pipe()
                            .atomic()
                            .cmd("SCRIPT")
                            .arg("LOAD")
                            .arg(BUMP_ALL)
                            .add_command(bump_all(&keys))
                            .query_async(&mut conn)
                            .await
                            .unwrap();
                        assert_eq!(n, keys.len() as i64);
                        bumps += 1;
                    }
                    _ => {
                        let values: Vec<Option<i64>> = conn.mget(&keys).await.unwrap();
                        assert!(
                            values.windows(2).all(|w| w[0] == w[1]),
                            "MGET saw a script or EXEC half done: {values:?}"
                        );
                    }
                }
            }
            bumps
        }));
    }
    let total: i64 = finish_within_60s(tasks).await.into_iter().sum();
    let mut admin = server.client().await;
    let values: Vec<i64> = admin.mget(&keys).await.unwrap();
    assert!(values.iter().all(|&v| v == total), "{values:?} != {total}");
}

/// A script that selects another database holds what it reaches there to its end as well: a
/// transaction reading both databases sees both writes or neither, and scripts writing database
/// 1 first, then 0, never deadlock against transactions locking 0, then 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_in_two_databases_is_atomic_and_does_not_deadlock() {
    let _watchdog = common::watchdog("scripting_concurrency", Duration::from_secs(90));
    let server = TestServer::start().await;
    const BOTH: &str = "redis.call('select', 1) redis.call('incr', 'b') \
         redis.call('select', 0) return redis.call('incr', 'a')";
    let mut tasks = Vec::new();
    for c in 0..6 {
        let mut conn = server.client().await;
        tasks.push(tokio::spawn(async move {
            for _ in 0..1000 {
                if c % 2 == 0 {
                    let _: i64 = redis::cmd("EVAL")
                        .arg(BOTH)
                        .arg(0)
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                } else {
                    let (a, b): (Option<i64>, Option<i64>) = redis::pipe()
                        .atomic()
                        .cmd("SELECT")
                        .arg(0)
                        .ignore()
                        .cmd("GET")
                        .arg("a")
                        .cmd("SELECT")
                        .arg(1)
                        .ignore()
                        .cmd("GET")
                        .arg("b")
                        .cmd("SELECT")
                        .arg(0)
                        .ignore()
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                    assert_eq!(a, b, "a transaction saw half of a script");
                }
            }
        }));
    }
    finish_within_60s(tasks).await;
    let mut admin = server.client().await;
    let a: i64 = admin.get("a").await.unwrap();
    let b: i64 = redis::pipe()
        .cmd("SELECT")
        .arg(1)
        .ignore()
        .cmd("GET")
        .arg("b")
        .query_async::<(i64,)>(&mut admin)
        .await
        .unwrap()
        .0;
    assert_eq!((a, b), (3000, 3000));
}
