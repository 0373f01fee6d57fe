//! The codec against payloads recorded from redis-server 7.0.15 (Debian's package): each was made
//! by the commands in its comment and read with `redis-cli --no-raw DUMP key`. To re-record, run
//! the same commands on a fresh redis-server and paste the new payloads (the corpus file
//! `conformance/corpus/dump.txt` holds the same ones and compares them live).

use super::*;
use crate::store::encoding::Limits;
use crate::store::Value;

fn decoded(payload: &[u8]) -> Value {
    restore(payload, &Limits::default()).unwrap_or_else(|e| panic!("{e}: {payload:?}"))
}

fn text(items: impl IntoIterator<Item = impl AsRef<[u8]>>) -> Vec<String> {
    items
        .into_iter()
        .map(|b| String::from_utf8_lossy(b.as_ref()).into_owned())
        .collect()
}

/// Decodes a Redis payload, checks its contents, and checks that encoding it again gives
/// Redis's bytes.
fn check(payload: &[u8], expect: impl Fn(&Value)) {
    let value = decoded(payload);
    expect(&value);
    assert_eq!(dump(&value), payload, "re-encoded differently");
}

#[test]
fn strings_from_redis() {
    let string = |want: &'static str| {
        move |v: &Value| match v {
            Value::Str(s) => assert_eq!(&s[..], want.as_bytes()),
            other => panic!("{other:?}"),
        }
    };
    // SET k hello
    check(b"\x00\x05hello\x0a\x00cr\xdfve4 \x0a", string("hello"));
    // SET k 12345 (int16), SET k -1 (int8), SET k 4294967296 (too wide: digits)
    check(
        b"\x00\xc190\x0a\x00\x9d\x94\xea\x27\x93\xfc\x08\xb9",
        string("12345"),
    );
    check(
        b"\x00\xc0\xff\x0a\x00\x0c\x93\x7e\x24\x85\x08\x9d\xc5",
        string("-1"),
    );
    check(
        b"\x00\x0a4294967296\x0a\x00\xa5\xa3\x89\xc8\x1a\x8cFV",
        string("4294967296"),
    );
    // SET k with "memory of a conversation, " eight times: LZF
    let long = "memory of a conversation, ".repeat(8);
    let leaked: &'static str = Box::leak(long.into_boxed_str());
    check(b"\x00\xc3\x22\x40\xd0\x1amemory of a conversation, m\xe0\xaa\x19\x01, \x0a\x00\x90\xf1\xabT\x89\xba\xb6\x5e", string(leaked));
}

#[test]
fn collections_from_redis() {
    // RPUSH l a b 1 -5 300 "a longer element of the list": quicklist, one listpack node
    check(b"\x12\x01\x0233\x00\x00\x00\x06\x00\x81a\x02\x81b\x02\x01\x01\xdf\xfb\x02\xc1,\x02\x9ca longer element of the list\x1d\xff\x0a\x00\xd4\xcew\x0bI\x12\xd0\xee", |v| match v {
        Value::List(items) => assert_eq!(
            text(items.iter()),
            ["a", "b", "1", "-5", "300", "a longer element of the list"]
        ),
        other => panic!("{other:?}"),
    });
    // HSET h f v n 5 big -70000: listpack
    check(b"\x10\x1c\x1c\x00\x00\x00\x06\x00\x81f\x02\x81v\x02\x81n\x02\x05\x01\x83big\x04\xf2\x90\xee\xfe\x04\xff\x0a\x00f\xad\xd0\x06b\xa2\xd9\xaa", |v| match v {
        Value::Hash(h) => assert_eq!(
            text(h.iter().flat_map(|(f, v)| [f, v])),
            ["f", "v", "n", "5", "big", "-70000"]
        ),
        other => panic!("{other:?}"),
    });
    // SADD s 3 1 2 -100000: intset of 32-bit integers
    check(b"\x0b\x18\x04\x00\x00\x00\x04\x00\x00\x00\x60y\xfe\xff\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x0a\x00\x8b\x0fx\x02\xaa\x2aw\xa0", |v| match v {
        Value::Set(s) => assert_eq!(text(s.iter()), ["-100000", "1", "2", "3"]),
        other => panic!("{other:?}"),
    });
    // SADD s only: hash table
    check(
        b"\x02\x01\x04only\x0a\x00a\x90\xc4\xde\x03\x2a-h",
        |v| match v {
            Value::Set(s) => assert_eq!(text(s.iter()), ["only"]),
            other => panic!("{other:?}"),
        },
    );
    // ZADD z 1 a 2.5 b -3 c 0.1 d: listpack (LZF-compressed), 0.1 spelled by %.17g
    check(b"\x11\xc3\x292\x132\x00\x00\x00\x08\x00\x81c\x02\xdf\xfd\x02\x81d\x02\x930.10\xe0\x05\x00\x0f1\x14\x81a\x02\x01\x01\x81b\x02\x832.5\x04\xff\x0a\x00\x23\x82C\xd2\x17\x25\xe8\x90", |v| match v {
        Value::ZSet(z) => assert_eq!(
            z.iter().map(|(m, s)| (String::from_utf8_lossy(m).into_owned(), s)).collect::<Vec<_>>(),
            [("c".into(), -3.0), ("d".into(), 0.1), ("a".into(), 1.0), ("b".into(), 2.5)]
        ),
        other => panic!("{other:?}"),
    });
}

#[test]
fn older_and_newer_forms_are_read() {
    // Hand-made: a list as an RDB 9 ziplist (type 10); Redis 7.0 restores it the same way.
    match decoded(b"\x0a\x18\x18\x00\x00\x00\x14\x00\x00\x00\x04\x00\x00\x02ab\x04\xf8\x02\xc0,\x01\x04\xfe\xfb\xff\x09\x00\x0fW\xa1b\xaf\x16\x908") {
        Value::List(items) => assert_eq!(text(items.iter()), ["ab", "7", "300", "-5"]),
        other => panic!("{other:?}"),
    }
    // Redis 7.2's small sets of strings: a listpack (type 20) in an RDB 11 payload.
    let mut lp = listpack::ListpackWriter::default();
    lp.push(b"x");
    lp.push(b"12");
    let mut body = vec![types::SET_LISTPACK];
    encode::put_string(&mut body, &lp.finish());
    let mut payload = body.clone();
    payload.extend_from_slice(&11u16.to_le_bytes());
    let crc = CRC64.checksum(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    match decoded(&payload) {
        Value::Set(s) => assert_eq!(text(s.iter()), ["x", "12"]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn corrupt_values_are_refused() {
    // Hand-made, valid footers: a string whose length runs into the footer (Redis 7.0 reads the
    // footer's bytes into it), a hash with a repeated field (Redis accepts it unless
    // sanitize-dump-payload is on), an empty list, an unknown type, our STM type cut short.
    for payload in [
        &b"\x00\x05ab\x0a\x00\x27\xa9\xb3T\xd1\x94\xf9\x9e"[..],
        b"\x04\x02\x01f\x01v\x01f\x01w\x0a\x00\xa2\xab\x60\xbb\x0f\xc3\xfd\xc7",
        b"\x12\x00\x0a\x00i\xf6\x84\x5bj\x1b\xbfW",
        b"\x08\x00\x0a\x00\xc1\xce\xc9A\x5e\xa5\xcd\x10",
        b"\xc8\x01\x00\x0a\x007\xa3\xed\xc0c\x60\xd9\x25",
    ] {
        assert_eq!(
            restore(payload, &Limits::default()).err(),
            Some(RdbError::BadData),
            "{payload:?}"
        );
    }
    // Every cut of a valid payload's body is refused, never a panic.
    let body = unseal(b"\x11\xc3\x292\x132\x00\x00\x00\x08\x00\x81c\x02\xdf\xfd\x02\x81d\x02\x930.10\xe0\x05\x00\x0f1\x14\x81a\x02\x01\x01\x81b\x02\x832.5\x04\xff\x0a\x00\x23\x82C\xd2\x17\x25\xe8\x90").expect("valid");
    for cut in 0..body.len() {
        assert!(
            decode_value(&body[..cut], &Limits::default()).is_err(),
            "cut at {cut}"
        );
    }
}

#[test]
fn every_value_round_trips() {
    use crate::store::zset::ZSet;
    let mut zset = ZSet::default();
    let limit = crate::store::encoding::Limits::default().zset();
    for i in 0..300 {
        zset.insert(
            format!("member-{i}").into(),
            f64::from(i) / 3.0 - 7.0,
            limit,
        );
    }
    zset.insert("inf".into(), f64::INFINITY, limit);
    zset.insert("-zero".into(), -0.0, limit);
    let values = vec![
        Value::Str("x".repeat(100_000).into()),
        Value::Str("".into()),
        Value::List(Box::new(
            (0..20_000).map(|i| i.to_string().into()).collect(),
        )),
        Value::Hash((0..200).map(|i| (format!("f{i}"), "v".repeat(i))).collect()),
        Value::Set(
            (0..600)
                .map(|i| (i * 1_000_000_007i64).to_string())
                .collect(),
        ),
        Value::ZSet(zset),
        Value::Stm(Box::new(stm::tests::sample_entry())),
    ];
    for value in values {
        let payload = dump(&value);
        let back = restore(&payload, &Limits::default()).expect("round trip");
        assert_eq!(describe(&back), describe(&value));
        assert_eq!(dump(&back), payload);
    }
}

/// RESTORE builds the compact forms within the configured thresholds, not Redis's defaults: a
/// payload of 5 members stays compact under the defaults and is converted under a limit of 4.
#[test]
fn restore_uses_the_configured_thresholds() {
    use crate::config::values::Thresholds;
    use crate::store::encoding::DEFAULTS;
    let limits = Limits::default();
    let mut zset = crate::store::zset::ZSet::default();
    let mut hash = crate::store::value::Hash::default();
    let mut set = crate::store::value::Set::default();
    for i in 0..5 {
        zset.insert(format!("m{i}").into(), f64::from(i), limits.zset());
        hash.insert(format!("f{i}").as_bytes(), b"v", limits.hash());
        set.insert(format!("s{i}").as_bytes(), limits.set());
    }
    let payloads = [
        dump(&Value::ZSet(zset)),
        dump(&Value::Hash(hash)),
        dump(&Value::Set(set)),
    ];
    let compact = |value: &Value| match value {
        Value::ZSet(z) => z.is_small(),
        Value::Hash(h) => h.is_packed(),
        Value::Set(s) => s.is_packed(),
        _ => unreachable!("only collections here"),
    };
    for payload in &payloads {
        assert!(compact(&restore(payload, &limits).expect("valid")));
    }
    limits.configure(&Thresholds {
        hash_max_listpack_entries: 4,
        set_max_listpack_entries: 4,
        zset_max_listpack_entries: 4,
        ..DEFAULTS
    });
    for payload in &payloads {
        let back = restore(payload, &limits).expect("valid");
        assert!(!compact(&back), "{back:?}");
        assert_eq!(&dump(&back), payload, "the same contents either way");
    }
}

/// A value's contents in its own order (hash tables' debug output has a random order).
fn describe(value: &Value) -> Vec<String> {
    match value {
        Value::Str(s) => text([s]),
        Value::List(items) => text(items.iter()),
        Value::Hash(h) => text(h.iter().flat_map(|(f, v)| [f, v])),
        Value::Set(s) => text(s.iter()),
        Value::ZSet(z) => z.iter().map(|(m, s)| format!("{m:?}={s:?}")).collect(),
        Value::Stm(entry) => vec![format!("{entry:?}")],
        Value::Stream(s) => vec![format!("{s:?}")],
        Value::Json(doc) => vec![doc.tree().to_string()],
    }
}

mod properties {
    use super::super::*;
    use proptest::prelude::*;

    /// Valid bodies to damage: a listpack zset (LZF inside), a quicklist, an intset, a hash table.
    fn bodies() -> Vec<Vec<u8>> {
        let values = [
            crate::store::Value::List(Box::new((0..40).map(|i| format!("e{i}").into()).collect())),
            crate::store::Value::Set((0..20).map(|i| i.to_string()).collect()),
            crate::store::Value::Hash((0..3).map(|i| (format!("f{i}"), "x".repeat(70))).collect()),
            crate::store::Value::Stm(Box::new(stm::tests::sample_entry())),
            crate::store::Value::Stream(Box::new(sample_stream())),
            crate::store::Value::Json(Box::new(
                serde_json::json!({"a": [1, 2.5, "x"], "b": null}).into(),
            )),
        ];
        values.iter().map(encode_value).collect()
    }

    /// A stream with two nodes' worth of entries, a deleted one and a group with a pending entry.
    fn sample_stream() -> crate::store::stream::Stream {
        use crate::store::stream::{Consumer, Fields, Group, Nack, StreamId};
        let mut s = crate::store::stream::Stream::default();
        for i in 1..=120u64 {
            s.append(
                StreamId::new(i, 0),
                Fields::pack(&[&b"f"[..], format!("v{i}").as_bytes()]),
            );
        }
        s.delete(StreamId::new(2, 0));
        let name = bytes::Bytes::from_static(b"c");
        let mut consumer = Consumer::default();
        consumer.pel.insert(StreamId::new(1, 0));
        let mut group = Group {
            last_id: StreamId::new(1, 0),
            entries_read: 1,
            pel: Default::default(),
            consumers: Default::default(),
        };
        group.pel.insert(
            StreamId::new(1, 0),
            Nack {
                consumer: name.clone(),
                delivery_time: 5,
                delivery_count: 1,
            },
        );
        group.consumers.insert(name, consumer);
        s.groups.insert(bytes::Bytes::from_static(b"g"), group);
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_bodies_never_panic(body in prop::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_value(&body, &crate::store::encoding::Limits::default());
        }

        #[test]
        fn damaged_bodies_never_panic(
            which in 0usize..4,
            flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            cut in any::<usize>(),
        ) {
            let mut body = bodies().swap_remove(which);
            for (at, byte) in flips {
                let len = body.len();
                body[at % len] = byte;
            }
            let len = body.len();
            body.truncate(cut % (len + 1));
            let _ = decode_value(&body, &crate::store::encoding::Limits::default());
        }

        #[test]
        fn lzf_round_trips(input in prop::collection::vec(0u8..4, 1..2000)) {
            let packed = lzf::compress(&input, input.len() + 64);
            prop_assert!(packed.is_some());
            let packed = packed.unwrap_or_default();
            prop_assert_eq!(lzf::decompress(&packed, input.len()), Some(input));
        }
    }
}

/// Hashes with field TTLs (Redis 7.4's types 24 and 25) come back with every TTL, in both forms;
/// a hash without TTLs keeps the 7.0 encodings, so Redis 7.0 and 7.2 still read it.
#[test]
fn hashes_with_field_ttls_round_trip_in_redis_7_4_types() {
    use crate::store::value::Hash;
    let limit = Limits::default().hash();
    for (fields, value_len, kind) in [
        (3, 5, types::HASH_LISTPACK_EX),
        (200, 5, types::HASH_METADATA),
    ] {
        let mut hash = Hash::default();
        for i in 0..fields {
            hash.insert(
                format!("f{i}").as_bytes(),
                "v".repeat(value_len).as_bytes(),
                limit,
            );
        }
        hash.set_ttl(b"f1", 1_900_000_000_123);
        hash.set_ttl(b"f2", 1_800_000_000_000);
        let payload = dump(&Value::Hash(hash.clone()));
        assert_eq!(payload[0], kind);
        assert_eq!(
            payload[1..9],
            1_800_000_000_000u64.to_le_bytes(),
            "the earliest TTL comes first"
        );
        match decoded(&payload) {
            Value::Hash(back) => {
                let theirs: Vec<_> = hash.iter_with_ttls().collect();
                let ours: Vec<_> = back.iter_with_ttls().collect();
                assert_eq!(ours, theirs);
            }
            other => panic!("{other:?}"),
        }
    }
    let plain: Hash = [("f", "v")].into_iter().collect();
    assert_eq!(dump(&Value::Hash(plain))[0], types::HASH_LISTPACK);
    // A field TTL of 2^48 or more is refused, as Redis refuses it.
    let mut hash = Hash::default();
    hash.insert(b"f", b"v", limit);
    hash.set_ttl(b"f", 1 << 48);
    assert!(restore(&dump(&Value::Hash(hash)), &Limits::default()).is_err());
}
