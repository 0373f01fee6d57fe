//! Waiting from a tokio worker thread without holding up the worker's other tasks. It knows
//! nothing of what waits: the store waits here for a shard a command in flight holds, scripting
//! for the engine and for long scripts, the cluster and the save commands for their I/O.

/// Runs `f`, which may take long (a script, a wait for a lock or for one), after handing this
/// tokio worker's queued tasks to another thread, so it never holds up other connections' tasks.
/// Outside a multi-threaded runtime (a test, the start-up's load) it simply runs `f`.
pub fn off_worker<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}
