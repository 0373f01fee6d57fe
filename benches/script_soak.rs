//! Soak test of scripts that never end: for SOAK_SECS seconds (default 60) the release `stmd`
//! binary (on a free 127.0.0.1 port, busy-reply-threshold 100 ms) serves 20 clients running
//! ordinary commands (SET, GET, INCR, LPUSH, LRANGE on keys of their own, every reply checked
//! against what the client wrote) while 2 other clients take turns starting a never-ending
//! read-only script (an EVAL, or an FCALL of a looping function) and killing it (SCRIPT KILL,
//! FUNCTION KILL) a random 0-300 ms after the threshold, then 100 ms without a script.
//!
//! It fails (exit code 1) when an ordinary request waits longer than the threshold + 1 s, when a
//! reply is neither the right one nor -BUSY (then the request is sent again 10 ms later: a
//! refused command did nothing), when a kill or a killed script's reply is not Redis's, or when the data after the
//! run is not exactly what the clients wrote. It prints one summary line: requests, BUSY replies,
//! the worst wait, scripts killed.
//!
//! Run: `cargo bench --bench script_soak` (SOAK_SECS=20 … to shorten it).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use redis::{RedisResult, Value};
use std::collections::HashMap;
use std::process::{Child, Command, ExitCode};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLIENTS: usize = 20;
const SCRIPT_CLIENTS: usize = 2;
const THRESHOLD_MS: u64 = 100;
/// The longest an ordinary request may wait for its reply (BUSY or not).
const WORST_ALLOWED: Duration = Duration::from_millis(THRESHOLD_MS + 1000);
/// Each client's string keys (`s:<client>:<n>`), besides its counter and list.
const STRING_KEYS: u64 = 8;
const LIBRARY: &str = "#!lua name=soak\nredis.register_function{function_name='spin', \
    callback=function() while 1 do end end, flags={'no-writes'}}";
const KILLED: &str = "Script killed by user with SCRIPT KILL...";
/// How long an ordinary client waits before sending a refused request again.
const BUSY_PAUSE: Duration = Duration::from_millis(10);
/// How long the server runs no script between two (the ordinary clients' time to get through).
const SCRIPT_GAP: Duration = Duration::from_millis(100);

struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let child = Command::new(env!("CARGO_BIN_EXE_stmd"))
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--no-database", "--save", "", "--log-level", "error"])
            .args(["--busy-reply-threshold", &THRESHOLD_MS.to_string()])
            .spawn()
            .expect("spawn stmd");
        Server { child, port }
    }

    async fn connect(&self) -> RedisResult<MultiplexedConnection> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}", self.port))?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        // Our own bound is checked per request; the client's must not cut a reply short first.
        conn.set_response_timeout(Duration::from_secs(30));
        Ok(conn)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one ordinary client wrote, to check its replies and, at the end, the data.
#[derive(Default)]
struct Model {
    strings: HashMap<String, String>,
    counter: i64,
    /// The list as LRANGE 0 -1 returns it (LPUSH puts new values first).
    list: Vec<String>,
}

#[derive(Default)]
struct Tally {
    requests: u64,
    busy: u64,
    worst: Duration,
}

/// Sends `cmd` until its reply is not -BUSY, bounding each wait; the first other failure is the
/// run's failure.
async fn send(
    conn: &mut MultiplexedConnection,
    cmd: &redis::Cmd,
    tally: &mut Tally,
) -> Result<Value, String> {
    loop {
        let at = Instant::now();
        let reply = cmd.query_async::<Value>(conn).await;
        let waited = at.elapsed();
        tally.requests += 1;
        tally.worst = tally.worst.max(waited);
        if waited > WORST_ALLOWED {
            return Err(format!("{cmd:?} waited {waited:?}"));
        }
        match reply {
            Err(e) if e.code() == Some("BUSY") => {
                tally.busy += 1;
                // As a client would: not a hot loop of refused requests.
                tokio::time::sleep(BUSY_PAUSE).await;
            }
            Err(e) => return Err(format!("{cmd:?}: {e}")),
            Ok(value) => return Ok(value),
        }
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

fn texts(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Array(items) => items.iter().map(text).collect(),
        _ => None,
    }
}

/// One ordinary client: random commands on its own keys until `until`, each reply checked.
async fn ordinary(
    server: Arc<Server>,
    id: usize,
    until: Instant,
) -> Result<(Tally, Model), String> {
    let mut conn = server.connect().await.map_err(|e| e.to_string())?;
    let mut rng = StdRng::seed_from_u64(id as u64);
    let (mut tally, mut model) = (Tally::default(), Model::default());
    let (counter, list) = (format!("n:{id}"), format!("l:{id}"));
    let mut serial = 0u64;
    while Instant::now() < until {
        serial += 1;
        let key = format!("s:{id}:{}", rng.gen_range(0..STRING_KEYS));
        let value = format!("v{serial}");
        let mut cmd = redis::Cmd::new();
        let (got, expected) = match rng.gen_range(0..5) {
            0 => {
                cmd.arg("SET").arg(&key).arg(&value);
                let got = send(&mut conn, &cmd, &mut tally).await?;
                model.strings.insert(key, value);
                (got, Value::Okay)
            }
            1 => {
                cmd.arg("GET").arg(&key);
                let expected = match model.strings.get(&key) {
                    Some(v) => Value::BulkString(v.clone().into_bytes()),
                    None => Value::Nil,
                };
                (send(&mut conn, &cmd, &mut tally).await?, expected)
            }
            2 => {
                cmd.arg("INCR").arg(&counter);
                model.counter += 1;
                (
                    send(&mut conn, &cmd, &mut tally).await?,
                    Value::Int(model.counter),
                )
            }
            3 => {
                cmd.arg("LPUSH").arg(&list).arg(&value);
                model.list.insert(0, value);
                (
                    send(&mut conn, &cmd, &mut tally).await?,
                    Value::Int(model.list.len() as i64),
                )
            }
            _ => {
                cmd.arg("LRANGE").arg(&list).arg(0).arg(9);
                let first = model.list.iter().take(10);
                let expected = Value::Array(
                    first
                        .map(|v| Value::BulkString(v.clone().into_bytes()))
                        .collect(),
                );
                (send(&mut conn, &cmd, &mut tally).await?, expected)
            }
        };
        if got != expected {
            return Err(format!("{cmd:?}: got {got:?}, expected {expected:?}"));
        }
    }
    Ok((tally, model))
}

/// Checks the data after the run against what client `id` wrote.
async fn check_data(
    conn: &mut MultiplexedConnection,
    id: usize,
    model: &Model,
) -> Result<(), String> {
    for n in 0..STRING_KEYS {
        let key = format!("s:{id}:{n}");
        let got: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(conn)
            .await
            .map_err(|e| e.to_string())?;
        if got.as_ref() != model.strings.get(&key) {
            return Err(format!(
                "{key}: {got:?}, written {:?}",
                model.strings.get(&key)
            ));
        }
    }
    let counter: Option<i64> = redis::cmd("GET")
        .arg(format!("n:{id}"))
        .query_async(conn)
        .await
        .map_err(|e| e.to_string())?;
    if counter.unwrap_or(0) != model.counter {
        return Err(format!("n:{id}: {counter:?}, written {}", model.counter));
    }
    let list: Value = redis::cmd("LRANGE")
        .arg(format!("l:{id}"))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .map_err(|e| e.to_string())?;
    if texts(&list).as_ref() != Some(&model.list) {
        return Err(format!(
            "l:{id}: {} elements, written {}",
            texts(&list).map_or(0, |l| l.len()),
            model.list.len()
        ));
    }
    Ok(())
}

/// One script client: in its turn (`turn`, shared with the other), starts a never-ending script,
/// kills it 0-300 ms past the threshold and checks both replies. Returns the scripts killed.
async fn scripts(
    server: Arc<Server>,
    id: usize,
    until: Instant,
    turn: Arc<tokio::sync::Mutex<()>>,
) -> Result<u64, String> {
    let mut rng = StdRng::seed_from_u64(1000 + id as u64);
    let mut killer = server.connect().await.map_err(|e| e.to_string())?;
    let mut killed = 0;
    while Instant::now() < until {
        let _turn = turn.lock().await;
        let mut caller = server.connect().await.map_err(|e| e.to_string())?;
        let function = rng.gen_bool(0.5);
        let mut call = redis::Cmd::new();
        match function {
            true => call.arg("FCALL_RO").arg("spin").arg(0),
            false => call.arg("EVAL_RO").arg("while 1 do end").arg(0),
        };
        let running = tokio::spawn(async move { call.query_async::<Value>(&mut caller).await });
        let past = rng.gen_range(0..=300);
        tokio::time::sleep(Duration::from_millis(THRESHOLD_MS + past)).await;
        let kill = match function {
            true => ["FUNCTION", "KILL"],
            false => ["SCRIPT", "KILL"],
        };
        let reply: RedisResult<String> = redis::cmd(kill[0])
            .arg(kill[1])
            .query_async(&mut killer)
            .await;
        if !matches!(&reply, Ok(ok) if ok == "OK") {
            return Err(format!("{kill:?}: {reply:?}"));
        }
        let ended = tokio::time::timeout(Duration::from_secs(5), running)
            .await
            .map_err(|_| "a killed script did not end within 5 s".to_string())?
            .map_err(|e| e.to_string())?;
        match ended {
            Err(e) if e.to_string().contains(KILLED) => killed += 1,
            other => return Err(format!("the killed script answered {other:?}")),
        }
        tokio::time::sleep(SCRIPT_GAP).await;
    }
    Ok(killed)
}

#[tokio::main]
async fn main() -> ExitCode {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let server = Arc::new(Server::start());
    let ready = Instant::now();
    let mut admin = loop {
        match server.connect().await {
            Ok(conn) => break conn,
            Err(_) if ready.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => {
                eprintln!("script_soak: stmd did not accept connections within 30 s: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    if let Err(e) = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(LIBRARY)
        .query_async::<String>(&mut admin)
        .await
    {
        eprintln!("script_soak: FAIL loading the looping function: {e}");
        return ExitCode::FAILURE;
    }
    let until = Instant::now() + Duration::from_secs(secs);
    let turn = Arc::new(tokio::sync::Mutex::new(()));
    let killers: Vec<_> = (0..SCRIPT_CLIENTS)
        .map(|id| tokio::spawn(scripts(server.clone(), id, until, turn.clone())))
        .collect();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| tokio::spawn(ordinary(server.clone(), id, until)))
        .collect();
    let mut failures = Vec::new();
    let (mut total, mut models) = (Tally::default(), Vec::new());
    for (id, client) in clients.into_iter().enumerate() {
        match client.await {
            Ok(Ok((tally, model))) => {
                total.requests += tally.requests;
                total.busy += tally.busy;
                total.worst = total.worst.max(tally.worst);
                models.push((id, model));
            }
            Ok(Err(e)) => failures.push(format!("client {id}: {e}")),
            Err(e) => failures.push(format!("client {id}: {e}")),
        }
    }
    let mut killed = 0;
    for (id, killer) in killers.into_iter().enumerate() {
        match killer.await {
            Ok(Ok(n)) => killed += n,
            Ok(Err(e)) => failures.push(format!("script client {id}: {e}")),
            Err(e) => failures.push(format!("script client {id}: {e}")),
        }
    }
    for (id, model) in &models {
        if let Err(e) = check_data(&mut admin, *id, model).await {
            failures.push(format!("data of client {id}: {e}"));
        }
    }
    println!(
        "script_soak: {secs} s, {CLIENTS} clients: {} requests, {} BUSY replies, worst wait {:?} (bound {:?}); {killed} scripts killed",
        total.requests, total.busy, total.worst, WORST_ALLOWED
    );
    if killed == 0 {
        failures.push("no script was started and killed".into());
    }
    if total.busy == 0 {
        failures.push("no request met a running script (-BUSY)".into());
    }
    for failure in &failures {
        eprintln!("script_soak: FAIL {failure}");
    }
    match failures.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}
