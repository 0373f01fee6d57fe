//! The replica's link to its primary: the hand-shake (PING, AUTH, REPLCONF, PSYNC), the full sync
//! loaded with every database locked, then the primary's stream applied command by command as
//! Redis's master client is obeyed, with acknowledgements every second. The commands run through
//! an [`Applier`] the server injects: commands are a layer above replication.

use super::replica::{LinkState, Replica, Target};
use super::Host;
use crate::clients::{ClientAddr, ClientInfo};
use crate::net::Stream;
use crate::protocol::{parse_request, Limits, Parsed, Reply};
use bytes::{Buf, BytesMut};
use smallvec::SmallVec;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// How long a failed or broken link waits before it is made again.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// How often the applied offset is acknowledged to the primary.
const ACK_EVERY: Duration = Duration::from_secs(1);

/// Runs the primary's commands here, as one connection obeyed as Redis's master client is: no
/// ACL, READONLY, OOM or pause refusal, never a blocking wait. One per link, made by the
/// server's `new_applier` (see [`run`]), as the append-only file's load gets its `Replayer`.
pub trait Applier: Send {
    /// Runs one command of the stream.
    fn run(&mut self, args: &[&[u8]]) -> Ran;
    /// Whether a MULTI is open: its commands' bytes count once its EXEC ran.
    fn in_multi(&self) -> bool;
    /// The database the stream selected, kept for a continued sync.
    fn db(&self) -> usize;
    /// Shows the connection's state (flags) in CLIENT LIST.
    fn publish(&self);
}

/// What [`Applier::run`] came to.
pub enum Ran {
    /// The command ran: its reply (dropped, an error logged).
    Done(Reply),
    /// A client's script runs, so the command did not: it runs again once every script call
    /// ended, or (`turn`: itself a script) once the engine is free for it.
    AfterScript { turn: bool },
}

/// Follows the targets REPLICAOF sets, until `stop` (the server's shutdown). The commands of
/// each link run through the applier `new_applier` makes for the link's client record, in the
/// database given (the one the primary's stream last selected).
pub async fn run<H: Host, A: Applier>(
    host: Arc<H>,
    mut stop: watch::Receiver<bool>,
    new_applier: impl Fn(&Arc<H>, Arc<ClientInfo>, usize) -> A + Send + Sync,
) {
    let mut targets = host.replication().replica.target.subscribe();
    loop {
        let current = targets.borrow_and_update().clone();
        let link = async {
            match current {
                Some((target, generation)) => {
                    keep_following(&host, &target, generation, &new_applier).await
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = stop.changed() => return,
            changed = targets.changed() => if changed.is_err() {
                return;
            },
            _ = link => {}
        }
    }
}

/// Makes the link again and again, a second apart, for as long as the target stays.
async fn keep_following<H: Host, A: Applier>(
    host: &Arc<H>,
    target: &Target,
    generation: u64,
    new_applier: &(impl Fn(&Arc<H>, Arc<ClientInfo>, usize) -> A + Sync),
) {
    let replica = &host.replication().replica;
    // The primary's selected database, kept across a continued (partial) sync as Redis keeps its
    // cached master client: the primary does not select it again.
    let mut db = 0usize;
    loop {
        let outcome = link(host, target, generation, &mut db, new_applier).await;
        if !replica.current(generation) {
            return;
        }
        let was_up = replica.state() == LinkState::Connected;
        replica.update(generation, |status| {
            // Counted from the loss of a link that was up (-1 before any, as Redis).
            if was_up {
                status.down_since_ms = crate::clock::monotonic_ms().max(1);
            }
            status.sync_total = 0;
            status.sync_read = 0;
        });
        replica.set_state(generation, LinkState::Connect);
        if let Err(why) = outcome {
            tracing::warn!(host = %target.host, port = target.port, %why, "replication link to the primary lost; retrying in 1 s");
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

/// The connection to the primary (plain TCP, or TLS with `tls-replication`) with what was read
/// and not used yet.
struct Conn {
    stream: Box<dyn Stream>,
    /// The socket's addresses and descriptor (taken before any TLS wrapping).
    peer: SocketAddr,
    local: SocketAddr,
    fd: i32,
    inbuf: BytesMut,
    /// `repl-timeout`: the longest wait for the primary's next bytes.
    timeout: Duration,
}

impl Conn {
    async fn send(&mut self, args: &[&[u8]]) -> Result<(), String> {
        self.send_raw(&super::feed::encode(args)).await
    }

    /// Writes `frame` out (flushed: TLS may hold written bytes until then).
    async fn send_raw(&mut self, frame: &[u8]) -> Result<(), String> {
        let written = async {
            self.stream.write_all(frame).await?;
            self.stream.flush().await
        };
        written
            .await
            .map_err(|e| format!("write to the primary failed: {e}"))
    }

    /// Reads more bytes; an error at the end of the stream or after `timeout` of silence.
    async fn fill(&mut self) -> Result<usize, String> {
        if self.inbuf.capacity() - self.inbuf.len() < 16 * 1024 {
            self.inbuf.reserve(64 * 1024);
        }
        match tokio::time::timeout(self.timeout, self.stream.read_buf(&mut self.inbuf)).await {
            Err(_) => Err("timeout: no data from the primary".into()),
            Ok(Err(e)) => Err(format!("read from the primary failed: {e}")),
            Ok(Ok(0)) => Err("the primary closed the connection".into()),
            Ok(Ok(n)) => Ok(n),
        }
    }

    /// One reply line without its line end. An empty line is the primary's keep-alive (`\n`).
    async fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(end) = memchr::memchr(b'\n', &self.inbuf) {
                let line = self.inbuf.split_to(end + 1);
                let text = line.strip_suffix(b"\r\n").unwrap_or(&line[..end]);
                return Ok(String::from_utf8_lossy(text).into_owned());
            }
            if self.inbuf.len() > 64 * 1024 {
                return Err("protocol error: reply line too long".into());
            }
            self.fill().await?;
        }
    }

    /// A reply line, skipping the primary's keep-alive newlines.
    async fn reply(&mut self) -> Result<String, String> {
        loop {
            let line = self.line().await?;
            if !line.is_empty() {
                return Ok(line);
            }
        }
    }
}

/// Connects to the primary, over TLS with `tls-replication`.
async fn connect(host: &impl Host, target: &Target, timeout: Duration) -> Result<Conn, String> {
    let tls = match host.config().read().tls_replication {
        true => Some(
            host.tls()
                .connector()
                .ok_or("tls-replication: TLS is not configured")?,
        ),
        false => None,
    };
    let stream = TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("cannot connect to the primary: {e}"))?;
    let _ = stream.set_nodelay(true);
    let peer = stream
        .peer_addr()
        .map_err(|e| format!("the primary's address: {e}"))?;
    let local = stream.local_addr().unwrap_or(host.local_addr());
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let stream: Box<dyn Stream> = match tls {
        Some(connector) => Box::new(
            crate::tls::connect(&connector, &target.host, stream)
                .await
                .map_err(|why| format!("with the primary: {why}"))?,
        ),
        None => Box::new(stream),
    };
    Ok(Conn {
        stream,
        peer,
        local,
        fd,
        inbuf: BytesMut::with_capacity(64 * 1024),
        timeout,
    })
}

/// One link: connect, hand-shake, sync, then apply the stream until it breaks (always an error).
async fn link<H: Host, A: Applier>(
    host: &Arc<H>,
    target: &Target,
    generation: u64,
    db: &mut usize,
    new_applier: &(impl Fn(&Arc<H>, Arc<ClientInfo>, usize) -> A + Sync),
) -> Result<(), String> {
    let replica = &host.replication().replica;
    let (timeout, user, password) = {
        let config = host.config().read();
        // A cluster replica's primary shares its `requirepass` (as the nodes' peer links do).
        let password = match config.masterauth.is_empty() && host.cluster().is_some() {
            true => config.requirepass.clone(),
            false => config.masterauth.clone(),
        };
        (
            Duration::from_secs(config.repl_timeout.max(1)),
            config.masteruser.clone(),
            password,
        )
    };
    replica.set_state(generation, LinkState::Connecting);
    let mut conn = match tokio::time::timeout(timeout, connect(&**host, target, timeout)).await {
        Ok(conn) => conn?,
        Err(_) => return Err("timeout connecting to the primary".into()),
    };
    replica.set_state(generation, LinkState::Handshake);
    conn.send(&[b"PING"]).await?;
    let pong = conn.reply().await?;
    // A primary that wants a password answers PING with NOAUTH (or NOPERM): AUTH comes next.
    if !(pong.starts_with('+')
        || pong.starts_with("-NOAUTH")
        || pong.starts_with("-NOPERM")
        || pong.starts_with("-ERR operation not permitted"))
    {
        return Err(format!("error reply to PING from the primary: '{pong}'"));
    }
    if !password.is_empty() {
        let mut auth: SmallVec<[&[u8]; 3]> = SmallVec::new();
        auth.push(b"AUTH");
        if !user.is_empty() {
            auth.push(user.as_bytes());
        }
        auth.push(password.as_bytes());
        conn.send(&auth).await?;
        let reply = conn.reply().await?;
        if reply.starts_with('-') {
            return Err(format!("unable to AUTH to the primary: {reply}"));
        }
    }
    // The address the primary shows for this replica (INFO, ROLE), where Sentinel finds it.
    let (announce_ip, announce_port) = {
        let config = host.config().read();
        (
            config.replica_announce_ip.clone(),
            config.replica_announce_port,
        )
    };
    let port = match announce_port {
        0 => host.tcp_port(),
        port => port,
    };
    conn.send(&[b"REPLCONF", b"listening-port", port.to_string().as_bytes()])
        .await?;
    let reply = conn.reply().await?;
    if reply.starts_with('-') {
        tracing::info!(%reply, "the primary did not take REPLCONF listening-port; going on");
    }
    if !announce_ip.is_empty() {
        conn.send(&[b"REPLCONF", b"ip-address", announce_ip.as_bytes()])
            .await?;
        let reply = conn.reply().await?;
        if reply.starts_with('-') {
            tracing::info!(%reply, "the primary did not take REPLCONF ip-address; going on");
        }
    }
    conn.send(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])
        .await?;
    let reply = conn.reply().await?;
    if reply.starts_with('-') {
        tracing::info!(%reply, "the primary did not take REPLCONF capa; going on");
    }
    let history = replica.status.lock().history;
    let (replid, next) = if history {
        let replid = host.replication().replid.lock().clone();
        (replid, (host.replication().offset() + 1).to_string())
    } else {
        ("?".to_string(), "-1".to_string())
    };
    // FAILOVER's hand-over asks the target to take over this history.
    let failover = &host.replication().failover;
    let handing_over = failover.phase() == super::failover::Phase::InProgress;
    if handing_over {
        conn.send(&[b"PSYNC", replid.as_bytes(), next.as_bytes(), b"FAILOVER"])
            .await?;
    } else {
        conn.send(&[b"PSYNC", replid.as_bytes(), next.as_bytes()])
            .await?;
    }
    let reply = conn.reply().await?;
    if handing_over {
        let accepted = reply.starts_with("+FULLRESYNC") || reply.starts_with("+CONTINUE");
        failover.target_answered(&**host, accepted);
    }
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC ") {
        let mut words = rest.split_whitespace();
        let (Some(id), Some(offset)) = (words.next(), words.next()) else {
            return Err(format!("bad FULLRESYNC reply from the primary: '{reply}'"));
        };
        let offset: u64 = offset
            .parse()
            .map_err(|_| format!("bad FULLRESYNC offset from the primary: '{reply}'"))?;
        if id.len() != 40 {
            return Err(format!("bad FULLRESYNC id from the primary: '{reply}'"));
        }
        replica.set_state(generation, LinkState::Sync);
        let (payload, diskless) = read_payload(&mut conn, replica, generation).await?;
        if !replica.current(generation) {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let worker = host.clone();
        let loaded = tokio::task::spawn_blocking(move || load_sync(&*worker, &payload))
            .await
            .map_err(|e| format!("the load of the primary's data failed: {e}"))??;
        *host.replication().replid.lock() = id.to_string();
        host.replication().offset.store(offset, Relaxed);
        replica.read_offset.store(offset, Relaxed);
        *db = 0;
        replica.update(generation, |status| status.history = true);
        tracing::info!(
            keys = loaded,
            ms = started.elapsed().as_millis() as u64,
            replid = id,
            offset,
            "full sync with the primary done"
        );
        // A diskless primary puts this replica online at its first ACK.
        if diskless {
            send_ack(&mut conn, &**host).await?;
        }
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        if !history {
            return Err("the primary answered CONTINUE to a new replica".into());
        }
        // psync2: the primary's history may have a new id (it was promoted); ours follows.
        let new_id = rest.trim();
        if new_id.len() == 40 && *host.replication().replid.lock() != new_id {
            host.replication().shift_replid();
            *host.replication().replid.lock() = new_id.to_string();
        }
        tracing::info!("partial resynchronization with the primary accepted");
    } else {
        return Err(format!(
            "unexpected reply to PSYNC from the primary: '{reply}'"
        ));
    }
    stream_commands(host, &mut conn, generation, db, target, new_applier).await
}

/// The RDB after FULLRESYNC: `$<len>\r\n<len bytes>`, or diskless `$EOF:<40-byte mark>\r\n<bytes>
/// <mark>`; keep-alive newlines may come first. True as the second value for the diskless form.
async fn read_payload(
    conn: &mut Conn,
    replica: &Replica,
    generation: u64,
) -> Result<(Vec<u8>, bool), String> {
    let header = conn.reply().await?;
    let Some(spec) = header.strip_prefix('$') else {
        return Err(format!(
            "bad full sync payload from the primary: '{header}'"
        ));
    };
    if let Some(mark) = spec.strip_prefix("EOF:") {
        let mark = mark.as_bytes().to_vec();
        if mark.len() != 40 {
            return Err("bad diskless payload mark from the primary".into());
        }
        replica.update(generation, |s| s.sync_total = -1);
        let mut payload: Vec<u8> = Vec::new();
        loop {
            payload.extend_from_slice(&conn.inbuf);
            conn.inbuf.clear();
            replica.update(generation, |s| s.sync_read = payload.len() as u64);
            if payload.ends_with(&mark) {
                payload.truncate(payload.len() - mark.len());
                return Ok((payload, true));
            }
            conn.fill().await?;
            replica
                .last_io_ms
                .store(crate::clock::monotonic_ms(), Relaxed);
        }
    }
    let len: usize = spec
        .parse()
        .map_err(|_| format!("bad full sync payload length from the primary: '{header}'"))?;
    replica.update(generation, |s| s.sync_total = len as i64);
    let mut payload: Vec<u8> = Vec::with_capacity(len.min(64 * 1024 * 1024));
    while payload.len() < len {
        if conn.inbuf.is_empty() {
            conn.fill().await?;
            replica
                .last_io_ms
                .store(crate::clock::monotonic_ms(), Relaxed);
        }
        let take = conn.inbuf.len().min(len - payload.len());
        payload.extend_from_slice(&conn.inbuf[..take]);
        conn.inbuf.advance(take);
        replica.update(generation, |s| s.sync_read = payload.len() as u64);
    }
    Ok((payload, false))
}

/// Replaces the whole keyspace and the function libraries with the primary's RDB. Every database
/// is locked while it is emptied and loaded, so a client sees the old data or the new, never a
/// mix; STM scope rows are not touched (as FLUSHALL). Returns the keys loaded.
fn load_sync(host: &impl Host, payload: &[u8]) -> Result<u64, String> {
    let store = host.store();
    let dbs: Vec<usize> = (0..store.databases()).collect();
    let mut loaded = {
        let mut locked = store.lock_dbs(&dbs);
        for keys in locked.iter_mut() {
            keys.clear();
        }
        match crate::snapshot::load_bytes(payload, store, Some(&mut locked[..])) {
            Ok(loaded) => loaded,
            Err(why) => {
                // Half a keyspace is worse than none: Redis empties it too.
                for keys in locked.iter_mut() {
                    keys.clear();
                }
                return Err(format!("cannot load the primary's data: {why}"));
            }
        }
    };
    // The engine after the keys: EXEC takes its locks before the engine, so never the reverse.
    host.scripting()
        .engine()
        .restore_functions(
            &loaded.functions,
            crate::scripting::functions::RestorePolicy::Flush,
        )
        .map_err(|e| format!("cannot load the primary's functions: {e}"))?;
    host.snapshots().note_load(&loaded, store);
    // The flush drops every index when it is applied here; the primary's come after it, before
    // the log's new base is written (it carries their definitions).
    host.after_background_work();
    crate::snapshot::restore_indexes(host, &mut loaded);
    host.aof().rewrite_after_sync();
    Ok(loaded.keys)
}

async fn send_ack(conn: &mut Conn, host: &impl Host) -> Result<(), String> {
    let mut frame = Vec::new();
    ack_frame(host, &mut frame);
    conn.send_raw(&frame).await
}

/// `REPLCONF ACK <offset>`, with `FACK <offset>` (Redis 7.2: how far the replica's append-only
/// log is synced, for the primary's WAITAOF) while the log is on.
fn ack_frame(host: &impl Host, out: &mut Vec<u8>) {
    let offset = host.replication().offset().to_string();
    // The applied commands go into the log now rather than on the writer's next tick.
    crate::aof::write_now(host);
    match host.aof().synced_primary_offset() {
        Some(fack) => {
            let fack = fack.to_string();
            super::feed::encode_into(
                out,
                [
                    &b"REPLCONF"[..],
                    b"ACK",
                    offset.as_bytes(),
                    b"FACK",
                    fack.as_bytes(),
                ]
                .into_iter(),
            );
        }
        None => super::feed::encode_into(
            out,
            [&b"REPLCONF"[..], b"ACK", offset.as_bytes()].into_iter(),
        ),
    }
}

/// Unregisters the primary's client record when the link ends, however it ends.
struct Registered<'a, H: Host> {
    host: &'a H,
    id: u64,
}

impl<H: Host> Drop for Registered<'_, H> {
    fn drop(&mut self) {
        self.host.clients().unregister(self.id);
    }
}

/// Applies the primary's commands as they arrive, acknowledging the offset every second, until
/// the link breaks (an error), times out, is killed (CLIENT KILL) or the target changes.
async fn stream_commands<H: Host, A: Applier>(
    host: &Arc<H>,
    conn: &mut Conn,
    generation: u64,
    db: &mut usize,
    target: &Target,
    new_applier: &(impl Fn(&Arc<H>, Arc<ClientInfo>, usize) -> A + Sync),
) -> Result<(), String> {
    let replica = &host.replication().replica;
    let (peer, local) = (ClientAddr::Tcp(conn.peer), ClientAddr::Tcp(conn.local));
    let info = host.clients().register(peer, local, conn.fd);
    let _registered = Registered {
        host: &**host,
        id: info.id,
    };
    let mut applier = new_applier(host, info.clone(), *db);
    let now = crate::clock::monotonic_ms();
    replica.last_io_ms.store(now, Relaxed);
    replica.update(generation, |status| status.down_since_ms = 0);
    replica.set_state(generation, LinkState::Connected);
    tracing::info!(host = %target.host, port = target.port, "following the primary: link up");
    let mut ack = tokio::time::interval(ACK_EVERY);
    ack.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    // Bytes of a transaction in progress (MULTI … EXEC): counted when it ends, as Redis's
    // `reploff`, so a link broken inside one continues from its MULTI.
    let mut pending = 0u64;
    let mut out: Vec<u8> = Vec::new();
    let result = loop {
        if let Err(why) = apply(
            &**host,
            &mut applier,
            &info,
            conn,
            &mut ranges,
            &mut pending,
            &mut out,
            generation,
        )
        .await
        {
            break Err(why);
        }
        *db = applier.db();
        applier.publish();
        replica.read_offset.store(
            host.replication().offset() + pending + conn.inbuf.len() as u64,
            Relaxed,
        );
        if !out.is_empty() {
            if let Err(why) = conn.send_raw(&out).await {
                break Err(why);
            }
            out.clear();
        }
        if !replica.current(generation) {
            break Ok(());
        }
        if conn.inbuf.capacity() - conn.inbuf.len() < 16 * 1024 {
            conn.inbuf.reserve(64 * 1024);
        }
        tokio::select! {
            biased;
            _ = info.ended() => break Err("the primary's client was killed".into()),
            read = conn.stream.read_buf(&mut conn.inbuf) => match read {
                Ok(0) => break Err("the primary closed the connection".into()),
                Ok(n) => {
                    replica.last_io_ms.store(crate::clock::monotonic_ms(), Relaxed);
                    crate::metrics::Stats::add(&host.stats().total_net_input_bytes, n as u64);
                }
                Err(e) => break Err(format!("read from the primary failed: {e}")),
            },
            _ = ack.tick() => {
                let silent = crate::clock::monotonic_ms()
                    .saturating_sub(replica.last_io_ms.load(Relaxed));
                if silent > conn.timeout.as_millis() as u64 {
                    break Err("timeout: no data from the primary".into());
                }
                if let Err(why) = send_ack(conn, &**host).await {
                    break Err(why);
                }
            }
        }
    };
    // A transaction cut by the break is dropped with the applier: the primary sends it again
    // from its MULTI.
    result
}

/// Runs the complete commands at the head of the read buffer. `REPLCONF GETACK` is answered
/// into `out` with the offset before it; every other reply is dropped.
#[allow(clippy::too_many_arguments)]
async fn apply(
    host: &impl Host,
    applier: &mut impl Applier,
    info: &ClientInfo,
    conn: &mut Conn,
    ranges: &mut Vec<(usize, usize)>,
    pending: &mut u64,
    out: &mut Vec<u8>,
    generation: u64,
) -> Result<(), String> {
    let replica = &host.replication().replica;
    let limits = {
        let config = host.config().read();
        Limits {
            max_bulk_len: config.proto_max_bulk_len as usize,
            max_args: config.proto_max_multibulk_len as usize,
            authenticated: true,
        }
    };
    let mut pos = 0;
    let mut applied = 0u64;
    let result = loop {
        if pos >= conn.inbuf.len() {
            break Ok(());
        }
        if !replica.current(generation) {
            break Ok(());
        }
        let inline_args;
        let args: SmallVec<[&[u8]; 16]>;
        let used = match parse_request(&conn.inbuf[pos..], limits, ranges) {
            Parsed::Request(used) => {
                let base = pos;
                args = ranges
                    .iter()
                    .map(|&(s, e)| &conn.inbuf[base + s..base + e])
                    .collect();
                used
            }
            Parsed::Inline(used, owned) => {
                inline_args = owned;
                args = inline_args.iter().map(Vec::as_slice).collect();
                used
            }
            Parsed::Incomplete { .. } => break Ok(()),
            Parsed::Error(message) => {
                break Err(format!("protocol error in the primary's stream: {message}"))
            }
        };
        pos += used;
        let used = used as u64;
        if args.is_empty() {
            host.replication().offset.fetch_add(used, Relaxed);
            continue;
        }
        if args[0].eq_ignore_ascii_case(b"replconf") {
            // GETACK is answered with the offset before its own frame, as Redis's.
            if args
                .get(1)
                .is_some_and(|a| a.eq_ignore_ascii_case(b"getack"))
            {
                ack_frame(host, out);
            }
            host.replication().offset.fetch_add(used, Relaxed);
            continue;
        }
        let reply = loop {
            match applier.run(&args) {
                Ran::Done(reply) => break reply,
                // A client's script runs: the primary's command waits for it however long it
                // runs, as on Redis (which keeps the stream unread meanwhile); never a BUSY.
                Ran::AfterScript { turn: true } => host.scripting().wait_turn(u64::MAX).await,
                Ran::AfterScript { turn: false } => host.scripting().run.until_idle().await,
            }
        };
        if let Reply::Error(text) = &reply {
            tracing::debug!(command = %String::from_utf8_lossy(args[0]), %text, "the primary's command failed here");
        }
        applied += 1;
        if applier.in_multi() {
            *pending += used;
        } else {
            host.replication()
                .offset
                .fetch_add(std::mem::take(pending) + used, Relaxed);
        }
    };
    conn.inbuf.advance(pos);
    if applied > 0 {
        host.aof()
            .mark_applied(host.replication().feed.end(), host.replication().offset());
        crate::metrics::Stats::add(&host.stats().total_commands_processed, applied);
        info.last_active_ms
            .store(crate::clock::monotonic_ms(), Relaxed);
    }
    result
}
