//! `GET [CURRENT] DIAGNOSTICS @v = ROW_COUNT, @n = NUMBER` answered from what the session knows:
//! ROW_COUNT() follows the client's statements, not the connection a statement lands on (which
//! ran Tessera's own reads, or another client's statements, since).

use super::diagnostics::Diagnostics;
use super::{Next, Session};
use crate::error::ProxyError;
use tessera_sql::get_diagnostics::{statement_diagnostics, StatementItem};

impl Session {
    /// Sets the statement's user variables and answers OK, or None when the server must answer
    /// (other forms, an area that cannot be counted). Like the server's, it changes neither
    /// ROW_COUNT() nor the diagnostics area.
    pub(super) async fn answer_statement_diagnostics(&mut self, sql: &str) -> Result<Option<Next>, ProxyError> {
        let Some(items) = statement_diagnostics(sql) else {
            return Ok(None);
        };
        let number = match &self.diagnostics {
            _ if self.pins.holds_diagnostics() => self.count_conditions_on_held().await,
            Diagnostics::Kept(conditions) => Some(conditions.len()),
            Diagnostics::OnConnection => Some(0),
        };
        if number.is_none() && items.iter().any(|(_, item)| *item == StatementItem::Number) {
            return Ok(None);
        }
        for (name, item) in items {
            let value = match item {
                StatementItem::RowCount => self.last.row_count.to_string(),
                StatementItem::Number => number.unwrap_or_default().to_string(),
            };
            self.state.user_vars.insert(name, value);
        }
        // MariaDB's OK for GET DIAGNOSTICS counts no warnings (the area is the previous one's).
        self.ok_with(0, 0, 0).await.map(Some)
    }

    /// The conditions of the area on the held connection, read with SHOW COUNT(*) WARNINGS (a
    /// diagnostics statement: it leaves the area as it is).
    async fn count_conditions_on_held(&mut self) -> Option<usize> {
        let conn = self.binding.held_mut()?;
        match conn.query_rows("SHOW COUNT(*) WARNINGS").await {
            Ok((_, rows)) => {
                let value = rows.first()?.first()?.as_deref()?;
                std::str::from_utf8(value).ok()?.parse().ok()
            }
            Err(e) => {
                tracing::warn!(session = self.id, error = %e, "could not count the diagnostics area");
                conn.broken = true;
                None
            }
        }
    }
}
