//! The index of one `VECTOR` field: `FLAT` (exact, brute force) or `HNSW` (a navigable
//! small-world graph, approximate), over FLOAT32 or FLOAT64 vectors, with RediSearch's three
//! distances: L2 (the squared euclidean distance), IP (`1 - a·b`) and COSINE (`1 - cos`, the
//! vectors normalised once when stored).
//!
//! Our own HNSW rather than a crate: `usearch` (the one maintained crate with removal and
//! filtered search; `hnsw_rs` cannot remove, `instant-distance` cannot add after building) was
//! measured on the target workload (100,000 clustered 384-dim FLOAT32 vectors, M 16,
//! EF_CONSTRUCTION 200, the `benches/vector_knn.rs` data): its index took 1.86 × the raw vectors'
//! bytes (`memory_usage()` 286 MB for 153.6 MB of vectors; the target is at most 1.5 ×), its build
//! from cold took 3m22s of one core (cxx, its C++ unit and SIMD library), and it holds the search
//! breadth (`ef`) as index-wide state, so a query's `EF_RUNTIME` would write shared state under a
//! read lock. Its recall and latency were fine (recall@10 0.977 at ef 20, p50 0.3 ms). The graph
//! here is small: vectors in one contiguous array indexed by slot, level-0 neighbour lists of
//! `2M` u32 slots in another, the upper levels (one node in `M`) in a map; plain loops over fixed
//! lanes that the compiler vectorises; no `unsafe`.
//!
//! Removal marks the slot deleted: it stays in the graph as a waypoint (its vector and edges are
//! kept, so the graph stays connected) and is never returned; a later insert reuses the slot,
//! linking it afresh. Hybrid queries (`allow`) estimate how many documents the filter accepts from
//! a sample; few are searched by brute force (RediSearch's ADHOC_BF), many by filtering during the
//! graph walk.

use bytes::Bytes;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The index algorithm and its construction/search breadths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Algorithm {
    Flat,
    Hnsw {
        m: usize,
        ef_construction: usize,
        ef_runtime: usize,
    },
}

/// The stored element type (FLOAT16/BFLOAT16/INT8/UINT8 are refused as an unknown type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementType {
    Float32,
    Float64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    L2,
    Ip,
    Cosine,
}

/// A VECTOR field's definition as FT.CREATE gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorParams {
    pub algorithm: Algorithm,
    pub element: ElementType,
    pub dim: usize,
    pub metric: Metric,
}

/// RediSearch's defaults for HNSW.
const DEFAULT_M: usize = 16;
const DEFAULT_EF_CONSTRUCTION: usize = 200;
const DEFAULT_EF_RUNTIME: usize = 10;

fn parse_usize(v: &[u8]) -> Option<usize> {
    std::str::from_utf8(v).ok()?.parse::<usize>().ok()
}

impl VectorParams {
    /// `FLAT|HNSW nargs name value …` as FT.CREATE's SCHEMA gives it, starting at the algorithm
    /// word; returns the params and how many arguments were used; Err: RediSearch's error text.
    ///
    /// As RediSearch does, the named parameters are read first (a bad value is reported before a
    /// short count), then the count is checked, then the mandatory TYPE, DIM, DISTANCE_METRIC.
    pub fn parse(args: &[Bytes]) -> Result<(VectorParams, usize), String> {
        let hnsw = match args.first().map(|a| a.to_ascii_uppercase()) {
            Some(a) if a == b"FLAT" => false,
            Some(a) if a == b"HNSW" => true,
            _ => return Err("Bad arguments for vector similarity algorithm".into()),
        };
        let algo = if hnsw { "HNSW" } else { "FLAT" };
        let nargs = args
            .get(1)
            .and_then(|a| parse_usize(a))
            .ok_or("Bad arguments for vector similarity number of parameters")?;
        if nargs % 2 == 1 {
            return Err(format!(
                "Bad number of arguments for vector similarity index: got {nargs} but expected even number"
            ));
        }
        let params = &args[2..args.len().min(2 + nargs)];
        let bad = |what: &str| format!("Bad arguments for vector similarity {algo} index {what}");
        let (mut element, mut dim, mut metric) = (None, None, None);
        let (mut m, mut ef_construction, mut ef_runtime) =
            (DEFAULT_M, DEFAULT_EF_CONSTRUCTION, DEFAULT_EF_RUNTIME);
        let mut i = 0;
        while i < params.len() {
            let name = params[i].to_ascii_uppercase();
            let value = params.get(i + 1);
            let value_upper = value.map(|v| v.to_ascii_uppercase());
            let positive = || value.and_then(|v| parse_usize(v)).filter(|&n| n > 0);
            match &name[..] {
                b"TYPE" => {
                    element = Some(match value_upper.as_deref() {
                        Some(b"FLOAT32") => ElementType::Float32,
                        Some(b"FLOAT64") => ElementType::Float64,
                        _ => return Err(bad("type")),
                    })
                }
                b"DIM" => dim = Some(positive().ok_or_else(|| bad("dim"))?),
                b"DISTANCE_METRIC" => {
                    metric = Some(match value_upper.as_deref() {
                        Some(b"L2") => Metric::L2,
                        Some(b"IP") => Metric::Ip,
                        Some(b"COSINE") => Metric::Cosine,
                        _ => return Err(bad("metric")),
                    })
                }
                b"INITIAL_CAP" => {
                    value
                        .and_then(|v| parse_usize(v))
                        .ok_or_else(|| bad("initial cap"))?;
                }
                b"BLOCK_SIZE" => {
                    positive().ok_or_else(|| bad("blocksize"))?;
                }
                b"M" if hnsw => m = positive().ok_or_else(|| bad("m"))?,
                b"EF_CONSTRUCTION" if hnsw => {
                    ef_construction = positive().ok_or_else(|| bad("efConstruction"))?
                }
                b"EF_RUNTIME" if hnsw => ef_runtime = positive().ok_or_else(|| bad("efRuntime"))?,
                b"EPSILON" if hnsw => {
                    value
                        .and_then(|v| std::str::from_utf8(v).ok())
                        .and_then(|v| v.parse::<f64>().ok())
                        .filter(|e| e.is_finite() && *e > 0.0)
                        .ok_or_else(|| bad("epsilon"))?;
                }
                _ => {
                    return Err(format!(
                        "Bad arguments for algorithm {algo}: {}",
                        String::from_utf8_lossy(&params[i])
                    ))
                }
            }
            i += 2;
        }
        if params.len() < nargs {
            return Err(format!(
                "Expected {nargs} parameters but got {}",
                params.len()
            ));
        }
        // The graph's own limits (level-0 lists hold 2M slots counted in 16 bits).
        if hnsw && m > u16::MAX as usize / 2 {
            return Err("HNSW index parameter M is too large: argument overflow".into());
        }
        if hnsw && m <= 1 {
            return Err("HNSW index parameter M cannot be 1 or 0".into());
        }
        let missing = |what: &str| {
            format!("Missing mandatory parameter: cannot create {algo} index without specifying {what} argument")
        };
        let element = element.ok_or_else(|| missing("TYPE"))?;
        let dim = dim.ok_or_else(|| missing("DIM"))?;
        let metric = metric.ok_or_else(|| missing("DISTANCE_METRIC"))?;
        let algorithm = if hnsw {
            Algorithm::Hnsw {
                m,
                ef_construction: ef_construction.max(m),
                ef_runtime,
            }
        } else {
            Algorithm::Flat
        };
        let params = VectorParams {
            algorithm,
            element,
            dim,
            metric,
        };
        Ok((params, 2 + nargs))
    }

    /// The FT.INFO attribute pairs of this field, in RediSearch's order and spelling.
    pub fn info(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            (
                "algorithm",
                match self.algorithm {
                    Algorithm::Flat => "FLAT",
                    Algorithm::Hnsw { .. } => "HNSW",
                }
                .to_string(),
            ),
            (
                "data_type",
                match self.element {
                    ElementType::Float32 => "FLOAT32",
                    ElementType::Float64 => "FLOAT64",
                }
                .to_string(),
            ),
            ("dim", self.dim.to_string()),
            (
                "distance_metric",
                match self.metric {
                    Metric::L2 => "L2",
                    Metric::Ip => "IP",
                    Metric::Cosine => "COSINE",
                }
                .to_string(),
            ),
        ];
        if let Algorithm::Hnsw {
            m, ef_construction, ..
        } = self.algorithm
        {
            out.push(("M", m.to_string()));
            out.push(("ef_construction", ef_construction.to_string()));
        }
        out
    }

    fn element_size(&self) -> usize {
        match self.element {
            ElementType::Float32 => 4,
            ElementType::Float64 => 8,
        }
    }
}

/// A stored element: its little-endian decoding and the distance kernels in its own precision
/// (RediSearch computes FLOAT32 distances in single precision).
trait Element: Copy + Default + Send + Sync + 'static {
    const SIZE: usize;
    fn from_le(bytes: &[u8]) -> Self;
    fn from_f64(v: f64) -> Self;
    fn dot(a: &[Self], b: &[Self]) -> f64;
    fn l2(a: &[Self], b: &[Self]) -> f64;
    fn scale(v: &mut [Self], by: f64);
}

/// Independent accumulators, so the compiler keeps them in vector registers and the additions
/// of one lane do not wait on the others'.
const LANES: usize = 16;

macro_rules! element_impl {
    ($t:ty, $size:expr) => {
        impl Element for $t {
            const SIZE: usize = $size;
            fn from_le(bytes: &[u8]) -> Self {
                let mut b = [0u8; $size];
                b.copy_from_slice(bytes);
                <$t>::from_le_bytes(b)
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn dot(a: &[Self], b: &[Self]) -> f64 {
                let mut acc = [0 as $t; LANES];
                let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
                let (ra, rb) = (ca.remainder(), cb.remainder());
                for (x, y) in ca.zip(cb) {
                    // Zipped, not indexed: no bounds checks left for the vectoriser.
                    for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
                        *s += x * y;
                    }
                }
                let mut sum: $t = acc.iter().sum();
                for (x, y) in ra.iter().zip(rb) {
                    sum += x * y;
                }
                sum as f64
            }
            fn l2(a: &[Self], b: &[Self]) -> f64 {
                let mut acc = [0 as $t; LANES];
                let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
                let (ra, rb) = (ca.remainder(), cb.remainder());
                for (x, y) in ca.zip(cb) {
                    for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
                        let d = x - y;
                        *s += d * d;
                    }
                }
                let mut sum: $t = acc.iter().sum();
                for (x, y) in ra.iter().zip(rb) {
                    let d = x - y;
                    sum += d * d;
                }
                sum as f64
            }
            fn scale(v: &mut [Self], by: f64) {
                let by = by as $t;
                v.iter_mut().for_each(|x| *x *= by);
            }
        }
    };
}
element_impl!(f32, 4);
element_impl!(f64, 8);

/// No document in this slot (free, or deleted and kept as a graph waypoint).
const NONE: u32 = u32::MAX;

/// A candidate in a search: its distance and slot, ordered by distance (then slot, so equal
/// distances order the same way every time).
#[derive(Clone, Copy, Debug)]
struct Cand {
    dist: f64,
    slot: u32,
}
impl PartialEq for Cand {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        self.dist.total_cmp(&o.dist).then(self.slot.cmp(&o.slot))
    }
}

/// Slots visited by one search: a bit per slot (12.5 KB for 100,000 slots, cheap to zero).
struct Visited(Vec<u64>);
impl Visited {
    fn new(slots: usize) -> Visited {
        Visited(vec![0; slots.div_ceil(64)])
    }
    /// Marks `slot`; true when it was not marked before.
    fn insert(&mut self, slot: u32) -> bool {
        let (w, b) = (slot as usize / 64, 1u64 << (slot % 64));
        let new = self.0[w] & b == 0;
        self.0[w] |= b;
        new
    }
}

/// The HNSW graph over the slots of a [`Space`].
struct Graph {
    m: usize,
    ef_construction: usize,
    ef_runtime: usize,
    /// Level 0: for each slot, a count then up to `2m` neighbour slots (stride `1 + 2m`).
    level0: Vec<u32>,
    /// Each slot's top level (0 for most).
    levels: Vec<u8>,
    /// Levels 1..=top of the slots above level 0: per level a count then up to `m` slots.
    upper: ahash::AHashMap<u32, Vec<u32>>,
    entry: Option<u32>,
    rng: rand::rngs::StdRng,
}

impl Graph {
    fn max_links(&self, level: usize) -> usize {
        if level == 0 {
            2 * self.m
        } else {
            self.m
        }
    }

    fn links(&self, slot: u32, level: usize) -> &[u32] {
        let list = if level == 0 {
            let stride = 1 + 2 * self.m;
            &self.level0[slot as usize * stride..][..stride]
        } else {
            let stride = 1 + self.m;
            match self.upper.get(&slot) {
                Some(lists) => &lists[(level - 1) * stride..][..stride],
                None => return &[],
            }
        };
        &list[1..1 + list[0] as usize]
    }

    fn set_links(&mut self, slot: u32, level: usize, links: &[u32]) {
        let list = if level == 0 {
            let stride = 1 + 2 * self.m;
            let at = slot as usize * stride;
            &mut self.level0[at..at + stride]
        } else {
            let stride = 1 + self.m;
            let at = (level - 1) * stride;
            let Some(lists) = self.upper.get_mut(&slot) else {
                return;
            };
            &mut lists[at..at + stride]
        };
        list[0] = links.len() as u32;
        list[1..1 + links.len()].copy_from_slice(links);
    }

    fn random_level(&mut self) -> usize {
        let mult = 1.0 / (self.m.max(2) as f64).ln();
        let u: f64 = self.rng.gen_range(f64::MIN_POSITIVE..1.0);
        ((-u.ln() * mult) as usize).min(15)
    }
}

/// The vectors of one element type, by slot, with the slot of each document and the graph.
struct Space<T: Element> {
    dim: usize,
    metric: Metric,
    vectors: Vec<T>,
    /// The document in each slot, or [`NONE`].
    docs: Vec<u32>,
    slot_of: ahash::AHashMap<u32, u32>,
    /// Slots whose document was removed, to reuse.
    free: Vec<u32>,
    graph: Option<Graph>,
}

impl<T: Element> Space<T> {
    fn vector(&self, slot: u32) -> &[T] {
        let at = slot as usize * self.dim;
        &self.vectors[at..at + self.dim]
    }

    /// The metric's distance between two normalised-as-stored vectors.
    fn distance(&self, a: &[T], b: &[T]) -> f64 {
        match self.metric {
            Metric::L2 => T::l2(a, b),
            Metric::Ip | Metric::Cosine => 1.0 - T::dot(a, b),
        }
    }

    fn dist_to(&self, q: &[T], slot: u32) -> f64 {
        self.distance(q, self.vector(slot))
    }

    /// A vector as the index stores it: normalised for COSINE (a zero vector stays zero).
    fn prepare(&self, mut v: Vec<T>) -> Vec<T> {
        if self.metric == Metric::Cosine {
            let norm = T::dot(&v, &v).sqrt();
            if norm > 0.0 {
                T::scale(&mut v, 1.0 / norm);
            }
        }
        v
    }

    fn insert(&mut self, doc: u32, v: Vec<T>) {
        self.remove(doc);
        let v = self.prepare(v);
        let entry = self.graph.as_ref().and_then(|g| g.entry);
        // The graph's entry point is never reused: the insertion walk starts from it.
        let reuse = self.free.iter().rposition(|&s| Some(s) != entry);
        let (slot, fresh) = match reuse {
            Some(i) => (self.free.swap_remove(i), false),
            None => (self.docs.len() as u32, true),
        };
        if fresh {
            grow(&mut self.vectors, self.dim);
            grow(&mut self.docs, 1);
            self.vectors.extend_from_slice(&v);
            self.docs.push(doc);
        } else {
            let at = slot as usize * self.dim;
            self.vectors[at..at + self.dim].copy_from_slice(&v);
            self.docs[slot as usize] = doc;
        }
        self.slot_of.insert(doc, slot);
        if self.graph.is_some() {
            self.link(slot, fresh);
        }
    }

    fn remove(&mut self, doc: u32) {
        if let Some(slot) = self.slot_of.remove(&doc) {
            self.docs[slot as usize] = NONE;
            self.free.push(slot);
        }
    }

    /// Links `slot` (its vector in place) into the graph.
    fn link(&mut self, slot: u32, fresh: bool) {
        let Some(g) = self.graph.as_mut() else {
            return;
        };
        // A reused slot's old out-edges, kept after its new ones where room is left: the nodes
        // they reach may have no other in-edge, and must stay reachable.
        let mut old: Vec<Vec<u32>> = Vec::new();
        let level = if fresh {
            let level = g.random_level();
            grow(&mut g.level0, 1 + 2 * g.m);
            grow(&mut g.levels, 1);
            g.level0.resize(g.level0.len() + 1 + 2 * g.m, 0);
            g.levels.push(level as u8);
            if level > 0 {
                g.upper.insert(slot, vec![0; level * (1 + g.m)]);
            }
            level
        } else {
            // A reused slot keeps its level; its in-edges from others stay (they now lead to the
            // new vector, still a valid if less ideal edge).
            let level = g.levels[slot as usize] as usize;
            for l in 0..=level {
                old.push(g.links(slot, l).to_vec());
                g.set_links(slot, l, &[]);
            }
            level
        };
        let Some(entry) = g.entry else {
            g.entry = Some(slot);
            return;
        };
        let ef_construction = g.ef_construction;
        let top = g.levels[entry as usize] as usize;
        let q = self.vector(slot).to_vec();
        let mut ep = vec![Cand {
            dist: self.dist_to(&q, entry),
            slot: entry,
        }];
        for l in (level + 1..=top).rev() {
            ep = self.search_layer(&q, &ep, 1, l, None);
        }
        for l in (0..=level.min(top)).rev() {
            let found = self.search_layer(&q, &ep, ef_construction, l, None);
            // M neighbours on every level; level 0 lists have room for 2M as others link back.
            let m = self.graph.as_ref().map_or(0, |g| g.m);
            let chosen: Vec<Cand> = found.iter().copied().filter(|c| c.slot != slot).collect();
            let neighbours = self.select(&chosen, m);
            let mut ids: Vec<u32> = neighbours.iter().map(|c| c.slot).collect();
            if let Some(g) = self.graph.as_mut() {
                let max = g.max_links(l);
                for &o in old.get(l).into_iter().flatten() {
                    if ids.len() < max && o != slot && !ids.contains(&o) {
                        ids.push(o);
                    }
                }
                g.set_links(slot, l, &ids);
            }
            for n in neighbours {
                self.add_link(n.slot, slot, n.dist, l);
            }
            ep = found;
        }
        if let Some(g) = self.graph.as_mut() {
            if level > top {
                g.entry = Some(slot);
            }
        }
    }

    /// Adds the edge `from -> to` at `level`; a full list keeps the best by the heuristic.
    fn add_link(&mut self, from: u32, to: u32, dist: f64, level: usize) {
        let Some(g) = self.graph.as_ref() else {
            return;
        };
        let max = g.max_links(level);
        let mut links = g.links(from, level).to_vec();
        if links.contains(&to) {
            return;
        }
        if links.len() < max {
            links.push(to);
        } else {
            let base = self.vector(from);
            let mut cands: Vec<Cand> = links
                .iter()
                .map(|&s| Cand {
                    dist: self.dist_to(base, s),
                    slot: s,
                })
                .collect();
            cands.push(Cand { dist, slot: to });
            cands.sort();
            links = self.select(&cands, max).iter().map(|c| c.slot).collect();
        }
        if let Some(g) = self.graph.as_mut() {
            g.set_links(from, level, &links);
        }
    }

    /// HNSW's neighbour heuristic: from candidates sorted nearest first, keep one only when it
    /// is nearer to the base than to every one kept, so the edges point in diverse directions.
    fn select(&self, sorted: &[Cand], max: usize) -> Vec<Cand> {
        let mut kept: Vec<Cand> = Vec::with_capacity(max);
        for c in sorted {
            if kept.len() >= max {
                break;
            }
            let v = self.vector(c.slot);
            if kept
                .iter()
                .all(|k| self.distance(v, self.vector(k.slot)) > c.dist)
            {
                kept.push(*c);
            }
        }
        kept
    }

    /// The `ef` nearest slots to `q` on `level` reachable from `entry`, nearest first. With
    /// `allow`, only live allowed slots fill the result (the others are still walked through);
    /// without it, every slot does (deleted ones too: the insertion walk needs them as waypoints).
    fn search_layer(
        &self,
        q: &[T],
        entry: &[Cand],
        ef: usize,
        level: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<Cand> {
        let Some(g) = self.graph.as_ref() else {
            return Vec::new();
        };
        let accept = |slot: u32| match allow {
            None => true,
            Some(f) => {
                let doc = self.docs[slot as usize];
                doc != NONE && f(doc)
            }
        };
        let mut visited = Visited::new(self.docs.len());
        let mut frontier: BinaryHeap<std::cmp::Reverse<Cand>> = BinaryHeap::new();
        let mut best: BinaryHeap<Cand> = BinaryHeap::new();
        for &c in entry {
            if visited.insert(c.slot) {
                frontier.push(std::cmp::Reverse(c));
                if accept(c.slot) {
                    best.push(c);
                }
            }
        }
        while best.len() > ef {
            best.pop();
        }
        while let Some(std::cmp::Reverse(c)) = frontier.pop() {
            if best.len() >= ef && best.peek().is_some_and(|w| c.dist > w.dist) {
                break;
            }
            for &n in g.links(c.slot, level) {
                if !visited.insert(n) {
                    continue;
                }
                let dist = self.dist_to(q, n);
                if best.len() < ef || best.peek().is_some_and(|w| dist < w.dist) {
                    let cand = Cand { dist, slot: n };
                    frontier.push(std::cmp::Reverse(cand));
                    if accept(n) {
                        best.push(cand);
                        if best.len() > ef {
                            best.pop();
                        }
                    }
                }
            }
        }
        best.into_sorted_vec()
    }

    /// How many of the live documents `allow` accepts, estimated from an even sample of slots.
    fn allowed_fraction(&self, allow: &dyn Fn(u32) -> bool) -> f64 {
        const SAMPLE: u64 = 256;
        let slots = self.docs.len() as u64;
        let (mut live, mut yes) = (0usize, 0usize);
        // Slots scattered by a large prime step: an even stride would alias with filters such as
        // "every fourth document".
        for i in 0..SAMPLE.min(slots) {
            let doc = self.docs[(i * 2_654_435_761 % slots) as usize];
            if doc != NONE {
                live += 1;
                if allow(doc) {
                    yes += 1;
                }
            }
        }
        if live == 0 {
            0.0
        } else {
            yes as f64 / live as f64
        }
    }

    /// Every live allowed slot within `within` of `q` (all of them with `f64::INFINITY`), the
    /// `k` nearest kept.
    fn brute_force(
        &self,
        q: &[T],
        k: usize,
        within: f64,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<Cand> {
        let mut best: BinaryHeap<Cand> = BinaryHeap::new();
        for (slot, &doc) in self.docs.iter().enumerate() {
            if doc == NONE || allow.is_some_and(|f| !f(doc)) {
                continue;
            }
            let dist = self.dist_to(q, slot as u32);
            if dist > within {
                continue;
            }
            let cand = Cand {
                dist,
                slot: slot as u32,
            };
            if best.len() < k {
                best.push(cand);
            } else if best.peek().is_some_and(|w| cand < *w) {
                best.pop();
                best.push(cand);
            }
        }
        best.into_sorted_vec()
    }

    fn knn(
        &self,
        q: Vec<T>,
        k: usize,
        ef_runtime: Option<usize>,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<(u32, f64)> {
        let q = self.prepare(q);
        if k == 0 || self.slot_of.is_empty() {
            return Vec::new();
        }
        let found = match (&self.graph, allow) {
            (None, _) => self.brute_force(&q, k, f64::INFINITY, allow),
            (Some(g), _) => {
                let ef = ef_runtime.unwrap_or(g.ef_runtime).max(k);
                let live = self.slot_of.len() as f64;
                // Few allowed documents: scanning them beats a graph walk that would have to
                // pass through many refused ones to find k accepted.
                let few = allow.is_some_and(|f| {
                    let estimate = self.allowed_fraction(f) * live;
                    estimate < (4 * ef).max(1000) as f64 || estimate < live / 50.0
                });
                if few {
                    self.brute_force(&q, k, f64::INFINITY, allow)
                } else {
                    self.walk(g, &q, ef, allow)
                }
            }
        };
        found
            .into_iter()
            .filter(|c| self.docs[c.slot as usize] != NONE)
            .take(k)
            .map(|c| (self.docs[c.slot as usize], c.dist))
            .collect()
    }

    /// The graph search: greedy descent through the upper levels, then `ef` wide on level 0,
    /// only live (and allowed) documents in the result.
    fn walk(
        &self,
        g: &Graph,
        q: &[T],
        ef: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<Cand> {
        let Some(entry) = g.entry else {
            return Vec::new();
        };
        let mut ep = vec![Cand {
            dist: self.dist_to(q, entry),
            slot: entry,
        }];
        for l in (1..=g.levels[entry as usize] as usize).rev() {
            ep = self.search_layer(q, &ep, 1, l, None);
        }
        // Given a filter, `search_layer` keeps deleted slots out of the result.
        self.search_layer(q, &ep, ef, 0, Some(allow.unwrap_or(&|_| true)))
    }

    fn memory(&self) -> usize {
        let map_entry = 2 * std::mem::size_of::<u32>() + 1;
        let mut bytes = self.vectors.capacity() * T::SIZE
            + self.docs.capacity() * 4
            + self.free.capacity() * 4
            + self.slot_of.capacity() * map_entry;
        if let Some(g) = &self.graph {
            bytes += g.level0.capacity() * 4
                + g.levels.capacity()
                + g.upper.capacity() * (4 + std::mem::size_of::<Vec<u32>>() + 1)
                + g.upper.values().map(|v| v.capacity() * 4).sum::<usize>();
        }
        bytes
    }
}

enum Data {
    F32(Space<f32>),
    F64(Space<f64>),
}

/// The index of one VECTOR field.
pub struct VectorIndex {
    params: VectorParams,
    data: Data,
}

impl VectorIndex {
    pub fn new(params: VectorParams) -> VectorIndex {
        fn space<T: Element>(p: &VectorParams) -> Space<T> {
            Space {
                dim: p.dim,
                metric: p.metric,
                vectors: Vec::new(),
                docs: Vec::new(),
                slot_of: ahash::AHashMap::new(),
                free: Vec::new(),
                graph: match p.algorithm {
                    Algorithm::Flat => None,
                    Algorithm::Hnsw {
                        m,
                        ef_construction,
                        ef_runtime,
                    } => Some(Graph {
                        m: m.max(2),
                        ef_construction,
                        ef_runtime,
                        level0: Vec::new(),
                        levels: Vec::new(),
                        upper: ahash::AHashMap::new(),
                        entry: None,
                        rng: rand::rngs::StdRng::seed_from_u64(0x5eed),
                    }),
                },
            }
        }
        let data = match params.element {
            ElementType::Float32 => Data::F32(space(&params)),
            ElementType::Float64 => Data::F64(space(&params)),
        };
        VectorIndex { params, data }
    }

    pub fn params(&self) -> &VectorParams {
        &self.params
    }

    fn blob_size(&self) -> usize {
        // Saturating: DIM is the client's number; no blob is that long.
        self.params.dim.saturating_mul(self.params.element_size())
    }

    /// Adds or replaces document `doc`'s vector; Err when the blob's length is not
    /// dim × element size (the document is then not indexed for this field).
    pub fn insert(&mut self, doc: u32, blob: &[u8]) -> Result<(), String> {
        if blob.len() != self.blob_size() {
            return Err(format!(
                "Could not add vector with blob size {} (expected size {})",
                blob.len(),
                self.blob_size()
            ));
        }
        match &mut self.data {
            Data::F32(s) => s.insert(doc, decode(blob)),
            Data::F64(s) => s.insert(doc, decode(blob)),
        }
        Ok(())
    }

    /// Same from numbers (JSON documents hold arrays of numbers).
    pub fn insert_values(&mut self, doc: u32, values: &[f64]) -> Result<(), String> {
        if values.len() != self.params.dim {
            return Err(format!(
                "Invalid vector length. Expected {}, got {}",
                self.params.dim,
                values.len()
            ));
        }
        match &mut self.data {
            Data::F32(s) => s.insert(doc, values.iter().map(|&v| f32::from_f64(v)).collect()),
            Data::F64(s) => s.insert(doc, values.to_vec()),
        }
        Ok(())
    }

    pub fn remove(&mut self, doc: u32) {
        match &mut self.data {
            Data::F32(s) => s.remove(doc),
            Data::F64(s) => s.remove(doc),
        }
    }

    fn check_query(&self, query: &[u8]) -> Result<(), String> {
        if query.len() != self.blob_size() {
            return Err(format!(
                "Error parsing vector similarity query: query vector blob size ({}) does not match index's expected size ({}).",
                query.len(),
                self.blob_size()
            ));
        }
        Ok(())
    }

    /// The k nearest documents to `query` (a blob of the field's type), nearest first, with
    /// RediSearch's distance, among those `allow` accepts; `ef_runtime` overrides the field's.
    pub fn knn(
        &self,
        query: &[u8],
        k: usize,
        ef_runtime: Option<usize>,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Result<Vec<(u32, f64)>, String> {
        self.check_query(query)?;
        Ok(match &self.data {
            Data::F32(s) => s.knn(decode(query), k, ef_runtime, allow),
            Data::F64(s) => s.knn(decode(query), k, ef_runtime, allow),
        })
    }

    /// Every document within `radius` (same distance as [`VectorIndex::knn`]), nearest first.
    /// Exact: a scan of the vectors (a range has no size bound a graph walk could stop at).
    pub fn range(
        &self,
        query: &[u8],
        radius: f64,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Result<Vec<(u32, f64)>, String> {
        self.check_query(query)?;
        fn scan<T: Element>(
            s: &Space<T>,
            q: Vec<T>,
            radius: f64,
            allow: Option<&dyn Fn(u32) -> bool>,
        ) -> Vec<(u32, f64)> {
            let q = s.prepare(q);
            s.brute_force(&q, usize::MAX, radius, allow)
                .into_iter()
                .map(|c| (s.docs[c.slot as usize], c.dist))
                .collect()
        }
        Ok(match &self.data {
            Data::F32(s) => scan(s, decode(query), radius, allow),
            Data::F64(s) => scan(s, decode(query), radius, allow),
        })
    }

    pub fn len(&self) -> usize {
        match &self.data {
            Data::F32(s) => s.slot_of.len(),
            Data::F64(s) => s.slot_of.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this index holds (vectors, graph and the document map).
    pub fn memory(&self) -> usize {
        std::mem::size_of::<Self>()
            + match &self.data {
                Data::F32(s) => s.memory(),
                Data::F64(s) => s.memory(),
            }
    }
}

/// Slots are added at most a block at a time, as RediSearch's BLOCK_SIZE does: a `Vec` doubling
/// its capacity would hold up to twice the vectors' bytes.
const BLOCK: usize = 1024;

/// Makes room for one more slot of `per_slot` items in `v`, a block of slots at a time.
fn grow<E>(v: &mut Vec<E>, per_slot: usize) {
    if v.capacity() - v.len() < per_slot {
        // Small indexes (and wide graphs) double up to a block, not a whole block at once.
        let slots = (v.len() / per_slot).clamp(16, BLOCK);
        v.reserve_exact(slots * per_slot);
    }
}

/// A blob of little-endian elements (its length already checked) as numbers.
fn decode<T: Element>(blob: &[u8]) -> Vec<T> {
    blob.chunks_exact(T::SIZE).map(T::from_le).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;

    fn args(words: &str) -> Vec<Bytes> {
        words
            .split_whitespace()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    fn parse_err(words: &str) -> String {
        VectorParams::parse(&args(words)).unwrap_err()
    }

    fn params(words: &str) -> VectorParams {
        VectorParams::parse(&args(words)).unwrap().0
    }

    fn blob32(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn blob64(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn blob(p: &VectorParams, v: &[f64]) -> Vec<u8> {
        match p.element {
            ElementType::Float32 => blob32(&v.iter().map(|&x| x as f32).collect::<Vec<_>>()),
            ElementType::Float64 => blob64(v),
        }
    }

    #[test]
    fn parse_reads_the_parameters_and_counts_the_arguments_used() {
        let a = args("HNSW 14 type float64 DIM 4 distance_metric cosine M 8 EF_CONSTRUCTION 50 EF_RUNTIME 7 EPSILON 0.5 next");
        let (p, used) = VectorParams::parse(&a).unwrap();
        assert_eq!(used, 16);
        assert_eq!(
            p,
            VectorParams {
                algorithm: Algorithm::Hnsw {
                    m: 8,
                    ef_construction: 50,
                    ef_runtime: 7
                },
                element: ElementType::Float64,
                dim: 4,
                metric: Metric::Cosine,
            }
        );
        let (p, used) = VectorParams::parse(&args(
            "FLAT 10 TYPE FLOAT32 DIM 2 DISTANCE_METRIC L2 INITIAL_CAP 5 BLOCK_SIZE 16 t TAG",
        ))
        .unwrap();
        assert_eq!(used, 12);
        assert_eq!(p.algorithm, Algorithm::Flat);
        assert_eq!(
            (p.element, p.dim, p.metric),
            (ElementType::Float32, 2, Metric::L2)
        );
        // RediSearch's defaults.
        assert_eq!(
            params("HNSW 6 TYPE FLOAT32 DIM 3 DISTANCE_METRIC IP").algorithm,
            Algorithm::Hnsw {
                m: 16,
                ef_construction: 200,
                ef_runtime: 10
            }
        );
    }

    #[test]
    fn parse_errors_are_redisearchs() {
        let cases = [
            ("", "Bad arguments for vector similarity algorithm"),
            ("REDIS 6 TYPE FLOAT32 DIM 2 DISTANCE_METRIC IP", "Bad arguments for vector similarity algorithm"),
            ("FLAT", "Bad arguments for vector similarity number of parameters"),
            ("HNSW x", "Bad arguments for vector similarity number of parameters"),
            ("FLAT 6", "Expected 6 parameters but got 0"),
            ("FLAT 6 TYPE FLOAT32", "Expected 6 parameters but got 2"),
            ("FLAT 1", "Bad number of arguments for vector similarity index: got 1 but expected even number"),
            ("FLAT 2 SIZE", "Bad arguments for algorithm FLAT: SIZE"),
            ("FLAT 2 M 16", "Bad arguments for algorithm FLAT: M"),
            ("HNSW 2 SIZE", "Bad arguments for algorithm HNSW: SIZE"),
            ("FLAT 2 TYPE", "Bad arguments for vector similarity FLAT index type"),
            ("HNSW 2 TYPE FLOAT16", "Bad arguments for vector similarity HNSW index type"),
            ("HNSW 2 TYPE BFLOAT16", "Bad arguments for vector similarity HNSW index type"),
            ("FLAT 4 TYPE FLOAT32 DIM", "Bad arguments for vector similarity FLAT index dim"),
            ("HNSW 6 TYPE FLOAT32 DIM str DISTANCE_METRIC IP", "Bad arguments for vector similarity HNSW index dim"),
            ("HNSW 6 TYPE FLOAT32 DIM 0 DISTANCE_METRIC IP", "Bad arguments for vector similarity HNSW index dim"),
            ("HNSW 6 TYPE FLOAT32 DIM 4 DISTANCE_METRIC REDIS", "Bad arguments for vector similarity HNSW index metric"),
            ("FLAT 4 DIM 1024 DISTANCE_METRIC IP", "Missing mandatory parameter: cannot create FLAT index without specifying TYPE argument"),
            ("HNSW 4 TYPE FLOAT32 DISTANCE_METRIC IP", "Missing mandatory parameter: cannot create HNSW index without specifying DIM argument"),
            ("HNSW 4 TYPE FLOAT32 DIM 1024", "Missing mandatory parameter: cannot create HNSW index without specifying DISTANCE_METRIC argument"),
            ("FLAT 10 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP INITIAL_CAP str BLOCK_SIZE 16", "Bad arguments for vector similarity FLAT index initial cap"),
            ("FLAT 10 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP INITIAL_CAP 10 BLOCK_SIZE str", "Bad arguments for vector similarity FLAT index blocksize"),
            ("HNSW 8 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP M str", "Bad arguments for vector similarity HNSW index m"),
            ("HNSW 8 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP EF_CONSTRUCTION str", "Bad arguments for vector similarity HNSW index efConstruction"),
            ("HNSW 8 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP EF_RUNTIME 14.3", "Bad arguments for vector similarity HNSW index efRuntime"),
            ("HNSW 8 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP EF_RUNTIME -10", "Bad arguments for vector similarity HNSW index efRuntime"),
            ("HNSW 8 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP EPSILON -1", "Bad arguments for vector similarity HNSW index epsilon"),
            ("HNSW 8 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP EPSILON str", "Bad arguments for vector similarity HNSW index epsilon"),
            ("HNSW 8 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP M 32768", "HNSW index parameter M is too large: argument overflow"),
            ("HNSW 8 TYPE FLOAT32 DIM 4 DISTANCE_METRIC IP M 1", "HNSW index parameter M cannot be 1 or 0"),
        ];
        for (words, want) in cases {
            assert_eq!(parse_err(words), want, "{words}");
        }
    }

    #[test]
    fn info_lists_redisearchs_attributes() {
        let p =
            params("HNSW 10 TYPE FLOAT32 DIM 384 DISTANCE_METRIC COSINE M 32 EF_CONSTRUCTION 100");
        let info: Vec<(&str, String)> = p.info();
        let want = [
            ("algorithm", "HNSW"),
            ("data_type", "FLOAT32"),
            ("dim", "384"),
            ("distance_metric", "COSINE"),
            ("M", "32"),
            ("ef_construction", "100"),
        ];
        assert_eq!(info, want.map(|(k, v)| (k, v.to_string())));
        let flat = params("FLAT 6 TYPE FLOAT64 DIM 2 DISTANCE_METRIC L2").info();
        assert_eq!(flat.len(), 4);
        assert_eq!(flat[1], ("data_type", "FLOAT64".to_string()));
    }

    /// Three vectors, a query, and the distances worked by hand, nearest first.
    type Case = (&'static str, [[f64; 2]; 3], [f64; 2], [(u32, f64); 3]);

    fn hand_cases() -> Vec<Case> {
        let half = 1.0 - 1.0 / 2f64.sqrt();
        vec![
            // Squared euclidean: 0, 1, 3² + 4².
            (
                "L2",
                [[0.0, 0.0], [1.0, 0.0], [3.0, 4.0]],
                [0.0, 0.0],
                [(1, 0.0), (2, 1.0), (3, 25.0)],
            ),
            // 1 - a·q with q = (1, 2): 1 - 1, 1 - 2, 1 - 3.
            (
                "IP",
                [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
                [1.0, 2.0],
                [(3, -2.0), (2, -1.0), (1, 0.0)],
            ),
            // 1 - cos: same direction 0, at 45° 1 - 1/√2, orthogonal 1; lengths do not count.
            (
                "COSINE",
                [[2.0, 0.0], [0.0, 5.0], [3.0, 3.0]],
                [1.0, 0.0],
                [(1, 0.0), (3, half), (2, 1.0)],
            ),
        ]
    }

    #[test]
    fn flat_and_hnsw_give_the_hand_computed_distances_for_each_metric_and_type() {
        for algo in ["FLAT 6", "HNSW 6"] {
            for ty in ["FLOAT32", "FLOAT64"] {
                for (metric, vectors, query, want) in hand_cases() {
                    let p = params(&format!("{algo} TYPE {ty} DIM 2 DISTANCE_METRIC {metric}"));
                    let tolerance = if ty == "FLOAT32" { 1e-6 } else { 1e-12 };
                    let mut index = VectorIndex::new(p.clone());
                    for (doc, v) in vectors.iter().enumerate() {
                        index.insert(doc as u32 + 1, &blob(&p, v)).unwrap();
                    }
                    let got = index.knn(&blob(&p, &query), 10, None, None).unwrap();
                    let what = format!("{algo} {ty} {metric}");
                    assert_eq!(got.len(), 3, "{what}");
                    for ((doc, dist), (want_doc, want_dist)) in got.iter().zip(want) {
                        assert_eq!(*doc, want_doc, "{what}");
                        assert!(
                            (dist - want_dist).abs() < tolerance,
                            "{what}: {dist} vs {want_dist}"
                        );
                    }
                    let two = index.knn(&blob(&p, &query), 2, None, None).unwrap();
                    assert_eq!(two, got[..2], "{what}");
                    // The range holds the documents within the radius, nearest first.
                    let within = index
                        .range(&blob(&p, &query), want[1].1 + 1e-6, None)
                        .unwrap();
                    assert_eq!(within, got[..2], "{what}");
                }
            }
        }
    }

    #[test]
    fn wrong_blob_lengths_are_refused_and_change_nothing() {
        let p = params("HNSW 6 TYPE FLOAT32 DIM 2 DISTANCE_METRIC L2");
        let mut index = VectorIndex::new(p);
        index.insert(1, &blob32(&[1.0, 2.0])).unwrap();
        assert_eq!(
            index.insert(2, b"abcdefg").unwrap_err(),
            "Could not add vector with blob size 7 (expected size 8)"
        );
        // The index is unchanged; taking the document out of the field on a failed replacement
        // is the caller's, as it counts the failure.
        assert_eq!(
            index.insert(1, b"").unwrap_err(),
            "Could not add vector with blob size 0 (expected size 8)"
        );
        assert_eq!(index.len(), 1);
        assert_eq!(
            index.knn(b"abcdefghi", 1, None, None).unwrap_err(),
            "Error parsing vector similarity query: query vector blob size (9) does not match index's expected size (8)."
        );
        assert_eq!(
            index.range(b"abcdefg", 1.0, None).unwrap_err(),
            "Error parsing vector similarity query: query vector blob size (7) does not match index's expected size (8)."
        );
        let f64_index = VectorIndex::new(params("FLAT 6 TYPE FLOAT64 DIM 2 DISTANCE_METRIC L2"));
        assert_eq!(
            f64_index.knn(&blob32(&[1.0, 2.0]), 1, None, None).unwrap_err(),
            "Error parsing vector similarity query: query vector blob size (8) does not match index's expected size (16)."
        );
        assert_eq!(
            index.insert_values(3, &[1.0]).unwrap_err(),
            "Invalid vector length. Expected 2, got 1"
        );
        assert_eq!(index.len(), 1);
        let got = index.knn(&blob32(&[1.0, 2.0]), 5, None, None).unwrap();
        assert_eq!(got, vec![(1, 0.0)]);
    }

    #[test]
    fn values_index_like_blobs_and_remove_forgets() {
        for ty in ["FLOAT32", "FLOAT64"] {
            let p = params(&format!("FLAT 6 TYPE {ty} DIM 3 DISTANCE_METRIC L2"));
            let mut index = VectorIndex::new(p.clone());
            index.insert_values(7, &[1.0, 2.0, 2.0]).unwrap();
            index.insert(8, &blob(&p, &[0.0, 0.0, 1.0])).unwrap();
            let got = index
                .knn(&blob(&p, &[0.0, 0.0, 0.0]), 5, None, None)
                .unwrap();
            assert_eq!(got, vec![(8, 1.0), (7, 9.0)]);
            index.remove(8);
            index.remove(99);
            assert_eq!(index.len(), 1);
            assert_eq!(
                index
                    .knn(&blob(&p, &[0.0, 0.0, 0.0]), 5, None, None)
                    .unwrap(),
                vec![(7, 9.0)]
            );
            // Replacing moves the document.
            index.insert_values(7, &[0.0, 0.0, 0.5]).unwrap();
            assert_eq!(index.len(), 1);
            assert_eq!(
                index
                    .knn(&blob(&p, &[0.0, 0.0, 0.0]), 5, None, None)
                    .unwrap(),
                vec![(7, 0.25)]
            );
            assert_eq!(
                index
                    .knn(&blob(&p, &[0.0, 0.0, 0.0]), 0, None, None)
                    .unwrap(),
                vec![]
            );
        }
    }

    #[test]
    fn hnsw_finds_documents_linked_only_through_removed_ones() {
        let p = params("HNSW 6 TYPE FLOAT32 DIM 2 DISTANCE_METRIC L2");
        let mut index = VectorIndex::new(p);
        index.insert(1, &blob32(&[0.0, 0.0])).unwrap();
        index.remove(1);
        // The removed first document is the graph's entry point: the walk starts there.
        index.insert(2, &blob32(&[1.0, 0.0])).unwrap();
        index.insert(3, &blob32(&[2.0, 0.0])).unwrap();
        index.remove(2);
        index.insert(4, &blob32(&[3.0, 0.0])).unwrap();
        let got = index.knn(&blob32(&[0.0, 0.0]), 10, None, None).unwrap();
        assert_eq!(got, vec![(3, 4.0), (4, 9.0)]);
        assert!(!index.is_empty() && index.len() == 2);
        index.remove(3);
        index.remove(4);
        assert!(index
            .knn(&blob32(&[0.0, 0.0]), 10, None, None)
            .unwrap()
            .is_empty());
        assert!(index.is_empty());
    }

    fn random_vectors(rng: &mut StdRng, n: usize, dim: usize) -> Vec<Vec<f32>> {
        (0..n)
            .map(|_| (0..dim).map(|_| rng.gen_range(-1.0f32..1.0)).collect())
            .collect()
    }

    /// The share of FLAT's k nearest (among those `allow` accepts) that HNSW also returns.
    fn recall(
        hnsw: &VectorIndex,
        flat: &VectorIndex,
        queries: &[Vec<f32>],
        k: usize,
        ef: Option<usize>,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> f64 {
        let mut hits = 0;
        let mut total = 0;
        for q in queries {
            let exact = flat.knn(&blob32(q), k, None, allow).unwrap();
            let got = hnsw.knn(&blob32(q), k, ef, allow).unwrap();
            assert_eq!(got.len(), exact.len());
            for (doc, dist) in &got {
                assert!(allow.is_none_or(|f| f(*doc)), "doc {doc} is not allowed");
                // The distance HNSW reports is the exact one.
                let want = flat
                    .knn(&blob32(q), flat.len(), None, Some(&|d| d == *doc))
                    .unwrap();
                assert!((want[0].1 - dist).abs() < 1e-5);
            }
            assert!(got.windows(2).all(|w| w[0].1 <= w[1].1), "nearest first");
            hits += got
                .iter()
                .filter(|g| exact.iter().any(|e| e.0 == g.0))
                .count();
            total += exact.len();
        }
        hits as f64 / total as f64
    }

    const RECALL_DIM: usize = 32;

    fn both(metric: &str) -> (VectorIndex, VectorIndex) {
        let hnsw = VectorIndex::new(params(&format!(
            "HNSW 6 TYPE FLOAT32 DIM {RECALL_DIM} DISTANCE_METRIC {metric}"
        )));
        let flat = VectorIndex::new(params(&format!(
            "FLAT 6 TYPE FLOAT32 DIM {RECALL_DIM} DISTANCE_METRIC {metric}"
        )));
        (hnsw, flat)
    }

    #[test]
    fn hnsw_recall_holds_after_removals_and_replacements() {
        let mut rng = StdRng::seed_from_u64(1);
        let (mut hnsw, mut flat) = both("L2");
        let vectors = random_vectors(&mut rng, 5000, RECALL_DIM);
        for (doc, v) in vectors.iter().enumerate() {
            hnsw.insert(doc as u32, &blob32(v)).unwrap();
            flat.insert(doc as u32, &blob32(v)).unwrap();
        }
        let queries = random_vectors(&mut rng, 100, RECALL_DIM);
        let r = recall(&hnsw, &flat, &queries, 10, Some(100), None);
        assert!(r >= 0.95, "recall {r}");
        // Remove a third, replace another third with new vectors.
        for doc in (0..5000u32).filter(|d| d % 3 == 0) {
            hnsw.remove(doc);
            flat.remove(doc);
        }
        for doc in (0..5000u32).filter(|d| d % 3 == 1) {
            let v: Vec<f32> = (0..RECALL_DIM)
                .map(|_| rng.gen_range(-1.0f32..1.0))
                .collect();
            hnsw.insert(doc, &blob32(&v)).unwrap();
            flat.insert(doc, &blob32(&v)).unwrap();
        }
        assert_eq!(hnsw.len(), flat.len());
        let r = recall(&hnsw, &flat, &queries, 10, Some(100), None);
        assert!(r >= 0.95, "recall after removals and replacements {r}");
        // The removed slots are reused by new documents.
        let before = hnsw.memory();
        for doc in (0..5000u32).filter(|d| d % 3 == 0) {
            let v: Vec<f32> = (0..RECALL_DIM)
                .map(|_| rng.gen_range(-1.0f32..1.0))
                .collect();
            hnsw.insert(doc + 10_000, &blob32(&v)).unwrap();
            flat.insert(doc + 10_000, &blob32(&v)).unwrap();
        }
        // Every removed slot but the graph's entry point is reused: no new block of slots.
        assert!(
            hnsw.memory() < before + 4096,
            "{} then {before}",
            hnsw.memory()
        );
        let r = recall(&hnsw, &flat, &queries, 10, Some(100), None);
        assert!(r >= 0.95, "recall after reuse {r}");
    }

    #[test]
    fn hnsw_recall_for_cosine_and_ip() {
        for metric in ["COSINE", "IP"] {
            let mut rng = StdRng::seed_from_u64(2);
            let (mut hnsw, mut flat) = both(metric);
            for (doc, v) in random_vectors(&mut rng, 3000, RECALL_DIM)
                .iter()
                .enumerate()
            {
                hnsw.insert(doc as u32, &blob32(v)).unwrap();
                flat.insert(doc as u32, &blob32(v)).unwrap();
            }
            let queries = random_vectors(&mut rng, 50, RECALL_DIM);
            let r = recall(&hnsw, &flat, &queries, 10, Some(100), None);
            assert!(r >= 0.95, "{metric} recall {r}");
        }
    }

    #[test]
    fn hybrid_filters_return_only_allowed_documents() {
        let mut rng = StdRng::seed_from_u64(3);
        let (mut hnsw, mut flat) = both("L2");
        for (doc, v) in random_vectors(&mut rng, 5000, RECALL_DIM)
            .iter()
            .enumerate()
        {
            hnsw.insert(doc as u32, &blob32(v)).unwrap();
            flat.insert(doc as u32, &blob32(v)).unwrap();
        }
        let queries = random_vectors(&mut rng, 50, RECALL_DIM);
        // Many allowed: filtered during the graph walk.
        let third = |doc: u32| doc % 3 == 0;
        let r = recall(&hnsw, &flat, &queries, 10, Some(100), Some(&third));
        assert!(r >= 0.95, "recall with a third allowed {r}");
        // Few allowed: searched by brute force, so exact.
        let few = |doc: u32| doc % 500 == 7;
        let r = recall(&hnsw, &flat, &queries, 10, None, Some(&few));
        assert_eq!(r, 1.0);
        // Fewer allowed than k: all of them.
        let got = hnsw
            .knn(&blob32(&queries[0]), 20, None, Some(&few))
            .unwrap();
        assert_eq!(got.len(), 10);
        let none = |_: u32| false;
        assert!(hnsw
            .knn(&blob32(&queries[0]), 5, None, Some(&none))
            .unwrap()
            .is_empty());
        // A range with a filter.
        let radius = flat.knn(&blob32(&queries[0]), 30, None, None).unwrap()[29].1;
        let want: Vec<(u32, f64)> = flat
            .knn(&blob32(&queries[0]), 30, None, None)
            .unwrap()
            .into_iter()
            .filter(|(d, _)| third(*d))
            .collect();
        assert_eq!(
            hnsw.range(&blob32(&queries[0]), radius, Some(&third))
                .unwrap(),
            want
        );
    }

    #[test]
    fn the_allowed_share_is_estimated_without_aliasing_with_the_filter() {
        let p = params("FLAT 6 TYPE FLOAT32 DIM 1 DISTANCE_METRIC L2");
        let mut index = VectorIndex::new(p);
        for doc in 0..100_000u32 {
            index.insert(doc, &blob32(&[doc as f32])).unwrap();
        }
        let Data::F32(space) = &index.data else {
            panic!("a FLOAT32 index");
        };
        for modulus in [2u32, 3, 4, 8, 10, 390] {
            let share = space.allowed_fraction(&|doc| doc % modulus == 1);
            let want = 1.0 / modulus as f64;
            assert!((share - want).abs() < 0.1, "1/{modulus}: {share}");
        }
        assert_eq!(space.allowed_fraction(&|_| false), 0.0);
    }

    #[test]
    fn hnsw_memory_is_within_one_and_a_half_times_the_vectors() {
        let mut rng = StdRng::seed_from_u64(4);
        let p = params("HNSW 6 TYPE FLOAT32 DIM 384 DISTANCE_METRIC COSINE");
        let mut index = VectorIndex::new(p);
        let n = 2048;
        for (doc, v) in random_vectors(&mut rng, n, 384).iter().enumerate() {
            index.insert(doc as u32, &blob32(v)).unwrap();
        }
        let raw = n * 384 * 4;
        let ratio = index.memory() as f64 / raw as f64;
        assert!(ratio > 1.0 && ratio <= 1.5, "memory {ratio} × the vectors");
    }
}
