use super::*;
use proptest::prelude::*;

fn args(words: &[&str]) -> Vec<Bytes> {
    words
        .iter()
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

fn plan(words: &[&str]) -> Plan {
    Plan::parse(&args(words)).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

fn plan_err(words: &[&str]) -> String {
    Plan::parse(&args(words)).expect_err(&format!("{words:?}"))
}

fn t(s: &str) -> Value {
    Value::Text(Bytes::copy_from_slice(s.as_bytes()))
}

fn n(x: f64) -> Value {
    Value::Number(x)
}

fn row(pairs: &[(&str, Value)]) -> Row {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Four documents: name, city, age (as text, as a hash field is), score (a number).
fn people() -> Vec<Row> {
    vec![
        row(&[
            ("name", t("ann")),
            ("city", t("paris")),
            ("age", t("30")),
            ("score", n(1.5)),
        ]),
        row(&[
            ("name", t("bob")),
            ("city", t("rome")),
            ("age", t("25")),
            ("score", n(3.0)),
        ]),
        row(&[
            ("name", t("cid")),
            ("city", t("paris")),
            ("age", t("41")),
            ("score", n(2.0)),
        ]),
        row(&[("name", t("dan")), ("city", t("paris")), ("age", t("25"))]),
    ]
}

fn run(words: &[&str], rows: Vec<Row>) -> Result<Vec<Row>, String> {
    plan(words).run(rows).map(|ran| ran.rows)
}

fn column(rows: &[Row], name: &str) -> Vec<Value> {
    rows.iter()
        .map(|r| get(r, name).cloned().unwrap_or(Value::Null))
        .collect()
}

fn eval(expr: &str, r: &Row) -> Result<Value, String> {
    parse_expression(expr)?.eval(r).map_err(|f| match f {
        Fail::Missing(p) => format!("missing {p}"),
        Fail::Error(e) => e,
    })
}

#[test]
fn options_and_defaults() {
    let p = plan(&[]);
    assert_eq!(p.load, Load::Named);
    assert_eq!(p.cursor, None);
    assert_eq!((p.dialect, p.dialect_given), (1, false));
    let p = plan(&[
        "VERBATIM",
        "LOAD",
        "3",
        "@a",
        "AS",
        "b",
        "LOAD",
        "1",
        "$.c",
        "TIMEOUT",
        "50",
        "WITHCURSOR",
        "DIALECT",
        "2",
        "PARAMS",
        "2",
        "x",
        "1",
        "ADDSCORES",
        "SCORER",
        "BM25",
        "NOSTOPWORDS",
    ]);
    assert!(p.verbatim && p.add_scores && p.no_stopwords);
    assert_eq!(
        p.load,
        Load::Fields(vec![("a".into(), "b".into()), ("$.c".into(), "$.c".into())])
    );
    assert_eq!(p.timeout_ms, Some(50));
    assert_eq!(
        p.cursor,
        Some(CursorOptions {
            count: 1000,
            max_idle_ms: 300_000
        })
    );
    assert_eq!((p.dialect, p.dialect_given), (2, true));
    assert_eq!(p.params.get("x"), Some(&Bytes::from_static(b"1")));
    assert_eq!(p.scorer.as_deref(), Some("BM25"));
    assert_eq!(plan(&["load", "*"]).load, Load::All);
    let c = plan(&["WITHCURSOR", "MAXIDLE", "999999", "COUNT", "5"]).cursor;
    assert_eq!(
        c,
        Some(CursorOptions {
            count: 5,
            max_idle_ms: 300_000
        })
    );
}

#[test]
fn argument_errors() {
    assert_eq!(plan_err(&["TIMEOUT"]), "Need argument for TIMEOUT");
    assert_eq!(
        plan_err(&["TIMEOUT", "-1"]),
        "TIMEOUT requires a non negative integer"
    );
    assert_eq!(plan_err(&["DIALECT"]), "Need an argument for DIALECT");
    assert_eq!(
        plan_err(&["DIALECT", "5"]),
        "DIALECT requires a non negative integer >=1 and <= 4"
    );
    assert_eq!(plan_err(&["LIMIT", "0"]), "LIMIT requires two arguments");
    assert_eq!(
        plan_err(&["LIMIT", "a", "1"]),
        "LIMIT needs two numeric arguments"
    );
    assert_eq!(
        plan_err(&["LIMIT", "5", "0"]),
        "The `offset` of the LIMIT must be 0 when `num` is 0"
    );
    assert_eq!(
        plan_err(&["PARAMS", "4", "a", "1"]),
        "Bad arguments for PARAMS: Expected an argument, but none provided"
    );
    assert_eq!(
        plan_err(&["PARAMS", "1", "a"]),
        "Parameters must be specified in PARAM VALUE pairs"
    );
    assert_eq!(
        plan_err(&["PARAMS", "4", "a", "1", "a", "2"]),
        "Duplicate parameter `a`"
    );
    assert_eq!(
        plan_err(&["PARAMS", "2", "a", "1", "PARAMS", "2", "b", "2"]),
        "Multiple PARAMS are not allowed. Parameters can be defined only once"
    );
    assert_eq!(
        plan_err(&["WITHCURSOR", "COUNT", "0"]),
        "Bad arguments for COUNT: Value is outside acceptable bounds"
    );
    assert_eq!(
        plan_err(&["WITHCURSOR", "COUNT", "2.3"]),
        "Bad arguments for COUNT: Could not convert argument to expected type"
    );
    assert_eq!(
        plan_err(&["LOAD", "x"]),
        "Bad arguments for LOAD: Expected number of fields or `*`"
    );
    assert_eq!(
        plan_err(&["LOAD", "2", "@a"]),
        "Bad arguments for LOAD: Expected an argument, but none provided"
    );
    assert_eq!(
        plan_err(&["APPLY", "1", "AS", "x", "LOAD", "1", "@a"]),
        "LOAD cannot be applied after projectors or reducers"
    );
    assert_eq!(
        plan_err(&["GROUPBY", "1", "@a", "LOAD", "*"]),
        "LOAD cannot be applied after projectors or reducers"
    );
    assert_eq!(
        plan_err(&["GROUPBY", "1", "city"]),
        "Bad arguments for GROUPBY: Unknown property `city`. Did you mean `@city`?"
    );
    assert_eq!(
        plan_err(&["GROUPBY", "1", "@a", "REDUCE", "NOPE", "0"]),
        "No such reducer: NOPE"
    );
    assert_eq!(
        plan_err(&["GROUPBY", "1", "@a", "REDUCE", "COUNT", "1", "@a"]),
        "Count accepts 0 values only"
    );
    assert_eq!(
        plan_err(&["GROUPBY", "1", "@a", "REDUCE", "SUM", "0"]),
        "Missing arguments for SUM"
    );
    assert_eq!(
        plan_err(&["GROUPBY", "1", "@a", "REDUCE", "QUANTILE", "2", "@a", "2"]),
        "Percentage must be between 0.0 and 1.0"
    );
    assert_eq!(
        plan_err(&[
            "GROUPBY",
            "1",
            "@a",
            "REDUCE",
            "RANDOM_SAMPLE",
            "2",
            "@a",
            "5000"
        ]),
        "Sample size too large"
    );
    assert_eq!(
        plan_err(&["SORTBY", "1", "name"]),
        "MISSING ASC or DESC after sort field (name)"
    );
    assert_eq!(plan_err(&["SORTBY", "3", "@a"]), "Bad SORTBY arguments");
    assert_eq!(
        plan_err(&["SORTBY", "1", "@a", "MAX", "x"]),
        "Bad arguments for MAX: Could not convert argument to expected type"
    );
    assert_eq!(
        plan_err(&["SORTBY", "1", "@a", "LIMIT", "0", "5", "SORTBY", "1", "@b"]),
        "Multiple SORTBY steps are not allowed. Sort multiple fields in a single step"
    );
    assert_eq!(
        plan_err(&["APPLY"]),
        "Bad arguments for APPLY/FILTER: Expected an argument, but none provided"
    );
    assert_eq!(plan_err(&["APPLY", "1", "AS"]), "AS needs argument");
    assert_eq!(
        plan_err(&["BOGUS"]),
        "Unknown argument `BOGUS` at position 1 for <main>"
    );
}

#[test]
fn groupby_and_reducers() {
    let rows = run(
        &[
            "GROUPBY",
            "1",
            "@city",
            "REDUCE",
            "COUNT",
            "0",
            "REDUCE",
            "SUM",
            "1",
            "@age",
            "AS",
            "total",
            "REDUCE",
            "AVG",
            "1",
            "@age",
            "REDUCE",
            "MIN",
            "1",
            "@age",
            "AS",
            "youngest",
            "REDUCE",
            "MAX",
            "1",
            "@score",
            "AS",
            "best",
            "REDUCE",
            "COUNT_DISTINCT",
            "1",
            "@age",
            "AS",
            "ages",
            "REDUCE",
            "COUNT_DISTINCTISH",
            "1",
            "@age",
            "AS",
            "ages2",
            "REDUCE",
            "TOLIST",
            "1",
            "@age",
            "AS",
            "agelist",
            "REDUCE",
            "STDDEV",
            "1",
            "@age",
            "AS",
            "sd",
            "REDUCE",
            "QUANTILE",
            "2",
            "@age",
            "0.5",
            "AS",
            "median",
            "REDUCE",
            "FIRST_VALUE",
            "1",
            "@name",
            "AS",
            "first",
            "REDUCE",
            "FIRST_VALUE",
            "4",
            "@name",
            "BY",
            "@age",
            "DESC",
            "AS",
            "oldest",
            "REDUCE",
            "FIRST_VALUE",
            "3",
            "@name",
            "BY",
            "@age",
            "AS",
            "young",
        ],
        people(),
    )
    .unwrap();
    assert_eq!(rows.len(), 2);
    let paris = &rows[0];
    let expect = |name: &str, v: Value| assert_eq!(get(paris, name), Some(&v), "{name}");
    expect("city", t("paris"));
    expect("__generated_aliascount", n(3.0));
    expect("total", n(96.0));
    expect("__generated_aliasavgage", n(32.0));
    expect("youngest", n(25.0));
    expect("best", n(2.0));
    expect("ages", n(3.0));
    expect("ages2", n(3.0));
    expect("agelist", Value::List(vec![t("30"), t("41"), t("25")]));
    // Sample standard deviation of 30, 41, 25.
    let sd = to_number(get(paris, "sd").unwrap()).unwrap();
    assert!((sd - 8.185_352_771_872_45).abs() < 1e-9, "{sd}");
    expect("median", n(30.0));
    expect("first", t("ann"));
    expect("oldest", t("cid"));
    expect("young", t("dan"));
    assert_eq!(
        paris.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>()[..3],
        ["city", "__generated_aliascount", "total"]
    );
    let rome = &rows[1];
    assert_eq!(get(rome, "__generated_aliascount"), Some(&n(1.0)));
    assert_eq!(get(rome, "sd"), Some(&n(0.0)));
}

#[test]
fn reducers_over_missing_values() {
    let rows = run(
        &[
            "GROUPBY",
            "0",
            "REDUCE",
            "SUM",
            "1",
            "@nothing",
            "AS",
            "s",
            "REDUCE",
            "MIN",
            "1",
            "@nothing",
            "AS",
            "lo",
            "REDUCE",
            "MAX",
            "1",
            "@nothing",
            "AS",
            "hi",
            "REDUCE",
            "COUNT",
            "0",
            "AS",
            "c",
            "REDUCE",
            "RANDOM_SAMPLE",
            "2",
            "@name",
            "2",
            "AS",
            "sample",
        ],
        people(),
    )
    .unwrap();
    assert_eq!(rows.len(), 1);
    // RediSearch 2.10's zeros for a group without values.
    assert_eq!(get(&rows[0], "s"), Some(&n(0.0)));
    assert_eq!(get(&rows[0], "lo"), Some(&n(0.0)));
    assert_eq!(get(&rows[0], "hi"), Some(&n(0.0)));
    assert_eq!(get(&rows[0], "c"), Some(&n(4.0)));
    let Some(Value::List(sample)) = get(&rows[0], "sample") else {
        panic!("no sample");
    };
    assert_eq!(sample.len(), 2);
    assert!(sample.iter().all(|v| column(&people(), "name").contains(v)));
}

#[test]
fn groupby_missing_key_is_its_own_group() {
    let rows = run(&["GROUPBY", "1", "@score"], people()).unwrap();
    assert_eq!(
        column(&rows, "score"),
        vec![n(1.5), n(3.0), n(2.0), Value::Null]
    );
    assert_eq!(
        plan(&["GROUPBY", "2", "@city", "@age", "REDUCE", "COUNT", "0"])
            .run(people())
            .unwrap()
            .rows
            .len(),
        4
    );
}

#[test]
fn sortby_limit_and_max() {
    let names = |rows: &[Row]| column(rows, "name");
    let rows = run(&["SORTBY", "2", "@score", "DESC"], people()).unwrap();
    // A row without the key goes last, descending too.
    assert_eq!(names(&rows), vec![t("bob"), t("cid"), t("ann"), t("dan")]);
    let rows = run(&["SORTBY", "4", "@age", "ASC", "@name", "DESC"], people()).unwrap();
    assert_eq!(names(&rows), vec![t("dan"), t("bob"), t("ann"), t("cid")]);
    let rows = run(&["SORTBY", "1", "@age", "MAX", "2"], people()).unwrap();
    assert_eq!(names(&rows), vec![t("bob"), t("dan")]);
    let rows = run(&["SORTBY", "1", "@name", "LIMIT", "1", "2"], people()).unwrap();
    assert_eq!(names(&rows), vec![t("bob"), t("cid")]);
    let rows = run(&["LIMIT", "0", "0"], people()).unwrap();
    assert!(rows.is_empty());
    assert_eq!(plan(&["SORTBY", "1", "@a", "MAX", "7"]).sortby_max, Some(7));
    // SORTBY without MAX or LIMIT keeps RediSearch's default of 10 rows.
    let many: Vec<Row> = (0..15).map(|i| row(&[("i", n(f64::from(i)))])).collect();
    assert_eq!(run(&["SORTBY", "1", "@i"], many.clone()).unwrap().len(), 10);
    assert_eq!(run(&["LIMIT", "0", "12"], many.clone()).unwrap().len(), 12);
    assert_eq!(run(&[], many).unwrap().len(), 15);
}

#[test]
fn value_order() {
    // Text compares bytewise, numbers numerically, text against a number as a number when it
    // reads as one.
    assert_eq!(compare(&t("10"), &t("9")), Ordering::Less);
    assert_eq!(compare(&n(10.0), &n(9.0)), Ordering::Greater);
    assert_eq!(compare(&n(10.0), &t("9")), Ordering::Greater);
    assert_eq!(compare(&t("9"), &n(10.0)), Ordering::Less);
    assert_eq!(compare(&Value::Null, &n(0.0)), Ordering::Less);
    assert!(equal(&t("2.0"), &n(2.0)));
}

#[test]
fn apply_and_filter() {
    let rows = run(
        &[
            "APPLY",
            "@age * 2 + 1",
            "AS",
            "x",
            "APPLY",
            "upper(@name)",
            "AS",
            "N",
            "FILTER",
            "@x > 51 && @city == 'paris'",
        ],
        people(),
    )
    .unwrap();
    assert_eq!(column(&rows, "N"), vec![t("ANN"), t("CID")]);
    assert_eq!(column(&rows, "x"), vec![n(61.0), n(83.0)]);
    // Without AS the expression is the name.
    let rows = run(&["APPLY", "@score/2"], people()[..1].to_vec()).unwrap();
    assert_eq!(get(&rows[0], "@score/2"), Some(&n(0.75)));
    // A row lacking a property is dropped with a warning, unless exists() asks for it.
    let ran = plan(&["APPLY", "@score + 1", "AS", "y"])
        .run(people())
        .unwrap();
    assert_eq!(
        column(&ran.rows, "name"),
        vec![t("ann"), t("bob"), t("cid")]
    );
    assert_eq!(ran.ordinals, vec![Some(0), Some(1), Some(2)]);
    assert_eq!(
        ran.warnings,
        vec!["score: has no value, consider using EXISTS if applicable".to_string()]
    );
    let rows = run(&["FILTER", "!exists(@score)"], people()).unwrap();
    assert_eq!(column(&rows, "name"), vec![t("dan")]);
    assert_eq!(
        run(&["APPLY", "@name + 1", "AS", "y"], people()),
        Err("Could not convert value to a number".into())
    );
}

#[test]
fn expression_syntax_and_precedence() {
    let r = row(&[("a", n(2.0)), ("b", t("3")), ("s", t("Hello World"))]);
    let num = |e: &str| eval(e, &r).unwrap_or_else(|err| panic!("{e}: {err}"));
    assert_eq!(num("1 + 2 * 3"), n(7.0));
    assert_eq!(num("(1 + 2) * 3"), n(9.0));
    assert_eq!(num("2 ^ 3 ^ 2"), n(512.0));
    assert_eq!(num("10 % 4"), n(2.0));
    assert_eq!(num("10 / 4"), n(2.5));
    assert_eq!(num("@a - 1"), n(1.0));
    assert_eq!(num("@a-1"), n(1.0));
    assert_eq!(num("-@a"), n(-2.0));
    assert_eq!(num("-1.5e1"), n(-15.0));
    assert_eq!(num("@a * @b"), n(6.0));
    assert_eq!(num("@a < @b"), n(1.0));
    assert_eq!(num("!@a == 2"), n(0.0));
    assert_eq!(num("1 || 0 && 0"), n(1.0));
    // RediSearch drops a double negation, leaving the value itself.
    assert_eq!(num("!!5"), n(5.0));
    assert_eq!(num("!!!5"), n(0.0));
    assert_eq!(num("'x' == \"x\""), n(1.0));
    assert_eq!(num("'it\\'s'"), t("it's"));
    assert_eq!(num("NULL"), Value::Null);
    assert_eq!(num("inf"), n(f64::INFINITY));
    assert_eq!(num("case(@a > 1, 'big', 'small')"), t("big"));
    // case evaluates only the branch it takes.
    assert_eq!(num("case(1, 'ok', @nothing)"), t("ok"));
    for bad in ["1 +", "(1", "1 2", "@", "1 = 2", "", "'open"] {
        let e = parse_expression(bad).expect_err(bad);
        assert!(e.starts_with("Syntax error at offset"), "{bad}: {e}");
    }
    // RediSearch 2.10's texts (the stack reference): the failing token's offset, the last value.
    for (bad, error) in [
        ("1 +", "Syntax error at offset 2 near '1'"),
        ("@age +", "Syntax error at offset 5 near 'age'"),
        ("1 + * 2", "Syntax error at offset 4 near '1'"),
        ("upper(", "Syntax error at offset 5 near 'upper'"),
        ("@a @b", "Syntax error at offset 3 near 'b'"),
        ("\"abc\" +", "Syntax error at offset 6 near '\"abc\"'"),
    ] {
        assert_eq!(parse_expression(bad).unwrap_err(), error, "{bad}");
    }
    assert_eq!(
        parse_expression("nope(1)").unwrap_err(),
        "Unknown function name 'nope'"
    );
    assert_eq!(parse_expression("foo").unwrap_err(), "Unknown symbol 'foo'");
    assert_eq!(
        parse_expression("upper(1, 2)").unwrap_err(),
        "Function 'upper' expects 1 arguments, but got 2"
    );
    assert_eq!(
        parse_expression("split()").unwrap_err(),
        "Function 'split' expects between 1 and 3 arguments, but got 0"
    );
}

#[test]
fn string_functions() {
    let r = row(&[
        ("s", t("Hello World")),
        ("csv", t(" a, b ,,c ")),
        ("n", n(42.0)),
    ]);
    let v = |e: &str| eval(e, &r).unwrap_or_else(|err| panic!("{e}: {err}"));
    assert_eq!(v("lower(@s)"), t("hello world"));
    assert_eq!(v("upper(@s)"), t("HELLO WORLD"));
    assert_eq!(v("substr(@s, 0, 5)"), t("Hello"));
    assert_eq!(v("substr(@s, -5, 5)"), t("World"));
    assert_eq!(v("substr(@s, 6, -1)"), t("Worl"));
    assert_eq!(v("substr(@s, 6, 100)"), t("World"));
    assert_eq!(v("format('%s is %s%%', @s, @n)"), t("Hello World is 42%"));
    assert_eq!(v("format('%s', NULL)"), t("(null)"));
    assert_eq!(v("split(@csv)"), Value::List(vec![t("a"), t("b"), t("c")]));
    assert_eq!(v("split('a:b', ':')"), Value::List(vec![t("a"), t("b")]));
    assert_eq!(v("strlen(@s)"), n(11.0));
    assert_eq!(v("startswith(@s, 'Hell')"), n(1.0));
    assert_eq!(v("startswith(@s, 'World')"), n(0.0));
    assert_eq!(v("contains('banana', 'ana')"), n(2.0));
    assert_eq!(v("to_number('12.5')"), n(12.5));
    assert_eq!(v("to_str(@n)"), t("42"));
    assert_eq!(v("exists(@s)"), n(1.0));
    assert_eq!(v("exists(@nope)"), n(0.0));
    assert_eq!(
        eval("format('%d', 1)", &r),
        Err("Unknown format specifier passed".into())
    );
    assert_eq!(
        eval("format('%s')", &r),
        Err("Not enough arguments for format".into())
    );
    assert_eq!(eval("format('x%')", &r), Err("Bad format string!".into()));
    assert_eq!(
        eval("strlen(@n)", &r),
        Err("Invalid type (1) for argument 0 in function 'strlen'. VALIDATE_ARG__STRING(v, 0) was false.".into())
    );
    assert_eq!(
        eval("to_number('x')", &r),
        Err("to_number: cannot convert string 'x'".into())
    );
}

#[test]
fn math_functions() {
    let r = row(&[("x", t("2.5"))]);
    let v = |e: &str| eval(e, &r).unwrap();
    assert_eq!(v("floor(@x)"), n(2.0));
    assert_eq!(v("ceil(@x)"), n(3.0));
    assert_eq!(v("abs(-3)"), n(3.0));
    assert_eq!(v("sqrt(16)"), n(4.0));
    assert_eq!(v("log2(8)"), n(3.0));
    assert_eq!(v("log(1)"), n(0.0));
    assert_eq!(v("exp(0)"), n(1.0));
    assert!(matches!(v("sqrt('x')"), Value::Number(x) if x.is_nan()));
}

#[test]
fn date_functions() {
    // 2024-02-29T13:45:30Z, a Thursday.
    let r = row(&[("t", n(1_709_214_330.0))]);
    let v = |e: &str| eval(e, &r).unwrap();
    assert_eq!(v("timefmt(@t)"), t("2024-02-29T13:45:30Z"));
    assert_eq!(v("timefmt(@t, '%Y/%m/%d %H:%M')"), t("2024/02/29 13:45"));
    assert_eq!(
        v("parsetime('2024-02-29T13:45:30Z', '%FT%TZ')"),
        n(1_709_214_330.0)
    );
    assert_eq!(v("parsetime('nope', '%Y')"), Value::Null);
    assert_eq!(v("minute(@t)"), n(1_709_214_300.0));
    assert_eq!(v("hour(@t)"), n(1_709_211_600.0));
    assert_eq!(v("day(@t)"), n(1_709_164_800.0));
    assert_eq!(v("month(@t)"), n(1_706_745_600.0));
    assert_eq!(v("year(@t)"), n(2024.0));
    assert_eq!(v("monthofyear(@t)"), n(1.0));
    assert_eq!(v("dayofmonth(@t)"), n(29.0));
    assert_eq!(v("dayofweek(@t)"), n(4.0));
    assert_eq!(v("dayofyear(@t)"), n(59.0));
    assert_eq!(v("timefmt(0)"), t("1970-01-01T00:00:00Z"));
}

#[test]
fn render_numbers_as_redisearch() {
    let r = |x: f64| render(&n(x));
    assert_eq!(r(3.0), "3");
    assert_eq!(r(-7.0), "-7");
    assert_eq!(r(1.5), "1.5");
    assert_eq!(r(1.0 / 3.0), "0.333333333333");
    assert_eq!(r(2.0 / 3.0), "0.666666666667");
    assert_eq!(r(123_456.789), "123456.789");
    assert_eq!(r(1e15), "1000000000000000");
    // Beyond a 64-bit integer RediSearch falls back to %.12g.
    assert_eq!(r(1e20), "1e+20");
    assert_eq!(r(1.5e20), "1.5e+20");
    assert_eq!(r(1e-5), "1e-05");
    assert_eq!(r(1.25e-7), "1.25e-07");
    assert_eq!(r(0.0001), "0.0001");
    assert_eq!(r(1234567890123.5), "1.23456789012e+12");
    assert_eq!(r(f64::INFINITY), "inf");
    assert_eq!(r(f64::NEG_INFINITY), "-inf");
    assert_eq!(r(f64::NAN), "nan");
    assert_eq!(render(&t("x")), "x");
    assert_eq!(render(&Value::Null), "");
}

#[test]
fn referenced_fields_and_validation() {
    let p = plan(&[
        "APPLY", "@a + @b", "AS", "c", "FILTER", "@c > 1", "SORTBY", "2", "@d", "DESC", "GROUPBY",
        "1", "@e", "REDUCE", "SUM", "1", "@f", "APPLY", "@g", "AS", "h",
    ]);
    assert_eq!(p.referenced_fields(), vec!["a", "b", "d", "e", "f"]);
    let schema = |f: &str| ["a", "b", "d", "e", "f"].contains(&f);
    let none = |_: &str| false;
    assert_eq!(
        p.validate(&schema, &none),
        Err("Property `g` not loaded nor in pipeline".into())
    );
    let ok = plan(&[
        "APPLY", "@a", "AS", "x", "GROUPBY", "1", "@x", "REDUCE", "COUNT", "0", "AS", "n",
        "SORTBY", "2", "@n", "DESC",
    ]);
    assert_eq!(ok.validate(&schema, &none), Ok(()));
    let bad_sort = plan(&["GROUPBY", "1", "@a", "SORTBY", "1", "@b"]);
    assert_eq!(
        bad_sort.validate(&schema, &none),
        Err("Property `b` not loaded nor in schema".into())
    );
    let bad_group = plan(&["GROUPBY", "1", "@zz"]);
    assert_eq!(
        bad_group.validate(&schema, &none),
        Err("No such property `zz`".into())
    );
}

#[test]
fn limit_joins_the_sortby_before_it() {
    // RediSearch's LIMIT after an APPLY still belongs to the SORTBY before the APPLY.
    let rows = run(
        &[
            "SORTBY",
            "1",
            "@name",
            "APPLY",
            "upper(@name)",
            "AS",
            "u",
            "LIMIT",
            "0",
            "1",
        ],
        people(),
    )
    .unwrap();
    assert_eq!(column(&rows, "u"), vec![t("ANN")]);
}

proptest! {
    #[test]
    fn expressions_never_panic(src in "[a-z0-9@'\"()+*/%^<>=!&|,. -]{0,30}") {
        if let Ok(e) = parse_expression(&src) {
            let r = row(&[("a", n(1.0)), ("b", t("x")), ("c", n(f64::NAN))]);
            let _ = e.eval(&r);
        }
    }

    #[test]
    fn functions_never_panic(
        f in prop::sample::select(FUNCTIONS.iter().map(|f| f.0).collect::<Vec<_>>()),
        a in prop::sample::select(vec!["@a", "@b", "@c", "-1e300", "1e300", "'%s%'", "NULL", "0"]),
        b in prop::sample::select(vec!["@a", "@b", "-5", "9e18", "'%F'", "'x'"]),
        c in prop::sample::select(vec!["-9e18", "2", "'%T'"]),
    ) {
        let r = row(&[("a", n(1.0)), ("b", t("Hello")), ("c", n(f64::INFINITY))]);
        for args in [a.to_string(), format!("{a}, {b}"), format!("{a}, {b}, {c}")] {
            if let Ok(e) = parse_expression(&format!("{f}({args})")) {
                let _ = e.eval(&r);
            }
        }
    }

    #[test]
    fn plans_never_panic(words in prop::collection::vec(
        prop::sample::select(vec![
            "GROUPBY", "REDUCE", "SORTBY", "APPLY", "FILTER", "LIMIT", "LOAD", "AS", "MAX",
            "WITHCURSOR", "COUNT", "MAXIDLE", "PARAMS", "DIALECT", "TIMEOUT", "0", "1", "2", "3",
            "-1", "@a", "@b", "*", "ASC", "DESC", "SUM", "TOLIST", "FIRST_VALUE", "BY",
            "QUANTILE", "0.5", "RANDOM_SAMPLE", "@a+1", "x",
        ]),
        0..14,
    )) {
        if let Ok(p) = Plan::parse(&args(&words)) {
            let _ = p.run(people());
            let _ = p.referenced_fields();
            let _ = p.validate(&|_| true, &|_| false);
        }
    }
}
