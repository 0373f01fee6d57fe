//! The registry of connected clients: what CLIENT LIST/INFO show and how CLIENT KILL reaches a
//! connection that another task is serving.

use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::Poll;

/// One end of a client's connection: a TCP address, or the server's Unix socket (shown as
/// `<path>:0`, as Redis shows it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientAddr {
    Tcp(SocketAddr),
    Unix(Arc<str>),
}

impl ClientAddr {
    /// The TCP peer's address; None over the Unix socket.
    pub fn ip(&self) -> Option<std::net::IpAddr> {
        match self {
            ClientAddr::Tcp(addr) => Some(addr.ip()),
            ClientAddr::Unix(_) => None,
        }
    }

    /// A client on this host: loopback TCP or the Unix socket (Redis's `islocalClient`).
    pub fn is_local(&self) -> bool {
        self.ip().is_none_or(|ip| ip.is_loopback())
    }

    pub fn is_unix(&self) -> bool {
        matches!(self, ClientAddr::Unix(_))
    }
}

impl std::fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientAddr::Tcp(addr) => addr.fmt(f),
            ClientAddr::Unix(path) => write!(f, "{path}:0"),
        }
    }
}

/// What other connections may read or signal about one client.
pub struct ClientInfo {
    pub id: u64,
    pub addr: ClientAddr,
    pub laddr: ClientAddr,
    /// The socket's file descriptor (-1 where there is none).
    pub fd: i32,
    /// When the client connected, in [`crate::clock::monotonic_ms`].
    pub connected_at_ms: u64,
    pub name: Mutex<Option<Bytes>>,
    pub lib_name: Mutex<Option<Bytes>>,
    pub lib_ver: Mutex<Option<Bytes>>,
    /// The ACL user the connection acts as (CLIENT LIST's `user=`, CLIENT KILL USER).
    pub user: Mutex<String>,
    /// When the last command ran, in [`crate::clock::monotonic_ms`].
    pub last_active_ms: AtomicU64,
    /// The connection's state as CLIENT LIST shows it, published by its own task.
    pub published: Published,
    pub resp: AtomicU8,
    /// The selected database (CLIENT LIST's `db=`), mirrored from the connection's state.
    pub db: AtomicU64,
    /// Asks the connection task to end (CLIENT KILL, an overflowing mailbox, server shutdown) or
    /// to give up a blocking command (CLIENT UNBLOCK).
    signal: Signal,
    /// Set when the client is closed for passing its `client-output-buffer-limit`.
    pub output_limit_reached: AtomicBool,
}

impl ClientInfo {
    pub fn idle_secs(&self) -> u64 {
        let now = crate::clock::monotonic_ms();
        now.saturating_sub(self.last_active_ms.load(Ordering::Relaxed)) / 1000
    }

    /// Marks the client killed and wakes its connection task, which closes it at once.
    pub fn kill(&self) {
        self.signal.raise(Signal::KILLED);
    }

    pub fn is_killed(&self) -> bool {
        self.signal.is_raised(Signal::KILLED)
    }

    /// Asks the connection task to close after writing the replies it has (server shutdown).
    fn stop(&self) {
        self.signal.raise(Signal::STOPPING);
    }

    /// Resolves once the client is killed.
    pub fn killed(&self) -> impl Future<Output = ()> + '_ {
        self.signal.wait(Signal::KILLED)
    }

    /// Resolves once the client is killed or the server stops.
    pub fn ended(&self) -> impl Future<Output = ()> + '_ {
        self.signal.wait(Signal::KILLED | Signal::STOPPING)
    }

    /// Closes the client for passing its output-buffer limit (`hard` or `soft`), logging it once,
    /// as Redis does ("scheduled to be closed ASAP for overcoming of output buffer limits").
    pub fn close_for_output_limit(&self, class: crate::output_limit::ClientClass, limit: &str) {
        if !self.output_limit_reached.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                client = self.id,
                addr = %self.addr,
                class = class.name(),
                limit,
                "client closed for overcoming of output buffer limits"
            );
        }
        self.kill();
    }

    /// CLIENT UNBLOCK: ends the blocking command the client waits in, answering as its timeout
    /// would or with an UNBLOCKED error. False when it waits in none (CLIENT PAUSE's wait is not
    /// one: Redis does not let UNBLOCK cut a pause short either).
    pub fn unblock(&self, with_error: bool) -> bool {
        if self.published.flags.load(Ordering::Relaxed) & flag::IN_BLOCKING_COMMAND == 0 {
            return false;
        }
        self.signal.raise(if with_error {
            Signal::UNBLOCK_ERROR
        } else {
            Signal::UNBLOCK_TIMEOUT
        });
        true
    }

    /// Forgets an UNBLOCK aimed at an earlier wait; called before a new wait starts.
    pub fn clear_unblock(&self) {
        self.signal
            .clear(Signal::UNBLOCK_TIMEOUT | Signal::UNBLOCK_ERROR);
    }

    /// Resolves once CLIENT UNBLOCK asks this client's blocking command to end; true when it asks
    /// for an error reply rather than the timeout reply.
    pub async fn unblocked(&self) -> bool {
        self.signal
            .wait(Signal::UNBLOCK_TIMEOUT | Signal::UNBLOCK_ERROR)
            .await;
        self.signal.is_raised(Signal::UNBLOCK_ERROR)
    }

    /// The client's type for CLIENT KILL/LIST TYPE.
    pub fn class(&self) -> ClientClass {
        let flags = self.published.flags.load(Ordering::Relaxed);
        if flags & flag::MASTER != 0 {
            ClientClass::Master
        } else if flags & flag::REPLICA != 0 {
            ClientClass::Replica
        } else if flags & flag::PUBSUB != 0 {
            ClientClass::PubSub
        } else {
            ClientClass::Normal
        }
    }

    /// Seconds since the client connected.
    pub fn age_secs(&self) -> u64 {
        crate::clock::monotonic_ms().saturating_sub(self.connected_at_ms) / 1000
    }

    /// The memory the connection holds: its records and buffers (CLIENT LIST's `tot-mem`).
    pub fn memory(&self) -> u64 {
        let p = &self.published;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        std::mem::size_of::<ClientInfo>() as u64
            + load(&p.state_mem)
            + load(&p.qbuf)
            + load(&p.qbuf_free)
            + load(&p.argv_mem)
            + load(&p.multi_mem)
            + load(&p.rbs)
    }

    /// The flags read from the client's registry entry rather than published by its task.
    fn derived_flags(&self) -> u32 {
        let killed = if self.is_killed() {
            flag::CLOSE_ASAP
        } else {
            0
        };
        let unix = if self.addr.is_unix() {
            flag::UNIX_SOCKET
        } else {
            0
        };
        killed | unix
    }

    /// One line of CLIENT LIST / the CLIENT INFO reply, with Redis 7.2's fields in its order.
    pub fn describe(&self) -> String {
        let text = |m: &Mutex<Option<Bytes>>| {
            m.lock()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let p = &self.published;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let flags = p.flags.load(Ordering::Relaxed);
        let subs = load(&p.subscriptions);
        let (qbuf, qbuf_free, argv_mem, multi_mem) = (
            load(&p.qbuf),
            load(&p.qbuf_free),
            load(&p.argv_mem),
            load(&p.multi_mem),
        );
        let (rbs, rbp, omem) = (load(&p.rbs), load(&p.rbp), load(&p.omem));
        let tot_mem = self.memory();
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl=0 oll={} omem={} tot-mem={} events={} cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            text(&self.name),
            self.age_secs(),
            self.idle_secs(),
            flag::letters(flags | self.derived_flags()),
            self.db.load(Ordering::Relaxed),
            subs & SUB_COUNT_MASK,
            (subs >> 21) & SUB_COUNT_MASK,
            subs >> 42,
            p.multi.load(Ordering::Relaxed),
            qbuf,
            qbuf_free,
            argv_mem,
            multi_mem,
            rbs,
            rbp,
            u8::from(omem > 0),
            omem,
            tot_mem,
            if omem > 0 { "rw" } else { "r" },
            p.last_command(),
            self.user.lock(),
            p.redir.load(Ordering::Relaxed),
            self.resp.load(Ordering::Relaxed),
            text(&self.lib_name),
            text(&self.lib_ver),
        )
    }
}

/// A client's type (CLIENT LIST/KILL TYPE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientClass {
    Normal,
    PubSub,
    Master,
    Replica,
}

/// CLIENT LIST's flag bits, published by the connection task; [`flag::letters`] renders them
/// with Redis's letters in Redis's order.
pub mod flag {
    pub const MONITOR: u32 = 1;
    pub const PUBSUB: u32 = 1 << 1;
    pub const MULTI: u32 = 1 << 2;
    /// Waiting: in a blocking command or for a CLIENT PAUSE to end (Redis shows `b` for both).
    pub const BLOCKED: u32 = 1 << 3;
    pub const TRACKING: u32 = 1 << 4;
    pub const TRACKING_BROKEN_REDIR: u32 = 1 << 5;
    pub const TRACKING_BCAST: u32 = 1 << 6;
    pub const CLOSE_AFTER_REPLY: u32 = 1 << 7;
    pub const CLOSE_ASAP: u32 = 1 << 8;
    pub const NO_EVICT: u32 = 1 << 9;
    pub const NO_TOUCH: u32 = 1 << 10;
    /// Not rendered: blocked in BLPOP & co. (CLIENT UNBLOCK may end it), not in a pause.
    pub const IN_BLOCKING_COMMAND: u32 = 1 << 12;
    /// Not rendered: blocked with a timeout (INFO's `clients_in_timeout_table`).
    pub const BLOCKED_WITH_TIMEOUT: u32 = 1 << 13;
    /// The link to the primary this node follows (Redis's master client, `M`).
    pub const MASTER: u32 = 1 << 14;
    /// A replica fed from this node (Redis's `S`).
    pub const REPLICA: u32 = 1 << 15;
    /// Connected over the Unix socket (Redis's `U`); set from the address when listed.
    pub const UNIX_SOCKET: u32 = 1 << 16;

    const LETTERS: &[(u32, char)] = &[
        (MONITOR, 'O'),
        (REPLICA, 'S'),
        (MASTER, 'M'),
        (PUBSUB, 'P'),
        (MULTI, 'x'),
        (BLOCKED, 'b'),
        (TRACKING, 't'),
        (TRACKING_BROKEN_REDIR, 'R'),
        (TRACKING_BCAST, 'B'),
        (CLOSE_AFTER_REPLY, 'c'),
        (CLOSE_ASAP, 'A'),
        (UNIX_SOCKET, 'U'),
        (NO_EVICT, 'e'),
        (NO_TOUCH, 'T'),
    ];

    pub fn letters(flags: u32) -> String {
        let shown: String = LETTERS
            .iter()
            .filter(|(bit, _)| flags & bit != 0)
            .map(|(_, letter)| *letter)
            .collect();
        if shown.is_empty() {
            "N".to_string()
        } else {
            shown
        }
    }
}

/// What a connection publishes about itself for CLIENT LIST/INFO/KILL and INFO clients. Only the
/// connection's own task writes these, with relaxed stores, once per read batch (and per command
/// for `cmd`), so another client reading them never slows the owner down; a reader may see one
/// batch's fields mixed with the next one's, which a listing can live with.
#[derive(Default)]
pub struct Published {
    /// [`flag`] bits.
    pub flags: AtomicU32,
    /// Channel, pattern and shard-channel subscriptions, 21 bits each from the lowest
    /// ([`pack_subscriptions`]).
    pub subscriptions: AtomicU64,
    /// Commands queued since MULTI, or -1 outside MULTI.
    pub multi: AtomicI64,
    /// Bytes of the queued commands' arguments.
    pub multi_mem: AtomicU64,
    /// Bytes received and not yet run, and the free room after them in the read buffer.
    pub qbuf: AtomicU64,
    pub qbuf_free: AtomicU64,
    /// Bytes of the arguments of the command being run (a blocked command keeps them).
    pub argv_mem: AtomicU64,
    /// Capacity of the reply buffer, and the most it held in the last few seconds.
    pub rbs: AtomicU64,
    pub rbp: AtomicU64,
    /// Reply bytes not yet written (what `client-output-buffer-limit` counts).
    pub omem: AtomicU64,
    /// Heap held by the connection's own state (queued commands aside).
    pub state_mem: AtomicU64,
    /// CLIENT TRACKING's redirection target, or -1.
    pub redir: AtomicI64,
    /// Position + 1 in the command table of the last command run (0: none yet).
    last_command: AtomicU32,
    /// The first 16 bytes of that command's first argument, lower-cased: the subcommand of a
    /// container command (`client|list`).
    last_subcommand: [AtomicU64; 2],
}

impl Published {
    /// Records the command about to run. Three relaxed stores; the subcommand is only copied for
    /// commands without keys (the containers are among them).
    #[inline]
    pub fn set_last_command(&self, position: Option<usize>, args: &[&[u8]]) {
        self.last_command
            .store(position.map_or(0, |p| p as u32 + 1), Ordering::Relaxed);
        if let Some(sub) = args.get(1) {
            let mut bytes = [0u8; 16];
            let n = sub.len().min(16);
            bytes[..n].copy_from_slice(&sub[..n]);
            bytes.make_ascii_lowercase();
            let (a, b) = bytes.split_at(8);
            let word = |half: &[u8]| u64::from_le_bytes(half.try_into().unwrap_or_default());
            self.last_subcommand[0].store(word(a), Ordering::Relaxed);
            self.last_subcommand[1].store(word(b), Ordering::Relaxed);
        }
    }

    /// `get`, `client|list`, or `NULL` before the first command, as Redis shows it.
    pub fn last_command(&self) -> String {
        let position = self.last_command.load(Ordering::Relaxed) as usize;
        let Some(cmd) = position
            .checked_sub(1)
            .and_then(|p| crate::spec::rows().get(p))
        else {
            return "NULL".to_string();
        };
        if !crate::command_stats::CONTAINERS.contains(&cmd.name) {
            return cmd.name.to_string();
        }
        let mut bytes = Vec::with_capacity(16);
        for word in &self.last_subcommand {
            bytes.extend_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        let sub: String = bytes
            .iter()
            .take_while(|&&b| b != 0)
            .filter(|b| b.is_ascii_graphic())
            .map(|&b| b as char)
            .collect();
        format!("{}|{}", cmd.name, sub)
    }
}

/// INFO clients' `client_recent_max_input_buffer`, `client_recent_max_output_buffer` and
/// `clients_in_timeout_table`.
#[derive(Default, Debug)]
pub struct BufferPeaks {
    pub input: u64,
    pub output: u64,
    pub with_timeout: u64,
}

/// All connected clients by id.
#[derive(Default)]
pub struct ClientRegistry {
    next_id: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    stopping: AtomicBool,
}

/// A one-way flag set by other tasks that the connection task's `select!` waits on. Cheaper than a
/// `Notify` plus a `watch` per loop: a poll is one atomic load and, when not raised, a waker
/// registration that is a no-op while the task's waker stays the same. Only the connection task
/// polls it, so one waker slot is enough.
#[derive(Default)]
struct Signal {
    raised: AtomicU8,
    waker: futures_util::task::AtomicWaker,
}

impl Signal {
    const KILLED: u8 = 1;
    const STOPPING: u8 = 2;
    const UNBLOCK_TIMEOUT: u8 = 4;
    const UNBLOCK_ERROR: u8 = 8;

    fn raise(&self, bits: u8) {
        self.raised.fetch_or(bits, Ordering::SeqCst);
        self.waker.wake();
    }

    fn clear(&self, bits: u8) {
        self.raised.fetch_and(!bits, Ordering::SeqCst);
    }

    fn is_raised(&self, bits: u8) -> bool {
        self.raised.load(Ordering::SeqCst) & bits != 0
    }

    fn wait(&self, bits: u8) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.is_raised(bits) {
                return Poll::Ready(());
            }
            self.waker.register(cx.waker());
            // Raised between the check and the registration: the wake may have been missed.
            if self.is_raised(bits) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

impl ClientRegistry {
    pub fn register(&self, addr: ClientAddr, laddr: ClientAddr, fd: i32) -> Arc<ClientInfo> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let info = Arc::new(ClientInfo {
            id,
            addr,
            laddr,
            fd,
            connected_at_ms: crate::clock::monotonic_ms(),
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            lib_ver: Mutex::new(None),
            user: Mutex::new("default".into()),
            last_active_ms: AtomicU64::new(crate::clock::monotonic_ms()),
            published: Published {
                multi: AtomicI64::new(-1),
                redir: AtomicI64::new(-1),
                ..Default::default()
            },
            resp: AtomicU8::new(2),
            db: AtomicU64::new(0),
            signal: Signal::default(),
            output_limit_reached: AtomicBool::new(false),
        });
        self.clients.lock().insert(id, info.clone());
        // After the insert: either `stop_all` saw this client, or it had set the flag before.
        if self.stopping.load(Ordering::SeqCst) {
            info.stop();
        }
        info
    }

    /// Server shutdown: every connection, and any that registers from now on, finishes the
    /// replies it has and closes.
    pub fn stop_all(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for client in self.clients.lock().values() {
            client.stop();
        }
    }

    pub fn unregister(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The client with this id, if connected.
    pub fn get(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }

    /// INFO memory's `mem_clients_normal`: what every connected client holds (no replicas here).
    pub fn memory(&self) -> u64 {
        self.clients.lock().values().map(|c| c.memory()).sum()
    }

    /// INFO clients' buffer peaks over the connected clients, and how many wait with a timeout.
    pub fn buffer_peaks(&self) -> BufferPeaks {
        let mut peaks = BufferPeaks::default();
        for client in self.clients.lock().values() {
            let p = &client.published;
            let input = p.qbuf.load(Ordering::Relaxed) + p.qbuf_free.load(Ordering::Relaxed);
            peaks.input = peaks.input.max(input);
            peaks.output = peaks.output.max(p.omem.load(Ordering::Relaxed));
            if p.flags.load(Ordering::Relaxed) & flag::BLOCKED_WITH_TIMEOUT != 0 {
                peaks.with_timeout += 1;
            }
        }
        peaks
    }

    /// `maxmemory-clients`: the clients to close, those holding the most memory first, until the
    /// clients hold less than `limit` together. As in Redis, the total counts every client but the
    /// replication links (a replica fed from here, the primary followed), and CLIENT NO-EVICT
    /// clients count but are not closed.
    pub fn over_memory_limit(&self, limit: u64) -> Vec<Arc<ClientInfo>> {
        let links = flag::REPLICA | flag::MASTER;
        let mut counted: Vec<(u64, Arc<ClientInfo>)> = self
            .clients
            .lock()
            .values()
            .filter(|c| c.published.flags.load(Ordering::Relaxed) & links == 0 && !c.is_killed())
            .map(|c| (c.memory(), c.clone()))
            .collect();
        let mut total: u64 = counted.iter().map(|(memory, _)| memory).sum();
        counted.retain(|(_, c)| c.published.flags.load(Ordering::Relaxed) & flag::NO_EVICT == 0);
        counted.sort_unstable_by_key(|(memory, _)| std::cmp::Reverse(*memory));
        let mut closed = Vec::new();
        for (memory, client) in counted {
            if total < limit {
                break;
            }
            total -= memory;
            closed.push(client);
        }
        closed
    }

    /// A snapshot of the connected clients, in id order.
    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }
}

const SUB_COUNT_MASK: u64 = (1 << 21) - 1;

/// The three subscription counts CLIENT LIST shows (`sub`, `psub`, `ssub`) in one word, each
/// capped at 2,097,151.
pub fn pack_subscriptions(channels: usize, patterns: usize, shard_channels: usize) -> u64 {
    let field = |n: usize| (n as u64).min(SUB_COUNT_MASK);
    field(channels) | field(patterns) << 21 | field(shard_channels) << 42
}
