//! What every session shares: the configuration snapshot, the backend pools, the client
//! accounts, TLS, the session registry (for KILL) and metrics. Passed as an `Arc`, never global.

use crate::backend::connect::ConnectOptions;
use crate::backend::stmt_cache::SchemaChanges;
use crate::backend::{ServerInfo, ServerRef};
use crate::cluster::{Backend, Consistency, Group};
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::registry::SessionRegistry;
use crate::tracking::TrackingDefaults;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tessera_config::Config;
use tessera_protocol::auth;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// A client account: its credentials as Tessera can check them, and its routing defaults.
#[derive(Clone)]
pub struct Credentials {
    /// Plaintext, when configured (needed for caching_sha2_password).
    pub password: Option<Vec<u8>>,
    /// SHA1(SHA1(password)) for mysql_native_password.
    pub native_hash: [u8; 20],
    /// Reads may go to replicas.
    pub read_write_split: bool,
    pub read_consistency: Consistency,
    /// The backend account this user's statements run as, when it has one of its own.
    pub backend: Option<BackendAccount>,
}

/// A MariaDB account that runs one client user's statements (`users.backend_user`).
#[derive(Clone)]
pub struct BackendAccount {
    pub user: String,
    pub password: String,
}

/// Shared, immutable-after-start state of the proxy.
pub struct Context {
    pub config: Arc<Config>,
    pub groups: Vec<Arc<Group>>,
    pub users: HashMap<String, Credentials>,
    pub tls: Option<TlsAcceptor>,
    pub sessions: SessionRegistry,
    pub metrics: Metrics,
    pub shutdown: watch::Receiver<bool>,
    /// Logical schemas and their shards.
    pub topology: Arc<crate::topology::Topology>,
    /// Sharded plans by fingerprint.
    pub plans: crate::route::sharded::cache::PlanCache,
    /// Blocks of AUTO_INCREMENT shard keys this process holds.
    pub sequences: crate::session::sequence::Sequences,
    /// This process's id in the XIDs of its transactions (random at start).
    pub instance: u32,
    /// Numbers the transactions this process starts with XA.
    xa_sequence: std::sync::atomic::AtomicU64,
    /// Steps where a test makes this process abort or pause (`TESSERA_FAILPOINTS`).
    pub failpoints: crate::txn::failpoints::Failpoints,
    /// The io_uring every socket sends through (`server.io` = "auto" where the kernel allows io_uring, or "uring").
    pub ring: Option<Arc<crate::uring::Ring>>,
    /// Schema changes (DDL) that went through this process; shared with every backend
    /// connection, whose cached PREPARE answers older than the latest one are not reused.
    pub schema_changes: Arc<crate::backend::stmt_cache::SchemaChanges>,
    /// Columns of the logical schemas' tables (for column-less INSERTs and column resolution).
    pub catalog: crate::catalog::Catalog,
    /// The session tracking new sessions start with (the servers' GLOBAL values).
    pub tracking_defaults: Arc<TrackingDefaults>,
    next_id: AtomicU32,
}

impl Context {
    /// Builds pools and credentials from a validated configuration; `park`: the hook of the
    /// runtime this runs on (see [`crate::uring::ParkHook`]), if it has one.
    pub fn new(
        config: Arc<Config>,
        shutdown: watch::Receiver<bool>,
        park: Option<&crate::uring::ParkHook>,
    ) -> Result<Self, ProxyError> {
        let tls = match (&config.server.tls_cert, &config.server.tls_key) {
            (Some(c), Some(k)) => Some(crate::tls::acceptor(c, k)?),
            _ => None,
        };
        let users = config.users.iter().map(|u| (u.name.clone(), credentials(u))).collect();
        let ring = start_ring(config.server.io, park.filter(|_| reads_all_through_ring(&config)))?;
        let schema_changes = Arc::default();
        let tracking_defaults = Arc::default();
        let shared = (&schema_changes, &tracking_defaults);
        let groups = config
            .groups
            .iter()
            .map(|g| build_group(&config, g, ring.as_ref(), shared))
            .collect::<Result<_, _>>()?;
        let topology =
            Arc::new(crate::topology::Topology::from_config(&config).map_err(|e| ProxyError::Config(e.to_string()))?);
        Ok(Context {
            config,
            groups,
            users,
            tls,
            sessions: SessionRegistry::default(),
            metrics: Metrics::default(),
            shutdown,
            topology,
            plans: Default::default(),
            sequences: Default::default(),
            instance: rand::random(),
            xa_sequence: Default::default(),
            failpoints: crate::txn::failpoints::Failpoints::from_env().map_err(ProxyError::Config)?,
            ring,
            schema_changes,
            tracking_defaults,
            catalog: Default::default(),
            next_id: AtomicU32::new(1),
        })
    }

    /// A gtrid for a new transaction whose coordinator branch is on group `group`.
    pub fn new_gtrid(&self, group: usize) -> Result<String, ProxyError> {
        let name = &self.group_checked(group)?.name;
        let n = self.xa_sequence.fetch_add(1, Ordering::Relaxed) + 1;
        crate::txn::xid::gtrid(self.instance, n, name)
            .ok_or_else(|| ProxyError::Config(format!("group name `{name}` is too long for an XA transaction id")))
    }

    /// A fresh connection id for a client (never 0).
    pub fn next_session_id(&self) -> u32 {
        loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            if id != 0 {
                return id;
            }
        }
    }

    /// The group statements outside any logical schema go to: the first configured group.
    pub fn default_group(&self) -> &Arc<Group> {
        &self.groups[0]
    }

    /// A group by index; an unknown index is an error (never another group).
    pub fn group_checked(&self, index: usize) -> Result<&Arc<Group>, ProxyError> {
        self.groups
            .get(index)
            .ok_or_else(|| ProxyError::Config(format!("no group with index {index}")))
    }

    /// The first group's current primary: session-level commands (login schema) go there.
    pub fn default_pool(&self) -> &Arc<Pool> {
        &self.groups[0].primary().pool
    }

    /// The pool that opens connections like `server` (same address and account), for KILL.
    pub fn pool_like(&self, server: &ServerInfo) -> Option<&Arc<Pool>> {
        self.groups
            .iter()
            .flat_map(|g| g.servers.iter())
            .filter(|s| s.address == server.address)
            .flat_map(|s| s.pools())
            .find(|p| p.server.user == server.user)
    }

    /// Version string for the greeting: configured, else the backend's, else a MariaDB-like one.
    pub fn server_version(&self) -> String {
        if !self.config.server.server_version.is_empty() {
            return self.config.server.server_version.clone();
        }
        match self.default_pool().server_version() {
            Some(v) if v.starts_with("5.5.5-") => format!("{v}-tessera"),
            Some(v) if v.contains("MariaDB") => format!("5.5.5-{v}-tessera"),
            Some(v) => format!("{v}-tessera"),
            None => "5.5.5-10.11.0-MariaDB-tessera".into(),
        }
    }
}

fn credentials(u: &tessera_config::UserConfig) -> Credentials {
    let (password, native_hash) = match (&u.password, &u.password_hash) {
        (Some(p), _) => (Some(p.as_bytes().to_vec()), auth::native_password_hash(p.as_bytes())),
        (None, Some(h)) => (None, auth::parse_native_hash(h).unwrap_or([0; 20])),
        (None, None) => (Some(Vec::new()), [0; 20]),
    };
    Credentials {
        password,
        native_hash,
        read_write_split: u.read_write_split,
        // Validated at load time; session is the safe default.
        read_consistency: Consistency::parse(&u.read_consistency).unwrap_or(Consistency::Global),
        backend: u.backend_user.as_ref().map(|user| BackendAccount {
            user: user.clone(),
            password: u.backend_password.clone().unwrap_or_default(),
        }),
    }
}

/// Whether every connection that reads goes through the ring once io_uring is on: no TLS (its
/// streams read and write on their own) and no unix-socket backends. A ring's sends may then
/// wait for the runtime's park (the ring counts its streams' reads to tell a busy runtime).
fn reads_all_through_ring(config: &Config) -> bool {
    let unix = |a: &tessera_config::ServerAddr| a.address.starts_with("unix:");
    config.server.tls_cert.is_none()
        && config
            .groups
            .iter()
            .all(|g| !g.tls && !unix(&g.primary) && !g.replicas.iter().any(unix))
}

/// The io_uring every socket sends through (on the current runtime), or none for epoll:
/// `auto` falls back to epoll when the kernel refuses io_uring, `uring` fails the start.
fn start_ring(
    io: tessera_config::IoEngine,
    park: Option<&crate::uring::ParkHook>,
) -> Result<Option<Arc<crate::uring::Ring>>, ProxyError> {
    use tessera_config::IoEngine;
    if io == IoEngine::Epoll {
        return Ok(None);
    }
    match (crate::uring::Ring::start(park), io) {
        (Ok(ring), _) => {
            tracing::info!("sockets send through io_uring");
            Ok(Some(ring))
        }
        (Err(e), IoEngine::Auto) => {
            tracing::warn!(error = %e, "io_uring is not available: sockets send with write(2)");
            Ok(None)
        }
        (Err(e), _) => Err(ProxyError::Config(format!(
            "server.io = \"uring\": io_uring is not available here ({e}); fix: set server.io = \"epoll\" or \"auto\""
        ))),
    }
}

fn build_group(
    config: &Config,
    g: &tessera_config::GroupConfig,
    ring: Option<&Arc<crate::uring::Ring>>,
    (schema_changes, tracking_defaults): (&Arc<SchemaChanges>, &Arc<TrackingDefaults>),
) -> Result<Arc<Group>, ProxyError> {
    let tls = if g.tls {
        Some(crate::tls::backend_connector()?)
    } else {
        None
    };
    let opts = ConnectOptions {
        found_rows: false,
        extended_metadata: false,
        timeout: config.pool.connect_timeout(),
        stmt_cache_size: config.pool.prepared_cache_size,
        tls,
        ring: ring.cloned(),
        schema_changes: schema_changes.clone(),
        tracking_defaults: tracking_defaults.clone(),
    };
    let primary = std::iter::once((&g.primary, "primary", g.primary_read_weight()));
    let replicas = g.replicas.iter().map(|r| (r, "replica", r.replica_read_weight()));
    let accounts: Vec<(&str, BackendAccount)> = config
        .users
        .iter()
        .filter_map(|u| credentials(u).backend.map(|a| (u.name.as_str(), a)))
        .collect();
    let servers = primary
        .chain(replicas)
        .map(|(addr, role, weight)| {
            let server = |user: &str, password: &str, suffix: String| -> ServerRef {
                Arc::new(ServerInfo {
                    name: format!("{}/{role}({}){suffix}", g.name, addr.address),
                    address: addr.address.clone(),
                    user: user.to_string(),
                    password: password.to_string(),
                    tls: g.tls,
                })
            };
            let pool = Pool::new(
                server(&g.user, &g.password, String::new()),
                config.pool.clone(),
                opts.clone(),
            );
            let account_pools = accounts
                .iter()
                .map(|(client, a)| {
                    let info = server(&a.user, &a.password, format!(" as {}", a.user));
                    (client.to_string(), Pool::new(info, config.pool.clone(), opts.clone()))
                })
                .collect();
            Arc::new(Backend::new(addr.address.clone(), pool, weight).with_account_pools(account_pools))
        })
        .collect();
    Ok(Arc::new(
        Group::new(
            g.name.clone(),
            servers,
            g.max_replica_lag_s,
            g.read_only_procedures.clone(),
        )
        .with_read_your_writes_wait(g.read_your_writes_wait()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(group_extra: &str, primary: &str, server_extra: &str) -> Config {
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:6033\"\n{server_extra}\n\
             [[users]]\nname = \"app\"\npassword = \"secret\"\n\
             [[groups]]\nname = \"main\"\nuser = \"t\"\npassword = \"t\"\n\
             primary = {{ address = \"{primary}\" }}\n{group_extra}\n"
        );
        tessera_config::parse_str(&text, "t.toml").expect("config")
    }

    #[test]
    fn sends_wait_for_the_park_only_when_every_reading_connection_goes_through_the_ring() {
        assert!(reads_all_through_ring(&config("", "127.0.0.1:3306", "")));
        assert!(
            !reads_all_through_ring(&config("tls = true", "127.0.0.1:3306", "")),
            "TLS backends read on their own"
        );
        assert!(
            !reads_all_through_ring(&config("", "unix:/run/mysqld.sock", "")),
            "unix-socket backends too"
        );
        let tls = "tls_cert = \"/etc/tessera/cert.pem\"\ntls_key = \"/etc/tessera/key.pem\"";
        assert!(
            !reads_all_through_ring(&config("", "127.0.0.1:3306", tls)),
            "and TLS clients"
        );
    }
}
