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

/// The words of `text`, lowercased, in order (`\` keeps the next character in the word).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            word.extend(c.to_lowercase());
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if is_separator(c) {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        } else {
            word.extend(c.to_lowercase());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
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
    }

    #[test]
    fn english_stems_inflections_together() {
        let s = stemmer("english");
        assert_eq!(s.stem("running"), s.stem("runs"));
        assert_eq!(s.stem("running"), "run");
    }
}
