//! Sharded planning: statement + logical schema -> [`ShardPlan`], once per fingerprint. The
//! planner is pure (no connections): a plan names the shards (or how to find them from key
//! values at execution), the SQL each shard runs, and the merge that turns shard results into
//! the one answer a single MariaDB would give.
//!
//! - [`keys`]: shard-key predicates (`=`, `IN`, ranges, `IS NULL`, `AND`/`OR`) -> [`KeyExpr`].
//! - [`select`]: reads, their per-shard rewrite and merge. [`write`](mod@write): INSERT/UPDATE/DELETE/DDL.
//! - [`values`]: literal text and bound parameters -> shard-key values.
//! - [`cache`]: the plan cache.
//! - [`resolve`]: a scatter's merge resolved against the columns the shards described.

pub mod cache;
pub mod keys;
pub mod resolve;
pub mod routed;
pub mod select;
pub mod values;
pub mod write;

use crate::exec::merge::MergeSpec;
use crate::route::shard_fn::{KeyValue, ShardFunction};
use crate::topology::ShardedSchema;
use std::collections::BTreeSet;
use tessera_sql::SqlTemplate;

pub use keys::{KeyExpr, ValueSource};

pub use crate::error::plan::PlanError;

/// The marker a template carries where a shard's physical database name goes.
pub use crate::exec::sharded::DATABASE_MARKER;

/// Which shards a statement runs on.
#[derive(Debug, Clone, PartialEq)]
pub enum ShardSet {
    /// Known at plan time.
    Fixed(Vec<usize>),
    /// From shard-key values read at execution (literals or bound parameters).
    Key { function: ShardFunction, expr: KeyExpr },
    /// Every shard of the schema.
    All,
}

/// A read's shape on several shards: the rewritten SQL and the merge of its results.
#[derive(Debug, Clone, PartialEq)]
pub struct Scatter {
    pub sql: SqlTemplate,
    pub merge: MergeSpec,
    /// Hidden columns the shard SQL appends after the client's (not sent to the client).
    pub hidden: usize,
    /// Sort/group keys whose comparison (value or collation weight) is decided by the type of
    /// the value column once the shards described their columns: (key path, weight column).
    pub weighted: Vec<WeightedKey>,
    /// Visible columns whose metadata comes from another column (AVG's scale).
    pub avg_columns: Vec<usize>,
}

/// A sort key that compares by WEIGHT_STRING() when its value column is a non-binary string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeightedKey {
    /// The value column (shard column index; hidden ones are counted from the end, see
    /// [`Col`]).
    pub value: Col,
    pub weight: Col,
}

/// A shard column: the n-th of the client's columns, or the n-th hidden one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Visible(usize),
    Hidden(usize),
}

/// How a statement runs on a sharded schema.
#[derive(Debug, Clone, PartialEq)]
pub enum ShardPlan {
    /// A read (or a locking read). On one shard its SQL is `one` and the response passes
    /// through; on several, `many` runs on each and is merged.
    Read {
        shards: ShardSet,
        one: SqlTemplate,
        /// Err: what makes the statement unsupported on several shards.
        many: Result<Box<Scatter>, PlanError>,
        reason: String,
    },
    /// UPDATE/DELETE (and other writes by key): affected rows are summed; on several shards
    /// the statement is atomic (all shards or none).
    Write {
        shards: ShardSet,
        sql: SqlTemplate,
        reason: String,
        /// Some: refused when the shards resolve to more than one (the message says why).
        one_shard_only: Option<String>,
        /// A broadcast table's write: every shard changes the same rows, reported once.
        replicated: bool,
    },
    /// INSERT/REPLACE whose rows are split by shard.
    Insert(Box<write::InsertPlan>),
    /// DDL: every listed shard, one after the other, failures named per shard.
    Ddl {
        shards: Vec<usize>,
        sql: SqlTemplate,
        reason: String,
    },
    /// `CREATE DATABASE <logical>`: the shard databases.
    CreateDatabase { if_not_exists: bool },
    /// Refused: the message says what is not supported.
    Reject(String),
}

impl ShardPlan {
    /// The shards a plan runs on, from the statement's literals and parameters.
    pub fn resolve(set: &ShardSet, schema: &ShardedSchema, values: &values::Values) -> Result<Vec<usize>, PlanError> {
        let n = schema.shard_count();
        match set {
            ShardSet::Fixed(v) => Ok(v.clone()),
            ShardSet::All => Ok((0..n).collect()),
            ShardSet::Key { function, expr } => match expr.shards(function, n, values)? {
                // No shard can match (`k = 1 AND k = 2`): one shard still answers, with the
                // result's columns and no rows.
                Some(set) if set.is_empty() => Ok(vec![schema.default_shard]),
                Some(set) => Ok(set.into_iter().collect()),
                None => Ok((0..n).collect()),
            },
        }
    }

    /// The statement as one shard runs it (its database qualifiers still [`DATABASE_MARKER`]);
    /// None for a refusal.
    pub fn one_shard_sql(&self, sql: &str, literals: &[std::ops::Range<usize>]) -> Option<String> {
        match self {
            ShardPlan::Read { one, .. } => Some(one.render(sql, literals)),
            ShardPlan::Write { sql: t, .. } | ShardPlan::Ddl { sql: t, .. } => Some(t.render(sql, literals)),
            ShardPlan::Insert(p) => {
                let rows: Vec<String> = (0..p.rows.len())
                    .map(|i| p.render_row(i, sql, literals, None))
                    .collect();
                Some(format!(
                    "{}{}{}",
                    p.head.render(sql, literals),
                    rows.join(", "),
                    p.tail.render(sql, literals)
                ))
            }
            ShardPlan::CreateDatabase { .. } => Some(sql.to_string()),
            ShardPlan::Reject(_) => None,
        }
    }

    /// The shards one execution touches.
    pub fn shards_for(&self, schema: &ShardedSchema, values: &values::Values) -> Result<Vec<usize>, PlanError> {
        match self {
            ShardPlan::Read { shards, .. } | ShardPlan::Write { shards, .. } => Self::resolve(shards, schema, values),
            ShardPlan::Ddl { shards, .. } => Ok(shards.clone()),
            ShardPlan::Insert(p) if p.generated_key.is_some() => Ok((0..schema.shard_count()).collect()),
            ShardPlan::Insert(p) => {
                let mut set = BTreeSet::new();
                for source in p.rows.iter().filter_map(|(_, s)| s.as_ref()) {
                    let v = values.get(source)?;
                    set.insert(p.function.shard_of(&v, schema.shard_count())?);
                }
                Ok(set.into_iter().collect())
            }
            ShardPlan::CreateDatabase { .. } => Ok((0..schema.shard_count()).collect()),
            ShardPlan::Reject(m) => Err(PlanError::Refused(m.clone())),
        }
    }

    /// The one-line reason (for logs and EXPLAIN ROUTE).
    pub fn reason(&self) -> &str {
        match self {
            ShardPlan::Read { reason, .. } | ShardPlan::Write { reason, .. } | ShardPlan::Ddl { reason, .. } => reason,
            ShardPlan::Insert(p) => &p.reason,
            ShardPlan::CreateDatabase { .. } => "CREATE DATABASE of a logical schema creates its shard databases",
            ShardPlan::Reject(m) => m,
        }
    }
}

/// Shards from a set of key values.
pub fn shards_of(function: &ShardFunction, values: &[KeyValue], n: usize) -> Result<BTreeSet<usize>, PlanError> {
    values.iter().map(|v| Ok(function.shard_of(v, n)?)).collect()
}

pub mod colocate;
pub mod explain;
pub mod having;
pub mod scopes;
pub mod tables;
pub mod union;

use crate::catalog::SchemaTables;
use tessera_sql::analyze::Offsets;
use tessera_sql::sqlparser::ast::{Expr, LimitClause, Query, Select, Statement};
use tessera_sql::{Edit, Fingerprint};

/// Planning state for one statement.
pub struct Planner<'a> {
    pub sql: &'a str,
    pub offsets: Offsets<'a>,
    pub fp: &'a Fingerprint,
    pub schema: &'a ShardedSchema,
    /// The columns of the schema's tables (column references resolve against them).
    pub tables: &'a SchemaTables,
    /// Edits every rendering gets (database qualifiers).
    pub common_edits: Vec<Edit>,
    /// Edits of the scatter SQL only.
    pub shard_edits: Vec<Edit>,
    /// Literals whose values the plan depends on (the cache checks them).
    pub baked: Vec<usize>,
    /// Shard keys of the sharded tables the statement references.
    pub keys: Vec<String>,
    clauses: Option<Clauses>,
    /// The statement has an ORDER BY/LIMIT the parse did not see (UPDATE ... LIMIT).
    pub ordered_limit: bool,
}

impl<'a> Planner<'a> {
    pub fn new(sql: &'a str, fp: &'a Fingerprint, schema: &'a ShardedSchema, tables: &'a SchemaTables) -> Self {
        Planner {
            sql,
            offsets: Offsets::new(sql),
            fp,
            schema,
            tables,
            common_edits: Vec::new(),
            shard_edits: Vec::new(),
            baked: Vec::new(),
            keys: Vec::new(),
            clauses: None,
            ordered_limit: false,
        }
    }

    /// An expression as SQL for a per-shard rewrite: its printed form (sqlparser's spans do
    /// not cover every suffix, e.g. `IS NULL`). Its literals are baked into the plan.
    pub fn text(&mut self, e: &Expr) -> String {
        use std::ops::ControlFlow;
        let mut literals = Vec::new();
        let _ = tessera_sql::sqlparser::ast::visit_expressions(e, |x| {
            if matches!(x, Expr::Value(_)) {
                literals.push(x.clone());
            }
            ControlFlow::<()>::Continue(())
        });
        for l in &literals {
            self.bake(l);
        }
        e.to_string()
    }

    /// The plan depends on this literal's value.
    pub fn bake(&mut self, e: &Expr) {
        if let Some(i) = self.offsets.of(e).and_then(|r| self.literal_at(r.start)) {
            self.bake_literal(i);
        }
    }

    fn bake_literal(&mut self, i: usize) {
        if !self.baked.contains(&i) {
            self.baked.push(i);
        }
    }

    /// The plan depends on the string after every `SEPARATOR` (GROUP_CONCAT's, which the
    /// merge puts between values; sqlparser gives it no place in the text).
    pub fn bake_separators(&mut self) {
        let mut after_separator = false;
        let mut strings = Vec::new();
        for t in tessera_sql::Lexer::new(self.sql).filter(|t| t.is_significant()) {
            if after_separator && t.kind == tessera_sql::TokenKind::String {
                strings.push(t.offset);
            }
            after_separator = t.is_word("SEPARATOR");
        }
        for offset in strings {
            if let Some(i) = self.literal_at(offset) {
                self.bake_literal(i);
            }
        }
    }

    pub fn literal_at(&self, offset: usize) -> Option<usize> {
        self.fp.literals.binary_search_by_key(&offset, |r| r.start).ok()
    }

    pub fn placeholder_at(&self, offset: usize) -> Option<usize> {
        self.fp.placeholders.binary_search(&offset).ok()
    }

    /// Whether `e` names the shard key of one of `sharded` ((name or alias, key) pairs).
    pub fn is_key(&self, e: &Expr, sharded: &[(String, String)]) -> bool {
        match e {
            Expr::Identifier(i) => sharded.iter().any(|(_, k)| k.eq_ignore_ascii_case(&i.value)),
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [t, c] => sharded
                    .iter()
                    .any(|(n, k)| n == &t.value && k.eq_ignore_ascii_case(&c.value)),
                [d, t, c] => {
                    d.value == self.schema.name
                        && sharded
                            .iter()
                            .any(|(n, k)| n == &t.value && k.eq_ignore_ascii_case(&c.value))
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// The template of the SQL as the client wrote it (qualifiers renamed).
    pub fn one_template(&self) -> SqlTemplate {
        SqlTemplate::build(self.sql, &self.fp.literals, &self.common_edits)
    }

    /// The template of the scatter SQL.
    pub fn template(&self) -> SqlTemplate {
        let mut edits = self.common_edits.clone();
        edits.extend(self.shard_edits.iter().cloned());
        SqlTemplate::build(self.sql, &self.fp.literals, &edits)
    }

    /// LIMIT offset,count -> (offset, count, the edit that sends `LIMIT offset+count`).
    pub fn limit(&mut self, q: &Query) -> Result<Option<(u64, u64, Edit)>, PlanError> {
        let (offset, limit) = match &q.limit_clause {
            None => return Ok(None),
            Some(LimitClause::LimitOffset { limit: None, .. }) => return Ok(None),
            Some(LimitClause::LimitOffset {
                limit: Some(l), offset, ..
            }) => (offset.as_ref().map(|o| &o.value), l),
            Some(LimitClause::OffsetCommaLimit { offset, limit }) => (Some(offset), limit),
        };
        let count = self.number(limit)?;
        let skip = match offset {
            Some(o) => self.number(o)?,
            None => 0,
        };
        let first = offset
            .and_then(|o| self.offsets.of(o))
            .map_or(usize::MAX, |r| r.start)
            .min(self.offsets.of(limit).map_or(usize::MAX, |r| r.start));
        let last = offset
            .and_then(|o| self.offsets.of(o))
            .map_or(0, |r| r.end)
            .max(self.offsets.of(limit).map_or(0, |r| r.end));
        let start = self
            .keyword_before(first, "LIMIT")
            .ok_or("LIMIT whose place is unknown")?;
        let edit = Edit::replace(start..last, format!("LIMIT {}", skip.saturating_add(count)));
        Ok(Some((skip, count, edit)))
    }

    fn number(&mut self, e: &Expr) -> Result<u64, PlanError> {
        use tessera_sql::sqlparser::ast::Value;
        match e {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => {
                    self.bake(e);
                    n.parse().map_err(|_| PlanError::Refused(format!("LIMIT {n}")))
                }
                Value::Placeholder(_) => Err("LIMIT with a parameter across shards".into()),
                other => Err(PlanError::Refused(format!("LIMIT {other}"))),
            },
            other => Err(PlanError::Refused(format!("LIMIT {other}"))),
        }
    }

    /// The offset of the last `keyword` token that starts before `pos`.
    pub fn keyword_before(&self, pos: usize, keyword: &str) -> Option<usize> {
        tessera_sql::Lexer::new(self.sql)
            .take_while(|t| t.offset < pos)
            .filter(|t| t.is_word(keyword))
            .last()
            .map(|t| t.offset)
    }

    /// The top-level clauses of the statement (located once).
    pub fn clauses(&mut self) -> &Clauses {
        if self.clauses.is_none() {
            self.clauses = Some(Clauses::locate(self.sql));
        }
        self.clauses.get_or_insert_with(Clauses::default)
    }

    /// From `ORDER` to the end of the ORDER BY clause.
    pub fn order_by_range(&mut self, _q: &Query) -> Option<std::ops::Range<usize>> {
        self.clauses().range(Clause::Order)
    }

    pub fn having_range(&mut self, _s: &Select) -> Option<std::ops::Range<usize>> {
        self.clauses().range(Clause::Having)
    }

    /// The end of the GROUP BY clause (where another key can be appended).
    pub fn group_by_end(&mut self, _s: &Select) -> Option<usize> {
        self.clauses().range(Clause::Group).map(|r| r.end)
    }

    /// Just after WHERE (or FROM when there is no WHERE): where a GROUP BY goes.
    pub fn after_where(&mut self, _s: &Select) -> usize {
        let c = self.clauses();
        c.range(Clause::Where)
            .or_else(|| c.range(Clause::From))
            .map_or(c.end, |r| r.end)
    }

    /// Just after HAVING, GROUP BY or WHERE, whichever comes last: where an ORDER BY goes.
    pub fn after_where_group_having(&mut self, s: &Select) -> usize {
        let c = self.clauses();
        if let Some(r) = c.range(Clause::Having).or_else(|| c.range(Clause::Group)) {
            return r.end;
        }
        self.after_where(s)
    }

    /// Where the select list ends (hidden columns go there): before the top-level FROM.
    pub fn select_list_end(&mut self) -> Option<usize> {
        self.clauses().start(Clause::From)
    }
}

/// The top-level clauses of a SELECT, by the keyword that starts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Clause {
    From,
    Where,
    Group,
    Having,
    Window,
    Order,
    Limit,
    Locking,
}

/// Where each top-level clause starts (paren depth 0), and where the statement ends.
#[derive(Debug, Clone, Default)]
pub struct Clauses {
    starts: Vec<(Clause, usize)>,
    /// The end of the statement (trailing spaces and `;` excluded).
    pub end: usize,
}

impl Clauses {
    pub fn locate(sql: &str) -> Clauses {
        use tessera_sql::TokenKind;
        let mut depth = 0i32;
        let mut starts: Vec<(Clause, usize)> = Vec::new();
        let mut end = sql.len();
        for t in tessera_sql::Lexer::new(sql).filter(|t| t.is_significant()) {
            match t.kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => depth -= 1,
                TokenKind::Semicolon if depth == 0 => {
                    end = t.offset;
                    break;
                }
                TokenKind::Word if depth == 0 => {
                    let clause = match t.text.to_ascii_uppercase().as_str() {
                        "FROM" => Clause::From,
                        "WHERE" => Clause::Where,
                        "GROUP" => Clause::Group,
                        "HAVING" => Clause::Having,
                        "WINDOW" => Clause::Window,
                        "ORDER" => Clause::Order,
                        "LIMIT" => Clause::Limit,
                        "FOR" | "LOCK" => Clause::Locking,
                        "UNION" | "EXCEPT" | "INTERSECT" => {
                            end = t.offset;
                            break;
                        }
                        _ => continue,
                    };
                    if !starts.iter().any(|(c, _)| *c == clause) {
                        starts.push((clause, t.offset));
                    }
                }
                _ => {}
            }
        }
        let end = sql[..end].trim_end().len();
        Clauses { starts, end }
    }

    pub fn start(&self, c: Clause) -> Option<usize> {
        self.starts.iter().find(|(k, _)| *k == c).map(|(_, at)| *at)
    }

    /// From the clause's keyword to the start of the next clause (trailing spaces excluded).
    pub fn range(&self, c: Clause) -> Option<std::ops::Range<usize>> {
        let at = self.start(c)?;
        let next = self
            .starts
            .iter()
            .map(|(_, s)| *s)
            .filter(|s| *s > at)
            .min()
            .unwrap_or(self.end);
        Some(at..next)
    }
}

/// What a plan is for the cache: the plan and the literals it depends on.
pub struct Planned {
    pub plan: ShardPlan,
    pub baked: Vec<usize>,
}

/// Plans one statement on a sharded schema whose tables' columns `tables` describes.
pub fn plan(sql: &str, fp: &Fingerprint, schema: &ShardedSchema, tables: &SchemaTables) -> Planned {
    let mut p = Planner::new(sql, fp, schema, tables);
    let plan = match parse_for_planning(sql) {
        Ok((stmt, ordered_limit)) => {
            p.ordered_limit = ordered_limit;
            plan_statement(&mut p, &stmt)
        }
        Err(e) => unparsed(&p, &e.to_string()),
    };
    Planned { plan, baked: p.baked }
}

/// The statement with its logical database qualifiers as [`DATABASE_MARKER`], as one shard
/// would run it (the client's text when it does not parse): what a refusal checks against a
/// shard, so that a statement the server would reject gets the server's error.
pub fn renamed(sql: &str, fp: &Fingerprint, schema: &ShardedSchema, tables: &SchemaTables) -> String {
    let mut p = Planner::new(sql, fp, schema, tables);
    if let Ok((stmt, _)) = parse_for_planning(sql) {
        let _ = tables::all_tables(&stmt, schema, &p.offsets, &mut p.common_edits);
    }
    p.one_template().render(sql, &fp.literals)
}

/// Parses a statement; MariaDB's `LOCK IN SHARE MODE` (which sqlparser does not know) is
/// blanked out for the parse only: offsets stay those of the text, which keeps it.
fn parse_for_planning(sql: &str) -> Result<(Statement, bool), tessera_sql::analyze::AnalyzeError> {
    let e = match tessera_sql::analyze::parse_one(sql) {
        Ok(s) => return Ok((s, false)),
        Err(e) => e,
    };
    let tokens: Vec<_> = tessera_sql::Lexer::new(sql).filter(|t| t.is_significant()).collect();
    let blank = |range: std::ops::Range<usize>| {
        let mut blanked = sql.to_string();
        blanked.replace_range(range.clone(), &" ".repeat(range.len()));
        blanked
    };
    let lock = tokens
        .windows(4)
        .position(|w| w[0].is_word("LOCK") && w[1].is_word("IN") && w[2].is_word("SHARE") && w[3].is_word("MODE"));
    if let Some(i) = lock {
        return tessera_sql::analyze::parse_one(&blank(tokens[i].offset..tokens[i + 3].end())).map(|s| (s, false));
    }
    // `UPDATE ... ORDER BY ... LIMIT n` (MariaDB's single-table form): planned without its
    // ORDER BY/LIMIT, which the statement keeps; the plan then runs on one shard only.
    if tokens.first().is_some_and(|t| t.is_word("UPDATE")) {
        let clauses = Clauses::locate(sql);
        if let Some(at) = clauses.start(Clause::Order).or_else(|| clauses.start(Clause::Limit)) {
            return tessera_sql::analyze::parse_one(&blank(at..clauses.end)).map(|s| (s, true));
        }
    }
    Err(e)
}

/// A statement Tessera cannot parse: it may still run on the default shard when it names none
/// of the schema's sharded or broadcast tables.
fn unparsed(p: &Planner, error: &str) -> ShardPlan {
    let mentions_table = tessera_sql::Lexer::new(p.sql).any(|t| {
        let name = tessera_sql::unquote(t.text);
        matches!(
            t.kind,
            tessera_sql::TokenKind::Word | tessera_sql::TokenKind::QuotedIdent
        ) && !matches!(p.schema.table(&name), crate::topology::TablePlacement::Single(_))
    });
    if mentions_table {
        return ShardPlan::Reject(format!(
            "a statement over sharded tables that Tessera cannot parse ({error})"
        ));
    }
    ShardPlan::Read {
        shards: ShardSet::Fixed(vec![p.schema.default_shard]),
        one: p.one_template(),
        many: Err("a statement Tessera cannot analyze".into()),
        reason: "not analyzed; names no sharded or broadcast table: default shard".into(),
    }
}

fn plan_statement(p: &mut Planner, stmt: &Statement) -> ShardPlan {
    if let Some(forced) = hint(p.sql, p.schema.shard_count()) {
        let _ = tables::all_tables(stmt, p.schema, &p.offsets, &mut p.common_edits);
        return match forced {
            Ok(shards) => match stmt {
                Statement::Query(_) => ShardPlan::Read {
                    shards: ShardSet::Fixed(shards),
                    one: p.one_template(),
                    many: Ok(Box::new(Scatter {
                        sql: p.one_template(),
                        merge: crate::exec::merge::MergeSpec::new(0),
                        hidden: 0,
                        weighted: Vec::new(),
                        avg_columns: Vec::new(),
                    })),
                    reason: "a routing hint".into(),
                },
                _ => ShardPlan::Write {
                    shards: ShardSet::Fixed(shards),
                    sql: p.one_template(),
                    reason: "a routing hint".into(),
                    one_shard_only: None,
                    replicated: false,
                },
            },
            Err(e) => ShardPlan::Reject(e.detail()),
        };
    }
    match stmt {
        Statement::Query(q) => read(p, stmt, q),
        _ => write::plan(p, stmt),
    }
}

/// `/*+ tessera:shard=N */`, `/*+ tessera:all */`, `/*# group="all" */`.
fn hint(sql: &str, n: usize) -> Option<Result<Vec<usize>, PlanError>> {
    if !sql.contains("tessera:") && !sql.contains("/*#") {
        return None;
    }
    if sql.contains("tessera:all") || sql.contains("group=\"all\"") {
        return Some(Ok((0..n).collect()));
    }
    let at = sql.find("tessera:shard=")? + "tessera:shard=".len();
    let digits: String = sql[at..].chars().take_while(char::is_ascii_digit).collect();
    Some(match digits.parse::<usize>() {
        Ok(s) if s < n => Ok(vec![s]),
        _ => Err(PlanError::Refused(format!(
            "the hint tessera:shard={digits} names no shard (the schema has {n})"
        ))),
    })
}

/// Plans a SELECT (or any query).
fn read(p: &mut Planner, stmt: &Statement, q: &Query) -> ShardPlan {
    let tables = tables::all_tables(stmt, p.schema, &p.offsets, &mut p.common_edits);
    match tables::spread(&tables, p.schema.default_shard) {
        tables::Spread::Conflict(m) => return ShardPlan::Reject(m),
        tables::Spread::OneShard(s) => {
            return ShardPlan::Read {
                shards: ShardSet::Fixed(vec![s]),
                one: p.one_template(),
                many: Err("a statement on one shard".into()),
                reason: "no sharded table: one shard".into(),
            }
        }
        tables::Spread::Sharded => {}
    }
    p.keys = tables
        .iter()
        .filter_map(|t| match &t.place {
            tables::Place::Sharded { key, .. } => Some(key.clone()),
            _ => None,
        })
        .collect();
    let mut colocation = colocate::Colocation::ByKeys;
    if let tessera_sql::sqlparser::ast::SetExpr::Select(_) = &*q.body {
        // Rows combined on one shard must live together, also when one shard answers.
        match colocate::check_colocated(p, q, &tables) {
            Ok(c) => colocation = c,
            Err(m) => return ShardPlan::Reject(m.detail()),
        }
    }
    let sharded: Vec<(String, String)> = top_sharded(p, q);
    let function = tables.iter().find_map(|t| match &t.place {
        tables::Place::Sharded { function, .. } => Some(function.clone()),
        _ => None,
    });
    let expr = match &*q.body {
        tessera_sql::sqlparser::ast::SetExpr::Select(s) => select::key_expr(p, s, &sharded),
        _ => KeyExpr::Any,
    };
    let expr = match colocation {
        colocate::Colocation::ByValues(pins) => KeyExpr::OneShard(Box::new(KeyExpr::And(pins))),
        colocate::Colocation::ByKeys => expr,
    };
    let reason = expr.describe(sharded.first().map_or("key", |(_, k)| k.as_str()));
    let one = p.one_template();
    let many = select::scatter(p, q, &tables);
    let shards = match function {
        Some(function) if expr.narrows() => ShardSet::Key { function, expr },
        _ => ShardSet::All,
    };
    match many {
        Ok(s) => ShardPlan::Read {
            shards,
            one,
            many: Ok(Box::new(s)),
            reason,
        },
        Err(m) => ShardPlan::Read {
            shards,
            one,
            many: Err(m),
            reason,
        },
    }
}

/// (name or alias, key) of the sharded tables in the top-level FROM whose key predicates
/// choose shards: not the NULL-extended side of an outer join (`c.id IS NULL` there matches
/// rows of every shard).
fn top_sharded(p: &Planner, q: &Query) -> Vec<(String, String)> {
    use tessera_sql::sqlparser::ast::{JoinOperator as J, SetExpr, TableFactor};
    let SetExpr::Select(s) = &*q.body else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let entry = |f: &TableFactor| -> Option<(String, String)> {
        let TableFactor::Table { name, alias, .. } = f else {
            return None;
        };
        let t = tables::resolve(name, p.schema, &p.offsets, &mut Vec::new());
        let tables::Place::Sharded { key, .. } = t.place else {
            return None;
        };
        Some((alias.as_ref().map_or(t.table.clone(), |a| a.name.value.clone()), key))
    };
    for twj in &s.from {
        out.extend(entry(&twj.relation));
        for j in &twj.joins {
            match &j.join_operator {
                J::Left(_) | J::LeftOuter(_) => {}
                J::Right(_) | J::RightOuter(_) => {
                    out.clear();
                    out.extend(entry(&j.relation));
                }
                J::FullOuter(_) => out.clear(),
                _ => out.extend(entry(&j.relation)),
            }
        }
    }
    out
}
