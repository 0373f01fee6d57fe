//! The one Lua 5.1 state every script runs in, its sandbox, and the script cache.

use super::call::{self, CallState, Request};
use super::convert;
use super::functions::{self, Functions, Library, LibraryFunction, RestorePolicy};
use super::hook::Hook;
use super::RunState;
use crate::protocol::Reply;
use bytes::Bytes;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Scripts added by EVAL (not SCRIPT LOAD) beyond this many are forgotten oldest first, as Redis
/// 7.4 does, so clients that build a new script per call cannot grow the cache without end.
pub const MAX_EVAL_SCRIPTS: usize = 500;

/// What one script call may allocate in the Lua state before it fails with an out-of-memory
/// error (the server and the other scripts stay up).
pub const SCRIPT_MEMORY_BUDGET: usize = 256 << 20;

/// Script calls between two steps of the garbage collector, and each step's size in kilobytes
/// (Redis's `LUA_GC_CYCLE_PERIOD`). Without the steps a script's garbage waits for Lua's own
/// cycle, which lets the heap grow to twice its live size first; a step after every call costs
/// more CPU than it frees.
const GC_PERIOD: u32 = 50;

/// A cached script: its compiled function and what it was compiled from.
struct CachedScript {
    function: Function,
    body: Bytes,
    flags: ScriptFlags,
    /// Added by EVAL (may be evicted), not pinned by SCRIPT LOAD.
    from_eval: bool,
}

/// The flags of a `#!lua flags=…` shebang. A script without a shebang has none and is run with
/// the relaxed rules of Redis's "legacy" scripts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScriptFlags {
    pub shebang: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
    /// `no-cluster`: refused in cluster mode.
    pub no_cluster: bool,
    /// `allow-cross-slot-keys`: in cluster mode, `redis.call` may touch keys of several slots
    /// (of this node).
    pub allow_cross_slot_keys: bool,
    /// `allow-stale`: runs on a stale replica (`replica-serve-stale-data no`), where its
    /// `redis.call`s of commands not flagged `stale` fail.
    pub allow_stale: bool,
}

/// The Lua state and the cache of compiled scripts.
pub struct Engine {
    lua: Lua,
    env: Table,
    /// Keys made once (see [`convert::Names`]).
    names: convert::Names,
    /// The command runner of the script call in progress, for `redis.call` and `redis.pcall`.
    runner: Arc<RunnerSlot>,
    /// The running script asked for RESP3 (`redis.setresp(3)`); false at each call's start.
    resp3: Arc<AtomicBool>,
    invoke: Function,
    load_library: Function,
    /// The libraries of FUNCTION LOAD.
    pub functions: Functions,
    /// By lowercase SHA (ahash: std's SipHash of the 40 bytes cost ~400 instructions a call).
    scripts: HashMap<String, CachedScript, ahash::RandomState>,
    /// SHAs added by EVAL, oldest first.
    eval_order: VecDeque<String>,
    body_bytes: usize,
    /// Script calls since the last garbage collection step (see [`GC_PERIOD`]).
    calls_since_gc: u32,
    /// What the instruction hook reads; declared after `lua`, so it is dropped after the state.
    hook: Box<Hook>,
    /// What `redis.call` and `redis.pcall` point to; declared after `lua`, so it is dropped after
    /// the state that can call them.
    _call_state: Box<CallState>,
}

/// A script or function ready to run.
pub struct Loaded {
    /// The script's SHA, or the function's name: how errors name it.
    pub sha: String,
    pub function: Function,
    pub flags: ScriptFlags,
    /// A function (FCALL): it gets keys and arguments as parameters, not as KEYS and ARGV.
    pub is_function: bool,
}

impl Engine {
    pub fn new(run: Arc<RunState>) -> mlua::Result<Engine> {
        // SAFETY: `unsafe_new_with` is only needed for the debug library. The prelude keeps
        // `debug.getinfo` in a local of its error handler and removes `debug` from the globals
        // before any script is compiled, so no script can reach the debug library.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::new(),
            )
        };
        super::libs::register(&lua)?;
        let rand = Arc::new(AtomicU64::new(RAND48_START));
        let (lrand, srand) = (rand.clone(), rand);
        let sha1hex = lua.create_function(|lua, text: mlua::String| {
            lua.create_string(super::sha1_hex(&text.as_bytes()))
        })?;
        let log = lua.create_function(|_, (level, text): (i64, String)| {
            match level {
                0 => tracing::debug!(target: "stmd::script", "{text}"),
                1 => tracing::info!(target: "stmd::script", verbose = true, "{text}"),
                2 => tracing::info!(target: "stmd::script", "{text}"),
                _ => tracing::warn!(target: "stmd::script", "{text}"),
            }
            Ok(())
        })?;
        let lrand48 = lua.create_function(move |_, ()| Ok(rand48_next(&lrand) as f64))?;
        let srand48 = lua.create_function(move |_, seed: f64| {
            srand.store(rand48_seed(seed as i64 as u32), Relaxed);
            Ok(())
        })?;
        let names = convert::Names::new(&lua)?;
        let error_names = names.clone();
        let error_value = lua.create_function(move |lua, error: mlua::Error| {
            error_value(lua, &error_names, &error)
        })?;
        let version = crate::spec::REDIS_VERSION;
        let (env, invoke, protect, redis, load_library, call_error): (
            Table,
            Function,
            Function,
            Table,
            Function,
            Table,
        ) = lua
            .load(include_str!("prelude.lua"))
            .set_name("=stmd")
            .call((
                sha1hex,
                log,
                lrand48,
                srand48,
                error_value,
                version,
                version_number(version),
            ))?;
        let resp3 = Arc::new(AtomicBool::new(false));
        let set_resp3 = resp3.clone();
        redis.raw_set(
            "setresp",
            lua.create_function(move |_, version: Value| {
                match version {
                    Value::Integer(v @ (2 | 3)) => set_resp3.store(v == 3, Relaxed),
                    Value::Number(v) if v == 2.0 || v == 3.0 => set_resp3.store(v == 3.0, Relaxed),
                    _ => return Err(raise("ERR RESP version must be 2 or 3.")),
                }
                Ok(())
            })?,
        )?;
        // Accepted and ignored (scripts are replicated by their effects), after Redis's checks.
        // A C function, as Redis's, so an error names the script's line even after `return`.
        redis.raw_set(
            "set_repl",
            lua.create_function(|_, flags: mlua::Variadic<Value>| {
                if flags.len() != 1 {
                    return Err(raise("ERR redis.set_repl() requires two arguments."));
                }
                // Read as C's lua_tonumber and an int cast: a non-number is 0.
                let flags = match &flags[0] {
                    Value::Integer(n) => *n as f64,
                    Value::Number(n) => *n,
                    Value::String(s) => s.to_str().ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0.0),
                    _ => 0.0,
                };
                if flags.trunc() < 0.0 || flags.trunc() > 3.0 {
                    return Err(raise(
                        "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                    ));
                }
                Ok(())
            })?,
        )?;
        let runner = Arc::new(RunnerSlot::default());
        let call_state = Box::new(CallState {
            lua: lua.clone(),
            runner: runner.clone(),
            resp3: resp3.clone(),
        });
        let (call, pcall, acl_check_cmd) = call::functions(&call_state, &call_error)?;
        redis.raw_set("call", call)?;
        redis.raw_set("pcall", pcall)?;
        redis.raw_set("acl_check_cmd", acl_check_cmd)?;
        protect.call::<()>(())?;
        let hook = Hook::install(&lua, run)?;
        Ok(Engine {
            runner,
            lua,
            env,
            names,
            resp3,
            invoke,
            load_library,
            functions: Functions::default(),
            scripts: HashMap::default(),
            eval_order: VecDeque::new(),
            body_bytes: 0,
            calls_since_gc: 0,
            hook,
            _call_state: call_state,
        })
    }

    /// The cached script with this SHA (either case).
    pub fn lookup(&self, sha: &[u8]) -> Option<Loaded> {
        let (sha, script) = self.scripts.get_key_value(lowercase_sha(sha)?.as_str())?;
        Some(Loaded {
            function: script.function.clone(),
            flags: script.flags,
            sha: sha.clone(),
            is_function: false,
        })
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        lowercase_sha(sha).is_some_and(|sha| self.scripts.contains_key(sha.as_str()))
    }

    /// Compiles `body` unless cached. `from_eval`: added by EVAL, so it may be evicted later;
    /// SCRIPT LOAD pins it.
    pub fn load(&mut self, body: &[u8], from_eval: bool) -> Result<Loaded, String> {
        let sha = super::sha1_hex(body);
        if let Some(script) = self.scripts.get_mut(&sha) {
            if !from_eval && script.from_eval {
                script.from_eval = false;
                self.eval_order.retain(|s| *s != sha);
            }
            return Ok(Loaded {
                function: script.function.clone(),
                flags: script.flags,
                sha,
                is_function: false,
            });
        }
        let (flags, source) = parse_shebang(body)?;
        let function = self
            .lua
            .load(&*source)
            .set_name("@user_script")
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| {
                format!(
                    "ERR Error compiling script (new function): {}",
                    lua_error_text(&e)
                )
            })?;
        if from_eval {
            if self.eval_order.len() >= MAX_EVAL_SCRIPTS {
                if let Some(old) = self.eval_order.pop_front() {
                    if let Some(gone) = self.scripts.remove(&old) {
                        self.body_bytes -= gone.body.len();
                    }
                }
            }
            self.eval_order.push_back(sha.clone());
        }
        self.body_bytes += body.len();
        self.scripts.insert(
            sha.clone(),
            CachedScript {
                function: function.clone(),
                body: Bytes::copy_from_slice(body),
                flags,
                from_eval,
            },
        );
        Ok(Loaded {
            sha,
            function,
            flags,
            is_function: false,
        })
    }

    /// The function `name` for FCALL.
    pub fn function(&self, name: &[u8]) -> Option<Loaded> {
        let name = std::str::from_utf8(name).ok()?;
        let function = self.functions.get(name)?;
        Some(Loaded {
            sha: function.name.clone(),
            function: function.callback.clone(),
            flags: function.flags,
            is_function: true,
        })
    }

    /// Compiles a library and runs its code to collect what it registers (FUNCTION LOAD, under
    /// the load time limit when `limited`). Redis's errors; the loaded set is not touched.
    pub fn compile_library(&mut self, code: &[u8], limited: bool) -> Result<Library, String> {
        let name = functions::library_name(code)?;
        // The metadata line stays as a comment so line numbers match the code as sent.
        let mut source = b"--".to_vec();
        source.extend_from_slice(code);
        let chunk = self
            .lua
            .load(&source)
            .set_name("@user_function")
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| format!("ERR Error compiling function: {}", lua_error_text(&e)))?;
        let lua = &self.lua;
        lua.set_memory_limit(lua.used_memory().saturating_add(SCRIPT_MEMORY_BUDGET))
            .map_err(|e| e.to_string())?;
        let outcome = self
            .hook
            .limit_load(limited, || self.load_library.call::<(bool, Value)>(chunk));
        let _ = lua.set_memory_limit(0);
        let registering = |text: String| format!("ERR Error registering functions: {text}");
        let (ok, value) =
            outcome.map_err(|e| registering(format!("ERR {}", lua_error_text(&e))))?;
        let Value::Table(table) = value else {
            return Err(registering("ERR unknown error".into()));
        };
        if !ok {
            let err = table
                .raw_get::<String>("err")
                .unwrap_or_else(|_| "ERR unknown error".into());
            return Err(registering(err));
        }
        let mut registered = Vec::new();
        for entry in table.sequence_values::<Table>() {
            let entry = entry.map_err(|e| e.to_string())?;
            let flag_names: Vec<String> = entry
                .raw_get::<Table>("flags")
                .and_then(|t| t.sequence_values::<String>().collect())
                .unwrap_or_default();
            registered.push(LibraryFunction {
                name: entry.raw_get("name").map_err(|e| e.to_string())?,
                description: entry.raw_get("description").unwrap_or(None),
                flags: functions::function_flags(&flag_names),
                flag_names,
                callback: entry.raw_get("callback").map_err(|e| e.to_string())?,
            });
        }
        if registered.is_empty() {
            return Err("ERR No functions registered".into());
        }
        Ok(Library {
            name,
            code: Bytes::copy_from_slice(code),
            functions: registered,
        })
    }

    /// FUNCTION LOAD [REPLACE]: the library's name once it is in.
    pub fn load_function_library(&mut self, code: &[u8], replace: bool) -> Result<String, String> {
        let library = self.compile_library(code, true)?;
        let name = library.name.clone();
        self.functions.insert(library, replace)?;
        Ok(name)
    }

    /// Loads every library of `codes` at once (FUNCTION RESTORE): either all of them go in under
    /// `policy`, or nothing changes and the first error is returned.
    pub fn restore_functions(
        &mut self,
        codes: &[Bytes],
        policy: RestorePolicy,
    ) -> Result<(), String> {
        let mut next = match policy {
            RestorePolicy::Flush => Functions::default(),
            RestorePolicy::Append | RestorePolicy::Replace => self.functions.clone(),
        };
        for code in codes {
            let library = self.compile_library(code, false)?;
            next.insert(library, policy == RestorePolicy::Replace)?;
        }
        self.functions = next;
        let _ = self.lua.gc_collect();
        Ok(())
    }

    /// SCRIPT FLUSH: forgets every script and collects their garbage.
    pub fn flush(&mut self) {
        self.scripts.clear();
        self.eval_order.clear();
        self.body_bytes = 0;
        let _ = self.lua.gc_collect();
    }

    /// INFO memory's figures.
    pub fn usage(&self) -> super::ScriptUsage {
        super::ScriptUsage {
            scripts: self.scripts.len(),
            script_bytes: self.body_bytes + self.scripts.len() * 96,
            lua_bytes: self.lua.used_memory(),
            functions: self.functions.function_count(),
            libraries: self.functions.library_count(),
            function_bytes: self.functions.memory(),
        }
    }

    /// Runs a loaded script with its KEYS and ARGV. `call` runs one command for `redis.call`
    /// (its second argument: the script asked for RESP3) and returns its reply.
    pub fn invoke(
        &mut self,
        script: &Loaded,
        keys: &[&[u8]],
        argv: &[&[u8]],
        call: &mut dyn FnMut(&[&[u8]], Request) -> Reply,
    ) -> Reply {
        match self.try_invoke(script, keys, argv, call) {
            Ok(reply) => reply,
            Err(e) => {
                Reply::Error(convert::error_text(&format!("ERR {}", lua_error_text(&e))).into())
            }
        }
    }

    fn try_invoke(
        &mut self,
        script: &Loaded,
        keys: &[&[u8]],
        argv: &[&[u8]],
        call: &mut dyn FnMut(&[&[u8]], Request) -> Reply,
    ) -> mlua::Result<Reply> {
        let lua = &self.lua;
        self.resp3.store(false, Relaxed);
        self.hook.rearm();
        let _running = self.runner.hold(call);
        lua.set_memory_limit(lua.used_memory().saturating_add(SCRIPT_MEMORY_BUDGET))?;
        let outcome = call::invoke(
            lua,
            &self.invoke,
            &script.function,
            keys,
            argv,
            script.is_function,
        );
        lua.set_memory_limit(0)?;
        self.calls_since_gc += 1;
        if self.calls_since_gc == GC_PERIOD {
            self.calls_since_gc = 0;
            lua.gc_step_kbytes(GC_PERIOD as std::ffi::c_int)?;
        }
        let (ok, value) = outcome?;
        let (resp3, names) = (self.resp3.load(Relaxed), &self.names);
        if ok {
            return Ok(convert::lua_to_reply(lua, names, value, resp3));
        }
        Ok(script_error(&value, &script.sha))
    }
}

/// The command runner of one script call: runs one command for `redis.call` (its second
/// argument: the script asked for RESP3) and returns its reply.
type Runner<'a> = dyn FnMut(&[&[u8]], Request) -> Reply + 'a;

/// Where `redis.call` and `redis.pcall`, created once with the state, find the runner of the
/// script call in progress (a scoped Lua function per call cost more than the call itself).
#[derive(Default)]
pub(super) struct RunnerSlot(parking_lot::Mutex<Option<RunnerPtr>>);

/// A runner whose borrow [`RunnerSlot::hold`] keeps alive while it is in the slot.
struct RunnerPtr(std::ptr::NonNull<Runner<'static>>);

// SAFETY: the pointer is only dereferenced by the thread that runs the script, inside
// `RunnerSlot::run`, while the `&mut` it came from is still borrowed by `RunnerSlot::hold`'s
// guard; sending it between threads moves nothing it points to.
unsafe impl Send for RunnerPtr {}

impl RunnerSlot {
    /// Puts `runner` in the slot until the returned guard drops (at the end of the call, or on
    /// unwinding).
    fn hold<'s, 'r, 'b: 'r>(&'s self, runner: &'r mut Runner<'b>) -> Holding<'s, 'r> {
        let erased = std::ptr::NonNull::from(runner);
        // SAFETY: only the lifetime is erased. The guard borrows `runner` for 'r and empties the
        // slot when it drops, so the pointer is never used after the borrow ends; `run` takes it
        // out of the slot while it calls it, so no two `&mut` to it exist.
        let erased = unsafe {
            std::mem::transmute::<std::ptr::NonNull<Runner<'b>>, std::ptr::NonNull<Runner<'static>>>(
                erased,
            )
        };
        *self.0.lock() = Some(RunnerPtr(erased));
        Holding(self, std::marker::PhantomData)
    }

    /// Runs one command with the runner in the slot; None when no script call holds one.
    pub(super) fn run(&self, args: &[&[u8]], request: Request) -> Option<Reply> {
        let mut runner = self.0.lock().take()?;
        // SAFETY: see `hold`: the runner's borrow is alive while it is in the slot, and taking
        // it out makes this the only reference to it.
        let reply = unsafe { (runner.0.as_mut())(args, request) };
        *self.0.lock() = Some(runner);
        Some(reply)
    }
}

/// A runner's stay in its [`RunnerSlot`]: it keeps the runner borrowed, and empties the slot.
struct Holding<'s, 'r>(&'s RunnerSlot, std::marker::PhantomData<&'r mut ()>);

impl Drop for Holding<'_, '_> {
    fn drop(&mut self) {
        *self.0 .0.lock() = None;
    }
}

/// An error `redis.call` raises: Redis's error table once it reaches Lua (see [`error_value`]).
#[derive(Debug)]
struct ScriptError(String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

fn raise(text: impl Into<String>) -> mlua::Error {
    mlua::Error::external(ScriptError(text.into()))
}

/// What a script's pcall and the error handler see for an error raised in Rust: `{err = …}` for
/// a command's error, the message text for anything else (a kill, out of memory).
fn error_value(lua: &Lua, names: &convert::Names, error: &mlua::Error) -> mlua::Result<Value> {
    let mut root = error;
    loop {
        match root {
            mlua::Error::CallbackError { cause, .. } => root = cause,
            mlua::Error::WithContext { cause, .. } => root = cause,
            _ => break,
        }
    }
    if let mlua::Error::ExternalError(inner) = root {
        if let Some(ScriptError(text)) = inner.downcast_ref::<ScriptError>() {
            return convert::error_table(lua, names, text);
        }
    }
    Ok(Value::String(lua.create_string(lua_error_text(root))?))
}

/// `7.4.0` → 0x070400, as `REDIS_VERSION_NUM`.
fn version_number(version: &str) -> i64 {
    version
        .split('.')
        .take(3)
        .fold(0, |acc, part| (acc << 8) | part.parse::<i64>().unwrap_or(0))
}

/// A failed script's error reply: the error, then which script and where, as Redis 7 words it.
fn script_error(value: &Value, name: &str) -> Reply {
    let Value::Table(table) = value else {
        let text = match value {
            Value::String(s) => s.to_string_lossy(),
            other => format!("{other:?}"),
        };
        return Reply::Error(convert::error_text(&format!("ERR {text}")).into());
    };
    let err = table
        .raw_get::<String>("err")
        .unwrap_or_else(|_| "ERR unknown error".into());
    let source = table
        .raw_get::<String>("source")
        .unwrap_or_else(|_| "?".into());
    let line = table.raw_get::<i64>("line").unwrap_or(0);
    Reply::Error(convert::error_text(&format!("{err} script: {name}, on {source}:{line}.")).into())
}

/// The text of a Lua error without mlua's decorations.
fn lua_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::MemoryError(_) => "not enough memory".into(),
        mlua::Error::CallbackError { cause, .. } => lua_error_text(cause),
        other => other.to_string(),
    }
}

/// A SHA as the script cache keys it (lowercase), without allocating: `None` when it cannot be
/// one (not 40 ASCII characters).
fn lowercase_sha(sha: &[u8]) -> Option<LowercaseSha> {
    let bytes: [u8; 40] = sha.try_into().ok()?;
    bytes
        .is_ascii()
        .then(|| LowercaseSha(bytes.map(|b| b.to_ascii_lowercase())))
}

struct LowercaseSha([u8; 40]);

impl LowercaseSha {
    fn as_str(&self) -> &str {
        // Lowercased ASCII is ASCII, which is UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// Splits a `#!lua flags=a,b` first line off a script. The line stays as a comment, so line
/// numbers in errors match the script as sent.
pub fn parse_shebang(body: &[u8]) -> Result<(ScriptFlags, std::borrow::Cow<'_, [u8]>), String> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::default(), body.into()));
    }
    let line_end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = String::from_utf8_lossy(&body[..line_end]);
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags {
        shebang: true,
        ..Default::default()
    };
    for option in parts {
        let Some(list) = option.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {option}"));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            match flag {
                "no-writes" => flags.no_writes = true,
                "allow-oom" => flags.allow_oom = true,
                "no-cluster" => flags.no_cluster = true,
                "allow-cross-slot-keys" => flags.allow_cross_slot_keys = true,
                "allow-stale" => flags.allow_stale = true,
                other => return Err(format!("ERR Unexpected flag in script shebang: {other}")),
            }
        }
    }
    let mut source = b"--".to_vec();
    source.extend_from_slice(body);
    Ok((flags, source.into()))
}

/// rand48's state before any seeding (what Redis's `redisLrand48` starts from).
const RAND48_START: u64 = 0x1234_ABCD_330E;

fn rand48_seed(seed: u32) -> u64 {
    (u64::from(seed) << 16) | 0x330E
}

/// The next `lrand48()` value: 31 bits.
fn rand48_next(state: &AtomicU64) -> u64 {
    let next = state
        .load(Relaxed)
        .wrapping_mul(0x5_DEEC_E66D)
        .wrapping_add(0xB)
        & ((1 << 48) - 1);
    state.store(next, Relaxed);
    next >> 17
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand48_matches_redis_first_values() {
        let state = AtomicU64::new(RAND48_START);
        let r = (rand48_next(&state) % 2_147_483_647) as f64 / 2_147_483_647.0;
        assert!((r - 0.396_464_773_638_39).abs() < 1e-12, "{r}");
    }

    #[test]
    fn shebang_flags_and_errors() {
        let (flags, _) = parse_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(flags.shebang && flags.no_writes && flags.allow_oom);
        assert_eq!(
            parse_shebang(b"#!lua flags=bad\n").unwrap_err(),
            "ERR Unexpected flag in script shebang: bad"
        );
        assert!(parse_shebang(b"return 1").unwrap().0 == ScriptFlags::default());
    }
}
