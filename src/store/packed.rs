//! A run of byte strings packed into one buffer, each a length then its bytes: the compact form of
//! small hashes and sets (Redis's listpack plays this part). One allocation holds every element,
//! where a map would spend a table slot, a hash and two `Bytes` headers (each with its own heap
//! block) on every one. Lookups walk the buffer, which is what Redis does too, and is why a
//! collection leaves this form once it outgrows the `*-max-listpack-*` thresholds.

/// Lengths below this take one byte; longer ones take this marker and four bytes.
const LONG: u8 = 0xFF;

/// The buffer and how many elements it holds (so a count costs no walk), plus one flag for the
/// owner's use (sets: "every member is an integer"), which fits in the padding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packed {
    /// Exactly as long as its contents (a `Box`, not a `Vec`: no capacity word, so a hash or set
    /// fits a key's entry in 24 bytes).
    buf: Box<[u8]>,
    count: u32,
    pub flag: bool,
}

impl Default for Packed {
    fn default() -> Self {
        Packed {
            buf: Box::default(),
            count: 0,
            flag: true,
        }
    }
}

/// The largest element the packed form takes (its length must fit the 4-byte header).
pub const MAX_ELEMENT: usize = u32::MAX as usize;

impl Packed {
    /// Bytes of the buffer (its heap block, exactly).
    pub fn byte_len(&self) -> usize {
        self.buf.len()
    }

    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Appends `elements` at the end, growing the buffer by exactly what they take, as Redis
    /// reallocates a listpack on each insert (small collections stay tight; the allocator's size
    /// classes absorb most of the regrowth). Elements over [`MAX_ELEMENT`] must not come here.
    pub fn push(&mut self, elements: &[&[u8]]) {
        let needed: usize = elements.iter().map(|e| header_len(e.len()) + e.len()).sum();
        edit_exact(&mut self.buf, |buf| {
            buf.reserve_exact(needed);
            for e in elements {
                write_header(buf, e.len());
                buf.extend_from_slice(e);
            }
        });
        self.count += elements.len() as u32;
    }

    /// The elements in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            buf: &self.buf,
            at: 0,
        }
    }

    /// Offsets: the element starting at byte `at` with the offset where the next one starts.
    fn element_at(&self, at: usize) -> (&[u8], usize) {
        read(&self.buf, at)
    }

    /// The byte offset of every `stride`-th element (the first of each group), for random access
    /// into a run that is walked once.
    pub fn offsets(&self, stride: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.len() / stride.max(1));
        let mut at = 0;
        let mut i = 0;
        while at < self.buf.len() {
            if i % stride.max(1) == 0 {
                out.push(at);
            }
            at = self.element_at(at).1;
            i += 1;
        }
        out
    }

    /// The `n` elements starting at byte offset `at` (an offset from [`Packed::offsets`] or
    /// [`Packed::find`]).
    pub fn group_at(&self, at: usize, n: usize) -> Group<'_> {
        let mut group: Group<'_> = [&[][..]; 2];
        let mut next = at;
        for slot in group.iter_mut().take(n) {
            let (e, after) = self.element_at(next);
            *slot = e;
            next = after;
        }
        group
    }

    /// The byte offset of the first group of `stride` elements whose first element is `key`.
    pub fn find(&self, key: &[u8], stride: usize) -> Option<usize> {
        self.find_position(key, stride).map(|(_, at)| at)
    }

    /// [`Packed::find`] with the group's position among the groups (a hash's field index).
    pub fn find_position(&self, key: &[u8], stride: usize) -> Option<(usize, usize)> {
        let mut at = 0;
        let mut position = 0;
        while at < self.buf.len() {
            let (e, mut next) = self.element_at(at);
            if e == key {
                return Some((position, at));
            }
            for _ in 1..stride {
                next = self.element_at(next).1;
            }
            at = next;
            position += 1;
        }
        None
    }

    /// The byte offset after the group of `stride` elements starting at `at`.
    fn group_end(&self, at: usize, stride: usize) -> usize {
        let mut next = at;
        for _ in 0..stride {
            next = self.element_at(next).1;
        }
        next
    }

    /// Replaces the element at byte offset `at` (a value inside a group) with `element`.
    pub fn replace_at(&mut self, at: usize, element: &[u8]) {
        let end = self.element_at(at).1;
        let mut encoded = Vec::with_capacity(header_len(element.len()) + element.len());
        write_header(&mut encoded, element.len());
        encoded.extend_from_slice(element);
        if encoded.len() == end - at {
            self.buf[at..end].copy_from_slice(&encoded);
        } else {
            edit_exact(&mut self.buf, |buf| {
                buf.splice(at..end, encoded);
            });
        }
    }

    /// The byte offset of the element after the one at `at`.
    pub fn next_offset(&self, at: usize) -> usize {
        self.element_at(at).1
    }

    /// Removes the group of `stride` elements at byte offset `at` the way `IndexMap::swap_remove`
    /// does: the last group takes its place, so positions stay dense and every other element
    /// keeps its position.
    pub fn swap_remove_group(&mut self, at: usize, stride: usize) {
        let end = self.group_end(at, stride);
        let last = self.last_group_start(stride);
        edit_exact(&mut self.buf, |buf| {
            if last == at {
                buf.truncate(at);
            } else {
                let moved = buf[last..].to_vec();
                buf.truncate(last);
                buf.splice(at..end, moved);
            }
        });
        self.count -= stride as u32;
    }

    /// The byte offset where the last group of `stride` elements starts.
    fn last_group_start(&self, stride: usize) -> usize {
        let groups = self.len() / stride.max(1);
        let mut at = 0;
        for _ in 0..groups.saturating_sub(1) {
            at = self.group_end(at, stride);
        }
        at
    }
}

/// Runs `edit` on `buf` as a `Vec` (no copy) and puts it back cut to its length, so a compact
/// buffer never keeps spare capacity.
pub(super) fn edit_exact<R>(buf: &mut Box<[u8]>, edit: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let mut bytes = std::mem::take(buf).into_vec();
    let out = edit(&mut bytes);
    *buf = bytes.into_boxed_slice();
    out
}

/// Up to two elements read together (a field and its value, or a lone member).
pub type Group<'a> = [&'a [u8]; 2];

pub(super) fn header_len(len: usize) -> usize {
    if len < LONG as usize {
        1
    } else {
        5
    }
}

pub(super) fn write_header(buf: &mut Vec<u8>, len: usize) {
    if len < LONG as usize {
        buf.push(len as u8);
    } else {
        buf.push(LONG);
        buf.extend_from_slice(&(len as u32).to_le_bytes());
    }
}

/// The element at `at` and the offset after it. The buffer is only ever written by this module,
/// so a header always announces bytes that are there.
pub(super) fn read(buf: &[u8], at: usize) -> (&[u8], usize) {
    let (len, start) = if buf[at] == LONG {
        let mut word = [0u8; 4];
        word.copy_from_slice(&buf[at + 1..at + 5]);
        (u32::from_le_bytes(word) as usize, at + 5)
    } else {
        (buf[at] as usize, at + 1)
    };
    (&buf[start..start + len], start + len)
}

/// The elements of a [`Packed`], in order.
#[derive(Clone)]
pub struct Iter<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.at >= self.buf.len() {
            return None;
        }
        let (e, next) = read(self.buf, self.at);
        self.at = next;
        Some(e)
    }
}
