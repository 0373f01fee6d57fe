//! STM.CONTEXT's text: the prompt blocks the bot's `buildShortTermMemoryContext` used to assemble,
//! rendered from entries. Pure functions, so every wording rule is unit-tested without a server;
//! which entries are shown is the command's business (`commands/stm_context.rs`).

use super::{Role, StmEntry};
use std::fmt::Write;

/// What an other-channel block shows after an entry's distilled memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Categories, else the summary, else the crude lines: distilled memory supersedes raw text.
    Supersede,
    /// Distilled memory followed by the crude lines of the entry's messages.
    CrudeSummary,
}

/// The rendering options of one STM.CONTEXT call.
#[derive(Clone, Copy, Debug)]
pub struct Style<'a> {
    /// How the bot calls itself in the blocks (`BOT`).
    pub bot: &'a str,
    /// Newest messages shown as crude lines (`CRUDE`).
    pub crude: usize,
    pub mode: Mode,
}

const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;
const WEEK: u64 = 7 * DAY;

/// `just now`, `N minute(s) ago`, `N hour(s) ago`, `N day(s) ago` or `over a week ago` for an age
/// in ms; each count rounds down, and 1 takes the singular.
pub fn relative_time(age_ms: u64) -> String {
    let (count, unit) = match age_ms {
        a if a < MINUTE => return "just now".to_string(),
        a if a < HOUR => (a / MINUTE, "minute"),
        a if a < DAY => (a / HOUR, "hour"),
        a if a < WEEK => (a / DAY, "day"),
        _ => return "over a week ago".to_string(),
    };
    let plural = if count == 1 { "" } else { "s" };
    format!("{count} {unit}{plural} ago")
}

/// The categories as `slug: text` lines (slug order), else the summary; None without either.
pub fn distilled(entry: &StmEntry) -> Option<String> {
    if !entry.categories().is_empty() {
        let lines: Vec<String> = entry
            .categories()
            .iter()
            .map(|(slug, text)| format!("{slug}: {text}"))
            .collect();
        return Some(lines.join("\n"));
    }
    entry.summary().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// The newest `style.crude` messages, oldest of them first, as `Speaker: "content"` lines;
/// None when there are none. Content is shown as stored (not escaped).
pub fn crude_lines(entry: &StmEntry, style: &Style) -> Option<String> {
    let skip = entry.messages().len().saturating_sub(style.crude);
    let mut out = String::new();
    for message in entry.messages().iter().skip(skip) {
        let speaker = message.speaker.unwrap_or(match message.role {
            Role::User => "Someone",
            Role::Model => style.bot,
        });
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = write!(out, "{speaker}: \"{}\"", message.content);
    }
    (!out.is_empty()).then_some(out)
}

/// What an other-channel block says about `entry`, by mode; None when it has nothing to show.
fn other_content(entry: &StmEntry, style: &Style) -> Option<String> {
    let crude = || crude_lines(entry, style);
    match (distilled(entry), style.mode) {
        (None, _) => crude(),
        (Some(memory), Mode::Supersede) => Some(memory),
        (Some(memory), Mode::CrudeSummary) => Some(match crude() {
            Some(lines) => format!(
                "{memory}\nRecent raw messages from <#{}>:\n{lines}",
                String::from_utf8_lossy(entry.channel())
            ),
            None => memory,
        }),
    }
}

/// The block for an entry of another channel, written `now_ms` at the caller's clock; None when
/// the entry has nothing to show (no distilled memory and no crude line).
pub fn other_channel_block(entry: &StmEntry, style: &Style, now_ms: u64) -> Option<String> {
    let content = other_content(entry, style)?;
    Some(format!(
        "[System: {} remembers a recent conversation in <#{}> ({}):\n{content}]",
        style.bot,
        String::from_utf8_lossy(entry.channel()),
        relative_time(now_ms.saturating_sub(entry.last_updated)),
    ))
}

/// The block for this conversation's own entry: only its distilled memory (its raw messages are
/// already in the prompt); None without any.
pub fn live_block(entry: &StmEntry, style: &Style) -> Option<String> {
    let memory = distilled(entry)?;
    Some(format!(
        "[System: {}'s short term memory for this ongoing conversation:\n{memory}]",
        style.bot
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stm::{Ids, Scope, ScopeKey, Snapshot};
    use bytes::Bytes;

    fn entry(messages: &[(Role, Option<&str>, &str)]) -> StmEntry {
        let scope = ScopeKey {
            scope: Scope::Server,
            user: None,
            server: Some(Bytes::from_static(b"s1")),
            channel: Bytes::from_static(b"c9"),
            persona: None,
        };
        let mut e = StmEntry::new(&scope, 1_000);
        e.set_snapshot(&Snapshot::new(
            Ids::default(),
            messages.iter().copied(),
            1_000,
        ));
        e
    }

    const STYLE: Style = Style {
        bot: "Nova",
        crude: 6,
        mode: Mode::Supersede,
    };

    #[test]
    fn relative_times_round_down_and_take_the_singular_for_one() {
        let cases = [
            (0, "just now"),
            (MINUTE - 1, "just now"),
            (MINUTE, "1 minute ago"),
            (2 * MINUTE - 1, "1 minute ago"),
            (59 * MINUTE, "59 minutes ago"),
            (HOUR, "1 hour ago"),
            (23 * HOUR + 59 * MINUTE, "23 hours ago"),
            (DAY, "1 day ago"),
            (6 * DAY + 23 * HOUR, "6 days ago"),
            (WEEK, "over a week ago"),
            (u64::MAX, "over a week ago"),
        ];
        for (age, want) in cases {
            assert_eq!(relative_time(age), want, "age {age} ms");
        }
    }

    #[test]
    fn crude_lines_name_missing_speakers_and_keep_the_newest() {
        let e = entry(&[
            (Role::User, Some("Old"), "dropped"),
            (Role::User, None, "hi \"there\""),
            (Role::Model, None, "hello"),
            (Role::Model, Some("Echo"), "yo"),
        ]);
        let style = Style { crude: 3, ..STYLE };
        assert_eq!(
            crude_lines(&e, &style).as_deref(),
            Some("Someone: \"hi \"there\"\"\nNova: \"hello\"\nEcho: \"yo\"")
        );
        assert_eq!(crude_lines(&e, &Style { crude: 0, ..STYLE }), None);
    }

    #[test]
    fn categories_supersede_the_summary_which_supersedes_crude_lines() {
        let mut e = entry(&[(Role::User, Some("Al"), "hi")]);
        let block = |e: &StmEntry, style: &Style| other_channel_block(e, style, 1_000 + HOUR);
        assert_eq!(
            block(&e, &STYLE).as_deref(),
            Some(
                "[System: Nova remembers a recent conversation in <#c9> (1 hour ago):\nAl: \"hi\"]"
            )
        );
        e.distilled_mut().summary = Some("They met.".into());
        assert_eq!(
            block(&e, &STYLE).as_deref(),
            Some(
                "[System: Nova remembers a recent conversation in <#c9> (1 hour ago):\nThey met.]"
            )
        );
        e.distilled_mut().categories = vec![("a".into(), "one".into()), ("b".into(), "two".into())];
        assert_eq!(
            live_block(&e, &STYLE).as_deref(),
            Some(
                "[System: Nova's short term memory for this ongoing conversation:\na: one\nb: two]"
            )
        );
        let both = Style {
            mode: Mode::CrudeSummary,
            ..STYLE
        };
        assert_eq!(
            block(&e, &both).as_deref(),
            Some("[System: Nova remembers a recent conversation in <#c9> (1 hour ago):\na: one\nb: two\nRecent raw messages from <#c9>:\nAl: \"hi\"]")
        );
        e.set_snapshot(&Snapshot::default());
        assert_eq!(
            block(&e, &both).as_deref(),
            Some("[System: Nova remembers a recent conversation in <#c9> (1 hour ago):\na: one\nb: two]")
        );
        e.set_distilled(Default::default());
        assert_eq!(block(&e, &STYLE), None);
        assert_eq!(live_block(&e, &STYLE), None);
    }
}
