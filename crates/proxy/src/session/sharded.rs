//! Commands on a sharded schema: `route::sharded::routed` gives the whole route of a
//! statement (its cached plan and the step with its shards), and this runs the step: one
//! shard through the ordinary forwarding path (its response passes through), the other steps
//! through the executor in `exec::sharded` (scatter reads, atomic writes, DDL, LOAD DATA),
//! with the session's transaction begun and ended around them.
//!
//! The session binds one backend connection per shard (see `session::binding`): the current
//! shard's, and the others an open transaction or a pin keeps.

use super::execute::Stmt;
use super::{Next, Session};
use crate::alloc::in_heap;
use crate::error::ProxyError;
use crate::exec::sharded::{for_shard, unsupported};
use crate::pool::PooledConn;
use crate::route;
use crate::route::sharded::routed::{split_insert, Reading, Routed, Step};
use crate::route::sharded::values::Values;
use crate::route::sharded::ShardPlan;
use crate::route::{Role, Target};
use crate::topology::ShardedSchema;
use std::sync::Arc;
use tessera_sql::StatementKind;

impl Session {
    /// The logical schema the session's default database names, if it is one.
    pub fn logical_schema(&self) -> Option<(usize, Arc<crate::topology::Topology>)> {
        let name = self.state.schema.as_deref()?;
        let index = self.gen.topology.schemas.iter().position(|s| s.name == name)?;
        Some((index, self.gen.topology.clone()))
    }

    /// `sql` with its `db.t.col` references written `t.col` when the session is on the
    /// logical schema `db` (see [`tessera_sql::drop_database_qualifier`]); None otherwise.
    pub fn unqualified(&self, sql: &str) -> Option<String> {
        let name = self.state.schema.as_deref()?;
        self.gen.topology.schema(name)?;
        tessera_sql::drop_database_qualifier(sql, name, self.state.backslash_escapes())
    }

    /// Whether a statement kind is planned by the sharding planner.
    pub fn is_sharded_kind(kind: &StatementKind) -> bool {
        matches!(
            kind,
            StatementKind::Select
                | StatementKind::Insert
                | StatementKind::Replace
                | StatementKind::Update
                | StatementKind::Delete
                | StatementKind::Ddl
                | StatementKind::DropTable(_)
        )
    }

    /// Runs one statement on the session's sharded schema.
    pub async fn run_sharded(&mut self, sql: &str, stmt: &Stmt<'_>, schema_index: usize) -> Result<Next, ProxyError> {
        self.run_sharded_as(sql, stmt, schema_index, None).await
    }

    /// [`Session::run_sharded`]; `binary`: the client executed a prepared statement (its
    /// parameters are inlined in `sql`) and takes binary rows, described by the column
    /// definitions its PREPARE answered (the names of `?` expressions are the prepared text's).
    pub async fn run_sharded_as(
        &mut self,
        sql: &str,
        stmt: &Stmt<'_>,
        schema_index: usize,
        binary: Option<Arc<[bytes::Bytes]>>,
    ) -> Result<Next, ProxyError> {
        let topology = self.gen.topology.clone();
        let schema = &topology.schemas[schema_index];
        let tables = self.schema_tables(schema).await?;
        let reading = Reading {
            backslash_escapes: self.state.backslash_escapes(),
            binary: binary.is_some(),
        };
        let routed = route::sharded::routed::route(sql, schema, &tables, &self.gen.plans, reading)?;
        self.run_routed(schema, &routed, stmt, binary, &tables).await
    }

    /// Executes a routed statement's step.
    async fn run_routed(
        &mut self,
        schema: &ShardedSchema,
        routed: &Routed<'_>,
        stmt: &Stmt<'_>,
        binary: Option<Arc<[bytes::Bytes]>>,
        tables: &crate::catalog::SchemaTables,
    ) -> Result<Next, ProxyError> {
        match &routed.step {
            Step::Refuse(m) => Err(self.refusal(schema, &routed.sql, m, tables).await),
            Step::One { shard, sql, write } => {
                let role = match write {
                    true => Role::Primary,
                    false => self.plan_target([(stmt.sql, &*stmt.class)]).role,
                };
                self.on_shard(schema, *shard, role, sql, stmt).await
            }
            Step::Scatter { shards, sql } => self.scatter_read(schema, shards, sql, routed, binary).await,
            Step::Write { per_shard, replicated } => self.atomic_write(schema, per_shard, None, *replicated).await,
            Step::InsertGenerated => self.insert_generated(schema, routed).await,
            Step::Ddl { shards, sql } => self.ddl_on_shards(schema, shards, sql).await,
            Step::CreateDatabase { if_not_exists } => {
                crate::exec::sharded::ddl::create_databases(self, schema, *if_not_exists).await?;
                self.ok_with(1, 0, 0).await
            }
        }
    }

    /// COM_QUERY on a session whose default database is a logical schema.
    pub async fn query_sharded(&mut self, sql: &str, stmts: &[Stmt<'_>], index: usize) -> Result<Next, ProxyError> {
        let [stmt] = stmts else {
            return Err(unsupported("several statements in one query on a sharded schema"));
        };
        let topology = self.gen.topology.clone();
        let schema = &topology.schemas[index];
        if let Some(replaced) = logical_database_calls(sql, &schema.name, self.state.backslash_escapes()) {
            let stmts = [Stmt {
                sql: &replaced,
                class: std::borrow::Cow::Borrowed(&*stmt.class),
            }];
            return in_heap(|| self.query_sharded(&replaced, &stmts, index)).await;
        }
        if super::metadata::is_metadata(sql, &stmt.class) {
            return self.metadata_query(schema, sql).await;
        }
        match self.restore_statement(schema, sql, &stmt.class.kind).await? {
            super::restore::Restore::Answered(next) => return Ok(next),
            super::restore::Restore::Rewritten(text) => {
                let stmts = [Stmt {
                    sql: &text,
                    class: std::borrow::Cow::Borrowed(&*stmt.class),
                }];
                return in_heap(|| self.query_sharded(&text, &stmts, index)).await;
            }
            super::restore::Restore::Unchanged => {}
        }
        match &stmt.class.kind {
            StatementKind::Use(db) => return self.use_schema(db).await,
            // A DROP of the session's own temporary tables runs on its shard only.
            StatementKind::DropTable(names) if names.iter().all(|n| self.pins.has_temp_table(n)) => {}
            StatementKind::Ddl | StatementKind::DropTable(_) if self.txn.shards().is_open() => {
                // DDL commits the open transaction first, as on one server.
                self.end_sharded_txn(true).await?;
                return self.run_sharded(sql, stmt, index).await;
            }
            k if Self::is_sharded_kind(k) => return self.run_sharded(sql, stmt, index).await,
            StatementKind::Begin | StatementKind::StartTransactionReadOnly if !self.pins.in_xa() => {
                return self.client_begins_txn(sql).await
            }
            StatementKind::Set(_) if self.txn.shards().is_open() && super::shard_txn::sets_autocommit_on(sql) => {
                // Switching autocommit on commits the open transaction, as on one server.
                self.end_sharded_txn(true).await?;
            }
            StatementKind::Commit if !self.pins.in_xa() => return self.client_ends_txn(sql, true).await,
            StatementKind::Rollback if !self.pins.in_xa() => return self.client_ends_txn(sql, false).await,
            StatementKind::Xa => {
                if let Some(next) = self.client_xa_statement(schema, sql).await? {
                    return Ok(next);
                }
                let shard = self.txn.xa_shard().unwrap_or(schema.default_shard);
                let role = Role::Primary;
                return self.on_shard(schema, shard, role, sql, stmt).await;
            }
            StatementKind::LoadData { .. } => {
                return match load_target(sql, self.state.backslash_escapes()).map(|t| schema.table(&t)) {
                    Some(crate::topology::TablePlacement::Single(s)) => {
                        self.on_shard(schema, s, Role::Primary, sql, stmt).await
                    }
                    Some(crate::topology::TablePlacement::Sharded(t)) => {
                        let (key, function) = (t.key.clone(), t.function.clone());
                        self.load_sharded(schema, sql, &key, &function).await
                    }
                    _ => Err(unsupported("LOAD DATA into a broadcast table (load with INSERT)")),
                };
            }
            _ => {}
        }
        let shard = self.binding.shard().unwrap_or(schema.default_shard);
        let role = self.plan_target([(stmt.sql, &*stmt.class)]).role;
        self.on_shard(schema, shard, role, sql, stmt).await
    }

    /// `USE db` / COM_INIT_DB: a logical schema is the session's own state (no backend has a
    /// database of that name); another database is selected on a backend as before.
    pub async fn use_schema(&mut self, db: &str) -> Result<Next, ProxyError> {
        let db = tessera_sql::unquote(db).into_owned();
        if self.gen.topology.schema(&db).is_some() {
            self.state.schema = Some(db);
            return self.ok_with(0, 0, 0).await;
        }
        let sql = format!("USE {}", crate::state::quote_ident(&db));
        self.target_schema = None;
        let stmts = [Stmt {
            sql: &sql,
            class: std::borrow::Cow::Owned(tessera_sql::classify(&sql)),
        }];
        self.binding.leave_shard();
        let group = 0;
        let result = self.run_on_target(Target::primary(group), sql.as_bytes(), &stmts).await;
        result.map(|()| Next::Continue)
    }

    /// One shard: the ordinary path (pass-through, pins, transactions) on that shard's group
    /// and database.
    async fn on_shard(
        &mut self,
        schema: &ShardedSchema,
        shard: usize,
        role: Role,
        sql: &str,
        stmt: &Stmt<'_>,
    ) -> Result<Next, ProxyError> {
        let s = &schema.shards[shard];
        self.check_client_xa_shard(shard)?;
        if let Err(e) = self.bind_shard(schema, shard).await {
            return Err(self.lost_in_txn(shard, e).await);
        }
        self.target_schema = Some(s.database.clone());
        let target = Target { group: s.group, role };
        let sql = for_shard(sql, schema, shard);
        let sql = match self.cross_shard_lock_bound(&stmt.class) {
            Some(prefix) => std::borrow::Cow::Owned(format!("{prefix}{sql}")),
            None => sql,
        };
        let stmts = [Stmt {
            sql: &sql,
            class: std::borrow::Cow::Borrowed(&*stmt.class),
        }];
        self.last_error = None;
        let result = self.run_on_target(target, sql.as_bytes(), &stmts).await;
        self.target_schema = None;
        match result {
            Ok(()) => {
                let error = self.last_error;
                self.after_shard_statement(shard, &stmt.class, error).await?;
                Ok(Next::Continue)
            }
            Err(e) => Err(self.lost_in_txn(shard, e).await),
        }
    }

    /// `SET STATEMENT innodb_lock_wait_timeout = n FOR ` for a statement that may wait for row
    /// locks while the session's transaction holds another shard: MariaDB cannot see a deadlock
    /// across shards, so the wait is bounded (server.cross_shard_lock_wait_s).
    pub fn cross_shard_lock_bound(&self, class: &tessera_sql::Classification) -> Option<String> {
        let locks = class.kind.writes() || class.flags.contains(tessera_sql::Flags::LOCKING_READ);
        if !locks || !self.binding.has_others() {
            return None;
        }
        let bound = self.gen.config.server.cross_shard_lock_wait_s.max(1);
        Some(format!("SET STATEMENT innodb_lock_wait_timeout = {bound} FOR "))
    }

    /// Makes `shard` the current one (its kept connection the held one, another shard's kept
    /// among the others while it is needed), and
    /// opens the client's transaction there when it has one open elsewhere.
    pub async fn bind_shard(&mut self, schema: &ShardedSchema, shard: usize) -> Result<(), ProxyError> {
        self.bind_shard_idle(shard);
        if !self.branch_needed() {
            return Ok(());
        }
        // A connection kept for this shard outside the transaction (a pin) joins it first.
        let conn = match self.binding.take_held() {
            Some(mut conn) => {
                if !conn.in_transaction {
                    self.open_branch(schema, shard, &mut conn).await?;
                }
                conn
            }
            None => self.shard_conn(schema, shard).await?,
        };
        self.binding.set_held(Some(conn));
        Ok(())
    }

    /// Makes `shard` the current one without opening a transaction there (PREPARE).
    pub fn bind_shard_idle(&mut self, shard: usize) {
        if self.binding.shard() == Some(shard) {
            return;
        }
        // The current connection is kept while it holds a transaction or long-lived session
        // state; else given back.
        let pinned = self.pins.is_pinned() && !self.pins.only_short_lived();
        self.binding.switch_to(shard, |conn| conn.in_transaction || pinned);
    }

    /// Whether a shard touched now joins a transaction: one is open, the client's XA waits for
    /// its shard, or autocommit is off (every statement is in a transaction).
    pub fn branch_needed(&self) -> bool {
        self.sharded_transaction_open() || self.txn.xa_starting().is_some() || !self.autocommit()
    }

    /// Whether the session has a transaction open on a sharded schema (begun, or holding a
    /// shard, also implicitly with autocommit off).
    pub fn sharded_transaction_open(&self) -> bool {
        self.txn.shards().is_open()
            || self.binding.others().any(|(_, c)| c.in_transaction)
            || self.binding.held().is_some_and(|c| c.in_transaction)
    }

    /// A write on several shards in one step: inside the client's transaction under a
    /// savepoint, else in a transaction per shard committed only when every shard succeeded.
    /// `insert_id`: the first generated key, reported as the OK packet's insert id and
    /// LAST_INSERT_ID() (as MariaDB reports a multi-row insert's first).
    async fn atomic_write(
        &mut self,
        schema: &ShardedSchema,
        per_shard: &[(usize, String)],
        insert_id: Option<i128>,
        replicated: bool,
    ) -> Result<Next, ProxyError> {
        let implicit = !self.sharded_transaction_open() && self.autocommit();
        if implicit {
            // An autocommit statement on several shards is a transaction of its own.
            self.txn.shards_mut().pending_begin = Some("START TRANSACTION".into());
        }
        let result = crate::exec::sharded::write::each_shard(self, schema, per_shard, replicated, implicit).await;
        let mut sum = match (result, implicit) {
            (Ok(sum), true) => {
                self.end_sharded_txn(true).await?;
                sum
            }
            (Ok(sum), false) => sum,
            (Err(e), true) => {
                self.abort_sharded_txn().await;
                return Err(e);
            }
            (Err(e), false) => return Err(e),
        };
        self.last.row_count = sum.affected as i64;
        if let Some(id) = insert_id.and_then(|i| u64::try_from(i).ok()) {
            sum.insert_id = id;
        }
        if sum.insert_id != 0 {
            self.state.last_insert_id = sum.insert_id;
        }
        self.ok_with(sum.affected, sum.insert_id, sum.warnings).await
    }

    /// An INSERT whose AUTO_INCREMENT shard key Tessera generates: the keys first, then the
    /// rows split by them, written atomically.
    async fn insert_generated(&mut self, schema: &ShardedSchema, routed: &Routed<'_>) -> Result<Next, ProxyError> {
        let ShardPlan::Insert(p) = &*routed.plan else {
            return Err(ProxyError::Sharding(
                "a generated key for a statement that is not an INSERT".into(),
            ));
        };
        let key = p.generated_key.as_deref().unwrap_or_default();
        let source = crate::exec::sharded::write::KeySource {
            sequences: &self.ctx.sequences,
            sequence: &p.sequence,
            table: p.sequence.rsplit('.').next().unwrap_or_default(),
            key,
        };
        let generated = crate::exec::sharded::write::generate_keys(self, schema, &source, p.rows.len()).await?;
        let values = Values {
            sql: &routed.sql,
            literals: &routed.fp.literals,
            params: &[],
            backslash_escapes: self.state.backslash_escapes(),
        };
        let per_shard = split_insert(p, schema, &routed.sql, &routed.fp, &values, &generated)?;
        self.atomic_write(schema, &per_shard, generated.first().copied(), false)
            .await
    }

    /// A connection for `shard` with the session's state (the one held for it, or a new one).
    pub async fn shard_conn(&mut self, schema: &ShardedSchema, shard: usize) -> Result<PooledConn, ProxyError> {
        let kept = match self.binding.shard() == Some(shard) {
            true => self.binding.take_held(),
            false => None,
        };
        let mut conn = match kept.or_else(|| self.binding.take_other(shard)) {
            Some(c) => c,
            None => {
                self.target_schema = Some(schema.shards[shard].database.clone());
                let result = self.acquire_fresh(Target::primary(schema.shards[shard].group)).await;
                self.target_schema = None;
                result?
            }
        };
        if self.branch_needed() && !conn.in_transaction {
            self.open_branch(schema, shard, &mut conn).await?;
        }
        Ok(conn)
    }

    /// A checkout for `target` that leaves the connection held for another shard alone.
    async fn acquire_fresh(&mut self, target: Target) -> Result<PooledConn, ProxyError> {
        let held = self.binding.take_held();
        let result = self.acquire(target, crate::state::SyncScope::default()).await;
        self.binding.set_held(held);
        result
    }

    /// Keeps a shard connection while a transaction is open on it, else returns it.
    pub fn park_shard(&mut self, shard: usize, conn: PooledConn, keep: bool) {
        if conn.broken {
            return;
        }
        if keep || conn.in_transaction || conn.pinned_state {
            if self.binding.shard() == Some(shard) && self.binding.held().is_none() {
                self.binding.set_held(Some(conn));
            } else {
                self.binding.keep_other(shard, conn);
            }
        }
    }

    /// DDL on `shards`: the table metadata is read again afterwards.
    pub(super) async fn ddl_on_shards(
        &mut self,
        schema: &ShardedSchema,
        shards: &[usize],
        sql: &str,
    ) -> Result<Next, ProxyError> {
        let result = crate::exec::sharded::ddl::on_shards(self, schema, shards, sql).await;
        self.ctx.schema_changes.record();
        result?;
        self.ok_with(0, 0, 0).await
    }

    /// The error for a statement Tessera refuses: MariaDB's own when the statement is wrong
    /// for one server too (a syntax error, a UNION of different widths), found by preparing it
    /// on the default shard; else the refusal naming what is not supported.
    async fn refusal(
        &mut self,
        schema: &ShardedSchema,
        sql: &str,
        message: &str,
        tables: &crate::catalog::SchemaTables,
    ) -> ProxyError {
        let shard = schema.default_shard;
        let Ok(mut conn) = self.shard_conn(schema, shard).await else {
            return unsupported(message);
        };
        let fp = tessera_sql::fingerprint(sql);
        let renamed = crate::route::sharded::renamed(sql, &fp, schema, tables);
        let text: std::sync::Arc<[u8]> = std::sync::Arc::from(for_shard(&renamed, schema, shard).as_bytes());
        let verdict = conn.prepare(&text).await;
        conn.forget_statement(&text);
        let in_txn = self.sharded_transaction_open();
        self.park_shard(shard, conn, in_txn);
        match verdict {
            Err(e @ ProxyError::Backend(_)) => e,
            _ => unsupported(message),
        }
    }

    /// A connection of Tessera's own to a shard's primary (no default database, outside the
    /// client's transaction): sequences, the shard databases, table columns.
    pub async fn side_conn(&self, shard: &crate::topology::Shard) -> Result<PooledConn, ProxyError> {
        let group = self.gen.group_checked(shard.group)?.clone();
        group
            .primary()
            .pool_for(&self.user)
            .checkout(self.flavour(), true)
            .await
    }

    /// An OK packet with these counts.
    pub async fn ok_with(&mut self, affected: u64, insert_id: u64, warnings: u16) -> Result<Next, ProxyError> {
        let sum = crate::exec::sharded::Summed {
            affected,
            warnings,
            insert_id,
        };
        crate::exec::sharded::write_ok(self, sum, Vec::new()).await?;
        Ok(Next::Continue)
    }
}

/// The table of `LOAD DATA ... INTO TABLE t` (the file name before it read as the session
/// reads strings).
fn load_target(sql: &str, backslash_escapes: bool) -> Option<String> {
    let tokens: Vec<_> = tessera_sql::Lexer::with_backslash_escapes(sql, backslash_escapes)
        .filter(|t| t.is_significant())
        .collect();
    let at = tokens
        .windows(2)
        .position(|w| w[0].is_word("INTO") && w[1].is_word("TABLE"))?;
    let mut name = tokens.get(at + 2)?;
    if tokens
        .get(at + 3)
        .is_some_and(|t| t.kind == tessera_sql::TokenKind::Dot)
    {
        name = tokens.get(at + 4)?;
    }
    Some(tessera_sql::unquote(name.text).into_owned())
}

/// `DATABASE()` / `SCHEMA()` answer the logical schema (shards have databases of their own).
fn logical_database_calls(sql: &str, schema: &str, backslash_escapes: bool) -> Option<String> {
    let has = |needle: &[u8]| {
        sql.as_bytes()
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
    };
    if !(has(b"database") || has(b"schema")) {
        return None;
    }
    let literal = crate::state::quote_string(schema);
    use super::rewrite::Term;
    let terms = [Term::Call("DATABASE", &literal), Term::Call("SCHEMA", &literal)];
    super::rewrite::replace_terms(sql, &terms, backslash_escapes)
}

impl Session {
    /// A read on several shards: the merge resolved against the columns the first shard
    /// described, under the session's `group_concat_max_len` and the merge memory cap.
    async fn scatter_read(
        &mut self,
        schema: &ShardedSchema,
        shards: &[usize],
        sql: &str,
        routed: &Routed<'_>,
        binary: Option<Arc<[bytes::Bytes]>>,
    ) -> Result<Next, ProxyError> {
        let ShardPlan::Read { many: Ok(scatter), .. } = &*routed.plan else {
            return Err(ProxyError::Sharding("a scatter for a plan that is not a read".into()));
        };
        let max_len = self
            .state
            .vars()
            .get("group_concat_max_len")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_048_576);
        let memory_cap = self.gen.config.server.merge_memory_cap;
        let resolve = |columns: &[tessera_protocol::resultset::ColumnDefinition]| {
            let mut spec = route::sharded::resolve::resolve_merge(scatter, columns, max_len)?;
            spec.memory_cap = memory_cap;
            Ok(spec)
        };
        let read = crate::exec::sharded::read::ScatterRead {
            schema,
            shards,
            sql,
            resolve,
            deadline: self.gen.config.server.scatter_deadline(),
            binary,
            extended_metadata: self.extended_metadata,
        };
        let found = crate::exec::sharded::read::scatter(self, read).await?;
        self.last.found_rows = found;
        self.last.row_count = -1;
        Ok(Next::Continue)
    }
}

impl Session {
    /// `EXPLAIN ROUTE <statement>`: the plan as rows (see [`crate::route::sharded::explain`]).
    pub async fn explain_route(&mut self, statement: &str) -> Result<Next, ProxyError> {
        use crate::route::sharded::explain;
        use tessera_protocol::resultset::{write_text_result_with, ColumnDefinition};
        let group_names: Vec<String> = self.gen.config.groups.iter().map(|g| g.name.clone()).collect();
        let rows: Vec<explain::Row> = match self.logical_schema() {
            Some((index, topology)) => {
                let schema = &topology.schemas[index];
                let unqualified = self.unqualified(statement);
                let statement = unqualified.as_deref().unwrap_or(statement);
                let class = tessera_sql::classify(statement);
                if Self::is_sharded_kind(&class.kind) {
                    let escapes = self.state.backslash_escapes();
                    let tables = self.schema_tables(schema).await?;
                    let (fp, plan) =
                        route::sharded::routed::planned(statement, schema, &tables, &self.gen.plans, escapes);
                    explain::rows(&plan, schema, &group_names, statement, &fp, escapes)
                } else {
                    let shard = self.binding.shard().unwrap_or(schema.default_shard);
                    vec![[
                        Some("route".into()),
                        Some(shard.to_string()),
                        group_names.get(schema.shards[shard].group).cloned(),
                        Some(schema.shards[shard].database.clone()),
                        Some("a session statement: the shard the session is on (the default shard when none)".into()),
                    ]]
                }
            }
            None => {
                let class = tessera_sql::classify(statement);
                let target = self.plan_target([(statement, &class)]);
                let plan = crate::route::Plan::Direct(target);
                vec![[
                    Some("route".into()),
                    None,
                    group_names.get(target.group).cloned(),
                    self.state.schema.clone(),
                    Some(plan.describe(&group_names)),
                ]]
            }
        };
        let columns: Vec<ColumnDefinition> = explain::COLUMNS.iter().map(|c| ColumnDefinition::text(c)).collect();
        let status = self.status_flags();
        let rows: Vec<Vec<Option<String>>> = rows.into_iter().map(Vec::from).collect();
        let dialect = self.metadata_dialect();
        write_text_result_with(&mut self.client, &columns, &rows, status, self.capabilities, dialect);
        self.client.flush().await?;
        Ok(Next::Continue)
    }
}

impl Session {
    /// LOAD DATA LOCAL INFILE into a sharded table: the client's file is cut into records,
    /// each sent to the LOAD DATA of its key's shard; all shards commit or none does.
    async fn load_sharded(
        &mut self,
        schema: &ShardedSchema,
        sql: &str,
        key: &str,
        function: &crate::route::shard_fn::ShardFunction,
    ) -> Result<Next, ProxyError> {
        use crate::exec::sharded::load::{load, ShardLoad};
        use crate::exec::sharded::load_file::{file_name, LoadSpec};
        if self.capabilities & tessera_protocol::flags::CLIENT_LOCAL_FILES == 0
            || !sql.to_ascii_uppercase().contains("LOCAL")
        {
            return Err(unsupported(
                "LOAD DATA INFILE of a server file into a sharded table (use LOCAL)",
            ));
        }
        let escapes = self.state.backslash_escapes();
        let spec = LoadSpec::parse(sql, escapes).map_err(|m| unsupported(&m))?;
        let columns = match &spec.columns {
            Some(c) => c.clone(),
            None => {
                let tables = self.schema_tables(schema).await?;
                let columns = tables.columns(&spec.table).unwrap_or_default();
                columns.iter().map(|c| c.name.clone()).collect()
            }
        };
        let key_field = columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(key))
            .ok_or_else(|| unsupported("LOAD DATA that does not read the shard key from the file"))?;
        let file_name = file_name(sql, escapes).ok_or_else(|| unsupported("LOAD DATA without a file name"))?;
        let implicit = !self.sharded_transaction_open() && self.autocommit();
        if implicit {
            // An autocommit LOAD DATA is a transaction of its own across the shards.
            self.txn.shards_mut().pending_begin = Some("START TRANSACTION".into());
        }
        let job = ShardLoad {
            schema,
            spec: &spec,
            key_field,
            function,
            file_name,
            implicit,
        };
        let total = load(self, job).await?;
        if implicit {
            self.end_sharded_txn(true).await?;
        }
        self.last.row_count = total.affected as i64;
        let sum = crate::exec::sharded::Summed {
            affected: total.affected,
            warnings: total.warnings.min(u64::from(u16::MAX)) as u16,
            insert_id: 0,
        };
        crate::exec::sharded::write_ok(self, sum, total.message().into_bytes()).await?;
        Ok(Next::Continue)
    }
}
