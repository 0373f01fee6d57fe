//! The instruction hook every script and library load runs under: it moves a long script off
//! its tokio worker, ends a killed script, and ends a library load past its time limit.
//!
//! It is a raw Lua hook rather than mlua's: mlua's hook only runs on the thread it was set on and
//! clears itself in any other, so a loop inside a coroutine was never stopped. Lua gives a new
//! coroutine its creator's hook, so this one follows the script into every coroutine.
//!
//! Once a script must stop, the hook fires at every line as well (of the thread it caught, and
//! of the main thread, which new coroutines copy), and raises again at each, as Redis's
//! `luaMaskCountHook` does: a `pcall` that catches the error returns to a line that raises it
//! again, so no loop of pcalls can outlive a kill.

use super::RunState;
use mlua::ffi;
use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lua instructions between two runs of the hook. Redis runs its hook every 100,000; a loop that
/// calls C functions doing much work per instruction (`string.rep` of megabytes until the memory
/// budget fails, in a pcall) ran for seconds between two, unkillable and on its worker meanwhile.
/// The hook costs well under 100 ns, about 3% of 1,000 instructions.
const EVERY: c_int = 1_000;

/// The registry field that holds the [`Hook`]'s address for the C hook.
const REGISTRY_FIELD: &CStr = c"stmd.hook";

/// What Redis's killed script raises (for SCRIPT KILL, FUNCTION KILL and SHUTDOWN NOSAVE alike).
const KILLED: &CStr = c"Script killed by user with SCRIPT KILL...";

/// What a library whose code runs past [`LOAD_LIMIT`] raises (Redis's `luaEngineLoadHook`).
const LOAD_TIMEOUT: &CStr = c"FUNCTION LOAD timeout";

/// How long FUNCTION LOAD lets a library's code run (Redis's `LOAD_TIMEOUT_MS`).
pub const LOAD_LIMIT: Duration = Duration::from_millis(500);

/// The hook's view of the server: owned by the engine, boxed (its address is in the registry)
/// for as long as its Lua state can run code.
pub struct Hook {
    run: Arc<RunState>,
    /// The state's main thread (a `lua_State` address), whose hook new coroutines copy.
    main: usize,
    /// The hook also fires at every line (set once a script must stop; reset before the next).
    every_line: AtomicBool,
    /// A library load's deadline, in nanoseconds after `epoch`; 0 when none runs.
    load_deadline: AtomicU64,
    epoch: Instant,
}

impl Hook {
    /// Installs the hook on `lua`'s main thread; the returned box must outlive the state's use.
    pub fn install(lua: &mlua::Lua, run: Arc<RunState>) -> mlua::Result<Box<Hook>> {
        let mut main = 0usize;
        // SAFETY: the closure only reads the address of the thread `exec_raw` runs it on, which
        // is the state's main thread (mlua runs a `Lua`'s calls on it); it touches no stack.
        unsafe {
            lua.exec_raw::<()>((), |l| main = l as usize)?;
        }
        let hook = Box::new(Hook {
            run,
            main,
            every_line: AtomicBool::new(false),
            load_deadline: AtomicU64::new(0),
            epoch: Instant::now(),
        });
        let address = &*hook as *const Hook as *mut std::ffi::c_void;
        lua.set_named_registry_value(
            REGISTRY_FIELD.to_str().unwrap_or_default(),
            mlua::LightUserData(address),
        )?;
        // SAFETY: `main` is the live main thread of `lua`, and `on_hook` is a valid hook.
        unsafe {
            ffi::lua_sethook(
                main as *mut ffi::lua_State,
                Some(on_hook),
                ffi::LUA_MASKCOUNT,
                EVERY,
            );
        }
        Ok(hook)
    }

    /// Before each script call or library load: the hook back to every [`EVERY`] instructions
    /// if the last one was stopped (one relaxed load otherwise).
    pub fn rearm(&self) {
        if self.every_line.load(Relaxed) && self.every_line.swap(false, Relaxed) {
            // SAFETY: the main thread lives as long as the state; no script runs on it now (the
            // caller holds the engine and is about to run one).
            unsafe {
                ffi::lua_sethook(
                    self.main as *mut ffi::lua_State,
                    Some(on_hook),
                    ffi::LUA_MASKCOUNT,
                    EVERY,
                );
            }
        }
    }

    /// Runs a library's code under [`LOAD_LIMIT`] (`limit`: FUNCTION LOAD; RESTORE and loading
    /// at start-up have none, as in Redis).
    pub fn limit_load<R>(&self, limit: bool, load: impl FnOnce() -> R) -> R {
        self.rearm();
        if limit {
            let deadline = self.epoch.elapsed() + LOAD_LIMIT;
            self.load_deadline
                .store((deadline.as_nanos() as u64).max(1), Relaxed);
        }
        let outcome = load();
        self.load_deadline.store(0, Relaxed);
        outcome
    }

    /// Why the code running now must stop, if it must.
    fn stop(&self) -> Option<&'static CStr> {
        if self.run.kill_requested() {
            return Some(KILLED);
        }
        match self.load_deadline.load(Relaxed) {
            0 => None,
            at => (self.epoch.elapsed().as_nanos() as u64 > at).then_some(LOAD_TIMEOUT),
        }
    }
}

/// The C hook (see the module's comment).
///
/// # Safety
/// Only Lua calls it, as the hook [`Hook::install`] set on a state whose registry holds the
/// `Hook`'s address.
unsafe extern "C-unwind" fn on_hook(l: *mut ffi::lua_State, ar: *mut ffi::lua_Debug) {
    // SAFETY: Lua calls the hook with a live state and its debug record, LUA_MINSTACK slots
    // free; the registry field holds the boxed `Hook` the engine keeps alive with its state; this
    // frame holds nothing to drop when `lua_error` jumps.
    unsafe {
        // A hook runs with LUA_MINSTACK free slots (Lua grows the stack before calling it).
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, REGISTRY_FIELD.as_ptr());
        let hook = ffi::lua_touserdata(l, -1) as *const Hook;
        ffi::lua_pop(l, 1);
        // SAFETY: the registry holds the boxed `Hook` the engine keeps alive with its state.
        let Some(hook) = hook.as_ref() else { return };
        let Some(reason) = hook.stop() else {
            // Rust code called from C must not unwind into it.
            let _ = std::panic::catch_unwind(|| hook.run.on_hook());
            return;
        };
        for thread in [l, hook.main as *mut ffi::lua_State] {
            ffi::lua_sethook(
                thread,
                Some(on_hook),
                ffi::LUA_MASKCOUNT | ffi::LUA_MASKLINE,
                EVERY,
            );
        }
        hook.every_line.store(true, Relaxed);
        // The prelude's own lines (its error handler, the end of `invoke`) run on: the error is
        // raised at the script's next line, so it carries the script's name and line.
        if ffi::lua_getinfo(l, c"S".as_ptr(), ar) != 0
            && !(*ar).source.is_null()
            && CStr::from_ptr((*ar).source) == c"=stmd"
        {
            return;
        }
        ffi::lua_pushstring(l, reason.as_ptr());
        // Nothing of Rust's is alive in this frame: the jump skips no destructor.
        ffi::lua_error(l);
    }
}
