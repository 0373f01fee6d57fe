//! `bit`: LuaBitOp 1.0.2 as Redis embeds it. Every operation works on 32-bit integers and
//! returns a signed 32-bit result as a Lua number.

use super::{bad_argument, lib_function, lua_type_name, Args, LibResult};
use mlua::{Lua, MultiValue, Table, Value};

/// A named 32-bit operation of one or two operands.
type Unary = (&'static str, fn(u32) -> u32);
type Binary = (&'static str, fn(u32, u32) -> u32);

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    let unary: [Unary; 3] = [
        ("tobit", |b| b),
        ("bnot", |b| !b),
        ("bswap", u32::swap_bytes),
    ];
    for (name, op) in unary {
        bit.set(
            name,
            lib_function(lua, move |lua, args| result(op(to_bits(lua, &args, 1)?)))?,
        )?;
    }
    let folds: [Binary; 3] = [
        ("band", |a, b| a & b),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ];
    for (name, op) in folds {
        bit.set(
            name,
            lib_function(lua, move |lua, args| {
                // LuaBitOp reads the first argument, then the others from the last down.
                let mut acc = to_bits(lua, &args, 1)?;
                for index in (2..=args.count()).rev() {
                    acc = op(acc, to_bits(lua, &args, index)?);
                }
                result(acc)
            })?,
        )?;
    }
    let shifts: [Binary; 5] = [
        ("lshift", |b, n| b << n),
        ("rshift", |b, n| b >> n),
        ("arshift", |b, n| ((b as i32) >> n) as u32),
        ("rol", u32::rotate_left),
        ("ror", u32::rotate_right),
    ];
    for (name, op) in shifts {
        bit.set(
            name,
            lib_function(lua, move |lua, args| {
                let b = to_bits(lua, &args, 1)?;
                let n = to_bits(lua, &args, 2)? & 31;
                result(op(b, n))
            })?,
        )?;
    }
    bit.set("tohex", lib_function(lua, tohex)?)?;
    Ok(bit)
}

/// LuaBitOp's `barg`: `lua_tonumber` (0 for anything that is not a number), then the 2^52+2^51
/// trick, which rounds to the nearest integer (ties to even) and keeps the low 32 bits. Only a
/// result of 0 from a non-number is an error, as in the C code.
fn to_bits(lua: &Lua, args: &Args, index: usize) -> LibResult<u32> {
    let number = args.to_number(lua, index)?;
    let bits = (number.unwrap_or(0.0) + 6_755_399_441_055_744.0).to_bits() as u32;
    if bits == 0 && number.is_none() {
        let got = lua_type_name(args.get(index));
        return Err(bad_argument(
            index as i32,
            format!("number expected, got {got}"),
        ));
    }
    Ok(bits)
}

fn result(bits: u32) -> LibResult<MultiValue> {
    Ok(MultiValue::from_vec(vec![Value::Integer(i64::from(
        bits as i32,
    ))]))
}

/// `bit.tohex(x [, n])`: n hex digits (default 8, at most 8), upper case when n is negative.
fn tohex(lua: &Lua, args: Args) -> LibResult<MultiValue> {
    let mut bits = to_bits(lua, &args, 1)?;
    let mut count = if args.get(2).is_none() {
        8
    } else {
        to_bits(lua, &args, 2)? as i32
    };
    let digits: &[u8; 16] = if count < 0 {
        count = count.wrapping_neg();
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let count = count.clamp(0, 8) as usize;
    let mut text = vec![b'0'; count];
    for slot in text.iter_mut().rev() {
        *slot = digits[(bits & 15) as usize];
        bits >>= 4;
    }
    Ok(MultiValue::from_vec(vec![Value::String(
        lua.create_string(&text)?,
    )]))
}
