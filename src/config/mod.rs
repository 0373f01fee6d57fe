//! Configuration: clap flags with Redis's option names (each also an `STMD_*` environment
//! variable), and the `CONFIG GET/SET` view of the same settings, both made from one declaration
//! per setting (`settings!`, see `declare`).

#[macro_use]
mod declare;
pub mod file;
pub mod inert;
pub mod values;

use crate::output_limit::OutputBufferLimits;
pub use declare::{parse_bounded, Param, ParamSetter};

use clap::Parser;
use std::path::PathBuf;
use values::{ChannelDefault, Fsync, NotifyFlags, Policy, SaveRules, Thresholds};

settings! {
    /// Every setting of the server. Flags use Redis's names so operators can reuse what they know.
    #[derive(Parser, Clone, Debug)]
    #[command(
        name = "stmd",
        version,
        about = "A Redis-compatible short-term memory server for chat bots"
    )]
    pub struct Config {
        /// TCP port to listen on (0 picks a free one; with --tls-port or --unixsocket set, 0 means
        /// no plain TCP listener).
        #[arg(long, env = "STMD_PORT", default_value_t = 6379, help_heading = "Network")]
        pub port: u16 = number(0, 65535), live ["port"];
        /// Address to bind.
        #[arg(long, env = "STMD_BIND", default_value = "127.0.0.1", help_heading = "Network")]
        pub bind: String = plain, fixed ["bind"];
        /// Also accept clients on this Unix socket ("": none); a file left there is replaced, and
        /// the socket is removed at shutdown.
        #[arg(long, env = "STMD_UNIXSOCKET", default_value = "", help_heading = "Network")]
        pub unixsocket: String = text, fixed ["unixsocket"];
        /// The Unix socket's permissions, in octal as chmod takes them (e.g. 700; 0: the umask's).
        #[arg(long, env = "STMD_UNIXSOCKETPERM", default_value = "0", help_heading = "Network")]
        pub unixsocketperm: u32 = by(parse_octal_mode),
            fixed(|c| format!("{:o}", c.unixsocketperm)) ["unixsocketperm"];
        /// Threads serving clients (0: one per CPU core but one, at least one). Every thread serves
        /// any connection. The spare core is left to the kernel's network stack and to clients on
        /// the same host, as Redis advises for its io-threads.
        #[arg(long, env = "STMD_THREADS", default_value_t = 0, help_heading = "Network")]
        pub threads: usize = plain, fixed(|c| c.worker_threads().to_string()) ["threads"];
        /// Maximum number of connected clients.
        #[arg(long, env = "STMD_MAXCLIENTS", default_value_t = 10000, help_heading = "Network")]
        pub maxclients: usize = number(1, i64::MAX), live ["maxclients"];
        /// TCP keepalive for clients: probe an idle connection after this many seconds, so a peer
        /// that vanished (host down, cable cut) is noticed and its connection closed (0: off).
        #[arg(long, env = "STMD_TCP_KEEPALIVE", default_value_t = 300, help_heading = "Network")]
        pub tcp_keepalive: u64 = number(0, i32::MAX), live ["tcp-keepalive"];
        /// The listen backlog of the TCP listeners (the kernel caps it at `net.core.somaxconn`), as
        /// Redis's `tcp-backlog`. Fixed at start-up.
        #[arg(long, env = "STMD_TCP_BACKLOG", default_value_t = 511, help_heading = "Network")]
        pub tcp_backlog: u32 = number(0, i32::MAX), fixed ["tcp-backlog"];
        /// Close a client idle for this many seconds (0: never).
        #[arg(long, env = "STMD_TIMEOUT", default_value_t = 0, help_heading = "Network")]
        pub timeout: u64 = number(0, i32::MAX), live ["timeout"];

        /// Port for TLS connections (0: no TLS listener).
        #[arg(long, env = "STMD_TLS_PORT", default_value_t = 0, help_heading = "TLS")]
        pub tls_port: u16 = plain, fixed ["tls-port"];
        /// The server's certificate chain (PEM), required with --tls-port.
        #[arg(long, env = "STMD_TLS_CERT_FILE", help_heading = "TLS")]
        pub tls_cert_file: Option<PathBuf> = path, live ["tls-cert-file"];
        /// The private key of --tls-cert-file (PEM: PKCS#8, PKCS#1 or SEC1).
        #[arg(long, env = "STMD_TLS_KEY_FILE", help_heading = "TLS")]
        pub tls_key_file: Option<PathBuf> = path, live ["tls-key-file"];
        /// CA certificates (PEM) that sign client certificates; given, clients must present one
        /// (see --tls-auth-clients).
        #[arg(long, env = "STMD_TLS_CA_CERT_FILE", help_heading = "TLS")]
        pub tls_ca_cert_file: Option<PathBuf> = path, live ["tls-ca-cert-file"];
        /// With --tls-ca-cert-file: `yes` requires a client certificate, `optional` checks one if
        /// presented, `no` asks for none.
        #[arg(
            long,
            env = "STMD_TLS_AUTH_CLIENTS",
            value_enum,
            default_value_t = TlsAuthClients::Yes,
            help_heading = "TLS",
        )]
        pub tls_auth_clients: TlsAuthClients = plain,
            set(TlsAuthClients::parse) ["tls-auth-clients"];
        /// A directory of CA certificates (PEM files), trusted as --tls-ca-cert-file's are; read at
        /// start-up and at each CONFIG SET of a TLS setting.
        #[arg(long, env = "STMD_TLS_CA_CERT_DIR", help_heading = "TLS")]
        pub tls_ca_cert_dir: Option<PathBuf> = path, live ["tls-ca-cert-dir"];
        /// The password of an encrypted PKCS#8 --tls-key-file.
        #[arg(
            long,
            env = "STMD_TLS_KEY_FILE_PASS",
            hide_env_values = true,
            default_value = "",
            help_heading = "TLS",
        )]
        pub tls_key_file_pass: String = text, live ["tls-key-file-pass"];
        /// The certificate a replica presents to its primary (--tls-replication); without it (and
        /// --tls-client-key-file) --tls-cert-file is presented.
        #[arg(long, env = "STMD_TLS_CLIENT_CERT_FILE", help_heading = "TLS")]
        pub tls_client_cert_file: Option<PathBuf> = path, live ["tls-client-cert-file"];
        /// The private key of --tls-client-cert-file.
        #[arg(long, env = "STMD_TLS_CLIENT_KEY_FILE", help_heading = "TLS")]
        pub tls_client_key_file: Option<PathBuf> = path, live ["tls-client-key-file"];
        /// The password of an encrypted PKCS#8 --tls-client-key-file.
        #[arg(
            long,
            env = "STMD_TLS_CLIENT_KEY_FILE_PASS",
            hide_env_values = true,
            default_value = "",
            help_heading = "TLS",
        )]
        pub tls_client_key_file_pass: String = text, live ["tls-client-key-file-pass"];
        /// TLS versions accepted: `TLSv1.2`, `TLSv1.3` or both, space-separated, any case ("":
        /// both).
        #[arg(long, env = "STMD_TLS_PROTOCOLS", default_value = "", help_heading = "TLS")]
        pub tls_protocols: String = checked(values::tls_protocols), live ["tls-protocols"];
        /// TLS 1.2 cipher suites by OpenSSL name, colon-separated, e.g.
        /// `ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES256-GCM-SHA384` ("": rustls's defaults).
        #[arg(long, env = "STMD_TLS_CIPHERS", default_value = "", help_heading = "TLS")]
        pub tls_ciphers: String = checked(values::tls_ciphers), live ["tls-ciphers"];
        /// TLS 1.3 cipher suites, colon-separated, e.g. `TLS_AES_256_GCM_SHA384` ("": rustls's
        /// defaults).
        #[arg(long, env = "STMD_TLS_CIPHERSUITES", default_value = "", help_heading = "TLS")]
        pub tls_ciphersuites: String = checked(values::tls_ciphersuites), live ["tls-ciphersuites"];
        /// Choose the cipher suite by the server's order (the order of --tls-ciphers and
        /// --tls-ciphersuites) rather than the client's (yes|no).
        #[arg(
            long,
            env = "STMD_TLS_PREFER_SERVER_CIPHERS",
            default_value = "no",
            action = clap::ArgAction::Set,
            help_heading = "TLS",
        )]
        pub tls_prefer_server_ciphers: bool = yes_no, live ["tls-prefer-server-ciphers"];
        /// Let clients resume TLS sessions (yes|no).
        #[arg(
            long,
            env = "STMD_TLS_SESSION_CACHING",
            default_value = "yes",
            action = clap::ArgAction::Set,
            help_heading = "TLS",
        )]
        pub tls_session_caching: bool = yes_no, live ["tls-session-caching"];
        /// Most TLS sessions kept for resumption (0: none).
        #[arg(
            long,
            env = "STMD_TLS_SESSION_CACHE_SIZE",
            default_value_t = 20480,
            help_heading = "TLS",
        )]
        pub tls_session_cache_size: u64 = number(0, i32::MAX), live ["tls-session-cache-size"];
        /// Seconds a TLS session can be resumed after its handshake.
        #[arg(
            long,
            env = "STMD_TLS_SESSION_CACHE_TIMEOUT",
            default_value_t = 300,
            help_heading = "TLS",
        )]
        pub tls_session_cache_timeout: u64 = number(0, i32::MAX),
            live ["tls-session-cache-timeout"];
        /// A replica connects to its primary over TLS (yes|no), trusting --tls-ca-cert-file/-dir.
        #[arg(
            long,
            env = "STMD_TLS_REPLICATION",
            default_value = "no",
            action = clap::ArgAction::Set,
            help_heading = "TLS",
        )]
        pub tls_replication: bool = yes_no, live ["tls-replication"];

        /// Password required from clients (AUTH / HELLO AUTH). Empty: no password.
        #[arg(
            long,
            env = "STMD_REQUIREPASS",
            hide_env_values = true,
            default_value = "",
            help_heading = "Security",
        )]
        pub requirepass: String = text, live ["requirepass"];
        /// The ACL file: users loaded at start-up and by ACL LOAD, written by ACL SAVE.
        #[arg(long, env = "STMD_ACLFILE", help_heading = "Security")]
        pub aclfile: Option<String> = plain(String),
            fixed(|c| c.aclfile.clone().unwrap_or_default()) ["aclfile"];
        /// Most entries the ACL LOG keeps.
        #[arg(long, env = "STMD_ACLLOG_MAX_LEN", default_value_t = 128, help_heading = "Security")]
        pub acllog_max_len: usize = number(0, i64::MAX), live ["acllog-max-len"];
        /// The channels a new ACL user or selector starts with, and `reset` gives: resetchannels
        /// (none, Redis 7's default) or allchannels (Redis 6's).
        #[arg(
            long,
            env = "STMD_ACL_PUBSUB_DEFAULT",
            default_value = "resetchannels",
            help_heading = "Security",
        )]
        pub acl_pubsub_default: ChannelDefault = parsed(ChannelDefault::parse),
            live ["acl-pubsub-default"];
        /// Rename a command (e.g. `--rename-command FLUSHALL ""` disables it; `--rename-command
        /// CONFIG ADMINCONFIG` hides it behind a new name). Repeatable.
        #[arg(
            long = "rename-command",
            num_args = 2,
            value_names = ["COMMAND", "NEW_NAME"],
            action = clap::ArgAction::Append,
            help_heading = "Security",
        )]
        pub rename_command: Vec<String> = plain(String), none;
        /// With no password set, accept clients from loopback addresses only (yes|no).
        #[arg(
            long,
            env = "STMD_PROTECTED_MODE",
            default_value = "yes",
            action = clap::ArgAction::Set,
            help_heading = "Security",
        )]
        pub protected_mode: bool = yes_no, live ["protected-mode"];

        /// Largest bulk string a request may declare (units: b, k, kb, m, mb, g, gb).
        #[arg(
            long,
            env = "STMD_PROTO_MAX_BULK_LEN",
            default_value = "512mb",
            help_heading = "Limits",
        )]
        pub proto_max_bulk_len: u64 = memory, live ["proto-max-bulk-len"];
        /// Largest number of arguments one request may declare.
        #[arg(
            long,
            env = "STMD_PROTO_MAX_MULTIBULK_LEN",
            default_value_t = 16 * 1024 * 1024,
            help_heading = "Limits",
        )]
        pub proto_max_multibulk_len: u64 = number(0, i64::MAX), live ["proto-max-multibulk-len"];
        /// Largest sparse HyperLogLog value (header included) before it turns dense (units as
        /// above).
        #[arg(
            long,
            env = "STMD_HLL_SPARSE_MAX_BYTES",
            default_value = "3000",
            help_heading = "Limits",
        )]
        pub hll_sparse_max_bytes: u64 = memory, live ["hll-sparse-max-bytes"];
        /// Output a client may leave unread, per class: `<class> <hard> <soft> <soft-seconds>`…
        /// (classes normal, replica, pubsub; 0 disables), applied over the default.
        #[arg(
            long,
            env = "STMD_CLIENT_OUTPUT_BUFFER_LIMIT",
            default_value = "",
            hide_default_value = true,
            help_heading = "Limits",
        )]
        pub client_output_buffer_limit: OutputBufferLimits = parsed(OutputBufferLimits::parse),
            custom(
                |c| c.client_output_buffer_limit.to_string(),
                |c, v| c.client_output_buffer_limit.apply(v)
            ) ["client-output-buffer-limit"];
        /// Largest unparsed input buffered for one client.
        #[arg(
            long,
            env = "STMD_CLIENT_QUERY_BUFFER_LIMIT",
            default_value = "1gb",
            help_heading = "Limits",
        )]
        pub client_query_buffer_limit: u64 = memory, live ["client-query-buffer-limit"];

        /// Most memory the data may use (units as above; 0: no limit). Past it, commands that may
        /// grow memory evict keys per --maxmemory-policy or are refused with OOM.
        #[arg(long, env = "STMD_MAXMEMORY", default_value = "0", help_heading = "Limits")]
        pub maxmemory: u64 = memory, live ["maxmemory"];
        /// What to evict at --maxmemory: noeviction, allkeys-lru, volatile-lru, allkeys-random,
        /// volatile-random or volatile-ttl.
        #[arg(
            long,
            env = "STMD_MAXMEMORY_POLICY",
            default_value = "noeviction",
            help_heading = "Limits",
        )]
        pub maxmemory_policy: Policy = parsed(Policy::parse), live ["maxmemory-policy"];
        /// Most memory all clients' buffers may hold together (bytes, units as above, or a
        /// percentage of --maxmemory such as `10%`; 0: no limit): past it the clients holding the
        /// most are closed.
        #[arg(long, env = "STMD_MAXMEMORY_CLIENTS", default_value = "0", help_heading = "Limits")]
        pub maxmemory_clients: ClientsMemory = parsed(ClientsMemory::parse),
            live ["maxmemory-clients"];
        /// Keys sampled per eviction (more: closer to true LRU/TTL order, slower).
        #[arg(long, env = "STMD_MAXMEMORY_SAMPLES", default_value_t = 5, help_heading = "Limits")]
        pub maxmemory_samples: u64 = number(1, i32::MAX), live ["maxmemory-samples"];
        /// Number of databases (SELECT 0 to N-1). A database's keyspace is created on first use, so
        /// unused ones cost a few hundred bytes each. `STM.*` commands work in database 0.
        #[arg(long, env = "STMD_DATABASES", default_value_t = 16, help_heading = "Limits")]
        pub databases: u64 = number(1, 10_000), fixed ["databases"];

        /// Working directory: where the embedded database file and the RDB snapshot live.
        #[arg(long, env = "STMD_DIR", default_value = ".", help_heading = "Storage")]
        pub dir: PathBuf = plain, fixed(|c| c.dir.display().to_string()) ["dir"];
        /// What SIGTERM's shutdown does, as Redis's flags: `default` (save if --save rules are
        /// set), `save`, `nosave`, and `now`/`force` (accepted: stmd neither waits for replicas nor
        /// stays up when the last save fails).
        #[arg(
            long,
            env = "STMD_SHUTDOWN_ON_SIGTERM",
            default_value = "default",
            help_heading = "Storage",
        )]
        pub shutdown_on_sigterm: ShutdownFlags = parsed(ShutdownFlags::parse),
            live ["shutdown-on-sigterm"];
        /// What SIGINT's (Ctrl-C's) shutdown does, as --shutdown-on-sigterm.
        #[arg(
            long,
            env = "STMD_SHUTDOWN_ON_SIGINT",
            default_value = "default",
            help_heading = "Storage",
        )]
        pub shutdown_on_sigint: ShutdownFlags = parsed(ShutdownFlags::parse),
            live ["shutdown-on-sigint"];
        /// Seconds a shutdown waits, writes paused, for lagging replicas to acknowledge the whole
        /// replication stream, as Redis's `shutdown-timeout` (0: no wait). SHUTDOWN NOW and the
        /// `now` flag of --shutdown-on-sigterm / --shutdown-on-sigint skip the wait.
        #[arg(long, env = "STMD_SHUTDOWN_TIMEOUT", default_value_t = 10, help_heading = "Storage")]
        pub shutdown_timeout: u64 = number(0, i32::MAX), live ["shutdown-timeout"];
        /// Automatic RDB snapshots, as Redis's `save`: `"<seconds> <changes> ..."` saves after that
        /// many seconds if at least that many writes happened. Empty (the default): only SAVE,
        /// BGSAVE and SHUTDOWN SAVE write one.
        #[arg(long, env = "STMD_SAVE", default_value = "", help_heading = "Storage")]
        pub save: SaveRules = parsed(SaveRules::parse), live ["save"];
        /// Refuse writes (`-MISCONF`) while the last background save failed and `save` rules are
        /// set, as Redis does (yes|no).
        #[arg(
            long,
            env = "STMD_STOP_WRITES_ON_BGSAVE_ERROR",
            default_value = "yes",
            action = clap::ArgAction::Set,
            help_heading = "Storage",
        )]
        pub stop_writes_on_bgsave_error: bool = yes_no, live ["stop-writes-on-bgsave-error"];
        /// Follow a primary from the start, as Redis's `replicaof`: `"<host> <port>"` (empty: this
        /// node is a primary). REPLICAOF changes it at run time.
        #[arg(long, env = "STMD_REPLICAOF", default_value = "", help_heading = "Replication")]
        pub replicaof: String = parsed(parse_replicaof), fixed ["replicaof", "slaveof"];
        /// The password the link to the primary authenticates with (`AUTH [masteruser]
        /// masterauth`).
        #[arg(
            long,
            env = "STMD_MASTERAUTH",
            hide_env_values = true,
            default_value = "",
            help_heading = "Replication",
        )]
        pub masterauth: String = text, live ["masterauth"];
        /// The ACL user the link to the primary authenticates as (with `masterauth`).
        #[arg(long, env = "STMD_MASTERUSER", default_value = "", help_heading = "Replication")]
        pub masteruser: String = text, live ["masteruser"];
        /// While following a primary, refuse writes from clients (`-READONLY`) (yes|no).
        #[arg(
            long,
            env = "STMD_REPLICA_READ_ONLY",
            default_value = "yes",
            action = clap::ArgAction::Set,
            help_heading = "Replication",
        )]
        pub replica_read_only: bool = yes_no, live ["replica-read-only", "slave-read-only"];
        /// While following a primary whose link is down (or still syncing), serve clients the data
        /// as it is (yes), or answer `-MASTERDOWN` to every command not flagged `stale` (no; alias
        /// `slave-serve-stale-data`).
        #[arg(
            long,
            env = "STMD_REPLICA_SERVE_STALE_DATA",
            default_value = "yes",
            action = clap::ArgAction::Set,
            help_heading = "Replication",
        )]
        pub replica_serve_stale_data: bool = yes_no,
            live ["replica-serve-stale-data", "slave-serve-stale-data"];
        /// A primary refuses writes (`-NOREPLICAS`) unless at least this many replicas acknowledged
        /// within `min-replicas-max-lag` seconds (0: never refuses; alias `min-slaves-to-write`).
        #[arg(
            long,
            env = "STMD_MIN_REPLICAS_TO_WRITE",
            default_value_t = 0,
            help_heading = "Replication",
        )]
        pub min_replicas_to_write: u64 = number(0, i32::MAX),
            live ["min-replicas-to-write", "min-slaves-to-write"];
        /// How old, in seconds, a replica's last acknowledgement may be for it to count toward
        /// `min-replicas-to-write` (0: the check is off; alias `min-slaves-max-lag`).
        #[arg(
            long,
            env = "STMD_MIN_REPLICAS_MAX_LAG",
            default_value_t = 10,
            help_heading = "Replication",
        )]
        pub min_replicas_max_lag: u64 = number(0, i32::MAX),
            live ["min-replicas-max-lag", "min-slaves-max-lag"];
        /// Sentinel's preference when it picks a replica to promote: lower first, 0 never (INFO's
        /// `slave_priority`; alias `slave-priority`).
        #[arg(
            long,
            env = "STMD_REPLICA_PRIORITY",
            default_value_t = 100,
            help_heading = "Replication",
        )]
        pub replica_priority: u64 = number(0, i32::MAX),
            live ["replica-priority", "slave-priority"];
        /// Whether Sentinel lists this replica (INFO's `replica_announced`) (yes|no).
        #[arg(
            long,
            env = "STMD_REPLICA_ANNOUNCED",
            default_value = "yes",
            action = clap::ArgAction::Set,
            help_heading = "Replication",
        )]
        pub replica_announced: bool = yes_no, live ["replica-announced"];
        /// The address this replica gives its primary (`REPLCONF ip-address`), which the primary's
        /// INFO and ROLE show and Sentinel connects to (empty: the primary sees the link's own
        /// address; alias `slave-announce-ip`).
        #[arg(
            long,
            env = "STMD_REPLICA_ANNOUNCE_IP",
            default_value = "",
            help_heading = "Replication",
        )]
        pub replica_announce_ip: String = text, live ["replica-announce-ip", "slave-announce-ip"];
        /// The port this replica gives its primary (`REPLCONF listening-port`; 0: its own port;
        /// alias `slave-announce-port`).
        #[arg(
            long,
            env = "STMD_REPLICA_ANNOUNCE_PORT",
            default_value_t = 0,
            help_heading = "Replication",
        )]
        pub replica_announce_port: u16 = number(0, 65535),
            live ["replica-announce-port", "slave-announce-port"];
        /// The replication backlog: the stream's recent bytes kept for replicas that reconnect
        /// (PSYNC), at least 16kb (units as --maxmemory).
        #[arg(
            long,
            env = "STMD_REPL_BACKLOG_SIZE",
            default_value = "1mb",
            help_heading = "Replication",
        )]
        pub repl_backlog_size: u64 = memory, live ["repl-backlog-size"];
        /// Seconds without data from the primary after which the link is dropped and made again.
        #[arg(long, env = "STMD_REPL_TIMEOUT", default_value_t = 60, help_heading = "Replication")]
        pub repl_timeout: u64 = number(1, i32::MAX), live ["repl-timeout"];
        /// The RDB snapshot's file name in `--dir`, loaded at start when it exists.
        #[arg(long, env = "STMD_DBFILENAME", default_value = "dump.rdb", help_heading = "Storage")]
        pub dbfilename: String = parsed(parse_file_name), fixed ["dbfilename"];
        /// Log every write to an append-only file as Redis's `appendonly` (yes|no): restarts replay
        /// it, losing at most what `--appendfsync` allows. CONFIG SET turns it on (with a rewrite)
        /// or off.
        #[arg(
            long,
            env = "STMD_APPENDONLY",
            default_value = "no",
            action = clap::ArgAction::Set,
            help_heading = "Storage",
        )]
        pub appendonly: bool = yes_no, live ["appendonly"];
        /// When the append-only file is flushed to the disk: `always` (before each reply),
        /// `everysec` (once a second) or `no` (when the system decides).
        #[arg(long, env = "STMD_APPENDFSYNC", default_value = "everysec", help_heading = "Storage")]
        pub appendfsync: Fsync = parsed(Fsync::parse), live ["appendfsync"];
        /// The base name of the append-only files (`<name>.<seq>.base.rdb`,
        /// `<name>.<seq>.incr.aof`, `<name>.manifest`).
        #[arg(
            long,
            env = "STMD_APPENDFILENAME",
            default_value = "appendonly.aof",
            help_heading = "Storage",
        )]
        pub appendfilename: String = parsed(parse_file_name), fixed ["appendfilename"];
        /// The directory in `--dir` that holds the append-only files.
        #[arg(
            long,
            env = "STMD_APPENDDIRNAME",
            default_value = "appendonlydir",
            help_heading = "Storage",
        )]
        pub appenddirname: String = parsed(parse_file_name), fixed ["appenddirname"];
        /// Rewrite the append-only file when it has grown by this percentage over its size after
        /// the last rewrite (0: never by itself).
        #[arg(
            long,
            env = "STMD_AUTO_AOF_REWRITE_PERCENTAGE",
            default_value_t = 100,
            help_heading = "Storage",
        )]
        pub auto_aof_rewrite_percentage: u64 = number(0, i32::MAX),
            live ["auto-aof-rewrite-percentage"];
        /// ... and is at least this large (units as --maxmemory).
        #[arg(
            long,
            env = "STMD_AUTO_AOF_REWRITE_MIN_SIZE",
            default_value = "64mb",
            help_heading = "Storage",
        )]
        pub auto_aof_rewrite_min_size: u64 = memory, live ["auto-aof-rewrite-min-size"];
        /// At start, load an append-only file whose last command was cut short (a crash mid-write),
        /// dropping that command, instead of refusing to start (yes|no).
        #[arg(
            long,
            env = "STMD_AOF_LOAD_TRUNCATED",
            default_value = "yes",
            action = clap::ArgAction::Set,
            help_heading = "Storage",
        )]
        pub aof_load_truncated: bool = yes_no, live ["aof-load-truncated"];
        /// Write `#TS:<unix seconds>` annotations into the append-only file as the seconds pass, as
        /// Redis 7's option (yes|no); annotations are skipped on load either way.
        #[arg(
            long,
            env = "STMD_AOF_TIMESTAMP_ENABLED",
            default_value = "no",
            action = clap::ArgAction::Set,
            help_heading = "Storage",
        )]
        pub aof_timestamp_enabled: bool = yes_no, live ["aof-timestamp-enabled"];

        /// Messages kept per STM entry (the newest ones).
        #[arg(
            long,
            env = "STMD_STM_MAX_MESSAGES",
            default_value_t = 10,
            help_heading = "Short-term memory",
        )]
        pub stm_max_messages: u64 = number(0, i64::MAX), live ["stm-max-messages"];
        /// Seconds an STM entry lives after its last write.
        #[arg(
            long,
            env = "STMD_STM_TTL",
            default_value_t = 43200,
            help_heading = "Short-term memory",
        )]
        pub stm_ttl: u64 = number(0, i64::MAX), live ["stm-ttl"];
        /// Seconds an STM entry with a summary or categories lives after its last write.
        #[arg(
            long,
            env = "STMD_STM_SUMMARY_TTL",
            default_value_t = 86400,
            help_heading = "Short-term memory",
        )]
        pub stm_summary_ttl: u64 = number(0, i64::MAX), live ["stm-summary-ttl"];
        /// Seconds after its last capture an STM conversation's messages are compressed in the
        /// background (0: never). Reads decompress a copy; the next capture stores plain text.
        #[arg(
            long,
            env = "STMD_STM_COMPRESS_AFTER",
            default_value_t = 30,
            help_heading = "Short-term memory",
        )]
        pub stm_compress_after: u64 = number(0, i64::MAX), live ["stm-compress-after"];
        /// Characters kept of a summary or a category text.
        #[arg(
            long,
            env = "STMD_STM_MAX_SUMMARY_CHARS",
            default_value_t = 1500,
            help_heading = "Short-term memory",
        )]
        pub stm_max_summary_chars: u64 = number(0, i64::MAX), live ["stm-max-summary-chars"];
        /// Largest MSG/REPLY content in bytes; a longer one is an error.
        #[arg(
            long,
            env = "STMD_STM_MAX_CONTENT_BYTES",
            default_value_t = 65536,
            help_heading = "Short-term memory",
        )]
        pub stm_max_content_bytes: u64 = number(0, i64::MAX), live ["stm-max-content-bytes"];
        /// Largest number of MSG/REPLY items in one capture.
        #[arg(
            long,
            env = "STMD_STM_MAX_ITEMS",
            default_value_t = 1000,
            help_heading = "Short-term memory",
        )]
        pub stm_max_items: u64 = number(0, i64::MAX), live ["stm-max-items"];
        /// Pending scope-row operations before new ones are dropped and counted.
        #[arg(
            long,
            env = "STMD_STM_PERSIST_QUEUE",
            default_value_t = 100000,
            help_heading = "Short-term memory",
        )]
        pub stm_persist_queue: u64 = plain, fixed ["stm-persist-queue"];
        /// Seconds the start waits for the database to restore summaries before it serves without
        /// them (rows that arrive later are merged into the entries).
        #[arg(
            long,
            env = "STMD_STM_RESTORE_TIMEOUT",
            default_value_t = 10,
            help_heading = "Short-term memory",
        )]
        pub stm_restore_timeout: u64 = plain, fixed ["stm-restore-timeout"];
        /// Days after its last update a scope row is deleted by the daily sweep (0: keep forever).
        #[arg(
            long,
            env = "STMD_STM_ROW_RETENTION_DAYS",
            default_value_t = 90,
            help_heading = "Short-term memory",
        )]
        pub stm_row_retention_days: u64 = plain, fixed ["stm-row-retention-days"];
        /// Milliseconds between retention sweeps (a test knob, hidden: production sweeps daily).
        #[arg(long, env = "STMD_STM_RETENTION_SWEEP_MS", default_value_t = 86_400_000, hide = true)]
        pub stm_retention_sweep_ms: u64 = by(clap::value_parser!(u64).range(1..)), none;
        /// Extra regex removed from stored text, like the built-in annotations (repeatable).
        #[arg(
            long = "stm-strip-pattern",
            env = "STMD_STM_STRIP_PATTERN",
            value_delimiter = '\n',
            help_heading = "Short-term memory",
        )]
        pub stm_strip_patterns: Vec<String> = plain(String), none;

        /// Database for the scope rows: a `postgres://` URL, or a `sqlite:` URL; default: the
        /// embedded SQLite file `stmd.db` in --dir.
        #[arg(long, env = "STMD_DATABASE_URL", hide_env_values = true, help_heading = "Storage")]
        pub database_url: Option<String> = plain(String), fixed(database_shown) ["database"];
        /// Keep no scope rows at all (summaries will not survive a restart).
        #[arg(long, env = "STMD_NO_DATABASE", help_heading = "Storage")]
        pub no_database: bool = plain, none;

        /// Log level filter (error, warn, info, debug, trace, or a tracing directive).
        #[arg(long, env = "STMD_LOG_LEVEL", default_value = "info", help_heading = "Logging")]
        pub log_level: String = plain,
            custom(|c| redis_log_level(&c.log_level), |c, v| {
                c.log_level = log_level_filter(v)?.to_string();
                Ok(())
            }) ["loglevel"];
        /// Log line format: `text` for people, `json` (one object per line) for log collectors.
        #[arg(
            long,
            env = "STMD_LOG_FORMAT",
            value_enum,
            default_value_t = LogFormat::Text,
            help_heading = "Logging",
        )]
        pub log_format: LogFormat = plain, none;
        /// Log to this file (appended to, opened anew for each line so that logrotate can move it)
        /// instead of standard output ("": standard output).
        #[arg(long, env = "STMD_LOGFILE", default_value = "", help_heading = "Logging")]
        pub logfile: String = text, fixed ["logfile"];
        /// Write the server's process id to this file at start, and remove it at shutdown ("":
        /// none).
        #[arg(long, env = "STMD_PIDFILE", default_value = "", help_heading = "Logging")]
        pub pidfile: String = text, fixed ["pidfile"];
        /// Run in the background, as Redis's `daemonize` (yes|no): the started process exits at
        /// once and the server goes on in a new session, its standard input, output and error on
        /// /dev/null (logs go nowhere unless --logfile is set). Fixed at start-up.
        #[arg(
            long,
            env = "STMD_DAEMONIZE",
            default_value = "no",
            action = clap::ArgAction::Set,
            help_heading = "Logging",
        )]
        pub daemonize: bool = yes_no, fixed ["daemonize"];
        /// Tell the supervisor when the server is ready, as Redis's `supervised`: `systemd`
        /// (`READY=1` to `$NOTIFY_SOCKET`, for `Type=notify` units; `STOPPING=1` at shutdown),
        /// `upstart` (the process stops itself with SIGSTOP, for `expect stop` jobs), `auto`
        /// (upstart when `$UPSTART_JOB` is set, else systemd when `$NOTIFY_SOCKET` is), `no`.
        #[arg(
            long,
            env = "STMD_SUPERVISED",
            value_enum,
            ignore_case = true,
            default_value_t = Supervised::No,
            help_heading = "Logging",
        )]
        pub supervised: Supervised = plain, fixed ["supervised"];
        /// Also send every log line to the system log, as Redis's `syslog-enabled` (yes|no). Fixed
        /// at start-up.
        #[arg(
            long,
            env = "STMD_SYSLOG_ENABLED",
            default_value = "no",
            action = clap::ArgAction::Set,
            help_heading = "Logging",
        )]
        pub syslog_enabled: bool = yes_no, fixed ["syslog-enabled"];
        /// The program name the system log shows (Redis's `syslog-ident`). Fixed at start-up.
        #[arg(long, env = "STMD_SYSLOG_IDENT", default_value = "redis", help_heading = "Logging")]
        pub syslog_ident: String = text, fixed ["syslog-ident"];
        /// The system log's facility: `user` or `local0` … `local7` (Redis's `syslog-facility`).
        /// Fixed at start-up.
        #[arg(
            long,
            env = "STMD_SYSLOG_FACILITY",
            value_enum,
            ignore_case = true,
            default_value_t = SyslogFacility::Local0,
            help_heading = "Logging",
        )]
        pub syslog_facility: SyslogFacility = plain, fixed ["syslog-facility"];
        /// The system log's socket (stmd's own option; Redis always uses `/dev/log`). For
        /// containers whose syslog socket is mounted elsewhere.
        #[arg(
            long,
            env = "STMD_SYSLOG_SOCKET",
            default_value = "/dev/log",
            help_heading = "Logging",
        )]
        pub syslog_socket: PathBuf = plain, none;

        /// Commands taking at least this many microseconds go to the SLOWLOG (negative: none; 0:
        /// all).
        #[arg(
            long,
            env = "STMD_SLOWLOG_LOG_SLOWER_THAN",
            default_value_t = 10000,
            allow_negative_numbers = true,
            help_heading = "Observability",
        )]
        pub slowlog_log_slower_than: i64 = number(-1, i64::MAX), live ["slowlog-log-slower-than"];
        /// Most entries the SLOWLOG keeps (the oldest go first).
        #[arg(
            long,
            env = "STMD_SLOWLOG_MAX_LEN",
            default_value_t = 128,
            help_heading = "Observability",
        )]
        pub slowlog_max_len: u64 = number(0, i64::MAX), live ["slowlog-max-len"];
        /// LATENCY monitor: record events that take at least this many milliseconds (0: off).
        #[arg(
            long,
            env = "STMD_LATENCY_MONITOR_THRESHOLD",
            default_value_t = 0,
            help_heading = "Observability",
        )]
        pub latency_monitor_threshold: u64 = number(0, i64::MAX),
            live ["latency-monitor-threshold"];
        /// Record each command's latency histogram for INFO latencystats and LATENCY HISTOGRAM.
        #[arg(
            long,
            env = "STMD_LATENCY_TRACKING",
            default_value = "yes",
            action = clap::ArgAction::Set,
            help_heading = "Observability",
        )]
        pub latency_tracking: bool = yes_no, live ["latency-tracking"];
        /// The percentiles INFO latencystats prints, space-separated, each within 0..100.
        #[arg(
            long,
            env = "STMD_LATENCY_TRACKING_INFO_PERCENTILES",
            default_value = "50 99 99.9",
            help_heading = "Observability",
        )]
        pub latency_tracking_info_percentiles: Percentiles = parsed(Percentiles::parse),
            live ["latency-tracking-info-percentiles"];
        /// Allow the DEBUG command: `yes`, `no`, or `local` (from loopback clients only). Fixed at
        /// start-up, as in Redis.
        #[arg(
            long,
            env = "STMD_ENABLE_DEBUG_COMMAND",
            value_enum,
            default_value_t = ProtectedCommand::No,
            help_heading = "Observability",
        )]
        pub enable_debug_command: ProtectedCommand = plain, fixed ["enable-debug-command"];
        /// Allow MODULE LOAD, LOADEX and UNLOAD (`yes`, `no` or `local`, fixed at start-up, as in
        /// Redis). stmd loads no modules: allowed, they answer Redis's errors for a module that
        /// cannot be loaded or is not loaded.
        #[arg(
            long,
            env = "STMD_ENABLE_MODULE_COMMAND",
            value_enum,
            default_value_t = ProtectedCommand::No,
            help_heading = "Observability",
        )]
        pub enable_module_command: ProtectedCommand = plain, fixed ["enable-module-command"];

        /// Keyspace notifications to publish, in Redis's class letters (`KEA`, `Ex`…; empty: none),
        /// plus `S` for STM entries' own events.
        #[arg(
            long,
            env = "STMD_NOTIFY_KEYSPACE_EVENTS",
            default_value = "",
            hide_default_value = true,
            help_heading = "Events",
        )]
        pub notify_keyspace_events: NotifyFlags = parsed(NotifyFlags::parse),
            live ["notify-keyspace-events"];
        /// Most keys remembered for client-side caching (default-mode CLIENT TRACKING); past it,
        /// keys are dropped and invalidated (0: no limit).
        #[arg(
            long,
            env = "STMD_TRACKING_TABLE_MAX_KEYS",
            default_value_t = 1_000_000,
            help_heading = "Events",
        )]
        pub tracking_table_max_keys: u64 = number(0, i64::MAX), live ["tracking-table-max-keys"];

        /// A script that has run this many milliseconds makes other clients' commands answer BUSY
        /// until it ends or SCRIPT KILL stops it (Redis's `busy-reply-threshold`,
        /// `lua-time-limit`).
        #[arg(
            long,
            env = "STMD_BUSY_REPLY_THRESHOLD",
            default_value_t = 5000,
            help_heading = "Scripting",
        )]
        pub busy_reply_threshold: u64 = number(0, i64::MAX),
            live ["busy-reply-threshold", "lua-time-limit"];

        /// OBJECT ENCODING reports `listpack` for a hash of at most this many fields (Redis's
        /// threshold, alias `hash-max-ziplist-entries`). Reported only: no reply depends on it.
        #[arg(
            long,
            env = "STMD_HASH_MAX_LISTPACK_ENTRIES",
            default_value_t = 512,
            help_heading = "Encodings",
        )]
        pub hash_max_listpack_entries: u64 = number(0, i64::MAX),
            live ["hash-max-listpack-entries", "hash-max-ziplist-entries"];
        /// … and whose fields and values are at most this many bytes.
        #[arg(
            long,
            env = "STMD_HASH_MAX_LISTPACK_VALUE",
            default_value = "64",
            help_heading = "Encodings",
        )]
        pub hash_max_listpack_value: u64 = memory,
            live ["hash-max-listpack-value", "hash-max-ziplist-value"];
        /// OBJECT ENCODING reports `intset` for a set of at most this many integers.
        #[arg(
            long,
            env = "STMD_SET_MAX_INTSET_ENTRIES",
            default_value_t = 512,
            help_heading = "Encodings",
        )]
        pub set_max_intset_entries: u64 = number(0, i64::MAX), live ["set-max-intset-entries"];
        /// … `listpack` for a set of at most this many members …
        #[arg(
            long,
            env = "STMD_SET_MAX_LISTPACK_ENTRIES",
            default_value_t = 128,
            help_heading = "Encodings",
        )]
        pub set_max_listpack_entries: u64 = number(0, i64::MAX), live ["set-max-listpack-entries"];
        /// … each at most this many bytes.
        #[arg(
            long,
            env = "STMD_SET_MAX_LISTPACK_VALUE",
            default_value = "64",
            help_heading = "Encodings",
        )]
        pub set_max_listpack_value: u64 = memory, live ["set-max-listpack-value"];
        /// OBJECT ENCODING reports `listpack` for a sorted set of at most this many members …
        #[arg(
            long,
            env = "STMD_ZSET_MAX_LISTPACK_ENTRIES",
            default_value_t = 128,
            help_heading = "Encodings",
        )]
        pub zset_max_listpack_entries: u64 = number(0, i64::MAX),
            live ["zset-max-listpack-entries", "zset-max-ziplist-entries"];
        /// … each at most this many bytes.
        #[arg(
            long,
            env = "STMD_ZSET_MAX_LISTPACK_VALUE",
            default_value = "64",
            help_heading = "Encodings",
        )]
        pub zset_max_listpack_value: u64 = memory,
            live ["zset-max-listpack-value", "zset-max-ziplist-value"];
        /// OBJECT ENCODING reports `listpack` for a list within this size: positive, elements;
        /// -1..-5, 4/8/16/32/64 KiB.
        #[arg(
            long,
            env = "STMD_LIST_MAX_LISTPACK_SIZE",
            default_value_t = -2,
            allow_negative_numbers = true,
            help_heading = "Encodings",
        )]
        pub list_max_listpack_size: i64 = number(i32::MIN, i32::MAX),
            live ["list-max-listpack-size", "list-max-ziplist-size"];
        /// Reported by CONFIG GET only: stmd does not compress lists.
        #[arg(
            long,
            env = "STMD_LIST_COMPRESS_DEPTH",
            default_value_t = 0,
            help_heading = "Encodings",
        )]
        pub list_compress_depth: u64 = number(0, i32::MAX), live ["list-compress-depth"];

        /// Run as a node of a Redis Cluster (yes|no): the slot map lives in the Postgres of
        /// --database-url, which this then requires.
        #[arg(
            long,
            env = "STMD_CLUSTER_ENABLED",
            default_value = "no",
            action = clap::ArgAction::Set,
            help_heading = "Cluster",
        )]
        pub cluster_enabled: bool = yes_no, fixed ["cluster-enabled"];
        /// The address clients are sent to for this node (MOVED, CLUSTER SLOTS); default: --bind.
        #[arg(long, env = "STMD_CLUSTER_ANNOUNCE_IP", help_heading = "Cluster")]
        pub cluster_announce_ip: Option<String> = plain(String),
            fixed(|c| c.cluster_announce_ip.clone().unwrap_or_default()) ["cluster-announce-ip"];
        /// The port clients are sent to for this node (0: the port it listens on).
        #[arg(
            long,
            env = "STMD_CLUSTER_ANNOUNCE_PORT",
            default_value_t = 0,
            help_heading = "Cluster",
        )]
        pub cluster_announce_port: u16 = plain, fixed ["cluster-announce-port"];
        /// Milliseconds without a heartbeat after which a node counts as failing.
        #[arg(
            long,
            env = "STMD_CLUSTER_NODE_TIMEOUT",
            default_value_t = 15000,
            help_heading = "Cluster",
        )]
        pub cluster_node_timeout: u64 = by(clap::value_parser!(u64).range(1..)),
            fixed ["cluster-node-timeout"];

        /// Address for the Prometheus metrics endpoint (`GET /metrics`), e.g. 127.0.0.1:9121. Off
        /// unless given.
        #[arg(long, env = "STMD_METRICS_ADDR", help_heading = "Observability")]
        pub metrics_addr: Option<String> = plain(String), none;
    }
    extra {

        /// The configuration file the server started from (CONFIG REWRITE writes it back).
        #[arg(skip)]
        pub config_file: Option<PathBuf>,
        /// What reading the file found worth saying (Redis options that do nothing here), logged
        /// once logging is up.
        #[arg(skip)]
        pub config_warnings: Vec<String>,
        /// The values of the Redis options stmd checks and keeps without acting on them.
        #[arg(skip)]
        pub inert: crate::config::inert::InertValues,
    }
}

/// Which supervisor to tell when the server is ready (Redis's `supervised`; see `supervise`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Supervised {
    No,
    Upstart,
    Systemd,
    Auto,
}

/// `Display` for clap `ValueEnum`s: the value's command-line name (`systemd`, `local3`), as
/// CONFIG GET shows it.
macro_rules! display_as_value_name {
    ($($name:ty),+) => {$(
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let value = clap::ValueEnum::to_possible_value(self).ok_or(std::fmt::Error)?;
                f.write_str(value.get_name())
            }
        }
    )+};
}

display_as_value_name!(Supervised, SyslogFacility, ProtectedCommand);

/// The facilities Redis's `syslog-facility` accepts.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyslogFacility {
    User,
    Local0,
    Local1,
    Local2,
    Local3,
    Local4,
    Local5,
    Local6,
    Local7,
}

/// When TLS clients must present a certificate (Redis's `tls-auth-clients`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsAuthClients {
    Yes,
    No,
    Optional,
}

impl TlsAuthClients {
    /// Redis's CONFIG SET syntax and error (any case).
    pub fn parse(text: &str) -> Result<TlsAuthClients, String> {
        match text.to_ascii_lowercase().as_str() {
            "yes" => Ok(TlsAuthClients::Yes),
            "no" => Ok(TlsAuthClients::No),
            "optional" => Ok(TlsAuthClients::Optional),
            _ => Err("argument(s) must be one of the following: no, yes, optional".into()),
        }
    }
}

impl std::fmt::Display for TlsAuthClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsAuthClients::Yes => "yes",
            TlsAuthClients::No => "no",
            TlsAuthClients::Optional => "optional",
        })
    }
}

/// Who may run a protected command: DEBUG (Redis's `enable-debug-command`), MODULE LOAD/UNLOAD
/// (`enable-module-command`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtectedCommand {
    Yes,
    No,
    Local,
}

impl ProtectedCommand {
    /// Whether a client may run the command, given whether it is on this host (`local`:
    /// loopback or the Unix socket).
    pub fn allows(self, local_client: bool) -> bool {
        match self {
            ProtectedCommand::Yes => true,
            ProtectedCommand::No => false,
            ProtectedCommand::Local => local_client,
        }
    }

    /// Redis's refusal of `command` (upper case) behind the option `option`.
    pub fn refusal(command: &str, option: &str) -> String {
        format!(
            "ERR {command} command not allowed. If the {option} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
        )
    }
}

/// How log lines are written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl Default for Config {
    fn default() -> Self {
        Config::parse_from(["stmd"])
    }
}

impl Config {
    /// The worker threads to run: `--threads`, or for 0 one per core but one (at least one). On a
    /// 2-core host whose clients run beside the server a second worker costs more in context
    /// switches than it serves (docs/performance.md, "One worker by default").
    pub fn worker_threads(&self) -> usize {
        match self.threads {
            0 => {
                std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
            }
            n => n,
        }
    }

    /// The thresholds OBJECT ENCODING reports by.
    pub fn encoding_thresholds(&self) -> Thresholds {
        Thresholds {
            hash_max_listpack_entries: self.hash_max_listpack_entries,
            hash_max_listpack_value: self.hash_max_listpack_value,
            set_max_intset_entries: self.set_max_intset_entries,
            set_max_listpack_entries: self.set_max_listpack_entries,
            set_max_listpack_value: self.set_max_listpack_value,
            zset_max_listpack_entries: self.zset_max_listpack_entries,
            zset_max_listpack_value: self.zset_max_listpack_value,
            list_max_listpack_size: self.list_max_listpack_size,
            list_compress_depth: self.list_compress_depth,
        }
    }
}

/// CONFIG GET `database`: where the scope rows go (the URL without its password).
fn database_shown(c: &Config) -> String {
    if c.no_database {
        "none".into()
    } else {
        match &c.database_url {
            Some(url) => redact_password(url),
            None => c.dir.join("stmd.db").display().to_string(),
        }
    }
}

/// `latency-tracking-info-percentiles`: the percentiles INFO latencystats prints.
#[derive(Clone, Debug, PartialEq)]
pub struct Percentiles(pub Vec<f64>);

impl Percentiles {
    /// Space-separated numbers within 0..100 (none is allowed), with Redis's errors.
    pub fn parse(text: &str) -> Result<Percentiles, String> {
        let mut values = Vec::new();
        for word in text.split_whitespace() {
            let value: f64 = word
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
            if !(0.0..=100.0).contains(&value) {
                return Err(
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                        .into(),
                );
            }
            values.push(value);
        }
        Ok(Percentiles(values))
    }
}

impl std::fmt::Display for Percentiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: Vec<String> = self.0.iter().map(f64::to_string).collect();
        f.write_str(&words.join(" "))
    }
}

/// Redis 7.2's `loglevel` names, as the `tracing` filters stmd logs by, level for level from the
/// most verbose (Redis's `debug` is tracing's `trace`, `verbose` its `debug`), with Redis's
/// CONFIG SET error.
pub fn log_level_filter(level: &str) -> Result<&'static str, String> {
    match level.to_ascii_lowercase().as_str() {
        "debug" => Ok("trace"),
        "verbose" => Ok("debug"),
        "notice" => Ok("info"),
        "warning" => Ok("warn"),
        "nothing" => Ok("off"),
        _ => Err(
            "argument(s) must be one of the following: debug, verbose, notice, warning, nothing"
                .into(),
        ),
    }
}

/// Changes the log filter of the running process: installed by the binary once logging is up
/// (without it, as in tests that run the server in-process, a change is only recorded).
static LOG_RELOAD: std::sync::OnceLock<LogReload> = std::sync::OnceLock::new();

/// Replaces the log filter with a `--log-level` filter.
pub type LogReload = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// Installs the function CONFIG SET loglevel changes the log filter through (once).
pub fn set_log_reload(reload: LogReload) {
    let _ = LOG_RELOAD.set(reload);
}

/// Applies a `--log-level` filter now, if the process's logging can change.
pub fn apply_log_level(filter: &str) {
    if let Some(reload) = LOG_RELOAD.get() {
        if let Err(why) = reload(filter) {
            tracing::warn!(%why, filter, "the log level could not be changed");
        }
    }
}

/// The `loglevel` CONFIG GET shows for a `--log-level` filter: Redis's name for a plain level, the
/// filter itself for a tracing directive (such as `stmd=debug,info`).
pub fn redis_log_level(filter: &str) -> String {
    match filter.trim().to_ascii_lowercase().as_str() {
        "trace" => "debug".into(),
        "debug" => "verbose".into(),
        "info" => "notice".into(),
        "warn" | "error" => "warning".into(),
        "off" => "nothing".into(),
        _ => filter.to_string(),
    }
}

/// `yes` or `no`, as redis.conf spells booleans.
pub fn parse_yes_no(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".to_string()),
    }
}

/// `replicaof`: `"<host> <port>"` with a port in 0..=65535 (Redis's range), or empty.
pub fn parse_replicaof(text: &str) -> Result<String, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        [] => Ok(String::new()),
        [host, port] if port.parse::<u16>().is_ok() => Ok(format!("{host} {port}")),
        [_, _] => Err("Invalid master port".into()),
        _ => Err("wrong number of arguments: \"<host> <port>\"".into()),
    }
}

/// Protected mode: with no password, only loopback clients are served.
pub fn refuses(config: &Config, peer: std::net::IpAddr) -> bool {
    let loopback = match peer {
        std::net::IpAddr::V4(v4) => v4.is_loopback(),
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    };
    config.protected_mode && config.requirepass.is_empty() && !loopback
}

/// `--unixsocketperm`: permission bits in octal, as Redis reads them (at most 0777).
fn parse_octal_mode(text: &str) -> Result<u32, String> {
    u32::from_str_radix(text, 8)
        .ok()
        .filter(|&mode| mode <= 0o777)
        .ok_or_else(|| format!("invalid unixsocketperm {text:?}: octal permission bits, e.g. 700"))
}

/// A database URL with its password replaced by `***`, for display.
pub fn redact_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme + 3],
                    &credentials[..colon],
                    &url[at..]
                ),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// A CONFIG parameter: one of stmd's own, or a Redis option stmd checks and keeps but does not act
/// on (its row in `inert::INERT`, and whether it goes by its alias).
#[derive(Clone, Copy)]
pub enum Setting {
    Live(&'static Param, usize),
    Inert(usize, bool),
}

impl Setting {
    pub fn name(&self) -> &'static str {
        match self {
            Setting::Live(param, name) => param.names[*name],
            Setting::Inert(index, alias) => {
                let row = &crate::config::inert::INERT[*index];
                match (alias, row.alias) {
                    (true, Some(alias)) => alias,
                    _ => row.name,
                }
            }
        }
    }

    pub fn value(&self, config: &Config) -> String {
        match self {
            Setting::Live(param, _) => (param.get)(config),
            Setting::Inert(index, _) => config.inert.get(*index).to_string(),
        }
    }
}

/// Every CONFIG parameter, stmd's first, then the inert ones (each alias after its option).
pub fn settings() -> impl Iterator<Item = Setting> {
    PARAMS
        .iter()
        .flat_map(|param| (0..param.names.len()).map(move |name| Setting::Live(param, name)))
        .chain(
            crate::config::inert::INERT
                .iter()
                .enumerate()
                .flat_map(|(index, row)| {
                    std::iter::once(Setting::Inert(index, false))
                        .chain(row.alias.map(|_| Setting::Inert(index, true)))
                }),
        )
}

/// Finds a parameter by its case-insensitive name.
pub fn find_setting(name: &[u8]) -> Option<Setting> {
    settings().find(|s| s.name().as_bytes().eq_ignore_ascii_case(name))
}

/// A file name without a directory (`dbfilename`, `appendfilename`), as Redis requires.
fn parse_file_name(text: &str) -> Result<String, String> {
    if text.is_empty() || text.contains('/') || text == "." || text == ".." {
        return Err("a file name can't be a path, just a filename".into());
    }
    Ok(text.to_string())
}

/// `shutdown-on-sigterm` / `shutdown-on-sigint`: Redis's flags for a shutdown by signal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShutdownFlags {
    pub save: bool,
    pub nosave: bool,
    pub now: bool,
    pub force: bool,
}

impl ShutdownFlags {
    /// Redis's syntax and errors: `default` or any of `save`, `nosave`, `now`, `force`
    /// (space-separated, any case), never both `save` and `nosave`.
    pub fn parse(text: &str) -> Result<ShutdownFlags, String> {
        let mut flags = ShutdownFlags::default();
        for word in text.split_whitespace() {
            let flag = match word.to_ascii_lowercase().as_str() {
                "default" => continue,
                "save" => &mut flags.save,
                "nosave" => &mut flags.nosave,
                "now" => &mut flags.now,
                "force" => &mut flags.force,
                _ => return Err(SHUTDOWN_FLAGS.into()),
            };
            *flag = true;
        }
        if text.split_whitespace().next().is_none() {
            return Err(SHUTDOWN_FLAGS.into());
        }
        if flags.save && flags.nosave {
            return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
        }
        Ok(flags)
    }
}

const SHUTDOWN_FLAGS: &str =
    "argument(s) must be one of the following: default, save, nosave, now, force";

impl std::fmt::Display for ShutdownFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words = [
            (self.save, "save"),
            (self.nosave, "nosave"),
            (self.now, "now"),
            (self.force, "force"),
        ];
        let set: Vec<&str> = words
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, w)| *w)
            .collect();
        match set.is_empty() {
            true => f.write_str("default"),
            false => f.write_str(&set.join(" ")),
        }
    }
}

/// `maxmemory-clients`: the most memory all clients may hold together, in bytes or as a
/// percentage of `maxmemory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientsMemory {
    Bytes(u64),
    Percent(u64),
}

impl ClientsMemory {
    /// Redis's syntax and errors: a memory value, or `N%` with N at most 100.
    pub fn parse(text: &str) -> Result<ClientsMemory, String> {
        const NEITHER: &str = "argument must be a memory or percent value";
        if let Some(percent) = text.strip_suffix('%') {
            let percent: u64 = percent.parse().map_err(|_| NEITHER.to_string())?;
            if percent > 100 {
                return Err("percentage argument must be less or equal to 100".into());
            }
            return Ok(ClientsMemory::Percent(percent));
        }
        parse_memory(text)
            .map(ClientsMemory::Bytes)
            .map_err(|_| NEITHER.to_string())
    }

    /// The limit in bytes, given `maxmemory`; None when there is none (0, or a percentage of no
    /// `maxmemory`).
    pub fn limit(self, maxmemory: u64) -> Option<u64> {
        let bytes = match self {
            ClientsMemory::Bytes(bytes) => bytes,
            ClientsMemory::Percent(percent) => {
                u64::try_from(u128::from(maxmemory) * u128::from(percent) / 100).unwrap_or(u64::MAX)
            }
        };
        (bytes > 0).then_some(bytes)
    }
}

impl std::fmt::Display for ClientsMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientsMemory::Bytes(bytes) => write!(f, "{bytes}"),
            ClientsMemory::Percent(percent) => write!(f, "{percent}%"),
        }
    }
}

/// Parses a memory size as Redis's `memtoull` does: digits then an optional unit (`b`, `k`/`kb`
/// are 1000/1024, `m`/`mb`, `g`/`gb` likewise, any case), nothing else (no sign, no spaces). As in
/// Redis, missing digits count as 0 (`""` and `"mb"` are 0).
pub fn parse_memory(text: &str) -> Result<u64, String> {
    let bad = || format!("argument must be a memory value: '{text}'");
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let factor: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return Err(bad()),
    };
    let base: u64 = match digits {
        "" => 0,
        digits => digits.parse().map_err(|_| bad())?,
    };
    base.checked_mul(factor).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units_follow_redis_conf() {
        assert_eq!(parse_memory("512mb"), Ok(512 * 1024 * 1024));
        assert_eq!(parse_memory("1GB"), Ok(1024 * 1024 * 1024));
        assert_eq!(parse_memory("10k"), Ok(10_000));
        assert_eq!(parse_memory("77"), Ok(77));
        assert!(parse_memory("12xb").is_err());
        assert!(parse_memory("-1").is_err() && parse_memory(" 1").is_err());
        assert_eq!(parse_memory(""), Ok(0), "as Redis's memtoull");
    }

    #[test]
    fn zero_threads_leaves_one_core_spare() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let auto = Config::parse_from(["stmd"]);
        assert_eq!(auto.worker_threads(), if cores > 1 { cores - 1 } else { 1 });
        assert_eq!(
            Config::parse_from(["stmd", "--threads", "3"]).worker_threads(),
            3
        );
    }

    #[test]
    fn every_flag_default_matches_the_documented_one() {
        let c = Config::default();
        assert_eq!(
            (c.port, c.bind.as_str(), c.maxclients),
            (6379, "127.0.0.1", 10000)
        );
        assert_eq!(c.proto_max_bulk_len, 512 * 1024 * 1024);
        assert_eq!(c.client_query_buffer_limit, 1024 * 1024 * 1024);
        assert_eq!(
            (c.stm_max_messages, c.stm_ttl, c.stm_summary_ttl),
            (10, 43200, 86400)
        );
        assert_eq!(
            (c.stm_max_summary_chars, c.stm_max_content_bytes),
            (1500, 65536)
        );
        assert_eq!((c.stm_max_items, c.stm_persist_queue), (1000, 100000));
        assert_eq!((c.stm_restore_timeout, c.stm_row_retention_days), (10, 90));
        assert_eq!(c.stm_retention_sweep_ms, 86_400_000);
        assert_eq!((c.slowlog_log_slower_than, c.slowlog_max_len), (10000, 128));
        assert_eq!((c.metrics_addr, c.log_format), (None, LogFormat::Text));
        assert_eq!(
            (c.tls_port, c.tls_cert_file, c.tls_auth_clients),
            (0, None, TlsAuthClients::Yes)
        );
        assert_eq!(
            c.client_output_buffer_limit.to_string(),
            crate::output_limit::OutputBufferLimits::parse(
                crate::output_limit::DEFAULT_OUTPUT_BUFFER_LIMITS
            )
            .map(|l| l.to_string())
            .expect("default")
        );
        assert_eq!(c.client_output_buffer_limit.normal.soft, 1024 * 1024);
        assert_eq!(
            (c.maxmemory, c.maxmemory_policy, c.maxmemory_samples),
            (0, Policy::NoEviction, 5)
        );
        assert_eq!(
            (
                c.cluster_enabled,
                c.cluster_announce_ip,
                c.cluster_announce_port
            ),
            (false, None, 0)
        );
        assert_eq!(c.cluster_node_timeout, 15000);
    }

    #[test]
    fn protected_mode_refuses_only_remote_clients_without_a_password() {
        let mut c = Config::default();
        let remote: std::net::IpAddr = "203.0.113.9".parse().expect("ip");
        let local: std::net::IpAddr = "127.0.0.1".parse().expect("ip");
        let mapped: std::net::IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
        assert!(refuses(&c, remote));
        assert!(!refuses(&c, local) && !refuses(&c, mapped));
        assert!(!refuses(&c, "::1".parse().expect("ip")));
        c.requirepass = "secret".into();
        assert!(!refuses(&c, remote), "a password lifts protected mode");
        c.requirepass.clear();
        c.protected_mode = false;
        assert!(!refuses(&c, remote));
        assert_eq!(parse_yes_no("YES"), Ok(true));
        assert!(parse_yes_no("maybe").is_err());
    }

    #[test]
    fn database_passwords_are_not_shown() {
        assert_eq!(
            redact_password("postgres://bot:secret@db:5432/stm"),
            "postgres://bot:***@db:5432/stm"
        );
        assert_eq!(redact_password("postgres://db/stm"), "postgres://db/stm");
    }

    #[test]
    fn every_flag_has_its_config_row_where_redis_has_the_name() {
        use clap::CommandFactory;
        // stmd's own flags: Redis has no CONFIG parameter of the name (`rename-command` is a
        // file directive only; `log-level` is shown as `loglevel`, `database-url` as `database`).
        const OWN: &[&str] = &[
            "help",
            "version",
            "rename-command",
            "stm-retention-sweep-ms",
            "stm-strip-pattern",
            "database-url",
            "no-database",
            "log-level",
            "log-format",
            "syslog-socket",
            "metrics-addr",
        ];
        let names: Vec<&str> = PARAMS
            .iter()
            .flat_map(|p| p.names.iter().copied())
            .collect();
        let command = Config::command();
        let flags: Vec<&str> = command
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        for flag in &flags {
            assert!(
                names.contains(flag) != OWN.contains(flag),
                "--{flag}: a CONFIG row, or listed as stmd's own, not both"
            );
            assert!(
                crate::config::inert::find(flag).is_none(),
                "--{flag} is also an inert option"
            );
        }
        // A row's first name is its flag's, but where stmd's flag is named otherwise.
        for name in PARAMS.iter().filter_map(|p| p.names.first()) {
            assert!(
                flags.contains(name) || ["loglevel", "database"].contains(name),
                "CONFIG {name} has no flag of its name"
            );
        }
        assert!(PARAMS
            .iter()
            .all(|p| !p.names.is_empty() || p.set.is_none()));
    }

    #[test]
    fn parameter_names_are_unique_lowercase() {
        let mut names: Vec<_> = PARAMS
            .iter()
            .flat_map(|p| p.names.iter().copied())
            .collect();
        let count = names.len();
        assert!(names.iter().all(|n| n.to_ascii_lowercase() == *n));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count);
        let rows: Vec<_> = crate::config::inert::INERT.iter().map(|r| r.name).collect();
        assert!(
            rows.windows(2).all(|w| w[0] < w[1]),
            "inert names sorted, unique"
        );
        let mut inert: Vec<_> = crate::config::inert::INERT
            .iter()
            .flat_map(|r| std::iter::once(r.name).chain(r.alias))
            .collect();
        inert.sort();
        inert.dedup();
        assert!(inert.iter().all(|n| n.to_ascii_lowercase() == *n));
        let aliases = crate::config::inert::INERT
            .iter()
            .filter(|r| r.alias.is_some())
            .count();
        assert_eq!(
            inert.len(),
            rows.len() + aliases,
            "inert names and aliases unique"
        );
        let both: Vec<_> = inert.iter().filter(|n| names.contains(n)).collect();
        assert!(both.is_empty(), "live and inert at once: {both:?}");
    }
}
