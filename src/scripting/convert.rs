//! Redis's conversions between command replies and Lua values, both ways, as `script_lua.c` does
//! them: RESP2 by default, RESP3 types after `redis.setresp(3)`.

use crate::protocol::Reply;
use bytes::Bytes;
use mlua::{Lua, Table, Value};

/// Nesting deeper than this in a script's reply (a table that contains itself, say) ends in an
/// error element instead of recursing without end.
const MAX_REPLY_DEPTH: usize = 1000;

/// The Lua strings the conversions use as table keys, made once: mlua makes a string from a
/// `&str` in a protected call (it may raise a memory error), ~2,000 instructions every time,
/// while a made string is pushed by reference.
#[derive(Clone)]
pub struct Names {
    ok: mlua::String,
    err: mlua::String,
    double: mlua::String,
    big_number: mlua::String,
    map: mlua::String,
    set: mlua::String,
    verbatim_string: mlua::String,
    string: mlua::String,
}

impl Names {
    pub fn new(lua: &Lua) -> mlua::Result<Names> {
        Ok(Names {
            ok: lua.create_string("ok")?,
            err: lua.create_string("err")?,
            double: lua.create_string("double")?,
            big_number: lua.create_string("big_number")?,
            map: lua.create_string("map")?,
            set: lua.create_string("set")?,
            verbatim_string: lua.create_string("verbatim_string")?,
            string: lua.create_string("string")?,
        })
    }
}

/// `{err = text}`: how an error reply looks inside a script (`redis.pcall`'s, and a Rust
/// callback's error once it reaches the script's `pcall` or the error handler).
pub fn error_table(lua: &Lua, names: &Names, text: &str) -> mlua::Result<Value> {
    Ok(Value::Table(lua.create_table_from([(&names.err, text)])?))
}

/// A script's return value as the reply to its caller. `resp3` is the script's own protocol
/// (after `redis.setresp`): it decides how booleans come back, as in Redis.
pub fn lua_to_reply(lua: &Lua, names: &Names, value: Value, resp3: bool) -> Reply {
    to_reply(lua, names, value, resp3, 0)
}

fn to_reply(lua: &Lua, names: &Names, value: Value, resp3: bool, depth: usize) -> Reply {
    if depth > MAX_REPLY_DEPTH {
        return Reply::error("ERR reached lua stack limit");
    }
    match value {
        Value::String(s) => Reply::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Boolean(b) if resp3 => Reply::Bool(b),
        Value::Boolean(true) => Reply::Int(1),
        Value::Integer(n) => Reply::Int(n),
        // C's cast: toward zero, saturating.
        Value::Number(n) => Reply::Int(n as i64),
        Value::Table(table) => table_to_reply(lua, names, &table, resp3, depth),
        _ => Reply::Nil,
    }
}

fn table_to_reply(lua: &Lua, names: &Names, table: &Table, resp3: bool, depth: usize) -> Reply {
    let field = |name: &mlua::String| table.raw_get::<Value>(name).unwrap_or(Value::Nil);
    if let Value::String(text) = field(&names.err) {
        return Reply::Error(error_text(&text.to_string_lossy()).into());
    }
    if let Value::String(text) = field(&names.ok) {
        return Reply::Status(one_line(&text.to_string_lossy()).into());
    }
    if let Value::Number(d) = field(&names.double) {
        return Reply::Double(d);
    }
    if let Value::Integer(d) = field(&names.double) {
        return Reply::Double(d as f64);
    }
    if let Value::String(text) = field(&names.big_number) {
        let digits = one_line(&text.to_string_lossy());
        return if resp3 {
            Reply::Raw(Bytes::from(format!("({digits}\r\n")))
        } else {
            Reply::Bulk(Bytes::from(digits))
        };
    }
    if let Value::Table(map) = field(&names.map) {
        let mut pairs = Vec::new();
        for (key, value) in map.pairs::<Value, Value>().flatten() {
            pairs.push((
                to_reply(lua, names, key, resp3, depth + 1),
                to_reply(lua, names, value, resp3, depth + 1),
            ));
        }
        return Reply::Map(pairs);
    }
    if let Value::Table(set) = field(&names.set) {
        let members = set
            .pairs::<Value, Value>()
            .flatten()
            .map(|(key, _)| to_reply(lua, names, key, resp3, depth + 1))
            .collect();
        return Reply::Set(members);
    }
    if let Value::Table(verbatim) = field(&names.verbatim_string) {
        if let Ok(text) = verbatim.raw_get::<mlua::String>(&names.string) {
            return Reply::Verbatim(text.to_string_lossy());
        }
    }
    let mut items = Vec::new();
    for at in 1.. {
        match table.raw_get::<Value>(at) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(value) => items.push(to_reply(lua, names, value, resp3, depth + 1)),
        }
    }
    Reply::Array(items)
}

/// An error text as a reply line: no leading `-` doubled, no line breaks.
pub fn error_text(text: &str) -> String {
    one_line(text.strip_prefix('-').unwrap_or(text))
}

fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}
