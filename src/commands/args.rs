//! Argument parsing shared by the handlers, with Redis's error texts.

use super::err;
use crate::protocol::{parse_i64_strict, Reply};

/// An integer argument (`ERR value is not an integer or out of range` otherwise).
pub fn int(arg: &[u8]) -> Result<i64, Reply> {
    parse_i64_strict(arg).ok_or_else(|| Reply::error(err::NOT_INTEGER))
}

/// A float argument as Redis reads one: decimal or exponent notation, `inf`/`-inf`, no NaN.
/// INCRBYFLOAT's and HINCRBYFLOAT's increment: see [`parse_long_double`].
pub fn float(arg: &[u8]) -> Result<f64, Reply> {
    parse_long_double(arg).ok_or_else(|| Reply::error(err::NOT_FLOAT))
}

/// Parses a float as Redis's `strtod`/`strtold` callers do: the whole argument must be C's number
/// syntax (decimal, exponent, C99 hex floats like `0x1.8p3`, `inf`/`infinity`), no leading space,
/// no NaN. A number beyond f64's range reads as ±inf and one too small as 0, as `strtod`'s value
/// (see [`parse_double`] for the callers that refuse those).
pub fn parse_float(arg: &[u8]) -> Option<f64> {
    parse_float_erange(arg).map(|(value, _)| value)
}

/// [`parse_float`], and whether `strtod` would report a range error.
fn parse_float_erange(arg: &[u8]) -> Option<(f64, bool)> {
    if arg.first().is_none_or(u8::is_ascii_whitespace) || arg.first() == Some(&0x0b) {
        return None;
    }
    let (value, used, erange) = crate::number_format::strtod_erange(arg);
    (used == arg.len() && !value.is_nan()).then_some((value, erange))
}

/// A float as Redis's `string2d`/`getDoubleFromObject` read one (ZADD scores, GEO arguments,
/// SORT's weights): as [`parse_float`], but a number that overflows to an infinity or underflows
/// to zero is refused (the words `inf`/`-inf` still give an infinity).
pub fn parse_double(arg: &[u8]) -> Option<f64> {
    parse_float_erange(arg).and_then(|(value, erange)| (!erange).then_some(value))
}

/// Parses a number like Redis's `string2ld` (INCRBYFLOAT, HINCRBYFLOAT): as [`parse_float`], but
/// refused where `strtold` reports a range error, that is beyond long double's range (about
/// 1.19e4932) or so small that it reads as 0. A number beyond f64's range but within long
/// double's comes back as ±inf (stmd computes these in f64: docs/compatibility.md, known differences).
pub fn parse_long_double(arg: &[u8]) -> Option<f64> {
    let value = parse_float(arg)?;
    let text = std::str::from_utf8(arg).ok()?;
    let overflow = value.is_infinite() && !text.to_ascii_lowercase().contains("inf");
    if overflow || value == 0.0 {
        if let Some(log10) = decimal_log10(text).or_else(|| hex_log10(text)) {
            // log10 of long double's largest value, and of half its smallest subnormal.
            if !(-4950.74..=4932.075).contains(&log10) {
                return None;
            }
        }
    }
    Some(value)
}

/// A number's mantissa and its signed decimal exponent after `marker` (`e`/`E`, or `p`/`P` for a
/// hex float; 0 when there is none); None when the exponent is not digits. Saturating: an
/// exponent of any length is far out of range either way.
fn split_exponent(number: &str, marker: [char; 2]) -> Option<(&str, i64)> {
    let (mantissa, exponent) = match number.find(marker) {
        Some(at) => (&number[..at], &number[at + 1..]),
        None => (number, ""),
    };
    let (negative, digits) = match exponent.as_bytes().first() {
        Some(b'-') => (true, &exponent[1..]),
        Some(b'+') => (false, &exponent[1..]),
        _ => (false, exponent),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits.bytes().fold(0i64, |n, b| {
        n.saturating_mul(10).saturating_add(i64::from(b - b'0'))
    });
    Some((mantissa, if negative { -magnitude } else { magnitude }))
}

/// log10 of the magnitude of a decimal number (`-12.5e300`), from its digits, for numbers beyond
/// f64's range; None for a zero or a text that is not decimal.
fn decimal_log10(text: &str) -> Option<f64> {
    let unsigned = text.trim_start_matches(['+', '-']);
    let (mantissa, exponent) = split_exponent(unsigned, ['e', 'E'])?;
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: Vec<u8> = int_part.bytes().chain(frac_part.bytes()).collect();
    if !all.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let first = all.iter().position(|&b| b != b'0')?;
    let lead: f64 = std::str::from_utf8(&all[first..(first + 17).min(all.len())])
        .ok()?
        .parse()
        .ok()?;
    let lead_digits = (all.len() - first).min(17) as i32;
    let point = int_part.len() as i64 - 1 - first as i64; // power of ten of the first digit
    Some(exponent.saturating_add(point) as f64 + lead.log10() - f64::from(lead_digits - 1))
}

/// log10 of the magnitude of a C hex float (`-0x1.8p3`), from its digits, for numbers beyond
/// f64's range; None for a zero or a text that is not one.
fn hex_log10(text: &str) -> Option<f64> {
    let unsigned = text.trim_start_matches(['+', '-']);
    let body = unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))?;
    let (mantissa, exponent) = split_exponent(body, ['p', 'P'])?;
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: Vec<u32> = int_part
        .chars()
        .chain(frac_part.chars())
        .map(|c| c.to_digit(16))
        .collect::<Option<_>>()?;
    let first = all.iter().position(|&d| d != 0)?;
    let lead = &all[first..(first + 13).min(all.len())];
    let value = lead.iter().fold(0f64, |n, &d| n * 16.0 + f64::from(d));
    // The lead digits' value is scaled by 16 per hex digit between them and the point.
    let shift = 4 * (int_part.len() as i64 - first as i64 - lead.len() as i64);
    let log2 = exponent.saturating_add(shift) as f64 + value.log2();
    Some(log2 * std::f64::consts::LOG10_2)
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

/// True when `arg` equals the keyword `word` (ASCII case-insensitive). Inlined: called for every
/// option of every request, and out of line it costs STM.CAPTURE's parse ~1,800 instructions
/// (its 11 MSG/REPLY items each compared against the keywords in turn).
#[inline]
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
        assert_eq!(parse_long_double(b"1.5"), Some(1.5));
        assert_eq!(parse_long_double(b"1e400"), Some(f64::INFINITY));
        assert_eq!(parse_long_double(b"-1e4000"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_long_double(b"1e5000"), None);
        assert_eq!(parse_long_double(b"12E29223372036854775807"), None);
        assert_eq!(parse_long_double(b"0.0001e-4947"), None);
        assert_eq!(parse_long_double(b"1e-400"), Some(0.0));
        assert_eq!(parse_long_double(b"0.000"), Some(0.0));
        assert_eq!(parse_long_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_float(b"-1e3"), Some(-1000.0));
        assert_eq!(parse_float(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_float(b"-INF"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_float(b"0x10"), Some(16.0));
        assert_eq!(parse_float(b"-0XfF"), Some(-255.0));
        assert_eq!(parse_float(b"0x"), None);
        for bad in [
            &b""[..],
            b"nan",
            b" 1",
            b"1 ",
            b"abc",
            b"1.2.3",
            b"\x0b1",
            b"1\x00",
        ] {
            assert_eq!(parse_float(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hex_floats_parse_like_strtod() {
        assert_eq!(parse_float(b"0x1p1"), Some(2.0));
        assert_eq!(parse_float(b"0x1.8p3"), Some(12.0));
        assert_eq!(parse_float(b"-0x10"), Some(-16.0));
        assert_eq!(parse_float(b"0X1P-2"), Some(0.25));
        assert_eq!(parse_float(b"+0x.8"), Some(0.5));
        assert_eq!(parse_float(b"0x1e"), Some(30.0));
        assert_eq!(parse_float(b"1.e2"), Some(100.0));
        for bad in [
            &b"0x1p"[..],
            b"0xg",
            b"0x.",
            b"0x1p+",
            b"0x1 ",
            b"x10",
            b"0x1.8p3.5",
        ] {
            assert_eq!(parse_float(bad), None, "{bad:?}");
        }
        // strtod's value beyond f64's range, refused where Redis checks ERANGE.
        assert_eq!(parse_float(b"0x1p99999"), Some(f64::INFINITY));
        assert_eq!(parse_float(b"0x1p-99999"), Some(0.0));
        assert_eq!(parse_double(b"0x1p99999"), None);
        assert_eq!(parse_double(b"-0x1p-99999"), None);
        assert_eq!(parse_double(b"1e400"), None);
        assert_eq!(parse_double(b"1e-400"), None);
        assert_eq!(parse_double(b"0x0p5"), Some(0.0));
        assert_eq!(parse_double(b"0e999"), Some(0.0));
        assert_eq!(parse_double(b"-inf"), Some(f64::NEG_INFINITY));
        // Long double's range (about 2^16384) for INCRBYFLOAT.
        assert_eq!(parse_long_double(b"0x1p2000"), Some(f64::INFINITY));
        assert_eq!(parse_long_double(b"0x1p99999"), None);
        assert_eq!(parse_long_double(b"-0x10.0p16390"), None);
        assert_eq!(parse_long_double(b"0x1p-16000"), Some(0.0));
        assert_eq!(parse_long_double(b"0x1p-99999"), None);
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
