//! The sorted set: members ordered by (score, member), as Redis orders them.
//!
//! Small sets are one sorted vector, as Redis keeps them in one listpack. Large ones: a hash map
//! gives O(1) member → score lookups (ZSCORE, ZADD's "already there?"), and a [`Ranked`] set of
//! (score, member) gives O(log n) ranks (ZRANK, ZRANGE by index, ZRANDMEMBER) and ordered walks
//! from any rank or score, as Redis's skip list with spans does. Members are `Bytes`, so both
//! structures share each member's bytes.

use super::encoding::CompactLimit;
use super::packed::{edit_exact, header_len, read, write_header};
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

/// A sorted set: while small (`zset-max-listpack-entries|value`), one buffer of (score, member)
/// entries in order, walked as Redis walks its listpack; past that, for good, a hash map for
/// scores plus a [`Ranked`] order.
#[derive(Debug, Default, Clone)]
pub struct ZSet(Form);

#[derive(Debug, Clone)]
enum Form {
    Small(Small),
    Large(Box<Large>),
}

impl Default for Form {
    fn default() -> Self {
        Form::Small(Small::default())
    }
}

#[derive(Debug, Default, Clone)]
struct Large {
    scores: ScoreMap,
    order: Ranked<(Score, Bytes)>,
}

/// The small form: one exact-size buffer of entries in (score, member) order, each the score (see
/// [`write_score`]: two bytes for a small integer, nine for any other) then the member as
/// [`super::packed`] writes an element (a length header and the bytes). One allocation per set,
/// where a vector of (score, `Bytes`) pairs spent 40 bytes and a heap block on every member.
#[derive(Debug, Default, Clone)]
struct Small {
    /// Exactly as long as its contents (see [`super::packed::edit_exact`]).
    buf: Box<[u8]>,
    count: u32,
}

/// One entry of a [`Small`]: its member, score, and the offsets where it starts and ends.
struct At<'a> {
    member: &'a [u8],
    score: f64,
    start: usize,
    end: usize,
}

/// The entries of a [`Small`] from a byte offset on.
struct Walk<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Walk<'a> {
    type Item = At<'a>;

    fn next(&mut self) -> Option<At<'a>> {
        if self.at >= self.buf.len() {
            return None;
        }
        let start = self.at;
        let (score, member_at) = read_score(self.buf, start);
        let (member, end) = read(self.buf, member_at);
        self.at = end;
        Some(At {
            member,
            score,
            start,
            end,
        })
    }
}

/// Largest magnitude of a score stored as an integer: every integer below it is exact as an `f64`.
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0; // 2^53

/// Appends `score` as the small form stores it (as a listpack stores an integral score as an
/// integer): an integral score below 2^53 in magnitude (but not -0, which must read back as -0)
/// as a length byte 1..=7 and that many bytes of its two's complement, little-endian; any other
/// as a 0 byte and the `f64`'s 8 bytes.
fn write_score(out: &mut Vec<u8>, score: f64) {
    let integral = score.fract() == 0.0 && score.abs() < EXACT_INTEGERS;
    if !integral || (score == 0.0 && score.is_sign_negative()) {
        out.push(0);
        out.extend_from_slice(&score.to_le_bytes());
        return;
    }
    let int = score as i64;
    let fits = |len: u32| {
        let shift = 64 - 8 * len;
        (int << shift) >> shift == int
    };
    let len = (1..8).find(|&len| fits(len)).unwrap_or(7);
    out.push(len as u8);
    out.extend_from_slice(&int.to_le_bytes()[..len as usize]);
}

/// The score written by [`write_score`] at byte `at`, and the offset after it.
fn read_score(buf: &[u8], at: usize) -> (f64, usize) {
    let len = usize::from(buf[at]);
    if len == 1 {
        return (f64::from(buf[at + 1] as i8), at + 2);
    }
    let mut word = [0u8; 8];
    if len == 0 {
        word.copy_from_slice(&buf[at + 1..at + 9]);
        return (f64::from_le_bytes(word), at + 9);
    }
    word[..len].copy_from_slice(&buf[at + 1..at + 1 + len]);
    let shift = 64 - 8 * len as u32;
    let int = (i64::from_le_bytes(word) << shift) >> shift;
    (int as f64, at + 1 + len)
}

impl Small {
    fn walk(&self) -> Walk<'_> {
        Walk {
            buf: &self.buf,
            at: 0,
        }
    }

    fn find(&self, member: &[u8]) -> Option<(usize, At<'_>)> {
        self.walk().enumerate().find(|(_, e)| e.member == member)
    }

    /// Every entry, for walks backwards (a small set holds at most a few hundred).
    fn all(&self) -> Vec<(&[u8], f64)> {
        let mut out = Vec::with_capacity(self.count as usize);
        out.extend(self.walk().map(|e| (e.member, e.score)));
        out
    }

    /// How many entries sort before `(score, member)`, and the byte offset where it would go.
    fn partition(&self, score: f64, member: &[u8]) -> (usize, usize) {
        let key = (Score(score), member);
        self.walk()
            .enumerate()
            .find(|(_, e)| (Score(e.score), e.member) >= key)
            .map_or((self.count as usize, self.buf.len()), |(rank, e)| {
                (rank, e.start)
            })
    }

    fn remove_bytes(&mut self, start: usize, end: usize) {
        edit_exact(&mut self.buf, |buf| {
            buf.drain(start..end);
        });
        self.count -= 1;
    }

    /// Inserts a member known to be absent at its place, growing the buffer by exactly its size.
    fn insert(&mut self, member: &[u8], score: f64) {
        let (_, at) = self.partition(score, member);
        let mut entry = Vec::with_capacity(9 + header_len(member.len()) + member.len());
        write_score(&mut entry, score);
        write_header(&mut entry, member.len());
        entry.extend_from_slice(member);
        edit_exact(&mut self.buf, |buf| {
            buf.reserve_exact(entry.len());
            buf.splice(at..at, entry);
        });
        self.count += 1;
    }

    /// Removes and returns the first (`last` false) or last entry.
    fn pop(&mut self, last: bool) -> Option<(Bytes, f64)> {
        let e = if last {
            self.walk().last()?
        } else {
            self.walk().next()?
        };
        let popped = (Bytes::copy_from_slice(e.member), e.score);
        let (start, end) = (e.start, e.end);
        self.remove_bytes(start, end);
        Some(popped)
    }
}

/// One of two iterators (the small or the large form's).
enum Either<A, B> {
    Small(A),
    Large(B),
}

impl<T, A: Iterator<Item = T>, B: Iterator<Item = T>> Iterator for Either<A, B> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        match self {
            Either::Small(a) => a.next(),
            Either::Large(b) => b.next(),
        }
    }
}

impl<T, A: DoubleEndedIterator<Item = T>, B: DoubleEndedIterator<Item = T>> DoubleEndedIterator
    for Either<A, B>
{
    fn next_back(&mut self) -> Option<T> {
        match self {
            Either::Small(a) => a.next_back(),
            Either::Large(b) => b.next_back(),
        }
    }
}

fn pair(p: &(Score, Bytes)) -> (&[u8], f64) {
    (&p.1, p.0 .0)
}

impl ZSet {
    /// Bytes of the small form's one buffer; None in the large form (MEMORY USAGE).
    pub fn packed_bytes(&self) -> Option<usize> {
        match &self.0 {
            Form::Small(small) => Some(small.buf.len()),
            Form::Large(_) => None,
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Form::Small(v) => v.count as usize,
            Form::Large(l) => l.scores.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the set is in its small form (for tests).
    pub fn is_small(&self) -> bool {
        matches!(self.0, Form::Small(_))
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.0 {
            Form::Small(v) => v.find(member).map(|(_, e)| e.score),
            Form::Large(l) => l.scores.get(member).copied(),
        }
    }

    /// The set of `pairs`, whose members are distinct (the results of ZUNIONSTORE and its
    /// kin): one past `limit` is built in its large form at once, its order sorted in one go,
    /// instead of growing through one insert per member.
    pub fn from_distinct(pairs: Vec<(Bytes, f64)>, limit: CompactLimit) -> ZSet {
        let longest = pairs.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
        if limit.holds(pairs.len(), longest) {
            let mut z = ZSet::default();
            for (member, score) in pairs {
                z.insert(member, score, limit);
            }
            return z;
        }
        let mut scores = ScoreMap::with_capacity_and_hasher(pairs.len(), Default::default());
        let mut order = Vec::with_capacity(pairs.len());
        for (member, score) in pairs {
            scores.insert(member.clone(), score);
            order.push((Score(score), member));
        }
        order.sort_unstable();
        ZSet(Form::Large(Box::new(Large {
            scores,
            order: Ranked::from_sorted(order),
        })))
    }

    /// Sets `member`'s score; returns the previous score, if any. Past `limit` the set turns
    /// into its large form.
    pub fn insert(&mut self, member: Bytes, score: f64, limit: CompactLimit) -> Option<f64> {
        debug_assert!(!score.is_nan());
        if let Form::Small(v) = &mut self.0 {
            let found = v.find(&member).map(|(_, e)| (e.score, e.start, e.end));
            let fits = found.is_some() || limit.holds(v.count as usize + 1, member.len());
            if fits {
                if let Some((_, start, end)) = found {
                    v.remove_bytes(start, end);
                }
                v.insert(&member, score);
                return found.map(|(s, _, _)| s);
            }
            self.grow();
        }
        let Form::Large(l) = &mut self.0 else {
            unreachable!("grown above")
        };
        match l.scores.get_mut(&member) {
            Some(old) => {
                let previous = *old;
                if previous.to_bits() != score.to_bits() {
                    *old = score;
                    l.order.remove(&(Score(previous), member.clone()));
                    l.order.insert((Score(score), member));
                }
                Some(previous)
            }
            None => {
                l.scores.insert(member.clone(), score);
                l.order.insert((Score(score), member));
                None
            }
        }
    }

    /// Turns the small form into the large one.
    fn grow(&mut self) {
        if let Form::Small(v) = &self.0 {
            let mut large = Large::default();
            for e in v.walk() {
                let member = Bytes::copy_from_slice(e.member);
                large.scores.insert(member.clone(), e.score);
                large.order.insert((Score(e.score), member));
            }
            self.0 = Form::Large(Box::new(large));
        }
    }

    /// Removes `member`; returns its score when it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.0 {
            Form::Small(v) => {
                let (score, start, end) = v.find(member).map(|(_, e)| (e.score, e.start, e.end))?;
                v.remove_bytes(start, end);
                Some(score)
            }
            Form::Large(l) => {
                let (owned, score) = l.scores.remove_entry(member)?;
                l.order.remove(&(Score(score), owned));
                Some(score)
            }
        }
    }

    /// 0-based rank in ascending order: O(log n).
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.0 {
            Form::Small(v) => v.find(member).map(|(i, _)| i),
            Form::Large(l) => {
                let score = *l.scores.get(member)?;
                l.order
                    .rank(&(Score(score), Bytes::copy_from_slice(member)))
            }
        }
    }

    /// The member at 0-based ascending rank `i`: O(log n).
    pub fn select(&self, i: usize) -> Option<(&[u8], f64)> {
        match &self.0 {
            Form::Small(v) => v.walk().nth(i).map(|e| (e.member, e.score)),
            Form::Large(l) => l.order.select(i).map(pair),
        }
    }

    /// The rank of the first (score, member) at or after `(score, "")`.
    fn lower_bound(&self, score: f64) -> usize {
        match &self.0 {
            Form::Small(v) => v.partition(score, b"").0,
            Form::Large(l) => l.order.lower_bound(&(Score(score), Bytes::new())),
        }
    }

    /// Members in ascending order from rank `from`: O(log n) to start.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        match &self.0 {
            Form::Small(v) => Either::Small(v.walk().skip(from).map(|e| (e.member, e.score))),
            Form::Large(l) => Either::Large(l.order.iter_from(from).map(pair)),
        }
    }

    /// Members in descending order from rank `end - 1`: O(log n) to start.
    pub fn iter_before(&self, end: usize) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        match &self.0 {
            Form::Small(v) => {
                let mut all = v.all();
                all.truncate(end);
                Either::Small(all.into_iter().rev())
            }
            Form::Large(l) => Either::Large(l.order.iter_before(end).map(pair)),
        }
    }

    /// Members with scores in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        match &self.0 {
            Form::Small(v) => Either::Small(v.all().into_iter()),
            Form::Large(l) => Either::Large(l.order.iter().map(pair)),
        }
    }

    /// Members with `min <= score <= max` (per the bounds' exclusivity), ascending: O(log n + k).
    pub fn range_by_score(
        &self,
        min: ScoreBound,
        max: ScoreBound,
    ) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let from = self.lower_bound(min.value);
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
    ) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let pivot = self.lower_bound(max.value);
        let mut at_max: Vec<(&[u8], f64)> = self
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
    ) -> impl Iterator<Item = (&'a [u8], f64)> + 'a {
        self.iter_from(0)
            .skip_while(move |(m, _)| !min.below(m))
            .take_while(move |(m, _)| max.above(m))
    }

    pub fn pop_min(&mut self) -> Option<(Bytes, f64)> {
        match &mut self.0 {
            Form::Small(v) => v.pop(false),
            Form::Large(l) => {
                let (score, member) = l.order.pop_first()?;
                l.scores.remove(&member);
                Some((member, score.0))
            }
        }
    }

    pub fn pop_max(&mut self) -> Option<(Bytes, f64)> {
        match &mut self.0 {
            Form::Small(v) => v.pop(true),
            Form::Large(l) => {
                let (score, member) = l.order.pop_last()?;
                l.scores.remove(&member);
                Some((member, score.0))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    const LIMIT: CompactLimit = CompactLimit {
        entries: 128,
        value: 64,
    };

    #[test]
    fn scores_read_back_bit_for_bit_and_small_integers_take_two_bytes() {
        let cases: &[(f64, usize)] = &[
            (0.0, 2),
            (1.0, 2),
            (-1.0, 2),
            (127.0, 2),
            (-128.0, 2),
            (128.0, 3),
            (-129.0, 3),
            (8_388_607.0, 4),
            (9_007_199_254_740_991.0, 8),
            (-9_007_199_254_740_991.0, 8),
            (9_007_199_254_740_992.0, 9),
            (-0.0, 9),
            (0.5, 9),
            (1e300, 9),
            (-5e-324, 9),
            (f64::INFINITY, 9),
            (f64::NEG_INFINITY, 9),
        ];
        for &(score, len) in cases {
            let mut buf = vec![0xAA];
            write_score(&mut buf, score);
            assert_eq!(buf.len() - 1, len, "{score}");
            let (back, end) = read_score(&buf, 1);
            assert_eq!(back.to_bits(), score.to_bits(), "{score}");
            assert_eq!(end, buf.len());
        }
    }

    /// A set built from distinct pairs at once answers as one built by inserts, in the form the
    /// inserts would have reached.
    #[test]
    fn a_set_built_from_distinct_pairs_matches_one_built_by_inserts() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(15);
        for round in 0..60 {
            let limit = CompactLimit {
                entries: rng.gen_range(0..300),
                value: rng.gen_range(3..12),
            };
            let count = rng.gen_range(0..600);
            let pairs: Vec<(Bytes, f64)> = (0..count)
                .map(|i| {
                    let pad = if rng.gen_bool(0.01) {
                        "long-member"
                    } else {
                        ""
                    };
                    let score = [-0.0, 0.0, 2.5, -7.0, 1e300][rng.gen_range(0..5)];
                    (b(&format!("m{i}{pad}")), score)
                })
                .collect();
            let built = ZSet::from_distinct(pairs.clone(), limit);
            let mut inserted = ZSet::default();
            for (m, s) in pairs {
                inserted.insert(m, s, limit);
            }
            assert_eq!(built.is_small(), inserted.is_small(), "round {round}");
            let bits = |z: &ZSet| -> Vec<(Vec<u8>, u64)> {
                z.iter().map(|(m, s)| (m.to_vec(), s.to_bits())).collect()
            };
            assert_eq!(bits(&built), bits(&inserted), "round {round}");
            for i in [0, count / 2, count] {
                assert_eq!(built.select(i), inserted.select(i));
            }
        }
    }

    /// Random ZADD/ZREM/pops against a `BTreeSet` of (score, member) plus a score map, across the
    /// small form and the conversion: same order, ranks, scores, score ranges both ways.
    #[test]
    fn both_forms_match_the_btree_model() {
        use rand::{Rng, SeedableRng};
        use std::collections::{BTreeSet, HashMap};
        let mut rng = rand::rngs::StdRng::seed_from_u64(14);
        for round in 0..200 {
            let limit = CompactLimit {
                entries: rng.gen_range(0..40),
                value: rng.gen_range(0..12),
            };
            let mut z = ZSet::default();
            let mut order: BTreeSet<(Score, Bytes)> = BTreeSet::new();
            let mut scores: HashMap<Bytes, f64> = HashMap::new();
            for _ in 0..rng.gen_range(0..150) {
                let member = b(&"m"
                    .repeat(rng.gen_range(1..4))
                    .replace('m', &rng.gen_range(0..9).to_string()));
                match rng.gen_range(0..10) {
                    0..=5 => {
                        let mut score = [0.0, 1.5, f64::INFINITY, 300.0, -129.0]
                            [rng.gen_range(0..5)]
                            + f64::from(rng.gen_range(-3..3));
                        if rng.gen_bool(0.2) {
                            // Kept as they are: -0, integers at the edges of the integer
                            // encoding, non-integers, extremes.
                            score = [
                                -0.0,
                                9_007_199_254_740_991.0,
                                -9_007_199_254_740_992.0,
                                9_007_199_254_740_994.0,
                                1e300,
                                -5e-324,
                                f64::NEG_INFINITY,
                                -32768.0,
                                8_388_607.0,
                            ][rng.gen_range(0..9)];
                        }
                        let previous = scores.insert(member.clone(), score);
                        if let Some(p) = previous {
                            order.remove(&(Score(p), member.clone()));
                        }
                        order.insert((Score(score), member.clone()));
                        let got = z.insert(member, score, limit);
                        assert_eq!(
                            got.map(f64::to_bits),
                            previous.map(f64::to_bits),
                            "round {round}"
                        );
                    }
                    6..=7 => {
                        let previous = scores.remove(&member);
                        if let Some(p) = previous {
                            order.remove(&(Score(p), member.clone()));
                        }
                        assert_eq!(z.remove(&member), previous);
                    }
                    8 => {
                        let want = order.pop_first().map(|(s, m)| {
                            scores.remove(&m);
                            (m, s.0)
                        });
                        assert_eq!(z.pop_min(), want);
                    }
                    _ => {
                        let want = order.pop_last().map(|(s, m)| {
                            scores.remove(&m);
                            (m, s.0)
                        });
                        assert_eq!(z.pop_max(), want);
                    }
                }
                let ours: Vec<_> = z
                    .iter()
                    .map(|(m, s)| (Bytes::copy_from_slice(m), s.to_bits()))
                    .collect();
                let theirs: Vec<_> = order
                    .iter()
                    .map(|(s, m)| (m.clone(), s.0.to_bits()))
                    .collect();
                assert_eq!(ours, theirs, "round {round}");
                assert_eq!(z.len(), order.len());
                if z.is_small() {
                    assert!(z.len() <= limit.entries);
                }
                for (i, (s, m)) in order.iter().enumerate() {
                    assert_eq!(z.rank(m), Some(i));
                    assert_eq!(z.score(m), Some(s.0));
                    assert_eq!(
                        z.select(i).map(|(m, _)| Bytes::copy_from_slice(m)),
                        Some(m.clone())
                    );
                }
                let lo = ScoreBound {
                    value: f64::from(rng.gen_range(-4..4)),
                    exclusive: rng.gen_bool(0.5),
                };
                let hi = ScoreBound {
                    value: f64::from(rng.gen_range(-4..4)),
                    exclusive: rng.gen_bool(0.5),
                };
                let want: Vec<_> = order
                    .iter()
                    .filter(|(s, _)| lo.below(s.0) && hi.above(s.0))
                    .map(|(_, m)| m.clone())
                    .collect();
                let got: Vec<_> = z
                    .range_by_score(lo, hi)
                    .map(|(m, _)| Bytes::copy_from_slice(m))
                    .collect();
                assert_eq!(got, want);
                let mut got: Vec<_> = z
                    .rev_range_by_score(lo, hi)
                    .map(|(m, _)| Bytes::copy_from_slice(m))
                    .collect();
                got.reverse();
                assert_eq!(got, want);
                let from = rng.gen_range(0..z.len() + 2);
                assert_eq!(z.iter_from(from).count(), z.len().saturating_sub(from));
                assert_eq!(z.iter_before(from).count(), from.min(z.len()));
            }
        }
    }

    #[test]
    fn long_members_stay_in_the_small_form() {
        let limit = CompactLimit {
            entries: 8,
            value: 1000,
        };
        let mut z = ZSet::default();
        let long = |c: &str| b(&c.repeat(300));
        z.insert(long("b"), 2.0, limit);
        z.insert(b("a"), 2.0, limit);
        z.insert(long("c"), -1.0, limit);
        assert!(z.is_small());
        let order: Vec<_> = z
            .iter()
            .map(|(m, s)| (Bytes::copy_from_slice(m), s))
            .collect();
        assert_eq!(
            order,
            vec![(long("c"), -1.0), (b("a"), 2.0), (long("b"), 2.0)]
        );
        assert_eq!(z.insert(long("c"), 3.0, limit), Some(-1.0));
        assert_eq!(z.rank(&long("c")), Some(2));
        assert_eq!(z.pop_max(), Some((long("c"), 3.0)));
        assert_eq!(z.pop_min(), Some((b("a"), 2.0)));
        assert_eq!(z.score(&long("b")), Some(2.0));
        assert_eq!(z.len(), 1);
    }

    #[test]
    fn orders_by_score_then_member_and_updates_in_place() {
        let mut z = ZSet::default();
        z.insert(b("b"), 1.0, LIMIT);
        z.insert(b("a"), 1.0, LIMIT);
        z.insert(b("c"), 0.5, LIMIT);
        assert_eq!(z.insert(b("c"), 2.0, LIMIT), Some(0.5));
        let order: Vec<_> = z
            .iter()
            .map(|(m, s)| (Bytes::copy_from_slice(m), s))
            .collect();
        assert_eq!(order, vec![(b("a"), 1.0), (b("b"), 1.0), (b("c"), 2.0)]);
        assert_eq!(z.rank(b"c"), Some(2));
        assert_eq!(z.remove(b"a"), Some(1.0));
        assert_eq!(z.len(), 2);
        assert_eq!(z.rank(b"a"), None);
    }

    #[test]
    fn negative_zero_equals_zero_and_infinities_sort_at_the_ends() {
        let mut z = ZSet::default();
        z.insert(b("x"), f64::INFINITY, LIMIT);
        z.insert(b("y"), -0.0, LIMIT);
        z.insert(b("w"), 0.0, LIMIT);
        z.insert(b("v"), f64::NEG_INFINITY, LIMIT);
        let names: Vec<_> = z.iter().map(|(m, _)| Bytes::copy_from_slice(m)).collect();
        assert_eq!(names, vec![b("v"), b("w"), b("y"), b("x")]);
        assert_eq!(z.insert(b("y"), 0.0, LIMIT), Some(-0.0));
        assert_eq!(z.len(), 4);
        assert_eq!(z.pop_max(), Some((b("x"), f64::INFINITY)));
    }

    #[test]
    fn score_ranges_respect_exclusive_bounds() {
        let mut z = ZSet::default();
        for (i, m) in ["a", "b", "c", "d"].iter().enumerate() {
            z.insert(b(m), i as f64, LIMIT);
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
            .map(|(m, _)| Bytes::copy_from_slice(m))
            .collect();
        assert_eq!(got, vec![b("c"), b("d")]);
        let got: Vec<_> = z
            .range_by_score(incl(1.0), excl(3.0))
            .map(|(m, _)| Bytes::copy_from_slice(m))
            .collect();
        assert_eq!(got, vec![b("b"), b("c")]);
        assert_eq!(z.range_by_score(incl(5.0), incl(1.0)).count(), 0);
    }
}
