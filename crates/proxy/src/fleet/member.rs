//! Membership: a proxy takes an id unique in its cluster (a create-if-absent on
//! `members/<id>`), describes itself there under a lease (addresses, version, start time, the
//! configuration version and generation it runs, or why it refused one), keeps the lease
//! alive, and is gone from the list when the lease ends: on shutdown at once, after a crash
//! within the lease's TTL.

use super::etcd::{Compare, Etcd, EtcdError, Op};
use super::keys::{Keys, MAX_PROXIES};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A lease ends this long after the last keep-alive that reached etcd.
pub const LEASE_TTL_S: i64 = 10;

/// What a live proxy says of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub id: u16,
    pub name: String,
    /// Where clients connect (`server.listen` as bound).
    pub client_addr: String,
    /// Its admin HTTP endpoint, if it has one.
    pub admin_addr: String,
    pub pid: u32,
    /// The Tessera release it runs.
    pub release: String,
    /// Seconds since the Unix epoch.
    pub started_at: u64,
    /// The published version it runs (0: a file, not etcd).
    pub config_version: u64,
    /// Its own generation number for that configuration.
    pub generation: u64,
    /// The newest version it refused, and why (None once it runs a newer one).
    #[serde(default)]
    pub refused: Option<Refusal>,
    /// `serving`, or `draining` once it shuts down.
    pub state: String,
}

/// A version a proxy would not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub version: u64,
    pub error: String,
}

/// A proxy's place in the cluster: its id, its lease, and its record (kept in etcd).
#[derive(Clone)]
pub struct Registration {
    inner: Arc<Inner>,
}

struct Inner {
    etcd: Etcd,
    keys: Keys,
    lease: Mutex<i64>,
    record: Mutex<Member>,
    /// The record changed and its write did not reach etcd yet.
    unwritten: std::sync::atomic::AtomicBool,
    /// The proxy left (its lease is ended; no more keep-alives).
    left: std::sync::atomic::AtomicBool,
}

impl Registration {
    /// Takes the lowest free id and writes `record` (its `id` set) under a new lease.
    pub async fn join(etcd: Etcd, keys: Keys, mut record: Member) -> Result<Self, EtcdError> {
        let lease = etcd.grant(LEASE_TTL_S).await?;
        record.id = take_id(&etcd, &keys, &record, lease, None).await?;
        Ok(Registration {
            inner: Arc::new(Inner {
                etcd,
                keys,
                lease: Mutex::new(lease),
                record: Mutex::new(record),
                unwritten: Default::default(),
                left: Default::default(),
            }),
        })
    }

    /// The id this proxy holds.
    pub fn id(&self) -> u16 {
        self.record().id
    }

    /// The record as last written.
    pub fn record(&self) -> Member {
        self.inner.record.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Changes the record and writes it (a failed write is retried by the keep-alive loop).
    pub async fn update(&self, change: impl FnOnce(&mut Member)) {
        change(&mut self.inner.record.lock().unwrap_or_else(|p| p.into_inner()));
        if let Err(e) = self.write().await {
            tracing::warn!(error = %e, "could not update this proxy's record in etcd; retrying with the lease");
        }
    }

    async fn write(&self) -> Result<(), EtcdError> {
        use std::sync::atomic::Ordering;
        self.inner.unwritten.store(true, Ordering::Relaxed);
        let record = self.record();
        let lease = *self.inner.lease.lock().unwrap_or_else(|p| p.into_inner());
        let value = serde_json::to_vec(&record).unwrap_or_default();
        self.inner
            .etcd
            .put(&self.inner.keys.member(record.id), &value, lease)
            .await?;
        self.inner.unwritten.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Keeps the lease alive until [`Registration::leave`] (through a shutdown's drain, so
    /// the record shows `draining` meanwhile). When etcd was away long enough for the lease
    /// to end, a new lease is taken and the record written again, under the same id when it
    /// is still free.
    pub async fn keep_alive(self) {
        use std::sync::atomic::Ordering;
        let period = Duration::from_secs((LEASE_TTL_S / 3).max(1) as u64);
        loop {
            tokio::time::sleep(period).await;
            if self.inner.left.load(Ordering::Relaxed) {
                return;
            }
            let lease = *self.inner.lease.lock().unwrap_or_else(|p| p.into_inner());
            let renewed = match self.inner.etcd.keep_alive(lease).await {
                Ok(ttl) if ttl > 0 => Ok(()),
                Ok(_) => self.rejoin().await,
                Err(e) => Err(e),
            };
            let rewrite = renewed.is_ok() && self.inner.unwritten.load(Ordering::Relaxed);
            if let Err(e) = if rewrite { self.write().await } else { renewed } {
                tracing::debug!(error = %e, "etcd keep-alive failed; the proxy goes on serving");
            }
        }
    }

    /// After the lease ended: a new lease, and the record again.
    async fn rejoin(&self) -> Result<(), EtcdError> {
        let etcd = &self.inner.etcd;
        let lease = etcd.grant(LEASE_TTL_S).await?;
        let mut record = self.record();
        let id = take_id(etcd, &self.inner.keys, &record, lease, Some(record.id)).await?;
        if id != record.id {
            tracing::error!(
                old = record.id,
                new = id,
                "this proxy's id was taken while etcd was away; it now has another"
            );
        }
        record.id = id;
        *self.inner.lease.lock().unwrap_or_else(|p| p.into_inner()) = lease;
        *self.inner.record.lock().unwrap_or_else(|p| p.into_inner()) = record;
        tracing::info!(id, "rejoined the cluster in etcd under a new lease");
        Ok(())
    }

    /// Ends the lease now (the record goes with it) and the keep-alive with it.
    pub async fn leave(&self) {
        self.inner.left.store(true, std::sync::atomic::Ordering::Relaxed);
        let lease = *self.inner.lease.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = self.inner.etcd.revoke(lease).await {
            tracing::warn!(error = %e, "could not end this proxy's lease; its record ends with the TTL");
        }
    }
}

/// Creates `members/<id>` for the first free id (`prefer` first), under `lease`.
async fn take_id(etcd: &Etcd, keys: &Keys, record: &Member, lease: i64, prefer: Option<u16>) -> Result<u16, EtcdError> {
    for _ in 0..8 {
        let (taken, _) = etcd.range(&keys.members(), true).await?;
        let taken: Vec<&str> = taken.iter().map(|kv| kv.key.as_str()).collect();
        let free = prefer
            .into_iter()
            .chain(1..=MAX_PROXIES)
            .find(|id| !taken.contains(&keys.member(*id).as_str()));
        let Some(id) = free else {
            return Err(EtcdError::Refused {
                status: "cluster full".into(),
                body: format!("all {MAX_PROXIES} proxy ids of the cluster are taken"),
            });
        };
        let mut record = record.clone();
        record.id = id;
        let value = serde_json::to_vec(&record).unwrap_or_default();
        let put = Op::Put {
            key: keys.member(id),
            value,
            lease,
        };
        if etcd.txn(&[Compare::Absent(keys.member(id))], &[put]).await? {
            return Ok(id);
        }
    }
    Err(EtcdError::Refused {
        status: "contended".into(),
        body: "other proxies kept taking the free ids; try again".into(),
    })
}

/// Every live proxy of the cluster, by id.
pub async fn members(etcd: &Etcd, keys: &Keys) -> Result<Vec<Member>, EtcdError> {
    let (kvs, _) = etcd.range(&keys.members(), true).await?;
    Ok(kvs
        .iter()
        .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
        .collect())
}
