//! The registry of connected clients: what CLIENT LIST/INFO show and how CLIENT KILL reaches a
//! connection that another task is serving.

use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

/// What other connections may read or signal about one client.
pub struct ClientInfo {
    pub id: u64,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    pub connected_at: Instant,
    pub name: Mutex<Option<Bytes>>,
    pub lib_name: Mutex<Option<Bytes>>,
    pub lib_ver: Mutex<Option<Bytes>>,
    /// ms since `connected_at` of the last command.
    pub last_active_ms: AtomicU64,
    /// Name of the last command run (a static name from the command table).
    pub last_cmd: Mutex<&'static str>,
    pub resp: AtomicU8,
    /// The selected database (CLIENT LIST's `db=`), mirrored from the connection's state.
    pub db: AtomicU64,
    /// Asks the connection task to end: CLIENT KILL, an overflowing mailbox, server shutdown.
    signal: Signal,
    /// Set when the client is closed for passing its `client-output-buffer-limit`.
    pub output_limit_reached: AtomicBool,
}

impl ClientInfo {
    pub fn idle_secs(&self) -> u64 {
        let now = self.connected_at.elapsed().as_millis() as u64;
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

    /// One line of CLIENT LIST / the CLIENT INFO reply, with Redis's field names.
    pub fn describe(&self) -> String {
        let text = |m: &Mutex<Option<Bytes>>| {
            m.lock()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        format!(
            "id={} addr={} laddr={} fd=0 name={} age={} idle={} flags=N db={} sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            text(&self.name),
            self.connected_at.elapsed().as_secs(),
            self.idle_secs(),
            self.db.load(Ordering::Relaxed),
            self.last_cmd.lock(),
            self.resp.load(Ordering::Relaxed),
            text(&self.lib_name),
            text(&self.lib_ver),
        )
    }
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

    fn raise(&self, bits: u8) {
        self.raised.fetch_or(bits, Ordering::SeqCst);
        self.waker.wake();
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
    pub fn register(&self, addr: SocketAddr, laddr: SocketAddr) -> Arc<ClientInfo> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let info = Arc::new(ClientInfo {
            id,
            addr,
            laddr,
            connected_at: Instant::now(),
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            lib_ver: Mutex::new(None),
            last_active_ms: AtomicU64::new(0),
            last_cmd: Mutex::new("NULL"),
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

    /// A snapshot of the connected clients, in id order.
    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().values().cloned().collect()
    }
}
