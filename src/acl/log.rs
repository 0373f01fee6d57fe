//! The ACL log (ACL LOG): recent refusals and failed authentications, similar ones grouped within
//! 60 seconds, at most `acllog-max-len` entries, newest first.

use crate::protocol::Reply;
use std::collections::VecDeque;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// One entry, with Redis 7.2's fields.
#[derive(Clone, Debug)]
pub struct Entry {
    pub count: u64,
    pub reason: &'static str,
    pub context: &'static str,
    pub object: String,
    pub username: String,
    pub created: Instant,
    pub client_info: String,
    pub entry_id: u64,
    pub timestamp_created: u64,
    pub timestamp_last_updated: u64,
}

/// The log itself.
#[derive(Default)]
pub struct AclLog {
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// How long a new refusal may be grouped into an older similar entry, as Redis.
const GROUPING_MS: u64 = 60_000;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl AclLog {
    /// Records a refusal: groups it with a similar recent entry, else adds it on top.
    pub fn add(
        &mut self,
        reason: &'static str,
        context: &'static str,
        object: String,
        username: String,
        client_info: String,
        max_len: usize,
    ) {
        let now = now_ms();
        if let Some(pos) = self.entries.iter().position(|e| {
            e.reason == reason
                && e.context == context
                && e.object == object
                && e.username == username
                && now.saturating_sub(e.timestamp_last_updated) < GROUPING_MS
        }) {
            if let Some(mut entry) = self.entries.remove(pos) {
                entry.count += 1;
                entry.timestamp_last_updated = now;
                entry.created = Instant::now();
                entry.client_info = client_info;
                self.entries.push_front(entry);
            }
            return;
        }
        let entry = Entry {
            count: 1,
            reason,
            context,
            object,
            username,
            created: Instant::now(),
            client_info,
            entry_id: self.next_id,
            timestamp_created: now,
            timestamp_last_updated: now,
        };
        self.next_id += 1;
        self.entries.push_front(entry);
        self.entries.truncate(max_len);
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }

    pub fn trim(&mut self, max_len: usize) {
        self.entries.truncate(max_len);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// ACL LOG's reply: the newest `count` entries, each a map.
    pub fn render(&self, count: usize) -> Reply {
        let text = |s: &str| Reply::bulk(s);
        Reply::Array(
            self.entries
                .iter()
                .take(count)
                .map(|e| {
                    let age = e.created.elapsed().as_secs_f64();
                    Reply::Map(vec![
                        (text("count"), Reply::Int(e.count as i64)),
                        (text("reason"), text(e.reason)),
                        (text("context"), text(e.context)),
                        (text("object"), text(&e.object)),
                        (text("username"), text(&e.username)),
                        (text("age-seconds"), Reply::Double(age)),
                        (text("client-info"), text(&e.client_info)),
                        (text("entry-id"), Reply::Int(e.entry_id as i64)),
                        (
                            text("timestamp-created"),
                            Reply::Int(e.timestamp_created as i64),
                        ),
                        (
                            text("timestamp-last-updated"),
                            Reply::Int(e.timestamp_last_updated as i64),
                        ),
                    ])
                })
                .collect(),
        )
    }
}
