//! Geo commands and SORT over real TCP: Redis's exact scores, distances and coordinates in both
//! protocols, errors that change nothing, SORT's BY/GET patterns under EXEC's locks and while
//! other clients write, and no panic on odd arguments. Replies were recorded from redis-server
//! 7.0 (the differential corpora `geo.txt`, `geo_random.txt` and `sort.txt` compare the rest).

use crate::common;
use crate::types_support;

use common::{resp, TestServer};
use redis::AsyncCommands;
use types_support::{args, raw3, run_table};

#[tokio::test]
async fn geo_replies_are_redis_exact_in_resp2_and_resp3() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    run_table(
        &mut c,
        &[
            (
                "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
                b":2\r\n",
            ),
            ("ZSCORE Sicily Palermo", b"$16\r\n3479099956230698\r\n"),
            ("GEODIST Sicily Palermo Catania km", b"$8\r\n166.2742\r\n"),
            ("GEODIST Sicily Palermo Catania", b"$11\r\n166274.1516\r\n"),
            (
                "GEOPOS Sicily Palermo nope",
                b"*2\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n*-1\r\n",
            ),
            (
                "GEOHASH Sicily Palermo Catania",
                b"*2\r\n$11\r\nsqc8b49rny0\r\n$11\r\nsqdtr74hyu0\r\n",
            ),
            (
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHDIST",
                b"*2\r\n*2\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n*2\r\n$7\r\nPalermo\r\n$8\r\n190.4424\r\n",
            ),
        ],
    )
    .await;
    let mut c3 = raw3(&server).await;
    run_table(
        &mut c3,
        &[
            (
                "GEOPOS Sicily Catania nope",
                b"*2\r\n*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n_\r\n",
            ),
            (
                "GEORADIUS Sicily 15 37 100 km WITHDIST WITHHASH WITHCOORD",
                b"*1\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n",
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn geo_errors_change_nothing_and_keep_the_connection() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    run_table(
        &mut c,
        &[
            ("GEOADD g 1 2 a", b":1\r\n"),
            (
                "GEOADD g 3 4 b 1 100 c",
                b"-ERR invalid longitude,latitude pair 1.000000,100.000000\r\n",
            ),
            ("ZCARD g", b":1\r\n"),
            (
                "GEORADIUS g 1 2 abc km STORE d",
                b"-ERR need numeric radius\r\n",
            ),
            (
                "GEOSEARCH g FROMMEMBER nope BYRADIUS 1 km",
                b"-ERR could not decode requested zset member\r\n",
            ),
            (
                "GEODIST g a a parsec",
                b"-ERR unsupported unit provided. please use M, KM, FT, MI\r\n",
            ),
            (
                "GEOSEARCHSTORE d g FROMLONLAT 1 2 BYRADIUS 1 km WITHDIST",
                b"-ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options\r\n",
            ),
            ("EXISTS d", b":0\r\n"),
            ("SET s x", b"+OK\r\n"),
            (
                "GEOADD s 1 2 a",
                b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            ),
            ("GET s", b"$1\r\nx\r\n"),
            ("PING", b"+PONG\r\n"),
        ],
    )
    .await;
}

#[tokio::test]
async fn sort_patterns_work_inside_exec_and_store_a_list() {
    let server = TestServer::start().await;
    let mut con = server.client().await;
    let _: () = con.rpush("l", &[1, 2, 3]).await.expect("rpush");
    let _: () = redis::cmd("MSET")
        .arg(&[
            "w_1", "3", "w_2", "1", "w_3", "2", "n_1", "one", "n_3", "three",
        ])
        .query_async(&mut con)
        .await
        .expect("mset");
    let (sorted, stored, list): (Vec<Option<String>>, i64, Vec<String>) = redis::pipe()
        .atomic()
        .cmd("SORT")
        .arg(&["l", "BY", "w_*", "GET", "#", "GET", "n_*"])
        .cmd("SORT")
        .arg(&["l", "BY", "w_*", "DESC", "GET", "n_*", "STORE", "dst"])
        .cmd("LRANGE")
        .arg(&["dst", "0", "-1"])
        .query_async(&mut con)
        .await
        .expect("exec");
    assert_eq!(
        sorted,
        vec![
            Some("2".into()),
            None,
            Some("3".into()),
            Some("three".into()),
            Some("1".into()),
            Some("one".into()),
        ]
    );
    assert_eq!(stored, 3);
    // A missing GET value is stored as an empty string.
    assert_eq!(list, vec!["one", "three", ""]);
    let err = redis::cmd("SORT_RO")
        .arg(&["l", "STORE", "x"])
        .query_async::<()>(&mut con)
        .await
        .expect_err("syntax error");
    assert!(err.to_string().contains("syntax error"), "{err}");
    let err = redis::cmd("SORT")
        .arg(&["l", "BY", "nosuch_*", "ALPHA", "LIMIT", "0", "x"])
        .query_async::<()>(&mut con)
        .await
        .expect_err("not an integer");
    assert!(err.to_string().contains("not an integer"), "{err}");
}

#[tokio::test]
async fn sort_by_patterns_while_other_clients_write() {
    let server = TestServer::start().await;
    let mut setup = server.client().await;
    let members: Vec<String> = (0..200).map(|i| i.to_string()).collect();
    let _: () = setup.sadd("s", &members).await.expect("sadd");
    let mut writers = Vec::new();
    for w in 0..3 {
        let mut con = server.client().await;
        writers.push(tokio::spawn(async move {
            for i in (w..200).step_by(3) {
                let _: () = con.set(format!("w_{i}"), (i * 7) % 200).await.expect("set");
            }
        }));
    }
    let mut reader = server.client().await;
    for _ in 0..20 {
        let sorted: Vec<String> = redis::cmd("SORT")
            .arg(&["s", "BY", "w_*", "LIMIT", "0", "50"])
            .query_async(&mut reader)
            .await
            .expect("sort");
        assert_eq!(sorted.len(), 50);
    }
    for w in writers {
        w.await.expect("writer");
    }
    // With the writers done, the order is fully determined by the weights (ties by member).
    let sorted: Vec<String> = redis::cmd("SORT")
        .arg(&["s", "BY", "w_*", "GET", "#"])
        .query_async(&mut reader)
        .await
        .expect("sort");
    let weight = |m: &String| {
        let i: i64 = m.parse().expect("number");
        (i * 7) % 200
    };
    let mut expected = members.clone();
    expected.sort_by(|a, b| weight(a).cmp(&weight(b)).then(a.cmp(b)));
    assert_eq!(sorted, expected);
}

#[tokio::test]
async fn odd_arguments_never_break_the_connection() {
    let server = TestServer::start().await;
    let mut c = server.raw().await;
    c.roundtrip(
        &resp(&args("GEOADD g 180 85.05112878 a -180 -85.05112878 b")),
        b":2\r\n",
    )
    .await;
    c.roundtrip(&resp(&args("ZADD g -5 neg 1e300 huge")), b":2\r\n")
        .await;
    for command in [
        "GEOPOS g neg huge a b",
        "GEOHASH g neg huge",
        "GEODIST g neg huge",
        "GEOSEARCH g FROMLONLAT 0 0 BYRADIUS 0 m",
        "GEOSEARCH g FROMLONLAT 180 85.05112878 BYRADIUS 1e300 km",
        "GEOSEARCH g FROMLONLAT -180 -85.05112878 BYBOX 1e308 1e308 m",
        "GEOSEARCH g FROMLONLAT 0 0 BYRADIUS inf km",
        "GEOSEARCH g FROMMEMBER huge BYRADIUS 10 km",
        "GEORADIUS g 0 0 1 km COUNT 9223372036854775807",
        "GEORADIUS g 0 0 1 km COUNT 99999999999999999999",
        "SORT g",
        "SORT g BY * GET * GET ->",
        "SORT g BY x*->",
        "SORT g LIMIT -9223372036854775808 9223372036854775807",
        "SORT g LIMIT 9223372036854775807 9223372036854775807 DESC",
    ] {
        c.send(&resp(&args(command))).await;
        let reply = c.read_reply().await;
        assert!(!reply.is_empty(), "{command}");
    }
    c.roundtrip(&resp(&args("PING")), b"+PONG\r\n").await;
}
