//! RESP: turning request bytes into argument slices (every declared length checked against our
//! limits before its bytes are awaited) and turning [`Reply`] values into RESP2 or RESP3 bytes.

use bytes::{BufMut, BytesMut};
use std::borrow::Cow;

/// Inline commands, and header lines, longer than this without a line end are refused, as Redis
/// does (`PROTO_INLINE_MAX_SIZE`).
pub const MAX_INLINE_SIZE: usize = 64 * 1024;
/// Before a client has authenticated (when a password is required) a request may declare at most
/// this many arguments and this long a bulk string, as Redis, so strangers cannot make us buffer.
const UNAUTHENTICATED_MAX_ARGS: i64 = 10;
const UNAUTHENTICATED_MAX_BULK_LEN: i64 = 16 * 1024;

/// The limits a connection enforces while decoding; read from the live configuration.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_bulk_len: usize,
    pub max_args: usize,
    /// False while a password is required and not yet given: the much smaller limits above apply.
    pub authenticated: bool,
}

/// What the parser found at the head of the read buffer.
#[derive(Debug, PartialEq)]
pub enum Parsed {
    /// A whole multibulk request of this many bytes: its argument ranges were pushed.
    Request(usize),
    /// A whole inline request of this many bytes, with its arguments unquoted and unescaped.
    Inline(usize, Vec<Vec<u8>>),
    /// Not enough bytes yet; `min_total` is a lower bound of the bytes the request needs.
    Incomplete { min_total: usize },
    /// A request that cannot be resynchronised: reply with this error and close.
    Error(String),
}

fn protocol_error(what: &str) -> Parsed {
    Parsed::Error(format!("ERR Protocol error: {what}"))
}

/// Reads one request from the start of `buf`. Multibulk requests push the byte range of each
/// argument into `args`; inline requests return their (unescaped) arguments owned.
pub fn parse_request(buf: &[u8], limits: Limits, args: &mut Vec<(usize, usize)>) -> Parsed {
    args.clear();
    match buf.first() {
        None => Parsed::Incomplete { min_total: 1 },
        Some(b'*') => parse_multibulk(buf, limits, args),
        Some(_) => parse_inline(buf),
    }
}

/// Multibulk requests are walked header by header, each declared length checked against `limits`
/// before its bytes are awaited, so an over-limit length is refused without allocating it. Like
/// Redis, the two bytes after a bulk argument are skipped, not checked.
fn parse_multibulk(buf: &[u8], limits: Limits, args: &mut Vec<(usize, usize)>) -> Parsed {
    let Some((line, mut pos)) = header_line(buf, 0) else {
        return incomplete_header(buf, 0, "mbulk");
    };
    let count = match parse_i64_strict(&line[1..]) {
        Some(n) if n > i64::from(i32::MAX) => return protocol_error("invalid multibulk length"),
        Some(n) if n <= 0 => return Parsed::Request(pos), // `*0` / `*-1`: Redis ignores it
        Some(n) if !limits.authenticated && n > UNAUTHENTICATED_MAX_ARGS => {
            return protocol_error("unauthenticated multibulk length")
        }
        Some(n) if n as u64 > limits.max_args as u64 => {
            return protocol_error("invalid multibulk length")
        }
        Some(n) => n as usize,
        None => return protocol_error("invalid multibulk length"),
    };
    for _ in 0..count {
        let Some((line, after)) = header_line(buf, pos) else {
            return incomplete_header(buf, pos, "bulk");
        };
        if line.first() != Some(&b'$') {
            return Parsed::Error(format!(
                "ERR Protocol error: expected '$', got '{}'",
                char::from(line.first().copied().unwrap_or(b' '))
            ));
        }
        let len = match parse_i64_strict(&line[1..]) {
            Some(n) if !limits.authenticated && n > UNAUTHENTICATED_MAX_BULK_LEN => {
                return protocol_error("unauthenticated bulk length")
            }
            Some(n) if n >= 0 && n as u64 <= limits.max_bulk_len as u64 => n as usize,
            _ => return protocol_error("invalid bulk length"),
        };
        pos = after + len + 2;
        if pos > buf.len() {
            return Parsed::Incomplete { min_total: pos };
        }
        args.push((after, after + len));
    }
    Parsed::Request(pos)
}

/// The header line starting at `start` (without its line end) and where the next one starts. Like
/// Redis, a header ends at `\r` and the byte after it is skipped. `None` when it is not complete.
fn header_line(buf: &[u8], start: usize) -> Option<(&[u8], usize)> {
    let rest = buf.get(start..)?;
    // Header lines are a few bytes: a plain scan beats a vectorised search's set-up here.
    let cr = rest.iter().position(|&b| b == b'\r')?;
    (cr + 2 <= rest.len()).then(|| (&rest[..cr], start + cr + 2))
}

/// A header line still without its line end: refuse it once it is too long to be one.
fn incomplete_header(buf: &[u8], start: usize, what: &str) -> Parsed {
    if buf.len().saturating_sub(start) > MAX_INLINE_SIZE {
        Parsed::Error(format!("ERR Protocol error: too big {what} count string"))
    } else {
        Parsed::Incomplete {
            min_total: buf.len() + 1,
        }
    }
}

fn parse_inline(buf: &[u8]) -> Parsed {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > MAX_INLINE_SIZE {
            return protocol_error("too big inline request");
        }
        return Parsed::Incomplete {
            min_total: buf.len() + 1,
        };
    };
    let line_end = if nl > 0 && buf[nl - 1] == b'\r' {
        nl - 1
    } else {
        nl
    };
    match split_inline(&buf[..line_end]) {
        Some(args) => Parsed::Inline(nl + 1, args),
        None => protocol_error("unbalanced quotes in request"),
    }
}

/// C's `isspace`: what separates inline arguments.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b).to_digit(16).map(|d| d as u8)
}

/// Splits an inline command line into arguments with the rules of Redis's `sdssplitargs`: blanks
/// separate; `"…"` understands `\n \r \t \b \a \xHH` and `\<any>`; `'…'` understands `\'`; a quote
/// may start inside an argument but a closing quote must be followed by a blank or the end.
/// `None` when quotes are unbalanced.
fn split_inline(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && is_blank(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut arg = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        while i < line.len() {
            let c = line[i];
            let next = line.get(i + 1).copied();
            if in_double {
                if c == b'\\' && next == Some(b'x') {
                    let hex = line
                        .get(i + 2)
                        .and_then(|&h| hex_value(h))
                        .zip(line.get(i + 3).and_then(|&l| hex_value(l)));
                    if let Some((high, low)) = hex {
                        arg.push(high * 16 + low);
                        i += 4;
                        continue;
                    }
                }
                if let (b'\\', Some(escaped)) = (c, next) {
                    arg.push(match escaped {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                    i += 2;
                } else if c == b'"' {
                    if next.is_some_and(|n| !is_blank(n)) {
                        return None;
                    }
                    i += 1;
                    in_double = false;
                    break;
                } else {
                    arg.push(c);
                    i += 1;
                }
            } else if in_single {
                if c == b'\\' && next == Some(b'\'') {
                    arg.push(b'\'');
                    i += 2;
                } else if c == b'\'' {
                    if next.is_some_and(|n| !is_blank(n)) {
                        return None;
                    }
                    i += 1;
                    in_single = false;
                    break;
                } else {
                    arg.push(c);
                    i += 1;
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' => break,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => arg.push(c),
                }
                i += 1;
            }
        }
        if in_double || in_single {
            return None;
        }
        args.push(arg);
    }
}

/// Parses a decimal i64 the way Redis's `string2ll` does: optional `-`, no `+`, no spaces, no
/// leading zeros (except "0" itself).
pub fn parse_i64_strict(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(_) => (false, s),
        None => return None,
    };
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || neg) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let d = i64::from(d - b'0');
        v = if neg {
            v.checked_mul(10)?.checked_sub(d)?
        } else {
            v.checked_mul(10)?.checked_add(d)?
        };
    }
    Some(v)
}

/// A reply in protocol-neutral form; [`Reply::encode`] renders it for the connection's RESP version.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`-style status line.
    Status(Cow<'static, str>),
    /// A full error line without the leading `-`, e.g. `ERR syntax error`.
    Error(Cow<'static, str>),
    Int(i64),
    Bulk(bytes::Bytes),
    /// Null bulk string (RESP2 `$-1`, RESP3 `_`).
    Nil,
    /// Null array (RESP2 `*-1`, RESP3 `_`).
    NilArray,
    Array(Vec<Reply>),
    /// RESP3 map; a flat array of alternating keys and values in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// RESP3 set; an array in RESP2.
    Set(Vec<Reply>),
    /// RESP3 double; a bulk string in RESP2.
    Double(f64),
    /// RESP3 boolean; the integer 1 or 0 in RESP2.
    Bool(bool),
    /// RESP3 verbatim text (`=…txt:`); a bulk string in RESP2.
    Verbatim(String),
    /// RESP3 out-of-band push; an array in RESP2.
    Push(Vec<Reply>),
    /// Already encoded bytes, written as they are (used for replies shared by many clients).
    Raw(bytes::Bytes),
    /// RESP3 big number (`(digits`); a bulk string in RESP2.
    BigNum(String),
    /// RESP3 attribute map followed by the reply it describes; RESP2 has no attributes, so only
    /// the reply goes out. Boxed: rare, and it must not make every reply bigger.
    Attribute(Box<(Vec<(Reply, Reply)>, Reply)>),
}

impl Reply {
    pub const OK: Reply = Reply::Status(Cow::Borrowed("OK"));

    pub fn error(text: impl Into<Cow<'static, str>>) -> Reply {
        Reply::Error(text.into())
    }

    pub fn bulk(bytes: impl AsRef<[u8]>) -> Reply {
        Reply::Bulk(bytes::Bytes::copy_from_slice(bytes.as_ref()))
    }

    pub fn bulk_str(text: &'static str) -> Reply {
        Reply::Bulk(bytes::Bytes::from_static(text.as_bytes()))
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends this reply's bytes for protocol version 2 or 3 to `out`.
    pub fn encode(&self, resp3: bool, out: &mut BytesMut) {
        match self {
            Reply::Status(s) => line(out, b'+', s.as_bytes()),
            Reply::Error(s) => line(out, b'-', s.as_bytes()),
            Reply::Int(n) => int_line(out, b':', *n),
            Reply::Bulk(b) => bulk(out, b),
            Reply::Nil => out.put_slice(if resp3 { b"_\r\n" } else { b"$-1\r\n" }),
            Reply::NilArray => out.put_slice(if resp3 { b"_\r\n" } else { b"*-1\r\n" }),
            Reply::Array(items) => {
                int_line(out, b'*', items.len() as i64);
                for item in items {
                    item.encode(resp3, out);
                }
            }
            Reply::Map(pairs) => {
                if resp3 {
                    int_line(out, b'%', pairs.len() as i64);
                } else {
                    int_line(out, b'*', pairs.len() as i64 * 2);
                }
                for (k, v) in pairs {
                    k.encode(resp3, out);
                    v.encode(resp3, out);
                }
            }
            Reply::Set(items) | Reply::Push(items) => {
                let prefix = match (resp3, self) {
                    (true, Reply::Set(_)) => b'~',
                    (true, _) => b'>',
                    (false, _) => b'*',
                };
                int_line(out, prefix, items.len() as i64);
                for item in items {
                    item.encode(resp3, out);
                }
            }
            Reply::Double(d) => {
                let text = format_double(*d);
                if resp3 {
                    line(out, b',', text.as_bytes());
                } else {
                    bulk(out, text.as_bytes());
                }
            }
            Reply::Bool(b) => {
                if resp3 {
                    out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" });
                } else {
                    out.put_slice(if *b { b":1\r\n" } else { b":0\r\n" });
                }
            }
            Reply::Verbatim(text) => {
                if resp3 {
                    int_line(out, b'=', text.len() as i64 + 4);
                    out.put_slice(b"txt:");
                    out.put_slice(text.as_bytes());
                    out.put_slice(b"\r\n");
                } else {
                    bulk(out, text.as_bytes());
                }
            }
            Reply::Raw(bytes) => out.put_slice(bytes),
            Reply::BigNum(digits) => {
                if resp3 {
                    line(out, b'(', digits.as_bytes());
                } else {
                    bulk(out, digits.as_bytes());
                }
            }
            Reply::Attribute(described) => {
                let (attributes, reply) = &**described;
                if resp3 {
                    int_line(out, b'|', attributes.len() as i64);
                    for (k, v) in attributes {
                        k.encode(resp3, out);
                        v.encode(resp3, out);
                    }
                }
                reply.encode(resp3, out);
            }
        }
    }
}

/// The reply that `bytes` encode (either protocol) and how many bytes it spans; `None` when they
/// do not start with one whole reply or hold a type [`Reply`] has no variant for (a RESP3 big
/// number or attribute). Scripts use it to see inside [`Reply::Raw`], which stream entries and
/// RESP3 doubles are built as. Not `redis_protocol`'s decoders (used for cluster peers' RESP2
/// answers): each reads one protocol, and a raw reply may hold either (`$-1` is an error to the
/// RESP3 one); its RESP3 sets and maps would also drop duplicates and order, and its frames would
/// still need converting into a [`Reply`].
pub fn decode_reply(bytes: &[u8]) -> Option<(Reply, usize)> {
    let end = memchr::memmem::find(bytes, b"\r\n")?;
    let (kind, text) = (*bytes.first()?, &bytes[1..end]);
    let mut at = end + 2;
    let number = || -> Option<i64> { std::str::from_utf8(text).ok()?.parse().ok() };
    let string = || String::from_utf8_lossy(text).into_owned();
    let items = |count: i64, at: &mut usize| -> Option<Vec<Reply>> {
        let mut items = Vec::new();
        for _ in 0..count {
            let (item, used) = decode_reply(&bytes[*at..])?;
            items.push(item);
            *at += used;
        }
        Some(items)
    };
    let reply = match kind {
        b'+' => Reply::Status(string().into()),
        b'-' => Reply::Error(string().into()),
        b':' => Reply::Int(number()?),
        b'$' | b'!' | b'=' if text == b"-1" => Reply::Nil,
        b'$' | b'!' | b'=' => {
            let len = usize::try_from(number()?).ok()?;
            let body = bytes.get(at..at.checked_add(len)?)?;
            at += len + 2;
            if bytes.get(at - 2..at)? != b"\r\n" {
                return None;
            }
            match kind {
                b'$' => Reply::bulk(body),
                b'!' => Reply::Error(String::from_utf8_lossy(body).into_owned().into()),
                _ => Reply::Verbatim(String::from_utf8_lossy(body.get(4..)?).into_owned()),
            }
        }
        b'*' if text == b"-1" => Reply::NilArray,
        b'*' => Reply::Array(items(number()?, &mut at)?),
        b'~' => Reply::Set(items(number()?, &mut at)?),
        b'>' => Reply::Push(items(number()?, &mut at)?),
        b'%' => {
            let mut flat = items(number()?.checked_mul(2)?, &mut at)?.into_iter();
            Reply::Map(std::iter::from_fn(|| Some((flat.next()?, flat.next()?))).collect())
        }
        b',' => Reply::Double(std::str::from_utf8(text).ok()?.parse().ok()?),
        b'#' => Reply::Bool(text == b"t"),
        b'_' => Reply::Nil,
        _ => return None,
    };
    Some((reply, at))
}

/// A status or error line. Line ends inside `text` (an unknown command's name echoed back, say)
/// become spaces, as Redis's formatted errors do, so a client can never break the reply stream.
fn line(out: &mut BytesMut, prefix: u8, text: &[u8]) {
    out.reserve(text.len() + 3);
    out.put_u8(prefix);
    if memchr::memchr2(b'\r', b'\n', text).is_none() {
        out.put_slice(text);
    } else {
        out.extend(text.iter().map(|&b| match b {
            b'\r' | b'\n' => b' ',
            b => b,
        }));
    }
    out.put_slice(b"\r\n");
}

pub(crate) fn int_line(out: &mut BytesMut, prefix: u8, n: i64) {
    let mut buf = itoa::Buffer::new();
    line(out, prefix, buf.format(n).as_bytes());
}

pub(crate) fn bulk(out: &mut BytesMut, data: &[u8]) {
    int_line(out, b'$', data.len() as i64);
    out.reserve(data.len() + 2);
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

/// Formats a double the way Redis replies with one: `inf`, `-inf`, `nan`, otherwise the shortest
/// representation that reads back to the same value (`%.17g` semantics without trailing noise).
pub fn format_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d.is_nan() {
        return "nan".into();
    }
    if d == d.trunc() && d.abs() < 1e17 {
        // Integral values print without a fraction, as Redis does ("3", not "3.0").
        return format!("{}", d as i64);
    }
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(d);
    // ryu prints exponents as "1e300"; Redis (%.17g) prints "1e+300".
    match s.find('e') {
        Some(pos) if !s[pos + 1..].starts_with('-') => format!("{}e+{}", &s[..pos], &s[pos + 1..]),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_bulk_len: 512 * 1024 * 1024,
        max_args: 1024 * 1024,
        authenticated: true,
    };

    fn parse(buf: &[u8]) -> (Parsed, Vec<Vec<u8>>) {
        let mut ranges = Vec::new();
        let parsed = parse_request(buf, LIMITS, &mut ranges);
        let args = ranges.iter().map(|&(s, e)| buf[s..e].to_vec()).collect();
        (parsed, args)
    }

    fn error(text: &str) -> Parsed {
        Parsed::Error(format!("ERR Protocol error: {text}"))
    }

    #[test]
    fn encoded_replies_decode_to_themselves() {
        let replies = [
            Reply::OK,
            Reply::error("ERR no"),
            Reply::Int(-42),
            Reply::bulk(b"a\r\nb"),
            Reply::Nil,
            Reply::NilArray,
            Reply::Array(vec![Reply::bulk(b"x"), Reply::Array(vec![Reply::Int(1)])]),
            Reply::Map(vec![(Reply::bulk(b"k"), Reply::Double(1.5))]),
            Reply::Set(vec![Reply::bulk(b"m")]),
            Reply::Bool(true),
            Reply::Verbatim("text".into()),
        ];
        for reply in replies {
            for resp3 in [false, true] {
                let mut out = BytesMut::new();
                reply.encode(resp3, &mut out);
                let (decoded, used) = decode_reply(&out).expect("decodes");
                assert_eq!(used, out.len(), "{reply:?}");
                let mut again = BytesMut::new();
                decoded.encode(resp3, &mut again);
                assert_eq!(again, out, "{reply:?} resp3={resp3}");
            }
        }
    }

    #[test]
    fn partial_or_unknown_replies_do_not_decode() {
        for bytes in [
            &b"$5\r\nab"[..],
            b"*2\r\n:1\r\n",
            b"(123\r\n",
            b"$3\r\nabcde",
            b"",
            b":x\r\n",
        ] {
            assert_eq!(decode_reply(bytes), None, "{bytes:?}");
        }
    }

    #[test]
    fn multibulk_is_decoded_into_argument_ranges() {
        let (parsed, args) = parse(b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n+extra");
        assert_eq!(parsed, Parsed::Request(22));
        assert_eq!(args, vec![b"GET".to_vec(), b"key".to_vec()]);
    }

    #[test]
    fn every_prefix_of_a_request_is_incomplete() {
        let req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nal\r\n";
        for cut in 0..req.len() {
            let (parsed, _) = parse(&req[..cut]);
            assert!(
                matches!(parsed, Parsed::Incomplete { .. }),
                "cut {cut}: {parsed:?}"
            );
        }
        let (parsed, args) = parse(req);
        assert_eq!(parsed, Parsed::Request(req.len()));
        assert_eq!(args[2], b"v\r\nal".to_vec());
    }

    #[test]
    fn over_limit_lengths_are_refused_before_the_bytes_arrive() {
        let small = Limits {
            max_bulk_len: 10,
            max_args: 3,
            authenticated: true,
        };
        let mut ranges = Vec::new();
        let mut check = |request: &[u8], expected: Parsed| {
            assert_eq!(parse_request(request, small, &mut ranges), expected);
        };
        check(b"*1\r\n$11\r\n", error("invalid bulk length"));
        check(b"*4\r\n", error("invalid multibulk length"));
        check(b"*1\r\n$-5\r\n", error("invalid bulk length"));
        check(b"*x\r\n", error("invalid multibulk length"));
        check(b"*01\r\n", error("invalid multibulk length"));
        check(b"*3000000000\r\n", error("invalid multibulk length"));
    }

    #[test]
    fn strangers_get_redis_unauthenticated_limits() {
        let stranger = Limits {
            authenticated: false,
            ..LIMITS
        };
        let mut ranges = Vec::new();
        assert_eq!(
            parse_request(b"*11\r\n", stranger, &mut ranges),
            error("unauthenticated multibulk length")
        );
        assert!(matches!(
            parse_request(b"*10\r\n$16384\r\n", stranger, &mut ranges),
            Parsed::Incomplete { .. }
        ));
        assert_eq!(
            parse_request(b"*1\r\n$16385\r\n", stranger, &mut ranges),
            error("unauthenticated bulk length")
        );
    }

    #[test]
    fn header_lines_end_at_carriage_return_and_have_a_size_limit() {
        assert_eq!(
            parse(b"*1\n$4\r\nPING\r\n").0,
            error("invalid multibulk length")
        );
        let long = [&b"*"[..], &[b'1'; MAX_INLINE_SIZE + 1]].concat();
        assert_eq!(parse(&long).0, error("too big mbulk count string"));
        let long = [&b"*1\r\n$"[..], &[b'1'; MAX_INLINE_SIZE + 1]].concat();
        assert_eq!(parse(&long).0, error("too big bulk count string"));
    }

    #[test]
    fn bulk_arguments_are_taken_by_length_like_redis() {
        // Redis skips the two bytes after a bulk argument without checking them.
        let (parsed, args) = parse(b"*1\r\n$4\r\nPINGXY");
        assert_eq!(parsed, Parsed::Request(14));
        assert_eq!(args, vec![b"PING".to_vec()]);
        // An empty line where a bulk header belongs: Redis names the byte it found, as a space.
        assert_eq!(parse(b"*1\r\n\r\n").0, error("expected '$', got ' '"));
    }

    #[test]
    fn line_ends_inside_errors_become_spaces() {
        let reply = Reply::error("ERR unknown command 'a\r\nb'");
        assert_eq!(
            encoded(&reply, false),
            b"-ERR unknown command 'a  b'\r\n".to_vec()
        );
    }

    #[test]
    fn non_bulk_argument_is_a_protocol_error() {
        let (parsed, _) = parse(b"*1\r\n:5\r\n");
        assert_eq!(parsed, error("expected '$', got ':'"));
    }

    fn inline(line: &[u8]) -> Vec<Vec<u8>> {
        match parse(line).0 {
            Parsed::Inline(used, args) => {
                assert_eq!(used, line.len(), "{line:?}");
                args
            }
            other => panic!("{line:?}: {other:?}"),
        }
    }

    #[test]
    fn inline_commands_split_like_sdssplitargs() {
        let (parsed, _) = parse(b"SET  k \"hello world\"\r\nPING");
        assert_eq!(
            parsed,
            Parsed::Inline(
                22,
                vec![b"SET".to_vec(), b"k".to_vec(), b"hello world".to_vec()]
            )
        );
        assert_eq!(inline(b"PING\n"), vec![b"PING".to_vec()]);
        assert_eq!(inline(b"\r\n"), Vec::<Vec<u8>>::new());
        assert_eq!(inline(b"ECHO \"a\\x41\\n\\\"\"\r\n")[1], b"aA\n\"".to_vec());
        assert_eq!(inline(b"ECHO 'it\\'s'\r\n")[1], b"it's".to_vec());
        assert_eq!(
            parse(b"ECHO a\"b c\"d\r\n").0,
            error("unbalanced quotes in request")
        );
        assert_eq!(inline(b"ECHO a\"b c\"\r\n")[1], b"ab c".to_vec());
        assert!(matches!(parse(b"PING").0, Parsed::Incomplete { .. }));
        assert_eq!(
            parse(b"SET \"x\r\n").0,
            error("unbalanced quotes in request")
        );
        assert_eq!(
            parse(b"SET \"x\"y\r\n").0,
            error("unbalanced quotes in request")
        );
    }

    #[test]
    fn strict_integers_follow_redis() {
        assert_eq!(parse_i64_strict(b"0"), Some(0));
        assert_eq!(parse_i64_strict(b"-12"), Some(-12));
        assert_eq!(parse_i64_strict(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64_strict(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"-0",
            b" 1",
            b"1.0",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_i64_strict(bad), None, "{bad:?}");
        }
    }

    fn encoded(reply: &Reply, resp3: bool) -> Vec<u8> {
        let mut out = BytesMut::new();
        reply.encode(resp3, &mut out);
        out.to_vec()
    }

    #[test]
    fn replies_encode_exactly_for_each_protocol() {
        let cases: Vec<(Reply, &[u8], &[u8])> = vec![
            (Reply::OK, b"+OK\r\n", b"+OK\r\n"),
            (
                Reply::error("ERR syntax error"),
                b"-ERR syntax error\r\n",
                b"-ERR syntax error\r\n",
            ),
            (Reply::Int(-3), b":-3\r\n", b":-3\r\n"),
            (Reply::bulk(b"ab"), b"$2\r\nab\r\n", b"$2\r\nab\r\n"),
            (Reply::Nil, b"$-1\r\n", b"_\r\n"),
            (Reply::NilArray, b"*-1\r\n", b"_\r\n"),
            (
                Reply::Map(vec![(Reply::bulk(b"a"), Reply::Int(1))]),
                b"*2\r\n$1\r\na\r\n:1\r\n",
                b"%1\r\n$1\r\na\r\n:1\r\n",
            ),
            (
                Reply::Set(vec![Reply::bulk(b"x")]),
                b"*1\r\n$1\r\nx\r\n",
                b"~1\r\n$1\r\nx\r\n",
            ),
            (Reply::Double(1.5), b"$3\r\n1.5\r\n", b",1.5\r\n"),
            (Reply::Bool(true), b":1\r\n", b"#t\r\n"),
            (
                Reply::Verbatim("hi".into()),
                b"$2\r\nhi\r\n",
                b"=6\r\ntxt:hi\r\n",
            ),
            (
                Reply::Push(vec![Reply::Int(1)]),
                b"*1\r\n:1\r\n",
                b">1\r\n:1\r\n",
            ),
        ];
        for (reply, resp2, resp3) in cases {
            assert_eq!(encoded(&reply, false), resp2, "{reply:?} in RESP2");
            assert_eq!(encoded(&reply, true), resp3, "{reply:?} in RESP3");
        }
    }

    #[test]
    fn doubles_format_like_redis() {
        assert_eq!(format_double(3.0), "3");
        assert_eq!(format_double(-0.5), "-0.5");
        assert_eq!(format_double(f64::INFINITY), "inf");
        assert_eq!(format_double(f64::NEG_INFINITY), "-inf");
        assert_eq!(format_double(1e300), "1e+300");
        assert_eq!(format_double(10.5), "10.5");
    }
}
