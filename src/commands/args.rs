//! Argument parsing shared by the handlers, with Redis's error texts.

use super::err;
use crate::protocol::{parse_i64_strict, Reply};

/// An integer argument (`ERR value is not an integer or out of range` otherwise).
pub fn int(arg: &[u8]) -> Result<i64, Reply> {
    parse_i64_strict(arg).ok_or_else(|| Reply::error(err::NOT_INTEGER))
}

/// A float argument as Redis reads one: decimal or exponent notation, `inf`/`-inf`, no NaN.
pub fn float(arg: &[u8]) -> Result<f64, Reply> {
    parse_float(arg).ok_or_else(|| Reply::error(err::NOT_FLOAT))
}

/// Parses a float like Redis's `string2ld`/`strtold` callers: no surrounding spaces, no NaN.
pub fn parse_float(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.is_empty()
        || text.starts_with(char::is_whitespace)
        || text.ends_with(char::is_whitespace)
    {
        return None;
    }
    let value = match text.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => match text.parse::<f64>() {
            Ok(v) => v,
            Err(_) => parse_hex_integer(text)?,
        },
    };
    (!value.is_nan()).then_some(value)
}

/// `0x10`, `-0X1f`: the hexadecimal integers `strtold` accepts (hex fractions are not supported).
fn parse_hex_integer(text: &str) -> Option<f64> {
    let (sign, rest) = match text.as_bytes().first()? {
        b'-' => (-1.0, &text[1..]),
        b'+' => (1.0, &text[1..]),
        _ => (1.0, text),
    };
    let digits = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let value = digits.bytes().fold(0.0f64, |acc, b| {
        acc * 16.0 + f64::from((b as char).to_digit(16).unwrap_or(0))
    });
    Some(sign * value)
}

/// A count that must not be negative; like Redis's `getPositiveLongFromObjectOrReply`, a
/// non-integer gets the same error as a negative number.
pub fn count(arg: &[u8]) -> Result<usize, Reply> {
    parse_i64_strict(arg)
        .filter(|n| *n >= 0)
        .map(|n| n as usize)
        .ok_or_else(|| Reply::error("ERR value is out of range, must be positive"))
}

/// A count that must not be negative, answered with the option's own `error` when it is negative
/// or not an integer at all (Redis's `getPositiveLongFromObjectOrReply` with a message):
/// `ERR COUNT can't be negative`.
pub fn non_negative(arg: &[u8], error: &'static str) -> Result<i64, Reply> {
    parse_i64_strict(arg)
        .filter(|n| *n >= 0)
        .ok_or_else(|| Reply::error(error))
}

/// True when `arg` equals the keyword `word` (ASCII case-insensitive).
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// Walks the arguments after the fixed ones: keywords and their values.
pub struct Cursor<'a, 'b> {
    args: &'a [&'b [u8]],
    pos: usize,
}

impl<'a, 'b> Cursor<'a, 'b> {
    pub fn new(args: &'a [&'b [u8]], start: usize) -> Self {
        Cursor { args, pos: start }
    }

    pub fn is_done(&self) -> bool {
        self.pos >= self.args.len()
    }

    /// Index of the next argument.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.args.len().saturating_sub(self.pos)
    }

    /// The next argument, or a syntax error when there is none.
    pub fn next_arg(&mut self) -> Result<&'b [u8], Reply> {
        let arg = self
            .args
            .get(self.pos)
            .copied()
            .ok_or_else(|| Reply::error(err::SYNTAX))?;
        self.pos += 1;
        Ok(arg)
    }

    pub fn next_int(&mut self) -> Result<i64, Reply> {
        int(self.next_arg()?)
    }

    /// Consumes the next argument when it is the keyword `word`.
    pub fn eat(&mut self, word: &str) -> bool {
        match self.args.get(self.pos) {
            Some(arg) if is(arg, word) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_parse_like_redis() {
        assert_eq!(parse_float(b"1.5"), Some(1.5));
        assert_eq!(parse_float(b"-1e3"), Some(-1000.0));
        assert_eq!(parse_float(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_float(b"-INF"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_float(b"0x10"), Some(16.0));
        assert_eq!(parse_float(b"-0XfF"), Some(-255.0));
        assert_eq!(parse_float(b"0x"), None);
        for bad in [&b""[..], b"nan", b" 1", b"1 ", b"abc", b"1.2.3"] {
            assert_eq!(parse_float(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cursor_reads_keywords_and_values() {
        let args: Vec<&[u8]> = vec![b"set", b"k", b"v", b"ex", b"10"];
        let mut c = Cursor::new(&args, 3);
        assert!(!c.eat("px"));
        assert!(c.eat("EX"));
        assert_eq!(c.next_int(), Ok(10));
        assert!(c.is_done());
        assert_eq!(c.next_arg(), Err(Reply::error(err::SYNTAX)));
    }
}
