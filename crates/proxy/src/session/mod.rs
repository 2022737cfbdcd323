//! One task per client connection: authentication, then a loop that reads one command at a
//! time and runs it. A session borrows a backend connection per statement in autocommit and
//! per transaction otherwise; state that cannot be replayed pins it (see [`pins`]).
//!
//! - [`auth`]: connection phase. - [`execute`]: borrowing, state sync, forwarding, release.
//! - [`query`]: COM_QUERY. - [`prepared`]: COM_STMT_*. - [`commands`]: the other commands.
//! - [`pins`], [`uservars`], [`rewrite`]: session state that needs special care.

pub mod auth;
pub mod binding;
pub mod commands;
pub mod diagnostics;
pub mod execute;
pub mod found_rows;
pub mod get_diagnostics;
pub mod info;
pub mod last_insert_id;
pub mod logical_names;
pub mod metadata;
pub mod params;
pub mod pins;
pub mod pipelined;
pub mod prepared;
pub mod processlist;
pub mod query;
pub mod restore;
pub mod rewrite;
pub mod routing;
pub mod shard_txn;
pub mod sharded;
pub mod track_set;
mod txn_edges;
pub mod txn_state;
mod unseen_state;
pub mod uservars;

use crate::alloc::in_heap;
use crate::context::Context;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::net::Stream;
use crate::pool::PooledConn;
use crate::registry::SessionHandle;
use crate::state::SessionVars;
use pins::Pins;
use prepared::StatementRegistry;
use std::sync::Arc;
use tessera_protocol::command::Command;
use tessera_protocol::response::ErrPacket;
use tessera_protocol::{PacketStream, ProtocolError};
use tokio::net::TcpStream;

/// A connection kept only for the next statement (diagnostics, FOUND_ROWS) goes back to the
/// pool when the client stays idle this long.
const SHORT_PIN_IDLE: std::time::Duration = std::time::Duration::from_secs(1);

/// What the command loop does after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Continue,
    Close,
}

/// Values of the previous statement that session-bound functions report.
#[derive(Debug, Clone, Copy, Default)]
pub struct LastStatement {
    /// ROW_COUNT(): affected rows, -1 after a result set or an error.
    pub row_count: i64,
    /// FOUND_ROWS(): rows of the last result set.
    pub found_rows: u64,
}

/// One client connection after authentication.
pub struct Session {
    pub ctx: Arc<Context>,
    pub client: PacketStream<Stream>,
    pub id: u32,
    pub capabilities: u32,
    pub user: String,
    pub host: String,
    pub charset: u8,
    /// The state the client believes its session has.
    pub state: SessionVars,
    pub pins: Pins,
    /// The backend connections kept across statements (open transaction or pin): none, one,
    /// or one per shard on a logical schema.
    pub binding: binding::Binding,
    /// The configuration generation this session's statements run on (see
    /// [`Session::follow_generation`]).
    pub gen: Arc<crate::generation::Generation>,
    pub stmts: StatementRegistry,
    pub multi_statements: bool,
    /// The client negotiated MariaDB extended column metadata.
    pub extended_metadata: bool,
    /// The client negotiated MariaDB's cached metadata (see [`crate::exec::forward::Metadata`]).
    pub cache_metadata: bool,
    pub last: LastStatement,
    pub handle: Arc<SessionHandle>,
    /// Set when backend state was lost (e.g. the server died mid-transaction): close after
    /// reporting the error, as MySQL itself would.
    pub fatal: bool,
    /// COM_CHANGE_USER attempts refused so far: after three, MariaDB answers every further
    /// one with "Unknown command" (MDEV-3915, no password guessing on an open connection).
    pub failed_change_users: u8,
    /// The client's COMMIT or ROLLBACK released the session (RELEASE, or `completion_type`
    /// RELEASE): the connection closes after its OK, as MariaDB closes it.
    pub released: bool,
    /// LAST_INSERT_ID() may have changed on the held connection and is not known yet.
    pub last_insert_id_dirty: bool,
    /// Read/write splitting: consistency level, last write, last server.
    pub routing: routing::SessionRouting,
    /// The session tracking the client asked for (its OK packets are filtered to it).
    pub tracking: crate::tracking::ClientTracking,
    /// The tracking a SET inside the running multi-statement query asked for.
    pub tracking_later: Option<crate::tracking::TrackingFrom>,
    /// The greeting's scramble (reused by COM_CHANGE_USER).
    pub scramble: Vec<u8>,
    /// The client's diagnostics area, when it outlived the connection that produced it.
    pub diagnostics: diagnostics::Diagnostics,
    /// The registry knows this session holds user locks (see `publish_user_locks`).
    pub user_locks_published: bool,
    /// The last table metadata snapshot this session read (see [`crate::catalog`]).
    pub catalog: Option<std::sync::Arc<crate::catalog::SchemaTables>>,
    /// The database the next checkout must select (a shard's), instead of the client's.
    pub target_schema: Option<String>,
    /// The session's transaction: a deferred BEGIN, a reads-only one, or on a logical schema
    /// the shards of Tessera's transaction and the client's own XA.
    pub txn: txn_state::TxnState,
    /// The error number of the last statement forwarded, if it failed.
    pub last_error: Option<u16>,
    /// Set just before a checkout for a statement that is a pure read (read by the checkout).
    pub statement_reads_only: bool,
}

/// Serves one accepted TCP connection to the end.
pub async fn serve(ctx: Arc<Context>, tcp: TcpStream, host: String) {
    let _ = tcp.set_nodelay(true);
    let id = ctx.next_session_id();
    Metrics::inc(&ctx.metrics.client_connections_total);
    ctx.metrics
        .client_connections
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Login and close run once: their futures live on the heap, not in every session's task.
    if let Some(mut session) = in_heap(|| Session::login(ctx.clone(), tcp, id, host)).await {
        session.run().await;
        in_heap(|| session.close()).await;
    }
    ctx.metrics
        .client_connections
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    ctx.drain.session_ended();
}

impl Session {
    async fn run(&mut self) {
        self.handle.set_db(self.state.schema.as_deref());
        loop {
            let short_pin = self.binding.held().is_some_and(|c| !c.in_transaction) && self.pins.only_short_lived();
            let mut release_timer = short_pin.then(|| Box::pin(tokio::time::sleep(SHORT_PIN_IDLE)));
            let between_transactions = self.between_transactions();
            // The read is never cancelled (that could lose a half-read packet); the timer runs beside it.
            let read = {
                let read_next = self.client.read_packet_with_seq();
                tokio::pin!(read_next);
                loop {
                    let watch_held = self.binding.held().is_some_and(watchable_while_idle);
                    // Biased: the read first (no random start per poll); a kill is also seen
                    // after every command, a busy client needs no idle timer.
                    tokio::select! {
                        biased;
                        r = &mut read_next => break r,
                        _ = self.handle.stopped(between_transactions) => return,
                        _ = held_input(self.binding.held_mut()), if watch_held => {
                            if held_ended_while_idle(self.binding.take_held(), &mut self.pins, &self.ctx.metrics, self.id) {
                                self.fatal = true;
                                return;
                            }
                        }
                        _ = async { if let Some(t) = release_timer.as_mut() { t.await } }, if release_timer.is_some() => {
                            // An idle session gives back a connection kept only for one more
                            // statement (its diagnostics area read first, to be recreated).
                            release_timer = None;
                            let mut kept = self.binding.take_held();
                            let release = match kept.as_mut() {
                                Some(conn) if self.pins.holds_diagnostics() => {
                                    in_heap(|| diagnostics::keep_area_on_release(conn, &mut self.diagnostics)).await
                                }
                                _ => true,
                            };
                            if let (true, Some(conn)) = (release, kept.as_mut()) {
                                let (pins, last, id) = (&mut self.pins, &mut self.last, self.id);
                                in_heap(|| found_rows::learn_before_release(conn, pins, last, id)).await;
                            }
                            if let (true, Some(conn)) = (release && self.last_insert_id_dirty, kept.as_mut()) {
                                // LAST_INSERT_ID(expr) may have changed it: read before sharing.
                                Metrics::inc(&self.ctx.metrics.last_insert_id_round_trips);
                                let (value, id) = (&mut self.state.last_insert_id, self.id);
                                let known = in_heap(|| execute::learn_last_insert_id(conn, value, id)).await;
                                self.last_insert_id_dirty = !known;
                            }
                            if release {
                                self.pins.end_short_lived();
                            } else {
                                self.binding.set_held(kept);
                            }
                        }
                    }
                }
            };
            let payload = match read {
                Ok((0, p)) => p,
                Ok(_) => {
                    return self
                        .fail(ProxyError::from(crate::error::ServerError::PacketsOutOfOrder).to_err_packet())
                        .await
                }
                Err(ProtocolError::PacketTooLarge { .. }) => {
                    return self.fail(ProxyError::PacketTooLarge.to_err_packet()).await
                }
                Err(e) if e.is_disconnect() => return,
                Err(e) => return tracing::debug!(session = self.id, error = %e, "closing client"),
            };
            if self.handle.is_killed() {
                return;
            }
            // The command's future lives on the heap while it runs: an idle session keeps only
            // this loop's small state (10,000 idle clients in well under 100 MB).
            self.handle.set_busy(true);
            self.follow_generation();
            let answered = in_heap(|| self.dispatch(&payload)).await;
            self.handle.set_busy(false);
            self.handle.set_db(self.state.schema.as_deref());
            match answered {
                // KILL of this very session: its own ERR (1927) goes out, then it closes.
                Err(e) if self.fatal && self.handle.is_killed() => {
                    in_heap(|| self.report(e)).await;
                    return;
                }
                // KILL CONNECTION from another session: the statement it interrupted has
                // answered; the connection closes now, as MariaDB closes it.
                _ if self.handle.is_killed() => return,
                // A drain: the session ends once outside a transaction.
                Ok(Next::Continue) if self.handle.is_draining() && self.between_transactions() => return,
                Ok(Next::Continue) if !self.fatal && !self.released => {}
                Ok(_) => return,
                Err(e) => {
                    if !in_heap(|| self.report(e)).await {
                        return;
                    }
                }
            }
        }
    }

    /// Sends an error for a failed command; returns whether the session goes on.
    async fn report(&mut self, e: ProxyError) -> bool {
        Metrics::inc(&self.ctx.metrics.query_errors);
        let go_on = e.is_recoverable() && !self.fatal;
        if matches!(e, ProxyError::Client(_)) {
            return false;
        }
        if matches!(e, ProxyError::LostBackend { .. }) {
            Metrics::inc(&self.ctx.metrics.backend_lost);
            tracing::warn!(session = self.id, error = %e, "backend lost during a statement");
        }
        let packet = e.to_err_packet();
        self.client.write_with(|b| packet.encode(b));
        self.client.flush().await.is_ok() && go_on
    }

    async fn fail(&mut self, err: ErrPacket) {
        self.client.write_with(|b| err.encode(b));
        let _ = self.client.flush().await;
    }

    async fn dispatch(&mut self, payload: &[u8]) -> Result<Next, ProxyError> {
        let command = Command::parse(payload)?;
        self.client.set_seq(1);
        match command {
            Command::Query(sql) => self.query(sql).await,
            // The statements of every command but the two hot ones run with their futures boxed:
            // a command's future is as large as its largest branch, and so is its heap block.
            Command::StmtPrepare(sql) => in_heap(|| self.stmt_prepare(sql)).await,
            Command::StmtExecute { stmt_id, payload } => self.stmt_execute(stmt_id, payload).await,
            Command::StmtSendLongData { stmt_id, param, data } => self.stmt_long_data(stmt_id, param, data),
            Command::StmtClose(id) => in_heap(|| self.stmt_close(id)).await,
            Command::StmtReset(id) => in_heap(|| self.stmt_reset(id)).await,
            Command::StmtFetch { stmt_id, rows } => in_heap(|| self.stmt_fetch(stmt_id, rows, payload)).await,
            Command::Quit => Ok(Next::Close),
            Command::Ping | Command::Debug => {
                self.last.row_count = 0;
                self.ok().await
            }
            Command::InitDb(db) => in_heap(|| self.init_db(db, payload)).await,
            Command::FieldList { .. } => in_heap(|| self.field_list(payload)).await,
            Command::Statistics => in_heap(|| self.statistics(payload)).await,
            Command::SetOption(option) => in_heap(|| self.set_option(option)).await,
            Command::ResetConnection => in_heap(|| self.reset_connection()).await,
            Command::ChangeUser(data) => in_heap(|| self.change_user(data)).await,
            Command::ProcessKill(id) => in_heap(|| self.kill(u64::from(id), false)).await,
            Command::Unknown(_) => Err(ProxyError::UnknownCommand),
        }
    }

    /// Answers OK with the session's current status flags.
    pub async fn ok(&mut self) -> Result<Next, ProxyError> {
        let status = self.status_flags();
        let ok = tessera_protocol::response::OkPacket {
            status,
            ..Default::default()
        };
        self.client.write_with(|b| ok.encode(b, self.capabilities));
        self.client.flush().await?;
        Ok(Next::Continue)
    }

    /// Status flags as the client should see them between statements.
    pub fn status_flags(&self) -> u16 {
        use tessera_protocol::flags::*;
        let mut status = if self.state.autocommit() {
            SERVER_STATUS_AUTOCOMMIT
        } else {
            0
        };
        if self.in_transaction() {
            status |= SERVER_STATUS_IN_TRANS;
        }
        status
    }

    /// What the client negotiated about result-set metadata, for results Tessera writes.
    pub fn metadata_dialect(&self) -> tessera_protocol::resultset::MetadataDialect {
        tessera_protocol::resultset::MetadataDialect {
            extended: self.extended_metadata,
            cached: self.cache_metadata,
        }
    }

    /// The kind of backend connection this client needs (connection-level flags).
    pub fn flavour(&self) -> crate::pool::Flavour {
        crate::pool::Flavour {
            found_rows: self.capabilities & tessera_protocol::flags::CLIENT_FOUND_ROWS != 0,
            extended_metadata: self.extended_metadata,
        }
    }

    /// True while a backend transaction is open for this session.
    /// Moves the session to the current configuration generation when nothing ties it to its
    /// own: no held or shard connection, no pin, no transaction (the client's XA included),
    /// and no prepared statement planned over shards (those finish on the generation they were
    /// prepared on). What names servers or schemas by index is forgotten on the way.
    pub fn follow_generation(&mut self) {
        if self.ctx.generation_number() == self.gen.number
            || self.binding.held().is_some()
            || self.binding.has_others()
            || self.pins.is_pinned()
            || self.in_transaction()
            || self.txn.xa_starting().is_some()
            || self.stmts.any_sharded()
        {
            return;
        }
        self.gen = self.ctx.generation();
        self.routing.last_server = None;
        self.routing.caught_up = None;
        self.catalog = None;
        tracing::debug!(
            session = self.id,
            generation = self.gen.number,
            "session on a new configuration generation"
        );
    }

    pub fn in_transaction(&self) -> bool {
        self.txn.begin_deferred()
            || self.binding.held().is_some_and(|c| c.in_transaction)
            || self.txn.shards().is_open()
            || self.binding.others().any(|(_, c)| c.in_transaction)
    }

    /// Neither Tessera's transaction nor the client's XA is open: a drain may end the session.
    fn between_transactions(&self) -> bool {
        !self.in_transaction() && self.txn.xa_starting().is_none()
    }

    /// Returns held backend state to a clean slate and unregisters the session.
    async fn close(&mut self) {
        if self.txn.shards().is_open() {
            self.abort_sharded_txn().await;
        }
        for (_, mut conn) in self.binding.take_others() {
            // A transaction or XA branch left open ends with its connection; pinned state
            // (a shard's table locks, temporary tables) is reset before it goes back.
            conn.broken |= conn.in_transaction;
            if !conn.broken && conn.pinned_state && conn.reset().await.is_err() {
                conn.broken = true;
            }
        }
        if let Some(mut conn) = self.binding.take_held() {
            // The client's own XA transaction (prepared, or still open) is left as a MariaDB
            // client leaves it: its connection closes, so other connections can finish it.
            if self.pins.in_xa() || conn.reset().await.is_err() {
                conn.broken = true;
            }
        }
        self.ctx.sessions.unregister(self.id);
    }
}

/// A held connection with nothing outstanding on it: any input is the server's own.
fn watchable_while_idle(conn: &PooledConn) -> bool {
    !conn.has_pending_answers() && !conn.io.has_buffered_input() && conn.own_tail == crate::backend::conn::OwnTail::None
}

/// Resolves when input (or the end) arrives on the held connection. Cancel-safe: what is read
/// stays in the connection's buffer.
async fn held_input(held: Option<&mut PooledConn>) {
    match held {
        Some(conn) => {
            let _ = conn.io.await_input().await;
        }
        None => std::future::pending().await,
    }
}

/// The server spoke on the held connection while nothing was asked of it: it is closing
/// it (`idle_transaction_timeout`, `wait_timeout`, a KILL on the server). A transaction or
/// long-lived pinned state went with it, so the client's connection closes too, as the
/// server would close it (the client's next statement gets 2006/2013, never an answer
/// outside the transaction it thinks it is in). Returns whether the session ends.
fn held_ended_while_idle(held: Option<PooledConn>, pins: &mut Pins, metrics: &Metrics, id: u32) -> bool {
    let Some(mut conn) = held else {
        return false;
    };
    conn.broken = true;
    let state_lost = conn.in_transaction || !pins.only_short_lived();
    Metrics::inc(&metrics.backend_lost);
    tracing::warn!(
        session = id,
        server = %conn.server.name,
        backend_thread = conn.thread_id,
        in_transaction = conn.in_transaction,
        "the server closed the session's held connection while the client was idle"
    );
    if state_lost {
        pins.clear();
    } else {
        pins.end_short_lived();
    }
    state_lost
}
