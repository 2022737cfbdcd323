//! A backend group at run time: its servers (pool, read weight, health as the monitor last saw
//! it, routing counters) and which of them is the primary now. Reads are spread by weight over
//! the servers that qualify for the session's consistency level.

use crate::gtid::{Gtid, GtidPosition};
use crate::pool::Pool;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How fresh a session's reads must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consistency {
    /// Any healthy replica within the lag limit.
    Eventual,
    /// Read-your-writes: a replica only once it has applied the session's last write.
    Session,
    /// Reads see every write Tessera acknowledged to any client before they began: a replica
    /// only once it has applied the group's newest acknowledged write (pools, several
    /// connections of one application).
    Global,
    /// Every read on the primary.
    Strong,
}

impl Consistency {
    pub fn parse(text: &str) -> Option<Consistency> {
        match text.to_ascii_lowercase().as_str() {
            "eventual" => Some(Consistency::Eventual),
            "session" => Some(Consistency::Session),
            "global" => Some(Consistency::Global),
            "strong" => Some(Consistency::Strong),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Consistency::Eventual => "eventual",
            Consistency::Session => "session",
            Consistency::Global => "global",
            Consistency::Strong => "strong",
        }
    }
}

/// What the monitor last saw of a server. Lock-free except the GTID position.
#[derive(Debug, Default)]
pub struct ServerHealth {
    checked: AtomicBool,
    reachable: AtomicBool,
    read_only: AtomicBool,
    replicating: AtomicBool,
    /// The SQL (applier) thread runs, whatever the IO thread does.
    applying: AtomicBool,
    /// Seconds behind its primary; -1 when unknown (not replicating).
    lag_s: AtomicI64,
    position: RwLock<GtidPosition>,
}

/// One observation of a server, as the monitor makes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    pub reachable: bool,
    pub read_only: bool,
    pub replicating: bool,
    /// The SQL (applier) thread runs (it still does while the IO thread cannot reach a dead primary).
    pub applying: bool,
    pub lag_s: Option<u64>,
    pub position: GtidPosition,
    pub error: Option<String>,
}

impl ServerHealth {
    pub fn record(&self, o: &Observation) {
        self.reachable.store(o.reachable, Ordering::Relaxed);
        if o.reachable {
            self.read_only.store(o.read_only, Ordering::Relaxed);
            self.replicating.store(o.replicating, Ordering::Relaxed);
            self.applying.store(o.applying, Ordering::Relaxed);
            self.lag_s
                .store(o.lag_s.map_or(-1, |l| l.min(i64::MAX as u64) as i64), Ordering::Relaxed);
            if let Ok(mut p) = self.position.write() {
                *p = o.position.clone();
            }
        }
        self.checked.store(true, Ordering::Release);
    }

    /// A session saw the server fail: no more reads until the monitor sees it again.
    pub fn mark_unreachable(&self) -> bool {
        self.reachable.swap(false, Ordering::Relaxed)
    }

    pub fn checked(&self) -> bool {
        self.checked.load(Ordering::Acquire)
    }
    pub fn reachable(&self) -> bool {
        self.reachable.load(Ordering::Relaxed)
    }
    pub fn read_only(&self) -> bool {
        self.read_only.load(Ordering::Relaxed)
    }
    pub fn replicating(&self) -> bool {
        self.replicating.load(Ordering::Relaxed)
    }
    pub fn applying(&self) -> bool {
        self.applying.load(Ordering::Relaxed)
    }
    pub fn lag_s(&self) -> Option<u64> {
        u64::try_from(self.lag_s.load(Ordering::Relaxed)).ok()
    }
    pub fn position(&self) -> GtidPosition {
        self.position.read().map(|p| p.clone()).unwrap_or_default()
    }
    pub fn has_applied(&self, gtid: &Gtid) -> bool {
        self.position.read().is_ok_and(|p| p.includes(gtid))
    }

    /// The server confirmed (MASTER_GTID_WAIT) that it applied `gtid`: until the monitor's
    /// next look, reads that need it or anything older may come here without asking.
    pub fn note_applied(&self, gtid: Gtid) {
        if let Ok(mut p) = self.position.write() {
            p.advance(gtid);
        }
    }

    /// Whether a replica may take reads: seen, reachable, replicating, within `max_lag_s`.
    pub fn serves_reads(&self, max_lag_s: u64) -> bool {
        self.checked() && self.reachable() && self.replicating() && self.lag_s().is_some_and(|l| l <= max_lag_s)
    }

    /// While its primary is down, a replica that is reachable and has applied what it received
    /// still serves reads: its data is as fresh as it can get, and the alternative is errors.
    pub fn serves_reads_without_primary(&self) -> bool {
        self.checked() && self.reachable() && self.applying()
    }
}

/// One server of a group.
pub struct Backend {
    pub address: String,
    /// Connections as the group's account.
    pub pool: Arc<Pool>,
    /// Connections as a client's own backend account (`users.backend_user`), by client user.
    pub account_pools: std::collections::HashMap<String, Arc<Pool>>,
    /// The share of reads it takes (a reload may change it in place).
    read_weight: std::sync::atomic::AtomicU32,
    pub health: ServerHealth,
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    /// Reads that failed here before any byte reached the client and were retried elsewhere.
    pub read_retries: AtomicU64,
    /// Session reads that waited here for their session's last write: it arrived in time...
    pub gtid_waits_applied: AtomicU64,
    /// ...or it did not, and the read went to the primary.
    pub gtid_waits_timed_out: AtomicU64,
}

impl Backend {
    pub fn new(address: String, pool: Arc<Pool>, read_weight: u32) -> Backend {
        Backend {
            address,
            pool,
            account_pools: Default::default(),
            read_weight: std::sync::atomic::AtomicU32::new(read_weight),
            health: ServerHealth::default(),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            read_retries: AtomicU64::new(0),
            gtid_waits_applied: AtomicU64::new(0),
            gtid_waits_timed_out: AtomicU64::new(0),
        }
    }
}

impl Backend {
    /// Adds the pools of clients that have backend accounts of their own.
    pub fn with_account_pools(mut self, pools: std::collections::HashMap<String, Arc<Pool>>) -> Backend {
        self.account_pools = pools;
        self
    }

    /// The share of reads this server takes.
    pub fn read_weight(&self) -> u32 {
        self.read_weight.load(Ordering::Relaxed)
    }

    /// A reload changed the server's weight.
    pub fn set_read_weight(&self, weight: u32) {
        self.read_weight.store(weight, Ordering::Relaxed);
    }

    /// The pool a client's statements use here.
    pub fn pool_for(&self, user: &str) -> &Arc<Pool> {
        self.account_pools.get(user).unwrap_or(&self.pool)
    }

    /// Every pool of this server.
    pub fn pools(&self) -> impl Iterator<Item = &Arc<Pool>> {
        std::iter::once(&self.pool).chain(self.account_pools.values())
    }
}

/// A group of servers holding the same data.
pub struct Group {
    pub name: String,
    pub servers: Vec<Arc<Backend>>,
    primary: AtomicUsize,
    pub max_lag_s: u64,
    /// Lowercase names of procedures that may run on a replica.
    pub read_only_procedures: Vec<String>,
    /// How long a `session` read may wait on a replica for its last write (zero: no wait).
    pub read_your_writes_wait: Duration,
    /// The newest write acknowledged to any client (for `global` reads).
    pub acknowledged: crate::gtid::NewestGtid,
    /// How the group's servers define `SELECT LAST_INSERT_ID()`'s column, as sent to Tessera
    /// (learned on first use; see `session::last_insert_id`).
    pub last_insert_id_column: std::sync::OnceLock<bytes::Bytes>,
}

impl Group {
    /// `servers[0]` is the configured primary.
    pub fn new(name: String, servers: Vec<Arc<Backend>>, max_lag_s: u64, read_only_procedures: Vec<String>) -> Group {
        Group {
            name,
            servers,
            primary: AtomicUsize::new(0),
            max_lag_s,
            read_only_procedures: read_only_procedures.iter().map(|p| p.to_ascii_lowercase()).collect(),
            read_your_writes_wait: Duration::ZERO,
            acknowledged: Default::default(),
            last_insert_id_column: std::sync::OnceLock::new(),
        }
    }

    /// Lets `session` reads wait on a replica up to `wait` for their last write.
    pub fn with_read_your_writes_wait(mut self, wait: Duration) -> Group {
        self.read_your_writes_wait = wait;
        self
    }

    pub fn primary_index(&self) -> usize {
        self.primary.load(Ordering::Acquire)
    }

    pub fn primary(&self) -> &Arc<Backend> {
        &self.servers[self.primary_index().min(self.servers.len() - 1)]
    }

    /// Makes server `index` the primary (the monitor follows an external promotion).
    pub fn set_primary(&self, index: usize) {
        if index < self.servers.len() {
            self.primary.store(index, Ordering::Release);
        }
    }

    /// The server a pool belongs to.
    pub fn index_of(&self, pool: &Arc<Pool>) -> Option<usize> {
        self.servers
            .iter()
            .position(|s| s.pools().any(|p| Arc::ptr_eq(p, pool)))
    }

    /// Whether server `i` may take a read now (health, lag and weight; no GTID requirement).
    pub fn may_read_from(&self, i: usize, replicas_only: bool) -> bool {
        i < self.servers.len() && self.eligible(i, None, replicas_only)
    }

    /// Whether server `i` may take a read that needs `need` applied.
    fn eligible(&self, i: usize, need: Option<&Gtid>, replicas_only: bool) -> bool {
        let s = &self.servers[i];
        if i == self.primary_index() {
            return !replicas_only && s.read_weight() > 0 && (!s.health.checked() || s.health.reachable());
        }
        if s.read_weight() == 0 && !replicas_only {
            return false;
        }
        let healthy = s.health.serves_reads(self.max_lag_s)
            || (self.primary_is_down() && s.health.serves_reads_without_primary());
        healthy && need.is_none_or(|g| s.health.has_applied(g))
    }

    /// The monitor (or a failed session) found the current primary unreachable.
    pub fn primary_is_down(&self) -> bool {
        let h = &self.primary().health;
        h.checked() && !h.reachable()
    }

    /// Picks the server for a read: by weight among the eligible ones (the primary by its own
    /// weight), never `exclude` (a server that just failed); the primary when none qualifies.
    /// `random` is any uniformly distributed number.
    pub fn choose_read(&self, need: Option<&Gtid>, exclude: Option<usize>, random: u64) -> usize {
        self.choose(need, exclude, random, false)
    }

    /// [`Group::choose_read`] among replicas only (a hint asked for one); replicas of weight 0
    /// count as weight 1 here. The primary when no replica qualifies.
    pub fn choose_replica(&self, need: Option<&Gtid>, exclude: Option<usize>, random: u64) -> usize {
        self.choose(need, exclude, random, true)
    }

    fn choose(&self, need: Option<&Gtid>, exclude: Option<usize>, random: u64, replicas_only: bool) -> usize {
        let eligible = |i: &usize| Some(*i) != exclude && self.eligible(*i, need, replicas_only);
        let weight = |i: usize| u64::from(self.servers[i].read_weight().max(u32::from(replicas_only)));
        let total: u64 = (0..self.servers.len()).filter(eligible).map(weight).sum();
        if total == 0 {
            return self.primary_index();
        }
        let mut pick = random % total;
        for i in (0..self.servers.len()).filter(eligible) {
            let w = weight(i);
            if pick < w {
                return i;
            }
            pick -= w;
        }
        self.primary_index()
    }

    /// Whether `CALL <name>` may run on a replica.
    pub fn procedure_is_read_only(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let bare = name.rsplit('.').next().unwrap_or(&name);
        self.read_only_procedures.iter().any(|p| *p == name || p == bare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::connect::ConnectOptions;
    use crate::backend::ServerInfo;

    fn pool(address: &str) -> Arc<Pool> {
        let server = Arc::new(ServerInfo {
            name: address.into(),
            address: address.into(),
            user: "u".into(),
            password: String::new(),
            tls: false,
        });
        let opts = ConnectOptions {
            found_rows: false,
            extended_metadata: false,
            timeout: std::time::Duration::from_secs(1),
            stmt_cache_size: 4,
            tls: None,
            ring: None,
            schema_changes: Default::default(),
            tracking_defaults: Default::default(),
        };
        Pool::new(server, tessera_config::PoolConfig::default(), opts)
    }

    fn group(weights: &[u32]) -> Group {
        let servers = weights
            .iter()
            .enumerate()
            .map(|(i, w)| {
                Arc::new(Backend::new(
                    format!("s{i}"),
                    pool(&format!("127.0.0.1:{}", 1000 + i)),
                    *w,
                ))
            })
            .collect();
        Group::new("g".into(), servers, 10, vec!["Reports.daily".into()])
    }

    fn healthy(lag: u64, pos: &str) -> Observation {
        Observation {
            reachable: true,
            read_only: true,
            replicating: true,
            applying: true,
            lag_s: Some(lag),
            position: GtidPosition::parse(pos),
            error: None,
        }
    }

    fn spread(g: &Group, need: Option<&Gtid>) -> Vec<u64> {
        let mut counts = vec![0u64; g.servers.len()];
        for r in 0..6000u64 {
            counts[g.choose_read(need, None, r)] += 1;
        }
        counts
    }

    #[tokio::test]
    async fn reads_follow_weights_over_healthy_replicas_only() {
        let g = group(&[0, 1, 2]);
        // Nothing checked yet: everything to the primary.
        assert_eq!(spread(&g, None), [6000, 0, 0]);
        g.servers[1].health.record(&healthy(0, "0-1-10"));
        g.servers[2].health.record(&healthy(0, "0-1-10"));
        assert_eq!(spread(&g, None), [0, 2000, 4000]);
        // Over the lag limit, or not replicating: no reads.
        g.servers[2].health.record(&healthy(11, "0-1-10"));
        assert_eq!(spread(&g, None), [0, 6000, 0]);
        g.servers[1].health.record(&Observation {
            replicating: false,
            lag_s: None,
            ..healthy(0, "0-1-10")
        });
        assert_eq!(spread(&g, None), [6000, 0, 0]);
    }

    #[tokio::test]
    async fn the_primary_takes_its_share_and_failed_servers_are_skipped() {
        let g = group(&[1, 1, 0]);
        g.servers[1].health.record(&healthy(0, ""));
        g.servers[2].health.record(&healthy(0, ""));
        assert_eq!(spread(&g, None), [3000, 3000, 0]);
        assert_eq!(g.choose_read(None, Some(1), 1), 0);
        assert_eq!(
            g.choose_replica(None, None, 0),
            1,
            "a hint for a replica skips the primary"
        );
        assert_eq!(
            g.choose_replica(None, None, 1),
            2,
            "weight-0 replicas count when asked for by hint"
        );
        g.servers[1].health.mark_unreachable();
        assert_eq!(spread(&g, None), [6000, 0, 0]);
    }

    #[tokio::test]
    async fn without_a_primary_replicas_that_apply_keep_serving_reads() {
        let g = group(&[0, 1, 1]);
        let orphaned = Observation {
            replicating: false,
            lag_s: None,
            ..healthy(0, "0-1-10")
        };
        g.servers[1].health.record(&orphaned);
        g.servers[2].health.record(&Observation {
            applying: false,
            ..orphaned.clone()
        });
        assert_eq!(
            spread(&g, None),
            [6000, 0, 0],
            "primary up: replicas that lost it get no reads"
        );
        g.servers[0].health.record(&Observation::default());
        assert!(g.primary_is_down());
        assert_eq!(
            spread(&g, None),
            [0, 6000, 0],
            "primary down: the replica still applying serves"
        );
    }

    #[tokio::test]
    async fn session_reads_wait_for_the_replica_to_apply_the_write() {
        let g = group(&[0, 1, 1]);
        g.servers[1].health.record(&healthy(0, "0-1-41"));
        g.servers[2].health.record(&healthy(0, "0-1-42"));
        let write = Gtid::parse("0-1-42").unwrap();
        assert_eq!(spread(&g, Some(&write)), [0, 0, 6000]);
        let later = Gtid::parse("0-1-43").unwrap();
        assert_eq!(spread(&g, Some(&later)), [6000, 0, 0]);
    }

    #[tokio::test]
    async fn primary_can_move_and_procedures_match_with_or_without_schema() {
        let g = group(&[0, 1]);
        g.set_primary(1);
        assert_eq!(g.primary().address, "s1");
        assert_eq!(g.index_of(&g.servers[0].pool), Some(0));
        assert!(g.procedure_is_read_only("reports.DAILY"));
        assert!(g.procedure_is_read_only("Reports.daily"));
        assert!(!g.procedure_is_read_only("daily_cleanup"));
        assert_eq!(Consistency::parse("SESSION"), Some(Consistency::Session));
        assert_eq!(Consistency::parse("often"), None);
    }
}
