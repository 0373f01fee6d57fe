//! The JSON data type (RedisJSON's `ReJSON-RL`): a document tree (serde_json's value with its
//! objects in insertion order, as RedisJSON keeps them), its text form with JSON.GET's
//! INDENT/NEWLINE/SPACE, and the in-place edits the JSON.* commands make at located paths
//! ([`path`]). Numbers are serde_json's: integers within i64/u64 stay integers, everything else
//! is an f64 printed in its shortest form with a `.0` when whole (`1.0`, `1e300`), and a number
//! no f64 holds (`1e400`) is a parse error, as in RedisJSON (which parses with serde_json too).
//!
//! A stored document is a [`Doc`]: its compact text, its tree, or both, each made from the
//! other when first asked for ([`compact`] makes the text of a root JSON.SET without a tree).

mod compact;
pub mod path;

use bytes::Bytes;
pub use path::{Query, Step};
pub use serde_json::Value as Json;
use std::cmp::Ordering;
use std::sync::OnceLock;

/// RedisJSON's nesting limit: a document never gets this deep.
pub const MAX_DEPTH: usize = 128;

/// Parses a JSON text; the error is serde_json's message, which RedisJSON replies as it is.
pub fn parse(text: &[u8]) -> Result<Json, String> {
    let text = std::str::from_utf8(text).map_err(|_| NOT_UTF8.to_string())?;
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// A stored document, held as its compact text (what a root JSON.GET answers, what RDB and
/// DEBUG DIGEST read), as its tree (what a path needs), or as both; at least one is always
/// there, and when both are, the text is the tree's print. Whichever is missing is made from the
/// other the first time it is asked for and kept (a read holds the key shared, hence the cells):
/// a document written whole and read whole never gets a tree, one changed by paths is printed
/// once per change, not per read. Every change goes through [`Doc::tree_mut`], which drops the
/// text, so a stale text cannot be answered.
#[derive(Clone, Debug)]
pub struct Doc {
    text: OnceLock<Bytes>,
    tree: OnceLock<Json>,
}

impl Doc {
    /// Parses a document as JSON.SET takes it at the root: straight to its compact text where
    /// [`compact`] can, else through the tree; the error is [`parse`]'s.
    pub fn parse(text: &[u8]) -> Result<Doc, String> {
        match compact::compact(text) {
            Some(compact) => Ok(Doc {
                text: OnceLock::from(Bytes::from(compact)),
                tree: OnceLock::new(),
            }),
            None => parse(text).map(Doc::from),
        }
    }

    /// The document's tree, parsed from its text the first time.
    pub fn tree(&self) -> &Json {
        self.tree.get_or_init(|| {
            // The text is serde_json's own print of a value (or what `compact` proved equal to
            // one) within serde_json's nesting limit, so parsing it back cannot fail.
            let text = self.text.get().map_or(&b""[..], |t| &t[..]);
            serde_json::from_slice(text).unwrap_or(Json::Null)
        })
    }

    /// The tree for a change: the text is dropped (printed again when next asked for).
    pub fn tree_mut(&mut self) -> &mut Json {
        self.tree();
        self.text = OnceLock::new();
        self.tree
            .get_mut()
            .expect("tree() has just filled the cell")
    }

    /// The document's compact text (JSON.GET with no layout options), printed the first time.
    pub fn text(&self) -> &Bytes {
        self.text
            .get_or_init(|| Bytes::from(to_text(self.tree(), Layout::default())))
    }

    /// The bytes the document holds (MEMORY USAGE): the text and the tree that are there.
    pub fn memory(&self) -> usize {
        std::mem::size_of::<Doc>()
            + self.text.get().map_or(0, Bytes::len)
            + self.tree.get().map_or(0, memory)
    }

    /// What freeing the document walks (UNLINK's effort): one buffer for a text alone.
    pub fn free_effort(&self) -> usize {
        self.tree.get().map_or(1, node_count)
    }
}

impl From<Json> for Doc {
    fn from(tree: Json) -> Doc {
        Doc {
            text: OnceLock::new(),
            tree: OnceLock::from(tree),
        }
    }
}

/// RedisJSON's reply for an argument that is not UTF-8 text.
pub const NOT_UTF8: &str = "Couldn't parse as UTF-8 string";

/// The nesting depth of a value: 0 for a scalar, one more than its deepest child for a container.
pub fn depth(v: &Json) -> usize {
    match v {
        Json::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Json::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// JSON.TYPE's name of a value.
pub fn type_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_f64() => "number",
        Json::Number(_) => "integer",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// JSON.GET's layout options: what goes between levels, before each nested line and after `:`.
#[derive(Clone, Copy, Default)]
pub struct Layout<'a> {
    pub indent: Option<&'a [u8]>,
    pub newline: Option<&'a [u8]>,
    pub space: Option<&'a [u8]>,
}

impl Layout<'_> {
    /// No option given: the compact text.
    pub fn is_compact(&self) -> bool {
        self.indent.is_none() && self.newline.is_none() && self.space.is_none()
    }
}

/// The JSON text of anything serde can write (a value, a list of values, a map of path to
/// values), laid out as `layout` says.
pub fn to_text<T: serde::Serialize + ?Sized>(v: &T, layout: Layout<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        Laid {
            layout,
            level: 0,
            has_value: false,
        },
    );
    // Writing to a Vec with serde_json's own value types cannot fail.
    let _ = v.serialize(&mut ser);
    out
}

/// serde_json's formatter for [`Layout`]: a newline and `level` indents before each element and
/// before a closing bracket that had elements. Floats are written as ryu writes them (`1e19`,
/// `1.5e-7`), the form RedisJSON's serde_json has always printed (newer serde_json writes `1e+19`).
struct Laid<'a> {
    layout: Layout<'a>,
    level: usize,
    has_value: bool,
}

impl Laid<'_> {
    fn line<W: std::io::Write + ?Sized>(&self, w: &mut W) -> std::io::Result<()> {
        if let Some(n) = self.layout.newline {
            w.write_all(n)?;
        }
        if let Some(i) = self.layout.indent {
            for _ in 0..self.level {
                w.write_all(i)?;
            }
        }
        Ok(())
    }

    fn open<W: std::io::Write + ?Sized>(&mut self, w: &mut W, b: &[u8]) -> std::io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b)
    }

    fn close<W: std::io::Write + ?Sized>(&mut self, w: &mut W, b: &[u8]) -> std::io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.line(w)?;
        }
        w.write_all(b)
    }

    fn item<W: std::io::Write + ?Sized>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.line(w)
    }
}

impl serde_json::ser::Formatter for Laid<'_> {
    fn write_f64<W: std::io::Write + ?Sized>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
        w.write_all(ryu::Buffer::new().format_finite(v).as_bytes())
    }
    fn write_f32<W: std::io::Write + ?Sized>(&mut self, w: &mut W, v: f32) -> std::io::Result<()> {
        self.write_f64(w, f64::from(v))
    }
    fn begin_array<W: std::io::Write + ?Sized>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: std::io::Write + ?Sized>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: std::io::Write + ?Sized>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: std::io::Write + ?Sized>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: std::io::Write + ?Sized>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: std::io::Write + ?Sized>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: std::io::Write + ?Sized>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: std::io::Write + ?Sized>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b":")?;
        match self.layout.space {
            Some(s) => w.write_all(s),
            None => Ok(()),
        }
    }
    fn end_object_value<W: std::io::Write + ?Sized>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// The value at `steps` below `doc`, for a change.
pub fn at_mut<'a>(doc: &'a mut Json, steps: &[Step]) -> Option<&'a mut Json> {
    steps.iter().try_fold(doc, |node, step| match (node, step) {
        (Json::Object(map), Step::Key(k)) => map.get_mut(k.as_str()),
        (Json::Array(items), Step::Index(i)) => items.get_mut(*i),
        _ => None,
    })
}

/// Removes the value at `steps` (not the root); true when there was one. An object's last member
/// takes the removed one's place, as in RedisJSON's objects (ijson's `IObject` swaps the last item
/// into the hole), so a document's text after a deletion is the one Redis gives.
pub fn remove_at(doc: &mut Json, steps: &[Step]) -> bool {
    let Some((last, parent)) = steps.split_last() else {
        return false;
    };
    match (at_mut(doc, parent), last) {
        (Some(Json::Object(map)), Step::Key(k)) => map.swap_remove(k.as_str()).is_some(),
        (Some(Json::Array(items)), Step::Index(i)) if *i < items.len() => {
            items.remove(*i);
            true
        }
        _ => false,
    }
}

/// The order in which located paths can be changed one by one without a change moving another's
/// target: deeper paths first, and within one array higher indexes first (RedisJSON's order).
pub fn mutation_order(a: &[Step], b: &[Step]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (Step::Key(x), Step::Key(y)) => x.cmp(y),
            (Step::Index(x), Step::Index(y)) => y.cmp(x),
            (Step::Key(_), Step::Index(_)) => Ordering::Less,
            (Step::Index(_), Step::Key(_)) => Ordering::Greater,
        };
        if o.is_ne() {
            return o;
        }
    }
    b.len().cmp(&a.len())
}

/// Sorts paths into [`mutation_order`] and drops those inside another one (a deletion or
/// replacement of the outer value covers them).
pub fn outermost_in_mutation_order(paths: &mut Vec<Vec<Step>>) {
    paths.sort_by(|a, b| mutation_order(a, b));
    paths.dedup();
    let all = paths.clone();
    paths.retain(|p| !all.iter().any(|q| q.len() < p.len() && p.starts_with(q)));
}

/// Merges `patch` into `doc` as JSON.MERGE does (RFC 7396): a non-object patch replaces, an
/// object patch sets its members recursively and deletes those it gives as null.
pub fn merge(doc: &mut Json, patch: Json) {
    let Json::Object(members) = patch else {
        *doc = patch;
        return;
    };
    if !doc.is_object() {
        *doc = Json::Object(Default::default());
    }
    if let Json::Object(map) = doc {
        for (k, v) in members {
            if v.is_null() {
                // The last member takes its place, as in `remove_at`.
                map.swap_remove(&k);
            } else {
                merge(map.entry(k).or_insert(Json::Null), v);
            }
        }
    }
}

/// Whether merging `patch` at depth `at` keeps the document within [`MAX_DEPTH`].
pub fn merge_fits(doc: &Json, patch: &Json, at: usize) -> bool {
    if at >= MAX_DEPTH {
        return false;
    }
    match (doc, patch) {
        (Json::Object(map), Json::Object(members)) => members
            .iter()
            .all(|(k, v)| v.is_null() || merge_fits(map.get(k).unwrap_or(&Json::Null), v, at + 1)),
        _ => at + depth(patch) < MAX_DEPTH,
    }
}

/// How many values a document holds (what freeing it walks: UNLINK's effort).
pub fn node_count(v: &Json) -> usize {
    1 + match v {
        Json::Array(items) => items.iter().map(node_count).sum(),
        Json::Object(map) => map.values().map(node_count).sum(),
        _ => 0,
    }
}

/// An estimate of the bytes a value holds (JSON.DEBUG MEMORY, MEMORY USAGE): the value's own
/// slot plus what its strings, arrays and objects allocate.
pub fn memory(v: &Json) -> usize {
    const SLOT: usize = std::mem::size_of::<Json>();
    // An object member: the key's String, the value and the index's hash slot.
    const MEMBER: usize = std::mem::size_of::<String>() + SLOT + 16;
    SLOT + match v {
        Json::String(s) => s.capacity(),
        Json::Array(items) => {
            items.capacity() * SLOT + items.iter().map(|i| memory(i) - SLOT).sum::<usize>()
        }
        Json::Object(map) => map
            .iter()
            .map(|(k, v)| MEMBER + k.capacity() + memory(v) - SLOT)
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn numbers_print_as_redisjson_prints_them() {
        let text = |s: &str| {
            String::from_utf8(to_text(&parse(s.as_bytes()).unwrap(), Layout::default())).unwrap()
        };
        assert_eq!(text("1.0"), "1.0");
        assert_eq!(text("1e2"), "100.0");
        assert_eq!(text("-0"), "-0.0");
        assert_eq!(text("18446744073709551615"), "18446744073709551615");
        assert_eq!(text("18446744073709551616"), "1.8446744073709552e19");
        assert_eq!(text("[1, 2.50, \"\\u00e9\"]"), "[1,2.5,\"é\"]");
        assert!(parse(b"1e400")
            .unwrap_err()
            .starts_with("number out of range"));
        assert_eq!(
            parse(b"{\"a\" 1}").unwrap_err(),
            "expected `:` at line 1 column 6"
        );
    }

    #[test]
    fn a_document_is_its_text_until_a_path_needs_its_tree() {
        let text = br#"{"a":[1,2.5,"x"],"b":{"c":null}}"#;
        let doc = Doc::parse(text).unwrap();
        assert_eq!(&doc.text()[..], &text[..]);
        assert!(doc.tree.get().is_none(), "a whole write builds no tree");
        assert_eq!(doc.free_effort(), 1);
        let text_only = doc.memory();
        assert_eq!(doc.tree(), &json!({"a": [1, 2.5, "x"], "b": {"c": null}}));
        assert_eq!(doc.free_effort(), 7);
        assert_eq!(doc.memory(), text_only + memory(doc.tree()));
        // A change drops the text; the next whole read prints the changed tree.
        let mut doc = doc;
        doc.tree_mut()["b"]["c"] = json!(true);
        assert!(doc.text.get().is_none());
        assert_eq!(&doc.text()[..], br#"{"a":[1,2.5,"x"],"b":{"c":true}}"#);
        // What the shortcut leaves to the full parse is held as a tree, printed when asked for.
        let doc = Doc::parse(br#"{"a":1,"a":2}"#).unwrap();
        assert!(doc.text.get().is_none());
        assert_eq!(&doc.text()[..], br#"{"a":2}"#);
        assert_eq!(
            Doc::parse(b"[1,").unwrap_err(),
            "EOF while parsing a value at line 1 column 3"
        );
        assert_eq!(Doc::parse(b"\"\xff\"").unwrap_err(), NOT_UTF8);
    }

    fn any_json() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::from),
            any::<i64>().prop_map(Json::from),
            any::<u64>().prop_map(Json::from),
            (-1e300..1e300f64).prop_map(Json::from),
            "[a-c\"\\\\\n\u{1}é/]{0,4}".prop_map(Json::from),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Json::Array),
                prop::collection::vec(("[a-d]{1,2}", inner), 0..5)
                    .prop_map(|m| Json::Object(m.into_iter().collect())),
            ]
        })
    }

    /// One change a command can make, at the first container it finds.
    #[derive(Debug, Clone)]
    enum Change {
        Replace(Json),
        Push(Json),
        Remove,
    }

    fn apply(doc: &mut Json, change: &Change) {
        match (doc, change) {
            (Json::Array(items), Change::Push(v)) => items.push(v.clone()),
            (Json::Object(map), Change::Push(v)) => {
                map.insert("new".into(), v.clone());
            }
            (Json::Array(items), Change::Remove) if !items.is_empty() => {
                items.remove(0);
            }
            (Json::Object(map), Change::Remove) => {
                if let Some(first) = map.keys().next().cloned() {
                    map.swap_remove(&first);
                }
            }
            (doc, Change::Replace(v)) => *doc = v.clone(),
            _ => {}
        }
    }

    proptest! {
        /// However a document was written (pretty-printed text, compact text) and changed, its
        /// whole text is what its tree prints and what a fresh parse of it prints.
        #[test]
        fn the_text_follows_every_change(
            start in any_json(),
            pretty in any::<bool>(),
            changes in prop::collection::vec(prop_oneof![
                any_json().prop_map(Change::Replace),
                any_json().prop_map(Change::Push),
                Just(Change::Remove),
            ], 0..6),
            read_between in any::<bool>(),
        ) {
            let written = if pretty {
                serde_json::to_vec_pretty(&start).unwrap()
            } else {
                to_text(&start, Layout::default())
            };
            let mut doc = Doc::parse(&written).unwrap();
            let mut model = parse(&written).unwrap();
            prop_assert_eq!(&doc.text()[..], &to_text(&model, Layout::default())[..]);
            // The tree built from the kept text is the one a full parse gives.
            prop_assert_eq!(doc.tree(), &model);
            for change in &changes {
                if read_between {
                    doc.text();
                }
                apply(doc.tree_mut(), change);
                apply(&mut model, change);
                let printed = to_text(&model, Layout::default());
                prop_assert_eq!(&doc.text()[..], &printed[..]);
                prop_assert_eq!(doc.tree(), &model);
            }
        }
    }

    #[test]
    fn layout_follows_indent_newline_and_space() {
        let doc = json!({"a": [1, {}], "b": {"c": true}});
        let layout = Layout {
            indent: Some(b"\t"),
            newline: Some(b"\n"),
            space: Some(b" "),
        };
        assert_eq!(
            String::from_utf8(to_text(&doc, layout)).unwrap(),
            "{\n\t\"a\": [\n\t\t1,\n\t\t{}\n\t],\n\t\"b\": {\n\t\t\"c\": true\n\t}\n}"
        );
    }

    #[test]
    fn paths_change_deepest_and_highest_first() {
        let k = |s: &str| Step::Key(s.into());
        let mut paths = vec![
            vec![k("a")],
            vec![k("a"), Step::Index(0)],
            vec![k("a"), Step::Index(1)],
            vec![k("b")],
        ];
        paths.sort_by(|a, b| mutation_order(a, b));
        assert_eq!(paths[0], vec![k("a"), Step::Index(1)]);
        assert_eq!(paths[1], vec![k("a"), Step::Index(0)]);
        outermost_in_mutation_order(&mut paths);
        assert_eq!(paths, vec![vec![k("a")], vec![k("b")]]);
    }

    #[test]
    fn merge_sets_replaces_and_deletes() {
        let mut doc = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": 4});
        merge(
            &mut doc,
            json!({"b": {"c": null, "x": [1]}, "e": null, "f": "n"}),
        );
        assert_eq!(doc, json!({"a": 1, "b": {"d": 3, "x": [1]}, "f": "n"}));
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"a":1,"b":{"d":3,"x":[1]},"f":"n"}"#
        );
    }

    #[test]
    fn removal_moves_the_last_member_into_place() {
        // What redis-server 7.4.1 with RedisJSON 2.8 answers, and RedisJSON's master still does.
        let mut doc = json!({"a": 1, "b": 2, "c": 3, "d": 4});
        assert!(remove_at(&mut doc, &[Step::Key("a".into())]));
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"d":4,"b":2,"c":3}"#
        );
        assert!(remove_at(&mut doc, &[Step::Key("c".into())]));
        assert_eq!(serde_json::to_string(&doc).unwrap(), r#"{"d":4,"b":2}"#);
        assert!(!remove_at(&mut doc, &[Step::Key("zz".into())]));
        let mut doc = json!({"a": 1, "b": 2, "c": 3, "d": 4});
        merge(&mut doc, json!({"a": null, "e": 5}));
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"d":4,"b":2,"c":3,"e":5}"#
        );
    }
}
