//! `FT.AGGREGATE`'s pipeline: the arguments after the query parsed into a [`Plan`], and the plan
//! run over the rows the query selected. Knows no index: the caller loads each row's fields
//! ([`Plan::referenced_fields`] says which under [`Load::Named`]) and checks the properties the
//! steps name against the index with [`Plan::validate`].
//!
//! As RediSearch (8.2) does: SORTBY and LIMIT form one step with the SORTBY/LIMIT before them
//! back to the last GROUPBY (so `SORTBY … APPLY … LIMIT` limits where it sorts); a SORTBY with
//! neither MAX nor LIMIT keeps 10 rows; a row lacking a sort key goes last in either direction;
//! a property a row lacks is an error in APPLY/FILTER unless read through `exists()`; text that
//! reads as a number is one in arithmetic and against a number, text against text compares
//! bytewise; an unaliased reducer is named `__generated_alias<name><args>` lowercased. Numbers
//! are written back by [`render`].

use bytes::Bytes;

/// One row: property name → value, in the order they were loaded or made.
pub type Row = Vec<(String, Value)>;

/// A property's value inside the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Number(f64),
    Text(Bytes),
    /// TOLIST's result.
    List(Vec<Value>),
}

/// Which fields each row starts with.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// None but those a step names (and the key, under `__key`, when a step names it).
    Named,
    /// `LOAD *`: every field of the document.
    All,
    /// `LOAD n @a @b AS c …`: (field or JSONPath, the name it gets).
    Fields(Vec<(String, String)>),
}

/// `WITHCURSOR [COUNT n] [MAXIDLE ms]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CursorOptions {
    pub count: usize,
    pub max_idle_ms: u64,
}

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// RediSearch's row cap for a SORTBY given neither MAX nor LIMIT.
const DEFAULT_SORT_LIMIT: usize = 10;
/// RediSearch's cursor defaults: rows per read, and the longest idle time (also the cap).
const DEFAULT_CURSOR_COUNT: usize = 1000;
const MAX_CURSOR_IDLE_MS: u64 = 300_000;
/// RANDOM_SAMPLE's largest sample.
const MAX_SAMPLE_SIZE: usize = 1000;
/// The dialects `DIALECT` accepts.
const MAX_DIALECT: u32 = 4;

/// `FT.AGGREGATE`'s arguments after the query: what the executor reads (pub fields) and the
/// pipeline [`Plan::run`] applies to the rows the query selected.
#[derive(Debug, Clone)]
pub struct Plan {
    pub load: Load,
    pub cursor: Option<CursorOptions>,
    pub params: HashMap<String, Bytes>,
    /// `DIALECT n`, 1 when not given ([`Plan::dialect_given`] tells, so the executor can apply
    /// the `DEFAULT_DIALECT` configuration instead).
    pub dialect: u32,
    pub dialect_given: bool,
    pub timeout_ms: Option<u64>,
    pub verbatim: bool,
    pub no_stopwords: bool,
    /// `ADDSCORES`: each row gets the document's score under `__score`.
    pub add_scores: bool,
    /// `SCORER name`.
    pub scorer: Option<String>,
    /// The first SORTBY's `MAX n`, so the executor may keep only that many rows.
    pub sortby_max: Option<usize>,
    steps: Vec<Step>,
}

#[derive(Debug, Clone)]
enum Step {
    Group {
        keys: Vec<String>,
        reducers: Vec<Reducer>,
    },
    Apply {
        expr: Expr,
        alias: String,
    },
    Filter(Expr),
    /// SORTBY and LIMIT: sort (when `sort` is not empty), then skip `offset` and keep `limit`.
    Arrange {
        sort: Vec<(String, bool)>,
        offset: usize,
        limit: Option<usize>,
    },
}

#[derive(Debug, Clone)]
struct Reducer {
    kind: ReducerKind,
    /// The property read (`None` for COUNT).
    source: Option<String>,
    alias: String,
}

#[derive(Debug, Clone)]
enum ReducerKind {
    Count,
    CountDistinct,
    CountDistinctish,
    Sum,
    Min,
    Max,
    Avg,
    ToList,
    StdDev,
    Quantile(f64),
    FirstValue { by: Option<(String, bool)> },
    RandomSample(usize),
}

/// A cursor over the arguments, for RediSearch's error texts.
struct Args<'a> {
    args: &'a [Bytes],
    pos: usize,
}

const NOARG: &str = "Expected an argument, but none provided";
const PARSE: &str = "Could not convert argument to expected type";
const ELIMIT: &str = "Value is outside acceptable bounds";

impl<'a> Args<'a> {
    fn next(&mut self) -> Option<&'a Bytes> {
        let a = self.args.get(self.pos);
        if a.is_some() {
            self.pos += 1;
        }
        a
    }

    fn peek_is(&self, word: &str) -> bool {
        self.args
            .get(self.pos)
            .is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    }

    fn eat(&mut self, word: &str) -> bool {
        let hit = self.peek_is(word);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn text(&mut self) -> Option<String> {
        self.next().map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// `n` then `n` arguments, as RediSearch's `AC_GetVarArgs`; the error is `AC_Strerror`'s.
    fn var_args(&mut self) -> Result<&'a [Bytes], &'static str> {
        let n = self.next().ok_or(NOARG)?;
        let n: usize = std::str::from_utf8(n)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(PARSE)?;
        if self.args.len() - self.pos < n {
            return Err(NOARG);
        }
        let out = &self.args[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// An unsigned integer (`at_least` its least value), RediSearch's texts otherwise.
    fn unsigned(&mut self, at_least: u64) -> Result<u64, &'static str> {
        let a = self.next().ok_or(NOARG)?;
        let n: i128 = std::str::from_utf8(a)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(PARSE)?;
        if n < i128::from(at_least) || n > i128::from(u64::MAX) {
            return Err(ELIMIT);
        }
        Ok(n as u64)
    }
}

fn bad_args(what: &str, why: &str) -> String {
    format!("Bad arguments for {what}: {why}")
}

fn text(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A property named with or without its `@`.
fn property(name: &str) -> String {
    name.trim_start_matches('@').to_string()
}

impl Plan {
    /// Parses the arguments after the index name and the query. Steps (GROUPBY, APPLY, FILTER,
    /// SORTBY, LIMIT) run in the order given; LOAD must come before them.
    pub fn parse(args: &[Bytes]) -> Result<Plan, String> {
        let mut plan = Plan {
            load: Load::Named,
            cursor: None,
            params: HashMap::new(),
            dialect: 1,
            dialect_given: false,
            timeout_ms: None,
            verbatim: false,
            no_stopwords: false,
            add_scores: false,
            scorer: None,
            sortby_max: None,
            steps: Vec::new(),
        };
        let mut params_given = false;
        let mut a = Args { args, pos: 0 };
        while a.pos < args.len() {
            let at = a.pos;
            if a.eat("VERBATIM") {
                plan.verbatim = true;
            } else if a.eat("NOSTOPWORDS") {
                plan.no_stopwords = true;
            } else if a.eat("ADDSCORES") {
                plan.add_scores = true;
            } else if a.eat("SCORER") {
                plan.scorer = Some(a.text().ok_or_else(|| bad_args("SCORER", NOARG))?);
            } else if a.eat("LOAD") {
                plan.parse_load(&mut a)?;
            } else if a.eat("TIMEOUT") {
                let t = a.text().ok_or("Need argument for TIMEOUT")?;
                plan.timeout_ms = Some(
                    t.parse::<u64>()
                        .map_err(|_| "TIMEOUT requires a non negative integer")?,
                );
            } else if a.eat("GROUPBY") {
                plan.parse_group(&mut a)?;
            } else if a.eat("APPLY") || a.eat("FILTER") {
                let is_apply = args[at].eq_ignore_ascii_case(b"APPLY");
                let source = a.text().ok_or_else(|| bad_args("APPLY/FILTER", NOARG))?;
                let expr = parse_expression(&source)?;
                if is_apply {
                    let alias = if a.eat("AS") {
                        a.text().ok_or("AS needs argument")?
                    } else {
                        source
                    };
                    plan.steps.push(Step::Apply { expr, alias });
                } else {
                    plan.steps.push(Step::Filter(expr));
                }
            } else if a.eat("SORTBY") {
                plan.parse_sortby(&mut a)?;
            } else if a.eat("LIMIT") {
                if args.len() - a.pos < 2 {
                    return Err("LIMIT requires two arguments".into());
                }
                let mut num = || {
                    a.text()
                        .and_then(|s| s.parse::<u64>().ok())
                        .ok_or("LIMIT needs two numeric arguments")
                };
                let (offset, limit) = (num()?, num()?);
                if limit == 0 && offset != 0 {
                    return Err("The `offset` of the LIMIT must be 0 when `num` is 0".into());
                }
                let (o, l) = (offset as usize, limit as usize);
                match plan.arrange_step() {
                    Some(Step::Arrange { offset, limit, .. }) => {
                        *offset = o;
                        *limit = Some(l);
                    }
                    _ => plan.steps.push(Step::Arrange {
                        sort: Vec::new(),
                        offset: o,
                        limit: Some(l),
                    }),
                }
            } else if a.eat("WITHCURSOR") {
                let mut cursor = CursorOptions {
                    count: DEFAULT_CURSOR_COUNT,
                    max_idle_ms: MAX_CURSOR_IDLE_MS,
                };
                loop {
                    if a.eat("COUNT") {
                        cursor.count = a.unsigned(1).map_err(|e| bad_args("COUNT", e))? as usize;
                    } else if a.eat("MAXIDLE") {
                        let idle = a.unsigned(1).map_err(|e| bad_args("MAXIDLE", e))?;
                        cursor.max_idle_ms = idle.min(MAX_CURSOR_IDLE_MS);
                    } else {
                        break;
                    }
                }
                plan.cursor = Some(cursor);
            } else if a.eat("PARAMS") {
                if params_given {
                    return Err(
                        "Multiple PARAMS are not allowed. Parameters can be defined only once"
                            .into(),
                    );
                }
                params_given = true;
                let pairs = a.var_args().map_err(|e| bad_args("PARAMS", e))?;
                if pairs.len() % 2 != 0 {
                    return Err("Parameters must be specified in PARAM VALUE pairs".into());
                }
                for pair in pairs.chunks(2) {
                    let name = text(&pair[0]);
                    if plan.params.contains_key(&name) {
                        return Err(format!("Duplicate parameter `{name}`"));
                    }
                    plan.params.insert(name, pair[1].clone());
                }
            } else if a.eat("DIALECT") {
                let d = a.text().ok_or("Need an argument for DIALECT")?;
                plan.dialect = d
                    .parse::<u32>()
                    .ok()
                    .filter(|d| (1..=MAX_DIALECT).contains(d))
                    .ok_or_else(|| {
                        format!("DIALECT requires a non negative integer >=1 and <= {MAX_DIALECT}")
                    })?;
                plan.dialect_given = true;
            } else {
                return Err(format!(
                    "Unknown argument `{}` at position {} for <main>",
                    text(&args[at]),
                    at + 1
                ));
            }
        }
        Ok(plan)
    }

    fn parse_load(&mut self, a: &mut Args) -> Result<(), String> {
        if self
            .steps
            .iter()
            .any(|s| !matches!(s, Step::Arrange { .. }))
        {
            return Err("LOAD cannot be applied after projectors or reducers".into());
        }
        if a.peek_is("*") {
            a.pos += 1;
            self.load = Load::All;
            return Ok(());
        }
        let fields = a.var_args().map_err(|e| {
            if e == PARSE {
                "Bad arguments for LOAD: Expected number of fields or `*`".to_string()
            } else {
                bad_args("LOAD", e)
            }
        })?;
        let mut loaded = Vec::new();
        let mut i = 0;
        while i < fields.len() {
            let field = property(&text(&fields[i]));
            i += 1;
            let mut name = field.clone();
            if fields.get(i).is_some_and(|f| f.eq_ignore_ascii_case(b"AS")) {
                let alias = fields
                    .get(i + 1)
                    .ok_or("LOAD path AS name - must be accompanied with NAME")?;
                if alias.eq_ignore_ascii_case(b"AS") {
                    return Err("Alias for LOAD cannot be `AS`".into());
                }
                name = text(alias);
                i += 2;
            }
            loaded.push((field, name));
        }
        match &mut self.load {
            Load::Fields(existing) => existing.extend(loaded),
            Load::All => {}
            load @ Load::Named => *load = Load::Fields(loaded),
        }
        Ok(())
    }

    fn parse_group(&mut self, a: &mut Args) -> Result<(), String> {
        let keys = a.var_args().map_err(|e| bad_args("GROUPBY", e))?;
        let mut group_keys = Vec::new();
        for k in keys {
            let k = text(k);
            let Some(name) = k.strip_prefix('@') else {
                return Err(format!(
                    "Bad arguments for GROUPBY: Unknown property `{k}`. Did you mean `@{k}`?"
                ));
            };
            group_keys.push(name.to_string());
        }
        let mut reducers = Vec::new();
        while a.eat("REDUCE") {
            let name = a.text().ok_or_else(|| bad_args("REDUCE", NOARG))?;
            let reducer_args = a.var_args().map_err(|e| bad_args(&name, e))?;
            let mut r = parse_reducer(&name, reducer_args)?;
            if a.eat("AS") {
                r.alias = a.text().ok_or_else(|| bad_args("AS", NOARG))?;
            }
            reducers.push(r);
        }
        self.steps.push(Step::Group {
            keys: group_keys,
            reducers,
        });
        Ok(())
    }

    fn parse_sortby(&mut self, a: &mut Args) -> Result<(), String> {
        let bad = "Bad SORTBY arguments".to_string();
        let items = a.var_args().map_err(|_| bad.clone())?;
        let mut sort: Vec<(String, bool)> = Vec::new();
        for item in items {
            let s = text(item);
            if let Some(name) = s.strip_prefix('@') {
                sort.push((name.to_string(), true));
            } else if let (Some(last), true) = (sort.last_mut(), s.eq_ignore_ascii_case("ASC")) {
                last.1 = true;
            } else if let (Some(last), true) = (sort.last_mut(), s.eq_ignore_ascii_case("DESC")) {
                last.1 = false;
            } else {
                return Err(format!("MISSING ASC or DESC after sort field ({s})"));
            }
        }
        let mut max = None;
        if a.eat("MAX") {
            // A 32-bit count, as RediSearch reads it: a larger number does not convert.
            let m = a.unsigned(0).map_err(|e| bad_args("MAX", e))?;
            if m > u64::from(u32::MAX) {
                return Err(bad_args("MAX", PARSE));
            }
            max = Some(m as usize);
            if self.sortby_max.is_none() {
                self.sortby_max = max;
            }
        }
        match self.arrange_step() {
            Some(Step::Arrange { sort: existing, .. }) if !existing.is_empty() => Err(
                "Multiple SORTBY steps are not allowed. Sort multiple fields in a single step"
                    .into(),
            ),
            Some(Step::Arrange {
                sort: existing,
                limit,
                ..
            }) => {
                *existing = sort;
                if max.is_some() {
                    *limit = max;
                }
                Ok(())
            }
            _ => {
                self.steps.push(Step::Arrange {
                    sort,
                    offset: 0,
                    limit: max,
                });
                Ok(())
            }
        }
    }

    /// The SORTBY/LIMIT step a new SORTBY or LIMIT joins: the last one not behind a GROUPBY.
    fn arrange_step(&mut self) -> Option<&mut Step> {
        for step in self.steps.iter_mut().rev() {
            match step {
                Step::Group { .. } => return None,
                Step::Arrange { .. } => return Some(step),
                _ => {}
            }
        }
        None
    }

    /// The properties the steps read from the documents (those before the first GROUPBY, and
    /// its keys and reducers' sources), so the executor knows what to load under
    /// [`Load::Named`]. Properties an earlier APPLY makes are left out.
    pub fn referenced_fields(&self) -> Vec<String> {
        let mut made: HashSet<&str> = HashSet::new();
        let mut out: Vec<String> = Vec::new();
        let mut add = |name: &str, made: &HashSet<&str>| {
            if !made.contains(name) && !out.iter().any(|o| o == name) {
                out.push(name.to_string());
            }
        };
        for step in &self.steps {
            match step {
                Step::Apply { expr, alias } => {
                    expr.properties(&mut |p| add(p, &made));
                    made.insert(alias);
                }
                Step::Filter(expr) => expr.properties(&mut |p| add(p, &made)),
                Step::Arrange { sort, .. } => sort.iter().for_each(|(p, _)| add(p, &made)),
                Step::Group { keys, reducers } => {
                    keys.iter().for_each(|k| add(k, &made));
                    for r in reducers {
                        r.source.iter().for_each(|s| add(s, &made));
                        if let ReducerKind::FirstValue { by: Some((b, _)) } = &r.kind {
                            add(b, &made);
                        }
                    }
                    break;
                }
            }
        }
        out
    }

    /// Checks every property a step reads exists at that point: before the first GROUPBY
    /// given by `known` (what LOAD loads and the SORTABLE fields, which RediSearch reads from
    /// its index) or, for GROUPBY and SORTBY, which load what they name, by `in_schema`; after
    /// it made by a GROUPBY or APPLY. RediSearch's texts for the first that does not.
    pub fn validate(
        &self,
        known: &dyn Fn(&str) -> bool,
        in_schema: &dyn Fn(&str) -> bool,
    ) -> Result<(), String> {
        let mut made: Option<HashSet<String>> = None;
        let mut applied: HashSet<String> = HashSet::new();
        let exists = |name: &str, made: &Option<HashSet<String>>, applied: &HashSet<String>| {
            applied.contains(name)
                || match made {
                    Some(m) => m.contains(name),
                    None => known(name),
                }
        };
        let loads = |name: &str, made: &Option<HashSet<String>>, applied: &HashSet<String>| {
            exists(name, made, applied) || (made.is_none() && in_schema(name))
        };
        for step in &self.steps {
            match step {
                Step::Apply { expr, alias } => {
                    let mut missing = None;
                    expr.properties(&mut |p| {
                        if missing.is_none() && !exists(p, &made, &applied) {
                            missing = Some(p.to_string());
                        }
                    });
                    if let Some(p) = missing {
                        return Err(format!("Property `{p}` not loaded nor in pipeline"));
                    }
                    applied.insert(alias.clone());
                }
                Step::Filter(expr) => {
                    let mut missing = None;
                    expr.properties(&mut |p| {
                        if missing.is_none() && !exists(p, &made, &applied) {
                            missing = Some(p.to_string());
                        }
                    });
                    if let Some(p) = missing {
                        return Err(format!("Property `{p}` not loaded nor in pipeline"));
                    }
                }
                Step::Arrange { sort, .. } => {
                    if let Some((p, _)) = sort.iter().find(|(p, _)| !loads(p, &made, &applied)) {
                        return Err(format!("Property `{p}` not loaded nor in schema"));
                    }
                }
                Step::Group { keys, reducers } => {
                    if let Some(k) = keys.iter().find(|k| !loads(k, &made, &applied)) {
                        return Err(format!("No such property `{k}`"));
                    }
                    for r in reducers {
                        if let Some(s) = r.source.as_ref().filter(|s| !loads(s, &made, &applied)) {
                            return Err(format!(
                                "Property is not present in document or pipeline: `{s}`"
                            ));
                        }
                    }
                    let mut next: HashSet<String> = keys.iter().cloned().collect();
                    next.extend(reducers.iter().map(|r| r.alias.clone()));
                    made = Some(next);
                    applied.clear();
                }
            }
        }
        Ok(())
    }

    /// Runs the steps over the rows (the documents', in the query's order), in order. A row an
    /// APPLY or FILTER cannot evaluate for lack of a property is dropped with a warning, as
    /// RediSearch does; any other evaluation error fails the whole run.
    pub fn run(&self, rows: Vec<Row>) -> Result<Ran, String> {
        let mut rows: Vec<(Option<usize>, Row)> = rows
            .into_iter()
            .enumerate()
            .map(|(i, r)| (Some(i), r))
            .collect();
        let mut ran = Ran {
            rows: Vec::new(),
            ordinals: Vec::new(),
            groups: None,
            sorted: false,
            warnings: Vec::new(),
        };
        let warn = |name: String, ran: &mut Ran| {
            let w = format!("{name}: has no value, consider using EXISTS if applicable");
            if !ran.warnings.contains(&w) {
                ran.warnings.push(w);
            }
        };
        for step in &self.steps {
            rows = match step {
                Step::Group { keys, reducers } => {
                    let grouped = group(rows.into_iter().map(|(_, r)| r).collect(), keys, reducers);
                    ran.groups = Some(grouped.len());
                    grouped.into_iter().map(|r| (None, r)).collect()
                }
                Step::Apply { expr, alias } => {
                    let mut kept = Vec::with_capacity(rows.len());
                    for (at, mut row) in rows {
                        match expr.eval(&row) {
                            Ok(v) => {
                                set(&mut row, alias, v);
                                kept.push((at, row));
                            }
                            Err(Fail::Missing(name)) => warn(name, &mut ran),
                            Err(Fail::Error(e)) => return Err(e),
                        }
                    }
                    kept
                }
                Step::Filter(expr) => {
                    let mut kept = Vec::with_capacity(rows.len());
                    for (at, row) in rows {
                        match expr.eval(&row) {
                            Ok(v) if truthy(&v) => kept.push((at, row)),
                            Ok(_) => {}
                            Err(Fail::Missing(name)) => warn(name, &mut ran),
                            Err(Fail::Error(e)) => return Err(e),
                        }
                    }
                    kept
                }
                Step::Arrange {
                    sort,
                    offset,
                    limit,
                } => {
                    let mut limit = *limit;
                    if !sort.is_empty() {
                        ran.sorted = true;
                        rows.sort_by(|a, b| compare_rows(&a.1, &b.1, sort));
                        if limit.is_none() {
                            limit = Some(DEFAULT_SORT_LIMIT.saturating_sub(*offset));
                        }
                    }
                    rows.into_iter()
                        .skip(*offset)
                        .take(limit.unwrap_or(usize::MAX))
                        .collect()
                }
            };
        }
        let order = self.property_order();
        let place = |name: &str| order.iter().position(|o| o == name).unwrap_or(usize::MAX);
        for (at, mut row) in rows {
            row.sort_by_key(|(name, _)| place(name));
            ran.ordinals.push(at);
            ran.rows.push(row);
        }
        Ok(ran)
    }

    /// The order of a row's properties, as RediSearch gives them: the order in which the
    /// pipeline first names them (LOAD's, then each step's inputs and outputs; a GROUPBY starts
    /// over with its keys and reducers); a property never named (`LOAD *`'s fields, `__score`,
    /// a KNN distance) comes after, in the order it was loaded.
    fn property_order(&self) -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        fn add(order: &mut Vec<String>, name: &str) {
            if !order.iter().any(|o| o == name) {
                order.push(name.to_string());
            }
        }
        if let Load::Fields(loaded) = &self.load {
            loaded.iter().for_each(|(_, name)| add(&mut order, name));
        }
        for step in &self.steps {
            match step {
                Step::Apply { expr, alias } => {
                    expr.properties(&mut |p| add(&mut order, p));
                    add(&mut order, alias);
                }
                Step::Filter(expr) => expr.properties(&mut |p| add(&mut order, p)),
                Step::Arrange { sort, .. } => sort.iter().for_each(|(p, _)| add(&mut order, p)),
                Step::Group { keys, reducers } => {
                    order.clear();
                    keys.iter().for_each(|k| add(&mut order, k));
                    reducers.iter().for_each(|r| add(&mut order, &r.alias));
                }
            }
        }
        order
    }
}

/// What [`Plan::run`] gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    pub rows: Vec<Row>,
    /// Per row, the position of the document it came from among the input rows (None for a
    /// GROUPBY's rows).
    pub ordinals: Vec<Option<usize>>,
    /// The number of groups the last GROUPBY made.
    pub groups: Option<usize>,
    /// True when a SORTBY sorted the rows.
    pub sorted: bool,
    /// RediSearch's warnings (RESP3's `warning`), one per property some row lacked.
    pub warnings: Vec<String>,
}

fn get<'r>(row: &'r Row, name: &str) -> Option<&'r Value> {
    row.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// Sets a row's property: in its place when the row has it, else last.
pub fn set(row: &mut Row, name: &str, value: Value) {
    match row.iter_mut().find(|(k, _)| k == name) {
        Some(slot) => slot.1 = value,
        None => row.push((name.to_string(), value)),
    }
}

/// SORTBY's order: a row missing a key goes after the others whatever the direction.
fn compare_rows(a: &Row, b: &Row, sort: &[(String, bool)]) -> Ordering {
    for (key, ascending) in sort {
        let (va, vb) = (
            get(a, key).filter(|v| **v != Value::Null),
            get(b, key).filter(|v| **v != Value::Null),
        );
        let ord = match (va, vb) {
            (None, None) => continue,
            (Some(_), None) => return Ordering::Less,
            (None, Some(_)) => return Ordering::Greater,
            (Some(x), Some(y)) => compare(x, y),
        };
        if ord != Ordering::Equal {
            return if *ascending { ord } else { ord.reverse() };
        }
    }
    Ordering::Equal
}

/// RediSearch's value order: numbers numerically, text bytewise, a number against text that
/// reads as a number numerically (otherwise as text), null before everything.
fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Value::Text(x), Value::Text(y)) => x.as_ref().cmp(y.as_ref()),
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        (Value::Number(x), other) | (other, Value::Number(x)) => {
            let flipped = !matches!(a, Value::Number(_));
            let ord = match to_number(other) {
                Some(y) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
                None => render(&Value::Number(*x))
                    .as_ref()
                    .cmp(render(other).as_ref()),
            };
            if flipped {
                ord.reverse()
            } else {
                ord
            }
        }
        (Value::List(x), Value::List(y)) => match (x.first(), y.first()) {
            (Some(p), Some(q)) => compare(p, q),
            _ => x.len().cmp(&y.len()),
        },
        (x, y) => render(x).as_ref().cmp(render(y).as_ref()),
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    compare(a, b) == Ordering::Equal
}

/// A value as a number: numbers, and text that reads wholly as one.
fn to_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => Some(*n),
        Value::Text(t) => {
            let s = std::str::from_utf8(t).ok()?.trim();
            match s.to_ascii_lowercase().as_str() {
                "inf" | "+inf" => Some(f64::INFINITY),
                "-inf" => Some(f64::NEG_INFINITY),
                _ => s.parse::<f64>().ok().filter(|n| !n.is_nan()),
            }
        }
        _ => None,
    }
}

/// RediSearch's truth: a non-zero number, non-empty text or list; null is false.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Number(n) => *n != 0.0,
        Value::Text(t) => !t.is_empty(),
        Value::List(l) => !l.is_empty(),
    }
}

/// How a value is written in a reply: an integral number without decimals (`3`), any other as
/// C's `%.12g` (`0.333333333333`, `1e+20`), text as is; a list's items joined by `,`; null
/// as empty (the executor replies nil for it).
pub fn render(value: &Value) -> Bytes {
    match value {
        Value::Null => Bytes::new(),
        Value::Text(t) => t.clone(),
        Value::Number(n) => Bytes::from(format_number(*n)),
        Value::List(items) => {
            let parts: Vec<Bytes> = items.iter().map(render).collect();
            Bytes::from(parts.join(&b","[..]))
        }
    }
}

fn format_number(n: f64) -> String {
    if n.is_nan() {
        return "nan".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "inf" } else { "-inf" }.into();
    }
    if n == n.trunc() && n.abs() < 9.2e18 {
        return format!("{}", n as i64);
    }
    // %.12g: 12 significant digits, exponent form when the exponent is < -4 or >= 12,
    // trailing zeros dropped.
    let sci = format!("{n:.11e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..12).contains(&exp) {
        let m = mantissa.trim_end_matches('0').trim_end_matches('.');
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{m}e{sign}{:02}", exp.abs());
    }
    let decimals = (11 - exp).max(0) as usize;
    let fixed = format!("{n:.decimals$}");
    if fixed.contains('.') {
        fixed
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        fixed
    }
}

fn parse_reducer(name: &str, args: &[Bytes]) -> Result<Reducer, String> {
    let upper = name.to_ascii_uppercase();
    let missing = || format!("Missing arguments for {name}");
    let unknown = |at: usize| {
        format!(
            "Unknown argument `{}` at position {} for {name}",
            text(&args[at]),
            at
        )
    };
    let source = args.first().map(|s| property(&text(s)));
    let one_source = |kind: ReducerKind| -> Result<(ReducerKind, Option<String>), String> {
        match args.len() {
            0 => Err(missing()),
            1 => Ok((kind, source.clone())),
            _ => Err(unknown(1)),
        }
    };
    let (kind, source) = match upper.as_str() {
        "COUNT" => {
            if !args.is_empty() {
                return Err("Count accepts 0 values only".into());
            }
            (ReducerKind::Count, None)
        }
        "COUNT_DISTINCT" => one_source(ReducerKind::CountDistinct)?,
        "COUNT_DISTINCTISH" => one_source(ReducerKind::CountDistinctish)?,
        "SUM" => one_source(ReducerKind::Sum)?,
        "MIN" => one_source(ReducerKind::Min)?,
        "MAX" => one_source(ReducerKind::Max)?,
        "AVG" => one_source(ReducerKind::Avg)?,
        "TOLIST" => one_source(ReducerKind::ToList)?,
        "STDDEV" => one_source(ReducerKind::StdDev)?,
        "QUANTILE" => {
            if args.len() < 2 {
                return Err(missing());
            }
            let q = std::str::from_utf8(&args[1])
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|q| (0.0..=1.0).contains(q))
                .ok_or("Percentage must be between 0.0 and 1.0")?;
            if args.len() > 3 {
                return Err(unknown(3));
            }
            (ReducerKind::Quantile(q), source)
        }
        "RANDOM_SAMPLE" => {
            if args.len() < 2 {
                return Err(missing());
            }
            let n = std::str::from_utf8(&args[1])
                .ok()
                .and_then(|s| s.parse::<usize>().ok())
                .ok_or_else(|| bad_args("<sample size>", PARSE))?;
            if n > MAX_SAMPLE_SIZE {
                return Err("Sample size too large".into());
            }
            if args.len() > 2 {
                return Err(unknown(2));
            }
            (ReducerKind::RandomSample(n), source)
        }
        "FIRST_VALUE" => {
            if args.is_empty() {
                return Err(missing());
            }
            let mut by = None;
            let mut i = 1;
            if args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"BY")) {
                let key = args.get(2).ok_or_else(missing)?;
                let mut ascending = true;
                i = 3;
                if let Some(dir) = args.get(3) {
                    if dir.eq_ignore_ascii_case(b"ASC") {
                        i = 4;
                    } else if dir.eq_ignore_ascii_case(b"DESC") {
                        ascending = false;
                        i = 4;
                    }
                }
                by = Some((property(&text(key)), ascending));
            }
            if i < args.len() {
                return Err(unknown(i));
            }
            (ReducerKind::FirstValue { by }, source)
        }
        _ => return Err(format!("No such reducer: {name}")),
    };
    // RediSearch's name for an unaliased reducer: the function and its arguments, `@`s dropped,
    // lowercased.
    let joined: Vec<String> = args.iter().map(|a| property(&text(a))).collect();
    let alias = format!("__generated_alias{name}{}", joined.join(",")).to_lowercase();
    Ok(Reducer {
        kind,
        source,
        alias,
    })
}

/// GROUPBY: one row per distinct combination of the keys (in first-seen order), with the
/// keys' values then each reducer's result.
fn group(rows: Vec<Row>, keys: &[String], reducers: &[Reducer]) -> Vec<Row> {
    let mut order: Vec<Vec<Value>> = Vec::new();
    let mut members: HashMap<Vec<Bytes>, (usize, Vec<Row>)> = HashMap::new();
    for row in rows {
        let values: Vec<Value> = keys
            .iter()
            .map(|k| get(&row, k).cloned().unwrap_or(Value::Null))
            .collect();
        // Null and empty text are different groups: each key's identity is a marker byte (0 for
        // null, 1 otherwise) then the rendered value.
        let id: Vec<Bytes> = values
            .iter()
            .map(|v| match v {
                Value::Null => Bytes::from_static(b"\x00null"),
                v => {
                    let mut b = b"\x01".to_vec();
                    b.extend_from_slice(&render(v));
                    Bytes::from(b)
                }
            })
            .collect();
        let entry = members.entry(id).or_insert_with(|| {
            order.push(values);
            (order.len() - 1, Vec::new())
        });
        entry.1.push(row);
    }
    let mut groups: Vec<(usize, Vec<Row>)> = members.into_values().collect();
    groups.sort_by_key(|(i, _)| *i);
    groups
        .into_iter()
        .map(|(i, rows)| {
            let mut out: Row = keys.iter().cloned().zip(order[i].iter().cloned()).collect();
            for r in reducers {
                out.push((r.alias.clone(), reduce(r, &rows)));
            }
            out
        })
        .collect()
}

fn reduce(r: &Reducer, rows: &[Row]) -> Value {
    let values = || {
        rows.iter().filter_map(|row| {
            r.source
                .as_deref()
                .and_then(|s| get(row, s))
                .filter(|v| **v != Value::Null)
        })
    };
    let numbers = || values().filter_map(to_number);
    let distinct = || {
        let mut seen = HashSet::new();
        values()
            .filter(|v| seen.insert(render(v)))
            .cloned()
            .collect::<Vec<Value>>()
    };
    match &r.kind {
        ReducerKind::Count => Value::Number(rows.len() as f64),
        ReducerKind::CountDistinct | ReducerKind::CountDistinctish => {
            Value::Number(distinct().len() as f64)
        }
        // As RediSearch 2.10 (the stack reference) reduces: a group without a value sums,
        // averages, minimizes and maximizes to 0, and AVG divides by every row of the group,
        // those lacking the value too.
        ReducerKind::Sum => Value::Number(numbers().sum()),
        ReducerKind::Avg => Value::Number(numbers().sum::<f64>() / rows.len().max(1) as f64),
        ReducerKind::Min => Value::Number(numbers().reduce(f64::min).unwrap_or(0.0)),
        ReducerKind::Max => Value::Number(numbers().reduce(f64::max).unwrap_or(0.0)),
        ReducerKind::ToList => Value::List(distinct()),
        ReducerKind::StdDev => {
            let xs: Vec<f64> = numbers().collect();
            if xs.len() < 2 {
                return Value::Number(0.0);
            }
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
            Value::Number(var.sqrt())
        }
        ReducerKind::Quantile(q) => {
            let mut xs: Vec<f64> = numbers().collect();
            if xs.is_empty() {
                return Value::Number(0.0);
            }
            xs.sort_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
            // The nearest rank, ⌈q·n⌉ (RediSearch 2.10's answer on small groups: the median
            // of 30 and 40 is 30).
            let rank = (q * xs.len() as f64).ceil() as usize;
            Value::Number(xs[rank.clamp(1, xs.len()) - 1])
        }
        ReducerKind::FirstValue { by } => {
            let Some(source) = r.source.as_deref() else {
                return Value::Null;
            };
            let pick = match by {
                None => rows.first(),
                Some((key, ascending)) => {
                    let with_key = rows
                        .iter()
                        .filter(|row| get(row, key).is_some_and(|v| *v != Value::Null));
                    let best = if *ascending {
                        with_key.min_by(|a, b| compare_key(a, b, key))
                    } else {
                        with_key.max_by(|a, b| compare_key(a, b, key).then(Ordering::Greater))
                    };
                    best.or(rows.first())
                }
            };
            pick.and_then(|row| get(row, source).cloned())
                .unwrap_or(Value::Null)
        }
        ReducerKind::RandomSample(n) => {
            use rand::seq::SliceRandom;
            let all: Vec<Value> = values().cloned().collect();
            let mut rng = rand::thread_rng();
            Value::List(all.choose_multiple(&mut rng, *n).cloned().collect())
        }
    }
}

fn compare_key(a: &Row, b: &Row, key: &str) -> Ordering {
    match (get(a, key), get(b, key)) {
        (Some(x), Some(y)) => compare(x, y),
        _ => Ordering::Equal,
    }
}

/// An APPLY or FILTER expression.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Literal(Value),
    Property(String),
    /// `+ - * / % ^` over numbers.
    Arith(u8, Box<Expr>, Box<Expr>),
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Call(&'static str, Vec<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// The functions served: name, least and most arguments (`usize::MAX`: any).
const FUNCTIONS: &[(&str, usize, usize)] = &[
    ("lower", 1, 1),
    ("upper", 1, 1),
    ("substr", 3, 3),
    ("format", 1, usize::MAX),
    ("split", 1, 3),
    ("strlen", 1, 1),
    ("startswith", 2, 2),
    ("contains", 2, 2),
    ("exists", 1, 1),
    ("case", 3, 3),
    ("to_number", 1, 1),
    ("to_str", 1, 1),
    ("matched_terms", 0, 1),
    ("log", 1, 1),
    ("log2", 1, 1),
    ("exp", 1, 1),
    ("floor", 1, 1),
    ("ceil", 1, 1),
    ("abs", 1, 1),
    ("sqrt", 1, 1),
    ("timefmt", 1, 2),
    ("parsetime", 2, 2),
    ("hour", 1, 1),
    ("minute", 1, 1),
    ("day", 1, 1),
    ("month", 1, 1),
    ("monthofyear", 1, 1),
    ("year", 1, 1),
    ("dayofmonth", 1, 1),
    ("dayofweek", 1, 1),
    ("dayofyear", 1, 1),
];

#[derive(Debug, Clone, PartialEq)]
enum ETok {
    Num(f64),
    Str(String),
    Prop(String),
    Symbol(String),
    Op(&'static str),
}

/// Splits an expression into tokens with their offsets.
fn lex_expression(src: &str) -> Result<Vec<(ETok, usize, String)>, String> {
    let s = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    const OPS: [&str; 19] = [
        "==", "!=", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "^", "<", ">", "!", "(", ")",
        ",", "=",
    ];
    while i < s.len() {
        let c = s[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // A sign belongs to a number only where an operand is expected (`1-2` is a subtraction).
        let operand_expected = !matches!(
            out.last(),
            Some((
                ETok::Num(_) | ETok::Str(_) | ETok::Prop(_) | ETok::Symbol(_),
                _,
                _
            )) | Some((ETok::Op(")"), _, _))
        );
        let signed = (c == b'-' || c == b'+') && operand_expected;
        let body = if signed { i + 1 } else { i };
        if body < s.len() && (s[body].is_ascii_digit() || s[body] == b'.') || {
            let rest = &s[body..];
            rest.len() >= 3
                && rest[..3].eq_ignore_ascii_case(b"inf")
                && (signed || c == b'i')
                && !rest
                    .get(3)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        } {
            let mut j = body;
            if s[j..].len() >= 3 && s[j..j + 3].eq_ignore_ascii_case(b"inf") {
                j += 3;
            } else {
                while j < s.len() && (s[j].is_ascii_digit() || s[j] == b'.') {
                    j += 1;
                }
                if j < s.len() && (s[j] == b'e' || s[j] == b'E') {
                    let mut k = j + 1;
                    if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
                        k += 1;
                    }
                    if k < s.len() && s[k].is_ascii_digit() {
                        while k < s.len() && s[k].is_ascii_digit() {
                            k += 1;
                        }
                        j = k;
                    }
                }
            }
            let text = &src[start..j];
            let lower = text.to_ascii_lowercase();
            let n = match lower.trim_start_matches('+') {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                t => t
                    .parse::<f64>()
                    .map_err(|_| format!("Syntax error at offset {start} near '{text}'"))?,
            };
            out.push((ETok::Num(n), start, text.to_string()));
            i = j;
            continue;
        }
        if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            let mut value = Vec::new();
            loop {
                match s.get(j) {
                    None | Some(b'\n') => {
                        return Err(format!(
                            "Syntax error at offset {start} near '{}'",
                            &src[start..j]
                        ))
                    }
                    Some(&b'\\') if j + 1 < s.len() => {
                        value.push(s[j + 1]);
                        j += 2;
                    }
                    Some(&q) if q == c => break,
                    Some(&b) => {
                        value.push(b);
                        j += 1;
                    }
                }
            }
            let raw = src[start..=j].to_string();
            out.push((
                ETok::Str(String::from_utf8_lossy(&value).into_owned()),
                start,
                raw,
            ));
            i = j + 1;
            continue;
        }
        if c == b'@' {
            let mut j = i + 1;
            let mut name = Vec::new();
            while j < s.len() {
                if s[j] == b'\\'
                    && j + 1 < s.len()
                    && (s[j + 1].is_ascii_punctuation() || s[j + 1].is_ascii_whitespace())
                {
                    name.push(s[j + 1]);
                    j += 2;
                } else if s[j] == b'_'
                    || !(s[j].is_ascii_punctuation()
                        || s[j].is_ascii_whitespace()
                        || s[j].is_ascii_control())
                {
                    name.push(s[j]);
                    j += 1;
                } else {
                    break;
                }
            }
            if name.is_empty() {
                return Err(format!("Syntax error at offset {start} near '@'"));
            }
            out.push((
                ETok::Prop(String::from_utf8_lossy(&name).into_owned()),
                start,
                src[start..j].to_string(),
            ));
            i = j;
            continue;
        }
        if c.is_ascii_alphabetic() {
            let mut j = i;
            while j < s.len() && (s[j].is_ascii_alphanumeric() || s[j] == b'_') {
                j += 1;
            }
            out.push((
                ETok::Symbol(src[start..j].to_string()),
                start,
                src[start..j].to_string(),
            ));
            i = j;
            continue;
        }
        match OPS.iter().find(|op| s[i..].starts_with(op.as_bytes())) {
            Some(&"=") | None => {
                let end = src[start..]
                    .chars()
                    .next()
                    .map_or(start + 1, |ch| start + ch.len_utf8());
                return Err(format!(
                    "Syntax error at offset {start} near '{}'",
                    &src[start..end]
                ));
            }
            Some(op) => {
                out.push((ETok::Op(op), start, op.to_string()));
                i += op.len();
            }
        }
    }
    Ok(out)
}

/// Parses an APPLY/FILTER expression. Precedence, loosest first: `||`, `&&`, `!`,
/// comparisons (not chained), `+ -`, `* / %`, `^` (right-associative).
fn parse_expression(src: &str) -> Result<Expr, String> {
    let tokens = lex_expression(src)?;
    let mut p = ExprParser {
        tokens,
        pos: 0,
        len: src.len(),
    };
    let e = p.or()?;
    if p.pos < p.tokens.len() {
        return Err(p.error());
    }
    Ok(e)
}

struct ExprParser {
    tokens: Vec<(ETok, usize, String)>,
    pos: usize,
    len: usize,
}

impl ExprParser {
    /// RediSearch's text: the offset of the failing token (of the last one at the end), `near`
    /// the last value (number, string, property, name) up to it.
    fn error(&self) -> String {
        let at = self.pos.min(self.tokens.len().saturating_sub(1));
        let Some((_, offset, _)) = self.tokens.get(at) else {
            return format!("Syntax error at offset {} near ''", self.len);
        };
        let near = self.tokens[..=at]
            .iter()
            .rev()
            .find_map(|(tok, _, raw)| match tok {
                ETok::Op(_) => None,
                ETok::Prop(name) => Some(name.as_str()),
                _ => Some(raw.as_str()),
            })
            .unwrap_or("");
        format!("Syntax error at offset {offset} near '{near}'")
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.tokens.get(self.pos), Some((ETok::Op(o), _, _)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut e = self.and()?;
        while self.eat("||") {
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut e = self.not()?;
        while self.eat("&&") {
            e = Expr::And(Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }

    fn not(&mut self) -> Result<Expr, String> {
        if self.eat("!") {
            return Ok(match self.not()? {
                Expr::Not(inner) => *inner,
                e => Expr::Not(Box::new(e)),
            });
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, String> {
        let left = self.sum()?;
        let op = match self.tokens.get(self.pos) {
            Some((ETok::Op(o), _, _)) => match *o {
                "==" => CmpOp::Eq,
                "!=" => CmpOp::Ne,
                "<" => CmpOp::Lt,
                "<=" => CmpOp::Le,
                ">" => CmpOp::Gt,
                ">=" => CmpOp::Ge,
                _ => return Ok(left),
            },
            _ => return Ok(left),
        };
        self.pos += 1;
        let right = self.sum()?;
        Ok(Expr::Compare(op, Box::new(left), Box::new(right)))
    }

    fn sum(&mut self) -> Result<Expr, String> {
        let mut e = self.product()?;
        loop {
            let op = if self.eat("+") {
                b'+'
            } else if self.eat("-") {
                b'-'
            } else {
                return Ok(e);
            };
            e = Expr::Arith(op, Box::new(e), Box::new(self.product()?));
        }
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut e = self.power()?;
        loop {
            let op = if self.eat("*") {
                b'*'
            } else if self.eat("/") {
                b'/'
            } else if self.eat("%") {
                b'%'
            } else {
                return Ok(e);
            };
            e = Expr::Arith(op, Box::new(e), Box::new(self.power()?));
        }
    }

    fn power(&mut self) -> Result<Expr, String> {
        let base = self.primary()?;
        if self.eat("^") {
            return Ok(Expr::Arith(b'^', Box::new(base), Box::new(self.power()?)));
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let Some((tok, _, _)) = self.tokens.get(self.pos).cloned() else {
            return Err(self.error());
        };
        self.pos += 1;
        match tok {
            ETok::Num(n) => Ok(Expr::Literal(Value::Number(n))),
            ETok::Str(s) => Ok(Expr::Literal(Value::Text(Bytes::from(s)))),
            ETok::Prop(p) => Ok(Expr::Property(p)),
            ETok::Op("(") => {
                let e = self.or()?;
                if !self.eat(")") {
                    return Err(self.error());
                }
                Ok(e)
            }
            // `-x` where x is not a number literal: 0 - x.
            ETok::Op("-") => Ok(Expr::Arith(
                b'-',
                Box::new(Expr::Literal(Value::Number(0.0))),
                Box::new(self.power()?),
            )),
            ETok::Symbol(name) => {
                if !self.eat("(") {
                    if name == "NULL" {
                        return Ok(Expr::Literal(Value::Null));
                    }
                    return Err(format!("Unknown symbol '{name}'"));
                }
                let mut args = Vec::new();
                if !self.eat(")") {
                    loop {
                        args.push(self.or()?);
                        if self.eat(")") {
                            break;
                        }
                        if !self.eat(",") {
                            return Err(self.error());
                        }
                    }
                }
                let lower = name.to_ascii_lowercase();
                let Some(&(fname, min, max)) = FUNCTIONS.iter().find(|(f, _, _)| *f == lower)
                else {
                    return Err(format!("Unknown function name '{name}'"));
                };
                if args.len() < min || args.len() > max {
                    return Err(if min == max {
                        format!(
                            "Function '{name}' expects {min} arguments, but got {}",
                            args.len()
                        )
                    } else if max == usize::MAX {
                        format!(
                            "Function '{name}' expects at least {min} arguments, but got {}",
                            args.len()
                        )
                    } else {
                        format!(
                            "Function '{name}' expects between {min} and {max} arguments, but got {}",
                            args.len()
                        )
                    });
                }
                Ok(Expr::Call(fname, args))
            }
            _ => {
                self.pos -= 1;
                Err(self.error())
            }
        }
    }
}

/// Why an expression has no value for a row.
#[derive(Debug, PartialEq)]
enum Fail {
    /// The row lacks this property: RediSearch drops the row and warns.
    Missing(String),
    /// Anything else fails the command with this text.
    Error(String),
}

impl From<String> for Fail {
    fn from(e: String) -> Fail {
        Fail::Error(e)
    }
}

impl From<&str> for Fail {
    fn from(e: &str) -> Fail {
        Fail::Error(e.to_string())
    }
}

const NOT_NUMERIC: &str = "Could not convert value to a number";

fn type_error(function: &str, index: usize, v: &Value) -> String {
    // RediSearch names the value's internal type number.
    let t = match v {
        Value::Number(_) => 1,
        Value::Text(_) => 2,
        Value::Null => 3,
        Value::List(_) => 5,
    };
    format!(
        "Invalid type ({t}) for argument {index} in function '{function}'. VALIDATE_ARG__STRING(v, 0) was false."
    )
}

fn as_text<'v>(function: &str, args: &'v [Value], index: usize) -> Result<&'v [u8], String> {
    match &args[index] {
        Value::Text(t) => Ok(t),
        v => Err(type_error(function, index, v)),
    }
}

impl Expr {
    /// Calls `f` with every property the expression reads.
    fn properties(&self, f: &mut dyn FnMut(&str)) {
        match self {
            Expr::Literal(_) => {}
            Expr::Property(p) => f(p),
            Expr::Arith(_, a, b) | Expr::Compare(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
                a.properties(f);
                b.properties(f);
            }
            Expr::Not(a) => a.properties(f),
            Expr::Call(_, args) => args.iter().for_each(|a| a.properties(f)),
        }
    }

    fn eval(&self, row: &Row) -> Result<Value, Fail> {
        match self {
            Expr::Literal(v) => Ok(v.clone()),
            Expr::Property(p) => match get(row, p) {
                Some(v) if *v != Value::Null => Ok(v.clone()),
                _ => Err(Fail::Missing(p.clone())),
            },
            Expr::Arith(op, a, b) => {
                let (x, y) = (a.eval(row)?, b.eval(row)?);
                let (Some(x), Some(y)) = (to_number(&x), to_number(&y)) else {
                    return Err(NOT_NUMERIC.into());
                };
                Ok(Value::Number(match op {
                    b'+' => x + y,
                    b'-' => x - y,
                    b'*' => x * y,
                    b'/' => x / y,
                    b'%' => x % y,
                    _ => x.powf(y),
                }))
            }
            Expr::Compare(op, a, b) => {
                let (x, y) = (a.eval(row)?, b.eval(row)?);
                let ord = compare(&x, &y);
                let hit = match op {
                    CmpOp::Eq => equal(&x, &y),
                    CmpOp::Ne => !equal(&x, &y),
                    CmpOp::Lt => ord == Ordering::Less,
                    CmpOp::Le => ord != Ordering::Greater,
                    CmpOp::Gt => ord == Ordering::Greater,
                    CmpOp::Ge => ord != Ordering::Less,
                };
                Ok(bool_value(hit))
            }
            Expr::And(a, b) => Ok(bool_value(truthy(&a.eval(row)?) && truthy(&b.eval(row)?))),
            Expr::Or(a, b) => Ok(bool_value(truthy(&a.eval(row)?) || truthy(&b.eval(row)?))),
            Expr::Not(a) => Ok(bool_value(!truthy(&a.eval(row)?))),
            Expr::Call("case", args) => {
                let branch = if truthy(&args[0].eval(row)?) { 1 } else { 2 };
                args[branch].eval(row)
            }
            Expr::Call("exists", args) => match args[0].eval(row) {
                Ok(v) => Ok(bool_value(v != Value::Null)),
                Err(Fail::Missing(_)) if matches!(args[0], Expr::Property(_)) => {
                    Ok(bool_value(false))
                }
                Err(e) => Err(e),
            },
            Expr::Call(name, args) => {
                let values = args
                    .iter()
                    .map(|a| a.eval(row))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(call(name, &values)?)
            }
        }
    }
}

fn bool_value(b: bool) -> Value {
    Value::Number(if b { 1.0 } else { 0.0 })
}

fn text_value(b: impl Into<Vec<u8>>) -> Value {
    Value::Text(Bytes::from(b.into()))
}

fn call(name: &str, args: &[Value]) -> Result<Value, String> {
    let number = |i: usize| to_number(&args[i]);
    let math = |f: fn(f64) -> f64| Value::Number(number(0).map_or(f64::NAN, f));
    Ok(match name {
        "lower" | "upper" => match &args[0] {
            Value::Text(t) => text_value(if name == "lower" {
                t.to_ascii_lowercase()
            } else {
                t.to_ascii_uppercase()
            }),
            other => other.clone(),
        },
        "substr" => {
            let (Value::Number(offset), Value::Number(len)) = (&args[1], &args[2]) else {
                let bad = if matches!(args[1], Value::Number(_)) {
                    2
                } else {
                    1
                };
                return Err(type_error("substr", bad, &args[bad]).replace(
                    "VALIDATE_ARG__STRING(v, 0)",
                    "VALIDATE_ARG__TYPE(v, RSValue_Number)",
                ));
            };
            let s: Vec<u8> = match &args[0] {
                Value::Text(t) => t.to_vec(),
                Value::Number(_) => render(&args[0]).to_vec(),
                _ => return Err("Invalid type for substr. Expected string".into()),
            };
            let size = s.len() as i64;
            let mut offset = *offset as i64;
            let mut len = *len as i64;
            if offset < 0 {
                offset = offset.saturating_add(size);
            }
            let offset = offset.clamp(0, size);
            if len < 0 {
                len = (size - offset).saturating_add(len).max(0);
            }
            let end = offset.saturating_add(len).min(size);
            text_value(&s[offset as usize..end as usize])
        }
        "format" => {
            let fmt = as_text("format", args, 0)?;
            let mut out = Vec::with_capacity(fmt.len());
            let mut next = 1;
            let mut i = 0;
            while i < fmt.len() {
                if fmt[i] != b'%' {
                    out.push(fmt[i]);
                    i += 1;
                    continue;
                }
                match fmt.get(i + 1) {
                    None => return Err("Bad format string!".into()),
                    Some(b'%') => out.push(b'%'),
                    Some(b's') => {
                        let arg = args.get(next).ok_or("Not enough arguments for format")?;
                        next += 1;
                        match arg {
                            Value::Null => out.extend_from_slice(b"(null)"),
                            v => out.extend_from_slice(&render(v)),
                        }
                    }
                    Some(_) => return Err("Unknown format specifier passed".into()),
                }
                i += 2;
            }
            text_value(out)
        }
        "split" => {
            let s = as_text("split", args, 0)?;
            let sep: &[u8] = if args.len() > 1 {
                as_text("split", args, 1)?
            } else {
                b","
            };
            let strip: &[u8] = if args.len() > 2 {
                as_text("split", args, 2)?
            } else {
                b" "
            };
            let parts = s
                .split(|b| sep.contains(b))
                .map(|p| {
                    let start = p.iter().position(|b| !strip.contains(b)).unwrap_or(p.len());
                    let end = p
                        .iter()
                        .rposition(|b| !strip.contains(b))
                        .map_or(start, |e| e + 1);
                    &p[start..end.max(start)]
                })
                .filter(|p| !p.is_empty())
                .take(1024)
                .map(text_value)
                .collect();
            Value::List(parts)
        }
        "strlen" => Value::Number(as_text("strlen", args, 0)?.len() as f64),
        "startswith" => {
            let (s, prefix) = (
                as_text("startswith", args, 0)?,
                as_text("startswith", args, 1)?,
            );
            bool_value(s.starts_with(prefix))
        }
        "contains" => {
            let (s, sub) = (as_text("contains", args, 0)?, as_text("contains", args, 1)?);
            let n = if sub.is_empty() {
                s.len() + 1
            } else {
                s.windows(sub.len()).filter(|w| *w == sub).count()
            };
            Value::Number(n as f64)
        }
        "to_number" => match number(0) {
            Some(n) => Value::Number(n),
            None => {
                return Err(format!(
                    "to_number: cannot convert string '{}'",
                    String::from_utf8_lossy(&render(&args[0]))
                ))
            }
        },
        "to_str" => Value::Text(render(&args[0])),
        // Which query terms matched is the executor's knowledge, not the row's.
        "matched_terms" => Value::Null,
        "log" => math(f64::ln),
        "log2" => math(f64::log2),
        "exp" => math(f64::exp),
        "floor" => math(f64::floor),
        "ceil" => math(f64::ceil),
        "abs" => math(f64::abs),
        "sqrt" => math(f64::sqrt),
        "timefmt" => {
            let Some(t) = number(0) else {
                return Ok(Value::Null);
            };
            let fmt: &[u8] = if args.len() > 1 {
                as_text("timefmt", args, 1)?
            } else {
                b"%FT%TZ"
            };
            match strftime(t as i64, fmt) {
                Some(s) => text_value(s),
                None => Value::Null,
            }
        }
        "parsetime" => {
            let (Value::Text(s), Value::Text(fmt)) = (&args[0], &args[1]) else {
                return Ok(Value::Null);
            };
            strptime(s, fmt).map_or(Value::Null, |t| Value::Number(t as f64))
        }
        _ => {
            // The date functions over a UNIX time in seconds (UTC).
            let Some(t) = number(0) else {
                return Ok(Value::Null);
            };
            let t = t as i64;
            let days = t.div_euclid(86_400);
            let (y, m, d) = civil_from_days(days);
            Value::Number(match name {
                "minute" => (t - t.rem_euclid(60)) as f64,
                "hour" => (t - t.rem_euclid(3600)) as f64,
                "day" => (days * 86_400) as f64,
                "month" => (days_from_civil(y, m, 1) * 86_400) as f64,
                "monthofyear" => (m - 1) as f64,
                "year" => y as f64,
                "dayofmonth" => d as f64,
                // 1970-01-01 was a Thursday; Sunday is 0.
                "dayofweek" => (days + 4).rem_euclid(7) as f64,
                _ => (days - days_from_civil(y, 1, 1)) as f64,
            })
        }
    })
}

/// Days since 1970-01-01 → (year, month 1-12, day 1-31), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The `strftime` conversions timefmt serves: %Y %m %d %H %M %S %j %F %T %s %%.
fn strftime(t: i64, fmt: &[u8]) -> Option<Vec<u8>> {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let yday = days - days_from_civil(y, 1, 1) + 1;
    let mut out = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            out.push(fmt[i]);
            i += 1;
            continue;
        }
        let piece = match fmt.get(i + 1)? {
            b'Y' => format!("{y}"),
            b'm' => format!("{m:02}"),
            b'd' => format!("{d:02}"),
            b'H' => format!("{:02}", secs / 3600),
            b'M' => format!("{:02}", secs / 60 % 60),
            b'S' => format!("{:02}", secs % 60),
            b'j' => format!("{yday:03}"),
            b'F' => format!("{y}-{m:02}-{d:02}"),
            b'T' => format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60),
            b's' => format!("{t}"),
            b'%' => "%".into(),
            _ => return None,
        };
        out.extend_from_slice(piece.as_bytes());
        i += 2;
    }
    Some(out)
}

/// The `strptime` conversions parsetime serves (those of [`strftime`] but %j and %s).
fn strptime(s: &[u8], fmt: &[u8]) -> Option<i64> {
    let (mut y, mut mo, mut d, mut h, mut mi, mut se) = (1900, 1, 1, 0, 0, 0);
    let mut pos = 0;
    let digits = |pos: &mut usize, max: usize| -> Option<i64> {
        let start = *pos;
        let mut neg = false;
        if s.get(*pos) == Some(&b'-') && max > 2 {
            neg = true;
            *pos += 1;
        }
        let begin = *pos;
        while *pos < s.len() && *pos - begin < max && s[*pos].is_ascii_digit() {
            *pos += 1;
        }
        if *pos == begin {
            *pos = start;
            return None;
        }
        let n: i64 = std::str::from_utf8(&s[begin..*pos]).ok()?.parse().ok()?;
        Some(if neg { -n } else { n })
    };
    let expanded: Vec<u8> = {
        let f = String::from_utf8_lossy(fmt);
        f.replace("%F", "%Y-%m-%d")
            .replace("%T", "%H:%M:%S")
            .into_bytes()
    };
    let mut i = 0;
    while i < expanded.len() {
        if expanded[i] == b'%' {
            match expanded.get(i + 1)? {
                b'Y' => y = digits(&mut pos, 4)?,
                b'm' => mo = digits(&mut pos, 2)?,
                b'd' => d = digits(&mut pos, 2)?,
                b'H' => h = digits(&mut pos, 2)?,
                b'M' => mi = digits(&mut pos, 2)?,
                b'S' => se = digits(&mut pos, 2)?,
                b'%' => {
                    if s.get(pos) != Some(&b'%') {
                        return None;
                    }
                    pos += 1;
                }
                _ => return None,
            }
            i += 2;
        } else if expanded[i].is_ascii_whitespace() {
            while pos < s.len() && s[pos].is_ascii_whitespace() {
                pos += 1;
            }
            i += 1;
        } else {
            if s.get(pos) != Some(&expanded[i]) {
                return None;
            }
            pos += 1;
            i += 1;
        }
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se)
}

#[cfg(test)]
mod tests;
