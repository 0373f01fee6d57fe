//! Durable rows under load: database statements per 1000 captures at saturation, and the capture
//! rate with the database up and down (the aim: the same). Uses a throwaway PostgreSQL cluster when
//! PostgreSQL is installed, else the embedded SQLite file (the down case then needs Postgres).
//!
//! Run: `cargo bench --bench scope_rows` (CAPTURES=… and CLIENTS=… to change the load).

#[path = "../tests/common/postgres.rs"]
mod postgres;

use postgres::PgCluster;
use std::time::{Duration, Instant};
use stmd::config::Config;
use tokio::net::TcpListener;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn info(con: &mut redis::aio::MultiplexedConnection, field: &str) -> i64 {
    let text: String = redis::cmd("INFO")
        .arg("stm")
        .query_async(con)
        .await
        .expect("info");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Runs `captures` captures over `clients` connections; returns captures per second.
async fn load(url: &str, tag: &str, captures: usize, clients: usize) -> f64 {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = redis::Client::open(url).expect("client");
        let tag = tag.to_string();
        tasks.push(tokio::spawn(async move {
            let mut con = client
                .get_multiplexed_async_connection()
                .await
                .expect("connect");
            for i in 0..captures / clients {
                let user = format!("{tag}-{c}-{}", i % 500);
                let channel = format!("ch{}", i % 50);
                let _: redis::Value = redis::cmd("STM.CAPTURE")
                    .arg(&["USER", &user, "CHANNEL", &channel, "SERVER", "guild"])
                    .arg(&["MSG", "user", "-", "hello there, how are you today?"])
                    .arg(&[
                        "REPLY",
                        "3",
                        "-",
                        "Nova",
                        "Doing well, thank you for asking!",
                    ])
                    .query_async(&mut con)
                    .await
                    .expect("capture");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    captures as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let captures = env_or("CAPTURES", 20_000);
    let clients = env_or("CLIENTS", 16);
    let pg = PgCluster::start();
    let sqlite_dir = tempfile::tempdir().expect("dir");
    let mut config = Config {
        port: 0,
        ..Config::default()
    };
    let backend = match &pg {
        Some(pg) => {
            config.database_url = Some(pg.url());
            "postgres"
        }
        None => {
            config.dir = sqlite_dir.path().to_path_buf();
            "sqlite"
        }
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("redis://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(stmd::server::run(listener, config, async move {
        let _ = stopped.await;
    }));
    let mut con = redis::Client::open(url.as_str())
        .expect("client")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");

    let up_rate = load(&url, "up", captures, clients).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while info(&mut con, "stm_persist_queued").await != info(&mut con, "stm_persist_written").await
    {
        assert!(Instant::now() < deadline, "rows never flushed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let statements = info(&mut con, "stm_persist_statements").await;
    let batches = info(&mut con, "stm_persist_batches").await;
    println!("backend: {backend}; {captures} captures over {clients} connections");
    println!("database statements per 1000 captures: {:.2} ({statements} statements in {batches} batches)",
        statements as f64 * 1000.0 / captures as f64);
    println!("capture rate, database up:   {up_rate:>10.0} captures/s");
    if let Some(pg) = &pg {
        pg.stop_server();
        let down_rate = load(&url, "down", captures, clients).await;
        println!(
            "capture rate, database down: {down_rate:>10.0} captures/s (ratio down/up {:.2})",
            down_rate / up_rate
        );
        pg.start_server();
    } else {
        println!("capture rate, database down: not measured (needs PostgreSQL)");
    }
    let _ = stop.send(());
    let _ = server.await;
}
