//! Redis-style glob matching (`*`, `?`, `[abc]`, `[^a-z]`, `\x`) for KEYS, SCAN MATCH and CONFIG GET.

/// True when `text` matches `pattern`. Binary-safe; `nocase` folds ASCII letters.
pub fn matches(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    // Iterative matcher with single-star backtracking: linear in practice, no recursion to blow up.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class(pattern, p, text[t], nocase) {
                        if matched {
                            p = next;
                            t += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if eq(pattern[p + 1], text[t]) {
                        p += 2;
                        t += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, text[t]) {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, st)) => {
                p = sp;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches a `[...]` class starting at `pattern[start]`; returns (matched, index after the class).
fn class(pattern: &[u8], start: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let fold = |x: u8| if nocase { x.to_ascii_lowercase() } else { x };
    let c = fold(c);
    let mut i = start + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    // Like Redis, the end of the pattern closes a class left open.
    while let Some(&cur) = pattern.get(i) {
        if cur == b']' {
            break;
        }
        if cur == b'\\' && i + 1 < pattern.len() {
            matched |= fold(pattern[i + 1]) == c;
            i += 2;
        } else if pattern.get(i + 1) == Some(&b'-')
            && pattern.get(i + 2).is_some_and(|&e| e != b']')
        {
            let (mut lo, mut hi) = (fold(cur), fold(pattern[i + 2]));
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            matched |= (lo..=hi).contains(&c);
            i += 3;
        } else {
            matched |= fold(cur) == c;
            i += 1;
        }
    }
    Some((matched != negate, (i + 1).min(pattern.len())))
}

/// What a glob pattern needs to be matched, sorted once so that the common shapes skip the
/// matcher: ACL compares a request's keys with each of a user's key patterns on every command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// No special character: equal bytes.
    Literal,
    /// `prefix*` with a literal prefix.
    Prefix,
    /// Only stars: anything.
    Any,
    /// Anything else: [`matches`].
    Glob,
}

impl Shape {
    pub fn of(pattern: &[u8]) -> Shape {
        let special = |c: &u8| matches!(c, b'*' | b'?' | b'[' | b'\\');
        if pattern.iter().all(|c| *c == b'*') && !pattern.is_empty() {
            Shape::Any
        } else if !pattern.iter().any(special) {
            Shape::Literal
        } else if pattern.last() == Some(&b'*') && !pattern[..pattern.len() - 1].iter().any(special)
        {
            Shape::Prefix
        } else {
            Shape::Glob
        }
    }

    /// [`matches`] (case-sensitive) for a pattern of this shape.
    #[inline]
    pub fn matches(self, pattern: &[u8], text: &[u8]) -> bool {
        match self {
            Shape::Literal => pattern == text,
            Shape::Prefix => text.starts_with(&pattern[..pattern.len() - 1]),
            Shape::Any => true,
            Shape::Glob => matches(pattern, text, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{matches, Shape};

    #[test]
    fn globs_match_like_redis() {
        let yes: &[(&str, &str)] = &[
            ("*", ""),
            ("*", "anything"),
            ("h?llo", "hello"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("shortterm:user:*", "shortterm:user:1:2"),
            ("a\\*b", "a*b"),
            ("*a*b*", "xxaxxbxx"),
            ("a[b", "ab"),
            ("[abc", "a"),
        ];
        for (p, t) in yes {
            assert!(matches(p.as_bytes(), t.as_bytes(), false), "{p} ~ {t}");
        }
        let no: &[(&str, &str)] = &[
            ("h?llo", "hllo"),
            ("h[^e]llo", "hello"),
            ("h[a-b]llo", "hcllo"),
            ("a\\*b", "axb"),
            ("abc", "abcd"),
            ("[abc", "d"),
        ];
        for (p, t) in no {
            assert!(!matches(p.as_bytes(), t.as_bytes(), false), "{p} !~ {t}");
        }
        assert!(matches(b"SAVE", b"save", true));
    }

    #[test]
    fn shapes_match_as_the_matcher_does() {
        let patterns: [&[u8]; 9] = [
            b"key:*",
            b"mylist",
            b"*",
            b"**",
            b"a?c",
            b"my[sz]et",
            b"k\\*",
            b"",
            b"x*y*",
        ];
        let texts: [&[u8]; 8] = [
            b"key:1", b"key:", b"mylist", b"mylist2", b"abc", b"myset", b"k*", b"",
        ];
        for p in patterns {
            for t in texts {
                assert_eq!(
                    Shape::of(p).matches(p, t),
                    matches(p, t, false),
                    "{p:?} {t:?}"
                );
            }
        }
        assert_eq!(Shape::of(b"key:*"), Shape::Prefix);
        assert_eq!(Shape::of(b"mylist"), Shape::Literal);
        assert_eq!(Shape::of(b"**"), Shape::Any);
        assert_eq!(Shape::of(b"k\\*"), Shape::Glob);
    }
}
