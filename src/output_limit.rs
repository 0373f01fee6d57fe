//! `client-output-buffer-limit`: how much reply output a client may leave unread before it is
//! disconnected, per client class, with Redis's syntax (`<class> <hard> <soft> <soft-seconds>`…).
//!
//! What "output buffer" means here: for a normal client, the bytes of the current write (one batch
//! of replies, at most about 1 MiB plus the last reply) that the socket has not accepted yet; for a
//! Pub/Sub subscriber, the messages waiting in its mailbox. The connection checks the hard limit
//! when a reply is encoded and the soft limit only when a write does not complete at once, so a
//! client that reads its replies pays nothing.

use crate::config::parse_memory;
use std::fmt;
use std::time::Duration;

/// One class's limits; 0 disables each part, as in Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ClassLimit {
    /// More pending output than this closes the client at once.
    pub hard: u64,
    /// At least this much pending output for `soft_seconds` in a row closes the client.
    pub soft: u64,
    pub soft_seconds: u64,
}

impl ClassLimit {
    /// True when `pending` bytes pass the hard limit.
    pub fn over_hard(&self, pending: usize) -> bool {
        self.hard > 0 && pending as u64 > self.hard
    }

    /// How long `pending` bytes may wait for the socket, or `None` when the soft limit does not
    /// apply to that much.
    pub fn soft_deadline(&self, pending: usize) -> Option<Duration> {
        (self.soft > 0 && pending as u64 >= self.soft)
            .then(|| Duration::from_secs(self.soft_seconds))
    }
}

/// The client classes that have their own limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientClass {
    Normal,
    /// Accepted and kept for compatibility: stmd has no replicas.
    Replica,
    /// Clients subscribed to at least one channel or pattern.
    PubSub,
}

impl ClientClass {
    pub fn name(self) -> &'static str {
        match self {
            ClientClass::Normal => "normal",
            ClientClass::Replica => "slave",
            ClientClass::PubSub => "pubsub",
        }
    }
}

/// Every class's limits: the value of `client-output-buffer-limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputBufferLimits {
    pub normal: ClassLimit,
    pub replica: ClassLimit,
    pub pubsub: ClassLimit,
}

/// The default. Unlike Redis (`normal 0 0 0`), normal clients have finite limits: a client that
/// pipelines requests but never reads its replies leaves a write of about 1 MiB stalled, which
/// passes the 1mb soft limit, so it is closed after 60 s instead of holding its task and buffers
/// forever; a single reply over 256mb closes the client at once. Replica and Pub/Sub are Redis's
/// defaults.
pub const DEFAULT_OUTPUT_BUFFER_LIMITS: &str =
    "normal 256mb 1mb 60 slave 256mb 64mb 60 pubsub 32mb 8mb 60";

const WRONG_COUNT: &str = "Wrong number of arguments in buffer limit configuration.";
const BAD_CLASS: &str = "Invalid client class specified in buffer limit configuration.";
const BAD_VALUE: &str =
    "Error in hard, soft or soft_seconds setting in buffer limit configuration.";

impl OutputBufferLimits {
    pub fn get(&self, class: ClientClass) -> ClassLimit {
        match class {
            ClientClass::Normal => self.normal,
            ClientClass::Replica => self.replica,
            ClientClass::PubSub => self.pubsub,
        }
    }

    /// Applies `class hard soft seconds` groups (any number, classes case-insensitive, sizes with
    /// units) on top of the current limits. All or nothing, with Redis's error texts.
    pub fn apply(&mut self, text: &str) -> Result<(), String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.len() % 4 != 0 {
            return Err(WRONG_COUNT.into());
        }
        let mut updated = *self;
        for group in words.chunks(4) {
            let slot = match group[0].to_ascii_lowercase().as_str() {
                "normal" => &mut updated.normal,
                "slave" | "replica" => &mut updated.replica,
                "pubsub" => &mut updated.pubsub,
                _ => return Err(BAD_CLASS.into()),
            };
            let size = |word: &str| parse_memory(word).map_err(|_| BAD_VALUE.to_string());
            let seconds: i64 = group[3].parse().map_err(|_| BAD_VALUE.to_string())?;
            *slot = ClassLimit {
                hard: size(group[1])?,
                soft: size(group[2])?,
                soft_seconds: u64::try_from(seconds).map_err(|_| BAD_VALUE.to_string())?,
            };
        }
        *self = updated;
        Ok(())
    }

    /// Parses a flag value: the given groups on top of the default.
    pub fn parse(text: &str) -> Result<OutputBufferLimits, String> {
        let mut limits = OutputBufferLimits {
            normal: ClassLimit::default(),
            replica: ClassLimit::default(),
            pubsub: ClassLimit::default(),
        };
        limits.apply(DEFAULT_OUTPUT_BUFFER_LIMITS)?;
        limits.apply(text)?;
        Ok(limits)
    }
}

impl fmt::Display for OutputBufferLimits {
    /// Redis's CONFIG GET form: every class, in bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let classes = [
            ClientClass::Normal,
            ClientClass::Replica,
            ClientClass::PubSub,
        ];
        for (i, class) in classes.into_iter().enumerate() {
            let l = self.get(class);
            let sep = if i == 0 { "" } else { " " };
            write!(
                f,
                "{sep}{} {} {} {}",
                class.name(),
                l.hard,
                l.soft,
                l.soft_seconds
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_round_trip_use_redis_format() {
        let limits = OutputBufferLimits::parse("").expect("default");
        assert_eq!(
            limits.to_string(),
            "normal 268435456 1048576 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        let mut changed = limits;
        changed
            .apply("NORMAL 4mb 1mb 2 replica 1kb 2k 3")
            .expect("valid");
        assert_eq!(
            changed.to_string(),
            "normal 4194304 1048576 2 slave 1024 2000 3 pubsub 33554432 8388608 60"
        );
    }

    #[test]
    fn bad_values_change_nothing() {
        let mut limits = OutputBufferLimits::parse("").expect("default");
        let before = limits;
        assert_eq!(limits.apply("normal 1 2"), Err(WRONG_COUNT.into()));
        assert_eq!(limits.apply("master 1 2 3"), Err(BAD_CLASS.into()));
        assert_eq!(
            limits.apply("pubsub 1 2 3 normal x 1 1"),
            Err(BAD_VALUE.into())
        );
        assert_eq!(limits.apply("normal 1 2 -1"), Err(BAD_VALUE.into()));
        assert_eq!(limits.apply("normal -1 2 3"), Err(BAD_VALUE.into()));
        assert_eq!(limits, before);
    }

    #[test]
    fn limits_apply_only_when_set() {
        let l = ClassLimit {
            hard: 10,
            soft: 5,
            soft_seconds: 2,
        };
        assert!(!l.over_hard(10) && l.over_hard(11));
        assert_eq!(l.soft_deadline(4), None);
        assert_eq!(l.soft_deadline(5), Some(Duration::from_secs(2)));
        let off = ClassLimit::default();
        assert!(!off.over_hard(usize::MAX) && off.soft_deadline(usize::MAX).is_none());
    }
}
