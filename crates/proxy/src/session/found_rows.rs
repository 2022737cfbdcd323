//! FOUND_ROWS() across pooled connections: the number a session's next `FOUND_ROWS()` answers,
//! kept here by MariaDB's rules ([`tessera_sql::found_rows_effect`]), or, where only the server
//! knows it, the connection kept for one more statement and read before it goes back.

use super::execute::Stmt;
use super::pins::Pins;
use super::{LastStatement, Session};
use crate::pool::PooledConn;
use tessera_sql::{found_rows_effect, FoundRowsEffect};

/// The effect of a finished command's statements: a failed one leaves the number (the
/// connection it failed on may not be the one that counted it), a multi-statement is left to
/// the server when any of its statements counts.
pub fn effect_of(stmts: &[Stmt<'_>], failed: bool) -> FoundRowsEffect {
    use FoundRowsEffect as E;
    match stmts {
        [] => E::Unchanged,
        [_] if failed => E::Unchanged,
        [s] => found_rows_effect(s.sql, &s.class),
        many if many.iter().all(|s| found_rows_effect(s.sql, &s.class) == E::Unchanged) => E::Unchanged,
        _ => E::Server,
    }
}

impl Session {
    /// Follows a statement's effect on FOUND_ROWS(), `rows` being the rows its result sent.
    pub(super) fn follow_found_rows(&mut self, effect: FoundRowsEffect, rows: Option<u64>) {
        use FoundRowsEffect as E;
        let server_knows = match (effect, rows) {
            (E::Unchanged, _) => self.pins.expects_server_found_rows(),
            (E::RowsSent, Some(n)) => {
                self.last.found_rows = n;
                false
            }
            (E::OffsetPlusSent(offset), Some(n)) if n > 0 => {
                self.last.found_rows = offset.saturating_add(n);
                false
            }
            (_, rows) => {
                // A stand-in should the connection be lost before it is read.
                self.last.found_rows = rows.unwrap_or(self.last.found_rows);
                true
            }
        };
        self.pins.set_server_found_rows(server_knows);
    }

    /// Before a connection kept for FOUND_ROWS() goes back: reads the number it holds.
    pub(super) async fn learn_found_rows_before_release(&mut self, conn: &mut PooledConn) {
        learn_before_release(conn, &mut self.pins, &mut self.last, self.id).await;
    }
}

/// Reads FOUND_ROWS() before release, on the parts of a session it needs (the idle
/// release runs while the client's read is borrowed). Costs a round trip only where the
/// session did not read FOUND_ROWS() itself.
pub async fn learn_before_release(conn: &mut PooledConn, pins: &mut Pins, last: &mut LastStatement, session: u32) {
    if !pins.expects_server_found_rows() || conn.broken {
        return;
    }
    match conn.query_rows("SELECT FOUND_ROWS()").await {
        Ok((_, rows)) => {
            let value = rows.first().and_then(|r| r.first()).and_then(|v| v.as_deref());
            if let Some(n) = value.and_then(|v| std::str::from_utf8(v).ok()?.parse().ok()) {
                last.found_rows = n;
            }
        }
        Err(e) => {
            tracing::warn!(session, error = %e, "could not read FOUND_ROWS()");
            conn.broken = true;
        }
    }
    pins.set_server_found_rows(false);
}
