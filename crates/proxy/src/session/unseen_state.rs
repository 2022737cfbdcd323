//! Session state that stored code changed where session tracking could not say what. A
//! procedure, a stored function, a trigger, a compound statement or dynamic SQL may set user
//! variables, create temporary tables or turn the connection's own session tracking off;
//! the server then reports only "something changed" (or, in a classic EOF packet, a status
//! flag), and nothing Tessera could replay elsewhere. Such a connection stays with its session
//! until the session ends (the pool then resets it), and its tracking is read back and set
//! again, so that Tessera goes on seeing what the session changes.

use super::execute::Stmt;
use super::Session;
use crate::backend::connect::INIT_SQL;
use crate::exec::forward::Outcome;
use crate::pool::PooledConn;
use crate::tracking::ClientTracking;
use tessera_protocol::response::SessionChange;
use tessera_sql::{Lexer, StatementKind};

/// Reads the connection's tracking, in [`ClientTracking`]'s order.
const TRACKING_READ: &str = "SELECT @@session.session_track_system_variables, \
     @@session.session_track_schema, @@session.session_track_state_change";

impl Session {
    /// After a statement: when stored code may have changed state that was not reported,
    /// the session keeps its connection for good, and the connection's tracking is checked.
    pub(super) async fn follow_unseen_state(&mut self, conn: &mut PooledConn, outcome: &Outcome, stmts: &[Stmt<'_>]) {
        let unseen = changed_unseen_state(outcome, stmts);
        if !(unseen || reports_tracking_change(&outcome.changes)) || conn.broken {
            return;
        }
        if unseen {
            self.pins.hold_unseen_state();
        }
        self.restore_backend_tracking(conn).await;
    }

    /// Reads the connection's session tracking; where stored code changed it, the client's
    /// tracking takes the new values (as on its own server), the session keeps the connection
    /// (changes made meanwhile went unreported) and Tessera's tracking is set again.
    async fn restore_backend_tracking(&mut self, conn: &mut PooledConn) {
        // The read below is a SELECT: FOUND_ROWS() of the statement is read first.
        self.learn_found_rows_before_release(conn).await;
        let tracking = match conn.query_rows(TRACKING_READ).await {
            Ok((_, rows)) => rows.first().and_then(|row| ClientTracking::from_row(row)),
            Err(_) => None,
        };
        let Some(tracking) = tracking else {
            tracing::warn!(
                session = self.id,
                "could not read back the connection's session tracking"
            );
            conn.broken = true;
            return;
        };
        if tracking.wants_everything() {
            return;
        }
        tracing::debug!(session = self.id, tracking = ?tracking, "stored code changed session tracking");
        self.tracking = tracking;
        self.pins.hold_unseen_state();
        if let Err(e) = conn.simple_command(INIT_SQL).await {
            tracing::warn!(session = self.id, error = %e, "could not set the connection's session tracking again");
            conn.broken = true;
        }
    }
}

/// Whether the server reported a change of one of the session_track_* variables.
fn reports_tracking_change(changes: &[SessionChange]) -> bool {
    changes.iter().any(|c| {
        matches!(c, SessionChange::SystemVariable { name, .. }
            if name.len() > 14 && name[..14].eq_ignore_ascii_case("session_track_"))
    })
}

/// Whether stored code may have changed session state that session tracking did not spell
/// out: a statement that may run stored code (a procedure, a stored function, a trigger)
/// reported "state changed" (user variables and temporary tables go unnamed) or the flag
/// alone (a result set's EOF says nothing), or
/// a procedure, compound statement or dynamic SQL failed (its changes up to the error stay,
/// unreported).
fn changed_unseen_state(outcome: &Outcome, stmts: &[Stmt<'_>]) -> bool {
    // A change the server named (a write's `last_gtid`) explains the flag; "state changed"
    // on its own, or the flag with nothing said (a classic EOF, tracking turned off), does not.
    let unexplained = outcome.changes.is_empty() || outcome.changes.contains(&SessionChange::StateChanged);
    // A `SET STATEMENT ... FOR` reports its own restore as a change: only the program or
    // stored function its inner statement names explains nothing.
    let may_run = |s: &Stmt<'_>| match wrapped(s) {
        Some(inner) => runs_a_program(&inner) || inner.class.flags.contains(tessera_sql::Flags::STORED_CALL),
        None => may_run_stored_code(s),
    };
    if outcome.state_changed && unexplained && stmts.iter().any(may_run) {
        return true;
    }
    let program = |s: &Stmt<'_>| runs_a_program(&wrapped(s).unwrap_or_else(|| s.clone()));
    outcome.error.is_some() && stmts.iter().any(program)
}

/// The statement a `SET STATEMENT ... FOR` runs.
fn wrapped<'a>(s: &Stmt<'a>) -> Option<Stmt<'a>> {
    if s.class.kind != StatementKind::Set(tessera_sql::SetKind::StatementFor) {
        return None;
    }
    let inner = super::pins::inner_statement(s.sql)?;
    Some(Stmt {
        sql: inner,
        class: std::borrow::Cow::Owned(tessera_sql::classify(inner)),
    })
}

/// Statement kinds whose "state changed" is not explained by what they say themselves: they
/// may call stored functions or fire triggers. (A SET's own change is its assignments, a
/// temporary table's the pin it takes, PREPARE's the statement it names), unless its values
/// call a stored function (`SET @x = f()`, whose body may set other variables).
fn may_run_stored_code(s: &Stmt<'_>) -> bool {
    use StatementKind as K;
    if let K::Set(_) = s.class.kind {
        return s.class.flags.contains(tessera_sql::Flags::STORED_CALL);
    }
    matches!(
        s.class.kind,
        K::Select
            | K::Insert
            | K::Update
            | K::Delete
            | K::Replace
            | K::Call
            | K::Execute
            | K::Do
            | K::Ddl
            | K::LoadData { .. }
            | K::Other
    )
}

/// A CALL, EXECUTE [IMMEDIATE] or compound statement: a program of several steps.
fn runs_a_program(s: &Stmt<'_>) -> bool {
    match s.class.kind {
        StatementKind::Call | StatementKind::Execute => true,
        StatementKind::Other => {
            let first = Lexer::new(s.sql).find(|t| t.is_significant());
            first.is_some_and(|t| {
                ["begin", "execute", "if", "case", "loop", "repeat", "while", "for"]
                    .iter()
                    .any(|w| t.is_word(w))
                    || s.sql.split_whitespace().next().is_some_and(|w| w.ends_with(':'))
            })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn stmt(sql: &str) -> Stmt<'_> {
        Stmt {
            sql,
            class: Cow::Owned(tessera_sql::classify(sql)),
        }
    }

    fn outcome(changes: Vec<SessionChange>) -> Outcome {
        Outcome {
            changes,
            ..Outcome::default()
        }
    }

    #[test]
    fn only_stored_code_leaves_unexplained_state() {
        let changed = || Outcome {
            state_changed: true,
            ..outcome(vec![SessionChange::StateChanged])
        };
        for sql in [
            "CALL p()",
            "INSERT INTO t VALUES (1)",
            "EXECUTE s",
            "SELECT f()",
            "SET @x = f()",
            "SET STATEMENT max_statement_time = 10 FOR CALL p()",
        ] {
            assert!(changed_unseen_state(&changed(), &[stmt(sql)]), "{sql}");
        }
        for sql in [
            "SET @x = 1",
            "SET @x = CONCAT(NOW(), @y)",
            "SET STATEMENT max_statement_time = 10 FOR SET @x = 1",
            "SET STATEMENT max_statement_time = 10 FOR SELECT 1",
            "CREATE TEMPORARY TABLE t (a INT)",
            "PREPARE s FROM 'SELECT 1'",
        ] {
            assert!(!changed_unseen_state(&changed(), &[stmt(sql)]), "{sql}");
        }
        assert!(!changed_unseen_state(&outcome(vec![]), &[stmt("CALL p()")]));
        let gtid = Outcome {
            state_changed: true,
            ..outcome(vec![SessionChange::SystemVariable {
                name: "last_gtid".into(),
                value: "0-1-19".into(),
            }])
        };
        assert!(
            !changed_unseen_state(&gtid, &[stmt("INSERT INTO t VALUES (1)")]),
            "a write's GTID is told"
        );
        let eof = Outcome {
            state_changed: true,
            ..Outcome::default()
        };
        assert!(changed_unseen_state(&eof, &[stmt("SELECT f()")]));
    }

    #[test]
    fn failed_programs_leave_unexplained_state() {
        let failed = Outcome {
            error: Some(tessera_protocol::response::ErrPacket::new(1644, "45000", "x")),
            ..Outcome::default()
        };
        for sql in [
            "CALL p()",
            "BEGIN NOT ATOMIC SET @x = 1; SIGNAL SQLSTATE '45000'; END",
            "EXECUTE IMMEDIATE 'x'",
            "SET STATEMENT max_statement_time = 10 FOR CALL p()",
        ] {
            assert!(changed_unseen_state(&failed, &[stmt(sql)]), "{sql}");
        }
        for sql in ["SELECT 1", "INSERT INTO t VALUES (1)", "BEGIN", "SET @x = 1"] {
            assert!(!changed_unseen_state(&failed, &[stmt(sql)]), "{sql}");
        }
    }

    #[test]
    fn tracking_changes_are_told_by_name() {
        let var = |name: &str| SessionChange::SystemVariable {
            name: name.into(),
            value: "OFF".into(),
        };
        assert!(reports_tracking_change(&[var("SESSION_TRACK_STATE_CHANGE")]));
        assert!(!reports_tracking_change(&[var("time_zone"), var("session_track")]));
    }

    #[test]
    fn tracking_values_are_read_as_the_server_answers() {
        let row = [Some(b"*".to_vec()), Some(b"1".to_vec()), Some(b"1".to_vec())];
        assert!(ClientTracking::from_row(&row).expect("read").wants_everything());
        let row = [Some(b"".to_vec()), Some(b"1".to_vec()), Some(b"0".to_vec())];
        let t = ClientTracking::from_row(&row).expect("read");
        assert_eq!(
            (t.system_variables.as_str(), t.schema, t.state_change),
            ("", true, false)
        );
        assert!(ClientTracking::from_row(&row[..2]).is_none());
    }
}
