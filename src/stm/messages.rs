//! A capture's messages stored compactly: every speaker and content back to back in one string,
//! with a 16-byte descriptor per message and the capture time once. One allocation for the text
//! instead of one or two per message keeps an entry no larger than Redis lists of the same messages.

use super::Role;

/// Where one message lives inside [`Messages::text`].
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span {
    start: u32,
    /// `u32::MAX`: no speaker.
    speaker_len: u32,
    content_len: u32,
    role: Role,
}

const NO_SPEAKER: u32 = u32::MAX;

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
    /// Packs `(role, speaker, content)` items captured at `ts`. Items too large for 32-bit offsets
    /// cannot occur: contents are capped by `stm-max-content-bytes` and counts by `stm-max-items`.
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
            let start = text.len() as u32;
            let speaker_len = match speaker {
                Some(s) => {
                    text.push_str(s);
                    s.len() as u32
                }
                None => NO_SPEAKER,
            };
            text.push_str(content);
            spans.push(Span {
                start,
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

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = Message<'_>> + '_ {
        self.spans.iter().map(move |span| {
            let start = span.start as usize;
            let (speaker, content_start) = if span.speaker_len == NO_SPEAKER {
                (None, start)
            } else {
                let end = start + span.speaker_len as usize;
                (self.text.get(start..end), end)
            };
            Message {
                role: span.role,
                speaker,
                content: self
                    .text
                    .get(content_start..content_start + span.content_len as usize)
                    .unwrap_or_default(),
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
        assert!(Messages::default().is_empty());
    }
}
