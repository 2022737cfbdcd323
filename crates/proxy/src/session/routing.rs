//! Read/write splitting inside a session: its consistency level and last write (GTID), the
//! plan for a command, the server a target resolves to (including the bounded wait on a replica
//! for read-your-writes), and which failures may be retried.

use super::Session;
use crate::alloc::in_heap;
use crate::cluster::{Consistency, Group};
use crate::error::ProxyError;
use crate::exec::Outcome;
use crate::gtid::Gtid;
use crate::pool::PooledConn;
use crate::route::{plan, Plan, Role, RouteInput, Target};
use std::sync::atomic::Ordering;

/// The session variable a client sets to choose its read consistency.
pub const CONSISTENCY_VARIABLE: &str = "tessera_read_consistency";

/// A session's routing settings and what it wrote last.
#[derive(Debug, Clone)]
pub struct SessionRouting {
    /// Read/write splitting is on for this user.
    pub split: bool,
    pub consistency: Consistency,
    /// The user's configured level (COM_RESET_CONNECTION returns to it).
    pub default_consistency: Consistency,
    /// GTID of the session's last write, as the primary reported it.
    pub last_write: Option<Gtid>,
    /// The server the last checkout went to: (group, server index).
    pub last_server: Option<(usize, usize)>,
    /// The last failed statement had already sent part of its response to the client.
    pub partial_response: bool,
    /// A replica that confirmed (MASTER_GTID_WAIT) it has applied this GTID: later reads that
    /// need the same write go there without asking again.
    pub caught_up: Option<(usize, Gtid)>,
}

impl SessionRouting {
    pub fn new(split: bool, consistency: Consistency) -> SessionRouting {
        SessionRouting {
            split,
            consistency,
            default_consistency: consistency,
            last_write: None,
            last_server: None,
            partial_response: false,
            caught_up: None,
        }
    }
}

impl Session {
    /// How a command runs: on the session's logical schema through the sharding planner, or
    /// on one group's server chosen by the read/write split.
    pub fn plan_command<'a>(
        &self,
        stmts: impl IntoIterator<Item = (&'a str, &'a tessera_sql::Classification)>,
    ) -> Plan {
        match self.logical_schema() {
            Some((schema, _)) => Plan::Sharded { schema },
            None => Plan::Direct(self.plan_target(stmts)),
        }
    }

    /// Where these statements run.
    pub fn plan_target<'a>(
        &self,
        stmts: impl IntoIterator<Item = (&'a str, &'a tessera_sql::Classification)>,
    ) -> Target {
        let group = self.gen.default_group();
        let read_only_procedure = |name: &str| group.procedure_is_read_only(name);
        let input = RouteInput {
            split: self.routing.split && self.autocommit() && !self.txn.begin_deferred(),
            consistency: self.routing.consistency,
            read_only_procedure: &read_only_procedure,
        };
        match plan(stmts, &input) {
            Plan::Direct(target) => target,
            // The read/write split never plans shards.
            Plan::Sharded { .. } => Target::primary(0),
        }
    }

    /// Whether the session runs in autocommit mode (without it, every statement opens or
    /// continues a transaction, which must stay on the primary).
    pub fn autocommit(&self) -> bool {
        self.state.autocommit()
    }

    /// The server index a target resolves to now; `exclude` is a server that just failed.
    pub fn choose_server(&self, group: &Group, target: Target, exclude: Option<usize>) -> usize {
        let need = self.read_needs(group);
        let need = need.as_ref();
        match target.role {
            Role::Primary => group.primary_index(),
            Role::Read => group.choose_read(need, exclude, rand::random()),
            Role::Replica => group.choose_replica(need, exclude, rand::random()),
        }
    }

    /// Checks out a connection on the server `target` resolves to now. In `session`
    /// consistency with a `read_your_writes_wait`, a read that would go to the primary only
    /// because no replica had applied the session's last write when the monitor last looked
    /// first asks a healthy replica to wait for that write, up to the bound.
    pub async fn checkout_for(
        &mut self,
        group: &Group,
        target: Target,
        exclude: Option<usize>,
    ) -> Result<PooledConn, ProxyError> {
        let chosen = self.choose_server(group, target, exclude);
        if !group.read_your_writes_wait.is_zero() {
            if let Some((replica, conn)) = in_heap(|| self.replica_after_wait(group, target, exclude, chosen)).await {
                self.routing.last_server = Some((target.group, replica));
                return Ok(conn);
            }
        }
        self.routing.last_server = Some((target.group, chosen));
        let no_schema = self.state.schema.is_none();
        let want = self.backend_schema();
        group.servers[chosen]
            .pool_for(&self.user)
            .checkout_preferring(self.flavour(), no_schema, want)
            .await
    }

    /// A replica connection that has applied the session's last write, if waiting is configured
    /// and the read otherwise falls back to the primary; None means: use `chosen`.
    async fn replica_after_wait(
        &mut self,
        group: &Group,
        target: Target,
        exclude: Option<usize>,
        chosen: usize,
    ) -> Option<(usize, PooledConn)> {
        let bound = group.read_your_writes_wait;
        if bound.is_zero() || target.role == Role::Primary || chosen != group.primary_index() {
            return None;
        }
        let need = self.read_needs(group)?;
        let replicas_only = target.role == Role::Replica;
        let no_schema = self.state.schema.is_none();
        if let Some((known, _)) = self.routing.caught_up.filter(|&(r, g)| {
            g == need && Some(r) != exclude && r != group.primary_index() && group.may_read_from(r, replicas_only)
        }) {
            let conn = group.servers[known]
                .pool_for(&self.user)
                .checkout(self.flavour(), no_schema)
                .await
                .ok()?;
            return Some((known, conn));
        }
        let replica = match target.role {
            Role::Replica => group.choose_replica(None, exclude, rand::random()),
            _ => group.choose_read(None, exclude, rand::random()),
        };
        if replica == group.primary_index() {
            return None; // no healthy replica: nothing to wait for
        }
        let server = &group.servers[replica];
        let mut conn = server
            .pool_for(&self.user)
            .checkout(self.flavour(), no_schema)
            .await
            .ok()?;
        let applied = wait_for_gtid(&mut conn, &need, bound).await;
        let counter = if applied {
            &server.gtid_waits_applied
        } else {
            &server.gtid_waits_timed_out
        };
        counter.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(session = self.id, server = %server.address, gtid = %need, applied, "waited for the session's last write");
        if applied {
            self.routing.caught_up = Some((replica, need));
            server.health.note_applied(need);
        }
        applied.then_some((replica, conn))
    }

    /// The write a read must see: the session's last one in `session` consistency, the
    /// newest one acknowledged to any client in `global`.
    fn read_needs(&self, group: &Group) -> Option<Gtid> {
        match self.routing.consistency {
            Consistency::Session => self.routing.last_write,
            Consistency::Global => group.acknowledged.get(),
            _ => None,
        }
    }

    /// Whether a held connection must be given up for `target`: it only serves a short-lived
    /// pin on a server that is not the primary, and the statement needs the primary.
    pub fn must_leave_held(&self, group: &Group, conn: &PooledConn, target: Target) -> bool {
        target.role == Role::Primary
            && !conn.in_transaction
            && self.pins.only_short_lived()
            && group.index_of(conn.pool()) != Some(group.primary_index())
    }

    /// Whether a read planned on server `chosen` would first ask a replica to catch up
    /// (see [`Session::checkout_for`]).
    pub fn read_may_wait(&self, group: &Group, target: Target, chosen: usize) -> bool {
        !group.read_your_writes_wait.is_zero()
            && target.role != Role::Primary
            && chosen == group.primary_index()
            && self.read_needs(group).is_some()
    }

    /// Counts a statement on server `server` of group `group_index`.
    pub fn count_routed_on(&mut self, group_index: usize, server: usize, target: Target) {
        let Some(group) = self.gen.groups.get(group_index) else {
            return;
        };
        if let Some(s) = group.servers.get(server) {
            let counter = match target.role {
                Role::Read | Role::Replica => &s.reads,
                Role::Primary => &s.writes,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            self.routing.last_server = Some((group_index, server));
        }
    }

    /// Counts the statement on the server its connection belongs to.
    pub fn count_routed(&mut self, group_index: usize, conn: &PooledConn, target: Target) {
        let Some(group) = self.gen.groups.get(group_index) else {
            return;
        };
        if let Some(i) = group.index_of(conn.pool()) {
            self.count_routed_on(group_index, i, target);
        }
    }

    /// Remembers the GTID of a write (MariaDB reports `last_gtid` through session tracking).
    pub fn note_write(&mut self, outcome: &Outcome) {
        if let Some(g) = crate::gtid::written_gtid(&outcome.changes) {
            self.routing.last_write = Some(g);
        }
    }

    /// After a failed attempt: the server to avoid on the one retry, when the statement is a
    /// read in autocommit that failed at the connection level before anything reached the client.
    pub fn retry_after(&self, target: Target, was_held: bool, exclude: Option<usize>, e: &ProxyError) -> Option<usize> {
        let connection_level = matches!(
            e,
            ProxyError::LostBackend { .. } | ProxyError::BackendUnavailable { .. } | ProxyError::StateSync(_)
        );
        let untouched = !self.routing.partial_response && !self.fatal;
        if target.role == Role::Primary || was_held || exclude.is_some() || !connection_level || !untouched {
            return None;
        }
        let (group_index, server) = self.routing.last_server?;
        let group = self.gen.groups.get(group_index)?;
        if group.choose_read(self.read_needs(group).as_ref(), Some(server), 0) == server {
            return None; // no other server to try
        }
        let backend = &group.servers[server];
        backend.read_retries.fetch_add(1, Ordering::Relaxed);
        if backend.health.mark_unreachable() {
            tracing::warn!(server = %backend.address, error = %e, "read failed: server gets no reads until the monitor sees it healthy");
        }
        Some(server)
    }

    /// After a failed attempt: the server to avoid on the retry, or the error when there is none.
    pub fn retry_or_fail(
        &self,
        target: Target,
        was_held: bool,
        exclude: Option<usize>,
        e: ProxyError,
    ) -> Result<usize, ProxyError> {
        self.retry_after(target, was_held, exclude, &e).ok_or(e)
    }

    /// `SET [SESSION] tessera_read_consistency = 'level'`; None if `sql` is not that.
    pub fn set_consistency(&mut self, sql: &str) -> Option<Result<(), ProxyError>> {
        let value = consistency_assignment(sql)?;
        Some(match Consistency::parse(&value) {
            Some(c) => {
                self.routing.consistency = c;
                tracing::debug!(session = self.id, level = c.name(), "read consistency set");
                Ok(())
            }
            None => Err(crate::error::ServerError::WrongValueForVariable {
                name: CONSISTENCY_VARIABLE.to_string(),
                value,
                hint: " (use eventual, session, global or strong)",
            }
            .into()),
        })
    }
}

/// The value of `SET [SESSION|@@[session.]]tessera_read_consistency = value` (quotes removed).
pub fn consistency_assignment(sql: &str) -> Option<String> {
    let lower = sql.trim().trim_end_matches(';').to_ascii_lowercase();
    let rest = lower.strip_prefix("set")?.trim_start();
    let rest = rest.strip_prefix("session ").map_or(rest, str::trim_start);
    let rest = rest
        .strip_prefix("@@session.")
        .or_else(|| rest.strip_prefix("@@local."))
        .or_else(|| rest.strip_prefix("@@"))
        .unwrap_or(rest);
    let value = rest.strip_prefix(CONSISTENCY_VARIABLE)?.trim_start();
    let value = value.strip_prefix(":=").or_else(|| value.strip_prefix('='))?.trim();
    if value.contains(',') {
        return None;
    }
    Some(value.trim_matches(|c| c == '\'' || c == '"' || c == '`').to_string())
}

/// Asks a replica to wait until it has applied `gtid`, up to `bound`: true when it has. A
/// connection that fails the question is not reused.
async fn wait_for_gtid(conn: &mut PooledConn, gtid: &Gtid, bound: std::time::Duration) -> bool {
    let sql = format!("SELECT MASTER_GTID_WAIT('{gtid}', {:.3})", bound.as_secs_f64());
    match conn.query_rows(&sql).await {
        Ok((_, rows)) => rows.first().and_then(|r| r.first()).and_then(|v| v.as_deref()) == Some(b"0".as_slice()),
        Err(_) => {
            conn.broken = true;
            false
        }
    }
}

/// Statements whose result pins a server-side cursor (COM_STMT_EXECUTE with a cursor flag).
pub fn pinned_target(target: Target, opens_cursor: bool) -> Target {
    if opens_cursor {
        Target::primary(target.group)
    } else {
        target
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consistency_assignments_are_recognised() {
        for sql in [
            "SET tessera_read_consistency = 'strong'",
            "set session tessera_read_consistency=strong",
            "SET @@session.tessera_read_consistency = \"strong\";",
            "SET @@tessera_read_consistency := strong",
        ] {
            assert_eq!(consistency_assignment(sql).as_deref(), Some("strong"), "{sql}");
        }
        assert_eq!(consistency_assignment("SET autocommit = 1"), None);
        assert_eq!(
            consistency_assignment("SET tessera_read_consistency = 'x', autocommit = 1"),
            None
        );
        assert_eq!(
            consistency_assignment("SET GLOBAL tessera_read_consistency = 'x'"),
            None
        );
    }
}
