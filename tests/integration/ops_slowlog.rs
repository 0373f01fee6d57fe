//! SLOWLOG over the wire: entry shape and trimming as Redis 7, settings by flag and CONFIG SET.

use crate::common;

use common::TestServer;

/// One entry as read from a RESP2 SLOWLOG GET reply.
#[derive(Debug)]
struct Entry {
    id: i64,
    unix_secs: i64,
    micros: i64,
    args: Vec<Vec<u8>>,
    addr: String,
    name: String,
}

fn entries(value: redis::Value) -> Vec<Entry> {
    use redis::Value;
    let Value::Array(items) = value else {
        panic!("not an array: {value:?}")
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::Array(fields) => match fields.as_slice() {
                [Value::Int(id), Value::Int(t), Value::Int(us), Value::Array(args), Value::BulkString(addr), Value::BulkString(name)] => {
                    Entry {
                        id: *id,
                        unix_secs: *t,
                        micros: *us,
                        args: args
                            .iter()
                            .map(|a| match a {
                                Value::BulkString(b) => b.clone(),
                                other => panic!("argument not a bulk string: {other:?}"),
                            })
                            .collect(),
                        addr: String::from_utf8_lossy(addr).into_owned(),
                        name: String::from_utf8_lossy(name).into_owned(),
                    }
                }
                other => panic!("entry of the wrong shape: {other:?}"),
            },
            other => panic!("entry not an array: {other:?}"),
        })
        .collect()
}

async fn slowlog_get(
    con: &mut redis::aio::MultiplexedConnection,
    count: Option<i64>,
) -> Vec<Entry> {
    let mut cmd = redis::cmd("SLOWLOG");
    cmd.arg("GET");
    if let Some(n) = count {
        cmd.arg(n);
    }
    entries(cmd.query_async(con).await.expect("SLOWLOG GET"))
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

#[tokio::test]
async fn entries_have_the_redis_7_shape_and_trimming() {
    let server = TestServer::start_with(|c| c.slowlog_log_slower_than = 0).await;
    let mut raw = server.raw().await;
    let raw_addr = raw.stream.local_addr().expect("addr").to_string();
    raw.roundtrip(&common::resp(&[b"CLIENT", b"SETNAME", b"bot"]), b"+OK\r\n")
        .await;
    let long = vec![b'x'; 130];
    raw.roundtrip(&common::resp(&[b"SET", b"k", &long]), b"+OK\r\n")
        .await;
    let mut many: Vec<Vec<u8>> = vec![b"DEL".to_vec()];
    many.extend((1..40).map(|i| format!("key{i}").into_bytes()));
    let refs: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
    raw.roundtrip(&common::resp(&refs), b":0\r\n").await;

    // Ask on the same connection: a client library's connect-time commands would be logged too.
    let reply = raw.command(&[b"SLOWLOG", b"GET", b"2"]).await;
    let got = entries(redis::parse_redis_value(&reply).expect("RESP"));
    assert_eq!(got.len(), 2);
    let (del, set) = (&got[0], &got[1]);
    assert_eq!(del.id, set.id + 1, "newest first, ids consecutive");
    assert_eq!(del.args.len(), 32);
    assert_eq!(del.args[0], b"DEL");
    assert_eq!(del.args[30], b"key30");
    assert_eq!(del.args[31], b"... (9 more arguments)");

    assert_eq!(set.args[..2], [b"SET".to_vec(), b"k".to_vec()]);
    let mut cut = vec![b'x'; 128];
    cut.extend_from_slice(b"... (2 more bytes)");
    assert_eq!(set.args[2], cut);
    assert_eq!(set.addr, raw_addr);
    assert_eq!(set.name, "bot");
    assert!((set.unix_secs - now_secs()).abs() < 60, "{set:?}");
    assert!(set.micros >= 0 && set.micros < 10_000_000, "{set:?}");

    // The default count is 10; -1 means all.
    for _ in 0..10 {
        raw.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    }
    let mut con = server.client().await;
    let all = slowlog_get(&mut con, Some(-1)).await;
    assert!(all.len() > 10, "{} entries", all.len());
    assert_eq!(slowlog_get(&mut con, None).await.len(), 10);
    assert_eq!(slowlog_get(&mut con, Some(0)).await.len(), 0);
}

#[tokio::test]
async fn len_reset_max_len_and_disabling() {
    let server = TestServer::start_with(|c| {
        c.slowlog_log_slower_than = 0;
        c.slowlog_max_len = 3;
    })
    .await;
    let mut raw = server.raw().await;
    for _ in 0..5 {
        raw.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    }
    raw.roundtrip(&common::resp(&[b"SLOWLOG", b"LEN"]), b":3\r\n")
        .await;
    // RESET runs, then is logged itself, as in Redis.
    raw.roundtrip(&common::resp(&[b"SLOWLOG", b"RESET"]), b"+OK\r\n")
        .await;
    raw.roundtrip(&common::resp(&[b"SLOWLOG", b"LEN"]), b":1\r\n")
        .await;
    raw.roundtrip(
        &common::resp(&[b"CONFIG", b"SET", b"slowlog-max-len", b"1"]),
        b"+OK\r\n",
    )
    .await;
    raw.roundtrip(&common::resp(&[b"SLOWLOG", b"LEN"]), b":1\r\n")
        .await;
    raw.roundtrip(
        &common::resp(&[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"-1"]),
        b"+OK\r\n",
    )
    .await;
    raw.roundtrip(&common::resp(&[b"SLOWLOG", b"RESET"]), b"+OK\r\n")
        .await;
    raw.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    raw.roundtrip(&common::resp(&[b"SLOWLOG", b"LEN"]), b":0\r\n")
        .await;
    raw.roundtrip(
        &common::resp(&[b"CONFIG", b"GET", b"slowlog-*"]),
        b"*4\r\n$23\r\nslowlog-log-slower-than\r\n$2\r\n-1\r\n$15\r\nslowlog-max-len\r\n$1\r\n1\r\n",
    )
    .await;
}

#[tokio::test]
async fn fast_commands_stay_out_by_default() {
    let server = TestServer::start().await;
    let mut raw = server.raw().await;
    for _ in 0..20 {
        raw.roundtrip(b"PING\r\n", b"+PONG\r\n").await;
    }
    raw.roundtrip(&common::resp(&[b"SLOWLOG", b"LEN"]), b":0\r\n")
        .await;
    raw.roundtrip(
        &common::resp(&[b"CONFIG", b"GET", b"slowlog-log-slower-than"]),
        b"*2\r\n$23\r\nslowlog-log-slower-than\r\n$5\r\n10000\r\n",
    )
    .await;
}

#[tokio::test]
async fn passwords_are_redacted() {
    let server = TestServer::start_with(|c| {
        c.slowlog_log_slower_than = 0;
        c.requirepass = "s3cret".into();
    })
    .await;
    let mut raw = server.raw().await;
    raw.roundtrip(&common::resp(&[b"AUTH", b"s3cret"]), b"+OK\r\n")
        .await;
    raw.send(&common::resp(&[
        b"HELLO", b"2", b"AUTH", b"default", b"s3cret",
    ]))
    .await;
    raw.read_reply().await;
    let reply = raw.command(&[b"SLOWLOG", b"GET", b"2"]).await;
    let text = String::from_utf8_lossy(&reply);
    assert!(!text.contains("s3cret"), "{text}");
    assert!(
        text.contains(
            "$5\r\nHELLO\r\n$1\r\n2\r\n$4\r\nAUTH\r\n$10\r\n(redacted)\r\n$10\r\n(redacted)\r\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("*2\r\n$4\r\nAUTH\r\n$10\r\n(redacted)\r\n"),
        "{text}"
    );
}

#[tokio::test]
async fn errors_match_redis() {
    let server = TestServer::start().await;
    let mut raw = server.raw().await;
    let cases: &[(&[&[u8]], &[u8])] = &[
        (&[b"SLOWLOG", b"GET", b"-2"], b"-ERR count should be greater than or equal to -1\r\n"),
        (&[b"SLOWLOG", b"GET", b"x"], b"-ERR count should be greater than or equal to -1\r\n"),
        (&[b"SLOWLOG"], b"-ERR wrong number of arguments for 'slowlog' command\r\n"),
        (&[b"SLOWLOG", b"LEN", b"3"], b"-ERR wrong number of arguments for 'slowlog|len' command\r\n"),
        (&[b"SLOWLOG", b"FOO"], b"-ERR unknown subcommand 'FOO'. Try SLOWLOG HELP.\r\n"),
        (
            &[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"-5"],
            b"-ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - argument must be between -1 and 9223372036854775807 inclusive\r\n",
        ),
        (
            &[b"CONFIG", b"SET", b"slowlog-max-len", b"-1"],
            b"-ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument must be between 0 and 9223372036854775807 inclusive\r\n",
        ),
    ];
    for (args, expected) in cases {
        raw.roundtrip(&common::resp(args), expected).await;
    }
    let help = raw.command(&[b"SLOWLOG", b"HELP"]).await;
    assert!(help.starts_with(
        b"*12\r\n+SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"
    ));
}
