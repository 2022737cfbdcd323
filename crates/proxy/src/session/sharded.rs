//! Statements on a sharded schema: plan (cached by fingerprint), resolve the shards from the
//! statement's key values, then run: one shard through the ordinary forwarding path (its
//! response passes through), several shards as a scatter with a merge, writes on several
//! shards atomically (all or none), DDL on every shard with per-shard failures named.
//!
//! The session binds one backend connection per shard: `held` is the current shard's,
//! `shard_held` keeps the others of an open transaction.

use super::execute::Stmt;
use super::{Next, Session};
use crate::alloc::in_heap;
use crate::error::{ProxyError, ServerError};
use crate::exec::merge::MergeError;
use crate::pool::PooledConn;
use crate::route::sharded::values::Values;
use crate::route::sharded::{ShardPlan, ShardSet};
use crate::route::{Role, Target};
use crate::topology::ShardedSchema;
use std::sync::Arc;
use tessera_protocol::command::COM_QUERY;
use tessera_protocol::response::OkPacket;
use tessera_sql::{Fingerprint, StatementKind};

/// The result of one statement on one shard, for sums.
#[derive(Default)]
struct Summed {
    affected: u64,
    warnings: u16,
    insert_id: u64,
}

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
        let escapes = self.state.backslash_escapes();
        let unqualified = tessera_sql::drop_database_qualifier(sql, &schema.name, escapes);
        let sql = unqualified.as_deref().unwrap_or(sql);
        let fp = tessera_sql::fingerprint(sql);
        let tables = self.schema_tables(schema).await?;
        let plan = self.gen.plans.get(sql, &fp, schema, escapes, &tables);
        let values = Values {
            sql,
            literals: &fp.literals,
            params: &[],
            backslash_escapes: escapes,
        };
        match &*plan {
            ShardPlan::Reject(m) => Err(self.refusal(schema, sql, m, &tables).await),
            ShardPlan::Read { shards, one, many, .. } => {
                let shards = resolve(shards, schema, &values)?;
                if let ([shard], None) = (shards.as_slice(), &binary) {
                    let role = self.plan_target([(stmt.sql, &*stmt.class)]).role;
                    return self
                        .on_shard(schema, *shard, role, &one.render(sql, &fp.literals), stmt)
                        .await;
                }
                let scatter = match many {
                    Ok(s) => s,
                    Err(m) => return Err(self.refusal(schema, sql, &m.detail(), &tables).await),
                };
                self.scatter_read(schema, &shards, scatter, sql, &fp, binary).await
            }
            ShardPlan::Write {
                shards,
                sql: template,
                one_shard_only,
                replicated,
                ..
            } => {
                let shards = resolve(shards, schema, &values)?;
                let text = template.render(sql, &fp.literals);
                if let [shard] = shards.as_slice() {
                    return self.on_shard(schema, *shard, Role::Primary, &text, stmt).await;
                }
                if let Some(m) = one_shard_only {
                    return Err(unsupported(m));
                }
                let per_shard: Vec<(usize, String)> = shards.into_iter().map(|s| (s, text.clone())).collect();
                self.atomic_write(schema, per_shard, *replicated).await
            }
            ShardPlan::Insert(p) => {
                let generated = match &p.generated_key {
                    Some(key) => self.generate_keys(schema, p, key).await?,
                    None => Vec::new(),
                };
                let per_shard = split_insert(p, schema, sql, &fp, &values, &generated)?;
                if let ([(shard, text)], None) = (per_shard.as_slice(), generated.first()) {
                    return self.on_shard(schema, *shard, Role::Primary, text, stmt).await;
                }
                self.atomic_write_reporting(schema, per_shard, generated.first().copied(), false)
                    .await
            }
            ShardPlan::Ddl {
                shards, sql: template, ..
            } => {
                let text = template.render(sql, &fp.literals);
                self.ddl_on_shards(schema, shards, &text).await
            }
            ShardPlan::CreateDatabase { if_not_exists } => self.create_shard_databases(schema, *if_not_exists).await,
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
            StatementKind::Ddl | StatementKind::DropTable(_) if self.txn.is_open() => {
                // DDL commits the open transaction first, as on one server.
                self.end_sharded_txn(true).await?;
                return self.run_sharded(sql, stmt, index).await;
            }
            k if Self::is_sharded_kind(k) => return self.run_sharded(sql, stmt, index).await,
            StatementKind::Begin | StatementKind::StartTransactionReadOnly if !self.pins.in_xa() => {
                return self.client_begins_txn(sql).await
            }
            StatementKind::Set(_) if self.txn.is_open() && super::shard_txn::sets_autocommit_on(sql) => {
                // Switching autocommit on commits the open transaction, as on one server.
                self.end_sharded_txn(true).await?;
            }
            StatementKind::Commit if !self.pins.in_xa() => return self.client_ends_txn(sql, true).await,
            StatementKind::Rollback if !self.pins.in_xa() => return self.client_ends_txn(sql, false).await,
            StatementKind::Xa => {
                if let Some(next) = self.client_xa_statement(schema, sql).await? {
                    return Ok(next);
                }
                let shard = self.client_xa_shard.unwrap_or(schema.default_shard);
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
        let shard = self.held_shard.unwrap_or(schema.default_shard);
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
        self.held_shard = None;
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
        if !locks || self.shard_held.is_empty() {
            return None;
        }
        let bound = self.gen.config.server.cross_shard_lock_wait_s.max(1);
        Some(format!("SET STATEMENT innodb_lock_wait_timeout = {bound} FOR "))
    }

    /// Makes `held` the connection of `shard` (parking another shard's in `shard_held`), and
    /// opens the client's transaction there when it has one open elsewhere.
    pub async fn bind_shard(&mut self, schema: &ShardedSchema, shard: usize) -> Result<(), ProxyError> {
        self.bind_shard_idle(shard);
        if !self.branch_needed() {
            return Ok(());
        }
        // A connection kept for this shard outside the transaction (a pin) joins it first.
        let conn = match self.held.take() {
            Some(mut conn) => {
                if !conn.in_transaction {
                    self.open_branch(schema, shard, &mut conn).await?;
                }
                conn
            }
            None => self.shard_conn(schema, shard).await?,
        };
        self.held = Some(conn);
        Ok(())
    }

    /// Makes `held` the connection of `shard` without opening a transaction there (PREPARE).
    pub fn bind_shard_idle(&mut self, shard: usize) {
        if self.held_shard == Some(shard) {
            return;
        }
        if let (Some(conn), Some(prev)) = (self.held.take(), self.held_shard) {
            // Kept while it holds a transaction or long-lived session state; else given back.
            if conn.in_transaction || (self.pins.is_pinned() && !self.pins.only_short_lived()) {
                self.shard_held.insert(prev, conn);
            }
        }
        self.held = self.shard_held.remove(&shard);
        self.held_shard = Some(shard);
    }

    /// Whether a shard touched now joins a transaction: one is open, the client's XA waits for
    /// its shard, or autocommit is off (every statement is in a transaction).
    pub fn branch_needed(&self) -> bool {
        self.sharded_transaction_open() || self.client_xa.is_some() || !self.autocommit()
    }

    /// Whether the session has a transaction open on a sharded schema (begun, or holding a
    /// shard, also implicitly with autocommit off).
    pub fn sharded_transaction_open(&self) -> bool {
        self.txn.is_open()
            || self.shard_held.values().any(|c| c.in_transaction)
            || self.held.as_ref().is_some_and(|c| c.in_transaction)
    }

    /// A write on several shards in one step: inside the client's transaction under a
    /// savepoint, else in a transaction per shard committed only when every shard succeeded.
    async fn atomic_write(
        &mut self,
        schema: &ShardedSchema,
        per_shard: Vec<(usize, String)>,
        replicated: bool,
    ) -> Result<Next, ProxyError> {
        self.atomic_write_reporting(schema, per_shard, None, replicated).await
    }

    /// Keys for the rows of an INSERT that leaves its AUTO_INCREMENT shard key out.
    async fn generate_keys(
        &mut self,
        schema: &ShardedSchema,
        p: &crate::route::sharded::write::InsertPlan,
        key: &str,
    ) -> Result<Vec<i128>, ProxyError> {
        let n = p.rows.len();
        if let Some(ids) = self.ctx.sequences.take(&p.sequence, n) {
            return Ok(ids);
        }
        let table = p.sequence.rsplit('.').next().unwrap_or_default().to_string();
        let max_key = self.max_key(schema, &table, key).await?;
        let size = crate::exec::sequence::BLOCK.max(n as i128);
        let s = &schema.shards[schema.default_shard];
        let mut conn = self.side_conn(s).await?;
        let first = crate::exec::sequence::reserve(&mut conn, schema, &p.sequence, size, max_key).await?;
        self.ctx.sequences.store(&p.sequence, first + n as i128, first + size);
        Ok((first..first + n as i128).collect())
    }

    /// The largest key any shard holds (0 when none).
    async fn max_key(&mut self, schema: &ShardedSchema, table: &str, key: &str) -> Result<i128, ProxyError> {
        let mut max = 0i128;
        for shard in &schema.shards {
            let mut conn = self.side_conn(shard).await?;
            let sql = format!(
                "SELECT MAX({}) FROM {}.{}",
                crate::state::quote_ident(key),
                crate::state::quote_ident(&shard.database),
                crate::state::quote_ident(table)
            );
            if let Some(v) = crate::backend::conn::first_number::<i128>(&conn.query_rows(&sql).await?) {
                max = max.max(v);
            }
        }
        Ok(max)
    }

    /// [`Session::atomic_write`]; `insert_id`: the first generated key, reported as the OK
    /// packet's insert id and LAST_INSERT_ID() (as MariaDB reports a multi-row insert's first).
    async fn atomic_write_reporting(
        &mut self,
        schema: &ShardedSchema,
        per_shard: Vec<(usize, String)>,
        insert_id: Option<i128>,
        replicated: bool,
    ) -> Result<Next, ProxyError> {
        let implicit = !self.sharded_transaction_open() && self.autocommit();
        if implicit {
            // An autocommit statement on several shards is a transaction of its own.
            self.txn.pending_begin = Some("START TRANSACTION".into());
        }
        let mut sum = Summed::default();
        let result = self
            .write_each_shard(schema, &per_shard, replicated, implicit, &mut sum)
            .await;
        match (result, implicit) {
            (Ok(()), true) => self.end_sharded_txn(true).await?,
            (Ok(()), false) => {}
            (Err(e), true) => {
                self.abort_sharded_txn().await;
                return Err(e);
            }
            (Err(e), false) => return Err(e),
        }
        self.last.row_count = sum.affected as i64;
        if let Some(id) = insert_id.and_then(|i| u64::try_from(i).ok()) {
            sum.insert_id = id;
        }
        if sum.insert_id != 0 {
            self.state.last_insert_id = sum.insert_id;
        }
        self.ok_with(sum.affected, sum.insert_id, sum.warnings).await
    }

    /// Runs each shard's statement in the session's transaction (inside the client's, under a
    /// savepoint that undoes the statement on every shard when one fails).
    async fn write_each_shard(
        &mut self,
        schema: &ShardedSchema,
        per_shard: &[(usize, String)],
        replicated: bool,
        implicit: bool,
        sum: &mut Summed,
    ) -> Result<(), ProxyError> {
        const SAVEPOINT: &str = "SAVEPOINT tessera_statement";
        let mut done: Vec<usize> = Vec::new();
        for (shard, sql) in per_shard {
            let mut conn = match self.shard_conn(schema, *shard).await {
                Ok(c) => c,
                Err(e) => return Err(self.statement_failed(schema, &done, implicit, e).await),
            };
            let sql = for_shard(sql, schema, *shard);
            let step = async {
                if !implicit {
                    conn.simple_command(SAVEPOINT).await?;
                }
                conn.simple_command(&sql).await
            }
            .await;
            self.txn.wrote.insert(*shard);
            self.park_shard(*shard, conn, true);
            match step {
                Ok(ok) => {
                    // A broadcast table's copies change alike: one shard's counts are the answer.
                    if !replicated || done.is_empty() {
                        sum.affected += ok.affected_rows;
                        sum.warnings = sum.warnings.saturating_add(ok.warnings);
                    }
                    if sum.insert_id == 0 {
                        sum.insert_id = ok.last_insert_id;
                    }
                    done.push(*shard);
                }
                Err(e) => {
                    done.push(*shard);
                    return Err(self.statement_failed(schema, &done, implicit, e).await);
                }
            }
        }
        Ok(())
    }

    /// Undoes a failed statement on several shards: the whole transaction when the failure
    /// ends it (a lost shard, a deadlock, a lock wait), else back to the statement's savepoint.
    async fn statement_failed(
        &mut self,
        schema: &ShardedSchema,
        done: &[usize],
        implicit: bool,
        e: ProxyError,
    ) -> ProxyError {
        let ends_txn = match &e {
            ProxyError::Backend(p) => p.code == 1213 || p.code == 1205,
            _ => true,
        };
        if implicit {
            return e;
        }
        if ends_txn {
            self.abort_sharded_txn().await;
            return match e {
                ProxyError::Backend(_) => e,
                e => ProxyError::TxnRolledBack(format!("a shard was lost during the transaction ({e})")),
            };
        }
        for shard in done {
            if let Ok(mut conn) = self.shard_conn(schema, *shard).await {
                if conn
                    .simple_command("ROLLBACK TO SAVEPOINT tessera_statement")
                    .await
                    .is_err()
                {
                    conn.broken = true;
                }
                self.park_shard(*shard, conn, true);
            }
        }
        e
    }

    /// A connection for `shard` with the session's state (the one held for it, or a new one).
    pub async fn shard_conn(&mut self, schema: &ShardedSchema, shard: usize) -> Result<PooledConn, ProxyError> {
        let kept = match self.held_shard == Some(shard) {
            true => self.held.take(),
            false => None,
        };
        let mut conn = match kept.or_else(|| self.shard_held.remove(&shard)) {
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
        let held = self.held.take();
        let result = self.acquire(target, crate::state::SyncScope::default()).await;
        self.held = held;
        result
    }

    /// Keeps a shard connection while a transaction is open on it, else returns it.
    pub fn park_shard(&mut self, shard: usize, conn: PooledConn, keep: bool) {
        if conn.broken {
            return;
        }
        if keep || conn.in_transaction || conn.pinned_state {
            if self.held_shard == Some(shard) && self.held.is_none() {
                self.held = Some(conn);
            } else {
                self.shard_held.insert(shard, conn);
            }
        }
    }

    pub(super) async fn ddl_on_shards(
        &mut self,
        schema: &ShardedSchema,
        shards: &[usize],
        sql: &str,
    ) -> Result<Next, ProxyError> {
        let mut failed = Vec::new();
        let mut done = Vec::new();
        let mut first_error = None;
        for &shard in shards {
            let mut conn = self.shard_conn(schema, shard).await?;
            match conn.simple_command(&for_shard(sql, schema, shard)).await {
                Ok(_) => done.push(shard),
                Err(e) => {
                    failed.push(format!("shard {shard} ({}): {e}", schema.shards[shard].database));
                    first_error.get_or_insert(e);
                }
            }
            self.park_shard(shard, conn, false);
        }
        self.ctx.schema_changes.record();
        match first_error {
            None => self.ok_with(0, 0, 0).await,
            Some(e) if done.is_empty() => Err(e),
            Some(_) => Err(ServerError::DdlPartlyApplied {
                failed: failed.join("; "),
                done: format!("{done:?}"),
            }
            .into()),
        }
    }

    async fn create_shard_databases(
        &mut self,
        schema: &ShardedSchema,
        if_not_exists: bool,
    ) -> Result<Next, ProxyError> {
        let mut first_error = None;
        for shard in 0..schema.shard_count() {
            let s = &schema.shards[shard];
            let mut conn = self.side_conn(s).await?;
            let sql = format!(
                "CREATE DATABASE {}{}",
                if if_not_exists { "IF NOT EXISTS " } else { "" },
                crate::state::quote_ident(&s.database)
            );
            if let Err(e) = conn.simple_command(&sql).await {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => self.ok_with(1, 0, 0).await,
        }
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
        let ok = OkPacket {
            affected_rows: affected,
            last_insert_id: insert_id,
            status: self.status_flags(),
            warnings,
            ..Default::default()
        };
        self.client.write_with(|b| ok.encode(b, self.capabilities));
        self.client.flush().await?;
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

/// The SQL with the logical schema's qualifiers naming shard `shard`'s database.
fn for_shard<'s>(sql: &'s str, schema: &ShardedSchema, shard: usize) -> std::borrow::Cow<'s, str> {
    use crate::route::sharded::DATABASE_MARKER;
    if !sql.contains(DATABASE_MARKER) {
        return std::borrow::Cow::Borrowed(sql);
    }
    let db = crate::state::quote_ident(&schema.shards[shard].database);
    std::borrow::Cow::Owned(sql.replace(DATABASE_MARKER, &db))
}

fn unsupported(m: &str) -> ProxyError {
    ProxyError::NotSharded(m.to_string())
}

fn resolve(set: &ShardSet, schema: &ShardedSchema, values: &Values) -> Result<Vec<usize>, ProxyError> {
    Ok(ShardPlan::resolve(set, schema, values)?)
}

/// The per-shard INSERT statements of a split INSERT; `generated`: the keys of rows whose
/// AUTO_INCREMENT key Tessera supplies.
fn split_insert(
    p: &crate::route::sharded::write::InsertPlan,
    schema: &ShardedSchema,
    sql: &str,
    fp: &Fingerprint,
    values: &Values,
    generated: &[i128],
) -> Result<Vec<(usize, String)>, ProxyError> {
    use crate::route::shard_fn::KeyValue;
    let n = schema.shard_count();
    let mut by_shard: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
    for (i, (_, source)) in p.rows.iter().enumerate() {
        let (v, id) = match (source, generated.get(i)) {
            (Some(source), _) => (values.get(source)?, None),
            (None, Some(id)) => (KeyValue::Int(*id), Some(*id)),
            (None, None) => return Err(ProxyError::Sharding("a row without a generated key".into())),
        };
        let shard = p.function.shard_of(&v, n)?;
        by_shard
            .entry(shard)
            .or_default()
            .push(p.render_row(i, sql, &fp.literals, id));
    }
    let head = p.head.render(sql, &fp.literals);
    let tail = p.tail.render(sql, &fp.literals);
    Ok(by_shard
        .into_iter()
        .map(|(s, rows)| (s, format!("{head}{}{tail}", rows.join(", "))))
        .collect())
}

/// Sends a text query on a connection (used by scatter).
pub fn queue_query(conn: &mut PooledConn, sql: &str) {
    conn.begin_command(|b| {
        b.extend_from_slice(&[COM_QUERY]);
        b.extend_from_slice(sql.as_bytes());
    });
}

impl Session {
    /// A read on several shards: send to all, read their headers, merge their rows.
    async fn scatter_read(
        &mut self,
        schema: &ShardedSchema,
        shards: &[usize],
        scatter: &crate::route::sharded::Scatter,
        sql: &str,
        fp: &Fingerprint,
        binary: Option<Arc<[bytes::Bytes]>>,
    ) -> Result<Next, ProxyError> {
        use crate::exec::scatter::{ScatterRun, TextSink};
        use crate::route::sharded::resolve::resolve_merge;
        let text = scatter.sql.render(sql, &fp.literals);
        let calc_found_rows = text.to_ascii_uppercase().contains("SQL_CALC_FOUND_ROWS");
        if calc_found_rows && (scatter.merge.aggregate.is_some() || scatter.merge.distinct) {
            return Err(unsupported(
                "SQL_CALC_FOUND_ROWS with GROUP BY or DISTINCT across shards",
            ));
        }
        let seen = self.handle.kill_requests();
        let mut run = ScatterRun::default();
        for (i, &shard) in shards.iter().enumerate() {
            let conn = match self.shard_conn(schema, shard).await {
                Ok(conn) => conn,
                Err(e) => {
                    run.break_all();
                    return Err(e);
                }
            };
            let per_shard = text
                .replace(
                    crate::route::sharded::DATABASE_MARKER,
                    &crate::state::quote_ident(&schema.shards[shard].database),
                )
                .replace(
                    crate::route::sharded::union::ONCE_MARKER,
                    if i == 0 { "1=1" } else { "1=0" },
                );
            run.send(shard, conn, &per_shard).await?;
        }
        // KILL QUERY reaches every shard while they work (and one that came while they were
        // sent is caught up with).
        let running: Vec<_> = run
            .states
            .iter()
            .map(|st| (st.conn.server.clone(), st.conn.thread_id))
            .collect();
        self.handle.set_running_all(running);
        self.catch_up_kill(seen).await;
        // A client that leaves while the shards work ends their statements: their
        // connections close, as the server would see this client leave.
        let deadline = self.gen.config.server.scatter_deadline();
        let raw = match run
            .headers(deadline, crate::exec::forward::client_left(&mut self.client))
            .await
        {
            Ok(raw) => raw,
            Err(e) => {
                self.handle.set_running(None);
                return Err(e);
            }
        };
        let max_len = self
            .state
            .vars()
            .get("group_concat_max_len")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_048_576);
        let spec = resolve_merge(scatter, &run.states[0].columns, max_len).map(|mut s| {
            s.memory_cap = self.gen.config.server.merge_memory_cap;
            s
        });
        if spec.is_err() {
            self.handle.set_running(None);
            run.break_all();
        }
        let spec = spec?;
        let visible = spec.visible;
        // A prepared statement's rows are described as its PREPARE described them.
        let prepared = binary.as_ref().filter(|m| m.len() == visible);
        // Types are the execution's (they follow the bound values); names are the prepared
        // text's (`balance + ?`, not the inlined value).
        let columns = run.states[0].columns[..visible].to_vec();
        let raw: Vec<bytes::Bytes> = match prepared {
            Some(meta) => raw[..visible]
                .iter()
                .zip(meta.iter())
                .map(|(def, prep)| {
                    let name = tessera_protocol::resultset::ColumnDefinition::parse_with(prep, self.extended_metadata)
                        .map(|d| d.name)
                        .ok();
                    name.and_then(|n| crate::exec::scatter::with_name(def, n.as_bytes()))
                        .unwrap_or_else(|| def.clone())
                })
                .collect(),
            None => raw[..visible].to_vec(),
        };
        self.write_header(&raw);
        let in_txn = self.sharded_transaction_open();
        let mut sink = TextSink {
            client: &mut self.client,
            columns,
            buf: bytes::BytesMut::new(),
            binary: binary.is_some(),
        };
        let (merged, warnings) = run.merge(&spec, &mut sink).await;
        self.handle.set_running(None);
        // SQL_CALC_FOUND_ROWS: the rows of every shard without LIMIT, summed (each shard
        // counts its own; a plain scatter's rows are disjoint).
        let mut found = None;
        if calc_found_rows && merged.is_ok() {
            let mut total = 0u64;
            for st in run.states.iter_mut() {
                match st.conn.query_rows("SELECT FOUND_ROWS()").await {
                    Ok(result) => total += crate::backend::conn::first_number::<u64>(&result).unwrap_or(0),
                    Err(_) => st.conn.broken = true,
                }
            }
            found = Some(total);
        }
        let result = match merged {
            Ok(stats) => {
                self.last.found_rows = found.unwrap_or(stats.rows_counted);
                self.last.row_count = -1;
                self.write_result_end(warnings).await
            }
            Err(MergeError::ClientLeft) => Err(ProxyError::Client(tessera_protocol::ProtocolError::Closed)),
            Err(e) => Err(e.into()),
        };
        for st in run.states {
            self.park_shard(st.shard, st.conn, in_txn);
        }
        result
    }

    fn write_header(&mut self, raw_columns: &[bytes::Bytes]) {
        let mut count = bytes::BytesMut::new();
        let dialect = self.metadata_dialect();
        tessera_protocol::resultset::encode_column_count(&mut count, raw_columns.len() as u64, dialect, true);
        self.client.write_packet(&count);
        for c in raw_columns {
            self.client.write_packet(c);
        }
        if self.capabilities & tessera_protocol::flags::CLIENT_DEPRECATE_EOF == 0 {
            let mut eof = bytes::BytesMut::new();
            tessera_protocol::response::encode_eof(&mut eof, 0, self.status_flags());
            self.client.write_packet(&eof);
        }
    }

    async fn write_result_end(&mut self, warnings: u16) -> Result<Next, ProxyError> {
        let status = self.status_flags();
        let mut end = bytes::BytesMut::new();
        tessera_protocol::response::encode_result_end(&mut end, warnings, status, self.capabilities);
        self.client.write_packet(&end);
        self.client.flush().await?;
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
                let fp = tessera_sql::fingerprint(statement);
                let class = tessera_sql::classify(statement);
                if Self::is_sharded_kind(&class.kind) {
                    let escapes = self.state.backslash_escapes();
                    let tables = self.schema_tables(schema).await?;
                    let plan = self.gen.plans.get(statement, &fp, schema, escapes, &tables);
                    explain::rows(&plan, schema, &group_names, statement, &fp, escapes)
                } else {
                    let shard = self.held_shard.unwrap_or(schema.default_shard);
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
        use super::load_data::{file_name, LoadSpec};
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
        let name = file_name(sql, escapes).ok_or_else(|| unsupported("LOAD DATA without a file name"))?;
        let implicit = !self.sharded_transaction_open() && self.autocommit();
        if implicit {
            // An autocommit LOAD DATA is a transaction of its own across the shards.
            self.txn.pending_begin = Some("START TRANSACTION".into());
        }
        let begin = (!implicit).then_some("SAVEPOINT tessera_statement");
        let mut conns = Vec::with_capacity(schema.shard_count());
        for shard in 0..schema.shard_count() {
            let opened = match self.shard_conn(schema, shard).await {
                Ok(mut conn) => {
                    let r = self
                        .open_shard_load(&mut conn, begin, &for_shard(&spec.shard_sql, schema, shard))
                        .await;
                    conns.push((shard, conn));
                    r
                }
                Err(e) => Err(e),
            };
            if let Err(e) = opened {
                let _ = self.close_shard_loads(&mut conns).await;
                return Err(self.undo_shard_loads(conns, implicit, e).await);
            }
        }
        let mut request = vec![tessera_protocol::response::LOCAL_INFILE_HEADER];
        request.extend_from_slice(&name);
        self.client.write_packet(&request);
        self.client.flush().await?;
        let streamed = self.stream_records(&spec, key_field, function, &mut conns).await;
        let counts = self.close_shard_loads(&mut conns).await;
        let total = match (streamed, counts) {
            (Err(e), _) | (Ok(()), Err(e)) => return Err(self.undo_shard_loads(conns, implicit, e).await),
            (Ok(()), Ok(total)) => total,
        };
        for (shard, conn) in conns {
            self.txn.wrote.insert(shard);
            self.park_shard(shard, conn, true);
        }
        if implicit {
            self.end_sharded_txn(true).await?;
        }
        self.last.row_count = total.affected as i64;
        let ok = OkPacket {
            affected_rows: total.affected,
            status: self.status_flags(),
            warnings: total.warnings.min(u64::from(u16::MAX)) as u16,
            info: total.message().into_bytes(),
            ..Default::default()
        };
        self.client.write_with(|b| ok.encode(b, self.capabilities));
        self.client.flush().await?;
        Ok(Next::Continue)
    }

    /// Starts a shard's transaction and its LOAD DATA LOCAL (which asks for the file).
    async fn open_shard_load(
        &mut self,
        conn: &mut PooledConn,
        begin: Option<&str>,
        sql: &str,
    ) -> Result<(), ProxyError> {
        if let Some(begin) = begin {
            conn.simple_command(begin).await?;
        }
        queue_query(conn, sql);
        conn.flush().await?;
        let answer = conn.read().await?;
        if answer.first() == Some(&tessera_protocol::response::LOCAL_INFILE_HEADER) {
            return Ok(());
        }
        conn.broken = true;
        match tessera_protocol::response::ErrPacket::parse(&answer) {
            Ok(e) if tessera_protocol::response::is_err(&answer) => Err(ProxyError::Backend(e)),
            _ => Err(ProxyError::Sharding(
                "a shard did not ask for the LOAD DATA file".into(),
            )),
        }
    }

    /// Reads the client's file to its end, sending each record to its shard.
    async fn stream_records(
        &mut self,
        spec: &super::load_data::LoadSpec,
        key_field: usize,
        function: &crate::route::shard_fn::ShardFunction,
        conns: &mut [(usize, PooledConn)],
    ) -> Result<(), ProxyError> {
        use super::load_data::{key_value, RecordSplitter};
        const CHUNK: usize = 64 * 1024;
        let n = conns.len();
        let mut splitter = RecordSplitter::new(spec, key_field);
        let mut skip = spec.ignore_lines;
        let mut buffers: Vec<Vec<u8>> = vec![Vec::new(); n];
        let mut failure: Option<ProxyError> = None;
        loop {
            let chunk = self.client.read_packet().await?;
            let last = chunk.is_empty();
            let mut records = splitter.feed(&chunk);
            if last {
                records.extend(splitter.finish());
            }
            for (bytes, key) in records {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                if failure.is_some() {
                    continue;
                }
                match function.shard_of(&key_value(key), n) {
                    Ok(s) => buffers[s].extend_from_slice(&bytes),
                    Err(e) => failure = Some(e.into()),
                }
            }
            for (s, buf) in buffers.iter_mut().enumerate() {
                if failure.is_none() && (buf.len() >= CHUNK || (last && !buf.is_empty())) {
                    conns[s].1.io.write_packet(buf);
                    conns[s].1.flush().await?;
                    buf.clear();
                }
            }
            if last {
                break;
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// Ends every shard's file (the empty packet) and reads its answer; sums the counts.
    async fn close_shard_loads(
        &mut self,
        conns: &mut [(usize, PooledConn)],
    ) -> Result<super::load_data::LoadCounts, ProxyError> {
        let mut total = super::load_data::LoadCounts::default();
        let mut first_error = None;
        for (_, conn) in conns.iter_mut() {
            if conn.broken {
                continue;
            }
            conn.io.write_packet(&[]);
            let answer = match conn.flush().await {
                Ok(()) => conn.read().await,
                Err(e) => Err(e),
            };
            match answer {
                Ok(p) if tessera_protocol::response::is_ok(&p) => {
                    if let Ok(ok) = OkPacket::parse(&p, conn.capabilities) {
                        let mut counts = super::load_data::LoadCounts::parse(&ok.info);
                        counts.affected = ok.affected_rows;
                        total.add(counts);
                    }
                }
                Ok(p) => {
                    let e = tessera_protocol::response::ErrPacket::parse(&p)
                        .map(ProxyError::Backend)
                        .unwrap_or_else(|_| ProxyError::Sharding("a shard's LOAD DATA answer".into()));
                    first_error.get_or_insert(e);
                }
                Err(e) => {
                    conn.broken = true;
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(total), Err)
    }

    /// Rolls the shards' loads back and gives their connections back (or keeps them in the
    /// client's transaction).
    async fn undo_shard_loads(&mut self, conns: Vec<(usize, PooledConn)>, implicit: bool, e: ProxyError) -> ProxyError {
        for (shard, mut conn) in conns {
            if !implicit
                && !conn.broken
                && conn
                    .simple_command("ROLLBACK TO SAVEPOINT tessera_statement")
                    .await
                    .is_err()
            {
                conn.broken = true;
            }
            self.park_shard(shard, conn, true);
        }
        if implicit || !matches!(e, ProxyError::Backend(_)) {
            self.abort_sharded_txn().await;
        }
        e
    }
}
