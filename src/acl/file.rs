//! The ACL file: one `user <name> <rule> …` line per user, as ACL LIST prints them. Loading is
//! all-or-nothing (an error names the line); saving writes a temporary file then renames it.

use super::rules::{merge_selector_args, User};
use crate::config::values::ChannelDefault;
use std::path::Path;

/// Parses a whole ACL file, under the server's `acl-pubsub-default` (`channels`). The error is
/// Redis's text, naming the line.
pub fn parse(text: &str, channels: ChannelDefault) -> Result<Vec<User>, String> {
    let mut users: Vec<User> = Vec::new();
    let mut errors = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let lineno = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words[0] != "user" || words.len() < 2 {
            errors.push(format!(
                "/{lineno}: should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = words[1];
        if users.iter().any(|u| u.name == name.as_bytes()) {
            errors.push(format!("/{lineno}: Duplicate user '{name}' found. "));
            continue;
        }
        let args: Vec<&[u8]> = words[2..].iter().map(|w| w.as_bytes()).collect();
        let rules = match merge_selector_args(&args) {
            Ok(rules) => rules,
            Err(e) => {
                errors.push(format!("/{lineno}: {e}. "));
                continue;
            }
        };
        let mut user = User::new(name.as_bytes(), channels);
        let mut bad = None;
        for rule in &rules {
            if let Err(e) = user.apply(rule, channels) {
                bad = Some(format!(
                    "/{lineno}: Error in applying operation '{}': {}. ",
                    String::from_utf8_lossy(rule),
                    e.text()
                ));
                break;
            }
        }
        if let Some(e) = bad {
            errors.push(e);
            continue;
        }
        user.refresh();
        users.push(user);
    }
    if !errors.is_empty() {
        return Err(errors.concat().trim_end().to_string());
    }
    Ok(users)
}

/// Reads and parses the ACL file at `path`; the error names the file and the line.
pub fn load(path: &Path, channels: ChannelDefault) -> Result<Vec<User>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{}': {e}", path.display()))?;
    parse(&text, channels).map_err(|e| format!("{}{e}", path.display()))
}

/// Writes `users` to `path` atomically (a temporary file in the same directory, then rename).
pub fn save(path: &Path, users: &[std::sync::Arc<User>]) -> std::io::Result<()> {
    let mut text = String::new();
    for user in users {
        text.push_str(&user.describe());
        text.push('\n');
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    {
        use std::io::Write;
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_names_bad_lines() {
        let users = parse("user default on nopass ~* &* +@all\n\nuser bot on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~a* (+get ~b*) -@all +@stm\n", ChannelDefault::Reset).unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(
            users[1].describe(),
            "user bot on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~a* resetchannels -@all +@stm (~b* resetchannels -@all +get)"
        );
        let err = parse("user a on\nuser b +nosuch\n", ChannelDefault::Reset).unwrap_err();
        assert_eq!(
            err,
            "/2: Error in applying operation '+nosuch': Unknown command or category name in ACL."
        );
        assert!(parse("bogus\n", ChannelDefault::Reset)
            .unwrap_err()
            .starts_with("/1: "));
    }
}
