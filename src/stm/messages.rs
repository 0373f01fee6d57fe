//! What one capture writes, stored compactly in one shared block: the conversation's ids (user,
//! server, channel, parent), the capture time and the messages, every length a varint in front of
//! the text. The user and server entries of a capture share the block (a capture replaces it
//! whole, so it is never changed in place). One allocation where there were a block of text, a
//! table of lengths, a reference-counted header and an allocation per id keeps an entry no larger
//! than a Redis list of the same messages.
//!
//! Layout: `[user][server][channel][parent]` (each a varint of its length + 1, 0 for none, then
//! its bytes), `[ts][count << 1 | compressed]`, then per message `[content length << 2 | role << 1
//! | has speaker]` and the speaker's length when it has one, then every speaker and content back to
//! back.
//!
//! A compressed block (an idle conversation's, see `super::compress`) keeps everything up to the
//! count as it is, so the ids, the time and the number of messages read without decompressing;
//! what follows the count (the heads and the texts) is `[its length][Brotli stream of it]`.

use super::Role;
use std::borrow::Cow;
use std::sync::Arc;

/// Brotli's quality for an idle block: 10 is the lowest that uses the built-in dictionary through
/// its optimal parser (2.6x on ~3 KB of chat text, against 2.2x at 5 to 9; docs/stm.md).
const QUALITY: i32 = 10;
/// Brotli's window: 64 KB, more than a usual block; a larger block still compresses, only
/// matches further back than this are not found.
const WINDOW_BITS: i32 = 16;
/// A block whose heads and texts are shorter than this stays plain: Brotli's few bytes of
/// framing would eat most of the gain.
const MIN_COMPRESSED_TAIL: usize = 128;

/// The ids a snapshot is written for; the server is None in a direct message, the user None in a
/// server-scope entry made without a capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ids<'a> {
    pub user: Option<&'a [u8]>,
    pub server: Option<&'a [u8]>,
    pub channel: &'a [u8],
    pub parent: Option<&'a [u8]>,
}

/// One capture's ids and messages, oldest first. Immutable; cloning shares the block.
#[derive(Clone, Debug)]
pub struct Snapshot(Arc<[u8]>);

/// Equal when they hold the same ids and messages, compressed or not.
impl PartialEq for Snapshot {
    fn eq(&self, other: &Snapshot) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.decompressed().0 == other.decompressed().0
    }
}

/// One message, borrowed from its [`Snapshot`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Message<'a> {
    pub role: Role,
    pub speaker: Option<&'a str>,
    pub content: &'a str,
    pub ts: u64,
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_optional(out: &mut Vec<u8>, id: Option<&[u8]>) {
    match id {
        Some(id) => {
            put_varint(out, id.len() as u64 + 1);
            out.extend_from_slice(id);
        }
        None => put_varint(out, 0),
    }
}

/// Reads the block front to back; a block is only ever built by [`Snapshot::new`], so reads past
/// its end cannot happen, and would give zeros and empty slices rather than panic.
struct Reader<'a> {
    block: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> u64 {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.block.get(self.at) else {
                break;
            };
            self.at += 1;
            n |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                break;
            }
        }
        n
    }

    fn bytes(&mut self, len: usize) -> &'a [u8] {
        let start = self.at.min(self.block.len());
        self.at = start.saturating_add(len).min(self.block.len());
        &self.block[start..self.at]
    }

    fn optional(&mut self) -> Option<&'a [u8]> {
        match self.varint() {
            0 => None,
            len => Some(self.bytes((len - 1) as usize)),
        }
    }

    fn ids(&mut self) -> Ids<'a> {
        Ids {
            user: self.optional(),
            server: self.optional(),
            channel: self.optional().unwrap_or_default(),
            parent: self.optional(),
        }
    }

    /// One message's head: content length, role, and the speaker's length when it has one.
    fn head(&mut self) -> (usize, Role, Option<usize>) {
        let head = self.varint();
        let role = if head & 2 == 0 {
            Role::User
        } else {
            Role::Model
        };
        let speaker = (head & 1 == 1).then(|| self.varint() as usize);
        ((head >> 2) as usize, role, speaker)
    }

    fn text(&mut self, len: usize) -> &'a str {
        std::str::from_utf8(self.bytes(len)).unwrap_or_default()
    }
}

/// Where a block's count is, and what it says.
struct Count {
    /// Offset of the count's varint.
    at: usize,
    /// Offset of what follows it: the heads, or the compressed heads and texts.
    rest: usize,
    len: usize,
    compressed: bool,
}

impl Default for Snapshot {
    fn default() -> Snapshot {
        Snapshot::new(Ids::default(), [], 0)
    }
}

impl Snapshot {
    /// Packs the ids and the `(role, speaker, content)` items captured at `ts`.
    pub fn new<'a>(
        ids: Ids<'_>,
        items: impl IntoIterator<Item = (Role, Option<&'a str>, &'a str)>,
        ts: u64,
    ) -> Snapshot {
        let items: smallvec::SmallVec<[_; 16]> = items.into_iter().collect();
        let text: usize = items
            .iter()
            .map(|(_, speaker, content)| speaker.map_or(0, str::len) + content.len())
            .sum();
        // Ids, ts and count take at most ~40 bytes past the ids; each head at most 20.
        let ids_len = [ids.user, ids.server, Some(ids.channel), ids.parent]
            .iter()
            .map(|id| id.map_or(0, <[u8]>::len) + 10)
            .sum::<usize>();
        let mut block = Vec::with_capacity(ids_len + 20 + 20 * items.len() + text);
        put_optional(&mut block, ids.user);
        put_optional(&mut block, ids.server);
        put_optional(&mut block, Some(ids.channel));
        put_optional(&mut block, ids.parent);
        put_varint(&mut block, ts);
        put_varint(&mut block, (items.len() as u64) << 1);
        for (role, speaker, content) in &items {
            let role_bit = match role {
                Role::User => 0,
                Role::Model => 2,
            };
            put_varint(
                &mut block,
                (content.len() as u64) << 2 | role_bit | u64::from(speaker.is_some()),
            );
            if let Some(speaker) = speaker {
                put_varint(&mut block, speaker.len() as u64);
            }
        }
        for (_, speaker, content) in &items {
            block.extend_from_slice(speaker.unwrap_or_default().as_bytes());
            block.extend_from_slice(content.as_bytes());
        }
        // Copied once more into the reference-counted block, sized exactly.
        Snapshot(Arc::from(block))
    }

    /// This snapshot's ids and messages with other ids (an entry whose own ids differ from the
    /// capture's keeps its own).
    pub fn with_ids(&self, ids: Ids<'_>) -> Snapshot {
        let plain = self.decompressed();
        let messages: Vec<Message<'_>> = plain.iter().collect();
        Snapshot::new(
            ids,
            messages.iter().map(|m| (m.role, m.speaker, m.content)),
            self.ts(),
        )
    }

    fn reader(&self) -> Reader<'_> {
        Reader {
            block: &self.0,
            at: 0,
        }
    }

    pub fn ids(&self) -> Ids<'_> {
        self.reader().ids()
    }

    /// Reader placed at the capture time, past the ids.
    fn after_ids(&self) -> Reader<'_> {
        let mut reader = self.reader();
        reader.ids();
        reader
    }

    /// Capture time in ms of every message (kept for an empty list too, so DUMP/RESTORE round trip).
    pub fn ts(&self) -> u64 {
        self.after_ids().varint()
    }

    /// Where the count starts and where what follows it starts, the number of messages, and
    /// whether what follows is compressed.
    fn count(&self) -> Count {
        let mut reader = self.after_ids();
        reader.varint();
        let at = reader.at;
        let count = reader.varint();
        Count {
            at,
            rest: reader.at,
            len: (count >> 1) as usize,
            compressed: count & 1 == 1,
        }
    }

    pub fn len(&self) -> usize {
        self.count().len
    }

    /// Whether the heads and texts are compressed (read them through [`Snapshot::decompressed`]).
    pub fn is_compressed(&self) -> bool {
        self.count().compressed
    }

    /// Whether [`Snapshot::compressed`] would try: a plain block with enough text to gain.
    pub fn worth_compressing(&self) -> bool {
        let count = self.count();
        !count.compressed && self.0.len() - count.rest >= MIN_COMPRESSED_TAIL
    }

    /// The same snapshot with its heads and texts compressed, or None when it already is, is
    /// too small to gain, or would not get smaller. Costs a few milliseconds for a ~3 KB block: made for the idle pass, never
    /// for a capture.
    pub fn compressed(&self) -> Option<Snapshot> {
        if !self.worth_compressing() {
            return None;
        }
        let count = self.count();
        let tail = &self.0[count.rest..];
        let params = brotli::enc::BrotliEncoderParams {
            quality: QUALITY,
            lgwin: WINDOW_BITS,
            size_hint: tail.len(),
            ..Default::default()
        };
        let mut block = Vec::with_capacity(count.rest + 10 + tail.len() / 2);
        block.extend_from_slice(&self.0[..count.at]);
        put_varint(&mut block, (count.len as u64) << 1 | 1);
        put_varint(&mut block, tail.len() as u64);
        brotli::BrotliCompress(&mut &tail[..], &mut block, &params).ok()?;
        // Kept only when it saves: a block of random bytes would grow.
        (block.len() < self.0.len()).then(|| Snapshot(Arc::from(block)))
    }

    /// This snapshot with its messages readable: itself when it is not compressed, else a plain
    /// copy (its ids, time and messages are the same).
    pub fn decompressed(&self) -> Cow<'_, Snapshot> {
        let count = self.count();
        if !count.compressed {
            return Cow::Borrowed(self);
        }
        let mut reader = Reader {
            block: &self.0,
            at: count.rest,
        };
        let tail_len = reader.varint() as usize;
        let mut block = Vec::with_capacity(count.rest + tail_len);
        block.extend_from_slice(&self.0[..count.at]);
        put_varint(&mut block, (count.len as u64) << 1);
        let plain_at = block.len();
        if brotli::BrotliDecompress(&mut &self.0[reader.at..], &mut block).is_err()
            || block.len() - plain_at != tail_len
        {
            // Only this module writes compressed blocks, so this cannot happen; were it to, the
            // entry reads as its ids with no messages rather than failing every read.
            let ids = self.ids();
            return Cow::Owned(Snapshot::new(ids, [], self.ts()));
        }
        Cow::Owned(Snapshot(Arc::from(block)))
    }

    /// True when both hold the very same block (entries of one capture, or one compression).
    pub fn same_block(&self, other: &Snapshot) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The block's address: identifies it while a clone of it is held.
    pub fn block_id(&self) -> usize {
        Arc::as_ptr(&self.0).cast::<u8>() as usize
    }

    /// How many entries (and passes) hold this block.
    pub fn holders(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The messages of a plain snapshot (an entry's are read through
    /// [`super::StmEntry::messages`], which decompresses); a compressed one yields none.
    pub fn iter(&self) -> impl Iterator<Item = Message<'_>> + '_ {
        let mut heads = self.after_ids();
        let ts = heads.varint();
        let count = heads.varint();
        debug_assert!(count & 1 == 0, "messages of a compressed block");
        let count = if count & 1 == 0 { count >> 1 } else { 0 } as usize;
        let mut text = Reader {
            block: heads.block,
            at: heads.at,
        };
        for _ in 0..count {
            text.head();
        }
        (0..count).map(move |_| {
            let (content_len, role, speaker_len) = heads.head();
            let speaker = speaker_len.map(|len| text.text(len));
            Message {
                role,
                speaker,
                content: text.text(content_len),
                ts,
            }
        })
    }

    /// Bytes of the block's data.
    pub fn block_len(&self) -> usize {
        self.0.len()
    }

    /// Heap bytes of the block: its data and the two reference counts in front of it (for
    /// `MEMORY USAGE`; shared blocks count in full for each entry, as Redis counts a value).
    pub fn heap_bytes(&self) -> usize {
        self.0.len() + 2 * size_of::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_round_trip_ids_and_messages_in_order() {
        let ids = Ids {
            user: Some(b"u1"),
            server: None,
            channel: b"c\xff1",
            parent: Some(b""),
        };
        let items = [
            (Role::User, Some("Alice"), "héllo 😀"),
            (Role::Model, None, "hi"),
            (Role::Model, Some(""), ""),
        ];
        let packed = Snapshot::new(ids, items, 1 << 40);
        let back: Vec<_> = packed
            .iter()
            .map(|m| (m.role, m.speaker, m.content, m.ts))
            .collect();
        assert_eq!(
            back,
            vec![
                (Role::User, Some("Alice"), "héllo 😀", 1 << 40),
                (Role::Model, None, "hi", 1 << 40),
                (Role::Model, Some(""), "", 1 << 40),
            ]
        );
        assert_eq!(packed.ids(), ids);
        assert_eq!(packed.len(), 3);
        assert_eq!(packed.ts(), 1 << 40);
        let moved = packed.with_ids(Ids::default());
        assert_eq!(moved.ids(), Ids::default());
        assert!(moved.iter().eq(packed.iter()));
        assert!(Snapshot::default().is_empty());
        assert_eq!(Snapshot::default().ts(), 0);
    }

    /// Chat-like English text, different in every message.
    fn prose(i: usize) -> String {
        let words = [
            "the",
            "meeting",
            "moved",
            "to",
            "Thursday",
            "because",
            "half",
            "of",
            "team",
            "is",
            "travelling",
            "could",
            "you",
            "send",
            "notes",
            "before",
            "review",
            "draft",
            "reads",
            "better",
            "but",
            "introduction",
            "still",
            "too",
            "long",
            "ünïcode",
            "☕",
        ];
        (0..50)
            .map(|k| words[(i * 7 + k * k) % words.len()])
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn a_compressed_block_reads_back_the_same_ids_and_messages() {
        let ids = Ids {
            user: Some(b"123456789012345678"),
            server: None,
            channel: b"c\xff1",
            parent: Some(b"p"),
        };
        let texts: Vec<String> = (0..11).map(prose).collect();
        let plain = Snapshot::new(
            ids,
            texts.iter().enumerate().map(|(i, t)| {
                let role = if i == 10 { Role::Model } else { Role::User };
                (role, (i % 3 == 0).then_some("Alice"), t.as_str())
            }),
            1_700_000_000_000,
        );
        assert!(!plain.is_compressed());
        let compressed = plain.compressed().expect("prose compresses");
        assert!(compressed.is_compressed());
        assert!(
            compressed.block_len() * 2 < plain.block_len(),
            "{} → {}",
            plain.block_len(),
            compressed.block_len()
        );
        // Read without decompressing: the ids, the time, the count.
        assert_eq!(compressed.ids(), ids);
        assert_eq!(compressed.ts(), 1_700_000_000_000);
        assert_eq!(compressed.len(), 11);
        assert!(compressed.compressed().is_none(), "compressed once");
        let back = compressed.decompressed();
        assert!(matches!(back, Cow::Owned(_)));
        assert_eq!(back.0, plain.0, "byte for byte the plain block");
        assert_eq!(compressed, plain);
        assert!(matches!(plain.decompressed(), Cow::Borrowed(_)));
        let moved = compressed.with_ids(Ids::default());
        assert!(!moved.is_compressed());
        assert!(moved.iter().eq(plain.iter()));
        assert_eq!(moved.ids(), Ids::default());
    }

    #[test]
    fn small_or_incompressible_blocks_stay_plain() {
        assert!(Snapshot::default().compressed().is_none());
        let short = Snapshot::new(Ids::default(), [(Role::User, None, "hi there")], 1);
        assert!(!short.worth_compressing());
        assert!(short.compressed().is_none());
        // Bytes with no pattern (a xorshift stream) as text: Brotli would only add its framing.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: String = (0..2000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'!' + (x % 94) as u8)
            })
            .collect();
        let noisy = Snapshot::new(Ids::default(), [(Role::User, None, noise.as_str())], 1);
        if let Some(c) = noisy.compressed() {
            assert!(c.block_len() < noisy.block_len());
            assert_eq!(c, noisy);
        }
    }

    #[test]
    fn a_block_holds_the_text_and_little_more() {
        // 10 messages of 300 bytes without speakers, Discord-length ids: a varint head of two
        // bytes per message, the ids with a length byte each, and a few bytes of ts and count.
        let content = "x".repeat(300);
        let ids = Ids {
            user: Some(b"123456789012345678"),
            server: Some(b"223456789012345678"),
            channel: b"323456789012345678",
            parent: None,
        };
        let packed = Snapshot::new(
            ids,
            (0..10).map(|_| (Role::User, None, content.as_str())),
            1_700_000_000_000,
        );
        let ids_bytes = 3 * (1 + 18) + 1;
        let ts_and_count = 6 + 1; // 41 bits of ms: six 7-bit groups
        assert_eq!(
            packed.block_len(),
            10 * 300 + 10 * 2 + ids_bytes + ts_and_count
        );
    }
}
