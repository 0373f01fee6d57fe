//! The warm start: rows with distilled memory come back into the keyspace. Normally this runs
//! before the first command is answered, so the keyspace is empty and every row becomes an entry
//! without messages. When the database was out of reach for longer than `stm-restore-timeout`, the
//! server serves first and the rows arrive later; then a row must not undo what commands did in
//! the meantime, so [`merge_row`] fills in only what is still missing.

use super::db::WarmRow;
use crate::stm::{Distilled, StmEntry};
use crate::store::{Store, Value};

/// What became of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// No live entry: a new entry without messages.
    Created,
    /// A live entry written since the start, without a summary or categories write: the row
    /// filled in its summary, categories and counters.
    FilledIn,
    /// The entry has newer distilled state (or the key holds another type, or the row is too old
    /// to be live): the row changed nothing.
    Kept,
}

/// Whether `entry` has had a summary or categories write since this server started. Every such
/// write (clearing ones too) adds 1 to `last_refreshed_turn`, and before the warm start has merged
/// a scope's row, its entry can only have been made since the start, from 0: so a count of 0 means
/// no such write. The restored entries themselves are never merged twice: the warm start runs once.
fn has_distilled_write_since_start(entry: &StmEntry) -> bool {
    entry.last_refreshed_turn() != 0 || entry.has_distilled()
}

/// The distilled memory a row holds (an empty summary is none).
fn row_distilled(row: &WarmRow) -> Distilled {
    Distilled {
        summary: row.summary.clone().filter(|s| !s.is_empty()),
        categories: row.categories.clone(),
        last_refreshed_turn: row.last_refreshed_turn,
    }
}

/// Brings `row` into the keyspace: a new entry expiring as if last written at the row's
/// `updated_at`, or the row's distilled memory and counters added to an entry that commands made
/// since the start and that has no newer summary or categories.
pub fn merge_row(store: &Store, row: &WarmRow, summary_ttl_ms: u64) -> Merge {
    merge_row_as(store, row, summary_ttl_ms, false)
}

/// [`merge_row`]; with `replicated`, the live entry's turn count came from its primary's stream
/// (turns the primary had already counted into the row, when its writer got to them), so the
/// larger of the two is kept instead of their sum.
fn merge_row_as(store: &Store, row: &WarmRow, summary_ttl_ms: u64, replicated: bool) -> Merge {
    let key = row.scope.key();
    let mut locked = store.lock_one(0, &key);
    let now = locked.now;
    if let Some(live) = locked.get_mut(&key) {
        let Value::Stm(entry) = &mut live.value else {
            return Merge::Kept;
        };
        if has_distilled_write_since_start(entry) {
            return Merge::Kept;
        }
        entry.set_distilled(row_distilled(row));
        // The entry's count holds the turns captured since the start; the row's, those before.
        entry.turns_since_refresh = match replicated {
            true => entry.turns_since_refresh.max(row.turns_since_refresh),
            false => entry
                .turns_since_refresh
                .saturating_add(row.turns_since_refresh),
        };
        // Distilled memory earns the longer expiry from the entry's last write; an entry without
        // expiry (PERSIST) or with a later one keeps it.
        let distilled_deadline = entry.last_updated.saturating_add(summary_ttl_ms);
        live.delay_expiry(distilled_deadline);
        return Merge::FilledIn;
    }
    let expire_at = row.updated_ms.saturating_add(summary_ttl_ms);
    if expire_at <= now {
        return Merge::Kept;
    }
    let mut entry = StmEntry::new(&row.scope, row.updated_ms);
    entry.lineage = row.lineage;
    entry.set_distilled(row_distilled(row));
    entry.turns_since_refresh = row.turns_since_refresh;
    locked.set(&key, Value::Stm(Box::new(entry)), expire_at);
    Merge::Created
}

/// Failover's warm-up of the slots a node was just given (`in_slots` tells a key's slot): first
/// drops every key this node holds in them (copies it held while not owning them, such as the
/// start-up warm's restored entries of other nodes' slots, or keys left by an ownership-only
/// `move-slots`: none of them is newer than the rows), then brings in the `rows` of scopes in
/// those slots exactly as the start-up warm does ([`merge_row`]). Returns (keys dropped, rows
/// warmed).
///
/// A `promoted` replica drops nothing: its keys of those slots are its primary's data, as far as
/// the stream had brought them. Its STM entries made or written by the stream are newer than (or
/// as new as) the rows, except for a summary its primary wrote in the replication lag: an entry
/// with a summary or categories write from the stream keeps it; one without gets the row's; the
/// turn count is the larger of the two (not their sum: the stream's turns are mostly in the row
/// already); a scope with no entry here (last written before the replica's full sync, which
/// carries no STM entries) comes back from its row as after a restart.
pub fn take_over_slots(
    store: &Store,
    rows: &[WarmRow],
    in_slots: impl Fn(&[u8]) -> bool,
    summary_ttl_ms: u64,
    promoted: bool,
) -> (u64, u64) {
    let mut dropped = 0u64;
    if store.existing(0).is_some() && !promoted {
        for shard in 0..store.shard_count() {
            let mut locked = store.lock_shard(0, shard);
            let mut stale = Vec::new();
            locked.for_each(|key, _| {
                if in_slots(key) {
                    stale.push(key.to_vec());
                }
            });
            for key in stale {
                if locked.remove(&key).is_some() {
                    dropped += 1;
                }
            }
        }
    }
    let mut warmed = 0u64;
    for row in rows.iter().filter(|row| in_slots(&row.scope.key())) {
        if merge_row_as(store, row, summary_ttl_ms, promoted) != Merge::Kept {
            warmed += 1;
        }
    }
    // No command made these changes: their notes must not be published with the next command.
    crate::store::changes::take();
    (dropped, warmed)
}
