//! Property tests run in CI: the request decoder never panics and decodes a stream the same however
//! it is split, and arbitrary STM argument vectors never panic and never write on error.

use crate::common;
use crate::fuzz_support;

use fuzz_support::{decode_split, decode_whole, run_on_fresh_state};
use proptest::prelude::*;

fn multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    common::resp(&args.iter().map(Vec::as_slice).collect::<Vec<_>>())
}

fn request() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(prop::collection::vec(any::<u8>(), 0..24), 1..6).prop_map(|a| multibulk(&a)),
        1 => "[A-Za-z]{1,8}( [A-Za-z0-9\"']{0,8}){0,3}\r?\n".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..16),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_split_decodes_like_one_piece(
        requests in prop::collection::vec(request(), 1..8),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let stream: Vec<u8> = requests.concat();
        prop_assert_eq!(decode_split(&stream, &cuts), decode_whole(&stream));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_whole(&bytes);
        let _ = decode_split(&bytes, &[1, 7, 33]);
    }
}

const WORDS: &[&str] = &[
    "USER",
    "CHANNEL",
    "SERVER",
    "PARENT",
    "PRIVACY",
    "STOP",
    "MSG",
    "REPLY",
    "PERSONA",
    "LINEAGE",
    "TEXT",
    "SET",
    "EXCLUDE",
    "LIMIT",
    "FORMAT",
    "BY",
    "KEY",
    "BOT",
    "OTHERS",
    "CRUDE",
    "MODE",
    "CRUDE_SUMMARY",
    "CADENCE",
    "CROSS-SERVER",
    "NOW",
    "JSON",
    "RESP",
    "DM",
    "FULL",
    "user",
    "model",
    "-",
    "0",
    "1",
    "7",
    "-3",
    "u1",
    "c1",
    "s1",
    "",
    "a:b",
    "x y",
    "shortterm:user:u1:c1",
    "shortterm:server:s1:c1:7",
    "99999999999999999999",
    "héllo",
    "<:e:123456789012345678>",
];

fn stm_command() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let name = prop::sample::select(vec![
        "STM.CAPTURE",
        "STM.GET",
        "STM.TICK",
        "STM.SUMMARY",
        "STM.CATEGORIES",
        "STM.RECENT",
        "STM.FORGET",
        "STM.CONTEXT",
    ]);
    let arg = prop_oneof![
        4 => prop::sample::select(WORDS.to_vec()).prop_map(|w| w.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..12),
    ];
    (name, prop::collection::vec(arg, 0..16)).prop_map(|(n, mut args)| {
        args.insert(0, n.as_bytes().to_vec());
        args
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn stm_commands_never_panic_and_never_write_on_error(args in stm_command()) {
        let argv: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        if let Err(what) = run_on_fresh_state(&argv) {
            return Err(TestCaseError::fail(what));
        }
    }
}
