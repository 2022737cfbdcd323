//! The commands other than queries and prepared statements: login (connection phase and the
//! default schema), COM_INIT_DB, COM_FIELD_LIST, COM_STATISTICS, COM_SET_OPTION,
//! COM_RESET_CONNECTION, COM_CHANGE_USER and KILL.

use super::auth::{self, encode_login_ok, Login};
use super::{LastStatement, Next, Session};
use crate::context::Context;
use crate::error::{ProxyError, ServerError};
use crate::exec::Mode;
use crate::generation::Generation;
use crate::metrics::Metrics;
use crate::route::Target;
use crate::state::{SessionVars, SyncScope};
use std::sync::Arc;
use tessera_protocol::codec::Reader;
use tessera_protocol::flags::*;
use tessera_protocol::response::encode_result_end;
use tokio::net::TcpStream;

impl Session {
    /// The connection phase; None if the client did not make it through (already answered).
    pub async fn login(ctx: Arc<Context>, tcp: TcpStream, id: u32, host: String) -> Option<Session> {
        // The generation the login starts on (its accounts) is the session's first.
        let gen = ctx.generation();
        let timeout = gen.config.server.handshake_timeout();
        let authed = match tokio::time::timeout(timeout, auth::accept(&ctx, &gen, tcp, id, &host)).await {
            Ok(Ok(a)) => a,
            Ok(Err(refused)) => {
                tracing::info!(session = id, host, error = %refused.error, "login failed");
                Metrics::inc(&ctx.metrics.client_auth_failures);
                if let Some(mut client) = refused.client {
                    let err = refused.error.to_err_packet();
                    client.write_with(|b| err.encode(b));
                    let _ = client.flush().await;
                }
                return None;
            }
            Err(_) => {
                tracing::info!(session = id, host, "handshake timed out");
                return None;
            }
        };
        let handle = ctx.sessions.register(id, &authed.user, &host);
        let routing = user_routing(&gen, &authed.user);
        let tracking = ctx.tracking_defaults.settled().await;
        let mut session = Session {
            state: SessionVars::after_handshake(authed.charset, None),
            client: authed.client,
            capabilities: authed.capabilities,
            multi_statements: authed.capabilities & CLIENT_MULTI_STATEMENTS != 0,
            extended_metadata: authed.extended_metadata,
            cache_metadata: authed.cache_metadata,
            user: authed.user,
            charset: authed.charset,
            host,
            id,
            ctx,
            gen,
            pins: Default::default(),
            binding: Default::default(),
            stmts: Default::default(),
            last: LastStatement::default(),
            handle,
            fatal: false,
            failed_change_users: 0,
            released: false,
            last_insert_id_dirty: false,
            routing,
            tracking,
            tracking_later: None,
            scramble: authed.scramble,
            diagnostics: Default::default(),
            catalog: None,
            user_locks_published: false,
            target_schema: None,
            txn: Default::default(),
            last_error: None,
            statement_reads_only: false,
        };
        match session.enter_schema(authed.database).await {
            Ok(()) => Some(session),
            Err(e) => {
                session.report(e).await;
                session.ctx.sessions.unregister(id);
                None
            }
        }
    }

    /// Validates the schema asked for at login (1049 if unknown), then sends the login OK.
    async fn enter_schema(&mut self, database: Option<String>) -> Result<(), ProxyError> {
        if let Some(db) = database.as_ref().filter(|d| self.gen.topology.schema(d).is_some()) {
            self.state.schema = Some(db.clone());
        } else if let Some(db) = database {
            // The database goes to the server with the session's state (its handshake
            // character set above all), so the server judges the name as it does at login:
            // 1049 for an unknown one, 1300 naming the client's character set for a bad one.
            self.state.schema = Some(db);
            match self.acquire(Target::primary(0), SyncScope::default()).await {
                Ok(conn) => self.keep_or_release(conn, 0),
                Err(e) => {
                    self.state.schema = None;
                    return Err(match e {
                        ProxyError::StateSync(p) => ProxyError::Backend(p),
                        other => other,
                    });
                }
            }
        }
        self.follow_ignore_space().await?;
        self.client.write_with(|b| encode_login_ok(b, self.capabilities));
        self.client.flush().await?;
        Ok(())
    }

    /// A client that logged in with CLIENT_IGNORE_SPACE (`mariadb -i`) gets `IGNORE_SPACE` in
    /// its `sql_mode`, as the server gives it: the session's sql_mode starts as the global one
    /// plus that mode, and is replayed like any SET (pooled connections never had the flag).
    async fn follow_ignore_space(&mut self) -> Result<(), ProxyError> {
        if self.capabilities & tessera_protocol::flags::CLIENT_IGNORE_SPACE == 0 {
            return Ok(());
        }
        let pool = self.gen.default_group().primary().pool_for(&self.user).clone();
        let mut conn = pool.checkout(self.flavour(), true).await?;
        let (_, rows) = conn.query_rows("SELECT @@GLOBAL.sql_mode").await?;
        let global = rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_default();
        let mode = match global.as_str() {
            "" => "IGNORE_SPACE".to_string(),
            g if g.split(',').any(|m| m == "IGNORE_SPACE") => g.to_string(),
            g => format!("IGNORE_SPACE,{g}"),
        };
        self.state.set_var("sql_mode".into(), mode);
        Ok(())
    }

    /// A command forwarded as-is whose answer is an OK/ERR or a result (INIT_DB, FIELD_LIST).
    async fn forward_command(&mut self, payload: &[u8], mode: Mode) -> Result<Next, ProxyError> {
        let was_held = self.binding.held().is_some();
        let mut conn = self.acquire(Target::primary(0), SyncScope::default()).await?;
        conn.begin_command(|b| b.extend_from_slice(payload));
        let outcome = match self.forward(&mut conn, mode).await {
            Ok(o) => o,
            Err(e) => return Err(self.failed(conn, was_held, e)),
        };
        self.finish(conn, &outcome, &[]).await;
        Ok(Next::Continue)
    }

    pub async fn init_db(&mut self, db: &[u8], payload: &[u8]) -> Result<Next, ProxyError> {
        let name = String::from_utf8_lossy(db).into_owned();
        if self.gen.topology.schema(&name).is_some() || self.logical_schema().is_some() {
            return self.use_schema(&crate::state::quote_ident(&name)).await;
        }
        self.forward_command(payload, Mode::Text).await
    }

    pub async fn field_list(&mut self, payload: &[u8]) -> Result<Next, ProxyError> {
        self.forward_command(payload, Mode::FieldList).await
    }

    /// COM_STATISTICS answers with one raw string packet.
    pub async fn statistics(&mut self, payload: &[u8]) -> Result<Next, ProxyError> {
        let was_held = self.binding.held().is_some();
        let mut conn = self.acquire(Target::primary(0), SyncScope::default()).await?;
        conn.begin_command(|b| b.extend_from_slice(payload));
        let answer = match conn.flush().await {
            Ok(()) => conn.read().await,
            Err(e) => Err(e),
        };
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return Err(self.failed(conn, was_held, e)),
        };
        self.handle.set_running(None);
        self.keep_or_release(conn, 0);
        self.client.write_packet(&answer);
        self.client.flush().await?;
        Ok(Next::Continue)
    }

    /// COM_SET_OPTION toggles multi-statements for this session; answered with EOF.
    pub async fn set_option(&mut self, option: u16) -> Result<Next, ProxyError> {
        match option {
            0 => self.multi_statements = true,
            1 => self.multi_statements = false,
            _ => return Err(ProxyError::UnknownCommand),
        }
        let status = self.status_flags();
        self.client
            .write_with(|b| encode_result_end(b, 0, status, self.capabilities));
        self.client.flush().await?;
        Ok(Next::Continue)
    }

    /// Forgets all session state (keeps user and schema); a held connection is reset too.
    pub async fn reset_connection(&mut self) -> Result<Next, ProxyError> {
        self.reset_session_state().await;
        self.ok().await
    }

    async fn reset_session_state(&mut self) {
        // A reset rolls back the open transaction on every shard, as MariaDB rolls back its own.
        if self.txn.shards().is_open() {
            self.abort_sharded_txn().await;
        }
        for (_, mut conn) in self.binding.take_others() {
            conn.broken |= conn.in_transaction;
        }
        self.txn = Default::default();
        if let Some(mut conn) = self.binding.take_held() {
            if conn.reset().await.is_err() {
                conn.broken = true;
            }
        }
        let schema = self.state.schema.take();
        self.state = SessionVars::after_handshake(self.charset, schema);
        self.pins.clear();
        self.stmts.clear();
        self.last = LastStatement::default();
        self.last_insert_id_dirty = false;
        self.routing.consistency = self.routing.default_consistency;
        self.tracking = self.ctx.tracking_defaults.settled().await;
        self.diagnostics = Default::default();
        self.multi_statements = self.capabilities & CLIENT_MULTI_STATEMENTS != 0;
        if let Err(e) = self.follow_ignore_space().await {
            tracing::warn!(session = self.id, error = %e, "could not read the global sql_mode after a reset");
        }
    }

    /// COM_CHANGE_USER: re-authenticate (auth switch with a fresh challenge), then start over.
    /// A refused attempt answers 1045 and the connection goes on, reset, as the user it was;
    /// after three refusals every further attempt answers 1047.
    pub async fn change_user(&mut self, data: &[u8]) -> Result<Next, ProxyError> {
        let mut r = Reader::new(data);
        let user = String::from_utf8_lossy(r.null_terminated()?).into_owned();
        let n = usize::from(r.u8()?);
        r.skip(n)?;
        let schema = Some(String::from_utf8_lossy(r.null_terminated_or_eof()).into_owned()).filter(|s| !s.is_empty());
        let charset = if r.remaining() >= 2 {
            r.u16()? as u8
        } else {
            self.charset
        };
        // MariaDB resets the session before it authenticates, whatever the outcome; a refused
        // attempt keeps the user, the database and the character set the session had.
        self.reset_session_state().await;
        if self.failed_change_users >= MAX_FAILED_CHANGE_USERS {
            return Err(ProxyError::UnknownCommand);
        }
        if let Err(e) = self.authenticate_change(&user).await {
            match e {
                ProxyError::AccessDenied { .. } => self.failed_change_users += 1,
                _ => self.fatal = true,
            }
            return Err(e);
        }
        let last_write = self.routing.last_write;
        self.routing = user_routing(&self.gen, &user);
        self.routing.last_write = last_write;
        self.user = user;
        self.charset = charset;
        self.state = SessionVars::after_handshake(charset, None);
        if let Ok(mut u) = self.handle.user.lock() {
            u.clone_from(&self.user);
        }
        self.enter_schema(schema).await?;
        Ok(Next::Continue)
    }

    /// COM_CHANGE_USER's authentication as `user`: an auth switch to mysql_native_password
    /// with the session's scramble, and the client's answer checked.
    async fn authenticate_change(&mut self, user: &str) -> Result<(), ProxyError> {
        let scramble = self.scramble.clone();
        self.client.write_with(|b| {
            tessera_protocol::handshake::encode_auth_switch(b, tessera_protocol::auth::NATIVE_PASSWORD, &scramble)
        });
        self.client.flush().await?;
        let answer = self.client.read_packet().await?;
        let login = Login {
            user,
            host: &self.host,
            scramble: &scramble,
            is_tls: self.client.get_ref().is_tls(),
        };
        let creds = self.gen.users.get(user).cloned();
        let plugin = tessera_protocol::auth::NATIVE_PASSWORD;
        auth::verify(&mut self.client, creds.as_ref(), &login, plugin, answer.to_vec()).await
    }

    /// `KILL [QUERY] id`, where id is a Tessera connection id (CONNECTION_ID() answers it). The
    /// statement the target runs is interrupted on every backend connection it runs on (its own,
    /// each shard's, a pipelined lane's): KILL QUERY gives it MariaDB's 1317; KILL CONNECTION
    /// closes its backend connections and then its client connection, as MariaDB closes its own.
    /// The connection id of `KILL [HARD|SOFT] [CONNECTION|QUERY] <expression>`, evaluated
    /// as the server would (`KILL @id`, `KILL (SELECT ...)`, `KILL CONNECTION_ID()` with this
    /// session's values) on a connection that carries the session's state.
    pub async fn kill_id_of(&mut self, sql: &str) -> Result<u64, ProxyError> {
        let expr = kill_expression(sql, self.state.backslash_escapes())
            .ok_or_else(|| ProxyError::Unsupported("KILL QUERY ID and KILL USER".into()))?;
        if reads_sequences_or_stored_functions(expr, self.state.backslash_escapes()) {
            return Err(ServerError::KillOfStoredCode.into());
        }
        let text = format!("SELECT {expr}");
        let values = self.session_info();
        let text =
            super::rewrite::replace_terms(&text, &values.terms(), self.state.backslash_escapes()).unwrap_or(text);
        let was_held = self.binding.held().is_some();
        let before = self.pins.active();
        let mut conn = self.acquire(Target::primary(0), SyncScope::default()).await?;
        let answer = conn.query_rows(&text).await;
        // The evaluation is not the statement a KILL of this session should interrupt.
        self.handle.set_running(None);
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return Err(self.failed(conn, was_held, e)),
        };
        self.keep_or_release(conn, before);
        let value = answer.1.first().and_then(|r| r.first().cloned().flatten());
        let text = value
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_default();
        // The server reads the value as an integer: 3.7 kills 4, '12abc' kills 12.
        let id = text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| v.round() as u64)
            .or_else(|| text.trim().split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
            .unwrap_or(0);
        Ok(id)
    }

    pub async fn kill(&mut self, id: u64, query_only: bool) -> Result<Next, ProxyError> {
        let target = u32::try_from(id)
            .ok()
            .and_then(|i| self.ctx.sessions.get(i))
            .ok_or(ProxyError::UnknownThread(id))?;
        if target.user() != self.user {
            return Err(ProxyError::NotOwnerOfThread(id));
        }
        if !query_only {
            target.kill();
        }
        target.request_interrupt();
        if let Some(running) = target.running() {
            self.interrupt(&target, &running, query_only).await?;
        }
        if !query_only && target.id == self.id {
            self.fatal = true;
            return Err(ServerError::ConnectionKilled.into());
        }
        self.ok().await
    }

    /// Interrupts a session's running turn on each backend connection it runs on; the first
    /// failure to reach one is the error, once every one was tried.
    pub(super) async fn interrupt(
        &self,
        target: &crate::registry::SessionHandle,
        running: &crate::registry::Running,
        query_only: bool,
    ) -> Result<(), ProxyError> {
        let how = BackendKill::of(running, query_only);
        let mut first_error = None;
        for (server, thread_id) in running.connections() {
            let killed = self.kill_backend(target, (server, thread_id), running.epoch, how).await;
            first_error = first_error.or(killed.err());
        }
        first_error.map_or(Ok(()), Err)
    }

    /// For a statement whose turn was published only after it was sent (a scatter, a pipelined
    /// lane): a KILL that came meanwhile (the count moved from `seen`) found no turn to
    /// interrupt, so the session interrupts its own, as that KILL asked (KILL when the session
    /// is killed, else KILL QUERY).
    pub async fn catch_up_kill(&self, seen: u64) {
        if self.handle.kill_requests() == seen {
            return;
        }
        if let Some(running) = self.handle.running() {
            let query_only = !self.handle.is_killed();
            if let Err(e) = self.interrupt(&self.handle, &running, query_only).await {
                tracing::warn!(session = self.id, error = %e, "a KILL could not reach the statement");
            }
        }
    }

    /// Interrupts what a session runs on one backend connection, by its thread id, and only
    /// while the session still runs that statement turn there. A connection of its own is
    /// marked in its pool first, so that it never goes back to the pool while this KILL can
    /// still reach it (nor after: its state is unknown); see [`crate::pool::Pool::mark_killed`].
    /// A pipelined lane's connection is not marked: a KILL that reaches another session's
    /// statement there makes that statement run again on its own.
    async fn kill_backend(
        &self,
        target: &crate::registry::SessionHandle,
        (server, thread_id): (&crate::backend::ServerRef, u32),
        epoch: u64,
        how: BackendKill,
    ) -> Result<(), ProxyError> {
        let Some(pool) = self.gen.pool_like(server).cloned() else {
            return Ok(());
        };
        let mut conn = pool.connect_unpooled().await?;
        let marks = how != BackendKill::SharedQuery;
        if marks {
            pool.mark_killed(thread_id);
        }
        if !target.still_running(epoch) {
            if marks {
                pool.unmark_killed(thread_id);
            }
            return Ok(());
        }
        tracing::info!(session = target.id, server = %server.address, thread_id, ?how, "KILL");
        // "Unknown thread id" when the statement ended and its connection closed meanwhile.
        conn.simple_command(&format!("{} {thread_id}", how.sql())).await.ok();
        Ok(())
    }
}

/// Refused COM_CHANGE_USER attempts a connection gets, as MariaDB counts them.
const MAX_FAILED_CHANGE_USERS: u8 = 3;

/// What a KILL sends to a backend thread that runs the target's statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BackendKill {
    /// KILL QUERY on a connection of the session's own.
    Query,
    /// KILL CONNECTION: the session's connection and its statement end together.
    Connection,
    /// KILL QUERY on a pipelined lane's connection, which other sessions use too.
    SharedQuery,
}

impl BackendKill {
    fn of(running: &crate::registry::Running, query_only: bool) -> BackendKill {
        match (running.shared, query_only) {
            (true, _) => BackendKill::SharedQuery,
            (false, true) => BackendKill::Query,
            (false, false) => BackendKill::Connection,
        }
    }

    fn sql(self) -> &'static str {
        match self {
            BackendKill::Query | BackendKill::SharedQuery => "KILL QUERY",
            BackendKill::Connection => "KILL CONNECTION",
        }
    }
}

/// A user's routing defaults (splitting on, session consistency for unknown users).
fn user_routing(gen: &Generation, user: &str) -> super::routing::SessionRouting {
    let creds = gen.users.get(user);
    super::routing::SessionRouting::new(
        creds.is_none_or(|c| c.read_write_split),
        creds.map_or(crate::cluster::Consistency::Session, |c| c.read_consistency),
    )
}

/// The expression of `KILL [HARD|SOFT] [CONNECTION|QUERY] <expression>`; None for `KILL QUERY
/// ID n` and `KILL USER u`, which name no connection.
fn kill_expression(sql: &str, backslash_escapes: bool) -> Option<&str> {
    let mut tokens = tessera_sql::Lexer::with_backslash_escapes(sql, backslash_escapes).filter(|t| t.is_significant());
    tokens.next().filter(|t| t.is_word("KILL"))?;
    let mut t = tokens.next()?;
    if t.is_word("HARD") || t.is_word("SOFT") {
        t = tokens.next()?;
    }
    if t.is_word("CONNECTION") || t.is_word("QUERY") {
        t = tokens.next()?;
    }
    if t.is_word("ID") || t.is_word("USER") {
        return None;
    }
    let expr = sql[t.offset..].trim_end().trim_end_matches(';').trim_end();
    (!expr.is_empty()).then_some(expr)
}

/// Whether a KILL expression reads a sequence (`LASTVAL(s)`, `NEXT VALUE FOR s`, ...) or calls
/// a function named with its database (a stored one): MariaDB refuses both in KILL with 1970,
/// and a SELECT of the expression would run them. (A plain subquery is allowed.)
fn reads_sequences_or_stored_functions(expr: &str, backslash_escapes: bool) -> bool {
    let tokens: Vec<_> = tessera_sql::Lexer::with_backslash_escapes(expr, backslash_escapes)
        .filter(|t| t.is_significant())
        .collect();
    tokens.iter().enumerate().any(|(i, t)| {
        let next = tokens.get(i + 1);
        let called = next.is_some_and(|n| n.kind == tessera_sql::TokenKind::LParen);
        let sequence_function = ["LASTVAL", "NEXTVAL", "SETVAL"].iter().any(|f| t.is_word(f));
        let value_for = (t.is_word("NEXT") || t.is_word("PREVIOUS"))
            && next.is_some_and(|n| n.is_word("VALUE"))
            && tokens.get(i + 2).is_some_and(|n| n.is_word("FOR"));
        let qualified_call = called && i > 0 && tokens[i - 1].kind == tessera_sql::TokenKind::Dot;
        (sequence_function && called) || value_for || qualified_call
    })
}

#[cfg(test)]
mod tests {
    use super::{kill_expression, reads_sequences_or_stored_functions};

    #[test]
    fn kill_refuses_sequences_and_stored_functions_as_mariadb() {
        for expr in [
            "(SELECT 1) + LASTVAL(s)",
            "nextval(s)",
            "NEXT VALUE FOR s",
            "test.f1() + 1",
            "`db`.`f`(2)",
        ] {
            assert!(reads_sequences_or_stored_functions(expr, true), "{expr}");
        }
        for expr in ["(SELECT 5)", "@id", "CONNECTION_ID() + 100", "'lastval(s)'", "lastval"] {
            assert!(!reads_sequences_or_stored_functions(expr, true), "{expr}");
        }
    }

    #[test]
    fn kill_expressions_are_found_after_the_options() {
        assert_eq!(kill_expression("KILL @id", true), Some("@id"));
        assert_eq!(
            kill_expression("kill hard query (SELECT 5) ;", true),
            Some("(SELECT 5)")
        );
        assert_eq!(
            kill_expression("KILL CONNECTION CONNECTION_ID()", true),
            Some("CONNECTION_ID()")
        );
        assert_eq!(kill_expression("KILL QUERY ID 7", true), None);
        assert_eq!(kill_expression("KILL USER app", true), None);
    }
}
