//! SCAN's guarantee (a key that exists for the whole scan is returned, whatever else changes) and
//! its MATCH, COUNT and TYPE options.

use crate::common;

use common::{resp, RawConn, TestServer};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Parses `*2 $cursor *n $key…` into the next cursor and the keys.
fn parse_scan(reply: &[u8]) -> (String, Vec<Vec<u8>>) {
    let mut pos = 0;
    let line = |pos: &mut usize| {
        let end = reply[*pos..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("line")
            + *pos;
        let text = String::from_utf8_lossy(&reply[*pos..end]).into_owned();
        *pos = end + 2;
        text
    };
    assert_eq!(line(&mut pos), "*2");
    let cursor_len: usize = line(&mut pos)[1..].parse().expect("len");
    let cursor = String::from_utf8_lossy(&reply[pos..pos + cursor_len]).into_owned();
    pos += cursor_len + 2;
    let count: usize = line(&mut pos)[1..].parse().expect("count");
    let mut keys = Vec::new();
    for _ in 0..count {
        let len: usize = line(&mut pos)[1..].parse().expect("len");
        keys.push(reply[pos..pos + len].to_vec());
        pos += len + 2;
    }
    (cursor, keys)
}

/// Runs a whole scan with `options`, returning every key seen (with repeats) and the call count.
async fn full_scan(conn: &mut RawConn, options: &[&[u8]]) -> (Vec<Vec<u8>>, usize) {
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    let mut calls = 0;
    loop {
        let mut request: Vec<&[u8]> = vec![b"SCAN", cursor.as_bytes()];
        request.extend_from_slice(options);
        let reply = conn.command(&request).await;
        let (next, keys) = parse_scan(&reply);
        seen.extend(keys);
        calls += 1;
        if next == "0" {
            return (seen, calls);
        }
        cursor = next;
    }
}

#[tokio::test]
async fn keys_present_for_the_whole_scan_are_returned_despite_concurrent_writes() {
    let server = TestServer::start().await;
    let mut setup = server.raw().await;
    let stable: Vec<Vec<u8>> = (0..3000)
        .map(|i| format!("stable:{i}").into_bytes())
        .collect();
    let mut batch = Vec::new();
    for key in &stable {
        batch.extend(resp(&[b"SET", key, b"v"]));
    }
    setup.send(&batch).await;
    setup.read_n(stable.len() * 5).await;

    // Another client adds and deletes thousands of other keys all through the scan.
    let stop = Arc::new(AtomicBool::new(false));
    let mut churn = server.raw().await;
    let churn_stop = stop.clone();
    let churner = tokio::spawn(async move {
        let mut round = 0u64;
        while !churn_stop.load(Ordering::Relaxed) {
            let mut batch = Vec::new();
            for i in 0..200 {
                let key = format!("churn:{round}:{i}");
                batch.extend(resp(&[b"SET", key.as_bytes(), b"x"]));
                if round > 0 {
                    let old = format!("churn:{}:{i}", round - 1);
                    batch.extend(resp(&[b"DEL", old.as_bytes()]));
                }
            }
            let replies = if round > 0 {
                200 * 5 + 200 * 4
            } else {
                200 * 5
            };
            churn.send(&batch).await;
            churn.read_n(replies).await;
            round += 1;
        }
        round
    });

    let mut scanner = server.raw().await;
    let (seen, calls) = full_scan(&mut scanner, &[b"COUNT", b"7"]).await;
    stop.store(true, Ordering::Relaxed);
    let rounds = churner.await.expect("churn task");
    let seen: HashSet<Vec<u8>> = seen.into_iter().collect();
    let missing: Vec<_> = stable.iter().filter(|k| !seen.contains(*k)).collect();
    assert!(missing.is_empty(), "{} stable keys missed", missing.len());
    assert!(calls > 100, "COUNT 7 should need many calls, took {calls}");
    assert!(rounds > 1, "the churn ran during the scan");
}

#[tokio::test]
async fn match_count_and_type_filter_the_scan() {
    let server = TestServer::start().await;
    let mut con = server.raw().await;
    let mut batch = Vec::new();
    for i in 0..500 {
        batch.extend(resp(&[b"SET", format!("user:{i}").as_bytes(), b"v"]));
        batch.extend(resp(&[b"SET", format!("item:{i}").as_bytes(), b"v"]));
    }
    con.send(&batch).await;
    con.read_n(1000 * 5).await;

    let (all, _) = full_scan(&mut con, &[]).await;
    let all: HashSet<_> = all.into_iter().collect();
    assert_eq!(all.len(), 1000);

    let (users, _) = full_scan(&mut con, &[b"MATCH", b"user:*", b"COUNT", b"50"]).await;
    let users: HashSet<_> = users.into_iter().collect();
    assert_eq!(users.len(), 500);
    assert!(users.iter().all(|k| k.starts_with(b"user:")));
    let (some, _) = full_scan(&mut con, &[b"MATCH", b"item:1?"]).await;
    let some: HashSet<_> = some.into_iter().collect();
    assert_eq!(some.len(), 10);

    // COUNT is a hint of the work per call: a large COUNT finishes in one call.
    let (_, calls) = full_scan(&mut con, &[b"COUNT", b"100000"]).await;
    assert_eq!(calls, 1);
    let (_, calls) = full_scan(&mut con, &[b"COUNT", b"10"]).await;
    assert!(calls >= 50, "{calls}");

    let (strings, _) = full_scan(&mut con, &[b"TYPE", b"STRING", b"COUNT", b"1000"]).await;
    assert_eq!(strings.len(), 1000);
    let (lists, _) = full_scan(&mut con, &[b"TYPE", b"list"]).await;
    assert!(lists.is_empty());
    let (none, _) = full_scan(&mut con, &[b"MATCH", b"nothing*", b"TYPE", b"string"]).await;
    assert!(none.is_empty());
}

#[tokio::test]
async fn scan_errors_match_redis() {
    let server = TestServer::start().await;
    let mut con = server.raw().await;
    for (request, reply) in [
        (&[&b"SCAN"[..], b"abc"][..], &b"-ERR invalid cursor\r\n"[..]),
        (&[b"SCAN", b"1.5"], b"-ERR invalid cursor\r\n"),
        (&[b"SCAN", b" 1"], b"-ERR invalid cursor\r\n"),
        (
            &[b"SCAN", b"18446744073709551616"],
            b"-ERR invalid cursor\r\n",
        ),
        (&[b"SCAN", b"0", b"COUNT", b"0"], b"-ERR syntax error\r\n"),
        (
            &[b"SCAN", b"0", b"COUNT", b"x"],
            b"-ERR value is not an integer or out of range\r\n",
        ),
        (&[b"SCAN", b"0", b"MATCH"], b"-ERR syntax error\r\n"),
        (&[b"SCAN", b"0", b"BOGUS", b"1"], b"-ERR syntax error\r\n"),
        (
            &[b"SCAN"],
            b"-ERR wrong number of arguments for 'scan' command\r\n",
        ),
        (&[b"SCAN", b"0"], b"*2\r\n$1\r\n0\r\n*0\r\n"),
    ] {
        assert_eq!(
            String::from_utf8_lossy(&con.command(request).await),
            String::from_utf8_lossy(reply),
            "{request:?}"
        );
    }
}
