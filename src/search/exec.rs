//! Runs a query tree ([`super::query::Node`]) over one index's [`Data`]: set operations over doc
//! ids, then the text score of each match (TFIDF, RediSearch 2.x's default, or BM25).

use super::index::{Data, Doc, Ordered, Values};
use super::query::{Bound, Node, TagValue};
use super::schema::Kind;
use super::text;
use std::collections::{BTreeSet, HashSet};

/// Doc ids, ascending.
pub type Ids = BTreeSet<u32>;

/// A condition tested on one document's values.
type DocTest = Box<dyn Fn(&Doc) -> bool>;

/// How the matches are scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scorer {
    TfIdf,
    TfIdfDocNorm,
    Bm25,
    DisMax,
    DocScore,
}

impl Scorer {
    pub fn parse(name: &str) -> Option<Scorer> {
        Some(match name.to_ascii_uppercase().as_str() {
            "TFIDF" => Scorer::TfIdf,
            "TFIDF.DOCNORM" => Scorer::TfIdfDocNorm,
            "BM25" | "BM25STD" => Scorer::Bm25,
            "DISMAX" => Scorer::DisMax,
            "DOCSCORE" => Scorer::DocScore,
            _ => return None,
        })
    }
}

/// What a query runs with besides the tree.
pub struct Options<'a> {
    /// VERBATIM: no stemming of query words.
    pub verbatim: bool,
    /// INFIELDS: the TEXT fields words match in (None: all).
    pub in_fields: Option<&'a [String]>,
}

/// A text word the query matched, for scoring: the indexed terms it stands for and the fields.
struct Matched {
    terms: Vec<String>,
    fields: Option<Vec<usize>>,
}

/// Runs `node` over `data`: the matching doc ids.
pub fn run(data: &Data, node: &Node, options: &Options<'_>) -> Result<Ids, String> {
    let fields = options.in_fields.map(|names| text_fields(data, names));
    let mut scope = Scope {
        data,
        verbatim: options.verbatim,
        matched: Vec::new(),
        scoring: true,
        sets: true,
    };
    let mut ids = scope.eval(node, fields.as_deref())?.unwrap_or_default();
    // A key whose time has passed is no result, as GET finds no key, though its document stays
    // until the expiry cycle or an access deletes the key.
    for id in data.expired(crate::clock::command_time_ms()) {
        ids.remove(&id);
    }
    Ok(ids)
}

/// The scores of `ids` for the text words of `node` (1 each when it has none).
pub fn scores(
    data: &Data,
    node: &Node,
    options: &Options<'_>,
    ids: &[u32],
    scorer: Scorer,
) -> Vec<f64> {
    let fields = options.in_fields.map(|names| text_fields(data, names));
    let mut scope = Scope {
        data,
        verbatim: options.verbatim,
        matched: Vec::new(),
        scoring: true,
        sets: false,
    };
    // Walking the tree again collects the matched words (no doc sets); errors were reported
    // by `run` already.
    let _ = scope.eval(node, fields.as_deref());
    let matched = scope.matched;
    let total = data.docs.len().max(1) as f64;
    let avg_len = data.average_length();
    // Per matched word: the number of documents holding any of its terms.
    let doc_freqs: Vec<f64> = matched
        .iter()
        .map(|m| {
            let postings: Vec<_> = m.terms.iter().filter_map(|t| data.terms.get(t)).collect();
            let df = match postings.as_slice() {
                [one] => one.len(),
                many => many
                    .iter()
                    .flat_map(|p| p.keys())
                    .collect::<HashSet<_>>()
                    .len(),
            };
            df.max(1) as f64
        })
        .collect();
    let doc_score = data.def.score;
    if scorer == Scorer::DocScore || matched.is_empty() {
        let score = match scorer {
            Scorer::Bm25 | Scorer::DisMax if matched.is_empty() => 0.0,
            _ => doc_score,
        };
        return vec![score; ids.len()];
    }
    ids.iter()
        .map(|id| {
            let Some(doc) = data.docs.get(id) else {
                return 0.0;
            };
            let mut score = 0.0;
            for (m, df) in matched.iter().zip(&doc_freqs) {
                let mut tf = 0.0;
                for term in &m.terms {
                    let Some(postings) = data.terms.get(term) else {
                        continue;
                    };
                    if let Some(occ) = postings.get(id) {
                        for (field, _) in occ {
                            if m.fields
                                .as_ref()
                                .is_none_or(|f| f.contains(&(*field as usize)))
                            {
                                tf += field_weight(data, *field as usize);
                            }
                        }
                    }
                }
                if tf == 0.0 {
                    continue;
                }
                let df = *df;
                score += match scorer {
                    Scorer::TfIdf | Scorer::TfIdfDocNorm => {
                        let idf = (1.0 + total / df).log2();
                        tf * idf
                    }
                    Scorer::Bm25 => {
                        let idf = (1.0 + (total - df + 0.5) / (df + 0.5)).ln();
                        let (k1, b) = (1.2, 0.75);
                        idf * tf * (k1 + 1.0)
                            / (tf + k1 * (1.0 - b + b * doc.length as f64 / avg_len))
                    }
                    Scorer::DisMax => tf,
                    Scorer::DocScore => 0.0,
                };
            }
            match scorer {
                Scorer::TfIdf => score * doc_score / doc.max_freq.max(1) as f64,
                Scorer::TfIdfDocNorm => score * doc_score / (doc.length.max(1) as f64).sqrt(),
                Scorer::Bm25 => score * doc_score,
                _ => score,
            }
        })
        .collect()
}

fn field_weight(data: &Data, field: usize) -> f64 {
    match data.def.fields.get(field).map(|f| &f.kind) {
        Some(Kind::Text { weight, .. }) => *weight,
        _ => 1.0,
    }
}

/// The indexes of the TEXT fields among `names` (unknown names match nothing).
fn text_fields(data: &Data, names: &[String]) -> Vec<usize> {
    names
        .iter()
        .filter_map(|n| data.def.field(n))
        .filter(|(_, f)| matches!(f.kind, Kind::Text { .. }))
        .map(|(i, _)| i)
        .collect()
}

struct Scope<'a> {
    data: &'a Data,
    verbatim: bool,
    matched: Vec<Matched>,
    /// False below a NOT: its words do not score.
    scoring: bool,
    /// False when only the matched words are wanted (scoring): no doc sets are built.
    sets: bool,
}

impl Scope<'_> {
    fn all(&self) -> Ids {
        self.data.docs.keys().copied().collect()
    }

    /// The docs matching `node`; None for a node that does not narrow (a stop word, `~x`).
    fn eval(&mut self, node: &Node, fields: Option<&[usize]>) -> Result<Option<Ids>, String> {
        if !self.sets && !node.may_hold_words() {
            return Ok(None);
        }
        Ok(Some(match node {
            Node::All => self.all(),
            Node::And(nodes) => {
                // Numeric and geo conditions filter what the others matched, document by
                // document, rather than gathering every document in their range: a tag or word
                // that matches a few documents bounds the work.
                let (filters, sets): (Vec<&Node>, Vec<&Node>) = nodes
                    .iter()
                    .partition(|n| matches!(n, Node::Numeric { .. } | Node::Geo { .. }));
                let mut acc: Option<Ids> = None;
                for n in sets {
                    if let Some(ids) = self.eval(n, fields)? {
                        acc = Some(match acc {
                            None => ids,
                            Some(acc) => acc.intersection(&ids).copied().collect(),
                        });
                    }
                }
                for n in filters {
                    acc = match acc {
                        Some(mut acc) if self.sets => {
                            let keep = self.value_test(n)?;
                            acc.retain(|id| self.data.docs.get(id).is_some_and(&keep));
                            Some(acc)
                        }
                        _ => self.eval(n, fields)?,
                    };
                }
                return Ok(acc);
            }
            Node::Or(nodes) => {
                let mut acc = Ids::new();
                let mut any = false;
                for n in nodes {
                    if let Some(ids) = self.eval(n, fields)? {
                        acc.extend(ids);
                        any = true;
                    }
                }
                if !any {
                    return Ok(None);
                }
                acc
            }
            Node::Not(inner) => {
                let scoring = std::mem::replace(&mut self.scoring, false);
                let excluded = self.eval(inner, fields);
                self.scoring = scoring;
                match excluded? {
                    Some(ex) if self.sets => self.all().difference(&ex).copied().collect(),
                    _ => Ids::new(),
                }
            }
            Node::Optional(inner) => {
                self.eval(inner, fields)?;
                return Ok(None);
            }
            Node::Fields {
                fields: names,
                node,
            } => {
                let narrowed = text_fields(self.data, names);
                // A TAG/NUMERIC node below names its own field; the list narrows text only.
                return self.eval(node, Some(&narrowed));
            }
            Node::Term(word) => {
                let word = text::fold(word);
                if self.data.def.is_stopword(&word) {
                    return Ok(None);
                }
                let terms = self.expand(&word);
                self.words(terms, fields)
            }
            Node::Prefix(p) => {
                let p = text::fold(p);
                let terms: Vec<String> = self
                    .data
                    .terms
                    .range(p.clone()..)
                    .take_while(|(t, _)| t.starts_with(&p))
                    .map(|(t, _)| t.clone())
                    .collect();
                self.words(terms, fields)
            }
            Node::Suffix(s) => {
                let s = text::fold(s);
                let terms = self.terms_where(|t| t.ends_with(&s));
                self.words(terms, fields)
            }
            Node::Contains(c) => {
                let c = text::fold(c);
                let terms = self.terms_where(|t| t.contains(&c));
                self.words(terms, fields)
            }
            Node::Fuzzy { term, distance } => {
                let term = text::fold(term);
                let d = *distance as usize;
                let terms = self.terms_where(|t| levenshtein(t, &term) <= d);
                self.words(terms, fields)
            }
            Node::Phrase {
                terms,
                slop,
                in_order,
            } => self.phrase(terms, *slop, *in_order, fields)?,
            Node::Tag { field, values } => {
                // RediSearch: a field that is not there or not a TAG field matches nothing.
                let Some((i, f)) = self.data.def.field(field) else {
                    return Ok(Some(Ids::new()));
                };
                let Kind::Tag { case_sensitive, .. } = f.kind else {
                    return Ok(Some(Ids::new()));
                };
                let map = &self.data.tags[i];
                let mut ids = Ids::new();
                for v in values {
                    let fold =
                        |s: &str| super::index::fold_tag(&s.replace('\\', ""), case_sensitive);
                    match v {
                        TagValue::Exact(v) => {
                            if let Some(set) = map.get(&fold(v)) {
                                ids.extend(set);
                            }
                        }
                        TagValue::Prefix(p) => {
                            let p = fold(p);
                            for (_, set) in map
                                .range(p.clone()..)
                                .take_while(|(t, _)| t.starts_with(&p))
                            {
                                ids.extend(set);
                            }
                        }
                        TagValue::Suffix(s) => {
                            let s = fold(s);
                            for (_, set) in map.iter().filter(|(t, _)| t.ends_with(&s)) {
                                ids.extend(set);
                            }
                        }
                        TagValue::Contains(c) => {
                            let c = fold(c);
                            for (_, set) in map.iter().filter(|(t, _)| t.contains(&c)) {
                                ids.extend(set);
                            }
                        }
                    }
                }
                ids
            }
            Node::Numeric { field, min, max } => {
                let Some((i, f)) = self.data.def.field(field) else {
                    return Ok(Some(Ids::new()));
                };
                if f.kind != Kind::Numeric {
                    return Ok(Some(Ids::new()));
                }
                numeric_range(&self.data.numbers[i], *min, *max)
            }
            Node::Geo { .. } => {
                let keep = self.value_test(node)?;
                self.data
                    .docs
                    .iter()
                    .filter(|(_, d)| keep(d))
                    .map(|(id, _)| *id)
                    .collect()
            }
            Node::VectorRange {
                field,
                radius,
                vector,
                ..
            } => {
                let (i, _) = self.field_of(field)?;
                let Some(index) = self.data.vectors[i].as_ref() else {
                    return Err(format!("Field `{field}` is not a VECTOR field"));
                };
                index
                    .range(vector, *radius, None)?
                    .into_iter()
                    .map(|(id, _)| id)
                    .collect()
            }
            Node::Missing(field) => {
                let (i, f) = self.field_of(field)?;
                if !f.index_missing {
                    return Err(
                        "'ismissing' requires field to be defined with 'INDEXMISSING'".into(),
                    );
                }
                self.data.missing[i].clone()
            }
            Node::EmptyValue { field, tag_syntax } => {
                let (i, f) = self.field_of(field)?;
                if *tag_syntax != matches!(f.kind, Kind::Tag { .. }) {
                    // `@tag:""` (text syntax on a tag field) or the reverse: nothing matches.
                    Ids::new()
                } else if !f.index_empty {
                    return Err(
                        "Use `INDEXEMPTY` in field creation in order to index and query \
                                for empty strings"
                            .into(),
                    );
                } else {
                    self.data.empty[i].clone()
                }
            }
        }))
    }

    /// A numeric or geo condition as a test of one document's values (a numeric condition on a
    /// field that is not NUMERIC matches nothing; a geo one on a field that is not GEO is an
    /// error, as in RediSearch).
    fn value_test(&self, node: &Node) -> Result<DocTest, String> {
        match node {
            Node::Numeric { field, min, max } => {
                let Some((i, _)) = self
                    .data
                    .def
                    .field(field)
                    .filter(|(_, f)| f.kind == Kind::Numeric)
                else {
                    return Ok(Box::new(|_| false));
                };
                let (min, max) = (*min, *max);
                Ok(Box::new(move |d: &Doc| match &d.values[i] {
                    Values::Numbers(ns) => ns.iter().any(|n| {
                        (*n > min.value || (min.inclusive && *n == min.value))
                            && (*n < max.value || (max.inclusive && *n == max.value))
                    }),
                    _ => false,
                }))
            }
            Node::Geo {
                field,
                lon,
                lat,
                radius_m,
            } => {
                let (i, f) = self.field_of(field)?;
                if f.kind != Kind::Geo {
                    return Err(format!("Field `{field}` is not a GEO field"));
                }
                let (lon, lat, radius_m) = (*lon, *lat, *radius_m);
                Ok(Box::new(move |d: &Doc| match &d.values[i] {
                    Values::Points(points) => points
                        .iter()
                        .any(|(plon, plat)| distance_m(lon, lat, *plon, *plat) <= radius_m),
                    _ => false,
                }))
            }
            _ => Ok(Box::new(|_| true)),
        }
    }

    fn field_of(&self, name: &str) -> Result<(usize, &super::schema::Field), String> {
        self.data
            .def
            .field(name)
            .ok_or_else(|| format!("Unknown field `{name}`"))
    }

    /// The indexed terms a query word stands for: itself, and unless VERBATIM every term with
    /// its stem.
    fn expand(&self, word: &str) -> Vec<String> {
        let mut terms = vec![word.to_string()];
        if !self.verbatim {
            let stem = text::stemmer(&self.data.def.language)
                .stem(word)
                .into_owned();
            if let Some(set) = self.data.stems.get(&stem) {
                terms.extend(set.iter().filter(|t| *t != word).cloned());
            }
        }
        terms
    }

    fn terms_where(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        self.data
            .terms
            .keys()
            .filter(|t| keep(t))
            .cloned()
            .collect()
    }

    /// The docs where any of `terms` occurs in `fields`; remembers them for scoring.
    fn words(&mut self, terms: Vec<String>, fields: Option<&[usize]>) -> Ids {
        let mut ids = Ids::new();
        for term in terms.iter().filter(|_| self.sets) {
            if let Some(postings) = self.data.terms.get(term) {
                for (id, occ) in postings {
                    if occ
                        .iter()
                        .any(|(f, _)| fields.is_none_or(|fs| fs.contains(&(*f as usize))))
                    {
                        ids.insert(*id);
                    }
                }
            }
        }
        if self.scoring {
            self.matched.push(Matched {
                terms,
                fields: fields.map(<[usize]>::to_vec),
            });
        }
        ids
    }

    /// `"a b c"`: the words in one field, next to each other in order, or within `slop` extra
    /// words (any order unless `in_order`) when a slop is given.
    fn phrase(
        &mut self,
        words: &[String],
        slop: Option<u32>,
        in_order: bool,
        fields: Option<&[usize]>,
    ) -> Result<Ids, String> {
        // (offset in the phrase, the terms the word stands for); stop words are left out and
        // take no place, as in the indexed text.
        let mut parts: Vec<(u32, Vec<String>)> = Vec::new();
        for w in words {
            let w = text::fold(w);
            if self.data.def.is_stopword(&w) {
                continue;
            }
            let terms = self.expand(&w);
            parts.push((parts.len() as u32, terms));
        }
        if parts.is_empty() {
            return Ok(Ids::new());
        }
        let mut candidates: Option<Ids> = None;
        for (_, terms) in &parts {
            let ids = self.words(terms.clone(), fields);
            candidates = Some(match candidates {
                None => ids,
                Some(c) => c.intersection(&ids).copied().collect(),
            });
        }
        let candidates = candidates.unwrap_or_default();
        if !self.sets {
            return Ok(Ids::new());
        }
        let in_order = in_order || slop.is_none();
        let slop = slop.unwrap_or(0);
        let mut out = Ids::new();
        let offsets: Vec<u32> = parts.iter().map(|(o, _)| *o).collect();
        for id in candidates {
            // Each part's positions in the document, in the fields allowed: positions run on
            // from one TEXT field to the next, so a match may span two of them (RediSearch's).
            let positions: Vec<Vec<u32>> = parts
                .iter()
                .map(|(_, terms)| {
                    let mut p: Vec<u32> = terms
                        .iter()
                        .filter_map(|t| self.data.terms.get(t)?.get(&id))
                        .flatten()
                        .filter(|(f, _)| fields.is_none_or(|fs| fs.contains(&(*f as usize))))
                        .map(|(_, p)| *p)
                        .collect();
                    p.sort_unstable();
                    p
                })
                .collect();
            let hit = near(&positions, &offsets, slop, in_order);
            if hit {
                out.insert(id);
            }
        }
        Ok(out)
    }
}

/// True when one position can be picked from each list so that they follow the phrase's
/// `offsets` with at most `slop` extra words between them (in order), or span at most the
/// phrase's length plus `slop` (any order).
fn near(positions: &[Vec<u32>], offsets: &[u32], slop: u32, in_order: bool) -> bool {
    if in_order {
        // The extra words of a chain add up to its span less the phrase's: from each first
        // position, the earliest possible next position at every step gives the narrowest
        // chain, so one pass per first position decides (no search over every choice).
        let phrase_span = u64::from(offsets.last().copied().unwrap_or(0) - offsets[0]);
        positions[0].iter().any(|&first| {
            let mut prev = u64::from(first);
            for (at, list) in positions.iter().enumerate().skip(1) {
                let want = prev + u64::from(offsets[at] - offsets[at - 1]);
                let next = list.partition_point(|&p| u64::from(p) < want);
                match list.get(next) {
                    Some(&p) => prev = u64::from(p),
                    None => return false,
                }
            }
            prev - u64::from(first) <= phrase_span + u64::from(slop)
        })
    } else {
        // Every choice is too many for long lists; a window over the merged positions suffices.
        let mut all: Vec<(u32, usize)> = positions
            .iter()
            .enumerate()
            .flat_map(|(i, ps)| ps.iter().map(move |p| (*p, i)))
            .collect();
        all.sort_unstable();
        let n = positions.len();
        let span_max = offsets.last().copied().unwrap_or(0) - offsets[0] + slop;
        for start in 0..all.len() {
            let mut seen = vec![false; n];
            let mut count = 0;
            for &(p, i) in &all[start..] {
                if p - all[start].0 > span_max {
                    break;
                }
                if !seen[i] {
                    seen[i] = true;
                    count += 1;
                    if count == n {
                        return true;
                    }
                }
            }
        }
        false
    }
}

fn numeric_range(set: &BTreeSet<(Ordered, u32)>, min: Bound, max: Bound) -> Ids {
    if min.value.is_nan() || max.value.is_nan() || min.value > max.value {
        return Ids::new();
    }
    let lo = (Ordered::new(min.value), 0);
    let hi = (Ordered::new(max.value), u32::MAX);
    set.range(lo..=hi)
        .filter(|(v, _)| {
            let ok_min = min.inclusive || *v != Ordered::new(min.value);
            let ok_max = max.inclusive || *v != Ordered::new(max.value);
            ok_min && ok_max
        })
        .map(|(_, id)| *id)
        .collect()
}

/// Great-circle distance in metres (Redis's GEO earth radius).
pub fn distance_m(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    const EARTH_RADIUS_M: f64 = 6_372_797.560_856;
    let (lat1r, lat2r) = (lat1.to_radians(), lat2.to_radians());
    let u = ((lat2r - lat1r) / 2.0).sin();
    let v = ((lon2 - lon1).to_radians() / 2.0).sin();
    2.0 * EARTH_RADIUS_M * (u * u + lat1r.cos() * lat2r.cos() * v * v).sqrt().asin()
}

/// Edit distance in characters, for fuzzy words.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Value;
    use bytes::Bytes;

    fn data() -> Data {
        let args: Vec<Bytes> = "SCHEMA title TEXT WEIGHT 2 body TEXT tag TAG n NUMERIC loc GEO"
            .split(' ')
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect();
        let mut data = Data::new(super::super::schema::parse(&args).expect("schema"));
        let docs: [&[(&str, &str)]; 3] = [
            &[
                ("title", "Hello world"),
                ("body", "the quick brown fox"),
                ("tag", "red,Blue"),
                ("n", "1"),
                ("loc", "2.35,48.85"),
            ],
            &[
                ("title", "Running wild"),
                ("body", "brown dogs run"),
                ("tag", "green"),
                ("n", "5"),
                ("loc", "-0.12,51.5"),
            ],
            &[
                ("title", "Quiet"),
                ("body", "fox and hound hello"),
                ("tag", "blue"),
                ("n", "10"),
            ],
        ];
        for (i, pairs) in docs.iter().enumerate() {
            let mut h = crate::store::hash::Hash::default();
            for (f, v) in *pairs {
                let limit = crate::store::encoding::CompactLimit {
                    entries: 128,
                    value: 64,
                };
                h.insert(f.as_bytes(), v.as_bytes(), limit);
            }
            data.update(format!("d{}", i + 1).as_bytes(), Some(&Value::Hash(h)));
        }
        data
    }

    fn ids(data: &Data, node: Node) -> Vec<u32> {
        let opts = Options {
            verbatim: false,
            in_fields: None,
        };
        run(data, &node, &opts).expect("runs").into_iter().collect()
    }

    fn term(w: &str) -> Node {
        Node::Term(w.into())
    }

    fn incl(v: f64) -> Bound {
        Bound {
            value: v,
            inclusive: true,
        }
    }

    #[test]
    fn words_sets_and_stems() {
        let d = data();
        assert_eq!(ids(&d, Node::All), [1, 2, 3]);
        assert_eq!(ids(&d, term("hello")), [1, 3]);
        assert_eq!(
            ids(&d, term("runs")),
            [2],
            "stemmed to run: running and run"
        );
        assert_eq!(ids(&d, Node::And(vec![term("hello"), term("fox")])), [1, 3]);
        assert_eq!(ids(&d, Node::Or(vec![term("wild"), term("quiet")])), [2, 3]);
        assert_eq!(
            ids(
                &d,
                Node::And(vec![term("brown"), Node::Not(Box::new(term("fox")))])
            ),
            [2]
        );
        assert_eq!(
            ids(&d, term("the")),
            Vec::<u32>::new(),
            "a stop word alone matches nothing"
        );
        assert_eq!(ids(&d, Node::And(vec![term("the"), term("fox")])), [1, 3]);
        let in_title = Node::Fields {
            fields: vec!["title".into()],
            node: Box::new(term("hello")),
        };
        assert_eq!(ids(&d, in_title), [1]);
        assert_eq!(ids(&d, Node::Prefix("hel".into())), [1, 3]);
        assert_eq!(
            ids(
                &d,
                Node::Fuzzy {
                    term: "hellp".into(),
                    distance: 1
                }
            ),
            [1, 3]
        );
    }

    #[test]
    fn phrases_need_adjacent_words() {
        let d = data();
        let phrase = |w: &[&str], slop, in_order| Node::Phrase {
            terms: w.iter().map(|s| s.to_string()).collect(),
            slop,
            in_order,
        };
        assert_eq!(ids(&d, phrase(&["quick", "brown"], None, false)), [1]);
        assert_eq!(
            ids(&d, phrase(&["brown", "quick"], None, false)),
            Vec::<u32>::new()
        );
        assert_eq!(
            ids(&d, phrase(&["quick", "fox"], None, false)),
            Vec::<u32>::new()
        );
        assert_eq!(ids(&d, phrase(&["quick", "fox"], Some(1), true)), [1]);
        assert_eq!(ids(&d, phrase(&["fox", "quick"], Some(1), false)), [1]);
    }

    #[test]
    fn tags_numbers_and_points() {
        let d = data();
        let tag = |vals: Vec<TagValue>| Node::Tag {
            field: "tag".into(),
            values: vals,
        };
        assert_eq!(ids(&d, tag(vec![TagValue::Exact("BLUE".into())])), [1, 3]);
        assert_eq!(
            ids(
                &d,
                tag(vec![
                    TagValue::Prefix("gr".into()),
                    TagValue::Exact("red".into())
                ])
            ),
            [1, 2]
        );
        let num = |min, max| Node::Numeric {
            field: "n".into(),
            min,
            max,
        };
        assert_eq!(ids(&d, num(incl(1.0), incl(5.0))), [1, 2]);
        assert_eq!(
            ids(
                &d,
                num(
                    Bound {
                        value: 1.0,
                        inclusive: false
                    },
                    incl(f64::INFINITY)
                )
            ),
            [2, 3]
        );
        assert_eq!(ids(&d, num(incl(6.0), incl(2.0))), Vec::<u32>::new());
        let near_paris = Node::Geo {
            field: "loc".into(),
            lon: 2.3,
            lat: 48.8,
            radius_m: 50_000.0,
        };
        assert_eq!(ids(&d, near_paris), [1]);
        let opts = Options {
            verbatim: false,
            in_fields: None,
        };
        let bad = Node::Numeric {
            field: "tag".into(),
            min: incl(0.0),
            max: incl(1.0),
        };
        let matched = run(&d, &bad, &opts).expect("runs");
        assert!(
            matched.is_empty(),
            "a field of another type matches nothing"
        );
        assert!(run(&d, &Node::Missing("n".into()), &opts).is_err());
    }

    #[test]
    fn title_matches_score_higher_than_body_matches() {
        let d = data();
        let opts = Options {
            verbatim: false,
            in_fields: None,
        };
        let s = scores(&d, &term("hello"), &opts, &[1, 3], Scorer::TfIdf);
        assert!(s[0] > s[1], "{s:?}");
        let s = scores(&d, &term("hello"), &opts, &[1, 3], Scorer::Bm25);
        assert!(s[0] > s[1], "{s:?}");
    }

    #[test]
    fn near_in_order_counts_the_words_between() {
        // "a b" with `a` at 0 and 10, `b` at 3 and 12: the closest chain has 1 word between.
        let positions = vec![vec![0, 10], vec![3, 12]];
        assert!(!near(&positions, &[0, 1], 0, true));
        assert!(near(&positions, &[0, 1], 1, true));
        // In order only: `b` before `a` does not count.
        assert!(!near(&[vec![5], vec![4]], &[0, 1], 100, true));
        assert!(near(&[vec![5], vec![4]], &[0, 1], 0, false));
        // Long lists of a common word decide in one pass per first position.
        let many: Vec<u32> = (0..4000).map(|p| p * 2).collect();
        let lists = vec![many.clone(); 12];
        let offsets: Vec<u32> = (0..12).collect();
        assert!(!near(&lists, &offsets, 10, true));
        assert!(near(&lists, &offsets, 11, true));
    }
}
