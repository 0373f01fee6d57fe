//! An STM entry seen as a search document (`FT.CREATE … ON STM`): the fields an index over
//! `stm` keys can name, each a text made from the entry. The schema is documented in
//! docs/stm.md ("Searching STM entries").

use crate::stm::{Role, StmEntry};

/// The fields an STM entry gives, in the order `FT.SEARCH` returns them.
pub const FIELDS: [&str; 16] = [
    "scope",
    "user",
    "server",
    "channel",
    "parent",
    "persona",
    "lineage",
    "text",
    "user_text",
    "model_text",
    "speakers",
    "summary",
    "categories",
    "updated",
    "messages",
    "turns",
];

/// True when `name` is one of [`FIELDS`].
pub fn is_field(name: &str) -> bool {
    FIELDS.contains(&name)
}

/// The entry's fields and their texts; a field the entry has no value for (the user of a server
/// scope, the server of a direct message, no summary…) is left out.
pub fn fields(entry: &StmEntry) -> Vec<(&'static str, String)> {
    let text = |s: &[u8]| String::from_utf8_lossy(s).into_owned();
    let plain = entry.messages();
    let messages = |role: Option<Role>| {
        plain
            .iter()
            .filter(|m| role.is_none_or(|r| m.role == r))
            .map(|m| m.content)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut speakers: Vec<&str> = Vec::new();
    for m in plain.iter() {
        if let Some(s) = m.speaker.filter(|s| !speakers.contains(s)) {
            speakers.push(s);
        }
    }
    let categories: Vec<&str> = entry
        .categories()
        .iter()
        .map(|(slug, _)| slug.as_str())
        .collect();
    let mut out = vec![("scope", entry.scope.as_str().to_string())];
    out.extend(entry.user().map(|u| ("user", text(u))));
    out.extend(entry.server().map(|s| ("server", text(s))));
    out.push(("channel", text(entry.channel())));
    out.extend(entry.parent().map(|p| ("parent", text(p))));
    out.push(("persona", entry.persona().unwrap_or(0).to_string()));
    out.extend(entry.lineage.map(|l| ("lineage", l.to_string())));
    out.push(("text", messages(None)));
    out.push(("user_text", messages(Some(Role::User))));
    out.push(("model_text", messages(Some(Role::Model))));
    if !speakers.is_empty() {
        out.push(("speakers", speakers.join(",")));
    }
    out.extend(entry.summary().map(|s| ("summary", s.to_string())));
    if !categories.is_empty() {
        out.push(("categories", categories.join(",")));
    }
    out.push(("updated", entry.last_updated.to_string()));
    out.push(("messages", entry.messages().len().to_string()));
    out.push(("turns", entry.turns_since_refresh.to_string()));
    out
}
