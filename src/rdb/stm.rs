//! Our own value type: an STM entry, after the type byte [`super::types::STM`].
//!
//! Layout (format 1): a format byte, then every field of [`StmEntry`] in declaration order, with
//! Redis's length and string encodings; optional fields carry a 0/1 presence byte, fixed-width
//! numbers are little-endian. The format byte lets a later stmd read payloads of this one.

use super::decode::RdbReader;
use super::encode::{put_len, put_string};
use super::RdbError;
use crate::stm::{Distilled, Ids, Role, Scope, ScopeKey, Snapshot, StmEntry};
use bytes::Bytes;

const FORMAT: u8 = 1;

pub fn encode(out: &mut Vec<u8>, entry: &StmEntry) {
    out.push(FORMAT);
    out.push(match entry.scope {
        Scope::User => 0,
        Scope::Server => 1,
    });
    put_optional(out, entry.user());
    put_optional(out, entry.server());
    put_string(out, entry.channel());
    put_optional(out, entry.parent());
    match entry.persona() {
        Some(persona) => {
            out.push(1);
            out.extend_from_slice(&persona.to_le_bytes());
        }
        None => out.push(0),
    }
    match entry.lineage {
        Some(lineage) => {
            out.push(1);
            out.extend_from_slice(&lineage.to_le_bytes());
        }
        None => out.push(0),
    }
    let messages = entry.messages();
    out.extend_from_slice(&messages.ts().to_le_bytes());
    put_len(out, messages.len() as u64);
    for message in messages.iter() {
        out.push(match message.role {
            Role::User => 0,
            Role::Model => 1,
        });
        put_optional(out, message.speaker.map(str::as_bytes));
        put_string(out, message.content.as_bytes());
    }
    put_optional(out, entry.summary().map(str::as_bytes));
    put_len(out, entry.categories().len() as u64);
    for (slug, text) in entry.categories() {
        put_string(out, slug.as_bytes());
        put_string(out, text.as_bytes());
    }
    for number in [
        entry.turns_since_refresh as u64,
        entry.last_refreshed_turn() as u64,
        entry.last_updated,
        entry.write_seq,
    ] {
        out.extend_from_slice(&number.to_le_bytes());
    }
}

fn put_optional(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        Some(v) => {
            out.push(1);
            put_string(out, v);
        }
        None => out.push(0),
    }
}

pub fn decode(r: &mut RdbReader<'_>) -> Result<StmEntry, RdbError> {
    if r.byte()? != FORMAT {
        return Err(RdbError::BadData);
    }
    let scope = match r.byte()? {
        0 => Scope::User,
        1 => Scope::Server,
        _ => return Err(RdbError::BadData),
    };
    let user = optional(r)?;
    let server = optional(r)?;
    let channel = r.string()?;
    let parent = optional(r)?;
    let persona = present(r)?.then(|| u64_le(r)).transpose()?;
    let lineage = present(r)?
        .then(|| u64_le(r).map(|v| v as i64))
        .transpose()?;
    let ts = u64_le(r)?;
    let count = r.len()?;
    let mut items: Vec<(Role, Option<String>, String)> = Vec::new();
    for _ in 0..count {
        let role = match r.byte()? {
            0 => Role::User,
            1 => Role::Model,
            _ => return Err(RdbError::BadData),
        };
        let speaker = optional(r)?.map(text).transpose()?;
        let content = text(r.string()?)?;
        items.push((role, speaker, content));
    }
    let ids = Ids {
        user: user.as_deref(),
        server: server.as_deref(),
        channel: &channel,
        parent: parent.as_deref(),
    };
    let snapshot = Snapshot::new(
        ids,
        items
            .iter()
            .map(|(role, speaker, content)| (*role, speaker.as_deref(), content.as_str())),
        ts,
    );
    let scope_key = ScopeKey {
        scope,
        user,
        server,
        channel,
        persona,
    };
    let mut entry = StmEntry::new(&scope_key, 0);
    entry.set_snapshot(&snapshot);
    entry.lineage = lineage;
    let summary = optional(r)?.map(text).transpose()?;
    let categories = (0..r.len()?)
        .map(|_| Ok((text(r.string()?)?, text(r.string()?)?)))
        .collect::<Result<Vec<_>, RdbError>>()?;
    entry.turns_since_refresh = u64_le(r)? as i64;
    entry.set_distilled(Distilled {
        summary,
        categories,
        last_refreshed_turn: u64_le(r)? as i64,
    });
    entry.last_updated = u64_le(r)?;
    entry.write_seq = u64_le(r)?;
    Ok(entry)
}

fn present(r: &mut RdbReader<'_>) -> Result<bool, RdbError> {
    match r.byte()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(RdbError::BadData),
    }
}

fn optional(r: &mut RdbReader<'_>) -> Result<Option<Bytes>, RdbError> {
    present(r)?.then(|| r.string()).transpose()
}

fn u64_le(r: &mut RdbReader<'_>) -> Result<u64, RdbError> {
    Ok(u64::from_le_bytes(
        r.take(8)?.try_into().map_err(|_| RdbError::BadData)?,
    ))
}

/// STM text fields are UTF-8 (the capture pipeline guarantees it); a payload that breaks that
/// is corrupt.
fn text(bytes: Bytes) -> Result<String, RdbError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| RdbError::BadData)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::stm::ScopeKey;

    pub(in crate::rdb) fn sample_entry() -> StmEntry {
        let scope = ScopeKey {
            scope: Scope::User,
            user: Some(Bytes::from_static(b"u1")),
            server: Some(Bytes::from_static(b"s1")),
            channel: Bytes::from_static(b"c1"),
            persona: Some(7),
        };
        let mut entry = StmEntry::new(&scope, 1_700_000_000_123);
        entry.lineage = Some(-3);
        let ids = Ids {
            user: Some(b"u1"),
            server: Some(b"s1"),
            channel: b"c1",
            parent: Some(b"p"),
        };
        entry.set_snapshot(&Snapshot::new(
            ids,
            [
                (Role::User, Some("Alice"), "héllo 😀 ".repeat(10).as_str()),
                (Role::Model, None, "12"),
            ]
            .iter()
            .map(|(r, s, c)| (*r, *s, *c)),
            1_700_000_000_000,
        ));
        entry.set_distilled(Distilled {
            summary: Some("talked about tea".into()),
            categories: vec![("food".into(), "tea".into())],
            last_refreshed_turn: 2,
        });
        entry.turns_since_refresh = 4;
        entry.write_seq = 99;
        entry
    }

    #[test]
    fn entries_round_trip_exactly() {
        let entry = sample_entry();
        let mut out = Vec::new();
        encode(&mut out, &entry);
        let back = decode(&mut RdbReader::new(&out)).expect("valid");
        assert_eq!(back, entry);
        for cut in 0..out.len() {
            assert!(decode(&mut RdbReader::new(&out[..cut])).is_err());
        }
    }
}
