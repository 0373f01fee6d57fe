//! stmd through the `redis` crate: `ConnectionManager` (what a long-running bot shard holds),
//! pipelines, MULTI/EXEC with WATCH, and the short-term-memory flow, in RESP2 and RESP3.
//! A test whose command stmd does not know yet (`ERR unknown command`) counts as skipped.

use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::{AsyncCommands, RedisError, Value};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

type TestResult = Result<(), String>;
type TestFn = fn(Ctx) -> Pin<Box<dyn Future<Output = TestResult> + Send>>;

#[derive(Clone)]
struct Ctx {
    url: String,
    resp3: bool,
}

impl Ctx {
    fn client(&self) -> redis::Client {
        let url = if self.resp3 {
            format!("{}/?protocol=resp3", self.url)
        } else {
            self.url.clone()
        };
        redis::Client::open(url).expect("valid url")
    }
    async fn manager(&self) -> Result<ConnectionManager, String> {
        ConnectionManager::new(self.client()).await.map_err(err)
    }
    async fn dedicated(&self) -> Result<MultiplexedConnection, String> {
        self.client()
            .get_multiplexed_async_connection()
            .await
            .map_err(err)
    }
}

const UNSUPPORTED: &str = "UNSUPPORTED:";

fn err(e: RedisError) -> String {
    let text = e.to_string();
    if text.contains("unknown command") {
        format!("{UNSUPPORTED} {text}")
    } else {
        text
    }
}

macro_rules! check {
    ($cond:expr) => {
        if !$cond {
            return Err(format!(
                "{}:{}: check failed: {}",
                file!(),
                line!(),
                stringify!($cond)
            ));
        }
    };
    ($left:expr, $right:expr) => {{
        let (l, r) = (&$left, &$right);
        if l != r {
            return Err(format!(
                "{}:{}: {} == {}\n       left: {:?}\n      right: {:?}",
                file!(),
                line!(),
                stringify!($left),
                stringify!($right),
                l,
                r
            ));
        }
    }};
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A fresh number per call: the clock mixed with a counter.
fn fresh() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    (nanos ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % 1_000_000_000_000_000_000
}

fn uniq(prefix: &str) -> String {
    format!("{prefix}:{:x}", fresh())
}

/// A Discord-like id.
fn snowflake() -> String {
    fresh().to_string()
}

/// STM.GET's reply as field → value: a RESP3 map or a RESP2 flat array.
fn fields(v: &Value) -> Result<Vec<(String, Value)>, String> {
    let as_text = |k: &Value| match k {
        Value::BulkString(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Ok(s.clone()),
        other => Err(format!("field name {other:?}")),
    };
    match v {
        Value::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| Ok((as_text(k)?, v.clone())))
            .collect(),
        Value::Array(items) if items.len() % 2 == 0 => items
            .chunks(2)
            .map(|p| Ok((as_text(&p[0])?, p[1].clone())))
            .collect(),
        other => Err(format!("not a map: {other:?}")),
    }
}

fn field(v: &Value, name: &str) -> Result<Value, String> {
    fields(v)?
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .ok_or_else(|| format!("no field {name}"))
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

fn capture(user: &str, channel: &str, server: &str, persona: &str) -> redis::Cmd {
    let mut c = redis::cmd("STM.CAPTURE");
    c.arg(&[
        "USER", user, "CHANNEL", channel, "SERVER", server, "PRIVACY", "MINIMAL",
    ])
    .arg(&[
        "MSG",
        "user",
        "Alice",
        "hi there <:wave:123456789012345678>",
    ])
    .arg(&["MSG", "model", "Nova", "Hey!"])
    .arg(&[
        "REPLY",
        persona,
        "12",
        "Nova",
        "Fine! [System: Message metadata: x]",
    ]);
    c
}

// ------------------------------------------------------------------------------------------------

async fn strings_and_expiry(ctx: Ctx) -> TestResult {
    let mut con = ctx.manager().await?;
    let k = uniq("rs:str");
    let _: () = con.set_ex(&k, "v", 100).await.map_err(err)?;
    check!(con.get::<_, String>(&k).await.map_err(err)?, "v");
    let ttl: i64 = con.ttl(&k).await.map_err(err)?;
    check!(ttl > 0 && ttl <= 100);
    check!(
        con.incr::<_, _, i64>(format!("{k}:n"), 41)
            .await
            .map_err(err)?,
        41
    );
    let got: Vec<Option<String>> = con.mget(&[&k, &format!("{k}:none")]).await.map_err(err)?;
    check!(got, vec![Some("v".to_string()), None]);
    let bin = vec![0u8, 255, 13, 10, 7];
    let _: () = con.set(format!("{k}:bin"), &bin).await.map_err(err)?;
    check!(
        con.get::<_, Vec<u8>>(format!("{k}:bin"))
            .await
            .map_err(err)?,
        bin
    );
    let e = con
        .incr::<_, _, i64>(&k, 1)
        .await
        .expect_err("INCR on text");
    check!(e.to_string().contains("not an integer"));
    check!(con.get::<_, String>(&k).await.map_err(err)?, "v");
    let n: i64 = con
        .del(&[&k, &format!("{k}:n"), &format!("{k}:bin")])
        .await
        .map_err(err)?;
    check!(n, 3);
    Ok(())
}

async fn pipelines(ctx: Ctx) -> TestResult {
    let mut con = ctx.manager().await?;
    let p = uniq("rs:pipe");
    let mut pipe = redis::pipe();
    for i in 0..500 {
        pipe.set(format!("{p}:{i}"), i).ignore();
    }
    for i in 0..500 {
        pipe.incr(format!("{p}:{i}"), 1);
    }
    let out: Vec<i64> = pipe.query_async(&mut con).await.map_err(err)?;
    check!(out, (1..=500).collect::<Vec<i64>>());
    // atomic pipeline = MULTI/EXEC
    let (a, b): (i64, String) = redis::pipe()
        .atomic()
        .incr(format!("{p}:0"), 10)
        .get(format!("{p}:0"))
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!((a, b.as_str()), (11, "11"));
    // many tasks sharing one ConnectionManager (cloned handles), as bot shards' handlers do
    let mut tasks = Vec::new();
    for i in 0..50 {
        let mut c = con.clone();
        let key = format!("{p}:{i}");
        tasks.push(tokio::spawn(async move { c.get::<_, i64>(key).await }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let v = t.await.map_err(|e| e.to_string())?.map_err(err)?;
        check!(v, if i == 0 { 11 } else { i as i64 + 1 });
    }
    Ok(())
}

async fn watch_conflict(ctx: Ctx) -> TestResult {
    // WATCH state is per connection: use a dedicated connection, not the shared manager.
    let mut con = ctx.dedicated().await?;
    let mut other = ctx.manager().await?;
    let k = uniq("rs:watch");
    let _: () = con.set(&k, 1).await.map_err(err)?;
    let _: () = redis::cmd("WATCH")
        .arg(&k)
        .query_async(&mut con)
        .await
        .map_err(err)?;
    let _: () = other.set(&k, 5).await.map_err(err)?;
    let res: Option<(i64,)> = redis::pipe()
        .atomic()
        .incr(&k, 1)
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(res, None);
    check!(con.get::<_, i64>(&k).await.map_err(err)?, 5);
    let _: () = redis::cmd("WATCH")
        .arg(&k)
        .query_async(&mut con)
        .await
        .map_err(err)?;
    let res: Option<(i64,)> = redis::pipe()
        .atomic()
        .incr(&k, 1)
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(res, Some((6,)));
    Ok(())
}

async fn bot_flow(ctx: Ctx) -> TestResult {
    let mut con = ctx.manager().await?;
    let (user, channel, server) = (snowflake(), snowflake(), snowflake());
    let user_key = format!("shortterm:user:{user}:{channel}:3");
    let server_key = format!("shortterm:server:{server}:{channel}:3");
    let keys: Vec<String> = capture(&user, &channel, &server, "3")
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(keys, vec![user_key.clone(), server_key.clone()]);

    let entry: Value = redis::cmd("STM.GET")
        .arg(&server_key)
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(matches!(entry, Value::Map(_)), ctx.resp3);
    check!(text(&field(&entry, "scope")?), Some("server".into()));
    check!(field(&entry, "user")?, Value::Nil);
    check!(field(&entry, "persona")?, Value::Int(3));
    check!(field(&entry, "turns_since_refresh")?, Value::Int(1));
    let Value::Array(messages) = field(&entry, "messages")? else {
        return Err("messages is not an array".into());
    };
    let contents: Vec<Option<String>> = messages
        .iter()
        .map(|m| field(m, "content").map(|c| text(&c)))
        .collect::<Result<_, _>>()?;
    check!(
        contents,
        vec![
            Some("hi there :wave:".into()),
            Some("Hey!".into()),
            Some("Fine!".into())
        ]
    );

    let json: String = redis::cmd("STM.GET")
        .arg(&user_key)
        .arg(&["FORMAT", "JSON"])
        .query_async(&mut con)
        .await
        .map_err(err)?;
    let json: serde_json::Value = serde_json::from_str(&json).map_err(|e| e.to_string())?;
    check!(json["scope"], "user");
    check!(json["messages"][2]["role"], "model");

    let ticks: Option<i64> = redis::cmd("STM.TICK")
        .arg(&server_key)
        .arg(&["BY", "4"])
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(ticks, Some(5));

    tokio::time::sleep(Duration::from_millis(5)).await;
    let channel2 = snowflake();
    let _: Vec<String> = capture(&user, &channel2, &server, "3")
        .query_async(&mut con)
        .await
        .map_err(err)?;
    let recent: String = redis::cmd("STM.RECENT")
        .arg(&["USER", &user, "EXCLUDE", &channel2, "FORMAT", "JSON"])
        .query_async(&mut con)
        .await
        .map_err(err)?;
    let recent: serde_json::Value = serde_json::from_str(&recent).map_err(|e| e.to_string())?;
    check!(recent[0]["key"], user_key.as_str());
    check!(recent.as_array().map(Vec::len), Some(1));

    let written: Vec<String> = redis::cmd("STM.SUMMARY")
        .arg(&[
            "USER", &user, "CHANNEL", &channel, "SERVER", &server, "PERSONA", "3",
        ])
        .arg(&["TEXT", "Alice greeted Nova."])
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(written, vec![user_key.clone(), server_key.clone()]);
    let ttl: i64 = con.ttl(&server_key).await.map_err(err)?;
    check!(ttl > 43200);
    let entry: Value = redis::cmd("STM.GET")
        .arg(&server_key)
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(
        text(&field(&entry, "summary")?),
        Some("Alice greeted Nova.".into())
    );
    check!(field(&entry, "turns_since_refresh")?, Value::Int(0));

    let kind: String = redis::cmd("TYPE")
        .arg(&server_key)
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(kind, "stm");
    let forgotten: i64 = redis::cmd("STM.FORGET")
        .arg(&["USER", &user])
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(forgotten, 2);
    let forgotten: i64 = redis::cmd("STM.FORGET")
        .arg(&["KEY", &server_key])
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(forgotten, 1);
    let gone: Value = redis::cmd("STM.GET")
        .arg(&server_key)
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(gone, Value::Nil);
    let _: i64 = redis::cmd("STM.FORGET")
        .arg(&["CHANNEL", &channel2])
        .query_async(&mut con)
        .await
        .map_err(err)?;
    Ok(())
}

async fn concurrent_shards(ctx: Ctx) -> TestResult {
    let con = ctx.manager().await?;
    let (channel, server) = (snowflake(), snowflake());
    let mut tasks = Vec::new();
    for i in 0..40 {
        let mut c = con.clone();
        let (channel, server) = (channel.clone(), server.clone());
        tasks.push(tokio::spawn(async move {
            let user = format!("u{i}");
            let keys: Vec<String> = capture(&user, &channel, &server, "-")
                .query_async(&mut c)
                .await?;
            Ok::<_, RedisError>(keys)
        }));
    }
    for t in tasks {
        let keys = t.await.map_err(|e| e.to_string())?.map_err(err)?;
        check!(keys.len(), 2);
    }
    let mut con = con;
    let entry: Value = redis::cmd("STM.GET")
        .arg(format!("shortterm:server:{server}:{channel}"))
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(field(&entry, "turns_since_refresh")?, Value::Int(40));
    let n: i64 = redis::cmd("STM.FORGET")
        .arg(&["CHANNEL", &channel])
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(n, 41);
    Ok(())
}

async fn stm_errors(ctx: Ctx) -> TestResult {
    let mut con = ctx.manager().await?;
    let e = redis::cmd("STM.CAPTURE")
        .arg(&["USER", "1"])
        .query_async::<Value>(&mut con)
        .await
        .expect_err("arity");
    check!(e.to_string().contains("wrong number of arguments"));
    let e = redis::cmd("STM.TICK")
        .arg("nope")
        .query_async::<Value>(&mut con)
        .await
        .expect_err("bad key");
    check!(e.to_string().contains("invalid STM key"));
    let pong: String = redis::cmd("PING")
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(pong, "PONG");
    Ok(())
}

async fn hashes(ctx: Ctx) -> TestResult {
    let mut con = ctx.manager().await?;
    let k = uniq("rs:h");
    let n: i64 = con
        .hset_multiple::<_, _, _, ()>(&k, &[("a", "1"), ("b", "2")])
        .await
        .map(|_| 2)
        .map_err(err)?;
    check!(n, 2);
    let all: std::collections::HashMap<String, String> = con.hgetall(&k).await.map_err(err)?;
    check!(all.get("b").map(String::as_str), Some("2"));
    Ok(())
}

/// `redis::Script`: EVALSHA first, SCRIPT LOAD and EVALSHA again after a NOSCRIPT, as a bot's
/// rate limiter or lock would use it; an error inside a script is a server error and the shared
/// connection goes on.
async fn scripts(ctx: Ctx) -> TestResult {
    let mut con = ctx.manager().await?;
    let k = uniq("rs:script");
    let incr_by = redis::Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    let () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut con)
        .await
        .map_err(err)?;
    let first: i64 = incr_by
        .key(&k)
        .arg(5)
        .invoke_async(&mut con)
        .await
        .map_err(err)?;
    check!(first, 5);
    let second: i64 = incr_by
        .key(&k)
        .arg(2)
        .invoke_async(&mut con)
        .await
        .map_err(err)?;
    check!(second, 7);
    let cached: Vec<bool> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(incr_by.get_hash())
        .query_async(&mut con)
        .await
        .map_err(err)?;
    check!(cached, vec![true]);
    let failing = redis::Script::new("return redis.call('INCR', KEYS[1], 'extra')");
    let refused = failing.key(&k).invoke_async::<i64>(&mut con).await;
    check!(refused.is_err_and(|e| e
        .to_string()
        .contains("Wrong number of args calling Redis command from script")));
    let value: i64 = con.get(&k).await.map_err(err)?;
    check!(value, 7);
    Ok(())
}

fn boxed<F: Future<Output = TestResult> + Send + 'static>(
    f: F,
) -> Pin<Box<dyn Future<Output = TestResult> + Send>> {
    Box::pin(f)
}

#[tokio::main]
async fn main() {
    let host = std::env::var("STMD_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("STMD_PORT").unwrap_or_else(|_| "6379".into());
    let verbose = std::env::var("CONF_VERBOSE")
        .map(|v| !v.is_empty())
        .unwrap_or(false);
    let tests: &[(&str, TestFn)] = &[
        ("strings and expiry", |c| boxed(strings_and_expiry(c))),
        ("pipelines (plain, atomic, shared manager)", |c| {
            boxed(pipelines(c))
        }),
        ("WATCH conflict aborts EXEC", |c| boxed(watch_conflict(c))),
        ("bot flow", |c| boxed(bot_flow(c))),
        ("40 concurrent captures into one channel", |c| {
            boxed(concurrent_shards(c))
        }),
        ("STM errors keep the connection", |c| boxed(stm_errors(c))),
        ("hashes", |c| boxed(hashes(c))),
        ("Script: EVALSHA, NOSCRIPT reload, errors", |c| {
            boxed(scripts(c))
        }),
    ];
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for resp3 in [false, true] {
        let ctx = Ctx {
            url: format!("redis://{host}:{port}"),
            resp3,
        };
        for (name, f) in tests {
            let label = format!("{name} [{}]", if resp3 { "RESP3" } else { "RESP2" });
            match tokio::time::timeout(Duration::from_secs(10), f(ctx.clone())).await {
                Ok(Ok(())) => {
                    passed += 1;
                    if verbose {
                        println!("ok   {label}");
                    }
                }
                Ok(Err(e)) if e.starts_with(UNSUPPORTED) => {
                    skipped += 1;
                    println!(
                        "SKIP {label}: unsupported by stmd: {}",
                        &e[UNSUPPORTED.len()..].trim()
                    );
                }
                Ok(Err(e)) => {
                    failed += 1;
                    println!("FAIL {label}\n     {e}");
                }
                Err(_) => {
                    failed += 1;
                    println!("FAIL {label}\n     timeout after 10s");
                }
            }
        }
    }
    println!("rust: {passed} passed, {failed} failed, {skipped} skipped");
    if let Ok(path) = std::env::var("CONF_RESULTS") {
        let _ = std::fs::write(path, format!("{passed} {failed} {skipped}\n"));
    }
    std::process::exit(if failed > 0 { 1 } else { 0 });
}
