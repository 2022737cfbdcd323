//! What every session shares for the process's whole life: the current configuration
//! generation (servers, pools, accounts, topology: [`crate::generation`]), TLS, the session
//! registry (for KILL), metrics and the io_uring. Passed as an `Arc`, never global.

mod xa;

pub use xa::spawn_recovery;

use crate::error::ProxyError;
use crate::generation::{Generation, Shared};
use crate::metrics::Metrics;
use crate::registry::SessionRegistry;
use crate::tracking::TrackingDefaults;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use tessera_config::Config;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// The proxy's shared state.
pub struct Context {
    /// The current generation (see [`Context::generation`]).
    current: RwLock<Arc<Generation>>,
    /// Its number, read without the lock (sessions compare it at each statement).
    generation_number: AtomicU64,
    pub tls: Option<TlsAcceptor>,
    pub sessions: SessionRegistry,
    pub metrics: Arc<Metrics>,
    pub shutdown: watch::Receiver<bool>,
    /// The drain before an exit (health, then the listener, then sessions).
    pub drain: crate::drain::Drain,
    /// Blocks of AUTO_INCREMENT shard keys this process holds.
    pub sequences: crate::exec::sequence::Sequences,
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
    /// The file the configuration came from (what a reload reads again), when there is one.
    pub config_path: std::sync::OnceLock<std::path::PathBuf>,
    /// Held while a reload builds and installs the next generation (one at a time).
    pub reloading: std::sync::Mutex<()>,
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
        let ring = start_ring(config.server.io, park.filter(|_| reads_all_through_ring(&config)))?;
        let schema_changes = Arc::default();
        let tracking_defaults = Arc::default();
        let shared = Shared {
            ring: ring.as_ref(),
            schema_changes: &schema_changes,
            tracking_defaults: &tracking_defaults,
        };
        let first = Generation::build(1, config, &shared, None)?;
        Ok(Context {
            current: RwLock::new(Arc::new(first)),
            generation_number: AtomicU64::new(1),
            tls,
            sessions: SessionRegistry::default(),
            metrics: Arc::default(),
            shutdown,
            drain: Default::default(),
            sequences: Default::default(),
            instance: rand::random(),
            xa_sequence: Default::default(),
            failpoints: crate::txn::failpoints::Failpoints::from_env().map_err(ProxyError::Config)?,
            ring,
            schema_changes,
            tracking_defaults,
            catalog: Default::default(),
            config_path: Default::default(),
            reloading: Default::default(),
            next_id: AtomicU32::new(1),
        })
    }

    /// A gtrid for a new transaction whose coordinator branch is on group `group`.
    pub fn new_gtrid(&self, name: &str) -> Result<String, ProxyError> {
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

    /// The generation statements start on now: a session takes it when it is free of any
    /// connection, and keeps its own while a transaction or a pin ties it to one.
    pub fn generation(&self) -> Arc<Generation> {
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Makes `next` the current generation (see [`crate::reload`]).
    pub fn install(&self, next: Arc<Generation>) {
        let number = next.number;
        match self.current.write() {
            Ok(mut g) => *g = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
        self.generation_number.store(number, Ordering::Release);
    }

    /// The current generation's number (no lock).
    pub fn generation_number(&self) -> u64 {
        self.generation_number.load(Ordering::Acquire)
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
