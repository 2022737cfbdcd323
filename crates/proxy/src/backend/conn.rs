//! One authenticated backend connection: its stream, the session state it currently has, its
//! prepared-statement cache, and the small request/response helpers Tessera itself needs.

use super::connect::lost;
use super::stmt_cache::{BackendStmt, Remembered, SchemaChanges, SqlText, StmtCache};
use super::ServerRef;
use crate::charset::BACKEND_COLLATION_ID;
use crate::error::ProxyError;
use crate::net::Stream;
use crate::state::{parse_variables_set, SessionVars, PARSE_VARIABLES};
use bytes::{Bytes, BytesMut};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tessera_protocol::command::{COM_INIT_DB, COM_QUERY, COM_RESET_CONNECTION};
use tessera_protocol::flags::*;
use tessera_protocol::response::{is_eof, is_err, is_ok, ErrPacket, OkPacket};
use tessera_protocol::resultset::{parse_text_row, ColumnDefinition};
use tessera_protocol::stmt::{encode_close, encode_prepare, PrepareOk};
use tessera_protocol::PacketStream;

/// Reads LAST_INSERT_ID() without touching the diagnostics area (no table is used), and
/// leaves 0 behind (the select list is evaluated in order), so the next insert on the
/// connection needs no SET before its own value is read back.
pub const LAST_INSERT_ID_SQL: &str = "SELECT LAST_INSERT_ID(), LAST_INSERT_ID(0)";

/// A text result read by Tessera for its own use.
pub type TextResult = (Vec<ColumnDefinition>, Vec<Vec<Option<Vec<u8>>>>);

/// The first value of a result, read as a number.
pub fn first_number<T: std::str::FromStr>(result: &TextResult) -> Option<T> {
    let v = result.1.first()?.first()?.as_deref()?;
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// A packet of a text result, as the server sent it.
enum ResultPacket {
    Definition(Bytes),
    Row(Bytes),
}

/// An authenticated connection to one backend server.
#[derive(Debug)]
pub struct BackendConn {
    pub io: PacketStream<Stream>,
    pub server: ServerRef,
    pub thread_id: u32,
    pub capabilities: u32,
    pub server_version: String,
    /// The session state this connection has right now.
    pub state: SessionVars,
    pub stmts: StmtCache,
    /// The default schema `stmts` was prepared under (unqualified names resolve at PREPARE),
    /// and the caches of other schemas this connection had (sharded schemas put several shard
    /// databases on one server).
    stmts_schema: Option<String>,
    parked_stmts: Vec<(Option<String>, StmtCache)>,
    /// The process's count of schema changes (shared by every connection it opens).
    pub schema_changes: Arc<SchemaChanges>,
    pub created: Instant,
    pub last_used: Instant,
    /// Set when the connection can no longer be trusted (I/O error, half-read response).
    pub broken: bool,
    /// The server reported an open transaction after the last statement.
    pub in_transaction: bool,
    /// The connection holds a session's pinned state (temporary tables, table or user locks,
    /// cursors, an XA branch ...) that no sync replays or removes: it is closed, never pooled,
    /// unless the session saw that state end on it.
    pub pinned_state: bool,
    /// MariaDB extended column metadata was negotiated on this connection.
    pub extended_metadata: bool,
    /// The extended capabilities the server offered in its greeting.
    pub server_extended_capabilities: u32,
    /// Part of the current response already went to the client (a failed statement can then
    /// not be retried elsewhere).
    pub response_started: bool,
    /// Backend statements evicted from the cache, closed with the next request.
    pending_closes: Vec<u32>,
    /// A statement of Tessera's own appended to the client's query (`;SELECT ...`): its
    /// result follows the client's, which the forwarder ends before it.
    pub own_tail: OwnTail,
    /// Answers of commands queued ahead of the next one (a deferred BEGIN), read and checked
    /// before its response.
    pending_oks: u8,
    /// A COMMIT or ROLLBACK of a transaction that only read waits in the write buffer for the
    /// next command (see [`BackendConn::queue_end_of_reads`]): where its packet starts and
    /// ends there.
    queued_end: Option<std::ops::Range<usize>>,
}

/// Where a statement of Tessera's own appended to a client's query stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OwnTail {
    #[default]
    None,
    /// Sent behind the client's statement; the server runs it only if that one succeeds.
    Appended,
    /// The client's statement succeeded: the appended statement's result is next on the wire.
    Due,
}

impl BackendConn {
    pub fn new(
        io: PacketStream<Stream>,
        server: ServerRef,
        thread_id: u32,
        capabilities: u32,
        server_version: String,
        stmt_cache_size: usize,
    ) -> Self {
        let now = Instant::now();
        BackendConn {
            io,
            server,
            thread_id,
            capabilities,
            server_version,
            state: SessionVars::after_handshake(BACKEND_COLLATION_ID, None),
            stmts: StmtCache::new(stmt_cache_size),
            stmts_schema: None,
            parked_stmts: Vec::new(),
            schema_changes: Arc::default(),
            created: now,
            last_used: now,
            broken: false,
            in_transaction: false,
            pinned_state: false,
            extended_metadata: false,
            server_extended_capabilities: 0,
            response_started: false,
            pending_closes: Vec::new(),
            own_tail: OwnTail::None,
            pending_oks: 0,
            queued_end: None,
        }
    }

    /// The error for an I/O failure on this connection; marks it broken.
    pub fn lost(&mut self, e: tessera_protocol::ProtocolError) -> ProxyError {
        self.broken = true;
        lost(&self.server, e)
    }

    /// Starts a new command: queues pending statement closes and the command packet.
    pub fn begin_command(&mut self, build: impl FnOnce(&mut BytesMut)) {
        for id in self.pending_closes.drain(..) {
            self.io.reset_seq();
            self.io.write_with(|b| encode_close(b, id));
        }
        self.io.reset_seq();
        self.io.write_with(build);
    }

    pub async fn flush(&mut self) -> Result<(), ProxyError> {
        self.io.flush().await.map_err(|e| self.lost(e))?;
        self.queued_end = None;
        Ok(())
    }

    /// The next packet of the current answer when it is already whole in the read buffer and
    /// no queued command's answer comes before it (None: use [`Self::read`]).
    pub fn read_buffered(&mut self) -> Option<Bytes> {
        if self.pending_oks > 0 {
            return None;
        }
        self.io.read_buffered_packet()
    }

    pub async fn read(&mut self) -> Result<Bytes, ProxyError> {
        if let Some(packet) = self.read_buffered() {
            return Ok(packet);
        }
        self.read_pending().await?;
        self.io.read_packet().await.map_err(|e| self.lost(e))
    }

    /// Reads and checks the answers of commands queued ahead of the current one.
    async fn read_pending(&mut self) -> Result<(), ProxyError> {
        while self.pending_oks > 0 {
            self.pending_oks -= 1;
            let answer = self.io.read_packet().await.map_err(|e| self.lost(e))?;
            if is_err(&answer) {
                // The command behind it still has its answer on the way: the connection is
                // out of step.
                self.broken = true;
                return Err(ProxyError::Backend(ErrPacket::parse(&answer)?));
            }
        }
        Ok(())
    }

    /// True while answers of queued commands were not read (the connection cannot be shared).
    pub fn has_pending_answers(&self) -> bool {
        self.pending_oks > 0
    }

    /// Queues a `BEGIN` whose answer is checked before the next command's: a client's BEGIN
    /// travels with its first statement.
    ///
    /// A BEGIN commits the open transaction first, so a queued COMMIT or ROLLBACK of reads
    /// that is the last thing in the write buffer is taken out: the server runs one command
    /// for the two (for a transaction of pure reads both end the snapshot and release the
    /// metadata locks; nothing else differs). Returns whether that happened.
    pub fn queue_begin(&mut self) -> bool {
        let folded = self.unqueue_end_of_reads();
        self.begin_command(|b| {
            b.extend_from_slice(&[COM_QUERY]);
            b.extend_from_slice(b"BEGIN");
        });
        self.pending_oks += 1;
        self.in_transaction = true;
        folded
    }

    /// Takes a queued COMMIT/ROLLBACK of reads back out of the write buffer when nothing was
    /// queued behind it.
    fn unqueue_end_of_reads(&mut self) -> bool {
        let Some(end) = self.queued_end.clone() else {
            return false;
        };
        if self.io.pending_write() != end.end || !self.io.unqueue_from(end.start) {
            return false;
        }
        self.queued_end = None;
        self.pending_oks -= 1;
        true
    }

    /// Queues the COMMIT or ROLLBACK of a transaction that ran only pure reads: the connection
    /// goes back to its pool at once and the statement travels with the next command written
    /// on it (its OK is checked first). For such a transaction the two are the same: they end
    /// the snapshot and release metadata locks, and cannot fail while the connection lives.
    /// The pool sends it on its own if no command comes soon (the pool's `settle`).
    pub fn queue_end_of_reads(&mut self, commit: bool) {
        let sql: &[u8] = if commit { b"COMMIT" } else { b"ROLLBACK" };
        self.begin_command(|b| {
            b.extend_from_slice(&[COM_QUERY]);
            b.extend_from_slice(sql);
        });
        let end = self.io.pending_write();
        self.pending_oks += 1;
        self.in_transaction = false;
        self.queued_end = Some(end - (4 + 1 + sql.len())..end);
    }

    /// True while a queued COMMIT/ROLLBACK was not written yet.
    pub fn has_queued_end(&self) -> bool {
        self.queued_end.is_some()
    }

    /// Sends whatever is queued and reads the answers of queued commands.
    pub async fn settle(&mut self) -> Result<(), ProxyError> {
        self.flush().await?;
        self.read_pending().await
    }

    /// Runs a statement that answers with OK (SET, USE ...); tracks the reported state.
    pub async fn simple_command(&mut self, sql: &str) -> Result<OkPacket, ProxyError> {
        self.begin_command(|b| {
            b.extend_from_slice(&[COM_QUERY]);
            b.extend_from_slice(sql.as_bytes());
        });
        self.flush().await?;
        self.read_ok().await
    }

    /// Reads one OK/ERR answer; a result set here is a protocol surprise and breaks the connection.
    pub async fn read_ok(&mut self) -> Result<OkPacket, ProxyError> {
        let ok = self.read_ok_packet().await?;
        self.apply_changes(&ok.session_changes()?);
        Ok(ok)
    }

    /// Reads one OK/ERR answer without taking the changes it reports.
    async fn read_ok_packet(&mut self) -> Result<OkPacket, ProxyError> {
        let p = self.read().await?;
        if is_err(&p) {
            return Err(ProxyError::Backend(ErrPacket::parse(&p)?));
        }
        if !is_ok(&p) {
            self.broken = true;
            return Err(ProxyError::BackendUnavailable {
                server: self.server.name.clone(),
                reason: "unexpected result set for an internal statement".into(),
            });
        }
        Ok(OkPacket::parse(&p, self.capabilities)?)
    }

    /// Changes the default schema with COM_INIT_DB.
    pub async fn init_db(&mut self, schema: &str) -> Result<(), ProxyError> {
        self.begin_command(|b| {
            b.extend_from_slice(&[COM_INIT_DB]);
            b.extend_from_slice(schema.as_bytes());
        });
        self.flush().await?;
        self.read_ok().await?;
        self.state.schema = Some(schema.to_string());
        Ok(())
    }

    /// COM_RESET_CONNECTION: back to a fresh session (prepared statements are gone too). A
    /// ROLLBACK goes first, in the same write: MariaDB's reset can leave an InnoDB transaction
    /// running (one left open by a statement that failed with autocommit off, 1205), which
    /// would hold its locks on the pooled connection the next client gets.
    pub async fn reset(&mut self) -> Result<(), ProxyError> {
        self.begin_command(|b| {
            b.extend_from_slice(&[COM_QUERY]);
            b.extend_from_slice(b"ROLLBACK AND NO CHAIN NO RELEASE");
        });
        self.pending_oks += 1;
        self.begin_command(|b| b.extend_from_slice(&[COM_RESET_CONNECTION]));
        self.flush().await?;
        self.read_ok().await?;
        let schema = self.state.schema.take();
        self.state = SessionVars::after_handshake(BACKEND_COLLATION_ID, schema);
        self.stmts.clear();
        self.in_transaction = false;
        self.pinned_state = false;
        // The reset put session tracking back to the server default: switch it on again.
        self.simple_command(super::connect::INIT_SQL).await?;
        Ok(())
    }

    /// Queues `SET SESSION last_insert_id = value` ahead of the next command, its OK checked
    /// before that command's answer (no round trip of its own).
    pub fn queue_last_insert_id_set(&mut self, value: u64) {
        self.begin_command(|b| {
            b.extend_from_slice(&[COM_QUERY]);
            b.extend_from_slice(format!("SET SESSION last_insert_id = {value}").as_bytes());
        });
        self.pending_oks += 1;
        self.state.last_insert_id = value;
    }

    /// Queues the read of LAST_INSERT_ID() ([`LAST_INSERT_ID_SQL`]) behind the command already
    /// queued (pipelined).
    pub fn queue_last_insert_id_query(&mut self) {
        self.queue_query(LAST_INSERT_ID_SQL);
    }

    /// Queues a COM_QUERY of `sql` (sent with the next flush).
    fn queue_query(&mut self, sql: &str) {
        self.begin_command(|b| {
            b.extend_from_slice(&[COM_QUERY]);
            b.extend_from_slice(sql.as_bytes());
        });
    }

    /// Reads the answer of a queued or appended [`LAST_INSERT_ID_SQL`]: the value, leaving the
    /// connection at 0.
    pub async fn read_last_insert_id(&mut self) -> Result<u64, ProxyError> {
        let (_, rows) = self.read_text_result().await?;
        let value = rows
            .first()
            .and_then(|r| r.first())
            .cloned()
            .flatten()
            .unwrap_or_default();
        let id = String::from_utf8_lossy(&value).parse().unwrap_or(0);
        self.state.last_insert_id = 0;
        Ok(id)
    }

    /// Runs a query and decodes its text result (for Tessera's own small queries).
    pub async fn query_rows(&mut self, sql: &str) -> Result<TextResult, ProxyError> {
        self.queue_query(sql);
        self.flush().await?;
        self.read_text_result().await
    }

    /// The column definitions of `sql`'s result as the server sent them (its rows read and
    /// dropped), in the form `self.extended_metadata` says.
    pub async fn query_definitions(&mut self, sql: &str) -> Result<Vec<Bytes>, ProxyError> {
        self.queue_query(sql);
        self.flush().await?;
        let mut definitions = Vec::new();
        self.read_result_packets(|p| {
            if let ResultPacket::Definition(d) = p {
                definitions.push(d);
            }
            Ok(())
        })
        .await?;
        Ok(definitions)
    }

    /// Reads one text result (Tessera's own small queries).
    async fn read_text_result(&mut self) -> Result<TextResult, ProxyError> {
        let extended = self.extended_metadata;
        let (mut columns, mut rows) = (Vec::new(), Vec::new());
        self.read_result_packets(|p| {
            match p {
                ResultPacket::Definition(d) => columns.push(ColumnDefinition::parse_with(&d, extended)?),
                ResultPacket::Row(r) => rows.push(parse_text_row(&r, columns.len())?),
            }
            Ok(())
        })
        .await?;
        Ok((columns, rows))
    }

    /// Reads one text result, handing each column definition and each row to `each` as the
    /// server sent it (backends never use DEPRECATE_EOF: an EOF follows the definitions).
    async fn read_result_packets(
        &mut self,
        mut each: impl FnMut(ResultPacket) -> Result<(), ProxyError>,
    ) -> Result<(), ProxyError> {
        let first = self.read().await?;
        if is_err(&first) {
            return Err(ProxyError::Backend(ErrPacket::parse(&first)?));
        }
        let count = tessera_protocol::codec::Reader::new(&first).lenenc_int()?;
        for _ in 0..count {
            each(ResultPacket::Definition(self.read().await?))?;
        }
        self.read().await?;
        loop {
            let p = self.read().await?;
            if is_eof(&p) {
                return Ok(());
            }
            if is_err(&p) {
                return Err(ProxyError::Backend(ErrPacket::parse(&p)?));
            }
            each(ResultPacket::Row(p))?;
        }
    }

    /// Returns the backend handle for `sql`, preparing it here first if needed.
    /// Forgets every prepared handle (closed with the next command): their string literals
    /// took the connection's character set and collation when they were prepared.
    /// Learns what the server reported changed. A statement is parsed at PREPARE, so a change
    /// of sql_mode or of the connection character set drops the handles prepared before it.
    pub fn apply_changes(&mut self, changes: &[tessera_protocol::response::SessionChange]) {
        use tessera_protocol::response::SessionChange;
        let reparse = changes.iter().any(|c| {
            matches!(c, SessionChange::SystemVariable { name, value }
                if PARSE_VARIABLES.contains(&name.as_str()) && self.state.vars().get(name) != Some(value))
        });
        self.state.apply_changes(changes);
        if reparse {
            self.forget_prepared();
        }
    }

    pub fn forget_prepared(&mut self) {
        let handles = self.stmts.drain();
        self.pending_closes.extend(handles.into_iter().map(|s| s.id));
        for (_, mut cache) in self.parked_stmts.drain(..) {
            self.pending_closes.extend(cache.drain().into_iter().map(|s| s.id));
        }
    }

    /// Makes `stmts` the cache of the connection's current default schema: a handle prepared
    /// under another schema names that schema's tables. Caches of other schemas are kept
    /// while they are small together.
    fn use_schema_statements(&mut self) {
        if self.stmts_schema == self.state.schema {
            return;
        }
        let wanted = self.state.schema.clone();
        let next = match self.parked_stmts.iter().position(|(s, _)| *s == wanted) {
            Some(i) => self.parked_stmts.swap_remove(i).1,
            None => StmtCache::new(self.stmts.capacity()),
        };
        let previous = std::mem::replace(&mut self.stmts, next);
        let old_schema = std::mem::replace(&mut self.stmts_schema, wanted);
        self.parked_stmts.push((old_schema, previous));
        let parked: usize = self.parked_stmts.iter().map(|(_, c)| c.len()).sum();
        if parked > self.stmts.capacity() {
            // Too many handles kept for other schemas: close the oldest cache's.
            let (_, mut oldest) = self.parked_stmts.remove(0);
            self.pending_closes.extend(oldest.drain().into_iter().map(|s| s.id));
        }
    }

    /// The backend handle of `sql`, from `memo` when it was remembered from this connection's
    /// current cache (no lookup by text), else as [`BackendConn::prepare`] finds or makes it;
    /// `memo` then remembers it.
    pub async fn prepare_remembered(
        &mut self,
        sql: &SqlText,
        memo: &mut Option<Remembered>,
    ) -> Result<u32, ProxyError> {
        self.use_schema_statements();
        if let Some(id) = memo.and_then(|m| self.stmts.recall(&m)) {
            return Ok(id);
        }
        // Remembered from another connection (or before a change here): one lookup by text.
        if let Some(found) = self.stmts.remember(sql) {
            *memo = Some(found);
            return Ok(found.id());
        }
        let id = self.prepare(sql).await?.id;
        *memo = self.stmts.remember(sql);
        Ok(id)
    }

    /// The parameter types to send with an execution of the statement `memo` names: None when
    /// this connection's server already holds exactly `types` for it (see
    /// [`StmtCache::needs_types`]).
    pub fn types_to_send<'t>(&mut self, memo: Option<&Remembered>, types: &'t [u8]) -> Option<&'t [u8]> {
        let needed = memo.is_none_or(|m| self.stmts.needs_types(m, types));
        needed.then_some(types)
    }

    /// The backend handle of `sql`, from the cache whatever its age (an execution's answer
    /// describes its columns as they are now), else prepared here.
    pub async fn prepare(&mut self, sql: &SqlText) -> Result<BackendStmt, ProxyError> {
        self.prepare_since(sql, 0).await
    }

    /// Like [`Self::prepare`] for a client's PREPARE, whose answer describes the columns: a
    /// cached handle prepared before the latest schema change that went through this process
    /// is closed and prepared again, as the server would describe the table now.
    pub async fn prepare_current(&mut self, sql: &SqlText) -> Result<BackendStmt, ProxyError> {
        let latest = self.schema_changes.current();
        self.prepare_since(sql, latest).await
    }

    /// The cached handle of `sql` if it was prepared after `schema_epoch` schema changes,
    /// else a new one (an older cached handle is closed).
    async fn prepare_since(&mut self, sql: &SqlText, schema_epoch: u64) -> Result<BackendStmt, ProxyError> {
        self.use_schema_statements();
        if let Some(stmt) = self.stmts.get(sql) {
            if stmt.schema_epoch >= schema_epoch {
                return Ok(stmt);
            }
            self.forget_statement(sql);
        }
        self.prepare_anew(sql).await
    }

    /// Prepares `sql` on the backend and caches it (closing what makes room for it).
    async fn prepare_anew(&mut self, sql: &SqlText) -> Result<BackendStmt, ProxyError> {
        // Close the least recently used handle in the same write, before the new one exists,
        // so the backend never holds more than `prepared_cache_size` of ours.
        if let Some(evicted) = self.stmts.make_room() {
            self.pending_closes.push(evicted.id);
        }
        let stmt = self.prepare_on_server(sql).await?;
        if let Some(evicted) = self.stmts.insert(sql.clone(), stmt.clone()) {
            self.pending_closes.push(evicted.id);
        }
        Ok(stmt)
    }

    /// COM_STMT_PREPARE of `sql` and its answer (not cached).
    async fn prepare_on_server(&mut self, sql: &SqlText) -> Result<BackendStmt, ProxyError> {
        let schema_epoch = self.schema_changes.current();
        self.begin_command(|b| encode_prepare(b, sql));
        self.flush().await?;
        let first = self.read().await?;
        if is_err(&first) {
            return Err(ProxyError::Backend(ErrPacket::parse(&first)?));
        }
        let ok = PrepareOk::parse(&first)?;
        let packets = self.read_prepare_metadata(ok).await?;
        Ok(BackendStmt {
            id: ok.stmt_id,
            num_params: ok.num_params,
            num_columns: ok.num_columns,
            metadata: Arc::from(packets),
            schema_epoch,
        })
    }

    /// A handle for `sql` parsed as the server parses it under the parse variables of `want`
    /// (a client statement's PREPARE), which differ from this connection's now: they are set
    /// for the PREPARE and set back after it, so the connection's state and its cached handles
    /// (parsed under its own variables) stay as they were. The handle is not cached: the
    /// caller closes it after its execution ([`BackendConn::close_later`]).
    pub async fn prepare_parsed_under(
        &mut self,
        sql: &SqlText,
        want: &BTreeMap<String, String>,
    ) -> Result<u32, ProxyError> {
        let have = self.state.vars_copy().clone();
        let (Some(to_want), Some(back)) = (parse_variables_set(want, &have), parse_variables_set(&have, want)) else {
            return Ok(self.prepare(sql).await?.id);
        };
        self.internal_set(&to_want).await?;
        let prepared = self.prepare_on_server(sql).await;
        if let Err(e) = self.internal_set(&back).await {
            // The connection's parse variables are not known now.
            self.broken = true;
            return Err(e);
        }
        prepared.map(|stmt| stmt.id)
    }

    /// A SET of Tessera's own whose reported changes are not taken into the connection's
    /// state (the caller sets everything back).
    async fn internal_set(&mut self, sql: &str) -> Result<(), ProxyError> {
        self.begin_command(|b| {
            b.extend_from_slice(&[COM_QUERY]);
            b.extend_from_slice(sql.as_bytes());
        });
        self.flush().await?;
        self.read_ok_packet().await.map(drop)
    }

    /// Closes the handle `id` with the next command (after the one just begun).
    pub fn close_later(&mut self, id: u32) {
        self.pending_closes.push(id);
    }

    /// Reads parameter and column definitions (each block ends with an EOF on backends).
    async fn read_prepare_metadata(&mut self, ok: PrepareOk) -> Result<Vec<Bytes>, ProxyError> {
        let mut packets = Vec::new();
        for block in [ok.num_params, ok.num_columns] {
            if block == 0 {
                continue;
            }
            for _ in 0..block {
                packets.push(self.read().await?);
            }
            let eof = self.read().await?;
            if !is_eof(&eof) {
                self.broken = true;
                return Err(ProxyError::BackendUnavailable {
                    server: self.server.name.clone(),
                    reason: "malformed prepare response".into(),
                });
            }
        }
        Ok(packets)
    }

    /// Drops a cached statement the backend no longer knows, or closes one explicitly.
    pub fn forget_statement(&mut self, sql: &[u8]) {
        if let Some(stmt) = self.stmts.remove(sql) {
            self.pending_closes.push(stmt.id);
        }
    }

    /// The pool flavour this connection belongs to.
    pub fn flavour(&self) -> Flavour {
        Flavour {
            found_rows: self.capabilities & CLIENT_FOUND_ROWS != 0,
            extended_metadata: self.extended_metadata,
        }
    }

    /// True when this connection uses classic EOF packets (always, for Tessera's backends).
    pub fn uses_eof(&self) -> bool {
        self.capabilities & CLIENT_DEPRECATE_EOF == 0
    }
}

/// The connection-level flags a backend connection is opened with; sessions borrow only
/// connections of their own flavour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flavour {
    /// CLIENT_FOUND_ROWS: affected rows count matched rows (JDBC's default).
    pub found_rows: bool,
    /// MariaDB extended column metadata.
    pub extended_metadata: bool,
}

impl Flavour {
    pub const COUNT: usize = 4;

    pub fn index(self) -> usize {
        usize::from(self.found_rows) | usize::from(self.extended_metadata) << 1
    }
}
