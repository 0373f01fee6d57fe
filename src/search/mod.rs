//! Secondary indexes over HASH and JSON keys, as RediSearch serves them through the `FT.*`
//! commands (Redis 8 ships them in its core; the agent frameworks' Redis libraries need them).
//!
//! - [`query`]: the query language (`FT.SEARCH`/`FT.AGGREGATE`'s first argument) parsed into a
//!   tree, without knowing any index.
//! - [`aggregate`]: `FT.AGGREGATE`'s pipeline (GROUPBY/REDUCE, APPLY, FILTER, SORTBY, LIMIT) over
//!   rows of loaded fields.
//!
//! The indexes follow the keyspace through the store's change record (`store::changes`): after a
//! command, the keys it wrote are read again and each index that covers them is brought up to
//! date before the reply goes out, so a document is searchable as soon as its write is
//! acknowledged. An index's lock is taken before any shard lock (a write never holds a shard lock
//! while it waits for an index), so the value read under the index lock is the latest one and
//! two writers of one key cannot leave the index with the older value.

pub mod aggregate;
pub mod query;
pub mod vector;
