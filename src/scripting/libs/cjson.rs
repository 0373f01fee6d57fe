//! `cjson`: lua-cjson 2.1.0 as Redis embeds it. `encode` turns Lua values into JSON (tables are
//! arrays when their keys are 1..n, objects otherwise), `decode` turns JSON into Lua values
//! (`null` is `cjson.null`, a NULL light userdata), and the option functions change the
//! settings shared by the functions of one `cjson` table (`cjson.new()` makes another).

mod decode;

use super::{
    bad_argument, deep, lib_function, message, Args, LibResult, LUA_MAX_C_STACK,
    NESTING_REFERENCE_BUDGET,
};
use crate::number_format::format_g;
use mlua::{LightUserData, Lua, MultiValue, Table, Value};
use parking_lot::Mutex;
use std::sync::Arc;

/// The settings of one cjson instance, with lua-cjson's defaults.
#[derive(Clone)]
struct Config {
    encode_sparse_convert: bool,
    encode_sparse_ratio: i32,
    encode_sparse_safe: i32,
    encode_max_depth: i32,
    decode_max_depth: i32,
    /// 0 "off" (error), 1 "on" (write inf/nan), 2 "null".
    encode_invalid_numbers: i32,
    decode_invalid_numbers: bool,
    encode_keep_buffer: bool,
    encode_number_precision: i32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            encode_sparse_convert: false,
            encode_sparse_ratio: 2,
            encode_sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: true,
            encode_keep_buffer: true,
            encode_number_precision: 14,
        }
    }
}

type Shared = Arc<Mutex<Config>>;

/// A module function that reads or changes the instance's settings.
type ConfigFn = fn(&Lua, &Args, &Shared) -> LibResult<MultiValue>;

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let config: Shared = Arc::new(Mutex::new(Config::default()));
    let table = lua.create_table()?;
    let functions: [(&str, ConfigFn); 9] = [
        ("encode", encode),
        ("decode", decode::decode),
        ("encode_sparse_array", encode_sparse_array),
        ("decode_max_depth", |lua, args, config| {
            integer_option(
                lua,
                args,
                1,
                1,
                i32::MAX,
                &mut config.lock().decode_max_depth,
            )
        }),
        ("encode_max_depth", |lua, args, config| {
            integer_option(
                lua,
                args,
                1,
                1,
                i32::MAX,
                &mut config.lock().encode_max_depth,
            )
        }),
        ("encode_number_precision", |lua, args, config| {
            integer_option(
                lua,
                args,
                1,
                1,
                14,
                &mut config.lock().encode_number_precision,
            )
        }),
        ("encode_keep_buffer", |lua, args, config| {
            bool_option(lua, args, 1, &mut config.lock().encode_keep_buffer)
        }),
        ("encode_invalid_numbers", encode_invalid_numbers),
        ("decode_invalid_numbers", |lua, args, config| {
            bool_option(lua, args, 1, &mut config.lock().decode_invalid_numbers)
        }),
    ];
    for (name, function) in functions {
        let config = config.clone();
        table.set(
            name,
            lib_function(lua, move |lua, args| function(lua, &args, &config))?,
        )?;
    }
    table.set(
        "new",
        lib_function(lua, |lua, _| {
            Ok(MultiValue::from_vec(vec![Value::Table(module(lua)?)]))
        })?,
    )?;
    table.set(
        "null",
        Value::LightUserData(LightUserData(std::ptr::null_mut())),
    )?;
    table.set("_NAME", "cjson")?;
    table.set("_VERSION", "2.1.0")?;
    Ok(table)
}

fn one(value: Value) -> LibResult<MultiValue> {
    Ok(MultiValue::from_vec(vec![value]))
}

/// `json_arg_init`: at most `count` arguments.
fn check_arg_count(args: &Args, count: usize) -> LibResult<()> {
    if args.count() > count {
        return Err(bad_argument(count as i32 + 1, "found too many arguments"));
    }
    Ok(())
}

/// `json_integer_option`: nil keeps the setting; the range error always names argument #1, as
/// lua-cjson does.
fn integer_option(
    lua: &Lua,
    args: &Args,
    index: usize,
    min: i32,
    max: i32,
    setting: &mut i32,
) -> LibResult<MultiValue> {
    if index == 1 {
        check_arg_count(args, 1)?;
    }
    if !args.is_none_or_nil(index) {
        let value = args.check_integer(lua, index)? as i32;
        if !(min..=max).contains(&value) {
            return Err(bad_argument(
                1,
                format!("expected integer between {min} and {max}"),
            ));
        }
        *setting = value;
    }
    one(Value::Number(f64::from(*setting)))
}

/// `json_enum_option`: a boolean, or one of the option names (`off`, `on`, and `null` for
/// encode_invalid_numbers). Returns the index of the setting.
fn enum_option(
    lua: &Lua,
    args: &Args,
    index: usize,
    names: &[&str],
    setting: &mut i32,
) -> LibResult<()> {
    match args.get(index) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *setting = i32::from(*b),
        Some(_) => {
            let name = args.check_bytes(lua, index)?;
            let name = name.as_bytes();
            match names.iter().position(|n| n.as_bytes() == &name[..]) {
                Some(position) => *setting = position as i32,
                None => {
                    let mut text = b"invalid option '".to_vec();
                    text.extend_from_slice(&name);
                    text.push(b'\'');
                    return Err(bad_argument(index as i32, text));
                }
            }
        }
    }
    Ok(())
}

fn bool_option(lua: &Lua, args: &Args, index: usize, setting: &mut bool) -> LibResult<MultiValue> {
    check_arg_count(args, 1)?;
    let mut value = i32::from(*setting);
    let result = enum_option(lua, args, index, &["off", "on"], &mut value);
    *setting = value != 0;
    result?;
    one(Value::Boolean(*setting))
}

fn encode_invalid_numbers(lua: &Lua, args: &Args, config: &Shared) -> LibResult<MultiValue> {
    check_arg_count(args, 1)?;
    let mut config = config.lock();
    enum_option(
        lua,
        args,
        1,
        &["off", "on", "null"],
        &mut config.encode_invalid_numbers,
    )?;
    one(match config.encode_invalid_numbers {
        2 => Value::String(lua.create_string("null")?),
        setting => Value::Boolean(setting != 0),
    })
}

fn encode_sparse_array(lua: &Lua, args: &Args, config: &Shared) -> LibResult<MultiValue> {
    check_arg_count(args, 3)?;
    let mut config = config.lock();
    let mut convert = i32::from(config.encode_sparse_convert);
    let converted = enum_option(lua, args, 1, &["off", "on"], &mut convert);
    config.encode_sparse_convert = convert != 0;
    converted?;
    let ratio = integer_option(lua, args, 2, 0, i32::MAX, &mut config.encode_sparse_ratio)?;
    let safe = integer_option(lua, args, 3, 0, i32::MAX, &mut config.encode_sparse_safe)?;
    let mut values = vec![Value::Boolean(config.encode_sparse_convert)];
    values.extend(ratio);
    values.extend(safe);
    Ok(MultiValue::from_vec(values))
}

fn encode(lua: &Lua, args: &Args, config: &Shared) -> LibResult<MultiValue> {
    if args.count() != 1 {
        return Err(bad_argument(1, "expected 1 argument"));
    }
    let config = config.lock().clone();
    let mut encoder = Encoder {
        config: &config,
        out: Vec::new(),
        top: 1,
        references: 0,
    };
    if let Some(value) = args.get(1) {
        encoder.value(value, 0)?;
    }
    one(Value::String(lua.create_string(&encoder.out)?))
}

/// "Cannot serialise <type>: <reason>".
fn cannot_serialise(value: &Value, reason: &str) -> super::Failure {
    let type_name = super::lua_type_name(Some(value));
    message(format!("Cannot serialise {type_name}: {reason}"))
}

/// mlua reads a number within 2^-52 of zero as the integer 0; read such values again as f64
/// from the table so tiny numbers and -0 keep their value.
fn exact(table: &Table, key: Value, value: Value) -> mlua::Result<Value> {
    if value == Value::Integer(0) {
        return Ok(Value::Number(table.raw_get::<f64>(key)?));
    }
    Ok(value)
}

struct Encoder<'a> {
    config: &'a Config,
    out: Vec<u8>,
    /// Lua stack slots lua-cjson would use, for its `lua_checkstack` limit.
    top: usize,
    /// mlua references held by the enclosing levels (an object level holds about five: the
    /// table, the iterator's key, the current key and value; an array level one).
    references: usize,
}

impl Encoder<'_> {
    fn value(&mut self, value: &Value, depth: i32) -> LibResult<()> {
        match value {
            Value::String(s) => self.string(&s.as_bytes()),
            Value::Integer(i) => self.number(*i as f64, value)?,
            Value::Number(n) => self.number(*n, value)?,
            Value::Boolean(true) => self.out.extend_from_slice(b"true"),
            Value::Boolean(false) => self.out.extend_from_slice(b"false"),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(ud) if ud.0.is_null() => self.out.extend_from_slice(b"null"),
            Value::Table(table) => {
                let depth = depth + 1;
                if depth > self.config.encode_max_depth
                    || self.top + 3 > LUA_MAX_C_STACK
                    || self.references > NESTING_REFERENCE_BUDGET
                {
                    return Err(message(format!(
                        "Cannot serialise, excessive nesting ({depth})"
                    )));
                }
                match self.array_length(table, value)? {
                    Some(length) if length > 0 => deep(|| self.array(table, length, depth))?,
                    _ => deep(|| self.object(table, depth))?,
                }
            }
            other => return Err(cannot_serialise(other, "type not supported")),
        }
        Ok(())
    }

    fn number(&mut self, n: f64, value: &Value) -> LibResult<()> {
        if !n.is_finite() {
            match self.config.encode_invalid_numbers {
                0 => return Err(cannot_serialise(value, "must not be NaN or Inf")),
                1 if n.is_nan() => {
                    self.out.extend_from_slice(b"nan");
                    return Ok(());
                }
                1 => {}
                _ => {
                    self.out.extend_from_slice(b"null");
                    return Ok(());
                }
            }
        }
        let precision = self.config.encode_number_precision as usize;
        self.out
            .extend_from_slice(format_g(n, precision).as_bytes());
        Ok(())
    }

    fn string(&mut self, bytes: &[u8]) {
        self.out.push(b'"');
        for &b in bytes {
            match b {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                b'\x08' => self.out.extend_from_slice(b"\\b"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\x0c' => self.out.extend_from_slice(b"\\f"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => {
                    self.out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
                }
                _ => self.out.push(b),
            }
        }
        self.out.push(b'"');
    }

    /// `lua_array_length`: None when a key is not a positive integer; the largest index
    /// otherwise, unless the array is too sparse (an error, or None when conversion is on).
    /// The largest index lives in a C int, so keys past 2^31 wrap it as x86-64 does.
    fn array_length(&self, table: &Table, value: &Value) -> LibResult<Option<i32>> {
        let mut max: i32 = 0;
        let mut items: i32 = 0;
        for pair in table.clone().pairs::<Value, Value>() {
            let (key, _) = pair?;
            let k = match key {
                Value::Integer(i) => i as f64,
                Value::Number(n) => n,
                _ => return Ok(None),
            };
            if k == 0.0 || k.is_nan() || k.floor() != k || k < 1.0 {
                return Ok(None);
            }
            if k > f64::from(max) {
                max = if k < 2_147_483_648.0 {
                    k as i32
                } else {
                    i32::MIN
                };
            }
            items = items.wrapping_add(1);
        }
        let ratio = self.config.encode_sparse_ratio;
        if ratio > 0
            && i64::from(max) > i64::from(items.wrapping_mul(ratio))
            && max > self.config.encode_sparse_safe
        {
            if !self.config.encode_sparse_convert {
                return Err(cannot_serialise(value, "excessively sparse array"));
            }
            return Ok(None);
        }
        Ok(Some(max))
    }

    fn array(&mut self, table: &Table, length: i32, depth: i32) -> LibResult<()> {
        self.out.push(b'[');
        self.top += 1;
        self.references += 1;
        for index in 1..=length {
            if index > 1 {
                self.out.push(b',');
            }
            let element: Value = table.raw_get(index)?;
            let element = exact(table, Value::Integer(i64::from(index)), element)?;
            self.value(&element, depth)?;
        }
        self.top -= 1;
        self.references -= 1;
        self.out.push(b']');
        Ok(())
    }

    fn object(&mut self, table: &Table, depth: i32) -> LibResult<()> {
        self.out.push(b'{');
        self.top += 2;
        self.references += 5;
        let mut first = true;
        for pair in table.clone().pairs::<Value, Value>() {
            let (key, value) = pair?;
            if !first {
                self.out.push(b',');
            }
            first = false;
            match &key {
                Value::Integer(i) => {
                    self.out.push(b'"');
                    self.number(*i as f64, &key)?;
                    self.out.extend_from_slice(b"\":");
                }
                Value::Number(n) => {
                    self.out.push(b'"');
                    self.number(*n, &key)?;
                    self.out.extend_from_slice(b"\":");
                }
                Value::String(s) => {
                    self.string(&s.as_bytes());
                    self.out.push(b':');
                }
                other => {
                    return Err(cannot_serialise(
                        other,
                        "table key must be a number or string",
                    ))
                }
            }
            let value = exact(table, key, value)?;
            self.value(&value, depth)?;
        }
        self.top -= 2;
        self.references -= 5;
        self.out.push(b'}');
        Ok(())
    }
}
