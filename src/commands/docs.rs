//! COMMAND DOCS argument trees, derived from each command's `syntax` line in the table (Redis's
//! documentation notation: `key value [NX | XX] [EX seconds | PX milliseconds] [key ...]`).
//! redis-cli builds its interactive hints from these trees.

use crate::protocol::Reply;

/// One argument of a command, as COMMAND DOCS describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub name: String,
    pub kind: Kind,
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Key,
    String,
    Integer,
    PureToken,
    OneOf(Vec<Arg>),
    Block(Vec<Arg>),
}

/// The raw shape of the notation before it becomes arguments.
#[derive(Clone, Debug, PartialEq)]
enum Item {
    Word(String),
    Token(String),
    /// `[…]` (optional) or `<…>` (required), with its `|` alternatives.
    Group {
        optional: bool,
        alternatives: Vec<Vec<Item>>,
    },
    Ellipsis,
}

fn is_token(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_uppercase())
        && word.chars().all(|c| {
            c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-' || c == '_' || c == '.'
        })
}

/// Splits the notation into words and brackets.
fn lex(syntax: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in syntax.chars() {
        match c {
            '[' | ']' | '<' | '>' | '|' => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                out.push(c.to_string());
            }
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Parses alternatives up to the closing bracket `close` (or the end).
fn parse_alternatives(words: &[String], pos: &mut usize, close: Option<&str>) -> Vec<Vec<Item>> {
    let mut alternatives = vec![Vec::new()];
    while let Some(word) = words.get(*pos) {
        *pos += 1;
        let current = alternatives.last_mut().expect("at least one alternative");
        match word.as_str() {
            w if Some(w) == close => break,
            "|" => alternatives.push(Vec::new()),
            "[" | "<" => {
                let optional = word == "[";
                let inner = parse_alternatives(words, pos, Some(if optional { "]" } else { ">" }));
                current.push(Item::Group {
                    optional,
                    alternatives: inner,
                });
            }
            "..." => current.push(Item::Ellipsis),
            w if is_token(w) => current.push(Item::Token(w.to_string())),
            w => current.push(Item::Word(w.to_string())),
        }
    }
    alternatives
}

fn value_arg(name: &str) -> Arg {
    let kind = if matches!(
        name,
        "seconds"
            | "milliseconds"
            | "count"
            | "offset"
            | "len"
            | "start"
            | "end"
            | "index"
            | "increment"
            | "decrement"
            | "cursor"
            | "timeout"
            | "numkeys"
            | "numids"
            | "limit"
            | "unix-time-seconds"
            | "unix-time-milliseconds"
            | "protover"
            | "client-id"
    ) {
        Kind::Integer
    } else if name.contains("key") {
        Kind::Key
    } else {
        Kind::String
    };
    Arg {
        name: name.to_string(),
        kind,
        token: None,
        optional: false,
        multiple: false,
    }
}

/// A group's content: one argument, a block, or a one-of.
fn group_arg(alternatives: &[Vec<Item>], optional: bool) -> Option<Arg> {
    let mut options: Vec<Arg> = alternatives
        .iter()
        .filter_map(|alt| {
            let mut args = convert(alt);
            match args.len() {
                0 => None,
                1 => args.pop(),
                _ => Some(Arg {
                    name: args[0]
                        .token
                        .clone()
                        .unwrap_or_else(|| args[0].name.clone())
                        .to_lowercase(),
                    kind: Kind::Block(args),
                    token: None,
                    optional: false,
                    multiple: false,
                }),
            }
        })
        .collect();
    let mut arg = match options.len() {
        0 => return None,
        1 => options.pop()?,
        _ => Arg {
            name: options
                .iter()
                .map(|o| o.name.clone())
                .collect::<Vec<_>>()
                .join("-"),
            kind: Kind::OneOf(options),
            token: None,
            optional: false,
            multiple: false,
        },
    };
    arg.optional |= optional;
    Some(arg)
}

/// Turns a sequence of items into arguments, attaching tokens to their values.
fn convert(items: &[Item]) -> Vec<Arg> {
    let mut args: Vec<Arg> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        match &items[i] {
            Item::Ellipsis => {
                if let Some(last) = args.last_mut() {
                    last.multiple = true;
                }
            }
            Item::Word(w) => args.push(value_arg(w)),
            Item::Group {
                optional,
                alternatives,
            } => {
                // `x [x ...]` is one argument that repeats.
                let repeats = alternatives.len() == 1
                    && alternatives[0].last() == Some(&Item::Ellipsis)
                    && args.last().is_some_and(|prev| {
                        let first = alternatives[0].first();
                        first == Some(&Item::Word(prev.name.clone()))
                            || prev
                                .token
                                .as_ref()
                                .is_some_and(|t| first == Some(&Item::Token(t.clone())))
                    });
                if repeats {
                    if let Some(prev) = args.last_mut() {
                        prev.multiple = true;
                    }
                } else if let Some(arg) = group_arg(alternatives, *optional) {
                    args.push(arg);
                }
            }
            Item::Token(t) => {
                let mut values = Vec::new();
                while let Some(next) = items.get(i + 1) {
                    match next {
                        Item::Word(_)
                        | Item::Group {
                            optional: false, ..
                        } => {
                            values.push(next.clone());
                            i += 1;
                        }
                        // `TOKEN n id [id ...]`: the repetition stays in the token's block, as
                        // Redis documents XDELEX's `IDS numids id [id ...]` and XREAD's
                        // `STREAMS key [key ...] id [id ...]`.
                        Item::Group {
                            optional: true,
                            alternatives,
                        } if alternatives.len() == 1
                            && alternatives[0].last() == Some(&Item::Ellipsis)
                            && values.last().is_some()
                            && alternatives[0].first() == values.last() =>
                        {
                            values.push(next.clone());
                            i += 1;
                        }
                        _ => break,
                    }
                }
                let mut inner = convert(&values);
                let arg = match inner.len() {
                    0 => Arg {
                        name: t.to_lowercase(),
                        kind: Kind::PureToken,
                        token: Some(t.clone()),
                        optional: false,
                        multiple: false,
                    },
                    1 => {
                        let mut value = inner.remove(0);
                        value.token = Some(t.clone());
                        value
                    }
                    _ => Arg {
                        name: t.to_lowercase(),
                        kind: Kind::Block(inner),
                        token: Some(t.clone()),
                        optional: false,
                        multiple: false,
                    },
                };
                args.push(arg);
            }
        }
        i += 1;
    }
    args
}

/// The argument tree of a syntax line.
pub fn parse(syntax: &str) -> Vec<Arg> {
    let words = lex(syntax);
    let mut pos = 0;
    let alternatives = parse_alternatives(&words, &mut pos, None);
    if alternatives.len() > 1 {
        // A container's subcommands: one required choice.
        return group_arg(&alternatives, false).into_iter().collect();
    }
    convert(&alternatives[0])
}

/// The COMMAND DOCS `arguments` array. Flags are simple strings: redis-cli asserts that.
pub fn render(args: &[Arg]) -> Reply {
    render_with_keys(args, 0)
}

/// The `arguments` array of a command with `key_specs` key specs: each key argument gets the
/// `key_spec_index` of the spec that finds it, counting key arguments in order (`destination key
/// [key ...]` → 0, 1), the last spec covering any further ones.
pub fn render_with_keys(args: &[Arg], key_specs: usize) -> Reply {
    render_numbered(args, key_specs, &mut 0)
}

fn render_numbered(args: &[Arg], key_specs: usize, next_key: &mut usize) -> Reply {
    let text = |s: &str| Reply::bulk(s.as_bytes());
    Reply::Array(
        args.iter()
            .map(|arg| {
                let kind = match &arg.kind {
                    Kind::Key => "key",
                    Kind::String => "string",
                    Kind::Integer => "integer",
                    Kind::PureToken => "pure-token",
                    Kind::OneOf(_) => "oneof",
                    Kind::Block(_) => "block",
                };
                let mut fields = vec![(text("name"), text(&arg.name)), (text("type"), text(kind))];
                if matches!(arg.kind, Kind::Key) && key_specs > 0 {
                    let index = (*next_key).min(key_specs - 1);
                    *next_key += 1;
                    fields.push((text("key_spec_index"), Reply::Int(index as i64)));
                }
                if let Some(token) = &arg.token {
                    fields.push((text("token"), text(token)));
                }
                let mut flags = Vec::new();
                if arg.optional {
                    flags.push(Reply::Status("optional".into()));
                }
                if arg.multiple {
                    flags.push(Reply::Status("multiple".into()));
                }
                if !flags.is_empty() {
                    fields.push((text("flags"), Reply::Set(flags)));
                }
                if let Kind::OneOf(inner) | Kind::Block(inner) = &arg.kind {
                    fields.push((
                        text("arguments"),
                        render_numbered(inner, key_specs, next_key),
                    ));
                }
                Reply::Map(fields)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders a tree back in the notation redis-cli shows as a hint.
    fn hint(args: &[Arg]) -> String {
        args.iter()
            .map(|a| {
                let body = match &a.kind {
                    Kind::PureToken => a.token.clone().unwrap_or_default(),
                    Kind::OneOf(inner) => inner
                        .iter()
                        .map(|i| hint(std::slice::from_ref(i)))
                        .collect::<Vec<_>>()
                        .join("|"),
                    Kind::Block(inner) => {
                        let inner = hint(inner);
                        a.token
                            .as_ref()
                            .map_or(inner.clone(), |t| format!("{t} {inner}"))
                    }
                    _ => a
                        .token
                        .as_ref()
                        .map_or(a.name.clone(), |t| format!("{t} {}", a.name)),
                };
                let body = if a.multiple {
                    format!("{body} [{body} ...]")
                } else {
                    body
                };
                if a.optional {
                    format!("[{body}]")
                } else {
                    body
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn set_parses_like_redis_documents_it() {
        let args = parse("key value [NX | XX] [GET] [EX seconds | PX milliseconds | KEEPTTL]");
        assert_eq!(args[0].kind, Kind::Key);
        assert_eq!(args[2].name, "nx-xx");
        assert!(
            matches!(&args[2].kind, Kind::OneOf(o) if o.len() == 2 && o[0].kind == Kind::PureToken)
        );
        assert!(args[2].optional);
        assert_eq!(args[3].token.as_deref(), Some("GET"));
        let Kind::OneOf(expiry) = &args[4].kind else {
            panic!("oneof")
        };
        assert_eq!(expiry[0].token.as_deref(), Some("EX"));
        assert_eq!(expiry[0].kind, Kind::Integer);
        assert_eq!(
            hint(&args),
            "key value [NX|XX] [GET] [EX seconds|PX milliseconds|KEEPTTL]"
        );
    }

    #[test]
    fn repeated_arguments_become_multiple() {
        let args = parse("key [key ...]");
        assert_eq!(args.len(), 1);
        assert!(args[0].multiple);
        let args = parse("key value [key value ...]");
        assert_eq!(args.len(), 3, "a repeated pair stays a group: {args:?}");
    }

    #[test]
    fn tokens_with_several_values_become_blocks() {
        let args = parse("USER user-id [MSG <user | model> <speaker | -> content [MSG ...]]");
        assert_eq!(args[0].token.as_deref(), Some("USER"));
        assert_eq!(args[0].name, "user-id");
        assert!(args[1].optional);
        let Kind::Block(inner) = &args[1].kind else {
            panic!("block: {:?}", args[1])
        };
        assert!(matches!(inner[0].kind, Kind::OneOf(_)));
        assert!(
            args[1].multiple,
            "the trailing [MSG ...] marks the block as repeating"
        );
    }

    #[test]
    fn a_counted_list_after_a_token_is_one_block() {
        let args = parse("key [KEEPREF | DELREF | ACKED] IDS numids id [id ...]");
        assert_eq!(args.len(), 3);
        assert!(args[1].optional);
        let Kind::Block(ids) = &args[2].kind else {
            panic!("block: {:?}", args[2])
        };
        assert_eq!(args[2].token.as_deref(), Some("IDS"));
        assert_eq!(
            (ids[0].name.as_str(), &ids[0].kind),
            ("numids", &Kind::Integer)
        );
        assert!(ids[1].multiple && !args[2].optional);
        assert_eq!(
            hint(&args),
            "key [KEEPREF|DELREF|ACKED] IDS numids id [id ...]"
        );
    }

    /// BITOP's operations are pure tokens named as Redis 8.2 documents them.
    #[test]
    fn bitop_operations_are_named_tokens() {
        let Some(bitop) = crate::commands::COMMANDS.iter().find(|c| c.name == "bitop") else {
            panic!("no bitop")
        };
        let args = parse(bitop.syntax);
        let Kind::OneOf(ops) = &args[0].kind else {
            panic!("oneof: {:?}", args[0])
        };
        let named: Vec<(&str, Option<&str>)> = ops
            .iter()
            .map(|o| (o.name.as_str(), o.token.as_deref()))
            .collect();
        assert_eq!(
            named,
            [
                ("and", Some("AND")),
                ("or", Some("OR")),
                ("xor", Some("XOR")),
                ("not", Some("NOT")),
                ("diff", Some("DIFF")),
                ("diff1", Some("DIFF1")),
                ("andor", Some("ANDOR")),
                ("one", Some("ONE")),
            ]
        );
        assert!(ops.iter().all(|o| o.kind == Kind::PureToken));
    }

    #[test]
    fn every_table_syntax_parses_and_renders() {
        for cmd in crate::commands::COMMANDS {
            let args = parse(cmd.syntax);
            let _ = render(&args);
            if !cmd.syntax.is_empty() {
                assert!(!args.is_empty(), "{} has no arguments", cmd.name);
            }
        }
    }
}
