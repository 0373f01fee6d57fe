//! The accept loops (plain TCP, TLS and the Unix socket), the connection limit and graceful
//! shutdown. The caller binds the listeners and passes a shutdown future, so tests run the same
//! server in-process on `127.0.0.1:0`.

use crate::clients::{ClientAddr, ClientRegistry};
use crate::config::Config;
use crate::connection;
use crate::metrics::Stats;
use crate::scope_rows::{self, PersistHandle};
use crate::stm::StmState;
use crate::store::{eviction, expiry, Store};
use crate::{Error, Result};
use parking_lot::RwLock;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{mpsc, watch, Notify};
use tokio_rustls::TlsAcceptor;

/// How long shutdown waits for connections to finish the replies they are writing.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Redis's reply to a remote client in protected mode.
const PROTECTED_MODE_DENIED: &str = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.";

use crate::commands::Shared;

impl crate::snapshot::Host for Shared {
    fn store(&self) -> &Store {
        &self.store
    }
    fn config(&self) -> &RwLock<Config> {
        &self.config
    }
    fn snapshots(&self) -> &crate::snapshot::Snapshots {
        &self.snapshots
    }
    fn scripting(&self) -> &crate::scripting::Scripting {
        &self.scripting
    }
    fn search(&self) -> &crate::search::Registry {
        &self.search
    }
    fn indexes_changed(&self) {
        self.events.set_indexing(self.search.any());
    }
}

impl crate::aof::Host for Shared {
    fn aof(&self) -> &crate::aof::Aof {
        &self.aof
    }
    fn replication(&self) -> &crate::replication::Replication {
        &self.replication
    }
}

impl crate::replication::Host for Shared {
    fn clients(&self) -> &ClientRegistry {
        &self.clients
    }
    fn stats(&self) -> &Stats {
        &self.stats
    }
    fn tls(&self) -> &crate::tls::Tls {
        &self.tls
    }
    fn cluster(&self) -> Option<&crate::cluster::Cluster> {
        self.cluster.as_deref()
    }
    fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
    fn tcp_port(&self) -> u16 {
        self.tcp_port.load(Ordering::Relaxed)
    }
    fn after_background_work(&self) {
        crate::events::after_background_work(self);
    }
}

impl crate::cluster::Host for Shared {
    fn pubsub(&self) -> &crate::pubsub::PubSub {
        &self.pubsub
    }
    fn scope_rows(&self) -> &PersistHandle {
        &self.stm.persist
    }
}

impl crate::events::Host for Shared {
    fn store(&self) -> &Store {
        &self.store
    }
    fn pubsub(&self) -> &crate::pubsub::PubSub {
        &self.pubsub
    }
    fn clients(&self) -> &ClientRegistry {
        &self.clients
    }
    fn events(&self) -> &crate::events::Events {
        &self.events
    }
    fn search(&self) -> &crate::search::Registry {
        &self.search
    }
}

impl Shared {
    pub fn new(
        config: Config,
        local_addr: SocketAddr,
        store: Arc<Store>,
        persist: PersistHandle,
    ) -> Result<Shared> {
        let stm = StmState::new(&config, persist).map_err(Error::Config)?;
        let commands = crate::commands::table::CommandNames::new(&config.rename_command)
            .map_err(Error::Config)?;
        store.memory.configure(&config);
        store
            .encoding_limits
            .configure(&config.encoding_thresholds());
        let events = crate::events::Events::new(&config, store.clone());
        let acl = crate::acl::Acl::new();
        if let Some(path) = config.aclfile.as_deref().filter(|p| !p.is_empty()) {
            let users =
                crate::acl::file::load(std::path::Path::new(path), config.acl_pubsub_default)
                    .map_err(Error::Config)?;
            acl.replace_all(users);
        }
        if !config.requirepass.is_empty() {
            acl.set_requirepass(&config.requirepass);
        }
        let replication = crate::replication::Replication::default();
        replication.feed.set_size(config.repl_backlog_size as usize);
        replication.master.configure(&config);
        let supervisor = crate::supervise::Supervisor::from_env(config.supervised);
        Ok(Shared {
            supervisor,
            acl,
            events,
            search: crate::search::Registry::new(store.clone()),
            slowlog: crate::slowlog::SlowLog::new(
                config.slowlog_log_slower_than,
                config.slowlog_max_len,
            ),
            monitors: Default::default(),
            command_stats: {
                let stats = crate::metrics::CommandStats::new();
                stats.latency_tracking.store(
                    config.latency_tracking,
                    std::sync::atomic::Ordering::Relaxed,
                );
                stats
            },
            latency: crate::latency::LatencyMonitor::new(config.latency_monitor_threshold),
            memory_marks: crate::metrics::MemoryMarks::now(),
            store,
            commands,
            config: RwLock::new(config),
            stats: Stats::default(),
            clients: ClientRegistry::default(),
            stm,
            pubsub: Default::default(),
            started: Instant::now(),
            run_id: crate::replication::new_replid(),
            local_addr,
            tcp_port: local_addr.port().into(),
            new_listener: Default::default(),
            listener_changed: Notify::new(),
            shutdown_requested: Notify::new(),
            shutdown_now: Default::default(),
            scripting: crate::scripting::Scripting::new(),
            cluster: None,
            snapshots: Default::default(),
            replication,
            aof: Default::default(),
            tls: Default::default(),
        })
    }
}

/// The sockets the server accepts clients on: plain TCP (`--port`), TLS (`--tls-port`) and the
/// Unix socket (`--unixsocket`), any of them.
pub struct Listeners {
    pub plain: Option<TcpListener>,
    pub tls: Option<TcpListener>,
    pub unix: Option<UnixListener>,
}

impl From<TcpListener> for Listeners {
    fn from(plain: TcpListener) -> Listeners {
        Listeners {
            plain: Some(plain),
            tls: None,
            unix: None,
        }
    }
}

/// `--unixsocket`: binds the socket at `path`, replacing a file left there (as Redis does), with
/// the permissions `mode` (`--unixsocketperm`; 0 leaves the umask's). Needs a Tokio runtime.
pub fn bind_unix(path: &str, mode: u32) -> Result<UnixListener> {
    let failed = |err: std::io::Error| Error::Config(format!("Failed opening Unix socket: {err}"));
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path).map_err(failed)?;
    if mode != 0 {
        use std::os::unix::fs::PermissionsExt;
        let permissions = std::fs::Permissions::from_mode(mode);
        std::fs::set_permissions(path, permissions).map_err(failed)?;
    }
    Ok(listener)
}

/// A client accepted on one of the listeners.
enum Accepted {
    Plain(TcpStream, SocketAddr),
    Tls(TcpStream, SocketAddr),
    Unix(UnixStream),
}

/// Accepts on `listener`; never resolves when there is none.
async fn accept(listener: &Option<TcpListener>) -> std::io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(listener) => listener.accept().await,
        None => std::future::pending().await,
    }
}

async fn accept_unix(listener: &Option<UnixListener>) -> std::io::Result<UnixStream> {
    match listener {
        Some(listener) => Ok(listener.accept().await?.0),
        None => std::future::pending().await,
    }
}

/// `tcp-keepalive`: the kernel probes a connection idle for `secs`, then every third of that, and
/// closes it after three unanswered probes (Redis's settings), so a client whose host vanished is
/// dropped. 0: off.
fn keep_alive(stream: &TcpStream, secs: u64) {
    if secs == 0 {
        return;
    }
    let probes = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(secs))
        .with_interval(Duration::from_secs((secs / 3).max(1)))
        .with_retries(3);
    if let Err(err) = socket2::SockRef::from(stream).set_tcp_keepalive(&probes) {
        tracing::debug!(%err, "cannot set TCP keepalive");
    }
}

/// Why a new client cannot be served (maxclients, protected mode: TCP clients only), counted and
/// logged; the same rules for every listener.
fn refusal(shared: &Shared, peer: &ClientAddr) -> Option<&'static str> {
    let maxclients = shared.config.read().maxclients;
    if shared.clients.len() >= maxclients {
        let rejected = shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed)
            + 1;
        // Logged at powers of two: a reconnect storm must not become a log storm.
        if rejected.is_power_of_two() {
            tracing::warn!(%peer, maxclients, rejected, "max number of clients reached: connection refused");
        }
        return Some("ERR max number of clients reached");
    }
    let protected = peer
        .ip()
        .is_some_and(|ip| crate::config::refuses(&shared.config.read(), ip));
    if protected {
        shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        tracing::info!(%peer, "protected mode: refused a non-loopback client (no password is set)");
        return Some(PROTECTED_MODE_DENIED);
    }
    None
}

/// A TLS client: the handshake (bounded by [`crate::tls::HANDSHAKE_TIMEOUT`], in the client's own
/// task so it never holds up the accept loop), then the same checks and connection code as plain
/// clients. A failed handshake only closes this connection.
async fn serve_tls(
    acceptor: TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
) {
    let _ = stream.set_nodelay(true);
    let laddr = stream.local_addr().unwrap_or(shared.local_addr);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let stream = match crate::tls::handshake(&acceptor, stream).await {
        Ok(stream) => stream,
        Err(err) => {
            let failures = shared
                .stats
                .tls_handshake_failures
                .fetch_add(1, Ordering::Relaxed)
                + 1;
            // At info for the 1st, 2nd, 4th… failure only: a port scanner must not flood the log.
            if failures.is_power_of_two() {
                tracing::info!(%peer, %err, failures, "TLS handshake failed");
            } else {
                tracing::debug!(%peer, %err, "TLS handshake failed");
            }
            return;
        }
    };
    let (peer, laddr) = (ClientAddr::Tcp(peer), ClientAddr::Tcp(laddr));
    match refusal(&shared, &peer) {
        Some(error) => connection::refuse(stream, error).await,
        None => connection::serve(stream, peer, laddr, fd, shared).await,
    }
}

/// A signal that stops the server; its `shutdown-on-sigterm` / `shutdown-on-sigint` setting
/// decides whether the snapshot is saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    Terminate,
    Interrupt,
}

/// What the shutdown future of [`run`] resolves to: a [`StopSignal`] (the binary's), or `()`
/// (tests and embedders: a shutdown as SIGTERM's `default`, no setting applied).
pub trait ShutdownCause {
    fn signal(self) -> Option<StopSignal>;
}

impl ShutdownCause for () {
    fn signal(self) -> Option<StopSignal> {
        None
    }
}

impl ShutdownCause for StopSignal {
    fn signal(self) -> Option<StopSignal> {
        Some(self)
    }
}

/// Applies the signal's `shutdown-on-…` flags: `save` and `nosave` as SHUTDOWN's, `default` as a
/// SHUTDOWN without flags (save if `save` rules are set). Saves first when it should: false (the
/// server stays up, as Redis does) when that save failed and the flags have no `force`.
async fn shut_down_by(shared: &Arc<Shared>, signal: StopSignal) -> bool {
    use crate::snapshot::AtShutdown;
    let flags = {
        let config = shared.config.read();
        match signal {
            StopSignal::Terminate => config.shutdown_on_sigterm,
            StopSignal::Interrupt => config.shutdown_on_sigint,
        }
    };
    let at_shutdown = match (flags.save, flags.nosave) {
        (true, _) => AtShutdown::Save,
        (_, true) => AtShutdown::NoSave,
        _ => AtShutdown::ByRules,
    };
    shared.snapshots.set_at_shutdown(at_shutdown);
    shared.shutdown_now.store(flags.now, Ordering::Relaxed);
    tracing::info!(?signal, %flags, "received a signal: shutting down");
    let saving = shared.clone();
    let saved = tokio::task::spawn_blocking(move || {
        crate::snapshot::save_before_signal_shutdown(&*saving, flags.force)
    })
    .await;
    if let Ok(Err(err)) = saved {
        tracing::warn!(
            ?signal,
            %err,
            "received a signal but errors trying to shut down the server: still serving"
        );
        shared.snapshots.set_at_shutdown(AtShutdown::ByRules);
        return false;
    }
    true
}

/// Redis's `shutdown-timeout`: with replicas online, writes are paused and the shutdown waits (up
/// to that many seconds) until every one has acknowledged the whole replication stream, so that
/// a replica promoted after it has every write.
async fn wait_for_replicas(shared: &Shared) {
    let timeout = Duration::from_secs(shared.config.read().shutdown_timeout);
    let master = &shared.replication.master;
    let online = master.replicas().iter().filter(|r| r.online()).count();
    if timeout.is_zero() || online == 0 {
        return;
    }
    let deadline = Instant::now() + timeout;
    shared
        .store
        .pause
        .pause(deadline, crate::store::pause::PauseMode::Write);
    let end = shared.replication.feed.end();
    crate::replication::master::request_acks(&shared.replication.feed);
    tracing::info!(
        replicas = online,
        "waiting for replicas before shutting down"
    );
    while master.acked_at_least(end) < online {
        if Instant::now() >= deadline {
            tracing::warn!(
                timeout_secs = timeout.as_secs(),
                "lagging replicas did not acknowledge the stream within shutdown-timeout"
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// [`shut_down_by`], listening to `signals` meanwhile: a SIGINT exits at once ([`insist_on`]); a
/// SIGTERM is kept, and `signals` gives it back first if the shutdown is refused (its save failed).
async fn shut_down_insisting(
    shared: &Arc<Shared>,
    signal: StopSignal,
    signals: &mut Pin<Box<dyn Future<Output = Option<StopSignal>> + Send>>,
) -> bool {
    let attempt = shut_down_by(shared, signal);
    tokio::pin!(attempt);
    let mut kept = None;
    let mut fired = false;
    loop {
        tokio::select! {
            done = &mut attempt => {
                if let (false, Some(kept)) = (done, kept) {
                    *signals = Box::pin(async move { Some(kept) });
                }
                return done;
            }
            again = &mut *signals, if !fired => {
                fired = true;
                if let Some(again) = again {
                    insist_on(again);
                    kept = Some(again);
                }
            }
        }
    }
}

/// A SIGINT that comes while a shutdown by signal is pending (waiting for a script, or saving)
/// exits at once, as Redis's signal handler does.
fn insist_on(signal: StopSignal) {
    if signal == StopSignal::Interrupt {
        tracing::warn!("You insist... exiting now.");
        std::process::exit(1);
    }
}

/// Resolves on SIGINT or SIGTERM, naming it: the shutdown future of the binary, and the one that
/// follows a shutdown refused because its save failed. The handlers are installed at the call,
/// not at the first poll, so a signal that comes before the accept loop first waits is not the
/// default action (an exit without the shutdown's save).
pub fn stop_signal() -> impl Future<Output = StopSignal> + Send + 'static {
    use tokio::signal::unix::{signal, SignalKind};
    let (term, interrupt) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match (term, interrupt) {
            (Ok(mut term), Ok(mut interrupt)) => tokio::select! {
                _ = term.recv() => StopSignal::Terminate,
                _ = interrupt.recv() => StopSignal::Interrupt,
            },
            (Err(err), _) | (_, Err(err)) => {
                tracing::warn!(%err, "cannot handle SIGTERM and SIGINT");
                std::future::pending().await
            }
        }
    }
}

/// How often `maxmemory-clients` is checked: Redis's `hz`.
const CLIENT_EVICTION_EVERY: Duration = Duration::from_millis(100);

/// `maxmemory-clients`: every [`CLIENT_EVICTION_EVERY`], while the clients hold more than the
/// limit together, the ones holding the most are closed (their memory is what each connection
/// last published: its buffers after each read, its output while it writes).
async fn evict_clients(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut every = tokio::time::interval(CLIENT_EVICTION_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.changed() => return,
        }
        let limit = {
            let config = shared.config.read();
            config.maxmemory_clients.limit(config.maxmemory)
        };
        let Some(limit) = limit else { continue };
        let closed = shared.clients.over_memory_limit(limit);
        for client in &closed {
            tracing::debug!(
                client = client.describe(),
                "evicting client (maxmemory-clients)"
            );
            client.kill();
        }
        if !closed.is_empty() {
            Stats::add(&shared.stats.evicted_clients, closed.len() as u64);
            tracing::info!(
                clients = closed.len(),
                limit,
                "maxmemory-clients reached: closed the clients holding the most memory"
            );
        }
    }
}

/// Resolves when the warm start has put the recent summaries into the keyspace, or after `timeout`
/// (the database is unreachable; the rows are merged when it comes back). Until then the listeners
/// are bound but nothing is accepted: clients connect (the kernel queues them in the listen
/// backlog) and their first reply simply comes later, so a bot shard that reconnects and captures
/// at once never runs before the restore, and no command needs a check of its own.
/// The warm start's question "does this node serve the key?", asked of the slot map in cluster mode.
fn owns_key(cluster: &Option<Arc<crate::cluster::Cluster>>) -> Option<scope_rows::OwnsKey> {
    let cluster = cluster.clone()?;
    Some(Arc::new(move |key: &[u8]| {
        cluster.owns(crate::cluster::key_slot(key))
    }))
}

async fn wait_for_restore(mut restored: watch::Receiver<bool>, timeout: Duration) {
    let started = std::time::Instant::now();
    match tokio::time::timeout(timeout, restored.wait_for(|done| *done)).await {
        Ok(_) => tracing::debug!(waited = ?started.elapsed(), "warm start done"),
        Err(_) => tracing::warn!(
            timeout_secs = timeout.as_secs(),
            "database unreachable: serving without the restored summaries; they are merged when it comes back"
        ),
    }
}

/// Serves the listeners until `shutdown` resolves or a client sends SHUTDOWN; then stops
/// accepting, lets every connection finish the replies in flight, and returns. A TLS listener needs
/// `--tls-cert-file` and `--tls-key-file` in `config`.
pub async fn run(
    listeners: impl Into<Listeners>,
    config: Config,
    shutdown: impl Future<Output = impl ShutdownCause> + Send + 'static,
) -> Result<()> {
    let mut listeners: Listeners = listeners.into();
    let tls = crate::tls::Tls::start(&config, listeners.tls.is_some()).map_err(Error::Config)?;
    let local_addr = match (&listeners.plain, &listeners.tls, &listeners.unix) {
        (Some(listener), _, _) | (None, Some(listener), _) => listener.local_addr()?,
        // Unix socket only: INFO's `tcp_port` is 0, as Redis's.
        (None, None, Some(_)) if !config.cluster_enabled => SocketAddr::from(([0, 0, 0, 0], 0)),
        (None, None, Some(_)) => return Err(Error::Config("cluster mode needs a TCP port".into())),
        (None, None, None) => return Err(Error::Config("no port to listen on".into())),
    };
    let unix_path: Arc<str> = Arc::from(config.unixsocket.as_str());
    // Cluster mode is checked before anything starts: its keys' format must be set before the
    // warm start builds a key.
    let cluster = match config.cluster_enabled {
        true => Some(crate::cluster::prepare(&config, local_addr).map_err(Error::Config)?),
        false => None,
    };
    // A cluster node joins before the warm start, which restores only the slots it owns then.
    let coordinator = match &cluster {
        Some(cluster) => Some(
            crate::cluster::membership::join(
                cluster,
                config.database_url.as_deref().unwrap_or_default(),
            )
            .await
            .map_err(Error::Config)?,
        ),
        None => None,
    };
    let store = Arc::new(Store::with_databases(config.databases as usize));
    // The snapshot is in place before the warm start merges the scope rows over it.
    // With `appendonly`, the log holds the dataset (Redis ignores `dump.rdb` then).
    let mut loaded = if config.appendonly {
        crate::aof::load::load(&config, &store, |base| {
            crate::commands::log_replay::LogReplay::over(&config, &store, local_addr, base)
        })
    } else {
        crate::snapshot::load(&config, &store)
    }
    .map_err(Error::Config)?;
    // The writer stops only after the connections have drained, so their last operations land.
    let (writer_stop_tx, writer_stop_rx) = watch::channel(false);
    let scope_rows::Started {
        handle: persist,
        writer,
        restored,
    } = scope_rows::start(&config, store.clone(), writer_stop_rx, owns_key(&cluster))
        .map_err(Error::Config)?;
    let restore_timeout = Duration::from_secs(config.stm_restore_timeout);
    let mut shared = Shared::new(config, local_addr, store, persist)?;
    // The store feeds the replication stream from here on (the load above had nothing to feed).
    shared.store.observe(shared.replication.feed.clone());
    shared.cluster = cluster.clone();
    shared.tls = tls;
    shared.snapshots.note_load(&loaded, &shared.store);
    if !loaded.functions.is_empty() {
        shared
            .scripting
            .engine()
            .restore_functions(
                &loaded.functions,
                crate::scripting::functions::RestorePolicy::Append,
            )
            .map_err(|e| Error::Config(format!("cannot load the snapshot's functions: {e}")))?;
    }
    // The file's FT.* indexes: the append-only file's replay's, or the snapshot's definitions
    // scanned again over the keys just loaded.
    crate::snapshot::restore_indexes(&shared, &mut loaded);
    let shared = Arc::new(shared);
    let aof_log = crate::aof::open_at_start(&*shared).map_err(Error::Config)?;
    let aof_thread = crate::aof::spawn(shared.clone(), aof_log)?;
    // `replicaof` in the configuration: follow that primary from the start.
    let replicaof = shared.config.read().replicaof.clone();
    if let Some((host, port)) = replicaof.split_once(' ') {
        match (port.parse::<u16>(), &cluster) {
            (Ok(port), None) => {
                crate::replication::replica::follow(&*shared, host.to_string(), port, false)
            }
            _ => {
                tracing::warn!(%replicaof, "replicaof ignored (cluster mode, or not \"<host> <port>\")")
            }
        }
    }
    let tls_addr = match &listeners.tls {
        Some(listener) => Some(listener.local_addr()?),
        None => None,
    };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        addr = listeners.plain.as_ref().map(|_| local_addr.to_string()),
        tls_addr = tls_addr.map(|a| a.to_string()),
        unixsocket = listeners.unix.as_ref().map(|_| unix_path.to_string()),
        database = shared.stm.persist.backend(),
        "stmd ready to accept connections"
    );

    let (stop_tx, stop_rx) = watch::channel(false);
    let cluster_task = match (&cluster, coordinator) {
        (Some(cluster), Some(coordinator)) => {
            Some(tokio::spawn(crate::cluster::membership::follow(
                cluster.clone(),
                coordinator,
                shared.clone(),
                stop_rx.clone(),
            )))
        }
        _ => None,
    };
    // Every connection holds a clone; when all are dropped, the drain is complete.
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);

    let metrics_addr = shared.config.read().metrics_addr.clone();
    let metrics_task = match metrics_addr {
        Some(addr) => {
            let metrics = TcpListener::bind(&addr)
                .await
                .map_err(|e| Error::Config(format!("cannot bind --metrics-addr {addr}: {e}")))?;
            tracing::info!(addr = %metrics.local_addr()?, "metrics endpoint listening on /metrics");
            let mut rx = stop_rx.clone();
            Some(tokio::spawn(crate::exporter::serve(
                metrics,
                shared.clone(),
                async move {
                    let _ = rx.changed().await;
                },
            )))
        }
        None => None,
    };

    let expiry_task = {
        let mut rx = stop_rx.clone();
        let shared = shared.clone();
        tokio::spawn(async move {
            let store = shared.store.clone();
            let after_tick = || crate::events::after_background_work(&*shared);
            expiry::run(store, after_tick, async move {
                let _ = rx.changed().await;
            })
            .await
        })
    };

    // Its own thread: compression is CPU work in milliseconds, not for a tokio worker.
    let compress_thread = {
        let rx = stop_rx.clone();
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("stm-compress".into())
            .spawn(move || {
                crate::stm::compress::run(
                    &shared.store,
                    &shared.stm.stats,
                    || shared.config.read().stm_compress_after.saturating_mul(1000),
                    // Stopped, or the server is gone (a test's runtime dropped it).
                    || *rx.borrow() || rx.has_changed().is_err(),
                )
            })?
    };

    let meter_task = {
        let mut rx = stop_rx.clone();
        let shared = shared.clone();
        tokio::spawn(async move {
            let store = shared.store.clone();
            let after_tick = || crate::events::after_background_work(&*shared);
            eviction::run_meter(store, after_tick, async move {
                let _ = rx.changed().await;
            })
            .await
        })
    };

    let snapshot_task = tokio::spawn(crate::snapshot::run(shared.clone(), stop_rx.clone()));
    let replica_task = tokio::spawn(crate::replication::link::run(
        shared.clone(),
        stop_rx.clone(),
        crate::commands::log_replay::PrimaryClient::new,
    ));
    let failover_task = tokio::spawn(crate::replication::failover::run(
        shared.clone(),
        stop_rx.clone(),
    ));

    let client_eviction_task = tokio::spawn(evict_clients(shared.clone(), stop_rx.clone()));

    let rates_task = {
        let mut rx = stop_rx.clone();
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(crate::metrics::SAMPLE_EVERY);
            loop {
                tokio::select! {
                    _ = every.tick() => shared.stats.instant.sample(&shared.stats),
                    _ = rx.changed() => break,
                }
            }
        })
    };

    // After a shutdown by signal that could not save (and so did not happen), the next signal.
    let mut shutdown: Pin<Box<dyn Future<Output = Option<StopSignal>> + Send>> =
        Box::pin(async move { shutdown.await.signal() });
    // No connection is accepted before the warm start is done: see `wait_for_restore`.
    let restoring = wait_for_restore(restored, restore_timeout);
    tokio::pin!(restoring);
    let mut restore_done = false;
    // A signal that came while a script ran: the shutdown waits for the script's end.
    let mut deferred: Option<StopSignal> = None;
    loop {
        let accepted = tokio::select! {
            signal = &mut shutdown => {
                let Some(signal) = signal else { break };
                // Listening again before the attempt: a signal that comes while it saves is
                // kept for after a refusal, not lost.
                let next = stop_signal();
                shutdown = Box::pin(async { Some(next.await) });
                if deferred.is_some() {
                    insist_on(signal);
                    continue;
                }
                // As Redis: a shutdown by signal waits for a running script to end or be
                // killed, and connections are still accepted meanwhile, so that SCRIPT KILL,
                // FUNCTION KILL or SHUTDOWN NOSAVE can reach it.
                if shared.scripting.run.is_active() {
                    tracing::warn!(?signal, "a signal came while a script runs: shutting down when it ends");
                    deferred = Some(signal);
                    continue;
                }
                if shut_down_insisting(&shared, signal, &mut shutdown).await {
                    break;
                }
                continue;
            }
            _ = shared.scripting.run.until_idle(), if deferred.is_some() => {
                let Some(signal) = deferred.take() else { continue };
                if shut_down_insisting(&shared, signal, &mut shutdown).await {
                    break;
                }
                continue;
            }
            _ = shared.shutdown_requested.notified() => break,
            // CONFIG SET port: serve the new listener; the old one closes (its clients stay).
            _ = shared.listener_changed.notified() => {
                if let Some(listener) = shared.new_listener.lock().take() {
                    listeners.plain = listener;
                }
                continue;
            }
            _ = &mut restoring, if !restore_done => {
                restore_done = true;
                shared.supervisor.ready();
                continue;
            }
            accepted = accept(&listeners.plain), if restore_done => {
                accepted.map(|(stream, peer)| Accepted::Plain(stream, peer))
            }
            accepted = accept(&listeners.tls), if restore_done => {
                accepted.map(|(stream, peer)| Accepted::Tls(stream, peer))
            }
            accepted = accept_unix(&listeners.unix), if restore_done => accepted.map(Accepted::Unix),
        };
        let accepted = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(%err, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        shared
            .stats
            .total_connections_received
            .fetch_add(1, Ordering::Relaxed);
        let shared = shared.clone();
        let done = done_tx.clone();
        match accepted {
            Accepted::Tls(stream, peer) => {
                keep_alive(&stream, shared.config.read().tcp_keepalive);
                // A TLS listener exists only with its acceptor.
                let Some(acceptor) = shared.tls.acceptor() else {
                    continue;
                };
                tokio::spawn(async move {
                    serve_tls(acceptor, stream, peer, shared).await;
                    drop(done);
                });
            }
            Accepted::Plain(stream, peer) => {
                keep_alive(&stream, shared.config.read().tcp_keepalive);
                let peer = ClientAddr::Tcp(peer);
                if let Some(error) = refusal(&shared, &peer) {
                    tokio::spawn(connection::refuse(stream, error));
                    continue;
                }
                let _ = stream.set_nodelay(true);
                let laddr = ClientAddr::Tcp(stream.local_addr().unwrap_or(shared.local_addr));
                let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
                tokio::spawn(async move {
                    connection::serve(stream, peer, laddr, fd, shared).await;
                    drop(done);
                });
            }
            Accepted::Unix(stream) => {
                let path = ClientAddr::Unix(unix_path.clone());
                if let Some(error) = refusal(&shared, &path) {
                    tokio::spawn(connection::refuse(stream, error));
                    continue;
                }
                let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
                tokio::spawn(async move {
                    connection::serve(stream, path.clone(), path, fd, shared).await;
                    drop(done);
                });
            }
        }
    }

    tracing::info!("shutting down: no new connections, finishing replies in flight");
    shared.supervisor.stopping();
    if !shared.shutdown_now.load(Ordering::Relaxed) {
        wait_for_replicas(&shared).await;
    }
    if listeners.unix.is_some() {
        let _ = std::fs::remove_file(&*unix_path);
    }
    drop(listeners);
    let _ = stop_tx.send(true);
    shared.clients.stop_all();
    drop(done_tx);
    if tokio::time::timeout(DRAIN_TIMEOUT, done_rx.recv())
        .await
        .is_err()
    {
        tracing::warn!("some connections did not finish within the drain timeout");
    }
    let _ = expiry_task.await;
    let _ = tokio::task::spawn_blocking(move || compress_thread.join()).await;
    let _ = meter_task.await;
    let _ = rates_task.await;
    let _ = client_eviction_task.await;
    let _ = snapshot_task.await;
    let _ = replica_task.await;
    let _ = failover_task.await;
    shared.aof.stop(); // the last writes go into the log and are synced
    let _ = tokio::task::spawn_blocking(move || aof_thread.join()).await;
    {
        let shared = shared.clone();
        let _ = tokio::task::spawn_blocking(move || crate::snapshot::at_shutdown(&*shared)).await;
    }
    if let Some(task) = cluster_task {
        let _ = task.await;
    }
    if let Some(task) = metrics_task {
        let _ = task.await;
    }
    let _ = writer_stop_tx.send(true);
    if let Some(writer) = writer {
        let limit = scope_rows::writer::DRAIN_TIMEOUT + Duration::from_secs(1);
        if tokio::time::timeout(limit, writer).await.is_err() {
            tracing::warn!("the scope-row writer did not finish in time");
        }
    }
    tracing::info!("stmd stopped");
    Ok(())
}
