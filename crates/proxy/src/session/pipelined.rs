//! A prepared statement's execution through a pipelined lane ([`crate::pool::pipeline`]): when the
//! session holds no connection and no state a lane lacks, and the statement is a pure read.

use super::execute::client_side;
use super::Session;
use crate::backend::stmt_cache::SqlText;
use crate::error::ProxyError;
use crate::exec::forward::{forward_from, pass_whole, ReadResponse};
use crate::exec::Mode;
use crate::metrics::Metrics;
use crate::pool::pipeline::{Lane, LaneAnswer, LaneExecute, LaneRequest, LaneSet, LaneSettings, Offer};
use crate::route::Target;
use crate::state::SyncScope;
use bytes::BytesMut;
use std::sync::Arc;
use tessera_protocol::stmt::ExecuteRequest;
use tessera_sql::{Classification, Flags};

/// What became of a statement offered to a lane.
#[derive(Debug, PartialEq, Eq)]
pub enum Pipelined {
    /// Answered to the client.
    Answered,
    /// No lane could take it now: run it as usual.
    NoLane,
    /// The lane's answer had warnings or an error, or the statement ran over the bound: run it
    /// on a connection of its own, and do not offer it to a lane again.
    RunAlone,
}

/// Flags of statements that read or change session state, lock, or write.
const NOT_PIPELINED: Flags = Flags::from_bits_truncate(
    Flags::USER_VAR_WRITE.bits()
        | Flags::USER_VAR_READ.bits()
        | Flags::LOCK_FUNCTIONS.bits()
        | Flags::SQL_CALC_FOUND_ROWS.bits()
        | Flags::FOUND_ROWS.bits()
        | Flags::ROW_COUNT.bits()
        | Flags::LAST_INSERT_ID.bits()
        | Flags::LAST_INSERT_ID_SET.bits()
        | Flags::LOCKING_READ.bits()
        | Flags::SELECT_INTO.bits()
        | Flags::MULTI_STATEMENT.bits()
        | Flags::WRITES.bits()
        | Flags::TEMPORARY.bits()
        | Flags::SESSION_INFO.bits()
        | Flags::DIAGNOSTICS.bits(),
);

/// Whether a prepared statement may ever go through a lane (decided once, at prepare).
pub fn pipelinable(class: &Classification) -> bool {
    class.pure_select && !class.flags.intersects(NOT_PIPELINED)
}

/// A lane answers only reads whose FOUND_ROWS() is the rows they sent (no connection is kept
/// after a lane's statement for the server to tell).
pub fn counts_rows_sent(sql: &str, class: &Classification) -> bool {
    tessera_sql::found_rows_effect(sql, class) == tessera_sql::FoundRowsEffect::RowsSent
}

impl Session {
    /// The lane settings, None when pipelining is off.
    fn lane_settings(&self) -> Option<LaneSettings> {
        let s = &self.gen.config.server;
        (s.pipeline_lanes > 0).then(|| LaneSettings {
            lanes: s.pipeline_lanes,
            depth: s.pipeline_depth,
            bound: std::time::Duration::from_millis(s.pipeline_statement_bound_ms),
            budget: 0,
        })
    }

    /// True when nothing ties this session's next statement to one connection: no held
    /// connection, autocommit, plain schema, no statement time limit of its own, and an empty
    /// diagnostics area.
    fn may_pipeline(&self) -> bool {
        self.binding.held().is_none()
            && !self.txn.begin_deferred()
            && !self.pins.is_pinned()
            && !self.binding.has_others()
            && self.txn.xa_starting().is_none()
            && self.target_schema.is_none()
            && self.autocommit()
            && self.diagnostics.is_empty()
            && !self.state.has_statement_time()
            && self.logical_schema().is_none()
    }

    /// Runs an execution through a lane of the server the read is routed to.
    pub async fn execute_pipelined(
        &mut self,
        target: Target,
        sql: &SqlText,
        request: &ExecuteRequest<'_>,
        types: &[u8],
        (stmt_id, known): (u32, Option<&[u8]>),
    ) -> Result<Pipelined, ProxyError> {
        // The cheap checks first: a statement of a transaction encodes nothing here.
        let Some(settings) = self.usable_lanes() else {
            return Ok(Pipelined::NoLane);
        };
        let mut command = BytesMut::with_capacity(64 + request.values.len());
        let types = request.encode_for_backend(&mut command, 0, Some(types));
        let execute = LaneExecute {
            sql: Arc::clone(sql),
            types,
        };
        let outcome = self
            .run_pipelined(target, settings, Some(execute), command, Mode::Binary, known)
            .await;
        let (pipelined, sent) = outcome?;
        if sent.is_some() {
            self.columns_now_held(stmt_id, sent);
        }
        Ok(pipelined)
    }

    /// Runs a COM_QUERY through a lane when it is one pure read.
    pub async fn query_pipelined(
        &mut self,
        target: Target,
        sql: &str,
        class: &Classification,
    ) -> Result<Pipelined, ProxyError> {
        // The cheap checks first.
        let Some(settings) = self
            .usable_lanes()
            .filter(|_| pipelinable(class) && counts_rows_sent(sql, class))
        else {
            return Ok(Pipelined::NoLane);
        };
        let mut command = BytesMut::with_capacity(1 + sql.len());
        command.extend_from_slice(&[tessera_protocol::command::COM_QUERY]);
        command.extend_from_slice(sql.as_bytes());
        let outcome = self
            .run_pipelined(target, settings, None, command, Mode::Text, None)
            .await;
        outcome.map(|(pipelined, _)| pipelined)
    }

    /// The lane settings when this session's statement may go through a lane now (checked
    /// once per statement: `may_pipeline` is not free).
    fn usable_lanes(&self) -> Option<LaneSettings> {
        self.lane_settings().filter(|_| self.may_pipeline())
    }

    /// Offers the statement to a lane and answers the client from it; with what became of it,
    /// the column definitions a prepared statement's client now holds when they were sent
    /// (`known`: the ones it held before, see [`crate::exec::Metadata::Cached`]).
    async fn run_pipelined(
        &mut self,
        target: Target,
        settings: LaneSettings,
        execute: Option<LaneExecute>,
        command: BytesMut,
        mode: Mode,
        known: Option<&[u8]>,
    ) -> Result<(Pipelined, Option<bytes::Bytes>), ProxyError> {
        let group = self.gen.group_checked(target.group)?.clone();
        let chosen = self.choose_server(&group, target, None);
        if self.read_may_wait(&group, target, chosen) {
            return Ok((Pipelined::NoLane, None));
        }
        let pool = group.servers[chosen].pool_for(&self.user).clone();
        let settings = LaneSettings {
            budget: pool.max_size() / 4,
            ..settings
        };
        let flavour = self.flavour();
        let (reply, answer) = tokio::sync::oneshot::channel();
        let request = LaneRequest {
            execute,
            command,
            reply,
        };
        let seen = self.handle.kill_requests();
        let lane_at = match pool.lanes.offer(&mut self.state, flavour, settings, request) {
            Offer::Queued(at) => at,
            Offer::Open(set, request) => {
                let Some(lane) = self.open_lane(target, &pool, &set, settings).await else {
                    return Ok((Pipelined::NoLane, None));
                };
                if lane.send(request).is_none() {
                    return Ok((Pipelined::NoLane, None));
                }
                lane.at
            }
            Offer::Refused => return Ok((Pipelined::NoLane, None)),
        };
        let answer = self.lane_answer(lane_at, answer, seen).await?;
        let mut side = client_side(&self.gen, self.capabilities, &self.tracking, self.routing.last_server);
        side.metadata = self.metadata_for(known);
        let outcome = match answer {
            Some(LaneAnswer::Whole(frames, whole, capabilities)) => {
                pass_whole(&mut self.client, side, mode, frames, &whole, capabilities).await?
            }
            Some(LaneAnswer::Clean(packets, capabilities)) => {
                let mut source = ReadResponse { packets, capabilities };
                forward_from(&mut source, &mut self.client, side, mode, 0).await?
            }
            Some(LaneAnswer::RunAlone) | None => {
                Metrics::inc(&self.ctx.metrics.pipeline_reruns);
                return Ok((Pipelined::RunAlone, None));
            }
        };
        self.count_routed_on(target.group, chosen, target);
        Metrics::inc(&self.ctx.metrics.pipelined);
        self.record_last(&outcome);
        self.follow_found_rows(tessera_sql::FoundRowsEffect::RowsSent, outcome.result_rows);
        Ok((Pipelined::Answered, outcome.columns_sent))
    }

    /// Waits for a lane's answer (None when the lane went away) in a statement turn on the
    /// lane's connection, where a KILL reaches it. A statement a KILL was aimed at since it was
    /// offered (the count `seen` moved) ends with MariaDB's 1317 whatever the lane answered:
    /// it is not run again on its own, nor answered with rows.
    async fn lane_answer(
        &mut self,
        (server, thread_id): (crate::backend::ServerRef, u32),
        answer: tokio::sync::oneshot::Receiver<LaneAnswer>,
        seen: u64,
    ) -> Result<Option<LaneAnswer>, ProxyError> {
        self.handle.set_running_shared(&server, thread_id);
        self.catch_up_kill(seen).await;
        let answer = tokio::select! {
            biased;
            answer = answer => Some(answer.ok()),
            () = crate::exec::forward::client_left(&mut self.client) => None,
        };
        let Some(answer) = answer else {
            self.interrupt_for_a_client_that_left().await;
            return Err(ProxyError::Client(tessera_protocol::ProtocolError::Closed));
        };
        let interrupted = self.handle.kill_requests() != seen || self.handle.is_killed();
        self.handle.set_running(None);
        match interrupted {
            true => Err(ProxyError::QueryInterrupted),
            false => Ok(answer),
        }
    }

    /// The client left while its statement ran on a lane's shared connection: the statement
    /// is interrupted there (KILL QUERY, as for a KILL from another client; a statement of
    /// another session it may reach instead runs again on its own), since the connection
    /// stays open for the lane's other statements and the server would not see this client go.
    async fn interrupt_for_a_client_that_left(&mut self) {
        if let Some(running) = self.handle.running() {
            if let Err(e) = self.interrupt(&self.handle, &running, true).await {
                tracing::warn!(session = self.id, error = %e, "the statement of a client that left could not be interrupted");
            }
        }
        self.handle.set_running(None);
    }

    /// Opens a lane of `set` on a connection of `pool` in this session's state, its statements
    /// bounded by the lane's `max_statement_time`.
    async fn open_lane(
        &mut self,
        target: Target,
        pool: &Arc<crate::pool::Pool>,
        set: &Arc<LaneSet>,
        settings: LaneSettings,
    ) -> Option<Lane> {
        let acquired = self.acquire(target, SyncScope::default()).await;
        self.handle.set_running(None);
        let mut conn = acquired.ok()?;
        if !Arc::ptr_eq(conn.pool(), pool) {
            return None;
        }
        let bound = format!("SET SESSION max_statement_time = {}", settings.bound.as_secs_f64());
        if conn.simple_command(&bound).await.is_err() {
            conn.broken = true;
            return None;
        }
        set.open(conn, settings, self.ctx.metrics.clone())
    }
}
