//! The libraries Redis 7.2 loads into its Lua 5.1 state: `cjson` (lua-cjson 2.1.0), `cmsgpack`
//! (lua-cmsgpack 0.4.0), `bit` (LuaBitOp 1.0.2) and `struct` (lua-struct 0.2), rewritten in Rust
//! with the behaviour, limits and error texts of the C versions Redis embeds.
//!
//! Every library function is an mlua Rust function wrapped in a tiny C closure
//! ([`raise_like_lauxlib`]). The wrapper exists because a Rust callback can only raise mlua's own
//! error userdata, while the C libraries raise plain strings built by `luaL_error` and
//! `luaL_argerror`: a script doing `local ok, err = pcall(cjson.decode, s)` gets a string in
//! Redis, with the caller's `user_script:1:` position and the function's name as the call site
//! spells it. The wrapper calls the real lauxlib functions, so those parts are Lua's own.

mod bit;
mod cjson;
mod cmsgpack;
mod r#struct;

use mlua::{ffi, Function, Lua, MultiValue, Value};
use std::os::raw::{c_int, c_void};

/// Sets the globals `cjson`, `cmsgpack`, `bit` and `struct`, as Redis does when it creates a
/// script state.
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.set("cjson", cjson::module(lua)?)?;
    globals.set("cmsgpack", cmsgpack::module(lua)?)?;
    globals.set("bit", bit::module(lua)?)?;
    globals.set("struct", r#struct::module(lua)?)?;
    Ok(())
}

/// Lua 5.1's `LUAI_MAXCSTACK`: `lua_checkstack` refuses to grow a C function's frame past this
/// many slots. The C libraries hit it on deep nesting or many results; we count the same slots
/// to fail at the same place with the same message.
pub(crate) const LUA_MAX_C_STACK: usize = 8000;

/// How many mlua references nested tables may hold at once while encoding or decoding. mlua
/// keeps every live reference in a slot of an auxiliary Lua stack of LUA_MAX_C_STACK slots and
/// panics when they run out, so deep nesting is refused with the library's own error before
/// that, leaving room for the references the script engine holds.
pub(crate) const NESTING_REFERENCE_BUDGET: usize = 6000;

/// How a library function fails, mirroring the two ways the C code raises errors.
pub(crate) enum Failure {
    /// `luaL_error(L, msg)`: the message, prefixed with the caller's position.
    Message(Vec<u8>),
    /// `luaL_argerror(L, narg, extramsg)`: "bad argument #narg to 'name' (extramsg)".
    BadArgument(i32, Vec<u8>),
    /// An error the Lua core raises inside the C function (`luaG_runerror`, e.g. "table index
    /// is nil"): no position prefix, since the running function is not Lua code.
    Bare(Vec<u8>),
    /// An error from mlua itself (e.g. out of memory), passed through unchanged.
    Lua(mlua::Error),
}

impl From<mlua::Error> for Failure {
    fn from(error: mlua::Error) -> Self {
        Failure::Lua(error)
    }
}

pub(crate) type LibResult<T> = Result<T, Failure>;

pub(crate) fn message(text: impl Into<Vec<u8>>) -> Failure {
    Failure::Message(text.into())
}

pub(crate) fn bad_argument(narg: i32, text: impl Into<Vec<u8>>) -> Failure {
    Failure::BadArgument(narg, text.into())
}

/// Makes a library function: `body` runs as an mlua function returning `true, results...` or
/// `false, message[, narg]`, and the C closure around it turns the failure into a Lua error.
pub(crate) fn lib_function<F>(lua: &Lua, body: F) -> mlua::Result<Function>
where
    F: Fn(&Lua, Args) -> LibResult<MultiValue> + Send + 'static,
{
    let inner = lua.create_function(move |lua, args: MultiValue| {
        let mut out = MultiValue::new();
        let args = args.into_iter().map(unbox_tiny_number).collect();
        match body(lua, Args(args)) {
            Ok(values) => {
                out.push_back(Value::Boolean(true));
                out.extend(values);
            }
            Err(Failure::Message(text)) => {
                out.push_back(Value::Boolean(false));
                out.push_back(Value::String(lua.create_string(&text)?));
            }
            Err(Failure::BadArgument(narg, text)) => {
                out.push_back(Value::Boolean(false));
                out.push_back(Value::String(lua.create_string(&text)?));
                out.push_back(Value::Integer(i64::from(narg)));
            }
            Err(Failure::Bare(text)) => {
                out.push_back(Value::Boolean(false));
                out.push_back(Value::String(lua.create_string(&text)?));
                out.push_back(Value::Boolean(false));
            }
            Err(Failure::Lua(error)) => return Err(error),
        }
        Ok(out)
    })?;
    // SAFETY: exec_raw runs the closure inside a protected call with `inner` pushed on the stack;
    // lua_pushcclosure pops it as upvalue 1 and pushes the closure, the one value read back.
    unsafe {
        lua.exec_raw::<Function>(inner, |state| {
            ffi::lua_pushcclosure(state, raise_like_lauxlib, 1)
        })
    }
}

/// The C closure around every library function: calls upvalue 1 (the Rust body) with the
/// arguments; on `true` returns the results, on `false` raises the message with `luaL_where` +
/// `lua_error` (as `luaL_error` does) or with `luaL_argerror`, so position and function name are
/// Lua's own.
///
/// # Safety
/// Only Lua calls it, as a C closure whose upvalue 1 is the wrapped function.
///
/// Why the body is sound: this is only called by Lua as a C function. Every local here is a plain
/// integer, float or pointer with no destructor, so Lua's error longjmp leaving this frame skips no Rust
/// drop. Stack use: one slot for a replaced tiny-number argument (popped by `lua_replace`), one
/// for the pushed function (Lua guarantees LUA_MINSTACK = 20 free slots
/// to a C function), two for `luaL_where` + message, checked with `lua_checkstack`. The message
/// pointer stays valid while its string sits at index 2, which nothing removes before the raise.
unsafe extern "C-unwind" fn raise_like_lauxlib(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: see the function's Safety section.
    unsafe {
        let nargs = ffi::lua_gettop(state);
        for index in 1..=nargs {
            if ffi::lua_type(state, index) == ffi::LUA_TNUMBER {
                let n = ffi::lua_tonumber(state, index);
                if is_tiny(n) {
                    // The pointer is never dereferenced: it only carries the number's bits.
                    ffi::lua_pushlightuserdata(state, n.to_bits() as usize as *mut c_void);
                    ffi::lua_replace(state, index);
                }
            }
        }
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, nargs, ffi::LUA_MULTRET);
        let nresults = ffi::lua_gettop(state);
        if ffi::lua_toboolean(state, 1) != 0 {
            return nresults - 1;
        }
        if ffi::lua_isnumber(state, 3) != 0 {
            let narg = ffi::lua_tonumber(state, 3) as c_int;
            let text = ffi::lua_tolstring(state, 2, std::ptr::null_mut());
            return ffi::luaL_argerror(state, narg, text);
        }
        if ffi::lua_isboolean(state, 3) != 0 || ffi::lua_checkstack(state, 2) == 0 {
            ffi::lua_settop(state, 2);
            ffi::lua_error(state);
        }
        ffi::luaL_where(state, 1);
        ffi::lua_pushvalue(state, 2);
        ffi::lua_concat(state, 2);
        ffi::lua_error(state)
    }
}

/// Numbers mlua would read as the integer 0 (it rounds anything within 2^-52 of an integer):
/// -0 and the non-zero numbers smaller than 2^-52. The C closure passes such arguments as a
/// light userdata holding the number's bits, which [`unbox_tiny_number`] turns back into the
/// number; no script can make a non-NULL light userdata, so nothing else is mistaken for one.
fn is_tiny(n: f64) -> bool {
    n.abs() < f64::EPSILON && (n != 0.0 || n.is_sign_negative())
}

fn unbox_tiny_number(value: Value) -> Value {
    match value {
        Value::LightUserData(ud) if !ud.0.is_null() => {
            Value::Number(f64::from_bits(ud.0 as usize as u64))
        }
        other => other,
    }
}

/// Runs a recursive step with enough native stack: the encoders and the msgpack decoder recurse
/// once per nesting level (thousands, as the C code does), and scripts may run on threads with
/// small stacks, so the stack grows on the heap when it runs low instead of overflowing.
pub(crate) fn deep<R>(step: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, step)
}

/// Lua's `lua_typename` for a value (light userdata is "userdata" there), or "no value" past
/// the last argument, for "X expected, got Y" messages.
pub(crate) fn lua_type_name(value: Option<&Value>) -> &'static str {
    match value {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

/// C's `(int64_t)d` as x86-64 does it: truncation, and the "indefinite" INT64_MIN when out of
/// range or NaN (the C libraries rely on this undefined-but-fixed behaviour).
pub(crate) fn c_double_to_i64(d: f64) -> i64 {
    if (i64::MIN as f64..-(i64::MIN as f64)).contains(&d) {
        d as i64
    } else {
        i64::MIN
    }
}

/// The arguments of a call, 1-based like the Lua C API.
pub(crate) struct Args(pub(crate) Vec<Value>);

impl Args {
    pub(crate) fn count(&self) -> usize {
        self.0.len()
    }

    /// The argument, or `None` past the last one (Lua's "none").
    pub(crate) fn get(&self, index: usize) -> Option<&Value> {
        self.0.get(index.wrapping_sub(1))
    }

    pub(crate) fn is_none_or_nil(&self, index: usize) -> bool {
        matches!(self.get(index), None | Some(Value::Nil))
    }

    /// `lua_tonumber`: numbers, and strings Lua converts to numbers.
    pub(crate) fn to_number(&self, lua: &Lua, index: usize) -> LibResult<Option<f64>> {
        Ok(match self.get(index) {
            Some(Value::Integer(i)) => Some(*i as f64),
            Some(Value::Number(n)) => Some(*n),
            Some(value @ Value::String(_)) => lua.coerce_number(value.clone())?,
            _ => None,
        })
    }

    fn type_error(&self, index: usize, expected: &str) -> Failure {
        let got = lua_type_name(self.get(index));
        bad_argument(index as i32, format!("{expected} expected, got {got}"))
    }

    /// `luaL_checknumber`.
    pub(crate) fn check_number(&self, lua: &Lua, index: usize) -> LibResult<f64> {
        self.to_number(lua, index)?
            .ok_or_else(|| self.type_error(index, "number"))
    }

    /// `luaL_checkinteger` (a C cast of the number to a 64-bit integer).
    pub(crate) fn check_integer(&self, lua: &Lua, index: usize) -> LibResult<i64> {
        Ok(c_double_to_i64(self.check_number(lua, index)?))
    }

    /// `luaL_optinteger`: `default` when the argument is none or nil.
    pub(crate) fn opt_integer(&self, lua: &Lua, index: usize, default: i64) -> LibResult<i64> {
        if self.is_none_or_nil(index) {
            Ok(default)
        } else {
            self.check_integer(lua, index)
        }
    }

    /// `luaL_checklstring`: strings, and numbers converted as Lua converts them (`%.14g`).
    pub(crate) fn check_bytes(&self, lua: &Lua, index: usize) -> LibResult<mlua::String> {
        match self.get(index) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(value @ (Value::Integer(_) | Value::Number(_))) => lua
                .coerce_string(value.clone())?
                .ok_or_else(|| self.type_error(index, "string")),
            _ => Err(self.type_error(index, "string")),
        }
    }
}
