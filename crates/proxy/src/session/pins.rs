//! Session state that cannot be replayed on another backend connection, and therefore pins a
//! session to its connection until the state goes away. Each reason is named (logs, metrics).

use crate::metrics::PIN_REASONS;
use std::collections::BTreeSet;
use tessera_sql::{Classification, Flags, StatementKind};

/// Everything that currently pins a session.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pins {
    temp_tables: BTreeSet<String>,
    user_locks: u32,
    table_locks: bool,
    /// `FLUSH TABLES [t, ...] WITH READ LOCK` / `FOR EXPORT`: held until UNLOCK TABLES (a
    /// transaction's start does not release the global read lock).
    read_lock: bool,
    /// `BACKUP STAGE START` until `BACKUP STAGE END`.
    backup_stage: bool,
    /// `BACKUP LOCK t` until `BACKUP UNLOCK`.
    backup_lock: bool,
    /// Only the server knows FOUND_ROWS() (SQL_CALC_FOUND_ROWS, INSERT ... SELECT, a LIMIT
    /// past the end, see [`tessera_sql::FoundRowsEffect::Server`]): read on the same connection.
    found_rows_next: bool,
    /// Client statement ids with an open server-side cursor.
    cursors: BTreeSet<u32>,
    xa: bool,
    /// SET TRANSACTION (without SESSION) applies to the next transaction only.
    next_transaction: bool,
    sql_prepared: BTreeSet<String>,
    handlers: u32,
    /// The last statement left warnings or an error: SHOW WARNINGS must see them.
    diagnostics_next: bool,
    /// The session seeded RAND() (`rand_seed1`/`rand_seed2`): the generator's state moves
    /// with every RAND() and cannot be replayed elsewhere.
    rand_seeded: bool,
    /// `sql_auto_is_null` is on: `WHERE id IS NULL` reads the row the connection inserted last
    /// (ODBC's way to find it), which only the connection that inserted it knows.
    auto_is_null: bool,
    /// `optimizer_trace` is enabled: information_schema.OPTIMIZER_TRACE shows the trace of the
    /// connection's last statement.
    optimizer_trace: bool,
    /// Stored code (a procedure, function or trigger, a compound statement, dynamic SQL)
    /// changed the connection's session state in a way session tracking did not spell out
    /// (user variables, temporary tables, the tracking itself): only this connection has it,
    /// until the session ends or resets.
    unseen_state: bool,
    /// The diagnostics area may stay on its connection, unread, past one point where the
    /// connection would otherwise go back: it was raised inside a transaction and has not
    /// been carried past one yet (see [`Pins::carry_diagnostics`]).
    diagnostics_carriable: bool,
}

impl Pins {
    pub fn is_pinned(&self) -> bool {
        self.active() != 0
    }

    /// GET_LOCK took a lock that no RELEASE_LOCK / RELEASE_ALL_LOCKS has let go of yet.
    pub fn holds_user_locks(&self) -> bool {
        self.user_locks > 0
    }

    /// The current reasons as a bit set: bit i is `metrics::PIN_REASONS[i]` (no allocation,
    /// cheap enough for every statement).
    pub fn active(&self) -> u16 {
        let on = [
            !self.temp_tables.is_empty(),
            self.user_locks > 0,
            self.table_locks || self.read_lock,
            self.found_rows_next,
            !self.cursors.is_empty(),
            self.xa,
            self.next_transaction,
            !self.sql_prepared.is_empty(),
            self.handlers > 0,
            self.diagnostics_next,
            self.rand_seeded,
            self.auto_is_null,
            self.backup_stage || self.backup_lock,
            self.optimizer_trace,
            self.unseen_state,
        ];
        on.iter()
            .enumerate()
            .fold(0, |bits, (i, &b)| if b { bits | 1 << i } else { bits })
    }

    /// Current reasons, named as in the metrics.
    pub fn reasons(&self) -> Vec<&'static str> {
        reason_names(self.active()).collect()
    }

    /// True while FOUND_ROWS() must come from the server (after SQL_CALC_FOUND_ROWS).
    pub fn expects_server_found_rows(&self) -> bool {
        self.found_rows_next
    }

    /// Whether only the connection knows FOUND_ROWS() now (kept for one more statement).
    pub fn set_server_found_rows(&mut self, server_knows: bool) {
        self.found_rows_next = server_knows;
    }

    /// Updates the pins after a statement ran; `ok` is false when it failed.
    /// FOUND_ROWS() is followed apart, by [`Pins::set_server_found_rows`].
    pub fn after_statement(&mut self, sql: &str, c: &Classification, ok: bool, in_transaction: bool) {
        self.diagnostics_next = false;
        if self.next_transaction && !matches!(c.kind, StatementKind::Set(_)) && !in_transaction {
            self.next_transaction = false;
        }
        if !ok {
            return;
        }
        self.track_kind(sql, c);
        self.track_functions(c);
    }

    fn track_kind(&mut self, sql: &str, c: &Classification) {
        match &c.kind {
            StatementKind::CreateTemporaryTable(name) => {
                self.temp_tables.insert(name.to_ascii_lowercase());
            }
            StatementKind::DropTemporaryTable(names) | StatementKind::DropTable(names) => {
                for n in names {
                    self.temp_tables.remove(&n.to_ascii_lowercase());
                }
            }
            StatementKind::LockTables => self.table_locks = true,
            StatementKind::UnlockTables => (self.table_locks, self.read_lock) = (false, false),
            StatementKind::Begin | StatementKind::StartTransactionReadOnly => self.table_locks = false,
            StatementKind::Flush if takes_read_lock(sql) => self.read_lock = true,
            StatementKind::Other => self.track_backup(sql),
            StatementKind::Set(tessera_sql::SetKind::StatementFor) => self.track_inner_statement(sql),
            StatementKind::Set(tessera_sql::SetKind::TransactionNext) => self.next_transaction = true,
            // `SET @@tx_isolation = ...` without a scope: the next transaction only, untracked.
            StatementKind::Set(_) if tessera_sql::sets_next_transaction(sql, true) => self.next_transaction = true,
            StatementKind::Xa => self.track_xa(sql),
            StatementKind::Prepare => {
                if let Some(name) = word(sql, 1) {
                    self.sql_prepared.insert(name);
                }
            }
            StatementKind::Deallocate => {
                if let Some(name) = word(sql, 2) {
                    self.sql_prepared.remove(&name);
                }
            }
            StatementKind::Handler => match word(sql, 2).as_deref() {
                Some("open") => self.handlers += 1,
                Some("close") => self.handlers = self.handlers.saturating_sub(1),
                _ => {}
            },
            _ => {}
        }
    }

    /// `SET STATEMENT ... FOR <statement>`: the inner statement takes its pins (LOCK TABLES,
    /// a temporary table, ...). One level only: MariaDB refuses a SET STATEMENT inside another.
    fn track_inner_statement(&mut self, sql: &str) {
        let Some(inner) = inner_statement(sql) else {
            return;
        };
        let class = tessera_sql::classify(inner);
        if !matches!(class.kind, StatementKind::Set(tessera_sql::SetKind::StatementFor)) {
            self.track_kind(inner, &class);
        }
    }

    /// `sql_auto_is_null` is on: every statement may read LAST_INSERT_ID() (`WHERE id IS NULL`).
    pub fn auto_is_null(&self) -> bool {
        self.auto_is_null
    }

    /// Follows the session's `optimizer_trace` (`enabled=on,...` while tracing).
    pub fn follow_optimizer_trace(&mut self, value: Option<&str>) {
        self.optimizer_trace = value.is_some_and(|v| v.to_ascii_lowercase().contains("enabled=on"));
    }

    /// Follows the session's `sql_auto_is_null` (its value as the session state holds it).
    pub fn follow_auto_is_null(&mut self, value: Option<&str>) {
        self.auto_is_null = value.is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("ON"));
    }

    /// The connection holds session state Tessera could not read (see `unseen_state`).
    pub fn hold_unseen_state(&mut self) {
        self.unseen_state = true;
    }

    /// The session seeded RAND() on its connection: it stays there for good.
    pub fn seed_rand(&mut self) {
        self.rand_seeded = true;
    }

    /// The client has an XA transaction open on its connection.
    /// Whether the session created a temporary table of this name (which a `DROP TABLE` of
    /// that name drops first, on the session's own connection).
    pub fn has_temp_table(&self, name: &str) -> bool {
        let name = name.rsplit('.').next().unwrap_or(name);
        self.temp_tables.contains(&name.trim_matches('`').to_ascii_lowercase())
    }

    pub fn in_xa(&self) -> bool {
        self.xa
    }

    /// `BACKUP STAGE x` (START takes the backup lock, END lets it go) and `BACKUP LOCK t` /
    /// `BACKUP UNLOCK`.
    fn track_backup(&mut self, sql: &str) {
        let mut words = tessera_sql::Lexer::new(sql).filter(|t| t.is_significant());
        if !words.next().is_some_and(|t| t.is_word("BACKUP")) {
            return;
        }
        match words.next() {
            Some(t) if t.is_word("STAGE") => match words.next() {
                Some(t) if t.is_word("END") => self.backup_stage = false,
                Some(_) => self.backup_stage = true,
                None => {}
            },
            Some(t) if t.is_word("LOCK") => self.backup_lock = true,
            Some(t) if t.is_word("UNLOCK") => self.backup_lock = false,
            _ => {}
        }
    }

    fn track_xa(&mut self, sql: &str) {
        match word(sql, 1).as_deref() {
            Some("start") | Some("begin") => self.xa = true,
            Some("commit") | Some("rollback") => self.xa = false,
            _ => {}
        }
    }

    fn track_functions(&mut self, c: &Classification) {
        if c.flags.contains(Flags::GET_LOCK) {
            self.user_locks += 1;
        }
        if c.flags.contains(Flags::RELEASE_LOCK) {
            self.user_locks = self.user_locks.saturating_sub(1);
        }
        if c.flags.contains(Flags::RELEASE_ALL_LOCKS) {
            self.user_locks = 0;
        }
    }

    /// True when the only pins are the ones that last one statement (diagnostics, found_rows).
    pub fn only_short_lived(&self) -> bool {
        let bits = self.active();
        bits != 0 && reason_names(bits).all(|r| SHORT_LIVED.contains(&r))
    }

    /// Ends the one-statement pins (the client stayed idle; its next statement is not the one
    /// they were kept for).
    pub fn end_short_lived(&mut self) {
        self.found_rows_next = false;
        self.diagnostics_next = false;
    }

    /// Keeps the connection for one more statement so SHOW WARNINGS / SHOW ERRORS /
    /// @@warning_count read the diagnostics of the statement that produced them.
    pub fn keep_for_diagnostics(&mut self) {
        self.diagnostics_next = true;
        self.diagnostics_carriable = false;
    }

    /// [`Pins::keep_for_diagnostics`] for an area a statement just raised; one raised inside a
    /// transaction may be carried unread past the transaction's end (COMMIT, then BEGIN).
    pub fn keep_new_diagnostics(&mut self, in_transaction: bool) {
        self.diagnostics_next = true;
        self.diagnostics_carriable = in_transaction;
    }

    /// Keeps the connection, with the area the statement before left on it, for one more
    /// statement; `releasing` when the connection would have gone back without this pin (the
    /// area is then read at the next release point: see [`Pins::may_carry_diagnostics`]).
    pub fn carry_diagnostics(&mut self, releasing: bool) {
        self.diagnostics_next = true;
        self.diagnostics_carriable &= !releasing;
    }

    /// Whether an area may be carried unread past a release point: one raised inside a
    /// transaction, once. An autocommit statement's area keeps its connection for one
    /// statement only, and a client whose statements never clear it does not keep its
    /// connection for good.
    pub fn may_carry_diagnostics(&self) -> bool {
        self.diagnostics_carriable
    }

    /// True while the held connection is kept for the previous statement's diagnostics.
    pub fn holds_diagnostics(&self) -> bool {
        self.diagnostics_next
    }

    pub fn open_cursor(&mut self, stmt_id: u32) {
        self.cursors.insert(stmt_id);
    }

    /// Returns whether that statement had a cursor open.
    pub fn close_cursor(&mut self, stmt_id: u32) -> bool {
        self.cursors.remove(&stmt_id)
    }

    pub fn has_cursor(&self, stmt_id: u32) -> bool {
        self.cursors.contains(&stmt_id)
    }

    pub fn clear(&mut self) {
        *self = Pins::default();
    }
}

/// Reasons that last one statement.
const SHORT_LIVED: [&str; 2] = ["found_rows", "diagnostics"];

/// The names of the reasons in a bit set from [`Pins::active`].
pub fn reason_names(bits: u16) -> impl Iterator<Item = &'static str> {
    PIN_REASONS
        .iter()
        .enumerate()
        .filter(move |(i, _)| bits & (1 << i) != 0)
        .map(|(_, r)| *r)
}

/// The statement a `SET STATEMENT ... FOR` runs (after the closing `*/` of a
/// `/*M!100101 SET STATEMENT x = 1 FOR */ SELECT 1` head).
pub(super) fn inner_statement(sql: &str) -> Option<&str> {
    let head = tessera_sql::statement_set_parts(sql)?.head;
    let rest = sql.get(head.end..)?.trim_start();
    Some(rest.strip_prefix("*/").unwrap_or(rest))
}

/// `FLUSH ... WITH READ LOCK` and `FLUSH TABLES t ... FOR EXPORT` hold locks on the connection.
fn takes_read_lock(sql: &str) -> bool {
    let sql = sql.trim_end().trim_end_matches(';');
    let words: Vec<_> = tessera_sql::Lexer::new(sql).filter(|t| t.is_significant()).collect();
    let ends = |tail: &[&str]| {
        words.len() >= tail.len()
            && words[words.len() - tail.len()..]
                .iter()
                .zip(tail)
                .all(|(t, w)| t.is_word(w))
    };
    ends(&["WITH", "READ", "LOCK"]) || ends(&["FOR", "EXPORT"])
}

/// The n-th whitespace-separated word, lowercased, without backquotes or a trailing `;`.
fn word(sql: &str, n: usize) -> Option<String> {
    let w = sql.split_whitespace().nth(n)?;
    Some(w.trim_end_matches(';').trim_matches('`').to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_sql::classify;

    fn run(p: &mut Pins, sql: &str) {
        p.after_statement(sql, &classify(sql), true, false);
    }

    #[test]
    fn pins_start_and_end_with_their_state() {
        let mut p = Pins::default();
        run(&mut p, "CREATE TEMPORARY TABLE t1 (a int)");
        run(&mut p, "SELECT GET_LOCK('x', 1)");
        assert_eq!(p.reasons(), vec!["temporary_table", "user_lock"]);
        run(&mut p, "DROP TEMPORARY TABLE t1");
        run(&mut p, "SELECT RELEASE_LOCK('x')");
        assert!(!p.is_pinned());
        run(&mut p, "LOCK TABLES t WRITE");
        assert_eq!(p.reasons(), vec!["lock_tables"]);
        run(&mut p, "UNLOCK TABLES");
        run(&mut p, "flush tables with read lock");
        run(&mut p, "BEGIN");
        assert_eq!(
            p.reasons(),
            vec!["lock_tables"],
            "a transaction keeps the global read lock"
        );
        run(&mut p, "UNLOCK TABLES");
        run(&mut p, "FLUSH TABLES t1, t2 FOR EXPORT;");
        assert_eq!(p.reasons(), vec!["lock_tables"]);
        run(&mut p, "unlock tables");
        run(&mut p, "FLUSH TABLES");
        assert!(!p.is_pinned(), "a plain flush holds nothing");
        run(&mut p, "BACKUP STAGE START");
        run(&mut p, "backup stage block_commit");
        assert_eq!(p.reasons(), vec!["backup"]);
        run(&mut p, "BACKUP STAGE END");
        run(&mut p, "BACKUP LOCK t1");
        assert_eq!(p.reasons(), vec!["backup"]);
        run(&mut p, "BACKUP UNLOCK");
        assert!(!p.is_pinned());
        run(
            &mut p,
            "SET STATEMENT max_statement_time=900 FOR LOCK TABLES `t1` WRITE",
        );
        assert_eq!(p.reasons(), vec!["lock_tables"], "SET STATEMENT's inner statement pins");
        run(
            &mut p,
            "/*M!100101 SET STATEMENT lock_wait_timeout=5 FOR */ UNLOCK TABLES",
        );
        run(
            &mut p,
            "SET STATEMENT sql_mode='' FOR CREATE TEMPORARY TABLE t9 (a INT)",
        );
        assert_eq!(p.reasons(), vec!["temporary_table"]);
        run(
            &mut p,
            "SET STATEMENT sql_mode='' FOR SET STATEMENT sql_mode='' FOR DROP TEMPORARY TABLE t9",
        );
        assert_eq!(
            p.reasons(),
            vec!["temporary_table"],
            "MariaDB refuses a nested SET STATEMENT"
        );
        run(&mut p, "DROP TEMPORARY TABLE t9");
        assert!(!p.is_pinned());
        p.set_server_found_rows(true);
        assert_eq!(p.reasons(), vec!["found_rows"]);
        p.set_server_found_rows(false);
        assert!(!p.is_pinned());
        run(&mut p, "XA START 'x'");
        assert_eq!(p.reasons(), vec!["xa"]);
        run(&mut p, "XA COMMIT 'x'");
        run(&mut p, "PREPARE s FROM 'select 1'");
        assert_eq!(p.reasons(), vec!["sql_prepare"]);
        run(&mut p, "DEALLOCATE PREPARE s");
        run(&mut p, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
        assert_eq!(p.reasons(), vec!["next_transaction"]);
        p.after_statement("BEGIN", &classify("BEGIN"), true, true);
        assert!(p.is_pinned(), "still inside the transaction it applies to");
        run(&mut p, "COMMIT");
        assert!(!p.is_pinned());
    }

    #[test]
    fn short_lived_pins_are_told_apart() {
        let mut p = Pins::default();
        p.keep_for_diagnostics();
        assert!(p.only_short_lived());
        run(&mut p, "CREATE TEMPORARY TABLE t (a INT)");
        p.keep_for_diagnostics();
        assert!(!p.only_short_lived(), "a temporary table keeps the pin");
        p.end_short_lived();
        assert_eq!(p.reasons(), vec!["temporary_table"]);
    }

    /// The order `Session::finish` follows: the statement's own pins, then where its
    /// diagnostics area goes.
    #[test]
    fn only_an_area_raised_inside_a_transaction_is_carried_past_one_release_point() {
        let mut p = Pins::default();
        p.keep_new_diagnostics(true);
        assert!(
            p.holds_diagnostics() && p.may_carry_diagnostics(),
            "raised inside a transaction"
        );
        p.after_statement("SELECT 1", &classify("SELECT 1"), true, true);
        p.carry_diagnostics(false);
        assert!(p.may_carry_diagnostics(), "still inside: the connection stays anyway");
        p.after_statement("COMMIT", &classify("COMMIT"), true, false);
        p.carry_diagnostics(true);
        assert!(p.holds_diagnostics(), "kept past the COMMIT, unread");
        assert!(!p.may_carry_diagnostics(), "but only past one release point");

        let mut p = Pins::default();
        p.keep_new_diagnostics(false);
        assert!(
            p.holds_diagnostics() && !p.may_carry_diagnostics(),
            "an autocommit statement's area"
        );
        p.keep_new_diagnostics(true);
        p.keep_for_diagnostics();
        assert!(
            !p.may_carry_diagnostics(),
            "an area read back and kept is never carried"
        );
    }

    #[test]
    fn failed_statements_pin_nothing() {
        let mut p = Pins::default();
        p.after_statement(
            "CREATE TEMPORARY TABLE t (",
            &classify("CREATE TEMPORARY TABLE t ("),
            false,
            false,
        );
        assert!(!p.is_pinned());
    }
}
