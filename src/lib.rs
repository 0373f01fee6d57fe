//! stmd: a Redis-compatible in-memory server that gives multi-persona chat bots a shared short-term
//! memory. The library does the work; `main.rs` only parses flags, sets up logging and binds.

pub mod acl;
pub mod aof;
pub mod clients;
pub mod clock;
pub mod cluster;
pub mod command_stats;
pub mod commands;
pub mod config;
pub mod connection;
pub mod events;
pub mod exporter;
pub mod glob;
pub mod latency;
pub mod metrics;
pub mod monitor;
pub mod net;
pub mod number_format;
pub mod output_limit;
pub mod percpu;
pub mod protocol;
pub mod pubsub;
pub mod rdb;
pub mod replication;
pub mod scope_rows;
pub mod scripting;
pub mod search;
pub mod server;
pub mod slowlog;
pub mod snapshot;
pub mod spec;
pub mod stm;
pub mod store;
pub mod supervise;
pub mod system_log;
pub mod tls;
pub mod worker;

/// jemalloc, as Redis uses: fast under many small allocations from several threads, and it counts
/// the bytes allocated, which INFO reports as `used_memory`.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Errors that end the server (start-up and I/O), as opposed to command errors, which are replies.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("configuration error: {0}")]
    Config(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
