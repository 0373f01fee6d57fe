//! `syslog-enabled`: every log line also goes to the system log, as Redis's `syslog-enabled`
//! does, as RFC 3164 datagrams (`<PRI>timestamp ident[pid]: line`) to the local syslog socket
//! (`/dev/log`; `--syslog-socket`). The level maps to the severity as Redis's levels do: error →
//! err, warn → warning, info (Redis's notice) → notice, debug (verbose) → info, trace → debug.

use crate::config::{Config, SyslogFacility};
use parking_lot::Mutex;
use std::path::PathBuf;
use syslog::{Facility, Formatter3164, Logger, LoggerBackend};
use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;

/// The writer behind the system log's layer: one datagram per log line.
pub struct SystemLog {
    socket: PathBuf,
    formatter: Formatter3164,
    /// Connected at the first line and again after a failed send (syslogd restarted), so a
    /// missing socket costs nothing but the lost line, as syslog(3) loses it.
    logger: Mutex<Option<Logger<LoggerBackend, Formatter3164>>>,
}

impl SystemLog {
    pub fn new(config: &Config) -> SystemLog {
        let facility = match config.syslog_facility {
            SyslogFacility::User => Facility::LOG_USER,
            SyslogFacility::Local0 => Facility::LOG_LOCAL0,
            SyslogFacility::Local1 => Facility::LOG_LOCAL1,
            SyslogFacility::Local2 => Facility::LOG_LOCAL2,
            SyslogFacility::Local3 => Facility::LOG_LOCAL3,
            SyslogFacility::Local4 => Facility::LOG_LOCAL4,
            SyslogFacility::Local5 => Facility::LOG_LOCAL5,
            SyslogFacility::Local6 => Facility::LOG_LOCAL6,
            SyslogFacility::Local7 => Facility::LOG_LOCAL7,
        };
        SystemLog {
            socket: config.syslog_socket.clone(),
            formatter: Formatter3164 {
                facility,
                hostname: None,
                process: config.syslog_ident.clone(),
                pid: std::process::id(),
            },
            logger: Mutex::new(None),
        }
    }

    fn send(&self, level: Level, line: &str) {
        let mut connected = self.logger.lock();
        if connected.is_none() {
            *connected = syslog::unix_custom(self.formatter.clone(), &self.socket).ok();
        }
        let Some(logger) = connected.as_mut() else {
            return;
        };
        let sent = match level {
            Level::ERROR => logger.err(line),
            Level::WARN => logger.warning(line),
            Level::INFO => logger.notice(line),
            Level::DEBUG => logger.info(line),
            Level::TRACE => logger.debug(line),
        };
        if sent.is_err() {
            *connected = None;
        }
    }
}

/// One log line as the layer formats it; sent when the layer is done with it.
pub struct Line<'a> {
    log: &'a SystemLog,
    level: Level,
    text: Vec<u8>,
}

impl std::io::Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        let text = text.trim_end();
        if !text.is_empty() {
            self.log.send(self.level, text);
        }
    }
}

impl<'a> MakeWriter<'a> for SystemLog {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        self.line(Level::INFO)
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Line<'a> {
        self.line(*meta.level())
    }
}

impl SystemLog {
    fn line(&self, level: Level) -> Line<'_> {
        Line {
            log: self,
            level,
            text: Vec::new(),
        }
    }
}
