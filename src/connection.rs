//! One client connection: read buffer and limits, request decoding, dispatch, and one write per
//! read batch (every reply of the batch is encoded into one output buffer). Plain TCP and TLS
//! clients run the same code: it is generic over the stream.

use crate::clients::{flag, ClientAddr, ClientInfo};
use crate::commands::Shared;
use crate::commands::{self, client, ConnState, Ctx};
use crate::metrics::Stats;
use crate::net::Stream;
use crate::output_limit::{ClassLimit, ClientClass};
use crate::protocol::{parse_request, Limits, Parsed, Reply};
use crate::pubsub::Delivery;
use bytes::{Buf, Bytes, BytesMut};
use smallvec::SmallVec;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// Returns once the tasks already queued on this worker have run: the task wakes itself and
/// returns `Pending` once, and tokio puts a task woken during its own poll at the back of the
/// worker's run queue. Unlike `tokio::task::yield_now`, which defers the task until the worker
/// has also polled the I/O driver, this costs no `epoll_wait` (`yield_now` added ~0.45 per
/// request with 50 clients at `-P 1`).
async fn behind_ready_tasks() {
    let mut queued = false;
    std::future::poll_fn(|cx| {
        if queued {
            return std::task::Poll::Ready(());
        }
        queued = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await
}

/// Spare read capacity kept before each read, so large values arrive in large chunks.
const READ_CHUNK: usize = 16 * 1024;
/// The query buffer's size once empty, as CLIENT LIST's `qbuf` + `qbuf-free` show it: Redis 7.2
/// makes room for its first 16 KiB read without over-allocating, which jemalloc rounds up to its
/// 20 KiB class, less the string header (20474); Redis keeps that allocation while it is empty.
const QUERY_BUF_START: usize = 20 * 1024 - 6;
/// The largest reply that waits for the end of the worker's turn (see `serve_loop`).
const DEFERRED_REPLY_MAX: usize = 8 * 1024;
/// Output size at which a batch stops to write what it has. A pipeline of many large replies
/// (thousands of GETs of big values in one read) then costs about this much memory, not the sum of
/// all its replies; the socket's backpressure holds back a client that does not read.
const FLUSH_AT: usize = 1024 * 1024;
/// Most we reserve ahead for a declared-but-not-yet-arrived argument: a client that declares a big
/// length and sends nothing must not make us allocate it.
const MAX_RESERVE_AHEAD: usize = 1024 * 1024;
/// Most Pub/Sub messages moved into one output batch, so a flood cannot grow one write unbounded.
const MAX_DRAIN: usize = 1024;

/// Resolves after `secs` seconds (the `timeout` setting); never when it is 0.
async fn idle_timeout(secs: u64) {
    if secs == 0 {
        std::future::pending::<()>().await;
    }
    tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
}

/// Tells a client it cannot be served, then closes.
pub async fn refuse(mut stream: impl Stream, error: &'static str) {
    let _ = stream.write_all(format!("-{error}\r\n").as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Serves one client until it quits, is killed, breaks the protocol or the server shuts down.
/// `peer`, `laddr` and `fd` are the socket's (taken before any TLS wrapping).
pub async fn serve(
    mut stream: impl Stream,
    peer: ClientAddr,
    laddr: ClientAddr,
    fd: i32,
    shared: Arc<Shared>,
) {
    let info = shared.clients.register(peer.clone(), laddr, fd);
    let default_user = shared.acl.default_user();
    let mut conn = ConnState::new(info.clone(), default_user.nopass && default_user.enabled);
    if let Err(err) = serve_loop(&mut stream, &shared, &mut conn, &info).await {
        tracing::debug!(client = info.id, %peer, %err, "connection ended with an error");
    }
    // SYNC/PSYNC: the connection is a replica's from now on.
    if let Some(handoff) = conn.replica_handoff.take() {
        let served =
            crate::replication::master::serve_replica(&mut stream, &shared, &info, handoff).await;
        if let Err(err) = served {
            tracing::info!(client = info.id, %peer, %err, "replica link ended");
        }
    }
    shared.pubsub.forget(&conn.subs, info.id);
    if conn.tracking.mode.is_some() {
        shared.events.tracking.remove(info.id);
        shared.events.update_gate();
    }
    if conn.monitor {
        shared.monitors.remove(info.id);
    }
    conn.wait = None; // leave any blocking queue now, waking the next client
    if info.output_limit_reached.load(Ordering::Relaxed) {
        Stats::add(&shared.stats.client_output_buffer_limit_disconnections, 1);
    }
    shared.clients.unregister(info.id);
}

/// How a batch of buffered requests ended.
enum Batch {
    /// Every complete request ran; read more.
    Done,
    /// The output grew past [`FLUSH_AT`]: write it, then run the requests still buffered.
    More,
    /// The connection must close once the output is written.
    Close,
    /// The output passed the client's hard limit: close without writing it.
    OverLimit,
    /// This command blocked (BLPOP…): wait, then run it again, before touching later requests.
    Blocked(Vec<Bytes>),
    /// A script call is in progress: this request is still at the head of the read buffer; wait
    /// for the script (or the BUSY threshold), then run the buffer again.
    ScriptWait,
    /// SYNC/PSYNC: the connection becomes a replica's once the output is written.
    Replica,
    /// Blocked clients were woken (perhaps by this batch's last write): let them be served
    /// before the next command, as Redis serves them between commands.
    Handoff,
}

/// The output-buffer class of a connection right now.
fn class(conn: &ConnState) -> ClientClass {
    if conn.subs.any() {
        ClientClass::PubSub
    } else {
        ClientClass::Normal
    }
}

async fn serve_loop(
    stream: &mut impl Stream,
    shared: &Shared,
    conn: &mut ConnState,
    info: &ClientInfo,
) -> std::io::Result<()> {
    let mut inbuf = BytesMut::with_capacity(QUERY_BUF_START);
    let mut out = BytesMut::with_capacity(READ_CHUNK);
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut limit = ClassLimit::default();
    let mut peak = ReplyPeak::default();
    loop {
        let (batch, commands) = run_buffered(
            shared,
            conn,
            info,
            &mut inbuf,
            &mut out,
            &mut ranges,
            &mut limit,
        );
        if matches!(batch, Batch::OverLimit) {
            info.close_for_output_limit(class(conn), "hard");
            return Ok(());
        }
        // A client that stops reading must not pin its task in a write forever: the soft output
        // limit, CLIENT KILL (and a Pub/Sub subscriber whose mailbox overflowed) end the write.
        // One clock reading for the batch: the client's last-active time and the reply's peak.
        if commands > 0 || !out.is_empty() {
            let now = crate::clock::monotonic_ns();
            if commands > 0 {
                info.last_active_ms
                    .store(now / 1_000_000, Ordering::Relaxed);
            }
            peak.observe(info, &out, now);
        }
        // The reply waits until this worker has served the other connections that are ready
        // (see `behind_ready_tasks`), as Redis writes all replies at the end of an event-loop
        // turn. Sent one after another, replies find the client that the first one woke still
        // running; sent between other connections' batches, each can find it asleep again and
        // pays for a wake-up inside `sendto` (9 % of stmd's time under pipelined EVALSHA before
        // this). Large replies go at once: waiting, every connection's would pile up in memory,
        // and their copying, not the wake-up, is what they cost.
        if !out.is_empty() && out.len() <= DEFERRED_REPLY_MAX && matches!(batch, Batch::Done) {
            behind_ready_tasks().await;
        }
        // With the append-only file on, replies to writes go once the writes are in it (and on the
        // disk under `appendfsync always`).
        crate::aof::before_reply(shared, conn.repl_offset).await;
        // `biased`: polled in this order, without the random start (and its RNG) of a fair
        // select. The write, which usually completes at once, comes first.
        tokio::select! {
            biased;
            written = flush(stream, shared, info, &mut out, limit) => if !written? {
                info.close_for_output_limit(class(conn), "soft");
                return Ok(());
            },
            _ = info.killed() => return Ok(()),
        }
        match batch {
            Batch::Close => {
                let _ = stream.shutdown().await;
                return Ok(());
            }
            Batch::Blocked(argv) => {
                if wait_blocked(
                    stream, shared, conn, info, &mut inbuf, &mut out, limit, argv,
                )
                .await?
                {
                    continue; // served or timed out: run what was pipelined behind it
                }
                return Ok(());
            }
            Batch::ScriptWait => {
                conn.script_wait = false;
                let turn = std::mem::take(&mut conn.script_turn);
                let threshold = shared.config.read().busy_reply_threshold;
                tokio::select! {
                    _ = shared.scripting.wait(turn, threshold) => continue,
                    _ = info.ended() => return Ok(()),
                }
            }
            Batch::More => continue,
            Batch::Handoff => {
                // The pause is a safety net: the batch looks again (a script that started meanwhile
                // lifts the wait, see `run_buffered`).
                tokio::select! {
                    biased;
                    _ = info.ended() => return Ok(()),
                    _ = shared.store.handoff.settled() => continue,
                    _ = tokio::time::sleep(std::time::Duration::from_millis(10)) => continue,
                }
            }
            Batch::Replica => {
                if let Some(handoff) = conn.replica_handoff.as_mut() {
                    handoff.pending = inbuf.split();
                }
                return Ok(());
            }
            Batch::Done | Batch::OverLimit => {}
        }
        if inbuf.is_empty() {
            // Reclaims the room the requests already run took (no copy, no allocation).
            inbuf.reserve(QUERY_BUF_START);
        }
        if inbuf.capacity() - inbuf.len() < READ_CHUNK / 2 {
            inbuf.reserve(READ_CHUNK);
        }
        // Subscribers and monitors are exempt from the idle timeout, as in Redis (and blocked clients never
        // get here while they wait).
        let idle_limit = if conn.subs.any() || conn.monitor {
            0
        } else {
            shared.config.read().timeout
        };
        // `biased`: an ended client is noticed first, even under a stream of requests; then its
        // requests, then its Pub/Sub messages.
        tokio::select! {
            biased;
            _ = info.ended() => return Ok(()),
            read = stream.read_buf(&mut inbuf) => {
                let read = read?;
                Stats::add(&shared.stats.total_reads_processed, 1);
                if read == 0 {
                    return Ok(());
                }
                Stats::add(&shared.stats.total_net_input_bytes, read as u64);
            }
            delivery = next_delivery(&mut conn.subs.inbox) => {
                take_delivery(conn, delivery, &mut out);
                drain_inbox(conn, &mut out);
            }
            _ = idle_timeout(idle_limit) => {
                tracing::debug!(client = info.id, "closing idle client");
                return Ok(());
            }
        }
    }
}

/// Writes the pending output in one write. Returns false, writing no more, when the client leaves
/// at least its soft limit unread for the soft-limit seconds. The clock costs nothing for smaller
/// writes and, as a timer is armed only when the write waits, little for large ones.
async fn flush(
    stream: &mut impl Stream,
    shared: &Shared,
    info: &ClientInfo,
    out: &mut BytesMut,
    limit: ClassLimit,
) -> std::io::Result<bool> {
    if !out.is_empty() {
        let pending = &info.published.omem;
        pending.store(out.len() as u64, Ordering::Relaxed);
        let write = async {
            stream.write_all(out).await?;
            stream.flush().await // TLS: push the last records out of the session
        };
        match limit.soft_deadline(out.len()) {
            None => write.await?,
            Some(deadline) => match tokio::time::timeout(deadline, write).await {
                Ok(written) => written?,
                Err(_) => return Ok(false),
            },
        }
        Stats::add(&shared.stats.total_net_output_bytes, out.len() as u64);
        Stats::add(&shared.stats.total_writes_processed, 1);
        pending.store(0, Ordering::Relaxed);
        out.clear();
        if out.capacity() > 4 * 1024 * 1024 {
            *out = BytesMut::with_capacity(READ_CHUNK); // give back a one-off huge reply
        }
        info.published
            .rbs
            .store(out.capacity() as u64, Ordering::Relaxed);
    }
    Ok(true)
}

/// How long CLIENT LIST's `rbp` (the reply buffer's peak use) remembers a peak, as Redis's.
const PEAK_WINDOW_NS: u64 = 5_000_000_000;

/// The reply buffer's peak use over the last [`PEAK_WINDOW_NS`], published as `rbp`.
#[derive(Default)]
struct ReplyPeak {
    peak: usize,
    /// When the peak was set ([`crate::clock::monotonic_ns`]).
    since: u64,
}

impl ReplyPeak {
    /// Called before each write with the bytes about to be written and the batch's clock
    /// reading (`now`, [`crate::clock::monotonic_ns`]): one comparison when the peak stands.
    fn observe(&mut self, info: &ClientInfo, out: &BytesMut, now: u64) {
        if out.is_empty() {
            return;
        }
        let len = out.len();
        if len > self.peak || now.saturating_sub(self.since) > PEAK_WINDOW_NS {
            self.peak = len;
            self.since = now;
            info.published.rbp.store(len as u64, Ordering::Relaxed);
        }
    }
}

/// The next Pub/Sub message for this connection; never resolves while it has no mailbox.
async fn next_delivery(inbox: &mut Option<mpsc::Receiver<Delivery>>) -> Option<Delivery> {
    match inbox {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

fn take_delivery(conn: &mut ConnState, delivery: Option<Delivery>, out: &mut BytesMut) {
    match delivery {
        Some(delivery) => {
            if let Some(mailbox) = &conn.subs.mailbox {
                mailbox.taken(&delivery);
            }
            if let Some(frame) = conn.subs.frame(&delivery) {
                frame.encode(conn.resp3, out);
            }
        }
        None => conn.subs.inbox = None,
    }
}

/// Moves the messages already waiting into the output, so they are written before the replies
/// of requests that arrived after them, and all in one write.
fn drain_inbox(conn: &mut ConnState, out: &mut BytesMut) {
    for _ in 0..MAX_DRAIN {
        let Some(rx) = conn.subs.inbox.as_mut() else {
            return;
        };
        match rx.try_recv() {
            Ok(delivery) => take_delivery(conn, Some(delivery), out),
            Err(_) => return,
        }
    }
}

/// Runs the complete requests at the head of `inbuf`, encoding replies into `out`; returns how
/// the batch ended and how many commands it ran. Sets `limit` to the connection's output-buffer
/// limit, read with the other settings once per batch.
fn run_buffered(
    shared: &Shared,
    conn: &mut ConnState,
    info: &ClientInfo,
    inbuf: &mut BytesMut,
    out: &mut BytesMut,
    ranges: &mut Vec<(usize, usize)>,
    limit: &mut ClassLimit,
) -> (Batch, u64) {
    drain_inbox(conn, out);
    let published = &info.published;
    published.qbuf.store(inbuf.len() as u64, Ordering::Relaxed);
    published
        .qbuf_free
        .store((inbuf.capacity() - inbuf.len()) as u64, Ordering::Relaxed);
    let (mut limits, query_limit) = {
        let c = shared.config.read();
        *limit = c.client_output_buffer_limit.get(class(conn));
        (
            Limits {
                max_bulk_len: c.proto_max_bulk_len as usize,
                max_args: c.proto_max_multibulk_len as usize,
                authenticated: true,
            },
            c.client_query_buffer_limit as usize,
        )
    };
    let mut pos = 0;
    let mut commands = 0u64;
    let mut batch = Batch::Done;
    while pos < inbuf.len() && matches!(batch, Batch::Done) {
        if out.len() >= FLUSH_AT {
            batch = Batch::More;
            break;
        }
        // One relaxed load when nobody was woken. While a script runs, the woken clients wait for
        // it to end and dispatch decides (wait or BUSY) for everyone else.
        if shared.store.handoff.pending() && !shared.scripting.run.is_active() {
            batch = Batch::Handoff;
            break;
        }
        // AUTH may come earlier in the same batch, so this is read per request.
        limits.authenticated = conn.authenticated;
        let inline_args;
        let args: SmallVec<[&[u8]; 16]>;
        let request_start = pos;
        match parse_request(&inbuf[pos..], limits, ranges) {
            Parsed::Request(used) => {
                let base = pos;
                pos += used;
                args = ranges
                    .iter()
                    .map(|&(s, e)| &inbuf[base + s..base + e])
                    .collect();
            }
            Parsed::Inline(used, owned) => {
                pos += used;
                inline_args = owned;
                args = inline_args.iter().map(Vec::as_slice).collect();
            }
            Parsed::Incomplete { min_total } => {
                let have = inbuf.len() - pos;
                if have > query_limit {
                    tracing::debug!(client = info.id, "query buffer limit reached, closing");
                    batch = Batch::Close;
                } else if min_total > have {
                    let ahead = (min_total - have).min(MAX_RESERVE_AHEAD);
                    if inbuf.capacity() - inbuf.len() < ahead {
                        inbuf.reserve(ahead);
                    }
                }
                break;
            }
            Parsed::Error(message) => {
                Reply::Error(message.into()).encode(conn.resp3, out);
                batch = Batch::Close;
                break;
            }
        }
        if args.is_empty() {
            continue; // empty inline line or `*0`: nothing to run
        }

        commands += 1;
        let reply = {
            let mut ctx = Ctx::new(shared, conn);
            commands::dispatch(&mut ctx, &args)
        };
        if conn.script_wait {
            // Not run: it stays in the buffer for the next pass.
            pos = request_start;
            commands -= 1;
            batch = Batch::ScriptWait;
        } else if conn.block.is_some() || conn.postponed {
            // An UNBLOCK meant for an earlier wait must not end this one.
            info.clear_unblock();
            batch = Batch::Blocked(args.iter().map(|a| Bytes::copy_from_slice(a)).collect());
        } else if conn.replica_handoff.is_some() {
            batch = Batch::Replica;
        } else {
            conn.replies.write(&reply, conn.resp3, out);
            if limit.over_hard(out.len()) {
                batch = Batch::OverLimit;
            } else if conn.close_after_reply {
                batch = Batch::Close;
            }
        }
    }
    inbuf.advance(pos);
    if commands > 0 {
        Stats::add(&shared.stats.total_commands_processed, commands);
    }
    publish_batch(conn, info, inbuf, &batch);
    (batch, commands)
}

/// Publishes the connection's state at the end of a read batch, for CLIENT LIST (relaxed stores
/// into the client's own record; see [`crate::clients::Published`]).
fn publish_batch(conn: &ConnState, info: &ClientInfo, inbuf: &BytesMut, batch: &Batch) {
    let published = &info.published;
    published.qbuf.store(inbuf.len() as u64, Ordering::Relaxed);
    published
        .qbuf_free
        .store((inbuf.capacity() - inbuf.len()) as u64, Ordering::Relaxed);
    let mut extra = 0;
    let mut argv_mem = 0;
    if let Batch::Blocked(argv) = batch {
        // A blocked command keeps its arguments, as Redis's blocked client keeps its argv.
        argv_mem = argv.iter().map(|a| a.len() as u64).sum();
        extra = flag::BLOCKED;
        if !conn.postponed {
            extra |= flag::IN_BLOCKING_COMMAND;
            if conn.block.as_ref().is_some_and(|b| b.deadline.is_some()) {
                extra |= flag::BLOCKED_WITH_TIMEOUT;
            }
        }
    }
    published.argv_mem.store(argv_mem, Ordering::Relaxed);
    client::publish(conn, extra);
}

/// Waits while a blocking command cannot be served, or while CLIENT PAUSE holds a command: reruns
/// it on each wake-up until it is served, times out or is unblocked (CLIENT UNBLOCK). Meanwhile
/// the socket is still read (so a disconnect is noticed and the client leaves the queue at once;
/// anything pipelined is kept for later) and Pub/Sub messages are still written. Returns false
/// when the connection must close.
#[allow(clippy::too_many_arguments)]
async fn wait_blocked(
    stream: &mut impl Stream,
    shared: &Shared,
    conn: &mut ConnState,
    info: &ClientInfo,
    inbuf: &mut BytesMut,
    out: &mut BytesMut,
    limit: ClassLimit,
    argv: Vec<Bytes>,
) -> std::io::Result<bool> {
    let query_limit = shared.config.read().client_query_buffer_limit as usize;
    let args: SmallVec<[&[u8]; 16]> = argv.iter().map(|a| &a[..]).collect();
    // The deadline of the blocking command's first wait: a rerun that blocks again keeps it.
    let mut first_deadline: Option<Option<std::time::Instant>> = None;
    let served = loop {
        let postponed = conn.postponed;
        if !postponed && first_deadline.is_none() {
            first_deadline = Some(conn.block.as_ref().and_then(|b| b.deadline));
        }
        let deadline = first_deadline.flatten();
        let waiter = conn.wait.as_ref().map(|g| g.waiter().clone());
        if let (Some(w), false) = (&waiter, postponed) {
            w.park(); // from here a wake-up holds other commands back until the rerun is over
        }
        // However this iteration ends (served, timed out, unblocked, closed, an error), the
        // waiter stops being owed: a woken client that times out at the same moment must not
        // hold every other client back.
        let _settle = SettleOnDrop(waiter.clone());
        let woken = async {
            if postponed {
                match shared.cluster.as_deref() {
                    // Postponed by a slot migration's pause (or by CLIENT PAUSE, rechecked after).
                    Some(cluster) if cluster.gate.pausing() => cluster.gate.resumed().await,
                    _ => shared.store.pause.changed().await,
                }
            } else {
                match &waiter {
                    Some(w) => w.woken().await,
                    None => std::future::pending().await,
                }
                // Woken by a script's write: served when the script has ended.
                shared.scripting.run.until_idle().await;
            }
        };
        let timeout = async {
            match deadline {
                Some(at) if !postponed => tokio::time::sleep_until(at.into()).await,
                _ => std::future::pending().await,
            }
        };
        let unblocked = async {
            if postponed {
                std::future::pending().await
            } else {
                info.unblocked().await
            }
        };
        tokio::select! {
            _ = woken => {
                conn.block = None;
                conn.postponed = false;
                let mut reply = commands::dispatch(&mut Ctx::new(shared, conn), &args);
                while std::mem::take(&mut conn.script_wait) {
                    let turn = std::mem::take(&mut conn.script_turn);
                    let threshold = shared.config.read().busy_reply_threshold;
                    shared.scripting.wait(turn, threshold).await;
                    reply = commands::dispatch(&mut Ctx::new(shared, conn), &args);
                }
                if let Some(w) = &waiter {
                    w.settle(); // before the reply is written: a slow reader holds nobody back
                }
                if conn.block.is_none() && !conn.postponed {
                    conn.wait = None;
                    finish(conn, reply, out);
                    break true;
                }
                // Still waiting (perhaps now in the command itself, after a pause): publish that.
                publish_batch(conn, info, inbuf, &Batch::Blocked(argv.clone()));
            }
            _ = timeout => {
                conn.wait = None;
                if let Some(block) = conn.block.take() {
                    finish(conn, block.timeout_reply, out);
                }
                break true;
            }
            with_error = unblocked => {
                conn.wait = None;
                if let Some(block) = conn.block.take() {
                    let reply = if with_error {
                        Reply::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
                    } else {
                        block.timeout_reply
                    };
                    finish(conn, reply, out);
                }
                break true;
            }
            read = stream.read_buf(inbuf) => {
                Stats::add(&shared.stats.total_reads_processed, 1);
                if read? == 0 || inbuf.len() > query_limit {
                    break false;
                }
            }
            delivery = next_delivery(&mut conn.subs.inbox) => {
                if let Some(w) = &waiter {
                    w.settle(); // a write the client does not read must not hold others back
                }
                take_delivery(conn, delivery, out);
                drain_inbox(conn, out);
                tokio::select! {
                    written = flush(stream, shared, info, out, limit) => if !written? {
                        info.close_for_output_limit(class(conn), "soft");
                        break false;
                    },
                    _ = info.killed() => break false,
                }
            }
            _ = info.ended() => break false,
        }
    };
    publish_batch(conn, info, inbuf, &Batch::Done);
    Ok(served)
}

/// Settles a blocked client's waiter when dropped (see [`crate::store::blocking::Waiter::settle`]).
struct SettleOnDrop(Option<Arc<crate::store::blocking::Waiter>>);

impl Drop for SettleOnDrop {
    fn drop(&mut self) {
        if let Some(waiter) = &self.0 {
            waiter.settle();
        }
    }
}

/// Encodes the final reply of a command that waited, unless CLIENT REPLY drops it.
fn finish(conn: &mut ConnState, reply: Reply, out: &mut BytesMut) {
    conn.replies.write(&reply, conn.resp3, out);
}
