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
use std::ops::Range;

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
pub type Extracted = Option<Result<Vec<Values>, IndexError>>;

/// Why a document could not be indexed, as FT.INFO's `Index Errors` report it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexError {
    /// The schema field whose value failed.
    pub field: usize,
    /// RediSearch's text for it.
    pub message: String,
    /// False for a JSON value of the wrong type, which RediSearch counts for the index only, not
    /// in the field's statistics.
    pub per_field: bool,
}

impl IndexError {
    fn value(field: usize, message: String) -> IndexError {
        IndexError {
            field,
            message,
            per_field: true,
        }
    }
}

/// FT.INFO's indexing failures of the index or of one field: how many, and the last one's text
/// and key.
#[derive(Debug, Clone, Default)]
pub struct Failures {
    pub count: u64,
    pub last: Option<(String, Bytes)>,
}

impl Failures {
    fn note(&mut self, message: &str, key: &[u8]) {
        self.count += 1;
        self.last = Some((message.to_string(), Bytes::copy_from_slice(key)));
    }
}

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
    /// When the key expires (Unix ms; 0: never), as it was when the document was read.
    pub expire_at: u64,
}

impl Doc {
    /// The value SORTBY compares for field `i`; text case-folded unless `as_written`
    /// ([`Definition::sorts_as_written`]).
    pub fn sort_value(&self, i: usize, as_written: bool) -> Option<SortValue> {
        match self.values.get(i)? {
            Values::Text(t) => t.first().map(|s| {
                SortValue::Text(if as_written {
                    s.clone()
                } else {
                    s.to_lowercase()
                })
            }),
            Values::Tags(t) => t.first().map(|s| SortValue::Text(s.clone())),
            Values::Numbers(n) => n.first().map(|n| SortValue::Number(*n)),
            _ => None,
        }
    }
}

/// Bytes per structure of one index (estimates, for FT.INFO).
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    pub inverted: usize,
    pub offsets: usize,
    pub vectors: usize,
    pub docs: usize,
    pub keys: usize,
    pub sortables: usize,
    pub tags: usize,
    pub text: usize,
}

impl Memory {
    pub fn total(&self) -> usize {
        self.inverted
            + self.offsets
            + self.docs
            + self.keys
            + self.sortables
            + self.tags
            + self.text
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

/// The index's hash maps: ahash, not std's SipHash, which was a tenth of an indexed write's
/// cost (keys and terms come from clients, and ahash's keys are random per map as SipHash's).
pub type Map<K, V> = HashMap<K, V, ahash::RandomState>;

/// Term → doc → (field, position) occurrences.
pub type Postings = Map<u32, Vec<(u16, u32)>>;

/// The documents of one index and what queries read.
pub struct Data {
    pub def: Definition,
    next_id: u32,
    by_key: Map<Bytes, u32>,
    /// By doc id (a hash map: a query's matches are looked up one by one).
    pub docs: Map<u32, Doc>,
    pub terms: BTreeMap<String, Postings>,
    /// Stem → the indexed terms with that stem (a query word matches all of them).
    pub stems: Map<String, BTreeSet<String>>,
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
    /// Documents whose key has a time to live: (expiry, doc), soonest first, so a query drops
    /// those whose time has passed without reading any key.
    expiring: BTreeSet<(u64, u32)>,
    /// Documents whose values could not be indexed (FT.INFO's `hash_indexing_failures` and
    /// `Index Errors`).
    pub failures: Failures,
    /// Per field: its share of `failures` (FT.INFO's `field statistics`).
    pub field_failures: Vec<Failures>,
    /// Term occurrences (FT.INFO's `num_records`).
    pub records: u64,
    /// The documents' lengths added up (BM25's average length).
    total_length: u64,
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
            by_key: Map::default(),
            docs: Map::default(),
            terms: BTreeMap::new(),
            stems: Map::default(),
            tags: vec![BTreeMap::new(); n],
            numbers: vec![BTreeSet::new(); n],
            missing: vec![BTreeSet::new(); n],
            empty: vec![BTreeSet::new(); n],
            expiring: BTreeSet::new(),
            failures: Failures::default(),
            field_failures: vec![Failures::default(); n],
            records: 0,
            total_length: 0,
            indexing: false,
            scanned: 1.0,
        }
    }

    /// The documents' average length in words (1 with no documents).
    pub fn average_length(&self) -> f64 {
        if self.docs.is_empty() {
            1.0
        } else {
            self.total_length as f64 / self.docs.len() as f64
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
    pub fn add_fields(&mut self, fields: Vec<Field>) {
        for f in fields {
            self.vectors.push(vector_index(&f));
            self.def.fields.push(f);
            self.tags.push(BTreeMap::new());
            self.numbers.push(BTreeSet::new());
            self.missing.push(BTreeSet::new());
            self.empty.push(BTreeSet::new());
            self.field_failures.push(Failures::default());
        }
    }

    /// Drops every document (FLUSHALL/FLUSHDB emptied the keyspace).
    pub fn clear(&mut self) {
        let def = self.def.clone();
        let failures = std::mem::take(&mut self.failures);
        let field_failures = std::mem::take(&mut self.field_failures);
        let (indexing, scanned) = (self.indexing, self.scanned);
        *self = Data::new(def);
        (self.failures, self.field_failures) = (failures, field_failures);
        (self.indexing, self.scanned) = (indexing, scanned);
    }

    /// Brings the document of `key` up to date with its current value (`None`: no key), which
    /// never expires.
    pub fn update(&mut self, key: &[u8], value: Option<&Value>) {
        let extracted = value.and_then(|v| extract(&self.def, v));
        self.put(key, extracted, 0);
    }

    /// The documents whose key's time (`expire_at`) has passed at `now`: a read must not see
    /// them (as GET doesn't), though they stay indexed until the key is deleted.
    pub fn expired(&self, now: u64) -> impl Iterator<Item = u32> + '_ {
        self.expiring.range(..=(now, u32::MAX)).map(|&(_, id)| id)
    }

    /// Replaces the document of `key` by `extracted` (None: not a document of this index;
    /// `Some(Err)`: a value that cannot be indexed, counted as a failure), whose key expires at
    /// `expire_at` (Unix ms, 0: never). When only the expiry changed (EXPIRE, PERSIST) the
    /// document keeps its id, so its place among equal scores stays where its write put it.
    pub fn put(&mut self, key: &[u8], extracted: Extracted, expire_at: u64) {
        if let (Some(&id), Some(Ok(values))) = (self.by_key.get(key), &extracted) {
            if let Some(doc) = self.docs.get_mut(&id).filter(|d| d.values == *values) {
                if doc.expire_at != expire_at {
                    self.expiring.remove(&(doc.expire_at, id));
                    doc.expire_at = expire_at;
                    if expire_at != 0 {
                        self.expiring.insert((expire_at, id));
                    }
                }
                return;
            }
        }
        if let Some(id) = self.by_key.remove(key) {
            self.remove_doc(id);
        }
        let values = match extracted {
            None => return,
            Some(Err(e)) => {
                self.note_failure(&e, key);
                return;
            }
            Some(Ok(values)) => values,
        };
        let id = self.next_id + 1;
        if let Err(e) = self.insert_vectors(id, &values) {
            self.note_failure(&e, key);
            return;
        }
        self.next_id = id;
        let key = Bytes::copy_from_slice(key);
        self.by_key.insert(key.clone(), id);
        let stemmer = text::stemmer(&self.def.language);
        // Every word of the TEXT fields, one after another in one string; an occurrence is its
        // word's range there, its field and its position.
        let mut words = String::new();
        let mut word = String::new();
        let mut occurrences: Vec<(Range<usize>, u16, u32)> = Vec::new();
        // One count of positions through the TEXT fields in schema order, as RediSearch's
        // tokenizer numbers a document's words: a phrase or SLOP match may span two fields.
        let mut position = 0u32;
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
                    for t in texts {
                        // Room for the text's words up front: no buffer grows word by word.
                        word.reserve(t.len());
                        words.reserve(t.len());
                        occurrences.reserve(t.len() / 4 + 1);
                        // Stop words are not indexed and take no position (RediSearch's
                        // tokenizer): "henry the iv" holds the phrase "henry iv", and a
                        // document's length counts the other words only.
                        text::each_word(t, &mut word, |w| {
                            if !self.def.is_stopword(w) {
                                position += 1;
                                let from = words.len();
                                words.push_str(w);
                                occurrences.push((from..words.len(), i as u16, position));
                            }
                        });
                    }
                }
                Values::Tags(tags) => {
                    for tag in tags {
                        // The tag's string is copied only for a new tag.
                        match self.tags[i].get_mut(tag) {
                            Some(docs) => {
                                docs.insert(id);
                            }
                            None => {
                                self.tags[i].insert(tag.clone(), BTreeSet::from([id]));
                            }
                        }
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
        let max_freq = max_frequency(&words, &occurrences);
        let any_nostem = self
            .def
            .fields
            .iter()
            .any(|f| matches!(f.kind, Kind::Text { nostem: true, .. }));
        for (at, field, position) in occurrences {
            let word = &words[at];
            self.records += 1;
            let stemmed = matches!(
                self.def.fields[field as usize].kind,
                Kind::Text { nostem: false, .. }
            );
            if let Some(postings) = self.terms.get_mut(word).filter(|_| !any_nostem) {
                // A term already indexed has its stem recorded (with no NOSTEM field, every
                // occurrence records it): stemming is paid once per new term.
                postings.entry(id).or_default().push((field, position));
                continue;
            }
            if stemmed {
                let stem = stemmer.stem(word).into_owned();
                if let Some(set) = self.stems.get_mut(&stem) {
                    if !set.contains(word) {
                        set.insert(word.to_string());
                    }
                } else {
                    self.stems.insert(stem, BTreeSet::from([word.to_string()]));
                }
            }
            let postings = match self.terms.get_mut(word) {
                Some(postings) => postings,
                None => self.terms.entry(word.to_string()).or_default(),
            };
            postings.entry(id).or_default().push((field, position));
        }
        let length = position;
        self.total_length += u64::from(length);
        if expire_at != 0 {
            self.expiring.insert((expire_at, id));
        }
        self.docs.insert(
            id,
            Doc {
                key,
                values,
                length,
                max_freq,
                expire_at,
            },
        );
    }

    fn note_failure(&mut self, e: &IndexError, key: &[u8]) {
        self.failures.note(&e.message, key);
        if e.per_field {
            if let Some(f) = self.field_failures.get_mut(e.field) {
                f.note(&e.message, key);
            }
        }
    }

    /// Adds document `id`'s vectors to the VECTOR fields' indexes; on a vector of the wrong
    /// size, takes back those added and fails.
    fn insert_vectors(&mut self, id: u32, values: &[Values]) -> Result<(), IndexError> {
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
                return Err(IndexError::value(i, e));
            }
        }
        Ok(())
    }

    /// Removes document `id` from every structure.
    fn remove_doc(&mut self, id: u32) {
        let Some(doc) = self.docs.remove(&id) else {
            return;
        };
        self.total_length = self.total_length.saturating_sub(u64::from(doc.length));
        self.expiring.remove(&(doc.expire_at, id));
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

    /// Estimates of the bytes each structure holds, for FT.INFO's memory figures.
    pub fn memory(&self) -> Memory {
        let postings: usize = self.terms.values().map(|p| p.len()).sum();
        let numbers: usize = self.numbers.iter().map(|n| n.len()).sum();
        let sortable = self.def.fields.iter().filter(|f| f.sortable).count();
        Memory {
            // An entry per (term, doc), a (field, position) pair per occurrence, a
            // (value, doc) pair per number.
            inverted: postings * 16 + self.records as usize * 6 + numbers * 12,
            offsets: self.records as usize * 4,
            vectors: self.vectors.iter().flatten().map(|v| v.memory()).sum(),
            docs: self.docs.len() * std::mem::size_of::<Doc>(),
            keys: self.by_key.keys().map(|k| k.len() + 16).sum(),
            sortables: self.docs.len() * sortable * 16,
            tags: self
                .tags
                .iter()
                .flat_map(|t| t.iter())
                .map(|(tag, docs)| tag.len() + 32 + docs.len() * 4)
                .sum(),
            text: self.terms.keys().map(|t| t.len() + 32).sum(),
        }
    }

    /// Every indexed key (FT.DROPINDEX DD).
    pub fn keys(&self) -> Vec<Bytes> {
        self.docs.values().map(|d| d.key.clone()).collect()
    }
}

/// How often the most frequent word of a document's occurrences (ranges of `words`) occurs:
/// counted in runs of the sorted words (no hashing; a document has few words).
fn max_frequency(words: &str, occurrences: &[(Range<usize>, u16, u32)]) -> u32 {
    let mut sorted: Vec<&str> = occurrences
        .iter()
        .map(|(at, _, _)| &words[at.clone()])
        .collect();
    sorted.sort_unstable();
    sorted
        .chunk_by(|a, b| a == b)
        .map(|run| run.len() as u32)
        .max()
        .unwrap_or(0)
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
                    .enumerate()
                    .map(|(i, f)| match hash.get_live(f.path.as_bytes(), now) {
                        None => Ok(Values::Missing),
                        Some(raw) if matches!(f.kind, Kind::Vector(_)) => {
                            Ok(Values::Blob(Bytes::copy_from_slice(raw)))
                        }
                        Some(raw) => from_text(f, &String::from_utf8_lossy(raw))
                            .map_err(|m| IndexError::value(i, m)),
                    })
                    .collect(),
            )
        }
        (KeyType::Json, Value::Json(doc)) => Some(
            def.fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    from_json(f, doc.tree()).map_err(|(message, per_field)| IndexError {
                        field: i,
                        message,
                        per_field,
                    })
                })
                .collect(),
        ),
        (KeyType::Stm, Value::Stm(entry)) => {
            let values = super::stm_doc::fields(entry);
            Some(
                def.fields
                    .iter()
                    .enumerate()
                    .map(
                        |(i, f)| match values.iter().find(|(name, _)| *name == f.path) {
                            None => Ok(Values::Missing),
                            Some((_, raw)) => {
                                from_text(f, raw).map_err(|m| IndexError::value(i, m))
                            }
                        },
                    )
                    .collect(),
            )
        }
        _ => None,
    }
}

/// A hash field's text as field `f` indexes it.
fn from_text(f: &Field, raw: &str) -> Result<Values, String> {
    match &f.kind {
        Kind::Text { .. } => Ok(Values::Text(vec![raw.to_string()])),
        Kind::Tag {
            separator,
            case_sensitive,
        } => Ok(Values::Tags(split_tags(raw, *separator, *case_sensitive))),
        Kind::Numeric => parse_number(raw)
            .map(|n| Values::Numbers(vec![n]))
            .map_err(|()| format!("Invalid numeric value: '{raw}'")),
        Kind::Geo => parse_point(raw).map(|p| Values::Points(vec![p])),
        // A hash's vector is its bytes (`extract`).
        Kind::Vector(_) => Ok(Values::Missing),
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

fn split_tags(raw: &str, separator: Option<u8>, case_sensitive: bool) -> Vec<String> {
    let fold = |t| Some(fold_tag(t, case_sensitive)).filter(|t| !t.is_empty());
    match separator {
        Some(sep) => raw.split(sep as char).filter_map(fold).collect(),
        None => fold(raw).into_iter().collect(),
    }
}

fn parse_number(raw: &str) -> Result<f64, ()> {
    let t = raw.trim();
    let is = |word: &str| t.eq_ignore_ascii_case(word);
    if is("inf") || is("+inf") || is("infinity") {
        return Ok(f64::INFINITY);
    }
    if is("-inf") || is("-infinity") {
        return Ok(f64::NEG_INFINITY);
    }
    t.parse::<f64>().ok().filter(|n| !n.is_nan()).ok_or(())
}

/// `lon,lat` (or `lon lat`) within the geohash bounds; Err: RediSearch's text.
fn parse_point(raw: &str) -> Result<(f64, f64), String> {
    let bad = || "Invalid geo string".to_string();
    let mut parts = raw.split([',', ' ']).filter(|p| !p.is_empty());
    let lon = parts
        .next()
        .and_then(|p| p.trim().parse::<f64>().ok())
        .filter(|n| !n.is_nan())
        .ok_or_else(bad)?;
    let lat = parts
        .next()
        .and_then(|p| p.trim().parse::<f64>().ok())
        .filter(|n| !n.is_nan())
        .ok_or_else(bad)?;
    if parts.next().is_some() {
        return Err(bad());
    }
    if !(-180.0..=180.0).contains(&lon) || !(-85.05112878..=85.05112878).contains(&lat) {
        return Err(format!("Invalid geo coordinates: {lon:.6}, {lat:.6}"));
    }
    Ok((lon, lat))
}

/// The values at field `f`'s JSONPath of `doc`; Err: RediSearch's text, and whether the field's
/// statistics count it (a geo value that does not parse) or only the index's (a value of the
/// wrong JSON type).
fn from_json(f: &Field, doc: &Json) -> Result<Values, (String, bool)> {
    let Ok(path) = JsonPath::parse(&f.path) else {
        return Err(("Invalid JSONPath".into(), false));
    };
    let values = path.values(doc);
    if let Kind::Vector(params) = &f.kind {
        let Some(value) = values.into_iter().find(|v| !matches!(v, Json::Null)) else {
            return Ok(Values::Missing);
        };
        let Json::Array(items) = value else {
            return Err((wrong_type(value), false));
        };
        if items.len() != params.dim {
            let message = format!(
                "Invalid vector length. Expected {}, got {}",
                params.dim,
                items.len()
            );
            return Err((message, false));
        }
        return items
            .iter()
            .map(|v| v.as_f64().ok_or_else(|| (wrong_type(v), false)))
            .collect::<Result<_, _>>()
            .map(Values::Vector);
    }
    // An array value stands for its elements (RediSearch indexes each); its own texts for an
    // element of the wrong type.
    let mut found: Vec<&Json> = Vec::new();
    for v in values {
        match v {
            Json::Array(items) => {
                for item in items.iter().filter(|i| !matches!(i, Json::Null)) {
                    let fits = match &f.kind {
                        Kind::Numeric => item.as_f64().is_some(),
                        _ => matches!(item, Json::String(_)),
                    };
                    if !fits {
                        let message = match &f.kind {
                            Kind::Numeric => "NUMERIC fields can only contain numeric or nulls",
                            _ => "TEXT/TAG fields can only contain strings or nulls",
                        };
                        return Err((message.into(), false));
                    }
                    found.push(item);
                }
            }
            Json::Null => {}
            other => {
                let fits = match other {
                    Json::String(_) => {
                        matches!(f.kind, Kind::Text { .. } | Kind::Tag { .. } | Kind::Geo)
                    }
                    Json::Bool(_) => matches!(f.kind, Kind::Tag { .. }),
                    Json::Object(_) => false,
                    _ => matches!(f.kind, Kind::Numeric),
                };
                if !fits {
                    return Err((wrong_type(other), false));
                }
                found.push(other);
            }
        }
    }
    if found.is_empty() {
        return Ok(Values::Missing);
    }
    let text = |v: &&Json| match v {
        Json::String(s) => s.clone(),
        Json::Bool(b) => b.to_string(),
        _ => String::new(),
    };
    Ok(match &f.kind {
        Kind::Text { .. } => Values::Text(found.iter().map(text).collect()),
        Kind::Tag {
            separator,
            case_sensitive,
        } => Values::Tags(
            found
                .iter()
                .flat_map(|v| split_tags(&text(v), *separator, *case_sensitive))
                .collect(),
        ),
        Kind::Numeric => Values::Numbers(found.iter().filter_map(|v| v.as_f64()).collect()),
        Kind::Geo => Values::Points(
            found
                .iter()
                .map(|v| parse_point(&text(v)))
                .collect::<Result<_, _>>()
                .map_err(|m| (m, true))?,
        ),
        Kind::Vector(_) => Values::Missing,
    })
}

/// RediSearch's text for a JSON value of a type the field cannot hold.
fn wrong_type(v: &Json) -> String {
    let what = match v {
        Json::String(_) => "String type can represent only TEXT, TAG, GEO or GEOMETRY field",
        Json::Bool(_) => "Boolean type can be represent only TAG field",
        Json::Object(_) => "Object type can represent only GEOMETRY fields",
        Json::Array(_) => "Array type cannot be indexed by this field",
        Json::Null => "Null type cannot be indexed",
        _ => "Numeric type can represent only NUMERIC field",
    };
    format!("Invalid JSON type: {what}")
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
        assert_eq!(data.failures.count, 1);
        data.update(b"s", Some(&Value::Str(b"x"[..].into())));
        assert_eq!(data.failures.count, 1, "another type is not a failure");
    }

    #[test]
    fn numbers_order_across_signs() {
        let mut v = [3.5, -1.0, 0.0, -7.25, f64::INFINITY, f64::NEG_INFINITY];
        v.sort_by_key(|n| Ordered::new(*n));
        assert_eq!(v, [f64::NEG_INFINITY, -7.25, -1.0, 0.0, 3.5, f64::INFINITY]);
    }

    #[test]
    fn failures_keep_redisearch_texts_per_index_and_field() {
        let mut data = Data::new(def("SCHEMA n NUMERIC g GEO"));
        data.update(b"a", Some(&hash(&[("n", "abc")])));
        data.update(b"b", Some(&hash(&[("g", "999,999")])));
        data.update(b"c", Some(&hash(&[("g", "nowhere")])));
        assert_eq!(data.failures.count, 3);
        assert_eq!(
            data.failures.last,
            Some(("Invalid geo string".into(), Bytes::from("c")))
        );
        assert_eq!(data.field_failures[0].count, 1);
        assert_eq!(
            data.field_failures[0].last,
            Some(("Invalid numeric value: 'abc'".into(), Bytes::from("a")))
        );
        assert_eq!(data.field_failures[1].count, 2);

        // On JSON a value of the wrong type counts for the index only.
        let mut data = Data::new(def("ON JSON SCHEMA $.n AS n NUMERIC $.t AS t TAG"));
        let json = |text: &str| {
            let doc: Json = serde_json::from_str(text).expect("json");
            Value::Json(Box::new(doc.into()))
        };
        data.update(b"j", Some(&json(r#"{"n":"x"}"#)));
        data.update(b"k", Some(&json(r#"{"t":[1]}"#)));
        assert_eq!(data.failures.count, 2);
        assert_eq!(
            data.failures.last,
            Some((
                "TEXT/TAG fields can only contain strings or nulls".into(),
                Bytes::from("k")
            ))
        );
        assert_eq!(
            data.field_failures[0].count + data.field_failures[1].count,
            0
        );
        assert!(data.docs.is_empty());
    }

    #[test]
    fn a_json_tag_without_separator_is_one_tag() {
        let mut data = Data::new(def("ON JSON SCHEMA $.t AS t TAG $.s AS s TAG SEPARATOR ,"));
        let doc: Json = serde_json::from_str(r#"{"t":"A,b","s":"A,b"}"#).expect("json");
        data.update(b"j", Some(&Value::Json(Box::new(doc.into()))));
        let d = &data.docs[&1];
        assert_eq!(d.values[0], Values::Tags(vec!["a,b".into()]));
        assert_eq!(d.values[1], Values::Tags(vec!["a".into(), "b".into()]));
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
