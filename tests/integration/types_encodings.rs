//! OBJECT ENCODING where Redis 7.2 (which stmd follows) differs from the 7.0 reference server the
//! differential corpus runs against (`conformance/corpus/encodings.txt` has the rest): small sets
//! of strings and small lists are listpacks in 7.2, and the `set-max-listpack-*` thresholds exist.
//! Also: a threshold changes what OBJECT ENCODING and DEBUG OBJECT report, never a reply.

use crate::common;

use common::TestServer;
use redis::AsyncCommands;

async fn encoding(c: &mut redis::aio::MultiplexedConnection, key: &str) -> String {
    redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(key)
        .query_async(c)
        .await
        .unwrap()
}

#[tokio::test]
async fn sets_of_strings_are_listpacks_until_their_thresholds() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let _: () = c.sadd("s", &["a", "b", "1"]).await.unwrap();
    assert_eq!(encoding(&mut c, "s").await, "listpack");
    let members: Vec<String> = (0..128).map(|i| format!("m{i}")).collect();
    let _: () = c.sadd("s", &members).await.unwrap();
    assert_eq!(encoding(&mut c, "s").await, "hashtable");
    // Redis never converts back.
    let _: () = c.srem("s", &members).await.unwrap();
    assert_eq!(encoding(&mut c, "s").await, "hashtable");

    let _: () = c.sadd("ints", &[1, 2, 3]).await.unwrap();
    assert_eq!(encoding(&mut c, "ints").await, "intset");
    let _: () = c.sadd("ints", "x").await.unwrap();
    assert_eq!(encoding(&mut c, "ints").await, "listpack");

    let _: () = redis::cmd("CONFIG")
        .arg(&[
            "SET",
            "set-max-listpack-entries",
            "2",
            "set-max-listpack-value",
            "3",
        ])
        .query_async(&mut c)
        .await
        .unwrap();
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg(&["GET", "set-max-listpack-*"])
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(
        got,
        [
            "set-max-listpack-entries",
            "2",
            "set-max-listpack-value",
            "3"
        ]
    );
    let _: () = c.sadd("t", &["a", "b"]).await.unwrap();
    assert_eq!(encoding(&mut c, "t").await, "listpack");
    let _: () = c.sadd("u", &["abcd"]).await.unwrap();
    assert_eq!(encoding(&mut c, "u").await, "hashtable");
    // The same replies whatever the encoding.
    let mut members: Vec<String> = c.smembers("u").await.unwrap();
    members.sort();
    assert_eq!(members, ["abcd"]);
}

#[tokio::test]
async fn lists_are_listpacks_while_they_fit_their_size() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let _: () = c.rpush("l", &["a", "b", "c"]).await.unwrap();
    assert_eq!(encoding(&mut c, "l").await, "listpack");
    // -2: at most 8 KiB of listpack.
    let big = "x".repeat(1000);
    for _ in 0..9 {
        let _: () = c.rpush("l", &big).await.unwrap();
    }
    assert_eq!(encoding(&mut c, "l").await, "quicklist");
    let _: () = c.ltrim("l", 0, 2).await.unwrap();
    assert_eq!(encoding(&mut c, "l").await, "listpack");
    // A positive size counts elements.
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "list-max-listpack-size", "2"])
        .query_async(&mut c)
        .await
        .unwrap();
    let _: () = c.rpush("l", "d").await.unwrap();
    assert_eq!(encoding(&mut c, "l").await, "quicklist");
}

#[tokio::test]
async fn debug_object_names_the_same_encoding() {
    let server =
        TestServer::start_with(|c| c.enable_debug_command = stmd::config::ProtectedCommand::Yes)
            .await;
    let mut c = server.client().await;
    let _: () = c.hset("h", "f", "v").await.unwrap();
    let debug: String = redis::cmd("DEBUG")
        .arg(&["OBJECT", "h"])
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(debug.contains("encoding:listpack"), "{debug}");
    let _: () = c.set("n", 42).await.unwrap();
    let debug: String = redis::cmd("DEBUG")
        .arg(&["OBJECT", "n"])
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(debug.contains("encoding:int"), "{debug}");
}
