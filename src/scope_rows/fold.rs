//! Coalescing a batch of row operations: many operations on one scope fold into one [`Delta`]
//! (one ensure per scope, ticks summed, the last summary/categories kept, counter resets honoured
//! in order), so a batch costs a few statements however many captures it holds. Forgets delete
//! rows of many scopes, so they split the batch into segments that run in order.

use super::PersistOp;
use crate::stm::ScopeKey;
type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

/// The net effect of a run of operations on one scope's row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delta {
    /// Lineage written when the row is created.
    pub insert_lineage: Option<i64>,
    /// Turns to add (after the reset, when `reset`).
    pub add_turns: i64,
    /// A summary or categories write happened: `turns_since_refresh` restarts from 0.
    pub reset: bool,
    /// Summary/categories writes, each adding 1 to `last_refreshed_turn`.
    pub refreshes: i64,
    /// The summary to store (`Some(None)` clears it); None leaves it alone.
    pub summary: Option<Option<String>>,
    /// The categories to store; None leaves them alone.
    pub categories: Option<Vec<(String, String)>>,
}

impl Delta {
    fn apply(&mut self, op: PersistOp) {
        match op {
            PersistOp::EnsureRow { .. } => {}
            PersistOp::Tick { by, .. } => self.add_turns = self.add_turns.saturating_add(by),
            PersistOp::Summary {
                lineage, summary, ..
            } => {
                self.distilled_write(lineage);
                self.summary = Some(summary);
            }
            PersistOp::Categories {
                lineage,
                categories,
                ..
            } => {
                self.distilled_write(lineage);
                self.categories = Some(categories);
            }
            PersistOp::ForgetChannel { .. }
            | PersistOp::ForgetUser { .. }
            | PersistOp::ForgetScope { .. } => {}
        }
    }

    fn distilled_write(&mut self, lineage: Option<i64>) {
        self.reset = true;
        self.add_turns = 0;
        self.refreshes += 1;
        self.insert_lineage = lineage;
    }
}

/// A part of a batch: scope deltas (in first-seen order) or one forget.
#[derive(Clone, Debug, PartialEq)]
pub enum Segment {
    Deltas(Vec<(ScopeKey, Delta)>),
    Forget(PersistOp),
}

/// Folds `ops` (in the order commands emitted them) into segments. The current run keeps its
/// deltas in first-seen order with a map from scope to position, so an operation on a scope
/// already in the run costs one lookup and no copy of its key.
pub fn fold(ops: Vec<PersistOp>) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut run: Vec<(ScopeKey, Delta)> = Vec::new();
    // Sized for a batch of distinct scopes (new conversations): no rehash while it fills.
    let mut position: HashMap<ScopeKey, usize> =
        HashMap::with_capacity_and_hasher(ops.len(), Default::default());
    for op in ops {
        let slot = match &op {
            PersistOp::EnsureRow { scope, .. }
            | PersistOp::Tick { scope, .. }
            | PersistOp::Summary { scope, .. }
            | PersistOp::Categories { scope, .. } => match position.get(scope) {
                Some(&slot) => slot,
                None => {
                    let insert_lineage = match &op {
                        PersistOp::EnsureRow { lineage, .. } => *lineage,
                        _ => None,
                    };
                    position.insert(scope.clone(), run.len());
                    run.push((
                        scope.clone(),
                        Delta {
                            insert_lineage,
                            ..Delta::default()
                        },
                    ));
                    run.len() - 1
                }
            },
            PersistOp::ForgetChannel { .. }
            | PersistOp::ForgetUser { .. }
            | PersistOp::ForgetScope { .. } => {
                if !run.is_empty() {
                    position.clear();
                    segments.push(Segment::Deltas(std::mem::take(&mut run)));
                }
                segments.push(Segment::Forget(op));
                continue;
            }
        };
        run[slot].1.apply(op);
    }
    if !run.is_empty() {
        segments.push(Segment::Deltas(run));
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stm::Scope;
    use bytes::Bytes;

    fn scope(channel: &'static str) -> ScopeKey {
        ScopeKey {
            scope: Scope::Server,
            user: None,
            server: Some(Bytes::from_static(b"s")),
            channel: Bytes::from_static(channel.as_bytes()),
            persona: None,
        }
    }

    #[test]
    fn ensures_and_ticks_of_one_scope_fold_into_one_delta() {
        let ops = vec![
            PersistOp::EnsureRow {
                scope: scope("a"),
                lineage: Some(4),
            },
            PersistOp::Tick {
                scope: scope("a"),
                by: 1,
            },
            PersistOp::EnsureRow {
                scope: scope("b"),
                lineage: None,
            },
            PersistOp::EnsureRow {
                scope: scope("a"),
                lineage: Some(9),
            },
            PersistOp::Tick {
                scope: scope("a"),
                by: 2,
            },
        ];
        let segments = fold(ops);
        assert_eq!(
            segments,
            vec![Segment::Deltas(vec![
                (
                    scope("a"),
                    Delta {
                        insert_lineage: Some(4),
                        add_turns: 3,
                        ..Delta::default()
                    }
                ),
                (scope("b"), Delta::default()),
            ])]
        );
    }

    #[test]
    fn a_summary_resets_the_ticks_before_it_but_not_after() {
        let ops = vec![
            PersistOp::Tick {
                scope: scope("a"),
                by: 5,
            },
            PersistOp::Summary {
                scope: scope("a"),
                lineage: Some(2),
                summary: Some("s1".into()),
            },
            PersistOp::Tick {
                scope: scope("a"),
                by: 1,
            },
            PersistOp::Categories {
                scope: scope("a"),
                lineage: Some(2),
                categories: vec![("k".into(), "v".into())],
            },
            PersistOp::Tick {
                scope: scope("a"),
                by: 2,
            },
        ];
        let Segment::Deltas(deltas) = &fold(ops)[0] else {
            panic!("deltas")
        };
        let d = &deltas[0].1;
        assert!(d.reset);
        assert_eq!(d.add_turns, 2);
        assert_eq!(d.refreshes, 2);
        assert_eq!(d.summary, Some(Some("s1".into())));
        assert_eq!(d.categories, Some(vec![("k".into(), "v".into())]));
        assert_eq!(d.insert_lineage, Some(2));
    }

    #[test]
    fn forgets_split_the_batch_in_order() {
        let forget = PersistOp::ForgetChannel {
            channel: Bytes::from_static(b"a"),
        };
        let ops = vec![
            PersistOp::EnsureRow {
                scope: scope("a"),
                lineage: None,
            },
            forget.clone(),
            PersistOp::EnsureRow {
                scope: scope("a"),
                lineage: None,
            },
        ];
        let segments = fold(ops);
        assert_eq!(segments.len(), 3);
        assert_eq!(segments[1], Segment::Forget(forget));
        assert!(matches!(&segments[2], Segment::Deltas(d) if d.len() == 1));
    }
}
