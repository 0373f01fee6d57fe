//! The query language of `FT.SEARCH` and `FT.AGGREGATE` (RediSearch's, dialect 2 and what 3 and 4
//! change), parsed into a [`Query`] tree that names fields but knows no index. `$name` parameters
//! (`PARAMS`) are substituted while parsing, so the tree holds only literal values.
//!
//! Precedence, loosest first (dialect 2, what the agent libraries send): `|` between sequences,
//! then a space (intersection), then `-`/`~`, then `=>{…}` attributes, then a field modifier,
//! which takes ONE atom: `@name:James Brown` is `@name:James` and `Brown` in any field, and
//! `@name:(James Brown)` scopes both. Dialect 1 differs in `|` binding tighter than a space
//! (`a b | c d` is `a (b | c) d`); dialects 3 and 4 only change replies and parse as 2.
//!
//! Lexing follows RediSearch's: the longest token wins (`-5` is a number, `a-b` is `a` then
//! `-b`…), punctuation without a meaning (`,` `.` `!` …) only separates words, and a backslash
//! makes the punctuation or space after it part of the word (`abc\-123`, `with\ space`). A number
//! used as text is a word as written. An empty or all-space query
//! is `Or([])`, which matches nothing, as RediSearch's empty query does; stop words are kept (the
//! executor knows the index's list).
//!
//! Served beyond the plain forms: `@n:[v]`, `@n==v`, `@n!=v`, `@n>v`, `>=`, `<`, `<=` in every
//! dialect; `(a b)=>{$slop: n; $inorder: b}` turns an intersection of plain words into a
//! [`Node::Phrase`]; `$weight` and `$phonetic` are checked and dropped. Not served (a syntax
//! error): `w'…'` wildcard patterns, geometry (`@g:[WITHIN $shape]`).

/// A whole query: the documents [`Query::filter`] selects, and when it ends in
/// `=>[KNN k @field $blob]`, the `k` nearest of them by that vector field.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub filter: Node,
    pub knn: Option<Knn>,
}

/// One node of the tree. Text nodes ([`Node::Term`] … [`Node::Phrase`]) match in every TEXT field
/// unless a [`Node::Fields`] above them narrows the fields.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `*`: every document of the index.
    All,
    /// Space-separated nodes: a document matches all of them.
    And(Vec<Node>),
    /// `a | b`: a document matches any of them.
    Or(Vec<Node>),
    /// `-node`: documents that do not match.
    Not(Box<Node>),
    /// `~node`: does not narrow the result; matching documents score higher.
    Optional(Box<Node>),
    /// `@title:node` or `@title|body:node`: the text nodes below match only in these fields.
    Fields {
        fields: Vec<String>,
        node: Box<Node>,
    },
    /// A word, unescaped, as written (the executor folds case and stems it).
    Term(String),
    /// `foo*`
    Prefix(String),
    /// `*foo`
    Suffix(String),
    /// `*foo*`
    Contains(String),
    /// `%foo%` (distance 1), `%%foo%%` (2), `%%%foo%%%` (3).
    Fuzzy { term: String, distance: u8 },
    /// `"a b c"`: the words next to each other, in order (`slop`/`inorder` attributes relax it).
    Phrase {
        terms: Vec<String>,
        slop: Option<u32>,
        in_order: bool,
    },
    /// `@field:{a | b* | *c | *d*}`: any of the values, compared as the field's SEPARATOR and
    /// CASESENSITIVE options say.
    Tag {
        field: String,
        values: Vec<TagValue>,
    },
    /// `@field:[min max]`, `(` before a bound excludes it, `-inf`/`+inf` allowed; dialect 2's
    /// `@field:[v]` and dialect 4's `@field==v` are `min == max`, both inclusive.
    Numeric {
        field: String,
        min: Bound,
        max: Bound,
    },
    /// `@field:[lon lat radius unit]`, radius in metres after the unit is applied.
    Geo {
        field: String,
        lon: f64,
        lat: f64,
        radius_m: f64,
    },
    /// `@field:[VECTOR_RANGE radius $blob]=>{$YIELD_DISTANCE_AS: name}`.
    VectorRange {
        field: String,
        radius: f64,
        vector: Vec<u8>,
        distance_as: Option<String>,
    },
    /// `ismissing(@field)` (indexes created with INDEXMISSING).
    Missing(String),
    /// `@field:""` (`tag_syntax` false) or `@field:{""}` (true): fields created with INDEXEMPTY.
    EmptyValue { field: String, tag_syntax: bool },
}

impl Node {
    /// True when the node is, or may contain, a text word (what scoring reads); tag, numeric,
    /// geo, vector and missing/empty conditions hold none.
    pub fn may_hold_words(&self) -> bool {
        !matches!(
            self,
            Node::All
                | Node::Tag { .. }
                | Node::Numeric { .. }
                | Node::Geo { .. }
                | Node::VectorRange { .. }
                | Node::Missing(_)
                | Node::EmptyValue { .. }
        )
    }
}

/// One value of a tag set.
#[derive(Debug, Clone, PartialEq)]
pub enum TagValue {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
}

/// One end of a numeric range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub value: f64,
    pub inclusive: bool,
}

/// `=>[KNN k @field $blob EF_RUNTIME n AS name]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Knn {
    pub k: usize,
    pub field: String,
    pub vector: Vec<u8>,
    pub ef_runtime: Option<usize>,
    /// The name the distance is returned under (RediSearch's default is `__<field>_score`).
    pub score_as: Option<String>,
}

use std::collections::HashMap;

use bytes::Bytes;

/// Parses a query string: `params` are `PARAMS`' name/value pairs, `dialect` the `DIALECT` in
/// force (1 changes only the `|`/space precedence here; 2, 3 and 4 parse alike). The error is
/// RediSearch's text, without the leading `-`.
pub fn parse(text: &str, params: &HashMap<String, Bytes>, dialect: u32) -> Result<Query, String> {
    let tokens = lex(text.as_bytes());
    let mut parser = Parser {
        tokens,
        pos: 0,
        params,
        dialect,
        text_len: text.len(),
        field_depth: 0,
    };
    parser.query()
}

/// One lexical token and where it starts in the query (for error offsets).
#[derive(Debug, Clone, PartialEq)]
struct Token {
    kind: Tok,
    offset: usize,
    /// The source text, as `near …` of a syntax error shows it.
    raw: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A word, escapes removed.
    Term(String),
    /// A number as written (`5`, `-1.5e3`, `inf`, `-inf`): usable as a bound or as a word.
    Number(String),
    /// `$name`.
    Param(String),
    /// `@name`, escapes removed.
    Field(String),
    /// `word*` / `$p*`: (text, is a parameter).
    Prefix(String, bool),
    Suffix(String, bool),
    Contains(String, bool),
    /// `"…"` or `'…'`: the text between the quotes, escapes kept (split into words later).
    Exact(String),
    /// `w'…'`: a wildcard pattern (not served).
    Wildcard,
    /// `@field == n`, `!=`, `>`, `>=`, `<`, `<=`: (field, operator, value: number or `$param`).
    NumOp(String, &'static str, String),
    Or,
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Colon,
    Semicolon,
    Arrow,
    Minus,
    Tilde,
    Star,
    Percent,
    /// A quote without its closing one.
    Quote,
}

/// A word character: not punctuation (but `_`), space or control; bytes of UTF-8 sequences are.
fn is_word_byte(b: u8) -> bool {
    b == b'_' || !(b.is_ascii_punctuation() || b.is_ascii_whitespace() || b.is_ascii_control())
}

/// Length of the word starting at `i` (escaped punctuation and spaces belong to the word).
fn word_len(s: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < s.len() {
        if s[j] == b'\\'
            && j + 1 < s.len()
            && (s[j + 1].is_ascii_punctuation() || s[j + 1].is_ascii_whitespace())
        {
            j += 2;
        } else if s[j] != b'\\' && is_word_byte(s[j]) {
            j += 1;
        } else {
            break;
        }
    }
    j - i
}

/// Removes the backslash before escaped punctuation or space.
fn unescape(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\'
            && i + 1 < s.len()
            && (s[i + 1].is_ascii_punctuation() || s[i + 1].is_ascii_whitespace())
        {
            i += 1;
        }
        out.push(s[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Length of the number starting at `i`: `[+-]? (d+ (. d+)? | . d+ | d+ .) ([eE] [+-]? d+)?`,
/// or `[+-]? inf` (any case); 0 when none starts there.
fn number_len(s: &[u8], i: usize) -> usize {
    let mut j = i;
    if j < s.len() && (s[j] == b'+' || s[j] == b'-') {
        j += 1;
    }
    if s.len() >= j + 3 && s[j..j + 3].eq_ignore_ascii_case(b"inf") {
        return j + 3 - i;
    }
    let digits = |mut k: usize| {
        while k < s.len() && s[k].is_ascii_digit() {
            k += 1;
        }
        k
    };
    let int_end = digits(j);
    let mut end = int_end;
    if end < s.len() && s[end] == b'.' {
        let frac_end = digits(end + 1);
        if frac_end > end + 1 || int_end > j {
            end = frac_end;
        }
    }
    if end == j || (end == j + 1 && s[j] == b'.') {
        return 0;
    }
    if end < s.len() && (s[end] == b'e' || s[end] == b'E') {
        let mut k = end + 1;
        if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
            k += 1;
        }
        let exp_end = digits(k);
        if exp_end > k {
            end = exp_end;
        }
    }
    end - i
}

/// Where the quoted text starting at `i` (a `"` or `'`) ends (the index of its closing quote).
fn closing_quote(s: &[u8], i: usize) -> Option<usize> {
    let q = s[i];
    let mut j = i + 1;
    while j < s.len() {
        if s[j] == b'\\' && j + 1 < s.len() {
            j += 2;
        } else if s[j] == q {
            return Some(j);
        } else {
            j += 1;
        }
    }
    None
}

/// `@field <op> value` from `i` (at the `@`), the field being `field_len` bytes: the operator,
/// the value's text and the end of the whole token.
fn numeric_op(s: &[u8], i: usize, field_len: usize) -> Option<(&'static str, String, usize)> {
    let skip_spaces = |mut k: usize| {
        while k < s.len() && s[k].is_ascii_whitespace() {
            k += 1;
        }
        k
    };
    let k = skip_spaces(i + 1 + field_len);
    let rest = &s[k..];
    let op = ["==", "!=", ">=", "<=", ">", "<"]
        .into_iter()
        .find(|op| rest.starts_with(op.as_bytes()))?;
    let v = skip_spaces(k + op.len());
    let sign = usize::from(v < s.len() && (s[v] == b'+' || s[v] == b'-'));
    if v + sign < s.len() && s[v + sign] == b'$' {
        let n = word_len(s, v + sign + 1);
        if n == 0 {
            return None;
        }
        let end = v + sign + 1 + n;
        return Some((op, String::from_utf8_lossy(&s[v..end]).into_owned(), end));
    }
    let n = number_len(s, v);
    if n == 0 {
        return None;
    }
    Some((
        op,
        String::from_utf8_lossy(&s[v..v + n]).into_owned(),
        v + n,
    ))
}

/// Splits the query into tokens, longest match first as RediSearch's lexer does; punctuation
/// with no meaning (`,`, `.`, `!`, …) separates words and is otherwise dropped.
fn lex(s: &[u8]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    let text = |a: usize, b: usize| String::from_utf8_lossy(&s[a..b]).into_owned();
    while i < s.len() {
        let c = s[i];
        let start = i;
        let mut push = |kind: Tok, end: usize| {
            out.push(Token {
                kind,
                offset: start,
                raw: text(start, end),
            });
            end
        };
        if c.is_ascii_whitespace() || c.is_ascii_control() {
            i += 1;
            continue;
        }
        match c {
            b'@' => {
                let n = word_len(s, i + 1);
                if n == 0 {
                    i += 1;
                } else if let Some((op, value, end)) = numeric_op(s, i, n) {
                    let field = unescape(&s[i + 1..i + 1 + n]);
                    i = push(Tok::NumOp(field, op, value), end);
                } else {
                    i = push(Tok::Field(unescape(&s[i + 1..i + 1 + n])), i + 1 + n);
                }
            }
            b'$' => {
                let n = word_len(s, i + 1);
                if n == 0 {
                    i += 1;
                } else {
                    let name = unescape(&s[i + 1..i + 1 + n]);
                    let end = i + 1 + n;
                    if end < s.len() && s[end] == b'*' {
                        i = push(Tok::Prefix(name, true), end + 1);
                    } else {
                        i = push(Tok::Param(name), end);
                    }
                }
            }
            b'*' => {
                let (body, is_param) = if i + 1 < s.len() && s[i + 1] == b'$' {
                    (i + 2, true)
                } else {
                    (i + 1, false)
                };
                let n = word_len(s, body).max(if is_param { 0 } else { number_len(s, body) });
                if n == 0 {
                    i = push(Tok::Star, i + 1);
                } else {
                    let word = unescape(&s[body..body + n]);
                    let end = body + n;
                    if end < s.len() && s[end] == b'*' {
                        i = push(Tok::Contains(word, is_param), end + 1);
                    } else {
                        i = push(Tok::Suffix(word, is_param), end);
                    }
                }
            }
            b'"' | b'\'' => match closing_quote(s, i) {
                Some(close) if close == i + 1 => i = push(Tok::Term(String::new()), close + 1),
                Some(close) => {
                    let inner = text(i + 1, close);
                    if close + 1 < s.len() && s[close + 1] == b'*' {
                        i = push(Tok::Prefix(unescape(inner.as_bytes()), false), close + 2);
                    } else {
                        i = push(Tok::Exact(inner), close + 1);
                    }
                }
                None => i = push(Tok::Quote, i + 1),
            },
            b'w' if i + 1 < s.len() && (s[i + 1] == b'\'' || s[i + 1] == b'"') => {
                match closing_quote(s, i + 1) {
                    Some(close) if close > i + 2 => i = push(Tok::Wildcard, close + 1),
                    _ => i = push(Tok::Term("w".into()), i + 1),
                }
            }
            b'=' if i + 1 < s.len() && s[i + 1] == b'>' => i = push(Tok::Arrow, i + 2),
            b'|' => i = push(Tok::Or, i + 1),
            b'(' => i = push(Tok::LParen, i + 1),
            b')' => i = push(Tok::RParen, i + 1),
            b'{' => i = push(Tok::LBrace, i + 1),
            b'}' => i = push(Tok::RBrace, i + 1),
            b'[' => i = push(Tok::LBracket, i + 1),
            b']' => i = push(Tok::RBracket, i + 1),
            b':' => i = push(Tok::Colon, i + 1),
            b';' => i = push(Tok::Semicolon, i + 1),
            b'~' => i = push(Tok::Tilde, i + 1),
            b'%' => i = push(Tok::Percent, i + 1),
            _ => {
                let words = word_len(s, i);
                let number = number_len(s, i);
                if words == 0 && number == 0 {
                    if c == b'-' {
                        i = push(Tok::Minus, i + 1);
                    } else {
                        // Punctuation without a meaning only separates words.
                        i += 1;
                    }
                    continue;
                }
                let (kind, end) = if number >= words {
                    (Tok::Number(text(i, i + number)), i + number)
                } else {
                    (Tok::Term(unescape(&s[i..i + words])), i + words)
                };
                if end < s.len() && s[end] == b'*' {
                    let word = match kind {
                        Tok::Number(n) | Tok::Term(n) => n,
                        _ => String::new(),
                    };
                    i = push(Tok::Prefix(word, false), end + 1);
                } else {
                    i = push(kind, end);
                }
            }
        }
    }
    out
}

/// An attribute of `=>{$name: value; …}`: (name lowercased, value with parameters substituted).
type Attribute = (String, String);

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    params: &'a HashMap<String, Bytes>,
    dialect: u32,
    text_len: usize,
    /// Field modifiers open around the current token: dialect 2 refuses one inside another.
    field_depth: u32,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.kind)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Tok> {
        self.tokens.get(self.pos + ahead).map(|t| &t.kind)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.tokens.get(self.pos).map(|t| t.kind.clone());
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, kind: &Tok) -> bool {
        if self.peek() == Some(kind) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// RediSearch's syntax error at the current token (at the end of the input, at the last
    /// token). Its `near …` is not that token but the last one up to it that carries text (a
    /// word, number, field or parameter name, as written): RediSearch's lexer keeps the text of
    /// the previous such token while it reads punctuation, so `hello )` is `near hello` and
    /// `(((` is `near ` with nothing after it.
    fn syntax_error(&self) -> String {
        let at = self.pos.min(self.tokens.len().saturating_sub(1));
        let Some(failing) = self.tokens.get(at) else {
            return format!("Syntax error at offset {} near ", self.text_len);
        };
        let near = self.tokens[..=at]
            .iter()
            .rev()
            .find_map(|t| match &t.kind {
                Tok::Term(_) | Tok::Number(_) => Some(t.raw.as_str()),
                Tok::Field(_) => Some(t.raw.trim_start_matches('@')),
                Tok::Param(_) => Some(t.raw.trim_start_matches('$')),
                Tok::Prefix(..) | Tok::Suffix(..) | Tok::Contains(..) => {
                    Some(t.raw.trim_matches('*'))
                }
                _ => None,
            })
            .unwrap_or("");
        format!("Syntax error at offset {} near {near}", failing.offset)
    }

    fn expect(&mut self, kind: &Tok) -> Result<(), String> {
        if self.eat(kind) {
            Ok(())
        } else {
            Err(self.syntax_error())
        }
    }

    fn param(&self, name: &str) -> Result<&Bytes, String> {
        // Parameters are dialect 2's: in dialect 1 `$name` is no syntax there is.
        if self.dialect < 2 {
            return Err(self.syntax_error());
        }
        self.params
            .get(name)
            .ok_or_else(|| format!("No such parameter `{name}`"))
    }

    fn param_text(&self, name: &str) -> Result<String, String> {
        Ok(String::from_utf8_lossy(self.param(name)?).into_owned())
    }

    /// A number parameter (a bound's `inf` allowed); RediSearch's error otherwise.
    fn param_number(&self, name: &str) -> Result<f64, String> {
        let text = self.param_text(name)?;
        parse_number(&text)
            .ok_or_else(|| format!("Invalid numeric value ({text}) for parameter `{name}`"))
    }

    fn at_arrow_bracket(&self) -> bool {
        self.peek() == Some(&Tok::Arrow) && self.peek_at(1) == Some(&Tok::LBracket)
    }

    fn at_arrow_brace(&self) -> bool {
        self.peek() == Some(&Tok::Arrow) && self.peek_at(1) == Some(&Tok::LBrace)
    }

    /// `query := [expr] ['=>' '[' KNN … ']' ['=>' '{' attributes '}']]`
    fn query(&mut self) -> Result<Query, String> {
        let filter = if self.peek().is_none() || self.at_arrow_bracket() {
            // An empty query (or only stop words, which the executor drops) matches nothing.
            Node::Or(Vec::new())
        } else {
            self.union()?
        };
        let mut knn = None;
        if self.at_arrow_bracket() {
            if self.pos == 0 {
                // `=>[KNN …]` needs a filter before it (`*` for none).
                return Err(self.syntax_error());
            }
            self.pos += 2;
            let mut k = self.knn()?;
            self.expect(&Tok::RBracket)?;
            if self.at_arrow_brace() {
                self.pos += 2;
                for (name, value) in self.attributes()? {
                    apply_knn_attribute(&mut k, &name, &value)?;
                }
            }
            knn = Some(k);
        }
        if self.peek().is_some() {
            return Err(self.syntax_error());
        }
        Ok(Query { filter, knn })
    }

    /// Whether the current token ends a sequence of intersected nodes.
    fn at_sequence_end(&self) -> bool {
        matches!(self.peek(), None | Some(Tok::Or) | Some(Tok::RParen)) || self.at_arrow_bracket()
    }

    /// Dialect 2+: `a b | c d` is `(a b) | (c d)`. Dialect 1: `|` binds tighter, `a (b | c) d`.
    fn union(&mut self) -> Result<Node, String> {
        if self.dialect < 2 {
            return self.intersection();
        }
        let mut alternatives = vec![self.intersection()?];
        while self.eat(&Tok::Or) {
            alternatives.push(self.intersection()?);
        }
        Ok(flatten(alternatives, true))
    }

    fn intersection(&mut self) -> Result<Node, String> {
        let mut parts = Vec::new();
        loop {
            if self.at_sequence_end() {
                if parts.is_empty() {
                    return Err(self.syntax_error());
                }
                break;
            }
            let node = if self.dialect < 2 {
                let mut alternatives = vec![self.unary()?];
                while self.eat(&Tok::Or) {
                    alternatives.push(self.unary()?);
                }
                flatten(alternatives, true)
            } else {
                self.unary()?
            };
            parts.push(node);
        }
        Ok(flatten(parts, false))
    }

    /// `-x`, `~x`, or an atom with its `=>{…}` attributes.
    fn unary(&mut self) -> Result<Node, String> {
        match self.peek() {
            Some(Tok::Minus) => {
                self.pos += 1;
                Ok(match self.unary()? {
                    Node::Not(inner) => *inner,
                    node => Node::Not(Box::new(node)),
                })
            }
            Some(Tok::Tilde) => {
                self.pos += 1;
                Ok(Node::Optional(Box::new(self.unary()?)))
            }
            _ => {
                let mut node = self.atom()?;
                while self.at_arrow_brace() {
                    self.pos += 2;
                    for (name, value) in self.attributes()? {
                        apply_attribute(&mut node, &name, &value)?;
                    }
                }
                Ok(node)
            }
        }
    }

    fn atom(&mut self) -> Result<Node, String> {
        let Some(tok) = self.next() else {
            return Err(self.syntax_error());
        };
        match tok {
            Tok::LParen => {
                if self.peek() == Some(&Tok::Star) && self.peek_at(1) == Some(&Tok::RParen) {
                    // Dialect 1 knows `*` only as a whole query.
                    if self.dialect < 2 {
                        return Err(self.syntax_error());
                    }
                    self.pos += 2;
                    return Ok(Node::All);
                }
                let node = self.union()?;
                self.expect(&Tok::RParen)?;
                Ok(node)
            }
            Tok::Star => Ok(Node::All),
            Tok::Field(_) if self.dialect >= 2 && self.field_depth > 0 => {
                // `@title:(@num:[0 10])`: dialect 1 lets the inner modifier win.
                self.pos -= 1;
                Err(self.syntax_error())
            }
            Tok::Field(name) => self.field_body(name),
            Tok::NumOp(field, op, value) => self.numeric_op(field, op, &value),
            Tok::Term(word)
                if word.eq_ignore_ascii_case("ismissing") && self.peek() == Some(&Tok::LParen) =>
            {
                self.pos += 1;
                let Some(Tok::Field(field)) = self.next() else {
                    self.pos = self.pos.saturating_sub(1);
                    return Err(self.syntax_error());
                };
                self.expect(&Tok::RParen)?;
                Ok(Node::Missing(field))
            }
            Tok::Percent => self.fuzzy(),
            Tok::Exact(inner) => Ok(phrase(&inner)),
            Tok::Term(word) | Tok::Number(word) => Ok(Node::Term(word)),
            Tok::Param(name) => Ok(Node::Term(self.param_text(&name)?)),
            Tok::Prefix(word, is_param) => Ok(Node::Prefix(self.affix(word, is_param)?)),
            Tok::Suffix(word, is_param) => Ok(Node::Suffix(self.affix(word, is_param)?)),
            Tok::Contains(word, is_param) => Ok(Node::Contains(self.affix(word, is_param)?)),
            _ => {
                self.pos = self.pos.saturating_sub(1);
                Err(self.syntax_error())
            }
        }
    }

    fn affix(&self, word: String, is_param: bool) -> Result<String, String> {
        if is_param {
            self.param_text(&word)
        } else {
            Ok(word)
        }
    }

    /// `%w%`, `%%w%%`, `%%%w%%%` (the first `%` already read).
    fn fuzzy(&mut self) -> Result<Node, String> {
        let mut distance = 1u8;
        while distance < 3 && self.eat(&Tok::Percent) {
            distance += 1;
        }
        let term = match self.next() {
            Some(Tok::Term(w)) | Some(Tok::Number(w)) => w,
            Some(Tok::Param(name)) => self.param_text(&name)?,
            _ => {
                self.pos = self.pos.saturating_sub(1);
                return Err(self.syntax_error());
            }
        };
        for _ in 0..distance {
            self.expect(&Tok::Percent)?;
        }
        Ok(Node::Fuzzy { term, distance })
    }

    /// What follows `@field`: `|other…:` then text, or `:` then a tag set, a range, a geo
    /// filter, a vector range or text.
    fn field_body(&mut self, first: String) -> Result<Node, String> {
        let mut fields = vec![first];
        while self.eat(&Tok::Or) {
            match self.next() {
                Some(Tok::Term(name)) | Some(Tok::Number(name)) => fields.push(name),
                _ => {
                    self.pos = self.pos.saturating_sub(1);
                    return Err(self.syntax_error());
                }
            }
        }
        self.expect(&Tok::Colon)?;
        if fields.len() == 1 {
            match self.peek() {
                Some(Tok::LBrace) => {
                    self.pos += 1;
                    let field = fields.pop().unwrap_or_default();
                    return self.tag_set(field);
                }
                Some(Tok::LBracket) => {
                    self.pos += 1;
                    let field = fields.pop().unwrap_or_default();
                    return self.bracket(field);
                }
                Some(Tok::Term(w)) if w.is_empty() => {
                    self.pos += 1;
                    return Ok(Node::EmptyValue {
                        field: fields.pop().unwrap_or_default(),
                        tag_syntax: false,
                    });
                }
                _ => {}
            }
        }
        self.field_depth += 1;
        let node = self.text_unary();
        self.field_depth -= 1;
        Ok(Node::Fields {
            fields,
            node: Box::new(node?),
        })
    }

    /// The text a field modifier applies to: one atom (a parenthesised group for more), with
    /// its `-`/`~`.
    fn text_unary(&mut self) -> Result<Node, String> {
        match self.peek() {
            Some(Tok::Minus) => {
                self.pos += 1;
                Ok(match self.text_unary()? {
                    Node::Not(inner) => *inner,
                    node => Node::Not(Box::new(node)),
                })
            }
            Some(Tok::Tilde) => {
                self.pos += 1;
                Ok(Node::Optional(Box::new(self.text_unary()?)))
            }
            Some(
                Tok::LParen
                | Tok::Percent
                | Tok::Exact(_)
                | Tok::Term(_)
                | Tok::Number(_)
                | Tok::Param(_)
                | Tok::Prefix(..)
                | Tok::Suffix(..)
                | Tok::Contains(..),
            ) => self.atom(),
            _ => Err(self.syntax_error()),
        }
    }

    /// `{a | b c | d* | *e | *f* | $p}` (the `{` already read).
    fn tag_set(&mut self, field: String) -> Result<Node, String> {
        let mut values = Vec::new();
        loop {
            let mut words: Vec<String> = Vec::new();
            let mut affix: Option<TagValue> = None;
            loop {
                match self.peek() {
                    Some(Tok::Term(w)) | Some(Tok::Number(w)) | Some(Tok::Exact(w))
                        if affix.is_none() =>
                    {
                        let w = w.clone();
                        let exact = matches!(self.peek(), Some(Tok::Exact(_)));
                        words.push(if exact { unescape(w.as_bytes()) } else { w });
                    }
                    Some(Tok::Param(name)) if affix.is_none() => {
                        let name = name.clone();
                        words.push(self.param_text(&name)?);
                    }
                    Some(Tok::Prefix(w, p)) if words.is_empty() && affix.is_none() => {
                        let (w, p) = (w.clone(), *p);
                        affix = Some(TagValue::Prefix(self.affix(w, p)?));
                    }
                    Some(Tok::Suffix(w, p)) if words.is_empty() && affix.is_none() => {
                        let (w, p) = (w.clone(), *p);
                        affix = Some(TagValue::Suffix(self.affix(w, p)?));
                    }
                    Some(Tok::Contains(w, p)) if words.is_empty() && affix.is_none() => {
                        let (w, p) = (w.clone(), *p);
                        affix = Some(TagValue::Contains(self.affix(w, p)?));
                    }
                    _ => break,
                }
                self.pos += 1;
            }
            match affix {
                Some(value) => values.push(value),
                None if !words.is_empty() => values.push(TagValue::Exact(words.join(" "))),
                None => return Err(self.syntax_error()),
            }
            if self.eat(&Tok::RBrace) {
                break;
            }
            self.expect(&Tok::Or)?;
        }
        if values == [TagValue::Exact(String::new())] {
            return Ok(Node::EmptyValue {
                field,
                tag_syntax: true,
            });
        }
        Ok(Node::Tag { field, values })
    }

    /// A bound or coordinate inside `[…]`: a number, `inf`, `-$p` or `$p`.
    fn number_item(&mut self) -> Result<Option<f64>, String> {
        let negative = self.peek() == Some(&Tok::Minus)
            && matches!(self.peek_at(1), Some(Tok::Param(_) | Tok::Number(_)));
        if negative {
            self.pos += 1;
        }
        let sign = if negative { -1.0 } else { 1.0 };
        match self.peek().cloned() {
            Some(Tok::Number(n)) => {
                self.pos += 1;
                Ok(parse_number(&n).map(|v| sign * v))
            }
            Some(Tok::Param(name)) => {
                self.pos += 1;
                Ok(Some(sign * self.param_number(&name)?))
            }
            _ => Ok(None),
        }
    }

    /// After `@field:[`: a numeric range, a geo filter or a vector range.
    fn bracket(&mut self, field: String) -> Result<Node, String> {
        if let Some(Tok::Term(w)) = self.peek() {
            if w.eq_ignore_ascii_case("VECTOR_RANGE") {
                self.pos += 1;
                return self.vector_range(field);
            }
            // A word where a number must be.
            return Err(self.syntax_error());
        }
        let items = self.tokens[self.pos..]
            .iter()
            .take_while(|t| t.kind != Tok::RBracket)
            .filter(|t| !matches!(t.kind, Tok::Minus | Tok::LParen))
            .count();
        if items >= 3 {
            return self.geo(field);
        }
        let min = self.range_bound(true)?;
        if self.eat(&Tok::RBracket) {
            return Ok(Node::Numeric {
                field,
                min,
                max: min,
            });
        }
        let max = self.range_bound(false)?;
        if self.eat(&Tok::RBracket) {
            if min.value > max.value {
                return Err(format!(
                    "Invalid numeric range (min > max): @{field}:[{:.6} {:.6}]",
                    min.value, max.value
                ));
            }
            return Ok(Node::Numeric { field, min, max });
        }
        Err(self.syntax_error())
    }

    /// After `@field:[`: `lon lat radius unit]`.
    fn geo(&mut self, field: String) -> Result<Node, String> {
        let mut numbers = [0.0; 3];
        for n in &mut numbers {
            *n = match self.number_item()? {
                Some(v) => v,
                None => return Err(self.syntax_error()),
            };
        }
        let unit = match self.next() {
            Some(Tok::Term(u)) => u,
            Some(Tok::Param(name)) => self.param_text(&name)?,
            Some(Tok::Number(_)) => return Err("Invalid GeoFilter unit".into()),
            _ => {
                self.pos = self.pos.saturating_sub(1);
                return Err(self.syntax_error());
            }
        };
        self.expect(&Tok::RBracket)?;
        let metres = match unit.to_ascii_lowercase().as_str() {
            "m" => 1.0,
            "km" => 1000.0,
            "mi" => 1609.34,
            "ft" => 0.3048,
            _ => return Err("Invalid GeoFilter unit".into()),
        };
        let [lon, lat, radius] = numbers;
        Ok(Node::Geo {
            field,
            lon,
            lat,
            radius_m: radius * metres,
        })
    }

    /// `[(]number` inside a range; a parameter's value follows RediSearch's range parsing
    /// (its own `(` is read and ignored, as RediSearch does).
    fn range_bound(&mut self, is_min: bool) -> Result<Bound, String> {
        let inclusive = !self.eat(&Tok::LParen);
        let negative =
            self.peek() == Some(&Tok::Minus) && matches!(self.peek_at(1), Some(Tok::Param(_)));
        if negative {
            self.pos += 1;
        }
        match self.peek().cloned() {
            Some(Tok::Number(n)) => {
                self.pos += 1;
                match parse_number(&n) {
                    Some(value) => Ok(Bound { value, inclusive }),
                    None => {
                        self.pos = self.pos.saturating_sub(1);
                        Err(self.syntax_error())
                    }
                }
            }
            Some(Tok::Param(name)) => {
                self.pos += 1;
                let text = self.param_text(&name)?;
                let value = param_range_value(&text, is_min, negative)?;
                Ok(Bound { value, inclusive })
            }
            _ => Err(self.syntax_error()),
        }
    }

    /// After `@field:[VECTOR_RANGE`: `radius $blob]`.
    fn vector_range(&mut self, field: String) -> Result<Node, String> {
        let radius = match self.number_item()? {
            Some(r) => r,
            None => return Err(self.syntax_error()),
        };
        let vector = match self.next() {
            Some(Tok::Param(name)) => self.param(&name)?.to_vec(),
            _ => {
                self.pos = self.pos.saturating_sub(1);
                return Err(self.syntax_error());
            }
        };
        self.expect(&Tok::RBracket)?;
        Ok(Node::VectorRange {
            field,
            radius,
            vector,
            distance_as: None,
        })
    }

    /// `@field <op> value`; `!=` is the negation of `==`.
    fn numeric_op(&mut self, field: String, op: &str, value: &str) -> Result<Node, String> {
        let v = if let Some(rest) = value
            .strip_prefix(['+', '-'])
            .filter(|r| r.starts_with('$'))
        {
            let sign = if value.starts_with('-') { -1.0 } else { 1.0 };
            sign * self.param_number(&rest[1..])?
        } else if let Some(name) = value.strip_prefix('$') {
            self.param_number(name)?
        } else {
            match parse_number(value) {
                Some(v) => v,
                None => {
                    self.pos = self.pos.saturating_sub(1);
                    return Err(self.syntax_error());
                }
            }
        };
        let at = |value: f64, inclusive: bool| Bound { value, inclusive };
        let unbounded = |value: f64| Bound {
            value,
            inclusive: true,
        };
        let (min, max) = match op {
            "==" | "!=" => (at(v, true), at(v, true)),
            ">" => (at(v, false), unbounded(f64::INFINITY)),
            ">=" => (at(v, true), unbounded(f64::INFINITY)),
            "<" => (unbounded(f64::NEG_INFINITY), at(v, false)),
            _ => (unbounded(f64::NEG_INFINITY), at(v, true)),
        };
        let node = Node::Numeric { field, min, max };
        Ok(if op == "!=" {
            Node::Not(Box::new(node))
        } else {
            node
        })
    }

    /// Inside `=>[`: `KNN k @field $blob [NAME value]… [AS name]`.
    fn knn(&mut self) -> Result<Knn, String> {
        match self.next() {
            Some(Tok::Term(w)) if w.eq_ignore_ascii_case("KNN") => {}
            Some(Tok::Term(_)) => {
                self.pos = self.pos.saturating_sub(1);
                let t = &self.tokens[self.pos];
                return Err(format!(
                    "Syntax error: Expecting Vector Similarity command at offset {} near {}",
                    t.offset, t.raw
                ));
            }
            _ => {
                self.pos = self.pos.saturating_sub(1);
                return Err(self.syntax_error());
            }
        }
        let k = match self.next() {
            Some(Tok::Number(n)) if n.bytes().all(|b| b.is_ascii_digit()) => {
                n.parse::<usize>().ok()
            }
            Some(Tok::Param(name)) => {
                let text = self.param_text(&name)?;
                let k = text.parse::<usize>();
                Some(k.map_err(|_| {
                    format!("Invalid numeric value ({text}) for parameter `{name}`")
                })?)
            }
            _ => None,
        };
        let Some(k) = k else {
            self.pos = self.pos.saturating_sub(1);
            return Err(self.syntax_error());
        };
        let field = match self.next() {
            Some(Tok::Field(f)) => f,
            _ => {
                self.pos = self.pos.saturating_sub(1);
                return Err(self.syntax_error());
            }
        };
        let vector = match self.next() {
            Some(Tok::Param(name)) => self.param(&name)?.to_vec(),
            _ => {
                self.pos = self.pos.saturating_sub(1);
                return Err(self.syntax_error());
            }
        };
        let mut knn = Knn {
            k,
            field,
            vector,
            ef_runtime: None,
            score_as: None,
        };
        while let Some(Tok::Term(name)) = self.peek().cloned() {
            self.pos += 1;
            let value = match self.next() {
                Some(Tok::Term(v)) | Some(Tok::Number(v)) => v,
                Some(Tok::Param(p)) => self.param_text(&p)?,
                _ => {
                    self.pos = self.pos.saturating_sub(1);
                    return Err(self.syntax_error());
                }
            };
            if name.eq_ignore_ascii_case("AS") {
                knn.score_as = Some(value);
                break;
            }
            apply_knn_attribute(&mut knn, &name.to_ascii_lowercase(), &value)?;
        }
        Ok(knn)
    }

    /// `name: value; …}` after `=>{` (the `}` read too); parameter values substituted.
    fn attributes(&mut self) -> Result<Vec<Attribute>, String> {
        let mut out = Vec::new();
        loop {
            match self.next() {
                Some(Tok::RBrace) => return Ok(out),
                Some(Tok::Semicolon) => continue,
                Some(Tok::Param(name)) => {
                    self.expect(&Tok::Colon)?;
                    let value = match self.next() {
                        Some(Tok::Term(v)) | Some(Tok::Number(v)) => v,
                        Some(Tok::Param(p)) => self.param_text(&p)?,
                        _ => {
                            self.pos = self.pos.saturating_sub(1);
                            return Err(self.syntax_error());
                        }
                    };
                    out.push((name.to_ascii_lowercase(), value));
                }
                _ => {
                    self.pos = self.pos.saturating_sub(1);
                    return Err(self.syntax_error());
                }
            }
        }
    }
}

/// `a`, `b` → `And/Or([a, b])`, with nested nodes of the same kind merged and a single node
/// returned as itself.
fn flatten(nodes: Vec<Node>, union: bool) -> Node {
    let mut out = Vec::with_capacity(nodes.len());
    for node in nodes {
        match (union, node) {
            (true, Node::Or(inner)) if !inner.is_empty() => out.extend(inner),
            (false, Node::And(inner)) => out.extend(inner),
            (_, node) => out.push(node),
        }
    }
    if out.len() == 1 {
        return out.pop().unwrap_or(Node::All);
    }
    if union {
        Node::Or(out)
    } else {
        Node::And(out)
    }
}

/// A quoted phrase's words (split where RediSearch's tokenizer splits, escapes honoured).
fn phrase(inner: &str) -> Node {
    let s = inner.as_bytes();
    let mut terms = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let n = word_len(s, i);
        if n == 0 {
            i += 1;
        } else {
            terms.push(unescape(&s[i..i + n]));
            i += n;
        }
    }
    Node::Phrase {
        terms,
        slop: None,
        in_order: true,
    }
}

/// A number as the query writes it: decimal, exponent, `inf`, `+inf`, `-inf` (not NaN).
fn parse_number(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    match lower.trim_start_matches('+') {
        "inf" => return Some(f64::INFINITY),
        "-inf" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    let v: f64 = text.parse().ok()?;
    v.is_finite().then_some(v)
}

/// A range bound given by a parameter, as RediSearch reads it: an optional `(` (ignored), `inf`
/// only at the open end, any other finite number.
fn param_range_value(text: &str, is_min: bool, negative: bool) -> Result<f64, String> {
    let s = text.strip_prefix('(').unwrap_or(text);
    let lower = s.to_ascii_lowercase();
    let plain = lower.strip_prefix('+').unwrap_or(&lower);
    let sign = if negative { -1.0 } else { 1.0 };
    if is_min && ((!negative && lower == "-inf") || (negative && plain == "inf")) {
        return Ok(f64::NEG_INFINITY);
    }
    if !is_min && ((!negative && plain == "inf") || (negative && lower == "-inf")) {
        return Ok(f64::INFINITY);
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && !plain.starts_with("inf") && !plain.starts_with("nan") => {
            Ok(sign * v)
        }
        _ => Err(format!(
            "{}: {s}",
            if is_min {
                "Bad lower range"
            } else {
                "Bad upper range"
            }
        )),
    }
}

fn invalid_value(name: &str, value: &str) -> String {
    format!("Invalid value ({value}) for `{name}`")
}

fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// Applies `$slop`, `$inorder`, `$weight`, `$phonetic` or `$yield_distance_as` to a node.
/// Slop and in-order turn an intersection of plain words into a [`Node::Phrase`] (RediSearch's
/// intersection honours them the same way); weight and phonetic are checked and not kept.
fn apply_attribute(node: &mut Node, name: &str, value: &str) -> Result<(), String> {
    if let Node::Fields { node, .. } = node {
        return apply_attribute(node, name, value);
    }
    if value.is_empty() {
        return Err(invalid_value(name, value));
    }
    match name {
        "slop" | "inorder" => {
            let slop_value = if name == "slop" {
                match value.parse::<i64>() {
                    Ok(n) if n >= -1 => Some(n),
                    _ => return Err(invalid_value(name, value)),
                }
            } else {
                None
            };
            let order = if name == "inorder" {
                Some(parse_bool(value).ok_or_else(|| invalid_value(name, value))?)
            } else {
                None
            };
            if let Node::And(children) = node {
                if children.iter().all(|c| matches!(c, Node::Term(_))) {
                    let terms = children
                        .iter()
                        .filter_map(|c| match c {
                            Node::Term(t) => Some(t.clone()),
                            _ => None,
                        })
                        .collect();
                    *node = Node::Phrase {
                        terms,
                        slop: None,
                        in_order: false,
                    };
                }
            }
            if let Node::Phrase { slop, in_order, .. } = node {
                if let Some(n) = slop_value {
                    // -1 is RediSearch's "no slop limit".
                    *slop = u32::try_from(n).ok();
                    if n < 0 {
                        *in_order = false;
                    }
                }
                if let Some(b) = order {
                    *in_order = b;
                }
            }
            Ok(())
        }
        "weight" => match value.parse::<f64>() {
            Ok(w) if w >= 0.0 => Ok(()),
            _ => Err(invalid_value(name, value)),
        },
        "phonetic" => parse_bool(value)
            .map(|_| ())
            .ok_or_else(|| invalid_value(name, value)),
        "yield_distance_as" => match node {
            Node::VectorRange { distance_as, .. } => {
                *distance_as = Some(value.to_string());
                Ok(())
            }
            _ => Err(format!("Invalid attribute {name}")),
        },
        "epsilon" if matches!(node, Node::VectorRange { .. }) => match value.parse::<f64>() {
            Ok(e) if e > 0.0 => Ok(()),
            _ => Err(invalid_value(name, value)),
        },
        _ => Err(format!("Invalid attribute {name}")),
    }
}

/// Applies one of KNN's settings (`EF_RUNTIME`, `EPSILON`, `HYBRID_POLICY`, `BATCH_SIZE`,
/// `YIELD_DISTANCE_AS`), given inside the brackets or as `=>{$name: value}` after them.
fn apply_knn_attribute(knn: &mut Knn, name: &str, value: &str) -> Result<(), String> {
    let bad = || "Invalid value was given (Error parsing vector similarity parameters)".to_string();
    match name {
        "ef_runtime" => {
            knn.ef_runtime = Some(
                value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(bad)?,
            )
        }
        "yield_distance_as" => knn.score_as = Some(value.to_string()),
        "epsilon" => {
            value
                .parse::<f64>()
                .ok()
                .filter(|e| *e > 0.0)
                .ok_or_else(bad)?;
        }
        "batch_size" => {
            value
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(bad)?;
        }
        "hybrid_policy" => {
            if !["adhoc_bf", "batches"].contains(&value.to_ascii_lowercase().as_str()) {
                return Err("invalid hybrid policy was given".into());
            }
        }
        _ => return Err("Invalid option (Error parsing vector similarity parameters)".into()),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
