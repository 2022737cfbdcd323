//! The fleet: many Tessera processes as one service. The configuration they share lives in
//! etcd as numbered versions ([`versions`]); each proxy composes the head version with its own
//! per-process settings, runs it as its next generation and says so in its membership record
//! ([`member`], [`follow`]); `tessera ctl` publishes, compares, lists and rolls back
//! ([`ctl`]). etcd is reached through its v3 JSON gateway ([`etcd`]).

pub mod ctl;
pub mod etcd;
pub mod follow;
pub mod keys;
pub mod member;
pub mod versions;

use etcd::{Etcd, EtcdError};
use keys::Keys;
use tessera_config::fleet::LocalSettings;
use tessera_config::{Config, ConfigError};
use versions::VersionError;

/// How many versions back from the head a starting proxy looks for one it can run.
pub const START_LOOKBACK: u64 = 20;

/// Why the fleet's configuration could not be read or run.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(transparent)]
    Etcd(#[from] EtcdError),
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Reload(#[from] crate::reload::ReloadError),
    #[error("nothing is published for cluster `{0}` yet: publish a configuration with `tessera ctl --etcd URL --cluster {0} publish FILE`")]
    NothingPublished(String),
    #[error("{0}")]
    Usage(String),
}

/// How a proxy finds its fleet: etcd's URLs, the cluster's name, the proxy's own name and
/// settings.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    pub etcd: String,
    pub cluster: String,
    /// The proxy's name in `tessera ctl status` (default: host name and listen port).
    pub name: Option<String>,
    pub local: LocalSettings,
}

/// A proxy's handle on its fleet.
#[derive(Debug, Clone)]
pub struct Fleet {
    pub etcd: Etcd,
    pub keys: Keys,
    pub local: LocalSettings,
    pub name: Option<String>,
}

/// The configuration a proxy starts with: the newest version it can run.
pub struct Start {
    pub config: Config,
    pub version: u64,
    /// Newer versions it could not run, with why (the head first).
    pub refused: Vec<member::Refusal>,
}

impl Fleet {
    /// Checks the options (no etcd request yet).
    pub fn new(opts: FleetOptions) -> Result<Self, FleetError> {
        Ok(Fleet {
            etcd: Etcd::new(&opts.etcd)?,
            keys: Keys::new(&opts.cluster).map_err(FleetError::Usage)?,
            local: opts.local,
            name: opts.name,
        })
    }

    /// Version `n` composed with this proxy's settings and validated.
    pub async fn compose(&self, n: u64) -> Result<Config, FleetError> {
        let version = versions::get(&self.etcd, &self.keys, n).await?;
        Ok(tessera_config::fleet::compose(
            &version.toml,
            &format!("version {n}"),
            &self.local,
        )?)
    }

    /// The newest version (the head, or up to [`START_LOOKBACK`] before it) that composes
    /// and validates with this proxy's settings.
    pub async fn start(&self) -> Result<Start, FleetError> {
        let (head, _) = versions::head(&self.etcd, &self.keys)
            .await?
            .ok_or_else(|| FleetError::NothingPublished(self.keys.cluster().to_string()))?;
        let mut refused = Vec::new();
        for n in (head.saturating_sub(START_LOOKBACK - 1).max(1)..=head).rev() {
            match self.compose(n).await {
                Ok(config) => {
                    return Ok(Start {
                        config,
                        version: n,
                        refused,
                    })
                }
                Err(FleetError::Config(e)) => {
                    tracing::warn!(version = n, error = %e, "published version refused; trying the one before");
                    refused.push(member::Refusal {
                        version: n,
                        error: e.to_string(),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        Err(FleetError::Usage(format!(
            "none of the last {START_LOOKBACK} published versions runs here; the head's error: {}",
            refused.first().map_or("", |r| r.error.as_str())
        )))
    }
}
