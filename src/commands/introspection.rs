//! Introspection commands: LATENCY, MEMORY, ROLE, WAIT, LOLWUT (DEBUG is in `debug.rs`). Texts are Redis 7's, measured against a real redis-server.

use super::args::is;
use super::connection::{help_reply, REDIS_VERSION};
use super::info::human_bytes;
use super::{err, CmdResult, Ctx};
use crate::metrics::Allocator;
use crate::protocol::Reply;
use crate::store::Value;
use std::fmt::Write;

pub fn latency(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let monitor = &ctx.shared.latency;
    let sub = args[1];
    if is(sub, "LATEST") {
        Ok(Reply::Array(
            monitor
                .events()
                .into_iter()
                .filter_map(|(name, h)| {
                    let last = h.samples.back()?;
                    Some(Reply::Array(vec![
                        Reply::bulk_str(name),
                        Reply::Int(last.time as i64),
                        Reply::Int(last.millis as i64),
                        Reply::Int(h.max as i64),
                    ]))
                })
                .collect(),
        ))
    } else if is(sub, "HISTORY") {
        let samples = monitor
            .history(args[2])
            .map(|h| h.samples)
            .unwrap_or_default();
        Ok(Reply::Array(
            samples
                .iter()
                .map(|s| Reply::Array(vec![Reply::Int(s.time as i64), Reply::Int(s.millis as i64)]))
                .collect(),
        ))
    } else if is(sub, "RESET") {
        Ok(Reply::Int(monitor.reset(&args[2..]) as i64))
    } else if is(sub, "GRAPH") {
        let event = String::from_utf8_lossy(args[2]).into_owned();
        match monitor.history(args[2]) {
            Some(h) if !h.samples.is_empty() => Ok(Reply::Verbatim(graph(&event, &h))),
            _ => Err(Reply::Error(
                format!("ERR No samples available for event '{event}'").into(),
            )),
        }
    } else if is(sub, "DOCTOR") {
        Ok(Reply::Verbatim(latency_doctor(ctx)))
    } else if is(sub, "HISTOGRAM") {
        let all = ctx.shared.command_stats.totals();
        let chosen: Vec<_> = if args.len() == 2 {
            all
        } else {
            all.into_iter()
                .filter(|t| {
                    args[2..]
                        .iter()
                        .any(|a| a.eq_ignore_ascii_case(t.name.as_bytes()))
                })
                .collect()
        };
        Ok(Reply::Map(
            chosen
                .into_iter()
                .filter(|t| t.calls > 0)
                .map(|t| (Reply::bulk(t.name.as_bytes()), histogram_reply(&t)))
                .collect(),
        ))
    } else {
        Ok(help_reply(&[
            "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
            "HELP",
            "    Print this help.",
        ]))
    }
}

/// `{calls, histogram_usec: {bound: calls at most that long}}` with power-of-two bounds from
/// 1024 ns, listing only bounds where the count grows, as Redis's LATENCY HISTOGRAM.
fn histogram_reply(t: &crate::command_stats::CommandTotals) -> Reply {
    let mut points = Vec::new();
    let mut previous = 0;
    let total: u64 = t.histogram.iter().sum();
    let mut bound = 1024u64;
    while previous < total && bound < (1 << 42) {
        let count = t.count_at_most(bound - 1);
        if count > previous {
            points.push((Reply::Int((bound / 1000) as i64), Reply::Int(count as i64)));
            previous = count;
        }
        bound *= 2;
    }
    if previous < total {
        points.push((Reply::Int((bound / 1000) as i64), Reply::Int(total as i64)));
    }
    Reply::Map(vec![
        (Reply::bulk_str("calls"), Reply::Int(t.calls as i64)),
        (Reply::bulk_str("histogram_usec"), Reply::Map(points)),
    ])
}

/// A bar per sample, tallest at the event's worst, oldest on the left.
fn graph(event: &str, h: &crate::latency::EventHistory) -> String {
    const ROWS: u64 = 4;
    let high = h.samples.iter().map(|s| s.millis).max().unwrap_or(0);
    let low = h.samples.iter().map(|s| s.millis).min().unwrap_or(0);
    let mut text = format!(
        "{event} - high {high} ms, low {low} ms (all time high {} ms)\n{}\n",
        h.max,
        "-".repeat(80)
    );
    for row in (1..=ROWS).rev() {
        let line: String = h
            .samples
            .iter()
            .map(|s| {
                if high > 0 && s.millis * ROWS >= row * high {
                    '#'
                } else {
                    ' '
                }
            })
            .collect();
        let _ = writeln!(text, "{}", line.trim_end());
    }
    text
}

fn latency_doctor(ctx: &Ctx) -> String {
    let monitor = &ctx.shared.latency;
    if monitor.threshold() == 0 {
        return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n".into();
    }
    let events = monitor.events();
    if events.is_empty() {
        return "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sleep tonight.\n".into();
    }
    let mut text = String::from(
        "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n",
    );
    for (i, (name, h)) in events.iter().enumerate() {
        let samples = h.samples.len().max(1) as u64;
        let average = h.samples.iter().map(|s| s.millis).sum::<u64>() / samples;
        let _ = writeln!(
            text,
            "{}. {name}: {} latency spikes (average {average}ms, worst {}ms).",
            i + 1,
            h.samples.len(),
            h.max
        );
    }
    text.push_str(
        "\nI have a few advices for you:\n\n- Check your slow commands with SLOWLOG GET: stmd runs each command on the thread that read it, so a slow command delays that thread's other clients.\n",
    );
    text
}

pub fn memory(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if is(sub, "USAGE") {
        memory_usage(ctx, args)
    } else if is(sub, "STATS") {
        Ok(memory_stats(ctx))
    } else if is(sub, "DOCTOR") {
        Ok(Reply::Verbatim(memory_doctor(ctx)))
    } else if is(sub, "MALLOC-STATS") {
        Ok(Reply::Verbatim(crate::metrics::allocator_report()))
    } else if is(sub, "PURGE") {
        crate::metrics::purge_allocator();
        Ok(Reply::OK)
    } else {
        Ok(help_reply(&[
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
            "HELP",
            "    Print this help.",
        ]))
    }
}

/// Bytes a key takes beside its name and value: its node's entry (48) and length byte, and its
/// 8-byte table slot with the table's share of empty ones (see `store::shard`).
const ENTRY_OVERHEAD: usize = 64;
/// Bytes each collection element costs beside its own bytes (a `Bytes` header and the map slot).
const ELEMENT_OVERHEAD: usize = 40;

fn memory_usage(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut samples = 5usize;
    let mut rest = args[3..].iter();
    while let Some(option) = rest.next() {
        match rest.next() {
            Some(n) if is(option, "SAMPLES") => {
                let n = super::args::int(n)?;
                if n < 0 {
                    return Err(Reply::error(err::SYNTAX));
                }
                samples = if n == 0 { usize::MAX } else { n as usize };
            }
            _ => return Err(Reply::error(err::SYNTAX)),
        }
    }
    let key = args[2];
    let locked = ctx.lock(&[key]);
    let Some(entry) = locked.peek(key) else {
        return Ok(Reply::Nil);
    };
    let size = ENTRY_OVERHEAD + key.len() + value_size(&entry.value, samples);
    Ok(Reply::Int(size as i64))
}

/// Estimated bytes of a value: exact for strings and for the one buffer of a small hash, set or
/// sorted set; for other collections the average of up to `samples` elements times the element
/// count (Redis's sampling rule).
pub(crate) fn value_size(value: &Value, samples: usize) -> usize {
    fn sampled(count: usize, items: impl Iterator<Item = usize>, samples: usize) -> usize {
        if count == 0 {
            return 0;
        }
        let taken = count.min(samples);
        let sum: usize = items.take(taken).map(|n| n + ELEMENT_OVERHEAD).sum();
        sum / taken * count
    }
    match value {
        Value::Str(b) => b.len(),
        Value::List(items) => sampled(items.len(), items.iter().map(|b| b.len()), samples),
        // A small hash, set or sorted set is one buffer: its size is exact, no sample needed.
        Value::Hash(map) => map.packed_bytes().unwrap_or_else(|| {
            sampled(
                map.len(),
                map.iter().map(|(k, v)| k.len() + v.len()),
                samples,
            )
        }),
        Value::Set(set) => set
            .packed_bytes()
            .unwrap_or_else(|| sampled(set.len(), set.iter().map(|m| m.len()), samples)),
        Value::ZSet(z) => z.packed_bytes().unwrap_or_else(|| {
            sampled(z.len(), z.iter().map(|(m, _)| m.len() + 8), samples) + z.len() * 16
        }),
        Value::Stream(s) => s.memory(),
        Value::Json(doc) => doc.memory(),
        Value::Stm(e) => {
            std::mem::size_of_val(e.as_ref())
                + e.block().heap_bytes()
                + e.summary().map_or(0, str::len)
                + e.categories()
                    .iter()
                    .map(|(a, b)| a.len() + b.len() + 48)
                    .sum::<usize>()
        }
    }
}

fn memory_stats(ctx: &Ctx) -> Reply {
    let shared = ctx.shared;
    let alloc = Allocator::read();
    let used = alloc.allocated;
    let peak = shared.memory_marks.peak(used);
    let startup = shared.memory_marks.startup.min(used);
    let rss = crate::metrics::rss_bytes();
    let keys = super::databases::total_keys(ctx) as u64;
    let dataset = used - startup;
    let int = |n: u64| Reply::Int(n.min(i64::MAX as u64) as i64);
    let ratio = |a: u64, b: u64| Reply::Double(if b == 0 { 0.0 } else { a as f64 / b as f64 });
    let field = |name: &'static str, value: Reply| (Reply::bulk_str(name), value);
    let mut fields = vec![
        field("peak.allocated", int(peak)),
        field("total.allocated", int(used)),
        field("startup.allocated", int(startup)),
        field("replication.backlog", int(0)),
        field("clients.slaves", int(0)),
        field("clients.normal", int(0)),
        field("cluster.links", int(0)),
        field("aof.buffer", int(0)),
        field("lua.caches", int(0)),
        field("functions.caches", int(0)),
        field("overhead.total", int(startup)),
    ];
    if keys > 0 {
        fields.push((
            Reply::bulk_str("db.0"),
            Reply::Map(vec![
                field("overhead.hashtable.main", int(keys * ENTRY_OVERHEAD as u64)),
                field("overhead.hashtable.expires", int(0)),
                field("overhead.hashtable.slot-to-keys", int(0)),
            ]),
        ));
    }
    fields.extend([
        field("keys.count", int(keys)),
        field(
            "keys.bytes-per-key",
            int(dataset.checked_div(keys).unwrap_or(0)),
        ),
        field("dataset.bytes", int(dataset)),
        field(
            "dataset.percentage",
            Reply::Double(if used == 0 {
                0.0
            } else {
                100.0 * dataset as f64 / used as f64
            }),
        ),
        field(
            "peak.percentage",
            Reply::Double(if peak == 0 {
                0.0
            } else {
                100.0 * used as f64 / peak as f64
            }),
        ),
        field("allocator.allocated", int(alloc.allocated)),
        field("allocator.active", int(alloc.active)),
        field("allocator.resident", int(alloc.resident)),
        field(
            "allocator-fragmentation.ratio",
            ratio(alloc.active, alloc.allocated),
        ),
        field(
            "allocator-fragmentation.bytes",
            int(alloc.active.saturating_sub(alloc.allocated)),
        ),
        field("allocator-rss.ratio", ratio(alloc.resident, alloc.active)),
        field(
            "allocator-rss.bytes",
            int(alloc.resident.saturating_sub(alloc.active)),
        ),
        field("rss-overhead.ratio", ratio(rss, alloc.resident)),
        field(
            "rss-overhead.bytes",
            int(rss.saturating_sub(alloc.resident)),
        ),
        field("fragmentation", ratio(rss, used)),
        field("fragmentation.bytes", int(rss.saturating_sub(used))),
    ]);
    Reply::Map(fields)
}

/// Redis's rule of thumb: below 5 MB there is nothing to diagnose; above, report fragmentation
/// and RSS overhead when they pass Redis's thresholds (1.4 and 1.1).
fn memory_doctor(ctx: &Ctx) -> String {
    let alloc = Allocator::read();
    let used = alloc.allocated;
    if used < 5 * 1024 * 1024 {
        return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.".into();
    }
    let peak = ctx.shared.memory_marks.peak(used);
    let rss = crate::metrics::rss_bytes();
    let mut issues = Vec::new();
    if peak > used.saturating_mul(3) / 2 {
        issues.push(format!(
            " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance. (peak {}, now {})\n\n",
            human_bytes(peak),
            human_bytes(used)
        ));
    }
    if alloc.active as f64 > alloc.allocated as f64 * 1.1 {
        issues.push(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n".to_string());
    }
    if rss as f64 > alloc.resident as f64 * 1.1 {
        issues.push(" * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this may indicate that the process has mapped other memory beside the allocator).\n\n".to_string());
    }
    if issues.is_empty() {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.".into();
    }
    let mut text =
        String::from("Sam, I detected a few issues in this Redis instance memory implants:\n\n");
    issues.iter().for_each(|i| text.push_str(i));
    text.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    text
}

/// ROLE: this node's place in replication.
pub fn role(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if let Some(replica) = crate::replication::replica::role(ctx.shared) {
        return Ok(replica);
    }
    Ok(super::replication::primary_role(ctx))
}

/// LOLWUT [VERSION v]: the version line Redis prints for versions without art (no art here).
pub fn lolwut(_ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // `VERSION v` and then the drawing's size parameters, all integers; other words are ignored.
    if args.len() > 2 && is(args[1], "VERSION") {
        for arg in &args[2..] {
            super::args::int(arg)?;
        }
    }
    Ok(Reply::Verbatim(format!("Redis ver. {REDIS_VERSION}\n")))
}
