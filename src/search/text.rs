//! TEXT fields' words: RediSearch's tokenizer (its separator characters, `\` escaping one, case
//! folded) and Snowball stemming (the `rust-stemmers` crate, the Snowball algorithms RediSearch
//! uses too), so a query for `running` finds `runs`.

use rust_stemmers::{Algorithm, Stemmer};

/// RediSearch's separators: whitespace and ASCII punctuation except `_`.
pub fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            ',' | '.'
                | '/'
                | '('
                | ')'
                | '{'
                | '}'
                | '['
                | ']'
                | ':'
                | ';'
                | '~'
                | '!'
                | '@'
                | '#'
                | '$'
                | '%'
                | '^'
                | '&'
                | '*'
                | '-'
                | '='
                | '+'
                | '|'
                | '\''
                | '`'
                | '"'
                | '<'
                | '>'
                | '?'
        )
}

/// [`is_separator`] for ASCII, bit `b` for byte `b` (checked against it by a test).
const ASCII_SEPARATORS: u128 = {
    let mut bits = 0u128;
    // ASCII's Unicode whitespace: tab, line feed, vertical tab, form feed, carriage return, space.
    let listed = b"\t\n\x0b\x0c\r ,./(){}[]:;~!@#$%^&*-=+|'`\"<>?";
    let mut i = 0;
    while i < listed.len() {
        bits |= 1 << listed[i];
        i += 1;
    }
    bits
};

/// The words of `text`, lowercased, in order (`\` keeps the next character in the word).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    each_word(text, &mut String::with_capacity(text.len()), |w| {
        words.push(w.to_string())
    });
    words
}

/// Calls `each` with the words of `text`, lowercased, in order (`\` keeps the next character
/// in the word), each written into `word` (the caller's buffer, reused across words and texts),
/// so that indexing allocates nothing per word.
pub fn each_word(text: &str, word: &mut String, mut each: impl FnMut(&str)) {
    // Most text is ASCII without escapes: a word is then a piece between separator bytes.
    if text.is_ascii() && !text.contains('\\') {
        let mut from = 0;
        for (at, &b) in text.as_bytes().iter().enumerate() {
            if ASCII_SEPARATORS >> b & 1 == 1 {
                if at > from {
                    word.clear();
                    word.push_str(&text[from..at]);
                    word.make_ascii_lowercase();
                    each(word);
                }
                from = at + 1;
            }
        }
        if text.len() > from {
            word.clear();
            word.push_str(&text[from..]);
            word.make_ascii_lowercase();
            each(word);
        }
        return;
    }
    word.clear();
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            word.extend(c.to_lowercase());
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if is_separator(c) {
            if !word.is_empty() {
                each(word);
                word.clear();
            }
        } else {
            word.extend(c.to_lowercase());
        }
    }
    if !word.is_empty() {
        each(word);
    }
}

/// A word as a query names it: unescaped and lowercased.
pub fn fold(word: &str) -> String {
    word.chars()
        .filter(|c| *c != '\\')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The Snowball stemmer of a language name (one of `schema::LANGUAGES`; English otherwise).
pub fn stemmer(language: &str) -> Stemmer {
    let algorithm = match language {
        "arabic" => Algorithm::Arabic,
        "danish" => Algorithm::Danish,
        "dutch" => Algorithm::Dutch,
        "finnish" => Algorithm::Finnish,
        "french" => Algorithm::French,
        "german" => Algorithm::German,
        "greek" => Algorithm::Greek,
        "hungarian" => Algorithm::Hungarian,
        "italian" => Algorithm::Italian,
        "norwegian" => Algorithm::Norwegian,
        "portuguese" => Algorithm::Portuguese,
        "romanian" => Algorithm::Romanian,
        "russian" => Algorithm::Russian,
        "spanish" => Algorithm::Spanish,
        "swedish" => Algorithm::Swedish,
        "tamil" => Algorithm::Tamil,
        "turkish" => Algorithm::Turkish,
        _ => Algorithm::English,
    };
    Stemmer::create(algorithm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_punctuation_and_fold_case() {
        assert_eq!(
            tokenize("Hello, World! foo-bar a_b"),
            ["hello", "world", "foo", "bar", "a_b"]
        );
        assert_eq!(tokenize(r"foo\-bar  x"), ["foo-bar", "x"]);
        assert!(tokenize(" ,.;").is_empty());
        // The ASCII shortcut and the general loop split alike.
        assert_eq!(
            tokenize("Ünï Hello,World\tx\u{b}y"),
            ["ünï", "hello", "world", "x", "y"]
        );
        assert_eq!(
            tokenize("Hello,World\tx\u{b}y"),
            ["hello", "world", "x", "y"]
        );
    }

    #[test]
    fn the_ascii_table_is_the_separator_list() {
        for b in 0u8..128 {
            assert_eq!(
                ASCII_SEPARATORS >> b & 1 == 1,
                is_separator(b as char),
                "byte {b:#x}"
            );
        }
    }

    #[test]
    fn english_stems_inflections_together() {
        let s = stemmer("english");
        assert_eq!(s.stem("running"), s.stem("runs"));
        assert_eq!(s.stem("running"), "run");
    }
}
