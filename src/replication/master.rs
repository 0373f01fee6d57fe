//! The primary's side of replication: SYNC/PSYNC hand a connection over to [`serve_replica`],
//! which sends the dataset (a full sync) or the missing part of the stream (a partial one), then
//! the stream as it grows, and reads the replica's acknowledgements (`REPLCONF ACK`), which WAIT
//! counts.

use super::feed::{encode, Feed};
use super::Host;
use bytes::BytesMut;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How often the primary pings its replicas through the stream (`repl-ping-replica-period`).
const PING_EVERY: Duration = Duration::from_secs(10);
/// How long a stopping server keeps sending the stream's last bytes to a replica.
const FINAL_DRAIN: Duration = Duration::from_secs(2);
/// The most of the stream copied per write to a replica.
const CHUNK: usize = 256 * 1024;

/// The replicas attached to this node.
#[derive(Default)]
pub struct Master {
    replicas: Mutex<Vec<Arc<Attached>>>,
    /// WAIT's blocked clients, woken by every acknowledgement.
    pub acks: Arc<crate::store::blocking::Waiters>,
    /// Whether the stream's pinger is running.
    pinging: std::sync::atomic::AtomicBool,
    /// INFO stats: full syncs served, partial ones accepted and refused.
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
    /// `min-replicas-to-write` and `min-replicas-max-lag` (seconds), as last configured.
    pub min_to_write: AtomicU64,
    pub min_max_lag: AtomicU64,
}

/// A write refused for want of replicas (`min-replicas-to-write`).
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// What a replica said about itself before SYNC/PSYNC (REPLCONF).
#[derive(Default, Debug, Clone)]
pub struct ReplConf {
    pub listening_port: u16,
    pub ip_address: Option<String>,
    /// `capa eof`: it takes the dataset in the diskless form (we send the sized form anyway).
    pub capa_eof: bool,
}

/// SYNC/PSYNC's request, carried to the connection loop.
#[derive(Debug)]
pub struct Handoff {
    /// PSYNC's replication id and offset; None for the old SYNC (no `+FULLRESYNC` line).
    pub psync: Option<(Vec<u8>, i64)>,
    pub conf: ReplConf,
    /// What the replica sent after its PSYNC (its first acknowledgements).
    pub pending: BytesMut,
}

/// The states INFO shows for a replica.
const SEND_BULK: u8 = 1;
const ONLINE: u8 = 2;

/// One attached replica.
pub struct Attached {
    pub ip: String,
    pub port: u16,
    state: AtomicU8,
    /// How far the stream has been sent to it.
    sent: Arc<AtomicU64>,
    /// How far it says it has applied (REPLCONF ACK).
    pub acked: AtomicU64,
    /// How far it says its append-only log is synced (`REPLCONF ACK … FACK`, Redis 7.2).
    pub aof_acked: AtomicU64,
    /// When it last acknowledged (Unix ms).
    pub last_ack_ms: AtomicU64,
}

impl Attached {
    pub fn state(&self) -> &'static str {
        match self.state.load(Relaxed) {
            SEND_BULK => "send_bulk",
            _ => "online",
        }
    }

    pub fn online(&self) -> bool {
        self.state.load(Relaxed) == ONLINE
    }
}

impl Master {
    pub fn replicas(&self) -> Vec<Arc<Attached>> {
        self.replicas.lock().clone()
    }

    /// True when a replica is attached.
    pub fn any(&self) -> bool {
        !self.replicas.lock().is_empty()
    }

    /// Takes `min-replicas-to-write` and `min-replicas-max-lag` from the configuration.
    pub fn configure(&self, config: &crate::config::Config) {
        self.min_to_write
            .store(config.min_replicas_to_write, Relaxed);
        self.min_max_lag.store(config.min_replicas_max_lag, Relaxed);
    }

    /// Replicas that acknowledged within `min-replicas-max-lag` (INFO's `min_slaves_good_slaves`);
    /// None while the check is off.
    pub fn good_replicas(&self) -> Option<usize> {
        let max_lag = self.min_max_lag.load(Relaxed);
        if self.min_to_write.load(Relaxed) == 0 || max_lag == 0 {
            return None;
        }
        let now = crate::store::now_ms();
        Some(
            self.count_online(|r| {
                now.saturating_sub(r.last_ack_ms.load(Relaxed)) / 1000 <= max_lag
            }),
        )
    }

    /// A primary refuses writes while fewer than `min-replicas-to-write` replicas are good (one
    /// relaxed load while the setting is 0, its default). A replica never refuses for this.
    pub fn refuses_writes(&self, following: bool) -> bool {
        let need = self.min_to_write.load(Relaxed);
        need != 0
            && !following
            && self
                .good_replicas()
                .is_some_and(|good| (good as u64) < need)
    }

    /// How many replicas have acknowledged the stream up to `offset`.
    pub fn acked_at_least(&self, offset: u64) -> usize {
        self.count_online(|r| r.acked.load(Relaxed) >= offset)
    }

    /// Replicas whose append-only log is synced up to `offset` (WAITAOF).
    pub fn aof_acked_at_least(&self, offset: u64) -> usize {
        self.count_online(|r| r.aof_acked.load(Relaxed) >= offset)
    }

    fn count_online(&self, counted: impl Fn(&Attached) -> bool) -> usize {
        self.replicas
            .lock()
            .iter()
            .filter(|r| r.online() && counted(r))
            .count()
    }

    fn detach(&self, replica: &Arc<Attached>) {
        self.replicas.lock().retain(|r| !Arc::ptr_eq(r, replica));
    }
}

/// Asks every replica for an acknowledgement now (WAIT).
pub fn request_acks(feed: &Feed) {
    feed.append(None, &encode(&[b"REPLCONF", b"GETACK", b"*"]));
}

/// Serves a replica on `stream` until it goes: the dataset or the stream's missing part, then the
/// stream as it grows. `inbuf` holds what the replica sent after its PSYNC.
pub async fn serve_replica(
    stream: &mut impl crate::net::Stream,
    host: &Arc<impl Host>,
    info: &crate::clients::ClientInfo,
    handoff: Handoff,
) -> std::io::Result<()> {
    let mut inbuf = handoff.pending;
    info.published
        .flags
        .fetch_or(crate::clients::flag::REPLICA, Relaxed);
    let feed = &host.replication().feed;
    let replication = host.replication();
    if feed.activate_at(replication.offset()) {
        tokio::time::sleep(super::feed::ACTIVATION_GRACE).await;
    }
    start_pinger(host);
    let replid = replication.replid.lock().clone();
    let replid2 = replication.replid2.lock().clone();
    let second_offset = replication.second_offset.load(Relaxed);
    // Our own history, or the one we had before a promotion, up to where it ended (psync2).
    let continued = handoff.psync.as_ref().and_then(|(id, offset)| {
        let ours = id.as_slice() == replid.as_bytes()
            || (id.as_slice() == replid2.as_bytes() && *offset <= second_offset);
        let from = u64::try_from(*offset).ok()?.checked_sub(1)?;
        ours.then(|| feed.reader_at(from)).flatten()
    });
    let conf = handoff.conf;
    let ip = conf
        .ip_address
        // Over the Unix socket Redis names the replica `/unixsocket`.
        .unwrap_or_else(|| {
            info.addr
                .ip()
                .map_or("/unixsocket".into(), |ip| ip.to_string())
        });
    let master = &replication.master;
    if handoff
        .psync
        .as_ref()
        .is_some_and(|(id, _)| id.as_slice() != b"?")
    {
        let counter = if continued.is_some() {
            &master.sync_partial_ok
        } else {
            &master.sync_partial_err
        };
        counter.fetch_add(1, Relaxed);
    }
    // Registered as soon as it has a place in the stream, and given up however this ends.
    let register = |reader: Arc<AtomicU64>, state: u8| {
        let replica = Arc::new(Attached {
            ip: ip.clone(),
            port: conf.listening_port,
            state: AtomicU8::new(state),
            sent: reader,
            acked: AtomicU64::new(0),
            aof_acked: AtomicU64::new(0),
            last_ack_ms: AtomicU64::new(crate::store::now_ms()),
        });
        master.replicas.lock().push(replica.clone());
        Registration {
            host: &**host,
            replica,
        }
    };
    let registration = match continued {
        Some(reader) => {
            let registration = register(reader, ONLINE);
            stream
                .write_all(format!("+CONTINUE {replid}\r\n").as_bytes())
                .await?;
            registration
        }
        None => {
            master.sync_full.fetch_add(1, Relaxed);
            let worker = host.clone();
            let (image, reader) = tokio::task::spawn_blocking(move || {
                crate::snapshot::image(&*worker, || {
                    let feed = &worker.replication().feed;
                    // The replica starts in database 0: the stream's next command SELECTs.
                    feed.forget_db();
                    feed.reader_at(feed.end())
                })
            })
            .await
            .map_err(std::io::Error::other)??;
            let reader = reader.ok_or_else(|| std::io::Error::other("stream moved on"))?;
            let offset = reader.load(Relaxed);
            let registration = register(reader, SEND_BULK);
            if handoff.psync.is_some() {
                stream
                    .write_all(format!("+FULLRESYNC {replid} {offset}\r\n").as_bytes())
                    .await?;
            }
            stream
                .write_all(format!("${}\r\n", image.len()).as_bytes())
                .await?;
            stream.write_all(&image).await?;
            tracing::info!(
                replica = %info.addr,
                bytes = image.len(),
                offset,
                "full sync sent to a replica"
            );
            registration.replica.state.store(ONLINE, Relaxed);
            registration
        }
    };
    feed_replica(stream, &**host, info, &registration.replica, &mut inbuf).await
}

/// An attached replica: listed for INFO, ROLE and WAIT, and holding its place in the stream,
/// until it goes (however the feeding ends).
struct Registration<'a, H: Host> {
    host: &'a H,
    replica: Arc<Attached>,
}

impl<H: Host> Drop for Registration<'_, H> {
    fn drop(&mut self) {
        self.host.replication().master.detach(&self.replica);
        self.host.replication().feed.drop_reader(&self.replica.sent);
    }
}

/// Sends the stream from the replica's offset as it grows; reads its acknowledgements.
async fn feed_replica(
    stream: &mut impl crate::net::Stream,
    host: &impl Host,
    info: &crate::clients::ClientInfo,
    replica: &Attached,
    inbuf: &mut BytesMut,
) -> std::io::Result<()> {
    let feed = &host.replication().feed;
    let mut chunk = Vec::with_capacity(CHUNK);
    loop {
        let grown = feed.grown.notified();
        tokio::pin!(grown);
        grown.as_mut().enable();
        loop {
            chunk.clear();
            if !feed.read(&replica.sent, &mut chunk, CHUNK) {
                tracing::warn!(replica = %info.addr, "replica too far behind the stream, dropped");
                return Ok(());
            }
            if chunk.is_empty() {
                break;
            }
            tokio::select! {
                biased;
                _ = info.killed() => return Ok(()),
                written = stream.write_all(&chunk) => written?,
            }
        }
        // TLS holds what the socket did not take yet until a flush (a no-op on plain TCP).
        tokio::select! {
            biased;
            _ = info.killed() => return Ok(()),
            flushed = stream.flush() => flushed?,
        }
        read_acks(host, replica, inbuf);
        tokio::select! {
            biased;
            _ = info.killed() => return Ok(()),
            // The server stops: what the stream still holds goes out first, as Redis lets its
            // replicas catch up before it exits.
            _ = info.ended() => {
                return tokio::time::timeout(FINAL_DRAIN, send_rest(stream, feed, replica))
                    .await
                    .unwrap_or(Ok(()));
            }
            // Like Redis, which writes to its replicas once per event-loop turn: the commands of
            // the connections ready now go out together, in fewer and larger writes.
            _ = &mut grown => tokio::task::yield_now().await,
            read = stream.read_buf(inbuf) => {
                if read? == 0 {
                    return Ok(());
                }
                read_acks(host, replica, inbuf);
            }
        }
    }
}

/// Sends what the stream holds beyond the replica's offset.
async fn send_rest(
    stream: &mut impl crate::net::Stream,
    feed: &Feed,
    replica: &Attached,
) -> std::io::Result<()> {
    let mut chunk = Vec::with_capacity(CHUNK);
    while feed.read(&replica.sent, &mut chunk, CHUNK) && !chunk.is_empty() {
        stream.write_all(&chunk).await?;
        chunk.clear();
    }
    stream.flush().await
}

/// Takes the replica's `REPLCONF ACK <offset>` commands out of `inbuf` (anything else it sends
/// is ignored, as Redis ignores a replica's other commands' replies).
fn read_acks(host: &impl Host, replica: &Attached, inbuf: &mut BytesMut) {
    let mut ranges = Vec::new();
    let limits = crate::protocol::Limits {
        max_bulk_len: 1 << 20,
        max_args: 16,
        authenticated: true,
    };
    loop {
        let (consumed, ack) = match crate::protocol::parse_request(inbuf, limits, &mut ranges) {
            crate::protocol::Parsed::Request(consumed) => {
                let arg = |i: usize| ranges.get(i).map(|&(a, b)| &inbuf[a..b]);
                let is_ack = arg(0).is_some_and(|a| a.eq_ignore_ascii_case(b"replconf"))
                    && arg(1).is_some_and(|a| a.eq_ignore_ascii_case(b"ack"));
                let number =
                    |i| arg(i).and_then(|a| std::str::from_utf8(a).ok()?.parse::<u64>().ok());
                let fack = arg(3)
                    .is_some_and(|a| a.eq_ignore_ascii_case(b"fack"))
                    .then(|| number(4))
                    .flatten();
                (
                    consumed,
                    number(2).filter(|_| is_ack).map(|offset| (offset, fack)),
                )
            }
            crate::protocol::Parsed::Inline(consumed, _) => (consumed, None),
            crate::protocol::Parsed::Incomplete { .. } => return,
            crate::protocol::Parsed::Error(_) => {
                inbuf.clear();
                return;
            }
        };
        if let Some((offset, fack)) = ack {
            replica.acked.fetch_max(offset, Relaxed);
            if let Some(fack) = fack {
                replica.aof_acked.fetch_max(fack, Relaxed);
            }
            replica.last_ack_ms.store(crate::store::now_ms(), Relaxed);
            host.replication().master.acks.wake_all_where(|_| true);
        }
        let _ = inbuf.split_to(consumed);
    }
}

/// Pings the replicas through the stream every [`PING_EVERY`] while any is attached (one task).
fn start_pinger(host: &Arc<impl Host>) {
    let master = &host.replication().master;
    if master.pinging.swap(true, Relaxed) {
        return;
    }
    let weak = Arc::downgrade(host);
    tokio::spawn(async move {
        let ping = encode(&[b"PING"]);
        loop {
            tokio::time::sleep(PING_EVERY).await;
            let Some(host) = weak.upgrade() else {
                return;
            };
            if host.replication().master.any() {
                host.replication().feed.append(None, &ping);
            }
        }
    });
}
