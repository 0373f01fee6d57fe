//! JSONPath as RedisJSON reads it, and the legacy (RedisJSON 1.x) dotted paths it translates to
//! JSONPath. A query is parsed once into [`Query`]; [`Query::select`] evaluates it on a document
//! and gives every match with its location (the keys and indexes from the root), which is what the
//! writing commands need to change a document in place and what a search index needs to read a
//! document's values.
//!
//! Served: `$`, `.name`, `["name", 'other']`, `.*` / `[*]`, `..name` / `..*` / `..[…]`
//! (the node itself and every descendant, in document order), `[0, -1]` (an index past either
//! end clamps as RedisJSON's does), slices `[start:end:step]`, and filters `[?(…)]` with `@`/`$`
//! relative paths, `== != < <= > >=`, `=~` (a regular expression found anywhere in the string),
//! `&&`, `||`, `!` and parentheses. Not served: RedisJSON's arithmetic, functions and
//! projections in filters.

use serde_json::Value as J;

/// One step of a located path: an object member or an array element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A parsed path; `legacy` says it was written in the 1.x syntax (single-value replies).
#[derive(Clone, Debug)]
pub struct Query {
    segments: Vec<Segment>,
    pub legacy: bool,
}

#[derive(Clone, Debug)]
enum Segment {
    Child(Selector),
    /// `..`: the selector on the node itself and on every descendant.
    Descendant(Selector),
}

#[derive(Clone, Debug)]
enum Selector {
    Names(Vec<String>),
    Wildcard,
    Indexes(Vec<i64>),
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: usize,
    },
    Filter(Box<Filter>),
}

#[derive(Clone, Debug)]
enum Filter {
    Or(Vec<Filter>),
    And(Vec<Filter>),
    Not(Box<Filter>),
    Test(Operand),
    Compare(Operand, Op, Operand),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Match,
}

#[derive(Clone, Debug)]
enum Operand {
    /// `@…` (from the current node) or `$…` (from the document root).
    Path {
        from_root: bool,
        segments: Vec<Segment>,
    },
    Literal(J),
}

impl Query {
    /// Parses `text` in either syntax: a JSONPath starts with `$`; anything else is a legacy path
    /// (`.` is the root, `.a.b` and `a.b` are `$.a.b`).
    pub fn parse(text: &str) -> Result<Query, String> {
        let (jsonpath, legacy) = if text.starts_with('$') {
            (text.to_string(), false)
        } else if text == "." {
            ("$".to_string(), true)
        } else if text.starts_with('.') {
            (format!("${text}"), true)
        } else {
            (format!("$.{text}"), true)
        };
        let mut p = Parser {
            s: jsonpath.as_bytes(),
            at: 1,
            depth: 0,
        };
        let segments = p.segments(false)?;
        if p.at < p.s.len() {
            return Err(p.error("expected a path element"));
        }
        Ok(Query { segments, legacy })
    }

    /// True for `$` (and the legacy `.`): the whole document.
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// Every match in `doc`, in RedisJSON's order, with its location.
    pub fn select<'a>(&self, doc: &'a J) -> Vec<(Vec<Step>, &'a J)> {
        let mut out = Vec::new();
        let mut at = Vec::new();
        walk(&self.segments, doc, doc, &mut at, &mut out);
        out
    }

    /// The matched values only.
    pub fn values<'a>(&self, doc: &'a J) -> Vec<&'a J> {
        self.select(doc).into_iter().map(|(_, v)| v).collect()
    }

    /// For a path that names one place (names and single indexes only): the path of its parent
    /// and its last step, so that JSON.SET can create a member that does not exist yet.
    pub fn split_last(&self) -> Result<Option<(Query, LastStep)>, &'static str> {
        let mut segments = self.segments.clone();
        let Some(last) = segments.pop() else {
            return Ok(None);
        };
        let static_step = |s: &Segment| match s {
            Segment::Child(Selector::Names(n)) if n.len() == 1 => true,
            Segment::Child(Selector::Indexes(i)) if i.len() == 1 => true,
            _ => false,
        };
        if !segments.iter().all(static_step) || !static_step(&last) {
            return Err("Err wrong static path");
        }
        let step = match last {
            Segment::Child(Selector::Names(mut n)) => LastStep::Key(n.remove(0)),
            _ => LastStep::Index,
        };
        Ok(Some((
            Query {
                segments,
                legacy: self.legacy,
            },
            step,
        )))
    }
}

/// The value at `steps` below `doc`.
pub fn lookup<'a>(doc: &'a J, steps: &[Step]) -> Option<&'a J> {
    steps.iter().try_fold(doc, |node, step| match (node, step) {
        (J::Object(map), Step::Key(k)) => map.get(k.as_str()),
        (J::Array(items), Step::Index(i)) => items.get(*i),
        _ => None,
    })
}

/// The last step of a static path.
pub enum LastStep {
    Key(String),
    Index,
}

/// Applies `segments` to `node`, pushing each match (its location is `at`).
fn walk<'a>(
    segments: &[Segment],
    node: &'a J,
    root: &'a J,
    at: &mut Vec<Step>,
    out: &mut Vec<(Vec<Step>, &'a J)>,
) {
    let Some((first, rest)) = segments.split_first() else {
        out.push((at.clone(), node));
        return;
    };
    match first {
        Segment::Child(sel) => apply(sel, rest, node, root, at, out),
        Segment::Descendant(sel) => descend(sel, rest, node, root, at, out),
    }
}

/// `..`: the selector on `node`, then on each descendant in document order.
fn descend<'a>(
    sel: &Selector,
    rest: &[Segment],
    node: &'a J,
    root: &'a J,
    at: &mut Vec<Step>,
    out: &mut Vec<(Vec<Step>, &'a J)>,
) {
    apply(sel, rest, node, root, at, out);
    for_each_child(node, at, &mut |child, at| {
        descend(sel, rest, child, root, at, out)
    });
}

fn for_each_child<'a>(node: &'a J, at: &mut Vec<Step>, f: &mut dyn FnMut(&'a J, &mut Vec<Step>)) {
    match node {
        J::Object(map) => {
            for (k, v) in map {
                at.push(Step::Key(k.clone()));
                f(v, at);
                at.pop();
            }
        }
        J::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                at.push(Step::Index(i));
                f(v, at);
                at.pop();
            }
        }
        _ => {}
    }
}

/// RedisJSON's index: negative counts from the end, and either end clamps (so `[-10]` of three
/// elements is the first, `[10]` none).
fn clamp_index(i: i64, len: usize) -> usize {
    if i >= 0 {
        (i as u64).min(len as u64) as usize
    } else {
        (i + len as i64).max(0) as usize
    }
}

fn apply<'a>(
    sel: &Selector,
    rest: &[Segment],
    node: &'a J,
    root: &'a J,
    at: &mut Vec<Step>,
    out: &mut Vec<(Vec<Step>, &'a J)>,
) {
    let mut visit = |step: Step, child: &'a J, at: &mut Vec<Step>| {
        at.push(step);
        walk(rest, child, root, at, out);
        at.pop();
    };
    match (sel, node) {
        (Selector::Names(names), J::Object(map)) => {
            for name in names {
                if let Some(v) = map.get(name) {
                    visit(Step::Key(name.clone()), v, at);
                }
            }
        }
        (Selector::Wildcard, _) => {
            for_each_child(node, at, &mut |child, at| walk(rest, child, root, at, out))
        }
        (Selector::Indexes(list), J::Array(items)) => {
            for &i in list {
                let i = clamp_index(i, items.len());
                if let Some(v) = items.get(i) {
                    visit(Step::Index(i), v, at);
                }
            }
        }
        (Selector::Slice { start, end, step }, J::Array(items)) => {
            let len = items.len();
            let from = start.map_or(0, |s| clamp_index(s, len));
            let to = end.map_or(len, |e| clamp_index(e, len));
            for i in (from..to).step_by(*step) {
                visit(Step::Index(i), &items[i], at);
            }
        }
        (Selector::Filter(filter), J::Object(_) | J::Array(_)) => {
            for_each_child(node, at, &mut |child, at| {
                if test(filter, child, root) {
                    walk(rest, child, root, at, out);
                }
            });
        }
        _ => {}
    }
}

/// What a filter operand evaluates to: nothing, one value, several (a path with many matches),
/// or a literal.
enum Term<'a> {
    Nothing,
    One(&'a J),
    Many(Vec<&'a J>),
}

fn term<'a>(operand: &'a Operand, node: &'a J, root: &'a J) -> Term<'a> {
    match operand {
        Operand::Literal(v) => Term::One(v),
        Operand::Path {
            from_root,
            segments,
        } => {
            let start = if *from_root { root } else { node };
            let mut out = Vec::new();
            walk(segments, start, root, &mut Vec::new(), &mut out);
            match out.len() {
                0 => Term::Nothing,
                1 => Term::One(out[0].1),
                _ => Term::Many(out.into_iter().map(|(_, v)| v).collect()),
            }
        }
    }
}

fn test(filter: &Filter, node: &J, root: &J) -> bool {
    match filter {
        Filter::Or(parts) => parts.iter().any(|f| test(f, node, root)),
        Filter::And(parts) => parts.iter().all(|f| test(f, node, root)),
        Filter::Not(inner) => !test(inner, node, root),
        Filter::Test(operand) => !matches!(term(operand, node, root), Term::Nothing),
        Filter::Compare(a, op, b) => {
            let (a, b) = (term(a, node, root), term(b, node, root));
            let any = |x: &Term<'_>, f: &mut dyn FnMut(&J) -> bool| match x {
                Term::Nothing => false,
                Term::One(v) => f(v),
                Term::Many(vs) => vs.iter().any(|v| f(v)),
            };
            any(&a, &mut |x| any(&b, &mut |y| compare(x, *op, y)))
        }
    }
}

/// One comparison of two values: numbers across integer and float, strings, booleans and nulls
/// with their own kind; `==` of arrays or objects compares them whole; nothing else matches.
fn compare(a: &J, op: Op, b: &J) -> bool {
    use std::cmp::Ordering;
    if op == Op::Match {
        return match (a, b) {
            (J::String(s), J::String(re)) => regex::Regex::new(re).is_ok_and(|re| re.is_match(s)),
            _ => false,
        };
    }
    let order = match (a, b) {
        (J::Number(x), J::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => x
                .as_f64()
                .zip(y.as_f64())
                .and_then(|(x, y)| x.partial_cmp(&y)),
        },
        (J::String(x), J::String(y)) => Some(x.cmp(y)),
        (J::Bool(x), J::Bool(y)) => Some(x.cmp(y)),
        (J::Null, J::Null) => Some(Ordering::Equal),
        (J::Array(_), J::Array(_)) | (J::Object(_), J::Object(_))
            if op == Op::Eq || op == Op::Ne =>
        {
            Some(if a == b {
                Ordering::Equal
            } else {
                Ordering::Less
            })
        }
        _ => None,
    };
    match (op, order) {
        (Op::Ne, None) => true,
        (_, None) => false,
        (Op::Eq, Some(o)) => o.is_eq(),
        (Op::Ne, Some(o)) => o.is_ne(),
        (Op::Lt, Some(o)) => o.is_lt(),
        (Op::Le, Some(o)) => o.is_le(),
        (Op::Gt, Some(o)) => o.is_gt(),
        (Op::Ge, Some(o)) => o.is_ge(),
        (Op::Match, _) => false,
    }
}

/// The characters of a dotted member name (RedisJSON's `literal`).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_`+#%$^/:".contains(&b)
}

struct Parser<'s> {
    s: &'s [u8],
    at: usize,
    /// Brackets and parentheses open around the current position, at most [`MAX_NESTING`].
    depth: usize,
}

/// RedisJSON's limit on nested brackets and parentheses in a path (the parser recurses into them).
const MAX_NESTING: usize = 128;

impl Parser<'_> {
    fn error(&self, what: &str) -> String {
        format!("Error occurred at position {}, {what}", self.at)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        self.spaces();
        if self.eat(b) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{}'", b as char)))
        }
    }

    /// Path elements until something that is not one (the end, or an operator in a filter).
    fn segments(&mut self, in_filter: bool) -> Result<Vec<Segment>, String> {
        let mut out = Vec::new();
        loop {
            match self.peek() {
                Some(b'.') if self.s.get(self.at + 1) == Some(&b'.') => {
                    self.at += 2;
                    let sel = match self.peek() {
                        Some(b'*') => {
                            self.at += 1;
                            Selector::Wildcard
                        }
                        Some(b'[') => self.bracket()?,
                        _ => Selector::Names(vec![self.name()?]),
                    };
                    out.push(Segment::Descendant(sel));
                }
                Some(b'.') => {
                    self.at += 1;
                    let sel = match self.peek() {
                        Some(b'*') => {
                            self.at += 1;
                            Selector::Wildcard
                        }
                        Some(b'[') => self.bracket()?,
                        _ => Selector::Names(vec![self.name()?]),
                    };
                    out.push(Segment::Child(sel));
                }
                Some(b'[') => out.push(Segment::Child(self.bracket()?)),
                None => return Ok(out),
                Some(_) if in_filter => return Ok(out),
                Some(_) => return Err(self.error("expected '.', '..' or '['")),
            }
        }
    }

    fn name(&mut self) -> Result<String, String> {
        let from = self.at;
        while self.peek().is_some_and(is_name_byte) {
            self.at += 1;
        }
        if self.at == from {
            return Err(self.error("expected a member name"));
        }
        Ok(String::from_utf8_lossy(&self.s[from..self.at]).into_owned())
    }

    /// `[…]`: names, indexes, a slice, `*` or a filter.
    fn bracket(&mut self) -> Result<Selector, String> {
        self.at += 1; // '['
        self.nest()?;
        self.spaces();
        let sel = match self.peek() {
            Some(b'*') => {
                self.at += 1;
                Selector::Wildcard
            }
            Some(b'?') => {
                self.at += 1;
                Selector::Filter(Box::new(self.filter()?))
            }
            Some(b'"' | b'\'') => {
                let mut names = vec![self.string()?];
                loop {
                    self.spaces();
                    if !self.eat(b',') {
                        break;
                    }
                    self.spaces();
                    names.push(self.string()?);
                }
                Selector::Names(names)
            }
            _ => self.indexes()?,
        };
        self.expect(b']')?;
        self.depth -= 1;
        Ok(sel)
    }

    fn nest(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(format!(
                "Error occurred at position 0, JSONPath nesting too deep (max depth {MAX_NESTING})"
            ));
        }
        Ok(())
    }

    fn indexes(&mut self) -> Result<Selector, String> {
        let first = self.opt_int()?;
        self.spaces();
        if self.eat(b':') {
            self.spaces();
            let end = self.opt_int()?;
            self.spaces();
            let mut step = 1;
            if self.eat(b':') {
                self.spaces();
                if let Some(s) = self.opt_int()? {
                    if s <= 0 {
                        return Err(self.error("expected a positive step"));
                    }
                    step = s as usize;
                }
            }
            return Ok(Selector::Slice {
                start: first,
                end,
                step,
            });
        }
        let Some(first) = first else {
            return Err(self.error("expected an index, a slice, a name, '*' or a filter"));
        };
        let mut list = vec![first];
        loop {
            self.spaces();
            if !self.eat(b',') {
                break;
            }
            self.spaces();
            list.push(
                self.opt_int()?
                    .ok_or_else(|| self.error("expected an index"))?,
            );
        }
        Ok(Selector::Indexes(list))
    }

    /// An integer index, saturating as RedisJSON's does.
    fn opt_int(&mut self) -> Result<Option<i64>, String> {
        let from = self.at;
        self.eat(b'-');
        let digits = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        if self.at == digits {
            self.at = from;
            return Ok(None);
        }
        let text = std::str::from_utf8(&self.s[from..self.at]).unwrap_or("0");
        Ok(Some(text.parse::<i64>().unwrap_or(if from == digits {
            i64::MAX
        } else {
            i64::MIN
        })))
    }

    /// A quoted string: `"…"` or `'…'`, where a backslash escapes the quote or itself.
    fn string(&mut self) -> Result<String, String> {
        let quote = self.peek().ok_or_else(|| self.error("expected a string"))?;
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b) if b == quote => {
                    self.at += 1;
                    break;
                }
                Some(b'\\') if matches!(self.s.get(self.at + 1), Some(&c) if c == quote || c == b'\\') =>
                {
                    out.push(self.s[self.at + 1]);
                    self.at += 2;
                }
                Some(b) => {
                    out.push(b);
                    self.at += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|_| self.error("expected UTF-8 text"))
    }

    /// `a || b`, where `&&` binds tighter.
    fn filter(&mut self) -> Result<Filter, String> {
        let mut ors = vec![self.conjunction()?];
        loop {
            self.spaces();
            if self.s[self.at..].starts_with(b"||") {
                self.at += 2;
                ors.push(self.conjunction()?);
            } else {
                break;
            }
        }
        Ok(if ors.len() == 1 {
            ors.remove(0)
        } else {
            Filter::Or(ors)
        })
    }

    fn conjunction(&mut self) -> Result<Filter, String> {
        let mut ands = vec![self.unary()?];
        loop {
            self.spaces();
            if self.s[self.at..].starts_with(b"&&") {
                self.at += 2;
                ands.push(self.unary()?);
            } else {
                break;
            }
        }
        Ok(if ands.len() == 1 {
            ands.remove(0)
        } else {
            Filter::And(ands)
        })
    }

    fn unary(&mut self) -> Result<Filter, String> {
        self.spaces();
        if self.peek() == Some(b'!') && self.s.get(self.at + 1) != Some(&b'=') {
            self.at += 1;
            self.nest()?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Filter::Not(Box::new(inner)));
        }
        if self.eat(b'(') {
            self.nest()?;
            let inner = self.filter()?;
            self.expect(b')')?;
            self.depth -= 1;
            return Ok(inner);
        }
        let left = self.operand()?;
        self.spaces();
        let op = [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("=~", Op::Match),
            ("<", Op::Lt),
            (">", Op::Gt),
        ]
        .into_iter()
        .find(|(text, _)| self.s[self.at..].starts_with(text.as_bytes()));
        let Some((text, op)) = op else {
            return Ok(Filter::Test(left));
        };
        self.at += text.len();
        self.spaces();
        let right = self.operand()?;
        Ok(Filter::Compare(left, op, right))
    }

    fn operand(&mut self) -> Result<Operand, String> {
        match self.peek() {
            Some(b @ (b'@' | b'$')) => {
                self.at += 1;
                let segments = self.segments(true)?;
                Ok(Operand::Path {
                    from_root: b == b'$',
                    segments,
                })
            }
            Some(b'"' | b'\'') => Ok(Operand::Literal(J::String(self.string()?))),
            _ => {
                for (word, value) in [
                    ("true", J::Bool(true)),
                    ("false", J::Bool(false)),
                    ("null", J::Null),
                ] {
                    if self.s[self.at..].starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return Ok(Operand::Literal(value));
                    }
                }
                self.number()
            }
        }
    }

    fn number(&mut self) -> Result<Operand, String> {
        let from = self.at;
        self.eat(b'-');
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_digit() || b == b'.' || b == b'e' || b == b'E')
        {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.s[from..self.at]).unwrap_or("");
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Operand::Literal(J::from(i)));
        }
        match text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
        {
            Some(n) => Ok(Operand::Literal(J::Number(n))),
            None => {
                self.at = from;
                Err(self.error("expected a path, a string, a number, true, false or null"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(path: &str, doc: &J) -> Vec<J> {
        Query::parse(path)
            .unwrap()
            .values(doc)
            .into_iter()
            .cloned()
            .collect()
    }

    #[test]
    fn legacy_paths_translate_to_jsonpath() {
        let doc = json!({"a": {"b": [10, 20, 30]}, "x y": 1});
        assert_eq!(values(".", &doc), vec![doc.clone()]);
        assert_eq!(values(".a.b[0]", &doc), vec![json!(10)]);
        assert_eq!(values("a.b[-1]", &doc), vec![json!(30)]);
        assert_eq!(values("[\"x y\"]", &doc), vec![json!(1)]);
        assert!(Query::parse(".a").unwrap().legacy);
        assert!(!Query::parse("$.a").unwrap().legacy);
    }

    #[test]
    fn descendants_come_in_document_order() {
        let doc = json!({"a": 1, "b": {"a": 2, "c": {"a": 3}}, "d": [{"a": 4}]});
        assert_eq!(
            values("$..a", &doc),
            vec![json!(1), json!(2), json!(3), json!(4)]
        );
        let located = Query::parse("$..a").unwrap().select(&doc);
        assert_eq!(
            located[3].0,
            vec![Step::Key("d".into()), Step::Index(0), Step::Key("a".into())]
        );
    }

    #[test]
    fn indexes_slices_and_unions() {
        let doc = json!([0, 1, 2, 3, 4]);
        assert_eq!(values("$[0,2]", &doc), vec![json!(0), json!(2)]);
        assert_eq!(values("$[-10]", &doc), vec![json!(0)]);
        assert!(values("$[10]", &doc).is_empty());
        assert_eq!(values("$[1:3]", &doc), vec![json!(1), json!(2)]);
        assert_eq!(values("$[::2]", &doc), vec![json!(0), json!(2), json!(4)]);
        assert_eq!(values("$[-2:]", &doc), vec![json!(3), json!(4)]);
        assert_eq!(values("$[*]", &doc).len(), 5);
        let obj = json!({"a": 1, "b": 2, "c": 3});
        assert_eq!(values("$['c','a']", &obj), vec![json!(3), json!(1)]);
    }

    #[test]
    fn filters_compare_numbers_strings_and_paths() {
        let doc = json!({"items": [
            {"n": 1, "s": "apple", "ok": true},
            {"n": 2.5, "s": "banana", "ok": false},
            {"n": 3, "s": "cherry"}
        ], "limit": 2});
        assert_eq!(
            values("$.items[?(@.n>1)].s", &doc),
            vec![json!("banana"), json!("cherry")]
        );
        assert_eq!(
            values("$.items[?(@.n<=$.limit)].s", &doc),
            vec![json!("apple")]
        );
        assert_eq!(values("$.items[?(@.s=~\"an\")].n", &doc), vec![json!(2.5)]);
        assert_eq!(
            values("$.items[?(@.ok)].n", &doc),
            vec![json!(1), json!(2.5)]
        );
        assert_eq!(values("$.items[?(!@.ok)].n", &doc), vec![json!(3)]);
        assert_eq!(
            values("$.items[?(@.n==1 || @.s=='cherry' && @.n>2)].n", &doc),
            vec![json!(1), json!(3)]
        );
        assert_eq!(values("$.items[?@.ok==false].n", &doc), vec![json!(2.5)]);
        assert!(values("$.items[?(@.s>1)]", &doc).is_empty());
    }

    #[test]
    fn static_paths_split_for_creation() {
        let (parent, last) = Query::parse("$.a.b")
            .unwrap()
            .split_last()
            .unwrap()
            .unwrap();
        assert_eq!(parent.segments.len(), 1);
        assert!(matches!(last, LastStep::Key(k) if k == "b"));
        assert!(Query::parse("$..a").unwrap().split_last().is_err());
        assert!(Query::parse("$").unwrap().split_last().unwrap().is_none());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("$[?({}@.a{})]", "(".repeat(100_000), ")".repeat(100_000));
        assert!(Query::parse(&deep)
            .unwrap_err()
            .contains("nesting too deep"));
        let negations = format!("$[?({}@.a)]", "!".repeat(100_000));
        assert!(Query::parse(&negations).is_err());
        let ok = format!("$[?({}@.a{})]", "(".repeat(100), ")".repeat(100));
        assert!(Query::parse(&ok).is_ok());
    }

    #[test]
    fn bad_paths_are_errors() {
        for bad in [
            "$.",
            "$[",
            "$[1",
            "$a",
            "$.a[?(@.b==)]",
            "$['a]",
            "a..",
            "$[1:2:0]",
        ] {
            assert!(Query::parse(bad).is_err(), "{bad}");
        }
    }
}
