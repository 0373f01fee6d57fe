//! One index's documents: doc ids (u32, never reused) ↔ keys, each document's indexed values, and
//! the structures queries read: TEXT postings (term → doc → positions per field) with the stems
//! that lead to each term, TAG value → docs, NUMERIC ordered (value, doc) pairs, and the docs
//! INDEXMISSING/INDEXEMPTY fields list. GEO points stay in the documents (a radius query scans).

use super::schema::{Definition, Field, KeyType, Kind};
use super::text;
use super::vector::VectorIndex;
use crate::store::json::{Json, Query as JsonPath};
use crate::store::Value;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A field's values as one document gives them.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// The document has no value there.
    Missing,
    /// TEXT: the texts (a JSON array gives several).
    Text(Vec<String>),
    /// TAG: the tags, split and folded as the field says.
    Tags(Vec<String>),
    Numbers(Vec<f64>),
    /// (longitude, latitude) pairs.
    Points(Vec<(f64, f64)>),
    /// A VECTOR field's blob (a hash field's bytes).
    Blob(Bytes),
    /// A VECTOR field's numbers (a JSON array).
    Vector(Vec<f64>),
}

impl Values {
    /// True when the value is there but empty (an empty string, or no tags).
    fn is_empty_value(&self) -> bool {
        match self {
            Values::Text(t) => t.iter().all(|s| s.is_empty()),
            Values::Tags(t) => t.is_empty(),
            _ => false,
        }
    }
}

/// A key's values for an index: None when the key is not a document of the index (another
/// type), `Some(Err)` when a value cannot be indexed.
pub type Extracted = Option<Result<Vec<Values>, ()>>;

/// What SORTBY compares: a field's first value.
#[derive(Debug, Clone, PartialEq)]
pub enum SortValue {
    Number(f64),
    Text(String),
}

/// One indexed document.
#[derive(Debug, Clone)]
pub struct Doc {
    pub key: Bytes,
    /// Per schema field.
    pub values: Vec<Values>,
    /// Words in the TEXT fields (BM25's document length).
    pub length: u32,
    /// The highest frequency of any term in the document (TFIDF's normalization).
    pub max_freq: u32,
}

impl Doc {
    /// The value SORTBY compares for field `i`.
    pub fn sort_value(&self, i: usize) -> Option<SortValue> {
        match self.values.get(i)? {
            Values::Text(t) => t.first().map(|s| SortValue::Text(s.to_lowercase())),
            Values::Tags(t) => t.first().map(|s| SortValue::Text(s.clone())),
            Values::Numbers(n) => n.first().map(|n| SortValue::Number(*n)),
            _ => None,
        }
    }
}

/// A numeric value as an ordered map key: IEEE total order on the bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ordered(u64);

impl Ordered {
    pub fn new(v: f64) -> Ordered {
        let bits = v.to_bits();
        Ordered(if bits >> 63 == 1 {
            !bits
        } else {
            bits | (1 << 63)
        })
    }
}

/// Term → doc → (field, position) occurrences.
pub type Postings = HashMap<u32, Vec<(u16, u32)>>;

/// The documents of one index and what queries read.
pub struct Data {
    pub def: Definition,
    next_id: u32,
    by_key: HashMap<Bytes, u32>,
    pub docs: BTreeMap<u32, Doc>,
    pub terms: BTreeMap<String, Postings>,
    /// Stem → the indexed terms with that stem (a query word matches all of them).
    pub stems: HashMap<String, BTreeSet<String>>,
    /// Per field: tag → docs.
    pub tags: Vec<BTreeMap<String, BTreeSet<u32>>>,
    /// Per field: (value, doc).
    pub numbers: Vec<BTreeSet<(Ordered, u32)>>,
    /// Per field: docs without a value (INDEXMISSING fields).
    pub missing: Vec<BTreeSet<u32>>,
    /// Per field: docs whose value is empty (INDEXEMPTY fields).
    pub empty: Vec<BTreeSet<u32>>,
    /// Per field: the VECTOR fields' indexes.
    pub vectors: Vec<Option<VectorIndex>>,
    /// Documents whose values could not be indexed (FT.INFO's `hash_indexing_failures`).
    pub failures: u64,
    /// Term occurrences (FT.INFO's `num_records`).
    pub records: u64,
    /// The initial scan is under way.
    pub indexing: bool,
    /// Share of the initial scan done, 0 to 1.
    pub scanned: f64,
}

impl Data {
    pub fn new(def: Definition) -> Data {
        let n = def.fields.len();
        let vectors = def.fields.iter().map(vector_index).collect();
        Data {
            vectors,
            def,
            next_id: 0,
            by_key: HashMap::new(),
            docs: BTreeMap::new(),
            terms: BTreeMap::new(),
            stems: HashMap::new(),
            tags: vec![BTreeMap::new(); n],
            numbers: vec![BTreeSet::new(); n],
            missing: vec![BTreeSet::new(); n],
            empty: vec![BTreeSet::new(); n],
            failures: 0,
            records: 0,
            indexing: false,
            scanned: 1.0,
        }
    }

    pub fn max_doc_id(&self) -> u32 {
        self.next_id
    }

    /// The doc id of `key`, when indexed.
    pub fn id_of(&self, key: &[u8]) -> Option<u32> {
        self.by_key.get(key).copied()
    }

    /// Adds fields (FT.ALTER) to the schema: the caller re-reads every document afterwards.
    pub fn add_fields(&mut self, fields: Vec<Field>, args: &[Bytes]) {
        for f in fields {
            self.vectors.push(vector_index(&f));
            self.def.fields.push(f);
            self.tags.push(BTreeMap::new());
            self.numbers.push(BTreeSet::new());
            self.missing.push(BTreeSet::new());
            self.empty.push(BTreeSet::new());
        }
        // The definition's arguments end with SCHEMA's field list: the new fields continue it.
        self.def.args.extend_from_slice(args);
    }

    /// Drops every document (FLUSHALL/FLUSHDB emptied the keyspace).
    pub fn clear(&mut self) {
        let def = self.def.clone();
        let (failures, indexing, scanned) = (self.failures, self.indexing, self.scanned);
        *self = Data::new(def);
        (self.failures, self.indexing, self.scanned) = (failures, indexing, scanned);
    }

    /// Brings the document of `key` up to date with its current value (`None`: no key).
    pub fn update(&mut self, key: &[u8], value: Option<&Value>) {
        let extracted = value.and_then(|v| extract(&self.def, v));
        self.put(key, extracted);
    }

    /// Replaces the document of `key` by `extracted` (None: not a document of this index;
    /// `Some(Err)`: a value that cannot be indexed, counted as a failure).
    pub fn put(&mut self, key: &[u8], extracted: Extracted) {
        if let Some(id) = self.by_key.remove(key) {
            self.remove_doc(id);
        }
        let values = match extracted {
            None => return,
            Some(Err(())) => {
                self.failures += 1;
                return;
            }
            Some(Ok(values)) => values,
        };
        let id = self.next_id + 1;
        if self.insert_vectors(id, &values).is_err() {
            self.failures += 1;
            return;
        }
        self.next_id = id;
        let key = Bytes::copy_from_slice(key);
        self.by_key.insert(key.clone(), id);
        let stemmer = text::stemmer(&self.def.language);
        let mut length = 0u32;
        let mut freqs: HashMap<&str, u32> = HashMap::new();
        let mut occurrences: Vec<(String, u16, u32)> = Vec::new();
        for (i, (field, value)) in self.def.fields.iter().zip(&values).enumerate() {
            if field.index_missing && *value == Values::Missing {
                self.missing[i].insert(id);
            }
            if field.index_empty && value.is_empty_value() {
                self.empty[i].insert(id);
            }
            if field.noindex {
                continue;
            }
            match value {
                Values::Text(texts) => {
                    let mut position = 0u32;
                    for t in texts {
                        for word in text::tokenize(t) {
                            position += 1;
                            if self.def.is_stopword(&word) {
                                continue;
                            }
                            occurrences.push((word, i as u16, position));
                        }
                    }
                    length += position;
                }
                Values::Tags(tags) => {
                    for tag in tags {
                        self.tags[i].entry(tag.clone()).or_default().insert(id);
                    }
                }
                Values::Numbers(ns) => {
                    for n in ns {
                        self.numbers[i].insert((Ordered::new(*n), id));
                    }
                }
                _ => {}
            }
        }
        for (word, _, _) in &occurrences {
            *freqs.entry(word.as_str()).or_default() += 1;
        }
        let max_freq = freqs.values().copied().max().unwrap_or(0);
        for (word, field, position) in occurrences {
            let stems = match &self.def.fields[field as usize].kind {
                Kind::Text { nostem: false, .. } => Some(stemmer.stem(&word).into_owned()),
                _ => None,
            };
            if let Some(stem) = stems {
                self.stems.entry(stem).or_default().insert(word.clone());
            }
            self.records += 1;
            self.terms
                .entry(word)
                .or_default()
                .entry(id)
                .or_default()
                .push((field, position));
        }
        self.docs.insert(
            id,
            Doc {
                key,
                values,
                length,
                max_freq,
            },
        );
    }

    /// Adds document `id`'s vectors to the VECTOR fields' indexes; on a vector of the wrong
    /// size, takes back those added and fails.
    fn insert_vectors(&mut self, id: u32, values: &[Values]) -> Result<(), String> {
        for (i, value) in values.iter().enumerate() {
            let Some(index) = self.vectors[i].as_mut() else {
                continue;
            };
            let done = match value {
                Values::Blob(blob) => index.insert(id, blob),
                Values::Vector(v) => index.insert_values(id, v),
                _ => Ok(()),
            };
            if let Err(e) = done {
                for v in self.vectors.iter_mut().take(i).flatten() {
                    v.remove(id);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Removes document `id` from every structure.
    fn remove_doc(&mut self, id: u32) {
        let Some(doc) = self.docs.remove(&id) else {
            return;
        };
        for v in self.vectors.iter_mut().flatten() {
            v.remove(id);
        }
        let stemmer = text::stemmer(&self.def.language);
        for (i, value) in doc.values.iter().enumerate() {
            self.missing[i].remove(&id);
            self.empty[i].remove(&id);
            match value {
                Values::Text(texts) => {
                    let nostem = matches!(self.def.fields[i].kind, Kind::Text { nostem: true, .. });
                    for word in texts.iter().flat_map(|t| text::tokenize(t)) {
                        let Some(postings) = self.terms.get_mut(&word) else {
                            continue;
                        };
                        if let Some(occ) = postings.remove(&id) {
                            self.records = self.records.saturating_sub(occ.len() as u64);
                        }
                        if postings.is_empty() {
                            self.terms.remove(&word);
                            if !nostem {
                                let stem = stemmer.stem(&word).into_owned();
                                if let Some(set) = self.stems.get_mut(&stem) {
                                    set.remove(&word);
                                    if set.is_empty() {
                                        self.stems.remove(&stem);
                                    }
                                }
                            }
                        }
                    }
                }
                Values::Tags(tags) => {
                    for tag in tags {
                        if let Some(set) = self.tags[i].get_mut(tag) {
                            set.remove(&id);
                            if set.is_empty() {
                                self.tags[i].remove(tag);
                            }
                        }
                    }
                }
                Values::Numbers(ns) => {
                    for n in ns {
                        self.numbers[i].remove(&(Ordered::new(*n), id));
                    }
                }
                _ => {}
            }
        }
    }

    /// Every indexed key (FT.DROPINDEX DD).
    pub fn keys(&self) -> Vec<Bytes> {
        self.docs.values().map(|d| d.key.clone()).collect()
    }
}

/// The values `value` gives each field of `def`: None when the key is not a document of this
/// index (another type), `Some(Err)` when a value cannot be indexed (a NUMERIC field that is not
/// a number…), as RediSearch then leaves the whole document out.
pub fn extract(def: &Definition, value: &Value) -> Extracted {
    match (def.key_type, value) {
        (KeyType::Hash, Value::Hash(hash)) => {
            let now = crate::store::now_ms();
            Some(
                def.fields
                    .iter()
                    .map(|f| match hash.get_live(f.path.as_bytes(), now) {
                        None => Ok(Values::Missing),
                        Some(raw) if matches!(f.kind, Kind::Vector(_)) => {
                            Ok(Values::Blob(Bytes::copy_from_slice(raw)))
                        }
                        Some(raw) => from_text(f, &String::from_utf8_lossy(raw)),
                    })
                    .collect(),
            )
        }
        (KeyType::Json, Value::Json(doc)) => Some(
            def.fields
                .iter()
                .map(|f| from_json(f, doc.tree()))
                .collect(),
        ),
        _ => None,
    }
}

/// A hash field's text as field `f` indexes it.
fn from_text(f: &Field, raw: &str) -> Result<Values, ()> {
    match &f.kind {
        Kind::Text { .. } => Ok(Values::Text(vec![raw.to_string()])),
        Kind::Tag {
            separator,
            case_sensitive,
        } => Ok(Values::Tags(split_tags(raw, *separator, *case_sensitive))),
        Kind::Numeric => parse_number(raw).map(|n| Values::Numbers(vec![n])),
        Kind::Geo => parse_point(raw).map(|p| Values::Points(vec![p])),
        Kind::Vector(_) => Err(()),
    }
}

/// The index of field `f` when it is a VECTOR field.
fn vector_index(f: &Field) -> Option<VectorIndex> {
    match &f.kind {
        Kind::Vector(params) => Some(VectorIndex::new(params.clone())),
        _ => None,
    }
}

/// A tag value as stored and as queried: trimmed, case folded unless CASESENSITIVE.
pub fn fold_tag(tag: &str, case_sensitive: bool) -> String {
    let tag = tag.trim();
    if case_sensitive {
        tag.to_string()
    } else {
        tag.to_lowercase()
    }
}

fn split_tags(raw: &str, separator: u8, case_sensitive: bool) -> Vec<String> {
    raw.split(separator as char)
        .map(|t| fold_tag(t, case_sensitive))
        .filter(|t| !t.is_empty())
        .collect()
}

fn parse_number(raw: &str) -> Result<f64, ()> {
    let t = raw.trim();
    match t.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" => return Ok(f64::INFINITY),
        "-inf" | "-infinity" => return Ok(f64::NEG_INFINITY),
        _ => {}
    }
    t.parse::<f64>().ok().filter(|n| !n.is_nan()).ok_or(())
}

/// `lon,lat` (or `lon lat`) within the geohash bounds.
fn parse_point(raw: &str) -> Result<(f64, f64), ()> {
    let mut parts = raw.split([',', ' ']).filter(|p| !p.is_empty());
    let lon = parts
        .next()
        .and_then(|p| p.trim().parse::<f64>().ok())
        .ok_or(())?;
    let lat = parts
        .next()
        .and_then(|p| p.trim().parse::<f64>().ok())
        .ok_or(())?;
    if parts.next().is_some()
        || !(-180.0..=180.0).contains(&lon)
        || !(-85.05112878..=85.05112878).contains(&lat)
    {
        return Err(());
    }
    Ok((lon, lat))
}

/// The values at field `f`'s JSONPath of `doc`.
fn from_json(f: &Field, doc: &Json) -> Result<Values, ()> {
    let Ok(path) = JsonPath::parse(&f.path) else {
        return Err(());
    };
    if let Kind::Vector(_) = f.kind {
        let Some(value) = path.values(doc).into_iter().next() else {
            return Ok(Values::Missing);
        };
        let Json::Array(items) = value else {
            return Err(());
        };
        return items
            .iter()
            .map(|v| v.as_f64().ok_or(()))
            .collect::<Result<_, _>>()
            .map(Values::Vector);
    }
    // An array value stands for its elements (RediSearch indexes each).
    let mut found: Vec<&Json> = Vec::new();
    for v in path.values(doc) {
        match v {
            Json::Array(items) => found.extend(items.iter()),
            Json::Null => {}
            other => found.push(other),
        }
    }
    if found.is_empty() {
        return Ok(Values::Missing);
    }
    match &f.kind {
        Kind::Text { .. } => found
            .iter()
            .map(|v| match v {
                Json::String(s) => Ok(s.clone()),
                _ => Err(()),
            })
            .collect::<Result<_, _>>()
            .map(Values::Text),
        Kind::Tag {
            separator,
            case_sensitive,
        } => {
            let mut tags = Vec::new();
            for v in found {
                match v {
                    Json::String(s) => tags.extend(split_tags(s, *separator, *case_sensitive)),
                    Json::Bool(b) => tags.push(b.to_string()),
                    _ => return Err(()),
                }
            }
            Ok(Values::Tags(tags))
        }
        Kind::Numeric => found
            .iter()
            .map(|v| v.as_f64().ok_or(()))
            .collect::<Result<_, _>>()
            .map(Values::Numbers),
        Kind::Geo => found
            .iter()
            .map(|v| v.as_str().ok_or(()).and_then(parse_point))
            .collect::<Result<_, _>>()
            .map(Values::Points),
        Kind::Vector(_) => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::hash::Hash;

    fn def(text: &str) -> Definition {
        let args: Vec<Bytes> = text
            .split(' ')
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect();
        super::super::schema::parse(&args).expect("valid schema")
    }

    fn hash(pairs: &[(&str, &str)]) -> Value {
        let mut h = Hash::default();
        for (f, v) in pairs {
            let limit = crate::store::encoding::CompactLimit {
                entries: 128,
                value: 64,
            };
            h.insert(f.as_bytes(), v.as_bytes(), limit);
        }
        Value::Hash(h)
    }

    #[test]
    fn a_document_is_indexed_replaced_and_removed() {
        let mut data = Data::new(def("SCHEMA t TEXT g TAG n NUMERIC"));
        data.update(
            b"k",
            Some(&hash(&[("t", "Running fast"), ("g", "A, b"), ("n", "5")])),
        );
        assert_eq!(data.docs.len(), 1);
        assert!(data.terms.contains_key("running"));
        assert!(data.stems["run"].contains("running"));
        assert_eq!(data.tags[1].keys().collect::<Vec<_>>(), ["a", "b"]);
        data.update(b"k", Some(&hash(&[("t", "slow"), ("n", "7")])));
        assert_eq!(data.docs.len(), 1);
        assert!(!data.terms.contains_key("running") && !data.stems.contains_key("run"));
        assert!(data.tags[1].is_empty());
        assert_eq!(data.numbers[2].len(), 1);
        assert_eq!(data.max_doc_id(), 2);
        data.update(b"k", None);
        assert!(data.docs.is_empty() && data.terms.is_empty() && data.numbers[2].is_empty());
    }

    #[test]
    fn an_unparsable_number_leaves_the_document_out() {
        let mut data = Data::new(def("SCHEMA n NUMERIC"));
        data.update(b"k", Some(&hash(&[("n", "abc")])));
        assert!(data.docs.is_empty());
        assert_eq!(data.failures, 1);
        data.update(b"s", Some(&Value::Str(b"x"[..].into())));
        assert_eq!(data.failures, 1, "another type is not a failure");
    }

    #[test]
    fn numbers_order_across_signs() {
        let mut v = [3.5, -1.0, 0.0, -7.25, f64::INFINITY, f64::NEG_INFINITY];
        v.sort_by_key(|n| Ordered::new(*n));
        assert_eq!(v, [f64::NEG_INFINITY, -7.25, -1.0, 0.0, 3.5, f64::INFINITY]);
    }

    #[test]
    fn json_fields_read_their_paths() {
        let mut data = Data::new(def(
            "ON JSON SCHEMA $.name AS name TEXT $.tags[*] AS tags TAG $.n AS n NUMERIC",
        ));
        let doc: Json =
            serde_json::from_str(r#"{"name":"Ada","tags":["X","y"],"n":3}"#).expect("json");
        data.update(b"j", Some(&Value::Json(Box::new(doc.into()))));
        let d = &data.docs[&1];
        assert_eq!(d.values[0], Values::Text(vec!["Ada".into()]));
        assert_eq!(d.values[1], Values::Tags(vec!["x".into(), "y".into()]));
        assert_eq!(d.values[2], Values::Numbers(vec![3.0]));
    }
}
