//! An ordered set with O(log n) ranks: the order of a sorted set.
//!
//! The elements live in sorted chunks of at most `2 * CHUNK` elements, every element of a chunk
//! below every element of the next, and a Fenwick tree over the chunk lengths turns "how many
//! elements come before this chunk" and "which chunk holds rank i" into O(log(n / CHUNK)) walks.
//! So a rank (ZRANK) costs a binary search over the chunks' last elements, one within the chunk and
//! a Fenwick prefix sum: O(log n); selecting by rank (ZRANGE by index, ZRANDMEMBER) costs the same.
//! An insert or a removal moves at most `CHUNK` elements within one chunk (a memmove, cheap next to
//! pointer chasing), plus an O(n / CHUNK) rebuild of the Fenwick tree when a chunk splits or
//! empties, which happens at most once per `CHUNK` inserts. Iteration walks the chunks in order
//! from any rank, both ways.

use std::collections::VecDeque;

/// Elements per chunk after a split (a chunk splits when it reaches twice this).
const CHUNK: usize = 128;

#[derive(Debug, Clone)]
pub struct Ranked<T> {
    chunks: Vec<VecDeque<T>>,
    /// Fenwick tree (1-based) over the chunks' lengths.
    tree: Vec<usize>,
    len: usize,
}

impl<T> Default for Ranked<T> {
    fn default() -> Self {
        Ranked {
            chunks: Vec::new(),
            tree: vec![0],
            len: 0,
        }
    }
}

impl<T: Ord> Ranked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk where `key` is or would go, and its position there: the first element `>= key`.
    /// `(chunks.len(), 0)` when every element is below `key`.
    fn locate(&self, key: &T) -> (usize, usize) {
        let chunk = self
            .chunks
            .partition_point(|c| c.back().is_some_and(|last| last < key));
        match self.chunks.get(chunk) {
            Some(c) => (chunk, c.partition_point(|x| x < key)),
            None => (chunk, 0),
        }
    }

    /// The set of `sorted`, which must be ascending with no two elements equal (its callers'
    /// promise; not checked): chunks filled in one pass instead of one insert per element.
    pub fn from_sorted(sorted: Vec<T>) -> Self {
        debug_assert!(sorted.windows(2).all(|w| w[0] < w[1]));
        let len = sorted.len();
        let mut chunks = Vec::with_capacity(len.div_ceil(CHUNK));
        let mut rest = sorted.into_iter().peekable();
        while rest.peek().is_some() {
            chunks.push(rest.by_ref().take(CHUNK).collect::<VecDeque<T>>());
        }
        let mut ranked = Ranked {
            chunks,
            tree: Vec::new(),
            len,
        };
        ranked.rebuild();
        ranked
    }

    /// Inserts `value`; false (and nothing changes) when an equal element is there.
    pub fn insert(&mut self, value: T) -> bool {
        if self.chunks.is_empty() {
            self.chunks.push(VecDeque::from([value]));
            self.len = 1;
            self.rebuild();
            return true;
        }
        let (mut chunk, mut at) = self.locate(&value);
        if chunk == self.chunks.len() {
            chunk -= 1;
            at = self.chunks[chunk].len();
        } else if self.chunks[chunk][at] == value {
            return false;
        }
        self.chunks[chunk].insert(at, value);
        self.len += 1;
        if self.chunks[chunk].len() >= 2 * CHUNK {
            let upper = self.chunks[chunk].split_off(CHUNK);
            self.chunks.insert(chunk + 1, upper);
            self.rebuild();
        } else {
            self.add(chunk, 1);
        }
        true
    }

    /// Removes the element equal to `key`; returns it when it was there.
    pub fn remove(&mut self, key: &T) -> Option<T> {
        let (chunk, at) = self.locate(key);
        if self.chunks.get(chunk)?.get(at)? != key {
            return None;
        }
        self.take(chunk, at)
    }

    fn take(&mut self, chunk: usize, at: usize) -> Option<T> {
        let value = self.chunks[chunk].remove(at)?;
        self.len -= 1;
        if self.chunks[chunk].is_empty() {
            self.chunks.remove(chunk);
            self.rebuild();
        } else {
            self.add(chunk, -1);
        }
        Some(value)
    }

    pub fn pop_first(&mut self) -> Option<T> {
        if self.chunks.is_empty() {
            return None;
        }
        self.take(0, 0)
    }

    pub fn pop_last(&mut self) -> Option<T> {
        let chunk = self.chunks.len().checked_sub(1)?;
        let at = self.chunks[chunk].len() - 1;
        self.take(chunk, at)
    }

    /// How many elements are below `key` (the rank `key` has or would have): O(log n).
    pub fn lower_bound(&self, key: &T) -> usize {
        let (chunk, at) = self.locate(key);
        if chunk == self.chunks.len() {
            return self.len;
        }
        self.before(chunk) + at
    }

    /// The 0-based rank of the element equal to `key`: O(log n).
    pub fn rank(&self, key: &T) -> Option<usize> {
        let (chunk, at) = self.locate(key);
        (self.chunks.get(chunk)?.get(at)? == key).then(|| self.before(chunk) + at)
    }

    /// The element at 0-based rank `i`: O(log n).
    pub fn select(&self, i: usize) -> Option<&T> {
        let (chunk, at) = self.find(i)?;
        self.chunks[chunk].get(at)
    }

    /// Ascending, from the smallest.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }

    /// Ascending, from rank `from` (nothing when `from >= len`).
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &T> + '_ {
        let (chunk, at) = self.find(from).unwrap_or((self.chunks.len(), 0));
        self.chunks[chunk..]
            .iter()
            .enumerate()
            .flat_map(move |(j, c)| c.range(if j == 0 { at } else { 0 }..))
    }

    /// Descending, from rank `end - 1` down to rank 0 (`end` is clamped to the length).
    pub fn iter_before(&self, end: usize) -> impl Iterator<Item = &T> + '_ {
        let end = end.min(self.len);
        let (chunk, at) = match end.checked_sub(1).and_then(|last| self.find(last)) {
            Some((chunk, at)) => (chunk + 1, at + 1),
            None => (0, 0),
        };
        self.chunks[..chunk]
            .iter()
            .rev()
            .enumerate()
            .flat_map(move |(j, c)| c.range(..if j == 0 { at } else { c.len() }).rev())
    }

    /// Elements in the chunks before `chunk`.
    fn before(&self, chunk: usize) -> usize {
        let (mut i, mut sum) = (chunk, 0);
        while i > 0 {
            sum += self.tree[i];
            i &= i - 1;
        }
        sum
    }

    /// The chunk and position of rank `rank`.
    fn find(&self, rank: usize) -> Option<(usize, usize)> {
        if rank >= self.len {
            return None;
        }
        // The largest prefix of whole chunks holding at most `rank` elements.
        let (mut pos, mut rest) = (0, rank);
        let mut step = (self.tree.len() - 1).next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && self.tree[next] <= rest {
                pos = next;
                rest -= self.tree[next];
            }
            step /= 2;
        }
        Some((pos, rest))
    }

    fn add(&mut self, chunk: usize, delta: isize) {
        let mut i = chunk + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    fn rebuild(&mut self) {
        let n = self.chunks.len();
        self.tree.clear();
        self.tree.resize(n + 1, 0);
        for (i, c) in self.chunks.iter().enumerate() {
            self.tree[i + 1] += c.len();
            let parent = (i + 1) + ((i + 1) & (i + 1).wrapping_neg());
            if parent <= n {
                self.tree[parent] += self.tree[i + 1];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// A small deterministic generator (no test depends on the OS's randomness).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, bound: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % bound
        }
    }

    #[test]
    fn agrees_with_a_btreeset_under_random_inserts_and_removals() {
        let mut ranked = Ranked::default();
        let mut reference = BTreeSet::new();
        let mut rng = Lcg(7);
        for round in 0..40_000 {
            let value = rng.next(3_000);
            if rng.next(3) == 0 {
                assert_eq!(ranked.remove(&value), reference.take(&value));
            } else {
                assert_eq!(ranked.insert(value), reference.insert(value));
            }
            if round % 97 == 0 {
                let probe = rng.next(3_000);
                let below = reference.range(..probe).count();
                assert_eq!(ranked.lower_bound(&probe), below);
                assert_eq!(
                    ranked.rank(&probe),
                    reference.contains(&probe).then_some(below)
                );
                assert_eq!(ranked.select(below), reference.range(probe..).next());
                let from: Vec<_> = ranked.iter_from(below).take(5).collect();
                let want: Vec<_> = reference.range(probe..).take(5).collect();
                assert_eq!(from, want);
                let back: Vec<_> = ranked.iter_before(below).take(5).collect();
                let want: Vec<_> = reference.range(..probe).rev().take(5).collect();
                assert_eq!(back, want);
            }
        }
        assert_eq!(ranked.len(), reference.len());
        assert!(ranked.iter().eq(reference.iter()));
        assert!(ranked.iter().rev().eq(reference.iter().rev()));
        while let Some(first) = reference.pop_first() {
            assert_eq!(ranked.pop_first(), Some(first));
            if let Some(last) = reference.pop_last() {
                assert_eq!(ranked.pop_last(), Some(last));
            }
        }
        assert!(ranked.is_empty() && ranked.pop_first().is_none() && ranked.pop_last().is_none());
    }

    #[test]
    fn a_set_loaded_sorted_answers_as_one_built_by_inserts() {
        for n in [0usize, 1, 127, 128, 129, 1_000, 5_003] {
            let sorted: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
            let mut loaded = Ranked::from_sorted(sorted.clone());
            let mut inserted = Ranked::default();
            for &v in &sorted {
                inserted.insert(v);
            }
            assert_eq!(loaded.len(), n);
            assert!(loaded.iter().eq(inserted.iter()));
            for probe in [0, 1, 3, 382, 1_500, 15_009] {
                assert_eq!(
                    loaded.rank(&probe),
                    inserted.rank(&probe),
                    "n {n} probe {probe}"
                );
                assert_eq!(loaded.lower_bound(&probe), inserted.lower_bound(&probe));
            }
            for i in [0, n / 2, n.saturating_sub(1), n] {
                assert_eq!(loaded.select(i), inserted.select(i));
            }
            // It stays a working set: inserts between loaded elements and removals.
            assert!(loaded.insert(4));
            assert_eq!(loaded.remove(&0), (n > 0).then_some(0));
        }
    }

    #[test]
    fn edges_of_empty_and_out_of_range_ranks() {
        let mut ranked: Ranked<u32> = Ranked::default();
        assert_eq!(ranked.select(0), None);
        assert_eq!(ranked.iter_from(0).count(), 0);
        assert_eq!(ranked.iter_before(3).count(), 0);
        for v in 0..1_000 {
            ranked.insert(v);
        }
        assert_eq!(ranked.select(999), Some(&999));
        assert_eq!(ranked.select(1_000), None);
        assert_eq!(ranked.iter_from(1_000).count(), 0);
        assert_eq!(ranked.iter_before(5_000).next(), Some(&999));
        assert_eq!(ranked.iter_before(0).count(), 0);
        assert_eq!(ranked.lower_bound(&5_000), 1_000);
        assert!(!ranked.insert(10));
    }
}
