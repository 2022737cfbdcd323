//! Logical schemas named from anywhere: `CREATE` / `DROP DATABASE` of a logical schema makes
//! or removes its shard databases whatever the session's default database, and a statement
//! whose tables are all `schema.table` of one logical schema is planned for that schema from
//! another default database (or none). A statement that mixes a logical schema with another
//! database is refused, never run on one side of it.

use super::execute::Stmt;
use super::{Next, Session};
use crate::error::{ProxyError, ServerError};
use crate::topology::ShardedSchema;
use tessera_sql::sqlparser::ast::{visit_relations, ObjectNamePart};
use tessera_sql::{Lexer, StatementKind, Token, TokenKind};

/// `CREATE DATABASE` / `DROP DATABASE` (or `SCHEMA`) of one database.
#[derive(Debug, PartialEq, Eq)]
pub struct DatabaseDdl<'a> {
    pub create: bool,
    /// `IF NOT EXISTS` (create) or `IF EXISTS` (drop).
    pub conditional: bool,
    pub name: String,
    /// What follows the name (a CREATE's character set and collation), as written.
    pub options: &'a str,
}

/// Reads `CREATE {DATABASE|SCHEMA} [IF NOT EXISTS] name ...` and
/// `DROP {DATABASE|SCHEMA} [IF EXISTS] name`; None for anything else.
pub fn database_ddl(sql: &str, backslash_escapes: bool) -> Option<DatabaseDdl<'_>> {
    let mut tokens = Lexer::with_backslash_escapes(sql, backslash_escapes).filter(Token::is_significant);
    let create = match tokens.next()? {
        t if t.is_word("CREATE") => true,
        t if t.is_word("DROP") => false,
        _ => return None,
    };
    let object = tokens.next()?;
    if !(object.is_word("DATABASE") || object.is_word("SCHEMA")) {
        return None;
    }
    let mut name = tokens.next()?;
    let mut conditional = false;
    if name.is_word("IF") {
        if create && !tokens.next()?.is_word("NOT") {
            return None;
        }
        if !tokens.next()?.is_word("EXISTS") {
            return None;
        }
        conditional = true;
        name = tokens.next()?;
    }
    if !matches!(name.kind, TokenKind::Word | TokenKind::QuotedIdent) {
        return None;
    }
    let mut options = sql[name.end()..].trim().trim_end_matches(';').trim();
    if !options.contains("/*") {
        // The end of a conditional comment the whole statement is in.
        options = options.trim_end_matches("*/").trim();
    }
    if !create && !options.is_empty() {
        return None;
    }
    Some(DatabaseDdl {
        create,
        conditional,
        name: tessera_sql::unquote(name.text).into_owned(),
        options,
    })
}

/// The logical schema a statement names as a qualifier (`shop.t`, `` `shop`.t ``), if any.
pub fn named_logical_schema(
    sql: &str,
    position: impl Fn(&str) -> Option<usize>,
    backslash_escapes: bool,
) -> Option<usize> {
    let tokens: Vec<Token<'_>> = Lexer::with_backslash_escapes(sql, backslash_escapes)
        .filter(Token::is_significant)
        .collect();
    tokens.windows(2).find_map(|w| {
        let qualifies = matches!(w[0].kind, TokenKind::Word | TokenKind::QuotedIdent) && w[1].kind == TokenKind::Dot;
        if !qualifies {
            return None;
        }
        position(&tessera_sql::unquote(w[0].text))
    })
}

/// Why a statement over `schema` cannot run from outside it: a table of the statement that is
/// not `schema.table` (unqualified, or of another database), or a statement that does not
/// parse; None when every table is the schema's.
fn outside_table(sql: &str, schema: &str) -> Option<String> {
    let stmt = match tessera_sql::analyze::parse_one(sql) {
        Ok(s) => s,
        Err(e) => return Some(format!("the statement could not be read ({e})")),
    };
    let mut foreign = None;
    let _ = visit_relations(&stmt, |name| {
        let parts: Vec<_> = name
            .0
            .iter()
            .map(|p| match p {
                ObjectNamePart::Identifier(i) => Some(i.value.as_str()),
                _ => None,
            })
            .collect();
        if !matches!(parts.as_slice(), [Some(db), Some(_)] if *db == schema) {
            foreign = Some(format!("`{name}` is not a table of `{schema}`"));
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    foreign
}

/// The refusal of a statement that names a logical schema from outside it but cannot run there.
fn mixed(schema: &str, why: &str) -> ProxyError {
    ProxyError::NotSharded(format!(
        "a statement over logical schema `{schema}` from another default database: {why}; \
         qualify every table with `{schema}.` or USE {schema}"
    ))
}

impl Session {
    /// A statement Tessera plans for a logical schema the session is not in: CREATE/DROP
    /// DATABASE of it, or one whose tables are all of it. None: not such a statement.
    pub async fn logical_schema_from_outside(
        &mut self,
        sql: &str,
        stmts: &[Stmt<'_>],
    ) -> Result<Option<Next>, ProxyError> {
        let topology = self.gen.topology.clone();
        if topology.schemas.is_empty() {
            return Ok(None);
        }
        let escapes = self.state.backslash_escapes();
        let [stmt] = stmts else {
            return Ok(None);
        };
        if stmt.class.kind == StatementKind::Ddl {
            if let Some(ddl) = database_ddl(stmt.sql, escapes) {
                if let Some(index) = topology.schemas.iter().position(|s| s.name == ddl.name) {
                    return self
                        .logical_database_ddl(&topology.schemas[index], &ddl)
                        .await
                        .map(Some);
                }
                return Ok(None);
            }
        }
        if self.logical_schema().is_some() || !Self::is_sharded_kind(&stmt.class.kind) {
            return Ok(None);
        }
        let position = |name: &str| topology.schemas.iter().position(|s| s.name == name);
        let Some(index) = named_logical_schema(sql, position, escapes) else {
            return Ok(None);
        };
        let name = &topology.schemas[index].name;
        if let Some(why) = outside_table(sql, name) {
            return Err(mixed(name, &why));
        }
        if self.in_transaction() || self.binding.held().is_some() || self.pins.is_pinned() || !self.autocommit() {
            return Err(mixed(
                name,
                "the session has a transaction or pinned state on its own database",
            ));
        }
        self.run_sharded(sql, stmt, index).await.map(Some)
    }

    /// CREATE / DROP DATABASE of a logical schema: its shard databases, on their groups.
    async fn logical_database_ddl(
        &mut self,
        schema: &ShardedSchema,
        ddl: &DatabaseDdl<'_>,
    ) -> Result<Next, ProxyError> {
        let exists = self.shard_databases_existing(schema).await?;
        let all = exists.iter().all(|e| *e);
        let none = !exists.iter().any(|e| *e);
        if ddl.create && all && !ddl.conditional {
            return Err(ServerError::DatabaseExists(schema.name.clone()).into());
        }
        if !ddl.create && none && !ddl.conditional {
            return Err(ServerError::NoSuchDatabase(schema.name.clone()).into());
        }
        let mut affected = 0;
        for (shard, existed) in schema.shards.iter().zip(exists) {
            if existed == ddl.create {
                continue;
            }
            let db = crate::state::quote_ident(&shard.database);
            let sql = match ddl.create {
                true => format!("CREATE DATABASE {db} {}", ddl.options),
                false => format!("DROP DATABASE {db}"),
            };
            let mut conn = self.side_conn(shard).await?;
            affected = affected.max(conn.simple_command(&sql).await?.affected_rows);
        }
        if !ddl.create && self.state.schema.as_deref() == Some(schema.name.as_str()) {
            // As on one server: dropping the default database leaves none.
            self.state.schema = None;
        }
        self.ctx.schema_changes.record();
        self.ok_with(if ddl.create { 1 } else { affected }, 0, 0).await
    }

    /// Whether each shard database of `schema` exists.
    async fn shard_databases_existing(&mut self, schema: &ShardedSchema) -> Result<Vec<bool>, ProxyError> {
        let mut out = Vec::with_capacity(schema.shards.len());
        for shard in &schema.shards {
            let mut conn = self.side_conn(shard).await?;
            let sql = format!(
                "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = {}",
                crate::state::quote_string(&shard.database)
            );
            let (_, rows) = conn.query_rows(&sql).await?;
            let count = rows.first().and_then(|r| r.first()).cloned().flatten();
            out.push(count.is_some_and(|c| c != b"0"));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_statements_are_read_in_every_form() {
        let d = database_ddl("CREATE DATABASE shop", true).unwrap();
        assert!(d.create && !d.conditional && d.name == "shop" && d.options.is_empty());
        let d = database_ddl("create schema if not exists `shop` CHARACTER SET utf8mb4;", true).unwrap();
        assert!(d.create && d.conditional && d.name == "shop");
        assert_eq!(d.options, "CHARACTER SET utf8mb4");
        let d = database_ddl("/*!40000 DROP DATABASE IF EXISTS `shop`*/", true).unwrap();
        assert!(!d.create && d.conditional && d.name == "shop");
        let dump = "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */";
        let d = database_ddl(dump, true).unwrap();
        assert!(d.create && d.conditional && d.name == "shop");
        assert_eq!(d.options, "/*!40100 DEFAULT CHARACTER SET utf8mb4 */");
        assert!(database_ddl("DROP TABLE shop", true).is_none());
        assert!(database_ddl("CREATE DATABASE IF EXISTS shop", true).is_none());
        assert!(database_ddl("CREATE OR REPLACE DATABASE shop", true).is_none());
    }

    #[test]
    fn qualified_names_are_found_outside_strings() {
        let shop = |name: &str| (name == "shop").then_some(0);
        assert_eq!(named_logical_schema("SELECT * FROM shop.t", shop, true), Some(0));
        assert_eq!(named_logical_schema("SELECT * FROM `shop`.`t`", shop, true), Some(0));
        assert_eq!(named_logical_schema("SELECT 'shop.t'", shop, true), None);
        assert_eq!(named_logical_schema("SELECT * FROM shopx.t", shop, true), None);
    }

    #[test]
    fn only_statements_wholly_in_the_schema_run_from_outside() {
        assert_eq!(
            outside_table("SELECT COUNT(*) FROM shop.c JOIN shop.o ON c.id = o.cid", "shop"),
            None
        );
        assert!(outside_table("SELECT * FROM shop.c JOIN t ON 1", "shop").is_some());
        assert!(outside_table("INSERT INTO shop.c SELECT * FROM test.t", "shop").is_some());
    }
}
