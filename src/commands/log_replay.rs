//! The connection an append-only file's commands are replayed through at load: a server of its
//! own over the store (no scope-row sink: the log holds no STM command), whose commands come as
//! a primary's do: no ACL, no blocking. `aof::load` parses the files and drives it.

use super::{dispatch, ConnState, Ctx, Shared};
use crate::config::Config;
use crate::protocol::Reply;
use crate::store::Store;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;

pub struct LogReplay {
    shared: Shared,
    state: ConnState,
}

impl LogReplay {
    /// A server of its own over `store`, with the libraries of the log's base (`functions`).
    pub fn over(
        config: &Config,
        store: &Arc<Store>,
        addr: SocketAddr,
        functions: &[Bytes],
    ) -> Result<LogReplay, String> {
        let shared = Shared::new(
            config.clone(),
            addr,
            store.clone(),
            crate::scope_rows::PersistHandle::disabled(),
        )
        .map_err(|e| e.to_string())?;
        if !functions.is_empty() {
            shared
                .scripting
                .engine()
                .restore_functions(
                    functions,
                    crate::scripting::functions::RestorePolicy::Append,
                )
                .map_err(|e| format!("cannot load the base's functions: {e}"))?;
        }
        let addr = crate::clients::ClientAddr::Tcp(addr);
        let info = shared.clients.register(addr.clone(), addr, -1);
        let mut state = ConnState::new(info, true);
        state.from_primary = true;
        Ok(LogReplay { shared, state })
    }
}

impl crate::aof::load::Replayer for LogReplay {
    fn run(&mut self, args: &[&[u8]]) -> Reply {
        let reply = dispatch(&mut Ctx::new(&self.shared, &mut self.state), args);
        // Nothing in a log blocks or waits: what a command left for that is dropped.
        self.state.block = None;
        self.state.wait = None;
        self.state.blocked_read = None;
        reply
    }

    fn in_multi(&self) -> bool {
        self.state.multi.is_some()
    }

    fn discard_multi(&mut self) {
        self.state.multi = None;
        self.state.multi_failed = false;
    }

    fn select_first_db(&mut self) {
        self.state.db = 0;
    }

    fn functions(&self) -> Vec<Bytes> {
        self.shared.scripting.engine().functions.codes()
    }
}
