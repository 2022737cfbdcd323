//! Prepared statements end to end. Client statement ids belong to Tessera; a backend
//! connection prepares a statement lazily the first time it must run it there and keeps the
//! handle in its bounded cache. Executions go to the backend in the binary protocol with the
//! parameter types always present, long data replayed just before the execution.

use super::execute::{sync_scope, Stmt};
use super::rewrite::{prepared_session_functions, FOUND_ROWS_VAR, ROW_COUNT_VAR};
use super::{Next, Session};
use crate::alloc::in_heap;
use crate::backend::stmt_cache::{Remembered, SqlText};
use crate::error::{ProxyError, ServerError};
use crate::exec::Mode;
use crate::metrics::Metrics;
use crate::state::{SharedVars, SyncScope};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::Arc;
use tessera_protocol::command::{COM_STMT_FETCH, COM_STMT_RESET};
use tessera_protocol::flags::{CLIENT_DEPRECATE_EOF, SERVER_STATUS_LAST_ROW_SENT};
use tessera_protocol::response::encode_eof;
use tessera_protocol::resultset::TYPE_NULL;
use tessera_protocol::stmt::{encode_long_data, ExecuteRequest, PrepareOk, CURSOR_TYPE_READ_ONLY};
use tessera_sql::Classification;

/// What PREPARE decided about a client's statement: made once, shared by every execution.
pub struct PreparedPlan {
    pub sql: SqlText,
    /// The text as UTF-8 (lossy), classified once at prepare time.
    pub text: Arc<str>,
    pub class: Classification,
    pub scope: SyncScope,
    /// Prepared with ROW_COUNT()/FOUND_ROWS() reading hidden variables set before each run.
    pub session_functions: bool,
    pub num_params: u16,
    pub num_columns: u16,
    /// On a sharded schema: the plan, made once at prepare.
    pub sharded: Option<Arc<ShardedStmt>>,
    /// A pure read (see `txn_edges::reads_only`).
    pub reads_only: bool,
    /// The session's system variables at PREPARE: the server keeps the statement as it parsed
    /// it then, whatever `sql_mode` or connection character set the session changes to later.
    pub parsed_under: SharedVars,
}

/// A statement prepared by the client: its plan, and what its executions leave behind.
pub struct ClientStmt {
    pub plan: Arc<PreparedPlan>,
    /// Parameter types from the last execution that sent them.
    pub types: Option<Bytes>,
    /// COM_STMT_SEND_LONG_DATA chunks per parameter, until the next execution.
    pub long_data: BTreeMap<u16, Vec<Bytes>>,
    pub long_data_size: usize,
    /// A pure read that may share a pipelined lane (until an answer there was not usable).
    pub pipelinable: bool,
    /// The backend handle of the last execution, with the generation of the connection's
    /// statement cache it came from: the next execution on that connection skips the lookup
    /// by text (see [`crate::backend::BackendConn::prepare_remembered`]).
    pub backend_memo: Option<Remembered>,
    /// For a client with cached metadata: the column definitions it holds for this statement
    /// (frames numbered from 2), None when not known (see [`crate::exec::Metadata::Cached`]).
    pub columns_known: Option<Bytes>,
    /// The last copy of the session's variables found to read the statement as its PREPARE
    /// did (see `parse_override`): while the session holds that copy, no comparison.
    pub reads_alike_under: SharedVars,
}

/// The variables an execution of `entry` must be prepared under: None when the session's
/// variables `now` read its text as those of its PREPARE did (the usual case, a pointer
/// compare once seen), else the PREPARE's.
fn parse_override(entry: &mut ClientStmt, now: &SharedVars) -> Option<SharedVars> {
    if Arc::ptr_eq(&entry.reads_alike_under, now) {
        return None;
    }
    let plan = &entry.plan;
    let alike = crate::state::parse_alike(now, &plan.parsed_under)
        || crate::state::text_reads_alike(&String::from_utf8_lossy(&plan.sql), now, &plan.parsed_under);
    if alike {
        entry.reads_alike_under = now.clone();
        return None;
    }
    Some(plan.parsed_under.clone())
}

/// A prepared statement's sharded plan.
pub struct ShardedStmt {
    /// The statement as one shard runs it when that differs from the client's text (logical
    /// database qualifiers, as [`crate::route::sharded::DATABASE_MARKER`]); rendered once.
    pub one_sql: Option<String>,
    /// The column definitions PREPARE answered (binary results over several shards use them).
    pub columns: std::sync::OnceLock<Arc<[Bytes]>>,
    pub schema: usize,
    pub plan: Arc<crate::route::sharded::ShardPlan>,
    pub fp: tessera_sql::Fingerprint,
    /// How the session read the prepared text's strings when it prepared it (false:
    /// `NO_BACKSLASH_ESCAPES`), as the server keeps them.
    pub backslash_escapes: bool,
}

/// One execution of a client statement, ready for a backend.
struct Execution<'p> {
    request: ExecuteRequest<'p>,
    /// Shared with the client's statement: no copy per execution.
    types: Bytes,
    long_data: BTreeMap<u16, Vec<Bytes>>,
    plan: Arc<PreparedPlan>,
    /// The text a shard runs instead of the plan's (see [`ShardedStmt::one_sql`]).
    shard_sql: Option<SqlText>,
    pipelinable: bool,
    reads_only: bool,
    backend_memo: Option<Remembered>,
    /// [`ClientStmt::columns_known`] when this execution began.
    columns_known: Option<Bytes>,
    /// The variables the statement was prepared under, when the session's parse variables
    /// differ from them now (see [`crate::backend::BackendConn::prepare_parsed_under`]).
    parsed_under: Option<SharedVars>,
}

impl Execution<'_> {
    /// The text the backend prepares.
    fn backend_sql(&self) -> &SqlText {
        self.shard_sql.as_ref().unwrap_or(&self.plan.sql)
    }
}

/// The client's prepared statements.
#[derive(Default)]
pub struct StatementRegistry {
    /// Ids are Tessera's own (sequential): the fast hasher is safe here.
    stmts: crate::fasthash::FastMap<u32, ClientStmt>,
    next_id: u32,
}

/// Refused: a cursor over a statement prepared under other parse variables (its handle would
/// be one of its own, which fetches do not find).
const CHANGED_PARSE_CURSOR: &str = "a cursor over a prepared statement after the session changed sql_mode or the \
     connection character set since its PREPARE (prepare it again)";

/// Refused: a statement over several shards prepared under other parse variables (its text
/// is run on the shards, which would read it under the session's variables of now).
const CHANGED_PARSE_SCATTER: &str = "a prepared statement over several shards after the session changed sql_mode or \
     the connection character set since its PREPARE (prepare it again)";

/// Statements one client may keep prepared at once (MySQL's default max_prepared_stmt_count).
pub const MAX_CLIENT_STATEMENTS: usize = 16_382;

impl StatementRegistry {
    /// Registers a statement under a fresh id, refusing past [`MAX_CLIENT_STATEMENTS`].
    fn add(&mut self, stmt: ClientStmt) -> Result<u32, ProxyError> {
        if self.stmts.len() >= MAX_CLIENT_STATEMENTS {
            return Err(ServerError::TooManyPreparedStatements(MAX_CLIENT_STATEMENTS).into());
        }
        loop {
            self.next_id = self.next_id.wrapping_add(1).max(1);
            if !self.stmts.contains_key(&self.next_id) {
                self.stmts.insert(self.next_id, stmt);
                return Ok(self.next_id);
            }
        }
    }

    pub fn clear(&mut self) {
        self.stmts.clear();
    }

    pub fn len(&self) -> usize {
        self.stmts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stmts.is_empty()
    }

    /// True when a statement was planned over shards (its plan names a generation's schemas
    /// and groups by index).
    pub fn any_sharded(&self) -> bool {
        self.stmts.values().any(|s| s.plan.sharded.is_some())
    }
}

fn unknown(id: u32, command: &'static str) -> ProxyError {
    ProxyError::UnknownStatement { id, command }
}

impl Session {
    pub async fn stmt_prepare(&mut self, raw: &[u8]) -> Result<Next, ProxyError> {
        let decoded = String::from_utf8_lossy(raw);
        let lossless = matches!(decoded, std::borrow::Cow::Borrowed(_));
        // `db.t.col` on a logical schema is prepared (and planned) as `t.col`.
        let unqualified = lossless.then(|| self.unqualified(&decoded)).flatten();
        let text: &str = unqualified.as_deref().unwrap_or(&decoded);
        let raw: &[u8] = unqualified.as_deref().map_or(raw, str::as_bytes);
        let class = tessera_sql::classify_with(text, self.state.backslash_escapes());
        let session_functions = reads_session_functions(&class) && lossless;
        let mut rewritten = session_functions
            .then(|| prepared_session_functions(text, self.state.backslash_escapes()))
            .flatten();
        if lossless
            && class.flags.contains(tessera_sql::Flags::SESSION_INFO)
            && super::query::answers_session_info(&class.kind)
        {
            // Identity and tracking values are the session's own: spliced into its text.
            let info = self.session_info();
            let base = rewritten.as_deref().unwrap_or(text);
            if let Some(r) = super::rewrite::replace_terms(base, &info.terms(), self.state.backslash_escapes()) {
                rewritten = Some(r);
            }
        }
        if lossless && matches!(class.kind, tessera_sql::StatementKind::Set(_)) {
            // An unscoped `@@name` target would change the connection unreported.
            let base = rewritten.as_deref().unwrap_or(text);
            if let Some(r) = tessera_sql::scope_session_targets(base, self.state.backslash_escapes()) {
                rewritten = Some(r);
            }
        }
        let sql: SqlText = match rewritten {
            Some(rewritten) => Arc::from(rewritten.as_bytes()),
            None => Arc::from(raw),
        };
        let scope = sync_scope(&[Stmt {
            sql: text,
            class: std::borrow::Cow::Borrowed(&class),
        }]);
        let sharded = self.plan_prepared(text, &class).await?;
        let (target, backend_sql) = self.prepare_target(text, &class, sharded.as_deref(), &sql).await?;
        let was_held = self.binding.held().is_some();
        let acquired = self.acquire(target, scope).await;
        self.target_schema = None;
        let mut conn = acquired?;
        let prepared = conn.prepare_current(&backend_sql).await;
        self.handle.set_running(None);
        let stmt = match prepared {
            Ok(s) => s,
            Err(e @ ProxyError::Backend(_)) => {
                // The failed PREPARE's error is the client's diagnostics area now (carried
                // past a transaction's end like any statement's, see `follow_diagnostics`).
                self.pins.keep_new_diagnostics(conn.in_transaction);
                self.diagnostics = super::diagnostics::Diagnostics::OnConnection;
                self.keep_or_release(conn, 0);
                return Err(e);
            }
            Err(e) => return Err(self.failed(conn, was_held, e)),
        };
        self.keep_or_release(conn, 0);
        if let Some(sh) = &sharded {
            let columns = stmt.metadata.get(usize::from(stmt.num_params)..).unwrap_or_default();
            let _ = sh.columns.set(Arc::from(columns));
        }
        self.last.row_count = 0; // as MariaDB: COM_STMT_PREPARE resets ROW_COUNT()
        let reads_only = super::pipelined::pipelinable(&class);
        let pipelinable =
            sharded.is_none() && !session_functions && reads_only && super::pipelined::counts_rows_sent(text, &class);
        let plan = PreparedPlan {
            reads_only,
            sql,
            text: Arc::from(text),
            class,
            scope,
            session_functions,
            num_params: stmt.num_params,
            num_columns: stmt.num_columns,
            sharded,
            parsed_under: self.state.vars_copy().clone(),
        };
        let columns = stmt.metadata.get(usize::from(stmt.num_params)..).unwrap_or_default();
        let entry = ClientStmt {
            reads_alike_under: plan.parsed_under.clone(),
            plan: Arc::new(plan),
            pipelinable,
            types: None,
            long_data: BTreeMap::new(),
            long_data_size: 0,
            backend_memo: None,
            columns_known: self
                .cache_metadata
                .then(|| tessera_protocol::whole::frame_definitions(columns.iter().map(|d| &d[..])).freeze()),
        };
        let id = self.stmts.add(entry)?;
        self.write_prepare_response(id, &stmt).await?;
        Ok(Next::Continue)
    }

    async fn write_prepare_response(
        &mut self,
        id: u32,
        stmt: &crate::backend::stmt_cache::BackendStmt,
    ) -> Result<(), ProxyError> {
        let ok = PrepareOk {
            stmt_id: id,
            num_columns: stmt.num_columns,
            num_params: stmt.num_params,
            warnings: 0,
        };
        self.client.write_with(|b| ok.encode(b));
        let classic_eof = self.capabilities & CLIENT_DEPRECATE_EOF == 0;
        let (params, columns) = stmt
            .metadata
            .split_at(usize::from(stmt.num_params).min(stmt.metadata.len()));
        for block in [params, columns] {
            if block.is_empty() {
                continue;
            }
            for p in block {
                self.client.write_packet(p);
            }
            if classic_eof {
                self.client.write_with(|b| encode_eof(b, 0, 0x0002));
            }
        }
        self.client.flush().await?;
        Ok(())
    }

    pub async fn stmt_execute(&mut self, stmt_id: u32, payload: &[u8]) -> Result<Next, ProxyError> {
        Metrics::inc(&self.ctx.metrics.prepared_executes);
        let run = self.take_execution(stmt_id, payload)?;
        if let tessera_sql::StatementKind::Kill { query, id } = run.plan.class.kind {
            // KILL takes Tessera's connection ids, prepared or not.
            let id = id
                .or_else(|| first_param_as_id(&run))
                .ok_or_else(|| ProxyError::Unsupported("KILL with an id that is not a number".into()))?;
            return in_heap(|| self.kill(id, query)).await;
        }
        if matches!(run.plan.class.kind, tessera_sql::StatementKind::Set(_))
            && super::track_set::assigns_tracking(&run.plan.text)
        {
            // The client's own session tracking, as for a text SET (never the backend's).
            let text = run.plan.text.clone();
            return in_heap(|| self.execute_tracking_set(&text)).await;
        }
        let stmts = [Stmt {
            sql: &run.plan.text,
            class: std::borrow::Cow::Borrowed(&run.plan.class),
        }];
        if let Some(sharded) = run.plan.sharded.clone() {
            return in_heap(|| self.execute_sharded(stmt_id, &run, &stmts, &sharded)).await;
        }
        if self.defer_transaction_edge(&stmts[0]) {
            self.ok().await?;
            return Ok(Next::Continue);
        }
        let opens_cursor = run.request.flags & CURSOR_TYPE_READ_ONLY != 0;
        if opens_cursor && run.parsed_under.is_some() {
            return Err(ProxyError::Unsupported(CHANGED_PARSE_CURSOR.into()));
        }
        // A cursor pins its connection: keep it on the primary, where the session can also write.
        let target = super::routing::pinned_target(self.plan_target([(stmts[0].sql, &*stmts[0].class)]), opens_cursor);
        if let Some(schema) = self.logical_schema() {
            return in_heap(|| self.execute_on_logical_schema(stmt_id, &run, &stmts, target, schema)).await;
        }
        if run.pipelinable && !opens_cursor {
            use super::pipelined::Pipelined;
            let known = run.columns_known.as_deref();
            match self
                .execute_pipelined(target, run.backend_sql(), &run.request, &run.types, (stmt_id, known))
                .await?
            {
                Pipelined::Answered => return Ok(Next::Continue),
                Pipelined::NoLane => {}
                Pipelined::RunAlone => {
                    if let Some(entry) = self.stmts.stmts.get_mut(&stmt_id) {
                        entry.pipelinable = false;
                    }
                }
            }
        }
        let mut exclude = None;
        loop {
            let was_held = self.binding.held().is_some();
            match self.execute_on(target, exclude, stmt_id, &run, &stmts).await {
                Ok(()) => return Ok(Next::Continue),
                Err(e) => exclude = Some(self.retry_or_fail(target, was_held, exclude, e)?),
            }
        }
    }

    /// A session statement on a sharded schema (BEGIN, COMMIT, SET ...): on the shard the
    /// session is on; COMMIT and ROLLBACK reach every shard it holds.
    async fn execute_on_logical_schema(
        &mut self,
        stmt_id: u32,
        run: &Execution<'_>,
        stmts: &[Stmt<'_>],
        target: crate::route::Target,
        (index, topology): (usize, Arc<crate::topology::Topology>),
    ) -> Result<Next, ProxyError> {
        let schema = &topology.schemas[index];
        if !self.pins.in_xa() {
            match run.plan.class.kind {
                tessera_sql::StatementKind::Commit => return self.client_ends_txn(&run.plan.text, true).await,
                tessera_sql::StatementKind::Rollback => return self.client_ends_txn(&run.plan.text, false).await,
                tessera_sql::StatementKind::Begin | tessera_sql::StatementKind::StartTransactionReadOnly => {
                    return self.client_begins_txn(&run.plan.text).await
                }
                _ => {}
            }
        }
        let shard = self.binding.shard().unwrap_or(schema.default_shard);
        if let Err(e) = self.bind_shard(schema, shard).await {
            return Err(self.lost_in_txn(shard, e).await);
        }
        let s = &schema.shards[shard];
        let target = crate::route::Target {
            group: s.group,
            role: target.role,
        };
        self.execute_with_schema(stmt_id, run, stmts, target, (shard, &s.database))
            .await
    }

    /// A prepared SET of the client's own session tracking, as for a text SET (never the
    /// backend's).
    async fn execute_tracking_set(&mut self, text: &str) -> Result<Next, ProxyError> {
        match self.set_tracking(text).await? {
            None => {
                self.last.row_count = 0;
                self.ok().await
            }
            Some(rest) => self.query_text(rest.as_bytes(), false).await,
        }
    }

    /// One attempt at an execution on the target's server (prepared there first if needed).
    async fn execute_on(
        &mut self,
        target: crate::route::Target,
        exclude: Option<usize>,
        stmt_id: u32,
        run: &Execution<'_>,
        stmts: &[Stmt<'_>],
    ) -> Result<(), ProxyError> {
        self.statement_reads_only = run.reads_only && !run.plan.session_functions;
        let (mut conn, was_held) = self.acquire_avoiding(target, run.plan.scope, exclude).await?;
        if run.plan.session_functions {
            if let Err(e) = conn.simple_command(&self.session_function_values()).await {
                self.handle.set_running(None);
                return Err(self.failed(conn, was_held, e));
            }
        }
        let mut memo = run.backend_memo;
        let prepared = match &run.parsed_under {
            Some(vars) => {
                memo = None;
                conn.prepare_parsed_under(run.backend_sql(), vars).await
            }
            None => conn.prepare_remembered(run.backend_sql(), &mut memo).await,
        };
        let backend_id = match prepared {
            Ok(id) => id,
            Err(e @ ProxyError::Backend(_)) => {
                self.handle.set_running(None);
                self.keep_or_release(conn, 0);
                return Err(e);
            }
            Err(e) => return Err(self.failed(conn, was_held, e)),
        };
        if !was_held && super::diagnostics::reads_area(&stmts[0].class) {
            if let Err(e) = self.restore_diagnostics(&mut conn).await {
                return Err(self.failed(conn, was_held, e));
            }
        }
        for (param, chunks) in &run.long_data {
            for chunk in chunks {
                conn.begin_command(|b| encode_long_data(b, backend_id, *param, chunk));
            }
        }
        let types = conn.types_to_send(memo.as_ref(), &run.types);
        conn.begin_command(|b| {
            run.request.encode_for_backend(b, backend_id, types);
        });
        if run.parsed_under.is_some() {
            conn.close_later(backend_id);
        } else if memo != run.backend_memo {
            // Remembered only for the client statement's own text (not a shard's rewrite).
            if let Some(entry) = self
                .stmts
                .stmts
                .get_mut(&stmt_id)
                .filter(|e| Arc::ptr_eq(&e.plan.sql, run.backend_sql()))
            {
                entry.backend_memo = memo;
            }
        }
        let pipeline_last_insert_id = self.reads_last_insert_id_behind(stmts, was_held);
        if pipeline_last_insert_id {
            conn.queue_last_insert_id_query();
        }
        let forwarded = self
            .forward_known(&mut conn, Mode::Binary, run.columns_known.as_deref())
            .await;
        let mut outcome = match forwarded {
            Ok(o) => o,
            Err(e) => {
                // Definitions may have reached the client before the failure.
                self.columns_now_held(stmt_id, None);
                return Err(self.failed(conn, was_held, e));
            }
        };
        if let Some(sent) = outcome.columns_sent.take() {
            self.columns_now_held(stmt_id, Some(sent));
        }
        if outcome.error.is_some() {
            // The server may not hold the types sent with a failed execution: resend them.
            if let Some(m) = &memo {
                conn.stmts.forget_types(m);
            }
        }
        if pipeline_last_insert_id {
            self.read_pipelined_last_insert_id(&mut conn, &mut outcome).await;
        }
        if outcome.cursor_opened {
            self.pins.open_cursor(stmt_id);
        }
        self.finish(conn, &outcome, stmts).await;
        Ok(())
    }

    /// Records the column definitions the client holds for a statement after an execution
    /// sent them (None: not known, the next execution sends them).
    pub fn columns_now_held(&mut self, stmt_id: u32, columns: Option<Bytes>) {
        if let Some(entry) = self.stmts.stmts.get_mut(&stmt_id) {
            entry.columns_known = columns;
        }
    }

    /// Everything one execution needs from the client's statement: the parsed request, the
    /// parameter types (remembered from an earlier execution when the client omits them) and
    /// the long data sent since the last execution (which it consumes).
    fn take_execution<'p>(&mut self, stmt_id: u32, payload: &'p [u8]) -> Result<Execution<'p>, ProxyError> {
        let max_long = self.gen.config.server.max_allowed_packet;
        let entry = self
            .stmts
            .stmts
            .get_mut(&stmt_id)
            .ok_or_else(|| unknown(stmt_id, "mysqld_stmt_execute"))?;
        let request = ExecuteRequest::parse(payload, entry.plan.num_params)?;
        if let Some(t) = request.types {
            // Most clients send the same types with every execution: copied when they change.
            if entry.types.as_deref() != Some(t) {
                entry.types = Some(Bytes::copy_from_slice(t));
            }
        }
        let types = match (&entry.types, entry.plan.num_params) {
            (_, 0) => Bytes::new(),
            (Some(t), _) => t.clone(),
            // Clients may omit types when every parameter is NULL (Connector/J does).
            (None, n) if all_null(request.null_bitmap, n) => Bytes::from([TYPE_NULL, 0].repeat(usize::from(n))),
            // As the server answers an execution that never sent its parameters' types.
            (None, _) => return Err(ServerError::IncorrectArguments("mysqld_stmt_execute").into()),
        };
        let long_data = std::mem::take(&mut entry.long_data);
        let too_long = std::mem::take(&mut entry.long_data_size) > max_long;
        if too_long {
            return Err(ProxyError::PacketTooLarge);
        }
        // A statement on a sharded schema may answer from a merge, which sends its definitions
        // without recording them: such a statement never skips them.
        if entry.plan.sharded.is_some() {
            entry.columns_known = None;
        }
        let parsed_under = parse_override(entry, self.state.vars_copy());
        Ok(Execution {
            columns_known: entry.columns_known.clone(),
            // A lane's connection prepares under its own variables.
            pipelinable: entry.pipelinable && long_data.is_empty() && parsed_under.is_none(),
            parsed_under,
            reads_only: entry.plan.reads_only,
            backend_memo: entry.backend_memo,
            request,
            types,
            long_data,
            plan: entry.plan.clone(),
            shard_sql: None,
        })
    }

    /// The sharded plan of a statement prepared on a logical schema (made once, here).
    async fn plan_prepared(
        &mut self,
        text: &str,
        class: &Classification,
    ) -> Result<Option<Arc<ShardedStmt>>, ProxyError> {
        let Some((schema, topology)) = self.logical_schema() else {
            return Ok(None);
        };
        if !Self::is_sharded_kind(&class.kind) {
            return Ok(None);
        }
        let backslash_escapes = self.state.backslash_escapes();
        let tables = self.schema_tables(&topology.schemas[schema]).await?;
        let (fp, plan) = crate::route::sharded::routed::planned(
            text,
            &topology.schemas[schema],
            &tables,
            &self.gen.plans,
            backslash_escapes,
        );
        if let crate::route::sharded::ShardPlan::Reject(m) = &*plan {
            return Err(ProxyError::NotSharded(m.clone()));
        }
        let one_sql = plan.one_shard_sql(text, &fp.literals).filter(|one| one != text);
        Ok(Some(Arc::new(ShardedStmt {
            one_sql,
            columns: Default::default(),
            schema,
            plan,
            fp,
            backslash_escapes,
        })))
    }

    /// Where a PREPARE runs (a logical schema's: the session's shard, else the default shard)
    /// and the SQL the backend prepares there.
    async fn prepare_target(
        &mut self,
        text: &str,
        class: &Classification,
        sharded: Option<&ShardedStmt>,
        sql: &SqlText,
    ) -> Result<(crate::route::Target, SqlText), ProxyError> {
        let Some((index, topology)) = self.logical_schema() else {
            return Ok((self.plan_target([(text, class)]), sql.clone()));
        };
        let schema = &topology.schemas[index];
        let shard = self.binding.shard().unwrap_or(schema.default_shard);
        self.bind_shard_idle(shard);
        let s = &schema.shards[shard];
        self.target_schema = Some(s.database.clone());
        let role = self.plan_target([(text, class)]).role;
        let target = crate::route::Target { group: s.group, role };
        let backend_sql = match sharded.and_then(|p| p.plan.one_shard_sql(text, &p.fp.literals)) {
            Some(one) if one != text => {
                let q = crate::state::quote_ident(&s.database);
                Arc::from(one.replace(crate::route::sharded::DATABASE_MARKER, &q).as_bytes())
            }
            _ => sql.clone(),
        };
        Ok((target, backend_sql))
    }

    /// An execution on a sharded schema: one shard runs the prepared statement as usual;
    /// several run it as text with the parameters inlined, merged into binary rows.
    async fn execute_sharded(
        &mut self,
        stmt_id: u32,
        run: &Execution<'_>,
        stmts: &[Stmt<'_>],
        sharded: &ShardedStmt,
    ) -> Result<Next, ProxyError> {
        let params = super::params::decode(run.request.null_bitmap, &run.types, run.request.values, &run.long_data)
            .ok_or(ProxyError::Client(tessera_protocol::ProtocolError::Malformed(
                "COM_STMT_EXECUTE parameters",
            )))?;
        let keys: Vec<_> = params.into_iter().map(|p| p.key).collect();
        let topology = self.gen.topology.clone();
        let schema = &topology.schemas[sharded.schema];
        let values = crate::route::sharded::values::Values {
            sql: &run.plan.text,
            literals: &sharded.fp.literals,
            params: &keys,
            backslash_escapes: sharded.backslash_escapes,
        };
        let shards = sharded.plan.shards_for(schema, &values)?;
        let [shard] = shards.as_slice() else {
            if run.parsed_under.is_some() {
                return Err(ProxyError::Unsupported(CHANGED_PARSE_SCATTER.into()));
            }
            let params = super::params::decode(run.request.null_bitmap, &run.types, run.request.values, &run.long_data)
                .unwrap_or_default();
            let text = super::params::inline(&run.plan.text, &params, self.state.backslash_escapes());
            let columns = sharded.columns.get().cloned().unwrap_or_else(|| Arc::from(Vec::new()));
            return self
                .run_sharded_as(&text, &stmts[0], sharded.schema, Some(columns))
                .await;
        };
        self.check_client_xa_shard(*shard)?;
        if let Err(e) = self.bind_shard(schema, *shard).await {
            return Err(self.lost_in_txn(*shard, e).await);
        }
        let s = &schema.shards[*shard];
        let role = self.plan_target([(stmts[0].sql, &*stmts[0].class)]).role;
        let target = crate::route::Target {
            group: s.group,
            role: if matches!(sharded.plan.as_ref(), crate::route::sharded::ShardPlan::Read { .. }) {
                role
            } else {
                crate::route::Role::Primary
            },
        };
        let sql = match &sharded.one_sql {
            Some(one) => {
                let q = crate::state::quote_ident(&s.database);
                Arc::from(one.replace(crate::route::sharded::DATABASE_MARKER, &q).as_bytes())
            }
            None => run.plan.sql.clone(),
        };
        let sql = match self.cross_shard_lock_bound(&run.plan.class) {
            Some(prefix) => {
                let mut text = prefix.into_bytes();
                text.extend_from_slice(&sql);
                Arc::from(text)
            }
            None => sql,
        };
        let local = Execution {
            request: run.request.clone(),
            types: run.types.clone(),
            long_data: run.long_data.clone(),
            plan: run.plan.clone(),
            shard_sql: Some(sql),
            pipelinable: false,
            reads_only: false,
            // The shard's text, not the client statement's: nothing remembered applies.
            backend_memo: None,
            columns_known: run.columns_known.clone(),
            parsed_under: run.parsed_under.clone(),
        };
        self.execute_with_schema(stmt_id, &local, stmts, target, (*shard, &s.database))
            .await
    }

    /// An execution on `target` with `database` selected (a shard's), retried once like reads.
    async fn execute_with_schema(
        &mut self,
        stmt_id: u32,
        run: &Execution<'_>,
        stmts: &[Stmt<'_>],
        target: crate::route::Target,
        shard: (usize, &str),
    ) -> Result<Next, ProxyError> {
        let (shard, database) = shard;
        let mut exclude = None;
        loop {
            self.target_schema = Some(database.to_string());
            let was_held = self.binding.held().is_some();
            self.last_error = None;
            let result = self.execute_on(target, exclude, stmt_id, run, stmts).await;
            self.target_schema = None;
            match result {
                Ok(()) => {
                    let error = self.last_error;
                    self.after_shard_statement(shard, &run.plan.class, error).await?;
                    return Ok(Next::Continue);
                }
                Err(e) => match self.retry_or_fail(target, was_held, exclude, e) {
                    Ok(server) => exclude = Some(server),
                    Err(e) => return Err(self.lost_in_txn(shard, e).await),
                },
            }
        }
    }

    /// SET of the hidden variables that stand for ROW_COUNT() and FOUND_ROWS().
    fn session_function_values(&self) -> String {
        let found_rows = match self.pins.expects_server_found_rows() {
            true => "FOUND_ROWS()".to_string(),
            false => self.last.found_rows.to_string(),
        };
        format!(
            "SET {ROW_COUNT_VAR} = {}, {FOUND_ROWS_VAR} = {found_rows}",
            self.last.row_count
        )
    }

    pub fn stmt_long_data(&mut self, stmt_id: u32, param: u16, data: &[u8]) -> Result<Next, ProxyError> {
        // No response, even for unknown statements (the error surfaces at execution).
        if let Some(entry) = self.stmts.stmts.get_mut(&stmt_id) {
            entry.long_data_size += data.len();
            entry
                .long_data
                .entry(param)
                .or_default()
                .push(Bytes::copy_from_slice(data));
        }
        Ok(Next::Continue)
    }

    pub async fn stmt_close(&mut self, stmt_id: u32) -> Result<Next, ProxyError> {
        // No response. The backend handle stays cached for other executions of the same text.
        if self.stmts.stmts.remove(&stmt_id).is_some() && self.pins.has_cursor(stmt_id) {
            self.close_backend_cursor(stmt_id).await;
        }
        Ok(Next::Continue)
    }

    pub async fn stmt_reset(&mut self, stmt_id: u32) -> Result<Next, ProxyError> {
        let entry = self
            .stmts
            .stmts
            .get_mut(&stmt_id)
            .ok_or_else(|| unknown(stmt_id, "mysqld_stmt_reset"))?;
        entry.long_data.clear();
        entry.long_data_size = 0;
        if self.pins.has_cursor(stmt_id) {
            self.close_backend_cursor(stmt_id).await;
        }
        self.last.row_count = 0;
        self.ok().await
    }

    /// Closes an open cursor on the held connection (COM_STMT_RESET there) and unpins it.
    async fn close_backend_cursor(&mut self, stmt_id: u32) {
        self.pins.close_cursor(stmt_id);
        let sql = self.stmts.stmts.get(&stmt_id).map(|s| s.plan.sql.clone());
        let Some(mut conn) = self.binding.take_held() else {
            return;
        };
        let backend_id = sql.and_then(|s| {
            conn.stmts.forget_types_of(&s);
            conn.stmts.get(&s)
        });
        if let Some(id) = backend_id.map(|s| s.id) {
            conn.begin_command(|b| {
                b.extend_from_slice(&[COM_STMT_RESET]);
                b.extend_from_slice(&id.to_le_bytes());
            });
            if conn.flush().await.is_err() || conn.read_ok().await.is_err() {
                conn.broken = true;
            }
        }
        self.keep_or_release(conn, 0);
    }

    pub async fn stmt_fetch(&mut self, stmt_id: u32, rows: u32, _payload: &[u8]) -> Result<Next, ProxyError> {
        let sql = self
            .stmts
            .stmts
            .get(&stmt_id)
            .map(|s| s.plan.sql.clone())
            .ok_or_else(|| unknown(stmt_id, "mysqld_stmt_fetch"))?;
        let no_cursor = || ProxyError::from(ServerError::NoOpenCursor(stmt_id));
        if !self.pins.has_cursor(stmt_id) {
            return Err(no_cursor());
        }
        let mut conn = self.binding.take_held().ok_or_else(no_cursor)?;
        let Some(backend) = conn.stmts.get(&sql) else {
            self.binding.set_held(Some(conn));
            return Err(no_cursor());
        };
        conn.begin_command(|b| {
            b.extend_from_slice(&[COM_STMT_FETCH]);
            b.extend_from_slice(&backend.id.to_le_bytes());
            b.extend_from_slice(&rows.to_le_bytes());
        });
        let outcome = match self.forward(&mut conn, Mode::Fetch).await {
            Ok(o) => o,
            Err(e) => return Err(self.failed(conn, true, e)),
        };
        if outcome.error.is_some() || outcome.status & SERVER_STATUS_LAST_ROW_SENT != 0 {
            self.pins.close_cursor(stmt_id);
        }
        conn.in_transaction = outcome.in_transaction();
        self.keep_or_release(conn, 0);
        Ok(Next::Continue)
    }
}

/// The first bound parameter of an execution as a connection id (an integer, or a string or
/// decimal holding one); None when it is NULL or not a number.
fn first_param_as_id(run: &Execution<'_>) -> Option<u64> {
    if run.request.null_bitmap.first().is_some_and(|b| b & 1 != 0) {
        return None;
    }
    let kind = *run.types.first()?;
    let unsigned = run.types.get(1).is_some_and(|f| f & 0x80 != 0);
    let v = run.request.values;
    let int = |n: usize| -> Option<u64> {
        let mut buf = [0u8; 8];
        buf[..n].copy_from_slice(v.get(..n)?);
        let raw = u64::from_le_bytes(buf);
        let shift = 64 - 8 * n as u32;
        let signed = ((raw << shift) as i64) >> shift;
        if unsigned {
            Some(raw)
        } else {
            u64::try_from(signed).ok()
        }
    };
    match kind {
        0x01 => int(1),
        0x02 | 0x0d => int(2),
        0x03 | 0x09 => int(4),
        0x08 => int(8),
        // Doubles and floats (Node's mysql2 binds numbers as DOUBLE): a whole number is an id.
        0x05 => whole(f64::from_le_bytes(v.get(..8)?.try_into().ok()?)),
        0x04 => whole(f64::from(f32::from_le_bytes(v.get(..4)?.try_into().ok()?))),
        _ => {
            let mut r = tessera_protocol::codec::Reader::new(v);
            let text = r.lenenc_bytes().ok()?;
            std::str::from_utf8(text).ok()?.trim().parse().ok()
        }
    }
}

/// A non-negative whole number as an id.
fn whole(x: f64) -> Option<u64> {
    (x >= 0.0 && x.fract() == 0.0 && x <= u32::MAX as f64).then_some(x as u64)
}

fn reads_session_functions(class: &Classification) -> bool {
    use tessera_sql::Flags;
    class.flags.contains(Flags::ROW_COUNT) || class.flags.contains(Flags::FOUND_ROWS)
}

/// True when the NULL bitmap marks all `n` parameters NULL.
fn all_null(bitmap: &[u8], n: u16) -> bool {
    (0..usize::from(n)).all(|i| bitmap.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0))
}
