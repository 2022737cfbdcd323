//! Published configuration versions: each publish is a new numbered version (the shared TOML
//! document, who published it, when and why), and the head names the one proxies run.
//! Publishing is a compare-and-swap on the head, so two publishers never take one number;
//! a rollback publishes an earlier version's document again, as a new version.

use super::etcd::{Compare, Etcd, EtcdError, Op};
use super::keys::Keys;
use serde::{Deserialize, Serialize};

/// One published version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    pub version: u64,
    /// Seconds since the Unix epoch.
    pub published_at: u64,
    /// Who published it (`user@host` of the `tessera ctl` that did).
    pub by: String,
    pub message: String,
    /// The version whose document this one brings back, for a rollback.
    #[serde(default)]
    pub rollback_of: Option<u64>,
    /// The shared configuration document (TOML).
    pub toml: String,
}

/// Why a version could not be read or published.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    #[error(transparent)]
    Etcd(#[from] EtcdError),
    #[error("{key} holds something that is not a Tessera record: {reason}")]
    Corrupt { key: String, reason: String },
    #[error("version {0} is not in the history")]
    Missing(u64),
    #[error("another publisher kept winning the head; try again")]
    Contended,
}

/// The head: the version proxies should run and the revision the head was written at
/// (None: nothing has been published).
pub async fn head(etcd: &Etcd, keys: &Keys) -> Result<Option<(u64, i64)>, VersionError> {
    let (kvs, _) = etcd.range(&keys.head(), false).await?;
    let Some(kv) = kvs.into_iter().next() else {
        return Ok(None);
    };
    let n = std::str::from_utf8(&kv.value)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| VersionError::Corrupt {
            key: kv.key.clone(),
            reason: "not a version number".into(),
        })?;
    Ok(Some((n, kv.mod_revision)))
}

/// Version `n`.
pub async fn get(etcd: &Etcd, keys: &Keys, n: u64) -> Result<Version, VersionError> {
    let (kvs, _) = etcd.range(&keys.version(n), false).await?;
    let kv = kvs.into_iter().next().ok_or(VersionError::Missing(n))?;
    decode(&kv.key, &kv.value)
}

/// Every version, oldest first.
pub async fn history(etcd: &Etcd, keys: &Keys) -> Result<Vec<Version>, VersionError> {
    let (kvs, _) = etcd.range(&keys.versions(), true).await?;
    kvs.iter().map(|kv| decode(&kv.key, &kv.value)).collect()
}

/// What a publish records beside the document.
pub struct Publish<'a> {
    pub toml: &'a str,
    pub by: &'a str,
    pub message: &'a str,
    pub rollback_of: Option<u64>,
}

/// Publishes a new version and makes it the head; its number.
pub async fn publish(etcd: &Etcd, keys: &Keys, p: &Publish<'_>) -> Result<u64, VersionError> {
    for _ in 0..20 {
        let (n, revision) = head(etcd, keys).await?.unwrap_or((0, 0));
        let next = Version {
            version: n + 1,
            published_at: now_s(),
            by: p.by.to_string(),
            message: p.message.to_string(),
            rollback_of: p.rollback_of,
            toml: p.toml.to_string(),
        };
        let record = serde_json::to_vec(&next).map_err(|e| VersionError::Corrupt {
            key: keys.version(n + 1),
            reason: e.to_string(),
        })?;
        let compares = [
            Compare::ModRevision(keys.head(), revision),
            Compare::Absent(keys.version(n + 1)),
        ];
        let ops = [
            Op::Put {
                key: keys.version(n + 1),
                value: record,
                lease: 0,
            },
            Op::Put {
                key: keys.head(),
                value: (n + 1).to_string().into_bytes(),
                lease: 0,
            },
        ];
        if etcd.txn(&compares, &ops).await? {
            return Ok(n + 1);
        }
    }
    Err(VersionError::Contended)
}

fn decode(key: &str, value: &[u8]) -> Result<Version, VersionError> {
    serde_json::from_slice(value).map_err(|e| VersionError::Corrupt {
        key: key.to_string(),
        reason: e.to_string(),
    })
}

/// Seconds since the Unix epoch.
pub fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `seconds` since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn utc(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let rest = seconds % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_renders_civil_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(super::utc(1_796_688_000 + 3_723), "2026-12-08 01:02:03");
    }
}
