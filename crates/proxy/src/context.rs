//! What every session shares: the configuration snapshot, the backend pools, the client
//! accounts, TLS, the session registry (for KILL) and metrics. Passed as an `Arc`, never global.

use crate::backend::connect::ConnectOptions;
use crate::backend::{ServerInfo, ServerRef};
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::registry::SessionRegistry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tessera_config::Config;
use tessera_protocol::auth;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// A client account's credentials as Tessera can check them.
#[derive(Clone)]
pub struct Credentials {
    /// Plaintext, when configured (needed for caching_sha2_password).
    pub password: Option<Vec<u8>>,
    /// SHA1(SHA1(password)) for mysql_native_password.
    pub native_hash: [u8; 20],
}

/// One backend group (a primary for now; replicas come with read/write splitting).
pub struct Group {
    pub name: String,
    pub primary: Arc<Pool>,
}

/// Shared, immutable-after-start state of the proxy.
pub struct Context {
    pub config: Arc<Config>,
    pub groups: Vec<Group>,
    pub users: HashMap<String, Credentials>,
    pub tls: Option<TlsAcceptor>,
    pub sessions: SessionRegistry,
    pub metrics: Metrics,
    pub shutdown: watch::Receiver<bool>,
    next_id: AtomicU32,
}

impl Context {
    /// Builds pools and credentials from a validated configuration.
    pub fn new(config: Arc<Config>, shutdown: watch::Receiver<bool>) -> Result<Self, ProxyError> {
        let tls = match (&config.server.tls_cert, &config.server.tls_key) {
            (Some(c), Some(k)) => Some(crate::tls::acceptor(c, k)?),
            _ => None,
        };
        let users = config.users.iter().map(|u| (u.name.clone(), credentials(u))).collect();
        let groups = config
            .groups
            .iter()
            .map(|g| build_group(&config, g))
            .collect::<Result<_, _>>()?;
        Ok(Context {
            config,
            groups,
            users,
            tls,
            sessions: SessionRegistry::default(),
            metrics: Metrics::default(),
            shutdown,
            next_id: AtomicU32::new(1),
        })
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

    /// The pool of a target (an unknown group falls back to the first one).
    pub fn pool(&self, target: crate::route::Target) -> &Arc<Pool> {
        let group = self.groups.get(target.group).unwrap_or(&self.groups[0]);
        match target.role {
            crate::route::Role::Primary => &group.primary,
        }
    }

    /// The first group's primary: session-level commands (login schema, KILL) go there.
    pub fn default_pool(&self) -> &Arc<Pool> {
        self.pool(crate::route::Target::primary(0))
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
    match (&u.password, &u.password_hash) {
        (Some(p), _) => Credentials {
            password: Some(p.as_bytes().to_vec()),
            native_hash: auth::native_password_hash(p.as_bytes()),
        },
        (None, Some(h)) => Credentials {
            password: None,
            native_hash: auth::parse_native_hash(h).unwrap_or([0; 20]),
        },
        (None, None) => Credentials {
            password: Some(Vec::new()),
            native_hash: [0; 20],
        },
    }
}

fn build_group(config: &Config, g: &tessera_config::GroupConfig) -> Result<Group, ProxyError> {
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
    };
    let server: ServerRef = Arc::new(ServerInfo {
        name: format!("{}/primary({})", g.name, g.primary.address),
        address: g.primary.address.clone(),
        user: g.user.clone(),
        password: g.password.clone(),
        tls: g.tls,
    });
    Ok(Group {
        name: g.name.clone(),
        primary: Pool::new(server, config.pool.clone(), opts),
    })
}
