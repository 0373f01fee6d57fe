//! The byte stream a connection runs over: plain TCP, TLS or the Unix socket. A trait of its own
//! at the bottom layer, so that a client's connection and the replication links (a replica's link
//! to its primary, a primary's feed to a replica) share it without knowing each other.

use tokio::io::{AsyncRead, AsyncWrite};

/// Any stream a connection may run over.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}
