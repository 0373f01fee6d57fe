//! How a setting is declared: `settings!` takes, per setting, its doc (clap's help), its clap
//! attributes (flag, `STMD_*` variable, default, help heading), its field and type, a *kind* (how
//! a value is parsed, checked and shown) and its CONFIG access with its Redis names. From that one
//! declaration it makes the clap-annotated `Config` field (with the kind's value parser) and the
//! setting's `PARAMS` row (CONFIG GET/SET, the file's aliases, CONFIG REWRITE), so a bound or a
//! parser is written once and the command line, the environment, the file and CONFIG SET agree.
//!
//! Kinds: `number(min, max)` (an integer within bounds, Redis's CONFIG SET texts), `memory` (a
//! size with units), `yes_no`, `parsed(f)` (a value type parsed by `f`, shown by `Display`),
//! `checked(f)` (a text checked by `f`, kept as written), `text`, `path` (`Option<PathBuf>`,
//! "" unsets it), `plain` / `plain(T)` (clap's own parser for the type, or for `T` inside an
//! `Option` or `Vec`), `by(parser)` (a clap parser of the command line only).
//! Access: `live` (CONFIG SET sets it by its kind), `set(f)` (CONFIG SET parses with `f`),
//! `fixed` / `fixed(get)` (shown, refused by CONFIG SET as Redis's immutable ones),
//! `custom(get, set)`, and `none` (a flag of stmd's own, no CONFIG name).

use super::Config;

/// Applies a CONFIG SET value to a configuration, or says why it cannot.
pub type ParamSetter = fn(&mut Config, &str) -> Result<(), String>;

/// One setting's `CONFIG GET/SET` row: its Redis names (the first is the one CONFIG REWRITE
/// writes; the others are Redis's older aliases; none for a flag of stmd's own), how to show it,
/// and how to set it (`None`: fixed at start-up).
pub struct Param {
    pub names: &'static [&'static str],
    pub get: fn(&Config) -> String,
    pub set: Option<ParamSetter>,
}

/// Parses an integer setting within `min..=max`, with Redis's CONFIG SET texts.
pub fn parse_bounded(value: &str, min: i64, max: i64) -> Result<i64, String> {
    let n: i64 = value
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
    if n < min || n > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(n)
}

/// The command line's parser of a `number(min, max)` setting: the same bounds as CONFIG SET, in
/// clap's words (`70000 is not in 0..=65535`).
pub fn bounded<T>(
    min: i64,
    max: i64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<i64> + Clone + Send + Sync + 'static,
{
    move |text| {
        let n: i64 = text
            .parse()
            .map_err(|e: std::num::ParseIntError| e.to_string())?;
        if n < min || n > max {
            return Err(format!("{n} is not in {min}..={max}"));
        }
        T::try_from(n).map_err(|_| format!("{n} is not in {min}..={max}"))
    }
}

/// A clap value parser for a text checked by `parse` and kept as written (the `checked` kind).
pub fn checked<T>(
    parse: fn(&str) -> Result<T, String>,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static
where
    T: 'static,
{
    move |text| parse(text).map(|_| text.to_string())
}

/// A boolean as redis.conf spells it.
pub fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_string()
}

/// The clap value parser of a kind.
macro_rules! kind_parser {
    ($ty:ty; number($min:expr, $max:expr)) => {
        $crate::config::declare::bounded::<$ty>(($min) as i64, ($max) as i64)
    };
    ($ty:ty; memory) => {
        $crate::config::parse_memory
    };
    ($ty:ty; yes_no) => {
        $crate::config::parse_yes_no
    };
    ($ty:ty; parsed($parse:expr)) => {
        $parse
    };
    ($ty:ty; checked($parse:expr)) => {
        $crate::config::declare::checked($parse)
    };
    ($ty:ty; text) => {
        clap::value_parser!(String)
    };
    ($ty:ty; path) => {
        clap::value_parser!(std::path::PathBuf)
    };
    ($ty:ty; plain) => {
        clap::value_parser!($ty)
    };
    ($ty:ty; plain($inner:ty)) => {
        clap::value_parser!($inner)
    };
    ($ty:ty; by($parser:expr)) => {
        $parser
    };
}

/// How CONFIG GET shows a setting of a kind.
macro_rules! kind_get {
    ($field:ident; yes_no) => {
        |c| $crate::config::declare::yes_no(c.$field)
    };
    ($field:ident; checked($parse:expr)) => {
        |c| c.$field.clone()
    };
    ($field:ident; text) => {
        |c| c.$field.clone()
    };
    ($field:ident; path) => {
        |c| {
            c.$field
                .as_deref()
                .map(std::path::Path::display)
                .map(|p| p.to_string())
                .unwrap_or_default()
        }
    };
    ($field:ident; $kind:ident $(($($arg:tt)*))?) => {
        |c| c.$field.to_string()
    };
}

/// How CONFIG SET sets a setting of a kind, with Redis's error texts.
macro_rules! kind_set {
    ($field:ident; number($min:expr, $max:expr)) => {
        |c, v| {
            c.$field = $crate::config::declare::parse_bounded(v, ($min) as i64, ($max) as i64)?
                .try_into()
                .map_err(|_| "argument is out of range".to_string())?;
            Ok(())
        }
    };
    ($field:ident; memory) => {
        |c, v| {
            c.$field = $crate::config::parse_memory(v)
                .map_err(|_| "argument must be a memory value".to_string())?;
            Ok(())
        }
    };
    ($field:ident; yes_no) => {
        |c, v| {
            c.$field = $crate::config::parse_yes_no(v)?;
            Ok(())
        }
    };
    ($field:ident; parsed($parse:expr)) => {
        |c, v| {
            c.$field = $parse(v)?;
            Ok(())
        }
    };
    ($field:ident; checked($parse:expr)) => {
        |c, v| {
            $parse(v)?;
            c.$field = v.to_string();
            Ok(())
        }
    };
    ($field:ident; text) => {
        |c, v| {
            c.$field = v.to_string();
            Ok(())
        }
    };
    ($field:ident; path) => {
        |c, v| {
            c.$field = (!v.is_empty()).then(|| std::path::PathBuf::from(v));
            Ok(())
        }
    };
}

/// A setting's `PARAMS` row, by its access.
macro_rules! param_row {
    ($field:ident; $kind:ident $(($($karg:tt)*))?; live; $names:tt) => {
        $crate::config::declare::Param {
            names: &$names,
            get: kind_get!($field; $kind $(($($karg)*))?),
            set: Some(kind_set!($field; $kind $(($($karg)*))?)),
        }
    };
    ($field:ident; $kind:ident $(($($karg:tt)*))?; set($parse:expr); $names:tt) => {
        $crate::config::declare::Param {
            names: &$names,
            get: |c| c.$field.to_string(),
            set: Some(|c, v| {
                c.$field = $parse(v)?;
                Ok(())
            }),
        }
    };
    ($field:ident; $kind:ident $(($($karg:tt)*))?; fixed; $names:tt) => {
        $crate::config::declare::Param {
            names: &$names,
            get: kind_get!($field; $kind $(($($karg)*))?),
            set: None,
        }
    };
    ($field:ident; $kind:ident $(($($karg:tt)*))?; fixed($get:expr); $names:tt) => {
        $crate::config::declare::Param {
            names: &$names,
            get: $get,
            set: None,
        }
    };
    ($field:ident; $kind:ident $(($($karg:tt)*))?; custom($get:expr, $set:expr); $names:tt) => {
        $crate::config::declare::Param {
            names: &$names,
            get: $get,
            set: Some($set),
        }
    };
    ($field:ident; $kind:ident $(($($karg:tt)*))?; none; $names:tt) => {
        $crate::config::declare::Param {
            names: &$names,
            get: |_| String::new(),
            set: None,
        }
    };
}

/// Declares the `Config` struct and its `PARAMS` table from one declaration per setting (see the
/// module's doc). Fields after `extra` are the struct's own, not settings.
macro_rules! settings {
    (
        $(#[$struct_meta:meta])*
        pub struct $config:ident {
            $(
                $(#[$meta:meta])*
                pub $field:ident: $ty:ty = $kind:ident $(($($karg:tt)*))?,
                    $access:ident $(($($aarg:tt)*))? $([$($name:literal),+])?;
            )*
        }
        extra {
            $($extra:tt)*
        }
    ) => {
        $(#[$struct_meta])*
        pub struct $config {
            $(
                $(#[$meta])*
                #[arg(value_parser = kind_parser!($ty; $kind $(($($karg)*))?))]
                pub $field: $ty,
            )*
            $($extra)*
        }

        /// Every setting's CONFIG row, in declaration order (Redis options stmd only accepts
        /// are in `inert`).
        pub static PARAMS: &[$crate::config::declare::Param] = &[
            $(
                param_row!(
                    $field;
                    $kind $(($($karg)*))?;
                    $access $(($($aarg)*))?;
                    [$($($name),+)?]
                ),
            )*
        ];
    };
}
