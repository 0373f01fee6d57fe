//! The request decoder: never panics, never consumes or points past its input, decides each
//! request from its own bytes only, and decodes the stream the same when it arrives in two pieces
//! split where the fuzzer says (the first two bytes of the input choose the split).
#![no_main]

use libfuzzer_sys::fuzz_target;
use stmd_fuzz::support::{decode_split, decode_whole};

fuzz_target!(|data: &[u8]| {
    let (split, stream) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => return,
    };
    assert_eq!(decode_split(stream, &[split]), decode_whole(stream));
});
