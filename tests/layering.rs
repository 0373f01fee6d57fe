//! The layer rule of docs/architecture.md: a module imports only modules of its own layer or below.
//! This test reads every `crate::…` path in `src/` (comments left out) and fails when a file
//! reaches a layer above its own, unless that edge is listed in `tests/layering_exceptions.txt`,
//! the imports still to be moved down. It also fails when a listed edge is gone, so the list only
//! shrinks. Moving a module to another layer is a one-line change in `LAYERS`.
//!
//! `cargo test --release --test layering -- --nocapture` prints the size of the largest import
//! circle between files as well.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of `src/lib.rs` and its layer (0 lowest). See docs/architecture.md.
const LAYERS: &[(&str, u8)] = &[
    // L0: no knowledge of stmd above them.
    ("protocol", 0),
    ("glob", 0),
    ("clock", 0),
    ("number_format", 0),
    ("percpu", 0),
    ("config", 0),
    ("output_limit", 0),
    ("spec", 0),
    ("worker", 0),
    ("net", 0),
    // L1: data and its logic.
    ("store", 1),
    ("stm", 1),
    ("rdb", 1),
    ("scope_rows", 1),
    // L2: subsystems that take the store, the configuration and their own state.
    ("acl", 2),
    ("events", 2),
    ("scripting", 2),
    ("replication", 2),
    ("aof", 2),
    ("snapshot", 2),
    ("cluster", 2),
    ("pubsub", 2),
    ("clients", 2),
    ("metrics", 2),
    ("command_stats", 2),
    ("latency", 2),
    ("slowlog", 2),
    ("monitor", 2),
    ("tls", 2),
    ("supervise", 2),
    ("system_log", 2),
    ("search", 2),
    // L3: every command handler and the dispatch checks.
    ("commands", 3),
    // L4: builds the shared state and wires the runners.
    ("server", 4),
    ("connection", 4),
    // The metrics endpoint: an HTTP front end over the whole server state, as connection.rs is a
    // RESP one.
    ("exporter", 4),
    ("lib", 4),
    ("main", 4),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without comments (line and block) and without the contents of string literals: a
/// `crate::` in a doc comment or a message is not an import.
fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            if c == b'\\' && i + 1 < bytes.len() {
                i += 2;
                continue;
            }
            if c == b'"' {
                in_string = false;
                out.push('"');
            }
            i += 1;
        } else if bytes[i..].starts_with(b"//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if bytes[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < bytes.len() {
                if bytes[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if bytes[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'"' && (i == 0 || bytes[i - 1] != b'\'') {
            in_string = true;
            out.push('"');
            i += 1;
        } else {
            out.push(c as char);
            i += 1;
        }
    }
    out
}

fn ident_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Every path a file names after `crate::`, each as its segments (`crate::store::Store` gives
/// `["store", "Store"]`; `use crate::{a::b, c}` gives `["a", "b"]` and `["c"]`).
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before_ok = at == 0
            || !rest[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[at + "crate::".len()..];
        if !before_ok {
            continue;
        }
        if rest.starts_with('{') {
            let mut depth = 0;
            let mut end = 0;
            for (k, c) in rest.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let group = &rest[1..end];
            let mut depth = 0;
            let mut start = 0;
            for (k, c) in group.char_indices().chain([(group.len(), ',')]) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let item = group[start..k].trim();
                        if !item.is_empty() {
                            paths.push(segments(item));
                        }
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            paths.push(segments(rest));
        }
    }
    paths
}

/// The paths a file names through `super::` (repeated or not), made absolute from the file's own
/// module path (`src/store/held.rs`'s `super::shard` is `["store", "shard"]`).
fn super_paths(code: &str, own: &[String]) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("super::") {
        let preceded = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        rest = &rest[at + "super::".len()..];
        if preceded {
            continue;
        }
        let mut ups = 1;
        while let Some(next) = rest.strip_prefix("super::") {
            ups += 1;
            rest = next;
        }
        let Some(base) = own.len().checked_sub(ups) else {
            continue;
        };
        let mut relative = crate_paths(&format!("crate::{rest}"));
        relative.truncate(1);
        for tail in relative {
            let mut path = own[..base].to_vec();
            path.extend(tail);
            paths.push(path);
        }
    }
    paths
}

fn segments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    loop {
        let ident = ident_at(rest);
        if ident.is_empty() {
            break;
        }
        out.push(ident.to_string());
        rest = &rest[ident.len()..];
        match rest.strip_prefix("::") {
            Some(next) if !next.starts_with('{') => rest = next,
            _ => break,
        }
    }
    out
}

/// `src/store/held.rs` → ["store", "held"]; `src/store/mod.rs` → ["store"].
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src_dir()).expect("under src");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn layer(module: &str) -> u8 {
    LAYERS
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, layer)| *layer)
        .unwrap_or_else(|| panic!("module `{module}` has no layer in tests/layering.rs: add it"))
}

struct Graph {
    /// file (relative to src/) → the files it names.
    edges: BTreeMap<String, BTreeSet<String>>,
    /// "file -> module" for every import of a higher layer.
    upward: BTreeSet<String>,
}

fn read_graph() -> Graph {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    files.sort();
    let modules: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|f| {
            let name = f.strip_prefix(src_dir()).expect("under src");
            (module_of(f), name.to_string_lossy().into_owned())
        })
        .collect();
    let mut edges = BTreeMap::new();
    let mut upward = BTreeSet::new();
    for file in &files {
        let name = file
            .strip_prefix(src_dir())
            .expect("under src")
            .to_string_lossy()
            .into_owned();
        let own = module_of(file);
        let own_top = own.first().cloned().unwrap_or_default();
        let own_layer = layer(&own_top);
        let code = strip_comments(&std::fs::read_to_string(file).expect("read source"));
        let mut targets = BTreeSet::new();
        let mut paths = crate_paths(&code);
        paths.extend(super_paths(&code, &own));
        for path in paths {
            let Some(top) = path.first() else { continue };
            if !LAYERS.iter().any(|(m, _)| m == top) {
                continue; // a crate-level item (crate::Error) or a macro
            }
            if *top != own_top && layer(top) > own_layer {
                upward.insert(format!("{name} -> {top}"));
            }
            // The deepest file the path names.
            let target = (1..=path.len())
                .rev()
                .find_map(|n| modules.get(&path[..n]))
                .cloned();
            if let Some(target) = target {
                if target != name {
                    targets.insert(target);
                }
            }
        }
        edges.insert(name, targets);
    }
    Graph { edges, upward }
}

/// The largest strongly connected set of files (Tarjan's algorithm, iterative enough for ~300).
fn largest_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        best: Vec<String>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > s.best.len() {
                s.best = component;
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        best: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.best.sort();
    state.best
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let graph = read_graph();
    let listed: BTreeSet<String> = include_str!("layering_exceptions.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    let new: Vec<&String> = graph.upward.difference(&listed).collect();
    let gone: Vec<&String> = listed.difference(&graph.upward).collect();
    let circle = largest_circle(&graph.edges);
    println!(
        "upward imports: {} (listed {}); largest import circle: {} files: {}",
        graph.upward.len(),
        listed.len(),
        circle.len(),
        circle.join(", ")
    );
    assert!(
        new.is_empty(),
        "these files import a layer above their own (docs/architecture.md, Layers): {new:#?}"
    );
    assert!(
        gone.is_empty(),
        "these listed exceptions are gone: remove them from tests/layering_exceptions.txt: {gone:#?}"
    );
}

#[test]
fn the_path_reader_finds_grouped_and_nested_imports() {
    let code = strip_comments(
        "use crate::{store::{Store, Value}, protocol::Reply};\n// crate::server::Shared\nfn f() { crate::commands::err::WRONGTYPE; \"crate::acl\"; }",
    );
    let paths = crate_paths(&code);
    let firsts: Vec<&str> = paths.iter().map(|p| p[0].as_str()).collect();
    assert_eq!(firsts, ["store", "protocol", "commands"]);
    assert_eq!(paths[2], ["commands", "err", "WRONGTYPE"]);
}
