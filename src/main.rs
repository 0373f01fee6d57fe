//! The `stmd` binary: flags → logging → bind → `server::run` until SIGINT or SIGTERM; or, as
//! `stmd cluster …`, the cluster admin tool.

use std::fs::OpenOptions;
use std::path::PathBuf;
use stmd::config::{Config, LogFormat};
use stmd::server::Listeners;
use tokio::net::TcpListener;
use tracing_subscriber::fmt::writer::{BoxMakeWriter, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

fn main() -> std::process::ExitCode {
    // `stmd cluster …`: the admin tool of cluster mode, in the same binary.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "cluster") {
        args.remove(1);
        return stmd::cluster::admin::main(args);
    }
    let config = match stmd::config::file::load(std::env::args_os()) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("{err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if config.daemonize {
        if let Err(err) = daemonize() {
            eprintln!("cannot daemonize: {err}");
            return std::process::ExitCode::FAILURE;
        }
    }
    let filter = EnvFilter::try_new(&config.log_level).unwrap_or_else(|_| EnvFilter::new("info"));
    // CONFIG SET loglevel swaps the filter while the server runs.
    let (filter, reload) = tracing_subscriber::reload::Layer::new(filter);
    stmd::config::set_log_reload(Box::new(move |level| {
        let filter = EnvFilter::try_new(level).map_err(|e| e.to_string())?;
        reload.reload(filter).map_err(|e| e.to_string())
    }));
    let writer = match config.logfile.as_str() {
        "" => BoxMakeWriter::new(std::io::stdout),
        path => match LogFile::open(path) {
            Ok(file) => BoxMakeWriter::new(file),
            Err(err) => {
                eprintln!("Can't open the log file: {err}");
                return std::process::ExitCode::FAILURE;
            }
        },
    };
    // `syslog-enabled`: the same lines, without time and level (the system log has both).
    let system_log = config.syslog_enabled.then(|| {
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .without_time()
            .with_level(false)
            .with_writer(stmd::system_log::SystemLog::new(&config))
    });
    let output = tracing_subscriber::fmt::layer()
        .with_ansi(config.logfile.is_empty())
        .with_writer(writer);
    let logs = tracing_subscriber::registry().with(filter).with(system_log);
    match config.log_format {
        // One JSON object per line, fields flattened, so collectors need no parsing rules.
        LogFormat::Json => logs
            .with(output.json().flatten_event(true).with_current_span(false))
            .init(),
        LogFormat::Text => logs.with(output).init(),
    }
    for warning in &config.config_warnings {
        tracing::warn!("{warning}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.worker_threads())
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!(%err, "cannot start the runtime");
            return std::process::ExitCode::FAILURE;
        }
    };
    let pidfile = PidFile::write(&config.pidfile);
    let served = runtime.block_on(serve(config));
    drop(pidfile);
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(%err, "stmd failed");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `--daemonize yes`: the process forks; the parent exits and the child goes on in a new session,
/// its standard streams on /dev/null, as Redis's `daemonize`.
fn daemonize() -> std::io::Result<()> {
    // SAFETY: daemon(3) forks, exits the parent and calls setsid() and open/dup2 in the child.
    // It is called before the runtime, the logger or anything else starts a thread, so the
    // process has one thread and the child inherits no lock or state another thread was using.
    // It takes no pointers.
    let rc = unsafe { libc::daemon(1, 0) };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// `--logfile`: each line is appended to the file opened anew, as Redis does, so that a file moved
/// away by logrotate is followed at once by a new one. A line that cannot be written goes to
/// standard error.
struct LogFile(PathBuf);

impl LogFile {
    /// Checks at start that the file can be opened (Redis refuses to start otherwise).
    fn open(path: &str) -> std::io::Result<LogFile> {
        let file = LogFile(PathBuf::from(path));
        file.append()?;
        Ok(file)
    }

    fn append(&self) -> std::io::Result<std::fs::File> {
        OpenOptions::new().create(true).append(true).open(&self.0)
    }
}

impl<'a> MakeWriter<'a> for LogFile {
    type Writer = Box<dyn std::io::Write>;

    fn make_writer(&'a self) -> Self::Writer {
        match self.append() {
            Ok(file) => Box::new(file),
            Err(_) => Box::new(std::io::stderr()),
        }
    }
}

/// `--pidfile`: the process id, written at start and removed when the server stops (a failure to
/// write it is logged, as Redis does, and the server runs on).
struct PidFile(Option<PathBuf>);

impl PidFile {
    fn write(path: &str) -> PidFile {
        if path.is_empty() {
            return PidFile(None);
        }
        match std::fs::write(path, format!("{}\n", std::process::id())) {
            Ok(()) => PidFile(Some(PathBuf::from(path))),
            Err(err) => {
                tracing::warn!(path, %err, "failed to write the PID file");
                PidFile(None)
            }
        }
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

async fn serve(config: Config) -> stmd::Result<()> {
    // As in Redis, `--port 0` with a TLS port or a Unix socket means no plain TCP listener;
    // without either it picks a free port.
    let plain = match (config.port, config.tls_port, config.unixsocket.is_empty()) {
        (0, 0, true) | (1.., _, _) => Some(bind(&config, config.port)?),
        (0, _, _) => None,
    };
    let tls = match config.tls_port {
        0 => None,
        port => Some(bind(&config, port)?),
    };
    let unix = match config.unixsocket.as_str() {
        "" => None,
        path => Some(stmd::server::bind_unix(path, config.unixsocketperm)?),
    };
    let listeners = Listeners { plain, tls, unix };
    stmd::server::run(listeners, config, stmd::server::stop_signal()).await
}

/// A TCP listener on `--bind`'s address and `port`, with `--tcp-backlog`.
fn bind(config: &Config, port: u16) -> stmd::Result<TcpListener> {
    stmd::net::listen_tcp(&config.bind, port, config.tcp_backlog)
        .map_err(|e| stmd::Error::Config(format!("cannot bind {}:{port}: {e}", config.bind)))
}
