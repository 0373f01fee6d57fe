//! FT.AGGREGATE's results as they go out: in one reply, or in chunks through a cursor
//! (`WITHCURSOR`, `FT.CURSOR READ|DEL`).
//!
//! A cursor holds the rows its aggregate computed and not yet sent (the pipeline runs whole
//! when FT.AGGREGATE is called), so it costs memory until it is read to the end, deleted or
//! idle longer than its MAXIDLE. Cursors belong to an index, not to a connection (a client may
//! read another's cursor, as in RediSearch), so a client that drops leaves its cursors behind:
//! they expire by idleness, each index holds at most [`MAX_CURSORS_PER_INDEX`] (the next
//! WITHCURSOR is refused), and dropping the index drops them. Expired cursors are removed
//! whenever a cursor is opened, read or deleted.
//!
//! Totals are RediSearch 2.10's: a pipeline with a GROUPBY reports the last GROUPBY's group
//! count, one with a SORTBY the documents the query matched (in the first chunk; 0 after); any
//! other reports, per chunk, how many documents were read to produce that chunk's first row
//! (the documents read when the chunk has no row).

use super::aggregate::{Ran, Row};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// The most cursors one index keeps open; RediSearch's error beyond.
pub const MAX_CURSORS_PER_INDEX: usize = 128;
const TOO_MANY: &str = "Too many cursors allocated for index";
pub const NOT_FOUND: &str = "Cursor not found";
pub const NOT_EXISTING: &str = "Cursor does not exist";

/// One chunk of results: its rows, the total it reports, the warnings (the first chunk's).
#[derive(Debug)]
pub struct Chunk {
    pub rows: Vec<Row>,
    pub total: usize,
    pub warnings: Vec<String>,
    /// True when the results are exhausted (the cursor closes: its id is sent as 0).
    pub done: bool,
}

/// An aggregate's rows not yet sent.
#[derive(Debug)]
pub struct Results {
    rows: VecDeque<(Option<usize>, Row)>,
    /// The first chunk's total for a pipeline that groups or sorts; None otherwise.
    blocking_total: Option<usize>,
    /// The documents the query matched.
    matched: usize,
    /// Documents read so far (a pipeline that neither groups nor sorts).
    read: usize,
    first: bool,
    warnings: Vec<String>,
}

impl Results {
    /// `ran`: the pipeline's output; `matched`: the documents it started from.
    pub fn new(ran: Ran, matched: usize) -> Results {
        let blocking_total = match (ran.groups, ran.sorted) {
            (Some(groups), _) => Some(groups),
            (None, true) => Some(matched),
            (None, false) => None,
        };
        Results {
            rows: ran.ordinals.into_iter().zip(ran.rows).collect(),
            blocking_total,
            matched,
            read: 0,
            first: true,
            warnings: ran.warnings,
        }
    }

    /// Takes up to `count` rows. The results are done when fewer than `count` were left (as
    /// RediSearch, whose read ends on the end of its results: exactly `count` left gives one
    /// more, empty, chunk).
    pub fn next_chunk(&mut self, count: usize) -> Chunk {
        let n = count.min(self.rows.len());
        let taken: Vec<(Option<usize>, Row)> = self.rows.drain(..n).collect();
        let total = match (self.blocking_total, taken.first()) {
            (Some(total), _) => {
                if self.first {
                    total
                } else {
                    0
                }
            }
            (None, Some((Some(at), _))) => at + 1 - self.read.min(at + 1),
            (None, _) => self.matched.saturating_sub(self.read),
        };
        if self.blocking_total.is_none() {
            self.read = match taken.last() {
                Some((Some(at), _)) => at + 1,
                _ => self.matched,
            };
        }
        let warnings = if self.first {
            std::mem::take(&mut self.warnings)
        } else {
            Vec::new()
        };
        self.first = false;
        Chunk {
            rows: taken.into_iter().map(|(_, row)| row).collect(),
            total,
            warnings,
            done: n < count,
        }
    }
}

struct Cursor {
    index: String,
    results: Results,
    count: usize,
    max_idle: Duration,
    used: Instant,
}

/// Every open cursor, by id.
#[derive(Default)]
pub struct Cursors {
    open: HashMap<u64, Cursor>,
}

impl Cursors {
    /// Keeps `results` under a new cursor of `index`: its id.
    pub fn open(
        &mut self,
        index: &str,
        results: Results,
        count: usize,
        max_idle_ms: u64,
    ) -> Result<u64, String> {
        let now = Instant::now();
        self.expire(now);
        if self.open.values().filter(|c| c.index == index).count() >= MAX_CURSORS_PER_INDEX {
            return Err(TOO_MANY.into());
        }
        // Ids as RediSearch's: positive and below 2^31, never 0 (the id of a closed cursor).
        let id = loop {
            let id = u64::from(rand::random::<u32>() >> 1);
            if id != 0 && !self.open.contains_key(&id) {
                break id;
            }
        };
        self.open.insert(
            id,
            Cursor {
                index: index.to_string(),
                results,
                count,
                max_idle: Duration::from_millis(max_idle_ms),
                used: now,
            },
        );
        Ok(id)
    }

    /// FT.CURSOR READ: the next chunk (`count` rows, the cursor's own count when None) and the
    /// id to send (0 when the cursor closed).
    pub fn read(
        &mut self,
        index: &str,
        id: u64,
        count: Option<usize>,
    ) -> Result<(Chunk, u64), String> {
        let now = Instant::now();
        self.expire(now);
        let cursor = self
            .open
            .get_mut(&id)
            .filter(|c| c.index == index)
            .ok_or(NOT_FOUND)?;
        cursor.used = now;
        let chunk = cursor.results.next_chunk(count.unwrap_or(cursor.count));
        if chunk.done {
            self.open.remove(&id);
            return Ok((chunk, 0));
        }
        Ok((chunk, id))
    }

    /// FT.CURSOR DEL.
    pub fn delete(&mut self, index: &str, id: u64) -> Result<(), String> {
        self.expire(Instant::now());
        match self.open.get(&id) {
            Some(c) if c.index == index => {
                self.open.remove(&id);
                Ok(())
            }
            _ => Err(NOT_EXISTING.into()),
        }
    }

    /// Removes the cursors idle longer than their MAXIDLE: how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let before = self.open.len();
        self.open
            .retain(|_, c| now.saturating_duration_since(c.used) <= c.max_idle);
        before - self.open.len()
    }

    /// Drops the cursors of `index` (the index is gone).
    pub fn drop_index(&mut self, index: &str) {
        self.open.retain(|_, c| c.index != index);
    }

    pub fn clear(&mut self) {
        self.open.clear();
    }

    /// Open cursors (for tests and INFO-like reports).
    pub fn len(&self) -> usize {
        self.open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::aggregate::Value;

    fn ran(ordinals: &[Option<usize>], groups: Option<usize>, sorted: bool) -> Ran {
        Ran {
            rows: ordinals
                .iter()
                .map(|o| vec![("o".to_string(), Value::Number(o.unwrap_or(99) as f64))])
                .collect(),
            ordinals: ordinals.to_vec(),
            groups,
            sorted,
            warnings: vec!["w".into()],
        }
    }

    #[test]
    fn totals_follow_redisearch_2_10() {
        // Streamed (no GROUPBY, no SORTBY): documents read for each chunk's first row.
        let mut r = Results::new(ran(&[Some(2), Some(3), Some(6)], None, false), 8);
        let c = r.next_chunk(1);
        assert_eq!((c.rows.len(), c.total, c.done), (1, 3, false));
        assert_eq!(c.warnings, vec!["w".to_string()]);
        let c = r.next_chunk(1);
        assert_eq!((c.total, c.done, c.warnings.len()), (1, false, 0));
        let c = r.next_chunk(1);
        assert_eq!((c.total, c.done), (3, false));
        let c = r.next_chunk(1);
        assert_eq!((c.rows.len(), c.total, c.done), (0, 1, true));
        // No row at all: every matched document was read.
        let mut r = Results::new(ran(&[], None, false), 4);
        assert_eq!(r.next_chunk(10).total, 4);
        // Grouped: the group count once; sorted: the matched documents once.
        let mut r = Results::new(ran(&[None, None], Some(2), false), 9);
        assert_eq!(r.next_chunk(1).total, 2);
        assert_eq!(r.next_chunk(1).total, 0);
        let mut r = Results::new(ran(&[Some(1), Some(0)], None, true), 5);
        let c = r.next_chunk(5);
        assert_eq!((c.total, c.done, c.rows.len()), (5, true, 2));
    }

    #[test]
    fn cursors_read_delete_expire_and_cap() {
        let mut cursors = Cursors::default();
        let results = Results::new(ran(&[Some(0), Some(1), Some(2)], None, false), 3);
        let id = cursors.open("i", results, 2, 60_000).unwrap();
        assert_ne!(id, 0);
        assert_eq!(cursors.read("other", id, None).unwrap_err(), NOT_FOUND);
        let (chunk, next) = cursors.read("i", id, None).unwrap();
        assert_eq!((chunk.rows.len(), next), (2, id));
        let (chunk, next) = cursors.read("i", id, None).unwrap();
        assert_eq!((chunk.rows.len(), next), (1, 0));
        assert_eq!(cursors.read("i", id, None).unwrap_err(), NOT_FOUND);
        let id = cursors
            .open(
                "i",
                Results::new(ran(&[Some(0)], None, false), 1),
                1,
                60_000,
            )
            .unwrap();
        assert_eq!(cursors.delete("j", id).unwrap_err(), NOT_EXISTING);
        assert_eq!(cursors.delete("i", id), Ok(()));
        assert_eq!(cursors.delete("i", id).unwrap_err(), NOT_EXISTING);
        // Idle past MAXIDLE: gone.
        let id = cursors
            .open("i", Results::new(ran(&[Some(0)], None, false), 1), 1, 1)
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(cursors.read("i", id, None).unwrap_err(), NOT_FOUND);
        // The cap is per index.
        for _ in 0..MAX_CURSORS_PER_INDEX {
            cursors
                .open("i", Results::new(ran(&[], None, false), 0), 1, 60_000)
                .unwrap();
        }
        let refused = cursors.open("i", Results::new(ran(&[], None, false), 0), 1, 60_000);
        assert_eq!(refused.unwrap_err(), TOO_MANY);
        assert!(cursors
            .open("j", Results::new(ran(&[], None, false), 0), 1, 60_000)
            .is_ok());
        cursors.drop_index("i");
        assert_eq!(cursors.len(), 1);
    }
}
