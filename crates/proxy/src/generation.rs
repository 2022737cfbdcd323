//! One generation of what the configuration decides: the groups with their servers and pools,
//! the client accounts, the sharding topology and its plan cache, under a number. A session
//! works on one generation at a time (see [`crate::context::Context::generation`]); what stays
//! for the process's whole life (sessions, metrics, the io_uring, the decision log's instance
//! id) lives in the [`crate::context::Context`].

use crate::backend::connect::ConnectOptions;
use crate::backend::stmt_cache::SchemaChanges;
use crate::backend::{ServerInfo, ServerRef};
use crate::cluster::{Backend, Consistency, Group};
use crate::error::ProxyError;
use crate::pool::Pool;
use crate::tracking::TrackingDefaults;
use std::collections::HashMap;
use std::sync::Arc;
use tessera_config::Config;
use tessera_protocol::auth;

/// The configuration's servers, accounts and sharding rules as one immutable snapshot.
pub struct Generation {
    /// 1 for the configuration the process started with.
    pub number: u64,
    pub config: Arc<Config>,
    pub groups: Vec<Arc<Group>>,
    pub users: HashMap<String, Credentials>,
    /// Logical schemas and their shards.
    pub topology: Arc<crate::topology::Topology>,
    /// Sharded plans by fingerprint (plans name this generation's groups and schemas).
    pub plans: crate::route::sharded::cache::PlanCache,
}

/// What building a generation's pools shares with the rest of the process.
pub struct Shared<'a> {
    pub ring: Option<&'a Arc<crate::uring::Ring>>,
    pub schema_changes: &'a Arc<SchemaChanges>,
    pub tracking_defaults: &'a Arc<TrackingDefaults>,
}

impl Generation {
    /// Builds the groups, accounts and topology of a validated configuration. With the
    /// `previous` generation, servers whose connections would be opened the same way keep
    /// their pools (and health, counters, lanes); the others get new ones.
    pub fn build(
        number: u64,
        config: Arc<Config>,
        shared: &Shared<'_>,
        previous: Option<&Generation>,
    ) -> Result<Generation, ProxyError> {
        let users = config.users.iter().map(|u| (u.name.clone(), credentials(u))).collect();
        let groups = config
            .groups
            .iter()
            .map(|g| build_group(&config, g, shared, previous))
            .collect::<Result<_, _>>()?;
        let topology =
            Arc::new(crate::topology::Topology::from_config(&config).map_err(|e| ProxyError::Config(e.to_string()))?);
        Ok(Generation {
            number,
            config,
            groups,
            users,
            topology,
            plans: Default::default(),
        })
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

    /// Every pool of every server.
    pub fn pools(&self) -> impl Iterator<Item = &Arc<Pool>> {
        self.groups
            .iter()
            .flat_map(|g| g.servers.iter())
            .flat_map(|s| s.pools())
    }

    /// The pool that opens connections like `server` (same address and account), for KILL.
    pub fn pool_like(&self, server: &ServerInfo) -> Option<&Arc<Pool>> {
        self.pools()
            .find(|p| p.server.address == server.address && p.server.user == server.user)
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
#[derive(Clone, PartialEq, Eq)]
pub struct BackendAccount {
    pub user: String,
    pub password: String,
}

pub fn credentials(u: &tessera_config::UserConfig) -> Credentials {
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

fn build_group(
    config: &Config,
    g: &tessera_config::GroupConfig,
    shared: &Shared<'_>,
    previous: Option<&Generation>,
) -> Result<Arc<Group>, ProxyError> {
    let opts = connect_options(config, g, shared)?;
    let primary = std::iter::once((&g.primary, "primary", g.primary_read_weight()));
    let replicas = g.replicas.iter().map(|r| (r, "replica", r.replica_read_weight()));
    let accounts = backend_accounts(config);
    let servers: Vec<Arc<Backend>> = primary
        .chain(replicas)
        .map(|(addr, role, weight)| {
            let name = format!("{}/{role}({})", g.name, addr.address);
            if let Some(kept) = previous.and_then(|p| reusable(p, config, g, &name)) {
                kept.set_read_weight(weight);
                return kept;
            }
            let server = |user: &str, password: &str, suffix: String| -> ServerRef {
                Arc::new(ServerInfo {
                    name: format!("{name}{suffix}"),
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
    if let Some(kept) = previous.and_then(|p| unchanged_group(p, g, &servers)) {
        return Ok(kept);
    }
    let group = Group::new(
        g.name.clone(),
        servers,
        g.max_replica_lag_s,
        g.read_only_procedures.clone(),
    )
    .with_read_your_writes_wait(g.read_your_writes_wait());
    if let Some(old) = previous.and_then(|p| p.groups.iter().find(|o| o.name == g.name)) {
        carry_over(old, &group);
    }
    Ok(Arc::new(group))
}

fn connect_options(
    config: &Config,
    g: &tessera_config::GroupConfig,
    shared: &Shared<'_>,
) -> Result<ConnectOptions, ProxyError> {
    let tls = if g.tls {
        Some(crate::tls::backend_connector()?)
    } else {
        None
    };
    Ok(ConnectOptions {
        found_rows: false,
        extended_metadata: false,
        timeout: config.pool.connect_timeout(),
        stmt_cache_size: config.pool.prepared_cache_size,
        tls,
        ring: shared.ring.cloned(),
        schema_changes: shared.schema_changes.clone(),
        tracking_defaults: shared.tracking_defaults.clone(),
    })
}

/// The client users with backend accounts of their own, and those accounts.
fn backend_accounts(config: &Config) -> Vec<(String, BackendAccount)> {
    config
        .users
        .iter()
        .filter_map(|u| credentials(u).backend.map(|a| (u.name.clone(), a)))
        .collect()
}

/// The previous generation's server named `name` (group, role, address) when its pools
/// connect exactly as the new configuration says: same accounts, TLS and pool settings.
fn reusable(prev: &Generation, config: &Config, g: &tessera_config::GroupConfig, name: &str) -> Option<Arc<Backend>> {
    let old = prev.config.groups.iter().find(|o| o.name == g.name)?;
    let same = old.user == g.user
        && old.password == g.password
        && old.tls == g.tls
        && prev.config.pool == config.pool
        && backend_accounts(&prev.config) == backend_accounts(config);
    if !same {
        return None;
    }
    let group = prev.groups.iter().find(|o| o.name == g.name)?;
    group.servers.iter().find(|s| s.pool.server.name == name).cloned()
}

/// The previous generation's group itself when nothing about it changed but weights (its
/// monitor, primary and positions go on as they are).
fn unchanged_group(prev: &Generation, g: &tessera_config::GroupConfig, servers: &[Arc<Backend>]) -> Option<Arc<Group>> {
    let old_cfg = prev.config.groups.iter().find(|o| o.name == g.name)?;
    let old = prev.groups.iter().find(|o| o.name == g.name)?;
    let same_servers =
        old.servers.len() == servers.len() && old.servers.iter().zip(servers).all(|(a, b)| Arc::ptr_eq(a, b));
    (same_servers && without_weights(old_cfg) == without_weights(g)).then(|| old.clone())
}

fn without_weights(g: &tessera_config::GroupConfig) -> tessera_config::GroupConfig {
    let mut g = g.clone();
    g.primary.weight = None;
    g.replicas.iter_mut().for_each(|r| r.weight = None);
    g
}

/// What a rebuilt group keeps of the one it replaces: the current primary (when it is still
/// a member) and the newest acknowledged write.
fn carry_over(old: &Group, new: &Group) {
    let primary = &old.primary().address;
    if let Some(i) = new.servers.iter().position(|s| &s.address == primary) {
        new.set_primary(i);
    }
    if let Some(gtid) = old.acknowledged.get() {
        new.acknowledged.note(gtid);
    }
}
