//! Arbitrary bytes as a client would send them: decoded like a connection does, every request run
//! through the generic dispatch on one in-process connection (so MULTI, SUBSCRIBE, CLIENT, CONFIG
//! SET... change what follows; a blocking command times out at once), and every reply encoded in RESP2 and RESP3. Nothing may panic.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use stmd::commands::{self, Ctx};
use stmd_fuzz::support::{decode_whole, in_process, new_conn, Event};

fuzz_target!(|data: &[u8]| {
    let shared = in_process();
    let mut conn = new_conn(&shared);
    let mut out = BytesMut::new();
    for event in decode_whole(data) {
        let Event::Request(args) = event else { break };
        if args.is_empty() {
            continue; // as a connection does with an empty inline line
        }
        let argv: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let reply = commands::dispatch(&mut Ctx::new(&shared, &mut conn), &argv);
        // A command that would block times out at once, as its deadline passing would do.
        let reply = match conn.block.take() {
            Some(block) => {
                conn.wait = None;
                block.timeout_reply
            }
            None => reply,
        };
        reply.encode(false, &mut out);
        reply.encode(true, &mut out);
        out.clear();
        if conn.close_after_reply {
            break;
        }
    }
});
