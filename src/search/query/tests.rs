use super::*;
use proptest::prelude::*;

fn params(pairs: &[(&str, &[u8])]) -> HashMap<String, Bytes> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Bytes::copy_from_slice(v)))
        .collect()
}

fn q(text: &str) -> Node {
    let query = parse(text, &HashMap::new(), 2).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(query.knn, None, "{text}");
    query.filter
}

fn err(text: &str) -> String {
    parse(text, &HashMap::new(), 2).expect_err(text)
}

fn term(t: &str) -> Node {
    Node::Term(t.into())
}

fn fields(f: &[&str], node: Node) -> Node {
    Node::Fields {
        fields: f.iter().map(|s| s.to_string()).collect(),
        node: Box::new(node),
    }
}

fn tag(field: &str, values: Vec<TagValue>) -> Node {
    Node::Tag {
        field: field.into(),
        values,
    }
}

fn exact(v: &str) -> TagValue {
    TagValue::Exact(v.into())
}

fn num(field: &str, min: f64, min_inc: bool, max: f64, max_inc: bool) -> Node {
    Node::Numeric {
        field: field.into(),
        min: Bound {
            value: min,
            inclusive: min_inc,
        },
        max: Bound {
            value: max,
            inclusive: max_inc,
        },
    }
}

#[test]
fn words_and_intersections() {
    assert_eq!(q("hello"), term("hello"));
    assert_eq!(
        q("hello world"),
        Node::And(vec![term("hello"), term("world")])
    );
    assert_eq!(
        q("  hello,world.  "),
        Node::And(vec![term("hello"), term("world")])
    );
    assert_eq!(q("snake_case"), term("snake_case"));
    assert_eq!(q("2024"), term("2024"));
    assert_eq!(q("café"), term("café"));
    assert_eq!(q("*"), Node::All);
    assert_eq!(q("(*)"), Node::All);
    assert_eq!(q(""), Node::Or(vec![]));
    assert_eq!(q("   "), Node::Or(vec![]));
}

#[test]
fn affixes_and_fuzzy() {
    assert_eq!(q("hel*"), Node::Prefix("hel".into()));
    assert_eq!(q("*llo"), Node::Suffix("llo".into()));
    assert_eq!(q("*ell*"), Node::Contains("ell".into()));
    assert_eq!(q("12*"), Node::Prefix("12".into()));
    assert_eq!(
        q("%helo%"),
        Node::Fuzzy {
            term: "helo".into(),
            distance: 1
        }
    );
    assert_eq!(
        q("%%helo%%"),
        Node::Fuzzy {
            term: "helo".into(),
            distance: 2
        }
    );
    assert_eq!(
        q("%%%helo%%%"),
        Node::Fuzzy {
            term: "helo".into(),
            distance: 3
        }
    );
    assert!(err("%helo").starts_with("Syntax error"));
    assert!(err("%%helo%").starts_with("Syntax error"));
}

#[test]
fn phrases() {
    let phrase = |t: &[&str]| Node::Phrase {
        terms: t.iter().map(|s| s.to_string()).collect(),
        slop: None,
        in_order: true,
    };
    assert_eq!(q("\"hello big world\""), phrase(&["hello", "big", "world"]));
    assert_eq!(q("'hello world'"), phrase(&["hello", "world"]));
    // An escaped quote stays in its word, as in RediSearch.
    assert_eq!(q(r#""say \"hi\" now""#), phrase(&["say", "\"hi\"", "now"]));
    assert_eq!(q(r#""a\-b c""#), phrase(&["a-b", "c"]));
    assert_eq!(
        q("\"a b\"=>{$slop: 2; $inorder: false}"),
        Node::Phrase {
            terms: vec!["a".into(), "b".into()],
            slop: Some(2),
            in_order: false
        }
    );
    // Slop on an intersection of words makes it a phrase with that slop, any order.
    assert_eq!(
        q("(a b)=>{$slop:1}"),
        Node::Phrase {
            terms: vec!["a".into(), "b".into()],
            slop: Some(1),
            in_order: false
        }
    );
    assert_eq!(
        q("@t:(a b)=>{$inorder:true}"),
        fields(
            &["t"],
            Node::Phrase {
                terms: vec!["a".into(), "b".into()],
                slop: None,
                in_order: true
            }
        )
    );
    assert!(err("\"unclosed").starts_with("Syntax error at offset 0"));
}

#[test]
fn operators() {
    assert_eq!(q("-hello"), Node::Not(Box::new(term("hello"))));
    assert_eq!(q("--hello"), term("hello"));
    assert_eq!(q("~hello"), Node::Optional(Box::new(term("hello"))));
    assert_eq!(q("a|b|c"), Node::Or(vec![term("a"), term("b"), term("c")]));
    assert_eq!(
        q("a -(b | c)"),
        Node::And(vec![
            term("a"),
            Node::Not(Box::new(Node::Or(vec![term("b"), term("c")])))
        ])
    );
    assert_eq!(q("((a))"), term("a"));
    assert_eq!(q("hello=>{$weight: 2.5}"), term("hello"));
    // A number with its sign is a word, not a negation (as RediSearch lexes it).
    assert_eq!(q("-5"), term("-5"));
}

#[test]
fn dialect_2_union_is_looser_than_intersection() {
    assert_eq!(
        q("hello world | \"goodbye\" moon"),
        Node::Or(vec![
            Node::And(vec![term("hello"), term("world")]),
            Node::And(vec![
                Node::Phrase {
                    terms: vec!["goodbye".into()],
                    slop: None,
                    in_order: true
                },
                term("moon")
            ])
        ])
    );
    for dialect in [3, 4] {
        assert_eq!(
            parse("a b | c", &HashMap::new(), dialect).map(|q| q.filter),
            Ok(Node::Or(vec![
                Node::And(vec![term("a"), term("b")]),
                term("c")
            ]))
        );
    }
}

#[test]
fn dialect_1_union_is_tighter_than_intersection() {
    assert_eq!(
        parse("a b | c d", &HashMap::new(), 1).map(|q| q.filter),
        Ok(Node::And(vec![
            term("a"),
            Node::Or(vec![term("b"), term("c")]),
            term("d")
        ]))
    );
}

#[test]
fn parameters_are_dialect_2s() {
    let params = HashMap::from([("w".to_string(), Bytes::from_static(b"hello"))]);
    assert_eq!(parse("$w", &params, 2).map(|q| q.filter), Ok(term("hello")));
    let refused = parse("$w", &params, 1).map(|q| q.filter);
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("Syntax error")),
        "{refused:?}"
    );
}

#[test]
fn a_parenthesised_star_is_dialect_2s() {
    assert_eq!(
        parse("(*)", &HashMap::new(), 2).map(|q| q.filter),
        Ok(Node::All)
    );
    let refused = parse("(*)", &HashMap::new(), 1).map(|q| q.filter);
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("Syntax error")),
        "{refused:?}"
    );
}

#[test]
fn field_modifiers() {
    assert_eq!(q("@title:hello"), fields(&["title"], term("hello")));
    // Dialect 2: the modifier takes one atom; the next word is matched in every field.
    assert_eq!(
        q("@name:James Brown"),
        Node::And(vec![fields(&["name"], term("James")), term("Brown")])
    );
    assert_eq!(
        q("@name:(James Brown)"),
        fields(&["name"], Node::And(vec![term("James"), term("Brown")]))
    );
    assert_eq!(
        q("@title|body:hello"),
        fields(&["title", "body"], term("hello"))
    );
    assert_eq!(q("@f:-x"), fields(&["f"], Node::Not(Box::new(term("x")))));
    assert_eq!(
        q("(@title:hello* | @body:\"exact phrase\")"),
        Node::Or(vec![
            fields(&["title"], Node::Prefix("hello".into())),
            fields(
                &["body"],
                Node::Phrase {
                    terms: vec!["exact".into(), "phrase".into()],
                    slop: None,
                    in_order: true
                }
            )
        ])
    );
    assert_eq!(q("@my\\-field:x"), fields(&["my-field"], term("x")));
    assert_eq!(
        q("@f:\"\""),
        Node::EmptyValue {
            field: "f".into(),
            tag_syntax: false
        }
    );
    assert_eq!(q("ismissing(@f)"), Node::Missing("f".into()));
    assert_eq!(
        q("-ismissing(@f)"),
        Node::Not(Box::new(Node::Missing("f".into())))
    );
    assert!(err("@f").starts_with("Syntax error"));
    assert!(err("@f:").starts_with("Syntax error"));
    assert!(err("ismissing(f)").starts_with("Syntax error"));
}

#[test]
fn tags() {
    assert_eq!(q("@t:{a}"), tag("t", vec![exact("a")]));
    assert_eq!(q("@t:{ a | b }"), tag("t", vec![exact("a"), exact("b")]));
    assert_eq!(q("@t:{New York}"), tag("t", vec![exact("New York")]));
    assert_eq!(
        q(r"@t:{abc\-123 | a\.b | with\ space | \@x\:y}"),
        tag(
            "t",
            vec![
                exact("abc-123"),
                exact("a.b"),
                exact("with space"),
                exact("@x:y")
            ]
        )
    );
    assert_eq!(
        q("@t:{pre* | *suf | *mid*}"),
        tag(
            "t",
            vec![
                TagValue::Prefix("pre".into()),
                TagValue::Suffix("suf".into()),
                TagValue::Contains("mid".into())
            ]
        )
    );
    assert_eq!(q("@t:{\"a b\"}"), tag("t", vec![exact("a b")]));
    assert_eq!(
        q("@t:{\"\"}"),
        Node::EmptyValue {
            field: "t".into(),
            tag_syntax: true
        }
    );
    assert_eq!(q("@t:{MixedCase}"), tag("t", vec![exact("MixedCase")]));
    assert_eq!(
        q("-@t:{x}"),
        Node::Not(Box::new(tag("t", vec![exact("x")])))
    );
    let p = params(&[("u", b"user-1"), ("p", b"ab")]);
    assert_eq!(
        parse("@t:{$u | $p*}", &p, 2).map(|q| q.filter),
        Ok(tag(
            "t",
            vec![exact("user-1"), TagValue::Prefix("ab".into())]
        ))
    );
    assert!(err("@t:{}").starts_with("Syntax error"));
    assert!(err("@t:{a|}").starts_with("Syntax error"));
    assert!(err("@t:{a").starts_with("Syntax error"));
    assert_eq!(err("@t:{$nope}"), "No such parameter `nope`");
}

#[test]
fn redisvl_filters() {
    assert_eq!(
        q("@tag:{a|b} @num:[1 (5] -@t:{x}"),
        Node::And(vec![
            tag("tag", vec![exact("a"), exact("b")]),
            num("num", 1.0, true, 5.0, false),
            Node::Not(Box::new(tag("t", vec![exact("x")])))
        ])
    );
    let p = params(&[("vector", b"\x00\x00\x80\x3f")]);
    let query = parse(
        r"(@user_id:{abc\-123} @session:{s1}) => [KNN 10 @embedding $vector AS vector_distance]",
        &p,
        2,
    )
    .unwrap();
    assert_eq!(
        query.filter,
        Node::And(vec![
            tag("user_id", vec![exact("abc-123")]),
            tag("session", vec![exact("s1")])
        ])
    );
    assert_eq!(
        query.knn,
        Some(Knn {
            k: 10,
            field: "embedding".into(),
            vector: b"\x00\x00\x80\x3f".to_vec(),
            ef_runtime: None,
            score_as: Some("vector_distance".into()),
        })
    );
}

#[test]
fn numeric_ranges() {
    assert_eq!(q("@n:[1 5]"), num("n", 1.0, true, 5.0, true));
    assert_eq!(q("@n:[(1 (5]"), num("n", 1.0, false, 5.0, false));
    assert_eq!(
        q("@n:[-inf +inf]"),
        num("n", f64::NEG_INFINITY, true, f64::INFINITY, true)
    );
    assert_eq!(
        q("@n:[-1.5e2, inf]"),
        num("n", -150.0, true, f64::INFINITY, true)
    );
    assert_eq!(q("@n:[.5 1.]"), num("n", 0.5, true, 1.0, true));
    assert_eq!(q("@n:[7]"), num("n", 7.0, true, 7.0, true));
    assert_eq!(q("@n==7"), num("n", 7.0, true, 7.0, true));
    assert_eq!(
        q("@n != 7"),
        Node::Not(Box::new(num("n", 7.0, true, 7.0, true)))
    );
    assert_eq!(q("@n>7"), num("n", 7.0, false, f64::INFINITY, true));
    assert_eq!(q("@n >= 7"), num("n", 7.0, true, f64::INFINITY, true));
    assert_eq!(q("@n<7"), num("n", f64::NEG_INFINITY, true, 7.0, false));
    assert_eq!(q("@n<=-7"), num("n", f64::NEG_INFINITY, true, -7.0, true));
    let p = params(&[("lo", b"2"), ("hi", b"(9"), ("inf", b"inf"), ("bad", b"x")]);
    let with = |text: &str| parse(text, &p, 2).map(|q| q.filter);
    assert_eq!(with("@n:[$lo $hi]"), Ok(num("n", 2.0, true, 9.0, true)));
    assert_eq!(
        with("@n:[($lo $inf]"),
        Ok(num("n", 2.0, false, f64::INFINITY, true))
    );
    assert_eq!(with("@n:[-$lo $lo]"), Ok(num("n", -2.0, true, 2.0, true)));
    assert_eq!(
        with("@n>$lo"),
        Ok(num("n", 2.0, false, f64::INFINITY, true))
    );
    assert_eq!(with("@n:[$inf 5]"), Err("Bad lower range: inf".into()));
    assert_eq!(with("@n:[1 $bad]"), Err("Bad upper range: x".into()));
    assert_eq!(with("@n:[$min 5]"), Err("No such parameter `min`".into()));
    assert_eq!(
        err("@score:[5, -inf]"),
        "Invalid numeric range (min > max): @score:[5.000000 -inf]"
    );
    assert!(err("@n:[min 105]").starts_with("Syntax error"));
    assert!(err("@n:[-inf max]").starts_with("Syntax error"));
    assert!(err("@n:[105 ((300]").starts_with("Syntax error"));
    assert!(err("@n:[1 5").starts_with("Syntax error"));
}

#[test]
fn geo() {
    assert_eq!(
        q("@g:[-0.1757 51.5156 1 km]"),
        Node::Geo {
            field: "g".into(),
            lon: -0.1757,
            lat: 51.5156,
            radius_m: 1000.0
        }
    );
    for (unit, metres) in [("m", 1.0), ("KM", 1000.0), ("mi", 1609.34), ("ft", 0.3048)] {
        assert_eq!(
            q(&format!("@g:[1 2 10 {unit}]")),
            Node::Geo {
                field: "g".into(),
                lon: 1.0,
                lat: 2.0,
                radius_m: 10.0 * metres
            }
        );
    }
    let p = params(&[
        ("r", b"500"),
        ("u", b"m"),
        ("bad", b"bad"),
        ("badu", b"badm"),
    ]);
    let with = |text: &str| parse(text, &p, 2).map(|q| q.filter);
    assert_eq!(
        with("@g:[1 2 $r $u]"),
        Ok(Node::Geo {
            field: "g".into(),
            lon: 1.0,
            lat: 2.0,
            radius_m: 500.0
        })
    );
    assert_eq!(
        with("@g:[1 2 $bad m]"),
        Err("Invalid numeric value (bad) for parameter `bad`".into())
    );
    assert_eq!(
        with("@g:[1 2 $r $badu]"),
        Err("Invalid GeoFilter unit".into())
    );
    assert_eq!(err("@g:[1 2 200 100]"), "Invalid GeoFilter unit");
    assert_eq!(err("@g:[1 2 200 fake]"), "Invalid GeoFilter unit");
    assert_eq!(
        with("@g:[$long 2 1 km]"),
        Err("No such parameter `long`".into())
    );
    assert!(err("@g:[1 badval 3 km]").starts_with("Syntax error"));
    assert!(err("@g:[1 2 3]").starts_with("Syntax error"));
}

#[test]
fn knn() {
    let p = params(&[
        ("vec", b"abcd"),
        ("k", b"3"),
        ("ef", b"40"),
        ("bad", b"zzz"),
    ]);
    let with = |text: &str| parse(text, &p, 2);
    let knn = |k, ef, score_as: Option<&str>| Knn {
        k,
        field: "v".into(),
        vector: b"abcd".to_vec(),
        ef_runtime: ef,
        score_as: score_as.map(str::to_string),
    };
    assert_eq!(
        with("*=>[KNN 5 @v $vec]"),
        Ok(Query {
            filter: Node::All,
            knn: Some(knn(5, None, None))
        })
    );
    assert_eq!(
        with("* => [KNN $k @v $vec EF_RUNTIME $ef AS dist]"),
        Ok(Query {
            filter: Node::All,
            knn: Some(knn(3, Some(40), Some("dist")))
        })
    );
    assert_eq!(
        with("@t:{x}=>[knn 2 @v $vec]=>{$YIELD_DISTANCE_AS: d; $EF_RUNTIME: 8}"),
        Ok(Query {
            filter: tag("t", vec![exact("x")]),
            knn: Some(knn(2, Some(8), Some("d")))
        })
    );
    assert_eq!(
        with("hello=>[KNN 1 @v $vec]").map(|q| q.filter),
        Ok(term("hello"))
    );
    assert_eq!(
        with("*=>[KNN 1 @v $nope]"),
        Err("No such parameter `nope`".into())
    );
    assert_eq!(
        with("*=>[KNN $bad @v $vec]"),
        Err("Invalid numeric value (zzz) for parameter `bad`".into())
    );
    assert_eq!(
        with("*=>[TKOO 4 @v $vec]"),
        Err("Syntax error: Expecting Vector Similarity command at offset 4 near TKOO".into())
    );
    assert!(with("*=>[KNN badval @v $vec]")
        .unwrap_err()
        .starts_with("Syntax error"));
    assert!(with("*=>[KNN 1.5 @v $vec]")
        .unwrap_err()
        .starts_with("Syntax error"));
    assert!(with("*=>[KNN 1 @v $vec")
        .unwrap_err()
        .starts_with("Syntax error"));
    assert!(with("=>[KNN 1 @v $vec]")
        .unwrap_err()
        .starts_with("Syntax error"));
    assert!(with("*=>[KNN 1 @v $vec] extra")
        .unwrap_err()
        .starts_with("Syntax error"));
    assert_eq!(
        with("*=>[KNN 1 @v $vec LUNCHTIME 1]"),
        Err("Invalid option (Error parsing vector similarity parameters)".into())
    );
}

#[test]
fn vector_range() {
    let p = params(&[("vec", b"abcd"), ("r", b"0.5")]);
    let with = |text: &str| parse(text, &p, 2).map(|q| q.filter);
    let range = |radius, d: Option<&str>| Node::VectorRange {
        field: "v".into(),
        radius,
        vector: b"abcd".to_vec(),
        distance_as: d.map(str::to_string),
    };
    assert_eq!(with("@v:[VECTOR_RANGE 0.2 $vec]"), Ok(range(0.2, None)));
    assert_eq!(
        with("@v:[VECTOR_RANGE $r $vec]=>{$YIELD_DISTANCE_AS: dist}"),
        Ok(range(0.5, Some("dist")))
    );
    assert_eq!(
        with("@v:[VECTOR_RANGE 0.2 $vec]=>{$yield_distance_as: d; $epsilon: 0.01} @t:{a}"),
        Ok(Node::And(vec![
            range(0.2, Some("d")),
            tag("t", vec![exact("a")])
        ]))
    );
    assert_eq!(
        with("@v:[VECTOR_RANGE 0.2 $nope]"),
        Err("No such parameter `nope`".into())
    );
    assert!(with("@v:[VECTOR_RANGE x $vec]")
        .unwrap_err()
        .starts_with("Syntax error"));
}

#[test]
fn params_in_text() {
    let p = params(&[("w", b"hello"), ("f", b"hel")]);
    let with = |text: &str| parse(text, &p, 2).map(|q| q.filter);
    assert_eq!(with("$w"), Ok(term("hello")));
    assert_eq!(with("@t:$w"), Ok(fields(&["t"], term("hello"))));
    assert_eq!(with("$f*"), Ok(Node::Prefix("hel".into())));
    assert_eq!(
        with("%$w%"),
        Ok(Node::Fuzzy {
            term: "hello".into(),
            distance: 1
        })
    );
    assert_eq!(with("@foo:$param"), Err("No such parameter `param`".into()));
    assert_eq!(
        with("@foo:(%$param%)"),
        Err("No such parameter `param`".into())
    );
}

#[test]
fn attribute_errors() {
    assert_eq!(err("hello=>{$slop: x}"), "Invalid value (x) for `slop`");
    assert_eq!(
        err("hello=>{$inorder: maybe}"),
        "Invalid value (maybe) for `inorder`"
    );
    assert_eq!(
        err("hello=>{$weight: -1}"),
        "Invalid value (-1) for `weight`"
    );
    assert_eq!(
        err("hello=>{$phonetic: maybe}"),
        "Invalid value (maybe) for `phonetic`"
    );
    assert_eq!(err("hello=>{$color: red}"), "Invalid attribute color");
    assert_eq!(
        err("hello=>{$yield_distance_as: d}"),
        "Invalid attribute yield_distance_as"
    );
    assert!(err("hello=>{slop: 1}").starts_with("Syntax error"));
    assert!(err("hello=>{$slop 1}").starts_with("Syntax error"));
}

#[test]
fn syntax_errors_name_offset_and_token() {
    assert_eq!(err("hello )"), "Syntax error at offset 6 near hello");
    assert_eq!(err("(hello"), "Syntax error at offset 1 near hello");
    assert_eq!(err("a | | b"), "Syntax error at offset 4 near a");
    assert_eq!(err("foo:bar"), "Syntax error at offset 3 near foo");
    // RediSearch 2.10 names the last word, field or parameter before the failing token.
    assert_eq!(err("((("), "Syntax error at offset 2 near ");
    assert_eq!(err("@title:("), "Syntax error at offset 7 near title");
    assert_eq!(err("@n:[1 2] )"), "Syntax error at offset 9 near 2");
    assert_eq!(err("hel* )"), "Syntax error at offset 5 near hel");
    assert_eq!(err("%hallo% )"), "Syntax error at offset 8 near hallo");
    assert!(err("w'wild*'").starts_with("Syntax error at offset 0"));
}

proptest! {
    #[test]
    fn never_panics(text in "\\PC{0,40}") {
        let _ = parse(&text, &params(&[("p", b"1")]), 2);
        let _ = parse(&text, &HashMap::new(), 1);
    }

    #[test]
    fn never_panics_on_query_alphabet(text in "[a-z0-9@$:{}\\[\\]()|*%\"'=>~;, \\\\.+-]{0,40}") {
        let _ = parse(&text, &params(&[("p", b"1"), ("v", b"abcd")]), 2);
    }
}

#[test]
fn a_field_modifier_inside_another_is_dialect_1s() {
    let none = HashMap::new();
    // Dialect 1: the inner modifier wins.
    let inner = parse("@title:(@num:[0 10])", &none, 1).map(|q| q.filter);
    assert!(
        matches!(&inner, Ok(Node::Fields { node, .. }) if matches!(**node, Node::Numeric { .. })),
        "{inner:?}"
    );
    // Dialect 2: RediSearch's error at the inner `@`.
    assert_eq!(
        parse("@title:(@num:[0 10])", &none, 2).map(|q| q.filter),
        Err("Syntax error at offset 8 near num".to_string())
    );
    assert_eq!(
        parse("@title:(hello @num:[0 10])", &none, 2).map(|q| q.filter),
        Err("Syntax error at offset 14 near num".to_string())
    );
    // Side by side is no nesting.
    assert!(parse("@title:hello @num:[0 10]", &none, 2).is_ok());
}
