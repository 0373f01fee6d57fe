//! The integration tests, built as one test binary: each module is one area's tests (the file
//! names say which). One binary links once; forty-four of them cost CI ~12 minutes of linking on
//! two cores. The tests that read this process's own memory figures (RSS, `used_memory`) stay in
//! binaries of their own (`tests/core_protocol.rs`, `ops_info.rs`, `security_output_limits.rs`,
//! `server_limits.rs`), so that other tests' servers in the same process cannot move them.
//!
//! Run one area with `cargo test --release --test integration <module>::`.

#[path = "../common/mod.rs"]
mod common;
mod fuzz_support;
mod types_support;

mod cluster_admin;
mod cluster_clients;
mod cluster_failover;
mod cluster_fanout;
mod cluster_migration;
mod cluster_mode;
mod cluster_replicas;
mod core_client_admin;
mod core_clients;
mod core_databases;
mod core_expiry;
mod core_redis_cli;
mod core_replies;
mod core_scan;
mod core_unix_socket;
mod events_keyspace;
mod events_tracking;
mod fuzz_props;
mod hostile_blocking;
mod hostile_pushes;
mod hostile_scripts;
mod keys_dump;
mod keys_migrate;
mod ops_aof;
mod ops_config_file;
mod ops_debug;
mod ops_docker;
mod ops_introspection;
mod ops_lazyfree;
mod ops_logs;
mod ops_metrics;
mod ops_monitor;
mod ops_process;
mod ops_slowlog;
mod ops_snapshot;
mod persist_rows;
mod replication_failover;
mod replication_primary;
mod replication_replica;
mod replication_sentinel;
mod scripting_busy;
mod scripting_concurrency;
mod scripting_engine;
mod scripting_libs;
mod search;
mod search_aggregate;
mod search_durable;
mod search_stm;
mod security_acl;
mod security_maxmemory;
mod security_tls;
mod security_tls_options;
mod stm_capture;
mod stm_commands;
mod stm_compress;
mod stm_context;
mod stm_context_errors;
mod stm_restart;
mod types_blocking;
mod types_client;
mod types_encodings;
mod types_geo_sort;
mod types_hash_expiry;
mod types_hyperloglog;
mod types_json;
mod types_pubsub;
mod types_redis_tables;
mod types_streams;
mod types_zset_blocking;
