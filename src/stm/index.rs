//! STM entries by owner and channel, so STM.RECENT, STM.CONTEXT and STM.FORGET touch only the
//! keys they need instead of scanning the keyspace. An entry declares its owner (user or server,
//! by scope) and its channel as tags; the keyspace's tag index keeps them exact (see
//! `crate::store::tags`).

use super::{Scope, StmEntry};
use crate::store::tags::{Tag, TagIndex, TagKind, Tags};
use crate::store::Keyspace;
use bytes::Bytes;

/// The user of a user-scope entry.
const USER: TagKind = TagKind(0);
/// The server of a server-scope entry.
const SERVER: TagKind = TagKind(1);
/// The channel of every entry, both scopes.
const CHANNEL: TagKind = TagKind(2);

impl StmEntry {
    /// The names this entry is found under: its owner and its channel.
    pub fn tags(&self) -> Tags<'_> {
        let owner = match (self.scope, self.user(), self.server()) {
            (Scope::User, Some(id), _) => Some(Tag { kind: USER, id }),
            (Scope::Server, _, Some(id)) => Some(Tag { kind: SERVER, id }),
            _ => None,
        };
        [
            owner,
            Some(Tag {
                kind: CHANNEL,
                id: self.channel(),
            }),
        ]
    }
}

/// The STM view of one database's tag index.
pub struct StmIndex<'a>(&'a TagIndex);

/// The STM index of `space`.
pub fn of(space: &Keyspace) -> StmIndex<'_> {
    StmIndex(&space.tags)
}

impl StmIndex<'_> {
    /// Keys of the user-scope entries of `user`.
    pub fn user_keys(&self, user: &[u8]) -> Vec<Bytes> {
        self.0.keys(USER, user)
    }

    /// Keys of the server-scope entries of `server`.
    pub fn server_keys(&self, server: &[u8]) -> Vec<Bytes> {
        self.0.keys(SERVER, server)
    }

    /// Keys of every entry of `channel`.
    pub fn channel_keys(&self, channel: &[u8]) -> Vec<Bytes> {
        self.0.keys(CHANNEL, channel)
    }

    /// Number of STM entries (each is indexed under its channel exactly once).
    pub fn len(&self) -> usize {
        self.0.count(CHANNEL)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
