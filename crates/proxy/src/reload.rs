//! Live reload: a new configuration becomes the next [`Generation`], validated whole and
//! refused whole. Servers that stay keep their pools; servers that joined get pools (and their
//! groups a monitor); pools of servers that left are retired (no new checkouts, closed as
//! their connections come back). Sessions move to the new generation at their next statement
//! free of any connection ([`crate::session::Session::follow_generation`]); running
//! transactions, pins and prepared statements over shards finish on the one they began on.
//! Triggered by SIGHUP and by `POST /reload` on the admin HTTP endpoint (`tessera reload`).

use crate::context::Context;
use crate::generation::{Generation, Shared};
use std::sync::Arc;
use tessera_config::Config;

/// Why a reload changed nothing (the running generation goes on serving).
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The file does not parse or validate (the message names the key and the fix).
    #[error("{0}")]
    Invalid(#[from] tessera_config::ConfigError),
    /// A setting that only a restart applies.
    #[error("{key} cannot change while Tessera runs (running: {running}, file: {file}); restart Tessera to apply it, or set it back")]
    NeedsRestart { key: String, running: String, file: String },
    /// The process was started without a configuration file to read again.
    #[error("this process was not started with --config, so there is no file to reload (a fleet member follows etcd: publish a version with `tessera ctl publish`)")]
    NoFile,
    /// Building the new generation failed (e.g. the backend TLS setup).
    #[error("{0}")]
    Build(String),
}

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reloaded {
    pub generation: u64,
    pub servers_added: usize,
    pub servers_retired: usize,
}

impl std::fmt::Display for Reloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "generation {}: {} server pools added, {} retired",
            self.generation, self.servers_added, self.servers_retired
        )
    }
}

/// Reads the configuration file again on every SIGHUP (see [`crate::reload`]).
pub fn on_sighup(ctx: Arc<Context>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            return tracing::warn!("SIGHUP cannot be caught here: reload with `tessera reload`");
        };
        let mut shutdown = ctx.shutdown.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = hup.recv() => {}
                    _ = shutdown.changed() => return,
                }
                if let Err(e) = from_file(&ctx) {
                    tracing::warn!(error = %e, "reload on SIGHUP refused; the running configuration goes on");
                }
            }
        });
    }
}

/// Reads the configuration file again and runs it as the next generation.
pub fn from_file(ctx: &Arc<Context>) -> Result<Reloaded, ReloadError> {
    let path = ctx.config_path.get().ok_or(ReloadError::NoFile)?;
    let outcome = tessera_config::load_file(path)
        .map_err(ReloadError::from)
        .and_then(|config| reload(ctx, config));
    if outcome.is_err() {
        crate::metrics::Metrics::inc(&ctx.metrics.reloads_refused);
    }
    outcome
}

/// Runs `config` (already validated) as the next generation, or refuses it whole.
pub fn reload(ctx: &Arc<Context>, config: Config) -> Result<Reloaded, ReloadError> {
    let _one_at_a_time = ctx.reloading.lock().unwrap_or_else(|p| p.into_inner());
    let old = ctx.generation();
    needs_no_restart(&old.config, &config)?;
    let shared = Shared {
        ring: ctx.ring.as_ref(),
        schema_changes: &ctx.schema_changes,
        tracking_defaults: &ctx.tracking_defaults,
    };
    let next = Generation::build(old.number + 1, Arc::new(config), &shared, Some(&old))
        .map_err(|e| ReloadError::Build(e.to_string()))?;
    let next = Arc::new(next);
    let added = started_pools(ctx, &old, &next);
    start_new_monitors(ctx, &old, &next);
    ctx.install(next.clone());
    let retired = retire_left(&old, &next);
    let done = Reloaded {
        generation: next.number,
        servers_added: added,
        servers_retired: retired,
    };
    crate::metrics::Metrics::inc(&ctx.metrics.reloads);
    tracing::info!(%done, "configuration reloaded");
    Ok(done)
}

/// Settings read once at start (sockets, threads, the TLS acceptor, the decision log's
/// database) and the shards of existing logical schemas (their data stays where it is).
fn needs_no_restart(running: &Config, file: &Config) -> Result<(), ReloadError> {
    let s = (&running.server, &file.server);
    let checks: [(&str, String, String); 8] = [
        ("server.listen", s.0.listen.clone(), s.1.listen.clone()),
        (
            "server.worker_threads",
            s.0.worker_threads.to_string(),
            s.1.worker_threads.to_string(),
        ),
        ("server.io", format!("{:?}", s.0.io), format!("{:?}", s.1.io)),
        (
            "server.max_connections",
            s.0.max_connections.to_string(),
            s.1.max_connections.to_string(),
        ),
        (
            "server.tls_cert",
            format!("{:?}", s.0.tls_cert),
            format!("{:?}", s.1.tls_cert),
        ),
        (
            "server.tls_key",
            format!("{:?}", s.0.tls_key),
            format!("{:?}", s.1.tls_key),
        ),
        ("server.xa_database", s.0.xa_database.clone(), s.1.xa_database.clone()),
        (
            "admin.http_listen",
            running.admin.http_listen.clone(),
            file.admin.http_listen.clone(),
        ),
    ];
    if let Some((key, running, file)) = checks.into_iter().find(|(_, a, b)| a != b) {
        return Err(ReloadError::NeedsRestart {
            key: key.to_string(),
            running,
            file,
        });
    }
    for schema in &file.schemas {
        if let Some(old) = running.schemas.iter().find(|o| o.name == schema.name) {
            if old != schema {
                return Err(ReloadError::NeedsRestart {
                    key: format!("schemas.{} (its shards and table rules)", schema.name),
                    running: "the rules it started with".into(),
                    file: "other rules".into(),
                });
            }
        }
    }
    Ok(())
}

/// Starts the upkeep tasks of the pools `next` has and `old` had not; returns how many.
fn started_pools(ctx: &Arc<Context>, old: &Generation, next: &Generation) -> usize {
    let mut added = 0;
    for pool in next.pools().filter(|p| !old.pools().any(|o| Arc::ptr_eq(o, p))) {
        pool.start_upkeep(ctx.shutdown.clone());
        added += 1;
    }
    added
}

/// Monitors for the groups `next` built anew (a kept group's monitor goes on).
fn start_new_monitors(ctx: &Arc<Context>, old: &Generation, next: &Generation) {
    for (group, cfg) in next.groups.iter().zip(&next.config.groups) {
        if !old.groups.iter().any(|o| Arc::ptr_eq(o, group)) {
            crate::monitor::spawn_group(ctx, group, cfg, &next.config);
        }
    }
}

/// Retires the pools `old` had and `next` has not; returns how many.
fn retire_left(old: &Generation, next: &Generation) -> usize {
    let mut retired = 0;
    for pool in old.pools().filter(|p| !next.pools().any(|n| Arc::ptr_eq(n, p))) {
        pool.retire();
        retired += 1;
    }
    retired
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra_server: &str, replicas: &str) -> Config {
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n{extra_server}\n[[users]]\nname = \"app\"\npassword = \"app\"\n\
             [[groups]]\nname = \"g\"\nuser = \"u\"\nprimary = {{ address = \"127.0.0.1:1\" }}\n{replicas}\n"
        );
        tessera_config::parse_str(&text, "t.toml").expect("config")
    }

    #[test]
    fn what_a_restart_applies_is_refused_by_name_and_the_rest_passes() {
        let running = config("", "");
        assert!(needs_no_restart(&running, &config("", "replicas = [{ address = \"127.0.0.1:2\" }]")).is_ok());
        assert!(needs_no_restart(&running, &config("pipeline_lanes = 4", "")).is_ok());
        let mut moved = config("", "");
        moved.server.listen = "127.0.0.1:7".into();
        let e = needs_no_restart(&running, &moved).expect_err("listen is frozen");
        assert!(e.to_string().starts_with("server.listen cannot change"), "{e}");
        let e = needs_no_restart(&running, &config("xa_database = \"other\"", "")).expect_err("frozen");
        assert!(e.to_string().contains("server.xa_database"), "{e}");
    }
}
