//! Writes and DDL over a sharded schema: INSERT/REPLACE rows split by shard key, UPDATE and
//! DELETE on the shards their WHERE allows (atomic over several), DDL on every shard that holds
//! the table, `CREATE DATABASE` of the logical schema.

use super::keys::{KeyExpr, KeyReader, ValueSource};
use super::tables::{self, Place, Spread};
use super::{Planner, ShardPlan, ShardSet};
use crate::route::shard_fn::ShardFunction;
use std::ops::Range;
use tessera_sql::sqlparser::ast::{
    AssignmentTarget, Expr, FromTable, ObjectName, ObjectType, OnInsert, SetExpr, Statement, TableFactor,
};
use tessera_sql::{Edit, SqlTemplate};

/// An INSERT/REPLACE whose rows go to the shards of their keys.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertPlan {
    /// Everything before the first row (`INSERT INTO t (a, b) VALUES `).
    pub head: SqlTemplate,
    /// Each row's text without its closing parenthesis (`(1, 'x'`) and where its shard-key
    /// value comes from (None: Tessera's sequence, appended as the last value).
    pub rows: Vec<(SqlTemplate, Option<ValueSource>)>,
    /// The AUTO_INCREMENT shard key the statement leaves out (appended to the column list).
    pub generated_key: Option<String>,
    /// `schema.table`: the sequence generated keys come from.
    pub sequence: String,
    /// Everything after the last row (`ON DUPLICATE KEY UPDATE ...`).
    pub tail: SqlTemplate,
    pub function: ShardFunction,
    pub reason: String,
}

impl InsertPlan {
    /// Row `i` as SQL, with `generated` appended as its key when the key is generated.
    pub fn render_row(&self, i: usize, sql: &str, literals: &[Range<usize>], generated: Option<i128>) -> String {
        let mut row = self.rows[i].0.render(sql, literals);
        if let Some(id) = generated {
            row.push_str(&format!(", {id}"));
        }
        row.push(')');
        row
    }
}

pub fn plan(p: &mut Planner, stmt: &Statement) -> ShardPlan {
    match stmt {
        Statement::Insert(i) => insert(p, stmt, i),
        Statement::Update(u) => {
            let single_table = u.from.is_none() && u.table.joins.is_empty();
            if !single_table {
                return by_tables(p, stmt, "a multi-table UPDATE over sharded tables");
            }
            if let TableFactor::Table { name, alias, .. } = &u.table.relation {
                let key_assigned = |key: &str| {
                    u.assignments.iter().any(|a| match &a.target {
                        AssignmentTarget::ColumnName(n) => last_ident(n).is_some_and(|c| c.eq_ignore_ascii_case(key)),
                        AssignmentTarget::Tuple(_) => true,
                    })
                };
                let alias = alias.as_ref().map(|a| a.name.value.clone());
                let ordered = u.limit.is_some() || p.ordered_limit;
                return keyed_write(p, stmt, name, alias, u.selection.as_ref(), ordered, &key_assigned);
            }
            by_tables(p, stmt, "this UPDATE over sharded tables")
        }
        Statement::Delete(d) => {
            let tables = match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            let single = d.tables.is_empty() && d.using.is_none() && tables.len() == 1 && tables[0].joins.is_empty();
            if let (true, TableFactor::Table { name, alias, .. }) = (single, &tables[0].relation) {
                let alias = alias.as_ref().map(|a| a.name.value.clone());
                let ordered = d.limit.is_some() || !d.order_by.is_empty();
                return keyed_write(p, stmt, name, alias, d.selection.as_ref(), ordered, &|_| false);
            }
            by_tables(p, stmt, "a multi-table DELETE over sharded tables")
        }
        Statement::CreateDatabase {
            db_name, if_not_exists, ..
        } if db_name.to_string().trim_matches('`') == p.schema.name => ShardPlan::CreateDatabase {
            if_not_exists: *if_not_exists,
        },
        Statement::CreateDatabase { .. } => ShardPlan::Reject(
            "CREATE DATABASE of another database inside a sharded schema session (connect without a default schema)"
                .into(),
        ),
        Statement::CreateTable(_)
        | Statement::AlterTable(_)
        | Statement::CreateIndex(_)
        | Statement::Drop { .. }
        | Statement::Truncate(_)
        | Statement::RenameTable(_) => ddl(p, stmt),
        _ => by_tables(p, stmt, "this statement over sharded tables"),
    }
}

fn last_ident(n: &ObjectName) -> Option<String> {
    n.0.last().map(|p| p.to_string().trim_matches('`').to_string())
}

/// DDL runs on every shard of sharded and broadcast tables, on the one shard of others.
fn ddl(p: &mut Planner, stmt: &Statement) -> ShardPlan {
    let mut tables = tables::all_tables(stmt, p.schema, &p.offsets, &mut p.common_edits);
    // `DROP TABLE` names are not relations to the AST's visitor.
    if let Statement::Drop {
        object_type: ObjectType::Table,
        names,
        ..
    } = stmt
    {
        for name in names {
            tables.push(tables::resolve(name, p.schema, &p.offsets, &mut p.common_edits));
        }
    }
    let everywhere = tables
        .iter()
        .any(|t| matches!(t.place, Place::Sharded { .. } | Place::Broadcast));
    let shards = if everywhere {
        (0..p.schema.shard_count()).collect()
    } else {
        match tables::spread(&tables, p.schema.default_shard) {
            Spread::OneShard(s) => vec![s],
            Spread::Conflict(m) => return ShardPlan::Reject(m),
            Spread::Sharded => (0..p.schema.shard_count()).collect(),
        }
    };
    let reason = if everywhere {
        "DDL of a sharded or broadcast table: every shard"
    } else {
        "DDL of a table on one shard"
    };
    ShardPlan::Ddl {
        shards,
        sql: p.one_template(),
        reason: reason.into(),
    }
}

/// Statements whose tables decide: no sharded table -> the one shard (broadcast writes: all
/// shards, atomically); sharded tables -> refused with `what`.
fn by_tables(p: &mut Planner, stmt: &Statement, what: &str) -> ShardPlan {
    let tables = tables::all_tables(stmt, p.schema, &p.offsets, &mut p.common_edits);
    let broadcast_write = is_write(stmt) && tables.iter().any(|t| t.place == Place::Broadcast);
    match tables::spread(&tables, p.schema.default_shard) {
        Spread::Conflict(m) => ShardPlan::Reject(m),
        Spread::Sharded => ShardPlan::Reject(what.to_string()),
        Spread::OneShard(_) if broadcast_write => ShardPlan::Write {
            shards: ShardSet::All,
            sql: p.one_template(),
            reason: "a write to a broadcast table: every shard, atomically".into(),
            one_shard_only: None,
            replicated: true,
        },
        Spread::OneShard(s) if is_write(stmt) => ShardPlan::Write {
            shards: ShardSet::Fixed(vec![s]),
            sql: p.one_template(),
            reason: "no sharded table: one shard".into(),
            one_shard_only: None,
            replicated: false,
        },
        Spread::OneShard(s) => ShardPlan::Read {
            shards: ShardSet::Fixed(vec![s]),
            one: p.one_template(),
            many: Err("a statement on one shard".into()),
            reason: "no sharded table: one shard".into(),
        },
    }
}

fn is_write(stmt: &Statement) -> bool {
    matches!(stmt, Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_))
}

/// UPDATE/DELETE of one table: its shards from WHERE.
fn keyed_write(
    p: &mut Planner,
    stmt: &Statement,
    name: &ObjectName,
    alias: Option<String>,
    selection: Option<&Expr>,
    ordered_limit: bool,
    key_assigned: &dyn Fn(&str) -> bool,
) -> ShardPlan {
    let t = tables::resolve(name, p.schema, &p.offsets, &mut Vec::new());
    let Place::Sharded { key, function, .. } = t.place.clone() else {
        return by_tables(p, stmt, "this write");
    };
    let others = tables::all_tables(stmt, p.schema, &p.offsets, &mut p.common_edits);
    if others
        .iter()
        .filter(|o| matches!(o.place, Place::Sharded { .. }))
        .count()
        > 1
    {
        return ShardPlan::Reject("a subquery over sharded tables in UPDATE or DELETE".into());
    }
    if key_assigned(&key) {
        return ShardPlan::Reject(format!(
            "changing the shard key {key} of table {} (delete and insert the row instead)",
            t.table
        ));
    }
    let sharded = vec![(alias.unwrap_or(t.table.clone()), key.clone())];
    let expr = match selection {
        Some(w) => {
            let is_key = |e: &Expr| p.is_key(e, &sharded);
            let literal_at = |o: usize| p.literal_at(o);
            let placeholder_at = |o: usize| p.placeholder_at(o);
            KeyReader {
                offsets: &p.offsets,
                is_key: &is_key,
                literal_at: &literal_at,
                placeholder_at: &placeholder_at,
            }
            .read(w)
        }
        None => KeyExpr::Any,
    };
    let reason = expr.describe(&key);
    let shards = if expr.narrows() {
        ShardSet::Key { function, expr }
    } else {
        ShardSet::All
    };
    let one_shard_only = ordered_limit.then(|| "UPDATE or DELETE with ORDER BY or LIMIT across shards".to_string());
    ShardPlan::Write {
        shards,
        sql: p.one_template(),
        reason,
        one_shard_only,
        replicated: false,
    }
}

fn insert(p: &mut Planner, stmt: &Statement, i: &tessera_sql::sqlparser::ast::Insert) -> ShardPlan {
    let tables_all = tables::all_tables(stmt, p.schema, &p.offsets, &mut p.common_edits);
    let target = match &i.table {
        tessera_sql::sqlparser::ast::TableObject::TableName(n) => {
            tables::resolve(n, p.schema, &p.offsets, &mut Vec::new())
        }
        _ => return ShardPlan::Reject("INSERT into a table function".into()),
    };
    let Place::Sharded {
        key,
        function,
        auto_increment,
    } = target.place.clone()
    else {
        if tables_all.iter().any(|t| matches!(t.place, Place::Sharded { .. })) {
            return ShardPlan::Reject("INSERT ... SELECT from a sharded table into a table that is not sharded".into());
        }
        return by_tables(p, stmt, "this INSERT");
    };
    if tables_all.iter().filter(|t| t.place != Place::Broadcast).count() > 1 {
        return ShardPlan::Reject("INSERT ... SELECT into a sharded table".into());
    }
    if let Some(OnInsert::DuplicateKeyUpdate(assignments)) = &i.on {
        let touches_key = assignments.iter().any(|a| match &a.target {
            AssignmentTarget::ColumnName(n) => last_ident(n).is_some_and(|c| c.eq_ignore_ascii_case(&key)),
            AssignmentTarget::Tuple(_) => true,
        });
        if touches_key {
            return ShardPlan::Reject(format!("ON DUPLICATE KEY UPDATE of the shard key {key}"));
        }
    }
    let position = i.columns.iter().position(|c| c.value.eq_ignore_ascii_case(&key));
    let can_generate = auto_increment && !i.columns.is_empty();
    if position.is_none() && !can_generate {
        return ShardPlan::Reject(if i.columns.is_empty() {
            format!(
                "INSERT into sharded table {} without a column list (name the columns, including the shard key {key})",
                target.table
            )
        } else {
            format!(
                "INSERT into sharded table {} without its shard key {key} (or set auto_increment = true on its rule)",
                target.table
            )
        });
    }
    let Some(source) = &i.source else {
        return ShardPlan::Reject("INSERT ... SET into a sharded table (use VALUES)".into());
    };
    let values = match &*source.body {
        SetExpr::Values(values) => values,
        SetExpr::Select(s) if s.from.is_empty() && position.is_some() => {
            return insert_select_row(p, s, position.unwrap_or_default(), function, &target.table);
        }
        _ => return ShardPlan::Reject("INSERT ... SELECT into a sharded table".into()),
    };
    if position.is_none() {
        // The generated key joins the column list.
        let last = i.columns.last().and_then(|c| p.offsets.range(c.span));
        let Some(close) = last.and_then(|r| first_token_from(p.sql, r.end, tessera_sql::TokenKind::RParen)) else {
            return ShardPlan::Reject("an INSERT column list whose place is unknown".into());
        };
        p.common_edits
            .push(Edit::insert(close, format!(", {}", crate::state::quote_ident(&key))));
    }
    let sequence = format!("{}.{}", p.schema.name, target.table);
    split_rows(p, &values.rows, position, function, &target.table, sequence, key)
}

fn split_rows(
    p: &mut Planner,
    rows: &[Vec<Expr>],
    position: Option<usize>,
    function: ShardFunction,
    table: &str,
    sequence: String,
    key_name: String,
) -> ShardPlan {
    let mut ranges: Vec<(Range<usize>, Option<ValueSource>)> = Vec::new();
    for row in rows {
        let key = position.map(|i| row.get(i));
        let (Some(first), Some(last), Some(key)) = (row.first(), row.last(), key.or(Some(None))) else {
            return ShardPlan::Reject("an INSERT row without the shard key value".into());
        };
        if position.is_some() && key.is_none() {
            return ShardPlan::Reject("an INSERT row without the shard key value".into());
        }
        let (Some(a), Some(b)) = (p.offsets.of(first), p.offsets.of(last)) else {
            return ShardPlan::Reject("an INSERT row whose place is unknown".into());
        };
        let Some(open) = row_open_paren(p.sql, a.start) else {
            return ShardPlan::Reject("an INSERT row without parentheses".into());
        };
        let _ = b;
        let Some(close) = matching_paren(p.sql, open) else {
            return ShardPlan::Reject("an INSERT row without parentheses".into());
        };
        let literal_at = |o: usize| p.literal_at(o);
        let placeholder_at = |o: usize| p.placeholder_at(o);
        let no_key = |_: &Expr| false;
        let reader = KeyReader {
            offsets: &p.offsets,
            is_key: &no_key,
            literal_at: &literal_at,
            placeholder_at: &placeholder_at,
        };
        let source = match key {
            None => None,
            Some(key) => match reader.value(key) {
                Some(s) => Some(s),
                None => {
                    return ShardPlan::Reject(format!(
                        "an INSERT into {table} whose shard-key value is an expression (use a literal or a parameter)"
                    ))
                }
            },
        };
        ranges.push((open..close, source));
    }
    let (Some(first), Some(last)) = (ranges.first(), ranges.last()) else {
        return ShardPlan::Reject("an INSERT without rows".into());
    };
    let (start, end) = (first.0.start, last.0.end + 1);
    let len = p.sql.len();
    let cut = |keep: Range<usize>| SqlTemplate::build_window(p.sql, &p.fp.literals, &p.common_edits, keep);
    let head = cut(0..start);
    let tail = cut(end..len);
    let rows = ranges.iter().map(|(r, s)| (cut(r.clone()), s.clone())).collect();
    let generated_key = position.is_none().then_some(key_name);
    let reason = match &generated_key {
        Some(k) => format!("INSERT rows into {table}, {k} from Tessera's sequence"),
        None => format!("INSERT rows by their shard key into {table}"),
    };
    ShardPlan::Insert(Box::new(InsertPlan {
        head,
        rows,
        tail,
        generated_key,
        sequence,
        function,
        reason,
    }))
}

/// `INSERT INTO t (...) SELECT <values>` (no FROM): one row, on its key's shard.
fn insert_select_row(
    p: &mut Planner,
    s: &tessera_sql::sqlparser::ast::Select,
    position: usize,
    function: ShardFunction,
    table: &str,
) -> ShardPlan {
    use tessera_sql::sqlparser::ast::SelectItem;
    let key = match s.projection.get(position) {
        Some(SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) => e,
        _ => return ShardPlan::Reject("INSERT ... SELECT without the shard key value".into()),
    };
    let literal_at = |o: usize| p.literal_at(o);
    let placeholder_at = |o: usize| p.placeholder_at(o);
    let no_key = |_: &Expr| false;
    let reader = KeyReader {
        offsets: &p.offsets,
        is_key: &no_key,
        literal_at: &literal_at,
        placeholder_at: &placeholder_at,
    };
    let Some(source) = reader.value(key) else {
        return ShardPlan::Reject(format!("an INSERT into {table} whose shard-key value is an expression"));
    };
    ShardPlan::Write {
        shards: ShardSet::Key {
            function,
            expr: KeyExpr::Eq(source),
        },
        sql: p.one_template(),
        reason: format!("INSERT ... SELECT of one row into {table}, by its shard key"),
        one_shard_only: None,
        replicated: false,
    }
}

/// The `)` that closes the `(` at `open`.
fn matching_paren(sql: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for t in tessera_sql::Lexer::new(sql.get(open..)?) {
        match t.kind {
            tessera_sql::TokenKind::LParen => depth += 1,
            tessera_sql::TokenKind::RParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + t.offset);
                }
            }
            _ => {}
        }
    }
    None
}

/// The `(` that opens the row whose first value starts at `first`: only blanks lie between
/// them as a client writes rows; with a comment there, the text is lexed from the start.
fn row_open_paren(sql: &str, first: usize) -> Option<usize> {
    let before = sql.get(..first)?.trim_end();
    if before.ends_with('(') {
        return Some(before.len() - 1);
    }
    tessera_sql::Lexer::new(sql)
        .take_while(|t| t.offset < first)
        .filter(|t| t.kind == tessera_sql::TokenKind::LParen)
        .last()
        .map(|t| t.offset)
}

fn first_token_from(sql: &str, pos: usize, kind: tessera_sql::TokenKind) -> Option<usize> {
    tessera_sql::Lexer::new(sql.get(pos..)?)
        .find(|t| t.kind == kind)
        .map(|t| pos + t.offset)
}
