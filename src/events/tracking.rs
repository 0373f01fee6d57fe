//! Client-side caching (`CLIENT TRACKING`): which clients may cache which keys, and the
//! invalidation messages sent when those keys change.
//!
//! Default mode: the keys a tracking client reads are remembered in one server-wide table (key →
//! client ids), bounded by `tracking-table-max-keys`; a change to a key sends `invalidate` to its
//! clients and forgets the key. BCAST mode: no table; every change to a key under one of the
//! client's prefixes is sent. A key is remembered before its read runs: a write that lands between
//! the two then invalidates a value the client never got, which is harmless, while remembering it
//! after the read could miss a write and leave a stale value cached (Redis, single-threaded, has no
//! such window).

use crate::clients::ClientInfo;
use crate::commands::Ctx;
use crate::protocol::Reply;
use crate::pubsub::{Delivery, Mailbox};
use crate::server::Shared;
use crate::spec::command::{Command, READONLY};
use crate::store::changes::{Change, Noted};
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The channel RESP2 clients receive redirected invalidations on.
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// One client's tracking mode, as CLIENT TRACKING ON set it.
pub struct TrackedClient {
    pub id: u64,
    info: Arc<ClientInfo>,
    mailbox: Arc<Mailbox>,
    /// Client id invalidations go to (0: this client itself).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// BCAST prefixes (the empty prefix when none was given: every key).
    pub prefixes: Vec<Bytes>,
    /// Set once the redirection target was found gone.
    pub broken_redirect: AtomicBool,
}

/// A connection's own tracking state.
#[derive(Default)]
pub struct ConnTracking {
    pub mode: Option<Arc<TrackedClient>>,
    /// CLIENT CACHING YES/NO was given for the next command.
    pub caching: bool,
}

/// Server-wide tracking state.
#[derive(Default)]
pub struct Tracking {
    clients: RwLock<HashMap<u64, Arc<TrackedClient>>>,
    /// `clients.len()`, readable without the lock on every command.
    count: AtomicUsize,
    bcast_count: AtomicUsize,
    /// Key → ids of the clients that may cache it (default mode).
    table: Mutex<HashMap<Bytes, SmallVec<[u64; 2]>, ahash::RandomState>>,
    /// `tracking-table-max-keys` (0: unbounded).
    pub max_keys: AtomicU64,
}

/// What INFO shows about tracking.
pub struct TrackingStats {
    pub clients: usize,
    pub keys: usize,
    pub items: usize,
    pub prefixes: usize,
}

impl Tracking {
    pub fn client_count(&self) -> usize {
        self.count.load(Relaxed)
    }

    pub fn stats(&self) -> TrackingStats {
        let table = self.table.lock();
        let clients = self.clients.read();
        TrackingStats {
            clients: clients.len(),
            keys: table.len(),
            items: table.values().map(|ids| ids.len()).sum(),
            // Redis counts the prefix table: a prefix two clients share is one.
            prefixes: clients
                .values()
                .filter(|c| c.bcast)
                .flat_map(|c| c.prefixes.iter())
                .collect::<std::collections::HashSet<_>>()
                .len(),
        }
    }

    pub fn get(&self, id: u64) -> Option<Arc<TrackedClient>> {
        self.clients.read().get(&id).cloned()
    }

    fn set(&self, client: Arc<TrackedClient>) {
        let mut clients = self.clients.write();
        if let Some(old) = clients.insert(client.id, client.clone()) {
            if old.bcast {
                self.bcast_count.fetch_sub(1, Relaxed);
            }
        }
        if client.bcast {
            self.bcast_count.fetch_add(1, Relaxed);
        }
        self.count.store(clients.len(), Relaxed);
    }

    /// Turns tracking off for a client (CLIENT TRACKING OFF, disconnect). Its table entries go
    /// lazily: an invalidation for a client no longer tracking is dropped.
    pub fn remove(&self, id: u64) {
        let mut clients = self.clients.write();
        if let Some(old) = clients.remove(&id) {
            if old.bcast {
                self.bcast_count.fetch_sub(1, Relaxed);
            }
        }
        self.count.store(clients.len(), Relaxed);
    }

    /// Remembers that client `id` may cache `keys`; past `tracking-table-max-keys`, evicts
    /// other keys from the table, invalidating them, as Redis does.
    fn remember<'k>(&self, shared: &Shared, id: u64, keys: impl Iterator<Item = &'k [u8]>) {
        let mut evicted = Vec::new();
        {
            let mut table = self.table.lock();
            for key in keys {
                let ids = table.entry(Bytes::copy_from_slice(key)).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            let max = self.max_keys.load(Relaxed) as usize;
            while max > 0 && table.len() > max {
                let Some(victim) = table.keys().next().cloned() else {
                    break;
                };
                if let Some(ids) = table.remove(&victim) {
                    evicted.push((victim, ids));
                }
            }
        }
        for (key, ids) in evicted {
            self.send_to_ids(shared, &key, &ids, 0);
        }
    }

    /// Sends invalidations for the changes one command (or one background tick) made.
    /// Default-mode clients get one message per key, as in Redis; BCAST clients one message per
    /// prefix with the command's keys under it, sorted (Redis batches them per event-loop turn).
    pub fn invalidate_noted(&self, shared: &Shared, noted: &[Noted], writer: u64) {
        let mut changed: Vec<&[u8]> = Vec::new();
        // FLUSHALL notes one flush per database: clients get one null invalidation, as in Redis.
        let mut flushed = false;
        for n in noted {
            match n.change {
                Change::Created
                | Change::Written
                | Change::Removed
                | Change::Expired
                | Change::Evicted => {
                    if !changed.contains(&&n.key[..]) {
                        changed.push(&n.key[..]);
                        let ids = self.table.lock().remove(&n.key[..]);
                        if let Some(ids) = ids {
                            self.send_to_ids(shared, &n.key, &ids, writer);
                        }
                    }
                }
                Change::Flushed if !flushed => {
                    flushed = true;
                    self.invalidate_all(shared);
                }
                Change::Flushed => {}
                Change::Missed | Change::Event { .. } => {}
            }
        }
        if self.bcast_count.load(Relaxed) == 0 || changed.is_empty() {
            return;
        }
        changed.sort_unstable();
        let targets: Vec<Arc<TrackedClient>> = self
            .clients
            .read()
            .values()
            .filter(|c| c.bcast && !(c.noloop && c.id == writer))
            .cloned()
            .collect();
        for client in targets {
            for prefix in &client.prefixes {
                let keys: Vec<&[u8]> = changed
                    .iter()
                    .copied()
                    .filter(|k| k.starts_with(prefix))
                    .collect();
                if !keys.is_empty() {
                    self.send(shared, &client, Some(&keys));
                }
            }
        }
    }

    fn send_to_ids(&self, shared: &Shared, key: &[u8], ids: &[u64], writer: u64) {
        for &id in ids {
            let Some(client) = self.get(id) else {
                continue; // stopped tracking since it read the key
            };
            if client.bcast || (client.noloop && id == writer) {
                continue;
            }
            self.send(shared, &client, Some(&[key]));
        }
    }

    /// FLUSHALL/FLUSHDB: every tracking client gets a null invalidation, the table empties.
    fn invalidate_all(&self, shared: &Shared) {
        self.table.lock().clear();
        let targets: Vec<Arc<TrackedClient>> = self.clients.read().values().cloned().collect();
        for client in targets {
            self.send(shared, &client, None);
        }
    }

    /// Sends one invalidation (`None`: everything) for `client`: as a RESP3 push to itself or its
    /// redirection target, or as a `__redis__:invalidate` message to a RESP2 target subscribed to
    /// that channel. A RESP2 client without redirection gets nothing (RESP2 has no pushes), as
    /// in Redis.
    fn send(&self, shared: &Shared, client: &TrackedClient, keys: Option<&[&[u8]]>) {
        let (mailbox, as_message) = if client.redirect == 0 {
            if client.info.resp.load(Relaxed) < 3 {
                return;
            }
            (client.mailbox.clone(), false)
        } else if let Some(mailbox) = shared
            .pubsub
            .subscriber(INVALIDATE_CHANNEL, client.redirect)
        {
            let resp2 = mailbox.client().resp.load(Relaxed) < 3;
            (mailbox, resp2)
        } else if let Some(target) = self.get(client.redirect) {
            if target.info.resp.load(Relaxed) < 3 {
                return;
            }
            (target.mailbox.clone(), false)
        } else {
            if !shared.clients.all().iter().any(|c| c.id == client.redirect) {
                client.broken_redirect.store(true, Relaxed);
                if client.info.resp.load(Relaxed) >= 3 {
                    let reply = Reply::Push(vec![
                        Reply::bulk_str("tracking-redir-broken"),
                        Reply::Int(client.redirect as i64),
                    ]);
                    client.mailbox.deliver(Delivery::Frame { reply, size: 48 });
                }
            }
            return;
        };
        let size = 48 + keys.map_or(0, |keys| keys.iter().map(|k| k.len() + 16).sum());
        let keys = match keys {
            Some(keys) => Reply::Array(keys.iter().map(Reply::bulk).collect()),
            None => Reply::Nil,
        };
        let reply = if as_message {
            Reply::Push(vec![
                Reply::bulk_str("message"),
                Reply::Bulk(Bytes::from_static(INVALIDATE_CHANNEL)),
                keys,
            ])
        } else {
            Reply::Push(vec![Reply::bulk_str("invalidate"), keys])
        };
        mailbox.deliver(Delivery::Frame { reply, size });
    }
}

/// Dispatch's call before a handler, for a connection in tracking mode: remembers the keys a
/// read-only command reads (default mode, per OPTIN/OPTOUT and CLIENT CACHING).
pub fn before_command(ctx: &mut Ctx<'_, '_>, cmd: &Command, args: &[&[u8]]) {
    let Some(mode) = &ctx.conn.tracking.mode else {
        return;
    };
    if !cmd.has(READONLY) || mode.bcast {
        return;
    }
    let caching = ctx.conn.tracking.caching;
    if (mode.optin && !caching) || (mode.optout && caching) {
        return;
    }
    let keys = cmd.key_positions(args.len()).map(|i| args[i]);
    ctx.shared
        .events
        .tracking
        .remember(ctx.shared, mode.id, keys);
}

/// Dispatch's call after a handler: CLIENT CACHING applies to the next command only (or the
/// next transaction), as in Redis.
pub fn after_command(ctx: &mut Ctx<'_, '_>, cmd: &Command) {
    if ctx.conn.tracking.caching
        && cmd.name != "client"
        && ctx.conn.multi.is_none()
        && !ctx.in_exec()
    {
        ctx.conn.tracking.caching = false;
    }
}

/// The options of CLIENT TRACKING, parsed.
#[derive(Default)]
struct TrackingOptions {
    redirect: u64,
    bcast: bool,
    optin: bool,
    optout: bool,
    noloop: bool,
    prefixes: Vec<Bytes>,
}

fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn error(text: impl Into<std::borrow::Cow<'static, str>>) -> Reply {
    Reply::Error(text.into())
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]… [BCAST] [OPTIN] [OPTOUT] [NOLOOP]`, with
/// Redis's checks in Redis's order.
pub fn client_tracking(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Result<Reply, Reply> {
    let mut o = TrackingOptions::default();
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        let arg = args[j];
        if is(arg, "redirect") && more {
            j += 1;
            if o.redirect != 0 {
                return Err(error(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = std::str::from_utf8(args[j])
                .ok()
                .and_then(|t| t.parse::<i64>().ok())
                .ok_or_else(|| error(crate::commands::err::NOT_INTEGER))?;
            let exists = u64::try_from(id)
                .ok()
                .is_some_and(|id| ctx.shared.clients.all().iter().any(|c| c.id == id));
            if !exists {
                return Err(error(
                    "ERR The client ID you want redirect to does not exist",
                ));
            }
            o.redirect = id as u64;
        } else if is(arg, "bcast") {
            o.bcast = true;
        } else if is(arg, "optin") {
            o.optin = true;
        } else if is(arg, "optout") {
            o.optout = true;
        } else if is(arg, "noloop") {
            o.noloop = true;
        } else if is(arg, "prefix") && more {
            j += 1;
            o.prefixes.push(Bytes::copy_from_slice(args[j]));
        } else {
            return Err(error(crate::commands::err::SYNTAX));
        }
        j += 1;
    }
    let current = ctx.conn.tracking.mode.clone();
    if is(args[2], "off") {
        if current.is_some() {
            ctx.conn.tracking = ConnTracking::default();
            ctx.shared.events.tracking.remove(ctx.conn.info.id);
            ctx.shared.events.update_gate();
        }
        return Ok(Reply::OK);
    }
    if !is(args[2], "on") {
        return Err(error(crate::commands::err::SYNTAX));
    }
    if !o.bcast && !o.prefixes.is_empty() {
        return Err(error("ERR PREFIX option requires BCAST mode to be enabled"));
    }
    if current.as_ref().is_some_and(|c| c.bcast != o.bcast) {
        return Err(error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if o.bcast && (o.optin || o.optout) {
        return Err(error("ERR OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if o.optin && o.optout {
        return Err(error(
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if current
        .as_ref()
        .is_some_and(|c| (o.optin && c.optout) || (o.optout && c.optin))
    {
        return Err(error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    let mut prefixes: Vec<Bytes> = current.as_ref().map_or(Vec::new(), |c| c.prefixes.clone());
    if o.bcast {
        check_prefix_collisions(&prefixes, &o.prefixes)?;
        if o.prefixes.is_empty() {
            o.prefixes.push(Bytes::new());
        }
        for p in o.prefixes {
            if !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
        prefixes.sort();
    }
    let info = ctx.conn.info.clone();
    // A tracking client is a `normal` client for the output-buffer limits, as in Redis.
    let limit = ctx.shared.config.read().client_output_buffer_limit.normal;
    let mailbox = ctx
        .conn
        .subs
        .mailbox(&info, crate::output_limit::ClientClass::Normal, limit);
    let client = Arc::new(TrackedClient {
        id: info.id,
        info,
        mailbox,
        redirect: o.redirect,
        bcast: o.bcast,
        optin: o.optin,
        optout: o.optout,
        noloop: o.noloop,
        prefixes,
        broken_redirect: AtomicBool::new(false),
    });
    ctx.conn.tracking.mode = Some(client.clone());
    ctx.shared.events.tracking.set(client);
    ctx.shared.events.update_gate();
    Ok(Reply::OK)
}

/// Redis's rule: no prefix of a client may be a prefix of another of its prefixes.
fn check_prefix_collisions(existing: &[Bytes], new: &[Bytes]) -> Result<(), Reply> {
    let overlap = |a: &[u8], b: &[u8]| {
        let n = a.len().min(b.len());
        a[..n] == b[..n]
    };
    let shown = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    for (i, p) in new.iter().enumerate() {
        if let Some(old) = existing.iter().find(|old| overlap(old, p)) {
            return Err(Reply::Error(format!("ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.", shown(p), shown(old)).into()));
        }
        if let Some(other) = new[i + 1..].iter().find(|other| overlap(p, other)) {
            return Err(Reply::Error(format!("ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.", shown(p), shown(other)).into()));
        }
    }
    Ok(())
}

/// `CLIENT CACHING YES|NO`.
pub fn client_caching(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Result<Reply, Reply> {
    let Some(mode) = &ctx.conn.tracking.mode else {
        return Err(error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"));
    };
    if is(args[2], "yes") {
        if !mode.optin {
            return Err(error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if is(args[2], "no") {
        if !mode.optout {
            return Err(error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(error(crate::commands::err::SYNTAX));
    }
    ctx.conn.tracking.caching = true;
    Ok(Reply::OK)
}

/// `CLIENT GETREDIR`: -1 when not tracking, 0 without redirection.
pub fn client_getredir(ctx: &mut Ctx<'_, '_>) -> Reply {
    Reply::Int(
        ctx.conn
            .tracking
            .mode
            .as_ref()
            .map_or(-1, |m| m.redirect as i64),
    )
}

/// `CLIENT TRACKINGINFO`: flags, redirect and prefixes, as Redis shows them.
pub fn client_trackinginfo(ctx: &mut Ctx<'_, '_>) -> Reply {
    let t = &ctx.conn.tracking;
    let mut flags = Vec::new();
    let mut redirect = -1;
    let mut prefixes = Vec::new();
    match &t.mode {
        None => flags.push(Reply::bulk_str("off")),
        Some(m) => {
            flags.push(Reply::bulk_str("on"));
            for (set, name) in [
                (m.bcast, "bcast"),
                (m.optin, "optin"),
                (m.optin && t.caching, "caching-yes"),
                (m.optout, "optout"),
                (m.optout && t.caching, "caching-no"),
                (m.noloop, "noloop"),
                (m.broken_redirect.load(Relaxed), "broken_redirect"),
            ] {
                if set {
                    flags.push(Reply::bulk_str(name));
                }
            }
            redirect = m.redirect as i64;
            prefixes = m.prefixes.iter().cloned().map(Reply::Bulk).collect();
        }
    }
    Reply::Map(vec![
        (Reply::bulk_str("flags"), Reply::Set(flags)),
        (Reply::bulk_str("redirect"), Reply::Int(redirect)),
        (Reply::bulk_str("prefixes"), Reply::Array(prefixes)),
    ])
}
