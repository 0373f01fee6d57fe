//! DEBUG RELOAD and DEBUG LOADAOF: the dataset written out and read back through the same code as
//! SAVE and the start-up load, so a test can check that what persists comes back.

use super::super::args::is;
use super::super::{CmdResult, Ctx};
use crate::commands::log_replay::LogReplay;
use crate::protocol::Reply;
use crate::scripting::functions::RestorePolicy;

const LOAD_FAILED: &str = "ERR Error trying to load the RDB dump, check server logs.";
const AOF_LOAD_FAILED: &str = "ERR Error trying to load the AOF files, check server logs.";

/// Neither reload can run under EXEC's or a script's locks: it locks every database itself.
const NOT_IN_EXEC: &str = "ERR DEBUG RELOAD and LOADAOF are not supported inside MULTI/EXEC here";

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: SAVE, empty every database (STM entries stay: they
/// are not in the file, their rows bring them back at start), load the file back with its
/// function libraries. NOFLUSH keeps the data; a key of the file already there is then an error,
/// or replaced with MERGE (Redis stops the server on that error; here the load stops there).
pub fn reload(ctx: &mut Ctx, options: &[&[u8]]) -> CmdResult {
    let (mut flush, mut save, mut merge) = (true, true, false);
    for option in options {
        if is(option, "MERGE") {
            merge = true;
        } else if is(option, "NOFLUSH") {
            flush = false;
        } else if is(option, "NOSAVE") {
            save = false;
        } else {
            return Err(Reply::error(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    if ctx.in_exec() {
        return Err(Reply::error(NOT_IN_EXEC));
    }
    let shared = ctx.shared;
    if save {
        let functions = super::super::scripting::engine_or_busy(ctx)?
            .functions
            .codes();
        crate::worker::off_worker(|| crate::snapshot::save(shared, &functions))
            .map_err(|_| Reply::error("ERR"))?;
    }
    let path = crate::snapshot::file_path(shared);
    let mut loaded = crate::worker::off_worker(|| {
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        crate::snapshot::reload_bytes(shared, &bytes, flush, merge)
    })
    .map_err(|why| {
        tracing::warn!(%why, "DEBUG RELOAD could not load the RDB dump");
        Reply::error(LOAD_FAILED)
    })?;
    // Redis's flush empties the function libraries too; MERGE replaces those of the same name.
    let policy = match (flush, merge) {
        (true, _) => RestorePolicy::Flush,
        (false, true) => RestorePolicy::Replace,
        (false, false) => RestorePolicy::Append,
    };
    restore_functions(ctx, &loaded.functions, policy).map_err(|why| {
        tracing::warn!(%why, "DEBUG RELOAD could not load the functions");
        Reply::error(LOAD_FAILED)
    })?;
    restore_indexes(shared, &mut loaded);
    shared.snapshots.note_load(&loaded, &shared.store);
    tracing::info!("DB reloaded by DEBUG RELOAD");
    Ok(Reply::OK)
}

/// DEBUG LOADAOF: with the log on, the stream is written into it, every database emptied (STM
/// entries stay) and the log's files replayed as at start. The log's writer goes on appending
/// to the same file: what was loaded is what the files hold. With the log off the files are
/// not read and nothing is emptied (Redis 7.2 empties the data and then fails to load).
pub fn loadaof(ctx: &mut Ctx) -> CmdResult {
    if ctx.in_exec() {
        return Err(Reply::error(NOT_IN_EXEC));
    }
    let shared = ctx.shared;
    if !shared.aof.on() {
        return Err(Reply::error(AOF_LOAD_FAILED));
    }
    let config = shared.config.read().clone();
    let mut loaded = crate::worker::off_worker(|| {
        {
            // Under every database's lock no command is between its write and the stream, so
            // the file gets everything applied so far, and nothing is applied after it.
            let store = &shared.store;
            let dbs: Vec<usize> = (0..store.databases()).collect();
            let mut locked = store.lock_dbs(&dbs);
            crate::aof::write_now(shared);
            for keys in locked.iter_mut() {
                crate::snapshot::clear_keeping_stm(keys);
            }
        }
        // The flush goes out (invalidations, the indexes dropped) before the replay writes.
        crate::events::after_background_work(shared);
        crate::aof::load::load(&config, &shared.store, |base| {
            LogReplay::over(&config, &shared.store, shared.local_addr, base)
        })
    })
    .map_err(|why| {
        tracing::warn!(%why, "DEBUG LOADAOF could not load the append only files");
        Reply::error(AOF_LOAD_FAILED)
    })?;
    restore_functions(ctx, &loaded.functions, RestorePolicy::Flush).map_err(|why| {
        tracing::warn!(%why, "DEBUG LOADAOF could not load the functions");
        Reply::error(AOF_LOAD_FAILED)
    })?;
    restore_indexes(shared, &mut loaded);
    shared.snapshots.note_load(&loaded, &shared.store);
    tracing::info!("Append Only File loaded by DEBUG LOADAOF");
    Ok(Reply::OK)
}

/// Puts back the search indexes of the file just loaded, as RediSearch keeps its indexes
/// through a reload. What the load noted (the flush above all, which drops every index) is
/// published and applied first, so that it cannot drop the indexes put back after it.
fn restore_indexes(shared: &crate::commands::Shared, loaded: &mut crate::snapshot::Loaded) {
    crate::events::after_background_work(shared);
    crate::snapshot::restore_indexes(shared, loaded);
}

fn restore_functions(
    ctx: &mut Ctx,
    codes: &[bytes::Bytes],
    policy: RestorePolicy,
) -> Result<(), String> {
    if codes.is_empty() && !matches!(policy, RestorePolicy::Flush) {
        return Ok(());
    }
    let mut engine =
        super::super::scripting::engine_or_busy(ctx).map_err(|_| "the script engine is busy")?;
    engine
        .restore_functions(codes, policy)
        .map_err(|e| e.to_string())
}
