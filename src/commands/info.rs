//! INFO, with Redis 7.2's sections, field names and section selection (`default`, `all`,
//! `everything`, named sections, case-insensitive, unknown names ignored). Every figure is true
//! of stmd: what stmd does not do (RDB, AOF, replicas, forks) reports as not happening, and fields
//! stmd cannot measure are left out rather than invented (docs/operations.md: INFO and introspection).

use super::connection::REDIS_VERSION;
use super::{CmdResult, Ctx};
use crate::metrics::{allocated_bytes, allocator_name, Allocator};
use crate::percpu::Total;
use crate::protocol::Reply;
use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::atomic::Ordering::Relaxed;

/// Every section in Redis's order; `stm` is ours, rendered last like a module's section.
const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
    "stm",
];
/// What `INFO` and `INFO default` show: all but the per-command sections.
const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
    "stm",
];

pub fn info(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut wanted: Vec<&str> = Vec::new();
    if args.len() == 1 {
        wanted.extend(DEFAULT_SECTIONS);
    }
    for arg in &args[1..] {
        let name = String::from_utf8_lossy(arg).to_ascii_lowercase();
        match name.as_str() {
            "default" => wanted.extend(DEFAULT_SECTIONS),
            "all" | "everything" => wanted.extend(SECTIONS),
            other => wanted.extend(SECTIONS.iter().filter(|s| **s == other)),
        }
    }
    let mut text = String::new();
    for section in SECTIONS.iter().filter(|s| wanted.contains(s)) {
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        render(ctx, section, &mut text);
    }
    Ok(Reply::Verbatim(text))
}

fn title(section: &str) -> String {
    match section {
        "cpu" => "CPU".into(),
        "stm" => "STM".into(),
        other => {
            let mut title = other.to_string();
            title[..1].make_ascii_uppercase();
            title
        }
    }
}

/// Writes `name:value\r\n` lines.
struct Lines<'a>(&'a mut String);

impl Lines<'_> {
    fn add(&mut self, name: &str, value: impl std::fmt::Display) {
        let _ = write!(self.0, "{name}:{value}\r\n");
    }
}

fn render(ctx: &Ctx, section: &str, out: &mut String) {
    let _ = write!(out, "# {}\r\n", title(section));
    let mut lines = Lines(out);
    let shared = ctx.shared;
    match section {
        "server" => server(ctx, &mut lines),
        "clients" => {
            let buffers = shared.clients.buffer_peaks();
            lines.add("connected_clients", shared.clients.len());
            lines.add("cluster_connections", 0);
            lines.add("maxclients", shared.config.read().maxclients);
            lines.add("client_recent_max_input_buffer", buffers.input);
            lines.add("client_recent_max_output_buffer", buffers.output);
            lines.add(
                "blocked_clients",
                shared
                    .store
                    .existing_dbs()
                    .map(|(_, space)| space.waiters.blocked_clients())
                    .sum::<usize>()
                    + shared.store.pause.waiting(),
            );
            lines.add("tracking_clients", shared.events.tracking.client_count());
            lines.add("clients_in_timeout_table", buffers.with_timeout);
        }
        "memory" => memory(ctx, &mut lines),
        "persistence" => {
            // The snapshot or the log is loaded before any client connects.
            lines.add("loading", 0);
            lines.add("async_loading", 0);
            for (field, value) in shared.snapshots.info_fields(&shared.store) {
                lines.add(field, value);
            }
            for (field, value) in shared.aof.info_fields() {
                lines.add(field, value);
            }
        }
        "stats" => stats(ctx, &mut lines),
        "replication" => {
            // A replica's own fields (role to replica_announced), else a primary's role.
            let following = crate::replication::replica::info_fields(shared);
            if following.is_empty() {
                lines.add("role", "master");
            }
            for (name, value) in following {
                lines.add(name, value);
            }
            let replication = &shared.replication;
            let replicas = replication.master.replicas();
            lines.add("connected_slaves", replicas.len());
            if let Some(good) = replication.master.good_replicas() {
                lines.add("min_slaves_good_slaves", good);
            }
            let now = crate::store::now_ms();
            for (i, r) in replicas.iter().enumerate() {
                let lag = now.saturating_sub(r.last_ack_ms.load(Relaxed)) / 1000;
                lines.add(
                    &format!("slave{i}"),
                    format_args!(
                        "ip={},port={},state={},offset={},lag={lag}",
                        r.ip,
                        r.port,
                        r.state(),
                        r.acked.load(Relaxed)
                    ),
                );
            }
            let backlog = shared.replication.feed.state();
            lines.add("master_failover_state", replication.failover.phase().name());
            lines.add("master_replid", &*replication.replid.lock());
            lines.add("master_replid2", &*replication.replid2.lock());
            lines.add(
                "master_repl_offset",
                crate::replication::repl_offset(shared),
            );
            lines.add(
                "second_repl_offset",
                replication.second_offset.load(Relaxed),
            );
            lines.add("repl_backlog_active", u8::from(backlog.active));
            lines.add("repl_backlog_size", backlog.size);
            lines.add(
                "repl_backlog_first_byte_offset",
                if backlog.active {
                    backlog.first_byte
                } else {
                    0
                },
            );
            lines.add("repl_backlog_histlen", backlog.histlen);
        }
        "cpu" => cpu(&mut lines),
        "modules" => {
            for (name, version) in crate::spec::BUILTIN_MODULES {
                lines.add(
                    "module",
                    format_args!(
                        "name={name},ver={version},api=1,filters=0,usedby=[],using=[],options=[]"
                    ),
                );
            }
        }
        "commandstats" => {
            for c in shared.command_stats.totals() {
                let per_call = if c.calls == 0 {
                    0.0
                } else {
                    c.nanos as f64 / 1000.0 / c.calls as f64
                };
                lines.add(
                    &format!("cmdstat_{}", c.name),
                    format_args!(
                        "calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}",
                        c.calls,
                        c.usec(),
                        c.rejected_calls,
                        c.failed_calls
                    ),
                );
            }
        }
        "errorstats" => {
            for (code, count) in shared.command_stats.errors() {
                lines.add(&format!("errorstat_{code}"), format_args!("count={count}"));
            }
        }
        "latencystats" => {
            let config = shared.config.read();
            if !config.latency_tracking {
                return;
            }
            let percentiles = config.latency_tracking_info_percentiles.0.clone();
            drop(config);
            for c in shared.command_stats.totals() {
                if c.histogram.iter().all(|&n| n == 0) {
                    continue;
                }
                let values: Vec<String> = percentiles
                    .iter()
                    .map(|&p| format!("p{p}={:.3}", c.percentile_usec(p)))
                    .collect();
                lines.add(
                    &format!("latency_percentiles_usec_{}", c.name),
                    values.join(","),
                );
            }
        }
        "cluster" => super::cluster::info_lines(ctx, &mut |n, v| lines.add(n, v)),
        "keyspace" => super::databases::keyspace_info(ctx, &mut |n, v| lines.add(n, v)),
        "stm" => shared
            .stm
            .render_info(&shared.store, &mut |n, v| lines.add(n, v)),
        _ => {}
    }
}

fn server(ctx: &Ctx, lines: &mut Lines) {
    let shared = ctx.shared;
    let uptime = shared.started.elapsed().as_secs();
    let now_usec = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    lines.add("redis_version", REDIS_VERSION);
    lines.add("stmd_version", env!("CARGO_PKG_VERSION"));
    lines.add("redis_git_sha1", "00000000");
    lines.add("redis_git_dirty", 0);
    lines.add("redis_mode", "standalone");
    lines.add("os", os_name());
    lines.add("arch_bits", usize::BITS);
    lines.add("multiplexing_api", multiplexing_api());
    lines.add("process_id", std::process::id());
    lines.add("process_supervised", shared.supervisor.name());
    lines.add("run_id", &shared.run_id);
    lines.add("tcp_port", shared.tcp_port.load(Ordering::Relaxed));
    lines.add("server_time_usec", now_usec);
    lines.add("uptime_in_seconds", uptime);
    lines.add("uptime_in_days", uptime / 86400);
    lines.add(
        "executable",
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
    lines.add("config_file", "");
    lines.add("io_threads_active", 0);
}

/// `Linux 6.1.0 x86_64`, as Redis prints uname.
fn os_name() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut os = std::env::consts::OS.to_string();
    os[..1].make_ascii_uppercase();
    format!("{os} {} {}", release.trim(), std::env::consts::ARCH)
}

/// The readiness API tokio (mio) uses on this platform.
fn multiplexing_api() -> &'static str {
    if cfg!(any(target_os = "linux", target_os = "android")) {
        "epoll"
    } else if cfg!(any(target_os = "macos", target_os = "freebsd")) {
        "kqueue"
    } else {
        "unknown"
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn memory(ctx: &Ctx, lines: &mut Lines) {
    let shared = ctx.shared;
    let alloc = Allocator::read();
    let used = alloc.allocated;
    let rss = crate::metrics::rss_bytes();
    let peak = shared.memory_marks.peak(used);
    let startup = shared.memory_marks.startup.min(used);
    let dataset = used - startup;
    let total_system = total_system_memory();
    lines.add("used_memory", used);
    lines.add("used_memory_human", human_bytes(used));
    lines.add("used_memory_rss", rss);
    lines.add("used_memory_rss_human", human_bytes(rss));
    lines.add("used_memory_peak", peak);
    lines.add("used_memory_peak_human", human_bytes(peak));
    lines.add(
        "used_memory_peak_perc",
        format_args!("{:.2}%", 100.0 * ratio(used, peak)),
    );
    lines.add("used_memory_overhead", startup);
    lines.add("used_memory_startup", startup);
    lines.add("used_memory_dataset", dataset);
    lines.add(
        "used_memory_dataset_perc",
        format_args!("{:.2}%", 100.0 * ratio(dataset, used)),
    );
    lines.add("allocator_allocated", alloc.allocated);
    lines.add("allocator_active", alloc.active);
    lines.add("allocator_resident", alloc.resident);
    lines.add("total_system_memory", total_system);
    lines.add("total_system_memory_human", human_bytes(total_system));
    // Eval scripts and functions share one Lua state here, so its memory is counted once, as eval.
    let usage = shared.scripting.usage();
    lines.add("used_memory_lua", usage.lua_bytes);
    lines.add("used_memory_vm_eval", usage.lua_bytes);
    lines.add("used_memory_lua_human", human_bytes(usage.lua_bytes as u64));
    lines.add("used_memory_scripts_eval", usage.script_bytes);
    lines.add("number_of_cached_scripts", usage.scripts);
    lines.add("number_of_functions", usage.functions);
    lines.add("number_of_libraries", usage.libraries);
    lines.add("used_memory_vm_functions", 0);
    lines.add("used_memory_vm_total", usage.lua_bytes);
    lines.add(
        "used_memory_vm_total_human",
        human_bytes(usage.lua_bytes as u64),
    );
    lines.add("used_memory_functions", usage.function_bytes);
    let scripts_total = usage.script_bytes + usage.function_bytes;
    lines.add("used_memory_scripts", scripts_total);
    lines.add(
        "used_memory_scripts_human",
        human_bytes(scripts_total as u64),
    );
    let config = shared.config.read();
    lines.add("maxmemory", config.maxmemory);
    lines.add("maxmemory_human", human_bytes(config.maxmemory));
    lines.add("maxmemory_policy", config.maxmemory_policy.name());
    drop(config);
    lines.add(
        "allocator_frag_ratio",
        format_args!("{:.2}", ratio(alloc.active, alloc.allocated)),
    );
    lines.add(
        "allocator_frag_bytes",
        alloc.active.saturating_sub(alloc.allocated),
    );
    lines.add(
        "allocator_rss_ratio",
        format_args!("{:.2}", ratio(alloc.resident, alloc.active)),
    );
    lines.add(
        "allocator_rss_bytes",
        alloc.resident.saturating_sub(alloc.active),
    );
    lines.add(
        "rss_overhead_ratio",
        format_args!("{:.2}", ratio(rss, alloc.resident)),
    );
    lines.add("rss_overhead_bytes", rss.saturating_sub(alloc.resident));
    lines.add(
        "mem_fragmentation_ratio",
        format_args!("{:.2}", ratio(rss, used)),
    );
    lines.add("mem_fragmentation_bytes", rss.saturating_sub(used));
    // No replicas, replication backlog, cluster bus or AOF buffer.
    for field in [
        "mem_not_counted_for_evict",
        "mem_replication_backlog",
        "mem_total_replication_buffers",
        "mem_clients_slaves",
    ] {
        lines.add(field, 0);
    }
    lines.add("mem_clients_normal", ctx.shared.clients.memory());
    lines.add("mem_cluster_links", 0);
    lines.add("mem_aof_buffer", 0);
    lines.add("mem_allocator", allocator_name());
    lines.add("active_defrag_running", 0);
    lines.add(
        "lazyfree_pending_objects",
        crate::store::lazyfree::pending(),
    );
    lines.add("lazyfreed_objects", crate::store::lazyfree::freed());
}

/// Physical memory of the machine, from /proc/meminfo (0 where unavailable).
fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        })
        .unwrap_or(0)
}

fn stats(ctx: &Ctx, lines: &mut Lines) {
    let shared = ctx.shared;
    let s = &shared.stats;
    lines.add(
        "total_connections_received",
        s.total_connections_received.total(),
    );
    lines.add(
        "total_commands_processed",
        s.total_commands_processed.total(),
    );
    let rates = s.instant.rates();
    lines.add("instantaneous_ops_per_sec", rates.ops_per_sec);
    lines.add("total_net_input_bytes", s.total_net_input_bytes.total());
    lines.add("total_net_output_bytes", s.total_net_output_bytes.total());
    lines.add("total_net_repl_input_bytes", 0);
    lines.add("total_net_repl_output_bytes", 0);
    lines.add(
        "instantaneous_input_kbps",
        format_args!("{:.2}", rates.input_kbps),
    );
    lines.add(
        "instantaneous_output_kbps",
        format_args!("{:.2}", rates.output_kbps),
    );
    lines.add("instantaneous_input_repl_kbps", "0.00");
    lines.add("instantaneous_output_repl_kbps", "0.00");
    lines.add("rejected_connections", s.rejected_connections.total());
    let master = &shared.replication.master;
    lines.add("sync_full", master.sync_full.load(Relaxed));
    lines.add("sync_partial_ok", master.sync_partial_ok.load(Relaxed));
    lines.add("sync_partial_err", master.sync_partial_err.load(Relaxed));
    lines.add(
        "expired_keys",
        shared.store.expired_keys.load(Ordering::Relaxed),
    );
    lines.add(
        "expired_subkeys",
        shared.store.expired_fields.load(Ordering::Relaxed),
    );
    lines.add(
        "expired_stale_perc",
        format_args!("{:.2}", shared.store.expired_stale_percent()),
    );
    lines.add("expired_time_cap_reached_count", 0);
    lines.add(
        "evicted_keys",
        shared.store.memory.evicted_keys.load(Ordering::Relaxed),
    );
    lines.add("evicted_clients", s.evicted_clients.total());
    lines.add("keyspace_hits", s.keyspace_hits.total());
    lines.add("keyspace_misses", s.keyspace_misses.total());
    lines.add("pubsub_channels", shared.pubsub.channels(None, false).len());
    lines.add("pubsub_patterns", shared.pubsub.numpat());
    lines.add(
        "pubsubshard_channels",
        shared.pubsub.channels(None, true).len(),
    );
    lines.add("latest_fork_usec", 0);
    lines.add("total_forks", 0);
    lines.add("migrate_cached_sockets", 0);
    lines.add("slave_expires_tracked_keys", 0); // no replicas
                                                // No active defragmentation.
    for field in [
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
    ] {
        lines.add(field, 0);
    }
    let tracking = shared.events.tracking.stats();
    lines.add("tracking_total_keys", tracking.keys);
    lines.add("tracking_total_items", tracking.items);
    lines.add("tracking_total_prefixes", tracking.prefixes);
    lines.add("unexpected_error_replies", 0);
    lines.add("total_error_replies", s.total_error_replies.total());
    lines.add("dump_payload_sanitizations", 0);
    lines.add("total_reads_processed", s.total_reads_processed.total());
    lines.add("total_writes_processed", s.total_writes_processed.total());
    // No separate I/O threads: the connection tasks read and write their own sockets.
    lines.add("io_threaded_reads_processed", 0);
    lines.add("io_threaded_writes_processed", 0);
    lines.add(
        "client_output_buffer_limit_disconnections",
        s.client_output_buffer_limit_disconnections.total(),
    );
    lines.add("tls_handshake_failures", s.tls_handshake_failures.total());
    let acl = &shared.acl;
    lines.add(
        "acl_access_denied_auth",
        acl.denied_auth.load(Ordering::Relaxed),
    );
    lines.add(
        "acl_access_denied_cmd",
        acl.denied_cmd.load(Ordering::Relaxed),
    );
    lines.add(
        "acl_access_denied_key",
        acl.denied_key.load(Ordering::Relaxed),
    );
    lines.add(
        "acl_access_denied_channel",
        acl.denied_channel.load(Ordering::Relaxed),
    );
}

/// Seconds of CPU as Redis prints them (`0.015529`).
fn seconds(tv: libc::timeval) -> String {
    format!("{}.{:06}", tv.tv_sec, tv.tv_usec)
}

/// CPU from getrusage. stmd runs commands on every worker thread, so the `_main_thread` figures
/// are those of the worker answering this INFO (all the command work with `--threads 1`).
fn cpu(lines: &mut Lines) {
    let mut figures = |prefix: &str, who: libc::c_int| {
        if let Some(u) = crate::metrics::cpu_usage(who) {
            lines.add(&format!("used_cpu_sys{prefix}"), seconds(u.ru_stime));
            lines.add(&format!("used_cpu_user{prefix}"), seconds(u.ru_utime));
        }
    };
    figures("", libc::RUSAGE_SELF);
    figures("_children", libc::RUSAGE_CHILDREN);
    #[cfg(target_os = "linux")]
    figures("_main_thread", libc::RUSAGE_THREAD);
}

/// `967.24K`, as Redis's bytesToHuman.
pub fn human_bytes(n: u64) -> String {
    const UNITS: &[&str] = &["B", "K", "M", "G", "T", "P"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n}B")
    } else {
        format!("{value:.2}{}", UNITS[unit])
    }
}

/// Memory in use now (jemalloc's `stats.allocated`), noting the peak.
pub fn used_memory(ctx: &Ctx) -> u64 {
    let used = allocated_bytes();
    ctx.shared.memory_marks.peak(used);
    used
}
