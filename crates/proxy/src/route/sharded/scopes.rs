//! Column references bound the way MariaDB binds them, to prove that the sharded tables a
//! query combines are linked by equalities of their shard keys. An unqualified column belongs
//! to the innermost SELECT whose FROM has a table with that column (the table metadata,
//! [`crate::catalog`], says which columns a table has); a qualified one to the innermost table
//! or alias of that name. A reference that cannot be bound with certainty (a table whose
//! columns are not known, `*` over one) links nothing, so the query is refused, never guessed.

use super::tables::{resolve, Place};
use super::Planner;
use std::ops::ControlFlow;
use tessera_sql::sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, JoinConstraint, JoinOperator, ObjectNamePart, Query, Select, SelectItem,
    SetExpr, TableAlias, TableFactor, TableWithJoins, Visit, Visitor,
};

/// Output columns of a derived table: name, and the sharded reference whose key it carries.
type Columns = Vec<(String, Option<usize>)>;

/// What a name in a FROM clause stands for.
enum Source {
    /// A sharded table: its reference number, key and name.
    Sharded { id: usize, key: String, table: String },
    /// Another table of the logical schema (broadcast, on one shard), or None: a table whose
    /// columns are not known (another database, a table function).
    Table(Option<String>),
    /// A derived table or a common table expression; None when its columns cannot be listed.
    Derived(Option<Columns>),
}

/// One table reference of a FROM clause.
struct Entry {
    /// The alias, else the table's name.
    name: String,
    source: Source,
    /// Its rows differ from shard to shard (a sharded table, a derived table over one).
    sharded: bool,
}

type Scope = Vec<Entry>;

/// A condition of a WHERE or an ON, and (for an ON) the NULL-extended references as its join
/// sees them; None: as the whole FROM leaves them.
struct Conjunct<'q> {
    expr: &'q Expr,
    null_ext: Option<Vec<usize>>,
}

/// What a column reference is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Binding {
    /// The shard key of sharded reference n.
    Key(usize),
    /// Any other column (or an error the server reports: unknown, ambiguous).
    Other,
    /// Not known for certain.
    Unknown,
}

/// Whether every sharded table reference of `query` is linked to the others by key
/// equalities (`expected`: how many sharded references the query makes; a reference the walk
/// does not reach makes the answer false).
pub fn keys_link_all(p: &Planner, query: &Query, expected: usize) -> bool {
    let mut walk = Walk::new(p);
    walk.query(query, &[]);
    walk.links_all(expected)
}

/// [`keys_link_all`] for one SELECT (a UNION branch).
pub fn select_keys_link_all(p: &Planner, select: &Select, expected: usize) -> bool {
    let mut walk = Walk::new(p);
    walk.select(select, &[]);
    walk.links_all(expected)
}

/// Whether a (derived) SELECT groups by the shard key of a sharded table of its FROM: its
/// groups then never span shards.
pub fn groups_by_key(p: &Planner, select: &Select) -> bool {
    let GroupByExpr::Expressions(list, _) = &select.group_by else {
        return false;
    };
    let mut walk = Walk::new(p);
    let mut scope = Scope::new();
    let mut conjuncts = Vec::new();
    for twj in &select.from {
        walk.add_from_item(twj, &mut scope, &mut conjuncts);
    }
    list.iter()
        .map(|e| match e {
            // A FROM column (or one that may be) comes before a select alias of that name.
            Expr::Identifier(i)
                if scope
                    .iter()
                    .any(|entry| walk.has_column(entry, &i.value) != Some(false)) =>
            {
                e
            }
            _ => grouped_item(select, e),
        })
        .any(|e| matches!(walk.bind(e, &[&scope]), Binding::Key(_)))
}

/// What a GROUP BY item groups by: `GROUP BY 2` the second select item, `GROUP BY a` the item
/// aliased `a` (the caller checks first that no FROM column is named so), else the expression.
fn grouped_item<'s>(select: &'s Select, e: &'s Expr) -> &'s Expr {
    let item_expr = |i: &'s SelectItem| match i {
        SelectItem::UnnamedExpr(x) | SelectItem::ExprWithAlias { expr: x, .. } => Some(x),
        _ => None,
    };
    match e {
        Expr::Value(v) => match &v.value {
            tessera_sql::sqlparser::ast::Value::Number(n, _) => n
                .parse::<usize>()
                .ok()
                .and_then(|n| select.projection.get(n.checked_sub(1)?))
                .and_then(item_expr)
                .unwrap_or(e),
            _ => e,
        },
        Expr::Identifier(name) => select
            .projection
            .iter()
            .find_map(|i| match i {
                SelectItem::ExprWithAlias { expr, alias } if alias.value.eq_ignore_ascii_case(&name.value) => {
                    Some(expr)
                }
                _ => None,
            })
            .unwrap_or(e),
        _ => e,
    }
}

/// Whether the links join `n` nodes into one component.
fn connected(n: usize, links: &[(usize, usize)]) -> bool {
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut components = n;
    for &(a, b) in links {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        if ra != rb {
            parent[ra] = rb;
            components -= 1;
        }
    }
    components <= 1
}

struct Walk<'p, 'a> {
    p: &'p Planner<'a>,
    /// Sharded references numbered so far.
    refs: usize,
    links: Vec<(usize, usize)>,
    /// Common table expressions in scope: name, columns, whether over sharded tables.
    ctes: Vec<(String, Option<Columns>, bool)>,
    /// Sharded references on the inner side of an outer join met so far: their columns may be
    /// NULL-extended, and a NULL-extended key `<=>` another key matches that table's NULL-key
    /// rows, which live on another shard.
    null_ext: Vec<usize>,
    /// A SELECT with no sharded table in its FROM (nor in an enclosing one) has a subquery over
    /// a sharded table: every shard would answer it with part of that table's rows.
    unanchored: bool,
}

impl<'p, 'a> Walk<'p, 'a> {
    fn new(p: &'p Planner<'a>) -> Self {
        Walk {
            p,
            refs: 0,
            links: Vec::new(),
            ctes: Vec::new(),
            null_ext: Vec::new(),
            unanchored: false,
        }
    }

    /// Whether the walk met `expected` sharded references, all anchored and linked.
    fn links_all(&self, expected: usize) -> bool {
        self.refs == expected && !self.unanchored && connected(self.refs, &self.links)
    }

    /// Walks a query; its output columns when they can be listed.
    fn query(&mut self, q: &Query, outer: &[&Scope]) -> Option<Columns> {
        let ctes_before = self.ctes.len();
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                let before = self.refs;
                let columns = self.query(&cte.query, &[]);
                let columns = renamed(columns, &cte.alias);
                self.ctes
                    .push((cte.alias.name.value.clone(), columns, self.refs > before));
            }
        }
        let columns = self.set_expr(&q.body, outer);
        self.ctes.truncate(ctes_before);
        columns
    }

    fn set_expr(&mut self, body: &SetExpr, outer: &[&Scope]) -> Option<Columns> {
        match body {
            SetExpr::Select(s) => self.select(s, outer),
            SetExpr::Query(q) => self.query(q, outer),
            SetExpr::SetOperation { left, right, .. } => {
                let columns = self.set_expr(left, outer);
                self.set_expr(right, outer);
                // A key is carried only by a branch, not by the union of several.
                columns.map(|c| c.into_iter().map(|(n, _)| (n, None)).collect())
            }
            _ => None,
        }
    }

    fn select(&mut self, s: &Select, outer: &[&Scope]) -> Option<Columns> {
        let mut scope = Scope::new();
        let mut conjuncts = Vec::new();
        for twj in &s.from {
            self.add_from_item(twj, &mut scope, &mut conjuncts);
        }
        if let Some(w) = &s.selection {
            let mut exprs = Vec::new();
            split_and(w, &mut exprs);
            conjuncts.extend(exprs.into_iter().map(|expr| Conjunct { expr, null_ext: None }));
        }
        let mut chain: Vec<&Scope> = outer.to_vec();
        chain.push(&scope);
        let before = self.refs;
        let nested = self.nested_queries(s, &chain);
        let anchored = chain.iter().any(|scope| scope.iter().any(|e| e.sharded));
        if self.refs > before && !anchored {
            self.unanchored = true;
        }
        for c in conjuncts {
            self.link(&c, &chain, &nested);
        }
        self.output(s, &chain)
    }

    /// Adds a FROM item's tables to `scope` and its join conditions to `conjuncts`; marks the
    /// references an outer join NULL-extends.
    fn add_from_item<'q>(&mut self, twj: &'q TableWithJoins, scope: &mut Scope, conjuncts: &mut Vec<Conjunct<'q>>) {
        use JoinOperator as J;
        let start = self.refs;
        self.factor(&twj.relation, scope, conjuncts);
        for j in &twj.joins {
            let before = self.refs;
            self.factor(&j.relation, scope, conjuncts);
            if let Some(on) = join_condition(&j.join_operator) {
                // Inside its own ON, a join's tables are real rows: NULL-extended only by
                // earlier outer joins.
                let mut exprs = Vec::new();
                split_and(on, &mut exprs);
                let seen = Some(self.null_ext.clone());
                conjuncts.extend(exprs.into_iter().map(|expr| Conjunct {
                    expr,
                    null_ext: seen.clone(),
                }));
            }
            let (left, right) = (start..before, before..self.refs);
            match j.join_operator {
                J::Left(_) | J::LeftOuter(_) => self.null_ext.extend(right),
                J::Right(_) | J::RightOuter(_) => self.null_ext.extend(left),
                J::FullOuter(_) => self.null_ext.extend(left.chain(right)),
                _ => {}
            }
        }
    }

    fn factor<'q>(&mut self, f: &'q TableFactor, scope: &mut Scope, conjuncts: &mut Vec<Conjunct<'q>>) {
        let alias_of = |a: &Option<TableAlias>| a.as_ref().map(|a| a.name.value.clone());
        match f {
            TableFactor::Table { name, alias, .. } => {
                let single = match name.0.as_slice() {
                    [ObjectNamePart::Identifier(i)] => Some(i.value.clone()),
                    _ => None,
                };
                let cte = single
                    .as_ref()
                    .and_then(|n| self.ctes.iter().rev().find(|(c, ..)| c.eq_ignore_ascii_case(n)));
                let (table, source, sharded) = match cte {
                    Some((n, columns, sharded)) => (n.clone(), Source::Derived(columns.clone()), *sharded),
                    None => {
                        let (table, source) = self.table(name);
                        let sharded = matches!(source, Source::Sharded { .. });
                        (table, source, sharded)
                    }
                };
                let source = match (alias, source) {
                    (Some(a), Source::Derived(c)) => Source::Derived(renamed(c, a)),
                    (_, s) => s,
                };
                scope.push(Entry {
                    name: alias_of(alias).unwrap_or(table),
                    source,
                    sharded,
                });
            }
            TableFactor::Derived { subquery, alias, .. } => {
                let before = self.refs;
                let columns = self.query(subquery, &[]);
                let columns = match alias {
                    Some(a) => renamed(columns, a),
                    None => columns,
                };
                scope.push(Entry {
                    name: alias_of(alias).unwrap_or_default(),
                    source: Source::Derived(columns),
                    sharded: self.refs > before,
                });
            }
            TableFactor::NestedJoin { table_with_joins, .. } => self.add_from_item(table_with_joins, scope, conjuncts),
            _ => scope.push(Entry {
                name: String::new(),
                source: Source::Table(None),
                sharded: false,
            }),
        }
    }

    /// A named table: its name and what it is.
    fn table(&mut self, name: &tessera_sql::sqlparser::ast::ObjectName) -> (String, Source) {
        let t = resolve(name, self.p.schema, &self.p.offsets, &mut Vec::new());
        let source = match t.place {
            Place::Sharded { key, .. } => {
                self.refs += 1;
                Source::Sharded {
                    id: self.refs - 1,
                    key,
                    table: t.table.clone(),
                }
            }
            Place::Broadcast | Place::Single(_) => Source::Table(Some(t.table.clone())),
            Place::Foreign => Source::Table(None),
        };
        (t.table, source)
    }

    /// Walks the subqueries in the SELECT's expressions (not those nested deeper) with the
    /// scopes they see; each with its output columns, for `x IN (SELECT ...)`.
    fn nested_queries(&mut self, s: &Select, chain: &[&Scope]) -> Vec<(Query, Option<Columns>)> {
        let mut found = Children::default();
        for item in &s.projection {
            let _ = item.visit(&mut found);
        }
        for e in s.selection.iter().chain(s.having.iter()) {
            let _ = e.visit(&mut found);
        }
        if let GroupByExpr::Expressions(list, _) = &s.group_by {
            for e in list {
                let _ = e.visit(&mut found);
            }
        }
        for j in s.from.iter().flat_map(all_joins) {
            if let Some(on) = join_condition(&j.join_operator) {
                let _ = on.visit(&mut found);
            }
        }
        found
            .queries
            .into_iter()
            .map(|q| {
                let columns = self.query(&q, chain);
                (q, columns)
            })
            .collect()
    }

    /// Records the key link a conjunct makes, if any.
    fn link(&mut self, c: &Conjunct<'_>, chain: &[&Scope], nested: &[(Query, Option<Columns>)]) {
        match c.expr {
            Expr::BinaryOp { left, op, right } if matches!(op, BinaryOperator::Eq | BinaryOperator::Spaceship) => {
                if let (Binding::Key(a), Binding::Key(b)) = (self.bind(left, chain), self.bind(right, chain)) {
                    let extended = c.null_ext.as_ref().unwrap_or(&self.null_ext);
                    let null_safe = *op == BinaryOperator::Spaceship;
                    if !(null_safe && (extended.contains(&a) || extended.contains(&b))) {
                        self.links.push((a, b));
                    }
                }
            }
            Expr::InSubquery {
                expr,
                subquery,
                negated: false,
            } => {
                let inner = nested
                    .iter()
                    .find(|(q, _)| q == subquery.as_ref())
                    .and_then(|(_, c)| c.clone());
                if let (Binding::Key(a), Some([(_, Some(b))])) = (self.bind(expr, chain), inner.as_deref()) {
                    self.links.push((a, *b));
                }
            }
            _ => {}
        }
    }

    /// What a column reference is bound to, seen from the innermost scope of `chain`.
    fn bind(&self, e: &Expr, chain: &[&Scope]) -> Binding {
        match e {
            Expr::Nested(inner) => self.bind(inner, chain),
            Expr::Identifier(c) => self.bind_unqualified(&c.value, chain),
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [t, c] => bind_qualified(&t.value, &c.value, chain),
                [d, t, c] if d.value == self.p.schema.name => bind_qualified(&t.value, &c.value, chain),
                _ => Binding::Unknown,
            },
            _ => Binding::Other,
        }
    }

    fn bind_unqualified(&self, column: &str, chain: &[&Scope]) -> Binding {
        for scope in chain.iter().rev() {
            let mut found = Vec::new();
            for entry in scope.iter() {
                match self.has_column(entry, column) {
                    Some(true) => found.push(entry),
                    Some(false) => {}
                    None => return Binding::Unknown,
                }
            }
            match found.as_slice() {
                [] => continue,
                [entry] => return column_binding(entry, column),
                _ => return Binding::Other,
            }
        }
        Binding::Other
    }

    /// Whether a FROM entry has a column; None when that is not known.
    fn has_column(&self, entry: &Entry, column: &str) -> Option<bool> {
        match &entry.source {
            Source::Sharded { key, .. } if key.eq_ignore_ascii_case(column) => Some(true),
            Source::Sharded { table, .. } | Source::Table(Some(table)) => self.p.tables.has_column(table, column),
            Source::Table(None) | Source::Derived(None) => None,
            Source::Derived(Some(columns)) => Some(columns.iter().any(|(n, _)| n.eq_ignore_ascii_case(column))),
        }
    }

    /// The SELECT's output columns, each with the key it carries.
    fn output(&self, s: &Select, chain: &[&Scope]) -> Option<Columns> {
        let mut out = Columns::new();
        let scope = chain.last()?;
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) => out.push((output_name(e), key_of(self.bind(e, chain)))),
                SelectItem::ExprWithAlias { expr, alias } => {
                    out.push((alias.value.clone(), key_of(self.bind(expr, chain))))
                }
                SelectItem::Wildcard(_) => {
                    for entry in scope.iter() {
                        out.extend(self.entry_columns(entry)?);
                    }
                }
                SelectItem::QualifiedWildcard(..) => return None,
            }
        }
        Some(out)
    }

    /// Every column of a FROM entry, when known.
    fn entry_columns(&self, entry: &Entry) -> Option<Columns> {
        match &entry.source {
            Source::Sharded { id, key, table } => {
                let columns = self.p.tables.columns(table)?;
                Some(
                    columns
                        .iter()
                        .map(|c| (c.name.clone(), c.name.eq_ignore_ascii_case(key).then_some(*id)))
                        .collect(),
                )
            }
            Source::Table(Some(table)) => {
                let columns = self.p.tables.columns(table)?;
                Some(columns.iter().map(|c| (c.name.clone(), None)).collect())
            }
            Source::Table(None) | Source::Derived(None) => None,
            Source::Derived(Some(columns)) => Some(columns.clone()),
        }
    }
}

/// Queries at depth one below the visited nodes.
#[derive(Default)]
struct Children {
    depth: usize,
    queries: Vec<Query>,
}

impl Visitor for Children {
    type Break = ();
    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if self.depth == 0 {
            self.queries.push(q.clone());
        }
        self.depth += 1;
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
}

fn key_of(b: Binding) -> Option<usize> {
    match b {
        Binding::Key(id) => Some(id),
        _ => None,
    }
}

/// The name MariaDB gives an unaliased select item that is a column (other expressions get
/// their text, which no outer reference matches by accident in a way that links keys).
fn output_name(e: &Expr) -> String {
    match e {
        Expr::Identifier(i) => i.value.clone(),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()).unwrap_or_default(),
        other => other.to_string(),
    }
}

/// A column of an entry bound by name.
fn column_binding(entry: &Entry, column: &str) -> Binding {
    match &entry.source {
        Source::Sharded { id, key, .. } if key.eq_ignore_ascii_case(column) => Binding::Key(*id),
        Source::Derived(Some(columns)) => columns
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(column))
            .and_then(|(_, k)| *k)
            .map_or(Binding::Other, Binding::Key),
        Source::Derived(None) => Binding::Unknown,
        _ => Binding::Other,
    }
}

/// `t.c`: bound in the innermost scope that has an entry named `t`.
fn bind_qualified(table: &str, column: &str, chain: &[&Scope]) -> Binding {
    for scope in chain.iter().rev() {
        if let Some(entry) = scope.iter().find(|e| e.name.eq_ignore_ascii_case(table)) {
            return column_binding(entry, column);
        }
    }
    Binding::Unknown
}

/// Columns renamed by an alias's column list (`AS d (a, b)`).
fn renamed(columns: Option<Columns>, alias: &TableAlias) -> Option<Columns> {
    if alias.columns.is_empty() {
        return columns;
    }
    let columns = columns?;
    if columns.len() != alias.columns.len() {
        return None;
    }
    Some(
        columns
            .into_iter()
            .zip(&alias.columns)
            .map(|((_, key), a)| (a.name.value.clone(), key))
            .collect(),
    )
}

/// The ON condition of a join, if it has one.
fn join_condition(op: &JoinOperator) -> Option<&Expr> {
    use JoinOperator as J;
    match op {
        J::Join(c)
        | J::Inner(c)
        | J::Left(c)
        | J::LeftOuter(c)
        | J::Right(c)
        | J::RightOuter(c)
        | J::CrossJoin(c)
        | J::StraightJoin(c) => match c {
            JoinConstraint::On(e) => Some(e),
            _ => None,
        },
        _ => None,
    }
}

/// The joins of a FROM item, nested joins included.
fn all_joins(twj: &TableWithJoins) -> Vec<&tessera_sql::sqlparser::ast::Join> {
    let mut out: Vec<_> = twj.joins.iter().collect();
    for f in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)) {
        if let TableFactor::NestedJoin { table_with_joins, .. } = f {
            out.extend(all_joins(table_with_joins));
        }
    }
    out
}

/// The conjuncts of `e` (`a AND (b AND c)` gives a, b, c).
pub(super) fn split_and<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Nested(inner) => split_and(inner, out),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        other => out.push(other),
    }
}
