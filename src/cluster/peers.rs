//! Node-to-node requests: the few commands that span every node (STM.RECENT, STM.FORGET USER)
//! and PUBLISH forwarding. There is still no gossip bus: a node talks to the others only over
//! their client port, with stmd's internal `CLUSTER PEER <node-id> …` form (see
//! [`crate::commands::cluster`]), which names the node it is sent to so a client cannot mistake it
//! for the public command.
//!
//! - Questions ([`Peers::ask_all`]) go to every other primary of the slot map in parallel, over one
//!   pooled connection per peer, and must all be answered within [`answer_timeout`]; otherwise the
//!   whole request fails (never a silently partial answer). Replies are decoded with the
//!   `redis-protocol` crate.
//! - PUBLISH ([`Peers::forward`]) goes through one queue and one connection per peer, in order,
//!   with `CLIENT REPLY OFF`: it does not wait for the peers, like Redis Cluster's bus. A peer that
//!   cannot be reached loses the message (Pub/Sub is at-most-once).
//!
//! When `requirepass` is set, node-to-node connections authenticate with this node's own
//! requirepass (the nodes of a cluster share it).

use super::Cluster;
use parking_lot::Mutex;
use redis_protocol::resp2::decode::decode;
use redis_protocol::resp2::types::OwnedFrame;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::time::{Duration, Instant};

/// How long a node waits for the others' answers: `min(cluster-node-timeout, 2 s)`.
pub fn answer_timeout(node_timeout_ms: u64) -> Duration {
    Duration::from_millis(node_timeout_ms.clamp(1, 2000))
}

/// Messages queued for one peer's forwarding connection before new ones are dropped.
const FORWARD_QUEUE: usize = 10_000;

/// Pooled connections and forwarding queues, by peer address.
#[derive(Default)]
pub struct Peers {
    idle: Mutex<HashMap<String, Vec<TcpStream>>>,
    forwarders: Mutex<HashMap<String, SyncSender<Vec<u8>>>>,
}

/// A request as RESP2 bytes.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The other nodes that own slots in the map in force: (id, address).
fn other_primaries(cluster: &Cluster) -> Vec<(String, String)> {
    let map = cluster.map();
    let mut out: Vec<(String, String)> = Vec::new();
    for (_, _, node) in map.assigned_ranges() {
        if node.id != cluster.me.id && !out.iter().any(|(id, _)| *id == node.id) {
            out.push((node.id.clone(), node.addr()));
        }
    }
    out
}

fn resolve(addr: &str) -> std::io::Result<SocketAddr> {
    addr.to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))
}

/// Reads one reply before `deadline`.
fn read_reply(stream: &mut TcpStream, deadline: Instant) -> std::io::Result<OwnedFrame> {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match decode(&buf) {
            Ok(Some((frame, _))) => return Ok(frame),
            Ok(None) => {}
            Err(e) => return Err(std::io::Error::other(format!("bad reply: {e:?}"))),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A new connection to a peer, authenticated when `password` is set.
fn connect(addr: &str, password: &str, deadline: Instant) -> std::io::Result<TcpStream> {
    let left = deadline.saturating_duration_since(Instant::now());
    let mut stream =
        TcpStream::connect_timeout(&resolve(addr)?, left.max(Duration::from_millis(1)))?;
    stream.set_nodelay(true)?;
    if !password.is_empty() {
        stream.write_all(&encode(&[b"AUTH", password.as_bytes()]))?;
        if let OwnedFrame::Error(e) = read_reply(&mut stream, deadline)? {
            return Err(std::io::Error::other(format!("AUTH refused: {e}")));
        }
    }
    Ok(stream)
}

impl Peers {
    /// Sends `CLUSTER PEER <peer-id> <request…>` to every other primary in parallel and returns
    /// their replies, or an error naming the first peer that failed, errored or did not answer
    /// within [`answer_timeout`].
    pub fn ask_all(
        &self,
        cluster: &Cluster,
        password: &str,
        request: &[&[u8]],
    ) -> Result<Vec<OwnedFrame>, String> {
        let peers = other_primaries(cluster);
        let timeout = answer_timeout(cluster.node_timeout_ms);
        let deadline = Instant::now() + timeout;
        let results: Vec<Result<OwnedFrame, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = peers
                .iter()
                .map(|(id, addr)| {
                    scope.spawn(move || {
                        let mut args: Vec<&[u8]> = vec![b"CLUSTER", b"PEER", id.as_bytes()];
                        args.extend_from_slice(request);
                        self.ask(addr, password, &encode(&args), deadline)
                            .map_err(|e| describe(addr, request, timeout, &e))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("ERR a cluster peer request failed".into()))
                })
                .collect()
        });
        let mut out = Vec::with_capacity(results.len());
        for (result, (_, addr)) in results.into_iter().zip(&peers) {
            match result? {
                OwnedFrame::Error(e) => {
                    return Err(format!("ERR cluster node {addr} answered: {e}"));
                }
                frame => out.push(frame),
            }
        }
        Ok(out)
    }

    /// One request on a pooled (or new) connection; the connection goes back to the pool only
    /// after a complete answer.
    fn ask(
        &self,
        addr: &str,
        password: &str,
        request: &[u8],
        deadline: Instant,
    ) -> std::io::Result<OwnedFrame> {
        let pooled = self.idle.lock().get_mut(addr).and_then(Vec::pop);
        let mut stream = match pooled {
            Some(stream) => stream,
            None => connect(addr, password, deadline)?,
        };
        stream.write_all(request)?;
        let frame = read_reply(&mut stream, deadline)?;
        self.idle
            .lock()
            .entry(addr.to_string())
            .or_default()
            .push(stream);
        Ok(frame)
    }

    /// Queues `CLUSTER PEER <peer-id> <request…>` for every other primary, without waiting.
    /// Returns how many peers dropped it (queue full).
    pub fn forward(&self, cluster: &Cluster, password: &str, request: &[&[u8]]) -> usize {
        let mut dropped = 0;
        for (id, addr) in other_primaries(cluster) {
            let mut args: Vec<&[u8]> = vec![b"CLUSTER", b"PEER", id.as_bytes()];
            args.extend_from_slice(request);
            let bytes = encode(&args);
            let mut forwarders = self.forwarders.lock();
            let sender = forwarders.entry(addr.clone()).or_insert_with(|| {
                forwarder(addr.clone(), password.to_string(), cluster.node_timeout_ms)
            });
            match sender.try_send(bytes) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => dropped += 1,
                Err(TrySendError::Disconnected(bytes)) => {
                    let fresh =
                        forwarder(addr.clone(), password.to_string(), cluster.node_timeout_ms);
                    if fresh.try_send(bytes).is_err() {
                        dropped += 1;
                    }
                    forwarders.insert(addr, fresh);
                }
            }
        }
        dropped
    }
}

/// The error text of a failed peer request.
fn describe(addr: &str, request: &[&[u8]], timeout: Duration, e: &std::io::Error) -> String {
    let what = request
        .first()
        .map(|c| String::from_utf8_lossy(c).to_uppercase())
        .unwrap_or_default();
    if matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    ) {
        format!(
            "ERR cluster node {addr} did not answer {what} within {} ms",
            timeout.as_millis()
        )
    } else {
        format!("ERR cluster node {addr} could not be asked {what}: {e}")
    }
}

/// One peer's forwarding thread: writes queued requests in order on one connection with
/// `CLIENT REPLY OFF`, reconnecting when it breaks.
fn forwarder(addr: String, password: String, node_timeout_ms: u64) -> SyncSender<Vec<u8>> {
    let (tx, rx) = sync_channel::<Vec<u8>>(FORWARD_QUEUE);
    let name = addr.clone();
    let spawned = std::thread::Builder::new()
        .name("stmd-forward".into())
        .spawn(move || {
            let timeout = answer_timeout(node_timeout_ms);
            let mut stream: Option<TcpStream> = None;
            while let Ok(bytes) = rx.recv() {
                for _attempt in 0..2 {
                    if stream.is_none() {
                        stream = connect(&addr, &password, Instant::now() + timeout)
                            .and_then(|mut s| {
                                s.write_all(&encode(&[b"CLIENT", b"REPLY", b"OFF"]))?;
                                s.set_write_timeout(Some(timeout))?;
                                Ok(s)
                            })
                            .ok();
                    }
                    match stream.as_mut().map(|s| s.write_all(&bytes)) {
                        Some(Ok(())) => break,
                        _ => stream = None,
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the PUBLISH forwarder for {name}: {e}");
    }
    tx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_is_the_node_timeout_up_to_two_seconds() {
        assert_eq!(answer_timeout(15000), Duration::from_secs(2));
        assert_eq!(answer_timeout(500), Duration::from_millis(500));
    }

    #[test]
    fn requests_encode_as_resp_arrays() {
        assert_eq!(
            encode(&[b"PUBLISH", b"c", b""]),
            b"*3\r\n$7\r\nPUBLISH\r\n$1\r\nc\r\n$0\r\n\r\n".to_vec()
        );
    }
}
