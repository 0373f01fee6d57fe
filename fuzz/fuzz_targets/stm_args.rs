//! STM argument parsing and dispatch: an arbitrary argument vector for one STM command (the first
//! line names it, `STM.` added when missing; one argument per following line) runs on a fresh
//! in-process state. It must not panic, and an error reply must have written nothing: no key,
//! version or expiry changed, no STM row operation queued.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stmd_fuzz::{argv_of, support::run_on_fresh_state};

fuzz_target!(|data: &[u8]| {
    let mut argv = argv_of(data);
    let name = if argv[0].len() >= 4 && argv[0][..4].eq_ignore_ascii_case(b"STM.") {
        argv[0].to_vec()
    } else {
        [b"STM.", argv[0]].concat()
    };
    argv[0] = &name;
    if let Err(what) = run_on_fresh_state(&argv) {
        panic!("{what}: {argv:?}");
    }
});
