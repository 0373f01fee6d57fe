//! Node-to-node requests: the few commands that span every node (STM.RECENT, STM.FORGET USER,
//! and STM.CONTEXT's other-channel blocks) and PUBLISH forwarding. There is still no gossip bus: a
//! node talks to the others only over their client port, with stmd's internal
//! `CLUSTER PEER <node-id> …` form (see [`crate::commands::cluster`]), which names the node it is
//! sent to so a client cannot mistake it for the public command.
//!
//! - Questions ([`ask_all`]) go to every other primary of the slot map in parallel, one tokio task
//!   each on a pooled connection per peer, and must all be answered within [`answer_timeout`];
//!   otherwise the whole request fails (never a silently partial answer). A connection whose
//!   answer did not come in time is closed, never pooled (a late answer would be read as the next
//!   one's).
//! - PUBLISH ([`forward`]) goes through one queue, one tokio task and one connection per peer, in
//!   order, with `CLIENT REPLY OFF`: it does not wait for the peers, like Redis Cluster's bus. A
//!   peer that cannot be reached loses the message (Pub/Sub is at-most-once).
//!
//! Replies are decoded with the `redis-protocol` crate ([`Link`], which slot migration uses too).
//! When `requirepass` is set, node-to-node connections authenticate with this node's own
//! requirepass (the nodes of a cluster share it).

use super::Cluster;
use bytes::{Buf, BytesMut};
use parking_lot::Mutex;
use redis_protocol::resp2::types::OwnedFrame;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// How long a node waits for the others' answers: `min(cluster-node-timeout, 2 s)`.
pub fn answer_timeout(node_timeout_ms: u64) -> Duration {
    Duration::from_millis(node_timeout_ms.clamp(1, 2000))
}

/// Messages queued for one peer's forwarding connection before new ones are dropped.
const FORWARD_QUEUE: usize = 10_000;

/// Pooled connections and forwarding queues, by peer address.
#[derive(Default)]
pub struct Peers {
    idle: Mutex<HashMap<String, Vec<Link>>>,
    forwarders: Mutex<HashMap<String, mpsc::Sender<Vec<u8>>>>,
}

/// Appends one request in RESP.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// A RESP connection to another node. No timeouts of its own: callers bound each step.
pub struct Link {
    stream: TcpStream,
    input: BytesMut,
}

impl Link {
    /// Connects, and authenticates when `password` is set.
    pub async fn connect(
        addr: impl tokio::net::ToSocketAddrs,
        password: &str,
    ) -> std::io::Result<Link> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut link = Link {
            stream,
            input: BytesMut::with_capacity(16 * 1024),
        };
        if !password.is_empty() {
            let mut auth = Vec::new();
            encode(&mut auth, &[b"AUTH", password.as_bytes()]);
            link.send(&auth).await?;
            if let OwnedFrame::Error(e) = link.reply().await? {
                return Err(std::io::Error::other(format!("AUTH refused: {e}")));
            }
        }
        Ok(link)
    }

    pub async fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// The next reply.
    pub async fn reply(&mut self) -> std::io::Result<OwnedFrame> {
        loop {
            match redis_protocol::resp2::decode::decode(&self.input) {
                Ok(Some((frame, used))) => {
                    self.input.advance(used);
                    return Ok(frame);
                }
                Ok(None) => {}
                Err(e) => return Err(std::io::Error::other(format!("bad reply: {e:?}"))),
            }
            if self.stream.read_buf(&mut self.input).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
    }
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

/// The nodes a PUBLISH is forwarded to: every other node, replicas included, except this node's
/// own replicas (its replication stream carries the PUBLISH to them).
fn publish_targets(cluster: &Cluster) -> Vec<(String, String)> {
    let map = cluster.map();
    map.nodes
        .iter()
        .filter(|n| n.id != cluster.me.id && n.primary.as_deref() != Some(cluster.me.id.as_str()))
        .map(|n| (n.id.clone(), n.addr()))
        .collect()
}

/// `CLUSTER PEER <peer-id> <request…>` in RESP.
fn peer_request(id: &str, request: &[&[u8]]) -> Vec<u8> {
    let mut args: Vec<&[u8]> = vec![b"CLUSTER", b"PEER", id.as_bytes()];
    args.extend_from_slice(request);
    let mut out = Vec::new();
    encode(&mut out, &args);
    out
}

/// Sends `CLUSTER PEER <peer-id> <request…>` to every other primary in parallel and returns
/// their replies, or an error naming the first peer that failed, errored or did not answer
/// within [`answer_timeout`]. Blocks the calling command (off its tokio worker) until then.
pub fn ask_all(
    cluster: &Arc<Cluster>,
    password: &str,
    request: &[&[u8]],
) -> Result<Vec<OwnedFrame>, String> {
    ask_these(cluster, password, other_primaries(cluster), request)
}

/// [`ask_all`] for the named nodes only, `(id, address)`: their replies in that order, or the
/// error of the first that failed.
pub fn ask_these(
    cluster: &Arc<Cluster>,
    password: &str,
    peers: Vec<(String, String)>,
    request: &[&[u8]],
) -> Result<Vec<OwnedFrame>, String> {
    if peers.is_empty() {
        return Ok(Vec::new());
    }
    let handle = match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            handle
        }
        _ => return Err("ERR cluster peers can only be asked from the server's runtime".into()),
    };
    let timeout = answer_timeout(cluster.node_timeout_ms);
    let tasks: Vec<_> = peers
        .iter()
        .map(|(id, addr)| {
            let (cluster, addr) = (cluster.clone(), addr.clone());
            let (password, bytes) = (password.to_string(), peer_request(id, request));
            handle.spawn(async move {
                tokio::time::timeout(timeout, ask(&cluster.peers, &addr, &password, &bytes)).await
            })
        })
        .collect();
    let results = crate::worker::off_worker(|| {
        handle.block_on(async {
            let mut results = Vec::with_capacity(tasks.len());
            for task in tasks {
                results.push(task.await);
            }
            results
        })
    });
    let what = request
        .first()
        .map(|c| String::from_utf8_lossy(c).to_uppercase())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(results.len());
    for (result, (_, addr)) in results.into_iter().zip(&peers) {
        match result {
            Ok(Ok(Ok(OwnedFrame::Error(e)))) => {
                return Err(format!("ERR cluster node {addr} answered: {e}"));
            }
            Ok(Ok(Ok(frame))) => out.push(frame),
            Ok(Ok(Err(e))) => {
                return Err(format!(
                    "ERR cluster node {addr} could not be asked {what}: {e}"
                ));
            }
            Ok(Err(_elapsed)) => {
                return Err(format!(
                    "ERR cluster node {addr} did not answer {what} within {} ms",
                    timeout.as_millis()
                ));
            }
            Err(_panicked) => return Err("ERR a cluster peer request failed".into()),
        }
    }
    Ok(out)
}

/// One request on a pooled connection, or a new one (also when the pooled one turns out closed,
/// as after the peer restarted). A connection goes back to the pool only after a complete answer.
async fn ask(
    peers: &Peers,
    addr: &str,
    password: &str,
    request: &[u8],
) -> std::io::Result<OwnedFrame> {
    let pooled = peers.idle.lock().get_mut(addr).and_then(Vec::pop);
    let answered = match pooled {
        Some(mut link) => match exchange(&mut link, request).await {
            Ok(frame) => Some((link, frame)),
            Err(_) => None,
        },
        None => None,
    };
    let (link, frame) = match answered {
        Some(answered) => answered,
        None => {
            let mut link = Link::connect(addr, password).await?;
            let frame = exchange(&mut link, request).await?;
            (link, frame)
        }
    };
    peers
        .idle
        .lock()
        .entry(addr.to_string())
        .or_default()
        .push(link);
    Ok(frame)
}

async fn exchange(link: &mut Link, request: &[u8]) -> std::io::Result<OwnedFrame> {
    link.send(request).await?;
    link.reply().await
}

/// Queues `CLUSTER PEER <peer-id> <request…>` for every other node but this node's replicas
/// ([`publish_targets`]), without waiting. Returns how many peers dropped it (queue full, or no
/// runtime to forward it on).
pub fn forward(cluster: &Cluster, password: &str, request: &[&[u8]]) -> usize {
    let mut dropped = 0;
    for (id, addr) in publish_targets(cluster) {
        let bytes = peer_request(&id, request);
        let mut forwarders = cluster.peers.forwarders.lock();
        let sender = match forwarders.get(&addr).filter(|s| !s.is_closed()) {
            Some(sender) => sender.clone(),
            None => match forwarder(addr.clone(), password.to_string(), cluster.node_timeout_ms) {
                Some(sender) => {
                    forwarders.insert(addr, sender.clone());
                    sender
                }
                None => {
                    dropped += 1;
                    continue;
                }
            },
        };
        if sender.try_send(bytes).is_err() {
            dropped += 1;
        }
    }
    dropped
}

/// One peer's forwarding task: writes queued requests in order on one connection with
/// `CLIENT REPLY OFF`, reconnecting when it breaks. None outside a tokio runtime.
fn forwarder(
    addr: String,
    password: String,
    node_timeout_ms: u64,
) -> Option<mpsc::Sender<Vec<u8>>> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(FORWARD_QUEUE);
    handle.spawn(async move {
        let limit = answer_timeout(node_timeout_ms);
        let mut link: Option<Link> = None;
        while let Some(bytes) = rx.recv().await {
            for _attempt in 0..2 {
                if link.is_none() {
                    let connected = tokio::time::timeout(limit, async {
                        let mut link = Link::connect(&addr, &password).await?;
                        let mut off = Vec::new();
                        encode(&mut off, &[b"CLIENT", b"REPLY", b"OFF"]);
                        link.send(&off).await?;
                        std::io::Result::Ok(link)
                    })
                    .await;
                    match connected {
                        Ok(Ok(fresh)) => link = Some(fresh),
                        _ => break, // unreachable now: this message is lost
                    }
                }
                let Some(current) = link.as_mut() else {
                    break;
                };
                match tokio::time::timeout(limit, current.send(&bytes)).await {
                    Ok(Ok(())) => break,
                    _ => link = None,
                }
            }
        }
    });
    Some(tx)
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
        let mut out = Vec::new();
        encode(&mut out, &[b"PUBLISH", b"c", b""]);
        assert_eq!(
            out,
            b"*3\r\n$7\r\nPUBLISH\r\n$1\r\nc\r\n$0\r\n\r\n".to_vec()
        );
    }
}
