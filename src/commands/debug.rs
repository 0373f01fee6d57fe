//! DEBUG, behind `enable-debug-command` as in Redis: the subcommands client libraries' test suites,
//! benchmark set-ups and operators use (DIGEST, POPULATE, RELOAD, LOADAOF, PROTOCOL, ERROR…), with
//! Redis 7.2's replies and argument checks. Those that only tune Redis's C internals are accepted
//! and do nothing; those that crash or restart the server are refused.

use super::args::is;
use super::connection::help_reply;
use super::{err, CmdResult, Ctx};
use crate::config::ProtectedCommand;
use crate::protocol::Reply;
use crate::store::{digest, CompactBytes, Value};
use std::sync::atomic::Ordering::Relaxed;

/// What DEBUG HELP says: Redis 7.2's lines for the subcommands served here, in its order.
const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "HELP",
    "    Print this help.",
];

/// Subcommands that crash, hang up or restart Redis on purpose (or poke its allocator): a server
/// that serves other clients refuses them rather than dying.
const REFUSED: &[&str] = &[
    "SEGFAULT",
    "PANIC",
    "ASSERT",
    "OOM",
    "RESTART",
    "CRASH-AND-RECOVER",
    "MALLCTL",
    "MALLCTL-STR",
    "KILL-SELF",
];

/// Subcommands `name <0|1>` that set a switch of Redis's internals stmd does not have: their
/// argument is read as C's `atoi` reads it (anything goes) and the answer is OK.
const INERT_SWITCHES: &[&str] = &[
    "AOF-FLUSH-SLEEP",
    "PAUSE-CRON",
    "SET-DISABLE-DENY-SCRIPTS",
    "DICT-RESIZING",
];

fn unknown(sub: &[u8]) -> Reply {
    let name = String::from_utf8_lossy(&sub[..sub.len().min(128)]).into_owned();
    Reply::Error(
        format!(
            "ERR unknown subcommand or wrong number of arguments for '{name}'. Try DEBUG HELP."
        )
        .into(),
    )
}

/// C's `atoi`: optional sign, leading digits, 0 when there are none.
fn atoi(arg: &[u8]) -> i64 {
    let text = std::str::from_utf8(arg).unwrap_or("").trim_start();
    let (sign, digits) = match text.as_bytes().first() {
        Some(b'-') => (-1, &text[1..]),
        Some(b'+') => (1, &text[1..]),
        _ => (1, text),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    sign * digits[..end].parse::<i64>().unwrap_or(0)
}

pub fn debug(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let setting = ctx.shared.config.read().enable_debug_command;
    if !setting.allows(ctx.conn.info.addr.is_local()) {
        return Err(Reply::Error(
            ProtectedCommand::refusal("DEBUG", "enable-debug-command").into(),
        ));
    }
    let (sub, n) = (args[1], args.len());
    if is(sub, "HELP") && n == 2 {
        Ok(help_reply(HELP))
    } else if let Some(name) = REFUSED.iter().find(|name| is(sub, name)) {
        Err(Reply::Error(
            format!("ERR DEBUG {name} is not supported by stmd: it would crash or restart a server other clients use").into(),
        ))
    } else if is(sub, "DIGEST") && n == 2 {
        Ok(Reply::Status(digest_dataset(ctx).into()))
    } else if is(sub, "DIGEST-VALUE") {
        Ok(digest_values(ctx, &args[2..]))
    } else if is(sub, "POPULATE") && (3..=5).contains(&n) {
        populate(ctx, args)
    } else if is(sub, "RELOAD") {
        reload::reload(ctx, &args[2..])
    } else if is(sub, "LOADAOF") {
        reload::loadaof(ctx)
    } else if is(sub, "PROTOCOL") && n == 3 {
        protocol(ctx.conn.resp3, args[2])
    } else if is(sub, "ERROR") && n == 3 {
        // The text as given, line ends made spaces; not counted as an error reply (Redis writes
        // it as raw bytes too).
        let mut line = Vec::with_capacity(args[2].len() + 3);
        line.push(b'-');
        line.extend(args[2].iter().map(|&b| match b {
            b'\r' | b'\n' => b' ',
            b => b,
        }));
        line.extend_from_slice(b"\r\n");
        Ok(Reply::Raw(line.into()))
    } else if is(sub, "LOG") && n == 3 {
        tracing::warn!("DEBUG LOG: {}", String::from_utf8_lossy(args[2]));
        Ok(Reply::OK)
    } else if is(sub, "SLEEP") && n == 3 {
        // strtod: a number's prefix, else 0 (no error, as Redis).
        let seconds = float_prefix(args[2]);
        // Blocks this worker thread on purpose: DEBUG SLEEP exists to simulate a slow command.
        std::thread::sleep(std::time::Duration::from_secs_f64(
            seconds.clamp(0.0, 3600.0),
        ));
        Ok(Reply::OK)
    } else if is(sub, "OBJECT") && n == 3 {
        object(ctx, args[2])
    } else if is(sub, "SET-ACTIVE-EXPIRE") && n == 3 {
        ctx.shared
            .store
            .active_expire
            .store(atoi(args[2]) != 0, Relaxed);
        Ok(Reply::OK)
    } else if is(sub, "SET-SKIP-CHECKSUM-VALIDATION") && n == 3 {
        crate::rdb::SKIP_CHECKSUM.store(atoi(args[2]) != 0, Relaxed);
        Ok(Reply::OK)
    } else if INERT_SWITCHES.iter().any(|name| is(sub, name)) && n == 3 {
        let _ = atoi(args[2]);
        Ok(Reply::OK)
    } else if is(sub, "QUICKLIST-PACKED-THRESHOLD") && n == 3 {
        // Lists here have no packed and plain nodes; the bounds are checked as Redis does.
        let size = std::str::from_utf8(args[2])
            .ok()
            .filter(|t| !t.starts_with('-') && !t.starts_with('+'))
            .and_then(|t| crate::config::parse_memory(t).ok());
        match size {
            Some(size) if size <= (1u64 << 32) - (1 << 20) => Ok(Reply::OK),
            _ => Err(Reply::error(
                "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
            )),
        }
    } else if is(sub, "DROP-CLUSTER-PACKET-FILTER") && n == 3 {
        super::args::int(args[2])?;
        Ok(Reply::OK)
    } else if is(sub, "REPLYBUFFER") && n == 4 {
        if is(args[2], "PEAK-RESET-TIME") {
            if !is(args[3], "NEVER") && !is(args[3], "RESET") {
                super::args::int(args[3])?;
            }
        } else if !is(args[2], "RESIZING") {
            return Err(unknown(sub));
        }
        Ok(Reply::OK)
    } else if is(sub, "CHANGE-REPL-ID") && n == 2 {
        change_repl_id(ctx);
        Ok(Reply::OK)
    } else if is(sub, "STRINGMATCH-TEST") && n == 2 {
        stringmatch_test();
        Ok(Reply::Status(
            "Apparently Redis did not crash: test passed".into(),
        ))
    } else if is(sub, "CONFIG-REWRITE-FORCE-ALL") && n == 2 {
        let config = ctx.shared.config.read().clone();
        let Some(file) = &config.config_file else {
            // Redis's text when it runs without a file (its rewrite fails on the missing name).
            return Err(Reply::error(
                "ERR CONFIG-REWRITE-FORCE-ALL failed: Bad address",
            ));
        };
        crate::config::file::rewrite(file, &config).map_err(|e| {
            Reply::Error(format!("ERR CONFIG-REWRITE-FORCE-ALL failed: {e}").into())
        })?;
        Ok(Reply::OK)
    } else {
        Err(unknown(sub))
    }
}

/// strtod's reading of a number at the start of `arg` (0 when there is none).
fn float_prefix(arg: &[u8]) -> f64 {
    let text = std::str::from_utf8(arg).unwrap_or("").trim_start();
    (1..=text.len())
        .rev()
        .filter(|&end| text.is_char_boundary(end))
        .find_map(|end| text[..end].parse::<f64>().ok())
        .filter(|s| s.is_finite())
        .unwrap_or(0.0)
}

/// DEBUG OBJECT: Redis's status line, with the figures stmd has.
fn object(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    let thresholds = ctx.shared.config.read().encoding_thresholds();
    let locked = ctx.lock(&[key]);
    let Some(entry) = locked.peek(key) else {
        return Err(Reply::error(err::NO_SUCH_KEY));
    };
    let encoding = crate::store::encoding::name(&entry.value, entry.outgrown(), &thresholds);
    let length = match &entry.value {
        Value::Str(b) => b.len(),
        Value::List(l) => l.len(),
        Value::Hash(h) => h.len(),
        Value::Set(s) => s.len(),
        Value::ZSet(z) => z.len(),
        Value::Stm(e) => e.messages().len(),
        Value::Stream(s) => s.len(),
        Value::Json(_) => 1,
    };
    let serialized = super::introspection::value_size(&entry.value, usize::MAX);
    Ok(Reply::Status(
        format!(
            "Value at:0x0 refcount:1 encoding:{encoding} serializedlength:{serialized} lru:0 lru_seconds_idle:{} ql_nodes:{length}",
            entry.idle_secs(locked.now)
        )
        .into(),
    ))
}

/// DEBUG DIGEST: every database, each locked whole while it is read; keys expired but not
/// reclaimed yet count, as in Redis (a replica keeps them until its primary's DEL).
fn digest_dataset(ctx: &mut Ctx) -> String {
    let mut dataset = [0u8; 20];
    let dbs: Vec<usize> = ctx.shared.store.existing_dbs().map(|(db, _)| db).collect();
    for db in dbs {
        let locked = ctx.lock_all_of(db);
        let mut keys = [0u8; 20];
        let mut any = false;
        locked.for_each_stored(|name, entry| {
            any = true;
            digest::add(&mut keys, &digest::key_digest(name, entry));
        });
        if any {
            digest::add_database(&mut dataset, db, &keys);
        }
    }
    digest::hex(&dataset)
}

/// DEBUG DIGEST-VALUE key…: each value's digest (without its name), zeros for a missing key.
fn digest_values(ctx: &mut Ctx, keys: &[&[u8]]) -> Reply {
    if keys.is_empty() {
        return Reply::Array(Vec::new());
    }
    let locked = ctx.lock(keys);
    let found = locked.entries_of(keys);
    Reply::Array(
        keys.iter()
            .map(|key| {
                let mut sum = [0u8; 20];
                if let Some((_, entry)) = found.iter().find(|(name, _)| name == key) {
                    digest::value_into(&mut sum, entry);
                }
                Reply::Status(digest::hex(&sum).into())
            })
            .collect(),
    )
}

/// Keys made per round of DEBUG POPULATE: names are made and sorted by shard, then each shard is
/// locked once for its share, so a million keys cost a few thousand lock takes, not a million.
const POPULATE_BATCH: usize = 1 << 16;

/// DEBUG POPULATE count [prefix] [size]: `prefix:<n>` = `value:<n>` (cut or padded with zero
/// bytes to `size`), existing keys left alone; not propagated, as in Redis.
fn populate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let positive = |arg: &[u8]| -> Result<u64, Reply> {
        std::str::from_utf8(arg)
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .filter(|&n| n >= 0)
            .map(|n| n as u64)
            .ok_or_else(|| Reply::error("ERR value is out of range, must be positive"))
    };
    let count = positive(args[2])?;
    let size = match args.get(4) {
        Some(arg) => positive(arg)? as usize,
        None => 0,
    };
    let prefix: &[u8] = args.get(3).copied().unwrap_or(b"key");
    // Redis formats names into a 128-byte buffer: longer ones are cut at 127 bytes.
    let name_of = |j: u64| -> Vec<u8> {
        let mut name = Vec::with_capacity(prefix.len() + 21);
        name.extend_from_slice(prefix);
        name.push(b':');
        name.extend_from_slice(itoa::Buffer::new().format(j).as_bytes());
        name.truncate(127);
        name
    };
    let value_of = |j: u64| -> Value {
        let mut value = Vec::with_capacity(size.max(16));
        value.extend_from_slice(b"value:");
        value.extend_from_slice(itoa::Buffer::new().format(j).as_bytes());
        if size > 0 {
            value.resize(size, 0);
        }
        Value::Str(CompactBytes::from_vec(value))
    };
    let db = ctx.conn.db;
    if ctx.in_exec() {
        // Inside EXEC every shard is already the transaction's.
        let mut locked = ctx.lock_all();
        for j in 0..count {
            let name = name_of(j);
            if !locked.contains(&name) {
                locked.set(&name, value_of(j), 0);
            }
        }
        return Ok(Reply::OK);
    }
    let store = &ctx.shared.store;
    let space = store.db(db);
    let mut by_shard: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); store.shard_count()];
    let mut next = 0u64;
    while next < count {
        let end = count.min(next + POPULATE_BATCH as u64);
        for j in next..end {
            let name = name_of(j);
            by_shard[space.shard_of(&name)].push((j, name));
        }
        for (shard, names) in by_shard.iter_mut().enumerate() {
            if names.is_empty() {
                continue;
            }
            let mut locked = store.lock_shard(db, shard);
            for (j, name) in names.drain(..) {
                if !locked.contains(&name) {
                    locked.set(&name, value_of(j), 0);
                }
            }
        }
        next = end;
    }
    Ok(Reply::OK)
}

/// The double Redis's DEBUG PROTOCOL answers: its literal, not an approximation of pi.
#[allow(clippy::approx_constant)]
const REDIS_TEST_DOUBLE: f64 = 3.141;

/// DEBUG PROTOCOL type: one value of each RESP3 type, downgraded for RESP2 as Redis does.
fn protocol(resp3: bool, name: &[u8]) -> CmdResult {
    let ints = || (0..3).map(Reply::Int).collect::<Vec<_>>();
    let reply = if is(name, "string") {
        Reply::bulk_str("Hello World")
    } else if is(name, "integer") {
        Reply::Int(12345)
    } else if is(name, "double") {
        Reply::Double(REDIS_TEST_DOUBLE)
    } else if is(name, "bignum") {
        Reply::BigNum("1234567999999999999999999999999999999".into())
    } else if is(name, "null") {
        Reply::Nil
    } else if is(name, "array") {
        Reply::Array(ints())
    } else if is(name, "set") {
        Reply::Set(ints())
    } else if is(name, "map") {
        Reply::Map(
            (0..3)
                .map(|j| (Reply::Int(j), Reply::Bool(j == 1)))
                .collect(),
        )
    } else if is(name, "attrib") {
        Reply::Attribute(Box::new((
            vec![(
                Reply::bulk_str("key-popularity"),
                Reply::Array(vec![Reply::bulk_str("key:123"), Reply::Int(90)]),
            )],
            Reply::bulk_str("Some real reply following the attribute"),
        )))
    } else if is(name, "push") {
        if !resp3 {
            return Err(Reply::error("ERR RESP2 is not supported by this command"));
        }
        // A push frame and then the command's own reply, as two frames in one write.
        let mut out = bytes::BytesMut::new();
        Reply::Push(vec![Reply::bulk_str("server-cpu-usage"), Reply::Int(42)])
            .encode(true, &mut out);
        Reply::bulk_str("Some real reply following the push reply").encode(true, &mut out);
        Reply::Raw(out.freeze())
    } else if is(name, "true") {
        Reply::Bool(true)
    } else if is(name, "false") {
        Reply::Bool(false)
    } else if is(name, "verbatim") {
        Reply::Verbatim("This is a verbatim\nstring".into())
    } else {
        return Err(Reply::error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false"));
    };
    Ok(reply)
}

/// DEBUG CHANGE-REPL-ID: a new replication id, and no previous one (Redis's
/// `changeReplicationId` then `clearReplicationId2`): no replica can continue from before.
fn change_repl_id(ctx: &mut Ctx) {
    let replication = &ctx.shared.replication;
    tracing::info!("Changing replication IDs after receiving DEBUG change-repl-id");
    *replication.replid.lock() = crate::replication::new_replid();
    *replication.replid2.lock() = "0".repeat(40);
    replication.second_offset.store(-1, Relaxed);
}

/// DEBUG STRINGMATCH-TEST: random patterns against random texts through the glob matcher, which
/// must answer every one of them (no panic, no runaway backtracking).
fn stringmatch_test() {
    use rand::Rng;
    const ALPHABET: &[u8] = b"*?[]\\^-abc";
    let mut rng = rand::thread_rng();
    for _ in 0..100_000 {
        let pattern: Vec<u8> = (0..rng.gen_range(0..32))
            .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())])
            .collect();
        let text: Vec<u8> = (0..rng.gen_range(0..32))
            .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())])
            .collect();
        let _ = crate::glob::matches(&pattern, &text, rng.gen_bool(0.5));
    }
}

mod reload;
