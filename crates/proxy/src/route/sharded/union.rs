//! UNION and UNION ALL across shards. Every shard runs the whole union of row-local branches
//! (each a select of sharded tables): UNION ALL results concatenate; UNION results are sorted
//! on every column (collation weights added to each branch) and duplicates across shards
//! merge away. An ORDER BY and LIMIT on the union apply to the merged rows.

use super::select::{has_aggregates, hidden_alias};
use super::tables::Place;
use super::PlanError;
use super::{Col, Planner, Scatter, WeightedKey};
use crate::exec::merge::{MergeSpec, SortBy, SortKey};
use tessera_sql::sqlparser::ast::{
    Expr, OrderByKind, Query, Select, SelectItem, SetExpr, SetOperator, SetQuantifier, TableFactor, Value,
};
use tessera_sql::Edit;

/// Plans a union whose branches each run on every shard.
pub fn plan(p: &mut Planner, query: &Query) -> Result<Scatter, PlanError> {
    let mut branches = Vec::new();
    let mut distinct = None;
    collect(p, &query.body, &mut branches, &mut distinct)?;
    let distinct = distinct.unwrap_or(false);
    let width = branches.first().map_or(0, |b| b.projection.len());
    if branches.iter().any(|b| b.projection.len() != width) {
        return Err("UNION branches of different widths".into());
    }
    for b in &branches {
        add_weights(p, b)?;
        once_if_broadcast(p, b)?;
    }
    let mut keys = order_keys(p, query, branches[0])?;
    if distinct {
        for k in 0..width {
            if !keys.iter().any(|key| key.column == k) {
                keys.push(SortKey {
                    column: k,
                    descending: false,
                    by: SortBy::Value,
                });
            }
        }
    }
    let mut spec = MergeSpec::new(0);
    spec.distinct = distinct;
    if !keys.is_empty() {
        set_shard_order(p, &keys);
    }
    spec.order = keys;
    if let Some((offset, limit, edit)) = p.limit(query)? {
        spec.offset = offset;
        spec.limit = Some(limit);
        p.shard_edits.push(edit);
    }
    Ok(Scatter {
        sql: p.template(),
        merge: spec,
        hidden: width,
        weighted: (0..width)
            .map(|k| WeightedKey {
                value: Col::Visible(k),
                weight: Col::Hidden(k),
            })
            .collect(),
        avg_columns: Vec::new(),
    })
}

/// The branches of a union, in order; `distinct` is whether it is UNION (all alike).
fn collect<'q>(
    p: &Planner,
    e: &'q SetExpr,
    out: &mut Vec<&'q Select>,
    distinct: &mut Option<bool>,
) -> Result<(), PlanError> {
    match e {
        SetExpr::SetOperation {
            op,
            set_quantifier,
            left,
            right,
        } => {
            if *op != SetOperator::Union {
                return Err("INTERSECT and EXCEPT across shards".into());
            }
            let d = !matches!(set_quantifier, SetQuantifier::All);
            if distinct.is_some_and(|x| x != d) {
                return Err("a UNION mixing ALL and DISTINCT across shards".into());
            }
            *distinct = Some(d);
            collect(p, left, out, distinct)?;
            collect(p, right, out, distinct)
        }
        SetExpr::Select(s) => {
            check_branch(p, s)?;
            out.push(s);
            Ok(())
        }
        SetExpr::Query(q) if q.limit_clause.is_some() || q.order_by.is_some() => {
            Err("a UNION branch with its own ORDER BY or LIMIT across shards".into())
        }
        SetExpr::Query(q) => collect(p, &q.body, out, distinct),
        _ => Err("this UNION branch across shards".into()),
    }
}

/// A branch must be a plain select of one sharded table, or of one broadcast table (which
/// then runs on one shard of the scatter only, see [`ONCE_MARKER`]).
fn check_branch(p: &Planner, s: &Select) -> Result<(), PlanError> {
    if s.distinct.is_some() || has_aggregates(s) {
        return Err("a UNION branch with DISTINCT or aggregates across shards".into());
    }
    if s.projection
        .iter()
        .any(|i| !matches!(i, SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. }))
    {
        return Err("a UNION branch selecting * across shards".into());
    }
    let placed = s.from.iter().all(|t| match &t.relation {
        TableFactor::Table { name, .. } => matches!(
            super::tables::resolve(name, p.schema, &p.offsets, &mut Vec::new()).place,
            Place::Sharded { .. } | Place::Broadcast
        ),
        _ => false,
    });
    if !placed || s.from.len() != 1 || s.from.iter().any(|t| !t.joins.is_empty()) {
        return Err("a UNION branch that is not a plain select of one sharded table across shards".into());
    }
    if !super::colocate::one_shard_function(p, s) {
        return Err("a UNION branch over sharded tables with different shard functions".into());
    }
    let refs = super::colocate::count_sharded_refs(p, s);
    if refs > 0 && !super::scopes::select_keys_link_all(p, s, refs) {
        return Err(
            "a subquery in a UNION branch over sharded tables that is not an equality on their shard keys".into(),
        );
    }
    Ok(())
}

/// Replaced by `1=1` on the first shard of a scatter and `1=0` on the others: a broadcast
/// table's branch answers once.
pub use crate::exec::sharded::ONCE_MARKER;

/// A branch over a broadcast table reads it on one shard only: the table becomes
/// `(SELECT * FROM t WHERE <once>) AS t`.
fn once_if_broadcast(p: &mut Planner, b: &Select) -> Result<(), PlanError> {
    let Some(TableFactor::Table { name, alias, .. }) = b.from.first().map(|t| &t.relation) else {
        return Ok(());
    };
    if super::tables::resolve(name, p.schema, &p.offsets, &mut Vec::new()).place != Place::Broadcast {
        return Ok(());
    }
    let idents: Vec<_> = name
        .0
        .iter()
        .filter_map(|part| match part {
            tessera_sql::sqlparser::ast::ObjectNamePart::Identifier(i) => p.offsets.range(i.span),
            _ => None,
        })
        .collect();
    let (Some(first), Some(last)) = (idents.first(), idents.last()) else {
        return Err("a UNION branch whose table is not found".into());
    };
    let range = first.start..last.end;
    let qualified = idents.len() > 1;
    let table = p.sql[last.clone()].to_string();
    p.common_edits
        .retain(|e| !(e.range.start >= range.start && e.range.end <= range.end));
    let db = if qualified {
        format!("{}.", super::DATABASE_MARKER)
    } else {
        String::new()
    };
    let alias_text = if alias.is_some() {
        String::new()
    } else {
        format!(" AS {table}")
    };
    p.shard_edits.push(Edit::replace(
        range,
        format!("(SELECT * FROM {db}{table} WHERE {ONCE_MARKER}){alias_text}"),
    ));
    Ok(())
}

/// Adds each column's collation weight to a branch (before its FROM).
fn add_weights(p: &mut Planner, b: &Select) -> Result<(), PlanError> {
    let table = b.from.first().ok_or("a UNION branch without FROM")?;
    let start = match &table.relation {
        TableFactor::Table { name, .. } => name.0.first().and_then(|part| match part {
            tessera_sql::sqlparser::ast::ObjectNamePart::Identifier(i) => p.offsets.range(i.span).map(|r| r.start),
            _ => None,
        }),
        _ => None,
    }
    .ok_or("a UNION branch whose FROM is not found")?;
    let from = p
        .keyword_before(start, "FROM")
        .ok_or("a UNION branch whose FROM is not found")?;
    let mut text = String::new();
    for (k, item) in b.projection.iter().enumerate() {
        let e = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => return Err("a UNION branch selecting * across shards".into()),
        };
        let t = p.text(e);
        text.push_str(&format!(", WEIGHT_STRING(RTRIM({t})) AS {}", hidden_alias(k)));
    }
    p.shard_edits.push(Edit::insert(from, format!("{} ", text)));
    Ok(())
}

/// The union's ORDER BY as keys on result positions (a number, which the plan then holds, or
/// a name of the first branch).
fn order_keys(p: &mut Planner, query: &Query, first: &Select) -> Result<Vec<SortKey>, PlanError> {
    let Some(order) = &query.order_by else {
        return Ok(Vec::new());
    };
    let OrderByKind::Expressions(list) = &order.kind else {
        return Err("ORDER BY ALL".into());
    };
    let mut keys = Vec::new();
    for o in list {
        let column = match &o.expr {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => {
                    p.bake(&o.expr);
                    n.parse::<usize>().ok().and_then(|n| n.checked_sub(1))
                }
                _ => None,
            },
            Expr::Identifier(id) => first
                .projection
                .iter()
                .position(|i| item_name(i).is_some_and(|n| n.eq_ignore_ascii_case(&id.value))),
            _ => None,
        }
        .ok_or("an ORDER BY on a UNION that names no result column, across shards")?;
        keys.push(SortKey {
            column,
            descending: o.options.asc == Some(false),
            by: SortBy::Value,
        });
    }
    Ok(keys)
}

/// The result column name of a select item (alias, else a column's name).
fn item_name(i: &SelectItem) -> Option<String> {
    match i {
        SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
        SelectItem::UnnamedExpr(Expr::Identifier(id)) => Some(id.value.clone()),
        SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => parts.last().map(|p| p.value.clone()),
        _ => None,
    }
}

/// The shards' ORDER BY on the merge keys (replacing the union's own).
fn set_shard_order(p: &mut Planner, keys: &[SortKey]) {
    let text: Vec<String> = keys
        .iter()
        .map(|k| format!("{}{}", k.column + 1, if k.descending { " DESC" } else { "" }))
        .collect();
    let clause = format!(" ORDER BY {} ", text.join(", "));
    let (order, limit, end) = tail(p.sql);
    match order {
        Some(start) => p.shard_edits.push(Edit::replace(start..limit.unwrap_or(end), clause)),
        None => p.shard_edits.push(Edit::insert(limit.unwrap_or(end), clause)),
    }
}

/// Where the union's own ORDER BY and LIMIT start (after its last UNION, at depth 0), and
/// where the statement ends.
fn tail(sql: &str) -> (Option<usize>, Option<usize>, usize) {
    use tessera_sql::TokenKind;
    let (mut depth, mut order, mut limit, mut end) = (0i32, None, None, sql.trim_end().trim_end_matches(';').len());
    for t in tessera_sql::Lexer::new(sql).filter(|t| t.is_significant()) {
        match t.kind {
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => depth -= 1,
            TokenKind::Semicolon if depth == 0 => end = t.offset,
            TokenKind::Word if depth == 0 && t.is_word("UNION") => (order, limit) = (None, None),
            TokenKind::Word if depth == 0 && t.is_word("ORDER") => order = Some(t.offset),
            TokenKind::Word if depth == 0 && t.is_word("LIMIT") => limit = Some(t.offset),
            _ => {}
        }
    }
    (order, limit, end)
}
