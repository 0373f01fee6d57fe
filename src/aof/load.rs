//! The load at start when `appendonly` is on: the base the manifest names (an RDB image, or
//! commands), then every increment replayed through `dispatch`, before any client is served.
//!
//! The increments are replayed by a [`Replayer`] the caller makes: a server of its own over the
//! same store (no scope-row sink: the log holds no STM command), as the primary's stream is on a
//! replica: no ACL, no blocking. This module parses the files and knows no command. A last increment cut short (a crash mid-write) is cut back to its last whole command
//! when `aof-load-truncated` is on, as Redis does; anything else wrong stops the start.

use super::manifest::Names;
use crate::config::Config;
use crate::protocol::Reply;
use crate::protocol::{parse_request, Limits, Parsed};
use crate::snapshot::Loaded;
use crate::store::Store;
use bytes::Bytes;
use std::time::Instant;

/// Loads the append-only files into `store`. Without a manifest, `dump.rdb` is loaded if there is
/// one (Redis would start empty and lose it; the writer then makes it the log's first base).
pub fn load<R: Replayer>(
    config: &Config,
    store: &Store,
    new_replayer: impl Fn(&Loaded) -> Result<R, String>,
) -> Result<Loaded, String> {
    let names = Names::of(config);
    let Some(manifest) = names.read()? else {
        return crate::snapshot::load(config, store);
    };
    let started = Instant::now();
    store
        .encoding_limits
        .configure(&config.encoding_thresholds());
    let mut loaded = Loaded::default();
    let mut replay: Option<Replay<R>> = None;
    let read = |part: &super::manifest::Part| {
        std::fs::read(names.path(part))
            .map_err(|err| format!("cannot read the append only file {}: {err}", part.name))
    };
    if let Some(base) = &manifest.base {
        let bytes = read(base)?;
        if bytes.starts_with(b"REDIS") {
            loaded = crate::snapshot::load_bytes(&bytes, store, None)
                .map_err(|why| format!("cannot load {}: {why}", base.name))?;
        } else {
            let replay = replay.get_or_insert(Replay::new(new_replayer(&Loaded::default())?));
            let used = replay.run(&bytes, &base.name)?;
            if used < bytes.len() {
                return Err(format!("the append only file {} is cut short", base.name));
            }
        }
    }
    for (i, incr) in manifest.incrs.iter().enumerate() {
        let bytes = read(incr)?;
        let replay = replay.get_or_insert(Replay::new(new_replayer(&loaded)?));
        let used = replay.run(&bytes, &incr.name)?;
        if used < bytes.len() {
            let last = i + 1 == manifest.incrs.len();
            if !last || !config.aof_load_truncated {
                return Err(format!(
                    "Unexpected end of file reading the append only file {}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server.",
                    incr.name
                ));
            }
            tracing::warn!(file = %incr.name, at = used, "the append only file was cut short: loaded up to its last whole command, the rest removed");
            std::fs::OpenOptions::new()
                .write(true)
                .open(names.path(incr))
                .and_then(|f| f.set_len(used as u64))
                .map_err(|err| format!("cannot truncate {}: {err}", incr.name))?;
        }
    }
    if let Some(mut replay) = replay {
        loaded.functions = replay.commands.functions();
        loaded.indexes = Some(replay.commands.indexes());
        loaded.keys = store.len() as u64;
    }
    tracing::info!(
        dir = %names.dir.display(),
        keys = loaded.keys,
        ms = started.elapsed().as_millis() as u64,
        "DB loaded from append only file"
    );
    Ok(loaded)
}

/// Runs the commands of the log, as one connection of a server of its own over the store.
pub trait Replayer {
    /// Runs one logged command; its reply.
    fn run(&mut self, args: &[&[u8]]) -> Reply;
    /// Whether a MULTI is open.
    fn in_multi(&self) -> bool;
    /// Drops the open MULTI, never applied (the file ends inside it).
    fn discard_multi(&mut self);
    /// Back to database 0, where each file starts.
    fn select_first_db(&mut self);
    /// The function libraries' codes after the replay.
    fn functions(&self) -> Vec<Bytes>;
    /// The search indexes the replay built (its FT.* commands over its keys), taken once it
    /// is over.
    fn indexes(&mut self) -> crate::search::Registry;
}

/// Replays the log's files through a [`Replayer`].
struct Replay<R> {
    commands: R,
    ranges: Vec<(usize, usize)>,
    limits: Limits,
}

impl<R: Replayer> Replay<R> {
    fn new(commands: R) -> Replay<R> {
        Replay {
            commands,
            ranges: Vec::new(),
            limits: Limits {
                max_bulk_len: usize::MAX,
                max_args: usize::MAX,
                authenticated: true,
            },
        }
    }

    /// Runs the commands of one file from db 0; returns how many bytes were whole commands.
    fn run(&mut self, bytes: &[u8], file: &str) -> Result<usize, String> {
        self.commands.select_first_db();
        let mut pos = 0;
        // Where the open transaction began: a file that ends inside it is whole only up to there.
        let mut multi_at = None;
        while pos < bytes.len() {
            // An annotation line (`#TS:<seconds>` of `aof-timestamp-enabled`) is skipped, as Redis
            // skips them.
            if bytes[pos] == b'#' {
                match bytes[pos..].iter().position(|&b| b == b'\n') {
                    Some(end) => {
                        pos += end + 1;
                        continue;
                    }
                    None => break,
                }
            }
            let used = match parse_request(&bytes[pos..], self.limits, &mut self.ranges) {
                Parsed::Request(used) => used,
                Parsed::Incomplete { .. } => break,
                Parsed::Inline(..) | Parsed::Error(_) => {
                    return Err(format!(
                        "Bad file format reading the append only file {file} at byte {pos}"
                    ))
                }
            };
            let args: Vec<&[u8]> = self
                .ranges
                .iter()
                .map(|&(s, e)| &bytes[pos + s..pos + e])
                .collect();
            if !args.is_empty() {
                let was_in_multi = self.commands.in_multi();
                let reply = self.commands.run(&args);
                if let Reply::Error(text) = &reply {
                    if text.starts_with("ERR unknown command") {
                        return Err(format!(
                            "Unknown command '{}' reading the append only file {file}",
                            String::from_utf8_lossy(args[0])
                        ));
                    }
                }
                if !was_in_multi && self.commands.in_multi() {
                    multi_at = Some(pos);
                }
            }
            pos += used;
        }
        // A transaction the file ends inside of was never applied: it is dropped, as Redis does,
        // and the file is whole only up to its MULTI.
        if self.commands.in_multi() {
            self.commands.discard_multi();
            tracing::warn!(
                file,
                "reverted an incomplete MULTI/EXEC at the end of the append only file"
            );
            return Ok(multi_at.unwrap_or(pos));
        }
        Ok(pos)
    }
}
