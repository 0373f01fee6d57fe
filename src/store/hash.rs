//! A hash value: packed field/value pairs while it is small, an index map once it outgrows
//! `hash-max-listpack-entries|value` (for good, as Redis never converts back). Commands see one
//! type; the form is this module's business. Both forms keep the same order: insertion order,
//! with a removed field's place taken by the last field (`IndexMap::swap_remove`).

use super::encoding::CompactLimit;
use super::packed::{Packed, MAX_ELEMENT};
use super::timed_packed::TimedPacked;
use bytes::Bytes;

/// The large form: O(1) lookups, and O(1) access by position for HRANDFIELD.
pub type HashMap = indexmap::IndexMap<Bytes, Bytes, ahash::RandomState>;

#[derive(Clone, Debug)]
pub struct Hash(Form);

/// A hash without field TTLs is `Packed` or `Map` and pays nothing for the feature (its entry
/// stays 24 bytes); one with TTLs is `PackedTtl` (each pair's expiry in the same buffer, as
/// Redis's listpackex) or `MapTtl`. Both TTL forms also hold the time the hash stands under in
/// its shard's field-expiry queue ([`Hash::queued`]), and stay TTL forms while it is queued, so
/// the queue never loses track of an entry of its own.
#[derive(Clone, Debug)]
enum Form {
    Packed(Packed),
    Map(Box<HashMap>),
    PackedTtl(TimedPacked),
    MapTtl(Box<TimedMap>),
}

/// The large form with field TTLs.
#[derive(Clone, Debug)]
struct TimedMap {
    pairs: HashMap,
    /// Per field position, its expiry in Unix ms, 0 for none, kept in step with the pairs'
    /// positions (a removed field's place taken by the last one in both).
    ttls: Vec<u64>,
    /// How many of `ttls` are set.
    set: usize,
    /// See [`Hash::queued`].
    queued: u64,
}

impl Default for Hash {
    fn default() -> Self {
        Hash(Form::Packed(Packed::default()))
    }
}

impl Hash {
    /// Every stored field, expired ones not reclaimed yet included (as Redis's HLEN).
    pub fn len(&self) -> usize {
        match &self.0 {
            Form::Packed(p) => p.len() / 2,
            Form::Map(m) => m.len(),
            Form::PackedTtl(t) => t.len(),
            Form::MapTtl(t) => t.pairs.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the hash is in a packed form (for tests and memory estimates).
    pub fn is_packed(&self) -> bool {
        matches!(self.0, Form::Packed(_) | Form::PackedTtl(_))
    }

    /// Bytes of the packed form's one buffer; None in the large form (MEMORY USAGE).
    pub fn packed_bytes(&self) -> Option<usize> {
        match &self.0 {
            Form::Packed(p) => Some(p.byte_len()),
            Form::PackedTtl(t) => Some(t.byte_len()),
            Form::Map(_) | Form::MapTtl(_) => None,
        }
    }

    /// The stored value of `field`, expired or not (see [`Hash::get_live`]).
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.get_with_ttl(field).map(|(v, _)| v)
    }

    /// The stored value of `field` with its expiry (0: none).
    fn get_with_ttl(&self, field: &[u8]) -> Option<(&[u8], u64)> {
        match &self.0 {
            Form::Packed(p) => p.find(field, 2).map(|at| (p.group_at(at, 2)[1], 0)),
            Form::Map(m) => m.get(field).map(|v| (&v[..], 0)),
            Form::PackedTtl(t) => t.find(field).map(|s| {
                let (_, v, at) = t.at(s);
                (v, at)
            }),
            Form::MapTtl(t) => t.pairs.get_full(field).map(|(i, _, v)| (&v[..], t.ttls[i])),
        }
    }

    /// The value of `field` unless its TTL has passed at `now` (Unix ms).
    pub fn get_live(&self, field: &[u8], now: u64) -> Option<&[u8]> {
        match &self.0 {
            Form::Packed(p) => p.find(field, 2).map(|at| p.group_at(at, 2)[1]),
            _ => self
                .get_with_ttl(field)
                .filter(|&(_, at)| !expired(at, now))
                .map(|(v, _)| v),
        }
    }

    /// [`Hash::get_live`] as `Bytes` for a reply: shared with the map form, copied out of the
    /// packed one.
    pub fn get_bytes(&self, field: &[u8], now: u64) -> Option<Bytes> {
        match &self.0 {
            Form::Map(m) => m.get(field).cloned(),
            _ => self.get_live(field, now).map(Bytes::copy_from_slice),
        }
    }

    pub fn contains_key(&self, field: &[u8], now: u64) -> bool {
        self.get_live(field, now).is_some()
    }

    /// Sets `field` to `value`, dropping a TTL it had (HSET); true when the field is new. A
    /// field that exists keeps its place. Past `limit` the hash turns into its map form.
    pub fn insert(&mut self, field: &[u8], value: &[u8], limit: CompactLimit) -> bool {
        self.put(field, value, limit, false)
    }

    /// [`Hash::insert`] keeping the TTL of a field that has one (HINCRBY, HSETEX KEEPTTL).
    pub fn update(&mut self, field: &[u8], value: &[u8], limit: CompactLimit) -> bool {
        self.put(field, value, limit, true)
    }

    fn put(&mut self, field: &[u8], value: &[u8], limit: CompactLimit, keep_ttl: bool) -> bool {
        let fits = |e: &[u8]| e.len() <= limit.value.min(MAX_ELEMENT);
        match &mut self.0 {
            Form::Packed(p) if fits(field) && fits(value) => match p.find_position(field, 2) {
                Some((_, at)) => {
                    let value_at = p.next_offset(at);
                    p.replace_at(value_at, value);
                    return false;
                }
                None if p.len() / 2 < limit.entries => {
                    p.push(&[field, value]);
                    return true;
                }
                None => {}
            },
            Form::PackedTtl(t) if fits(field) && fits(value) => match t.find(field) {
                Some(spot) => {
                    t.set_value(spot, value);
                    if !keep_ttl {
                        // Found again: the value's new length moved the expiry.
                        if let Some(spot) = t.find(field) {
                            t.set_ttl(spot, 0);
                        }
                    }
                    return false;
                }
                None if t.len() < limit.entries => {
                    t.push(field, value, 0);
                    return true;
                }
                None => {}
            },
            _ => {}
        }
        self.convert_to_map();
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
            Form::MapTtl(t) => match t.pairs.get_full_mut(field) {
                Some((i, _, slot)) => {
                    *slot = Bytes::copy_from_slice(value);
                    if !keep_ttl {
                        t.set_ttl_at(i, 0);
                    }
                    false
                }
                None => {
                    t.pairs
                        .insert(Bytes::copy_from_slice(field), Bytes::copy_from_slice(value));
                    t.ttls.push(0);
                    true
                }
            },
            _ => unreachable!("a map form, converted above"),
        }
    }

    /// Removes `field`, expired or not (HDEL, as Redis); true when it was there. The last field
    /// takes its place.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let removed = match &mut self.0 {
            Form::Packed(p) => p
                .find(field, 2)
                .map(|at| p.swap_remove_group(at, 2))
                .is_some(),
            Form::Map(m) => m.swap_remove(field).is_some(),
            Form::PackedTtl(t) => t.find(field).map(|spot| t.swap_remove(spot)).is_some(),
            Form::MapTtl(t) => t
                .pairs
                .swap_remove_full(field)
                .map(|(i, _, _)| {
                    t.set_ttl_at(i, 0);
                    t.ttls.swap_remove(i);
                })
                .is_some(),
        };
        self.settle();
        removed
    }

    /// Back to the plain form once no field has a TTL and the hash is not queued.
    fn settle(&mut self) {
        let plain = match &mut self.0 {
            Form::PackedTtl(t) if t.queued() == 0 && t.iter().all(|(_, _, at)| at == 0) => {
                let mut p = Packed::default();
                for (f, v, _) in t.iter() {
                    p.push(&[f, v]);
                }
                Form::Packed(p)
            }
            Form::MapTtl(t) if t.queued == 0 && t.set == 0 => {
                Form::Map(Box::new(std::mem::take(&mut t.pairs)))
            }
            _ => return,
        };
        self.0 = plain;
    }

    /// The expiry of `field` (Unix ms, 0: none), None when there is no such field; expired or
    /// not.
    pub fn ttl(&self, field: &[u8]) -> Option<u64> {
        self.get_with_ttl(field).map(|(_, at)| at)
    }

    /// Sets the expiry of `field` (Unix ms; 0 removes it); false when there is no such field.
    pub fn set_ttl(&mut self, field: &[u8], at: u64) -> bool {
        if self.get_with_ttl(field).is_none() {
            return false;
        }
        if at == 0 && !self.has_ttl_form() {
            return true;
        }
        self.make_timed(at);
        match &mut self.0 {
            Form::PackedTtl(t) => {
                if let Some(spot) = t.find(field) {
                    t.set_ttl(spot, at);
                }
            }
            Form::MapTtl(t) => {
                if let Some(i) = t.pairs.get_index_of(field) {
                    t.set_ttl_at(i, at);
                }
            }
            _ => unreachable!("a TTL form, converted above"),
        }
        self.settle();
        true
    }

    fn has_ttl_form(&self) -> bool {
        matches!(self.0, Form::PackedTtl(_) | Form::MapTtl(_))
    }

    /// A plain form turned into its TTL form, every field without one; the packed one keeps
    /// expiries as distances from `base`, the first one given.
    fn make_timed(&mut self, base: u64) {
        let timed = match &mut self.0 {
            Form::Packed(p) => {
                let mut t = TimedPacked::with_base(base);
                let mut items = p.iter();
                while let (Some(f), Some(v)) = (items.next(), items.next()) {
                    t.push(f, v, 0);
                }
                Form::PackedTtl(t)
            }
            Form::Map(m) => Form::MapTtl(Box::new(TimedMap {
                ttls: vec![0; m.len()],
                pairs: std::mem::take(&mut **m),
                set: 0,
                queued: 0,
            })),
            _ => return,
        };
        self.0 = timed;
    }

    /// Whether any field has a TTL (the key counts in INFO's `subexpiry`).
    pub fn has_ttls(&self) -> bool {
        match &self.0 {
            Form::Packed(_) | Form::Map(_) => false,
            Form::PackedTtl(t) => t.iter().any(|(_, _, at)| at != 0),
            Form::MapTtl(t) => t.set > 0,
        }
    }

    /// The time this hash stands under in its shard's field-expiry queue (Unix ms; 0: not
    /// queued). Only [`super::field_expiry`] sets it.
    pub fn queued(&self) -> u64 {
        match &self.0 {
            Form::PackedTtl(t) => t.queued(),
            Form::MapTtl(t) => t.queued,
            _ => 0,
        }
    }

    /// Records the hash's queue time; false (nothing recorded) for a hash without TTLs. At 0 a
    /// hash without TTLs left goes back to its plain form.
    pub(super) fn set_queued(&mut self, at: u64) -> bool {
        match &mut self.0 {
            Form::PackedTtl(t) => t.set_queued(at),
            Form::MapTtl(t) => t.queued = at,
            _ => return false,
        }
        self.settle();
        true
    }

    /// The earliest field expiry (Unix ms), if a field has one.
    pub fn earliest_ttl(&self) -> Option<u64> {
        self.iter_with_ttls()
            .map(|(_, _, at)| at)
            .filter(|&at| at != 0)
            .min()
    }

    /// The fields whose TTL has passed at `now`.
    pub fn expired_fields(&self, now: u64) -> Vec<Bytes> {
        self.iter_with_ttls()
            .filter(|&(_, _, at)| expired(at, now))
            .map(|(f, _, _)| Bytes::copy_from_slice(f))
            .collect()
    }

    /// Removes the fields whose TTL has passed at `now` (a load, RESTORE); how many went.
    pub fn drop_expired(&mut self, now: u64) -> usize {
        let gone = self.expired_fields(now);
        for field in &gone {
            self.remove(field);
        }
        gone.len()
    }

    /// The pairs, expired ones included.
    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Form::Packed(p) => Iter::Packed(p.iter()),
            Form::Map(m) => Iter::Map(m.iter()),
            Form::PackedTtl(_) | Form::MapTtl(_) => {
                Iter::Timed(Box::new(self.iter_with_ttls().map(|(f, v, _)| (f, v))))
            }
        }
    }

    /// The pairs whose TTL has not passed at `now` (HGETALL, HSCAN…).
    pub fn iter_live(&self, now: u64) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.iter_with_ttls()
            .filter(move |&(_, _, at)| !expired(at, now))
            .map(|(f, v, _)| (f, v))
    }

    /// How many fields [`Hash::iter_live`] gives.
    pub fn live_len(&self, now: u64) -> usize {
        match &self.0 {
            Form::Packed(_) | Form::Map(_) => self.len(),
            _ => self.iter_live(now).count(),
        }
    }

    /// Each pair with its expiry (Unix ms, 0: none), expired ones included (persistence).
    pub fn iter_with_ttls(&self) -> impl Iterator<Item = (&[u8], &[u8], u64)> {
        let (plain, packed, map) = match &self.0 {
            Form::Packed(p) => (Some(p.iter()), None, None),
            Form::Map(m) => (None, None, Some((&**m, None))),
            Form::PackedTtl(t) => (None, Some(t.iter()), None),
            Form::MapTtl(t) => (None, None, Some((&t.pairs, Some(&t.ttls[..])))),
        };
        let plain = plain.into_iter().flat_map(|mut items| {
            std::iter::from_fn(move || Some((items.next()?, items.next()?, 0)))
        });
        let map = map.into_iter().flat_map(|(m, ttls)| {
            m.iter()
                .enumerate()
                .map(move |(i, (f, v))| (&f[..], &v[..], ttls.map_or(0, |t| t[i])))
        });
        plain.chain(packed.into_iter().flatten()).chain(map)
    }

    /// The pairs at these positions (`0..len`, repeats allowed), for HRANDFIELD: the packed form
    /// is walked once, not once per position.
    pub fn at_positions(&self, positions: &[usize]) -> Vec<(&[u8], &[u8])> {
        let map = match &self.0 {
            Form::Packed(p) => {
                let offsets = p.offsets(2);
                return positions
                    .iter()
                    .filter_map(|&i| offsets.get(i))
                    .map(|&at| {
                        let [f, v] = p.group_at(at, 2);
                        (f, v)
                    })
                    .collect();
            }
            Form::PackedTtl(t) => return t.at_positions(positions),
            Form::Map(m) => &**m,
            Form::MapTtl(t) => &t.pairs,
        };
        positions
            .iter()
            .filter_map(|&i| map.get_index(i))
            .map(|(f, v)| (&f[..], &v[..]))
            .collect()
    }

    /// A packed form turned into its map form (with its TTLs and queue time, if any).
    fn convert_to_map(&mut self) {
        let map = match &self.0 {
            Form::Packed(p) => {
                let mut map =
                    HashMap::with_capacity_and_hasher(p.len() / 2 + 1, Default::default());
                let mut items = p.iter();
                while let (Some(f), Some(v)) = (items.next(), items.next()) {
                    map.insert(Bytes::copy_from_slice(f), Bytes::copy_from_slice(v));
                }
                Form::Map(Box::new(map))
            }
            Form::PackedTtl(t) => {
                let mut pairs = HashMap::with_capacity_and_hasher(t.len() + 1, Default::default());
                let mut ttls = Vec::with_capacity(t.len() + 1);
                for (f, v, at) in t.iter() {
                    pairs.insert(Bytes::copy_from_slice(f), Bytes::copy_from_slice(v));
                    ttls.push(at);
                }
                let set = ttls.iter().filter(|&&at| at != 0).count();
                Form::MapTtl(Box::new(TimedMap {
                    pairs,
                    ttls,
                    set,
                    queued: t.queued(),
                }))
            }
            _ => return,
        };
        self.0 = map;
    }
}

impl TimedMap {
    fn set_ttl_at(&mut self, i: usize, at: u64) {
        let old = std::mem::replace(&mut self.ttls[i], at);
        match (old != 0, at != 0) {
            (false, true) => self.set += 1,
            (true, false) => self.set -= 1,
            _ => {}
        }
    }
}

/// Whether an expiry `at` (0: none) has passed at `now`.
fn expired(at: u64, now: u64) -> bool {
    at != 0 && at <= now
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
    /// A form with TTLs (boxed: its iterator type is long, and these hashes are rare).
    Timed(Box<dyn Iterator<Item = (&'a [u8], &'a [u8])> + 'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(items) => Some((items.next()?, items.next()?)),
            Iter::Map(items) => items.next().map(|(f, v)| (&f[..], &v[..])),
            Iter::Timed(items) => items.next(),
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

    /// Random HSET/HINCRBY-style updates, HDEL and TTL changes against a model of (value, TTL)
    /// per field: each TTL stays with its field through removals (the last field moving into a
    /// removed one's place) and the conversion to the map form; a hash whose last TTL goes is
    /// plain again.
    #[test]
    fn ttls_stay_with_their_fields() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..200 {
            let limit = CompactLimit {
                entries: rng.gen_range(1..30),
                value: 64,
            };
            let mut hash = Hash::default();
            let mut model: indexmap::IndexMap<Vec<u8>, (Vec<u8>, u64)> = Default::default();
            for step in 0..150 {
                let field = format!("f{}", rng.gen_range(0..40)).into_bytes();
                let value = format!("v{step}").into_bytes();
                match rng.gen_range(0..5) {
                    0 => {
                        let new = hash.insert(&field, &value, limit);
                        assert_eq!(new, !model.contains_key(&field));
                        model.insert(field.clone(), (value, 0));
                    }
                    1 => {
                        hash.update(&field, &value, limit);
                        let ttl = model.get(&field).map_or(0, |(_, t)| *t);
                        model.insert(field.clone(), (value, ttl));
                    }
                    2 => {
                        assert_eq!(hash.remove(&field), model.swap_remove(&field).is_some());
                    }
                    _ => {
                        let at = rng.gen_range(0..4) * 1000;
                        let there = hash.set_ttl(&field, at);
                        assert_eq!(there, model.contains_key(&field));
                        if let Some(slot) = model.get_mut(&field) {
                            slot.1 = at;
                        }
                    }
                }
                let ours: Vec<_> = hash.iter_with_ttls().collect();
                let theirs: Vec<_> = model
                    .iter()
                    .map(|(f, (v, t))| (&f[..], &v[..], *t))
                    .collect();
                assert_eq!(ours, theirs, "round {round} step {step}");
                let earliest = model.values().map(|(_, t)| *t).filter(|&t| t != 0).min();
                assert_eq!(hash.earliest_ttl(), earliest);
                assert_eq!(hash.has_ttls(), earliest.is_some(), "plain without TTLs");
                let live: Vec<_> = hash.iter_live(1500).map(|(f, _)| f.to_vec()).collect();
                let model_live: Vec<_> = model
                    .iter()
                    .filter(|(_, (_, t))| *t == 0 || *t > 1500)
                    .map(|(f, _)| f.clone())
                    .collect();
                assert_eq!(live, model_live);
                assert_eq!(hash.live_len(1500), model_live.len());
            }
        }
    }

    #[test]
    fn expired_fields_are_hidden_then_dropped() {
        let limit = CompactLimit {
            entries: 8,
            value: 64,
        };
        let mut hash = Hash::default();
        hash.insert(b"a", b"1", limit);
        hash.insert(b"b", b"2", limit);
        assert!(hash.set_ttl(b"a", 100));
        assert!(!hash.set_ttl(b"zz", 100), "no such field");
        assert_eq!(hash.get_live(b"a", 99), Some(&b"1"[..]));
        assert_eq!(hash.get_live(b"a", 100), None, "due at its time");
        assert_eq!(hash.get(b"a"), Some(&b"1"[..]), "still stored");
        assert_eq!(hash.len(), 2, "HLEN counts it until it is removed");
        assert_eq!(hash.expired_fields(100), vec![Bytes::from_static(b"a")]);
        assert_eq!(hash.drop_expired(100), 1);
        assert_eq!(hash.len(), 1);
        assert!(!hash.has_ttls());
        // HSET drops a TTL, HINCRBY's update keeps it.
        hash.set_ttl(b"b", 50);
        hash.update(b"b", b"3", limit);
        assert_eq!(hash.ttl(b"b"), Some(50));
        hash.insert(b"b", b"4", limit);
        assert_eq!(hash.ttl(b"b"), Some(0));
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
