//! Cleaning of chat text before it is stored in short-term memory.
//!
//! Stored messages are replayed to the model on later turns, so anything that
//! only made sense for one turn (bot-injected `[System: …]` annotations) or
//! that wastes tokens (raw custom-emoji markup, blank lines, trailing blanks)
//! is removed here, once, on the write path.
//!
//! Everything is a pure function of its input. The functions run on every
//! stored message, so each step returns early when its trigger (`<`,
//! `[System: `, a newline) is absent and otherwise builds its output in a
//! single pass.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// The three built-in bot annotations, each from its `[System: …` prefix up to
/// and including the first `]` after it. `[^\]]` also matches newlines, so an
/// annotation may span lines; with no closing `]` nothing matches and the text
/// is left as it is.
const BUILTIN_ANNOTATIONS: &str =
    r"\[System: (?:This message \(ID:|Message metadata:|Reactions on this message:)[^\]]*\]";

/// Cheap substring test that gates the built-in regex.
const ANNOTATION_TRIGGER: &str = "[System: ";
/// Built once: building a substring searcher costs more than running it over a short message.
static TRIGGER_FINDER: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(ANNOTATION_TRIGGER));

/// Compiled once per process and shared by every `TextCleaner`, so
/// `TextCleaner::default()` costs nothing after the first use.
static BUILTIN_RE: LazyLock<Regex> = LazyLock::new(|| {
    // The pattern is a constant covered by the tests; it cannot fail at run time.
    Regex::new(BUILTIN_ANNOTATIONS).expect("built-in annotation pattern is valid")
});

/// Discord's limits for a custom emoji: the name is 1..=32 of `[A-Za-z0-9_]`,
/// the id (a snowflake) 17..=20 ASCII digits.
const EMOJI_NAME_MAX: usize = 32;
const EMOJI_ID_DIGITS: std::ops::RangeInclusive<usize> = 17..=20;

/// Compiled cleaning rules: the built-in annotation patterns plus any extra ones from config.
///
/// Build it once at start-up and share it; [`TextCleaner::clean`] takes `&self`.
#[derive(Debug, Clone, Default)]
pub struct TextCleaner {
    /// Extra patterns from config, applied in the given order after the built-ins.
    extra: Vec<Regex>,
}

impl TextCleaner {
    /// Compiles the extra strip patterns. An invalid pattern is an error; a
    /// syntax error's message quotes the offending pattern.
    pub fn new(extra_strip_patterns: &[String]) -> Result<TextCleaner, regex::Error> {
        let extra = extra_strip_patterns
            .iter()
            .map(|p| Regex::new(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TextCleaner { extra })
    }

    /// The whole pipeline: emoji normalisation (outside code), annotation stripping, whitespace rules.
    /// Returns the cleaned text; an empty string means "drop this message".
    ///
    /// Annotations are stripped *before* emojis are normalised: they are
    /// removed everywhere regardless of code, and doing it first keeps any
    /// backticks inside a bot annotation from changing which parts of the
    /// user's text count as code. (Built-in annotations cannot be created or
    /// destroyed by emoji rewriting, so for them the order is otherwise
    /// irrelevant; extra patterns therefore see the raw message text.)
    pub fn clean(&self, text: &str) -> String {
        self.clean_cow(text).into_owned()
    }

    /// [`TextCleaner::clean`] that borrows when nothing but the ends had to go, which is the
    /// common case: a capture then copies each message once, into its packed entry.
    pub fn clean_cow<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.strip_annotations_cow(text) {
            Cow::Borrowed(stripped) => match normalize_emojis_cow(stripped) {
                Cow::Borrowed(normalized) => collapse_whitespace_cow(normalized),
                Cow::Owned(normalized) => Cow::Owned(collapse_whitespace(&normalized)),
            },
            Cow::Owned(stripped) => {
                Cow::Owned(collapse_whitespace(&normalize_emojis_cow(&stripped)))
            }
        }
    }

    /// Removes every built-in annotation, then every match of each extra
    /// pattern (in config order, each applied to the previous result).
    /// Applies inside code too.
    pub fn strip_annotations(&self, text: &str) -> String {
        self.strip_annotations_cow(text).into_owned()
    }

    /// Borrowing variant so `clean` allocates only when something was removed.
    fn strip_annotations_cow<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut cur = Cow::Borrowed(text);
        if TRIGGER_FINDER.find(text.as_bytes()).is_some() {
            cur = remove_all(&BUILTIN_RE, cur);
        }
        for re in &self.extra {
            cur = remove_all(re, cur);
        }
        cur
    }
}

/// Deletes all matches of `re`, keeping `text` borrowed when there are none.
fn remove_all<'a>(re: &Regex, text: Cow<'a, str>) -> Cow<'a, str> {
    let replaced = match re.replace_all(&text, "") {
        Cow::Borrowed(_) => None,
        Cow::Owned(s) => Some(s),
    };
    match replaced {
        Some(s) => Cow::Owned(s),
        None => text,
    }
}

/// Rewrites custom emojis `<:name:id>` and `<a:name:id>` to `:name:`, except
/// inside code.
///
/// Code is found in two passes:
/// 1. Fenced blocks: a ```` ``` ```` opens a block that the next ```` ``` ````
///    closes. An unclosed fence is not a block; it and the rest of the text
///    are left to pass 2 (where its backticks end up literal).
/// 2. Inline code, in the parts outside fenced blocks: a run of N backticks
///    (normally N = 1) opens a span that the next run of exactly N backticks
///    closes (CommonMark-style, so ``` ``x`` ``` is code too). A run with no
///    closer is literal text, so after an unclosed backtick the rest of the
///    text is not code.
pub fn normalize_custom_emojis(text: &str) -> String {
    normalize_emojis_cow(text).into_owned()
}

fn normalize_emojis_cow(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    // Code spans are only computed once a candidate emoji is found.
    let mut code: Option<Vec<Range<usize>>> = None;
    let mut code_idx = 0;
    // `copied` = end of the input already copied to `out`.
    let mut copied = 0;
    let mut pos = 0;
    while let Some(off) = bytes.get(pos..).and_then(|rest| memchr::memchr(b'<', rest)) {
        let start = pos + off;
        let Some((name, end)) = parse_emoji(bytes, start) else {
            pos = start + 1;
            continue;
        };
        pos = end;
        let spans = code.get_or_insert_with(|| code_spans(text));
        // Matches come in increasing order, so one cursor over the sorted spans suffices.
        while code_idx < spans.len() && spans[code_idx].end <= start {
            code_idx += 1;
        }
        // An emoji contains no backtick, so it is either wholly inside a span or wholly outside.
        if spans.get(code_idx).is_some_and(|s| s.start <= start) {
            continue;
        }
        let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
        // All indices sit on ASCII bytes ('<', ':', '>'), hence on char boundaries.
        buf.push_str(&text[copied..start]);
        buf.push(':');
        buf.push_str(&text[name]);
        buf.push(':');
        copied = end;
    }
    match out {
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(text),
    }
}

/// Parses `<:name:id>` or `<a:name:id>` at `start` (which holds `<`).
/// Returns the byte range of `name` and the index just past `>`.
fn parse_emoji(bytes: &[u8], start: usize) -> Option<(Range<usize>, usize)> {
    let mut i = start + 1;
    if bytes.get(i) == Some(&b'a') {
        i += 1;
    }
    if bytes.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    let name_start = i;
    while bytes
        .get(i)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    {
        i += 1;
    }
    let name = name_start..i;
    if name.is_empty() || name.len() > EMOJI_NAME_MAX || bytes.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    let id_start = i;
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if !EMOJI_ID_DIGITS.contains(&(i - id_start)) || bytes.get(i) != Some(&b'>') {
        return None;
    }
    Some((name, i + 1))
}

/// Byte ranges (delimiters included) of fenced blocks and inline code, sorted
/// and disjoint. See [`normalize_custom_emojis`] for the rules.
fn code_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    if !text.contains('`') {
        return spans;
    }
    // Pass 1: fenced blocks; the gaps between them go to pass 2.
    let mut gap_start = 0;
    let mut pos = 0;
    while let Some(open) = find_from(text, pos, "```") {
        let Some(close) = find_from(text, open + 3, "```") else {
            break; // Unclosed fence: the rest is not a block.
        };
        inline_spans(text.as_bytes(), gap_start..open, &mut spans);
        spans.push(open..close + 3);
        gap_start = close + 3;
        pos = gap_start;
    }
    inline_spans(text.as_bytes(), gap_start..text.len(), &mut spans);
    spans
}

fn find_from(text: &str, from: usize, needle: &str) -> Option<usize> {
    text.get(from..)?.find(needle).map(|i| from + i)
}

/// Pass 2: inline code spans inside `part`, appended to `spans` in order.
fn inline_spans(bytes: &[u8], part: Range<usize>, spans: &mut Vec<Range<usize>>) {
    let mut i = part.start;
    while let Some(open) = next_run(bytes, i, part.end) {
        let Some(close) = matching_run(bytes, open.end, part.end, open.len()) else {
            // No closer: the opening run is literal text; later runs may still pair.
            i = open.end;
            continue;
        };
        spans.push(open.start..close.end);
        i = close.end;
    }
}

/// The next maximal run of backticks in `from..end`.
fn next_run(bytes: &[u8], from: usize, end: usize) -> Option<Range<usize>> {
    let start = from + bytes.get(from..end)?.iter().position(|&b| b == b'`')?;
    let len = bytes
        .get(start..end)?
        .iter()
        .take_while(|&&b| b == b'`')
        .count();
    Some(start..start + len)
}

/// The next run of exactly `len` backticks in `from..end`.
fn matching_run(bytes: &[u8], mut from: usize, end: usize, len: usize) -> Option<Range<usize>> {
    loop {
        let run = next_run(bytes, from, end)?;
        if run.len() == len {
            return Some(run);
        }
        from = run.end;
    }
}

/// The whitespace rules, applied as if in this order:
/// 1. `\r\n` becomes `\n` (a lone `\r` is left alone; it is not a newline);
/// 2. spaces/tabs immediately before a newline are removed;
/// 3. runs of two or more newlines become one;
/// 4. the result is trimmed with [`str::trim`].
///
/// Implemented as trim-first plus one line-by-line pass: the trimmed text
/// starts and ends with a character that steps 1–3 never remove, so trimming
/// first gives the same result and lets single-line text skip the pass.
pub fn collapse_whitespace(text: &str) -> String {
    collapse_whitespace_cow(text).into_owned()
}

/// [`collapse_whitespace`], borrowing when the trimmed text has no line break.
fn collapse_whitespace_cow(text: &str) -> Cow<'_, str> {
    let text = text.trim();
    if memchr::memchr(b'\n', text.as_bytes()).is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = line.trim_end_matches([' ', '\t']);
        // An empty line here means two newlines in a row: keep only one.
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cleaner() -> TextCleaner {
        TextCleaner::default()
    }

    // ---- emojis ----

    #[test]
    fn emoji_outside_code() {
        assert_eq!(
            normalize_custom_emojis("hi <:wave:123456789012345678> there"),
            "hi :wave: there"
        );
    }

    #[test]
    fn animated_emoji() {
        assert_eq!(
            normalize_custom_emojis("<a:party_blob:123456789012345678>!"),
            ":party_blob:!"
        );
    }

    #[test]
    fn emoji_id_lengths() {
        // 16 digits: not an emoji.
        assert_eq!(
            normalize_custom_emojis("<:x:1234567890123456>"),
            "<:x:1234567890123456>"
        );
        // 17 digits.
        assert_eq!(normalize_custom_emojis("<:x:12345678901234567>"), ":x:");
        // 20 digits.
        assert_eq!(normalize_custom_emojis("<:x:12345678901234567890>"), ":x:");
        // 21 digits: not an emoji.
        assert_eq!(
            normalize_custom_emojis("<:x:123456789012345678901>"),
            "<:x:123456789012345678901>"
        );
    }

    #[test]
    fn emoji_name_lengths_and_charset() {
        let n32 = "a".repeat(32);
        let n33 = "a".repeat(33);
        assert_eq!(
            normalize_custom_emojis(&format!("<:{n32}:12345678901234567>")),
            format!(":{n32}:")
        );
        let long = format!("<:{n33}:12345678901234567>");
        assert_eq!(normalize_custom_emojis(&long), long);
        // Empty or non-ASCII names are not emojis.
        assert_eq!(
            normalize_custom_emojis("<::12345678901234567>"),
            "<::12345678901234567>"
        );
        assert_eq!(
            normalize_custom_emojis("<:olá:12345678901234567>"),
            "<:olá:12345678901234567>"
        );
    }

    #[test]
    fn malformed_emojis_left_alone() {
        for s in [
            "<",
            "a < b",
            "<:x:12345678901234567",
            "<b:x:12345678901234567>",
            "<:x 12345678901234567>",
            "<<:x:12345678901234567",
        ] {
            assert_eq!(normalize_custom_emojis(s), s);
        }
        // A failed candidate does not hide a real one right after it.
        assert_eq!(normalize_custom_emojis("<<:x:12345678901234567>"), "<:x:");
    }

    #[test]
    fn emoji_in_fenced_block_unchanged_and_after_it_changed() {
        let input = "```\n<:wave:123456789012345678>\n```<:wave:123456789012345678>";
        assert_eq!(
            normalize_custom_emojis(input),
            "```\n<:wave:123456789012345678>\n```:wave:"
        );
    }

    #[test]
    fn emoji_in_inline_code_unchanged() {
        assert_eq!(
            normalize_custom_emojis(
                "type `<:wave:123456789012345678>` for <:wave:123456789012345678>"
            ),
            "type `<:wave:123456789012345678>` for :wave:"
        );
        // Double-backtick inline code counts too.
        assert_eq!(
            normalize_custom_emojis("`` <:x:12345678901234567> ``"),
            "`` <:x:12345678901234567> ``"
        );
    }

    #[test]
    fn fence_takes_precedence_over_inline() {
        // The single backticks inside the fence do not pair with anything outside.
        let input = "```a ` b```<:x:12345678901234567>` <:y:12345678901234567>";
        assert_eq!(normalize_custom_emojis(input), "```a ` b```:x:` :y:");
    }

    #[test]
    fn unclosed_backtick_is_not_code() {
        assert_eq!(
            normalize_custom_emojis("oops ` <:wave:123456789012345678> end"),
            "oops ` :wave: end"
        );
    }

    #[test]
    fn unclosed_fence_is_not_code() {
        assert_eq!(
            normalize_custom_emojis("```rust\n<:wave:123456789012345678>"),
            "```rust\n:wave:"
        );
        // Its backticks are literal; inline code after it still counts.
        assert_eq!(
            normalize_custom_emojis("``` `<:a:12345678901234567>` <:b:12345678901234567>"),
            "``` `<:a:12345678901234567>` :b:"
        );
    }

    #[test]
    fn emoji_matches_regex_reference_outside_code() {
        // Without backticks there is no code, so the rule is exactly this regex.
        let re = Regex::new(r"<a?:([A-Za-z0-9_]{1,32}):[0-9]{17,20}>").expect("valid");
        let n32 = format!("<:{}:", "z".repeat(32));
        let n33 = format!("<:{}:", "z".repeat(33));
        let pieces = [
            "<",
            ">",
            ":",
            "a",
            "<:x_1:",
            "<a:é:",
            "<a:b:",
            "1234567890123456",
            "7",
            "78>",
            "😀",
            "12345678901234567>",
            &n32,
            &n33,
        ];
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..20_000 {
            let mut s = String::new();
            for _ in 0..10 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            let expected = re.replace_all(&s, ":$1:");
            assert_eq!(normalize_custom_emojis(&s), expected, "input {s:?}");
        }
    }

    #[test]
    fn emoji_fast_path_borrows() {
        assert!(matches!(
            normalize_emojis_cow("no markup"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(normalize_emojis_cow("a < b"), Cow::Borrowed(_)));
    }

    // ---- annotations ----

    #[test]
    fn strips_message_id_annotation() {
        assert_eq!(
            cleaner()
                .strip_annotations("hello [System: This message (ID: 123) was sent by bob.] world"),
            "hello  world"
        );
    }

    #[test]
    fn strips_metadata_annotation() {
        assert_eq!(
            cleaner().strip_annotations("[System: Message metadata: author=bob, ch=1]hi"),
            "hi"
        );
    }

    #[test]
    fn strips_reactions_annotation() {
        assert_eq!(
            cleaner().strip_annotations("hi\n[System: Reactions on this message: 👍 x2]"),
            "hi\n"
        );
    }

    #[test]
    fn annotation_ends_at_first_bracket_and_may_span_lines() {
        assert_eq!(
            cleaner().strip_annotations("[System: Message metadata: a\nb] c] d"),
            " c] d"
        );
    }

    #[test]
    fn annotation_inside_code_is_removed() {
        assert_eq!(
            cleaner().clean("`x [System: Message metadata: y] z`"),
            "`x  z`"
        );
        assert_eq!(
            cleaner().clean("```\ncode\n[System: Reactions on this message: 👍]\n```"),
            "```\ncode\n```"
        );
    }

    #[test]
    fn annotation_without_closing_bracket_is_kept() {
        let s = "hi [System: Message metadata: never closed";
        assert_eq!(cleaner().strip_annotations(s), s);
    }

    #[test]
    fn other_system_text_is_kept() {
        let s = "[System: something else] and [System:Message metadata: x]";
        assert_eq!(cleaner().strip_annotations(s), s);
    }

    #[test]
    fn extra_pattern_from_config() {
        let c = TextCleaner::new(&[r"\(edited\)".to_owned(), r"(?i)\[note:[^\]]*\]".to_owned()])
            .expect("valid patterns");
        assert_eq!(
            c.clean("fixed (edited) [NOTE: x] ok (edited)"),
            "fixed   ok"
        );
        // Built-ins still apply alongside extras.
        assert_eq!(c.clean("[System: Message metadata: a] hi (edited)"), "hi");
    }

    #[test]
    fn invalid_extra_pattern_is_error() {
        let err = TextCleaner::new(&["ok".to_owned(), "(unclosed".to_owned()])
            .expect_err("invalid pattern must fail");
        assert!(err.to_string().contains("(unclosed"), "{err}");
    }

    #[test]
    fn builtin_pattern_compiles() {
        assert!(BUILTIN_RE.is_match("[System: Message metadata: x]"));
    }

    // ---- whitespace ----

    #[test]
    fn trailing_spaces_and_tabs_before_newline() {
        assert_eq!(collapse_whitespace("a \t \nb\t\nc"), "a\nb\nc");
    }

    #[test]
    fn newline_runs_collapse() {
        assert_eq!(collapse_whitespace("a\n\n\nb"), "a\nb");
        // Blank-looking lines collapse too, since their spaces go first.
        assert_eq!(collapse_whitespace("a\n  \n\t\nb"), "a\nb");
    }

    #[test]
    fn crlf_is_a_newline() {
        assert_eq!(collapse_whitespace("a  \r\n\r\n\r\nb\r\n"), "a\nb");
        // A lone \r is not a newline.
        assert_eq!(collapse_whitespace("a\rb"), "a\rb");
    }

    #[test]
    fn trims() {
        assert_eq!(collapse_whitespace("  \n\t hi there \n "), "hi there");
        assert_eq!(
            collapse_whitespace("inner  spaces stay"),
            "inner  spaces stay"
        );
    }

    #[test]
    fn collapse_matches_literal_rules() {
        // Reference: the rules applied literally, one after another.
        let trailing = Regex::new(r"[ \t]+\n").expect("valid");
        let runs = Regex::new(r"\n{2,}").expect("valid");
        let reference = |s: &str| {
            let s = s.replace("\r\n", "\n");
            let s = trailing.replace_all(&s, "\n");
            runs.replace_all(&s, "\n").trim().to_owned()
        };
        let alphabet = ['a', 'é', ' ', '\t', '\n', '\r', '\u{3000}'];
        // Small deterministic xorshift so the test needs no extra crates.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            let mut s = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 12) as usize;
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            assert_eq!(collapse_whitespace(&s), reference(&s), "input {s:?}");
        }
    }

    // ---- whole pipeline ----

    #[test]
    fn only_annotation_becomes_empty() {
        assert_eq!(
            cleaner().clean("  [System: This message (ID: 42) is from bob]  \n\n "),
            ""
        );
        assert_eq!(cleaner().clean(""), "");
    }

    #[test]
    fn non_ascii_text() {
        assert_eq!(
            cleaner().clean("Olá 😀 <:wave:12345678901234567> ção"),
            "Olá 😀 :wave: ção"
        );
        assert_eq!(
            cleaner().clean("日本語 `<:a:12345678901234567>` 🎉<a:b:12345678901234567>"),
            "日本語 `<:a:12345678901234567>` 🎉:b:"
        );
    }

    #[test]
    fn full_pipeline() {
        let input = "Hi <:wave:123456789012345678>  \r\n\r\n\
                     ```\n<:wave:123456789012345678>\n```\n\n\n\
                     [System: Reactions on this message: 👍]\n";
        assert_eq!(
            cleaner().clean(input),
            "Hi :wave:\n```\n<:wave:123456789012345678>\n```"
        );
    }

    #[test]
    fn new_without_extras_equals_default() {
        let c = TextCleaner::new(&[]).expect("no patterns");
        let s = "[System: Message metadata: x] <:y:12345678901234567>";
        assert_eq!(c.clean(s), cleaner().clean(s));
        assert_eq!(c.clean(s), ":y:");
    }
}
