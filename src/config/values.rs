//! The values of settings that subsystems act on: each one parsed and shown as Redis does, with
//! Redis's CONFIG SET error texts, and no behaviour on any subsystem's state. They live here, at
//! the bottom layer, so that the configuration needs nothing above it and every subsystem takes
//! its setting's type from here.

use std::fmt;

/// What to evict when `maxmemory` is reached (Redis's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    VolatileLru,
    AllKeysRandom,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    /// In the order Redis lists them in its error text (it has LFU policies too; we do not).
    pub const ALL: [Policy; 6] = [
        Policy::VolatileLru,
        Policy::VolatileRandom,
        Policy::VolatileTtl,
        Policy::AllKeysLru,
        Policy::AllKeysRandom,
        Policy::NoEviction,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::NoEviction => "noeviction",
            Policy::AllKeysLru => "allkeys-lru",
            Policy::VolatileLru => "volatile-lru",
            Policy::AllKeysRandom => "allkeys-random",
            Policy::VolatileRandom => "volatile-random",
            Policy::VolatileTtl => "volatile-ttl",
        }
    }

    /// Parses a policy name (case-insensitive), with Redis's CONFIG SET text on failure.
    pub fn parse(text: &str) -> Result<Policy, String> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "argument(s) must be one of the following: {}",
                    names.join(", ")
                )
            })
    }
}

/// `appendfsync`: when the file is flushed to the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    /// Before the reply to the write is sent.
    Always,
    /// Once a second.
    Everysec,
    /// When the operating system decides.
    No,
}

impl Fsync {
    pub fn parse(text: &str) -> Result<Fsync, String> {
        match text.to_ascii_lowercase().as_str() {
            "always" => Ok(Fsync::Always),
            "everysec" => Ok(Fsync::Everysec),
            "no" => Ok(Fsync::No),
            _ => Err("argument(s) must be one of the following: everysec, always, no".into()),
        }
    }
}

impl fmt::Display for Fsync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fsync::Always => "always",
            Fsync::Everysec => "everysec",
            Fsync::No => "no",
        })
    }
}

/// The `save` setting: save after `secs` seconds if at least `changes` writes happened, for any
/// of the pairs. Empty: no automatic snapshots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaveRules(pub Vec<(u64, u64)>);

impl SaveRules {
    /// Redis's syntax: `"<seconds> <changes> [<seconds> <changes> ...]"`, or `""` for none.
    pub fn parse(text: &str) -> Result<SaveRules, String> {
        let numbers = text
            .split_whitespace()
            .map(|n| n.parse::<u64>().ok().filter(|&n| n <= i32::MAX as u64))
            .collect::<Option<Vec<u64>>>()
            .ok_or("Invalid save parameters")?;
        if numbers.len() % 2 != 0 {
            return Err("Invalid save parameters".into());
        }
        Ok(SaveRules(numbers.chunks(2).map(|p| (p[0], p[1])).collect()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when a rule says it is time: `changes` writes since the last save, `since` seconds ago.
    pub fn due(&self, changes: u64, since: u64) -> bool {
        self.0
            .iter()
            .any(|&(secs, least)| changes >= least && since >= secs)
    }
}

impl fmt::Display for SaveRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (secs, changes) in &self.0 {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{secs} {changes}")?;
        }
        Ok(())
    }
}

/// Redis's event classes (the letters of `notify-keyspace-events`), plus `S` for STM entries.
pub mod class {
    pub const KEYSPACE: u32 = 1 << 0; // K
    pub const KEYEVENT: u32 = 1 << 1; // E
    pub const GENERIC: u32 = 1 << 2; // g
    pub const STRING: u32 = 1 << 3; // $
    pub const LIST: u32 = 1 << 4; // l
    pub const SET: u32 = 1 << 5; // s
    pub const HASH: u32 = 1 << 6; // h
    pub const ZSET: u32 = 1 << 7; // z
    pub const EXPIRED: u32 = 1 << 8; // x
    pub const EVICTED: u32 = 1 << 9; // e
    pub const STREAM: u32 = 1 << 10; // t
    pub const KEY_MISS: u32 = 1 << 11; // m
    pub const MODULE: u32 = 1 << 12; // d
    pub const NEW: u32 = 1 << 13; // n
    /// Ours: STM entries' own events (`stm.capture`, `stm.forget`…). Redis rejects the letter `S`,
    /// so no Redis configuration means anything else by it.
    pub const STM: u32 = 1 << 14; // S
    /// Redis's `A`: every type class, not `m`, `n` (nor our `S`, so `A` means what it means in
    /// Redis and CONFIG GET renders Redis's settings as Redis does).
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// The `notify-keyspace-events` setting: class bits, rendered and parsed as Redis does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NotifyFlags(pub u32);

/// Letter ↔ class, in the order Redis renders them (after `A`).
const LETTERS: &[(char, u32)] = &[
    ('g', class::GENERIC),
    ('$', class::STRING),
    ('l', class::LIST),
    ('s', class::SET),
    ('h', class::HASH),
    ('z', class::ZSET),
    ('x', class::EXPIRED),
    ('e', class::EVICTED),
    ('t', class::STREAM),
    ('d', class::MODULE),
    ('n', class::NEW),
];

impl NotifyFlags {
    /// Parses Redis's class letters (`KEA`, `Ex`, `""`…), with Redis's CONFIG SET text on error.
    pub fn parse(text: &str) -> Result<NotifyFlags, String> {
        let mut flags = 0;
        for c in text.chars() {
            flags |= match c {
                'A' => class::ALL,
                'K' => class::KEYSPACE,
                'E' => class::KEYEVENT,
                'm' => class::KEY_MISS,
                'S' => class::STM,
                _ => LETTERS
                    .iter()
                    .find(|(letter, _)| *letter == c)
                    .map(|(_, bit)| *bit)
                    .ok_or_else(|| {
                        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()
                    })?,
            };
        }
        Ok(NotifyFlags(flags))
    }

    /// True when some event would be published: a channel kind (K or E) and a class.
    pub fn active(self) -> bool {
        self.0 & (class::KEYSPACE | class::KEYEVENT) != 0
            && self.0 & !(class::KEYSPACE | class::KEYEVENT) != 0
    }
}

impl fmt::Display for NotifyFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flags = self.0;
        if flags & class::ALL == class::ALL {
            // Redis 7 shows no `n` beside `A` (the flag still works).
            f.write_str("A")?;
        } else {
            for (letter, bit) in LETTERS {
                if flags & bit != 0 {
                    write!(f, "{letter}")?;
                }
            }
        }
        if flags & class::STM != 0 {
            f.write_str("S")?;
        }
        for (bit, letter) in [
            (class::KEYSPACE, "K"),
            (class::KEYEVENT, "E"),
            (class::KEY_MISS, "m"),
        ] {
            if flags & bit != 0 {
                f.write_str(letter)?;
            }
        }
        Ok(())
    }
}

/// The channels a new selector starts with (`acl-pubsub-default`): none (`resetchannels`, Redis
/// 7's default) or all (`allchannels`, Redis 6's). It applies to a new user, a new `(…)` selector
/// and the `reset` rule, as the setting is when they are applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChannelDefault {
    #[default]
    Reset,
    All,
}

impl ChannelDefault {
    /// CONFIG's name of it.
    pub fn name(self) -> &'static str {
        match self {
            ChannelDefault::Reset => "resetchannels",
            ChannelDefault::All => "allchannels",
        }
    }

    /// Parses the CONFIG value (case-insensitive), with Redis's CONFIG SET text on failure.
    pub fn parse(text: &str) -> Result<ChannelDefault, String> {
        [ChannelDefault::All, ChannelDefault::Reset]
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                "argument(s) must be one of the following: allchannels, resetchannels".to_string()
            })
    }
}

/// The thresholds, as configured (a plain copy, read once per decision).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    pub hash_max_listpack_entries: u64,
    pub hash_max_listpack_value: u64,
    pub set_max_intset_entries: u64,
    pub set_max_listpack_entries: u64,
    pub set_max_listpack_value: u64,
    pub zset_max_listpack_entries: u64,
    pub zset_max_listpack_value: u64,
    /// Positive: most elements of a listpack; negative -1..-5: most bytes, 4 KiB << (-n - 1).
    pub list_max_listpack_size: i64,
    /// Reported only (stmd does not compress lists).
    pub list_compress_depth: u64,
}

/// A TLS protocol version `tls-protocols` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    V1_2,
    V1_3,
}

/// `tls-protocols`: `TLSv1.2`, `TLSv1.3` or both, space-separated, any case, each once in the
/// order given; empty means both (TLS 1.3 first).
pub fn tls_protocols(text: &str) -> Result<Vec<TlsVersion>, String> {
    let mut versions = Vec::new();
    for word in text.split_whitespace() {
        let version = match word.to_ascii_lowercase().as_str() {
            "tlsv1.2" => TlsVersion::V1_2,
            "tlsv1.3" => TlsVersion::V1_3,
            "tlsv1" | "tlsv1.1" => {
                return Err(format!(
                    "{word} is not supported: use a combination of 'TLSv1.2' and 'TLSv1.3'"
                ))
            }
            _ => return Err(
                "Invalid tls-protocols specified. Use a combination of 'TLSv1.2' and 'TLSv1.3'."
                    .into(),
            ),
        };
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    if versions.is_empty() {
        versions = vec![TlsVersion::V1_3, TlsVersion::V1_2];
    }
    Ok(versions)
}

/// The TLS 1.3 suites `tls-ciphersuites` takes, by their IANA names (OpenSSL's `-ciphersuites`).
pub const TLS13_SUITES: [&str; 3] = [
    "TLS_AES_256_GCM_SHA384",
    "TLS_AES_128_GCM_SHA256",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// The TLS 1.2 ciphers `tls-ciphers` takes, by their OpenSSL names (OpenSSL's `-cipher`).
pub const TLS12_CIPHERS: [&str; 6] = [
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-RSA-CHACHA20-POLY1305",
];

/// `tls-ciphersuites`: names of [`TLS13_SUITES`], colon-separated, in order of preference, as
/// the list spells them; empty (none named) means the provider's defaults.
pub fn tls_ciphersuites(text: &str) -> Result<Vec<&'static str>, String> {
    suite_names(text, &TLS13_SUITES, |name| {
        format!("unknown or unsupported TLS 1.3 cipher suite '{name}'")
    })
}

/// `tls-ciphers`: names of [`TLS12_CIPHERS`], colon-separated, in order of preference; empty
/// means the provider's defaults. OpenSSL's cipher-list expressions (`HIGH`, `!aNULL`,
/// `ECDH+AESGCM`, `@STRENGTH`) are refused: only explicit names are taken.
pub fn tls_ciphers(text: &str) -> Result<Vec<&'static str>, String> {
    suite_names(text, &TLS12_CIPHERS, |name| {
        let expression = name.starts_with(['!', '+', '-', '@']) || !name.contains('-');
        match expression || name.contains('+') {
            true => format!(
                "'{name}' is an OpenSSL cipher-list expression; only explicit cipher names are supported"
            ),
            false => format!("unknown or unsupported TLS 1.2 cipher '{name}'"),
        }
    })
}

/// A list of suite names (separated by `:`, `,` or spaces, as OpenSSL takes them) looked up in
/// `known`, any case, each once. `unknown` words the error for a name not in `known`, which is
/// followed by the supported names.
fn suite_names(
    text: &str,
    known: &[&'static str],
    unknown: impl Fn(&str) -> String,
) -> Result<Vec<&'static str>, String> {
    let mut names: Vec<&'static str> = Vec::new();
    for name in text
        .split(|c: char| c == ':' || c == ',' || c.is_whitespace())
        .filter(|n| !n.is_empty())
    {
        let Some(known_name) = known.iter().find(|n| n.eq_ignore_ascii_case(name)) else {
            return Err(format!(
                "{} (supported: {})",
                unknown(name),
                known.join(", ")
            ));
        };
        if !names.contains(known_name) {
            names.push(known_name);
        }
    }
    Ok(names)
}

/// CONFIG GET shows a policy by its Redis name.
impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// CONFIG GET shows `acl-pubsub-default` by its Redis name.
impl fmt::Display for ChannelDefault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
