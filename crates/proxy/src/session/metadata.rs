//! Metadata on a sharded schema: SHOW, DESCRIBE and information_schema queries run on the
//! default shard, where every sharded and broadcast table exists, with the logical schema's
//! name turned into the shard's database in the statement and back in the answer (values and
//! column names, e.g. `Tables_in_shop`), so drivers and ORMs see the schema they connected to.

use super::{Next, Session};
use crate::error::ProxyError;
use crate::route::Target;
use crate::topology::ShardedSchema;
use tessera_protocol::resultset::write_text_result_with;
use tessera_sql::{Classification, Lexer, StatementKind, TokenKind};

/// Whether a statement reads metadata that names databases.
pub fn is_metadata(sql: &str, class: &Classification) -> bool {
    match class.kind {
        StatementKind::Show | StatementKind::Describe => true,
        StatementKind::Select => {
            let b = sql.as_bytes();
            b.windows(18).any(|w| w.eq_ignore_ascii_case(b"information_schema"))
        }
        _ => false,
    }
}

/// `sql` with the logical schema's name (as an identifier or a string) replaced by `physical`;
/// strings read and written as the session reads them (`backslash_escapes` false:
/// `NO_BACKSLASH_ESCAPES`).
pub fn to_physical(sql: &str, logical: &str, physical: &str, backslash_escapes: bool) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut pos = 0;
    for t in Lexer::with_backslash_escapes(sql, backslash_escapes) {
        let replacement = match t.kind {
            TokenKind::Word | TokenKind::QuotedIdent if tessera_sql::unquote(t.text) == logical => {
                Some(crate::state::quote_ident(physical))
            }
            TokenKind::String if tessera_sql::unquote_as(t.text, backslash_escapes) == logical => {
                Some(crate::state::quote_string_as(physical, backslash_escapes))
            }
            _ => None,
        };
        if let Some(r) = replacement {
            out.push_str(&sql[pos..t.offset]);
            out.push_str(&r);
            pos = t.end();
        }
    }
    out.push_str(&sql[pos..]);
    out
}

impl Session {
    /// Runs a metadata statement on the default shard and answers with logical names.
    pub async fn metadata_query(&mut self, schema: &ShardedSchema, sql: &str) -> Result<Next, ProxyError> {
        let shard = &schema.shards[schema.default_shard];
        let text = to_physical(sql, &schema.name, &shard.database, self.state.backslash_escapes());
        let held = self.binding.take_held();
        self.target_schema = Some(shard.database.clone());
        let acquired = self
            .acquire(Target::primary(shard.group), crate::state::SyncScope::default())
            .await;
        self.target_schema = None;
        self.binding.set_held(held);
        let mut conn = acquired?;
        self.handle.set_running(None);
        let result = conn.query_rows(&text).await;
        let (mut columns, mut rows) = match result {
            Ok(r) => r,
            Err(e) => {
                if !matches!(e, ProxyError::Backend(_)) {
                    conn.broken = true;
                }
                return Err(e);
            }
        };
        let (physical, logical) = (shard.database.as_str(), schema.name.as_str());
        for c in columns.iter_mut() {
            c.name = c.name.replace(physical, logical);
            if c.schema == physical {
                c.schema = logical.to_string();
            }
        }
        for row in rows.iter_mut() {
            for v in row.iter_mut().flatten() {
                if v.as_slice() == physical.as_bytes() {
                    *v = logical.as_bytes().to_vec();
                }
            }
        }
        if tessera_sql::found_rows_effect(sql, &tessera_sql::classify(sql)) != tessera_sql::FoundRowsEffect::Unchanged {
            self.last.found_rows = rows.len() as u64;
        }
        self.last.row_count = -1;
        let status = self.status_flags();
        let dialect = self.metadata_dialect();
        write_text_result_with(&mut self.client, &columns, &rows, status, self.capabilities, dialect);
        self.client.flush().await?;
        Ok(Next::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logical_name_becomes_the_shards_database() {
        assert_eq!(
            to_physical("SHOW FULL TABLES FROM `shop` LIKE '%'", "shop", "shop_0", true),
            "SHOW FULL TABLES FROM `shop_0` LIKE '%'"
        );
        assert_eq!(
            to_physical(
                "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'shop' AND x = 'shopping'",
                "shop",
                "shop_0",
                true
            ),
            "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'shop_0' AND x = 'shopping'"
        );
    }

    #[test]
    fn names_in_strings_are_read_and_written_as_the_session_reads_strings() {
        let sql = r"SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'a\\b'";
        // Backslash escapes: the string holds one backslash, and so does the name written.
        assert_eq!(
            to_physical(sql, r"a\b", r"a\b_0", true),
            r"SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'a\\b_0'"
        );
        // NO_BACKSLASH_ESCAPES: the same text holds two backslashes, written as they are.
        assert_eq!(
            to_physical(sql, r"a\\b", r"a\\b_0", false),
            r"SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'a\\b_0'"
        );
        assert_eq!(
            to_physical(sql, r"a\b", "x", false),
            sql,
            "not that name under NO_BACKSLASH_ESCAPES"
        );
    }
}
