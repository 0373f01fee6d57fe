//! MONITOR: every command run by any client, as one status line each, delivered through the
//! monitoring connection's mailbox (the one Pub/Sub uses), so a slow monitor is disconnected like
//! a slow subscriber and never slows the commands it watches.

use crate::clients::ClientAddr;
use crate::pubsub::{Delivery, Mailbox};
use bytes::Bytes;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The connections in MONITOR mode.
#[derive(Default)]
pub struct Monitors {
    /// Checked by every command: with no monitor, feeding costs one relaxed load.
    count: AtomicUsize,
    mailboxes: RwLock<Vec<(u64, Arc<Mailbox>)>>,
}

impl Monitors {
    pub fn add(&self, client: u64, mailbox: Arc<Mailbox>) {
        let mut list = self.mailboxes.write();
        if list.iter().all(|(id, _)| *id != client) {
            list.push((client, mailbox));
            self.count.store(list.len(), Ordering::Relaxed);
        }
    }

    pub fn remove(&self, client: u64) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut list = self.mailboxes.write();
        list.retain(|(id, _)| *id != client);
        self.count.store(list.len(), Ordering::Relaxed);
    }

    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Sends one command, run in database `db` by `client` (None: a script), to every monitor.
    pub fn feed(&self, db: usize, client: Option<&ClientAddr>, args: &[&[u8]]) {
        let line = Bytes::from(format_line(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default(),
            db,
            client,
            args,
        ));
        for (_, mailbox) in self.mailboxes.read().iter() {
            mailbox.deliver(Delivery::Monitor(line.clone()));
        }
    }
}

/// `+1700000000.123456 [0 127.0.0.1:5000] "set" "k" "v"\r\n`, as Redis writes it: the database,
/// then the client (`unix:<path>` over the Unix socket, `lua` for a script's commands).
pub fn format_line(
    now: std::time::Duration,
    db: usize,
    client: Option<&ClientAddr>,
    args: &[&[u8]],
) -> Vec<u8> {
    let (secs, micros) = (now.as_secs(), now.subsec_micros());
    let mut line = match client {
        Some(ClientAddr::Tcp(addr)) => format!("+{secs}.{micros:06} [{db} {addr}]"),
        Some(ClientAddr::Unix(path)) => format!("+{secs}.{micros:06} [{db} unix:{path}]"),
        None => format!("+{secs}.{micros:06} [{db} lua]"),
    }
    .into_bytes();
    for arg in args {
        line.push(b' ');
        quote(arg, &mut line);
    }
    line.extend_from_slice(b"\r\n");
    line
}

/// Redis's `sdscatrepr`: double quotes, C escapes for `\ " \n \r \t \a \b`, `\xHH` for any other
/// byte that is not printable ASCII. The result never contains a line break.
pub fn quote(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_quote_like_redis() {
        let addr = ClientAddr::Tcp("127.0.0.1:5000".parse().expect("addr"));
        let line = format_line(
            std::time::Duration::new(1_700_000_000, 5_000),
            0,
            Some(&addr),
            &[b"set", b"a \"b\"\\", b"\x01\xff\r\n\t"],
        );
        assert_eq!(
            String::from_utf8_lossy(&line),
            "+1700000000.000005 [0 127.0.0.1:5000] \"set\" \"a \\\"b\\\"\\\\\" \"\\x01\\xff\\r\\n\\t\"\r\n"
        );
    }
}
