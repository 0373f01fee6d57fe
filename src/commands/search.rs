//! The FT.* commands (RediSearch 2.10's, as Redis 8 serves them in its core): index definitions
//! (FT.CREATE, FT.ALTER, FT.DROPINDEX, aliases), FT.INFO/FT._LIST/FT.TAGVALS/FT.CONFIG, and
//! FT.SEARCH. The indexes themselves live in `crate::search`; this module parses the commands,
//! runs queries under an index's lock and reads the documents it returns after releasing it
//! (the lock order of `crate::search`). Error texts are RediSearch's, which have no error code.

use super::args::is;
use super::{CmdResult, Ctx};
use crate::protocol::Reply;
use crate::search::aggregate::{render, set, Load, Plan, Row, Value as AggValue};
use crate::search::cursor::{Chunk, Results};
use crate::search::exec::{self, Options, Scorer};
use crate::search::index::{Data, SortValue};
use crate::search::query::{Bound, Node, Query};
use crate::search::schema::{Field, KeyType, Kind};
use crate::search::vector::{Algorithm, ElementType, Metric, VectorParams};
use crate::search::{Index, Registry};
use crate::store::json::{self as json, Json, Layout, Query as JsonPath};
use crate::store::Value;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
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

/// The index `name` (or the index it is an alias of), counted as a use, or `error`.
fn index_or(ctx: &Ctx<'_, '_>, name: &[u8], error_text: &str) -> Result<Arc<Index>, Reply> {
    let index = registry(ctx)
        .get(&text(name))
        .ok_or_else(|| error(error_text.to_string()))?;
    index.used();
    Ok(index)
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
        // The replicas and the log delete the same keys, whatever their own index holds (its
        // scan may still be under way).
        if !keys.is_empty() {
            let mut del: Vec<&[u8]> = vec![b"DEL"];
            del.extend(keys.iter().map(|k| k.as_ref()));
            crate::replication::feed::propagate_as_all(&[&[b"FT.DROPINDEX", args[1]], &del]);
        }
        for key in keys {
            ctx.lock(&[&key]).remove(&key);
        }
    }
    Ok(Reply::OK)
}

/// FT.DEL index key [DD]: RediSearch 2's deprecated command, which redis-py's
/// `delete_document` still sends. As RediSearch 2.10 does, it deletes the key whatever it holds
/// once the index exists: 1, or 0 for no key; `DD` changes nothing. Replicated and logged as
/// the DEL it did.
pub fn del(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 3, 4)?;
    index_or(ctx, args[1], "Unknown Index name")?;
    let key = args[2];
    if ctx.lock(&[key]).remove(key).is_none() {
        return Ok(Reply::Int(0));
    }
    crate::replication::feed::propagate_as(&[b"DEL", key]);
    Ok(Reply::Int(1))
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
        data.add_fields(fields);
        index.extend_definition(&added);
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

/// FT.INFO index: RediSearch 2.10's fields in its order (a map in RESP3, name/value pairs in
/// RESP2). The memory figures are stmd's estimates of its own structures (0 for an empty index,
/// as RediSearch's); the garbage-collector and cursor figures are RediSearch's idle values (stmd
/// frees at once and serves no cursors on this path).
pub fn info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 2, usize::MAX)?;
    let index = index_or(ctx, args[1], "Unknown index name")?;
    let resp3 = ctx.conn.resp3;
    let data = index.data.read();
    let def = &data.def;
    let status = |s: &str| Reply::Status(s.to_string().into());
    // A map in RESP3; RESP2 flattens it, then `flags` (RESP3's last entry of an attribute) follow
    // as bare words.
    let map = |pairs: Vec<(&str, Reply)>| {
        let pairs = pairs.into_iter().map(|(k, v)| (status(k), v));
        if resp3 {
            Reply::Map(pairs.collect())
        } else {
            Reply::Array(pairs.flat_map(|(k, v)| [k, v]).collect())
        }
    };
    let mut definition = vec![
        ("key_type", status(def.key_type.name())),
        (
            "prefixes",
            Reply::Array(
                def.prefixes
                    .iter()
                    .map(|p| status(&String::from_utf8_lossy(p)))
                    .collect(),
            ),
        ),
    ];
    if def.language != "english" {
        definition.push(("default_language", status(&def.language)));
    }
    if let Some(f) = &def.language_field {
        definition.push(("language_field", status(f)));
    }
    definition.push(("default_score", Reply::Double(def.score)));
    if let Some(f) = &def.score_field {
        definition.push(("score_field", status(f)));
    }
    if let Some(f) = &def.payload_field {
        definition.push(("payload_field", status(f)));
    }
    let attributes = def
        .fields
        .iter()
        .map(|f| {
            let mut pairs = vec![
                ("identifier", status(&f.path)),
                ("attribute", status(&f.name)),
                ("type", status(f.kind.name())),
            ];
            let mut flags = Vec::new();
            match &f.kind {
                Kind::Text { weight, nostem } => {
                    pairs.push(("WEIGHT", Reply::Double(*weight)));
                    if *nostem {
                        flags.push("NOSTEM");
                    }
                }
                Kind::Tag {
                    separator,
                    case_sensitive,
                } => {
                    let sep = separator
                        .map(|s| (s as char).to_string())
                        .unwrap_or_default();
                    pairs.push(("SEPARATOR", status(&sep)));
                    if *case_sensitive {
                        flags.push("CASESENSITIVE");
                    }
                }
                Kind::Vector(p) => vector_attributes(p, &mut pairs),
                Kind::Numeric | Kind::Geo => {}
            }
            if f.sortable {
                // CASESENSITIVE comes first; NOSTEM after SORTABLE [UNF].
                let at = usize::from(flags.first() == Some(&"CASESENSITIVE"));
                flags.insert(at, "SORTABLE");
                if def.sorts_as_written(f) {
                    flags.insert(at + 1, "UNF");
                }
            }
            for (on, flag) in [
                (f.noindex, "NOINDEX"),
                (f.suffix_trie, "WITHSUFFIXTRIE"),
                (f.index_empty, "INDEXEMPTY"),
                (f.index_missing, "INDEXMISSING"),
            ] {
                if on {
                    flags.push(flag);
                }
            }
            let flags: Vec<Reply> = flags.into_iter().map(status).collect();
            if resp3 {
                pairs.push(("flags", Reply::Array(flags)));
                map(pairs)
            } else {
                let flat = pairs.into_iter().flat_map(|(k, v)| [status(k), v]);
                Reply::Array(flat.chain(flags).collect())
            }
        })
        .collect();
    let docs = data.docs.len();
    let records = data.records as f64;
    let per_doc = |n: f64| if docs == 0 { f64::NAN } else { n / docs as f64 };
    let per_record = |n: f64| {
        if records == 0.0 {
            f64::NAN
        } else {
            n / records
        }
    };
    let mb = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
    let memory = data.memory();
    let failures = |f: &crate::search::index::Failures| {
        let (text, key) = match &f.last {
            Some((text, key)) => (status(text), Reply::Bulk(key.clone())),
            None => (status("N/A"), Reply::bulk(b"N/A")),
        };
        map(vec![
            ("indexing failures", Reply::Int(f.count as i64)),
            ("last indexing error", text),
            ("last indexing error key", key),
        ])
    };
    let field_statistics = def
        .fields
        .iter()
        .zip(&data.field_failures)
        .map(|(f, failed)| {
            map(vec![
                ("identifier", status(&f.path)),
                ("attribute", status(&f.name)),
                ("Index Errors", failures(failed)),
            ])
        })
        .collect();
    let zero = || Reply::Double(0.0);
    let mut top = vec![
        ("index_name", status(&index.name)),
        (
            "index_options",
            Reply::Array(def.options.iter().map(|o| status(o)).collect()),
        ),
        ("index_definition", map(definition)),
        ("attributes", Reply::Array(attributes)),
        ("num_docs", Reply::Int(docs as i64)),
        ("max_doc_id", Reply::Int(data.max_doc_id() as i64)),
        ("num_terms", Reply::Int(data.terms.len() as i64)),
        ("num_records", Reply::Int(data.records as i64)),
        ("inverted_sz_mb", Reply::Double(mb(memory.inverted))),
        ("vector_index_sz_mb", Reply::Double(mb(memory.vectors))),
        (
            "total_inverted_index_blocks",
            Reply::Int(data.terms.len() as i64),
        ),
        ("offset_vectors_sz_mb", Reply::Double(mb(memory.offsets))),
        ("doc_table_size_mb", Reply::Double(mb(memory.docs))),
        (
            "sortable_values_size_mb",
            Reply::Double(mb(memory.sortables)),
        ),
        ("key_table_size_mb", Reply::Double(mb(memory.keys))),
        ("tag_overhead_sz_mb", Reply::Double(mb(memory.tags))),
        ("text_overhead_sz_mb", Reply::Double(mb(memory.text))),
        (
            "total_index_memory_sz_mb",
            Reply::Double(mb(memory.total())),
        ),
        ("geoshapes_sz_mb", zero()),
        ("records_per_doc_avg", Reply::Double(per_doc(records))),
        (
            "bytes_per_record_avg",
            Reply::Double(per_record(memory.inverted as f64)),
        ),
        (
            "offsets_per_term_avg",
            Reply::Double(per_record(memory.offsets as f64 / 4.0)),
        ),
        (
            "offset_bits_per_record_avg",
            Reply::Double(per_record(memory.offsets as f64 * 8.0)),
        ),
        (
            "hash_indexing_failures",
            Reply::Int(data.failures.count as i64),
        ),
        ("total_indexing_time", zero()),
        ("indexing", Reply::Int(i64::from(data.indexing))),
        ("percent_indexed", Reply::Double(data.scanned)),
        (
            "number_of_uses",
            Reply::Int(index.uses.load(Ordering::Relaxed) as i64),
        ),
        ("cleaning", Reply::Int(0)),
        (
            "gc_stats",
            map(vec![
                ("bytes_collected", zero()),
                ("total_ms_run", zero()),
                ("total_cycles", zero()),
                ("average_cycle_time_ms", Reply::Double(f64::NAN)),
                ("last_run_time_ms", zero()),
                ("gc_numeric_trees_missed", zero()),
                ("gc_blocks_denied", zero()),
            ]),
        ),
        (
            "cursor_stats",
            map(vec![
                ("global_idle", Reply::Int(0)),
                ("global_total", Reply::Int(0)),
                ("index_capacity", Reply::Int(128)),
                ("index_total", Reply::Int(0)),
            ]),
        ),
    ];
    if let Some(words) = &def.stopwords {
        // RediSearch keeps them in a trie: sorted, once each.
        let words: std::collections::BTreeSet<&String> = words.iter().collect();
        top.push((
            "stopwords_list",
            Reply::Array(words.iter().map(|w| Reply::bulk(w.as_bytes())).collect()),
        ));
    }
    let dialects = index.dialects.load(Ordering::Relaxed);
    top.push((
        "dialect_stats",
        map((1..=4)
            .map(|d| {
                let name = ["dialect_1", "dialect_2", "dialect_3", "dialect_4"][d - 1];
                (name, Reply::Int(i64::from(dialects >> (d - 1) & 1)))
            })
            .collect()),
    ));
    top.push(("Index Errors", failures(&data.failures)));
    top.push(("field statistics", Reply::Array(field_statistics)));
    Ok(map(top))
}

/// A VECTOR field's parameters as FT.INFO lists them after its type.
fn vector_attributes(p: &VectorParams, pairs: &mut Vec<(&str, Reply)>) {
    let word = |s: &str| Reply::Status(s.to_string().into());
    let (algorithm, hnsw) = match p.algorithm {
        Algorithm::Flat => ("FLAT", None),
        Algorithm::Hnsw {
            m, ef_construction, ..
        } => ("HNSW", Some((m, ef_construction))),
    };
    pairs.push(("algorithm", word(algorithm)));
    let element = match p.element {
        ElementType::Float32 => "FLOAT32",
        ElementType::Float64 => "FLOAT64",
    };
    pairs.push(("data_type", word(element)));
    pairs.push(("dim", Reply::Int(p.dim as i64)));
    let metric = match p.metric {
        Metric::L2 => "L2",
        Metric::Ip => "IP",
        Metric::Cosine => "COSINE",
    };
    pairs.push(("distance_metric", word(metric)));
    if let Some((m, ef_construction)) = hnsw {
        pairs.push(("M", Reply::Int(m as i64)));
        pairs.push(("ef_construction", Reply::Int(ef_construction as i64)));
    }
}

/// FT.SEARCH's options.
struct SearchArgs {
    nocontent: bool,
    verbatim: bool,
    with_scores: bool,
    /// WITHPAYLOADS: a null payload after each id (and score).
    with_payloads: bool,
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
        with_payloads: false,
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
            "WITHPAYLOADS" => s.with_payloads = true,
            "NOSTOPWORDS" | "WITHSORTKEYS" | "EXPLAINSCORE" | "INORDER" => {
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
pub(super) struct Hit {
    key: Bytes,
    score: f64,
    /// The distances the query yields as fields (KNN's, each `VECTOR_RANGE`'s
    /// `$YIELD_DISTANCE_AS`): (name, value), in the order they come first in the reply.
    distances: Vec<(Bytes, Bytes)>,
    /// What the results are ordered by: the score (highest first), KNN's distance (nearest
    /// first) or SORTBY's value (None: the document has none). A cluster node merges its peers'
    /// results by it.
    pub(super) order: Option<SortValue>,
}

/// A distance the query yields as a field: its name and each matching document's value.
struct Yield {
    name: String,
    by_id: HashMap<u32, f64>,
}

/// The `VECTOR_RANGE` nodes of `node` that name their distance (`$YIELD_DISTANCE_AS`), with
/// every document's distance within their radius.
fn range_yields(data: &Data, node: &Node, out: &mut Vec<Yield>) -> Result<(), Reply> {
    match node {
        Node::VectorRange {
            field,
            radius,
            vector,
            distance_as: Some(name),
        } => {
            let index = data
                .def
                .field(field)
                .and_then(|(i, _)| data.vectors[i].as_ref());
            // A missing or non-vector field was reported by the executor already.
            if let Some(index) = index {
                let by_id = index.range(vector, *radius, None).map_err(error)?;
                out.push(Yield {
                    name: name.clone(),
                    by_id: by_id.into_iter().collect(),
                });
            }
        }
        Node::And(nodes) | Node::Or(nodes) => {
            for n in nodes {
                range_yields(data, n, out)?;
            }
        }
        Node::Not(n) | Node::Optional(n) => range_yields(data, n, out)?,
        Node::Fields { node, .. } => range_yields(data, node, out)?,
        _ => {}
    }
    Ok(())
}

/// `a` before `b` in results sorted `ascending` or not, a missing value last either way.
pub(super) fn compare_order(
    a: &Option<SortValue>,
    b: &Option<SortValue>,
    ascending: bool,
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Some(x), Some(y)) if ascending => compare_sort(x, y),
        (Some(x), Some(y)) => compare_sort(x, y).reverse(),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// A query run on this node: its arguments, the total, the page of results, the index's key
/// type and fields (to load the documents), and the order of the results.
pub(super) struct Searched {
    s: SearchArgs,
    pub(super) total: usize,
    pub(super) hits: Vec<Hit>,
    key_type: KeyType,
    fields: Vec<Field>,
    /// Results come lowest [`Hit::order`] first.
    pub(super) ascending: bool,
    /// KNN's k: the most results there are, however many nodes answer.
    pub(super) knn: Option<usize>,
}

impl Searched {
    pub(super) fn offset(&self) -> usize {
        self.s.offset
    }

    pub(super) fn limit(&self) -> usize {
        self.s.limit
    }
}

/// FT.SEARCH index query [options]. In cluster mode every primary answers from its own index
/// (`search_gather`).
pub fn search(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if let Some(cluster) = ctx.shared.cluster.clone() {
        return super::search_gather::search(ctx, &cluster, args);
    }
    let found = search_here(ctx, args, false)?;
    let resp3 = ctx.conn.resp3;
    let items = found
        .hits
        .iter()
        .flat_map(|hit| render_hit(ctx, &found, hit, resp3))
        .collect();
    Ok(assemble(resp3, found.total, items))
}

/// Runs FT.SEARCH's query on this node's index. `from_start`: the first offset + limit results
/// rather than the page (a cluster node pages after merging every node's).
pub(super) fn search_here(
    ctx: &mut Ctx,
    args: &[&[u8]],
    from_start: bool,
) -> Result<Searched, Reply> {
    arity(args, 2, usize::MAX)?;
    if args.len() == 2 {
        return Err(error("No query string provided"));
    }
    let default_dialect = registry(ctx).settings.read().default_dialect;
    let max_results = registry(ctx).settings.read().max_search_results;
    let name = text(args[1]);
    let index = index_or(ctx, args[1], &format!("{name}: no such index"))?;
    let s = parse_search_args(args, default_dialect)?;
    if s.limit as u64 > max_results || s.offset as u64 > max_results {
        return Err(error(format!("LIMIT exceeds maximum of {max_results}")));
    }
    let query_text = String::from_utf8_lossy(args[2]).into_owned();
    let mut query =
        crate::search::query::parse(&query_text, &s.params, s.dialect).map_err(error)?;
    index.queried_in(s.dialect);
    if !s.filters.is_empty() {
        let mut nodes = vec![query.filter];
        nodes.extend(s.filters.iter().cloned());
        query.filter = Node::And(nodes);
    }
    if s.slop.is_some() || s.in_order {
        apply_slop(&mut query.filter, s.slop, s.in_order);
    }
    let page = match from_start {
        true => (0, s.offset.saturating_add(s.limit)),
        false => (s.offset, s.limit),
    };
    let (total, hits, key_type, fields, ascending) = {
        let data = read_index(ctx, &index)?;
        run_search(&data, &query, &s, page)?
    };
    Ok(Searched {
        s,
        total,
        hits,
        key_type,
        fields,
        ascending,
        knn: query.knn.as_ref().map(|knn| knn.k),
    })
}

/// SLOP/INORDER given as options: an intersection of plain words becomes a phrase with them (as
/// RediSearch's intersection honours them), and every phrase without a slop of its own takes the
/// option's. INORDER without SLOP sets the order and no limit on the words between.
fn apply_slop(node: &mut Node, slop: Option<u32>, in_order: bool) {
    match node {
        Node::And(children)
            if children.len() > 1 && children.iter().all(|c| matches!(c, Node::Term(_))) =>
        {
            let terms = children
                .iter()
                .filter_map(|c| match c {
                    Node::Term(t) => Some(t.clone()),
                    _ => None,
                })
                .collect();
            // The widest gap positions can have: any distance.
            let slop = slop.unwrap_or(u32::MAX / 4);
            *node = Node::Phrase {
                terms,
                slop: Some(slop),
                in_order,
            };
        }
        Node::Phrase {
            slop: s,
            in_order: o,
            ..
        } => {
            if s.is_none() {
                *s = slop;
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

/// How long a command inside EXEC or a script waits for an index's lock: this thread holds shard
/// locks, and the lock's holder may be an indexer waiting for one of them.
const HOLDING_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

fn busy_index() -> Reply {
    error("ERR the index is being updated; retry outside MULTI/EXEC or the script")
}

/// The index's data for reading. Inside EXEC or a script this thread holds shard locks: the
/// transaction's own writes so far reach the indexes first (RediSearch indexes every write as
/// it happens, so a search queued after an HSET finds it), each key read through those locks,
/// and a lock not had within [`HOLDING_WAIT`] is an error rather than a deadlock.
fn read_index<'i>(
    ctx: &mut Ctx<'_, '_>,
    index: &'i Index,
) -> Result<parking_lot::RwLockReadGuard<'i, Data>, Reply> {
    if ctx.held.is_none() {
        return Ok(index.data.read());
    }
    let shared = ctx.shared;
    let read = |def: &crate::search::schema::Definition, key: &[u8]| {
        let Some(locked) = ctx.held_view(0) else {
            return (None, 0);
        };
        match locked.entries_of(&[key]).first() {
            Some((_, entry)) => (
                crate::search::index::extract(def, &entry.value),
                entry.expire_at(),
            ),
            None => (None, 0),
        }
    };
    match shared.search.apply_pending_holding(HOLDING_WAIT, read) {
        None => return Err(busy_index()),
        Some(true) => shared.events.set_indexing(shared.search.any()),
        Some(false) => {}
    }
    index.data.try_read_for(HOLDING_WAIT).ok_or_else(busy_index)
}

type Found = (usize, Vec<Hit>, KeyType, Vec<Field>, bool);

/// Runs the query and picks the `page` of results (offset, count): (total, hits, the index's key
/// type, its fields, whether the results come lowest [`Hit::order`] first).
fn run_search(
    data: &Data,
    query: &Query,
    s: &SearchArgs,
    page: (usize, usize),
) -> Result<Found, Reply> {
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
    let mut knn_name: Option<String> = None;
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
        knn_name = Some(
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
    let mut yields = Vec::new();
    range_yields(data, &query.filter, &mut yields)?;
    match &s.sort_by {
        Some((field, asc)) if knn_name.as_ref() == Some(field) => {
            ranked.sort_by(|a, b| {
                let o = a.1.total_cmp(&b.1);
                let o = if *asc { o } else { o.reverse() };
                o.then(a.0.cmp(&b.0))
            });
        }
        Some((field, asc)) if yields.iter().any(|y| y.name == *field) => {
            let by_id = yields.iter().find(|y| y.name == *field).map(|y| &y.by_id);
            // Documents without the distance (outside the range, in a union) come last.
            let value = |id: &u32| by_id.and_then(|m| m.get(id)).map(|d| SortValue::Number(*d));
            ranked.sort_by(|a, b| {
                compare_order(&value(&a.0), &value(&b.0), *asc).then(a.0.cmp(&b.0))
            });
        }
        None if knn_name.is_some() => {}
        Some((field, asc)) => {
            let Some((i, f)) = data.def.field(field) else {
                return Err(error(format!(
                    "Property `{field}` not loaded nor in schema"
                )));
            };
            let as_written = data.def.sorts_as_written(f);
            let value = |id: &u32| data.docs.get(id).and_then(|d| d.sort_value(i, as_written));
            ranked.sort_by(|a, b| {
                compare_order(&value(&a.0), &value(&b.0), *asc).then(a.0.cmp(&b.0))
            });
        }
        None => ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))),
    }
    // What the order above compared, for a merge with other nodes' results.
    let sorted_by = match &s.sort_by {
        Some((field, _)) if knn_name.as_ref() != Some(field) => data
            .def
            .field(field)
            .map(|(i, f)| (i, data.def.sorts_as_written(f))),
        _ => None,
    };
    let ascending = match &s.sort_by {
        Some((_, asc)) => *asc,
        None => knn_name.is_some(),
    };
    let total = ranked.len();
    let hits = ranked
        .into_iter()
        .skip(page.0)
        .take(page.1)
        .filter_map(|(id, score)| {
            let field = |name: &str, distance: f64| {
                let value = crate::search::aggregate::render(
                    &crate::search::aggregate::Value::Number(distance),
                );
                (Bytes::copy_from_slice(name.as_bytes()), value)
            };
            let mut distances: Vec<(Bytes, Bytes)> = yields
                .iter()
                .filter_map(|y| y.by_id.get(&id).map(|d| field(&y.name, *d)))
                .collect();
            if let Some(name) = &knn_name {
                distances.insert(0, field(name, score));
            }
            data.docs.get(&id).map(|d| Hit {
                order: match sorted_by {
                    Some((i, as_written)) => d.sort_value(i, as_written),
                    None => Some(SortValue::Number(score)),
                },
                key: d.key.clone(),
                score,
                distances,
            })
        })
        .collect();
    Ok((
        total,
        hits,
        data.def.key_type,
        data.def.fields.clone(),
        ascending,
    ))
}

fn compare_sort(a: &SortValue, b: &SortValue) -> std::cmp::Ordering {
    match (a, b) {
        (SortValue::Number(x), SortValue::Number(y)) => x.total_cmp(y),
        (SortValue::Text(x), SortValue::Text(y)) => x.cmp(y),
        (SortValue::Number(_), SortValue::Text(_)) => std::cmp::Ordering::Less,
        (SortValue::Text(_), SortValue::Number(_)) => std::cmp::Ordering::Greater,
    }
}

/// Whether `value` is a document of an index over `key_type` keys.
fn is_document(value: &Value, key_type: KeyType) -> bool {
    matches!(
        (value, key_type),
        (Value::Hash(_), KeyType::Hash)
            | (Value::Json(_), KeyType::Json)
            | (Value::Stm(_), KeyType::Stm)
    )
}

/// A whole document as FT.SEARCH returns it and FT.AGGREGATE's `LOAD *` loads it: a hash's live
/// fields, an STM entry's fields, a JSON document as its text under `$` (dialect 3 wraps it in
/// an array). Empty for a value of another type.
fn whole_document(value: &Value, dialect: u32) -> Vec<(Bytes, Bytes)> {
    match value {
        Value::Hash(hash) => hash
            .iter_live(crate::store::now_ms())
            .map(|(f, v)| (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v)))
            .collect(),
        Value::Stm(entry) => crate::search::stm_doc::fields(entry)
            .into_iter()
            .map(|(name, v)| (Bytes::from_static(name.as_bytes()), Bytes::from(v)))
            .collect(),
        Value::Json(doc) => {
            let text = if dialect >= 3 {
                json::to_text(&[doc.tree()][..], Layout::default())
            } else {
                json::to_text(doc.tree(), Layout::default())
            };
            vec![(Bytes::from_static(b"$"), Bytes::from(text))]
        }
        _ => Vec::new(),
    }
}

/// One field of a document, as RETURN and LOAD read it: a hash's or an STM entry's field by
/// name, a JSON document's value at a JSONPath ([`json_return`]).
fn document_field(value: &Value, path: &str, dialect: u32) -> Option<Bytes> {
    match value {
        Value::Hash(hash) => hash
            .get_live(path.as_bytes(), crate::store::now_ms())
            .map(Bytes::copy_from_slice),
        Value::Json(doc) => {
            let path = JsonPath::parse(path).ok()?;
            json_return(&path.values(doc.tree()), dialect)
        }
        Value::Stm(entry) => crate::search::stm_doc::fields(entry)
            .into_iter()
            .find(|(name, _)| *name == path)
            .map(|(_, v)| Bytes::from(v)),
        _ => None,
    }
}

/// The fields FT.SEARCH returns for one document, read from the store now (the index lock is
/// released): None when the key is gone or holds another type.
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
    let value = &entry.value;
    if !is_document(value, key_type) {
        return None;
    }
    if key_type != KeyType::Json {
        return Some(returned_pairs(whole_document(value, s.dialect), fields, s));
    }
    let path_of = |name: &str| {
        fields
            .iter()
            .find(|f| f.name == name)
            .map_or(name.to_string(), |f| f.path.clone())
    };
    Some(match &s.returns {
        None => {
            let mut pairs = whole_document(value, s.dialect);
            // RediSearch loads the sort key before the document.
            if let Some((name, _)) = &s.sort_by {
                if fields.iter().any(|f| f.name == *name) {
                    if let Some(v) = document_field(value, &path_of(name), 2) {
                        pairs.insert(0, (Bytes::copy_from_slice(name.as_bytes()), v));
                    }
                }
            }
            pairs
        }
        Some(wanted) => wanted
            .iter()
            .filter_map(|(name, alias)| {
                let v = document_field(value, &path_of(name), s.dialect)?;
                Some((Bytes::copy_from_slice(alias.as_bytes()), v))
            })
            .collect(),
    })
}

/// What FT.SEARCH returns of a document given as field/value pairs (a hash, an STM entry): every
/// pair, the sort key first as RediSearch loads it, or the RETURNed fields under their names.
fn returned_pairs(
    mut all: Vec<(Bytes, Bytes)>,
    fields: &[Field],
    s: &SearchArgs,
) -> Vec<(Bytes, Bytes)> {
    let path_of = |name: &str| -> String {
        fields
            .iter()
            .find(|f| f.name == name)
            .map_or(name, |f| f.path.as_str())
            .to_string()
    };
    match &s.returns {
        None => {
            if let Some((name, _)) = &s.sort_by {
                let path = path_of(name);
                if let Some(at) = all.iter().position(|(f, _)| f == path.as_bytes()) {
                    let first = all.remove(at);
                    all.insert(0, first);
                }
            }
            all
        }
        Some(wanted) => wanted
            .iter()
            .filter_map(|(name, alias)| {
                let path = path_of(name);
                all.iter()
                    .find(|(f, _)| f == path.as_bytes())
                    .map(|(_, v)| (Bytes::copy_from_slice(alias.as_bytes()), v.clone()))
            })
            .collect(),
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

/// One result as FT.SEARCH's reply gives it, its document loaded now (the index lock is
/// released): RESP2, the id, the score (WITHSCORES) and the fields, each an item of the reply's
/// array; RESP3, one map.
pub(super) fn render_hit(
    ctx: &mut Ctx<'_, '_>,
    found: &Searched,
    hit: &Hit,
    resp3: bool,
) -> Vec<Reply> {
    let s = &found.s;
    let loaded = if s.nocontent {
        Some(Vec::new())
    } else {
        load_fields(ctx, &hit.key, found.key_type, &found.fields, s)
    };
    let mut pairs = loaded.unwrap_or_default();
    if !s.nocontent {
        // The distances come first, in the query's order, when RETURN names them or is absent.
        for distance in hit.distances.iter().rev() {
            let wanted = s
                .returns
                .as_ref()
                .is_none_or(|r| r.iter().any(|(name, _)| name.as_bytes() == &distance.0[..]));
            if wanted {
                pairs.retain(|(k, _)| *k != distance.0);
                pairs.insert(0, distance.clone());
            }
        }
    }
    if resp3 {
        let mut entry = vec![(Reply::Status("id".into()), Reply::Bulk(hit.key.clone()))];
        if s.with_scores {
            entry.push((Reply::Status("score".into()), Reply::Double(hit.score)));
        }
        if s.with_payloads {
            // Documents carry no payload here (FT.ADD's PAYLOAD is not served): null.
            entry.push((Reply::Status("payload".into()), Reply::Nil));
        }
        if !s.nocontent {
            let attrs = pairs
                .into_iter()
                .map(|(k, v)| (Reply::Bulk(k), Reply::Bulk(v)))
                .collect();
            entry.push((Reply::Status("extra_attributes".into()), Reply::Map(attrs)));
        }
        entry.push((Reply::Status("values".into()), Reply::Array(Vec::new())));
        return vec![Reply::Map(entry)];
    }
    let mut items = vec![Reply::Bulk(hit.key.clone())];
    if s.with_scores {
        items.push(Reply::Double(hit.score));
    }
    if s.with_payloads {
        items.push(Reply::Nil);
    }
    if !s.nocontent {
        items.push(Reply::Array(
            pairs
                .into_iter()
                .flat_map(|(k, v)| [Reply::Bulk(k), Reply::Bulk(v)])
                .collect(),
        ));
    }
    items
}

/// FT.SEARCH's reply from the total and the results' items ([`render_hit`]'s, in order).
pub(super) fn assemble(resp3: bool, total: usize, results: Vec<Reply>) -> Reply {
    if resp3 {
        return Reply::Map(vec![
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
        ]);
    }
    let mut out = Vec::with_capacity(results.len() + 1);
    out.push(Reply::Int(total as i64));
    out.extend(results);
    Reply::Array(out)
}

/// Where one property of an aggregate's row comes from.
enum Source {
    /// `@__key`: the document's key.
    Key,
    /// ADDSCORES's `__score`.
    Score,
    /// The KNN distance.
    Distance,
    /// A SORTABLE field, read from the index (its value as SORTBY compares it: RediSearch
    /// gives a referenced sortable field from its sorting vector).
    Sortable(usize),
    /// A hash field, or a JSONPath of a JSON document.
    Stored(String),
}

/// FT.AGGREGATE's rows: each property's (name, source), the LOADed ones first unless `LOAD *`,
/// which gives the document's fields after the others.
struct RowShape {
    sources: Vec<(String, Source)>,
    all: bool,
}

impl RowShape {
    fn new(plan: &Plan, data: &Data, distance: Option<&str>) -> RowShape {
        let def = &data.def;
        let stored = |name: &str| {
            Source::Stored(
                def.field(name)
                    .map_or_else(|| name.to_string(), |(_, f)| f.path.clone()),
            )
        };
        let mut sources: Vec<(String, Source)> = Vec::new();
        if let Load::Fields(loaded) = &plan.load {
            for (field, name) in loaded {
                let source = if field == "__key" {
                    Source::Key
                } else {
                    stored(field)
                };
                sources.push((name.clone(), source));
            }
        }
        for name in plan.referenced_fields() {
            if sources.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let source = match def.field(&name) {
                _ if Some(name.as_str()) == distance => Source::Distance,
                _ if name == "__score" && plan.add_scores => Source::Score,
                _ if name == "__key" => Source::Key,
                Some((i, f)) if f.sortable => Source::Sortable(i),
                Some((_, f)) => Source::Stored(f.path.clone()),
                None => continue,
            };
            sources.push((name, source));
        }
        if let Some(name) = distance {
            if !sources.iter().any(|(n, _)| n == name) {
                sources.push((name.to_string(), Source::Distance));
            }
        }
        if plan.add_scores && !sources.iter().any(|(n, _)| n == "__score") {
            sources.push(("__score".into(), Source::Score));
        }
        RowShape {
            sources,
            all: plan.load == Load::All,
        }
    }

    /// Whether a row reads the document itself (after the index lock is released).
    fn reads_store(&self) -> bool {
        self.all
            || self
                .sources
                .iter()
                .any(|(_, s)| matches!(s, Source::Stored(_)))
    }
}

/// One document an aggregate matched, with what the index gives of it.
struct Matched {
    key: Bytes,
    score: f64,
    distance: Option<f64>,
    /// Per [`Source::Sortable`] of the shape, in order.
    sortable: Vec<Option<AggValue>>,
}

fn sort_value(v: SortValue) -> AggValue {
    match v {
        SortValue::Number(n) => AggValue::Number(n),
        SortValue::Text(t) => AggValue::Text(Bytes::from(t)),
    }
}

/// One document's row, read from the store now (the index lock is released).
fn aggregate_row(
    ctx: &mut Ctx<'_, '_>,
    shape: &RowShape,
    m: Matched,
    key_type: KeyType,
    dialect: u32,
) -> Row {
    let mut row: Row = Vec::with_capacity(shape.sources.len());
    let mut sortable = m.sortable.into_iter();
    // Per source, the value read from the document ([`Source::Stored`] only); `LOAD *`'s fields.
    let mut stored: Vec<Option<Bytes>> = vec![None; shape.sources.len()];
    let mut whole: Vec<(Bytes, Bytes)> = Vec::new();
    if shape.reads_store() {
        let locked = ctx.lock(&[&m.key]);
        let entries = locked.entries_of(&[&m.key[..]]);
        let value = entries
            .first()
            .map(|(_, e)| &e.value)
            .filter(|v| is_document(v, key_type));
        if let Some(value) = value {
            for ((_, source), slot) in shape.sources.iter().zip(stored.iter_mut()) {
                if let Source::Stored(path) = source {
                    *slot = document_field(value, path, dialect);
                }
            }
            if shape.all {
                whole = whole_document(value, dialect);
            }
        }
    }
    for ((name, source), from_store) in shape.sources.iter().zip(stored) {
        let value = match source {
            Source::Key => Some(AggValue::Text(m.key.clone())),
            Source::Score => Some(AggValue::Number(m.score)),
            Source::Distance => m.distance.map(AggValue::Number),
            Source::Sortable(_) => sortable.next().flatten(),
            Source::Stored(_) => from_store.map(AggValue::Text),
        };
        if let Some(v) = value {
            set(&mut row, name, v);
        }
    }
    // LOAD *: the document's fields after the others (a name already there keeps its place).
    for (name, v) in whole {
        set(&mut row, &text(&name), AggValue::Text(v));
    }
    row
}

/// A row's value in a reply: text and numbers as bulk strings (numbers as RediSearch writes
/// them), TOLIST's lists as arrays, null as nil.
fn agg_value_reply(v: &AggValue) -> Reply {
    match v {
        AggValue::Null => Reply::Nil,
        AggValue::List(items) => Reply::Array(items.iter().map(agg_value_reply).collect()),
        other => Reply::Bulk(render(other)),
    }
}

/// One chunk of an aggregate's rows as RediSearch replies it: RESP2 `[total, [k, v, …], …]`,
/// RESP3 the map FT.SEARCH's has (each row's properties under `extra_attributes`).
fn chunk_reply(resp3: bool, chunk: Chunk) -> Reply {
    let total = Reply::Int(chunk.total as i64);
    if resp3 {
        let results = chunk
            .rows
            .iter()
            .map(|row| {
                let attrs = row
                    .iter()
                    .map(|(k, v)| (Reply::bulk(k.as_bytes()), agg_value_reply(v)))
                    .collect();
                Reply::Map(vec![
                    (Reply::Status("extra_attributes".into()), Reply::Map(attrs)),
                    (Reply::Status("values".into()), Reply::Array(Vec::new())),
                ])
            })
            .collect();
        let warnings = chunk
            .warnings
            .into_iter()
            .map(|w| Reply::Status(w.into()))
            .collect();
        return Reply::Map(vec![
            (Reply::Status("attributes".into()), Reply::Array(Vec::new())),
            (Reply::Status("total_results".into()), total),
            (
                Reply::Status("format".into()),
                Reply::Status("STRING".into()),
            ),
            (Reply::Status("results".into()), Reply::Array(results)),
            (Reply::Status("warning".into()), Reply::Array(warnings)),
        ]);
    }
    let mut out = Vec::with_capacity(chunk.rows.len() + 1);
    out.push(total);
    for row in &chunk.rows {
        out.push(Reply::Array(
            row.iter()
                .flat_map(|(k, v)| [Reply::bulk(k.as_bytes()), agg_value_reply(v)])
                .collect(),
        ));
    }
    Reply::Array(out)
}

/// FT.AGGREGATE index query [LOAD …] [GROUPBY … REDUCE …] [APPLY …] [FILTER …] [SORTBY …]
/// [LIMIT …] [WITHCURSOR …] [PARAMS …] [DIALECT n] …: the query through FT.SEARCH's matcher,
/// then the pipeline (`crate::search::aggregate`) over the matched documents in index order
/// (nearest first for a KNN query).
pub fn aggregate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 2, usize::MAX)?;
    if args.len() == 2 {
        return Err(error("No query string provided"));
    }
    let (default_dialect, max_idle_cap) = {
        let settings = registry(ctx).settings.read();
        (settings.default_dialect, settings.cursor_max_idle_ms)
    };
    let name = text(args[1]);
    let Some(index) = registry(ctx).get(&name) else {
        return Err(error(format!("{name}: no such index")));
    };
    let rest: Vec<Bytes> = args[3..]
        .iter()
        .map(|a| Bytes::copy_from_slice(a))
        .collect();
    let plan = Plan::parse(&rest).map_err(error)?;
    let dialect = if plan.dialect_given {
        plan.dialect
    } else {
        default_dialect
    };
    let query_text = String::from_utf8_lossy(args[2]).into_owned();
    let query = crate::search::query::parse(&query_text, &plan.params, dialect).map_err(error)?;
    let mut s = parse_search_args(&args[..3], dialect)?;
    s.verbatim = plan.verbatim;
    s.limit = usize::MAX;
    if let Some(scorer) = &plan.scorer {
        s.scorer = Scorer::parse(scorer).ok_or_else(|| error("Scoring function not found"))?;
    }
    let (shape, matched, key_type) = {
        let data = read_index(ctx, &index)?;
        let distance = query.knn.as_ref().map(|k| {
            k.score_as
                .clone()
                .unwrap_or_else(|| format!("__{}_score", k.field))
        });
        let def = &data.def;
        let loaded = |name: &str| match &plan.load {
            Load::All => true,
            Load::Fields(f) => f.iter().any(|(_, n)| n == name),
            Load::Named => false,
        };
        let known = |name: &str| {
            loaded(name)
                || def.field(name).is_some_and(|(_, f)| f.sortable)
                || (plan.add_scores && name == "__score")
                || distance.as_deref() == Some(name)
        };
        let in_schema = |name: &str| def.field(name).is_some();
        plan.validate(&known, &in_schema).map_err(error)?;
        let shape = RowShape::new(&plan, &data, distance.as_deref());
        let (_, hits, key_type, _, _) = run_search(&data, &query, &s, (0, usize::MAX))?;
        let mut matched: Vec<(u32, Matched)> = hits
            .into_iter()
            .filter_map(|hit| {
                let id = data.id_of(&hit.key)?;
                let doc = data.docs.get(&id)?;
                let sortable = shape
                    .sources
                    .iter()
                    .filter_map(|(_, s)| match s {
                        Source::Sortable(i) => Some(
                            doc.sort_value(*i, data.def.sorts_as_written(&data.def.fields[*i]))
                                .map(sort_value),
                        ),
                        _ => None,
                    })
                    .collect();
                let distance = hit
                    .distances
                    .iter()
                    .find(|(name, _)| Some(&name[..]) == distance.as_deref().map(str::as_bytes))
                    .and_then(|(_, v)| std::str::from_utf8(v).ok()?.parse().ok());
                Some((
                    id,
                    Matched {
                        key: hit.key,
                        score: hit.score,
                        distance,
                        sortable,
                    },
                ))
            })
            .collect();
        if query.knn.is_none() {
            matched.sort_by_key(|(id, _)| *id);
        }
        (shape, matched, key_type)
    };
    let count = matched.len();
    let rows: Vec<Row> = matched
        .into_iter()
        .map(|(_, m)| aggregate_row(ctx, &shape, m, key_type, dialect))
        .collect();
    let ran = plan.run(rows).map_err(error)?;
    let mut results = Results::new(ran, count);
    let resp3 = ctx.conn.resp3;
    let Some(cursor) = plan.cursor else {
        return Ok(chunk_reply(resp3, results.next_chunk(usize::MAX)));
    };
    let chunk = results.next_chunk(cursor.count);
    let id = if chunk.done {
        0
    } else {
        let max_idle = cursor.max_idle_ms.min(max_idle_cap.max(1));
        registry(ctx)
            .cursors
            .lock()
            .open(&index.name, results, cursor.count, max_idle)
            .map_err(error)?
    };
    Ok(Reply::Array(vec![
        chunk_reply(resp3, chunk),
        Reply::Int(id as i64),
    ]))
}

/// FT.CURSOR READ index id [COUNT n] | DEL index id | GC index id
pub fn cursor(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 4, usize::MAX)?;
    let sub = args[1];
    let id: u64 = std::str::from_utf8(args[3])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| error("Bad cursor ID"))?;
    // The cursor's index by the name given (an alias names its index).
    let index = registry(ctx)
        .get(&text(args[2]))
        .map(|i| i.name.clone())
        .unwrap_or_default();
    let cursors = &registry(ctx).cursors;
    if is(sub, "READ") {
        let count = match args.get(4) {
            None => None,
            Some(word) => {
                let n = args
                    .get(5)
                    .filter(|_| is(word, "COUNT"))
                    .and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok())
                    .ok_or_else(|| error("Bad value for COUNT"))?;
                // COUNT 0 reads the cursor's own count.
                (n > 0).then_some(n)
            }
        };
        let (chunk, next) = cursors.lock().read(&index, id, count).map_err(error)?;
        return Ok(Reply::Array(vec![
            chunk_reply(ctx.conn.resp3, chunk),
            Reply::Int(next as i64),
        ]));
    }
    if is(sub, "DEL") {
        cursors.lock().delete(&index, id).map_err(error)?;
        return Ok(Reply::OK);
    }
    if is(sub, "GC") {
        let removed = cursors.lock().expire(std::time::Instant::now());
        return Ok(Reply::Int(removed as i64));
    }
    Err(error("Unknown subcommand"))
}

/// FT.EXPLAIN index query [DIALECT n] [PARAMS …] / FT.EXPLAINCLI: the parsed query as
/// RediSearch's plan text (`crate::search::explain`); EXPLAINCLI gives its lines as an array.
pub fn explain(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    arity(args, 3, usize::MAX)?;
    let default_dialect = registry(ctx).settings.read().default_dialect;
    let name = text(args[1]);
    let Some(index) = registry(ctx).get(&name) else {
        return Err(error(format!("{name}: no such index")));
    };
    let s = parse_search_args(args, default_dialect)?;
    let query_text = String::from_utf8_lossy(args[2]).into_owned();
    let query = crate::search::query::parse(&query_text, &s.params, s.dialect).map_err(error)?;
    let plan = {
        let data = read_index(ctx, &index)?;
        crate::search::explain::explain(&query, &data.def, &s.params, s.verbatim)
    };
    if is(args[0], "FT.EXPLAINCLI") {
        let mut lines: Vec<Reply> = plan
            .lines()
            .map(|l| Reply::Status(l.to_string().into()))
            .collect();
        lines.push(Reply::Status(String::new().into()));
        return Ok(Reply::Array(lines));
    }
    Ok(Reply::bulk(plan.as_bytes()))
}
