//! `cjson.decode`: lua-cjson 2.1.0's tokenizer and parser, with its error texts ("Expected value
//! but found T_END at character 1"), its leniency (numbers as `strtod` reads them: hex, `inf`,
//! `nan`, leading zeros, a leading `+`), and its end at the first NUL byte (it reads a C string).
//! The parser keeps an explicit stack instead of recursing, so deep input cannot overflow ours.

use super::{one, Args, Config, Shared};
use crate::number_format::strtod;
use crate::scripting::libs::{bad_argument, message, LibResult, LUA_MAX_C_STACK};
use mlua::{LightUserData, Lua, MultiValue, Table, Value};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    ObjectBegin,
    ObjectEnd,
    ArrayBegin,
    ArrayEnd,
    String,
    Number,
    Boolean,
    Null,
    Colon,
    Comma,
    End,
    Error,
}

impl Kind {
    /// lua-cjson's `json_token_type_name`, used in "but found ..." messages.
    fn name(self) -> &'static str {
        match self {
            Kind::ObjectBegin => "T_OBJ_BEGIN",
            Kind::ObjectEnd => "T_OBJ_END",
            Kind::ArrayBegin => "T_ARR_BEGIN",
            Kind::ArrayEnd => "T_ARR_END",
            Kind::String => "T_STRING",
            Kind::Number => "T_NUMBER",
            Kind::Boolean => "T_BOOLEAN",
            Kind::Null => "T_NULL",
            Kind::Colon => "T_COLON",
            Kind::Comma => "T_COMMA",
            Kind::End => "T_END",
            Kind::Error => "T_ERROR",
        }
    }
}

struct Token {
    kind: Kind,
    /// 0-based offset where the token (or the error) starts.
    index: usize,
    number: f64,
    boolean: bool,
    /// The decoded bytes of a string token.
    text: Vec<u8>,
    /// What went wrong, for an error token.
    error: &'static str,
}

impl Token {
    fn new(kind: Kind, index: usize) -> Self {
        Token {
            kind,
            index,
            number: 0.0,
            boolean: false,
            text: Vec::new(),
            error: "",
        }
    }
}

/// A container being filled: arrays count their next index, objects hold the pending key.
enum Frame {
    Array(i64),
    Object(Vec<u8>),
}

pub(super) fn decode(lua: &Lua, args: &Args, config: &Shared) -> LibResult<MultiValue> {
    if args.count() != 1 {
        return Err(bad_argument(1, "expected 1 argument"));
    }
    let text = args.check_bytes(lua, 1)?;
    let data = text.as_bytes();
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(message("JSON parser does not support UTF-16 or UTF-32"));
    }
    let config = config.lock().clone();
    let mut parser = Parser {
        lua,
        config: &config,
        data: &data,
        at: 0,
        depth: 0,
        top: 1,
    };
    let value = parser.document()?;
    one(value)
}

struct Parser<'a> {
    lua: &'a Lua,
    config: &'a Config,
    data: &'a [u8],
    at: usize,
    depth: i32,
    /// Lua stack slots lua-cjson would use, for its `lua_checkstack` limit.
    top: usize,
}

impl Parser<'_> {
    /// The byte at `index`, 0 past the end (the C string's terminator).
    fn byte(&self, index: usize) -> u8 {
        self.data.get(index).copied().unwrap_or(0)
    }

    fn starts_with(&self, word: &[u8]) -> bool {
        self.data[self.at.min(self.data.len())..].starts_with(word)
    }

    fn error_token(&self, error: &'static str) -> Token {
        let mut token = Token::new(Kind::Error, self.at);
        token.error = error;
        token
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.byte(self.at), b' ' | b'\t' | b'\r' | b'\n') {
            self.at += 1;
        }
        let index = self.at;
        let single = match self.byte(index) {
            0 => return Token::new(Kind::End, index),
            b'{' => Some(Kind::ObjectBegin),
            b'}' => Some(Kind::ObjectEnd),
            b'[' => Some(Kind::ArrayBegin),
            b']' => Some(Kind::ArrayEnd),
            b':' => Some(Kind::Colon),
            b',' => Some(Kind::Comma),
            _ => None,
        };
        if let Some(kind) = single {
            self.at += 1;
            return Token::new(kind, index);
        }
        let ch = self.byte(index);
        // lua-cjson only looks further at these characters; anything else is an invalid token.
        if !matches!(
            ch,
            b'"' | b'-' | b'+' | b'0'..=b'9' | b't' | b'f' | b'n' | b'i' | b'I' | b'N'
        ) {
            return self.error_token("invalid token");
        }
        if ch == b'"' {
            return self.string_token();
        }
        if ch == b'-' || ch.is_ascii_digit() {
            if !self.config.decode_invalid_numbers && self.is_invalid_number() {
                return self.error_token("invalid number");
            }
            return self.number_token();
        }
        for (word, kind, boolean) in [
            (&b"true"[..], Kind::Boolean, true),
            (b"false", Kind::Boolean, false),
            (b"null", Kind::Null, false),
        ] {
            if self.starts_with(word) {
                self.at += word.len();
                let mut token = Token::new(kind, index);
                token.boolean = boolean;
                return token;
            }
        }
        if self.config.decode_invalid_numbers && self.is_invalid_number() {
            return self.number_token();
        }
        self.error_token("invalid token")
    }

    /// `json_is_invalid_number`: numbers JSON forbids but `strtod` reads.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.at;
        if self.byte(p) == b'+' {
            return true;
        }
        if self.byte(p) == b'-' {
            p += 1;
        }
        let ch = self.byte(p);
        if ch == b'0' {
            let next = self.byte(p + 1);
            return next | 0x20 == b'x' || next.is_ascii_digit();
        }
        // A signed char compared with '9': bytes >= 0x80 are negative there.
        if ch <= b'9' || ch >= 0x80 {
            return false;
        }
        let rest = &self.data[p.min(self.data.len())..];
        let prefix = |word: &[u8]| rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(word);
        prefix(b"inf") || prefix(b"nan")
    }

    fn number_token(&mut self) -> Token {
        // strtod stops at the C string's end: parse only up to the first NUL.
        let rest = &self.data[self.at..];
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let (number, used) = strtod(&rest[..end]);
        if used == 0 {
            return self.error_token("invalid number");
        }
        let mut token = Token::new(Kind::Number, self.at);
        token.number = number;
        self.at += used;
        token
    }

    fn string_token(&mut self) -> Token {
        let index = self.at;
        self.at += 1;
        let mut text = Vec::new();
        loop {
            let ch = self.byte(self.at);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return self.error_token("unexpected end of string");
            }
            if ch != b'\\' {
                text.push(ch);
                self.at += 1;
                continue;
            }
            let translated = match self.byte(self.at + 1) {
                b'"' => b'"',
                b'\\' => b'\\',
                b'/' => b'/',
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'u' => {
                    match self.unicode_escape() {
                        Some((bytes, len)) => {
                            text.extend_from_slice(&bytes);
                            self.at += len;
                        }
                        None => return self.error_token("invalid unicode escape code"),
                    }
                    continue;
                }
                _ => return self.error_token("invalid escape code"),
            };
            text.push(translated);
            self.at += 2;
        }
        self.at += 1;
        let mut token = Token::new(Kind::String, index);
        token.text = text;
        token
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        (0..4).try_fold(0u32, |acc, i| {
            let digit = (self.byte(at + i) as char).to_digit(16)?;
            Some(acc << 4 | digit)
        })
    }

    /// `\uXXXX` (or a surrogate pair of two) at the cursor: its UTF-8 bytes and escape length.
    fn unicode_escape(&self) -> Option<(Vec<u8>, usize)> {
        let mut codepoint = self.hex4(self.at + 2)?;
        let mut len = 6;
        if codepoint & 0xf800 == 0xd800 {
            if codepoint & 0x400 != 0 {
                return None;
            }
            if self.byte(self.at + 6) != b'\\' || self.byte(self.at + 7) != b'u' {
                return None;
            }
            let low = self.hex4(self.at + 8)?;
            if low & 0xfc00 != 0xdc00 {
                return None;
            }
            codepoint = (((codepoint & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            len = 12;
        }
        Some((utf8(codepoint), len))
    }

    fn parse_error(&self, expected: &str, token: &Token) -> crate::scripting::libs::Failure {
        let found = if token.kind == Kind::Error {
            token.error
        } else {
            token.kind.name()
        };
        message(format!(
            "Expected {expected} but found {found} at character {}",
            token.index + 1
        ))
    }

    /// `json_decode_descend`: one level deeper, within decode_max_depth and Lua's stack limit.
    fn descend(&mut self, slots: usize) -> LibResult<()> {
        self.depth += 1;
        if self.depth <= self.config.decode_max_depth && self.top + slots <= LUA_MAX_C_STACK {
            return Ok(());
        }
        Err(message(format!(
            "Found too many nested data structures ({}) at character {}",
            self.depth, self.at
        )))
    }

    fn document(&mut self) -> LibResult<Value> {
        let token = self.next_token();
        let value = self.value(token)?;
        let token = self.next_token();
        if token.kind != Kind::End {
            return Err(self.parse_error("the end", &token));
        }
        Ok(value)
    }

    /// An object key: a string token followed by a colon.
    fn object_key(&mut self, token: Token) -> LibResult<Vec<u8>> {
        if token.kind != Kind::String {
            return Err(self.parse_error("object key string", &token));
        }
        let key = token.text;
        self.top += 1;
        let colon = self.next_token();
        if colon.kind != Kind::Colon {
            return Err(self.parse_error("colon", &colon));
        }
        Ok(key)
    }

    /// `json_process_value` without recursion: `token` starts a value; containers push a frame
    /// and the loop continues with their first element. Only the innermost container is held
    /// as an mlua reference; its ancestors wait in a Lua table, so deep input cannot exhaust
    /// mlua's reference slots before lua-cjson's own limits apply.
    fn value(&mut self, first: Token) -> LibResult<Value> {
        let mut nest = Nest {
            frames: Vec::new(),
            current: None,
            ancestors: None,
        };
        let mut token = first;
        'value: loop {
            let mut value = match token.kind {
                Kind::String => Value::String(self.lua.create_string(&token.text)?),
                Kind::Number => Value::Number(token.number),
                Kind::Boolean => Value::Boolean(token.boolean),
                Kind::Null => Value::LightUserData(LightUserData(std::ptr::null_mut())),
                Kind::ObjectBegin => {
                    self.descend(3)?;
                    let table = self.lua.create_table()?;
                    self.top += 1;
                    let next = self.next_token();
                    if next.kind == Kind::ObjectEnd {
                        self.depth -= 1;
                        Value::Table(table)
                    } else {
                        let key = self.object_key(next)?;
                        nest.push(self.lua, table, Frame::Object(key))?;
                        token = self.next_token();
                        continue 'value;
                    }
                }
                Kind::ArrayBegin => {
                    self.descend(2)?;
                    let table = self.lua.create_table()?;
                    self.top += 1;
                    let next = self.next_token();
                    if next.kind == Kind::ArrayEnd {
                        self.depth -= 1;
                        Value::Table(table)
                    } else {
                        nest.push(self.lua, table, Frame::Array(1))?;
                        token = next;
                        continue 'value;
                    }
                }
                _ => return Err(self.parse_error("value", &token)),
            };
            if !matches!(value, Value::Table(_)) {
                self.top += 1;
            }
            // The value is complete: store it in its container, then read what follows.
            loop {
                let Some(table) = nest.current.as_ref() else {
                    return Ok(value);
                };
                let (end, expected) = match nest.frames.last_mut() {
                    Some(Frame::Array(index)) => {
                        table.raw_set(*index, value)?;
                        *index += 1;
                        self.top -= 1;
                        (Kind::ArrayEnd, "comma or array end")
                    }
                    Some(Frame::Object(key)) => {
                        let key = self.lua.create_string(std::mem::take(key))?;
                        table.raw_set(key, value)?;
                        self.top -= 2;
                        (Kind::ObjectEnd, "comma or object end")
                    }
                    None => return Ok(value),
                };
                let next = self.next_token();
                if next.kind == end {
                    self.depth -= 1;
                    value = Value::Table(nest.pop()?);
                    continue;
                }
                if next.kind != Kind::Comma {
                    return Err(self.parse_error(expected, &next));
                }
                if end == Kind::ObjectEnd {
                    let key_token = self.next_token();
                    let key = self.object_key(key_token)?;
                    if let Some(Frame::Object(pending)) = nest.frames.last_mut() {
                        *pending = key;
                    }
                }
                token = self.next_token();
                continue 'value;
            }
        }
    }
}

/// The containers being filled, innermost first in `current`.
struct Nest {
    frames: Vec<Frame>,
    current: Option<Table>,
    /// Outer containers by depth, created when nesting first goes two deep.
    ancestors: Option<Table>,
}

impl Nest {
    fn push(&mut self, lua: &Lua, table: Table, frame: Frame) -> mlua::Result<()> {
        if let Some(parent) = self.current.replace(table) {
            if self.ancestors.is_none() {
                self.ancestors = Some(lua.create_table()?);
            }
            if let Some(ancestors) = &self.ancestors {
                ancestors.raw_set(self.frames.len(), parent)?;
            }
        }
        self.frames.push(frame);
        Ok(())
    }

    /// Closes the innermost container and makes its parent current again.
    fn pop(&mut self) -> mlua::Result<Table> {
        let done = self.current.take();
        self.frames.pop();
        if let (false, Some(ancestors)) = (self.frames.is_empty(), &self.ancestors) {
            let depth = self.frames.len();
            self.current = Some(ancestors.raw_get(depth)?);
            ancestors.raw_set(depth, Value::Nil)?;
        }
        done.ok_or_else(|| mlua::Error::runtime("cjson: no open container"))
    }
}

/// lua-cjson's `codepoint_to_utf8` (code points past 0x1FFFFF cannot come from \u escapes).
fn utf8(codepoint: u32) -> Vec<u8> {
    match codepoint {
        0..=0x7f => vec![codepoint as u8],
        0x80..=0x7ff => vec![
            0xc0 | (codepoint >> 6) as u8,
            0x80 | (codepoint & 0x3f) as u8,
        ],
        0x800..=0xffff => vec![
            0xe0 | (codepoint >> 12) as u8,
            0x80 | ((codepoint >> 6) & 0x3f) as u8,
            0x80 | (codepoint & 0x3f) as u8,
        ],
        _ => vec![
            0xf0 | (codepoint >> 18) as u8,
            0x80 | ((codepoint >> 12) & 0x3f) as u8,
            0x80 | ((codepoint >> 6) & 0x3f) as u8,
            0x80 | (codepoint & 0x3f) as u8,
        ],
    }
}
