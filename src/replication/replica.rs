//! The replica's side of replication: REPLICAOF, the link to a primary, the full sync and the
//! stream of the primary's writes applied here.

/// The link to a primary, when this node follows one.
#[derive(Default)]
pub struct Replica {}
