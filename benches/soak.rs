//! Bounded load and soak test: the release `stmd` binary (embedded SQLite in a temporary `--dir`,
//! on a free 127.0.0.1 port) serves SOAK_CONNS concurrent connections (default 1,000), each paced
//! at SOAK_RATE requests per second (default 10), for SOAK_SECS seconds (default 60), mixing STM
//! commands (captures of realistic turns per STM-SPEC.md, GET, TICK, SUMMARY, RECENT) and standard
//! ones, over a bounded keyspace. It fails (exit code 1) on any error reply, any dropped connection,
//! a server that died, or a server RSS that is not flat after warm-up:
//!
//! RSS is read from /proc/<pid>/status (VmRSS) once a second; the samples are cut in thirds (the
//! first third is warm-up) and the mean of the last third must be within 10% of the mean of the
//! middle third.
//!
//! Run: `cargo bench --bench soak` (SOAK_SECS=20 … to shorten it).

use bytes::{Buf, BytesMut};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis_protocol::resp2::{decode::decode_range, types::RangeFrame};
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Command classes, reported separately. LPUSH is always followed by an LTRIM (bounded lists).
const CLASSES: [&str; 13] = [
    "STM.CAPTURE",
    "STM.GET",
    "STM.TICK",
    "STM.SUMMARY",
    "STM.RECENT",
    "GET",
    "SET",
    "INCR",
    "LPUSH",
    "LTRIM",
    "LRANGE",
    "HSET",
    "EXPIRE",
];
/// How often each class is picked, in percent (LTRIM comes with LPUSH).
const WEIGHTS: [u32; 13] = [20, 10, 5, 3, 7, 15, 12, 6, 6, 0, 6, 6, 4];

// The bounded keyspace: with these pools every STM entry reaches its message cap within seconds,
// so after warm-up the server holds the same data and its RSS should stay flat.
const USERS: u64 = 50;
const CHANNELS: u64 = 10;
const SERVERS: u64 = 3;
const PERSONAS: [&str; 3] = ["1", "2", "3"];
const PLAIN_KEYS: u64 = 1000;
const SPEAKERS: [&str; 5] = ["alice", "bob", "carol", "dave", "erin"];
const PERSONA_NAMES: [&str; 3] = ["Mira", "Nyx", "Sol"];
const LINES: [&str; 8] = [
    "hey, are you around? I wanted to ask about the raid tonight",
    "lol that's exactly what happened last time <:kekw:812345678901234567>",
    "can you remind me what we decided about the playlist for friday?",
    "I think the second option is better, but it depends on the budget",
    "good morning everyone! coffee first, then questions",
    "wait, who changed the channel topic again?",
    "that build guide you linked was super helpful, thanks",
    "ok but seriously, pineapple on pizza: yes or no",
];
const REPLIES: [&str; 6] = [
    "Of course! The raid starts at 21:00 server time; bring potions.",
    "We settled on the lo-fi list for Friday, with your two additions at the end.",
    "The second option fits: it stays under budget if we skip the extra banner.",
    "Morning! Coffee is a sound first step. What is on your mind today?",
    "Pineapple on pizza is a yes from me, with extra chili to balance it.",
    "Glad it helped. The talent section changed last patch, so check that part.",
];

struct Settings {
    secs: u64,
    conns: usize,
    rate: f64,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The server process, killed when dropped (also on a failed check).
struct Server {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().expect("temporary directory");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let child = Command::new(env!("CARGO_BIN_EXE_stmd"))
            .arg("--dir")
            .arg(dir.path())
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--log-level", "warn"])
            .spawn()
            .expect("spawn stmd");
        Server {
            child,
            port,
            _dir: dir,
        }
    }

    fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    fn connect(&self) -> impl std::future::Future<Output = std::io::Result<TcpStream>> + 'static {
        let port = self.port;
        async move {
            let stream = TcpStream::connect(("127.0.0.1", port)).await?;
            stream.set_nodelay(true)?;
            Ok(stream)
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// One request per call: sends it, waits for the whole reply; Ok(true) when it is an error reply.
async fn request(stream: &mut TcpStream, buf: &mut BytesMut, req: &[u8]) -> Result<bool, String> {
    stream.write_all(req).await.map_err(|e| e.to_string())?;
    loop {
        match decode_range(buf) {
            Ok(Some((frame, used))) => {
                buf.advance(used);
                return Ok(matches!(frame, RangeFrame::Error(_)));
            }
            Ok(None) => {}
            Err(e) => return Err(format!("bad reply: {e:?}")),
        }
        match stream.read_buf(buf).await {
            Ok(0) => return Err("closed by the server".into()),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// A random request of class `class` over the bounded keyspace.
fn build(class: usize, rng: &mut StdRng) -> Vec<u8> {
    let user = (900_000_000_000_000_000 + rng.gen_range(0..USERS)).to_string();
    let channel_n = rng.gen_range(0..CHANNELS);
    let channel = (800_000_000_000_000_000 + channel_n).to_string();
    let server = (700_000_000_000_000_000 + channel_n % SERVERS).to_string();
    let persona = PERSONAS[rng.gen_range(0..PERSONAS.len())];
    let key = format!("shortterm:user:{user}:{channel}:{persona}");
    let plain = rng.gen_range(0..PLAIN_KEYS);
    match CLASSES[class] {
        "STM.CAPTURE" => {
            let mut args = vec![
                "STM.CAPTURE".to_string(),
                "USER".into(),
                user.clone(),
                "CHANNEL".into(),
                channel,
                "SERVER".into(),
                server,
            ];
            for _ in 0..rng.gen_range(1..=3) {
                let speaker = SPEAKERS[rng.gen_range(0..SPEAKERS.len())];
                let line = LINES[rng.gen_range(0..LINES.len())];
                args.extend(["MSG".into(), "user".into(), speaker.into(), line.into()]);
            }
            for p in 0..rng.gen_range(1..=2) {
                let persona_n = (rng.gen_range(0..PERSONAS.len()) + p) % PERSONAS.len();
                let reply = REPLIES[rng.gen_range(0..REPLIES.len())];
                args.extend([
                    "REPLY".into(),
                    PERSONAS[persona_n].into(),
                    "-".into(),
                    PERSONA_NAMES[persona_n].into(),
                    reply.into(),
                ]);
            }
            resp(&args.iter().map(String::as_str).collect::<Vec<_>>())
        }
        "STM.GET" if rng.gen_bool(0.2) => resp(&["STM.GET", &key, "FORMAT", "JSON"]),
        "STM.GET" => resp(&["STM.GET", &key]),
        "STM.TICK" => resp(&["STM.TICK", &key]),
        "STM.SUMMARY" => {
            let text = format!(
                "{} asked about plans and music; prefers short answers. Mood: {}.",
                SPEAKERS[rng.gen_range(0..SPEAKERS.len())],
                ["calm", "curious", "playful"][rng.gen_range(0..3)]
            );
            resp(&[
                "STM.SUMMARY",
                "USER",
                &user,
                "CHANNEL",
                &channel,
                "SERVER",
                &server,
                "PERSONA",
                persona,
                "TEXT",
                &text,
            ])
        }
        "STM.RECENT" if rng.gen_bool(0.5) => resp(&[
            "STM.RECENT",
            "USER",
            &user,
            "EXCLUDE",
            &channel,
            "LIMIT",
            "3",
        ]),
        "STM.RECENT" => resp(&["STM.RECENT", "SERVER", &server, "LIMIT", "5"]),
        "GET" => resp(&["GET", &format!("kv:{plain}")]),
        "SET" => {
            let value = "v".repeat(rng.gen_range(16..256));
            resp(&["SET", &format!("kv:{plain}"), &value])
        }
        "INCR" => resp(&["INCR", &format!("counter:{}", plain % 100)]),
        "LPUSH" => resp(&["LPUSH", &format!("list:{}", plain % 100), LINES[0]]),
        "LTRIM" => resp(&["LTRIM", &format!("list:{}", plain % 100), "0", "49"]),
        "LRANGE" => resp(&["LRANGE", &format!("list:{}", plain % 100), "0", "9"]),
        "HSET" => {
            let field = format!("field{}", rng.gen_range(0..20));
            resp(&["HSET", &format!("hash:{}", plain % 100), &field, REPLIES[0]])
        }
        "EXPIRE" => resp(&["EXPIRE", &format!("kv:{plain}"), "600"]),
        other => unreachable!("class {other}"),
    }
}

fn pick(rng: &mut StdRng) -> usize {
    let mut roll = rng.gen_range(0..WEIGHTS.iter().sum::<u32>());
    for (class, &w) in WEIGHTS.iter().enumerate() {
        if roll < w {
            return class;
        }
        roll -= w;
    }
    unreachable!("weights sum")
}

/// What one connection saw.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<Vec<u32>>,
    errors: Vec<usize>,
    first_error: Option<String>,
    dropped: Option<String>,
}

/// One paced connection until `until`; keeps its socket open until the caller drops the result.
async fn client(
    mut stream: TcpStream,
    seed: u64,
    period: Duration,
    until: Instant,
) -> (Tally, TcpStream) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut buf = BytesMut::with_capacity(4096);
    let mut tally = Tally {
        latencies_us: vec![Vec::new(); CLASSES.len()],
        errors: vec![0; CLASSES.len()],
        ..Tally::default()
    };
    // Spread the connections over the period, then a steady pace.
    let offset = period.mul_f64(rng.gen_range(0.0..1.0));
    let mut ticks = tokio::time::interval_at((Instant::now() + offset).into(), period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    'run: while Instant::now() < until {
        ticks.tick().await;
        let first = pick(&mut rng);
        let classes: &[usize] = if CLASSES[first] == "LPUSH" {
            &[first, first + 1]
        } else {
            &[first]
        };
        for &class in classes {
            let req = build(class, &mut rng);
            let started = Instant::now();
            match request(&mut stream, &mut buf, &req).await {
                Ok(is_error) => {
                    let us = started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                    tally.latencies_us[class].push(us);
                    if is_error {
                        tally.errors[class] += 1;
                        tally.first_error.get_or_insert_with(|| {
                            String::from_utf8_lossy(&req).replace("\r\n", " ")
                        });
                    }
                }
                Err(e) => {
                    tally.dropped = Some(e);
                    break 'run;
                }
            }
        }
    }
    (tally, stream)
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    f64::from(sorted[rank - 1]) / 1000.0
}

fn mean(samples: &[u64]) -> f64 {
    samples.iter().sum::<u64>() as f64 / samples.len().max(1) as f64
}

async fn info_field(server: &Server, section: &str, field: &str) -> Option<String> {
    let mut stream = server.connect().await.ok()?;
    let mut buf = BytesMut::new();
    stream.write_all(&resp(&["INFO", section])).await.ok()?;
    loop {
        if let Ok(Some((RangeFrame::BulkString(range), _))) = decode_range(&buf) {
            let text = String::from_utf8_lossy(&buf[range.0..range.1]).into_owned();
            let prefix = format!("{field}:");
            return text
                .lines()
                .find_map(|l| l.strip_prefix(&prefix).map(|v| v.trim().to_string()));
        }
        if stream.read_buf(&mut buf).await.ok()? == 0 {
            return None;
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let settings = Settings {
        secs: env_or("SOAK_SECS", 60),
        conns: env_or("SOAK_CONNS", 1000),
        rate: env_or("SOAK_RATE", 10.0),
    };
    // Our sockets plus the server's (it inherits the limit): raise the soft limit up to the hard one.
    let wanted = settings.conns as u64 + 256;
    match rlimit::increase_nofile_limit(wanted) {
        Ok(got) if got >= wanted => {}
        Ok(got) => {
            eprintln!(
                "soak: open-file limit {got} is below the {wanted} needed; raise `ulimit -Hn`"
            );
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("soak: cannot read or raise the open-file limit: {e}");
            return ExitCode::FAILURE;
        }
    }
    println!(
        "soak: {} connections x {} req/s for {} s against the release stmd (embedded SQLite)",
        settings.conns, settings.rate, settings.secs
    );
    let mut server = Server::start();
    let ready = Instant::now();
    while server.connect().await.is_err() {
        if ready.elapsed() > Duration::from_secs(30) {
            eprintln!("soak: stmd did not accept connections within 30 s");
            return ExitCode::FAILURE;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut streams = Vec::with_capacity(settings.conns);
    while streams.len() < settings.conns {
        let batch = (settings.conns - streams.len()).min(100);
        let connects: Vec<_> = (0..batch).map(|_| tokio::spawn(server.connect())).collect();
        for connect in connects {
            match connect.await.expect("connect task") {
                Ok(s) => streams.push(s),
                Err(e) => {
                    eprintln!("soak: FAIL connecting client {}: {e}", streams.len());
                    return ExitCode::FAILURE;
                }
            }
        }
    }

    let started = Instant::now();
    let until = started + Duration::from_secs(settings.secs);
    let period = Duration::from_secs_f64(1.0 / settings.rate);
    let clients: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(i, s)| tokio::spawn(client(s, i as u64, period, until)))
        .collect();
    let mut rss = Vec::new();
    let mut second = tokio::time::interval(Duration::from_secs(1));
    while Instant::now() < until {
        second.tick().await;
        match server.rss_kib() {
            Some(kib) => rss.push(kib),
            None => break, // the process is gone: reported below
        }
    }
    let mut tallies = Vec::new();
    let mut sockets = Vec::new();
    for c in clients {
        let (tally, socket) = c.await.expect("client task");
        tallies.push(tally);
        sockets.push(socket);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let connected = info_field(&server, "clients", "connected_clients").await;
    drop(sockets);
    let exited = server.child.try_wait().ok().flatten();

    // Report.
    let mut failures = Vec::new();
    println!(
        "{:<12} {:>9} {:>7} {:>9} {:>9} {:>9}",
        "class", "requests", "errors", "p50 ms", "p99 ms", "p999 ms"
    );
    let mut total = 0usize;
    let mut all = Vec::new();
    for (class, name) in CLASSES.iter().enumerate() {
        let mut lat: Vec<u32> = tallies
            .iter()
            .flat_map(|t| t.latencies_us[class].iter().copied())
            .collect();
        lat.sort_unstable();
        let errors: usize = tallies.iter().map(|t| t.errors[class]).sum();
        println!(
            "{name:<12} {:>9} {errors:>7} {:>9.2} {:>9.2} {:>9.2}",
            lat.len(),
            percentile(&lat, 0.50),
            percentile(&lat, 0.99),
            percentile(&lat, 0.999)
        );
        total += lat.len();
        all.extend(lat);
        if errors > 0 {
            failures.push(format!("{errors} error replies to {name}"));
        }
    }
    all.sort_unstable();
    println!(
        "{:<12} {total:>9} {:>7} {:>9.2} {:>9.2} {:>9.2}",
        "all",
        "",
        percentile(&all, 0.50),
        percentile(&all, 0.99),
        percentile(&all, 0.999)
    );
    println!(
        "throughput: {:.0} requests/s over {elapsed:.1} s",
        total as f64 / elapsed
    );
    if let Some(example) = tallies.iter().find_map(|t| t.first_error.clone()) {
        println!("first request answered with an error: {example}");
    }
    let dropped: Vec<&String> = tallies.iter().filter_map(|t| t.dropped.as_ref()).collect();
    if let Some(first) = dropped.first() {
        failures.push(format!(
            "{} connections dropped (first: {first})",
            dropped.len()
        ));
    }
    match connected.as_deref().and_then(|v| v.parse::<usize>().ok()) {
        Some(n) if n == settings.conns + 1 => {}
        other => failures.push(format!(
            "the server counts {other:?} connected clients, expected {} (ours plus the INFO one)",
            settings.conns + 1
        )),
    }
    if let Some(status) = exited {
        failures.push(format!("stmd exited during the run: {status}"));
    }
    if rss.len() < 6 {
        failures.push(format!("only {} RSS samples: run at least 6 s", rss.len()));
    } else {
        let third = rss.len() / 3;
        let middle = mean(&rss[third..2 * third]);
        let last = mean(&rss[2 * third..]);
        let change = (last - middle) / middle;
        println!(
            "RSS (MiB): start {:.1}, max {:.1}, end {:.1}; mean of middle third {:.1}, of last third {:.1} ({:+.1}%, limit 10%)",
            rss[0] as f64 / 1024.0,
            rss.iter().copied().max().unwrap_or(0) as f64 / 1024.0,
            rss[rss.len() - 1] as f64 / 1024.0,
            middle / 1024.0,
            last / 1024.0,
            change * 100.0
        );
        if change.abs() > 0.10 {
            failures.push(format!(
                "RSS not flat after warm-up: {:+.1}%",
                change * 100.0
            ));
        }
    }
    if failures.is_empty() {
        println!("soak: PASS");
        ExitCode::SUCCESS
    } else {
        for f in &failures {
            println!("soak: FAIL {f}");
        }
        ExitCode::FAILURE
    }
}
