//! The FT.* commands (RediSearch 2.10's, as Redis 8 serves them in its core): index definitions
//! (FT.CREATE, FT.ALTER, FT.DROPINDEX, aliases), FT.INFO/FT._LIST/FT.TAGVALS/FT.CONFIG, and
//! FT.SEARCH. The indexes themselves live in `crate::search`; this module parses the commands,
//! runs queries under an index's lock and reads the documents it returns after releasing it
//! (the lock order of `crate::search`). Error texts are RediSearch's, which have no error code.

use super::args::is;
use super::{CmdResult, Ctx};
use crate::protocol::Reply;
use crate::search::exec::{self, Options, Scorer};
use crate::search::index::{Data, SortValue};
use crate::search::query::{Bound, Node, Query};
use crate::search::schema::{Field, KeyType, Kind};
use crate::search::{Index, Registry};
use crate::store::json::{self as json, Json, Layout, Query as JsonPath};
use crate::store::Value;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;

fn error(text: impl Into<String>) -> Reply {
    Reply::error(text.into())
}

fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

fn registry<'s>(ctx: &Ctx<'_, 's>) -> &'s Registry {
    &ctx.shared.search
}

/// Raises or lowers the store's change record as indexes come and go.
fn update_gate(ctx: &Ctx<'_, '_>) {
    ctx.shared.events.set_indexing(registry(ctx).any());
}

/// A definition changed: the command goes to the replicas and the append-only file as it is
/// (it wrote no key, so the store did not say so).
fn propagate() {
    crate::replication::feed::note_write();
}

/// RediSearch's arity error, which names the command in capitals as the module registered it.
fn arity(args: &[&[u8]], min: usize, max: usize) -> Result<(), Reply> {
    if args.len() < min || args.len() > max {
        let name = text(args[0]).to_ascii_uppercase();
        return Err(error(format!(
            "ERR wrong number of arguments for '{name}' command"
        )));
    }
    Ok(())
}

/// The index `name` (or the index it is an alias of), or `error`.
fn index_or(ctx: &Ctx<'_, '_>, name: &[u8], error_text: &str) -> Result<Arc<Index>, Reply> {
    registry(ctx)
        .get(&text(name))
        .ok_or_else(|| error(error_text.to_string()))
}

/// FT.CREATE index [options] SCHEMA field type [options] ...
pub fn create(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 5, usize::MAX)?;
    if ctx.conn.db != 0 {
        return Err(error("Cannot create index on db != 0"));
    }
    let name = text(args[1]);
    let rest: Vec<Bytes> = args[2..]
        .iter()
        .map(|a| Bytes::copy_from_slice(a))
        .collect();
    registry(ctx).create(&name, &rest).map_err(error)?;
    update_gate(ctx);
    propagate();
    Ok(Reply::OK)
}

/// FT.DROPINDEX index [DD]
pub fn dropindex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 2, 3)?;
    let delete_docs = args.get(2).is_some_and(|a| is(a, "DD"));
    let name = text(args[1]);
    let Some(index) = registry(ctx).drop_index(&name) else {
        return Err(error("Unknown Index name"));
    };
    update_gate(ctx);
    propagate();
    if delete_docs {
        let keys = index.data.read().keys();
        for key in keys {
            ctx.lock(&[&key]).remove(&key);
        }
    }
    Ok(Reply::OK)
}

/// FT._LIST
pub fn list(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let names = registry(ctx).names();
    let items = names.into_iter().map(|n| Reply::Status(n.into())).collect();
    Ok(if ctx.conn.resp3 {
        Reply::Set(items)
    } else {
        Reply::Array(items)
    })
}

/// FT.ALTER index [SKIPINITIALSCAN] SCHEMA ADD field options ...
pub fn alter(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 5, usize::MAX)?;
    let index = index_or(ctx, args[1], "Unknown index name")?;
    let mut at = 2;
    let mut skip_scan = false;
    if args.get(at).is_some_and(|a| is(a, "SKIPINITIALSCAN")) {
        skip_scan = true;
        at += 1;
    }
    if !args.get(at).is_some_and(|a| is(a, "SCHEMA")) {
        return Err(error("ALTER must be followed by SCHEMA"));
    }
    at += 1;
    if !args.get(at).is_some_and(|a| is(a, "ADD")) {
        return Err(error("Unknown action passed to ALTER SCHEMA"));
    }
    at += 1;
    let added: Vec<Bytes> = args[at..]
        .iter()
        .map(|a| Bytes::copy_from_slice(a))
        .collect();
    {
        let mut data = index.data.write();
        let fields = data.def.parse_added(&added).map_err(error)?;
        let mut given = vec![Bytes::from_static(b"ADD")];
        given.extend(added.iter().cloned());
        data.add_fields(fields, &given);
    }
    propagate();
    if !skip_scan {
        // The new fields of the documents already there: read every covered key again.
        registry(ctx).scan(index, false);
    }
    Ok(Reply::OK)
}

/// FT.ALIASADD alias index / FT.ALIASUPDATE alias index
pub fn aliasadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 3, 3)?;
    let update = is(args[0], "ft.aliasupdate");
    registry(ctx)
        .alias_add(&text(args[1]), &text(args[2]), update)
        .map_err(error)?;
    propagate();
    Ok(Reply::OK)
}

/// FT.ALIASDEL alias
pub fn aliasdel(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 2, 2)?;
    registry(ctx).alias_del(&text(args[1])).map_err(error)?;
    propagate();
    Ok(Reply::OK)
}

/// FT.TAGVALS index field
pub fn tagvals(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 3, 3)?;
    let index = index_or(ctx, args[1], "Unknown Index name")?;
    let data = index.data.read();
    let Some((i, field)) = data.def.field(&text(args[2])) else {
        return Err(error("No such field"));
    };
    if !matches!(field.kind, Kind::Tag { .. }) {
        return Err(error("Not a tag field"));
    }
    let values = data.tags[i]
        .keys()
        .map(|t| Reply::bulk(t.as_bytes()))
        .collect();
    Ok(if ctx.conn.resp3 {
        Reply::Set(values)
    } else {
        Reply::Array(values)
    })
}

/// FT.CONFIG GET option | SET option value | HELP option
pub fn config(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 3, usize::MAX)?;
    let registry = registry(ctx);
    let sub = args[1];
    let option = args.get(2).map(|a| text(a).to_ascii_uppercase());
    if is(sub, "GET") || is(sub, "HELP") {
        let Some(option) = option else {
            return arity(args, 3, 3).map(|()| Reply::Nil);
        };
        let settings = registry.settings.read().clone();
        let all = config_values(&settings);
        let pairs = all
            .into_iter()
            .filter(|(name, _)| option == "*" || option == *name)
            .map(|(name, value)| {
                let value = value.map_or(Reply::Nil, |v| Reply::bulk(v.as_bytes()));
                (Reply::Status(name.into()), value)
            });
        // RESP3: one map; RESP2: a [name, value] pair each.
        return Ok(if ctx.conn.resp3 {
            Reply::Map(pairs.collect())
        } else {
            Reply::Array(pairs.map(|(k, v)| Reply::Array(vec![k, v])).collect())
        });
    }
    if is(sub, "SET") {
        let (Some(option), Some(value)) = (option, args.get(3)) else {
            return arity(args, 4, 4).map(|()| Reply::Nil);
        };
        let number = || {
            std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| error("Invalid value"))
        };
        let mut settings = registry.settings.write();
        match option.as_str() {
            "DEFAULT_DIALECT" => {
                let n = number()?;
                if n > 4 {
                    return Err(error("Default dialect version cannot be higher than 4"));
                }
                if n < 1 {
                    return Err(error("Default dialect version cannot be lower than 1"));
                }
                settings.default_dialect = n as u32;
            }
            "TIMEOUT" => settings.timeout_ms = number()?,
            "MAXSEARCHRESULTS" => settings.max_search_results = number()?,
            "MAXAGGREGATERESULTS" => settings.max_aggregate_results = number()?,
            "MINPREFIX" => settings.min_prefix = number()?,
            "MAXEXPANSIONS" | "MAXPREFIXEXPANSIONS" => settings.max_expansions = number()?,
            "CURSOR_MAX_IDLE" => settings.cursor_max_idle_ms = number()?,
            "ON_TIMEOUT" => {}
            _ => return Err(error("Invalid option")),
        }
        return Ok(Reply::OK);
    }
    Err(error("No such configuration action"))
}

/// FT.CONFIG GET's options and values (None: not set).
fn config_values(s: &crate::search::Settings) -> Vec<(&'static str, Option<String>)> {
    let limit = |n: u64| {
        if n == u64::MAX {
            "unlimited".to_string()
        } else {
            n.to_string()
        }
    };
    vec![
        ("MINPREFIX", Some(s.min_prefix.to_string())),
        ("MAXEXPANSIONS", Some(s.max_expansions.to_string())),
        ("MAXPREFIXEXPANSIONS", Some(s.max_expansions.to_string())),
        ("TIMEOUT", Some(s.timeout_ms.to_string())),
        ("ON_TIMEOUT", Some("return".into())),
        ("MAXSEARCHRESULTS", Some(limit(s.max_search_results))),
        ("MAXAGGREGATERESULTS", Some(limit(s.max_aggregate_results))),
        ("CURSOR_MAX_IDLE", Some(s.cursor_max_idle_ms.to_string())),
        ("DEFAULT_DIALECT", Some(s.default_dialect.to_string())),
        ("LANGUAGE", Some("english".into())),
    ]
}

/// FT.PROFILE: refused (no query profiler).
pub fn profile(_ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 5, usize::MAX)?;
    Err(error("FT.PROFILE is not served by stmd"))
}

/// FT.INFO index
pub fn info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 2, usize::MAX)?;
    let index = index_or(ctx, args[1], "Unknown index name")?;
    let aliases = registry(ctx).aliases_of(&index.name);
    let _ = aliases;
    let data = index.data.read();
    let def = &data.def;
    let kv = |k: &str, v: Reply| (Reply::Status(k.to_string().into()), v);
    let status = |s: &str| Reply::Status(s.to_string().into());
    let map = |pairs: Vec<(Reply, Reply)>| Reply::Map(pairs);
    let mut definition = vec![
        kv("key_type", status(def.key_type.name())),
        kv(
            "prefixes",
            Reply::Array(
                def.prefixes
                    .iter()
                    .map(|p| Reply::Bulk(p.clone()))
                    .collect(),
            ),
        ),
    ];
    if def.language != "english" {
        definition.push(kv("default_language", status(&def.language)));
    }
    definition.push(kv("default_score", Reply::Double(def.score)));
    let attributes = def
        .fields
        .iter()
        .map(|f| {
            let mut pairs = vec![
                kv("identifier", status(&f.path)),
                kv("attribute", status(&f.name)),
                kv("type", status(f.kind.name())),
            ];
            let mut flags = Vec::new();
            match &f.kind {
                Kind::Text { weight, nostem } => {
                    pairs.push(kv("WEIGHT", Reply::Double(*weight)));
                    if *nostem {
                        flags.push(status("NOSTEM"));
                    }
                }
                Kind::Tag {
                    separator,
                    case_sensitive,
                } => {
                    pairs.push(kv("SEPARATOR", Reply::bulk([*separator])));
                    if *case_sensitive {
                        flags.push(status("CASESENSITIVE"));
                    }
                }
                _ => {}
            }
            if f.sortable {
                flags.insert(0, status("SORTABLE"));
            }
            if f.noindex {
                flags.push(status("NOINDEX"));
            }
            if f.index_empty {
                flags.push(status("INDEXEMPTY"));
            }
            if f.index_missing {
                flags.push(status("INDEXMISSING"));
            }
            if ctx.conn.resp3 {
                pairs.push(kv("flags", Reply::Array(flags)));
                map(pairs)
            } else {
                let mut flat: Vec<Reply> = pairs.into_iter().flat_map(|(k, v)| [k, v]).collect();
                flat.extend(flags);
                Reply::Array(flat)
            }
        })
        .collect();
    let docs = data.docs.len() as i64;
    let records = data.records as f64;
    let per_doc = if docs == 0 {
        f64::NAN
    } else {
        records / docs as f64
    };
    let mut top = vec![
        kv("index_name", status(&index.name)),
        kv("index_options", Reply::Array(Vec::new())),
        kv("index_definition", map(definition)),
        kv("attributes", Reply::Array(attributes)),
        kv("num_docs", Reply::Int(docs)),
        kv("max_doc_id", Reply::Int(data.max_doc_id() as i64)),
        kv("num_terms", Reply::Int(data.terms.len() as i64)),
        kv("num_records", Reply::Int(data.records as i64)),
        kv("inverted_sz_mb", Reply::Double(0.0)),
        kv("vector_index_sz_mb", Reply::Double(0.0)),
        kv(
            "total_inverted_index_blocks",
            Reply::Int(data.terms.len() as i64),
        ),
        kv("offset_vectors_sz_mb", Reply::Double(0.0)),
        kv("doc_table_size_mb", Reply::Double(0.0)),
        kv("sortable_values_size_mb", Reply::Double(0.0)),
        kv("key_table_size_mb", Reply::Double(0.0)),
        kv("tag_overhead_sz_mb", Reply::Double(0.0)),
        kv("text_overhead_sz_mb", Reply::Double(0.0)),
        kv("total_index_memory_sz_mb", Reply::Double(0.0)),
        kv("geoshapes_sz_mb", Reply::Double(0.0)),
        kv("records_per_doc_avg", Reply::Double(per_doc)),
        kv("bytes_per_record_avg", Reply::Double(0.0)),
        kv("offsets_per_term_avg", Reply::Double(0.0)),
        kv("offset_bits_per_record_avg", Reply::Double(0.0)),
        kv("hash_indexing_failures", Reply::Int(data.failures as i64)),
        kv("total_indexing_time", Reply::Double(0.0)),
        kv("indexing", Reply::Int(i64::from(data.indexing))),
        kv("percent_indexed", Reply::Double(data.scanned)),
        kv("number_of_uses", Reply::Int(0)),
        kv("cleaning", Reply::Int(0)),
    ];
    if let Some(words) = &def.stopwords {
        top.push(kv(
            "stopwords_list",
            Reply::Array(words.iter().map(|w| Reply::bulk(w.as_bytes())).collect()),
        ));
    }
    top.push(kv(
        "dialect_stats",
        map((1..=4)
            .map(|d| kv(&format!("dialect_{d}"), Reply::Int(0)))
            .collect()),
    ));
    Ok(map(top))
}

/// FT.SEARCH's options.
struct SearchArgs {
    nocontent: bool,
    verbatim: bool,
    with_scores: bool,
    in_keys: Option<Vec<Bytes>>,
    in_fields: Option<Vec<String>>,
    /// RETURN: (field name or path, reply name).
    returns: Option<Vec<(String, String)>>,
    sort_by: Option<(String, bool)>,
    offset: usize,
    limit: usize,
    params: HashMap<String, Bytes>,
    dialect: u32,
    scorer: Scorer,
    /// FILTER/GEOFILTER, added to the query as nodes.
    filters: Vec<Node>,
    slop: Option<u32>,
    in_order: bool,
}

/// RediSearch's error for an option's bad or missing argument.
fn bad_args(what: &str) -> Reply {
    error(format!(
        "Bad arguments for {what}: Expected an argument, but none provided"
    ))
}

fn parse_count(args: &[&[u8]], at: usize, what: &str) -> Result<usize, Reply> {
    let a = args.get(at).ok_or_else(|| bad_args(what))?;
    std::str::from_utf8(a)
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .ok_or_else(|| {
            error(format!(
                "Bad arguments for {what}: Could not convert argument to expected type"
            ))
        })
}

fn parse_f64(arg: Option<&&[u8]>, what: &str) -> Result<f64, Reply> {
    let a = arg.ok_or_else(|| bad_args(what))?;
    let t = text(a);
    let t = t.trim_start_matches('(');
    match t.to_ascii_lowercase().as_str() {
        "-inf" => return Ok(f64::NEG_INFINITY),
        "+inf" | "inf" => return Ok(f64::INFINITY),
        _ => {}
    }
    t.parse::<f64>()
        .ok()
        .filter(|n| !n.is_nan())
        .ok_or_else(|| {
            error(format!(
                "Bad arguments for {what}: Could not convert argument to expected type"
            ))
        })
}

fn parse_search_args(args: &[&[u8]], default_dialect: u32) -> Result<SearchArgs, Reply> {
    let mut s = SearchArgs {
        nocontent: false,
        verbatim: false,
        with_scores: false,
        in_keys: None,
        in_fields: None,
        returns: None,
        sort_by: None,
        offset: 0,
        limit: 10,
        params: HashMap::new(),
        dialect: default_dialect,
        scorer: Scorer::TfIdf,
        filters: Vec::new(),
        slop: None,
        in_order: false,
    };
    let mut i = 3;
    while i < args.len() {
        let a = args[i];
        let word = text(a).to_ascii_uppercase();
        i += 1;
        match word.as_str() {
            "NOCONTENT" => s.nocontent = true,
            "VERBATIM" => s.verbatim = true,
            "WITHSCORES" => s.with_scores = true,
            "NOSTOPWORDS" | "WITHPAYLOADS" | "WITHSORTKEYS" | "EXPLAINSCORE" | "INORDER" => {
                if word == "INORDER" {
                    s.in_order = true;
                }
            }
            "INKEYS" | "INFIELDS" | "RETURN" | "PARAMS" => {
                let n = parse_count(args, i, &word)?;
                i += 1;
                if word == "PARAMS" && n % 2 != 0 {
                    return Err(error(
                        "Bad arguments for PARAMS: Expected an even number of arguments",
                    ));
                }
                let end = i
                    .checked_add(n)
                    .filter(|e| *e <= args.len())
                    .ok_or_else(|| {
                        error(format!("Bad arguments for {word}: Not enough arguments"))
                    })?;
                let list = &args[i..end];
                match word.as_str() {
                    "INKEYS" => {
                        s.in_keys = Some(list.iter().map(|k| Bytes::copy_from_slice(k)).collect())
                    }
                    "INFIELDS" => s.in_fields = Some(list.iter().map(|f| text(f)).collect()),
                    "PARAMS" => {
                        for pair in list.chunks(2) {
                            let name = text(pair[0]);
                            if s.params
                                .insert(name, Bytes::copy_from_slice(pair[1]))
                                .is_some()
                            {
                                return Err(error("Duplicate parameter"));
                            }
                        }
                    }
                    _ => {
                        // RETURN n f [AS a] …: n counts the AS words too.
                        let mut r = Vec::new();
                        let mut j = 0;
                        while j < list.len() {
                            let f = text(list[j]);
                            if list.get(j + 1).is_some_and(|w| is(w, "AS")) {
                                let Some(alias) = list.get(j + 2) else {
                                    return Err(error("Bad arguments for AS: Expected an argument, but none provided"));
                                };
                                r.push((f, text(alias)));
                                j += 3;
                            } else {
                                r.push((f.clone(), f));
                                j += 1;
                            }
                        }
                        if r.is_empty() {
                            s.nocontent = true;
                        }
                        s.returns = Some(r);
                    }
                }
                i = end;
            }
            "LIMIT" => {
                if i + 2 > args.len() {
                    return Err(error("LIMIT requires two arguments"));
                }
                let off = parse_count(args, i, "LIMIT")?;
                let n = parse_count(args, i + 1, "LIMIT")?;
                i += 2;
                s.offset = off;
                s.limit = n;
            }
            "SORTBY" => {
                let f = args.get(i).ok_or_else(|| bad_args("SORTBY"))?;
                let f = text(f);
                let f = f.strip_prefix('@').unwrap_or(&f).to_string();
                i += 1;
                let mut asc = true;
                if let Some(dir) = args.get(i) {
                    if is(dir, "ASC") {
                        i += 1;
                    } else if is(dir, "DESC") {
                        asc = false;
                        i += 1;
                    }
                }
                if args.get(i).is_some_and(|w| is(w, "WITHCOUNT")) {
                    i += 1;
                }
                s.sort_by = Some((f, asc));
            }
            "DIALECT" => {
                let d = parse_count(args, i, "DIALECT")?;
                i += 1;
                if !(1..=4).contains(&d) {
                    return Err(error(
                        "DIALECT requires a non negative integer >=1 and <= 4",
                    ));
                }
                s.dialect = d as u32;
            }
            "SCORER" => {
                let name = args.get(i).ok_or_else(|| bad_args("SCORER"))?;
                i += 1;
                s.scorer = Scorer::parse(&text(name))
                    .ok_or_else(|| error("Scoring function not found"))?;
            }
            "SLOP" => {
                s.slop = Some(parse_count(args, i, "SLOP")? as u32);
                i += 1;
            }
            "TIMEOUT" => {
                parse_count(args, i, "TIMEOUT")?;
                i += 1;
            }
            "LANGUAGE" | "EXPANDER" | "PAYLOAD" => {
                args.get(i).ok_or_else(|| bad_args(&word))?;
                i += 1;
            }
            "FILTER" => {
                let field = text(args.get(i).ok_or_else(|| bad_args("FILTER"))?);
                let min_raw = args.get(i + 1);
                let max_raw = args.get(i + 2);
                let min = parse_f64(min_raw, "FILTER")?;
                let max = parse_f64(max_raw, "FILTER")?;
                let excl = |r: Option<&&[u8]>| r.is_some_and(|r| r.first() == Some(&b'('));
                s.filters.push(Node::Numeric {
                    field,
                    min: Bound {
                        value: min,
                        inclusive: !excl(min_raw),
                    },
                    max: Bound {
                        value: max,
                        inclusive: !excl(max_raw),
                    },
                });
                i += 3;
            }
            "GEOFILTER" => {
                let field = text(args.get(i).ok_or_else(|| bad_args("GEOFILTER"))?);
                let lon = parse_f64(args.get(i + 1), "GEOFILTER")?;
                let lat = parse_f64(args.get(i + 2), "GEOFILTER")?;
                let radius = parse_f64(args.get(i + 3), "GEOFILTER")?;
                let unit = args.get(i + 4).map(|u| text(u).to_ascii_lowercase());
                let factor = match unit.as_deref() {
                    Some("m") => 1.0,
                    Some("km") => 1000.0,
                    Some("mi") => 1609.34,
                    Some("ft") => 0.3048,
                    _ => return Err(error("Invalid GeoFilter unit")),
                };
                s.filters.push(Node::Geo {
                    field,
                    lon,
                    lat,
                    radius_m: radius * factor,
                });
                i += 5;
            }
            "SUMMARIZE" | "HIGHLIGHT" => {
                return Err(error(format!("{word} is not served by stmd")));
            }
            _ => {
                return Err(error(format!(
                    "Unknown argument `{}` at position {} for <main>",
                    text(a),
                    i - 3
                )))
            }
        }
    }
    Ok(s)
}

/// One result of a search, taken under the index's lock.
struct Hit {
    key: Bytes,
    score: f64,
    /// KNN's distance field: (name, value).
    distance: Option<(Bytes, Bytes)>,
}

/// FT.SEARCH index query [options]
pub fn search(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 2, usize::MAX)?;
    if args.len() == 2 {
        return Err(error("No query string provided"));
    }
    let default_dialect = registry(ctx).settings.read().default_dialect;
    let max_results = registry(ctx).settings.read().max_search_results;
    let name = text(args[1]);
    let Some(index) = registry(ctx).get(&name) else {
        return Err(error(format!("{name}: no such index")));
    };
    let s = parse_search_args(args, default_dialect)?;
    if s.limit as u64 > max_results || s.offset as u64 > max_results {
        return Err(error(format!("LIMIT exceeds maximum of {max_results}")));
    }
    let query_text = String::from_utf8_lossy(args[2]).into_owned();
    let mut query =
        crate::search::query::parse(&query_text, &s.params, s.dialect).map_err(error)?;
    if !s.filters.is_empty() {
        let mut nodes = vec![query.filter];
        nodes.extend(s.filters.iter().cloned());
        query.filter = Node::And(nodes);
    }
    if let Some(slop) = s.slop {
        apply_slop(&mut query.filter, slop, s.in_order);
    }
    let (total, hits, key_type, fields) = {
        let data = read_index(ctx, &index)?;
        run_search(&data, &query, &s)?
    };
    reply_search(ctx, &s, total, hits, key_type, &fields)
}

/// SLOP/INORDER given as options apply to every phrase without its own.
fn apply_slop(node: &mut Node, slop: u32, in_order: bool) {
    match node {
        Node::Phrase {
            slop: s,
            in_order: o,
            ..
        } => {
            if s.is_none() {
                *s = Some(slop);
            }
            *o |= in_order;
        }
        Node::And(nodes) | Node::Or(nodes) => {
            nodes.iter_mut().for_each(|n| apply_slop(n, slop, in_order))
        }
        Node::Not(n) | Node::Optional(n) => apply_slop(n, slop, in_order),
        Node::Fields { node, .. } => apply_slop(node, slop, in_order),
        _ => {}
    }
}

/// The index's data for reading. Inside EXEC or a script this thread holds shard locks, and the
/// indexer may hold the index lock while it waits for one of them: wait a bounded time, then
/// give up rather than deadlock.
fn read_index<'i>(
    ctx: &Ctx<'_, '_>,
    index: &'i Index,
) -> Result<parking_lot::RwLockReadGuard<'i, Data>, Reply> {
    if ctx.held.is_none() {
        return Ok(index.data.read());
    }
    index
        .data
        .try_read_for(std::time::Duration::from_millis(200))
        .ok_or_else(|| {
            error("ERR the index is being updated; retry outside MULTI/EXEC or the script")
        })
}

type Found = (usize, Vec<Hit>, KeyType, Vec<Field>);

/// Runs the query and picks the page of results: (total, hits, the index's key type, its fields).
fn run_search(data: &Data, query: &Query, s: &SearchArgs) -> Result<Found, Reply> {
    let options = Options {
        verbatim: s.verbatim,
        in_fields: s.in_fields.as_deref(),
    };
    let mut ids = exec::run(data, &query.filter, &options).map_err(error)?;
    if let Some(keys) = &s.in_keys {
        let allowed: std::collections::BTreeSet<u32> =
            keys.iter().filter_map(|k| data.id_of(k)).collect();
        ids = ids.intersection(&allowed).copied().collect();
    }
    // KNN: the k nearest of the filtered documents, nearest first, the distance a field.
    let mut distances: Option<String> = None;
    let mut ranked: Vec<(u32, f64)> = if let Some(knn) = &query.knn {
        let Some((i, _)) = data.def.field(&knn.field) else {
            return Err(error(format!("Unknown field `{}`", knn.field)));
        };
        let Some(vectors) = data.vectors[i].as_ref() else {
            return Err(error(format!(
                "Field `{}` is not a VECTOR field",
                knn.field
            )));
        };
        let everything = ids.len() == data.docs.len();
        let allow = |id: u32| ids.contains(&id);
        let allow: Option<&dyn Fn(u32) -> bool> = if everything { None } else { Some(&allow) };
        let nearest = vectors
            .knn(&knn.vector, knn.k, knn.ef_runtime, allow)
            .map_err(error)?;
        distances = Some(
            knn.score_as
                .clone()
                .unwrap_or_else(|| format!("__{}_score", knn.field)),
        );
        nearest
    } else {
        let ids: Vec<u32> = ids.into_iter().collect();
        let scores = exec::scores(data, &query.filter, &options, &ids, s.scorer);
        ids.into_iter().zip(scores).collect()
    };
    match &s.sort_by {
        Some((field, asc)) if distances.as_ref() == Some(field) => {
            ranked.sort_by(|a, b| {
                let o = a.1.total_cmp(&b.1);
                let o = if *asc { o } else { o.reverse() };
                o.then(a.0.cmp(&b.0))
            });
        }
        None if distances.is_some() => {}
        Some((field, asc)) => {
            let Some((i, _)) = data.def.field(field) else {
                return Err(error(format!(
                    "Property `{field}` not loaded nor in schema"
                )));
            };
            let value = |id: &u32| data.docs.get(id).and_then(|d| d.sort_value(i));
            ranked.sort_by(|a, b| {
                let (va, vb) = (value(&a.0), value(&b.0));
                let order = match (&va, &vb) {
                    (Some(x), Some(y)) => {
                        let o = compare_sort(x, y);
                        if *asc {
                            o
                        } else {
                            o.reverse()
                        }
                    }
                    // Documents without the value come last either way.
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                };
                order.then(a.0.cmp(&b.0))
            });
        }
        None => ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))),
    }
    let total = ranked.len();
    let hits = ranked
        .into_iter()
        .skip(s.offset)
        .take(s.limit)
        .filter_map(|(id, score)| {
            data.docs.get(&id).map(|d| Hit {
                key: d.key.clone(),
                score,
                distance: distances.as_ref().map(|name| {
                    let value = crate::search::aggregate::render(
                        &crate::search::aggregate::Value::Number(score),
                    );
                    (Bytes::copy_from_slice(name.as_bytes()), value)
                }),
            })
        })
        .collect();
    Ok((total, hits, data.def.key_type, data.def.fields.clone()))
}

fn compare_sort(a: &SortValue, b: &SortValue) -> std::cmp::Ordering {
    match (a, b) {
        (SortValue::Number(x), SortValue::Number(y)) => x.total_cmp(y),
        (SortValue::Text(x), SortValue::Text(y)) => x.cmp(y),
        (SortValue::Number(_), SortValue::Text(_)) => std::cmp::Ordering::Less,
        (SortValue::Text(_), SortValue::Number(_)) => std::cmp::Ordering::Greater,
    }
}

/// The fields FT.SEARCH returns for one document, read from the store now (the index lock is
/// released): None when the key is gone.
fn load_fields(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    key_type: KeyType,
    fields: &[Field],
    s: &SearchArgs,
) -> Option<Vec<(Bytes, Bytes)>> {
    let locked = ctx.lock(&[key]);
    let entries = locked.entries_of(&[key]);
    let (_, entry) = entries.first()?;
    match (&entry.value, key_type) {
        (Value::Hash(hash), KeyType::Hash) => {
            let now = crate::store::now_ms();
            Some(match &s.returns {
                None => {
                    let mut pairs: Vec<(Bytes, Bytes)> = hash
                        .iter_live(now)
                        .map(|(f, v)| (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v)))
                        .collect();
                    // RediSearch loads the sort key first, then the rest of the hash.
                    let sort_path = s.sort_by.as_ref().and_then(|(name, _)| {
                        fields
                            .iter()
                            .find(|f| f.name == *name)
                            .map(|f| f.path.as_bytes())
                    });
                    if let Some(at) = sort_path.and_then(|p| pairs.iter().position(|(f, _)| f == p))
                    {
                        let first = pairs.remove(at);
                        pairs.insert(0, first);
                    }
                    pairs
                }
                Some(wanted) => wanted
                    .iter()
                    .filter_map(|(name, alias)| {
                        let path = fields
                            .iter()
                            .find(|f| f.name == *name)
                            .map_or(name.as_str(), |f| f.path.as_str());
                        hash.get_live(path.as_bytes(), now).map(|v| {
                            (
                                Bytes::copy_from_slice(alias.as_bytes()),
                                Bytes::copy_from_slice(v),
                            )
                        })
                    })
                    .collect(),
            })
        }
        (Value::Json(stored), KeyType::Json) => Some(match &s.returns {
            None => {
                let doc = stored.tree();
                let text = if s.dialect >= 3 {
                    json::to_text(&[doc][..], Layout::default())
                } else {
                    json::to_text(doc, Layout::default())
                };
                let mut pairs = Vec::with_capacity(2);
                // RediSearch loads the sort key before the document.
                if let Some((name, _)) = &s.sort_by {
                    let sort_value = fields
                        .iter()
                        .find(|f| f.name == *name)
                        .and_then(|f| JsonPath::parse(&f.path).ok())
                        .and_then(|path| json_return(&path.values(doc), 2));
                    if let Some(value) = sort_value {
                        pairs.push((Bytes::copy_from_slice(name.as_bytes()), value));
                    }
                }
                pairs.push((Bytes::from_static(b"$"), Bytes::from(text)));
                pairs
            }
            Some(wanted) => wanted
                .iter()
                .filter_map(|(name, alias)| {
                    let path = fields
                        .iter()
                        .find(|f| f.name == *name)
                        .map_or(name.as_str(), |f| f.path.as_str());
                    let path = JsonPath::parse(path).ok()?;
                    let values = path.values(stored.tree());
                    let value = json_return(&values, s.dialect)?;
                    Some((Bytes::copy_from_slice(alias.as_bytes()), value))
                })
                .collect(),
        }),
        _ => None,
    }
}

/// A RETURNed JSON value: dialect 3 gives every match as a JSON array, earlier dialects the
/// first match (a string as its text, anything else as JSON).
fn json_return(values: &[&Json], dialect: u32) -> Option<Bytes> {
    if dialect >= 3 {
        return Some(Bytes::from(json::to_text(values, Layout::default())));
    }
    let first = values.first()?;
    Some(match first {
        Json::String(s) => Bytes::copy_from_slice(s.as_bytes()),
        other => Bytes::from(json::to_text(*other, Layout::default())),
    })
}

fn reply_search(
    ctx: &mut Ctx<'_, '_>,
    s: &SearchArgs,
    total: usize,
    hits: Vec<Hit>,
    key_type: KeyType,
    fields: &[Field],
) -> CmdResult {
    let resp3 = ctx.conn.resp3;
    let mut results = Vec::with_capacity(hits.len());
    for hit in hits {
        let loaded = if s.nocontent {
            Some(Vec::new())
        } else {
            load_fields(ctx, &hit.key, key_type, fields, s)
        };
        let mut pairs = loaded.unwrap_or_default();
        if let (Some(distance), false) = (&hit.distance, s.nocontent) {
            let wanted = s
                .returns
                .as_ref()
                .is_none_or(|r| r.iter().any(|(name, _)| name.as_bytes() == &distance.0[..]));
            if wanted {
                pairs.retain(|(k, _)| *k != distance.0);
                pairs.insert(0, distance.clone());
            }
        }
        if resp3 {
            let mut entry = vec![(Reply::Status("id".into()), Reply::Bulk(hit.key.clone()))];
            if s.with_scores {
                entry.push((Reply::Status("score".into()), Reply::Double(hit.score)));
            }
            if !s.nocontent {
                let attrs = pairs
                    .into_iter()
                    .map(|(k, v)| (Reply::Bulk(k), Reply::Bulk(v)))
                    .collect();
                entry.push((Reply::Status("extra_attributes".into()), Reply::Map(attrs)));
            }
            entry.push((Reply::Status("values".into()), Reply::Array(Vec::new())));
            results.push(Reply::Map(entry));
        } else {
            results.push(Reply::Bulk(hit.key.clone()));
            if s.with_scores {
                results.push(Reply::Double(hit.score));
            }
            if !s.nocontent {
                results.push(Reply::Array(
                    pairs
                        .into_iter()
                        .flat_map(|(k, v)| [Reply::Bulk(k), Reply::Bulk(v)])
                        .collect(),
                ));
            }
        }
    }
    if resp3 {
        return Ok(Reply::Map(vec![
            (Reply::Status("attributes".into()), Reply::Array(Vec::new())),
            (
                Reply::Status("total_results".into()),
                Reply::Int(total as i64),
            ),
            (
                Reply::Status("format".into()),
                Reply::Status("STRING".into()),
            ),
            (Reply::Status("results".into()), Reply::Array(results)),
            (Reply::Status("warning".into()), Reply::Array(Vec::new())),
        ]));
    }
    let mut out = Vec::with_capacity(results.len() + 1);
    out.push(Reply::Int(total as i64));
    out.extend(results);
    Ok(Reply::Array(out))
}
