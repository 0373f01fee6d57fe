//! A document's compact text straight from the text a client sent, without building its tree:
//! one pass that checks the JSON and writes what parsing it with serde_json and printing it
//! back ([`super::to_text`]) would give. A document is stored as this text until a command needs
//! its tree ([`super::Doc`]), so a root JSON.SET costs a scan and a copy instead of a tree's
//! allocations, and a root JSON.GET answers with the stored bytes.
//!
//! The scan takes the shortcut only where it knows serde_json's result exactly and gives up
//! (None) everywhere else, leaving the input to the full parse: any invalid input (serde_json's
//! parse then gives the exact error text), an object naming a member twice (serde_json keeps the
//! first one's place and the last one's value), a member name with an escape, an unpaired
//! surrogate escape, and nesting deeper than [`NEST`]. What it rewrites: whitespace between
//! tokens goes, `\/` becomes `/`, a `\u` escape (or a surrogate pair of them) becomes the
//! character or serde_json's escape of it, and a number serde_json would print otherwise is
//! printed as the tree would hold it (`1e2` is `100.0`, `-0` is `-0.0`). The rest of the input
//! is copied as it is, in runs.
//!
//! The scan is one loop over the tokens (no recursion: open containers are a bit stack);
//! strings are searched 16 bytes at a time for the bytes that end a plain run, and integers
//! eight digits at a time, since a document's cost is its tokens and its string bytes.

/// The deepest nesting the scan follows; deeper documents take the full parse.
const NEST: usize = 64;

/// The compact text serde_json would print for `input`, or None where the scan leaves the input
/// to the full parse (see the module doc), which includes input that is not UTF-8.
pub fn compact(input: &[u8]) -> Option<Vec<u8>> {
    // Names are kept by 32-bit position.
    if u32::try_from(input.len()).is_err() {
        return None;
    }
    let mut scan = Scan {
        s: input,
        out: Vec::new(),
        copied: 0,
        names: Vec::new(),
        high: 0,
    };
    if scan.document()? != input.len() {
        return None;
    }
    // Outside strings only ASCII was taken; inside them, UTF-8 is checked only when a byte
    // above 0x7f was seen (most documents are ASCII, and this check would be a second pass).
    if scan.high >= 0x80 {
        std::str::from_utf8(input).ok()?;
    }
    if scan.copied == 0 {
        // Nothing was rewritten: the input is its own compact text.
        return Some(input.to_vec());
    }
    scan.out.extend_from_slice(&input[scan.copied..]);
    Some(scan.out)
}

struct Scan<'a> {
    s: &'a [u8],
    /// The text so far, up to input position `copied`; what follows `copied` is copied on the
    /// next rewrite or at the end.
    out: Vec<u8>,
    copied: usize,
    /// The member names of the open objects (names without escapes); allocated at the first
    /// object.
    names: Vec<Name>,
    /// Has its top bit set when a string byte looked at (or one right after a string, see
    /// [`plain_run`]) was not ASCII.
    high: u8,
}

/// A member name: where it starts in the input and its length (names of different lengths
/// differ without a look at their bytes).
#[derive(Clone, Copy)]
struct Name {
    from: u32,
    len: u32,
}

/// JSON's insignificant whitespace.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl Scan<'_> {
    /// Puts `with` in the place of input `from..to`.
    fn rewrite(&mut self, from: usize, to: usize, with: &[u8]) {
        self.flush(from);
        self.out.extend_from_slice(with);
        self.copied = to;
    }

    /// Appends the input from `copied` to `to` to the output. A run of up to 16 bytes (between
    /// two dropped spaces, the common rewrite) is copied as 16 fixed bytes and cut back: two
    /// moves instead of a call.
    fn flush(&mut self, to: usize) {
        if self.out.capacity() == 0 {
            self.out.reserve(self.s.len());
        }
        let run = to - self.copied;
        match self.s.get(self.copied..self.copied + 16) {
            Some(chunk) if run <= 16 => {
                let len = self.out.len();
                let mut fixed = [0u8; 16];
                fixed.copy_from_slice(chunk);
                self.out.extend_from_slice(&fixed);
                self.out.truncate(len + run);
            }
            _ => self.out.extend_from_slice(&self.s[self.copied..to]),
        }
    }

    /// The position after any whitespace at `at`, the whitespace dropped from the output. Inline
    /// and one comparison in the common case: compact text has none, and the next byte is then
    /// a token's, above the space.
    #[inline(always)]
    fn space(&mut self, at: usize) -> usize {
        match self.s.get(at) {
            Some(&b) if b <= b' ' => self.drop_space(at),
            _ => at,
        }
    }

    #[inline(never)]
    fn drop_space(&mut self, from: usize) -> usize {
        let mut at = from;
        while self.s.get(at).is_some_and(|&b| is_space(b)) {
            at += 1;
        }
        if at > from {
            self.flush(from);
            self.copied = at;
        }
        at
    }

    /// The whole document: the position after its value and any whitespace around it, or None
    /// for what the scan leaves to the full parse. One loop over the tokens with the open
    /// containers on a bit stack (no recursion, no per-value call): `'value` starts at a value,
    /// the inner loop follows the end of one (a `,` leads to the next value, a closing bracket
    /// ends its container).
    fn document(&mut self) -> Option<usize> {
        let s = self.s;
        // Bit 0 is the innermost open container: set for an object, clear for an array.
        let mut objects = 0u64;
        let mut depth = 0usize;
        // Per open object (by depth), where its names start in `names`.
        let mut firsts = [0u32; NEST + 1];
        let mut at = self.space(0);
        'value: loop {
            match *s.get(at)? {
                open @ (b'{' | b'[') => {
                    if depth == NEST {
                        return None;
                    }
                    at = self.space(at + 1);
                    // `}` and `]` are two past their opening brackets.
                    if s.get(at) == Some(&(open + 2)) {
                        at += 1;
                    } else {
                        depth += 1;
                        objects = objects << 1 | u64::from(open == b'{');
                        if open == b'{' {
                            firsts[depth] = self.names.len() as u32;
                            at = self.member(at)?;
                        }
                        continue 'value;
                    }
                }
                b'"' => at = self.string(at + 1)?,
                b'-' | b'0'..=b'9' => at = self.number(at)?,
                b't' => at = word(s, at, b"true")?,
                b'f' => at = word(s, at, b"false")?,
                b'n' => at = word(s, at, b"null")?,
                _ => return None,
            }
            loop {
                at = self.space(at);
                if depth == 0 {
                    return Some(at);
                }
                let object = objects & 1 == 1;
                match (*s.get(at)?, object) {
                    (b',', _) => {
                        at = self.space(at + 1);
                        if object {
                            at = self.member(at)?;
                        }
                        continue 'value;
                    }
                    (b'}', true) => {
                        let first = firsts[depth] as usize;
                        if repeats(s, &mut self.names[first..]) {
                            return None;
                        }
                        self.names.truncate(first);
                    }
                    (b']', false) => {}
                    _ => return None,
                }
                at += 1;
                depth -= 1;
                objects >>= 1;
            }
        }
    }

    /// A member's name and its `:`, from the name's opening quote: the position of its value.
    /// A name takes no escape (serde_json's map would hold it unescaped: the repeat check could
    /// not compare it as written). Inline: it is the hottest step of a document of objects.
    #[inline(always)]
    fn member(&mut self, at: usize) -> Option<usize> {
        let s = self.s;
        if s.get(at) != Some(&b'"') {
            return None;
        }
        let from = at + 1;
        let end = plain_run(s, from, &mut self.high);
        if s.get(end) != Some(&b'"') {
            return None;
        }
        if self.names.capacity() == 0 {
            self.names.reserve(32);
        }
        self.names.push(Name {
            from: from as u32,
            len: (end - from) as u32,
        });
        let at = self.space(end + 1);
        if s.get(at) != Some(&b':') {
            return None;
        }
        Some(self.space(at + 1))
    }

    /// A string value from the byte after its opening quote: the position after its closing one.
    fn string(&mut self, mut at: usize) -> Option<usize> {
        loop {
            at = plain_run(self.s, at, &mut self.high);
            match *self.s.get(at)? {
                b'"' => return Some(at + 1),
                b'\\' => at = self.escape(at)?,
                // A control character.
                _ => return None,
            }
        }
    }

    /// An escape in a string value, from its backslash: the position after it.
    fn escape(&mut self, from: usize) -> Option<usize> {
        let s = self.s;
        match *s.get(from + 1)? {
            // Printed as they are written.
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => Some(from + 2),
            b'/' => {
                self.rewrite(from, from + 2, b"/");
                Some(from + 2)
            }
            b'u' => {
                let code = hex4(s.get(from + 2..from + 6)?)?;
                let (c, to) = match code {
                    // A high surrogate takes the low one of a `\u` escape right after it (what
                    // JSON writers such as Python's `ensure_ascii` give for a character above
                    // U+FFFF); an unpaired one is an error, left to the full parse.
                    0xd800..=0xdbff => {
                        if s.get(from + 6..from + 8)? != b"\\u" {
                            return None;
                        }
                        let low = hex4(s.get(from + 8..from + 12)?)?;
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return None;
                        }
                        let code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
                        (char::from_u32(code)?, from + 12)
                    }
                    _ => (char::from_u32(code)?, from + 6),
                };
                let mut buf = [0u8; 6];
                let with = escaped(c, &mut buf);
                self.rewrite(from, to, with);
                Some(to)
            }
            _ => None,
        }
    }

    /// A number from its first byte: the position after it. An integer of up to 18 digits is
    /// kept as written (it fits an i64 and prints so); any other form is printed as the tree
    /// would hold it.
    fn number(&mut self, from: usize) -> Option<usize> {
        let s = self.s;
        let mut at = from + usize::from(s[from] == b'-');
        let digits_from = at;
        match s.get(at) {
            Some(b'0') => at += 1,
            Some(b'1'..=b'9') => at = digits(s, at + 1),
            _ => return None,
        }
        let digits = at - digits_from;
        let mut integer = true;
        if s.get(at) == Some(&b'.') {
            integer = false;
            at = some_digits(s, at + 1)?;
        }
        if matches!(s.get(at), Some(b'e' | b'E')) {
            integer = false;
            at += 1;
            if matches!(s.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            at = some_digits(s, at)?;
        }
        let token = &s[from..at];
        // Up to 18 digits always fit an i64 and print as written; `-0` is a float.
        if integer && digits <= 18 && token != b"-0" {
            return Some(at);
        }
        let n: super::Json = serde_json::from_slice(token).ok()?;
        let text = super::to_text(&n, super::Layout::default());
        if text == token {
            // Printed as written (`0.5`, `1.0`): the same bytes parse to the same number.
            return Some(at);
        }
        // serde_json's float parsing is not always correctly rounded: the tree later parsed
        // from this text must hold the very number the token gives, else the full parse keeps it.
        if serde_json::from_slice::<super::Json>(&text).ok()? != n {
            return None;
        }
        self.rewrite(from, at, &text);
        Some(at)
    }
}

/// The word `w` (`true`, `false`, `null`) at `at`: the position after it.
fn word(s: &[u8], at: usize, w: &[u8]) -> Option<usize> {
    let end = at + w.len();
    (s.get(at..end)? == w).then_some(end)
}

/// The position after the digits from `at`: eight bytes at a time while eight are left, as a
/// little-endian word. Xor with `0` maps digits to 0..=9; adding 0x76 to a byte's low seven bits
/// (no carry leaves the byte) sets its top bit exactly when it is above 9, and a byte whose own
/// top bit is set is no digit either.
fn digits(s: &[u8], mut at: usize) -> usize {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = s.get(at..at + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let x = u64::from_le_bytes(bytes) ^ 0x3030_3030_3030_3030;
        let other = (((x & LOW) + 0x7676_7676_7676_7676) | x) & HIGH;
        if other != 0 {
            return at + (other.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while s.get(at).is_some_and(u8::is_ascii_digit) {
        at += 1;
    }
    at
}

/// As [`digits`], but at least one.
fn some_digits(s: &[u8], at: usize) -> Option<usize> {
    let end = digits(s, at);
    (end > at).then_some(end)
}

/// Where the run of bytes from `at` that a string holds as they are (no quote, backslash or
/// control character) ends; `high` gets its top bit set when a byte looked at is not ASCII. Up
/// to 15 bytes after the run's end may be looked at too: they are string bytes scanned later or
/// bytes outside strings, where the scan refuses anything not ASCII, so a flag they raise only
/// costs a UTF-8 check and never skips one.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn plain_run(s: &[u8], mut at: usize, high: &mut u8) -> usize {
    while let Some(chunk) = s.get(at..at + 16) {
        let (stop, not_ascii) = stops16(chunk);
        if not_ascii {
            *high |= 0x80;
        }
        if stop != 0 {
            return at + stop.trailing_zeros() as usize;
        }
        at += 16;
    }
    plain_tail(s, at, high)
}

/// For 16 bytes of a string: the mask of those that end a plain run (bit i for byte i), and
/// whether any is not ASCII. Four SSE2 compares and two mask moves for the 16.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn stops16(chunk: &[u8]) -> (u32, bool) {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    assert_eq!(chunk.len(), 16);
    // SAFETY: this is compiled only for targets with SSE2 (the cfg above), so every CPU the
    // binary runs on has these instructions; `_mm_loadu_si128` reads 16 bytes from the start of
    // `chunk`, which holds 16 (asserted), and takes any alignment. The rest are register
    // operations.
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        // A byte is a control character when the unsigned minimum with 0x1f leaves it as it is.
        let stops = _mm_or_si128(
            _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
            ),
            _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v),
        );
        (_mm_movemask_epi8(stops) as u32, _mm_movemask_epi8(v) != 0)
    }
}

/// [`plain_run`] eight bytes at a time, as a little-endian word: a byte equals `"` or `\\` when
/// the word xor that byte repeated has a zero byte there, and a byte is below 0x20 when
/// subtracting 0x20 borrows into its top bit while its own top bit is clear (the classic
/// has-zero-byte test). The test may also flag a byte after a true match (the borrow runs on),
/// never one before it, so the lowest flagged byte is the first match.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn plain_run(s: &[u8], mut at: usize, high: &mut u8) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGH;
    while let Some(word) = s.get(at..at + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let w = u64::from_le_bytes(bytes);
        if w & HIGH != 0 {
            *high |= 0x80;
        }
        let found = below(w ^ (ONES * u64::from(b'"')), 1)
            | below(w ^ (ONES * u64::from(b'\\')), 1)
            | below(w, 0x20);
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    plain_tail(s, at, high)
}

/// [`plain_run`]'s last bytes, one at a time.
fn plain_tail(s: &[u8], mut at: usize, high: &mut u8) -> usize {
    while let Some(&b) = s.get(at) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            break;
        }
        *high |= b;
        at += 1;
    }
    at
}

/// Four hex digits, either case, as serde_json reads them.
fn hex4(h: &[u8]) -> Option<u32> {
    h.iter().try_fold(0u32, |n, &d| {
        let v = (d as char).to_digit(16)?;
        Some(n * 16 + v)
    })
}

/// How serde_json prints `c` inside a string: its short escape, `\u00xx` for another control
/// character, else the character itself.
fn escaped(c: char, buf: &mut [u8; 6]) -> &[u8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match c {
        '"' => b"\\\"",
        '\\' => b"\\\\",
        '\u{8}' => b"\\b",
        '\u{c}' => b"\\f",
        '\n' => b"\\n",
        '\r' => b"\\r",
        '\t' => b"\\t",
        c if (c as u32) < 0x20 => {
            let n = c as usize;
            *buf = [b'\\', b'u', b'0', b'0', HEX[n >> 4], HEX[n & 15]];
            &buf[..]
        }
        c => c.encode_utf8(&mut buf[..]).as_bytes(),
    }
}

/// Whether an object's member names repeat one: each against the earlier ones for a small
/// object, by sorting for a large one.
fn repeats(s: &[u8], names: &mut [Name]) -> bool {
    let name = |n: &Name| &s[n.from as usize..(n.from + n.len) as usize];
    if names.len() <= 16 {
        for (i, a) in names.iter().enumerate() {
            for b in &names[..i] {
                if a.len == b.len && name(a) == name(b) {
                    return true;
                }
            }
        }
        return false;
    }
    names.sort_unstable_by(|a, b| name(a).cmp(name(b)));
    names.windows(2).any(|w| name(&w[0]) == name(&w[1]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the full parse and print give, when the input parses.
    fn reference(input: &str) -> Option<Vec<u8>> {
        let tree = super::super::parse(input.as_bytes()).ok()?;
        Some(super::super::to_text(&tree, Default::default()))
    }

    fn check(input: &str) {
        if let Some(text) = compact(input.as_bytes()) {
            assert_eq!(
                Some(String::from_utf8_lossy(&text).into_owned()),
                reference(input).map(|t| String::from_utf8_lossy(&t).into_owned()),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn takes_the_shortcut_where_it_knows_the_answer() {
        let cases = [
            (
                r#"{"a":1,"b":[true,false,null],"c":"x"}"#,
                r#"{"a":1,"b":[true,false,null],"c":"x"}"#,
            ),
            (" { \"a\" : [ 1 , 2 ] }\n", r#"{"a":[1,2]}"#),
            (r#"[1.0,1e2,-0,0,-5,1.50]"#, r#"[1.0,100.0,-0.0,0,-5,1.5]"#),
            ("18446744073709551615", "18446744073709551615"),
            ("18446744073709551616", "1.8446744073709552e19"),
            ("-9223372036854775809", "-9.223372036854776e18"),
            (
                r#""a\/b\u00e9\u0041\u001F\u0022\n""#,
                "\"a/béA\\u001f\\\"\\n\"",
            ),
            (r#""tab\there""#, r#""tab\there""#),
            // A surrogate pair (Python's `ensure_ascii` writes one for a character above U+FFFF).
            (r#""x\ud83d\ude00y""#, "\"x😀y\""),
            (r#""\uD83D\uDE00""#, "\"😀\""),
            // `json.dumps`'s default separators, as redis-py sends documents.
            (
                r#"{"a": 1, "b": [true, null], "c": {"d": "x, y: z"}}"#,
                r#"{"a":1,"b":[true,null],"c":{"d":"x, y: z"}}"#,
            ),
            // Numbers printed as written are kept; the rest printed as the tree holds them.
            (r#"[0.5,1.0,-1.5e-7,0.1]"#, r#"[0.5,1.0,-1.5e-7,0.1]"#),
            (r#"[1E2,2.50,1e-7]"#, r#"[100.0,2.5,1e-7]"#),
            // Integers across the eight-byte steps of the digit scan, and at the very end.
            (
                "[12345678,123456789012345678]",
                "[12345678,123456789012345678]",
            ),
            ("1234567890123456789", "1234567890123456789"),
            ("-12345678901", "-12345678901"),
            (r#"["été ✓","\u00e9"]"#, r#"["été ✓","é"]"#),
            // Names alike in their first eight bytes are told apart by the rest.
            (
                r#"{"abcdefgh1":1,"abcdefgh2":2}"#,
                r#"{"abcdefgh1":1,"abcdefgh2":2}"#,
            ),
        ];
        for (input, want) in cases {
            let got = compact(input.as_bytes()).map(String::from_utf8);
            assert_eq!(got, Some(Ok(want.to_string())), "input {input:?}");
            check(input);
        }
    }

    #[test]
    fn leaves_the_rest_to_the_full_parse() {
        for input in [
            "",
            " ",
            "{\"a\":1,\"a\":2}",
            "{\"\\u0061\":1}",
            "\"\\ud83d\"",
            "\"\\ud83d\\u0041\"",
            "\"\\ude00\"",
            "\"\\ud83d\\ud83d\"",
            "[1:2]",
            "[123456789:1]",
            "[12345678901234567:1]",
            "{\"a\" 1}",
            "01",
            "1.",
            "[1,]",
            "{\"a\":1,}",
            "\"a\u{1}\"",
            "[1] x",
            "tru",
            "nul",
            "1e400",
            "\"\\x\"",
            "\"\\u12\"",
            "+1",
            ".5",
            "{\"abcdefgh1\":1,\"abcdefgh1\":2}",
        ] {
            assert_eq!(compact(input.as_bytes()), None, "input {input:?}");
        }
        // Not UTF-8, inside a string or outside one.
        assert_eq!(compact(b"\"a\xff\""), None);
        assert_eq!(compact(b"[\"\xc3\"]"), None);
        assert_eq!(compact(b"[1]\xe9"), None);
        let deep = "[".repeat(NEST + 1) + &"]".repeat(NEST + 1);
        assert_eq!(compact(deep.as_bytes()), None);
        let fits = "[".repeat(NEST) + &"]".repeat(NEST);
        assert_eq!(compact(fits.as_bytes()), Some(fits.clone().into_bytes()));
        // Many members, one repeated: found by the sorted check too.
        let many: Vec<String> = (0..20).map(|i| format!("\"k{}\":{i}", i % 19)).collect();
        assert_eq!(compact(format!("{{{}}}", many.join(",")).as_bytes()), None);
        let distinct: Vec<String> = (0..20).map(|i| format!("\"k{i}\":{i}")).collect();
        check(&format!("{{{}}}", distinct.join(",")));
        assert!(compact(format!("{{{}}}", distinct.join(",")).as_bytes()).is_some());
    }

    /// JSON-like text built from pieces that hit every branch: whitespace, escapes, numbers of
    /// every form, repeated names, and damage (a byte dropped or added).
    fn jsonish() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| format!("{f:e}")),
            "-?(0|[1-9][0-9]{0,22})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?",
            "\"([a-z é\\x01\\t]|\\\\[\"\\\\/bfnrt]|\\\\u00[0-9a-fA-F]{2}|\\\\u[dD][89abAB][0-9a-f]{2}|\\\\u[dD][89abAB][0-9a-f]{2}\\\\u[dD][c-fC-F][0-9a-f]{2}|\\\\u20[0-9a-f]{2})*\"",
        ];
        leaf.prop_recursive(5, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                prop::collection::vec(("[abc]{1,2}", inner, "[ \\n]{0,2}"), 0..6).prop_map(
                    |members| {
                        let m: Vec<String> = members
                            .into_iter()
                            .map(|(k, v, sp)| format!("\"{k}\"{sp}:{sp}{v}"))
                            .collect();
                        format!("{{ {} }}", m.join(" ,"))
                    }
                ),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_shortcut_prints_what_the_tree_prints(text in jsonish()) {
            if let Some(got) = compact(text.as_bytes()) {
                prop_assert_eq!(Some(got), reference(&text), "input {:?}", text);
            }
        }

        #[test]
        fn damaged_text_is_never_accepted_wrongly(text in jsonish(), cut in any::<prop::sample::Index>(), b in prop::sample::select(&b"{}[]\",:\\ 0e.-ax"[..])) {
            let mut bytes = text.into_bytes();
            let at = cut.index(bytes.len() + 1);
            if at < bytes.len() && at % 2 == 0 {
                bytes.remove(at);
            } else {
                bytes.insert(at, b);
            }
            if let Ok(s) = String::from_utf8(bytes) {
                if let Some(got) = compact(s.as_bytes()) {
                    prop_assert_eq!(Some(got), reference(&s), "input {:?}", s);
                }
            }
        }
    }
}
