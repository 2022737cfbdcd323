//! The transaction protocol served from the process context: what a commit needs (the
//! process's metrics and failpoints, the current generation's settings) and the XA recovery
//! loop over the current generation's groups. [`crate::txn`] itself takes only these.

use super::Context;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::pool::{Flavour, PooledConn};
use crate::txn::commit;
use crate::txn::recovery::{scan, Env, Groups, Memory};
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

impl Context {
    /// What committing needs: the process's metrics and failpoints and the current
    /// generation's settings.
    pub fn commit_env(&self) -> commit::Env<'_> {
        let generation = self.generation();
        let server = &generation.config.server;
        commit::Env {
            metrics: &self.metrics,
            failpoints: &self.failpoints,
            xa_database: server.xa_database.clone(),
            lock_wait_s: server.cross_shard_lock_wait_s,
        }
    }
}

/// The process's groups, from the current generation.
struct Live<'a>(&'a Context);

impl Groups for Live<'_> {
    type Conn = PooledConn;

    fn shard_groups(&self) -> BTreeSet<usize> {
        self.0
            .generation()
            .topology
            .schemas
            .iter()
            .flat_map(|s| s.shards.iter().map(|sh| sh.group))
            .collect()
    }

    fn name(&self, group: usize) -> String {
        self.0
            .generation()
            .groups
            .get(group)
            .map_or_else(|| group.to_string(), |g| g.name.clone())
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.0.generation().groups.iter().position(|g| g.name == name)
    }

    fn connect(&self, group: usize) -> impl Future<Output = Result<PooledConn, ProxyError>> + Send {
        let generation = self.0.generation();
        let pool = generation.group_checked(group).map(|g| g.primary().pool.clone());
        async move { pool?.checkout(Flavour::default(), true).await }
    }
}

impl<'a> Env<'a, Live<'a>> {
    /// The process's metrics and the current generation's settings.
    fn of(ctx: &'a Context, groups: &'a Live<'a>) -> Self {
        let generation = ctx.generation();
        let server = &generation.config.server;
        Env {
            groups,
            metrics: &ctx.metrics,
            generation: ctx.generation_number(),
            db: server.xa_database.clone(),
            resolve_after: server.xa_resolve_after(),
            lock_wait_s: server.cross_shard_lock_wait_s,
            retention_s: server.xa_decision_retention_s,
        }
    }
}

/// Spawns the recovery loop when the configuration has sharded schemas.
pub fn spawn_recovery(ctx: &Arc<Context>) {
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
    let live = Live(&ctx);
    loop {
        scan(&Env::of(&ctx, &live), &mut memory).await;
        Metrics::inc(&ctx.metrics.xa_recovery_scans);
        tokio::select! {
            _ = tokio::time::sleep(ctx.generation().config.server.xa_recovery_interval()) => {}
            _ = shutdown.changed() => return,
        }
    }
}
