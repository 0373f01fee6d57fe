//! Key specs: where a command's keys are among its arguments and what it does to each, as Redis 7
//! describes them (COMMAND INFO's `key_specs`). They are the one source for COMMAND GETKEYS and
//! GETKEYSANDFLAGS, for the legacy first/last/step triple and `movablekeys`, and for what later
//! per-key checks (ACL key permissions, cluster slots) need: [`keys_with_flags`].
//!
//! A spec is a begin search (a fixed argument index, or the argument after a keyword) followed by a
//! find-keys rule (a range relative to where the search began, or a key count read from an
//! argument). The table writes them with the small constructors below: `key(RO | ACCESS, 1)` is
//! "argument 1 is a key that is read".

use super::Command;
use crate::protocol::Reply;

/// What a command does with the keys a spec finds (Redis's `CMD_KEY_*` bits).
pub type KeyFlags = u16;

/// Read-only access to the value.
pub const RO: KeyFlags = 1;
/// Read-write: the command reads the value and changes it.
pub const RW: KeyFlags = 1 << 1;
/// Overwrite: the value is replaced without being read.
pub const OW: KeyFlags = 1 << 2;
/// Remove: the key is deleted.
pub const RM: KeyFlags = 1 << 3;
/// The value (or part of it) is returned or otherwise leaves the server.
pub const ACCESS: KeyFlags = 1 << 4;
/// The value is updated in place (not a pure insert).
pub const UPDATE: KeyFlags = 1 << 5;
/// Data is added; nothing that was there is changed or removed.
pub const INSERT: KeyFlags = 1 << 6;
/// Data is removed from the value.
pub const DELETE: KeyFlags = 1 << 7;
/// The argument is not a key name although it hashes like one (e.g. a channel in a hash tag).
pub const NOT_KEY: KeyFlags = 1 << 8;
/// The spec may miss keys, or name an argument that only selects them (see the STM commands).
pub const INCOMPLETE: KeyFlags = 1 << 9;
/// The flags depend on the other arguments.
pub const VARIABLE_FLAGS: KeyFlags = 1 << 10;

/// Flag names in the order Redis renders them.
const KEY_FLAG_NAMES: &[(KeyFlags, &str)] = &[
    (RO, "RO"),
    (RW, "RW"),
    (OW, "OW"),
    (RM, "RM"),
    (ACCESS, "access"),
    (UPDATE, "update"),
    (INSERT, "insert"),
    (DELETE, "delete"),
    (NOT_KEY, "not_key"),
    (INCOMPLETE, "incomplete"),
    (VARIABLE_FLAGS, "variable_flags"),
];

/// Where the search for a spec's keys starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BeginSearch {
    /// At this argument index.
    Index(i32),
    /// Just after the first argument equal (case-insensitively) to `keyword`, searching from
    /// `startfrom` forwards, or backwards from the end when negative.
    Keyword {
        keyword: &'static str,
        startfrom: i32,
    },
    /// Not described by a spec (SORT's BY/GET patterns and STORE): the command's own key finder
    /// ([`keys_with_flags`]) knows them.
    Unknown,
}

/// How many keys follow the begin search, and at which stride.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindKeys {
    /// Keys from the start up to `lastkey` (relative to the start when >= 0, from the end of the
    /// arguments when negative), every `step`. With a `limit`, only 1/limit of the remaining
    /// arguments (XREAD's STREAMS k1 k2 id1 id2).
    Range { lastkey: i32, step: i32, limit: i32 },
    /// The argument at `keynumidx` (relative to the start) holds the number of keys, which begin
    /// at `firstkey` (relative to the start), every `step`.
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        step: i32,
    },
    /// Paired with [`BeginSearch::Unknown`].
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySpec {
    pub flags: KeyFlags,
    pub begin: BeginSearch,
    pub find: FindKeys,
    /// Why the flags are what they are, where that is not obvious ("" for none).
    pub notes: &'static str,
}

impl KeySpec {
    /// The spec with an explanation (COMMAND INFO shows it as `notes`).
    pub const fn with_notes(self, notes: &'static str) -> KeySpec {
        KeySpec { notes, ..self }
    }
}

/// One key at argument `index`.
pub const fn key(flags: KeyFlags, index: i32) -> KeySpec {
    range(flags, index, 0, 1, 0)
}

/// Every argument from `index` to the last one is a key.
pub const fn keys_to_end(flags: KeyFlags, index: i32) -> KeySpec {
    range(flags, index, -1, 1, 0)
}

/// Keys from argument `index` as [`FindKeys::Range`] describes.
pub const fn range(flags: KeyFlags, index: i32, lastkey: i32, step: i32, limit: i32) -> KeySpec {
    KeySpec {
        flags,
        begin: BeginSearch::Index(index),
        find: FindKeys::Range {
            lastkey,
            step,
            limit,
        },
        notes: "",
    }
}

/// A key count at `index + keynumidx`, then the keys (ZUNIONSTORE, SINTERCARD).
pub const fn keynum(
    flags: KeyFlags,
    index: i32,
    keynumidx: i32,
    firstkey: i32,
    step: i32,
) -> KeySpec {
    KeySpec {
        flags,
        begin: BeginSearch::Index(index),
        find: FindKeys::Keynum {
            keynumidx,
            firstkey,
            step,
        },
        notes: "",
    }
}

/// Keys after `keyword` (XREAD's STREAMS, the STM commands' CHANNEL).
pub const fn keyword(
    flags: KeyFlags,
    keyword: &'static str,
    startfrom: i32,
    lastkey: i32,
    step: i32,
    limit: i32,
) -> KeySpec {
    KeySpec {
        flags,
        begin: BeginSearch::Keyword { keyword, startfrom },
        find: FindKeys::Range {
            lastkey,
            step,
            limit,
        },
        notes: "",
    }
}

/// Keys no spec can describe (Redis's `unknown` begin search and find keys).
pub const fn unknown(flags: KeyFlags) -> KeySpec {
    KeySpec {
        flags,
        begin: BeginSearch::Unknown,
        find: FindKeys::Unknown,
        notes: "",
    }
}

/// The names of `flags`, in Redis's order.
pub fn flag_names(flags: KeyFlags) -> impl Iterator<Item = &'static str> {
    KEY_FLAG_NAMES
        .iter()
        .filter(move |(bit, _)| flags & bit != 0)
        .map(|(_, name)| *name)
}

/// `flags` as the RESP set COMMAND INFO and GETKEYSANDFLAGS show.
pub fn render_flags(flags: KeyFlags) -> Reply {
    Reply::Set(
        flag_names(flags)
            .map(|name| Reply::Status(name.into()))
            .collect(),
    )
}

/// One spec as COMMAND INFO renders it: `flags`, `begin_search` and `find_keys` maps.
pub fn render(spec: &KeySpec) -> Reply {
    let text = Reply::bulk_str;
    let int = |n: i32| Reply::Int(n.into());
    let (begin_type, begin_spec) = match spec.begin {
        BeginSearch::Index(index) => ("index", vec![(text("index"), int(index))]),
        BeginSearch::Keyword { keyword, startfrom } => (
            "keyword",
            vec![
                (text("keyword"), text(keyword)),
                (text("startfrom"), int(startfrom)),
            ],
        ),
        BeginSearch::Unknown => ("unknown", vec![]),
    };
    let (find_type, find_spec) = match spec.find {
        FindKeys::Range {
            lastkey,
            step,
            limit,
        } => (
            "range",
            vec![
                (text("lastkey"), int(lastkey)),
                (text("keystep"), int(step)),
                (text("limit"), int(limit)),
            ],
        ),
        FindKeys::Keynum {
            keynumidx,
            firstkey,
            step,
        } => (
            "keynum",
            vec![
                (text("keynumidx"), int(keynumidx)),
                (text("firstkey"), int(firstkey)),
                (text("keystep"), int(step)),
            ],
        ),
        FindKeys::Unknown => ("unknown", vec![]),
    };
    let typed = |kind: &'static str, spec: Vec<(Reply, Reply)>| {
        Reply::Map(vec![
            (text("type"), text(kind)),
            (text("spec"), Reply::Map(spec)),
        ])
    };
    let notes = (!spec.notes.is_empty()).then(|| (text("notes"), text(spec.notes)));
    Reply::Map(
        notes
            .into_iter()
            .chain([
                (text("flags"), render_flags(spec.flags)),
                (text("begin_search"), typed(begin_type, begin_spec)),
                (text("find_keys"), typed(find_type, find_spec)),
            ])
            .collect(),
    )
}

/// The legacy (first, last, step) triple Redis derives from the specs for COMMAND's
/// `first_key`/`last_key`/`step` fields, and whether the command's keys are `movablekeys`
/// (not all of them found by that triple). Redis's rule: one plain index/range spec is the triple
/// itself; otherwise consecutive step-1 index/range specs merge into one range, and any other
/// spec (keyword, keynum, a gap, another step, `incomplete`) makes the keys movable.
pub fn legacy_triple(specs: &[KeySpec]) -> ((i32, i32, i32), bool) {
    let incomplete = |s: &KeySpec| s.flags & INCOMPLETE != 0;
    if let [only] = specs {
        if let (BeginSearch::Index(index), FindKeys::Range { lastkey, step, .. }) =
            (only.begin, only.find)
        {
            let last = if lastkey >= 0 {
                index + lastkey
            } else {
                lastkey
            };
            return ((index, last, step), incomplete(only));
        }
    }
    let mut movable = false;
    let (mut first, mut last, mut previous_last) = (i32::MAX, 0i32, 0i32);
    for spec in specs {
        let (BeginSearch::Index(index), FindKeys::Range { lastkey, step, .. }) =
            (spec.begin, spec.find)
        else {
            movable = true;
            continue;
        };
        if step != 1 || (previous_last != 0 && previous_last != index - 1) {
            movable = true;
            continue;
        }
        movable |= incomplete(spec);
        first = first.min(index);
        let absolute = if lastkey >= 0 {
            lastkey + index
        } else {
            lastkey
        };
        // Redis compares unsigned: a negative (from the end) last key beats any positive one.
        if absolute as u32 > last as u32 {
            last = absolute;
        }
        previous_last = last;
    }
    if first == i32::MAX {
        return ((0, 0, 0), !specs.is_empty() || movable);
    }
    ((first, last, 1), movable)
}

/// The keys of a request: (argument index, flags).
pub type KeyList = smallvec::SmallVec<[(usize, KeyFlags); 4]>;

/// The keys of a request, as (argument index, flags), in spec order, found by `cmd`'s key specs
/// the way Redis's `getKeysUsingKeySpecs` finds them. `cmd` is the command or subcommand row that
/// the request resolves to ([`Command::resolve`]); `args[0]` is the command name. `None` when the
/// arguments do not fit a spec (a key count that is not a number, a range past the end): Redis
/// answers COMMAND GETKEYS with `Invalid arguments specified for command` then. Specs marked
/// `not_key` are skipped.
/// On the stack for up to 4 keys: the ACL check runs this for every command of a restricted user.
pub fn keys_with_flags(cmd: &Command, args: &[&[u8]]) -> Option<KeyList> {
    find_keys(cmd, args, false)
}

/// What cluster routing hashes: the keys, and also the arguments specs flag `not_key` that still
/// belong to a slot (SSUBSCRIBE's and SPUBLISH's shard channels).
pub fn keys_for_routing(cmd: &Command, args: &[&[u8]]) -> Option<KeyList> {
    find_keys(cmd, args, true)
}

fn find_keys(cmd: &Command, args: &[&[u8]], with_not_keys: bool) -> Option<KeyList> {
    // Redis's own key finders for the commands whose specs cannot say (`sortGetKeys`,
    // `migrateGetKeys`).
    match cmd.name {
        "sort" => return Some(sort_keys(args)),
        "sort_ro" => return Some(smallvec::smallvec![(1, RO | ACCESS)]),
        "migrate" => {
            let keys = migrate_keys(args);
            return Some(keys.map(|at| (at, RW | ACCESS | DELETE)).collect());
        }
        _ => {}
    }
    let argc = args.len() as i64;
    let mut keys = KeyList::new();
    for spec in cmd.keys {
        if spec.flags & NOT_KEY != 0 && !with_not_keys {
            continue;
        }
        let first = match spec.begin {
            BeginSearch::Index(index) => i64::from(index),
            BeginSearch::Keyword { keyword, startfrom } => {
                let found = if cmd.group == "stm" {
                    find_stm_option(args, keyword)
                } else {
                    find_keyword(args, keyword, startfrom)
                };
                match found {
                    Some(found) => found + 1,
                    None => continue,
                }
            }
            BeginSearch::Unknown => return None,
        };
        let (first, last, step) = match spec.find {
            FindKeys::Range {
                lastkey,
                step,
                limit,
            } => {
                let last = if lastkey >= 0 {
                    first + i64::from(lastkey)
                } else if limit == 0 {
                    argc + i64::from(lastkey)
                } else {
                    first + ((argc - first) / i64::from(limit) + i64::from(lastkey))
                };
                (first, last, i64::from(step))
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                step,
            } => {
                if i64::from(keynumidx) >= argc - first {
                    return None;
                }
                let count_arg = args.get(usize::try_from(first + i64::from(keynumidx)).ok()?)?;
                let count: i64 = std::str::from_utf8(count_arg).ok()?.parse().ok()?;
                if count < 0 {
                    return None;
                }
                let first = first + i64::from(firstkey);
                (first, first + count - 1, i64::from(step))
            }
            FindKeys::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let flags = if spec.flags & VARIABLE_FLAGS != 0 {
            variable_flags(cmd, args)
        } else {
            spec.flags
        };
        let mut at = first;
        while at <= last {
            keys.push((at as usize, flags));
            at += step.max(1);
        }
    }
    Some(keys)
}

/// SORT's keys as Redis's `sortGetKeys` finds them: the sorted key, then the last STORE's key
/// (LIMIT, GET and BY skip their arguments).
fn sort_keys(args: &[&[u8]]) -> KeyList {
    let mut keys: KeyList = smallvec::smallvec![(1, RO | ACCESS)];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let arg = args[i];
        if arg.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if arg.eq_ignore_ascii_case(b"get") || arg.eq_ignore_ascii_case(b"by") {
            i += 1;
        } else if arg.eq_ignore_ascii_case(b"store") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    keys.extend(store.map(|at| (at, OW | UPDATE)));
    keys
}

/// The flags of a `variable_flags` spec for this request (Redis's `getkeys_proc` of the command):
/// SET reads the old value only with GET.
fn variable_flags(cmd: &Command, args: &[&[u8]]) -> KeyFlags {
    match cmd.name {
        "set" if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"GET")) => {
            RW | ACCESS | UPDATE
        }
        "set" => OW | UPDATE,
        _ => cmd
            .keys
            .first()
            .map_or(0, |spec| spec.flags & !VARIABLE_FLAGS),
    }
}

/// How many values follow each option of the STM commands.
const STM_OPTION_VALUES: &[(&str, usize)] = &[
    ("USER", 1),
    ("CHANNEL", 1),
    ("SERVER", 1),
    ("PARENT", 1),
    ("PRIVACY", 1),
    ("PERSONA", 1),
    ("LINEAGE", 1),
    ("KEY", 1),
    ("EXCLUDE", 1),
    ("LIMIT", 1),
    ("FORMAT", 1),
    ("BOT", 1),
    ("OTHERS", 1),
    ("CRUDE", 1),
    ("MODE", 1),
    ("CADENCE", 1),
    ("NOW", 1),
    ("STOP", 0),
    ("CROSS-SERVER", 0),
    ("MSG", 3),
    ("REPLY", 4),
];

/// The index of the option `keyword` of an STM command. The STM commands take their options in any
/// order and an option's value may equal an option's name (`USER CHANNEL CHANNEL c1`), so the
/// options are walked, each with its values, rather than searched; the walk stops at the first
/// argument that is not an option (TEXT, SET: the command's tail).
fn find_stm_option(args: &[&[u8]], keyword: &str) -> Option<i64> {
    let mut at = 1;
    while at + 1 < args.len() {
        let option = args[at];
        if option.eq_ignore_ascii_case(keyword.as_bytes()) {
            return i64::try_from(at).ok();
        }
        let (_, values) = STM_OPTION_VALUES
            .iter()
            .find(|(name, _)| option.eq_ignore_ascii_case(name.as_bytes()))?;
        at += 1 + values;
    }
    None
}

/// The index of the first argument equal to `keyword`, as Redis searches: from `startfrom` up to
/// the one before the last argument (a keyword there has no key after it), or, for a negative
/// `startfrom`, from `argc + startfrom` down to argument 2.
fn find_keyword(args: &[&[u8]], keyword: &str, startfrom: i32) -> Option<i64> {
    let argc = args.len() as i64;
    let matches = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| args.get(i))
            .is_some_and(|arg| arg.eq_ignore_ascii_case(keyword.as_bytes()))
    };
    if startfrom > 0 {
        (i64::from(startfrom)..argc - 1).find(|&i| matches(i))
    } else {
        let start = argc + i64::from(startfrom);
        if start >= argc || start < 1 {
            return None;
        }
        (2..=start).rev().find(|&i| matches(i))
    }
}

/// The keys of a MIGRATE request as Redis's `migrateGetKeys` finds them: the key argument, or
/// with KEYS every argument after it (AUTH and AUTH2 values are skipped while looking for it).
pub fn migrate_keys(args: &[&[u8]]) -> std::ops::Range<usize> {
    let mut at = 6;
    while at < args.len() {
        let word = args[at];
        if word.eq_ignore_ascii_case(b"KEYS") {
            if !args[3].is_empty() {
                return 0..0;
            }
            return at + 1..args.len();
        }
        if word.eq_ignore_ascii_case(b"AUTH") {
            at += 1;
        } else if word.eq_ignore_ascii_case(b"AUTH2") {
            at += 2;
        }
        at += 1;
    }
    3..4.min(args.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{lookup, rows};

    fn keys_of(request: &str) -> Option<Vec<String>> {
        let args: Vec<&[u8]> = request.split(' ').map(str::as_bytes).collect();
        let cmd = lookup(args[0])?.resolve(&args).ok()?;
        let keys = keys_with_flags(cmd, &args)?;
        Some(
            keys.iter()
                .map(|(i, _)| request.split(' ').nth(*i).unwrap_or("?").to_string())
                .collect(),
        )
    }

    /// COMMAND's first/last/step for every command and subcommand is what Redis derives from
    /// the key specs, and `movablekeys` is set exactly where the triple misses keys.
    #[test]
    fn legacy_triple_agrees_with_the_key_specs() {
        for cmd in rows()
            .iter()
            .chain(rows().iter().flat_map(|c| c.subcommands))
        {
            let (triple, _) = legacy_triple(cmd.keys);
            assert_eq!(
                triple,
                (cmd.first_key, cmd.last_key, cmd.step),
                "{}: the table's first/last/step differ from its key specs",
                cmd.name
            );
        }
        let movable = |name: &str| {
            let cmd = lookup(name.as_bytes()).expect("command");
            legacy_triple(cmd.keys).1
        };
        assert!(movable("sintercard"));
        assert!(movable("stm.capture"));
        assert!(!movable("get") && !movable("mset") && !movable("sunionstore"));
    }

    #[test]
    fn keys_follow_each_spec_shape() {
        let strings = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(keys_of("mset a 1 b 2"), strings(&["a", "b"]));
        assert_eq!(keys_of("blpop a b 0"), strings(&["a", "b"]));
        assert_eq!(keys_of("sunionstore d a b"), strings(&["d", "a", "b"]));
        assert_eq!(keys_of("sintercard 2 a b LIMIT 1"), strings(&["a", "b"]));
        assert_eq!(keys_of("sintercard x a b"), None);
        assert_eq!(keys_of("sintercard 5 a b"), None);
        assert_eq!(keys_of("memory usage k"), strings(&["k"]));
        assert_eq!(
            keys_of("stm.capture USER u CHANNEL c SERVER s MSG user - hi"),
            strings(&["c"])
        );
        assert_eq!(
            keys_of("stm.forget KEY shortterm:x"),
            strings(&["shortterm:x"])
        );
        assert_eq!(keys_of("stm.forget USER u"), strings(&[]));
        // An option's value equal to an option's name is a value, not the option.
        assert_eq!(
            keys_of("stm.capture USER CHANNEL CHANNEL c SERVER s"),
            strings(&["c"])
        );
        assert_eq!(
            keys_of("stm.capture MSG user CHANNEL x CHANNEL c SERVER s"),
            strings(&["c"])
        );
        assert_eq!(
            keys_of("stm.summary USER u SERVER s CHANNEL c TEXT CHANNEL"),
            strings(&["c"])
        );
        assert_eq!(
            keys_of("stm.summary USER u SERVER s TEXT CHANNEL c"),
            strings(&[])
        );
        assert_eq!(keys_of("ping"), strings(&[]));
    }

    #[test]
    fn flags_render_in_redis_order() {
        let names: Vec<_> = flag_names(DELETE | RW | ACCESS).collect();
        assert_eq!(names, ["RW", "access", "delete"]);
    }

    fn args(line: &str) -> Vec<&[u8]> {
        line.split(' ')
            .map(|a| if a == "''" { &b""[..] } else { a.as_bytes() })
            .collect()
    }

    #[test]
    fn the_keys_are_found_as_migrate_get_keys_finds_them() {
        assert_eq!(migrate_keys(&args("MIGRATE h 1 k 0 0")), 3..4);
        assert_eq!(
            migrate_keys(&args("MIGRATE h 1 '' 0 0 AUTH keys KEYS a b")),
            9..11
        );
        assert_eq!(
            migrate_keys(&args("MIGRATE h 1 '' 0 0 AUTH2 u keys KEYS a")),
            10..11
        );
        assert_eq!(migrate_keys(&args("MIGRATE h 1 k 0 0 KEYS a")), 0..0);
    }
}
