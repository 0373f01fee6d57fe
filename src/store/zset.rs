//! The sorted set: members ordered by (score, member), as Redis orders them.
//!
//! A hash map gives O(1) member → score lookups (ZSCORE, ZADD's "already there?"), and a
//! [`Ranked`] set of (score, member) gives O(log n) ranks (ZRANK, ZRANGE by index, ZRANDMEMBER) and
//! ordered walks from any rank or score, as Redis's skip list with spans does. Members are `Bytes`,
//! so both structures share each member's bytes.

use super::ranked::Ranked;
use bytes::Bytes;
use std::cmp::Ordering;

/// A score with a total order. Scores are never NaN (every command that could produce one refuses
/// to), so `partial_cmp` always answers; -0 and 0 compare equal, as C's `<` does in Redis.
#[derive(Debug, Clone, Copy)]
pub struct Score(pub f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// One end of a score interval (`(1.5` is exclusive, `1.5` inclusive).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreBound {
    pub value: f64,
    pub exclusive: bool,
}

impl ScoreBound {
    /// True when `score` is on the inner side of this bound used as a minimum.
    pub fn below(&self, score: f64) -> bool {
        if self.exclusive {
            self.value < score
        } else {
            self.value <= score
        }
    }

    /// True when `score` is on the inner side of this bound used as a maximum.
    pub fn above(&self, score: f64) -> bool {
        if self.exclusive {
            score < self.value
        } else {
            score <= self.value
        }
    }
}

/// One end of a lexicographic interval: `-`, `+`, `[member` or `(member`.
#[derive(Debug, Clone, PartialEq)]
pub enum LexBound {
    NegInf,
    PosInf,
    Inclusive(Bytes),
    Exclusive(Bytes),
}

impl LexBound {
    pub fn below(&self, member: &[u8]) -> bool {
        match self {
            LexBound::NegInf => true,
            LexBound::PosInf => false,
            LexBound::Inclusive(m) => &m[..] <= member,
            LexBound::Exclusive(m) => &m[..] < member,
        }
    }

    pub fn above(&self, member: &[u8]) -> bool {
        match self {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Inclusive(m) => member <= &m[..],
            LexBound::Exclusive(m) => member < &m[..],
        }
    }
}

type ScoreMap = hashbrown::HashMap<Bytes, f64, ahash::RandomState>;

#[derive(Debug, Default, Clone)]
pub struct ZSet {
    scores: ScoreMap,
    order: Ranked<(Score, Bytes)>,
}

impl ZSet {
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets `member`'s score; returns the previous score, if any.
    pub fn insert(&mut self, member: Bytes, score: f64) -> Option<f64> {
        debug_assert!(!score.is_nan());
        match self.scores.get_mut(&member) {
            Some(old) => {
                let previous = *old;
                if previous.to_bits() != score.to_bits() {
                    *old = score;
                    self.order.remove(&(Score(previous), member.clone()));
                    self.order.insert((Score(score), member));
                }
                Some(previous)
            }
            None => {
                self.scores.insert(member.clone(), score);
                self.order.insert((Score(score), member));
                None
            }
        }
    }

    /// Removes `member`; returns its score when it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let (owned, score) = self.scores.remove_entry(member)?;
        self.order.remove(&(Score(score), owned));
        Some(score)
    }

    /// 0-based rank in ascending order: O(log n).
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        self.order
            .rank(&(Score(score), Bytes::copy_from_slice(member)))
    }

    /// The member at 0-based ascending rank `i`: O(log n).
    pub fn select(&self, i: usize) -> Option<(&Bytes, f64)> {
        self.order.select(i).map(|(s, m)| (m, s.0))
    }

    /// Members in ascending order from rank `from`: O(log n) to start.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = (&Bytes, f64)> + '_ {
        self.order.iter_from(from).map(|(s, m)| (m, s.0))
    }

    /// Members in descending order from rank `end - 1`: O(log n) to start.
    pub fn iter_before(&self, end: usize) -> impl Iterator<Item = (&Bytes, f64)> + '_ {
        self.order.iter_before(end).map(|(s, m)| (m, s.0))
    }

    /// Members with scores in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&Bytes, f64)> + '_ {
        self.order.iter().map(|(s, m)| (m, s.0))
    }

    /// Members with `min <= score <= max` (per the bounds' exclusivity), ascending: O(log n + k).
    pub fn range_by_score(
        &self,
        min: ScoreBound,
        max: ScoreBound,
    ) -> impl Iterator<Item = (&Bytes, f64)> + '_ {
        let from = self.order.lower_bound(&(Score(min.value), Bytes::new()));
        self.iter_from(from)
            .skip_while(move |(_, s)| !min.below(*s))
            .take_while(move |(_, s)| max.above(*s))
    }

    /// The same members as [`ZSet::range_by_score`], descending. Members whose score equals `max`
    /// sort after `(max, "")`, so they are gathered first (usually few), then the set is walked
    /// backwards from there.
    pub fn rev_range_by_score(
        &self,
        min: ScoreBound,
        max: ScoreBound,
    ) -> impl Iterator<Item = (&Bytes, f64)> + '_ {
        let pivot = self.order.lower_bound(&(Score(max.value), Bytes::new()));
        let mut at_max: Vec<(&Bytes, f64)> = self
            .iter_from(pivot)
            .take_while(move |(_, s)| *s == max.value)
            .collect();
        at_max.reverse();
        at_max
            .into_iter()
            .chain(self.iter_before(pivot))
            .skip_while(move |(_, s)| !max.above(*s))
            .take_while(move |(_, s)| min.below(*s))
    }

    /// Members with `min <= member <= max` in set order, assuming equal scores (as Redis does).
    pub fn range_by_lex<'a>(
        &'a self,
        min: &'a LexBound,
        max: &'a LexBound,
    ) -> impl Iterator<Item = (&'a Bytes, f64)> + 'a {
        self.iter()
            .skip_while(move |(m, _)| !min.below(m))
            .take_while(move |(m, _)| max.above(m))
    }

    pub fn pop_min(&mut self) -> Option<(Bytes, f64)> {
        let (score, member) = self.order.pop_first()?;
        self.scores.remove(&member);
        Some((member, score.0))
    }

    pub fn pop_max(&mut self) -> Option<(Bytes, f64)> {
        let (score, member) = self.order.pop_last()?;
        self.scores.remove(&member);
        Some((member, score.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn orders_by_score_then_member_and_updates_in_place() {
        let mut z = ZSet::default();
        z.insert(b("b"), 1.0);
        z.insert(b("a"), 1.0);
        z.insert(b("c"), 0.5);
        assert_eq!(z.insert(b("c"), 2.0), Some(0.5));
        let order: Vec<_> = z.iter().map(|(m, s)| (m.clone(), s)).collect();
        assert_eq!(order, vec![(b("a"), 1.0), (b("b"), 1.0), (b("c"), 2.0)]);
        assert_eq!(z.rank(b"c"), Some(2));
        assert_eq!(z.remove(b"a"), Some(1.0));
        assert_eq!(z.len(), 2);
        assert_eq!(z.rank(b"a"), None);
    }

    #[test]
    fn negative_zero_equals_zero_and_infinities_sort_at_the_ends() {
        let mut z = ZSet::default();
        z.insert(b("x"), f64::INFINITY);
        z.insert(b("y"), -0.0);
        z.insert(b("w"), 0.0);
        z.insert(b("v"), f64::NEG_INFINITY);
        let names: Vec<_> = z.iter().map(|(m, _)| m.clone()).collect();
        assert_eq!(names, vec![b("v"), b("w"), b("y"), b("x")]);
        assert_eq!(z.insert(b("y"), 0.0), Some(-0.0));
        assert_eq!(z.len(), 4);
        assert_eq!(z.pop_max(), Some((b("x"), f64::INFINITY)));
    }

    #[test]
    fn score_ranges_respect_exclusive_bounds() {
        let mut z = ZSet::default();
        for (i, m) in ["a", "b", "c", "d"].iter().enumerate() {
            z.insert(b(m), i as f64);
        }
        let incl = |v| ScoreBound {
            value: v,
            exclusive: false,
        };
        let excl = |v| ScoreBound {
            value: v,
            exclusive: true,
        };
        let got: Vec<_> = z
            .range_by_score(excl(1.0), incl(3.0))
            .map(|(m, _)| m.clone())
            .collect();
        assert_eq!(got, vec![b("c"), b("d")]);
        let got: Vec<_> = z
            .range_by_score(incl(1.0), excl(3.0))
            .map(|(m, _)| m.clone())
            .collect();
        assert_eq!(got, vec![b("b"), b("c")]);
        assert_eq!(z.range_by_score(incl(5.0), incl(1.0)).count(), 0);
    }
}
