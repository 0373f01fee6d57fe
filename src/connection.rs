//! One client connection: read buffer and limits, request decoding, dispatch, and one write per
//! read batch (every reply of the batch is encoded into one output buffer).

use crate::clients::ClientInfo;
use crate::commands::{self, ConnState, Ctx};
use crate::metrics::Stats;
use crate::protocol::{parse_request, Limits, Parsed, Reply};
use crate::server::Shared;
use bytes::{Buf, BytesMut};
use smallvec::SmallVec;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Spare read capacity kept before each read, so large values arrive in large chunks.
const READ_CHUNK: usize = 16 * 1024;
/// Most we reserve ahead for a declared-but-not-yet-arrived argument: a client that declares a big
/// length and sends nothing must not make us allocate it.
const MAX_RESERVE_AHEAD: usize = 1024 * 1024;

/// Resolves after `secs` seconds (the `timeout` setting); never when it is 0.
async fn idle_timeout(secs: u64) {
    if secs == 0 {
        std::future::pending::<()>().await;
    }
    tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
}

/// Tells a client it cannot be served, then closes.
pub async fn refuse(mut stream: TcpStream, error: &'static str) {
    let _ = stream.write_all(format!("-{error}\r\n").as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Serves one client until it quits, is killed, breaks the protocol or the server shuts down.
pub async fn serve(
    mut stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let laddr = stream.local_addr().unwrap_or(shared.local_addr);
    let info = shared.clients.register(peer, laddr);
    let mut conn = ConnState::new(info.clone(), shared.config.read().requirepass.is_empty());
    if let Err(err) = serve_loop(&mut stream, &shared, &mut conn, &info, &mut stop).await {
        tracing::debug!(client = info.id, %peer, %err, "connection ended with an error");
    }
    shared.clients.unregister(info.id);
}

async fn serve_loop(
    stream: &mut TcpStream,
    shared: &Shared,
    conn: &mut ConnState,
    info: &ClientInfo,
    stop: &mut watch::Receiver<bool>,
) -> std::io::Result<()> {
    let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = BytesMut::with_capacity(READ_CHUNK);
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    loop {
        if inbuf.capacity() - inbuf.len() < READ_CHUNK / 2 {
            inbuf.reserve(READ_CHUNK);
        }
        let idle_limit = shared.config.read().timeout;
        let read = tokio::select! {
            read = stream.read_buf(&mut inbuf) => read?,
            _ = info.kill.notified() => return Ok(()),
            _ = stop.changed() => return Ok(()),
            _ = idle_timeout(idle_limit) => {
                tracing::debug!(client = info.id, "closing idle client");
                return Ok(());
            }
        };
        if read == 0 {
            return Ok(());
        }
        Stats::add(&shared.stats.total_net_input_bytes, read as u64);

        let (mut limits, query_limit) = {
            let c = shared.config.read();
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
        let mut close = false;
        while pos < inbuf.len() && !close {
            // AUTH may come earlier in the same batch, so this is read per request.
            limits.authenticated = conn.authenticated;
            let inline_args;
            let args: SmallVec<[&[u8]; 16]>;
            match parse_request(&inbuf[pos..], limits, &mut ranges) {
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
                        close = true;
                    } else if min_total > have {
                        let ahead = (min_total - have).min(MAX_RESERVE_AHEAD);
                        if inbuf.capacity() - inbuf.len() < ahead {
                            inbuf.reserve(ahead);
                        }
                    }
                    break;
                }
                Parsed::Error(message) => {
                    Reply::Error(message.into()).encode(conn.resp3, &mut out);
                    close = true;
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
            reply.encode(conn.resp3, &mut out);
            close = conn.close_after_reply;
        }
        inbuf.advance(pos);
        if commands > 0 {
            Stats::add(&shared.stats.total_commands_processed, commands);
            info.last_active_ms.store(
                info.connected_at.elapsed().as_millis() as u64,
                Ordering::Relaxed,
            );
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            Stats::add(&shared.stats.total_net_output_bytes, out.len() as u64);
            out.clear();
            if out.capacity() > 4 * 1024 * 1024 {
                out = BytesMut::with_capacity(READ_CHUNK); // give back a one-off huge reply
            }
        }
        if close {
            let _ = stream.shutdown().await;
            return Ok(());
        }
    }
}
