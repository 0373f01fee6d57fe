//! An index's definition: FT.CREATE's arguments after the index name, parsed. The arguments are
//! kept as given ([`Definition::args`]) so the snapshot can carry the definition as FT.CREATE
//! would rebuild it, and FT.ALTER appends its fields to them.

use bytes::Bytes;

/// What keys an index reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    Hash,
    Json,
    /// STM entries, read through `search::stm_doc`'s fields (stmd's own type).
    Stm,
}

impl KeyType {
    pub fn name(self) -> &'static str {
        match self {
            KeyType::Hash => "HASH",
            KeyType::Json => "JSON",
            KeyType::Stm => "STM",
        }
    }
}

/// A field's type and its type's options.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text {
        weight: f64,
        nostem: bool,
    },
    /// `separator` None: a value is one tag (a JSON field without `SEPARATOR`, as RediSearch).
    Tag {
        separator: Option<u8>,
        case_sensitive: bool,
    },
    Numeric,
    Geo,
    Vector(super::vector::VectorParams),
}

impl Kind {
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Text { .. } => "TEXT",
            Kind::Tag { .. } => "TAG",
            Kind::Numeric => "NUMERIC",
            Kind::Geo => "GEO",
            Kind::Vector(_) => "VECTOR",
        }
    }
}

/// One field of the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The hash field, or the JSONPath of a JSON index.
    pub path: String,
    /// The name queries use (`AS` name, else the path).
    pub name: String,
    pub kind: Kind,
    pub sortable: bool,
    /// `UNF` given after `SORTABLE`.
    pub unf: bool,
    pub suffix_trie: bool,
    /// Stored and returned, never searched.
    pub noindex: bool,
    pub index_missing: bool,
    pub index_empty: bool,
}

/// A whole definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub key_type: KeyType,
    /// Key prefixes the index covers (`""`: every key).
    pub prefixes: Vec<Bytes>,
    pub language: String,
    pub score: f64,
    /// None: RediSearch's default list.
    pub stopwords: Option<Vec<String>>,
    pub skip_initial_scan: bool,
    /// FT.INFO's `index_options`: the index-wide flags given, in RediSearch's order.
    pub options: Vec<&'static str>,
    pub language_field: Option<String>,
    pub score_field: Option<String>,
    pub payload_field: Option<String>,
    pub fields: Vec<Field>,
}

/// RediSearch's default stop words.
pub const DEFAULT_STOPWORDS: &[&str] = &[
    "a", "is", "the", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into",
    "it", "no", "not", "of", "on", "or", "such", "that", "their", "then", "there", "these", "they",
    "this", "to", "was", "will", "with",
];

/// The languages Snowball stems (RediSearch's LANGUAGE values this server accepts).
pub const LANGUAGES: &[&str] = &[
    "arabic",
    "danish",
    "dutch",
    "english",
    "finnish",
    "french",
    "german",
    "greek",
    "hungarian",
    "italian",
    "norwegian",
    "portuguese",
    "romanian",
    "russian",
    "spanish",
    "swedish",
    "tamil",
    "turkish",
];

/// A cursor over the arguments, case-insensitive keyword matching.
struct Args<'a> {
    args: &'a [Bytes],
    at: usize,
}

impl<'a> Args<'a> {
    fn peek(&self) -> Option<&'a [u8]> {
        self.args.get(self.at).map(|a| &a[..])
    }
    fn next(&mut self) -> Option<&'a [u8]> {
        let a = self.peek();
        if a.is_some() {
            self.at += 1;
        }
        a
    }
    fn is(&self, word: &str) -> bool {
        self.peek()
            .is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    }
    fn take(&mut self, word: &str) -> bool {
        let is = self.is(word);
        if is {
            self.at += 1;
        }
        is
    }
    fn text(&mut self, what: &str) -> Result<String, String> {
        let a = self.next().ok_or_else(|| {
            format!("Bad arguments for {what}: Expected an argument, but none provided")
        })?;
        Ok(String::from_utf8_lossy(a).into_owned())
    }
    fn count(&mut self, what: &str) -> Result<usize, String> {
        let a = self.next().ok_or_else(|| {
            format!("Bad arguments for {what}: Expected an argument, but none provided")
        })?;
        std::str::from_utf8(a)
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
            .ok_or_else(|| {
                format!("Bad arguments for {what}: Could not convert argument to expected type")
            })
    }
}

/// FT.CREATE's index-wide flags, in the order FT.INFO lists them.
const INDEX_FLAGS: &[&str] = &["NOFREQS", "NOFIELDS", "NOOFFSETS", "NOHL", "MAXTEXTFIELDS"];

/// Parses FT.CREATE's arguments after the index name.
pub fn parse(args: &[Bytes]) -> Result<Definition, String> {
    let mut a = Args { args, at: 0 };
    let mut def = Definition {
        key_type: KeyType::Hash,
        prefixes: Vec::new(),
        language: "english".into(),
        score: 1.0,
        stopwords: None,
        skip_initial_scan: false,
        options: Vec::new(),
        language_field: None,
        score_field: None,
        payload_field: None,
        fields: Vec::new(),
    };
    let mut flags = Vec::new();
    loop {
        if a.take("ON") {
            let t = a.text("ON")?;
            def.key_type = match t.to_ascii_uppercase().as_str() {
                "HASH" => KeyType::Hash,
                "JSON" => KeyType::Json,
                "STM" => KeyType::Stm,
                _ => return Err(format!("Invalid rule type: {t}")),
            };
        } else if a.take("PREFIX") {
            let n = a.count("PREFIX")?;
            for _ in 0..n {
                let p = a
                    .next()
                    .ok_or("Bad arguments for PREFIX: Not enough arguments")?;
                def.prefixes.push(Bytes::copy_from_slice(p));
            }
        } else if a.take("FILTER") {
            return Err("FILTER expressions in FT.CREATE are not served by stmd".into());
        } else if a.take("LANGUAGE") {
            let l = a.text("LANGUAGE")?.to_ascii_lowercase();
            if !LANGUAGES.contains(&l.as_str()) {
                return Err("Invalid language".into());
            }
            def.language = l;
        } else if a.take("LANGUAGE_FIELD") {
            def.language_field = Some(a.text("LANGUAGE_FIELD")?);
        } else if a.take("SCORE_FIELD") {
            def.score_field = Some(a.text("SCORE_FIELD")?);
        } else if a.take("PAYLOAD_FIELD") {
            def.payload_field = Some(a.text("PAYLOAD_FIELD")?);
        } else if a.take("SCORE") {
            let s = a.text("SCORE")?;
            def.score = s
                .parse::<f64>()
                .ok()
                .filter(|s| (0.0..=1.0).contains(s))
                .ok_or("Invalid score")?;
        } else if a.take("STOPWORDS") {
            let n = a.count("STOPWORDS")?;
            let mut words = Vec::with_capacity(n.min(64));
            for _ in 0..n {
                let w = a
                    .next()
                    .ok_or("Bad arguments for STOPWORDS: Not enough arguments")?;
                words.push(String::from_utf8_lossy(w).to_lowercase());
            }
            def.stopwords = Some(words);
        } else if a.take("TEMPORARY") {
            a.count("TEMPORARY")?;
        } else if a.take("SKIPINITIALSCAN") {
            def.skip_initial_scan = true;
        } else if let Some(flag) = INDEX_FLAGS.iter().find(|f| a.is(f)) {
            a.at += 1;
            flags.push(*flag);
            if *flag == "NOOFFSETS" {
                // Highlighting needs the offsets.
                flags.push("NOHL");
            }
        } else if a.take("ASYNC") || a.take("NOSCOREIDX") {
        } else {
            break;
        }
    }
    def.options = INDEX_FLAGS
        .iter()
        .filter(|f| flags.contains(f))
        .copied()
        .collect();
    if !a.take("SCHEMA") {
        return Err(match a.peek() {
            Some(bad) => format!("Unknown argument `{}`", String::from_utf8_lossy(bad)),
            None => "No schema found".into(),
        });
    }
    if def.prefixes.is_empty() {
        def.prefixes.push(Bytes::new());
    }
    let fields = parse_fields(&mut a, def.key_type, &[])?;
    if fields.is_empty() {
        return Err("Fields arguments are missing".into());
    }
    def.fields = fields;
    Ok(def)
}

/// Parses the fields of a SCHEMA (FT.CREATE's or FT.ALTER's) to the end of the arguments;
/// `existing` are the fields already defined (names must stay unique).
fn parse_fields(
    a: &mut Args<'_>,
    key_type: KeyType,
    existing: &[Field],
) -> Result<Vec<Field>, String> {
    let mut fields: Vec<Field> = Vec::new();
    while let Some(path) = a.next() {
        let path = String::from_utf8_lossy(path).into_owned();
        if key_type == KeyType::Json {
            crate::store::json::Query::parse(&path)
                .map_err(|_| format!("Invalid JSONPath '{path}'"))?;
        }
        if key_type == KeyType::Stm && !super::stm_doc::is_field(&path) {
            return Err(format!(
                "Unknown STM field `{path}`: an STM index reads {}",
                super::stm_doc::FIELDS.join(", ")
            ));
        }
        let name = if a.take("AS") {
            a.text("AS")?
        } else {
            path.clone()
        };
        if existing.iter().chain(&fields).any(|f| f.name == name) {
            return Err(format!("Duplicate field in schema - {name}"));
        }
        let Some(ty) = a.next() else {
            return Err(format!("Field `{name}` does not have a type"));
        };
        let ty = String::from_utf8_lossy(ty).to_ascii_uppercase();
        let mut kind = match ty.as_str() {
            "GEO" | "VECTOR" if key_type == KeyType::Stm => {
                return Err(format!("An STM index has no {ty} field"))
            }
            "TEXT" => Kind::Text {
                weight: 1.0,
                nostem: false,
            },
            "TAG" => Kind::Tag {
                separator: (key_type == KeyType::Hash).then_some(b','),
                case_sensitive: false,
            },
            "NUMERIC" => Kind::Numeric,
            "GEO" => Kind::Geo,
            "VECTOR" => {
                let (params, used) = super::vector::VectorParams::parse(&a.args[a.at..])?;
                a.at += used;
                Kind::Vector(params)
            }
            "GEOSHAPE" => return Err("GEOSHAPE fields are not served by stmd".into()),
            _ => return Err(format!("Invalid field type for field `{name}`")),
        };
        let mut field = Field {
            path,
            name,
            kind: kind.clone(),
            sortable: false,
            unf: false,
            suffix_trie: false,
            noindex: false,
            index_missing: false,
            index_empty: false,
        };
        loop {
            if a.take("SORTABLE") {
                field.sortable = true;
                field.unf = a.take("UNF");
            } else if a.take("NOINDEX") {
                field.noindex = true;
            } else if a.take("INDEXMISSING") {
                field.index_missing = true;
            } else if a.take("INDEXEMPTY") {
                field.index_empty = true;
            } else if let Kind::Text { weight, nostem } = &mut kind {
                if a.take("WEIGHT") {
                    let w = a.text("weight")?;
                    *weight = w
                        .parse::<f64>()
                        .ok()
                        .filter(|w| w.is_finite() && *w >= 0.0)
                        .ok_or(
                            "Bad arguments for weight: Could not convert argument to expected type",
                        )?;
                } else if a.take("NOSTEM") {
                    *nostem = true;
                } else if a.take("PHONETIC") {
                    return Err("PHONETIC matching is not served by stmd".into());
                } else if a.take("WITHSUFFIXTRIE") {
                    field.suffix_trie = true;
                } else {
                    break;
                }
            } else if let Kind::Tag {
                separator,
                case_sensitive,
            } = &mut kind
            {
                if a.take("SEPARATOR") {
                    let Some(sep) = a.next() else {
                        return Err("SEPARATOR requires an argument".into());
                    };
                    if sep.len() != 1 {
                        return Err(format!(
                            "Tag separator must be a single character. Got `{}`",
                            String::from_utf8_lossy(sep)
                        ));
                    }
                    *separator = Some(sep[0]);
                } else if a.take("CASESENSITIVE") {
                    *case_sensitive = true;
                } else if a.take("WITHSUFFIXTRIE") {
                    field.suffix_trie = true;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        if field.noindex && field.index_missing {
            return Err(format!(
                "'Field `{}` cannot be defined with both `NOINDEX` and `INDEXMISSING`'",
                field.name
            ));
        }
        field.kind = kind;
        fields.push(field);
    }
    Ok(fields)
}

impl Definition {
    /// FT.ALTER … SCHEMA ADD's fields, checked against the existing ones.
    pub fn parse_added(&self, args: &[Bytes]) -> Result<Vec<Field>, String> {
        let mut a = Args { args, at: 0 };
        let fields = parse_fields(&mut a, self.key_type, &self.fields)?;
        if fields.is_empty() {
            return Err("No fields provided".into());
        }
        Ok(fields)
    }

    /// True when the index covers `key`.
    pub fn covers(&self, key: &[u8]) -> bool {
        self.prefixes.iter().any(|p| key.starts_with(p))
    }

    /// The field queries call `name` (its `AS` name or path).
    pub fn field(&self, name: &str) -> Option<(usize, &Field)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name == name)
    }

    /// True when SORTBY compares field `f`'s values as written (FT.INFO's `UNF`): `UNF` given,
    /// or always for numbers, JSON values and case-sensitive tags; other text sorts case-folded.
    pub fn sorts_as_written(&self, f: &Field) -> bool {
        f.sortable
            && (f.unf
                || self.key_type == KeyType::Json
                || matches!(
                    f.kind,
                    Kind::Numeric
                        | Kind::Tag {
                            case_sensitive: true,
                            ..
                        }
                ))
    }

    /// True when `word` is one of this index's stop words.
    pub fn is_stopword(&self, word: &str) -> bool {
        match &self.stopwords {
            Some(list) => list.iter().any(|w| w == word),
            // No default stopword is longer than five bytes: most words skip the list.
            None => word.len() <= 5 && DEFAULT_STOPWORDS.contains(&word),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<Bytes> {
        text.split(' ')
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    #[test]
    fn a_hash_schema_parses_with_its_options() {
        let def = parse(&args(
            "ON HASH PREFIX 2 doc: post: SCHEMA title TEXT WEIGHT 5 SORTABLE tags TAG SEPARATOR ; n NUMERIC SORTABLE loc GEO",
        ))
        .expect("valid");
        assert_eq!(def.key_type, KeyType::Hash);
        assert_eq!(
            def.prefixes,
            vec![Bytes::from("doc:"), Bytes::from("post:")]
        );
        assert_eq!(def.fields.len(), 4);
        assert_eq!(
            def.fields[0].kind,
            Kind::Text {
                weight: 5.0,
                nostem: false
            }
        );
        assert!(def.fields[0].sortable);
        assert_eq!(
            def.fields[1].kind,
            Kind::Tag {
                separator: Some(b';'),
                case_sensitive: false
            }
        );
        assert!(def.covers(b"doc:1") && def.covers(b"post:") && !def.covers(b"other"));
    }

    #[test]
    fn json_fields_take_paths_and_aliases() {
        let def = parse(&args(
            "ON JSON SCHEMA $.user.name AS name TAG $.age AS age NUMERIC",
        ))
        .expect("valid");
        assert!(
            parse(&args("ON JSON SCHEMA a TEXT")).is_ok(),
            "a legacy path"
        );
        assert_eq!(def.fields[0].path, "$.user.name");
        assert_eq!(def.field("age").map(|(i, _)| i), Some(1));
        assert_eq!(def.prefixes, vec![Bytes::new()]);
    }

    #[test]
    fn bad_schemas_are_refused_with_redisearch_texts() {
        assert_eq!(parse(&args("ON HASH")).unwrap_err(), "No schema found");
        assert_eq!(
            parse(&args("BOGUS SCHEMA a TEXT")).unwrap_err(),
            "Unknown argument `BOGUS`"
        );
        assert_eq!(
            parse(&args("SCHEMA a FOO")).unwrap_err(),
            "Invalid field type for field `a`"
        );
        assert_eq!(
            parse(&args("SCHEMA a")).unwrap_err(),
            "Field `a` does not have a type"
        );
        assert_eq!(
            parse(&args("SCHEMA a TEXT a TAG")).unwrap_err(),
            "Duplicate field in schema - a"
        );
        assert_eq!(
            parse(&args("SCHEMA")).unwrap_err(),
            "Fields arguments are missing"
        );
        assert!(parse(&args("PREFIX x SCHEMA a TEXT")).is_err());
    }
}
