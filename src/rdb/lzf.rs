//! LZF, the compression Redis applies to strings longer than 20 bytes in RDB files and DUMP
//! payloads.
//!
//! The compressor follows liblzf 3.6 as Redis builds it (16-bit hash table, "very fast" mode, no
//! table initialisation beyond "empty"), step for step: the same input then gives the same bytes
//! as Redis's DUMP, which the differential corpus compares. The decompressor accepts any valid
//! LZF stream and refuses a corrupt one instead of reading outside its buffers.

/// Literal runs hold at most this many bytes.
const MAX_LITERAL: usize = 1 << 5;
/// Back references reach at most this far.
const MAX_OFFSET: usize = 1 << 13;
/// A back reference copies at most this many bytes.
const MAX_REFERENCE: usize = (1 << 8) + (1 << 3);
const HASH_LOG: u32 = 16;
const HASH_SIZE: usize = 1 << HASH_LOG;

fn first(input: &[u8], at: usize) -> u32 {
    (u32::from(input[at]) << 8) | u32::from(input[at + 1])
}

fn next(hash: u32, input: &[u8], at: usize) -> u32 {
    (hash << 8) | u32::from(input[at + 2])
}

fn slot(hash: u32) -> usize {
    ((hash >> (3 * 8 - HASH_LOG)).wrapping_sub(hash.wrapping_mul(5)) as usize) & (HASH_SIZE - 1)
}

/// Compresses `input` into at most `limit` bytes; None when the result would not fit (Redis then
/// stores the string as it is). The fit checks are liblzf's, conservative by a byte or two, so
/// the decision matches Redis's too.
pub fn compress(input: &[u8], limit: usize) -> Option<Vec<u8>> {
    if input.is_empty() || limit == 0 {
        return None;
    }
    HASH_TABLE.with(|table| compress_with(&mut table.borrow_mut(), input, limit))
}

/// The hash table of the last 3-byte sequences seen, reused across calls: clearing 64 Ki slots
/// for every string would cost more than compressing a short one (liblzf leaves its table
/// uninitialised for the same reason). A slot holds `base + position`; slots below the current
/// call's `base` were written by earlier calls and count as empty.
struct HashTable {
    slots: Vec<u32>,
    base: u32,
}

thread_local! {
    static HASH_TABLE: std::cell::RefCell<HashTable> = const {
        std::cell::RefCell::new(HashTable {
            slots: Vec::new(),
            base: 0,
        })
    };
}

impl HashTable {
    /// Starts a call over `len` bytes: a fresh range of slot values, or a cleared table when the
    /// values would overflow.
    fn begin(&mut self, len: usize) -> Option<()> {
        let len = u32::try_from(len).ok()?;
        if self.slots.is_empty() {
            self.slots = vec![0; HASH_SIZE];
        }
        match self.base.checked_add(1).and_then(|b| b.checked_add(len)) {
            Some(_) => self.base += 1,
            None => {
                self.slots.fill(0);
                self.base = 1;
            }
        }
        Some(())
    }

    /// The position last stored at `slot` in this call, or 0 for none (liblzf never refers back
    /// to position 0 either), and stores `position` there.
    fn swap(&mut self, slot: usize, position: usize) -> usize {
        let old = std::mem::replace(&mut self.slots[slot], self.base + position as u32);
        old.checked_sub(self.base).map_or(0, |p| p as usize)
    }

    fn set(&mut self, slot: usize, position: usize) {
        self.slots[slot] = self.base + position as u32;
    }

    /// Moves `base` past every value this call wrote.
    fn end(&mut self, len: usize) {
        self.base += len as u32;
    }
}

fn compress_with(table: &mut HashTable, input: &[u8], limit: usize) -> Option<Vec<u8>> {
    table.begin(input.len())?;
    let result = compress_into(table, input, limit);
    table.end(input.len());
    result
}

fn compress_into(table: &mut HashTable, input: &[u8], limit: usize) -> Option<Vec<u8>> {
    let end = input.len();
    let mut out: Vec<u8> = Vec::with_capacity(limit.min(end + end / 16 + 64));
    let mut literal = 0usize;
    out.push(0); // the control byte of the first literal run
    let mut ip = 0usize;
    let mut hash = if end >= 2 { first(input, 0) } else { 0 };
    while end >= 3 && ip < end - 2 {
        hash = next(hash, input, ip);
        let reference = table.swap(slot(hash), ip);
        let offset = ip.wrapping_sub(reference).wrapping_sub(1);
        if reference > 0
            && offset < MAX_OFFSET
            && input[reference + 2] == input[ip + 2]
            && input[reference] == input[ip]
            && input[reference + 1] == input[ip + 1]
        {
            let maxlen = (end - ip - 2).min(MAX_REFERENCE);
            // The exact test liblzf makes before writing a reference.
            if out.len() - usize::from(literal == 0) + 4 >= limit {
                return None;
            }
            close_run(&mut out, literal);
            let mut len = 2usize;
            let mut done = false;
            if maxlen > 16 {
                for _ in 0..16 {
                    len += 1;
                    if input[reference + len] != input[ip + len] {
                        done = true;
                        break;
                    }
                }
            }
            if !done {
                loop {
                    len += 1;
                    if !(len < maxlen && input[reference + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2;
            ip += 1;
            if len < 7 {
                out.push(((offset >> 8) + (len << 5)) as u8);
            } else {
                out.push(((offset >> 8) + (7 << 5)) as u8);
                out.push((len - 7) as u8);
            }
            out.push(offset as u8);
            literal = 0;
            out.push(0);
            ip += len + 1;
            if ip >= end - 2 {
                break;
            }
            ip -= 2;
            hash = first(input, ip);
            hash = next(hash, input, ip);
            table.set(slot(hash), ip);
            ip += 1;
            hash = next(hash, input, ip);
            table.set(slot(hash), ip);
            ip += 1;
        } else {
            if out.len() >= limit {
                return None;
            }
            literal += 1;
            out.push(input[ip]);
            ip += 1;
            if literal == MAX_LITERAL {
                literal_run_full(&mut out);
                literal = 0;
            }
        }
    }
    if out.len() + 3 > limit {
        return None;
    }
    while ip < end {
        literal += 1;
        out.push(input[ip]);
        ip += 1;
        if literal == MAX_LITERAL {
            literal_run_full(&mut out);
            literal = 0;
        }
    }
    close_run(&mut out, literal);
    (out.len() <= limit).then_some(out)
}

/// Ends the literal run in progress: writes its control byte, or drops the empty run's
/// placeholder.
fn close_run(out: &mut Vec<u8>, literal: usize) {
    if literal == 0 {
        out.pop();
    } else {
        let at = out.len() - literal - 1;
        out[at] = (literal - 1) as u8;
    }
}

/// A full run of [`MAX_LITERAL`] bytes: its control byte, and the next run's placeholder.
fn literal_run_full(out: &mut Vec<u8>) {
    let at = out.len() - MAX_LITERAL - 1;
    out[at] = (MAX_LITERAL - 1) as u8;
    out.push(0);
}

/// Decompresses `input`, which must expand to exactly `expected` bytes.
pub fn decompress(input: &[u8], expected: usize) -> Option<Vec<u8>> {
    // No stream expands more than 88 times (3 bytes copying 264), so a larger claim is corrupt,
    // and refusing it first keeps a forged length from making us allocate.
    if expected > input.len().saturating_mul(88) {
        return None;
    }
    let mut out = Vec::with_capacity(expected);
    let mut ip = 0usize;
    while ip < input.len() {
        let control = usize::from(input[ip]);
        ip += 1;
        if control < MAX_LITERAL {
            let run = control + 1;
            let bytes = input.get(ip..ip + run)?;
            if out.len() + run > expected {
                return None;
            }
            out.extend_from_slice(bytes);
            ip += run;
        } else {
            let mut len = control >> 5;
            if len == 7 {
                len += usize::from(*input.get(ip)?);
                ip += 1;
            }
            len += 2;
            let back = ((control & 0x1f) << 8) + usize::from(*input.get(ip)?) + 1;
            ip += 1;
            if back > out.len() || out.len() + len > expected {
                return None;
            }
            // Byte by byte: a reference may overlap the bytes it produces (runs of one byte).
            let start = out.len() - back;
            for i in 0..len {
                let byte = out[start + i];
                out.push(byte);
            }
        }
    }
    (out.len() == expected).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_compresses_repetition() {
        let samples: Vec<Vec<u8>> = vec![
            b"a".repeat(1000),
            b"hello world, hello world, hello world, hello world".to_vec(),
            (0..5000u32).map(|i| (i * 7 % 251) as u8).collect(),
            (0..300u32)
                .flat_map(|i| i.to_string().into_bytes())
                .collect(),
        ];
        for sample in samples {
            let packed = compress(&sample, sample.len()).expect("compressible");
            assert!(packed.len() < sample.len());
            assert_eq!(
                decompress(&packed, sample.len()).as_deref(),
                Some(&sample[..])
            );
        }
    }

    #[test]
    fn earlier_calls_do_not_change_the_output() {
        let a = "memory of a conversation, ".repeat(8).into_bytes();
        let b = b"abcabcabcabcabcabcabcabc xyz abcabcabc".repeat(5);
        let first_a = compress(&a, a.len());
        let first_b = compress(&b, b.len());
        for _ in 0..3 {
            assert_eq!(compress(&b, b.len()), first_b);
            assert_eq!(compress(&a, a.len()), first_a);
        }
        // Forcing the slot values to wrap clears the table instead.
        HASH_TABLE.with(|t| t.borrow_mut().base = u32::MAX - 10);
        assert_eq!(compress(&a, a.len()), first_a);
        assert_eq!(compress(&b, b.len()), first_b);
    }

    #[test]
    fn incompressible_input_does_not_fit() {
        let noise: Vec<u8> = (0..64u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        assert!(compress(&noise, noise.len() - 4).is_none());
    }

    #[test]
    fn corrupt_streams_are_refused() {
        // A reference before the start, a truncated literal run, a wrong length.
        assert!(decompress(&[0x20, 0x05], 3).is_none());
        assert!(decompress(&[0x05, b'a'], 6).is_none());
        assert!(decompress(&[0x00, b'a'], 2).is_none());
        assert_eq!(
            decompress(&[0x00, b'a', 0x20, 0x00], 4).as_deref(),
            Some(&b"aaaa"[..])
        );
    }
}
