//! `SELECT LAST_INSERT_ID()` answered from the session's own value: Tessera knows it exactly
//! (it reads it back behind every statement that may change it), so a client that asks for it
//! after an insert (MyBatis' `selectKey`, hand-written DAOs) costs no backend round trip. The
//! column's definition is the server's own, learned once per group; the rest of the answer is
//! what the server would send: one row, no warnings (the statement reads no table, so the
//! diagnostics area stays as it was), FOUND_ROWS() 1 and ROW_COUNT() -1 after it.

use super::{Next, Session};
use crate::cluster::Group;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::pool::Flavour;
use bytes::{Bytes, BytesMut};
use tessera_protocol::codec::{put_lenenc_bytes, Reader};
use tessera_protocol::resultset::write_text_result_parts;
use tessera_protocol::PacketStream;
use tessera_sql::{Flags, StatementKind};

use super::execute::Stmt;

/// The function as written when `sql` is exactly `SELECT LAST_INSERT_ID()` (any case, plain
/// whitespace between the words and around them, nothing else): the server names the
/// column after it.
pub fn plain_select_last_insert_id(sql: &str) -> Option<&str> {
    let sql = sql.trim_matches(|c: char| c.is_ascii_whitespace());
    let rest = sql.get(6..).filter(|_| sql[..6].eq_ignore_ascii_case("select"))?;
    let name = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
    (name.len() < rest.len() && name.eq_ignore_ascii_case("last_insert_id()")).then_some(name)
}

impl Session {
    /// Answers a plain `SELECT LAST_INSERT_ID()` without a backend when the session holds no
    /// connection and knows its value; None leaves the statement to the backend.
    pub(super) async fn answer_last_insert_id(&mut self, stmt: &Stmt<'_>) -> Result<Option<Next>, ProxyError> {
        if stmt.class.kind != StatementKind::Select || !stmt.class.flags.contains(Flags::LAST_INSERT_ID) {
            return Ok(None);
        }
        let Some(name) = plain_select_last_insert_id(stmt.sql) else {
            return Ok(None);
        };
        if !self.knows_last_insert_id_alone() {
            return Ok(None);
        }
        // Off a sharded schema every statement runs on the default group.
        let group = std::sync::Arc::clone(self.gen.default_group());
        let Some(learned) = learned_definition(&group).await else {
            return Ok(None);
        };
        let dialect = self.metadata_dialect();
        let Some(definition) = named_definition(&learned, name, dialect.extended) else {
            return Ok(None);
        };
        let row = vec![Some(self.state.last_insert_id.to_string())];
        let (status, capabilities) = (self.status_flags(), self.capabilities);
        let column = (1, |out: &mut PacketStream<_>| out.write_packet(&definition));
        write_text_result_parts(&mut self.client, column, &[row], status, capabilities, dialect);
        self.last_error = None;
        self.last.found_rows = 1;
        self.last.row_count = -1;
        Metrics::inc(&self.ctx.metrics.last_insert_id_answered);
        self.client.flush().await?;
        Ok(Some(Next::Continue))
    }

    /// Whether the session's LAST_INSERT_ID() is known here and nothing ties the statement to a
    /// connection: none held or pinned, no transaction (a deferred BEGIN included), autocommit,
    /// no sharded schema (its keys come from Tessera's sequences).
    fn knows_last_insert_id_alone(&self) -> bool {
        self.binding.held().is_none()
            && !self.pins.is_pinned()
            && !self.last_insert_id_dirty
            && !self.txn.begin_deferred()
            && !self.in_transaction()
            && self.state.autocommit()
            && self.logical_schema().is_none()
    }
}

/// The definition `group`'s servers give `SELECT LAST_INSERT_ID()`'s column, as sent to
/// Tessera's connections (no extended metadata): asked once, on a pooled connection of its
/// primary, and kept; None when it cannot be learned now.
async fn learned_definition(group: &Group) -> Option<Bytes> {
    if let Some(definition) = group.last_insert_id_column.get() {
        return Some(definition.clone());
    }
    let mut conn = group.primary().pool.checkout(Flavour::default(), true).await.ok()?;
    if conn.extended_metadata {
        return None; // not a backend connection's form (see `named_definition`)
    }
    let definition = match conn.query_definitions("SELECT LAST_INSERT_ID()").await {
        Ok(mut definitions) if definitions.len() == 1 => definitions.pop()?,
        Ok(_) => return None,
        Err(e) => {
            if !matches!(e, ProxyError::Backend(_)) {
                conn.broken = true;
            }
            return None;
        }
    };
    Some(group.last_insert_id_column.get_or_init(|| definition).clone())
}

/// The server's definition with the column named `name` (as the client wrote the function),
/// and for a client with MariaDB's extended metadata the (empty) type information a BIGINT
/// column carries.
fn named_definition(learned: &[u8], name: &str, extended: bool) -> Option<BytesMut> {
    const NAME: usize = 4;
    let mut r = Reader::new(learned);
    let mut out = BytesMut::with_capacity(learned.len() + name.len() + 1);
    // catalog, schema, table, org_table, name, org_name
    for field in 0..6 {
        let value = r.lenenc_bytes().ok()?;
        put_lenenc_bytes(&mut out, if field == NAME { name.as_bytes() } else { value });
    }
    if extended {
        put_lenenc_bytes(&mut out, b"");
    }
    out.extend_from_slice(r.rest());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::plain_select_last_insert_id as plain;

    #[test]
    fn only_the_plain_statement_is_answered_and_the_column_is_named_as_written() {
        assert_eq!(plain("SELECT LAST_INSERT_ID()"), Some("LAST_INSERT_ID()"));
        assert_eq!(plain(" select\tlast_insert_id()\n"), Some("last_insert_id()"));
        for other in [
            "SELECT LAST_INSERT_ID();",
            "SELECT LAST_INSERT_ID( )",
            "SELECT LAST_INSERT_ID() AS id",
            "SELECT LAST_INSERT_ID(5)",
            "SELECTLAST_INSERT_ID()",
            "SELECT /* c */ LAST_INSERT_ID()",
            "SELECT @@last_insert_id",
            "SELECT",
            "SELECT é",
        ] {
            assert_eq!(plain(other), None, "{other}");
        }
    }
}
