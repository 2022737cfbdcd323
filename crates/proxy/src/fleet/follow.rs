//! A running proxy follows its fleet: it joins the membership, watches the head, and runs each
//! newly published version as its next generation (or records why it refused it), keeping
//! the previous one serving. When etcd is away the proxy goes on serving what it runs and
//! catches up once etcd answers again.

use super::member::{Member, Refusal, Registration};
use super::{versions, Fleet, FleetError, Start};
use crate::context::Context;
use crate::server::Running;
use std::sync::Arc;
use std::time::Duration;

/// The longest pause between two attempts to reach etcd.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A watch that saw nothing this long is read again and renewed.
const REWATCH_AFTER: Duration = Duration::from_secs(60);

/// Joins the fleet as `running` (started with `start`'s configuration) and follows it until
/// the proxy shuts down; the registration, for the shutdown to end.
pub async fn join(fleet: Fleet, running: &Running, start: Start) -> Result<Registration, FleetError> {
    let record = Member {
        id: 0,
        name: fleet.name.clone().unwrap_or_else(|| default_name(running)),
        client_addr: running.addr.to_string(),
        admin_addr: running.admin_addr.map(|a| a.to_string()).unwrap_or_default(),
        pid: std::process::id(),
        release: env!("CARGO_PKG_VERSION").to_string(),
        started_at: versions::now_s(),
        config_version: start.version,
        generation: running.ctx.generation_number(),
        refused: start.refused.into_iter().next(),
        state: "serving".into(),
    };
    let registration = Registration::join(fleet.etcd.clone(), fleet.keys.clone(), record).await?;
    tracing::info!(id = registration.id(), version = start.version, "joined the fleet");
    tokio::spawn(registration.clone().keep_alive());
    tokio::spawn(follow(running.ctx.clone(), fleet, registration.clone(), start.version));
    Ok(registration)
}

fn default_name(running: &Running) -> String {
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    format!("{}:{}", host.trim(), running.addr.port())
}

/// Runs each new head until shutdown; `running` is the version the proxy runs now.
async fn follow(ctx: Arc<Context>, fleet: Fleet, registration: Registration, mut running: u64) {
    let mut shutdown = ctx.shutdown.clone();
    let mut settled = running;
    let mut backoff = Duration::from_millis(200);
    loop {
        let next = tokio::select! {
            n = next_head(&fleet, settled) => n,
            _ = shutdown.changed() => return,
        };
        let n = match next {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(error = %e, "etcd: cannot follow the fleet's configuration now; serving version {running}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        backoff = Duration::from_millis(200);
        match run_version(&ctx, &fleet, n).await {
            Ok(generation) => {
                running = n;
                settled = n;
                registration
                    .update(|m| {
                        m.config_version = n;
                        m.generation = generation;
                        m.refused = None;
                    })
                    .await;
            }
            Err(FleetError::Etcd(e)) | Err(FleetError::Version(versions::VersionError::Etcd(e))) => {
                tracing::warn!(error = %e, version = n, "etcd: cannot read the published version now; retrying");
                tokio::time::sleep(backoff).await;
            }
            Err(e) => {
                settled = n;
                tracing::warn!(version = n, error = %e, "published version refused; version {running} goes on serving");
                let error = e.to_string();
                registration
                    .update(|m| m.refused = Some(Refusal { version: n, error }))
                    .await;
            }
        }
    }
}

/// Waits until the head names a version other than `settled` (the last one run or
/// refused); that version.
async fn next_head(fleet: &Fleet, settled: u64) -> Result<u64, FleetError> {
    loop {
        let (head, revision) = versions::head(&fleet.etcd, &fleet.keys).await?.unwrap_or((0, 0));
        if head != settled && head != 0 {
            return Ok(head);
        }
        let mut watch = fleet.etcd.watch(&fleet.keys.head(), revision + 1).await?;
        // Any change of the head, the end of the stream, or a quiet minute (a connection that
        // died without a word) sends us back to read it.
        if let Ok(batch) = tokio::time::timeout(REWATCH_AFTER, watch.next()).await {
            batch?;
        }
    }
}

/// Composes version `n` and runs it as the next generation; the generation's number.
async fn run_version(ctx: &Arc<Context>, fleet: &Fleet, n: u64) -> Result<u64, FleetError> {
    let config = fleet.compose(n).await?;
    let done = crate::reload::reload(ctx, config)?;
    tracing::info!(version = n, generation = done.generation, "running published version");
    Ok(done.generation)
}
