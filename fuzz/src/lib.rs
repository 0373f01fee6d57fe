//! Shared by the fuzz targets: the checks of the property tests (one file, included from the main
//! crate's tests) and the input format of the argument-vector targets.

#[path = "../../tests/integration/fuzz_support/mod.rs"]
pub mod support;

/// An argument vector from fuzzer bytes: one argument per line (`\n`), so seeds stay readable and
/// libFuzzer's dictionary words splice in as whole arguments. Arguments cannot hold `\n`; the
/// `decode` and `commands` targets cover arbitrary bytes.
pub fn argv_of(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == b'\n').collect()
}
