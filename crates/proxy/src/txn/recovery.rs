//! Recovery of in-doubt XA branches, at start and every `server.xa_recovery_interval_ms`:
//! `XA RECOVER` on the primary of every group holding shards; Tessera's branches are committed
//! where the decision log says commit, rolled back where it says rollback, and, when no
//! decision exists, rolled back after a `rollback` decision was written (fencing) once the
//! branch has been in doubt for `server.xa_resolve_after_ms`. Any process sharing the groups
//! resolves any other's branches; every resolved and every remaining branch is logged.

use super::decision::{self, Outcome};
use super::xid::{self, Xid};
use crate::backend::ShardConn;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A branch found in doubt: the group it is on and its XID.
type Found = (usize, Xid);

/// What recovery remembers between scans.
#[derive(Default)]
pub(crate) struct Memory {
    /// When each branch was first seen in doubt.
    first_seen: HashMap<Found, Instant>,
    /// Groups whose decision table exists.
    tables_ready: HashSet<usize>,
    /// The configuration generation the group indexes above belong to.
    generation: u64,
}

/// The groups recovery works on: the current generation's, or a test's fakes.
pub(crate) trait Groups: Sync {
    type Conn: ShardConn;
    /// The groups that hold shards (and so may hold branches and decisions).
    fn shard_groups(&self) -> BTreeSet<usize>;
    /// A group's name for logs.
    fn name(&self, group: usize) -> String;
    /// The index of the group named `name`.
    fn index_of(&self, name: &str) -> Option<usize>;
    /// A connection to the group's primary.
    fn connect(&self, group: usize) -> impl Future<Output = Result<Self::Conn, ProxyError>> + Send;
}

/// One scan's groups, metrics and settings.
pub(crate) struct Env<'a, G> {
    pub groups: &'a G,
    pub metrics: &'a Metrics,
    /// The configuration generation the group indexes belong to.
    pub generation: u64,
    /// `server.xa_database`.
    pub db: String,
    /// `server.xa_resolve_after_ms`: how long a branch without a decision stays in doubt.
    pub resolve_after: Duration,
    /// `server.cross_shard_lock_wait_s`.
    pub lock_wait_s: u64,
    /// `server.xa_decision_retention_s`.
    pub retention_s: u64,
}

/// One pass over every group.
pub(crate) async fn scan<G: Groups>(env: &Env<'_, G>, memory: &mut Memory) {
    // Group indexes are a generation's: after a reload, recovery starts its memory afresh.
    if memory.generation != env.generation {
        *memory = Memory {
            generation: env.generation,
            ..Memory::default()
        };
    }
    let (found, all_reachable) = find_in_doubt(env, memory).await;
    let decisions = decisions_for(env, &found).await;
    let now = Instant::now();
    memory.first_seen.retain(|k, _| found.contains(k));
    let mut remaining = Vec::new();
    for branch in found {
        let first = *memory.first_seen.entry(branch.clone()).or_insert(now);
        let due = now.duration_since(first) >= env.resolve_after;
        match resolve(env, &branch, decisions.get(&branch.1.gtrid).copied(), due).await {
            Ok(true) => {
                memory.first_seen.remove(&branch);
            }
            Ok(false) => remaining.push(branch),
            Err(e) => {
                tracing::warn!(gtrid = %branch.1.gtrid, bqual = %branch.1.bqual, group = %env.groups.name(branch.0), error = %e, "xa recovery: branch still in doubt");
                remaining.push(branch);
            }
        }
    }
    env.metrics.xa_in_doubt.store(remaining.len() as u64, Ordering::Relaxed);
    for (group, x) in &remaining {
        tracing::info!(gtrid = %x.gtrid, bqual = %x.bqual, group = %env.groups.name(*group), "xa recovery: branch in doubt");
    }
    if all_reachable {
        forget_old_decisions(env, &remaining).await;
    }
}

/// Tessera's prepared branches on every shard group, and whether every group answered.
async fn find_in_doubt<G: Groups>(env: &Env<'_, G>, memory: &mut Memory) -> (Vec<Found>, bool) {
    let mut found: Vec<Found> = Vec::new();
    let mut all_reachable = true;
    for group in env.groups.shard_groups() {
        match in_doubt_on(env, group, memory).await {
            Ok(xids) => found.extend(xids.into_iter().map(|x| (group, x))),
            Err(e) => {
                all_reachable = false;
                tracing::warn!(group = %env.groups.name(group), error = %e, "xa recovery: group unreachable");
            }
        }
    }
    (found, all_reachable)
}

/// Tessera's prepared branches on one group's primary (creating the log table there first).
async fn in_doubt_on<G: Groups>(env: &Env<'_, G>, group: usize, memory: &mut Memory) -> Result<Vec<Xid>, ProxyError> {
    let mut conn = env.groups.connect(group).await?;
    if !memory.tables_ready.contains(&group) {
        decision::ensure_table(&mut conn, &env.db).await?;
        memory.tables_ready.insert(group);
    }
    let (_, rows) = conn.query_rows("XA RECOVER").await?;
    Ok(rows.iter().filter_map(|r| recovered(r)).collect())
}

fn recovered(row: &[Option<Vec<u8>>]) -> Option<Xid> {
    let number = |i: usize| -> Option<u64> { std::str::from_utf8(row.get(i)?.as_deref()?).ok()?.parse().ok() };
    let data = row.get(3)?.as_deref()?;
    Xid::from_recovered(number(0)?, number(1)? as usize, number(2)? as usize, data)
}

/// The decisions of the found branches' transactions, read from each coordinator's log.
pub(crate) async fn decisions_for<G: Groups>(env: &Env<'_, G>, found: &[Found]) -> HashMap<String, Outcome> {
    let mut by_coordinator: HashMap<usize, Vec<String>> = HashMap::new();
    for (_, x) in found {
        if let Some(g) = coordinator_index(env.groups, &x.gtrid) {
            by_coordinator.entry(g).or_default().push(x.gtrid.clone());
        }
    }
    let mut out = HashMap::new();
    for (group, gtrids) in by_coordinator {
        let result = match env.groups.connect(group).await {
            Ok(mut conn) => decision::lookup(&mut conn, &env.db, &gtrids).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(rows) => out.extend(rows),
            Err(e) => {
                tracing::warn!(group = %env.groups.name(group), error = %e, "xa recovery: decision log unreachable")
            }
        }
    }
    out
}

fn coordinator_index<G: Groups>(groups: &G, gtrid: &str) -> Option<usize> {
    groups.index_of(xid::coordinator_group(gtrid)?)
}

/// Resolves one branch; Ok(false) leaves it in doubt for now (no decision, not due yet).
pub(crate) async fn resolve<G: Groups>(
    env: &Env<'_, G>,
    (group, x): &Found,
    decided: Option<Outcome>,
    due: bool,
) -> Result<bool, ProxyError> {
    let outcome = match decided {
        Some(o) => o,
        None if !due => return Ok(false),
        None => {
            let coordinator = coordinator_index(env.groups, &x.gtrid)
                .ok_or_else(|| ProxyError::Config(format!("no group named by {}", x.gtrid)))?;
            let mut conn = env.groups.connect(coordinator).await?;
            decision::fence(&mut conn, &env.db, &x.gtrid, env.lock_wait_s.max(1)).await?
        }
    };
    let mut conn = env.groups.connect(*group).await?;
    let verb = match outcome {
        Outcome::Commit => "XA COMMIT",
        Outcome::Rollback => "XA ROLLBACK",
    };
    match conn.simple_command(&format!("{verb} {}", x.sql())).await {
        Ok(_) => {}
        // Resolved meanwhile by its owner or another process.
        Err(ProxyError::Backend(p)) if p.code == 1397 => return Ok(true),
        Err(e) => return Err(e),
    }
    Metrics::inc(match outcome {
        Outcome::Commit => &env.metrics.xa_recovered_commit,
        Outcome::Rollback => &env.metrics.xa_recovered_rollback,
    });
    tracing::info!(gtrid = %x.gtrid, bqual = %x.bqual, group = %env.groups.name(*group), outcome = outcome.word(), "xa recovery: branch resolved");
    Ok(true)
}

/// Deletes old decisions that no branch in doubt needs (only after a scan that reached every
/// group, so no branch of theirs can be hiding).
async fn forget_old_decisions<G: Groups>(env: &Env<'_, G>, remaining: &[Found]) {
    let keep: Vec<String> = remaining.iter().map(|(_, x)| x.gtrid.clone()).collect();
    for group in env.groups.shard_groups() {
        let Ok(mut conn) = env.groups.connect(group).await else {
            continue;
        };
        match decision::forget_old(&mut conn, &env.db, env.retention_s, &keep).await {
            Ok(n) if n > 0 => tracing::debug!(group = %env.groups.name(group), deleted = n, "xa decisions forgotten"),
            Ok(_) => {}
            Err(e) => tracing::warn!(group = %env.groups.name(group), error = %e, "xa decisions not forgotten"),
        }
    }
}
