//! `cmsgpack`: lua-cmsgpack 0.4.0 as Redis embeds it. `pack` encodes each argument and joins
//! them; `unpack`, `unpack_one` and `unpack_limit` decode a stream of values.

use super::{
    bad_argument, c_double_to_i64, deep, lib_function, message, Args, Failure, LibResult,
    LUA_MAX_C_STACK, NESTING_REFERENCE_BUDGET,
};
use mlua::{Lua, MultiValue, Table, Value};

/// Tables nested this deep are encoded as nil, so circular references end.
const MAX_NESTING: usize = 16;

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.set("pack", lib_function(lua, pack)?)?;
    table.set("unpack", lib_function(lua, unpack)?)?;
    table.set("unpack_one", lib_function(lua, unpack_one)?)?;
    table.set("unpack_limit", lib_function(lua, unpack_limit)?)?;
    table.set("_NAME", "cmsgpack")?;
    table.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    table.set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    table.set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(table)
}

fn pack(lua: &Lua, args: Args) -> LibResult<MultiValue> {
    if args.count() == 0 {
        return Err(bad_argument(0, "MessagePack pack needs input."));
    }
    let mut out = Vec::new();
    for value in &args.0 {
        encode(&mut out, value, 0)?;
    }
    Ok(MultiValue::from_vec(vec![Value::String(
        lua.create_string(&out)?,
    )]))
}

fn encode(out: &mut Vec<u8>, value: &Value, level: usize) -> LibResult<()> {
    match value {
        Value::String(s) => encode_bytes(out, &s.as_bytes()),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => encode_number(out, *i as f64),
        Value::Number(n) => encode_number(out, *n),
        Value::Table(table) if level < MAX_NESTING => encode_table(out, table, level)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

/// Integral numbers that fit an int64 are integers, the rest floats (32-bit when exact).
fn encode_number(out: &mut Vec<u8>, n: f64) {
    if n.is_finite() && c_double_to_i64(n) as f64 == n {
        encode_integer(out, c_double_to_i64(n));
    } else if f64::from(n as f32) == n {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_integer(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        match n {
            0..=127 => out.push(n as u8),
            128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
            0x100..=0xffff => {
                out.push(0xcd);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                out.push(0xce);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
            _ => {
                out.push(0xcf);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
    } else {
        match n {
            -32..=-1 => out.push(n as u8),
            -128..=-33 => out.extend_from_slice(&[0xd0, n as u8]),
            -32768..=-129 => {
                out.push(0xd1);
                out.extend_from_slice(&(n as i16).to_be_bytes());
            }
            -2_147_483_648..=-32769 => {
                out.push(0xd2);
                out.extend_from_slice(&(n as i32).to_be_bytes());
            }
            _ => {
                out.push(0xd3);
                out.extend_from_slice(&n.to_be_bytes());
            }
        }
    }
}

fn encode_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = bytes.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(bytes);
}

fn encode_header(out: &mut Vec<u8>, len: usize, fix: u8, wide16: u8, wide32: u8) {
    if len < 16 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(wide16);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(wide32);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

/// A table is an array when its keys are exactly 1..n (the empty table included).
fn is_array(table: &Table) -> mlua::Result<bool> {
    let mut count: i64 = 0;
    let mut max: i64 = 0;
    for pair in table.clone().pairs::<Value, Value>() {
        let (key, _) = pair?;
        let n = match key {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(false),
        };
        if n <= 0.0 || !(-2_147_483_648.0..2_147_483_648.0).contains(&n) {
            return Ok(false);
        }
        if n as i32 as f64 != n {
            return Ok(false);
        }
        max = max.max(n as i64);
        count += 1;
    }
    Ok(max == count)
}

/// mlua reads a number within 2^-52 of zero as the integer 0; read such values again as f64
/// from the table so tiny numbers and -0 keep their value.
fn exact(table: &Table, key: Value, value: Value) -> mlua::Result<Value> {
    if value == Value::Integer(0) {
        return Ok(Value::Number(table.raw_get::<f64>(key)?));
    }
    Ok(value)
}

fn encode_table(out: &mut Vec<u8>, table: &Table, level: usize) -> LibResult<()> {
    if is_array(table)? {
        let len = table.raw_len();
        encode_header(out, len, 0x90, 0xdc, 0xdd);
        for index in 1..=len {
            let value: Value = table.get(index)?;
            let value = exact(table, Value::Integer(index as i64), value)?;
            encode(out, &value, level + 1)?;
        }
    } else {
        let len = table.clone().pairs::<Value, Value>().count();
        encode_header(out, len, 0x80, 0xde, 0xdf);
        for pair in table.clone().pairs::<Value, Value>() {
            let (key, value) = pair?;
            let value = exact(table, key.clone(), value)?;
            encode(out, &key, level + 1)?;
            encode(out, &value, level + 1)?;
        }
    }
    Ok(())
}

fn unpack(lua: &Lua, args: Args) -> LibResult<MultiValue> {
    let data = args.check_bytes(lua, 1)?;
    unpack_full(lua, &data.as_bytes(), 0, 0, args.count())
}

fn unpack_one(lua: &Lua, args: Args) -> LibResult<MultiValue> {
    let offset = args.opt_integer(lua, 2, 0)? as i32;
    let data = args.check_bytes(lua, 1)?;
    unpack_full(lua, &data.as_bytes(), 1, offset, 1)
}

fn unpack_limit(lua: &Lua, args: Args) -> LibResult<MultiValue> {
    let limit = args.check_integer(lua, 2)? as i32;
    let offset = args.opt_integer(lua, 3, 0)? as i32;
    let data = args.check_bytes(lua, 1)?;
    unpack_full(lua, &data.as_bytes(), limit, offset, 1)
}

/// `mp_unpack_full`: limit 0 with offset 0 decodes everything and returns only the values;
/// otherwise the values follow the offset of the next value (-1 at the end of the input).
fn unpack_full(
    lua: &Lua,
    data: &[u8],
    limit: i32,
    offset: i32,
    stack_top: usize,
) -> LibResult<MultiValue> {
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(message(format!(
            "Invalid request to unpack with offset of {offset} and limit of {}.",
            data.len() as i32
        )));
    }
    if offset as usize > data.len() {
        return Err(message(format!(
            "Start offset {offset} greater than input length {}.",
            data.len() as i32
        )));
    }
    let limit = if decode_all { i32::MAX } else { limit };
    let mut decoder = Decoder {
        lua,
        data,
        at: offset as usize,
        top: stack_top,
        error: None,
    };
    let mut values = Vec::new();
    while decoder.at < data.len() && (values.len() as i64) < i64::from(limit) {
        values.push(decoder.decode()?);
        match decoder.error {
            Some(DecodeError::MissingBytes) => return Err(message("Missing bytes in input.")),
            Some(DecodeError::BadFormat) => return Err(message("Bad data format in input.")),
            None => {}
        }
    }
    if !decode_all {
        if decoder.top + 1 > LUA_MAX_C_STACK {
            return Err(message("stack overflow (in function mp_unpack_full)"));
        }
        let next = if decoder.at == data.len() {
            -1
        } else {
            decoder.at as i64
        };
        values.insert(0, Value::Number(next as f64));
    }
    Ok(MultiValue::from_vec(values))
}

enum DecodeError {
    MissingBytes,
    BadFormat,
}

/// The decoder keeps count of the Lua stack slots the C code would use (`top`), to fail where
/// its `luaL_checkstack` calls fail.
struct Decoder<'a> {
    lua: &'a Lua,
    data: &'a [u8],
    at: usize,
    top: usize,
    error: Option<DecodeError>,
}

impl<'a> Decoder<'a> {
    /// The next `len` bytes after the type byte and `skip` header bytes, or None (and the
    /// missing-bytes error) when the input is shorter.
    fn take(&mut self, header: usize, len: usize) -> Option<&'a [u8]> {
        let left = self.data.len() - self.at;
        if left < header.saturating_add(len) {
            self.error = Some(DecodeError::MissingBytes);
            return None;
        }
        let start = self.at + header;
        self.at = start + len;
        let data: &'a [u8] = self.data;
        Some(&data[start..start + len])
    }

    fn big_endian(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0, |acc, &b| acc << 8 | u64::from(b))
    }

    /// Decodes one value. On missing bytes or a bad type byte it sets `error` and returns nil;
    /// a Lua stack overflow or a nil/NaN map key is raised at once, as in the C code.
    fn decode(&mut self) -> LibResult<Value> {
        let Some(&kind) = self.data.get(self.at) else {
            self.error = Some(DecodeError::MissingBytes);
            return Ok(Value::Nil);
        };
        if self.top + 1 > LUA_MAX_C_STACK {
            return Err(message(
                "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
            ));
        }
        let number = |n: f64| Ok(Value::Number(n));
        let value: LibResult<Value> = match kind {
            0xcc..=0xcf => {
                let width = 1 << (kind - 0xcc);
                match self.take(1, width) {
                    Some(bytes) => number(Self::big_endian(bytes) as f64),
                    None => return Ok(Value::Nil),
                }
            }
            0xd0..=0xd3 => {
                let width = 1 << (kind - 0xd0);
                match self.take(1, width) {
                    Some(bytes) => {
                        let shift = 64 - 8 * width as u32;
                        number(((Self::big_endian(bytes) << shift) as i64 >> shift) as f64)
                    }
                    None => return Ok(Value::Nil),
                }
            }
            0xc0 | 0xc2 | 0xc3 => {
                self.at += 1;
                Ok(match kind {
                    0xc0 => Value::Nil,
                    other => Value::Boolean(other == 0xc3),
                })
            }
            0xca => match self.take(1, 4) {
                Some(bytes) => number(f64::from(f32::from_bits(Self::big_endian(bytes) as u32))),
                None => return Ok(Value::Nil),
            },
            0xcb => match self.take(1, 8) {
                Some(bytes) => number(f64::from_bits(Self::big_endian(bytes))),
                None => return Ok(Value::Nil),
            },
            0xd9..=0xdb => {
                let width = 1 << (kind - 0xd9);
                let Some(len) = self.take(1, width).map(Self::big_endian) else {
                    return Ok(Value::Nil);
                };
                self.at -= 1 + width;
                self.string(1 + width, len as usize)
            }
            0xdc..=0xdf => {
                let width = if kind & 1 == 0 { 2 } else { 4 };
                let Some(len) = self.take(1, width).map(Self::big_endian) else {
                    return Ok(Value::Nil);
                };
                if kind < 0xde {
                    deep(|| self.array(len))
                } else {
                    deep(|| self.map(len))
                }
            }
            0x00..=0x7f => {
                self.at += 1;
                number(f64::from(kind))
            }
            0xe0..=0xff => {
                self.at += 1;
                number(f64::from(kind as i8))
            }
            0xa0..=0xbf => self.string(1, usize::from(kind & 0x1f)),
            0x90..=0x9f => {
                self.at += 1;
                deep(|| self.array(u64::from(kind & 0xf)))
            }
            0x80..=0x8f => {
                self.at += 1;
                deep(|| self.map(u64::from(kind & 0xf)))
            }
            _ => {
                self.error = Some(DecodeError::BadFormat);
                return Ok(Value::Nil);
            }
        };
        if !matches!(kind, 0x80..=0x9f | 0xdc..=0xdf) {
            self.top += 1;
        }
        value
    }

    fn string(&mut self, header: usize, len: usize) -> LibResult<Value> {
        match self.take(header, len) {
            Some(bytes) => Ok(Value::String(self.lua.create_string(bytes)?)),
            None => Ok(Value::Nil),
        }
    }

    fn array(&mut self, len: u64) -> LibResult<Value> {
        let table = self.lua.create_table()?;
        self.top += 1;
        if self.top + 1 > LUA_MAX_C_STACK || self.top > NESTING_REFERENCE_BUDGET {
            return Err(message(
                "stack overflow (in function mp_decode_to_lua_array)",
            ));
        }
        for index in 1..=len {
            self.top += 1;
            let value = self.decode()?;
            if self.error.is_some() {
                break;
            }
            table.raw_set(index, value)?;
            self.top -= 2;
        }
        Ok(Value::Table(table))
    }

    fn map(&mut self, len: u64) -> LibResult<Value> {
        let table = self.lua.create_table()?;
        self.top += 1;
        // Each open map holds its table and a pending key as mlua references (the C code's
        // stack slots, counted in `top`): refuse before mlua runs out of reference slots.
        if self.top > NESTING_REFERENCE_BUDGET {
            return Err(message(
                "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
            ));
        }
        for _ in 0..len {
            let key = self.decode()?;
            if self.error.is_some() {
                break;
            }
            let value = self.decode()?;
            if self.error.is_some() {
                break;
            }
            match key {
                Value::Nil => return Err(Failure::Bare(b"table index is nil".to_vec())),
                Value::Number(n) if n.is_nan() => {
                    return Err(Failure::Bare(b"table index is NaN".to_vec()))
                }
                _ => table.raw_set(key, value)?,
            }
            self.top -= 2;
        }
        Ok(Value::Table(table))
    }
}
