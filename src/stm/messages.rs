//! A capture's messages stored compactly: every speaker and content back to back in one string,
//! with an 8-byte descriptor per message and the capture time once. One allocation for the text
//! instead of one or two per message keeps an entry no larger than Redis lists of the same messages.

use super::Role;

/// The lengths of one message inside [`Messages::text`]; messages lie back to back, so where one
/// starts is where the previous one ends.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span {
    content_len: u32,
    /// [`NO_SPEAKER`]: no speaker.
    speaker_len: u16,
    role: Role,
}

const NO_SPEAKER: u16 = u16::MAX;

/// `s` cut to at most `max` bytes, at a character boundary.
fn at_most(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The messages of one snapshot, oldest first. Immutable: a capture replaces the whole list.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Messages {
    text: Box<str>,
    spans: Box<[Span]>,
    /// Capture time in ms, shared by every message of the snapshot.
    ts: u64,
}

/// One message, borrowed from its [`Messages`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Message<'a> {
    pub role: Role,
    pub speaker: Option<&'a str>,
    pub content: &'a str,
    pub ts: u64,
}

impl Messages {
    /// Packs `(role, speaker, content)` items captured at `ts`. Contents are capped by
    /// `stm-max-content-bytes` and speakers at 256 bytes before they get here, far inside the
    /// 32- and 16-bit lengths; a longer one would be cut, never misplaced.
    pub fn new<'a>(
        items: impl IntoIterator<Item = (Role, Option<&'a str>, &'a str)>,
        ts: u64,
    ) -> Messages {
        let items: smallvec::SmallVec<[_; 16]> = items.into_iter().collect();
        let size = items
            .iter()
            .map(|(_, speaker, content)| speaker.map_or(0, str::len) + content.len())
            .sum();
        // Exact capacities: the boxes below then keep these allocations as they are.
        let mut text = String::with_capacity(size);
        let mut spans = Vec::with_capacity(items.len());
        for (role, speaker, content) in items {
            let speaker_len = match speaker {
                Some(s) => {
                    let s = at_most(s, usize::from(NO_SPEAKER - 1));
                    text.push_str(s);
                    s.len() as u16
                }
                None => NO_SPEAKER,
            };
            let content = at_most(content, u32::MAX as usize);
            text.push_str(content);
            spans.push(Span {
                speaker_len,
                content_len: content.len() as u32,
                role,
            });
        }
        Messages {
            text: text.into_boxed_str(),
            spans: spans.into_boxed_slice(),
            ts,
        }
    }

    /// Capture time in ms of every message (kept for an empty list too, so DUMP/RESTORE round trip).
    pub fn ts(&self) -> u64 {
        self.ts
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = Message<'_>> + '_ {
        let mut next = 0usize;
        self.spans.iter().map(move |span| {
            let start = next;
            let (speaker, content_start) = if span.speaker_len == NO_SPEAKER {
                (None, start)
            } else {
                let end = start + span.speaker_len as usize;
                (self.text.get(start..end), end)
            };
            next = content_start + span.content_len as usize;
            Message {
                role: span.role,
                speaker,
                content: self.text.get(content_start..next).unwrap_or_default(),
                ts: self.ts,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_in_order() {
        let items = [
            (Role::User, Some("Alice"), "héllo 😀"),
            (Role::Model, None, "hi"),
            (Role::Model, Some(""), ""),
        ];
        let packed = Messages::new(items, 42);
        let back: Vec<_> = packed
            .iter()
            .map(|m| (m.role, m.speaker, m.content, m.ts))
            .collect();
        assert_eq!(
            back,
            vec![
                (Role::User, Some("Alice"), "héllo 😀", 42),
                (Role::Model, None, "hi", 42),
                (Role::Model, Some(""), "", 42),
            ]
        );
        assert_eq!(packed.len(), 3);
        assert_eq!(std::mem::size_of::<Span>(), 8);
        let long = "é".repeat(40_000);
        let cut = Messages::new([(Role::User, Some(long.as_str()), "x")], 1);
        let first = cut.iter().next().expect("one message");
        assert_eq!(first.speaker.map(str::len), Some(65_534)); // 2-byte characters: an even cut is a boundary
        assert_eq!(first.content, "x");
        assert!(Messages::default().is_empty());
    }
}
