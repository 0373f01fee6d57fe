//! A hash value: packed field/value pairs while it is small, an index map once it outgrows
//! `hash-max-listpack-entries|value` (for good, as Redis never converts back). Commands see one
//! type; the form is this module's business. Both forms keep the same order: insertion order,
//! with a removed field's place taken by the last field (`IndexMap::swap_remove`).

use super::encoding::CompactLimit;
use super::packed::{Packed, MAX_ELEMENT};
use bytes::Bytes;

/// The large form: O(1) lookups, and O(1) access by position for HRANDFIELD.
pub type HashMap = indexmap::IndexMap<Bytes, Bytes, ahash::RandomState>;

#[derive(Clone, Debug)]
pub struct Hash(Form);

#[derive(Clone, Debug)]
enum Form {
    Packed(Packed),
    Map(Box<HashMap>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash(Form::Packed(Packed::default()))
    }
}

impl Hash {
    pub fn len(&self) -> usize {
        match &self.0 {
            Form::Packed(p) => p.len() / 2,
            Form::Map(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the hash is in its packed form (for tests and memory estimates).
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

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.0 {
            Form::Packed(p) => p.find(field, 2).map(|at| p.group_at(at, 2)[1]),
            Form::Map(m) => m.get(field).map(|v| &v[..]),
        }
    }

    /// The value as `Bytes` for a reply: shared with the map form, copied out of the packed one.
    pub fn get_bytes(&self, field: &[u8]) -> Option<Bytes> {
        match &self.0 {
            Form::Packed(_) => self.get(field).map(Bytes::copy_from_slice),
            Form::Map(m) => m.get(field).cloned(),
        }
    }

    pub fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value`; true when the field is new. A field that exists keeps its place.
    /// Past `limit` the hash turns into its map form.
    pub fn insert(&mut self, field: &[u8], value: &[u8], limit: CompactLimit) -> bool {
        if let Form::Packed(p) = &mut self.0 {
            let fits = |e: &[u8]| e.len() <= limit.value.min(MAX_ELEMENT);
            if fits(field) && fits(value) {
                match p.find(field, 2) {
                    Some(at) => {
                        let value_at = p.next_offset(at);
                        p.replace_at(value_at, value);
                        return false;
                    }
                    None if p.len() / 2 < limit.entries => {
                        p.push(&[field, value]);
                        return true;
                    }
                    None => {}
                }
            }
            self.convert_to_map();
        }
        match &mut self.0 {
            Form::Map(m) => match m.get_mut(field) {
                Some(slot) => {
                    *slot = Bytes::copy_from_slice(value);
                    false
                }
                None => {
                    m.insert(Bytes::copy_from_slice(field), Bytes::copy_from_slice(value));
                    true
                }
            },
            Form::Packed(_) => unreachable!("converted above"),
        }
    }

    /// Removes `field`; true when it was there. The last field takes its place.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.0 {
            Form::Packed(p) => match p.find(field, 2) {
                Some(at) => {
                    p.swap_remove_group(at, 2);
                    true
                }
                None => false,
            },
            Form::Map(m) => m.swap_remove(field).is_some(),
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Form::Packed(p) => Iter::Packed(p.iter()),
            Form::Map(m) => Iter::Map(m.iter()),
        }
    }

    /// The pairs at these positions (`0..len`, repeats allowed), for HRANDFIELD: the packed form
    /// is walked once, not once per position.
    pub fn at_positions(&self, positions: &[usize]) -> Vec<(&[u8], &[u8])> {
        match &self.0 {
            Form::Packed(p) => {
                let offsets = p.offsets(2);
                positions
                    .iter()
                    .filter_map(|&i| offsets.get(i))
                    .map(|&at| {
                        let [f, v] = p.group_at(at, 2);
                        (f, v)
                    })
                    .collect()
            }
            Form::Map(m) => positions
                .iter()
                .filter_map(|&i| m.get_index(i))
                .map(|(f, v)| (&f[..], &v[..]))
                .collect(),
        }
    }

    fn convert_to_map(&mut self) {
        if let Form::Packed(p) = &self.0 {
            let mut map = HashMap::with_capacity_and_hasher(p.len() / 2 + 1, Default::default());
            let mut items = p.iter();
            while let (Some(f), Some(v)) = (items.next(), items.next()) {
                map.insert(Bytes::copy_from_slice(f), Bytes::copy_from_slice(v));
            }
            self.0 = Form::Map(Box::new(map));
        }
    }
}

/// A hash of these pairs under the default thresholds (a later pair for the same field wins).
impl<F: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(F, V)> for Hash {
    fn from_iter<I: IntoIterator<Item = (F, V)>>(pairs: I) -> Hash {
        let limit = super::encoding::Limits::default().hash();
        let mut hash = Hash::default();
        for (f, v) in pairs {
            hash.insert(f.as_ref(), v.as_ref(), limit);
        }
        hash
    }
}

/// The pairs of a [`Hash`], in order.
pub enum Iter<'a> {
    Packed(super::packed::Iter<'a>),
    Map(indexmap::map::Iter<'a, Bytes, Bytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(items) => Some((items.next()?, items.next()?)),
            Iter::Map(items) => items.next().map(|(f, v)| (&f[..], &v[..])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Random HSET/HDEL against an `IndexMap` model (the map form's own order rules): same
    /// contents, same order, same answers, across the conversion.
    #[test]
    fn matches_the_index_map_model() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(14);
        for round in 0..200 {
            let limit = CompactLimit {
                entries: rng.gen_range(0..40),
                value: rng.gen_range(0..300),
            };
            let mut hash = Hash::default();
            let mut model = HashMap::default();
            for _ in 0..rng.gen_range(0..120) {
                let field = format!("f{}", rng.gen_range(0..50)).into_bytes();
                if rng.gen_bool(0.7) {
                    let value = vec![b'v'; rng.gen_range(0..400)];
                    let new = hash.insert(&field, &value, limit);
                    let model_new = model
                        .insert(Bytes::from(field.clone()), Bytes::from(value))
                        .is_none();
                    assert_eq!(new, model_new, "round {round}");
                } else {
                    let gone = hash.remove(&field);
                    assert_eq!(gone, model.swap_remove(&field[..]).is_some());
                }
                assert_eq!(hash.len(), model.len());
                let ours: Vec<_> = hash.iter().collect();
                let theirs: Vec<_> = model.iter().map(|(f, v)| (&f[..], &v[..])).collect();
                assert_eq!(ours, theirs, "round {round}");
                let probe = format!("f{}", rng.gen_range(0..50)).into_bytes();
                assert_eq!(hash.get(&probe), model.get(&probe[..]).map(|v| &v[..]));
                if hash.is_packed() {
                    assert!(hash.len() <= limit.entries);
                }
                let positions: Vec<usize> = (0..hash.len()).rev().collect();
                assert_eq!(
                    hash.at_positions(&positions),
                    positions.iter().map(|&i| theirs[i]).collect::<Vec<_>>()
                );
            }
        }
    }

    #[test]
    fn converts_once_past_the_limits_and_stays() {
        let limit = CompactLimit {
            entries: 2,
            value: 4,
        };
        let mut hash = Hash::default();
        hash.insert(b"a", b"1", limit);
        hash.insert(b"b", b"2", limit);
        assert!(hash.is_packed());
        hash.insert(b"c", b"3", limit);
        assert!(!hash.is_packed());
        hash.remove(b"c");
        hash.remove(b"b");
        assert!(!hash.is_packed(), "never converts back, as Redis");

        let mut long = Hash::default();
        long.insert(b"a", b"12345", limit);
        assert!(!long.is_packed());
        assert_eq!(long.get(b"a"), Some(&b"12345"[..]));
        let mut long_field = Hash::default();
        long_field.insert(
            &[b'x'; 300],
            b"1",
            CompactLimit {
                entries: 9,
                value: 1000,
            },
        );
        assert!(long_field.is_packed(), "a 5-byte header holds it");
        assert_eq!(long_field.get(&[b'x'; 300]), Some(&b"1"[..]));
    }
}
