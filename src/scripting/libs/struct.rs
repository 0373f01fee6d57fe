//! `struct`: lua-struct 0.2 as Redis embeds it (with Redis's size-overflow checks): `pack`,
//! `unpack` and `size` over a format of letters with endianness (`<`, `>`) and alignment (`!n`)
//! options. Sizes are those of x86-64 Linux, the platform the reference Redis runs on.

use super::{
    bad_argument, c_double_to_i64, lib_function, message, Args, LibResult, LUA_MAX_C_STACK,
};
use mlua::{Lua, MultiValue, Table, Value};

/// Largest size of an `i`/`I` integer.
const MAX_INT_SIZE: usize = 32;
/// Default alignment for `!` without a number: that of double on x86-64.
const MAX_ALIGN: usize = 8;

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.set("pack", lib_function(lua, pack)?)?;
    table.set("unpack", lib_function(lua, unpack)?)?;
    table.set("size", lib_function(lua, size)?)?;
    Ok(table)
}

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Little,
    Big,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Header {
    fn new() -> Self {
        Header {
            endian: Endian::Little,
            align: 1,
        }
    }
}

/// A cursor over the format, which (like the C string it is in Redis) ends at the first NUL.
struct Format<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Format<'a> {
    fn new(text: &'a [u8]) -> Self {
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        Format {
            text: &text[..end],
            at: 0,
        }
    }

    fn next_option(&mut self) -> Option<u8> {
        let option = self.text.get(self.at).copied();
        self.at += usize::from(option.is_some());
        option
    }

    /// `getnum`: a decimal number at the cursor, or `default`.
    fn number(&mut self, default: usize) -> LibResult<usize> {
        if !self.text.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut value: i32 = 0;
        while let Some(&b) = self.text.get(self.at).filter(|b| b.is_ascii_digit()) {
            let digit = i32::from(b - b'0');
            if value > i32::MAX / 10 || value * 10 > i32::MAX - digit {
                return Err(message("integral size overflow"));
            }
            value = value * 10 + digit;
            self.at += 1;
        }
        Ok(value as usize)
    }

    /// `optsize`: the size of an option (reading its number), 0 for options without one.
    fn size_of(&mut self, option: u8) -> LibResult<usize> {
        Ok(match option {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(1)?,
            b'i' | b'I' => {
                let size = self.number(4)?;
                if size > MAX_INT_SIZE {
                    return Err(message(format!(
                        "integral size {size} is larger than limit of {MAX_INT_SIZE}"
                    )));
                }
                size
            }
            _ => 0,
        })
    }

    /// `controloptions`: endianness, alignment and spaces; anything else is an error.
    fn control(&mut self, option: u8, header: &mut Header) -> LibResult<()> {
        match option {
            b' ' => {}
            b'>' => header.endian = Endian::Big,
            b'<' => header.endian = Endian::Little,
            b'!' => {
                let align = self.number(MAX_ALIGN)?;
                if align == 0 || !align.is_power_of_two() {
                    return Err(message(format!("alignment {align} is not a power of 2")));
                }
                header.align = align;
            }
            _ => {
                let mut text = b"invalid format option '".to_vec();
                text.push(option);
                text.push(b'\'');
                return Err(bad_argument(1, text));
            }
        }
        Ok(())
    }
}

/// `gettoalign`: padding before an item of `size` at offset `len`, with the C formula (which
/// only makes sense for powers of two, but is what Redis computes for any size).
fn padding(len: usize, header: &Header, option: u8, size: usize) -> usize {
    if size == 0 || option == b'c' {
        return 0;
    }
    let size = size.min(header.align);
    size.wrapping_sub(len & size.wrapping_sub(1)) & size.wrapping_sub(1)
}

fn is_integer_option(option: u8) -> bool {
    matches!(
        option,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

/// `putinteger`: the number as a C unsigned long (negatives through long), `size` bytes of it,
/// zeros beyond the eighth.
fn put_integer(out: &mut Vec<u8>, number: f64, endian: Endian, size: usize) {
    let mut value: u64 = if number < 0.0 {
        c_double_to_i64(number) as u64
    } else if number < -(i64::MIN as f64) {
        number as u64
    } else {
        // x86-64 converts from 2^63 by subtracting it first; past 2^64 the result is 0.
        (c_double_to_i64(number + i64::MIN as f64) as u64) ^ (1 << 63)
    };
    let mut bytes = vec![0u8; size];
    for i in 0..size {
        let slot = if endian == Endian::Little {
            i
        } else {
            size - 1 - i
        };
        bytes[slot] = value as u8;
        value = value.checked_shr(8).unwrap_or(0);
    }
    out.extend_from_slice(&bytes);
}

fn ordered(bytes: &mut [u8], endian: Endian) {
    if endian == Endian::Big {
        bytes.reverse();
    }
}

fn pack(lua: &Lua, mut args: Args) -> LibResult<MultiValue> {
    let format_text = args.check_bytes(lua, 1)?;
    // lua-struct pushes a nil after the arguments before packing, so a missing first value
    // reads as "got nil" (and the ones after it as "got no value").
    args.0.push(Value::Nil);
    let format_bytes = format_text.as_bytes();
    let mut format = Format::new(&format_bytes);
    let mut header = Header::new();
    let mut arg = 2;
    let mut out = Vec::new();
    while let Some(option) = format.next_option() {
        let mut size = format.size_of(option)?;
        let pad = padding(out.len(), &header, option, size);
        out.resize(out.len() + pad, 0);
        match option {
            _ if is_integer_option(option) => {
                let number = args.check_number(lua, arg)?;
                arg += 1;
                put_integer(&mut out, number, header.endian, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let mut bytes = (args.check_number(lua, arg)? as f32).to_le_bytes();
                arg += 1;
                ordered(&mut bytes, header.endian);
                out.extend_from_slice(&bytes);
            }
            b'd' => {
                let mut bytes = args.check_number(lua, arg)?.to_le_bytes();
                arg += 1;
                ordered(&mut bytes, header.endian);
                out.extend_from_slice(&bytes);
            }
            b'c' | b's' => {
                let text = args.check_bytes(lua, arg)?;
                arg += 1;
                let text = text.as_bytes();
                if size == 0 {
                    size = text.len();
                }
                if text.len() < size {
                    // lua-struct reports the argument after the string (its index was bumped).
                    return Err(bad_argument(arg as i32, "string too short"));
                }
                out.extend_from_slice(&text[..size]);
                if option == b's' {
                    out.push(0);
                }
            }
            _ => format.control(option, &mut header)?,
        }
    }
    Ok(MultiValue::from_vec(vec![Value::String(
        lua.create_string(&out)?,
    )]))
}

/// `getinteger`: up to 8 bytes survive the shifts of a 64-bit accumulator; the sign mask uses
/// the shift count modulo 64, as x86-64 does for the C expression.
fn get_integer(bytes: &[u8], endian: Endian, signed: bool) -> f64 {
    let size = bytes.len();
    let mut value: u64 = 0;
    for i in 0..size {
        let byte = if endian == Endian::Big {
            bytes[i]
        } else {
            bytes[size - 1 - i]
        };
        value = value << 8 | u64::from(byte);
    }
    if !signed {
        return value as f64;
    }
    let shift = (size * 8).wrapping_sub(1) as u32 & 63;
    let mask = u64::MAX << shift;
    if value & mask != 0 {
        value |= mask;
    }
    value as i64 as f64
}

fn unpack(lua: &Lua, args: Args) -> LibResult<MultiValue> {
    let format_text = args.check_bytes(lua, 1)?;
    let format_bytes = format_text.as_bytes();
    let data_text = args.check_bytes(lua, 2)?;
    let data = data_text.as_bytes();
    let start = args.opt_integer(lua, 3, 1)? as usize;
    if start == 0 {
        return Err(bad_argument(3, "offset must be 1 or greater"));
    }
    let mut pos = start - 1;
    let mut format = Format::new(&format_bytes);
    let mut header = Header::new();
    let mut results: Vec<Value> = Vec::new();
    let too_short = || bad_argument(2, "data string too short");
    while let Some(option) = format.next_option() {
        let mut size = format.size_of(option)?;
        pos = pos.wrapping_add(padding(pos, &header, option, size));
        if size > data.len() || pos > data.len() - size {
            return Err(too_short());
        }
        if args.count().max(1) + results.len() + 2 > LUA_MAX_C_STACK {
            return Err(message("stack overflow (too many results)"));
        }
        let item = &data[pos..pos + size];
        match option {
            _ if is_integer_option(option) => {
                let signed = option.is_ascii_lowercase();
                results.push(Value::Number(get_integer(item, header.endian, signed)));
            }
            b'x' => {}
            b'f' => {
                let mut bytes = [0u8; 4];
                bytes.copy_from_slice(item);
                ordered(&mut bytes, header.endian);
                results.push(Value::Number(f64::from(f32::from_le_bytes(bytes))));
            }
            b'd' => {
                let mut bytes = [0u8; 8];
                bytes.copy_from_slice(item);
                ordered(&mut bytes, header.endian);
                results.push(Value::Number(f64::from_le_bytes(bytes)));
            }
            b'c' => {
                if size == 0 {
                    // "c0" takes its length from the previous result, which it replaces.
                    let previous = results.last().cloned();
                    let length = match previous {
                        Some(value) => lua.coerce_number(value)?,
                        None => None,
                    };
                    let Some(length) = length else {
                        return Err(message("format 'c0' needs a previous size"));
                    };
                    results.pop();
                    size = length as usize;
                    if size > data.len() || pos > data.len() - size {
                        return Err(too_short());
                    }
                }
                results.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(message("unfinished string in data"));
                };
                size = end + 1;
                results.push(Value::String(lua.create_string(&data[pos..pos + end])?));
            }
            _ => format.control(option, &mut header)?,
        }
        pos = pos.wrapping_add(size);
    }
    results.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(MultiValue::from_vec(results))
}

fn size(lua: &Lua, args: Args) -> LibResult<MultiValue> {
    let format_text = args.check_bytes(lua, 1)?;
    let format_bytes = format_text.as_bytes();
    let mut format = Format::new(&format_bytes);
    let mut header = Header::new();
    let mut pos: usize = 0;
    while let Some(option) = format.next_option() {
        let size = format.size_of(option)?;
        pos = pos.wrapping_add(padding(pos, &header, option, size));
        if option == b's' {
            return Err(bad_argument(1, "option 's' has no fixed size"));
        }
        if option == b'c' && size == 0 {
            return Err(bad_argument(1, "option 'c0' has no fixed size"));
        }
        if !option.is_ascii_alphanumeric() {
            format.control(option, &mut header)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(MultiValue::from_vec(vec![Value::Number(pos as i64 as f64)]))
}
