//! What a dump restore sends to a logical schema, beyond plain DDL and INSERTs:
//! - `INSERT INTO t VALUES (...)` with no column list into a sharded table: the table's
//!   columns, in order, are taken from the table metadata ([`crate::catalog`]) and written into the statement, which
//!   is then split by shard like any INSERT;
//! - `ALTER TABLE t DISABLE KEYS` / `ENABLE KEYS` (mariadb-dump's `/*!40000 ... */`): run on
//!   every shard that holds `t`;
//! - `LOCK TABLES` / `UNLOCK TABLES`: accepted, and no lock is taken. Tessera has no lock
//!   manager across shards, and a lock on one shard's connection would make every other
//!   statement of the session fail there (`Table ... was not locked`) while leaving the other
//!   shards unlocked; the README says so.

use super::{Next, Session};
use crate::catalog::{Column, SchemaTables};
use crate::error::ProxyError;
use crate::topology::{ShardedSchema, TablePlacement};
use std::sync::Arc;
use tessera_sql::{Lexer, Token, TokenKind};

/// An INSERT or REPLACE that names no columns: its table and where a column list goes.
#[derive(Debug, PartialEq, Eq)]
pub struct ColumnlessInsert {
    /// The database it is qualified with, if any.
    pub qualifier: Option<String>,
    pub table: String,
    /// Byte offset just past the table name.
    pub at: usize,
}

/// Reads `INSERT [LOW_PRIORITY|DELAYED|HIGH_PRIORITY] [IGNORE] [INTO] [db.]t VALUES|VALUE|SELECT`
/// (and REPLACE); None when a column list, `SET`, `PARTITION` or anything else follows.
pub fn columnless_insert(sql: &str, backslash_escapes: bool) -> Option<ColumnlessInsert> {
    let mut tokens = Lexer::with_backslash_escapes(sql, backslash_escapes).filter(Token::is_significant);
    let first = tokens.next()?;
    if !(first.is_word("INSERT") || first.is_word("REPLACE")) {
        return None;
    }
    let modifiers = ["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"];
    let mut name = tokens.next()?;
    while modifiers.iter().any(|m| name.is_word(m)) {
        name = tokens.next()?;
    }
    if !matches!(name.kind, TokenKind::Word | TokenKind::QuotedIdent) {
        return None;
    }
    let mut next = tokens.next()?;
    let mut qualifier = None;
    if next.kind == TokenKind::Dot {
        qualifier = Some(tessera_sql::unquote(name.text).into_owned());
        name = tokens.next()?;
        next = tokens.next()?;
    }
    let values = ["VALUES", "VALUE", "SELECT", "WITH"].iter().any(|w| next.is_word(w));
    values.then(|| ColumnlessInsert {
        qualifier,
        table: tessera_sql::unquote(name.text).into_owned(),
        at: name.end(),
    })
}

/// `ALTER TABLE [db.]t DISABLE KEYS` or `... ENABLE KEYS`: the table's name.
pub fn keys_toggle_table(sql: &str, backslash_escapes: bool) -> Option<String> {
    let tokens: Vec<Token<'_>> = Lexer::with_backslash_escapes(sql, backslash_escapes)
        .filter(Token::is_significant)
        .collect();
    let (name, rest) = match tokens.as_slice() {
        [a, t, name, rest @ ..] if a.is_word("ALTER") && t.is_word("TABLE") => (name, rest),
        _ => return None,
    };
    let rest = match rest {
        [dot, qualified, rest @ ..] if dot.kind == TokenKind::Dot => return toggle(qualified, rest),
        rest => rest,
    };
    toggle(name, rest)
}

/// The table name when `rest` is `{DISABLE|ENABLE} KEYS`.
fn toggle(name: &Token<'_>, rest: &[Token<'_>]) -> Option<String> {
    let rest: Vec<_> = rest.iter().filter(|t| t.kind != TokenKind::Semicolon).collect();
    match rest.as_slice() {
        [verb, keys] if (verb.is_word("DISABLE") || verb.is_word("ENABLE")) && keys.is_word("KEYS") => {
            Some(tessera_sql::unquote(name.text).into_owned())
        }
        _ => None,
    }
}

/// The shards holding a table's rows.
fn table_shards(schema: &ShardedSchema, table: &str) -> Vec<usize> {
    match schema.table(table) {
        TablePlacement::Sharded(_) | TablePlacement::Broadcast => (0..schema.shard_count()).collect(),
        TablePlacement::Single(shard) => vec![shard],
    }
}

impl Session {
    /// A restore statement this module answers on a logical schema; None for the others.
    /// `sql` may come back rewritten (a column list written in) for the ordinary path.
    pub async fn restore_statement(
        &mut self,
        schema: &ShardedSchema,
        sql: &str,
        kind: &tessera_sql::StatementKind,
    ) -> Result<Restore, ProxyError> {
        use tessera_sql::StatementKind as K;
        let escapes = self.state.backslash_escapes();
        match kind {
            K::LockTables | K::UnlockTables => Ok(Restore::Answered(self.ok_with(0, 0, 0).await?)),
            K::Ddl => match keys_toggle_table(sql, escapes) {
                Some(table) => {
                    let shards = table_shards(schema, &table);
                    Ok(Restore::Answered(self.ddl_on_shards(schema, &shards, sql).await?))
                }
                None => Ok(Restore::Unchanged),
            },
            K::Insert | K::Replace => match columnless_insert(sql, escapes) {
                Some(insert)
                    if insert.qualifier.as_deref().is_none_or(|q| q == schema.name)
                        && matches!(schema.table(&insert.table), TablePlacement::Sharded(_)) =>
                {
                    let columns = self.table_column_list(schema, &insert.table).await?;
                    let mut text = String::with_capacity(sql.len() + columns.len() + 3);
                    text.push_str(&sql[..insert.at]);
                    text.push_str(" (");
                    text.push_str(&columns);
                    text.push(')');
                    text.push_str(&sql[insert.at..]);
                    Ok(Restore::Rewritten(text))
                }
                _ => Ok(Restore::Unchanged),
            },
            _ => Ok(Restore::Unchanged),
        }
    }

    /// `t`'s columns in order, backquoted and comma-separated, as its default shard has them.
    async fn table_column_list(&mut self, schema: &ShardedSchema, table: &str) -> Result<String, ProxyError> {
        let tables = self.schema_tables(schema).await?;
        tables.column_list(table).ok_or_else(|| {
            crate::error::ServerError::NoSuchTable {
                schema: schema.name.clone(),
                table: table.to_string(),
            }
            .into()
        })
    }

    /// The current table metadata of `schema` (see [`crate::catalog`]): the session's copy
    /// while no schema change happened since, else the process's, else read from the default
    /// shard.
    pub async fn schema_tables(&mut self, schema: &ShardedSchema) -> Result<Arc<SchemaTables>, ProxyError> {
        let epoch = self.ctx.schema_changes.current();
        if let Some(t) = &self.catalog {
            if t.is_current(epoch) && t.schema == schema.name {
                return Ok(t.clone());
            }
        }
        let tables = match self.ctx.catalog.current(&schema.name, epoch) {
            Some(t) => t,
            None => {
                let t = self.read_schema_tables(schema, epoch).await?;
                self.ctx.catalog.store(t)
            }
        };
        self.catalog = Some(tables.clone());
        Ok(tables)
    }

    async fn read_schema_tables(&mut self, schema: &ShardedSchema, epoch: u64) -> Result<SchemaTables, ProxyError> {
        let shard = &schema.shards[schema.default_shard];
        let mut conn = self.side_conn(shard).await?;
        let (_, rows) = conn.query_rows(&crate::catalog::columns_query(&shard.database)).await?;
        let text = |v: &Option<Vec<u8>>| String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned();
        let columns = rows.iter().filter(|r| r.len() >= 4).map(|r| {
            let column = Column {
                name: text(&r[1]),
                column_type: text(&r[2]),
                key: text(&r[3]),
            };
            (text(&r[0]), column)
        });
        Ok(SchemaTables::new(&schema.name, epoch, columns))
    }
}

/// What [`Session::restore_statement`] did.
pub enum Restore {
    Answered(Next),
    Rewritten(String),
    Unchanged,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columnless_inserts_are_found_and_lists_left_alone() {
        let sql = "INSERT INTO `customers` VALUES (1,'a'),(2,'b')";
        let found = columnless_insert(sql, true).unwrap();
        assert_eq!(found.table, "customers");
        assert_eq!(&sql[..found.at], "INSERT INTO `customers`");
        let q = columnless_insert("replace low_priority into shop.orders value (1)", true).unwrap();
        assert_eq!((q.qualifier.as_deref(), q.table.as_str()), (Some("shop"), "orders"));
        assert!(columnless_insert("INSERT INTO t (a) VALUES (1)", true).is_none());
        assert!(columnless_insert("INSERT INTO t SET a = 1", true).is_none());
        assert!(columnless_insert("INSERT INTO t PARTITION (p0) VALUES (1)", true).is_none());
        assert_eq!(
            columnless_insert("INSERT IGNORE t SELECT * FROM u", true)
                .unwrap()
                .table,
            "t"
        );
    }

    #[test]
    fn keys_toggles_are_read_in_dump_form() {
        assert_eq!(
            keys_toggle_table("/*!40000 ALTER TABLE `customers` DISABLE KEYS */", true).as_deref(),
            Some("customers")
        );
        assert_eq!(
            keys_toggle_table("alter table shop.t enable keys;", true).as_deref(),
            Some("t")
        );
        assert_eq!(keys_toggle_table("ALTER TABLE t ADD COLUMN k INT", true), None);
        assert_eq!(keys_toggle_table("ALTER TABLE t DISABLE KEYS, ADD c INT", true), None);
    }
}
