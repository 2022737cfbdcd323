//! Recovery of in-doubt XA branches, at start and every `server.xa_recovery_interval_ms`:
//! `XA RECOVER` on the primary of every group holding shards; Tessera's branches are committed
//! where the decision log says commit, rolled back where it says rollback, and, when no
//! decision exists, rolled back after a `rollback` decision was written (fencing) once the
//! branch has been in doubt for `server.xa_resolve_after_ms`. Any process sharing the groups
//! resolves any other's branches; every resolved and every remaining branch is logged.

use super::decision::{self, Outcome};
use super::xid::{self, Xid};
use crate::context::Context;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::pool::{Flavour, PooledConn};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// A branch found in doubt: the group it is on and its XID.
type Found = (usize, Xid);

/// What recovery remembers between scans.
#[derive(Default)]
struct Memory {
    /// When each branch was first seen in doubt.
    first_seen: HashMap<Found, Instant>,
    /// Groups whose decision table exists.
    tables_ready: HashSet<usize>,
    /// The configuration generation the group indexes above belong to.
    generation: u64,
}

/// Spawns the recovery loop when the configuration has sharded schemas.
pub fn spawn(ctx: &Arc<Context>) {
    if ctx.generation().topology.schemas.is_empty() {
        return;
    }
    tracing::info!(
        instance = format!("{:08x}", ctx.instance),
        pid = std::process::id(),
        "XA transaction ids of this process start with tsr:{:08x}:",
        ctx.instance
    );
    tokio::spawn(run(ctx.clone()));
}

async fn run(ctx: Arc<Context>) {
    let mut shutdown = ctx.shutdown.clone();
    let mut memory = Memory::default();
    loop {
        scan(&ctx, &mut memory).await;
        Metrics::inc(&ctx.metrics.xa_recovery_scans);
        tokio::select! {
            _ = tokio::time::sleep(ctx.generation().config.server.xa_recovery_interval()) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// The groups that hold shards (and so may hold branches and decisions).
fn shard_groups(ctx: &Context) -> BTreeSet<usize> {
    ctx.generation()
        .topology
        .schemas
        .iter()
        .flat_map(|s| s.shards.iter().map(|sh| sh.group))
        .collect()
}

async fn conn_to(ctx: &Context, group: usize) -> Result<PooledConn, ProxyError> {
    let pool = ctx.generation().group_checked(group)?.primary().pool.clone();
    pool.checkout(Flavour::default(), true).await
}

/// One pass over every group.
async fn scan(ctx: &Context, memory: &mut Memory) {
    // Group indexes are a generation's: after a reload, recovery starts its memory afresh.
    if memory.generation != ctx.generation_number() {
        *memory = Memory {
            generation: ctx.generation_number(),
            ..Memory::default()
        };
    }
    let db = ctx.generation().config.server.xa_database.clone();
    let mut found: Vec<Found> = Vec::new();
    let mut all_reachable = true;
    for group in shard_groups(ctx) {
        match in_doubt_on(ctx, group, &db, memory).await {
            Ok(xids) => found.extend(xids.into_iter().map(|x| (group, x))),
            Err(e) => {
                all_reachable = false;
                tracing::warn!(group = %group_name(ctx, group), error = %e, "xa recovery: group unreachable");
            }
        }
    }
    let decisions = decisions_for(ctx, &db, &found).await;
    let now = Instant::now();
    memory.first_seen.retain(|k, _| found.contains(k));
    let mut remaining = Vec::new();
    for branch in found {
        let first = *memory.first_seen.entry(branch.clone()).or_insert(now);
        let due = now.duration_since(first) >= ctx.generation().config.server.xa_resolve_after();
        match resolve(ctx, &db, &branch, decisions.get(&branch.1.gtrid).copied(), due).await {
            Ok(true) => {
                memory.first_seen.remove(&branch);
            }
            Ok(false) => remaining.push(branch),
            Err(e) => {
                tracing::warn!(gtrid = %branch.1.gtrid, bqual = %branch.1.bqual, group = %group_name(ctx, branch.0), error = %e, "xa recovery: branch still in doubt");
                remaining.push(branch);
            }
        }
    }
    ctx.metrics.xa_in_doubt.store(remaining.len() as u64, Ordering::Relaxed);
    for (group, x) in &remaining {
        tracing::info!(gtrid = %x.gtrid, bqual = %x.bqual, group = %group_name(ctx, *group), "xa recovery: branch in doubt");
    }
    if all_reachable {
        forget_old_decisions(ctx, &db, &remaining).await;
    }
}

fn group_name(ctx: &Context, group: usize) -> String {
    ctx.generation()
        .groups
        .get(group)
        .map_or_else(|| group.to_string(), |g| g.name.clone())
}

/// Tessera's prepared branches on one group's primary (creating the log table there first).
async fn in_doubt_on(ctx: &Context, group: usize, db: &str, memory: &mut Memory) -> Result<Vec<Xid>, ProxyError> {
    let mut conn = conn_to(ctx, group).await?;
    if !memory.tables_ready.contains(&group) {
        decision::ensure_table(&mut conn, db).await?;
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
async fn decisions_for(ctx: &Context, db: &str, found: &[Found]) -> HashMap<String, Outcome> {
    let mut by_coordinator: HashMap<usize, Vec<String>> = HashMap::new();
    for (_, x) in found {
        if let Some(g) = coordinator_index(ctx, &x.gtrid) {
            by_coordinator.entry(g).or_default().push(x.gtrid.clone());
        }
    }
    let mut out = HashMap::new();
    for (group, gtrids) in by_coordinator {
        let result = match conn_to(ctx, group).await {
            Ok(mut conn) => decision::lookup(&mut conn, db, &gtrids).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(rows) => out.extend(rows),
            Err(e) => {
                tracing::warn!(group = %group_name(ctx, group), error = %e, "xa recovery: decision log unreachable")
            }
        }
    }
    out
}

fn coordinator_index(ctx: &Context, gtrid: &str) -> Option<usize> {
    let name = xid::coordinator_group(gtrid)?;
    ctx.generation().groups.iter().position(|g| g.name == name)
}

/// Resolves one branch; Ok(false) leaves it in doubt for now (no decision, not due yet).
async fn resolve(
    ctx: &Context,
    db: &str,
    (group, x): &Found,
    decided: Option<Outcome>,
    due: bool,
) -> Result<bool, ProxyError> {
    let outcome = match decided {
        Some(o) => o,
        None if !due => return Ok(false),
        None => {
            let coordinator = coordinator_index(ctx, &x.gtrid)
                .ok_or_else(|| ProxyError::Config(format!("no group named by {}", x.gtrid)))?;
            let mut conn = conn_to(ctx, coordinator).await?;
            let wait = ctx.generation().config.server.cross_shard_lock_wait_s.max(1);
            decision::fence(&mut conn, db, &x.gtrid, wait).await?
        }
    };
    let mut conn = conn_to(ctx, *group).await?;
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
        Outcome::Commit => &ctx.metrics.xa_recovered_commit,
        Outcome::Rollback => &ctx.metrics.xa_recovered_rollback,
    });
    tracing::info!(gtrid = %x.gtrid, bqual = %x.bqual, group = %group_name(ctx, *group), outcome = outcome.word(), "xa recovery: branch resolved");
    Ok(true)
}

/// Deletes old decisions that no branch in doubt needs (only after a scan that reached every
/// group, so no branch of theirs can be hiding).
async fn forget_old_decisions(ctx: &Context, db: &str, remaining: &[Found]) {
    let keep: Vec<String> = remaining.iter().map(|(_, x)| x.gtrid.clone()).collect();
    for group in shard_groups(ctx) {
        let Ok(mut conn) = conn_to(ctx, group).await else {
            continue;
        };
        match decision::forget_old(
            &mut conn,
            db,
            ctx.generation().config.server.xa_decision_retention_s,
            &keep,
        )
        .await
        {
            Ok(n) if n > 0 => tracing::debug!(group = %group_name(ctx, group), deleted = n, "xa decisions forgotten"),
            Ok(_) => {}
            Err(e) => tracing::warn!(group = %group_name(ctx, group), error = %e, "xa decisions not forgotten"),
        }
    }
}
