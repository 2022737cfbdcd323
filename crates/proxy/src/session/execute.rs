//! The path every statement takes to a backend: borrow a connection (the held one or a fresh
//! checkout), bring its session state to the client's (one pipelined batch), forward the
//! response, learn from the outcome, then keep the connection (transaction, pin) or release it.

use super::txn_state::TxnState;
use super::Session;
use crate::alloc::in_heap;
use crate::error::ProxyError;
use crate::exec::{forward, ClientSide, Metadata, Mode, Outcome};
use crate::metrics::Metrics;
use crate::pool::PooledConn;
use crate::route::Target;
use crate::state::SyncScope;
use tessera_protocol::command::{COM_INIT_DB, COM_QUERY};
use tessera_protocol::response::SessionChange;
use tessera_sql::{Classification, Flags, StatementKind};

/// The variables that SET NAMES and its relatives change, in the order a replay must set them
/// (collation_connection last: setting a character set resets it).
const CHARSET_VARIABLES: [&str; 4] = [
    "character_set_client",
    "character_set_connection",
    "character_set_results",
    "collation_connection",
];

/// One statement of a command, with its classification.
#[derive(Clone)]
pub struct Stmt<'a> {
    pub sql: &'a str,
    /// Borrowed from a prepared statement's plan, owned for a text query's statements.
    pub class: std::borrow::Cow<'a, Classification>,
}

impl Session {
    /// Borrows the connection for the next statement and syncs its session state.
    pub async fn acquire(&mut self, target: Target, scope: SyncScope) -> Result<PooledConn, ProxyError> {
        Ok(self.acquire_avoiding(target, scope, None).await?.0)
    }

    /// [`Session::acquire`], never choosing server `exclude` of the target's group for a read.
    /// The flag is true when the connection is the one the session held before (its
    /// diagnostics area and LAST_INSERT_ID are the session's); false for a connection from the
    /// pool, including when a held one had to be given up for this target.
    pub async fn acquire_avoiding(
        &mut self,
        target: Target,
        scope: SyncScope,
        exclude: Option<usize>,
    ) -> Result<(PooledConn, bool), ProxyError> {
        let group = self.gen.group_checked(target.group)?.clone();
        self.routing.partial_response = false;
        let held = match self.binding.take_held() {
            Some(mut c) if self.must_leave_held(&group, &c, target) => {
                if self.pins.holds_diagnostics() {
                    in_heap(|| self.keep_diagnostics_of(&mut c)).await;
                }
                in_heap(|| self.learn_found_rows_before_release(&mut c)).await;
                self.pins.end_short_lived();
                None
            }
            other => other,
        };
        let on_held = held.is_some();
        let mut conn = match held {
            Some(c) => c,
            None => self.checkout_for(&group, target, exclude).await?,
        };
        self.count_routed(target.group, &conn, target);
        if self.state.schema.is_none() && conn.state.schema.is_some() {
            // MySQL cannot unset a default schema: take a fresh connection instead.
            let pool = conn.pool().clone();
            if let Err(e) = in_heap(|| pool.reopen(&mut conn)).await {
                conn.broken = true;
                return Err(e);
            }
        }
        // With sql_auto_is_null on, `WHERE id IS NULL` reads LAST_INSERT_ID(): the connection
        // must hold the session's (a read-back left 0 there).
        let scope = SyncScope {
            last_insert_id: scope.last_insert_id || self.pins.auto_is_null(),
            ..scope
        };
        // While LAST_INSERT_ID() is only known to the held connection, it is the truth.
        let last_insert_id = self
            .last_insert_id_needed(scope, on_held)
            .filter(|_| !self.last_insert_id_dirty);
        let scope = SyncScope {
            last_insert_id: false,
            writes_last_insert_id: false,
            ..scope
        };
        if let Err(e) = self.sync(&mut conn, scope).await {
            conn.broken = true;
            return Err(e);
        }
        let reads_only = std::mem::take(&mut self.statement_reads_only);
        match self.txn {
            TxnState::BeginDeferred if !conn.in_transaction => {
                if conn.queue_begin() {
                    Metrics::inc(&self.ctx.metrics.transaction_ends_folded);
                }
                self.txn = match reads_only {
                    true => TxnState::ReadsOnly,
                    false => TxnState::None,
                };
            }
            // Anything but a pure read (or a command of Tessera's own) ends the claim.
            TxnState::BeginDeferred => self.txn = TxnState::None,
            TxnState::ReadsOnly if !reads_only => self.txn = TxnState::None,
            _ => {}
        }
        if let Some(value) = last_insert_id.filter(|v| *v != conn.state.last_insert_id) {
            conn.queue_last_insert_id_set(value);
        }
        self.handle.set_running(Some((&conn.server, conn.thread_id)));
        Ok((conn, on_held))
    }

    /// The LAST_INSERT_ID() a connection must hold before the statement, if it matters. A
    /// statement that reads it needs the session's. One that may assign it needs a value its
    /// assignment is told from by the value read back afterwards: the session's (assigning the
    /// same value changes nothing), or 0 for an insert read back at once on a connection from
    /// the pool, which can only assign generated ids (never 0). The read-back leaves 0 there,
    /// so inserts of many sessions over few connections need no SET.
    fn last_insert_id_needed(&self, scope: SyncScope, on_held: bool) -> Option<u64> {
        if scope.writes_last_insert_id && scope.generates_ids_only && !on_held {
            Some(0)
        } else if scope.last_insert_id || scope.writes_last_insert_id {
            Some(self.state.last_insert_id)
        } else {
            None
        }
    }

    /// The database a backend connection must have selected for the next statement: a shard's
    /// database on a sharded schema (the default shard's for statements of no shard), else the
    /// client's.
    pub fn backend_schema(&self) -> Option<&str> {
        if let Some(t) = &self.target_schema {
            return Some(t);
        }
        let name = self.state.schema.as_deref()?;
        if self.gen.topology.is_empty() {
            return Some(name);
        }
        match self.gen.topology.schema(name) {
            Some(s) => s
                .shards
                .get(self.binding.shard().unwrap_or(s.default_shard))
                .map(|d| d.database.as_str()),
            None => Some(name),
        }
    }

    /// Sends only the differences (one SET and/or one COM_INIT_DB, pipelined).
    async fn sync(&mut self, conn: &mut PooledConn, scope: SyncScope) -> Result<(), ProxyError> {
        let set = self.state.set_statement_from(&conn.state, scope);
        let schema = self
            .backend_schema()
            .filter(|w| conn.state.schema.as_deref() != Some(*w))
            .map(str::to_owned);
        if set.is_none() {
            self.state.share_vars_with(&mut conn.state);
        }
        if set.is_none() && schema.is_none() {
            return Ok(());
        }
        // The cold path: its future lives on the heap, not in every statement's.
        in_heap(|| self.send_sync(conn, scope, set, schema)).await
    }

    /// Sends the SET and/or COM_INIT_DB that [`Session::sync`] found necessary.
    async fn send_sync(
        &mut self,
        conn: &mut PooledConn,
        scope: SyncScope,
        set: Option<String>,
        schema: Option<String>,
    ) -> Result<(), ProxyError> {
        Metrics::inc(&self.ctx.metrics.state_syncs);
        if let Some(sql) = &set {
            conn.begin_command(|b| {
                b.extend_from_slice(&[COM_QUERY]);
                b.extend_from_slice(sql.as_bytes());
            });
        }
        if let Some(db) = &schema {
            conn.begin_command(|b| {
                b.extend_from_slice(&[COM_INIT_DB]);
                b.extend_from_slice(db.as_bytes());
            });
        }
        conn.flush().await?;
        let mut first_error = None;
        if set.is_some() {
            first_error = conn.read_ok().await.err();
        }
        if schema.is_some() {
            if let Err(e) = conn.read_ok().await {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(ProxyError::Backend(p)) => Err(ProxyError::StateSync(p)),
            Some(e) => Err(e),
            None => {
                // A statement is parsed at PREPARE: under another character set or sql_mode its
                // handle means something else.
                if charset_differs(&conn.state, &self.state)
                    || conn.state.vars().get("sql_mode") != self.state.vars().get("sql_mode")
                {
                    conn.forget_prepared();
                }
                conn.state.sync_to(&self.state, scope);
                // Only a COM_INIT_DB that succeeded changes the connection's database (a
                // shard's, where the client's names a logical schema).
                if let Some(db) = schema {
                    conn.state.schema = Some(db);
                }
                Ok(())
            }
        }
    }

    /// Flushes the queued command and forwards the backend's response to the client.
    pub async fn forward(&mut self, conn: &mut PooledConn, mode: Mode) -> Result<Outcome, ProxyError> {
        self.forward_known(conn, mode, None).await
    }

    /// [`Session::forward`] of a prepared statement's execution: `known` are the column
    /// definitions the client holds for it (see [`Metadata::Cached`]); what it holds after
    /// is the outcome's `columns_sent` when that is set.
    pub async fn forward_known(
        &mut self,
        conn: &mut PooledConn,
        mode: Mode,
        known: Option<&[u8]>,
    ) -> Result<Outcome, ProxyError> {
        conn.flush().await?;
        let mut side = client_side(&self.gen, self.capabilities, &self.tracking, self.routing.last_server);
        side.metadata = self.metadata_for(known);
        side.later_tracking = self.tracking_later.as_ref().map(|t| (t.from, &t.tracking));
        let outcome = forward(conn, &mut self.client, side, mode).await;
        if let (Ok(o), Some(later)) = (&outcome, self.tracking_later.as_mut()) {
            later.reached |= o.results > later.from;
        }
        outcome
    }

    /// How result metadata goes to this client, `known` being the column definitions it holds
    /// for the statement executed.
    pub fn metadata_for<'k>(&self, known: Option<&'k [u8]>) -> Metadata<'k> {
        if self.cache_metadata {
            Metadata::Cached { known }
        } else {
            Metadata::Plain
        }
    }

    /// Turns a failure during a statement into the error to report; if the connection held
    /// state of this session (transaction, pin), that state is gone and the client is closed.
    pub fn failed(&mut self, conn: PooledConn, was_held: bool, e: ProxyError) -> ProxyError {
        self.handle.set_running(None);
        self.routing.partial_response = conn.response_started;
        // A connection in a transaction carried the client's transaction (held, or its
        // deferred BEGIN went with this statement): losing it ends the session.
        if (was_held || conn.in_transaction) && conn.broken {
            self.fatal = true;
            self.pins.clear();
        }
        drop(conn);
        e
    }

    /// Learns from a finished statement, then keeps or releases its connection.
    pub async fn finish(&mut self, mut conn: PooledConn, outcome: &Outcome, stmts: &[Stmt<'_>]) {
        self.handle.set_running(None);
        if stmts.iter().any(|s| changes_schema(&s.class.kind)) {
            self.ctx.schema_changes.record();
        }
        match set_statement_variables_of(stmts) {
            names if names.is_empty() => self.state.apply_changes(&outcome.changes),
            names => self.undo_statement_only_changes(&mut conn, &outcome.changes, &names),
        }
        if outcome.error.is_none() && !conn.broken {
            self.follow_autocommit_status(&mut conn, outcome.status);
        }
        forget_spent_variables(&mut self.state, stmts);
        self.follow_unreplayed_changes(outcome, stmts);
        self.note_write(outcome);
        if !outcome.last_insert_id_known && may_change_last_insert_id(outcome, stmts) {
            self.last_insert_id_dirty = true;
        }
        self.record_last(outcome);
        // An ERR carries no status: with autocommit off, the failed statement may have opened a
        // transaction (a lock wait timeout leaves it open), so the connection stays with the
        // session until a status says otherwise (and is rolled back and reset if it leaves).
        conn.in_transaction = outcome.in_transaction() || (outcome.error.is_some() && !self.state.autocommit());
        // A COMMIT/ROLLBACK that releases: the server has closed this connection, so nothing
        // below reads from it, and the client's connection closes after the OK.
        if outcome.error.is_none() && self.releases(stmts) {
            conn.broken = true;
            self.released = true;
        }
        let ok = outcome.error.is_none() || stmts.len() > 1;
        let before = self.pins.active();
        let area_was_here = self.pins.holds_diagnostics();
        for s in stmts {
            self.pins.after_statement(s.sql, &s.class, ok, conn.in_transaction);
        }
        let found_rows = super::found_rows::effect_of(stmts, outcome.error.is_some());
        self.follow_found_rows(found_rows, outcome.result_rows);
        self.publish_user_locks(&conn);
        self.follow_diagnostics(&mut conn, outcome, stmts, area_was_here).await;
        self.capture_user_vars(&mut conn, stmts).await;
        self.follow_unseen_state(&mut conn, outcome, stmts).await;
        if ok {
            self.follow_global_tracking(&mut conn, stmts).await;
        }
        if ok && !conn.broken && stmts.iter().any(|s| changes_charset(s)) {
            self.learn_charset(&mut conn).await;
        }
        let releasing = !self.pins.is_pinned() && !conn.in_transaction;
        if releasing && self.last_insert_id_dirty && !conn.broken {
            self.learn_last_insert_id(&mut conn).await;
        }
        self.keep_or_release(conn, before);
    }

    /// Tells the registry which connection this session holds user locks on (only when that
    /// changes), for IS_USED_LOCK() of any session.
    fn publish_user_locks(&mut self, conn: &PooledConn) {
        let holds = self.pins.holds_user_locks();
        if holds != self.user_locks_published {
            let at = holds.then(|| (conn.server.address.as_str(), conn.thread_id));
            self.handle.set_user_lock_conn(at);
            self.user_locks_published = holds;
        }
    }

    /// `SET STATEMENT x = v FOR ...` sets x for its statement only: once it has ended x is the
    /// session's value again on the connection, but MariaDB may report v in the statement's
    /// own answer (a result's EOF goes before the restore), and the restore in the
    /// connection's next answer. Neither the session nor the connection takes v; the
    /// statement's other changes apply as usual.
    fn undo_statement_only_changes(&mut self, conn: &mut PooledConn, changes: &[SessionChange], names: &[String]) {
        let kept: Vec<SessionChange> = changes
            .iter()
            .filter(|c| {
                !matches!(c, SessionChange::SystemVariable { name, .. }
                    if names.iter().any(|n| n.eq_ignore_ascii_case(name)))
            })
            .cloned()
            .collect();
        self.state.apply_changes(&kept);
        for name in names {
            match self.state.vars().get(name) {
                Some(value) => conn.state.set_var(name.clone(), value.clone()),
                None => conn.state.remove_var(name),
            }
        }
    }

    /// Changes session tracking reports that no replay can carry: a seeded RAND() pins the
    /// session to its connection, and LAST_INSERT_ID set by name (`SET last_insert_id = n`,
    /// `identity`) is read back before the connection goes back.
    fn follow_unreplayed_changes(&mut self, outcome: &Outcome, stmts: &[Stmt<'_>]) {
        let seeded = outcome.changes.iter().any(|c| {
            matches!(c, SessionChange::SystemVariable { name, .. }
                if name.eq_ignore_ascii_case("rand_seed1") || name.eq_ignore_ascii_case("rand_seed2"))
        });
        if seeded {
            self.pins.seed_rand();
        }
        if outcome.changes.iter().any(|c| {
            matches!(c, SessionChange::SystemVariable { name, .. } if name.eq_ignore_ascii_case("sql_auto_is_null"))
        }) {
            let value = self.state.vars().get("sql_auto_is_null").map(String::as_str);
            self.pins.follow_auto_is_null(value);
        }
        if outcome.changes.iter().any(
            |c| matches!(c, SessionChange::SystemVariable { name, .. } if name.eq_ignore_ascii_case("optimizer_trace")),
        ) {
            let value = self.state.vars().get("optimizer_trace").map(String::as_str);
            self.pins.follow_optimizer_trace(value);
        }
        let names_last_insert_id = stmts.iter().any(|s| {
            matches!(s.class.kind, StatementKind::Set(_))
                && super::track_set::session_assignments(s.sql)
                    .iter()
                    .any(|(name, _)| name == "last_insert_id" || name == "identity")
        });
        if names_last_insert_id {
            self.last_insert_id_dirty = true;
        }
    }

    /// Every OK and EOF carries the server's autocommit mode: where it disagrees with what
    /// session tracking said (a change the server did not report, e.g. inside a stored
    /// procedure), the status is the truth, for the client's state and the connection's.
    fn follow_autocommit_status(&mut self, conn: &mut PooledConn, status: u16) {
        let server_on = status & tessera_protocol::flags::SERVER_STATUS_AUTOCOMMIT != 0;
        if server_on == self.state.autocommit() && server_on == conn.state.autocommit() {
            return;
        }
        let value = if server_on { "ON" } else { "OFF" };
        tracing::debug!(
            session = self.id,
            autocommit = value,
            "autocommit learnt from the status flags"
        );
        self.state.set_var("autocommit".into(), value.into());
        conn.state.set_var("autocommit".into(), value.into());
    }

    /// Where the client's diagnostics area is after a statement: on this connection when the
    /// statement raised conditions (kept for the next statement), empty when it read a table,
    /// else still the previous one.
    async fn follow_diagnostics(
        &mut self,
        conn: &mut PooledConn,
        outcome: &Outcome,
        stmts: &[Stmt<'_>],
        area_was_here: bool,
    ) {
        use super::diagnostics::{clears_area, Diagnostics};
        if outcome.warnings > 0 || outcome.error.is_some() {
            self.pins.keep_new_diagnostics(conn.in_transaction);
            self.diagnostics = Diagnostics::OnConnection;
            return;
        }
        // Only a non-empty area can change here (the common case costs nothing).
        let kept_conditions = matches!(&self.diagnostics, Diagnostics::Kept(c) if !c.is_empty());
        if !(area_was_here || kept_conditions) {
            return;
        }
        if stmts.iter().any(|s| clears_area(s.sql, &s.class)) {
            self.diagnostics = Diagnostics::Kept(Vec::new());
            return;
        }
        if !area_was_here || conn.broken {
            return;
        }
        // The area is still on this connection. A connection that stays with the session (a
        // transaction, another pin) keeps it unread; one about to go back keeps an area raised
        // inside the transaction for one more statement (COMMIT then BEGIN after a write with
        // notes: no read at all), else the area is read now so the connection can go back.
        let releasing = !conn.in_transaction && !self.pins.is_pinned();
        if !releasing || self.pins.may_carry_diagnostics() {
            self.pins.carry_diagnostics(releasing);
        } else {
            self.keep_diagnostics_of(conn).await;
        }
    }

    /// Reads the diagnostics area of a connection the session is about to give back. An area
    /// that cannot be recreated elsewhere keeps the connection for one more statement.
    pub async fn keep_diagnostics_of(&mut self, conn: &mut PooledConn) {
        if !super::diagnostics::keep_area_on_release(conn, &mut self.diagnostics).await {
            self.pins.keep_for_diagnostics();
        }
    }

    /// Before a diagnostics statement on a connection that did not run the previous statement:
    /// recreates the client's diagnostics area there (one extra round trip).
    pub async fn restore_diagnostics(&mut self, conn: &mut PooledConn) -> Result<(), ProxyError> {
        let sql = self
            .diagnostics
            .restore_statement(conn.state.backslash_escapes())
            .ok_or_else(|| {
                ProxyError::Unsupported(
                    "reading a diagnostics area of several conditions after its connection was given back".into(),
                )
            })?;
        conn.begin_command(|b| {
            b.extend_from_slice(&[COM_QUERY]);
            b.extend_from_slice(sql.as_bytes());
        });
        conn.flush().await?;
        match conn.read_ok().await {
            Ok(_) | Err(ProxyError::Backend(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Whether LAST_INSERT_ID() is read right behind the statement, in the same write: after
    /// one INSERT or REPLACE on a connection from the pool (not LOAD DATA: its LOCAL exchange
    /// must not be interleaved), and after the end of a transaction whose
    /// statements may have changed it (else it costs a round trip when the connection goes
    /// back: an explicit id in a transaction's insert, as in sysbench's writes, is enough).
    pub fn reads_last_insert_id_behind(&self, stmts: &[Stmt<'_>], was_held: bool) -> bool {
        use tessera_sql::StatementKind as K;
        match stmts {
            // Not after INSERT ... SELECT: the read would reset FOUND_ROWS(), which the client
            // may read next (it is read when the connection is released instead).
            [s] if !was_held => {
                matches!(s.class.kind, K::Insert | K::Replace)
                    && tessera_sql::found_rows_effect(s.sql, &s.class) != tessera_sql::FoundRowsEffect::Server
            }
            // Not after COMMIT RELEASE: the server closes the connection after its OK.
            [s] => {
                self.last_insert_id_dirty && matches!(s.class.kind, K::Commit | K::Rollback) && !self.releases(stmts)
            }
            _ => false,
        }
    }

    /// Reads the answer of a LAST_INSERT_ID() read pipelined behind the statement.
    pub async fn read_pipelined_last_insert_id(&mut self, conn: &mut PooledConn, outcome: &mut Outcome) {
        let known = adopt_last_insert_id(conn, &mut self.state.last_insert_id, self.id).await;
        outcome.last_insert_id_known = known;
        self.last_insert_id_dirty &= !known;
    }

    /// LAST_INSERT_ID() may have changed on this connection (an OK's insert id is not always
    /// it: explicit ids, LAST_INSERT_ID(expr)); read it before the connection is shared again.
    pub(super) async fn learn_last_insert_id(&mut self, conn: &mut PooledConn) {
        Metrics::inc(&self.ctx.metrics.last_insert_id_round_trips);
        let known = learn_last_insert_id(conn, &mut self.state.last_insert_id, self.id).await;
        self.last_insert_id_dirty = !known;
    }

    pub(super) fn record_last(&mut self, outcome: &Outcome) {
        self.last_error = outcome.error.as_ref().map(|e| e.code);
        self.last.row_count = match (&outcome.error, outcome.result_rows) {
            (Some(_), _) | (None, Some(_)) => -1,
            (None, None) => outcome.affected_rows as i64,
        };
    }

    /// Reads the connection character set and collation the server now has, into both the
    /// client's state and the connection's.
    async fn learn_charset(&mut self, conn: &mut PooledConn) {
        conn.forget_prepared();
        self.learn_found_rows_before_release(conn).await;
        let sql = format!(
            "SELECT {}",
            CHARSET_VARIABLES.map(|v| format!("@@session.{v}")).join(", ")
        );
        match conn.query_rows(&sql).await {
            Ok((_, rows)) => {
                let Some(row) = rows.first() else { return };
                for (name, value) in CHARSET_VARIABLES.iter().zip(row) {
                    // NULL (character_set_results) is kept as session tracking reports it: "".
                    let value = value
                        .as_deref()
                        .map(|v| String::from_utf8_lossy(v).into_owned())
                        .unwrap_or_default();
                    conn.state.set_var(name.to_string(), value.clone());
                    self.state.set_var(name.to_string(), value);
                }
            }
            Err(e) => {
                tracing::warn!(session = self.id, error = %e, "could not read back the connection character set");
                conn.broken = true;
            }
        }
    }

    async fn capture_user_vars(&mut self, conn: &mut PooledConn, stmts: &[Stmt<'_>]) {
        let mut names: Vec<String> = Vec::new();
        let escapes = self.state.backslash_escapes();
        for s in stmts.iter() {
            let assigned = match s.class.kind {
                // OUT / INOUT parameters: any variable a CALL mentions may have been set.
                tessera_sql::StatementKind::Call => tessera_sql::references_user_variables_with(s.sql, escapes),
                _ if s.class.flags.contains(Flags::USER_VAR_WRITE) => {
                    tessera_sql::assigned_user_variables_with(s.sql, escapes)
                }
                _ => continue,
            };
            for n in assigned {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        if names.is_empty() || conn.broken {
            return;
        }
        // The read below is a SELECT: FOUND_ROWS() of the statement is read first.
        self.learn_found_rows_before_release(conn).await;
        match super::uservars::capture(conn, &names).await {
            Ok(values) => {
                for (name, literal) in values {
                    conn.state.user_vars.insert(name.clone(), literal.clone());
                    self.state.user_vars.insert(name, literal);
                }
            }
            Err(e) => {
                tracing::warn!(session = self.id, error = %e, "could not read back user variables");
                conn.broken = true;
            }
        }
    }

    /// Keeps the connection while pinned or inside a transaction, else returns it to the pool.
    pub fn keep_or_release(&mut self, mut conn: PooledConn, pins_before: u16) {
        if conn.broken {
            return;
        }
        // Long-lived pinned state (temporary tables, locks, cursors ...) marks the connection:
        // should it leave the session by any other way than the pin's end, the pool closes it.
        conn.pinned_state = self.pins.is_pinned() && !self.pins.only_short_lived();
        if self.pins.is_pinned() {
            for reason in super::pins::reason_names(self.pins.active() & !pins_before) {
                self.ctx.metrics.pinned(reason);
                tracing::debug!(session = self.id, reason, "session pinned to its backend connection");
            }
            conn.detach();
            self.binding.set_held(Some(conn));
        } else if conn.in_transaction {
            self.binding.set_held(Some(conn));
        }
    }
}

/// Forgets the session's `timestamp` when a SET unfixed it (`DEFAULT` or 0: the server then
/// reports a stale or the current time) and its `insert_id` once a statement that may insert
/// has spent it. The connection keeps its entry, so its next sync sets it back to the default
/// (an insert that generated no id leaves the forced id pending there).
fn forget_spent_variables(state: &mut crate::state::SessionVars, stmts: &[Stmt<'_>]) {
    use tessera_sql::StatementKind as K;
    for s in stmts {
        match s.class.kind {
            K::Set(_) => {
                let unfixes = |(name, value): &(String, &str)| {
                    name == "timestamp" && (value.eq_ignore_ascii_case("default") || value.trim() == "0")
                };
                if super::track_set::session_assignments(s.sql).iter().any(unfixes) {
                    state.remove_var("timestamp");
                }
            }
            K::Insert
            | K::Replace
            | K::LoadData { .. }
            | K::Ddl
            | K::CreateTemporaryTable(_)
            | K::Call
            | K::Execute
            | K::Other => state.remove_var("insert_id"),
            _ => {}
        }
    }
}

/// Reads LAST_INSERT_ID() from a connection about to go back into the session's value
/// `session_value` (`session` names it in logs). Returns whether the value is known.
pub async fn learn_last_insert_id(conn: &mut PooledConn, session_value: &mut u64, session: u32) -> bool {
    conn.queue_last_insert_id_query();
    match conn.flush().await {
        Ok(()) => adopt_last_insert_id(conn, session_value, session).await,
        Err(_) => false,
    }
}

/// Reads the queued `SELECT LAST_INSERT_ID()` answer. Tessera knows the value the connection
/// had before (every change is read back before release), so only a change belongs to this
/// session. Returns whether the value is known.
async fn adopt_last_insert_id(conn: &mut PooledConn, session_value: &mut u64, session: u32) -> bool {
    let before = conn.state.last_insert_id;
    match conn.read_last_insert_id().await {
        Ok(id) => {
            if id != before {
                *session_value = id;
            }
            true
        }
        Err(e) => {
            tracing::warn!(session, error = %e, "could not read LAST_INSERT_ID()");
            conn.broken = true;
            false
        }
    }
}

/// How responses reach a client (for the forwarder), after a statement on `last_server`.
pub fn client_side<'t>(
    gen: &'t crate::generation::Generation,
    capabilities: u32,
    tracking: &'t crate::tracking::ClientTracking,
    last_server: Option<(usize, usize)>,
) -> ClientSide<'t> {
    let group = last_server.map_or(0, |(g, _)| g);
    ClientSide {
        capabilities,
        metadata: Default::default(),
        write_timeout: gen.config.server.net_write_timeout(),
        tracking,
        later_tracking: None,
        acknowledged: gen.groups.get(group).map(|g| &g.acknowledged),
    }
}

/// SET NAMES, SET CHARACTER SET and SET of a character_set_* / collation_* variable: the server
/// reports the character sets it changed but not always collation_connection (SET NAMES x
/// COLLATE y), so Tessera reads all four back.
/// Whether a statement may change what a table looks like (so cached PREPARE answers may be
/// out of date). A procedure's DDL (CALL) and a server-side EXECUTE are not seen.
fn changes_schema(kind: &StatementKind) -> bool {
    use StatementKind as K;
    matches!(
        kind,
        K::Ddl | K::DropTable(_) | K::CreateTemporaryTable(_) | K::DropTemporaryTable(_)
    )
}

fn changes_charset(s: &Stmt<'_>) -> bool {
    if !matches!(s.class.kind, tessera_sql::StatementKind::Set(_)) {
        return false;
    }
    let lower = s.sql.to_ascii_lowercase();
    ["names", "character", "charset", "collation"]
        .iter()
        .any(|w| lower.contains(w))
}

/// Whether two states differ in the connection character set or collation.
fn charset_differs(a: &crate::state::SessionVars, b: &crate::state::SessionVars) -> bool {
    CHARSET_VARIABLES.iter().any(|v| a.vars().get(*v) != b.vars().get(*v))
}

/// True when LAST_INSERT_ID() may differ from what the session knew before these statements.
fn may_change_last_insert_id(outcome: &Outcome, stmts: &[Stmt<'_>]) -> bool {
    outcome.last_insert_id != 0
        || stmts.iter().any(|s| {
            s.class.flags.contains(Flags::LAST_INSERT_ID_SET)
                || matches!(s.class.kind, tessera_sql::StatementKind::Call)
        })
}

/// What must be synced before these statements run.
pub fn sync_scope(stmts: &[Stmt<'_>]) -> SyncScope {
    use tessera_sql::StatementKind as K;
    let mut scope = SyncScope::default();
    for s in stmts {
        let f = s.class.flags;
        let opaque = matches!(s.class.kind, K::Call | K::Execute | K::Prepare) || calls_stored_function(s);
        scope.user_vars |= opaque || f.contains(Flags::USER_VAR_READ);
        scope.last_insert_id |= opaque || f.contains(Flags::LAST_INSERT_ID);
        scope.writes_last_insert_id |= opaque
            || f.contains(Flags::LAST_INSERT_ID_SET)
            || matches!(s.class.kind, K::Insert | K::Replace | K::LoadData { .. });
    }
    scope.generates_ids_only = matches!(stmts, [s] if matches!(s.class.kind, K::Insert | K::Replace)
        && !s.class.flags.intersects(Flags::LAST_INSERT_ID | Flags::LAST_INSERT_ID_SET));
    scope
}

/// A statement whose values may call a stored function: its body reads the connection's user
/// variables and LAST_INSERT_ID(), which must then be the session's.
fn calls_stored_function(s: &Stmt<'_>) -> bool {
    use tessera_sql::StatementKind as K;
    !s.class.pure_select
        && matches!(
            s.class.kind,
            K::Select | K::Do | K::Set(_) | K::Insert | K::Update | K::Delete | K::Replace
        )
        && s.class.flags.contains(Flags::STORED_CALL)
}

/// The variables the `SET STATEMENT ... FOR` statements among `stmts` set for themselves only.
fn set_statement_variables_of(stmts: &[Stmt<'_>]) -> Vec<String> {
    stmts
        .iter()
        .filter(|s| matches!(s.class.kind, StatementKind::Set(tessera_sql::SetKind::StatementFor)))
        .flat_map(|s| super::track_set::statement_only_variables(s.sql))
        .collect()
}
