//! A document's compact text straight from the text a client sent, without building its tree:
//! one pass that checks the JSON and writes what parsing it with serde_json and printing it
//! back ([`super::to_text`]) would give. A document is stored as this text until a command needs
//! its tree ([`super::Doc`]), so a root JSON.SET costs a scan and a copy instead of a tree's
//! allocations, and a root JSON.GET answers with the stored bytes.
//!
//! The scan takes the shortcut only where it knows serde_json's result exactly and gives up
//! (None) everywhere else, leaving the input to the full parse: any invalid input (serde_json's
//! parse then gives the exact error text), an object naming a member twice (serde_json keeps the
//! first one's place and the last one's value), a member name with an escape, a surrogate
//! escape, and nesting deeper than [`NEST`]. What it rewrites: whitespace between tokens goes,
//! `\/` becomes `/`, a `\u` escape becomes the character or serde_json's escape of it, and a
//! number other than a short integer is parsed and printed as the tree would hold it (`1e2` is
//! `100.0`, `-0` is `-0.0`). The rest of the input is copied as it is, in runs.

use smallvec::SmallVec;

/// The deepest nesting the scan follows; deeper documents take the full parse.
const NEST: usize = 64;

/// The compact text serde_json would print for `input`, or None where the scan leaves the input
/// to the full parse (see the module doc), which includes input that is not UTF-8.
pub fn compact(input: &[u8]) -> Option<Vec<u8>> {
    let mut scan = Scan {
        s: input,
        at: 0,
        out: Vec::new(),
        copied: 0,
        names: SmallVec::new(),
        high: 0,
    };
    scan.space();
    scan.value(0)?;
    scan.space();
    if scan.at != input.len() {
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
    at: usize,
    /// The text so far, up to input position `copied`; what follows `copied` is copied on the
    /// next rewrite or at the end.
    out: Vec<u8>,
    copied: usize,
    /// The member names of the open objects (names without escapes), inline up to a typical
    /// document's, so that most scans allocate nothing but their output.
    names: SmallVec<[Name; 32]>,
    /// The OR of the string bytes seen: its top bit says one was not ASCII.
    high: u8,
}

/// A member name: its input range and its first (up to) eight bytes, which tell most names
/// apart in one comparison.
#[derive(Clone, Copy)]
struct Name {
    from: usize,
    to: usize,
    head: u64,
}

impl Scan<'_> {
    /// The byte at the scan position; 0 at the end (a NUL byte is never valid where the scan
    /// looks, so it needs no case of its own).
    fn peek(&self) -> u8 {
        self.s.get(self.at).copied().unwrap_or(0)
    }

    /// Puts `with` in the place of input `from..to`.
    fn rewrite(&mut self, from: usize, to: usize, with: &[u8]) {
        if self.out.is_empty() {
            self.out.reserve(self.s.len());
        }
        self.out.extend_from_slice(&self.s[self.copied..from]);
        self.out.extend_from_slice(with);
        self.copied = to;
    }

    /// Skips (drops) JSON whitespace; inline, as compact text has none (the common case is one
    /// comparison).
    #[inline(always)]
    fn space(&mut self) {
        if matches!(self.peek(), b' ' | b'\t' | b'\n' | b'\r') {
            self.drop_space();
        }
    }

    #[inline(never)]
    fn drop_space(&mut self) {
        let from = self.at;
        while matches!(self.peek(), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        if self.at > from {
            self.rewrite(from, self.at, b"");
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == b).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek() {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string(false),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        let end = self.at + w.len();
        (self.s.get(self.at..end)? == w).then(|| self.at = end)
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > NEST {
            return None;
        }
        self.at += 1;
        self.space();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.value(depth)?;
            self.space();
            match self.peek() {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
            self.space();
        }
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > NEST {
            return None;
        }
        self.at += 1;
        self.space();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        let first = self.names.len();
        loop {
            if self.peek() != b'"' {
                return None;
            }
            let from = self.at + 1;
            self.string(true)?;
            let to = self.at - 1;
            self.names.push(Name {
                from,
                to,
                head: head(&self.s[from..to]),
            });
            self.space();
            self.eat(b':')?;
            self.space();
            self.value(depth)?;
            self.space();
            match self.peek() {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    break;
                }
                _ => return None,
            }
            self.space();
        }
        if repeats(self.s, &mut self.names[first..]) {
            return None;
        }
        self.names.truncate(first);
        Some(())
    }

    /// A string from its opening quote; a member `name` takes no escapes.
    fn string(&mut self, name: bool) -> Option<()> {
        self.at += 1;
        loop {
            self.at = plain_run(self.s, self.at, &mut self.high);
            match self.peek() {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' if !name => self.escape()?,
                // A control character, or an escape in a name.
                _ => return None,
            }
        }
    }

    /// An escape in a string value, from its backslash.
    fn escape(&mut self) -> Option<()> {
        let from = self.at;
        match *self.s.get(from + 1)? {
            // Printed as they are written.
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 2,
            b'/' => {
                self.at += 2;
                self.rewrite(from, self.at, b"/");
            }
            b'u' => {
                let code = hex4(self.s.get(from + 2..from + 6)?)?;
                // A surrogate pair, or an unpaired one (an error), takes the full parse.
                let c = char::from_u32(code)?;
                self.at = from + 6;
                let mut buf = [0u8; 6];
                let with = escaped(c, &mut buf);
                self.rewrite(from, self.at, with);
            }
            _ => return None,
        }
        Some(())
    }

    fn number(&mut self) -> Option<()> {
        let from = self.at;
        self.eat(b'-');
        let digits_from = self.at;
        match self.peek() {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let digits = self.at - digits_from;
        let mut integer = true;
        if self.eat(b'.').is_some() {
            integer = false;
            self.some_digits()?;
        }
        if matches!(self.peek(), b'e' | b'E') {
            integer = false;
            self.at += 1;
            if matches!(self.peek(), b'+' | b'-') {
                self.at += 1;
            }
            self.some_digits()?;
        }
        let token = &self.s[from..self.at];
        // Up to 18 digits always fit an i64 and print as written; `-0` is a float.
        if integer && digits <= 18 && token != b"-0" {
            return Some(());
        }
        let n: super::Json = serde_json::from_slice(token).ok()?;
        let text = super::to_text(&n, super::Layout::default());
        // serde_json's float parsing is not always correctly rounded: the tree later parsed
        // from this text must hold the very number the token gives, else the full parse keeps it.
        if serde_json::from_slice::<super::Json>(&text).ok()? != n {
            return None;
        }
        self.rewrite(from, self.at, &text);
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_ascii_digit() {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let from = self.at;
        self.digits();
        (self.at > from).then_some(())
    }
}

/// Where the run of bytes from `at` that a string holds as they are (no quote, backslash or
/// control character) ends. Eight bytes at a time, as a little-endian word: a byte equals `"` or
/// `\\` when the word xor that byte repeated has a zero byte there, and a byte is below 0x20 when
/// subtracting 0x20 borrows into its top bit while its own top bit is clear (the classic
/// has-zero-byte test). The test may also flag a byte after a true match (the borrow runs on),
/// never one before it, so the lowest flagged byte is the first match. `high` gets its top bit
/// set when a byte looked at is not ASCII.
fn plain_run(s: &[u8], mut at: usize, high: &mut u8) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGH;
    let mut seen = 0u64;
    let mut end = None;
    while let Some(word) = s.get(at..at + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let w = u64::from_le_bytes(bytes);
        seen |= w;
        let found = below(w ^ (ONES * u64::from(b'"')), 1)
            | below(w ^ (ONES * u64::from(b'\\')), 1)
            | below(w, 0x20);
        if found != 0 {
            end = Some(at + (found.trailing_zeros() / 8) as usize);
            break;
        }
        at += 8;
    }
    if seen & HIGH != 0 {
        *high |= 0x80;
    }
    if let Some(end) = end {
        return end;
    }
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

/// A name's first (up to) eight bytes as a number, zeros after a shorter name's end.
fn head(name: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    for (to, from) in bytes.iter_mut().zip(name) {
        *to = *from;
    }
    u64::from_le_bytes(bytes)
}

/// Whether an object's member names repeat one: each against the earlier ones for a small
/// object, by sorting for a large one.
fn repeats(s: &[u8], names: &mut [Name]) -> bool {
    let name = |n: &Name| &s[n.from..n.to];
    if names.len() <= 16 {
        for (i, a) in names.iter().enumerate() {
            for b in &names[..i] {
                if a.head == b.head && name(a) == name(b) {
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
            "\"\\ud83d\\ude00\"",
            "\"\\ud83d\"",
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
            "\"([a-z é\\x01\\t]|\\\\[\"\\\\/bfnrt]|\\\\u00[0-9a-fA-F]{2}|\\\\u[dD][89abAB][0-9a-f]{2}|\\\\u20[0-9a-f]{2})*\"",
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
