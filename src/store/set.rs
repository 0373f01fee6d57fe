//! A set value: packed members while it is small (Redis's intset or listpack), an index set once it
//! outgrows `set-max-intset-entries` / `set-max-listpack-entries|value` (for good, as Redis never
//! converts back). Commands see one type. Both forms keep the same order: insertion order, with a
//! removed member's place taken by the last member (`IndexSet::swap_remove`).

use super::encoding::{is_int_encodable, SetLimit};
use super::packed::{Packed, MAX_ELEMENT};
use bytes::Bytes;

/// The large form: O(1) lookups, and O(1) access by position for SRANDMEMBER and SPOP.
pub type SetMap = indexmap::IndexSet<Bytes, ahash::RandomState>;

#[derive(Clone, Debug)]
pub struct Set(Form);

#[derive(Clone, Debug)]
enum Form {
    /// `flag` says every member is an integer (as an intset holds them): only then may the
    /// packed form grow past the listpack's entry limit, up to the intset's.
    Packed(Packed),
    Map(Box<SetMap>),
}

impl Default for Set {
    fn default() -> Self {
        Set(Form::Packed(Packed::default()))
    }
}

impl Set {
    pub fn len(&self) -> usize {
        match &self.0 {
            Form::Packed(p) => p.len(),
            Form::Map(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the set is in its packed form (for tests).
    pub fn is_packed(&self) -> bool {
        matches!(self.0, Form::Packed(_))
    }

    /// Bytes of the packed form's one buffer; None in the large form (MEMORY USAGE).
    pub fn packed_bytes(&self) -> Option<usize> {
        match &self.0 {
            Form::Packed(p) => Some(p.byte_len()),
            Form::Map(_) => None,
        }
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.0 {
            Form::Packed(p) => p.find(member, 1).is_some(),
            Form::Map(m) => m.contains(member),
        }
    }

    /// Adds `member`; true when it is new. Past `limit` the set turns into its map form.
    pub fn insert(&mut self, member: &[u8], limit: SetLimit) -> bool {
        if let Form::Packed(p) = &mut self.0 {
            if p.find(member, 1).is_some() {
                return false;
            }
            let n = p.len() + 1;
            let int = p.flag && is_int_encodable(member);
            let as_listpack = limit.listpack.holds(n, member.len());
            if member.len() <= MAX_ELEMENT && (as_listpack || (int && n <= limit.intset_entries)) {
                p.push(&[member]);
                p.flag = int;
                return true;
            }
            self.convert_to_map();
        }
        match &mut self.0 {
            Form::Map(m) => !m.contains(member) && m.insert(Bytes::copy_from_slice(member)),
            Form::Packed(_) => unreachable!("converted above"),
        }
    }

    /// Removes `member`; true when it was there. The last member takes its place.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.0 {
            Form::Packed(p) => match p.find(member, 1) {
                Some(at) => {
                    p.swap_remove_group(at, 1);
                    true
                }
                None => false,
            },
            Form::Map(m) => m.swap_remove(member),
        }
    }

    /// Removes and returns the member at position `i` (`0..len`); the last takes its place.
    pub fn pop_at(&mut self, i: usize) -> Option<Bytes> {
        match &mut self.0 {
            Form::Packed(p) => {
                let at = *p.offsets(1).get(i)?;
                let member = Bytes::copy_from_slice(p.group_at(at, 1)[0]);
                p.swap_remove_group(at, 1);
                Some(member)
            }
            Form::Map(m) => m.swap_remove_index(i),
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Form::Packed(p) => Iter::Packed(p.iter()),
            Form::Map(m) => Iter::Map(m.iter()),
        }
    }

    /// The members at these positions (`0..len`, repeats allowed), for SRANDMEMBER: the packed
    /// form is walked once, not once per position.
    pub fn at_positions(&self, positions: &[usize]) -> Vec<&[u8]> {
        match &self.0 {
            Form::Packed(p) => {
                let offsets = p.offsets(1);
                positions
                    .iter()
                    .filter_map(|&i| offsets.get(i))
                    .map(|&at| p.group_at(at, 1)[0])
                    .collect()
            }
            Form::Map(m) => positions
                .iter()
                .filter_map(|&i| m.get_index(i))
                .map(|m| &m[..])
                .collect(),
        }
    }

    fn convert_to_map(&mut self) {
        if let Form::Packed(p) = &self.0 {
            let mut map = SetMap::with_capacity_and_hasher(p.len() + 1, Default::default());
            map.extend(p.iter().map(Bytes::copy_from_slice));
            self.0 = Form::Map(Box::new(map));
        }
    }
}

/// A set of these members under the default thresholds.
impl<M: AsRef<[u8]>> FromIterator<M> for Set {
    fn from_iter<I: IntoIterator<Item = M>>(members: I) -> Set {
        let limit = super::encoding::Limits::default().set();
        let mut set = Set::default();
        for m in members {
            set.insert(m.as_ref(), limit);
        }
        set
    }
}

/// The members of a [`Set`], in order.
#[derive(Clone)]
pub enum Iter<'a> {
    Packed(super::packed::Iter<'a>),
    Map(indexmap::set::Iter<'a, Bytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            Iter::Packed(items) => items.next(),
            Iter::Map(items) => items.next().map(|m| &m[..]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::encoding::CompactLimit;
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Random SADD/SREM/SPOP against an `IndexSet` model: same members, same order, same answers,
    /// across the conversion; the packed form never holds more than its limits allow.
    #[test]
    fn matches_the_index_set_model() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(14);
        for round in 0..200 {
            let limit = SetLimit {
                listpack: CompactLimit {
                    entries: rng.gen_range(0..20),
                    value: rng.gen_range(0..300),
                },
                intset_entries: rng.gen_range(0..60),
            };
            let mut set = Set::default();
            let mut model = SetMap::default();
            let ints_only = rng.gen_bool(0.5);
            for _ in 0..rng.gen_range(0..150) {
                let member = if ints_only || rng.gen_bool(0.5) {
                    rng.gen_range(-30..70).to_string().into_bytes()
                } else {
                    vec![b'm'; rng.gen_range(0..400)]
                };
                match rng.gen_range(0..10) {
                    0..=5 => {
                        let new = set.insert(&member, limit);
                        assert_eq!(new, model.insert(Bytes::from(member)), "round {round}");
                    }
                    6..=8 => assert_eq!(set.remove(&member), model.swap_remove(&member[..])),
                    _ if !model.is_empty() => {
                        let i = rng.gen_range(0..model.len());
                        assert_eq!(set.pop_at(i), model.swap_remove_index(i));
                    }
                    _ => assert_eq!(set.pop_at(0), None),
                }
                assert_eq!(set.len(), model.len());
                let ours: Vec<_> = set.iter().collect();
                let theirs: Vec<_> = model.iter().map(|m| &m[..]).collect();
                assert_eq!(ours, theirs, "round {round}");
                assert!(theirs.iter().all(|m| set.contains(m)));
                assert!(!set.contains(b"absent"));
                if set.is_packed() {
                    let all_int = ours.iter().all(|m| is_int_encodable(m));
                    let fits_listpack = set.len() <= limit.listpack.entries
                        && ours.iter().all(|m| m.len() <= limit.listpack.value);
                    assert!(fits_listpack || (all_int && set.len() <= limit.intset_entries));
                }
                let positions: Vec<usize> = (0..set.len()).rev().collect();
                assert_eq!(
                    set.at_positions(&positions),
                    positions.iter().map(|&i| theirs[i]).collect::<Vec<_>>()
                );
            }
        }
    }

    #[test]
    fn integers_stay_packed_up_to_the_intset_limit() {
        let limit = SetLimit {
            listpack: CompactLimit {
                entries: 2,
                value: 64,
            },
            intset_entries: 4,
        };
        let mut set = Set::default();
        for m in ["1", "2", "3", "4"] {
            set.insert(m.as_bytes(), limit);
        }
        assert!(set.is_packed());
        set.insert(b"5", limit);
        assert!(!set.is_packed());

        let mut mixed = Set::default();
        mixed.insert(b"a", limit);
        mixed.insert(b"1", limit);
        mixed.insert(b"2", limit);
        assert!(
            !mixed.is_packed(),
            "a string member caps it at the listpack limit"
        );
    }
}
