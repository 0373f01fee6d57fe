//! KNN over a VECTOR field's HNSW index against exact search: recall@10, latency, memory and
//! build time, at RediSearch's defaults (M 16, EF_CONSTRUCTION 200, EF_RUNTIME 10) and at wider
//! search breadths; then the same after a tenth of the documents are removed and another tenth
//! replaced, and with a hybrid filter.
//!
//! Run: `cargo bench --bench vector_knn` (100,000 × 384 FLOAT32 COSINE vectors, 1,000 queries;
//! `VECTORS=`, `QUERIES=`, `DIM=` override; `DATA=uniform` draws every vector uniformly instead of
//! around 1,000 cluster centres, which is how embeddings of real texts lie). Not part of
//! `.ci/run`: it runs for minutes.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;
use stmd::search::vector::{VectorIndex, VectorParams};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn params(algorithm: &str, dim: usize) -> VectorParams {
    let words = format!("{algorithm} 6 TYPE FLOAT32 DIM {dim} DISTANCE_METRIC COSINE");
    let args: Vec<bytes::Bytes> = words
        .split_whitespace()
        .map(|w| bytes::Bytes::copy_from_slice(w.as_bytes()))
        .collect();
    VectorParams::parse(&args).expect("valid parameters").0
}

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Vectors around one of `centres` (uniform noise of half the centres' spread), or uniform.
struct Data {
    rng: StdRng,
    dim: usize,
    centres: Vec<Vec<f32>>,
}

impl Data {
    fn new(dim: usize, uniform: bool) -> Data {
        let mut rng = StdRng::seed_from_u64(7);
        let centres = if uniform {
            Vec::new()
        } else {
            (0..1000)
                .map(|_| (0..dim).map(|_| rng.gen_range(-1.0f32..1.0)).collect())
                .collect()
        };
        Data { rng, dim, centres }
    }

    fn next(&mut self) -> Vec<f32> {
        if self.centres.is_empty() {
            return (0..self.dim)
                .map(|_| self.rng.gen_range(-1.0f32..1.0))
                .collect();
        }
        let c = self.rng.gen_range(0..self.centres.len());
        let rng = &mut self.rng;
        self.centres[c]
            .iter()
            .map(|x| x + rng.gen_range(-0.5f32..0.5))
            .collect()
    }
}

fn percentile(sorted: &[f64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// Recall@10 against `exact` and the latency percentiles (µs) of `hnsw` at breadth `ef`.
fn measure(
    hnsw: &VectorIndex,
    queries: &[Vec<u8>],
    exact: &[Vec<(u32, f64)>],
    ef: usize,
    allow: Option<&dyn Fn(u32) -> bool>,
) -> (f64, f64, f64) {
    let mut latencies = Vec::with_capacity(queries.len());
    let mut hits = 0;
    let mut total = 0;
    for (q, want) in queries.iter().zip(exact) {
        let start = Instant::now();
        let got = hnsw.knn(q, 10, Some(ef), allow).expect("query");
        latencies.push(start.elapsed().as_secs_f64() * 1e6);
        hits += got
            .iter()
            .filter(|g| want.iter().any(|w| w.0 == g.0))
            .count();
        total += want.len();
    }
    latencies.sort_by(f64::total_cmp);
    (
        hits as f64 / total as f64,
        percentile(&latencies, 50),
        percentile(&latencies, 99),
    )
}

fn exact(
    flat: &VectorIndex,
    queries: &[Vec<u8>],
    allow: Option<&dyn Fn(u32) -> bool>,
) -> Vec<Vec<(u32, f64)>> {
    queries
        .iter()
        .map(|q| flat.knn(q, 10, None, allow).expect("query"))
        .collect()
}

fn report(
    label: &str,
    hnsw: &VectorIndex,
    queries: &[Vec<u8>],
    exact: &[Vec<(u32, f64)>],
    allow: Option<&dyn Fn(u32) -> bool>,
) {
    for ef in [10, 20, 40, 64, 100, 200] {
        let (recall, p50, p99) = measure(hnsw, queries, exact, ef, allow);
        println!("{label} ef_runtime {ef:>3}: recall@10 {recall:.4}  p50 {p50:>7.0} µs  p99 {p99:>7.0} µs");
    }
}

fn main() {
    let n = env("VECTORS", 100_000);
    let nq = env("QUERIES", 1_000);
    let dim = env("DIM", 384);
    let uniform = std::env::var("DATA").is_ok_and(|d| d == "uniform");
    let mut data = Data::new(dim, uniform);
    let vectors: Vec<Vec<u8>> = (0..n).map(|_| blob(&data.next())).collect();
    let queries: Vec<Vec<u8>> = (0..nq).map(|_| blob(&data.next())).collect();
    println!(
        "{n} × {dim} FLOAT32 COSINE vectors ({}), {nq} queries, k 10, M 16, EF_CONSTRUCTION 200",
        if uniform { "uniform" } else { "1,000 clusters" }
    );

    let mut hnsw = VectorIndex::new(params("HNSW", dim));
    let mut flat = VectorIndex::new(params("FLAT", dim));
    let start = Instant::now();
    for (doc, v) in vectors.iter().enumerate() {
        hnsw.insert(doc as u32, v).expect("insert");
    }
    let build = start.elapsed();
    for (doc, v) in vectors.iter().enumerate() {
        flat.insert(doc as u32, v).expect("insert");
    }
    let raw = n * dim * 4;
    println!(
        "build {:.1} s ({:.0} µs per insert); memory {} bytes = {:.3} × the raw vectors ({raw} bytes)",
        build.as_secs_f64(),
        build.as_secs_f64() * 1e6 / n as f64,
        hnsw.memory(),
        hnsw.memory() as f64 / raw as f64
    );
    let start = Instant::now();
    let truth = exact(&flat, &queries, None);
    println!(
        "FLAT (exact): {:.0} µs per query",
        start.elapsed().as_secs_f64() * 1e6 / nq as f64
    );
    report("HNSW", &hnsw, &queries, &truth, None);

    // Hybrid: a quarter of the documents allowed (filtered during the walk), then 0.5% (scanned).
    let quarter = |doc: u32| doc % 4 == 1;
    report(
        "HNSW 1/4 allowed",
        &hnsw,
        &queries,
        &exact(&flat, &queries, Some(&quarter)),
        Some(&quarter),
    );
    let few = |doc: u32| doc % 200 == 3;
    report(
        "HNSW 1/200 allowed",
        &hnsw,
        &queries,
        &exact(&flat, &queries, Some(&few)),
        Some(&few),
    );

    // Churn: remove a tenth, replace another tenth with new vectors.
    let start = Instant::now();
    for doc in (0..n as u32).step_by(10) {
        hnsw.remove(doc);
        flat.remove(doc);
    }
    for doc in (5..n as u32).step_by(10) {
        let v = blob(&data.next());
        hnsw.insert(doc, &v).expect("insert");
        flat.insert(doc, &v).expect("insert");
    }
    println!(
        "removed {} and replaced {} in {:.1} s; memory {:.3} × the raw vectors of the remaining documents",
        n.div_ceil(10),
        (n + 4) / 10,
        start.elapsed().as_secs_f64(),
        hnsw.memory() as f64 / (hnsw.len() * dim * 4) as f64
    );
    report(
        "HNSW after churn",
        &hnsw,
        &queries,
        &exact(&flat, &queries, None),
        None,
    );
}
