//! `supervised`: telling the process supervisor when the server is ready to accept connections
//! and when it stops, as Redis does: systemd through `sd_notify` (a datagram to the socket named
//! by `$NOTIFY_SOCKET`), upstart by stopping itself with SIGSTOP until the supervisor resumes it.

use crate::config::Supervised;
use std::os::unix::net::UnixDatagram;

/// The supervisor found at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Supervisor {
    None,
    /// systemd, with its notification socket (`@name`: an abstract one).
    Systemd(String),
    Upstart,
}

impl Supervisor {
    /// The mode asked for, checked against the environment the supervisor sets: `auto` picks
    /// upstart when `$UPSTART_JOB` is set, else systemd when `$NOTIFY_SOCKET` is; an explicit mode
    /// whose variable is missing is logged and ignored, as Redis does.
    pub fn from_env(mode: Supervised) -> Supervisor {
        let found = Supervisor::detect(mode);
        if found == Supervisor::None && !matches!(mode, Supervised::No | Supervised::Auto) {
            tracing::warn!(
                ?mode,
                "supervised is set but the supervisor's environment variable is missing: \
                 not notifying"
            );
        }
        found
    }

    /// [`Supervisor::from_env`] without the warning.
    fn detect(mode: Supervised) -> Supervisor {
        let upstart = std::env::var_os("UPSTART_JOB").is_some();
        let systemd = std::env::var("NOTIFY_SOCKET")
            .ok()
            .filter(|s| !s.is_empty());
        match (mode, systemd) {
            (Supervised::Upstart | Supervised::Auto, _) if upstart => Supervisor::Upstart,
            (Supervised::Systemd | Supervised::Auto, Some(socket)) => Supervisor::Systemd(socket),
            _ => Supervisor::None,
        }
    }

    /// INFO's `process_supervised`: `upstart`, `systemd` or `no`.
    pub fn name(&self) -> &'static str {
        match self {
            Supervisor::None => "no",
            Supervisor::Systemd(_) => "systemd",
            Supervisor::Upstart => "upstart",
        }
    }

    /// The server accepts connections.
    pub fn ready(&self) {
        match self {
            Supervisor::None => {}
            Supervisor::Systemd(socket) => {
                notify(socket, "STATUS=Ready to accept connections\nREADY=1\n")
            }
            Supervisor::Upstart => {
                // SAFETY: raise(3) only sends a signal to this process; it touches no memory of
                // ours. SIGSTOP stops the process until upstart sends SIGCONT (`expect stop`).
                unsafe {
                    libc::raise(libc::SIGSTOP);
                }
            }
        }
    }

    /// The server has begun to shut down.
    pub fn stopping(&self) {
        if let Supervisor::Systemd(socket) = self {
            notify(socket, "STOPPING=1\n");
        }
    }
}

/// One `sd_notify` datagram; a failure is logged (the server runs on, as Redis's does).
fn notify(socket: &str, message: &str) {
    let sent = UnixDatagram::unbound().and_then(|datagram| match socket.strip_prefix('@') {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let address = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            datagram.send_to_addr(message.as_bytes(), &address)
        }
        None => datagram.send_to(message.as_bytes(), socket),
    });
    if let Err(err) = sent {
        tracing::warn!(socket, %err, "cannot notify systemd");
    }
}
