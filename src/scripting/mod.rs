//! Lua scripting as Redis 7 runs it: one Lua 5.1 state for the server (Redis embeds one too),
//! behind the engine lock, sandboxed. A script holds the shards of its database it reaches (each
//! locked when first reached, kept to the end: `Store::lock_as_needed`), and dispatch parks
//! every other command while a script call is in progress, so scripts are atomic like EXEC. One
//! state rather than one per thread: scripts serialise on that anyway, so more states would add
//! no parallelism, only N copies of every compiled script and library.
//!
//! Lock order: the engine lock first, then shards. The engine's holder (a script, or an EXEC,
//! which takes the engine for that alone) is the only locker that takes shards in no particular
//! order, as it reaches them; every other multi-shard locker backs off (see `store::held`). SCRIPT
//! KILL and the BUSY check take neither: they read [`RunState`]. Other connections never wait for
//! a script on a lock: dispatch sees the script coming ([`RunState::is_active`]) and parks the
//! command asynchronously ([`RunState::wait`]).
//!
//! Where a script runs: on its connection's tokio worker when the engine is free (or held by a
//! brief inline script, which it waits for on the worker for at most 2 ms, holding nothing:
//! [`Scripting::engine_for_worker`]); a shard found held (by a command in flight) is waited for
//! off the worker, and a script that runs past 2 ms moves off the worker
//! ([`RunState::maybe_hand_off`]). A script that finds the engine taken otherwise waits for its
//! turn in its connection ([`Scripting::wait_turn`]); scripts in EXEC run off the worker
//! ([`crate::worker::off_worker`]).

mod call;
pub mod convert;
pub mod engine;
pub mod functions;
mod hook;
pub mod libs;

use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};
use sha1::{Digest, Sha1};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

pub use call::Request;
pub use engine::{Engine, Loaded, ScriptFlags};
pub use functions::{Functions, Library, RestorePolicy};

/// The exact BUSY texts of Redis 7.2.
pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// The script engine shared by every connection.
pub struct Scripting {
    engine: Mutex<Engine>,
    pub run: Arc<RunState>,
    /// Figures for INFO, refreshed after every load and call (INFO must not wait for a script).
    usage: Mutex<ScriptUsage>,
    /// The function running now and the command that called it (FUNCTION STATS).
    current_function: Mutex<Option<(String, Vec<Bytes>)>>,
    /// Woken (one waiter at a time, oldest first) whenever the engine is released: scripts that
    /// found it taken wait here asynchronously, in their connection, instead of each parking a
    /// thread on the engine lock.
    turn: Notify,
}

/// The locked engine; releasing it hands the turn to the oldest waiting script.
pub struct EngineGuard<'a> {
    guard: MutexGuard<'a, Engine>,
    turn: &'a Notify,
}

impl Deref for EngineGuard<'_> {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.guard
    }
}

impl DerefMut for EngineGuard<'_> {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.guard
    }
}

impl Drop for EngineGuard<'_> {
    fn drop(&mut self) {
        // The guard field is released right after this: a woken waiter that still finds the
        // engine taken waits again, and that holder's release wakes the next one.
        self.turn.notify_one();
    }
}

/// INFO memory's scripting figures.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptUsage {
    pub scripts: usize,
    pub script_bytes: usize,
    pub lua_bytes: usize,
    pub functions: usize,
    pub libraries: usize,
    pub function_bytes: usize,
}

/// What other connections may know about scripts without taking any lock.
pub struct RunState {
    /// Script calls between "about to lock the keyspace" and "done": dispatch's one relaxed load.
    /// It is raised before the script takes any lock, so a command that sees 0 cannot be caught
    /// behind a script's locks except in the few instructions between its check and its own lock.
    active: AtomicUsize,
    /// When the running script (the one holding the engine) started, in milliseconds since
    /// `epoch`; 0 while none holds it.
    started_ms: AtomicU64,
    kill: AtomicBool,
    wrote: AtomicBool,
    /// The running script runs on its connection's tokio worker (it found everything free): if
    /// it runs long, it hands the worker's other tasks to another thread ([`hand_off_worker`]).
    inline: AtomicBool,
    /// The running inline script has handed its worker off (at least once: see `on_hook`).
    handed_off: AtomicBool,
    /// The running script is a function (FCALL): FUNCTION KILL stops it, not SCRIPT KILL.
    is_function: AtomicBool,
    epoch: Instant,
    /// Woken whenever a script call ends, for the connections waiting to run a command.
    ended: Notify,
}

/// What dispatch does with a command (not flagged allow-busy) while a script call is in progress.
#[derive(Debug, PartialEq)]
pub enum BusyCheck {
    /// No script: run it.
    Free,
    /// A script runs under the threshold: wait for it asynchronously, then dispatch again.
    Wait,
    /// A script has run past `busy-reply-threshold`: answer BUSY (this text).
    Busy(&'static str),
}

impl RunState {
    fn new() -> RunState {
        RunState {
            active: AtomicUsize::new(0),
            started_ms: AtomicU64::new(0),
            kill: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            inline: AtomicBool::new(false),
            handed_off: AtomicBool::new(false),
            is_function: AtomicBool::new(false),
            epoch: Instant::now(),
            ended: Notify::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    /// One relaxed load: dispatch's fast path.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.active.load(Relaxed) != 0
    }

    pub fn kill_requested(&self) -> bool {
        self.kill.load(Relaxed)
    }

    /// Called as a script runs (Lua's instruction hook, each `redis.call`): a script running on a
    /// tokio worker that has run for a while moves off it, so the worker's other connections
    /// are served (and get BUSY, SCRIPT KILL) while it goes on.
    #[inline]
    pub fn maybe_hand_off(&self) {
        if self.inline.load(Relaxed)
            && self
                .running_for()
                .is_some_and(|ran| ran >= Duration::from_millis(INLINE_MS))
            && !self.handed_off.swap(true, Relaxed)
        {
            hand_off_worker(true);
        }
    }

    /// Lua's instruction hook: the hand-off above, then again at every later hook. tokio gives
    /// the worker back to this thread if the thread it spawned to take it over had not started
    /// yet; asking again costs nothing once this thread holds no worker.
    pub fn on_hook(&self) {
        if self.handed_off.load(Relaxed) {
            hand_off_worker(false);
        } else {
            self.maybe_hand_off();
        }
    }

    /// Whether the script about to run (holding the engine) runs on its tokio worker.
    pub fn set_inline(&self, inline: bool) {
        self.inline.store(inline, Relaxed);
    }

    /// Whether the engine's holder is a script running on its tokio worker that started less than
    /// [`INLINE_MS`] ago: it ends, or moves off its worker, within about that long, so another
    /// script may wait for the engine on its own worker instead of parking its connection.
    pub fn brief_holder(&self) -> bool {
        self.inline.load(Relaxed)
            && !self.handed_off.load(Relaxed)
            && self
                .running_for()
                .is_some_and(|ran| ran < Duration::from_millis(INLINE_MS))
    }

    /// A script write happened: SCRIPT KILL must refuse from now on.
    pub fn mark_write(&self) {
        self.wrote.store(true, Relaxed);
    }

    /// How long the script holding the engine has run, if one does.
    fn running_for(&self) -> Option<Duration> {
        match self.started_ms.load(Relaxed) {
            0 => None,
            at => Some(Duration::from_millis(self.now_ms().saturating_sub(at))),
        }
    }

    /// Dispatch's decision for a command not flagged allow-busy.
    pub fn check(&self, threshold_ms: u64) -> BusyCheck {
        if !self.is_active() {
            return BusyCheck::Free;
        }
        match self.running_for() {
            Some(ran) if ran >= Duration::from_millis(threshold_ms) => {
                BusyCheck::Busy(self.busy_text())
            }
            _ => BusyCheck::Wait,
        }
    }

    /// Redis's BUSY error for what is running: it names the command that can stop it.
    pub fn busy_text(&self) -> &'static str {
        if self.is_function.load(Relaxed) {
            BUSY_FUNCTION
        } else {
            BUSY_EVAL
        }
    }

    /// Waits without blocking a thread until no script call is in progress or the running one
    /// passes `threshold_ms` (then the command is dispatched again and answers BUSY).
    pub async fn wait(&self, threshold_ms: u64) {
        self.wait_for_end(Some(Duration::from_millis(threshold_ms)))
            .await;
    }

    /// Waits, without blocking a thread, until no script call is in progress, however long it
    /// runs: a blocked client (BLPOP…) woken by a script's write is served after the script, as
    /// Redis serves blocked clients after the command that fed them, never answered BUSY.
    pub async fn until_idle(&self) {
        self.wait_for_end(None).await;
    }

    async fn wait_for_end(&self, threshold: Option<Duration>) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if !self.is_active() {
                return;
            }
            let left = match (threshold, self.running_for()) {
                (Some(threshold), Some(ran)) if ran >= threshold => return,
                (Some(threshold), Some(ran)) => threshold - ran,
                // A script still waiting for its locks has no start yet: look again shortly.
                (Some(_), None) => Duration::from_millis(5),
                // No threshold: the bounded sleep is only a safety net (every end notifies).
                (None, _) => Duration::from_millis(100),
            };
            tokio::select! {
                _ = ended => {}
                _ = tokio::time::sleep(left) => {}
            }
        }
    }

    /// SHUTDOWN while a script call is in progress, as Redis: past the threshold only `NOSAVE`
    /// may stop the server (BUSY otherwise), and then the script is stopped, written or not, so
    /// its connection can drain.
    pub fn before_shutdown(&self, nosave: bool, threshold_ms: u64) -> Result<(), &'static str> {
        if !self.is_active() {
            return Ok(());
        }
        if !nosave {
            return match self.check(threshold_ms) {
                BusyCheck::Busy(text) => Err(text),
                _ => Ok(()),
            };
        }
        self.kill.store(true, Relaxed);
        Ok(())
    }

    /// SCRIPT KILL (`function_kill` false) or FUNCTION KILL: stops a script, or a function, that
    /// has not written.
    pub fn kill(&self, function_kill: bool) -> Result<(), &'static str> {
        if self.running_for().is_none() {
            return Err("NOTBUSY No scripts in execution right now.");
        }
        if self.wrote.load(Relaxed) {
            return Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
        }
        if function_kill != self.is_function.load(Relaxed) {
            return Err(self.busy_text());
        }
        self.kill.store(true, Relaxed);
        Ok(())
    }
}

/// Marks a script call as in progress (see [`RunState::active`]) for as long as it lives.
pub struct Active<'a>(&'a RunState);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Relaxed);
        self.0.ended.notify_waiters();
    }
}

/// Marks the script holding the engine as running (for BUSY and SCRIPT KILL) while it lives.
pub struct Running<'a>(&'a RunState);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.started_ms.store(0, Relaxed);
        self.0.kill.store(false, Relaxed);
        self.0.inline.store(false, Relaxed);
        self.0.handed_off.store(false, Relaxed);
    }
}

impl Default for Scripting {
    fn default() -> Self {
        Self::new()
    }
}

impl Scripting {
    pub fn new() -> Scripting {
        let run = Arc::new(RunState::new());
        let engine = match Engine::new(run.clone()) {
            Ok(engine) => engine,
            // Only a bug in the prelude can get here, and every test would show it.
            Err(e) => panic!("the Lua prelude failed: {e}"),
        };
        Scripting {
            // INFO shows the state's size from the start, not from the first script.
            usage: Mutex::new(engine.usage()),
            engine: Mutex::new(engine),
            run,
            current_function: Mutex::new(None),
            turn: Notify::new(),
        }
    }

    /// Announces a script call before it takes any keyspace lock; the guard ends it.
    pub fn activate(&self) -> Active<'_> {
        self.run.active.fetch_add(1, Relaxed);
        Active(&self.run)
    }

    /// The engine, locked. Callers hold no shard (see the lock order above).
    pub fn engine(&self) -> EngineGuard<'_> {
        self.guard(self.engine.lock())
    }

    /// The engine if it frees up within `wait` (SCRIPT LOAD and co. while a script runs).
    pub fn try_engine(&self, wait: Duration) -> Option<EngineGuard<'_>> {
        self.engine.try_lock_for(wait).map(|g| self.guard(g))
    }

    /// The engine if it is free now, or frees up within [`INLINE_MS`] while a brief script holds
    /// it (a script about to run on its tokio worker). Two workers taking turns at the engine
    /// this way avoid parking a connection and waking it from the other worker at each turn.
    pub fn engine_for_worker(&self) -> Option<EngineGuard<'_>> {
        if let Some(engine) = self.engine.try_lock() {
            return Some(self.guard(engine));
        }
        if !self.run.brief_holder() {
            return None;
        }
        self.try_engine(Duration::from_millis(INLINE_MS))
    }

    /// The engine for an EXEC, which holds it to lock shards as it reaches them (the engine's
    /// holder is the one locker allowed to: see `store::held`). Another EXEC or a SCRIPT LOAD
    /// holds it for microseconds, so it is waited for on the worker first; a script past that
    /// (dispatch parks EXEC while one runs, so only one that started in between) off it.
    pub fn engine_for_exec(&self) -> EngineGuard<'_> {
        if let Some(engine) = self.engine.try_lock() {
            return self.guard(engine);
        }
        if let Some(engine) = self.engine.try_lock_for(Duration::from_millis(INLINE_MS)) {
            return self.guard(engine);
        }
        crate::worker::off_worker(|| self.engine())
    }

    fn guard<'a>(&'a self, guard: MutexGuard<'a, Engine>) -> EngineGuard<'a> {
        EngineGuard {
            guard,
            turn: &self.turn,
        }
    }

    /// True while anyone holds the engine (a script runs, or SCRIPT LOAD and co.).
    pub fn engine_taken(&self) -> bool {
        self.engine.is_locked()
    }

    /// What a connection whose command was not run waits for: the engine (`turn`: the command
    /// is a script) or the end of the script calls in progress.
    pub async fn wait(&self, turn: bool, threshold_ms: u64) {
        if turn {
            self.wait_turn(threshold_ms).await;
        } else {
            self.run.wait(threshold_ms).await;
        }
    }

    /// Waits, without blocking a thread, for the engine to be released (a script that found it
    /// taken: its connection dispatches it again then), or for the script holding it to pass
    /// `threshold_ms` (the command then answers BUSY).
    pub async fn wait_turn(&self, threshold_ms: u64) {
        let threshold = Duration::from_millis(threshold_ms);
        loop {
            let turn = self.turn.notified();
            tokio::pin!(turn);
            turn.as_mut().enable();
            if !self.engine.is_locked() {
                return;
            }
            // Releases wake waiters one at a time; the bounded sleep is only a safety net.
            let left = match self.run.running_for() {
                Some(ran) if ran >= threshold => return,
                Some(ran) => (threshold - ran).min(Duration::from_millis(100)),
                None => Duration::from_millis(5),
            };
            tokio::select! {
                _ = turn => {}
                _ = tokio::time::sleep(left) => {}
            }
        }
    }

    /// Marks the start of a script call (the caller holds the engine); the guard marks its end.
    pub fn running(&self, is_function: bool) -> Running<'_> {
        self.run.is_function.store(is_function, Relaxed);
        self.run.kill.store(false, Relaxed);
        self.run.wrote.store(false, Relaxed);
        self.run.started_ms.store(self.run.now_ms(), Relaxed);
        Running(&self.run)
    }

    /// Refreshes INFO's figures from the (locked) engine.
    pub fn record_usage(&self, engine: &Engine) {
        *self.usage.lock() = engine.usage();
    }

    /// INFO memory's figures, without waiting for a running script.
    pub fn usage(&self) -> ScriptUsage {
        *self.usage.lock()
    }

    /// FUNCTION STATS's view of the running function: its name, the calling command, and how
    /// long it has run.
    pub fn current_function(&self) -> Option<(String, Vec<Bytes>, Duration)> {
        let (name, command) = self.current_function.lock().clone()?;
        Some((name, command, self.run.running_for().unwrap_or_default()))
    }

    /// Records the function about to run (None: an eval script), for FUNCTION STATS.
    pub fn set_current_function(&self, current: Option<(String, Vec<Bytes>)>) {
        *self.current_function.lock() = current;
    }
}

/// How long (ms) a script runs on its tokio worker before it moves off it.
const INLINE_MS: u64 = 2;

/// Moves the rest of the current task (a script that runs long) off its tokio worker: the
/// worker's queue goes to another thread, and this thread finishes the task as a blocking one.
/// Returns once the runtime runs tasks again, so the hand-off has happened (with one worker
/// thread, only that new thread can run them).
fn hand_off_worker(first: bool) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return;
    }
    tokio::task::block_in_place(|| {
        if !first {
            // Lets the thread tokio just spawned (if it had to) take the worker first.
            std::thread::yield_now();
            return;
        }
        let (ran, running) = std::sync::mpsc::sync_channel(1);
        handle.spawn(async move {
            let _ = ran.send(());
        });
        let _ = running.recv_timeout(Duration::from_millis(200));
    });
}

/// Lower-case hex SHA1, the name scripts go by.
pub fn sha1_hex(data: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha1::digest(data);
    let mut out = String::with_capacity(40);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 15)]));
    }
    out
}
