//! Committing and rolling back a transaction's branches. One written branch (or none): every
//! branch commits in one phase (COMMIT, or XA END + XA COMMIT ONE PHASE). Two or more: XA
//! PREPARE on the written XA branches while the decision row is inserted into the
//! coordinator's transaction, then the coordinator's COMMIT (the decision), then XA COMMIT on
//! each branch. Statements to different servers are sent before any answer is read, so the
//! branches work in parallel.

use super::decision::{self, Outcome};
use super::failpoints::Failpoints;
use super::xid::Xid;
use crate::backend::ShardConn;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::pool::PooledConn;

/// Tessera's own transaction ends: explicit, so that the client's `completion_type` (synced to
/// every connection of its session) neither chains a transaction nor closes the connection.
pub const COMMIT: &str = "COMMIT AND NO CHAIN NO RELEASE";
pub const ROLLBACK: &str = "ROLLBACK AND NO CHAIN NO RELEASE";

/// One branch of a transaction: a shard's connection.
pub struct Branch<C = PooledConn> {
    pub shard: usize,
    pub conn: C,
    /// None for the coordinator (a plain transaction); the XID of an XA branch.
    pub xid: Option<Xid>,
    pub wrote: bool,
}

/// How a transaction committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    OnePhase,
    TwoPhase,
}

/// What committing needs besides the branches: where it counts, its failpoints and settings.
pub struct Env<'a> {
    pub metrics: &'a Metrics,
    pub failpoints: &'a Failpoints,
    /// `server.xa_database`: the decision log's database.
    pub xa_database: String,
    /// `server.cross_shard_lock_wait_s`: how long fencing waits for a `commit` row.
    pub lock_wait_s: u64,
}

/// Commits the branches; `gtrid` is the transaction's when it has XA branches.
pub async fn commit<C: ShardConn>(
    env: &Env<'_>,
    gtrid: Option<&str>,
    branches: &mut [Branch<C>],
) -> Result<Protocol, ProxyError> {
    let written = branches.iter().filter(|b| b.wrote).count();
    let result = match gtrid {
        Some(gtrid) if written > 1 => two_phase(env, gtrid, branches).await,
        _ => one_phase(branches).await,
    };
    if result.is_ok() {
        let m = env.metrics;
        Metrics::inc(match result {
            Ok(Protocol::TwoPhase) => &m.commits_two_phase,
            _ => &m.commits_one_phase,
        });
    }
    result
}

/// Rolls back every branch (errors only break their connections: a server rolls back what a
/// closed connection left, and recovery rolls back prepared branches without a decision).
pub async fn rollback<C: ShardConn>(branches: &mut [Branch<C>]) {
    for b in branches.iter_mut() {
        match &b.xid {
            None => send(&mut b.conn, &[ROLLBACK]),
            Some(x) => send(
                &mut b.conn,
                &[&format!("XA END {}", x.sql()), &format!("XA ROLLBACK {}", x.sql())],
            ),
        }
        if b.conn.flush().await.is_err() {
            b.conn.mark_broken();
        }
    }
    for b in branches.iter_mut() {
        let n = if b.xid.is_some() { 2 } else { 1 };
        let results = answers(&mut b.conn, n).await;
        let last = results.last();
        let rolled_back = match last {
            Some(Ok(())) => true,
            // XA_RBROLLBACK / XAER_NOTA: the branch is already gone.
            Some(Err(ProxyError::Backend(p))) => p.code == 1402 || p.code == 1397,
            _ => false,
        };
        if !rolled_back {
            b.conn.mark_broken();
        }
        b.conn.set_in_transaction(false);
    }
}

/// Every branch in one phase; the error of a written branch is the result.
async fn one_phase<C: ShardConn>(branches: &mut [Branch<C>]) -> Result<Protocol, ProxyError> {
    for b in branches.iter_mut() {
        match &b.xid {
            None => send(&mut b.conn, &[COMMIT]),
            Some(x) => send(
                &mut b.conn,
                &[
                    &format!("XA END {}", x.sql()),
                    &format!("XA COMMIT {} ONE PHASE", x.sql()),
                ],
            ),
        }
        if let Err(e) = b.conn.flush().await {
            b.conn.mark_broken();
            if b.wrote {
                return Err(e);
            }
        }
    }
    let mut outcome = Ok(Protocol::OnePhase);
    for b in branches.iter_mut() {
        let n = if b.xid.is_some() { 2 } else { 1 };
        let results = answers(&mut b.conn, n).await;
        b.conn.set_in_transaction(false);
        if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
            // The branch's state is not known: its connection closes (the server rolls back
            // what is not committed).
            b.conn.mark_broken();
            if b.wrote {
                outcome = Err(e);
            }
        }
    }
    outcome
}

/// Two-phase commit with the decision in the coordinator's transaction.
async fn two_phase<C: ShardConn>(
    env: &Env<'_>,
    gtrid: &str,
    branches: &mut [Branch<C>],
) -> Result<Protocol, ProxyError> {
    env.failpoints.hit("xa.before_prepare").await;
    let db = env.xa_database.as_str();
    if let Err(e) = prepare_with_decision(gtrid, db, branches).await {
        rollback(branches).await;
        Metrics::inc(&env.metrics.xa_rolled_back);
        return Err(e);
    }
    env.failpoints.hit("xa.after_prepare").await;
    let decided = match branches.iter_mut().find(|b| b.xid.is_none()) {
        Some(coordinator) => commit_coordinator(&mut coordinator.conn).await,
        None => Err(ProxyError::TxnRolledBack(
            "the transaction's first shard was lost".into(),
        )),
    };
    match decided {
        Ok(()) => {}
        Err(e) => return settle_undecided(env, gtrid, branches, e).await,
    }
    env.failpoints.hit("xa.after_decision").await;
    finish_prepared(env, gtrid, branches, Outcome::Commit).await;
    Ok(Protocol::TwoPhase)
}

/// Sends the decision row to the coordinator and XA END + XA PREPARE to every written XA
/// branch (read-only XA branches commit in one phase), then reads every answer.
async fn prepare_with_decision<C: ShardConn>(
    gtrid: &str,
    db: &str,
    branches: &mut [Branch<C>],
) -> Result<(), ProxyError> {
    let record = decision::record_sql(db, gtrid, Outcome::Commit);
    for b in branches.iter_mut() {
        let sqls = match (&b.xid, b.wrote) {
            (None, _) => vec![record.clone()],
            (Some(x), true) => vec![format!("XA END {}", x.sql()), format!("XA PREPARE {}", x.sql())],
            (Some(x), false) => vec![
                format!("XA END {}", x.sql()),
                format!("XA COMMIT {} ONE PHASE", x.sql()),
            ],
        };
        let refs: Vec<&str> = sqls.iter().map(String::as_str).collect();
        send(&mut b.conn, &refs);
        if let Err(e) = b.conn.flush().await {
            b.conn.mark_broken();
            tracing::warn!(shard = b.shard, error = %e, "a branch was lost before PREPARE");
        }
    }
    let mut failure = None;
    for b in branches.iter_mut() {
        let n = if b.xid.is_some() { 2 } else { 1 };
        let mut results = answers(&mut b.conn, n).await;
        if b.xid.is_none() {
            if let Some(Err(e)) = results.first() {
                if decision::is_missing_table(e) {
                    // The log's table is created on a connection of its own, then recorded again.
                    results = vec![record_after_creating(b, db, &record).await];
                }
            }
        }
        if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
            if b.wrote || b.xid.is_none() {
                failure.get_or_insert(prepare_failure(b.shard, e));
            }
        }
        if b.xid.is_some() && !b.wrote {
            b.conn.set_in_transaction(false);
        }
    }
    failure.map_or(Ok(()), Err)
}

/// The decision row inserted after the log table was created on a side connection.
async fn record_after_creating<C: ShardConn>(b: &mut Branch<C>, db: &str, record: &str) -> Result<(), ProxyError> {
    let mut side = b.conn.side().await?;
    decision::ensure_table(&mut side, db).await?;
    drop(side);
    b.conn.simple_command(record).await.map(drop)
}

fn prepare_failure(shard: usize, e: ProxyError) -> ProxyError {
    match e {
        // A deadlock or lock wait ends the whole transaction with the server's own error.
        ProxyError::Backend(p) if p.code == 1213 || p.code == 1205 => ProxyError::Backend(p),
        e => ProxyError::TxnRolledBack(format!("shard {shard} could not prepare: {e}")),
    }
}

/// The coordinator's COMMIT: after it the decision is durable.
async fn commit_coordinator<C: ShardConn>(conn: &mut C) -> Result<(), ProxyError> {
    let result = conn.simple_command(COMMIT).await;
    conn.set_in_transaction(false);
    result.map(drop)
}

/// The coordinator's COMMIT failed. An error answer means it did not commit: roll back. A lost
/// connection leaves the outcome to the log: a `rollback` row is written unless the `commit`
/// row is there (fencing), and the branches follow what stands; an unreachable log leaves them
/// to recovery.
async fn settle_undecided<C: ShardConn>(
    env: &Env<'_>,
    gtrid: &str,
    branches: &mut [Branch<C>],
    e: ProxyError,
) -> Result<Protocol, ProxyError> {
    let lost = matches!(e, ProxyError::BackendUnavailable { .. }) || !matches!(e, ProxyError::Backend(_));
    let outcome = if lost {
        match fence_on_coordinator(env, gtrid, branches).await {
            Ok(o) => o,
            Err(fence_error) => {
                tracing::error!(gtrid, error = %e, fence_error = %fence_error, "COMMIT outcome unknown; recovery will finish the transaction");
                // A prepared branch stays attached to its connection until that closes: close
                // them, so that recovery (here or in another process) can finish the branches.
                for b in branches.iter_mut().filter(|b| b.xid.is_some()) {
                    b.conn.mark_broken();
                }
                return Err(ProxyError::TxnOutcomeUnknown(format!(
                    "the first shard was lost during COMMIT ({e}); recovery will finish the transaction"
                )));
            }
        }
    } else {
        Outcome::Rollback
    };
    finish_prepared(env, gtrid, branches, outcome).await;
    match outcome {
        // Counted once, by `commit`.
        Outcome::Commit => Ok(Protocol::TwoPhase),
        Outcome::Rollback => {
            Metrics::inc(&env.metrics.xa_rolled_back);
            Err(ProxyError::TxnRolledBack(format!(
                "COMMIT failed on the first shard: {e}"
            )))
        }
    }
}

async fn fence_on_coordinator<C: ShardConn>(
    env: &Env<'_>,
    gtrid: &str,
    branches: &[Branch<C>],
) -> Result<Outcome, ProxyError> {
    let coordinator = branches
        .iter()
        .find(|b| b.xid.is_none())
        .ok_or_else(|| ProxyError::TxnRolledBack("no coordinator".into()))?;
    let mut side = coordinator.conn.side().await?;
    decision::fence(&mut side, &env.xa_database, gtrid, env.lock_wait_s.max(1)).await
}

/// XA COMMIT (or XA ROLLBACK) on every prepared branch: the first alone, then the rest
/// together. A branch that cannot be reached is left to recovery, which follows the log.
async fn finish_prepared<C: ShardConn>(env: &Env<'_>, gtrid: &str, branches: &mut [Branch<C>], outcome: Outcome) {
    let verb = match outcome {
        Outcome::Commit => "XA COMMIT",
        Outcome::Rollback => "XA ROLLBACK",
    };
    let mut prepared: Vec<&mut Branch<C>> = branches.iter_mut().filter(|b| b.xid.is_some() && b.wrote).collect();
    let mut first = true;
    for chunk in split_first(&mut prepared) {
        for b in chunk.iter_mut() {
            let sql = format!("{verb} {}", b.xid.as_ref().map(Xid::sql).unwrap_or_default());
            send(&mut b.conn, &[&sql]);
            if b.conn.flush().await.is_err() {
                b.conn.mark_broken();
            }
        }
        for b in chunk.iter_mut() {
            let result = answers(&mut b.conn, 1).await.pop().unwrap_or(Ok(()));
            b.conn.set_in_transaction(false);
            if let Err(e) = result {
                b.conn.mark_broken();
                Metrics::inc(&env.metrics.xa_left_to_recovery);
                tracing::warn!(gtrid, shard = b.shard, error = %e, verb, "branch left to recovery");
            }
        }
        if first && outcome == Outcome::Commit {
            env.failpoints.hit("xa.after_first_commit").await;
        }
        first = false;
    }
}

fn split_first<'a, 'b, C>(all: &'a mut [&'b mut Branch<C>]) -> Vec<&'a mut [&'b mut Branch<C>]> {
    if all.is_empty() {
        return Vec::new();
    }
    let (head, tail) = all.split_at_mut(1);
    if tail.is_empty() {
        vec![head]
    } else {
        vec![head, tail]
    }
}

/// Queues statements on a connection (sent by the next flush).
pub fn send<C: ShardConn>(conn: &mut C, sqls: &[&str]) {
    if conn.broken() {
        return;
    }
    for sql in sqls {
        conn.queue_query(sql);
    }
}

/// Reads `n` OK/ERR answers; after a lost connection the rest are errors too.
pub async fn answers<C: ShardConn>(conn: &mut C, n: usize) -> Vec<Result<(), ProxyError>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        if conn.broken() {
            out.push(Err(ProxyError::TxnRolledBack("connection lost".into())));
            continue;
        }
        out.push(conn.read_ok().await.map(drop));
    }
    out
}
