//! Sockets below every layer: the byte stream a connection runs over, and the plain TCP listener
//! the server starts with and CONFIG SET port makes anew. The stream is a trait of its own here so
//! that a client's connection and the replication links (a replica's link to its primary, a
//! primary's feed to a replica) share it without knowing each other.

use std::net::SocketAddr;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

/// Any stream a connection may run over: plain TCP, TLS or the Unix socket.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}

/// A plain TCP listener on `bind`'s address and `port`, with `backlog`: at start, and for CONFIG
/// SET port (made at once, so that a port that cannot be bound fails the command). Needs a Tokio
/// runtime.
pub fn listen_tcp(bind: &str, port: u16, backlog: u32) -> std::io::Result<TcpListener> {
    use std::net::ToSocketAddrs;
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(std::io::Error::other("no runtime"));
    }
    let mut last = std::io::Error::other("no address");
    for address in (bind, port).to_socket_addrs()? {
        let socket = match address {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
        };
        let listening = socket.and_then(|socket| {
            socket.set_reuseaddr(true)?;
            socket.bind(address)?;
            socket.listen(backlog)
        });
        match listening {
            Ok(listener) => return Ok(listener),
            Err(err) => last = err,
        }
    }
    Err(last)
}
