//! COM_QUERY: classify cheaply, answer what Tessera owns (KILL, protected variables, options
//! the client did not negotiate), rewrite session-bound functions, then run on a backend.

use super::execute::{sync_scope, Stmt};
use super::rewrite::{map_lock_holders, replace_session_functions, replace_terms};
use super::{Next, Session};
use crate::alloc::in_heap;
use crate::backend::conn::OwnTail;
use crate::error::{ProxyError, ServerError};
use crate::exec::Mode;
use crate::exec::Outcome;
use crate::metrics::Metrics;
use crate::pool::PooledConn;
use crate::route::Plan;
use std::borrow::Cow;
use tessera_protocol::command::COM_QUERY;
use tessera_protocol::flags::CLIENT_LOCAL_FILES;
use tessera_sql::{classify_with, split_statements_with, Flags, StatementKind};

impl Session {
    pub async fn query(&mut self, raw: &[u8]) -> Result<Next, ProxyError> {
        Metrics::inc(&self.ctx.metrics.queries);
        self.query_text(raw, true).await
    }

    /// A COM_QUERY's text; `own_tracking` when a SET of `session_track_*` may still be taken
    /// apart here (false for what is left of one, which must not be taken apart again).
    pub(super) async fn query_text(&mut self, raw: &[u8], own_tracking: bool) -> Result<Next, ProxyError> {
        let text = String::from_utf8_lossy(raw);
        let escapes = self.state.backslash_escapes();
        let first = classify_with(&text, escapes);
        let stmts: Vec<Stmt<'_>> = if first.flags.contains(Flags::MULTI_STATEMENT) && !is_compound(&text, &first) {
            split_statements_with(&text, escapes)
                .into_iter()
                .map(|sql| Stmt {
                    sql,
                    class: std::borrow::Cow::Owned(classify_with(sql, escapes)),
                })
                .collect()
        } else {
            vec![Stmt {
                sql: &text,
                class: std::borrow::Cow::Owned(first),
            }]
        };
        if let Some(s) = single(&stmts, is_set).filter(|s| own_tracking && super::track_set::assigns_tracking(s.sql)) {
            return in_heap(|| self.query_tracking_set(s.sql)).await;
        }
        let statement_for = |k: &StatementKind| *k == StatementKind::Set(tessera_sql::SetKind::StatementFor);
        if let Some(s) = single(&stmts, statement_for).filter(|_| own_tracking) {
            if let Some(next) = in_heap(|| self.query_with_statement_tracking(s.sql)).await? {
                return Ok(next);
            }
        }
        let describe = |k: &StatementKind| *k == StatementKind::Describe;
        if let Some(statement) =
            single(&stmts, describe).and_then(|s| crate::route::sharded::explain::explained_statement(s.sql))
        {
            return in_heap(|| self.explain_route(statement)).await;
        }
        if let Some(read) = single(&stmts, |_| true)
            .filter(|s| s.class.flags.contains(Flags::PROCESSLIST))
            .and_then(|s| self.process_list_read(s.sql))
        {
            let sql = stmts[0].sql.to_string();
            return in_heap(|| self.answer_process_list(&sql, read)).await;
        }
        if let Some(next) = self.answer_locally(&stmts).await? {
            return Ok(next);
        }
        if own_tracking
            && stmts
                .iter()
                .any(|s| is_set(&s.class.kind) && super::track_set::assigns_tracking(s.sql))
        {
            return in_heap(|| self.query_with_tracking_sets(&text, &stmts)).await;
        }
        if let [s] = stmts.as_slice() {
            if self.defer_transaction_edge(s) {
                self.ok().await?;
                return Ok(Next::Continue);
            }
        }
        let rewritten = self.rewrite(&text, matches!(text, Cow::Borrowed(_)), &stmts);
        let sql = rewritten.as_deref().unwrap_or(&text);
        if !self.gen.topology.schemas.is_empty() && matches!(text, Cow::Borrowed(_)) {
            // Cold for configurations without logical schemas: its future lives on the heap.
            if let Some(next) = in_heap(|| self.logical_schema_from_outside(sql, &stmts)).await? {
                return Ok(next);
            }
        }
        let target = match self.plan_command(stmts.iter().map(|s| (s.sql, &*s.class))) {
            Plan::Direct(target) => target,
            Plan::Sharded { schema } => {
                if matches!(text, Cow::Owned(_)) {
                    // The planner reads text: bytes that are not UTF-8 (a raw binary string
                    // literal) would reach the shards changed. Refused, never corrupted.
                    return Err(ProxyError::NotSharded(
                        "a statement that is not valid UTF-8 (a raw binary string) on a sharded schema: \
                         write binary values as hex literals (mariadb-dump --hex-blob)"
                            .into(),
                    ));
                }
                let sql = rewritten.as_deref().unwrap_or(&text);
                return in_heap(|| self.query_sharded(sql, &stmts, schema)).await;
            }
        };
        if let ([s], None, Cow::Borrowed(_)) = (stmts.as_slice(), &rewritten, &text) {
            if self.query_pipelined(target, s.sql, &s.class).await? == super::pipelined::Pipelined::Answered {
                return Ok(Next::Continue);
            }
        }
        let sql: &[u8] = rewritten.as_deref().map_or(raw, str::as_bytes);
        let mut exclude = None;
        loop {
            let was_held = self.binding.held().is_some();
            match self.run_query(target, exclude, sql, &stmts).await {
                Ok(()) => return Ok(Next::Continue),
                Err(e) => exclude = Some(self.retry_or_fail(target, was_held, exclude, e)?),
            }
        }
    }

    /// How a statement reads the process list, which Tessera answers with its own sessions.
    fn process_list_read(&self, sql: &str) -> Option<super::processlist::ProcessListRead> {
        let in_schema = self
            .state
            .schema
            .as_deref()
            .is_some_and(|d| d.eq_ignore_ascii_case("information_schema"));
        super::processlist::process_list_read(sql, in_schema, self.state.backslash_escapes())
    }

    /// A SET of the client's own session tracking (never the backend's), then the rest of it.
    async fn query_tracking_set(&mut self, sql: &str) -> Result<Next, ProxyError> {
        match self.set_tracking(sql).await? {
            None => {
                // As the server's own OK for a SET: no rows, ROW_COUNT() 0.
                self.last.row_count = 0;
                self.ok().await
            }
            Some(rest) => self.query_text(rest.as_bytes(), false).await,
        }
    }

    /// A multi-statement query with SETs of the client's own tracking (see
    /// [`Session::tracking_sets_replaced`]): the session takes the new tracking once the server
    /// ran the first of them.
    async fn query_with_tracking_sets(&mut self, text: &str, stmts: &[Stmt<'_>]) -> Result<Next, ProxyError> {
        let (query, later) = self.tracking_sets_replaced(text, stmts).await?;
        self.tracking_later = later;
        let result = self.query_text(query.as_bytes(), false).await;
        if let Some(later) = self.tracking_later.take().filter(|l| l.reached) {
            self.tracking = later.tracking;
        }
        result
    }

    /// `SET STATEMENT session_track_x = v FOR <statement>`: the statement runs (without those
    /// assignments) with the client's tracking as they set it, then the tracking is as before.
    /// None when the statement sets no tracking.
    async fn query_with_statement_tracking(&mut self, sql: &str) -> Result<Option<Next>, ProxyError> {
        let Some((tracking, statement)) = self.statement_tracking(sql).await? else {
            return Ok(None);
        };
        let before = std::mem::replace(&mut self.tracking, tracking);
        let result = self.query_text(statement.as_bytes(), false).await;
        self.tracking = before;
        result.map(Some)
    }

    /// Runs a COM_QUERY on a target (with the one retry of a failed read).
    pub async fn run_on_target(
        &mut self,
        target: crate::route::Target,
        sql: &[u8],
        stmts: &[Stmt<'_>],
    ) -> Result<(), ProxyError> {
        let mut exclude = None;
        loop {
            let was_held = self.binding.held().is_some();
            match self.run_query(target, exclude, sql, stmts).await {
                Ok(()) => return Ok(()),
                Err(e) => exclude = Some(self.retry_or_fail(target, was_held, exclude, e)?),
            }
        }
    }

    /// One attempt at running a COM_QUERY on the target's server.
    async fn run_query(
        &mut self,
        target: crate::route::Target,
        exclude: Option<usize>,
        sql: &[u8],
        stmts: &[Stmt<'_>],
    ) -> Result<(), ProxyError> {
        self.statement_reads_only = self.in_transaction() && stmts.iter().all(|s| super::txn_edges::reads_only(s));
        let (mut conn, was_held) = self.acquire_avoiding(target, sync_scope(stmts), exclude).await?;
        if !was_held && stmts.iter().any(|s| super::diagnostics::reads_area(&s.class)) {
            if let Err(e) = self.restore_diagnostics(&mut conn).await {
                return Err(self.failed(conn, was_held, e));
            }
        }
        // A `SET GLOBAL session_track_*`: sessions that start before its new defaults are
        // read back (after the client has its OK) wait for them.
        let ctx = stmts.iter().any(sets_tracking_defaults).then(|| self.ctx.clone());
        let _changing = ctx.as_ref().map(|c| c.tracking_defaults.changing());
        let read_last_insert_id = self.reads_last_insert_id_behind(stmts, was_held);
        // Appended to the insert, the read comes back in the same write as its answer.
        let appended = read_last_insert_id && !was_held && appendable(sql, conn.state.backslash_escapes());
        conn.begin_command(|b| {
            b.extend_from_slice(&[COM_QUERY]);
            b.extend_from_slice(sql);
            if appended {
                b.extend_from_slice(b";");
                b.extend_from_slice(crate::backend::conn::LAST_INSERT_ID_SQL.as_bytes());
            }
        });
        if appended {
            conn.own_tail = OwnTail::Appended;
        } else if read_last_insert_id {
            conn.queue_last_insert_id_query();
        }
        let mut outcome = match self.forward(&mut conn, Mode::Text).await {
            Ok(o) => o,
            Err(e) => {
                // An appended statement's result may still be on its way.
                conn.broken |= conn.own_tail != OwnTail::None;
                return Err(self.failed(conn, was_held, e));
            }
        };
        if read_last_insert_id {
            self.read_insert_last_insert_id(&mut conn, &mut outcome).await;
        }
        self.finish(conn, &outcome, stmts).await;
        Ok(())
    }

    /// Reads the LAST_INSERT_ID() read queued with an insert: appended to its query or sent
    /// behind it.
    async fn read_insert_last_insert_id(&mut self, conn: &mut PooledConn, outcome: &mut Outcome) {
        match std::mem::take(&mut conn.own_tail) {
            OwnTail::Due | OwnTail::None => self.read_pipelined_last_insert_id(conn, outcome).await,
            // The insert failed, so the server skipped the read. The connection may hold 0 for
            // the insert rather than the session's value: read it now (a round trip).
            OwnTail::Appended => self.learn_last_insert_id(conn).await,
        }
    }

    /// Statements Tessera answers or refuses itself; None when the backend must run them.
    async fn answer_locally(&mut self, stmts: &[Stmt<'_>]) -> Result<Option<Next>, ProxyError> {
        if stmts.len() > 1 && !self.multi_statements {
            return Err(ServerError::MultiStatementsOff.into());
        }
        if let Some(result) = single(stmts, is_set).and_then(|s| self.set_consistency(s.sql)) {
            result?;
            return self.ok().await.map(Some);
        }
        for s in stmts {
            match &s.class.kind {
                StatementKind::LoadData { local: true } if self.capabilities & CLIENT_LOCAL_FILES == 0 => {
                    return Err(ServerError::LocalInfileDisabled.into());
                }
                StatementKind::Kill { query, id } if stmts.len() == 1 => {
                    let id = match id {
                        Some(id) => *id,
                        None => in_heap(|| self.kill_id_of(stmts[0].sql)).await?,
                    };
                    return in_heap(|| self.kill(id, *query)).await.map(Some);
                }
                _ => {}
            }
        }
        match stmts {
            [s] if s.class.kind == StatementKind::Diagnostics => self.answer_statement_diagnostics(s.sql).await,
            [s] => self.answer_last_insert_id(s).await,
            _ => Ok(None),
        }
    }

    /// Splices in the values Tessera answers for this session (see [`super::rewrite`]).
    /// ROW_COUNT()/FOUND_ROWS() only in the first statement: later statements of a
    /// multi-statement query run on the same connection, where the server's values are right.
    fn rewrite(&self, text: &str, lossless: bool, stmts: &[Stmt<'_>]) -> Option<String> {
        let first = stmts.first()?;
        // Never in DDL or stored program bodies (`DEFAULT ROW_COUNT()` must stay as written).
        let counters = (first.class.flags.contains(Flags::ROW_COUNT) || first.class.flags.contains(Flags::FOUND_ROWS))
            && answers_session_info(&first.class.kind);
        let info = stmts
            .iter()
            .any(|s| s.class.flags.contains(Flags::SESSION_INFO) && answers_session_info(&s.class.kind));
        let scoped = stmts
            .iter()
            .any(|s| assigns_session(&s.class.kind) && s.sql.contains("@@"));
        // Not in DDL either: `CREATE TABLE IS_USED_LOCK (...)` names a table.
        let locks = stmts
            .iter()
            .any(|s| s.class.flags.contains(Flags::IS_USED_LOCK) && answers_session_info(&s.class.kind));
        if !(counters || info || scoped || locks) || !lossless {
            return None;
        }
        let mut out = None;
        if counters {
            let end = (first.sql.as_ptr() as usize - text.as_ptr() as usize + first.sql.len()).min(text.len());
            let (head, tail) = text.split_at(end);
            let found_rows = (!self.pins.expects_server_found_rows()).then_some(self.last.found_rows);
            let escapes = self.state.backslash_escapes();
            out = replace_session_functions(head, self.last.row_count, found_rows, escapes).map(|h| h + tail);
        }
        if info {
            let values = self.session_info();
            let current = out.as_deref().unwrap_or(text);
            if let Some(replaced) = replace_terms(current, &values.terms(), self.state.backslash_escapes()) {
                out = Some(replaced);
            }
        }
        if scoped {
            let current = out.as_deref().unwrap_or(text);
            if let Some(replaced) = scope_set_targets(current, self.state.backslash_escapes()) {
                out = Some(replaced);
            }
        }
        if locks {
            let current = out.as_deref().unwrap_or(text);
            let holders = self.ctx.sessions.user_lock_holders(&self.lock_server_address());
            if let Some(replaced) = map_lock_holders(current, &holders, self.state.backslash_escapes()) {
                out = Some(replaced);
            }
        }
        out
    }

    /// The server a user-lock function runs on: the held connection's, else the primary of
    /// the default group (where statements of an unpinned session go).
    fn lock_server_address(&self) -> String {
        match self.binding.held() {
            Some(conn) => conn.server.address.clone(),
            None => self.gen.default_group().primary().address.clone(),
        }
    }
}

/// A SET of session variables (perhaps with user variables).
fn assigns_session(kind: &StatementKind) -> bool {
    use tessera_sql::SetKind;
    matches!(kind, StatementKind::Set(SetKind::Session | SetKind::Mixed))
}

/// `text` with each SET statement's unscoped `@@name` targets spelled `@@session.name` (see
/// [`tessera_sql::scope_session_targets`]): MariaDB does not report their change through
/// session tracking, and the connection would go back to the pool with it unknown.
pub(crate) fn scope_set_targets(text: &str, escapes: bool) -> Option<String> {
    let mut out = String::new();
    let mut at = 0;
    for stmt in split_statements_with(text, escapes) {
        let Some(scoped) = tessera_sql::scope_session_targets(stmt, escapes) else {
            continue;
        };
        let start = stmt.as_ptr() as usize - text.as_ptr() as usize;
        out.push_str(&text[at..start]);
        out.push_str(&scoped);
        at = start + stmt.len();
    }
    if at == 0 {
        return None;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// Statements whose identity functions Tessera answers. Not DDL, GRANT or SET PASSWORD, where
/// `CURRENT_USER` names an account (DEFINER = CURRENT_USER, ... FOR CURRENT_USER).
pub(crate) fn answers_session_info(kind: &StatementKind) -> bool {
    use tessera_sql::SetKind;
    match kind {
        StatementKind::Set(k) => !matches!(k, SetKind::Password | SetKind::Role),
        k => matches!(
            k,
            StatementKind::Select
                | StatementKind::Insert
                | StatementKind::Update
                | StatementKind::Delete
                | StatementKind::Replace
                | StatementKind::Do
                | StatementKind::Call
        ),
    }
}

/// Whether the client's query may have Tessera's read of LAST_INSERT_ID() appended (see
/// [`tessera_sql::ends_in_parenthesis`]); long queries are left alone, so that the server's
/// packet size limit answers exactly as it would without it.
fn appendable(sql: &[u8], backslash_escapes: bool) -> bool {
    const LONGEST: usize = 64 * 1024;
    sql.len() <= LONGEST
        && std::str::from_utf8(sql).is_ok_and(|s| tessera_sql::ends_in_parenthesis(s, backslash_escapes))
}

/// The query's statement when it is its only one and of a kind `is` accepts.
fn single<'s, 'a>(stmts: &'s [Stmt<'a>], is: impl Fn(&StatementKind) -> bool) -> Option<&'s Stmt<'a>> {
    match stmts {
        [s] if is(&s.class.kind) => Some(s),
        _ => None,
    }
}

fn is_set(kind: &StatementKind) -> bool {
    matches!(kind, StatementKind::Set(_))
}

/// A stored-program definition or an anonymous block: its inner `;` do not separate statements.
fn is_compound(sql: &str, first: &tessera_sql::Classification) -> bool {
    let creates_program = matches!(first.kind, StatementKind::Ddl)
        && ["PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"]
            .iter()
            .any(|w| sql.split_whitespace().take(6).any(|t| t.eq_ignore_ascii_case(w)));
    creates_program || tessera_sql::starts_with_keyword(sql, "BEGIN NOT ATOMIC")
}

/// Whether `s` assigns the servers' tracking defaults (`SET GLOBAL session_track_*`).
fn sets_tracking_defaults(s: &Stmt<'_>) -> bool {
    matches!(s.class.kind, StatementKind::Set(_)) && super::track_set::assigns_global_tracking(s.sql)
}
