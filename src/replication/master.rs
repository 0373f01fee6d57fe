//! The primary's side of replication: the backlog, the replicas fed from it, and the commands
//! that go into it.

/// The replicas attached to this node and the stream they are fed.
#[derive(Default)]
pub struct Master {}
