//! Health and lag monitor: checks every server of every group on an interval (connect,
//! `read_only`, replication threads, lag, GTID position), records what it saw for routing,
//! logs every state change, and follows a primary that an external tool moved.

use crate::backend::BackendConn;
use crate::cluster::{Backend, Group, Observation};
use crate::context::Context;
use crate::error::ProxyError;
use crate::gtid::GtidPosition;
use crate::pool::Pool;
use std::sync::Arc;
use std::time::Duration;
use tessera_protocol::resultset::ColumnDefinition;
use tokio::sync::watch;

/// Starts one monitor task per group that has replicas (a lone primary has nothing to route
/// between or fail over to; its pool's backoff already reports it down).
pub fn spawn(ctx: &Arc<Context>) {
    let gen = ctx.generation();
    for (group, cfg) in gen.groups.iter().zip(&gen.config.groups) {
        spawn_group(ctx, group, cfg, &gen.config);
    }
}

/// The monitor of one group (none for a lone primary); it ends once a reload replaced the
/// group.
pub fn spawn_group(
    ctx: &Arc<Context>,
    group: &Arc<Group>,
    cfg: &tessera_config::GroupConfig,
    config: &tessera_config::Config,
) {
    if group.servers.len() < 2 {
        return;
    }
    let task = GroupMonitor {
        group: group.clone(),
        interval: cfg.monitor_interval(),
        connect_timeout: config.pool.connect_timeout(),
        conns: (0..group.servers.len()).map(|_| None).collect(),
        ctx: Arc::downgrade(ctx),
    };
    tokio::spawn(task.run(ctx.shutdown.clone()));
}

struct GroupMonitor {
    group: Arc<Group>,
    interval: Duration,
    connect_timeout: Duration,
    /// One long-lived connection per server, reopened after a failure.
    conns: Vec<Option<BackendConn>>,
    /// To see whether the group is still the current generation's.
    ctx: std::sync::Weak<Context>,
}

impl GroupMonitor {
    async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        loop {
            if !self.still_current() {
                return;
            }
            self.check_all().await;
            follow_primary(&self.group);
            tokio::select! {
                _ = tokio::time::sleep(self.interval) => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    fn still_current(&self) -> bool {
        self.ctx
            .upgrade()
            .is_some_and(|ctx| ctx.generation().groups.iter().any(|g| Arc::ptr_eq(g, &self.group)))
    }

    /// Checks every server concurrently (a dead one must not delay the others).
    async fn check_all(&mut self) {
        let limit = self.connect_timeout.max(self.interval);
        let handles: Vec<_> = self
            .group
            .servers
            .iter()
            .zip(self.conns.iter_mut())
            .map(|(server, conn)| tokio::spawn(check(server.pool.clone(), conn.take(), limit)))
            .collect();
        for (i, handle) in handles.into_iter().enumerate() {
            let (observation, conn) = handle.await.unwrap_or_else(|e| (down(e.to_string()), None));
            self.conns[i] = conn;
            let server = &self.group.servers[i];
            let before = describe(&self.group, i);
            if observation.reachable {
                // Before the server is shown healthy, so no session finds its pool backing off.
                server.pools().for_each(|p| p.note_reachable());
            }
            server.health.record(&observation);
            let after = describe(&self.group, i);
            log_change(&self.group, server, &before, &after, &observation);
        }
    }
}

fn down(error: String) -> Observation {
    Observation {
        reachable: false,
        error: Some(error),
        ..Observation::default()
    }
}

async fn check(pool: Arc<Pool>, conn: Option<BackendConn>, limit: Duration) -> (Observation, Option<BackendConn>) {
    let mut conn = match conn {
        Some(c) => c,
        None => match tokio::time::timeout(limit, pool.connect_unpooled()).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return (down(e.to_string()), None),
            Err(_) => return (down(format!("no connection within {limit:?}")), None),
        },
    };
    match tokio::time::timeout(limit, observe(&mut conn)).await {
        Ok(Ok(o)) => (o, Some(conn)),
        Ok(Err(e)) => (down(e.to_string()), None),
        Err(_) => (down(format!("no answer within {limit:?}")), None),
    }
}

async fn observe(conn: &mut BackendConn) -> Result<Observation, ProxyError> {
    let (_, rows) = conn.query_rows("SELECT @@read_only, @@gtid_current_pos").await?;
    let row = rows.first().ok_or_else(|| ProxyError::Config("empty answer".into()))?;
    let text = |i: usize| {
        row.get(i)
            .and_then(|v| v.as_deref())
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    };
    let (columns, rows) = conn.query_rows("SHOW SLAVE STATUS").await?;
    let replica = parse_slave_status(&columns, &rows);
    Ok(Observation {
        reachable: true,
        read_only: text(0) == "1",
        replicating: replica.io_running && replica.sql_running,
        applying: replica.sql_running,
        lag_s: replica.lag_s,
        position: GtidPosition::parse(&text(1)),
        error: replica.last_error,
    })
}

/// What `SHOW SLAVE STATUS` says (all false / None on a server that is not a replica).
#[derive(Debug, Default, PartialEq)]
pub struct ReplicaStatus {
    pub io_running: bool,
    pub sql_running: bool,
    pub lag_s: Option<u64>,
    pub last_error: Option<String>,
}

pub fn parse_slave_status(columns: &[ColumnDefinition], rows: &[Vec<Option<Vec<u8>>>]) -> ReplicaStatus {
    let Some(row) = rows.first() else {
        return ReplicaStatus::default();
    };
    let get = |name: &str| {
        let i = columns.iter().position(|c| c.name.eq_ignore_ascii_case(name))?;
        row.get(i)?.as_deref().map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let errors: Vec<String> = ["Last_IO_Error", "Last_SQL_Error"]
        .iter()
        .filter_map(|c| get(c))
        .filter(|e| !e.is_empty())
        .collect();
    ReplicaStatus {
        io_running: get("Slave_IO_Running").as_deref() == Some("Yes"),
        sql_running: get("Slave_SQL_Running").as_deref() == Some("Yes"),
        lag_s: get("Seconds_Behind_Master").and_then(|v| v.parse().ok()),
        last_error: (!errors.is_empty()).then(|| errors.join("; ")),
    }
}

/// A server's routing state in words, for logs and `tessera status`.
pub fn describe(group: &Group, index: usize) -> String {
    let s = &group.servers[index];
    let h = &s.health;
    if !h.checked() {
        let lone = group.servers.len() == 1;
        return if lone {
            "primary (not monitored)".into()
        } else {
            "unchecked".into()
        };
    }
    if !h.reachable() {
        return "down".into();
    }
    if index == group.primary_index() {
        return if h.read_only() {
            "primary (read_only!)".into()
        } else {
            "primary".into()
        };
    }
    match h.lag_s() {
        _ if !h.replicating() && group.primary_is_down() && h.applying() => "serving reads (primary down)".into(),
        _ if !h.replicating() => "not replicating".into(),
        Some(l) if l > group.max_lag_s => format!("lagging ({l} s > {} s)", group.max_lag_s),
        _ if s.read_weight() == 0 => "replica (weight 0)".into(),
        _ => "serving reads".into(),
    }
}

fn log_change(group: &Group, server: &Backend, before: &str, after: &str, seen: &Observation) {
    if before == after {
        return;
    }
    let error = seen.error.as_deref().unwrap_or("");
    if after == "serving reads" || after == "primary" {
        tracing::info!(group = %group.name, server = %server.address, from = before, to = after, "server state changed");
    } else {
        tracing::warn!(group = %group.name, server = %server.address, from = before, to = after, error, "server state changed");
    }
}

/// Follows an external promotion: when the current primary is read-only or unreachable and
/// exactly one reachable server is writable, that server becomes the primary.
pub fn follow_primary(group: &Group) {
    let seen: Vec<(bool, bool)> = group
        .servers
        .iter()
        .map(|s| (s.health.checked() && s.health.reachable(), s.health.read_only()))
        .collect();
    let current = group.primary_index();
    if let Some(next) = new_primary(current, &seen) {
        tracing::warn!(
            group = %group.name,
            old = %group.servers[current].address,
            new = %group.servers[next].address,
            "primary changed: the old primary is read-only or unreachable and the new one is writable; writes now go to the new primary"
        );
        group.set_primary(next);
    }
}

/// The server that should be the primary, given `(reachable, read_only)` per server; None to
/// keep `current` (it is writable, or no single writable server stands out).
pub fn new_primary(current: usize, seen: &[(bool, bool)]) -> Option<usize> {
    let writable: Vec<usize> = (0..seen.len()).filter(|&i| seen[i].0 && !seen[i].1).collect();
    match writable.as_slice() {
        _ if writable.contains(&current) => None,
        [only] => Some(*only),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_moves_only_to_a_single_writable_server() {
        // (reachable, read_only)
        assert_eq!(new_primary(0, &[(true, false), (true, true)]), None);
        assert_eq!(new_primary(0, &[(true, true), (true, false)]), Some(1));
        assert_eq!(new_primary(0, &[(false, false), (true, true), (true, false)]), Some(2));
        assert_eq!(
            new_primary(0, &[(false, false), (true, true)]),
            None,
            "nobody writable: keep"
        );
        assert_eq!(
            new_primary(0, &[(true, true), (true, false), (true, false)]),
            None,
            "ambiguous: keep"
        );
        assert_eq!(
            new_primary(1, &[(true, false), (true, false)]),
            None,
            "current still writable"
        );
    }

    #[test]
    fn slave_status_is_read_by_column_name() {
        let cols: Vec<ColumnDefinition> = [
            "Slave_IO_Running",
            "Slave_SQL_Running",
            "Seconds_Behind_Master",
            "Last_SQL_Error",
        ]
        .iter()
        .map(|n| ColumnDefinition::text(n))
        .collect();
        let row = |io: &str, sql: &str, lag: Option<&str>, err: &str| {
            vec![
                Some(io.as_bytes().to_vec()),
                Some(sql.as_bytes().to_vec()),
                lag.map(|l| l.as_bytes().to_vec()),
                Some(err.as_bytes().to_vec()),
            ]
        };
        let s = parse_slave_status(&cols, &[row("Yes", "Yes", Some("3"), "")]);
        assert_eq!(
            (s.io_running, s.sql_running, s.lag_s, s.last_error),
            (true, true, Some(3), None)
        );
        let s = parse_slave_status(&cols, &[row("Yes", "No", None, "Duplicate entry")]);
        assert_eq!((s.sql_running, s.lag_s), (false, None));
        assert_eq!(s.last_error.as_deref(), Some("Duplicate entry"));
        assert_eq!(parse_slave_status(&cols, &[]), ReplicaStatus::default());
    }
}
