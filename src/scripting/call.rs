//! The per-call path of a script on the raw Lua stack: `redis.call` and `redis.pcall` as plain
//! Lua C functions, and the call of a script with its KEYS and ARGV. Through mlua's API each
//! `redis.call` cost ~2,000 instructions of glue (a handle per argument, a lock and a stack check
//! per API call, a handle per reply value) and the KEYS and ARGV tables ~1,500 each; read and
//! written on the stack, as Redis's own C does, they cost a few hundred.
//!
//! The rules that keep the raw calls sound:
//! - Everything Rust owns (the arguments' list, the reply, the error text) lives in
//!   [`run_command`], which returns before [`command`] raises a Lua error (a `longjmp`): the
//!   frame it jumps over holds nothing to drop.
//! - The script's memory budget is lifted while Rust works, so pushing the reply cannot fail for
//!   the budget (what remains is the process running out of memory, which mlua's own unprotected
//!   calls assume away too); the stack is grown for the reply's depth before anything is pushed.
//! - A panic in a command handler is caught and becomes an error reply: it never unwinds into
//!   Lua's C frames.

use super::engine::RunnerSlot;
use crate::protocol::Reply;
use mlua::ffi;
use mlua::{Function, Lua, Table, Value};
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// What a script asks of the command runner.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Request {
    /// `redis.call` / `redis.pcall`: run the command; its reply in RESP3 when the script asked
    /// for it (`redis.setresp(3)`).
    Run { resp3: bool },
    /// `redis.acl_check_cmd`: whether the script's caller may run the command (`Reply::Bool`),
    /// or Redis's error for a command that does not exist.
    AclCheck,
}

/// What the three functions reach through their first upvalue (a light userdata). The engine owns
/// it, boxed (a stable address), for as long as its Lua state can run a script.
pub struct CallState {
    /// The engine's Lua, to lift the script's memory budget during a call.
    pub lua: Lua,
    /// The command runner of the script call in progress.
    pub runner: Arc<RunnerSlot>,
    /// The running script asked for RESP3 (`redis.setresp(3)`).
    pub resp3: Arc<AtomicBool>,
}

/// Creates `redis.call`, `redis.pcall` and `redis.acl_check_cmd` on `state`'s Lua. `call_error`
/// is the metatable of the error tables they raise (so the prelude's `pcall` can tell them from
/// a script's own).
pub fn functions(
    state: &CallState,
    call_error: &Table,
) -> mlua::Result<(Function, Function, Function)> {
    let pointer = state as *const CallState as *mut std::ffi::c_void;
    // SAFETY: the closure only pushes values (three light userdata, the metatable three times,
    // three C closures), within the 20 free slots it starts with; `exec_raw` runs it protected and takes the two closures
    // from the stack. The pointer stays valid for as long as the functions can be called: the
    // engine keeps the boxed `CallState` alive as long as its Lua state runs scripts.
    unsafe {
        state.lua.exec_raw(call_error, |l| {
            // A C function (this closure) starts with 20 free slots (LUA_MINSTACK).
            ffi::lua_pushlightuserdata(l, pointer);
            ffi::lua_pushvalue(l, 1);
            ffi::lua_pushcclosure(l, redis_call, 2);
            ffi::lua_pushlightuserdata(l, pointer);
            ffi::lua_pushvalue(l, 1);
            ffi::lua_pushcclosure(l, redis_pcall, 2);
            ffi::lua_pushlightuserdata(l, pointer);
            ffi::lua_pushvalue(l, 1);
            ffi::lua_pushcclosure(l, redis_acl_check_cmd, 2);
            ffi::lua_remove(l, 1);
        })
    }
}

/// Calls the prelude's `invoke(function, keys, args, is_function)` with `keys` and `argv` as two
/// new Lua arrays: true and the script's value, or false and its error table.
pub fn invoke(
    lua: &Lua,
    invoke: &Function,
    function: &Function,
    keys: &[&[u8]],
    argv: &[&[u8]],
    is_function: bool,
) -> mlua::Result<(bool, Value)> {
    // SAFETY: the closure runs in a protected C frame with the two functions as its arguments
    // (LUA_MINSTACK free slots: it needs 5 at most). It owns nothing that needs dropping, so
    // a Lua error raised inside (out of memory under the script's budget) may jump over it, to
    // `exec_raw`'s protected call, which returns it as an error. What it leaves on the stack,
    // `invoke`'s two results, is what `exec_raw` returns.
    unsafe {
        lua.exec_raw((invoke, function), |l| {
            push_array(l, keys);
            push_array(l, argv);
            ffi::lua_pushboolean(l, c_int::from(is_function));
            ffi::lua_call(l, 4, 2);
        })
    }
}

/// A new Lua array of `items` (2 stack slots while it is built, 1 after).
///
/// # Safety
/// `l` is the live Lua state of a running C function (or of `exec_raw`'s protected closure) with
/// 2 free stack slots.
unsafe fn push_array(l: *mut ffi::lua_State, items: &[&[u8]]) {
    // SAFETY: the caller gives a live state with 2 free slots: the table and one item at a time.
    unsafe {
        ffi::lua_createtable(l, items.len().try_into().unwrap_or(0), 0);
        for (at, item) in items.iter().enumerate() {
            push_bytes(l, item);
            ffi::lua_rawseti_(l, -2, (at + 1) as c_int);
        }
    }
}

/// `redis.call`: Lua calls it as a C closure made by [`functions`].
///
/// # Safety
/// Only Lua may call it, as the closure [`functions`] made (its upvalues are [`command`]'s).
unsafe extern "C-unwind" fn redis_call(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this closure with its own state and the upvalues `functions` set.
    unsafe { command(l, true, false) }
}

/// `redis.pcall`: as [`redis_call`], but an error is returned as a table, not raised.
///
/// # Safety
/// As [`redis_call`].
unsafe extern "C-unwind" fn redis_pcall(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `redis_call`.
    unsafe { command(l, false, false) }
}

/// `redis.acl_check_cmd`: whether the caller's ACL allows the command.
///
/// # Safety
/// As [`redis_call`].
unsafe extern "C-unwind" fn redis_acl_check_cmd(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: as in `redis_call`.
    unsafe { command(l, true, true) }
}

/// Runs the command the arguments name (or checks it against the caller's ACL: `acl`) and leaves
/// its converted reply on the stack, or raises (`raise`) or returns the error table.
///
/// # Safety
/// `l` runs one of the closures [`functions`] made: upvalue 1 is the live `CallState` pointer,
/// upvalue 2 the call-error metatable, and only Lua's C frames are above this one (a raised error
/// jumps to them).
unsafe fn command(l: *mut ffi::lua_State, raise: bool, acl: bool) -> c_int {
    // SAFETY: upvalue 1 is the `CallState` pointer `functions` closed over, kept alive by the
    // engine while scripts run; this frame holds nothing to drop when `lua_error` jumps.
    unsafe {
        // SAFETY: upvalue 1 is the `CallState` pointer `functions` closed over (see there).
        let state = &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *const CallState);
        if run_command(l, state, acl) || !raise {
            return 1;
        }
        // Nothing of Rust's is alive in this frame: the jump skips no destructor.
        ffi::lua_error(l)
    }
}

/// The command's reply converted onto the stack (true), or its error table (false).
///
/// # Safety
/// As [`command`]: `l` is the closure's state, its arguments on the stack.
unsafe fn run_command(l: *mut ffi::lua_State, state: &CallState, acl: bool) -> bool {
    // SAFETY: the caller's state holds the call's arguments; everything pushed after the
    // `lua_checkstack` for the reply's depth fits, and the error table needs 3 of the 20 free slots.
    unsafe {
        let budget = state.lua.set_memory_limit(0).unwrap_or(0);
        let resp3 = state.resp3.load(Relaxed);
        let request = match acl {
            true => Request::AclCheck,
            false => Request::Run { resp3 },
        };
        let outcome = reply_of(l, state, request).and_then(|reply| {
            // The arguments are done with: their slots go back, so a call with as many arguments as
            // Lua's C stack holds (`unpack` of 7,999 values) still has room for its reply.
            ffi::lua_settop(l, 0);
            // Each level of nesting holds a table and a key while the next level is built.
            match ffi::lua_checkstack(l, (3 * depth(&reply) + 3).try_into().unwrap_or(c_int::MAX)) {
                0 => Err("ERR reached lua stack limit".to_string()),
                _ => Ok(reply),
            }
        });
        let ok = match outcome {
            Ok(Reply::Bool(allowed)) if acl => {
                ffi::lua_pushboolean(l, c_int::from(allowed));
                true
            }
            Ok(reply) => {
                push_reply(l, reply, resp3);
                true
            }
            Err(text) => {
                push_error(l, &text, true);
                false
            }
        };
        let _ = state.lua.set_memory_limit(budget);
        ok
    }
}

/// Reads the arguments and runs the command.
///
/// # Safety
/// `l` is the closure's state with the call's arguments at 1..=top.
unsafe fn reply_of(
    l: *mut ffi::lua_State,
    state: &CallState,
    request: Request,
) -> Result<Reply, String> {
    // SAFETY: indexes 1..=top are the arguments on the caller's live state; each string slice is
    // read while its string stays on the stack, which is until the command has run.
    unsafe {
        let count = ffi::lua_gettop(l);
        if count == 0 {
            return Err("ERR Please specify at least one argument for this redis lib call".into());
        }
        let mut args: smallvec::SmallVec<[&[u8]; 8]> = smallvec::SmallVec::new();
        for index in 1..=count {
            // Lua's own string test (lua_isstring), as Redis: a number is turned into its text in
            // its stack slot, where the bytes stay until the call returns.
            if ffi::lua_isstring(l, index) == 0 {
                return Err(
                    "ERR Lua redis lib command arguments must be strings or integers".into(),
                );
            }
            let mut len = 0;
            let bytes = ffi::lua_tolstring(l, index, &mut len);
            // SAFETY: a string on the stack, `len` bytes long, alive until this call returns.
            args.push(std::slice::from_raw_parts(bytes.cast::<u8>(), len));
        }
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            state.runner.run(&args, request)
        }));
        match ran {
            Ok(None) => Err("ERR redis.call is only available to a running script".into()),
            Ok(Some(Reply::Error(text))) => Err(text.into_owned()),
            Ok(Some(reply)) => Ok(reply),
            Err(_) => Err("ERR the command failed inside stmd (a bug: see the server log)".into()),
        }
    }
}

/// How deeply `reply` nests (a plain value: 1).
fn depth(reply: &Reply) -> usize {
    match reply {
        Reply::Array(items) | Reply::Push(items) | Reply::Set(items) => {
            1 + items.iter().map(depth).max().unwrap_or(0)
        }
        Reply::Map(pairs) => {
            1 + pairs
                .iter()
                .map(|(k, v)| depth(k).max(depth(v)))
                .max()
                .unwrap_or(0)
        }
        _ => 1,
    }
}

/// `{err = text}`; a raised one (`redis.call`'s) carries the call-error metatable (upvalue 2).
/// Needs 3 free stack slots: a C function starts with 20 (LUA_MINSTACK), and the reply's
/// depth was checked for.
///
/// # Safety
/// `l` is the state of one of [`functions`]' closures (upvalue 2 is read) with 3 free slots.
unsafe fn push_error(l: *mut ffi::lua_State, text: &str, raised: bool) {
    // SAFETY: the caller's state has the 3 slots this pushes and the upvalue it reads.
    unsafe {
        ffi::lua_createtable(l, 0, 1);
        push_bytes(l, text.as_bytes());
        ffi::lua_setfield(l, -2, c"err".as_ptr());
        if raised {
            ffi::lua_pushvalue(l, ffi::lua_upvalueindex(2));
            ffi::lua_setmetatable(l, -2);
        }
    }
}

/// Pushes `bytes` as a Lua string (Lua copies them).
///
/// # Safety
/// `l` is a live state with a free stack slot.
unsafe fn push_bytes(l: *mut ffi::lua_State, bytes: &[u8]) {
    // SAFETY: Lua copies `len` bytes from a live slice into a free slot the caller provides.
    unsafe {
        ffi::lua_pushlstring(l, bytes.as_ptr().cast(), bytes.len());
    }
}

/// A table with one field, `name`, set to the value on top of the stack (popped).
///
/// # Safety
/// `l` is a live state with a value on top and 2 free slots.
unsafe fn wrap_in_field(l: *mut ffi::lua_State, name: &std::ffi::CStr) {
    // SAFETY: the caller gives the value on top and the 2 slots the table and its field need.
    unsafe {
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_insert(l, -2);
        ffi::lua_setfield(l, -2, name.as_ptr());
    }
}

/// Pushes a command's reply as Redis converts it for a script (`script_lua.c`): RESP2 by
/// default, RESP3 types after `redis.setresp(3)`. The stack has room for its depth.
///
/// # Safety
/// `l` is a live state with room for 3 slots per level of `reply`'s nesting (checked with
/// `lua_checkstack` by the caller).
unsafe fn push_reply(l: *mut ffi::lua_State, reply: Reply, resp3: bool) {
    // SAFETY: each level pushes at most a table, a key and a value into the room the caller
    // checked; a decoded `Raw` reply checks its own room first.
    unsafe {
        match reply {
            Reply::Int(n) => ffi::lua_pushnumber(l, n as f64),
            Reply::Bulk(bytes) => push_bytes(l, &bytes),
            Reply::Verbatim(text) if resp3 => {
                ffi::lua_createtable(l, 0, 2);
                push_bytes(l, b"txt");
                ffi::lua_setfield(l, -2, c"format".as_ptr());
                push_bytes(l, text.as_bytes());
                ffi::lua_setfield(l, -2, c"string".as_ptr());
                wrap_in_field(l, c"verbatim_string");
            }
            Reply::Verbatim(text) => push_bytes(l, text.as_bytes()),
            // As Redis's Lua conversion: `{big_number = digits}` under RESP3, a string under RESP2;
            // an attribute is dropped and the reply it describes converted.
            Reply::BigNum(digits) if resp3 => {
                push_bytes(l, digits.as_bytes());
                wrap_in_field(l, c"big_number");
            }
            Reply::BigNum(digits) => push_bytes(l, digits.as_bytes()),
            Reply::Attribute(described) => push_reply(l, described.1, resp3),
            Reply::Status(text) => {
                push_bytes(l, text.as_bytes());
                wrap_in_field(l, c"ok");
            }
            Reply::Error(text) => push_error(l, &text, false),
            Reply::Nil | Reply::NilArray if resp3 => ffi::lua_pushnil(l),
            Reply::Nil | Reply::NilArray => ffi::lua_pushboolean(l, 0),
            // Encoded bytes (a stream entry, a RESP3 double) are decoded here, so the stack is grown
            // for their depth now.
            Reply::Raw(bytes) => match crate::protocol::decode_reply(&bytes) {
                Some((reply, _))
                    if ffi::lua_checkstack(
                        l,
                        (3 * depth(&reply)).try_into().unwrap_or(c_int::MAX),
                    ) != 0 =>
                {
                    push_reply(l, reply, resp3)
                }
                _ => ffi::lua_pushboolean(l, 0),
            },
            Reply::Array(items) | Reply::Push(items) => push_sequence(l, items, resp3),
            Reply::Set(items) if resp3 => {
                ffi::lua_createtable(l, 0, items.len().try_into().unwrap_or(0));
                for item in items {
                    push_reply(l, item, resp3);
                    ffi::lua_pushboolean(l, 1);
                    ffi::lua_rawset(l, -3);
                }
                wrap_in_field(l, c"set");
            }
            Reply::Set(items) => push_sequence(l, items, resp3),
            Reply::Map(pairs) if resp3 => {
                ffi::lua_createtable(l, 0, pairs.len().try_into().unwrap_or(0));
                for (key, value) in pairs {
                    push_reply(l, key, resp3);
                    push_reply(l, value, resp3);
                    ffi::lua_rawset(l, -3);
                }
                wrap_in_field(l, c"map");
            }
            Reply::Map(pairs) => {
                ffi::lua_createtable(l, (2 * pairs.len()).try_into().unwrap_or(0), 0);
                for (at, (key, value)) in pairs.into_iter().enumerate() {
                    push_reply(l, key, resp3);
                    ffi::lua_rawseti_(l, -2, (2 * at + 1) as c_int);
                    push_reply(l, value, resp3);
                    ffi::lua_rawseti_(l, -2, (2 * at + 2) as c_int);
                }
            }
            Reply::Double(d) if resp3 => {
                ffi::lua_pushnumber(l, d);
                wrap_in_field(l, c"double");
            }
            Reply::Double(d) => push_bytes(l, crate::protocol::format_double(d).as_bytes()),
            Reply::Bool(b) if resp3 => ffi::lua_pushboolean(l, c_int::from(b)),
            Reply::Bool(b) => ffi::lua_pushnumber(l, if b { 1.0 } else { 0.0 }),
        }
    }
}

/// # Safety
/// As [`push_reply`].
unsafe fn push_sequence(l: *mut ffi::lua_State, items: Vec<Reply>, resp3: bool) {
    // SAFETY: as in `push_reply`: a table and one item at a time per level, in the checked room.
    unsafe {
        ffi::lua_createtable(l, items.len().try_into().unwrap_or(0), 0);
        for (at, item) in items.into_iter().enumerate() {
            push_reply(l, item, resp3);
            ffi::lua_rawseti_(l, -2, (at + 1) as c_int);
        }
    }
}
