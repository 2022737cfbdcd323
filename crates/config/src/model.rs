//! The typed configuration model. Every key has a default except users and groups.

use crate::schema::SchemaConfig;
use serde::Deserialize;
use std::time::Duration;

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub pool: PoolConfig,
    #[serde(default)]
    pub users: Vec<UserConfig>,
    #[serde(default)]
    pub groups: Vec<GroupConfig>,
    #[serde(default)]
    pub admin: AdminConfig,
    /// Sharded logical databases (none: every statement goes to the first group as is).
    #[serde(default)]
    pub schemas: Vec<SchemaConfig>,
}

/// The client-facing listener and per-connection limits.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub listen: String,
    /// Version string announced to clients; empty = the first backend's version.
    pub server_version: String,
    pub max_connections: usize,
    pub max_allowed_packet: usize,
    pub handshake_timeout_ms: u64,
    /// On SIGTERM, sessions end at their first moment outside a transaction (running
    /// statements and transactions finish) within this; the rest are then closed.
    pub shutdown_timeout_ms: u64,
    /// On SIGTERM the health endpoint answers 503 at once and new clients are still taken
    /// until it has answered this many health checks (the load balancer's `fall` count), so
    /// the balancer stops sending clients before the listener closes.
    pub drain_checks: u64,
    /// ...but no longer than this. A proxy whose health nobody checked within this long
    /// closes its listener at once.
    pub drain_wait_ms: u64,
    /// Bind the client port with SO_REUSEPORT, so that several processes on one host share it.
    pub reuse_port: bool,
    /// A client that does not take a result within this is disconnected (its backend
    /// connection is discarded), like MySQL's net_write_timeout.
    pub net_write_timeout_ms: u64,
    /// Auth plugin proposed in the greeting: mysql_native_password or caching_sha2_password.
    pub default_auth_plugin: String,
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    /// Refuse clients that do not switch to TLS.
    pub require_tls: bool,
    /// Worker threads of the runtime; 0 = one per core.
    pub worker_threads: usize,
    /// In a transaction that holds rows on several shards, a statement waits at most this long
    /// for a row lock (`innodb_lock_wait_timeout` of that statement): waits across shards can be
    /// deadlocks no single server sees. The statement then fails with 1205, as any lock wait
    /// timeout does.
    pub cross_shard_lock_wait_s: u64,
    /// Bytes a merge of shard results may buffer (sorting groups, GROUP_CONCAT, DISTINCT
    /// aggregates) before the statement fails with a clear error.
    pub merge_memory_cap: usize,
    /// A statement on several shards fails (1969) when a shard has not started answering
    /// within this; its connections are closed.
    pub scatter_deadline_ms: u64,
    /// Database (on every group holding shards) of the two-phase commit decision log,
    /// `<xa_database>.xa_decisions`; created when missing.
    pub xa_database: String,
    /// Recovery of in-doubt XA branches runs at start and then this often.
    pub xa_recovery_interval_ms: u64,
    /// A prepared branch without a decision is rolled back once recovery has seen it in doubt
    /// this long (its transaction is then certainly gone or too late to commit).
    pub xa_resolve_after_ms: u64,
    /// Decisions no in-doubt branch needs are deleted after this many seconds.
    pub xa_decision_retention_s: u64,
    /// Pipelined lanes per backend server and session state: short side-effect-free autocommit
    /// reads of many sessions share these connections, several statements per write. 0 = off.
    pub pipeline_lanes: usize,
    /// Statements a lane has sent and not yet answered, at most. Statements fill the fullest
    /// lane with room; the next lane opens only when every open one holds this many, and when
    /// all `pipeline_lanes` are full a statement takes a connection of its own.
    pub pipeline_depth: usize,
    /// A statement in a lane runs at most this long (the lane's `max_statement_time`); one that
    /// takes longer is interrupted, runs again on a connection of its own and is not pipelined
    /// again. This bounds how long a slow statement holds up those queued behind it.
    pub pipeline_statement_bound_ms: u64,
    /// How sockets send: "uring" (sends go through one io_uring per process, submitted
    /// together once per turn of the runtime; reads stay on readiness), "epoll" (a write system
    /// call per send), or "auto" (the default: uring where the kernel allows it, else epoll).
    /// An explicit "uring" fails the start when io_uring is refused.
    pub io: IoEngine,
}

/// How Tessera's sockets send (`server.io`).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum IoEngine {
    /// io_uring when the kernel allows it, else epoll.
    #[default]
    Auto,
    /// One write system call per send.
    Epoll,
    /// Sends queued on an io_uring and submitted together.
    Uring,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:6033".into(),
            server_version: String::new(),
            max_connections: 20_000,
            max_allowed_packet: 64 << 20,
            handshake_timeout_ms: 10_000,
            shutdown_timeout_ms: 30_000,
            drain_checks: 3,
            drain_wait_ms: 10_000,
            reuse_port: false,
            net_write_timeout_ms: 60_000,
            default_auth_plugin: "mysql_native_password".into(),
            tls_cert: None,
            tls_key: None,
            require_tls: false,
            worker_threads: 0,
            cross_shard_lock_wait_s: 2,
            merge_memory_cap: 64 << 20,
            scatter_deadline_ms: 60_000,
            xa_database: "tessera".into(),
            xa_recovery_interval_ms: 5_000,
            xa_resolve_after_ms: 10_000,
            xa_decision_retention_s: 600,
            pipeline_lanes: 2,
            pipeline_depth: 64,
            pipeline_statement_bound_ms: 50,
            io: IoEngine::Auto,
        }
    }
}

impl ServerConfig {
    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_millis(self.handshake_timeout_ms)
    }
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_timeout_ms)
    }
    pub fn drain_wait(&self) -> Duration {
        Duration::from_millis(self.drain_wait_ms)
    }
    pub fn scatter_deadline(&self) -> Duration {
        Duration::from_millis(self.scatter_deadline_ms.max(1))
    }
    pub fn xa_recovery_interval(&self) -> Duration {
        Duration::from_millis(self.xa_recovery_interval_ms.max(10))
    }
    pub fn xa_resolve_after(&self) -> Duration {
        Duration::from_millis(self.xa_resolve_after_ms)
    }
    pub fn net_write_timeout(&self) -> Duration {
        Duration::from_millis(self.net_write_timeout_ms.max(1))
    }
}

/// Backend connection pool limits, per backend server.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PoolConfig {
    pub min_idle: usize,
    pub max_size: usize,
    pub idle_timeout_ms: u64,
    pub max_lifetime_ms: u64,
    pub connect_timeout_ms: u64,
    pub checkout_timeout_ms: u64,
    /// Prepared statements kept open per backend connection (least recently used closed first).
    pub prepared_cache_size: usize,
    /// Longest wait between reconnect attempts to a dead server.
    pub backoff_max_ms: u64,
    /// Longest a COMMIT/ROLLBACK of a transaction of pure reads, answered at once, waits in an
    /// idle connection for a command to take it along before the pool sends it on its own
    /// (the snapshot and the metadata locks end within this bound).
    pub queued_end_settle_ms: u64,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            min_idle: 0,
            max_size: 64,
            idle_timeout_ms: 600_000,
            max_lifetime_ms: 3_600_000,
            connect_timeout_ms: 5_000,
            checkout_timeout_ms: 10_000,
            prepared_cache_size: 256,
            backoff_max_ms: 5_000,
            queued_end_settle_ms: 2,
        }
    }
}

impl PoolConfig {
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }
    pub fn max_lifetime(&self) -> Duration {
        Duration::from_millis(self.max_lifetime_ms)
    }
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }
    pub fn checkout_timeout(&self) -> Duration {
        Duration::from_millis(self.checkout_timeout_ms)
    }
    pub fn queued_end_settle(&self) -> Duration {
        Duration::from_millis(self.queued_end_settle_ms)
    }
    pub fn backoff_max(&self) -> Duration {
        Duration::from_millis(self.backoff_max_ms)
    }
}

/// A client account of Tessera (not a backend account).
#[derive(Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    pub name: String,
    /// Plaintext password (allows caching_sha2_password and mysql_native_password).
    pub password: Option<String>,
    /// mysql_native_password hash as printed by PASSWORD(): "*" + 40 hex digits.
    pub password_hash: Option<String>,
    /// Spread this user's reads over replicas (false: everything goes to the primary).
    #[serde(default = "default_true")]
    pub read_write_split: bool,
    /// Default read consistency of this user's sessions: "eventual", "session", "global" or
    /// "strong".
    #[serde(default = "default_consistency")]
    pub read_consistency: String,
    /// The backend account this user's statements run as (its own pools, so MariaDB enforces
    /// its privileges). Unset: the group's account (`groups.user`), shared by every client.
    pub backend_user: Option<String>,
    /// Password of `backend_user`.
    pub backend_password: Option<String>,
}

fn default_true() -> bool {
    true
}

/// Correct by default: a read sees every write Tessera acknowledged before it began.
fn default_consistency() -> String {
    "global".into()
}

impl std::fmt::Debug for UserConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserConfig")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A group of backend servers holding the same data: one primary and its replicas.
#[derive(Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    pub name: String,
    /// Backend account Tessera logs in with.
    pub user: String,
    #[serde(default)]
    pub password: String,
    pub primary: ServerAddr,
    #[serde(default)]
    pub replicas: Vec<ServerAddr>,
    /// Connect to the backends over TLS.
    #[serde(default)]
    pub tls: bool,
    /// A replica further behind than this (seconds, as SHOW SLAVE STATUS reports) gets no reads.
    #[serde(default = "default_max_lag")]
    pub max_replica_lag_s: u64,
    /// How often the monitor checks each server (connect, read_only, replication, lag, GTID).
    #[serde(default = "default_monitor_interval")]
    pub monitor_interval_ms: u64,
    /// Stored procedures known to only read: `CALL` of these may run on a replica.
    #[serde(default)]
    pub read_only_procedures: Vec<String>,
    /// In `session` consistency, how long a read may wait on a replica (MASTER_GTID_WAIT) for
    /// the session's last write before it goes to the primary instead; 0 = go at once.
    #[serde(default)]
    pub read_your_writes_wait_ms: u64,
}

/// The largest `read_your_writes_wait_ms` accepted.
pub const MAX_READ_YOUR_WRITES_WAIT_MS: u64 = 10_000;

fn default_max_lag() -> u64 {
    10
}

fn default_monitor_interval() -> u64 {
    1000
}

impl GroupConfig {
    pub fn monitor_interval(&self) -> Duration {
        Duration::from_millis(self.monitor_interval_ms)
    }

    pub fn read_your_writes_wait(&self) -> Duration {
        Duration::from_millis(self.read_your_writes_wait_ms)
    }

    /// Read weight of the primary: as configured, else 0 when replicas exist (reads go to
    /// them) and 1 when there are none.
    pub fn primary_read_weight(&self) -> u32 {
        self.primary
            .weight
            .unwrap_or(if self.replicas.is_empty() { 1 } else { 0 })
    }
}

impl std::fmt::Debug for GroupConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupConfig")
            .field("name", &self.name)
            .field("user", &self.user)
            .field("primary", &self.primary)
            .field("replicas", &self.replicas)
            .field("tls", &self.tls)
            .field("max_replica_lag_s", &self.max_replica_lag_s)
            .field("monitor_interval_ms", &self.monitor_interval_ms)
            .field("read_only_procedures", &self.read_only_procedures)
            .field("read_your_writes_wait_ms", &self.read_your_writes_wait_ms)
            .finish_non_exhaustive()
    }
}

/// One backend server.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerAddr {
    /// host:port
    pub address: String,
    /// Share of reads. Replicas default to 1; the primary to 0 when it has replicas (see
    /// [`GroupConfig::primary_read_weight`]).
    #[serde(default)]
    pub weight: Option<u32>,
}

impl ServerAddr {
    /// The read weight of a replica (default 1).
    pub fn replica_read_weight(&self) -> u32 {
        self.weight.unwrap_or(1)
    }
}

/// The HTTP endpoint for /metrics and /health.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// host:port for HTTP /metrics and /health; empty = disabled.
    pub http_listen: String,
}
