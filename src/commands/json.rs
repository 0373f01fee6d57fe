//! The JSON.* commands (RedisJSON 2.x as Redis 8 serves it). Every command takes a path in either
//! syntax ([`crate::store::json::path`]): a JSONPath (`$…`) answers for every match (an array,
//! with nil where a match has the wrong type), a legacy path (`.a.b`, `a`) answers for the first
//! match only and turns a missing or mistyped value into an error. Error texts are RedisJSON's,
//! including the ones it sends without a code (`Existing key has wrong Redis type`, serde_json's
//! parse errors).
//!
//! A writing command first locates its targets on the stored document (a read), checks every
//! argument, and only then takes the key for writing: bad input changes nothing, and a command
//! that finds nothing to change is not a write (no event, not replicated).

use super::args::is;
use super::{CmdResult, Ctx};
use crate::protocol::Reply;
use crate::spec::wrong_arity;
use crate::store::json::{self, Doc, Json, Layout, Query, Step, MAX_DEPTH};
use crate::store::{Locked, Value};
use serde_json::Number;

/// RedisJSON's error for a key of another type.
const WRONG_KEY_TYPE: &str = "Existing key has wrong Redis type";
const NO_KEY: &str = "ERR could not perform this operation on a key that doesn't exist";
const NO_PATH: &str = "ERR Path does not exist";
const NOT_ROOT: &str = "ERR new objects must be created at the root";
const NOT_INTEGER: &str = "Couldn't parse as integer";
const DEPTH: &str = "ERR recursion limit exceeded";
const OVERFLOW: &str = "ERR numeric overflow";
const NOT_A_NUMBER: &str = "ERR result is not a number";

fn error(text: impl Into<String>) -> Reply {
    Reply::error(text.into())
}

/// `ERR Path does not exist or <what>`, the legacy paths' error when nothing fits.
fn no_path_or(what: &str) -> Reply {
    error(format!("ERR Path does not exist or {what}"))
}

/// `WRONGTYPE wrong type of path value - expected <what>`.
fn wrong_value(what: &str) -> Reply {
    error(format!(
        "WRONGTYPE wrong type of path value - expected {what}"
    ))
}

fn arity(args: &[&[u8]]) -> Reply {
    error(wrong_arity(
        &String::from_utf8_lossy(args[0]).to_lowercase(),
    ))
}

fn path(arg: &[u8]) -> Result<Query, Reply> {
    let text = std::str::from_utf8(arg).map_err(|_| error(json::NOT_UTF8))?;
    Query::parse(text).map_err(error)
}

fn value(arg: &[u8]) -> Result<Json, Reply> {
    json::parse(arg).map_err(error)
}

/// The JSON operand of NUMINCRBY/NUMMULTBY, STRAPPEND and ARRINDEX. RedisJSON parses these with
/// serde_json and lets redis-module turn the error into a reply, which adds `ERR ` (the document
/// values of JSON.SET, MSET, MERGE and ARRAPPEND/ARRINSERT go through its own parser and have no
/// code): `-ERR expected value at line 1 column 1`.
fn operand(arg: &[u8]) -> Result<Json, Reply> {
    let text = std::str::from_utf8(arg).map_err(|_| error(json::NOT_UTF8))?;
    serde_json::from_str(text).map_err(|e| error(format!("ERR {e}")))
}

fn integer(arg: &[u8]) -> Result<i64, Reply> {
    crate::protocol::parse_i64_strict(arg).ok_or_else(|| error(NOT_INTEGER))
}

/// The stored document at `key`: None when there is none, WRONGTYPE-style error for another
/// type. Only whole-document answers and existence checks read it this way (no tree is built).
fn stored<'l>(locked: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<&'l Doc>, Reply> {
    match locked.get(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Json(doc)) => Ok(Some(doc)),
        Some(_) => Err(error(WRONG_KEY_TYPE)),
    }
}

/// The tree of the document at `key`, for reading paths.
fn doc<'l>(locked: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<&'l Json>, Reply> {
    Ok(stored(locked, key)?.map(Doc::tree))
}

/// The tree of the document at `key` for a change that was decided on (its version moves, its
/// event fires, its stored text is dropped).
fn doc_mut<'l>(locked: &'l mut Locked<'_>, key: &[u8]) -> Option<&'l mut Json> {
    match locked.get_mut(key).map(|e| &mut e.value) {
        Some(Value::Json(doc)) => Some(doc.tree_mut()),
        _ => None,
    }
}

/// The located paths of `query` in the document at `key`, each kept (Some) when `fits` its value;
/// the command's own "no such key" error when there is no document.
fn locate(
    locked: &mut Locked<'_>,
    key: &[u8],
    query: &Query,
    fits: impl Fn(&Json) -> bool,
) -> Result<Vec<Option<Vec<Step>>>, Reply> {
    let doc = doc(locked, key)?.ok_or_else(|| error(NO_KEY))?;
    Ok(query
        .select(doc)
        .into_iter()
        .map(|(at, v)| fits(v).then_some(at))
        .collect())
}

/// Applies `change` at each located path in [`json::mutation_order`] (so no change moves another
/// target), giving its reply at the position the path was found in.
fn change_each(
    locked: &mut Locked<'_>,
    key: &[u8],
    found: Vec<Option<Vec<Step>>>,
    mut change: impl FnMut(&mut Json) -> Reply,
) -> Vec<Reply> {
    let mut replies: Vec<Reply> = found.iter().map(|_| Reply::Nil).collect();
    let mut order: Vec<(usize, Vec<Step>)> = found
        .into_iter()
        .enumerate()
        .filter_map(|(i, p)| p.map(|p| (i, p)))
        .collect();
    if order.is_empty() {
        return replies;
    }
    order.sort_by(|a, b| json::mutation_order(&a.1, &b.1));
    if let Some(doc) = doc_mut(locked, key) {
        for (i, at) in order {
            if let Some(target) = json::at_mut(doc, &at) {
                replies[i] = change(target);
            }
        }
    }
    replies
}

/// A JSONPath command's reply: one per match. A legacy path's: the last change's reply (RedisJSON
/// applies a legacy path to every match too and answers with the last), or `missing`.
fn per_match_or_last(query: &Query, replies: Vec<Reply>, missing: Reply) -> CmdResult {
    if !query.legacy {
        return Ok(Reply::Array(replies));
    }
    replies
        .into_iter()
        .filter(|r| !matches!(r, Reply::Nil))
        .last()
        .ok_or(missing)
}

/// The text of a value or of a list of values, as a bulk reply.
fn text_reply<T: serde::Serialize + ?Sized>(v: &T, layout: Layout<'_>) -> Reply {
    Reply::Bulk(json::to_text(v, layout).into())
}

/// JSON.SET key path value [NX | XX]
pub fn set(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, query) = (args[1], path(args[2])?);
    let (mut nx, mut xx) = (false, false);
    for opt in &args[4..] {
        if is(opt, "nx") && !nx && !xx {
            nx = true;
        } else if is(opt, "xx") && !nx && !xx {
            xx = true;
        } else {
            return Err(error("ERR syntax error"));
        }
    }
    let mut locked = ctx.lock(&args[1..2]);
    let exists = stored(&mut locked, key)?.is_some();
    if query.is_root() {
        let new = whole(args[3])?;
        if (exists && nx) || (!exists && xx) {
            return Ok(Reply::Nil);
        }
        put_root(&mut locked, key, new, exists);
        return Ok(Reply::OK);
    }
    let new = value(args[3])?;
    if !exists {
        return if xx {
            Ok(Reply::Nil)
        } else {
            Err(error(NOT_ROOT))
        };
    }
    let done = set_at(&mut locked, key, &query, new, !nx, !xx)?;
    Ok(if done { Reply::OK } else { Reply::Nil })
}

/// A whole document's text as the root writes take it (see [`Doc::parse`]).
fn whole(arg: &[u8]) -> Result<Doc, Reply> {
    Doc::parse(arg).map_err(error)
}

/// Writes a whole document: a new key, or in place of the existing one keeping the key's expiry
/// (as RedisJSON's in-place root write does).
fn put_root(locked: &mut Locked<'_>, key: &[u8], new: Doc, exists: bool) {
    if !exists {
        locked.set(key, Value::Json(Box::new(new)), 0);
    } else if let Some(Value::Json(doc)) = locked.get_mut(key).map(|e| &mut e.value) {
        **doc = new;
    }
}

/// JSON.SET's (and JSON.MSET's) write below the root of an existing document: replaces every
/// match (`replace`), or else adds the member a static path names (`add`). True when every target
/// was written, as JSON.SET answers OK only then.
fn set_at(
    locked: &mut Locked<'_>,
    key: &[u8],
    query: &Query,
    new: Json,
    replace: bool,
    add: bool,
) -> Result<bool, Reply> {
    let doc = doc(locked, key)?.ok_or_else(|| error(NO_KEY))?;
    if replace {
        let mut found: Vec<Vec<Step>> = query.select(doc).into_iter().map(|(at, _)| at).collect();
        if !found.is_empty() {
            json::outermost_in_mutation_order(&mut found);
            if found
                .iter()
                .any(|at| at.len() + json::depth(&new) >= MAX_DEPTH)
            {
                return Err(error(DEPTH));
            }
            if let Some(doc) = doc_mut(locked, key) {
                for at in &found {
                    if let Some(target) = json::at_mut(doc, at) {
                        *target = new.clone();
                    }
                }
            }
            return Ok(true);
        }
    }
    if !add {
        return Ok(false);
    }
    let Some((parent, last)) = query.split_last().map_err(error)? else {
        return Ok(false);
    };
    let json::path::LastStep::Key(name) = last else {
        return Err(error("ERR array index out of range"));
    };
    let parents: Vec<Vec<Step>> = parent
        .select(doc)
        .into_iter()
        .filter(|(_, v)| v.as_object().is_some_and(|m| !m.contains_key(&name)))
        .map(|(at, _)| at)
        .collect();
    if parents.is_empty() {
        return Ok(false);
    }
    if parents
        .iter()
        .any(|at| at.len() + 1 + json::depth(&new) >= MAX_DEPTH)
    {
        return Err(error(DEPTH));
    }
    if let Some(doc) = doc_mut(locked, key) {
        for at in &parents {
            if let Some(Json::Object(map)) = json::at_mut(doc, at) {
                map.insert(name.clone(), new.clone());
            }
        }
    }
    Ok(true)
}

/// One checked JSON.MSET triplet: a whole document, or a value for a path below the root.
enum Write {
    Whole(Doc),
    At(Query, Json),
}

/// JSON.MSET key path value [key path value ...]: every triplet is checked before any is written.
pub fn mset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if (args.len() - 1) % 3 != 0 {
        return Err(arity(args));
    }
    let keys: Vec<&[u8]> = args[1..].chunks(3).map(|t| t[0]).collect();
    let mut locked = ctx.lock(&keys);
    let mut triplets = Vec::new();
    for t in args[1..].chunks(3) {
        let query = path(t[1])?;
        let exists = stored(&mut locked, t[0])?.is_some();
        if !exists && !query.is_root() {
            return Err(error(NOT_ROOT));
        }
        if let (true, Some(doc)) = (!query.is_root(), doc(&mut locked, t[0])?) {
            // A path that matches nothing must be a static one, which JSON.MSET would add.
            if query.select(doc).is_empty() {
                query.split_last().map_err(error)?;
            }
        }
        let new = if query.is_root() {
            Write::Whole(whole(t[2])?)
        } else {
            Write::At(query, value(t[2])?)
        };
        triplets.push((t[0], new));
    }
    let mut all = true;
    for (key, new) in triplets {
        match new {
            Write::Whole(doc) => {
                let exists = stored(&mut locked, key)?.is_some();
                put_root(&mut locked, key, doc, exists);
            }
            Write::At(query, tree) => all &= set_at(&mut locked, key, &query, tree, true, true)?,
        }
    }
    Ok(if all { Reply::OK } else { Reply::Nil })
}

/// JSON.MERGE key path value: RFC 7396 merge at every match, or adds the member a static path
/// names.
pub fn merge(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (key, query) = (args[1], path(args[2])?);
    if args.len() > 4 {
        return Err(error("ERR syntax error"));
    }
    let mut locked = ctx.lock(&args[1..2]);
    let exists = stored(&mut locked, key)?.is_some();
    if !exists {
        let patch = whole(args[3])?;
        if !query.is_root() {
            return Err(error(NOT_ROOT));
        }
        locked.set(key, Value::Json(Box::new(patch)), 0);
        return Ok(Reply::OK);
    }
    let patch = value(args[3])?;
    let doc_now = doc(&mut locked, key)?.ok_or_else(|| error(NO_KEY))?;
    let found: Vec<(Vec<Step>, bool)> = query
        .select(doc_now)
        .into_iter()
        .map(|(at, v)| {
            let fits = json::merge_fits(v, &patch, at.len());
            (at, fits)
        })
        .collect();
    if query.is_root() || !found.is_empty() {
        let targets: Vec<Vec<Step>> = found
            .into_iter()
            .filter(|(_, fits)| *fits)
            .map(|(at, _)| at)
            .collect();
        if targets.is_empty() {
            return Ok(if query.is_root() {
                Reply::OK
            } else {
                Reply::Nil
            });
        }
        if let Some(doc) = doc_mut(&mut locked, key) {
            for at in &targets {
                if let Some(target) = json::at_mut(doc, at) {
                    json::merge(target, patch.clone());
                }
            }
        }
        return Ok(Reply::OK);
    }
    let done = set_at(&mut locked, key, &query, patch, false, true)?;
    Ok(if done { Reply::OK } else { Reply::Nil })
}

/// JSON.GET key [INDENT s] [NEWLINE s] [SPACE s] [FORMAT f] [path ...]
pub fn get(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let resp3 = ctx.conn.resp3;
    let mut layout = Layout::default();
    let mut expand: Option<bool> = None;
    let mut paths: Vec<&[u8]> = Vec::new();
    let mut i = 2;
    while i < args.len() {
        let arg = args[i];
        let next = || args.get(i + 1).copied().ok_or_else(|| arity(args));
        if is(arg, "indent") {
            layout.indent = Some(next()?);
        } else if is(arg, "newline") {
            layout.newline = Some(next()?);
        } else if is(arg, "space") {
            layout.space = Some(next()?);
        } else if is(arg, "format") {
            if !resp3 && paths.is_empty() {
                return Err(error("ERR FORMAT argument is not supported on RESP2"));
            }
            expand = match next()? {
                b"STRING" => None,
                b"EXPAND1" => Some(false),
                b"EXPAND" => Some(true),
                _ => return Err(error("ERR wrong reply format")),
            };
        } else if is(arg, "noescape") {
            i += 1;
            continue;
        } else {
            paths.push(arg);
            i += 1;
            continue;
        }
        i += 2;
    }
    if paths.is_empty() {
        paths.push(b".");
    }
    let mut locked = ctx.lock(&args[1..2]);
    let Some(stored) = stored(&mut locked, args[1])? else {
        return Ok(Reply::Nil);
    };
    if let (true, Some(full)) = (resp3, expand) {
        let doc = stored.tree();
        let mut out = Vec::new();
        for p in &paths {
            let q = path(p)?;
            out.push(Reply::Array(
                q.values(doc)
                    .into_iter()
                    .map(|v| resp3_value(v, full))
                    .collect(),
            ));
        }
        return Ok(Reply::Array(out));
    }
    if paths.len() == 1 {
        let q = path(paths[0])?;
        return single_text(&q, stored, layout).ok_or_else(|| error(NO_PATH));
    }
    let doc = stored.tree();
    let legacy = paths.iter().all(|p| path(p).is_ok_and(|q| q.legacy));
    let mut map = serde_json::Map::new();
    for p in &paths {
        // A path that does not parse is left out of the object, as RedisJSON leaves it out.
        let Ok(q) = path(p) else { continue };
        let found = q.values(doc);
        let name = String::from_utf8_lossy(p).into_owned();
        if legacy {
            let first = found.first().ok_or_else(|| error(NO_PATH))?;
            map.insert(name, (*first).clone());
        } else {
            map.insert(name, Json::Array(found.into_iter().cloned().collect()));
        }
    }
    Ok(text_reply(&map, layout))
}

/// One path's text: a legacy path's first match, a JSONPath's list of matches; None when a
/// legacy path matches nothing. The whole document in compact form is its stored text.
fn single_text(q: &Query, doc: &Doc, layout: Layout<'_>) -> Option<Reply> {
    if q.is_root() && layout.is_compact() {
        let text = doc.text();
        if q.legacy {
            return Some(Reply::Bulk(text.clone()));
        }
        let mut list = Vec::with_capacity(text.len() + 2);
        list.push(b'[');
        list.extend_from_slice(text);
        list.push(b']');
        return Some(Reply::Bulk(list.into()));
    }
    let found = q.values(doc.tree());
    if q.legacy {
        found.first().map(|v| text_reply(*v, layout))
    } else {
        Some(text_reply(&found, layout))
    }
}

/// A value in RESP3 for FORMAT EXPAND (`full`: every level) or EXPAND1 (scalars only, containers
/// as JSON text).
fn resp3_value(v: &Json, full: bool) -> Reply {
    match v {
        Json::Null => Reply::Nil,
        Json::Bool(b) => Reply::Bool(*b),
        Json::Number(n) => number_reply(n),
        Json::String(s) if full => Reply::bulk(s),
        Json::Array(items) if full => {
            Reply::Array(items.iter().map(|i| resp3_value(i, true)).collect())
        }
        Json::Object(map) if full => Reply::Map(
            map.iter()
                .map(|(k, v)| (Reply::bulk(k), resp3_value(v, true)))
                .collect(),
        ),
        _ => text_reply(v, Layout::default()),
    }
}

/// A number as an integer reply when it is one, else a double.
fn number_reply(n: &Number) -> Reply {
    match n.as_i64() {
        Some(i) if !n.is_f64() => Reply::Int(i),
        _ => Reply::Double(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// JSON.MGET key [key ...] path: one text per key, nil for a missing key, a key of another type
/// or a path that matches nothing (legacy) or does not parse.
pub fn mget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..args.len() - 1];
    let query = path(args[args.len() - 1]).ok();
    let mut locked = ctx.lock(keys);
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let reply = match (&query, stored(&mut locked, key)) {
            (Some(q), Ok(Some(doc))) => {
                single_text(q, doc, Layout::default()).unwrap_or(Reply::Nil)
            }
            _ => Reply::Nil,
        };
        out.push(reply);
    }
    Ok(Reply::Array(out))
}

/// JSON.DEL / JSON.FORGET key [path]: the number of values deleted; deleting the root, or the
/// last member or element of the root, deletes the key.
pub fn del(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // Arguments after the path are ignored, as RedisJSON ignores them.
    let query = path(args.get(2).copied().unwrap_or(b"."))?;
    let key = args[1];
    let mut locked = ctx.lock(&args[1..2]);
    if stored(&mut locked, key)?.is_none() {
        return Ok(Reply::Int(0));
    }
    if query.is_root() {
        locked.remove(key);
        return Ok(Reply::Int(1));
    }
    let doc_now = doc(&mut locked, key)?.ok_or_else(|| error(NO_KEY))?;
    let mut found: Vec<Vec<Step>> = query
        .select(doc_now)
        .into_iter()
        .map(|(at, _)| at)
        .collect();
    if found.is_empty() {
        return Ok(Reply::Int(0));
    }
    json::outermost_in_mutation_order(&mut found);
    let mut deleted = 0;
    let mut emptied = false;
    if let Some(doc) = doc_mut(&mut locked, key) {
        deleted = found.iter().filter(|at| json::remove_at(doc, at)).count();
        emptied = match &*doc {
            Json::Object(m) => m.is_empty(),
            Json::Array(a) => a.is_empty(),
            _ => false,
        };
    }
    if emptied {
        locked.remove(key);
    }
    Ok(Reply::Int(deleted as i64))
}

/// JSON.TYPE key [path]
pub fn type_(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let resp3 = ctx.conn.resp3;
    let text = args.get(2).copied().unwrap_or(b".");
    let mut locked = ctx.lock(&args[1..2]);
    let doc = doc(&mut locked, args[1])?;
    let reply = match Query::parse(std::str::from_utf8(text).unwrap_or("")) {
        // A legacy path that does not parse, or matches nothing, has no type.
        Ok(q) if q.legacy => doc
            .and_then(|d| q.values(d).first().map(|v| Reply::bulk(json::type_name(v))))
            .unwrap_or(Reply::Nil),
        _ if doc.is_none() => Reply::Nil,
        _ => {
            let q = path(text)?;
            let doc = doc.ok_or_else(|| error(NO_KEY))?;
            Reply::Array(
                q.values(doc)
                    .into_iter()
                    .map(|v| Reply::bulk(json::type_name(v)))
                    .collect(),
            )
        }
    };
    Ok(if resp3 {
        Reply::Array(vec![reply])
    } else {
        reply
    })
}

/// JSON.NUMINCRBY and JSON.NUMMULTBY key path number
pub fn numop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let multiply = is(args[0], "json.nummultby");
    let resp3 = ctx.conn.resp3;
    let query = path(args[2])?;
    let mut locked = ctx.lock(&args[1..2]);
    let found = locate(&mut locked, args[1], &query, Json::is_number)?;
    // RESP3 answers every path as a JSONPath (an array, nil for a non-number), as RedisJSON does.
    if query.legacy && !resp3 && found.iter().all(Option::is_none) {
        return Err(no_path_or("does not contains a number"));
    }
    // Every result first: an overflow anywhere changes nothing.
    let doc_now = doc(&mut locked, args[1])?.ok_or_else(|| error(NO_KEY))?;
    let mut results: Vec<Option<Number>> = Vec::with_capacity(found.len());
    for at in &found {
        let Some(at) = at else {
            results.push(None);
            continue;
        };
        let current = json::path::lookup(doc_now, at).and_then(Json::as_number);
        let Json::Number(operand) = operand(args[3])? else {
            return Err(error("bad input number"));
        };
        results.push(Some(arithmetic(current, &operand, multiply)?));
    }
    if results.iter().any(Option::is_some) {
        // Numbers never contain each other: the order of the writes does not matter.
        if let Some(doc) = doc_mut(&mut locked, args[1]) {
            for (at, n) in found.iter().zip(&results) {
                if let (Some(at), Some(n)) = (at, n) {
                    if let Some(target) = json::at_mut(doc, at) {
                        *target = Json::Number(n.clone());
                    }
                }
            }
        }
    }
    if resp3 {
        return Ok(Reply::Array(
            results
                .iter()
                .map(|n| n.as_ref().map_or(Reply::Nil, number_reply))
                .collect(),
        ));
    }
    if query.legacy {
        let last = results
            .iter()
            .flatten()
            .last()
            .ok_or_else(|| error(NO_PATH))?;
        return Ok(text_reply(last, Layout::default()));
    }
    let values: Vec<Json> = results
        .into_iter()
        .map(|n| n.map_or(Json::Null, Json::Number))
        .collect();
    Ok(text_reply(&values, Layout::default()))
}

/// One NUMINCRBY/NUMMULTBY step: integers stay integers (or overflow), anything else is an f64
/// that must stay finite.
fn arithmetic(current: Option<&Number>, operand: &Number, multiply: bool) -> Result<Number, Reply> {
    let current = current.ok_or_else(|| error(NOT_A_NUMBER))?;
    if let (Some(a), Some(b), false, false) = (
        current.as_i64(),
        operand.as_i64(),
        current.is_f64(),
        operand.is_f64(),
    ) {
        let r = if multiply {
            a.checked_mul(b)
        } else {
            a.checked_add(b)
        };
        return r.map(Number::from).ok_or_else(|| error(OVERFLOW));
    }
    let (a, b) = (
        current.as_f64().ok_or_else(|| error(NOT_A_NUMBER))?,
        operand.as_f64().ok_or_else(|| error(NOT_A_NUMBER))?,
    );
    let r = if multiply { a * b } else { a + b };
    Number::from_f64(r)
        .filter(|_| r.is_finite())
        .ok_or_else(|| error(NOT_A_NUMBER))
}

/// JSON.TOGGLE key path
pub fn toggle(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let query = path(args[2])?;
    let mut locked = ctx.lock(&args[1..2]);
    let found = locate(&mut locked, args[1], &query, Json::is_boolean)?;
    let replies = change_each(&mut locked, args[1], found, |target| {
        let now = !target.as_bool().unwrap_or(false);
        *target = Json::Bool(now);
        Reply::Int(i64::from(now))
    });
    if query.legacy {
        let last = replies
            .into_iter()
            .filter_map(|r| match r {
                Reply::Int(i) => Some(i),
                _ => None,
            })
            .last()
            .ok_or_else(|| no_path_or("not a bool"))?;
        return Ok(Reply::bulk(if last == 1 { "true" } else { "false" }));
    }
    Ok(Reply::Array(replies))
}

/// JSON.STRAPPEND key [path] value
pub fn strappend(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // With one argument after the key it is the value (at the root); arguments after the value
    // are ignored, as RedisJSON ignores them.
    let (query, text) = match args.len() {
        3 => (path(b".")?, args[2]),
        _ => (path(args[2])?, args[3]),
    };
    let mut locked = ctx.lock(&args[1..2]);
    let found = locate(&mut locked, args[1], &query, Json::is_string)?;
    if found.iter().all(Option::is_none) {
        return per_match_or_last(
            &query,
            found.iter().map(|_| Reply::Nil).collect(),
            no_path_or("not a string"),
        );
    }
    let suffix = match operand(text)? {
        Json::String(s) => s,
        _ => return Err(wrong_value("string")),
    };
    let replies = change_each(&mut locked, args[1], found, |target| match target {
        Json::String(s) => {
            s.push_str(&suffix);
            Reply::Int(s.len() as i64)
        }
        _ => Reply::Nil,
    });
    per_match_or_last(&query, replies, no_path_or("not a string"))
}

/// JSON.STRLEN key [path]
pub fn strlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let query = path(args.get(2).copied().unwrap_or(b"."))?;
    let mut locked = ctx.lock(&args[1..2]);
    let doc = doc(&mut locked, args[1])?;
    if query.legacy {
        let Some(doc) = doc else {
            return Ok(Reply::Nil);
        };
        return match query.values(doc).first() {
            None => Err(error(NO_PATH)),
            Some(Json::String(s)) => Ok(Reply::Int(s.len() as i64)),
            Some(_) => Err(wrong_value("string")),
        };
    }
    let doc = doc.ok_or_else(|| error(NO_KEY))?;
    Ok(Reply::Array(
        query
            .values(doc)
            .into_iter()
            .map(|v| {
                v.as_str()
                    .map_or(Reply::Nil, |s| Reply::Int(s.len() as i64))
            })
            .collect(),
    ))
}

/// The JSON values after `from`: at least one, each parsed before anything is looked up.
fn values_from(args: &[&[u8]], from: usize) -> Result<Vec<Json>, Reply> {
    if args.len() <= from {
        return Err(arity(args));
    }
    args[from..].iter().map(|a| value(a)).collect()
}

/// Whether adding `values` to arrays at the located paths stays within the nesting limit.
fn fits_depth(found: &[Option<Vec<Step>>], values: &[Json]) -> Result<(), Reply> {
    let deepest = values.iter().map(json::depth).max().unwrap_or(0);
    if found
        .iter()
        .flatten()
        .any(|at| at.len() + 1 + deepest >= MAX_DEPTH)
    {
        return Err(error(DEPTH));
    }
    Ok(())
}

/// JSON.ARRAPPEND key path value [value ...]
pub fn arrappend(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let query = path(args[2])?;
    let values = values_from(args, 3)?;
    let mut locked = ctx.lock(&args[1..2]);
    let found = locate(&mut locked, args[1], &query, Json::is_array)?;
    fits_depth(&found, &values)?;
    let replies = change_each(&mut locked, args[1], found, |target| match target {
        Json::Array(items) => {
            items.extend(values.iter().cloned());
            Reply::Int(items.len() as i64)
        }
        _ => Reply::Nil,
    });
    per_match_or_last(&query, replies, no_path_or("not an array"))
}

/// JSON.ARRINSERT key path index value [value ...]
pub fn arrinsert(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let query = path(args[2])?;
    let index = integer(args[3])?;
    let values = values_from(args, 4)?;
    let mut locked = ctx.lock(&args[1..2]);
    let found = locate(&mut locked, args[1], &query, Json::is_array)?;
    // Every target's index is checked before any insertion.
    let doc_now = doc(&mut locked, args[1])?.ok_or_else(|| error(NO_KEY))?;
    for at in found.iter().flatten() {
        let len = json::path::lookup(doc_now, at)
            .and_then(Json::as_array)
            .map_or(0, Vec::len) as i64;
        let at = if index < 0 {
            len.saturating_add(index)
        } else {
            index
        };
        if !(0..=len).contains(&at) {
            return Err(error("ERR index out of bounds"));
        }
    }
    fits_depth(&found, &values)?;
    let replies = change_each(&mut locked, args[1], found, |target| match target {
        Json::Array(items) => {
            let len = items.len() as i64;
            let at = if index < 0 { len + index } else { index } as usize;
            items.splice(at..at, values.iter().cloned());
            Reply::Int(items.len() as i64)
        }
        _ => Reply::Nil,
    });
    per_match_or_last(&query, replies, no_path_or("not an array"))
}

/// RedisJSON's start index: negative counts from the end (floored at 0), past the end is the last.
fn start_index(start: i64, len: i64) -> i64 {
    if start < 0 {
        (len + start).max(0)
    } else {
        start.min(len - 1)
    }
}

/// JSON.ARRINDEX key path value [start [stop]]
pub fn arrindex(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 6 {
        return Err(arity(args));
    }
    let query = path(args[2])?;
    let start = args.get(4).map_or(Ok(0), |a| integer(a))?;
    let stop = args.get(5).map_or(Ok(0), |a| integer(a))?;
    let needle = operand(args[3])?;
    let mut locked = ctx.lock(&args[1..2]);
    let doc = doc(&mut locked, args[1])?.ok_or_else(|| error(NO_PATH))?;
    let find = |v: &Json| -> Option<i64> {
        let items = v.as_array()?;
        let len = items.len() as i64;
        if len == 0 {
            return Some(-1);
        }
        let from = start_index(start, len);
        let to = match stop {
            0 => len,
            s if s < 0 => (len + s).max(0),
            s => s.min(len),
        };
        Some(
            (from..to)
                .find(|&i| items[i as usize] == needle)
                .unwrap_or(-1),
        )
    };
    let found = query.values(doc);
    if query.legacy {
        let first = found.first().ok_or_else(|| error(NO_PATH))?;
        return find(first)
            .map(Reply::Int)
            .ok_or_else(|| wrong_value("array"));
    }
    Ok(Reply::Array(
        found
            .into_iter()
            .map(|v| find(v).map_or(Reply::Nil, Reply::Int))
            .collect(),
    ))
}

/// JSON.ARRLEN key [path]
pub fn arrlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let query = path(args.get(2).copied().unwrap_or(b"."))?;
    let mut locked = ctx.lock(&args[1..2]);
    let Some(doc) = doc(&mut locked, args[1])? else {
        return if query.legacy {
            Ok(Reply::Nil)
        } else {
            Err(error(NO_KEY))
        };
    };
    let found = query.values(doc);
    let len = |v: &Json| v.as_array().map(|a| a.len() as i64);
    if query.legacy {
        let first = found.first().ok_or_else(|| error(NO_PATH))?;
        return len(first)
            .map(Reply::Int)
            .ok_or_else(|| no_path_or("not an array"));
    }
    Ok(Reply::Array(
        found
            .into_iter()
            .map(|v| len(v).map_or(Reply::Nil, Reply::Int))
            .collect(),
    ))
}

/// JSON.ARRPOP key [FORMAT f] [path [index]]
pub fn arrpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let resp3 = ctx.conn.resp3;
    let mut rest = &args[2..];
    let mut expand: Option<bool> = None;
    if rest.len() >= 2 && is(rest[0], "format") {
        expand = match rest[1] {
            b"STRINGS" => None,
            b"EXPAND1" => Some(false),
            b"EXPAND" => Some(true),
            _ => return Err(error("ERR wrong reply format")),
        };
        if !resp3 {
            return Err(error("ERR FORMAT argument is not supported on RESP2"));
        }
        rest = &rest[2..];
    }
    let (query, index) = match rest.first() {
        None => (path(b".")?, i64::MAX),
        // An index that is not a number pops the last element, as in RedisJSON.
        Some(p) => (
            path(p)?,
            rest.get(1)
                .and_then(|i| crate::protocol::parse_i64_strict(i))
                .unwrap_or(-1),
        ),
    };
    if query.legacy && expand.is_some() {
        return Err(error("Legacy paths are supported only with FORMAT STRINGS"));
    }
    let mut locked = ctx.lock(&args[1..2]);
    let mut found = locate(&mut locked, args[1], &query, Json::is_array)?;
    // A legacy path matching several values answers for the last array among them.
    let last_array = found.iter().rposition(Option::is_some);
    // An empty array pops nothing and is not a change.
    if let Some(doc) = doc(&mut locked, args[1])? {
        for at in found.iter_mut() {
            if at.as_ref().is_some_and(|p| {
                json::path::lookup(doc, p)
                    .and_then(Json::as_array)
                    .is_some_and(Vec::is_empty)
            }) {
                *at = None;
            }
        }
    }
    let any_array = found.iter().any(Option::is_some);
    let replies = change_each(&mut locked, args[1], found, |target| match target {
        // Empty arrays were left out above; one matched twice may be empty by now.
        Json::Array(items) if !items.is_empty() => {
            let at = start_index(index, items.len() as i64) as usize;
            let popped = items.remove(at);
            match expand {
                Some(full) => resp3_value(&popped, full),
                None => text_reply(&popped, Layout::default()),
            }
        }
        _ => Reply::Nil,
    });
    if query.legacy {
        if !any_array && !legacy_has_array(&mut locked, args[1], &query)? {
            return Err(no_path_or("not an array"));
        }
        return Ok(last_array
            .and_then(|at| replies.into_iter().nth(at))
            .unwrap_or(Reply::Nil));
    }
    Ok(Reply::Array(replies))
}

/// Whether a legacy path finds an array (possibly empty) in the document at `key`.
fn legacy_has_array(locked: &mut Locked<'_>, key: &[u8], query: &Query) -> Result<bool, Reply> {
    let doc = doc(locked, key)?.ok_or_else(|| error(NO_KEY))?;
    Ok(query.values(doc).into_iter().any(Json::is_array))
}

/// JSON.ARRTRIM key path start stop
pub fn arrtrim(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let query = path(args[2])?;
    let start = integer(args[3])?;
    let stop = integer(args[4])?;
    let mut locked = ctx.lock(&args[1..2]);
    let found = locate(&mut locked, args[1], &query, Json::is_array)?;
    let replies = change_each(&mut locked, args[1], found, |target| match target {
        Json::Array(items) => {
            let len = items.len() as i64;
            let clamp = |i: i64| -> i64 {
                if i < 0 {
                    len - len.min(i.saturating_neg())
                } else if len > 0 {
                    (len - 1).min(i)
                } else {
                    0
                }
            };
            let last = clamp(stop);
            let first = if start < 0 || start < len {
                clamp(start)
            } else {
                last + 1
            };
            if first > last || len == 0 {
                items.clear();
            } else {
                items.truncate(last as usize + 1);
                items.drain(..first as usize);
            }
            Reply::Int(items.len() as i64)
        }
        _ => Reply::Nil,
    });
    per_match_or_last(&query, replies, no_path_or("not an array"))
}

/// JSON.OBJKEYS key [path]
pub fn objkeys(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let query = path(args.get(2).copied().unwrap_or(b"."))?;
    let mut locked = ctx.lock(&args[1..2]);
    let keys = |v: &Json| {
        v.as_object()
            .map(|m| Reply::Array(m.keys().map(Reply::bulk).collect()))
    };
    let Some(doc) = doc(&mut locked, args[1])? else {
        return if query.legacy {
            Ok(Reply::Nil)
        } else {
            Err(error(NO_KEY))
        };
    };
    let found = query.values(doc);
    if query.legacy {
        return match found.first() {
            None => Ok(Reply::Nil),
            Some(v) => keys(v).ok_or_else(|| no_path_or("not an object")),
        };
    }
    Ok(Reply::Array(
        found
            .into_iter()
            .map(|v| keys(v).unwrap_or(Reply::Nil))
            .collect(),
    ))
}

/// JSON.OBJLEN key [path]
pub fn objlen(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let query = path(args.get(2).copied().unwrap_or(b"."))?;
    let mut locked = ctx.lock(&args[1..2]);
    let len = |v: &Json| v.as_object().map(|m| Reply::Int(m.len() as i64));
    let Some(doc) = doc(&mut locked, args[1])? else {
        return if query.legacy {
            Ok(Reply::Nil)
        } else {
            Err(no_path_or("not an object"))
        };
    };
    let found = query.values(doc);
    if query.legacy {
        return match found.first() {
            None => Ok(Reply::Nil),
            Some(v) => len(v).ok_or_else(|| wrong_value("object")),
        };
    }
    Ok(Reply::Array(
        found
            .into_iter()
            .map(|v| len(v).unwrap_or(Reply::Nil))
            .collect(),
    ))
}

/// JSON.CLEAR key [path]: empties arrays and objects and zeroes numbers; the count of values
/// that changed.
pub fn clear(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(arity(args));
    }
    let query = path(args.get(2).copied().unwrap_or(b"."))?;
    let mut locked = ctx.lock(&args[1..2]);
    let found = locate(&mut locked, args[1], &query, |v| match v {
        Json::Array(a) => !a.is_empty(),
        Json::Object(m) => !m.is_empty(),
        Json::Number(n) => n.as_f64() != Some(0.0),
        _ => false,
    })?;
    let replies = change_each(&mut locked, args[1], found, |target| {
        match target {
            Json::Array(a) => a.clear(),
            Json::Object(m) => m.clear(),
            _ => *target = Json::from(0),
        }
        Reply::Int(1)
    });
    Ok(Reply::Int(
        replies
            .iter()
            .filter(|r| matches!(r, Reply::Int(_)))
            .count() as i64,
    ))
}

/// JSON.RESP key [path]: the value as RESP: `[` then the elements for an array, `{` then members
/// and values for an object, true/false as status replies.
pub fn resp(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let query = path(args.get(2).copied().unwrap_or(b"."))?;
    let mut locked = ctx.lock(&args[1..2]);
    let Some(doc) = doc(&mut locked, args[1])? else {
        return Ok(Reply::Nil);
    };
    let found = query.values(doc);
    if query.legacy {
        return found
            .first()
            .map(|v| resp_value(v))
            .ok_or_else(|| error(NO_PATH));
    }
    Ok(Reply::Array(found.into_iter().map(resp_value).collect()))
}

fn resp_value(v: &Json) -> Reply {
    match v {
        Json::Null => Reply::Nil,
        Json::Bool(b) => Reply::Status(if *b { "true" } else { "false" }.into()),
        Json::Number(n) => number_reply(n),
        Json::String(s) => Reply::bulk(s),
        Json::Array(items) => Reply::Array(
            std::iter::once(Reply::Status("[".into()))
                .chain(items.iter().map(resp_value))
                .collect(),
        ),
        Json::Object(map) => Reply::Array(
            std::iter::once(Reply::Status("{".into()))
                .chain(
                    map.iter()
                        .flat_map(|(k, v)| [Reply::bulk(k), resp_value(v)]),
                )
                .collect(),
        ),
    }
}

/// JSON.DEBUG MEMORY key [path] | HELP
pub fn debug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if is(args[1], "help") {
        return Ok(Reply::Array(vec![
            Reply::bulk("MEMORY <key> [path] - reports memory usage"),
            Reply::bulk("HELP                - this message"),
        ]));
    }
    if !is(args[1], "memory") {
        return Err(error("ERR unknown subcommand - try `JSON.DEBUG HELP`"));
    }
    let key = *args.get(2).ok_or_else(|| arity(args))?;
    let query = path(args.get(3).copied().unwrap_or(b"."))?;
    let mut locked = ctx.lock(&[key]);
    let doc = doc(&mut locked, key)?;
    if query.legacy {
        let Some(doc) = doc else {
            return Ok(Reply::Int(0));
        };
        let first = *query.values(doc).first().ok_or_else(|| error(NO_PATH))?;
        return Ok(Reply::Int(json::memory(first) as i64));
    }
    Ok(Reply::Array(doc.map_or_else(Vec::new, |d| {
        query
            .values(d)
            .into_iter()
            .map(|v| Reply::Int(json::memory(v) as i64))
            .collect()
    })))
}
