//! Lua scripting as Redis 7 runs it: one Lua 5.1 state for the server (Redis embeds one too),
//! behind the engine lock, sandboxed; scripts run under the whole-keyspace lock, so they are atomic
//! like EXEC. One state rather than one per thread: scripts serialise on the keyspace lock anyway,
//! so more states would add no parallelism, only N copies of every compiled script and library.
//!
//! Lock order: the keyspace lock first, then the engine lock (EXEC already holds the keyspace when
//! it runs a queued EVAL). SCRIPT KILL and the BUSY check take neither: they read [`RunState`].

pub mod convert;
pub mod engine;
pub mod libs;

use parking_lot::{Mutex, MutexGuard};
use sha1::{Digest, Sha1};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use engine::{Engine, Loaded, ScriptFlags};

/// The exact BUSY texts of Redis 7.2.
pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// The script engine shared by every connection.
pub struct Scripting {
    engine: Mutex<Engine>,
    pub run: Arc<RunState>,
    /// Figures for INFO, refreshed after every load and call (INFO must not wait for a script).
    cached_scripts: AtomicUsize,
    scripts_bytes: AtomicUsize,
    lua_bytes: AtomicUsize,
}

/// What other connections may know about the running script without taking any lock.
pub struct RunState {
    /// When the running script started, in milliseconds since `epoch`; 0 when none runs.
    started_ms: AtomicU64,
    kill: AtomicBool,
    wrote: AtomicBool,
    epoch: Instant,
}

impl RunState {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    /// One relaxed load: dispatch's fast path.
    pub fn is_running(&self) -> bool {
        self.started_ms.load(Relaxed) != 0
    }

    pub fn kill_requested(&self) -> bool {
        self.kill.load(Relaxed)
    }

    /// A script write happened: SCRIPT KILL must refuse from now on.
    pub fn mark_write(&self) {
        self.wrote.store(true, Relaxed);
    }

    fn begin(&self) {
        self.kill.store(false, Relaxed);
        self.wrote.store(false, Relaxed);
        self.started_ms.store(self.now_ms(), Relaxed);
    }

    fn end(&self) {
        self.started_ms.store(0, Relaxed);
        self.kill.store(false, Relaxed);
    }

    /// How long the running script has run, if one does.
    fn running_for(&self) -> Option<Duration> {
        match self.started_ms.load(Relaxed) {
            0 => None,
            at => Some(Duration::from_millis(self.now_ms().saturating_sub(at))),
        }
    }

    /// Dispatch's check for commands not flagged allow-busy: waits while a script runs under the
    /// threshold (the command would have queued behind it in Redis), then answers BUSY if it still
    /// runs. The wait leaves the tokio worker to other tasks, so SCRIPT KILL can always get in.
    pub fn busy_error(&self, threshold_ms: u64) -> Option<&'static str> {
        self.running_for()?;
        let threshold = Duration::from_millis(threshold_ms);
        let wait = || loop {
            match self.running_for() {
                None => return None,
                Some(ran) if ran >= threshold => return Some(BUSY_EVAL),
                Some(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        };
        off_worker(wait)
    }

    /// SCRIPT KILL: stops a script that has not written.
    pub fn kill(&self) -> Result<(), &'static str> {
        if self.running_for().is_none() {
            return Err("NOTBUSY No scripts in execution right now.");
        }
        if self.wrote.load(Relaxed) {
            return Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
        }
        self.kill.store(true, Relaxed);
        Ok(())
    }
}

/// Marks a script as running for as long as it lives.
pub struct Running<'a>(&'a RunState);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

impl Default for Scripting {
    fn default() -> Self {
        Self::new()
    }
}

impl Scripting {
    pub fn new() -> Scripting {
        let run = Arc::new(RunState {
            started_ms: AtomicU64::new(0),
            kill: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            epoch: Instant::now(),
        });
        let engine = match Engine::new(run.clone()) {
            Ok(engine) => engine,
            // Only a bug in the prelude can get here, and every test would show it.
            Err(e) => panic!("the Lua prelude failed: {e}"),
        };
        Scripting {
            engine: Mutex::new(engine),
            run,
            cached_scripts: AtomicUsize::new(0),
            scripts_bytes: AtomicUsize::new(0),
            lua_bytes: AtomicUsize::new(0),
        }
    }

    /// The engine, locked. Callers that run a script hold the keyspace lock first.
    pub fn engine(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock()
    }

    /// Marks the start of a script call; the returned guard marks its end.
    pub fn running(&self) -> Running<'_> {
        self.run.begin();
        Running(&self.run)
    }

    /// Refreshes INFO's figures from the (locked) engine.
    pub fn record_usage(&self, engine: &Engine) {
        let (scripts, bytes, lua) = engine.usage();
        self.cached_scripts.store(scripts, Relaxed);
        self.scripts_bytes.store(bytes, Relaxed);
        self.lua_bytes.store(lua, Relaxed);
    }

    /// (number_of_cached_scripts, used_memory_scripts, used_memory_lua).
    pub fn usage(&self) -> (usize, usize, usize) {
        (
            self.cached_scripts.load(Relaxed),
            self.scripts_bytes.load(Relaxed),
            self.lua_bytes.load(Relaxed),
        )
    }
}

/// Runs `f`, which may take long (a script, a wait for one), after handing this tokio worker's
/// queued tasks to another thread, so a long script never holds up other connections' tasks.
pub fn off_worker<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Lower-case hex SHA1, the name scripts go by.
pub fn sha1_hex(data: &[u8]) -> String {
    let digest = Sha1::digest(data);
    let mut out = String::with_capacity(40);
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}
