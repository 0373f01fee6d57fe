//! The Prometheus endpoint (`--metrics-addr`): `GET /metrics` renders the counters the server
//! already keeps for INFO (nothing is counted twice), through `prometheus-client`'s text encoder.
//!
//! It is a deliberately tiny HTTP/1.0-style responder: one request per connection, then close.
//! Scrapers need nothing more, and it keeps an HTTP stack out of the dependency tree.

use crate::commands::Shared;
use crate::metrics::{rss_bytes, LATENCY_BUCKETS_US};
use crate::percpu::Total;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Largest request head we read before answering.
const MAX_REQUEST: usize = 8 * 1024;
/// A scraper that sends nothing is dropped after this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves scrapes until `stop` resolves.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, stop: impl std::future::Future) {
    tokio::pin!(stop);
    loop {
        let stream = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    tracing::warn!(%err, "metrics endpoint: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, &shared)).await;
        });
    }
}

async fn answer(mut stream: TcpStream, shared: &Arc<Shared>) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let request_line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = request_line.split(|&b| b == b' ');
    let (method, path) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let path = path.split(|&b| b == b'?').next().unwrap_or_default();
    let (status, content_type, body) = match (method, path) {
        (b"GET", b"/metrics") => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            render(shared),
        ),
        (b"GET", _) => (
            "404 Not Found",
            "text/plain",
            "not found: try /metrics\n".into(),
        ),
        _ => ("405 Method Not Allowed", "text/plain", "GET only\n".into()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// The whole exposition text, in Prometheus's classic text format.
pub fn render(shared: &Arc<Shared>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(ServerCollector(shared.clone())));
    let mut text = String::new();
    if let Err(err) = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry) {
        tracing::warn!(%err, "metrics rendering failed");
    }
    text
}

/// Reads the server's live counters at scrape time.
struct ServerCollector(Arc<Shared>);

impl std::fmt::Debug for ServerCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerCollector")
    }
}

fn load(counter: &impl Total) -> u64 {
    counter.total()
}

fn counter(e: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> std::fmt::Result {
    let metric = ConstCounter::new(value);
    metric.encode(e.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, value: i64) -> std::fmt::Result {
    let metric = ConstGauge::new(value);
    metric.encode(e.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Collector for ServerCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        let shared = &self.0;
        let s = &shared.stats;

        // Commands by name: count and latency histogram (subcommands as `config|get`); a command
        // that was only ever refused (before it ran) has no series.
        let mut commands = shared.command_stats.totals();
        commands.retain(|c| c.calls > 0);
        {
            let mut family = e.encode_descriptor(
                "stmd_commands",
                "Commands run, by command name.",
                None,
                MetricType::Counter,
            )?;
            for c in &commands {
                let labels = [("command", c.name.as_str())];
                ConstCounter::new(c.calls).encode(family.encode_family(&labels)?)?;
            }
        }
        {
            let mut family = e.encode_descriptor(
                "stmd_command_duration_seconds",
                "Time spent running commands, by command name.",
                None,
                MetricType::Histogram,
            )?;
            for c in &commands {
                let labels = [("command", c.name.as_str())];
                // The finite buckets only, each on its own (the encoder accumulates them and adds
                // `+Inf` itself, with the count). Derived from the fine histogram, so each edge is
                // within 6%.
                let count: u64 = c.histogram.iter().sum();
                let mut below = 0;
                let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_US
                    .iter()
                    .map(|&le| {
                        let upto = c.count_at_most(le * 1000);
                        let own = upto - below;
                        below = upto;
                        (le as f64 / 1e6, own)
                    })
                    .collect();
                family
                    .encode_family(&labels)?
                    .encode_histogram::<NoLabelSet>(c.nanos as f64 / 1e9, count, &buckets, None)?;
            }
        }

        // Connections, keys, memory.
        gauge(
            &mut e,
            "stmd_connected_clients",
            "Clients connected now.",
            signed(shared.clients.len() as u64),
        )?;
        counter(
            &mut e,
            "stmd_connections_received",
            "Connections accepted.",
            load(&s.total_connections_received),
        )?;
        counter(
            &mut e,
            "stmd_connections_rejected",
            "Connections refused because maxclients was reached.",
            load(&s.rejected_connections),
        )?;
        counter(
            &mut e,
            "stmd_clients_evicted",
            "Clients closed because all clients together held more than maxmemory-clients.",
            load(&s.evicted_clients),
        )?;
        counter(
            &mut e,
            "stmd_commands_processed",
            "Commands processed, all names together.",
            load(&s.total_commands_processed),
        )?;
        counter(
            &mut e,
            "stmd_error_replies",
            "Error replies sent.",
            load(&s.total_error_replies),
        )?;
        counter(
            &mut e,
            "stmd_client_output_buffer_limit_disconnections",
            "Clients closed for passing their client-output-buffer-limit.",
            load(&s.client_output_buffer_limit_disconnections),
        )?;
        counter(
            &mut e,
            "stmd_tls_handshake_failures",
            "TLS connections that failed or timed out in the handshake.",
            load(&s.tls_handshake_failures),
        )?;
        counter(
            &mut e,
            "stmd_net_input_bytes",
            "Bytes read from clients.",
            load(&s.total_net_input_bytes),
        )?;
        counter(
            &mut e,
            "stmd_net_output_bytes",
            "Bytes written to clients.",
            load(&s.total_net_output_bytes),
        )?;
        counter(
            &mut e,
            "stmd_keyspace_hits",
            "Key lookups that found the key.",
            load(&s.keyspace_hits),
        )?;
        counter(
            &mut e,
            "stmd_keyspace_misses",
            "Key lookups that did not find the key.",
            load(&s.keyspace_misses),
        )?;
        gauge(
            &mut e,
            "stmd_keys",
            "Keys in the keyspace.",
            signed(shared.store.len() as u64),
        )?;
        counter(
            &mut e,
            "stmd_expired_keys",
            "Keys removed because they expired.",
            load(&shared.store.expired_keys),
        )?;
        counter(
            &mut e,
            "stmd_evicted_keys",
            "Keys evicted to stay under maxmemory.",
            load(&shared.store.memory.evicted_keys),
        )?;
        gauge(
            &mut e,
            "stmd_resident_memory_bytes",
            "Resident set size of the process.",
            signed(rss_bytes()),
        )?;
        gauge(
            &mut e,
            "stmd_uptime_seconds",
            "Seconds since the server started.",
            signed(shared.started.elapsed().as_secs()),
        )?;
        gauge(
            &mut e,
            "stmd_slowlog_length",
            "Entries in the SLOWLOG.",
            signed(shared.slowlog.len() as u64),
        )?;

        // Short-term memory.
        let stm = &shared.stm.stats;
        gauge(
            &mut e,
            "stmd_stm_entries",
            "STM entries in memory.",
            signed(crate::stm::stm_entries(&shared.store) as u64),
        )?;
        counter(
            &mut e,
            "stmd_stm_captures",
            "STM.CAPTURE calls that stored messages.",
            load(&stm.captures),
        )?;
        {
            let mut family = e.encode_descriptor(
                "stmd_stm_skipped",
                "STM.CAPTURE calls that stored nothing, by reason.",
                None,
                MetricType::Counter,
            )?;
            for (reason, value) in [
                ("stop", &stm.skipped_stop),
                ("privacy", &stm.skipped_privacy),
                ("no_messages", &stm.skipped_no_messages),
                ("no_replies", &stm.skipped_no_replies),
                ("empty", &stm.skipped_empty),
            ] {
                let labels = [("reason", reason)];
                ConstCounter::new(load(value)).encode(family.encode_family(&labels)?)?;
            }
        }
        counter(
            &mut e,
            "stmd_stm_ticks",
            "STM turn ticks.",
            load(&stm.ticks),
        )?;
        counter(
            &mut e,
            "stmd_stm_summaries",
            "STM summaries written.",
            load(&stm.summaries),
        )?;
        counter(
            &mut e,
            "stmd_stm_category_writes",
            "STM category texts written.",
            load(&stm.category_writes),
        )?;
        counter(
            &mut e,
            "stmd_stm_forgets",
            "STM.FORGET calls.",
            load(&stm.forgets),
        )?;

        // Persistence of scope rows.
        let persist = &shared.stm.persist;
        let p = &persist.stats;
        gauge(
            &mut e,
            "stmd_persist_queue_depth",
            "Scope-row operations waiting for the writer.",
            signed(persist.depth() as u64),
        )?;
        counter(
            &mut e,
            "stmd_persist_queued",
            "Scope-row operations accepted into the queue.",
            load(&p.queued),
        )?;
        counter(
            &mut e,
            "stmd_persist_written",
            "Scope-row operations written to the database.",
            load(&p.written),
        )?;
        counter(
            &mut e,
            "stmd_persist_dropped",
            "Scope-row operations dropped because the queue was full.",
            load(&p.dropped),
        )?;
        counter(
            &mut e,
            "stmd_persist_errors",
            "Database write attempts that failed and were retried.",
            load(&p.retries),
        )?;
        counter(
            &mut e,
            "stmd_persist_batches",
            "Database transactions written.",
            load(&p.batches),
        )?;
        {
            let mut family = e.encode_descriptor(
                "stmd_persist_database_up",
                "1 when the last database attempt succeeded (backend: sqlite, postgres or none).",
                None,
                MetricType::Gauge,
            )?;
            let labels = [("backend", persist.backend())];
            ConstGauge::new(i64::from(p.up.load(Ordering::Relaxed)))
                .encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}
