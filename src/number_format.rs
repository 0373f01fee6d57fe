//! C's number text conversions as glibc does them: `printf("%.*g")` and `strtod` (hex floats,
//! `inf`, `nan` and leading zeros included). lua-cjson uses both; the commands read their float
//! arguments with `strtod` as Redis does (`crate::commands::args::parse_float`).

/// `snprintf("%.{precision}g", n)` (precision 1 to 17 here; 0 is treated as 1, as C does).
pub fn format_g(n: f64, precision: usize) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let precision = precision.max(1);
    // The exponent %e would print after rounding to `precision` significant digits.
    let scientific = format!("{:.*e}", precision - 1, n);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let mantissa = strip_fraction_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    } else {
        let decimals = (precision as i32 - 1 - exponent) as usize;
        strip_fraction_zeros(&format!("{n:.decimals$}")).to_string()
    }
}

/// Drops trailing zeros after a decimal point, and the point itself if nothing is left (%g
/// without the `#` flag).
fn strip_fraction_zeros(text: &str) -> &str {
    if !text.contains('.') {
        return text;
    }
    text.trim_end_matches('0').trim_end_matches('.')
}

/// glibc `strtod`: the value and how many bytes it used (0 when no number starts here).
pub fn strtod(text: &[u8]) -> (f64, usize) {
    let (value, used, _) = strtod_erange(text);
    (value, used)
}

/// [`strtod`], and whether it would set `errno` to `ERANGE` as far as Redis looks at it: a
/// number that overflows to an infinity (the words `inf`/`infinity` do not) or underflows to
/// zero (a zero written as such does not).
pub fn strtod_erange(text: &[u8]) -> (f64, usize, bool) {
    let mut start = 0;
    while text
        .get(start)
        .is_some_and(|&b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
    {
        start += 1;
    }
    let mut at = start;
    let negative = text.get(at) == Some(&b'-');
    if matches!(text.get(at), Some(b'+' | b'-')) {
        at += 1;
    }
    let signed = |v: f64| if negative { -v } else { v };
    let rest = &text[at..];
    if starts_with_ignore_case(rest, b"inf") {
        let len = if starts_with_ignore_case(rest, b"infinity") {
            8
        } else {
            3
        };
        return (signed(f64::INFINITY), at + len, false);
    }
    if starts_with_ignore_case(rest, b"nan") {
        let mut len = 3;
        if rest.get(3) == Some(&b'(') {
            let body = rest[4..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            if rest.get(4 + body) == Some(&b')') {
                len = 5 + body;
            }
        }
        return (signed(f64::NAN), at + len, false);
    }
    if rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        return match parse_hex(&rest[2..]) {
            Some((value, len, nonzero)) => (signed(value), at + 2 + len, erange(value, nonzero)),
            // "0x" without hex digits: only the "0" is a number.
            None => (signed(0.0), at + 1, false),
        };
    }
    let digits = |from: usize| {
        text[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut end = at;
    let integer_digits = digits(end);
    end += integer_digits;
    let mut fraction_digits = 0;
    if text.get(end) == Some(&b'.') {
        fraction_digits = digits(end + 1);
        end += 1 + fraction_digits;
    }
    if integer_digits + fraction_digits == 0 {
        return (0.0, 0, false);
    }
    let nonzero = text[at..end].iter().any(|b| (b'1'..=b'9').contains(b));
    if matches!(text.get(end), Some(b'e' | b'E')) {
        let mut exp_at = end + 1;
        if matches!(text.get(exp_at), Some(b'+' | b'-')) {
            exp_at += 1;
        }
        let exp_digits = digits(exp_at);
        if exp_digits > 0 {
            end = exp_at + exp_digits;
        }
    }
    let literal = std::str::from_utf8(&text[at..end]).unwrap_or("0");
    // Rust rejects a trailing '.' before an exponent ("1.e5"); C accepts it.
    let value = literal
        .parse::<f64>()
        .or_else(|_| {
            literal
                .replacen(".e", "e", 1)
                .replacen(".E", "E", 1)
                .parse()
        })
        .unwrap_or(0.0);
    (signed(value), end, erange(value, nonzero))
}

/// strtod's range error: a finite number too large for f64, or a non-zero one too small.
fn erange(value: f64, nonzero_digits: bool) -> bool {
    value.is_infinite() || (value == 0.0 && nonzero_digits)
}

fn starts_with_ignore_case(text: &[u8], prefix: &[u8]) -> bool {
    text.len() >= prefix.len() && text[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The part of a hex float after "0x": digits, an optional point, more digits, an optional
/// binary exponent `p[+-]d+`, how many bytes it used and whether a digit is not zero. Rounds
/// like a u64 to f64 conversion (glibc rounds exactly; the two differ only past 64 significant
/// bits).
fn parse_hex(text: &[u8]) -> Option<(f64, usize, bool)> {
    let mut mantissa: u64 = 0;
    let mut exponent: i64 = 0;
    let mut seen_digit = false;
    let mut seen_point = false;
    let mut at = 0;
    while let Some(&b) = text.get(at) {
        if b == b'.' && !seen_point {
            seen_point = true;
        } else if let Some(digit) = (b as char).to_digit(16) {
            seen_digit = true;
            if mantissa >> 60 == 0 {
                mantissa = mantissa << 4 | u64::from(digit);
                if seen_point {
                    exponent -= 4;
                }
            } else if !seen_point {
                exponent += 4;
            }
        } else {
            break;
        }
        at += 1;
    }
    if !seen_digit {
        return None;
    }
    if matches!(text.get(at), Some(b'p' | b'P')) {
        let mut exp_at = at + 1;
        let negative = text.get(exp_at) == Some(&b'-');
        if matches!(text.get(exp_at), Some(b'+' | b'-')) {
            exp_at += 1;
        }
        let count = text[exp_at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if count > 0 {
            let mut value: i64 = 0;
            for &b in &text[exp_at..exp_at + count] {
                value = (value * 10 + i64::from(b - b'0')).min(1 << 20);
            }
            exponent += if negative { -value } else { value };
            at = exp_at + count;
        }
    }
    let mut value = mantissa as f64;
    let mut remaining = exponent.clamp(-4000, 4000);
    while remaining != 0 && value != 0.0 && value.is_finite() {
        let step = remaining.clamp(-1000, 1000);
        value *= 2f64.powi(step as i32);
        remaining -= step;
    }
    Some((value, at, mantissa != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_c() {
        let cases: &[(f64, usize, &str)] = &[
            (0.1, 14, "0.1"),
            (100.0, 14, "100"),
            (1e14, 14, "1e+14"),
            (12345678901234.0, 14, "12345678901234"),
            (0.0001, 14, "0.0001"),
            (0.00001, 14, "1e-05"),
            (-0.0, 14, "-0"),
            (1.0 / 3.0, 14, "0.33333333333333"),
            (1.5, 1, "2"),
            (2.5, 1, "2"),
            (1e300, 14, "1e+300"),
            (123456.0, 3, "1.23e+05"),
        ];
        for &(n, p, want) in cases {
            assert_eq!(format_g(n, p), want, "{n} at {p}");
        }
    }

    #[test]
    fn strtod_matches_glibc() {
        let cases: &[(&str, f64, usize)] = &[
            ("12abc", 12.0, 2),
            ("-1.5e3,", -1500.0, 6),
            ("1e", 1.0, 1),
            ("0x1A", 26.0, 4),
            ("0x", 0.0, 1),
            ("1.", 1.0, 2),
            ("1.e2", 100.0, 4),
            ("Infinity", f64::INFINITY, 8),
            ("-inf]", f64::NEG_INFINITY, 4),
            ("-", 0.0, 0),
            ("0x1p-2", 0.25, 6),
        ];
        for &(text, value, len) in cases {
            assert_eq!(strtod(text.as_bytes()), (value, len), "{text}");
        }
        assert!(strtod(b"nan(x1)").0.is_nan());
        assert_eq!(strtod(b"nan(x1)").1, 7);
    }
}
