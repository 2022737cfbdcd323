//! Co-location: a query over several sharded tables (joins, subqueries, derived tables) runs
//! shard by shard only when every row it combines lives on one shard: the tables share a shard
//! function and are joined by equality on their keys, or each table's key is equated to a value
//! and the values turn out to be on one shard (checked at execution). Anything else is refused
//! by name.

use super::keys::KeyExpr;
use super::select::{contains_aggregate, has_limit};
use super::tables::{resolve, Place, TableRef};
use super::PlanError;
use super::Planner;
use std::ops::ControlFlow;
use tessera_sql::sqlparser::ast::{BinaryOperator, Expr, GroupByExpr, Query, SetExpr, TableFactor, TableWithJoins};

/// An outer join whose preserved side has no sharded table and whose other side has one
/// (`products LEFT JOIN orders`): every shard would add the unmatched rows again.
fn check_outer_joins(p: &Planner, query: &Query) -> Result<(), PlanError> {
    use tessera_sql::sqlparser::ast::JoinOperator as J;
    let SetExpr::Select(s) = &*query.body else {
        return Ok(());
    };
    let sharded = |f: &TableFactor| match f {
        TableFactor::Table { name, .. } => {
            matches!(
                resolve(name, p.schema, &p.offsets, &mut Vec::new()).place,
                Place::Sharded { .. }
            )
        }
        TableFactor::Derived { subquery, .. } => count_sharded_refs(p, subquery) > 0,
        _ => false,
    };
    for twj in &s.from {
        let mut left = sharded(&twj.relation);
        for j in &twj.joins {
            let right = sharded(&j.relation);
            let bad = match &j.join_operator {
                J::Left(_) | J::LeftOuter(_) => !left && right,
                J::Right(_) | J::RightOuter(_) => left && !right,
                J::FullOuter(_) => left != right,
                _ => false,
            };
            if bad {
                return Err("an outer join that keeps the rows of a broadcast table against a sharded one".into());
            }
            left |= right;
        }
    }
    Ok(())
}

/// How the rows a query combines from several sharded tables stay on one shard.
#[derive(Debug, Clone, PartialEq)]
pub enum Colocation {
    /// Joined by equality on their keys (or one sharded table): any set of shards works.
    ByKeys,
    /// Not joined on their keys, but every sharded table's key equals a value in the WHERE of its
    /// own SELECT (`ol_w_id = ? AND s_w_id = ?`, derived tables and subqueries alike) or is
    /// joined on its key to such a table: the query runs only when all the values (these key
    /// predicates) are on one shard.
    ByValues(Vec<KeyExpr>),
}

const NOT_ON_KEYS: &str = "a join or subquery over sharded tables that is not an equality on their shard keys";

/// Checks the whole query; Err names the construct.
pub fn check_colocated(p: &Planner, query: &Query, tables: &[TableRef]) -> Result<Colocation, PlanError> {
    check_outer_joins(p, query)?;
    let functions: Vec<_> = tables
        .iter()
        .filter_map(|t| match &t.place {
            Place::Sharded { function, .. } => Some(function),
            _ => None,
        })
        .collect();
    if functions.windows(2).any(|w| w[0] != w[1]) {
        return Err("a statement over sharded tables with different shard functions".into());
    }
    let sharded_refs = count_sharded_refs(p, query);
    let by_keys = if sharded_refs == 0 || super::scopes::keys_link_all(p, query, sharded_refs) {
        check_derived(p, query)
    } else {
        Err(NOT_ON_KEYS.into())
    };
    match by_keys {
        Ok(()) => Ok(Colocation::ByKeys),
        Err(m) => match pinned(p, query) {
            Some((exprs, n)) if n == sharded_refs && n > 0 => Ok(Colocation::ByValues(exprs)),
            _ => Err(m),
        },
    }
}

/// The key predicates pinning every sharded table of `query` (and of its derived tables and
/// subqueries, at any depth) to one value, and how many table references they cover; None when a
/// sharded table is neither pinned nor joined on its key to a pinned one.
fn pinned(p: &Planner, query: &Query) -> Option<(Vec<KeyExpr>, usize)> {
    let SetExpr::Select(select) = &*query.body else {
        return None;
    };
    let refs = super::top_sharded(p, query);
    let mut exprs = Vec::new();
    let mut is_pinned = vec![false; refs.len()];
    for (i, r) in refs.iter().enumerate() {
        let e = super::select::key_expr(p, select, std::slice::from_ref(r));
        if single_valued(&e) {
            is_pinned[i] = true;
            exprs.push(e);
        }
    }
    let links = key_links(p, select, &refs);
    while let Some(&(i, j)) = links.iter().find(|&&(i, j)| is_pinned[i] != is_pinned[j]) {
        is_pinned[i] = true;
        is_pinned[j] = true;
    }
    if is_pinned.contains(&false) {
        return None;
    }
    let mut covered = refs.len();
    for child in child_queries(query) {
        let (more, n) = pinned(p, &child)?;
        exprs.extend(more);
        covered += n;
    }
    Some((exprs, covered))
}

/// A key predicate that allows one value only.
fn single_valued(e: &KeyExpr) -> bool {
    match e {
        KeyExpr::Eq(_) => true,
        KeyExpr::And(parts) => parts.iter().any(single_valued),
        _ => false,
    }
}

/// Pairs of `refs` (indexes) whose keys are equated by a conjunct of the WHERE or of an inner
/// join's ON.
fn key_links(
    p: &Planner,
    select: &tessera_sql::sqlparser::ast::Select,
    refs: &[(String, String)],
) -> Vec<(usize, usize)> {
    use tessera_sql::sqlparser::ast::{JoinConstraint, JoinOperator as J};
    let mut conjuncts = Vec::new();
    if let Some(w) = &select.selection {
        super::scopes::split_and(w, &mut conjuncts);
    }
    for j in select.from.iter().flat_map(|t| &t.joins) {
        if let J::Inner(JoinConstraint::On(on)) | J::Join(JoinConstraint::On(on)) = &j.join_operator {
            super::scopes::split_and(on, &mut conjuncts);
        }
    }
    let key_of = |e: &Expr| (0..refs.len()).find(|&i| p.is_key(e, std::slice::from_ref(&refs[i])));
    conjuncts
        .iter()
        .filter_map(|c| match c {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => Some((key_of(left)?, key_of(right)?)),
            _ => None,
        })
        .collect()
}

/// The queries directly inside `query` (derived tables, subqueries in expressions, CTEs), not
/// those nested deeper.
fn child_queries(query: &Query) -> Vec<Query> {
    use tessera_sql::sqlparser::ast::{Visit, Visitor};
    struct Children {
        depth: usize,
        out: Vec<Query>,
    }
    impl Visitor for Children {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            self.depth += 1;
            if self.depth == 2 {
                self.out.push(q.clone());
            }
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
    }
    let mut v = Children {
        depth: 0,
        out: Vec::new(),
    };
    let _ = query.visit(&mut v);
    v.out
}

/// How many references to sharded tables the query makes (a table joined to itself counts
/// twice).
pub fn count_sharded_refs<V: tessera_sql::sqlparser::ast::Visit>(p: &Planner, query: &V) -> usize {
    let mut n = 0;
    let mut edits = Vec::new();
    let _ = tessera_sql::sqlparser::ast::visit_relations(query, |name| {
        if matches!(
            resolve(name, p.schema, &p.offsets, &mut edits).place,
            Place::Sharded { .. }
        ) {
            n += 1;
        }
        ControlFlow::<()>::Continue(())
    });
    n
}

/// Whether every sharded table `node` names is sharded by the same function (only then can
/// their rows with equal keys be on one shard).
pub fn one_shard_function<V: tessera_sql::sqlparser::ast::Visit>(p: &Planner, node: &V) -> bool {
    let mut first = None;
    let mut agree = true;
    let mut edits = Vec::new();
    let _ = tessera_sql::sqlparser::ast::visit_relations(node, |name| {
        if let Place::Sharded { function, .. } = resolve(name, p.schema, &p.offsets, &mut edits).place {
            match &first {
                None => first = Some(function),
                Some(f) => agree &= *f == function,
            }
        }
        ControlFlow::<()>::Continue(())
    });
    agree
}

/// Derived tables over sharded tables must be shard-local: no LIMIT, and aggregates only when
/// grouped by a shard key.
fn check_derived(p: &Planner, query: &Query) -> Result<(), PlanError> {
    let SetExpr::Select(select) = &*query.body else {
        return Ok(());
    };
    for twj in &select.from {
        for factor in factors(twj) {
            if let TableFactor::Derived { subquery, .. } = factor {
                derived_is_local(p, subquery)?;
                check_derived(p, subquery)?;
            }
        }
    }
    Ok(())
}

fn factors(twj: &TableWithJoins) -> impl Iterator<Item = &TableFactor> {
    std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation))
}

fn derived_is_local(p: &Planner, q: &Query) -> Result<(), PlanError> {
    if count_sharded_refs(p, q) == 0 {
        return Ok(());
    }
    if has_limit(q) {
        return Err("a derived table with LIMIT over a sharded table".into());
    }
    let SetExpr::Select(s) = &*q.body else {
        return Err("a derived table with UNION over a sharded table".into());
    };
    let grouped_by_key = super::scopes::groups_by_key(p, s);
    let aggregates = s.projection.iter().any(|i| match i {
        tessera_sql::sqlparser::ast::SelectItem::UnnamedExpr(e)
        | tessera_sql::sqlparser::ast::SelectItem::ExprWithAlias { expr: e, .. } => contains_aggregate(e),
        _ => false,
    }) || matches!(&s.group_by, GroupByExpr::Expressions(l, _) if !l.is_empty());
    if (aggregates || s.distinct.is_some()) && !grouped_by_key {
        return Err("a derived table that aggregates a sharded table without grouping by its shard key".into());
    }
    Ok(())
}
