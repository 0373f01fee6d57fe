//! HyperLogLog on string values, byte-compatible with Redis: the same hash (MurmurHash64A, seed
//! 0xadc83b19), 2^14 six-bit registers, the `HYLL` header with its cached cardinality, the sparse
//! encoding (ZERO / XZERO / VAL opcodes) promoted to dense past `hll-sparse-max-bytes`, and the
//! Ertl estimator Redis 7 uses. A value that PFADD/PFMERGE build here has the bytes Redis's would,
//! so GET, DUMP and replication of one agree. Pure functions over byte buffers; the commands are
//! in `commands::hyperloglog`.

/// Index bits.
const P: u32 = 14;
/// Hash bits used for the run of zeros.
const Q: usize = 64 - P as usize;
pub const REGISTERS: usize = 1 << P;
const REGISTER_BITS: usize = 6;
pub const HEADER: usize = 16;
/// Length of a dense value: the header and 16384 six-bit registers.
pub const DENSE_SIZE: usize = HEADER + (REGISTERS * REGISTER_BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;

const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;

const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// What is wrong with a value.
#[derive(Debug, PartialEq, Eq)]
pub enum HllError {
    /// Not an HLL at all (`WRONGTYPE Key is not a valid HyperLogLog string value.`).
    NotHll,
    /// An HLL whose sparse data does not add up (`INVALIDOBJ Corrupted HLL object detected`).
    Corrupt,
}

/// Redis's MurmurHash64A (little-endian reads).
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let mut k = u64::from_le_bytes(word);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate() {
            h ^= (*b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element goes to and the length of its run of zeros plus one.
pub fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, 0xadc8_3b19);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// A new, empty HLL: sparse, one XZERO run over every register, cached cardinality 0.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER + 2);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let len = left.min(XZERO_MAX_LEN);
        push_xzero(&mut v, len);
        left -= len;
    }
    v
}

/// Redis's `isHLLObjectOrReply`: magic, a known encoding, and the exact length when dense.
pub fn check(value: &[u8]) -> Result<(), HllError> {
    if value.len() < HEADER || &value[..4] != b"HYLL" || value[4] > SPARSE {
        return Err(HllError::NotHll);
    }
    if value[4] == DENSE && value.len() != DENSE_SIZE {
        return Err(HllError::NotHll);
    }
    Ok(())
}

pub fn is_dense(value: &[u8]) -> bool {
    value[4] == DENSE
}

/// The cached cardinality, when valid.
pub fn cached(value: &[u8]) -> Option<u64> {
    if value[15] & 0x80 != 0 {
        return None;
    }
    let mut card = [0u8; 8];
    card.copy_from_slice(&value[8..16]);
    Some(u64::from_le_bytes(card))
}

pub fn set_cached(value: &mut [u8], card: u64) {
    value[8..16].copy_from_slice(&card.to_le_bytes());
}

pub fn invalidate(value: &mut [u8]) {
    value[15] |= 0x80;
}

// Dense registers: register i is the 6 bits starting at bit i*6 of the register area, low bits
// first within a byte pair.

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let pos = i * REGISTER_BITS;
    let (byte, fb) = (pos / 8, (pos & 7) as u32);
    let b0 = regs[byte] as u32;
    let b1 = regs.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & 63) as u8
}

fn dense_set(regs: &mut [u8], i: usize, val: u8) {
    let pos = i * REGISTER_BITS;
    let (byte, fb) = (pos / 8, (pos & 7) as u32);
    let v = val as u32;
    regs[byte] = ((regs[byte] as u32 & !(63u32 << fb)) | (v << fb)) as u8;
    if let Some(next) = regs.get_mut(byte + 1) {
        let fb8 = 8 - fb;
        *next = ((*next as u32 & !(63u32 >> fb8)) | (v >> fb8)) as u8;
    }
}

// Sparse opcodes.

fn is_zero(op: u8) -> bool {
    op & 0xc0 == 0
}

fn is_xzero(op: u8) -> bool {
    op & 0xc0 == 0x40
}

fn val_value(op: u8) -> u8 {
    ((op >> 2) & 0x1f) + 1
}

fn val_len(op: u8) -> usize {
    (op & 3) as usize + 1
}

fn val_op(value: u8, len: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (len as u8 - 1)
}

fn push_xzero(v: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    v.push(0x40 | (l >> 8) as u8);
    v.push((l & 0xff) as u8);
}

fn push_zero_run(v: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        push_xzero(v, len);
    } else {
        v.push(len as u8 - 1);
    }
}

/// One sparse opcode at `p` of `data`: (registers covered, bytes, Some(value) for VAL).
fn sparse_op(data: &[u8], p: usize) -> (usize, usize, Option<u8>) {
    let op = data[p];
    if is_zero(op) {
        ((op & 0x3f) as usize + 1, 1, None)
    } else if is_xzero(op) {
        let lo = data.get(p + 1).copied().unwrap_or(0) as usize;
        ((((op & 0x3f) as usize) << 8 | lo) + 1, 2, None)
    } else {
        (val_len(op), 1, Some(val_value(op)))
    }
}

/// Adds one element. Ok(true) when a register changed (and the cache was invalidated).
/// True when adding `element` to the dense HLL `value` would raise its register: PFADD checks
/// this first, so an add that changes nothing writes (and copies) nothing.
pub fn dense_raises(value: &[u8], element: &[u8]) -> bool {
    let (index, count) = pattern(element);
    dense_get(&value[HEADER..], index) < count
}

pub fn add(value: &mut Vec<u8>, element: &[u8], sparse_max: usize) -> Result<bool, HllError> {
    let (index, count) = pattern(element);
    set_register(value, index, count, sparse_max)
}

/// Raises register `index` to `count` if lower: Redis's `hllDenseSet` / `hllSparseSet`.
fn set_register(
    value: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<bool, HllError> {
    if is_dense(value) {
        let regs = &mut value[HEADER..];
        if dense_get(regs, index) < count {
            dense_set(regs, index, count);
            return Ok(true);
        }
        return Ok(false);
    }
    if count > VAL_MAX_VALUE {
        return promote_and_set(value, index, count);
    }
    // Step 1: the opcode covering `index`.
    let end = value.len();
    let (mut p, mut first, mut span, mut oplen) = (HEADER, 0usize, 0usize, 1usize);
    let mut prev: Option<usize> = None;
    let mut found = false;
    while p < end {
        let (s, l, _) = sparse_op(value, p);
        span = s;
        oplen = l;
        if index < first + span {
            found = true;
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if !found || span == 0 {
        return Err(HllError::Corrupt);
    }
    let op = value[p];
    let last = first + span - 1;
    // Step 2: the trivial in-place cases, else the replacement sequence.
    let mut seq: Vec<u8> = Vec::with_capacity(5);
    if !is_zero(op) && !is_xzero(op) {
        let old = val_value(op);
        if old >= count {
            return Ok(false);
        }
        if span == 1 {
            value[p] = val_op(count, 1);
            merge_and_invalidate(value, prev);
            return Ok(true);
        }
        if index != first {
            seq.push(val_op(old, index - first));
        }
        seq.push(val_op(count, 1));
        if index != last {
            seq.push(val_op(old, last - index));
        }
    } else {
        if is_zero(op) && span == 1 {
            value[p] = val_op(count, 1);
            merge_and_invalidate(value, prev);
            return Ok(true);
        }
        if index != first {
            push_zero_run(&mut seq, index - first);
        }
        seq.push(val_op(count, 1));
        if index != last {
            push_zero_run(&mut seq, last - index);
        }
    }
    // Step 3: splice it in, or go dense when the value would outgrow `hll-sparse-max-bytes`.
    if seq.len() > oplen && value.len() + seq.len() - oplen > sparse_max {
        return promote_and_set(value, index, count);
    }
    value.splice(p..p + oplen, seq);
    merge_and_invalidate(value, prev);
    Ok(true)
}

/// Step 4 of Redis's `hllSparseSet`: merges adjacent VAL opcodes of equal value (up to five
/// opcodes from the one before the change), then marks the cached cardinality stale.
fn merge_and_invalidate(value: &mut Vec<u8>, prev: Option<usize>) {
    let mut p = prev.unwrap_or(HEADER);
    let mut scan = 5;
    while p < value.len() && scan > 0 {
        scan -= 1;
        let op = value[p];
        if is_xzero(op) {
            p += 2;
            continue;
        }
        if is_zero(op) {
            p += 1;
            continue;
        }
        if let Some(&next) = value.get(p + 1) {
            if next & 0x80 != 0 && val_value(op) == val_value(next) {
                let len = val_len(op) + val_len(next);
                if len <= VAL_MAX_LEN {
                    value[p + 1] = val_op(val_value(op), len);
                    value.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate(value);
}

fn promote_and_set(value: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, HllError> {
    to_dense(value)?;
    let regs = &mut value[HEADER..];
    if dense_get(regs, index) < count {
        dense_set(regs, index, count);
    }
    Ok(true)
}

/// Redis's `hllSparseToDense`: the header (magic, cached cardinality) is kept.
pub fn to_dense(value: &mut Vec<u8>) -> Result<(), HllError> {
    if is_dense(value) {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HEADER].copy_from_slice(&value[..HEADER]);
    dense[4] = DENSE;
    let mut idx = 0usize;
    let mut p = HEADER;
    while p < value.len() {
        let (run, len, val) = sparse_op(value, p);
        if let Some(v) = val {
            if idx + run > REGISTERS {
                return Err(HllError::Corrupt);
            }
            for i in idx..idx + run {
                dense_set(&mut dense[HEADER..], i, v);
            }
        }
        idx += run;
        p += len;
    }
    if idx != REGISTERS {
        return Err(HllError::Corrupt);
    }
    *value = dense;
    Ok(())
}

/// Raises `max[i]` to each register of `value` (Redis's `hllMerge`).
pub fn merge_into(max: &mut [u8; REGISTERS], value: &[u8]) -> Result<(), HllError> {
    if is_dense(value) {
        let regs = &value[HEADER..];
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(regs, i));
        }
        return Ok(());
    }
    let mut i = 0usize;
    let mut p = HEADER;
    while p < value.len() {
        let (run, len, val) = sparse_op(value, p);
        if let Some(v) = val {
            if i + run > REGISTERS {
                return Err(HllError::Corrupt);
            }
            for m in &mut max[i..i + run] {
                *m = (*m).max(v);
            }
        }
        i += run;
        p += len;
    }
    if i != REGISTERS {
        return Err(HllError::Corrupt);
    }
    Ok(())
}

/// Writes merged registers into `value` (PFMERGE's destination): dense first when `dense`.
pub fn store_registers(
    value: &mut Vec<u8>,
    max: &[u8; REGISTERS],
    dense: bool,
    sparse_max: usize,
) -> Result<(), HllError> {
    if dense {
        to_dense(value)?;
    }
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            // As Redis, a failure here is ignored: the sources (this value among them) merged.
            let _ = set_register(value, i, m, sparse_max);
        }
    }
    invalidate(value);
    Ok(())
}

/// The estimate of a single HLL value (Redis's `hllCount`); Corrupt when sparse data does not
/// cover exactly the 16384 registers.
pub fn count(value: &[u8]) -> Result<u64, HllError> {
    let mut histo = [0u32; 64];
    if is_dense(value) {
        let regs = &value[HEADER..];
        for i in 0..REGISTERS {
            histo[dense_get(regs, i) as usize] += 1;
        }
    } else {
        let mut idx = 0usize;
        let mut p = HEADER;
        while p < value.len() {
            let (run, len, val) = sparse_op(value, p);
            idx += run;
            if idx > REGISTERS {
                return Err(HllError::Corrupt);
            }
            histo[val.unwrap_or(0) as usize] += run as u32;
            p += len;
        }
        if idx != REGISTERS {
            return Err(HllError::Corrupt);
        }
    }
    Ok(estimate(&histo))
}

/// The estimate of raw registers (several keys merged).
pub fn count_registers(max: &[u8; REGISTERS]) -> u64 {
    let mut histo = [0u32; 64];
    for &r in max.iter() {
        histo[(r & 63) as usize] += 1;
    }
    estimate(&histo)
}

/// The 16384 registers of a dense value (PFDEBUG GETREG).
pub fn dense_registers(value: &[u8]) -> Vec<u8> {
    let regs = &value[HEADER..];
    (0..REGISTERS).map(|i| dense_get(regs, i)).collect()
}

/// PFDEBUG DECODE: the sparse opcodes as `z:len`, `Z:len` and `v:value,len`, space-separated.
pub fn decode_sparse(value: &[u8]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut p = HEADER;
    while p < value.len() {
        let op = value[p];
        let (run, len, val) = sparse_op(value, p);
        out.push(match val {
            Some(v) => format!("v:{v},{run}"),
            None if is_xzero(op) => format!("Z:{run}"),
            None => format!("z:{run}"),
        });
        p += len;
    }
    out.join(" ")
}

/// PFSELFTEST: every register of a dense value keeps what is written to it without touching
/// its neighbours, and a sparse and a dense HLL fed the same elements hold the same registers
/// and estimate. Err names the first failure.
pub fn self_test() -> Result<(), String> {
    let mut regs = vec![0u8; DENSE_SIZE - HEADER];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..10 {
        let want: Vec<u8> = (0..REGISTERS).map(|_| (next() & 63) as u8).collect();
        for (i, &w) in want.iter().enumerate() {
            dense_set(&mut regs, i, w);
        }
        for (i, &w) in want.iter().enumerate() {
            if dense_get(&regs, i) != w {
                return Err(format!("TESTFAILED Register error at {i}"));
            }
        }
    }
    let mut sparse = new_sparse();
    let mut dense = new_sparse();
    to_dense(&mut dense).map_err(|_| "TESTFAILED sparse to dense".to_string())?;
    for i in 0..5000u64 {
        let element = next().to_le_bytes();
        let a =
            add(&mut sparse, &element, usize::MAX).map_err(|_| format!("TESTFAILED add {i}"))?;
        let b = add(&mut dense, &element, usize::MAX).map_err(|_| format!("TESTFAILED add {i}"))?;
        if a != b {
            return Err(format!(
                "TESTFAILED sparse and dense disagree at element {i}"
            ));
        }
    }
    let (cs, cd) = (count(&sparse), count(&dense));
    if cs != cd {
        return Err("TESTFAILED sparse and dense estimates differ".to_string());
    }
    let mut promoted = sparse;
    to_dense(&mut promoted).map_err(|_| "TESTFAILED sparse to dense".to_string())?;
    if promoted[HEADER..] != dense[HEADER..] {
        return Err("TESTFAILED promoted registers differ".to_string());
    }
    Ok(())
}

/// Ertl's improved raw estimator ("New cardinality estimation algorithms for HyperLogLog
/// sketches", 2017), as Redis 7 computes it.
fn estimate(histo: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histo[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_redis_bytes() {
        let v = new_sparse();
        assert_eq!(v.len(), 18);
        assert_eq!(&v[16..], &[0x7f, 0xff]);
        assert_eq!(count(&v), Ok(0));
    }

    #[test]
    fn dense_registers_round_trip() {
        let mut regs = vec![0u8; DENSE_SIZE - HEADER];
        for i in 0..REGISTERS {
            dense_set(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8);
        }
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut sparse = new_sparse();
        let mut dense = new_sparse();
        to_dense(&mut dense).unwrap();
        for i in 0..2000u32 {
            let e = format!("e{i}");
            add(&mut sparse, e.as_bytes(), usize::MAX).unwrap();
            add(&mut dense, e.as_bytes(), usize::MAX).unwrap();
        }
        assert!(!is_dense(&sparse));
        assert_eq!(count(&sparse), count(&dense));
        let mut promoted = sparse.clone();
        to_dense(&mut promoted).unwrap();
        assert_eq!(promoted[HEADER..], dense[HEADER..]);
    }
}
