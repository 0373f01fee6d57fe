//! The connections a log of commands is replayed through, obeyed as a primary's are: no ACL, no
//! blocking. An append-only file's at load ([`LogReplay`]: a server of its own over the store, no
//! scope-row sink, as the log holds no STM command; `aof::load` parses the files and drives it),
//! and the primary's stream on a replica ([`PrimaryClient`], on this server; `replication::link`
//! reads the stream and drives it).

use super::{dispatch, ConnState, Ctx, Shared};
use crate::clients::ClientInfo;
use crate::config::Config;
use crate::protocol::Reply;
use crate::snapshot::Loaded;
use crate::store::Store;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;

pub struct LogReplay {
    shared: Shared,
    state: ConnState,
}

impl LogReplay {
    /// A server of its own over `store`, with the function libraries and the search indexes of
    /// the log's base (an RDB image's, in `base`).
    pub fn over(
        config: &Config,
        store: &Arc<Store>,
        addr: SocketAddr,
        base: &Loaded,
    ) -> Result<LogReplay, String> {
        let functions = &base.functions;
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
        if !base.search.is_empty() {
            // The increments' FT.* commands and writes apply to the base's indexes.
            shared.search.restore_all(&base.search, &base.aliases);
            shared.events.set_indexing(shared.search.any());
        }
        let addr = crate::clients::ClientAddr::Tcp(addr);
        let info = shared.clients.register(addr.clone(), addr, -1);
        let mut state = ConnState::new(info, true);
        state.from_primary = true;
        Ok(LogReplay { shared, state })
    }
}

/// Runs a command that is obeyed, never waited for: a logged one, or the primary's on a replica.
/// A blocking command that found nothing is done; what it left to wait with is dropped.
pub(super) fn obey(shared: &Shared, state: &mut ConnState, args: &[&[u8]]) -> Reply {
    let reply = dispatch(&mut Ctx::new(shared, state), args);
    state.block = None;
    state.wait = None;
    state.blocked_read = None;
    state.postponed = false;
    reply
}

impl crate::aof::load::Replayer for LogReplay {
    fn run(&mut self, args: &[&[u8]]) -> Reply {
        obey(&self.shared, &mut self.state, args)
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

    fn indexes(&mut self) -> crate::search::Registry {
        let empty = crate::search::Registry::new(self.shared.store.clone());
        std::mem::replace(&mut self.shared.search, empty)
    }
}

/// Redis's master client on a replica: the connection the primary's commands run on.
pub struct PrimaryClient {
    shared: Arc<Shared>,
    state: ConnState,
}

impl PrimaryClient {
    /// The connection of the link whose client record is `info`, in database `db`.
    pub fn new(shared: &Arc<Shared>, info: Arc<ClientInfo>, db: usize) -> PrimaryClient {
        let mut state = ConnState::new(info, true);
        state.from_primary = true;
        state.db = db;
        PrimaryClient {
            shared: shared.clone(),
            state,
        }
    }
}

impl crate::replication::link::Applier for PrimaryClient {
    fn run(&mut self, args: &[&[u8]]) -> crate::replication::link::Ran {
        use crate::replication::link::Ran;
        let reply = obey(&self.shared, &mut self.state, args);
        if std::mem::take(&mut self.state.script_wait) {
            let turn = std::mem::take(&mut self.state.script_turn);
            return Ran::AfterScript { turn };
        }
        Ran::Done(reply)
    }

    fn in_multi(&self) -> bool {
        self.state.multi.is_some()
    }

    fn db(&self) -> usize {
        self.state.db
    }

    fn publish(&self) {
        super::client::publish(&self.state, 0);
    }
}
