//! Transaction edges answered without their own backend round trip: a plain BEGIN travels
//! with the transaction's first statement, and the plain COMMIT or ROLLBACK of a transaction
//! that ran only pure reads travels with the connection's next command.

use super::execute::Stmt;
use super::txn_state::TxnState;
use super::Session;
use crate::metrics::Metrics;
use tessera_sql::StatementKind;

/// A statement that reads without locking, writing or touching session state: ending a
/// transaction of only such statements cannot fail and changes nothing but the snapshot.
pub fn reads_only(s: &Stmt<'_>) -> bool {
    super::pipelined::pipelinable(&s.class)
}

impl Session {
    /// Answers a plain BEGIN, COMMIT or ROLLBACK here when the backend can learn of it later:
    /// - BEGIN while the session holds nothing: sent with the next statement, in the same
    ///   write (InnoDB takes the snapshot at the first read either way);
    /// - COMMIT or ROLLBACK of that BEGIN before any statement: the empty transaction ends here;
    /// - COMMIT or ROLLBACK of a transaction that ran only pure reads: queued on the connection,
    ///   which goes back to the pool at once (see [`crate::backend::BackendConn::queue_end_of_reads`]).
    ///
    /// Returns whether the statement is answered here: the caller then sends the client its OK
    /// (a sync decision, so the statements that are no edge pay no future for it).
    pub(super) fn defer_transaction_edge(&mut self, s: &Stmt<'_>) -> bool {
        let edge = match s.class.kind {
            StatementKind::Begin => self.binding.held().is_none(),
            StatementKind::Commit | StatementKind::Rollback => {
                (self.txn.begin_deferred() || self.ends_reads_only()) && self.completion_is_plain()
            }
            _ => false,
        };
        let free = edge
            && !self.binding.has_others()
            && !self.pins.is_pinned()
            && !self.txn.on_shards()
            && self.diagnostics.is_empty()
            && self.logical_schema().is_none();
        if !free {
            return false;
        }
        let plain = |forms: &[&str]| tessera_sql::is_plain_words(s.sql, forms);
        let commit = match s.class.kind {
            StatementKind::Begin if plain(&["begin", "begin work", "start transaction"]) => {
                self.txn = TxnState::BeginDeferred;
                None
            }
            StatementKind::Commit if plain(&["commit", "commit work"]) => Some(true),
            StatementKind::Rollback if plain(&["rollback", "rollback work"]) => Some(false),
            _ => return false,
        };
        if let Some(commit) = commit {
            self.end_transaction_here(commit);
        }
        self.last.row_count = 0;
        self.last_error = None;
        true
    }

    /// A COMMIT or ROLLBACK only ends the transaction: `completion_type` is NO_CHAIN (with
    /// CHAIN it begins the next one on that connection, with RELEASE it closes the
    /// connection, so it runs where the transaction is, as sent).
    fn completion_is_plain(&self) -> bool {
        self.completion_type() == 0
    }

    /// The session's `completion_type` as a number (0 NO_CHAIN, 1 CHAIN, 2 RELEASE).
    fn completion_type(&self) -> u8 {
        self.state
            .vars()
            .get("completion_type")
            .map_or(0, |v| tessera_sql::completion_type_level(v))
    }

    /// Whether a COMMIT or ROLLBACK chains a new transaction and whether it releases (closes)
    /// the connection, by its own options or else by `completion_type`.
    pub(super) fn transaction_end(&self, sql: &str) -> (bool, bool) {
        tessera_sql::end_options(sql).resolve(self.completion_type())
    }

    /// One of the statements is a COMMIT or ROLLBACK that releases: the server closes its
    /// connection after the OK, and the client's connection closes too.
    pub(super) fn releases(&self, stmts: &[Stmt<'_>]) -> bool {
        stmts.iter().any(|s| {
            matches!(s.class.kind, StatementKind::Commit | StatementKind::Rollback) && self.transaction_end(s.sql).1
        })
    }

    /// The held transaction began deferred and ran only pure reads, with nothing else the
    /// connection must keep for the session.
    fn ends_reads_only(&self) -> bool {
        self.txn.reads_only()
            && !self.last_insert_id_dirty
            && !self.txn.shards().is_open()
            && self
                .binding
                .held()
                .is_some_and(|c| c.in_transaction && !c.is_detached())
    }

    fn end_transaction_here(&mut self, commit: bool) {
        let deferred = self.txn.begin_deferred();
        if !self.txn.on_shards() {
            self.txn = TxnState::None;
        }
        if deferred {
            return;
        }
        if let Some(mut conn) = self.binding.take_held() {
            conn.queue_end_of_reads(commit);
            Metrics::inc(&self.ctx.metrics.queued_transaction_ends);
        }
    }
}
