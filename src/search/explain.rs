//! FT.EXPLAIN's text: a parsed query tree written as RediSearch writes its execution plan, one
//! node per line, children two spaces further in, each text node preceded by the fields it is
//! scoped to (`@title|body:`), a word followed by its stemmer expansions
//! (`+stem(expanded)`, and `stem(expanded)` when the stem differs; none under a negation or an
//! optional node, as RediSearch expands only the words that add matches), stopwords left out.
//!
//! What the parsed tree no longer holds is written from what it holds: a geo radius in metres
//! (`3000.000000 m` where RediSearch repeats `3 km`), and no `=> {$weight: …}` attributes.

use super::query::{Bound, Node, Query, TagValue};
use super::schema::{Definition, Kind};
use super::text;
use bytes::Bytes;
use std::collections::HashMap;

/// The plan of `query` over an index defined by `def`; `params` name the KNN blob's parameter;
/// `verbatim`: no stemmer expansions. Ends with a newline, as RediSearch's.
pub fn explain(
    query: &Query,
    def: &Definition,
    params: &HashMap<String, Bytes>,
    verbatim: bool,
) -> String {
    let writer = Writer {
        def,
        stemmer: text::stemmer(&def.language),
    };
    let mut out = String::new();
    match &query.knn {
        None => writer.node(&query.filter, 0, "", !verbatim, &mut out),
        Some(knn) => {
            let blob = params
                .iter()
                .find(|(_, v)| v[..] == knn.vector[..])
                .map_or_else(|| "BLOB".to_string(), |(name, _)| format!("${name}"));
            let score = knn
                .score_as
                .clone()
                .unwrap_or_else(|| format!("__{}_score", knn.field));
            let what = format!(
                "K={} nearest vectors to `{blob}` in vector index associated with field @{}, yields distance as `{score}`",
                knn.k, knn.field
            );
            if query.filter == Node::All {
                out.push_str(&format!("VECTOR {{{what}}}\n"));
            } else {
                out.push_str("VECTOR {\n");
                writer.node(&query.filter, 1, "", !verbatim, &mut out);
                out.push_str(&format!("}} => {{{what}}}\n"));
            }
        }
    }
    out
}

struct Writer<'a> {
    def: &'a Definition,
    stemmer: rust_stemmers::Stemmer,
}

fn number(n: f64) -> String {
    if n.is_infinite() {
        return if n > 0.0 { "inf" } else { "-inf" }.into();
    }
    format!("{n:.6}")
}

impl Writer<'_> {
    fn line(&self, depth: usize, scope: &str, s: &str, out: &mut String) {
        out.push_str(&"  ".repeat(depth));
        out.push_str(scope);
        out.push_str(s);
        out.push('\n');
    }

    /// A container: `NAME {`, the children, `}`.
    /// A container: `NAME {`, the children (their words expanded when `expand`), `}`.
    fn block(
        &self,
        at: (usize, &str),
        head: &str,
        children: &[&Node],
        expand: bool,
        out: &mut String,
    ) {
        let (depth, scope) = at;
        self.line(depth, scope, head, out);
        for child in children {
            self.node(child, depth + 1, scope, expand, out);
        }
        self.line(depth, "", "}", out);
    }

    fn is_stopword(&self, node: &Node) -> bool {
        matches!(node, Node::Term(w) if self.def.is_stopword(&text::fold(w)))
    }

    /// Writes `node` at `depth`, its text nodes scoped to `scope`, its words with their stemmer
    /// expansions when `expand`.
    fn node(&self, node: &Node, depth: usize, scope: &str, expand: bool, out: &mut String) {
        match node {
            Node::All => self.line(depth, "", "<WILDCARD>", out),
            Node::And(children) | Node::Or(children) => {
                let kept: Vec<&Node> = children.iter().filter(|c| !self.is_stopword(c)).collect();
                match kept.as_slice() {
                    [] => self.line(depth, scope, "<EMPTY>", out),
                    [only] => self.node(only, depth, scope, expand, out),
                    _ => {
                        let head = if matches!(node, Node::And(_)) {
                            "INTERSECT {"
                        } else {
                            "UNION {"
                        };
                        self.block((depth, scope), head, &kept, expand, out)
                    }
                }
            }
            Node::Not(child) => self.block((depth, scope), "NOT{", &[child], false, out),
            Node::Optional(child) => self.block((depth, scope), "OPTIONAL{", &[child], false, out),
            Node::Fields { fields, node } => {
                let text_fields: Vec<&str> = fields
                    .iter()
                    .filter(|f| {
                        self.def
                            .field(f)
                            .is_some_and(|(_, f)| matches!(f.kind, Kind::Text { .. }))
                    })
                    .map(String::as_str)
                    .collect();
                let scope = if text_fields.is_empty() {
                    scope.to_string()
                } else {
                    format!("@{}:", text_fields.join("|"))
                };
                self.node(node, depth, &scope, expand, out)
            }
            Node::Term(word) => {
                let word = text::fold(word);
                if !expand || word.parse::<f64>().is_ok() {
                    return self.line(depth, scope, &word, out);
                }
                let stem = self.stemmer.stem(&word).into_owned();
                self.line(depth, scope, "UNION {", out);
                self.line(depth + 1, scope, &word, out);
                self.line(depth + 1, scope, &format!("+{stem}(expanded)"), out);
                if stem != word {
                    self.line(depth + 1, scope, &format!("{stem}(expanded)"), out);
                }
                self.line(depth, "", "}", out);
            }
            Node::Prefix(p) => {
                self.line(depth, scope, &format!("PREFIX{{{}*}}", text::fold(p)), out)
            }
            Node::Suffix(s) => {
                self.line(depth, scope, &format!("SUFFIX{{*{}}}", text::fold(s)), out)
            }
            Node::Contains(s) => {
                self.line(depth, scope, &format!("INFIX{{*{}*}}", text::fold(s)), out)
            }
            Node::Fuzzy { term, .. } => {
                self.line(depth, scope, &format!("FUZZY{{{}}}", text::fold(term)), out)
            }
            Node::Phrase { terms, .. } => {
                self.line(depth, scope, "EXACT {", out);
                for t in terms {
                    self.line(depth + 1, scope, &text::fold(t), out);
                }
                self.line(depth, "", "}", out);
            }
            Node::Tag { field, values } => {
                self.line(depth, "", &format!("TAG:@{field} {{"), out);
                for v in values {
                    match v {
                        TagValue::Exact(t) if t.contains(' ') => {
                            self.line(depth + 1, "", "INTERSECT {", out);
                            for w in t.split(' ') {
                                self.line(depth + 2, "", w, out);
                            }
                            self.line(depth + 1, "", "}", out);
                        }
                        TagValue::Exact(t) => self.line(depth + 1, "", t, out),
                        TagValue::Prefix(t) => {
                            self.line(depth + 1, "", &format!("PREFIX{{{t}*}}"), out)
                        }
                        TagValue::Suffix(t) => {
                            self.line(depth + 1, "", &format!("SUFFIX{{*{t}}}"), out)
                        }
                        TagValue::Contains(t) => {
                            self.line(depth + 1, "", &format!("INFIX{{*{t}*}}"), out)
                        }
                    }
                }
                self.line(depth, "", "}", out);
            }
            Node::Numeric { field, min, max } => {
                let op = |b: &Bound| if b.inclusive { "<=" } else { "<" };
                self.line(
                    depth,
                    "",
                    &format!(
                        "NUMERIC {{{} {} @{field} {} {}}}",
                        number(min.value),
                        op(min),
                        op(max),
                        number(max.value)
                    ),
                    out,
                )
            }
            Node::Geo {
                field,
                lon,
                lat,
                radius_m,
            } => self.line(
                depth,
                "",
                &format!(
                    "GEO {field}:{{{},{} --> {} m}}",
                    number(*lon),
                    number(*lat),
                    number(*radius_m)
                ),
                out,
            ),
            Node::VectorRange {
                field,
                radius,
                distance_as,
                ..
            } => {
                let score = distance_as
                    .clone()
                    .unwrap_or_else(|| format!("__{field}_score"));
                self.line(
                    depth,
                    "",
                    &format!(
                        "VECTOR {{Vectors that are within {} distance radius in vector index associated with field @{field}, yields distance as `{score}`}}",
                        number(*radius)
                    ),
                    out,
                )
            }
            Node::Missing(field) => self.line(depth, "", &format!("ISMISSING{{{field}}}"), out),
            Node::EmptyValue { field, .. } => {
                self.line(depth, "", &format!("EMPTY{{{field}}}"), out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(schema: &[&str]) -> Definition {
        let args: Vec<Bytes> = schema
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        super::super::schema::parse(&args).unwrap()
    }

    fn plan(query: &str, verbatim: bool) -> String {
        let d = def(&[
            "SCHEMA",
            "t",
            "TEXT",
            "body",
            "TEXT",
            "n",
            "NUMERIC",
            "g",
            "TAG",
            "v",
            "VECTOR",
            "FLAT",
            "6",
            "TYPE",
            "FLOAT32",
            "DIM",
            "2",
            "DISTANCE_METRIC",
            "L2",
        ]);
        let mut params = HashMap::new();
        params.insert("b".to_string(), Bytes::from_static(b"12345678"));
        let q = super::super::query::parse(query, &params, 2).unwrap();
        explain(&q, &d, &params, verbatim)
    }

    #[test]
    fn words_expand_to_their_stems() {
        // As RediSearch 2.10.5 writes them (the stack reference).
        assert_eq!(
            plan("hello", false),
            "UNION {\n  hello\n  +hello(expanded)\n}\n"
        );
        assert_eq!(
            plan("running", false),
            "UNION {\n  running\n  +run(expanded)\n  run(expanded)\n}\n"
        );
        assert_eq!(plan("hello", true), "hello\n");
        // No expansion under a negation or an optional node.
        assert_eq!(plan("-hello", false), "NOT{\n  hello\n}\n");
        assert_eq!(plan("~hello", false), "OPTIONAL{\n  hello\n}\n");
        assert_eq!(
            plan("a (b|c) -d", true),
            "INTERSECT {\n  UNION {\n    b\n    c\n  }\n  NOT{\n    d\n  }\n}\n"
        );
        assert_eq!(
            plan("@t|body:(foo 2024)", false),
            "@t|body:INTERSECT {\n  @t|body:UNION {\n    @t|body:foo\n    @t|body:+foo(expanded)\n  }\n  @t|body:2024\n}\n"
        );
    }

    #[test]
    fn other_nodes() {
        assert_eq!(plan("*", false), "<WILDCARD>\n");
        assert_eq!(
            plan("@n:[-inf (5]", false),
            "NUMERIC {-inf <= @n < 5.000000}\n"
        );
        assert_eq!(
            plan("@g:{a*|b c}", false),
            "TAG:@g {\n  PREFIX{a*}\n  INTERSECT {\n    b\n    c\n  }\n}\n"
        );
        assert_eq!(
            plan("\"hello world\"", false),
            "EXACT {\n  hello\n  world\n}\n"
        );
        assert_eq!(plan("hel*", false), "PREFIX{hel*}\n");
        assert_eq!(plan("*llo", false), "SUFFIX{*llo}\n");
        assert_eq!(plan("*ell*", false), "INFIX{*ell*}\n");
        assert_eq!(plan("%hello%", false), "FUZZY{hello}\n");
        assert_eq!(
            plan("(@g:{a})=>[KNN 3 @v $b AS d]", false),
            "VECTOR {\n  TAG:@g {\n    a\n  }\n} => {K=3 nearest vectors to `$b` in vector index associated with field @v, yields distance as `d`}\n"
        );
        assert_eq!(
            plan("*=>[KNN 3 @v $b]", false),
            "VECTOR {K=3 nearest vectors to `$b` in vector index associated with field @v, yields distance as `__v_score`}\n"
        );
    }
}
