//! Lazy freeing, as Redis's lazyfree.c: UNLINK and FLUSHALL/FLUSHDB ASYNC hand what they removed
//! to one background thread, so that freeing a value of millions of allocations does not stall
//! the command (and every client waiting on its lock). INFO reports the objects handed over and
//! not freed yet (`lazyfree_pending_objects`) and those freed so far (`lazyfreed_objects`).

use super::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::OnceLock;

/// A value whose freeing costs more allocations than this is freed in the background; below it
/// the hand-over would cost more than the free (Redis's `LAZYFREE_THRESHOLD`).
pub const THRESHOLD: usize = 64;

static PENDING: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

/// Something to drop, and how many objects it counts for in INFO.
struct Job {
    garbage: Box<dyn Send>,
    objects: u64,
}

/// The background thread's queue, started on first use; `None` if the thread could not start
/// (then everything is freed on the spot).
fn queue() -> Option<&'static Sender<Job>> {
    static QUEUE: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("lazyfree".into())
                .spawn(move || {
                    for job in rx {
                        drop(job.garbage);
                        PENDING.fetch_sub(job.objects, Ordering::Relaxed);
                        FREED.fetch_add(job.objects, Ordering::Relaxed);
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Frees `garbage`, `objects` objects for INFO, on the background thread.
pub fn free_later(garbage: impl Send + 'static, objects: u64) {
    let Some(tx) = queue() else {
        return drop(garbage);
    };
    PENDING.fetch_add(objects, Ordering::Relaxed);
    if let Err(mpsc::SendError(job)) = tx.send(Job {
        garbage: Box::new(garbage),
        objects,
    }) {
        // The thread is gone (it never exits while the sender lives): free here.
        PENDING.fetch_sub(job.objects, Ordering::Relaxed);
        drop(job.garbage);
    }
}

/// Frees a value UNLINK removed: in the background when it is costly (more than
/// [`THRESHOLD`] allocations), here otherwise, as Redis's `freeObjAsync`.
pub fn free_value(value: Value) {
    if free_effort(&value) > THRESHOLD {
        free_later(value, 1);
    } else {
        drop(value);
    }
}

/// How many allocations freeing `value` takes: one for a string or a packed (listpack-like)
/// form, one per element for a list or a large hash, set or sorted set, one per node for a
/// stream. Redis counts its own representation the same way (quicklist nodes for a list, so a
/// list of small elements crosses the threshold later in Redis than here).
pub fn free_effort(value: &Value) -> usize {
    match value {
        Value::Str(_) | Value::Stm(_) => 1,
        Value::Json(doc) => doc.free_effort(),
        Value::List(list) => list.len(),
        Value::Hash(h) if !h.is_packed() => h.len(),
        Value::Set(s) if !s.is_packed() => s.len(),
        Value::ZSet(z) if !z.is_small() => z.len(),
        Value::Hash(_) | Value::Set(_) | Value::ZSet(_) => 1,
        Value::Stream(s) => s.nodes().len(),
    }
}

/// Objects handed to the background thread and not freed yet (INFO `lazyfree_pending_objects`).
pub fn pending() -> u64 {
    PENDING.load(Ordering::Relaxed)
}

/// Objects the background thread has freed since start-up (INFO `lazyfreed_objects`).
pub fn freed() -> u64 {
    FREED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn effort_counts_allocations() {
        assert_eq!(free_effort(&Value::Str("x".into())), 1);
        let list: VecDeque<bytes::Bytes> = (0..100).map(|i| i.to_string().into()).collect();
        assert_eq!(free_effort(&Value::List(Box::new(list))), 100);
    }
}
