//! Reads over a sharded schema: which shards (from key predicates), and for several shards the
//! per-shard rewrite (hidden sort/weight/partial-aggregate columns, LIMIT offset+count, HAVING
//! and ORDER BY moved to the merge) and the [`MergeSpec`] that gives one server's answer.

use super::keys::{KeyExpr, KeyReader};
use super::tables::{Place, TableRef};
use super::PlanError;
use super::{Col, Planner, Scatter, WeightedKey};
use crate::exec::merge::{AggregateSpec, Filter, MergeSpec, Output, SortBy, SortKey};
use tessera_sql::sqlparser::ast::{
    Distinct, Expr, GroupByExpr, LimitClause, OrderByKind, Query, Select, SelectItem, SetExpr, Value,
};
use tessera_sql::Edit;

/// The key predicates of a query's top-level WHERE (and join conditions).
pub fn key_expr(p: &Planner, select: &Select, sharded: &[(String, String)]) -> KeyExpr {
    let Some(w) = &select.selection else {
        return KeyExpr::Any;
    };
    let is_key = |e: &Expr| p.is_key(e, sharded);
    let literal_at = |o: usize| p.literal_at(o);
    let placeholder_at = |o: usize| p.placeholder_at(o);
    let reader = KeyReader {
        offsets: &p.offsets,
        is_key: &is_key,
        literal_at: &literal_at,
        placeholder_at: &placeholder_at,
    };
    reader.read(w)
}

/// Plans the merge of a query that runs on several shards; Err says what is not supported.
pub fn scatter(p: &mut Planner, query: &Query, tables: &[TableRef]) -> Result<Scatter, PlanError> {
    match &*query.body {
        SetExpr::Select(select) => {
            let _ = tables;
            if has_window_function(query) {
                return Err("window functions across shards".into());
            }
            ScatterBuilder::new(p, query, select).build()
        }
        // Each branch runs on every shard on its own: no co-location between branches needed.
        SetExpr::SetOperation { .. } => super::union::plan(p, query),
        _ => Err("this query form across shards".into()),
    }
}

/// Whether any function call has an OVER clause.
fn has_window_function(q: &Query) -> bool {
    use std::ops::ControlFlow;
    use tessera_sql::sqlparser::ast::visit_expressions;
    visit_expressions(q, |x| match x {
        Expr::Function(f) if f.over.is_some() => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Whether the select list or HAVING uses aggregate functions, or it has GROUP BY.
pub fn has_aggregates(s: &Select) -> bool {
    let grouped = matches!(&s.group_by, GroupByExpr::Expressions(e, _) if !e.is_empty());
    grouped
        || s.having.is_some()
        || s.projection.iter().any(|i| match i {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => contains_aggregate(e),
            _ => false,
        })
}

/// Aggregate function names Tessera merges.
const AGGREGATES: [&str; 5] = ["COUNT", "SUM", "MIN", "MAX", "AVG"];
/// Aggregates it recognises but refuses across shards.
const OTHER_AGGREGATES: [&str; 12] = [
    "GROUP_CONCAT",
    "BIT_AND",
    "BIT_OR",
    "BIT_XOR",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "JSON_ARRAYAGG",
];

pub fn aggregate_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_uppercase();
            let known = AGGREGATES.contains(&name.as_str()) || OTHER_AGGREGATES.contains(&name.as_str());
            (known && f.over.is_none()).then_some(name)
        }
        _ => None,
    }
}

/// Whether `e` uses an aggregate of this query level (aggregates inside a subquery belong to
/// the subquery).
pub fn contains_aggregate(e: &Expr) -> bool {
    use std::ops::ControlFlow;
    use tessera_sql::sqlparser::ast::{Visit, Visitor};
    struct Find {
        depth: usize,
    }
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, x: &Expr) -> ControlFlow<()> {
            if self.depth == 0 && aggregate_name(x).is_some() {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    e.visit(&mut Find { depth: 0 }).is_break()
}

/// One item of the select list.
struct Item {
    expr: Option<Expr>,
    alias: Option<String>,
    /// The expression's text as written (for hidden columns and matching).
    text: String,
}

/// A GROUP_CONCAT's extra grouping of the shard rows: (column, descending) in shard order, and
/// the merge keys over them.
type ConcatGrouping = (Vec<(Col, bool)>, Vec<SortKey>);

/// Builds the scatter of one SELECT.
struct ScatterBuilder<'p, 'a> {
    p: &'p mut Planner<'a>,
    query: &'p Query,
    select: &'p Select,
    items: Vec<Item>,
    /// Hidden columns appended to the shard SQL: their expressions.
    hidden: Vec<String>,
    weighted: Vec<WeightedKey>,
    wildcard: bool,
    /// The GROUP_CONCAT's extra grouping: (column, descending) in shard order, and its keys.
    concat: Option<ConcatGrouping>,
    /// Hidden columns the shard SQL groups by for DISTINCT aggregates.
    distinct_grouped: Vec<Col>,
}

impl<'p, 'a> ScatterBuilder<'p, 'a> {
    fn new(p: &'p mut Planner<'a>, query: &'p Query, select: &'p Select) -> Self {
        let mut wildcard = false;
        let items = select
            .projection
            .iter()
            .map(|i| match i {
                SelectItem::UnnamedExpr(e) => Item {
                    expr: Some(e.clone()),
                    alias: None,
                    text: p.text(e),
                },
                SelectItem::ExprWithAlias { expr, alias } => Item {
                    expr: Some(expr.clone()),
                    alias: Some(alias.value.clone()),
                    text: p.text(expr),
                },
                _ => {
                    wildcard = true;
                    Item {
                        expr: None,
                        alias: None,
                        text: String::new(),
                    }
                }
            })
            .collect();
        ScatterBuilder {
            p,
            query,
            select,
            items,
            hidden: Vec::new(),
            weighted: Vec::new(),
            wildcard,
            concat: None,
            distinct_grouped: Vec::new(),
        }
    }

    fn build(mut self) -> Result<Scatter, PlanError> {
        if self.select.into.is_some() {
            return Err("SELECT ... INTO across shards".into());
        }
        let aggregated = has_aggregates(self.select);
        let mut spec = if aggregated { self.aggregate()? } else { self.plain()? };
        if let Some((offset, limit, mut edit)) = self.p.limit(self.query)? {
            spec.offset = offset;
            spec.limit = Some(limit);
            if aggregated {
                // Groups merge across shards: every shard sends all of its groups.
                edit.text.clear();
            }
            self.p.shard_edits.push(edit);
        }
        self.append_hidden()?;
        let avg_columns = match &spec.aggregate {
            Some(a) => a
                .outputs
                .iter()
                .enumerate()
                .filter(|(_, o)| matches!(o, Output::Avg { .. }))
                .map(|(i, _)| i)
                .collect(),
            None => Vec::new(),
        };
        Ok(Scatter {
            sql: self.p.template(),
            merge: spec,
            hidden: self.hidden.len(),
            weighted: self.weighted,
            avg_columns,
        })
    }

    /// A hidden shard column for `expr`; returns its column.
    fn hide(&mut self, expr: String) -> Col {
        if let Some(i) = self.hidden.iter().position(|h| *h == expr) {
            return Col::Hidden(i);
        }
        self.hidden.push(expr);
        Col::Hidden(self.hidden.len() - 1)
    }

    /// A sort key on `value` (with a hidden weight column of `text`): compares by collation
    /// weight when the value turns out to be a non-binary string.
    fn weighted_key(&mut self, value: Col, text: &str, descending: bool) -> SortKey {
        let weight = self.hide(format!("WEIGHT_STRING(RTRIM({text}))"));
        self.weighted.push(WeightedKey { value, weight });
        SortKey {
            column: col_index(value),
            descending,
            by: SortBy::Value,
        }
    }

    /// Resolves an ORDER BY / GROUP BY expression to a select item: a position, an alias, or
    /// the same text; None when it is not in the select list.
    fn find_item(&mut self, e: &Expr) -> Result<Option<usize>, PlanError> {
        if let Expr::Value(v) = e {
            if let Value::Number(n, _) = &v.value {
                self.p.bake(e);
                let pos: usize = n.parse().map_err(|_| format!("position {n}"))?;
                if self.wildcard && self.items[..pos.min(self.items.len())].iter().any(|i| i.expr.is_none()) {
                    return Err("ORDER BY or GROUP BY a position after * across shards".into());
                }
                return Ok(pos.checked_sub(1).filter(|&i| i < self.items.len()));
            }
        }
        let text = self.p.text(e);
        let found = self.items.iter().position(|i| {
            matches!(e, Expr::Identifier(id) if i.alias.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(&id.value)))
        });
        let found = found.or_else(|| self.items.iter().position(|i| same_text(&i.text, &text)));
        if let Some(i) = found {
            if self.wildcard && self.items[..i].iter().any(|x| x.expr.is_none()) {
                return Ok(None);
            }
        }
        Ok(found)
    }

    fn plain(&mut self) -> Result<MergeSpec, PlanError> {
        let mut spec = MergeSpec::new(0);
        let order = order_exprs(self.query);
        for (e, desc) in &order {
            let key = match self.find_item(e)? {
                Some(i) => {
                    let text = self.items[i].text.clone();
                    self.weighted_key(Col::Visible(i), &text, *desc)
                }
                None => {
                    let text = self.p.text(e);
                    let value = self.hide(text.clone());
                    self.weighted_key(value, &text, *desc)
                }
            };
            spec.order.push(key);
        }
        if matches!(self.select.distinct, Some(Distinct::Distinct)) {
            if self.wildcard {
                return Err("SELECT DISTINCT * across shards".into());
            }
            for i in 0..self.items.len() {
                let text = self.items[i].text.clone();
                let key = self.weighted_key(Col::Visible(i), &text, false);
                spec.order.push(key);
            }
            spec.distinct = true;
            self.reorder_shards(&spec.order)?;
        } else if matches!(self.select.distinct, Some(Distinct::On(_))) {
            return Err("DISTINCT ON".into());
        }
        Ok(spec)
    }

    /// Replaces the shard SQL's ORDER BY with one on the merge keys (by hidden aliases and
    /// positions).
    fn reorder_shards(&mut self, keys: &[SortKey]) -> Result<(), PlanError> {
        let cols: Vec<(Col, bool)> = keys.iter().map(|k| (col_of(k.column), k.descending)).collect();
        let clause = self
            .sort_clause_for(&cols)
            .ok_or("ORDER BY across shards needs the select list")?;
        self.set_order_by(clause);
        Ok(())
    }

    /// `ORDER BY` text over columns: visible ones by position, hidden ones by alias.
    fn sort_clause_for(&self, cols: &[(Col, bool)]) -> Option<String> {
        let parts: Vec<String> = cols
            .iter()
            .map(|(c, desc)| {
                let name = match c {
                    Col::Visible(i) => (i + 1).to_string(),
                    Col::Hidden(i) => hidden_alias(*i),
                };
                if *desc {
                    format!("{name} DESC")
                } else {
                    name
                }
            })
            .collect();
        (!parts.is_empty()).then(|| format!(" ORDER BY {} ", parts.join(", ")))
    }

    fn set_order_by(&mut self, clause: String) {
        match self.p.order_by_range(self.query) {
            Some(r) => self.p.shard_edits.push(Edit::replace(r, clause)),
            None => {
                let at = self.p.after_where_group_having(self.select);
                self.p.shard_edits.push(Edit::insert(at, clause));
            }
        }
    }

    /// Appends the hidden columns after the select list (before the top-level FROM).
    fn append_hidden(&mut self) -> Result<(), PlanError> {
        if self.hidden.is_empty() {
            return Ok(());
        }
        let at = self.p.select_list_end().ok_or("a select list whose end is unknown")?;
        let text: String = self
            .hidden
            .iter()
            .enumerate()
            .map(|(i, h)| format!(", {h} AS {}", hidden_alias(i)))
            .collect();
        self.p
            .shard_edits
            .push(Edit::insert(at, format!("{} ", text.trim_start_matches(' '))));
        Ok(())
    }

    fn aggregate(&mut self) -> Result<MergeSpec, PlanError> {
        if self.wildcard {
            return Err("* with aggregates across shards".into());
        }
        if self.select.distinct.is_some() {
            return Err("SELECT DISTINCT with aggregates across shards".into());
        }
        let mut group_keys = Vec::new();
        let mut group_cols = Vec::new();
        let group_exprs = match &self.select.group_by {
            GroupByExpr::Expressions(e, m) if m.is_empty() => e.clone(),
            GroupByExpr::Expressions(_, _) => return Err("GROUP BY ... WITH ROLLUP across shards".into()),
            GroupByExpr::All(_) => return Err("GROUP BY ALL".into()),
        };
        for e in &group_exprs {
            let (col, text) = match self.find_item(e)? {
                Some(i) => (Col::Visible(i), self.items[i].text.clone()),
                None => {
                    let t = self.p.text(e);
                    (self.hide(t.clone()), t)
                }
            };
            let key = self.weighted_key(col, &text, false);
            group_keys.push(key);
            group_cols.push((col, false));
        }
        let mut outputs = Vec::new();
        let mut computed = Vec::new();
        for i in 0..self.items.len() {
            match self.items[i].expr.clone() {
                Some(e) if contains_aggregate(&e) && aggregate_name(&e).is_none() => {
                    // Arithmetic over aggregates: computed after the merge (placeholder now,
                    // its aggregates become hidden outputs after the visible ones).
                    computed.push((i, e));
                    outputs.push(Output::First(col_index(Col::Visible(i))));
                }
                _ => outputs.push(self.output_of(i)?),
            }
        }
        for (i, e) in computed {
            let mut ctx = HavingCtx {
                b: self,
                outputs: &mut outputs,
                strict: true,
            };
            let operand = super::having::operand_of(&e, &mut ctx)
                .map_err(|_| format!("the expression {e} over aggregates across shards"))?;
            outputs[i] = Output::Expr(operand);
        }
        let mut sort_cols = group_cols.clone();
        if let Some((extra, _)) = self.concat.clone() {
            for (col, desc) in extra {
                sort_cols.push((col, desc));
                self.group_by_also(col);
            }
        }
        let having = match self.select.having.clone() {
            Some(h) => {
                if let Some(r) = self.p.having_range(self.select) {
                    self.p.shard_edits.push(Edit::replace(r, ""));
                }
                Some(self.filter(&h, &mut outputs)?)
            }
            None => None,
        };
        let final_order = self.final_order(&group_exprs, &mut outputs)?;
        match self.sort_clause_for(&sort_cols) {
            Some(clause) => self.set_order_by(clause),
            None => {
                if let Some(r) = self.p.order_by_range(self.query) {
                    self.p.shard_edits.push(Edit::replace(r, ""));
                }
            }
        }
        let mut spec = MergeSpec::new(self.items.len());
        // Shards send their groups sorted by the group keys (then the DISTINCT column).
        spec.order = group_keys.clone();
        if let Some((_, keys)) = &self.concat {
            spec.order.extend(keys.iter().copied());
        }
        spec.aggregate = Some(AggregateSpec {
            group_by: group_keys,
            outputs,
        });
        spec.having = having;
        spec.final_order = final_order;
        Ok(spec)
    }

    /// Adds a hidden column to the shard SQL's GROUP BY (creating the clause when needed).
    fn group_by_also(&mut self, col: Col) {
        match self.p.group_by_end(self.select) {
            Some(end) => self
                .p
                .shard_edits
                .push(Edit::insert(end, format!(", {} ", hidden_alias_of(col)))),
            None => {
                let at = self.p.after_where(self.select);
                let existing = self
                    .p
                    .shard_edits
                    .iter_mut()
                    .find(|e| e.range == (at..at) && e.text.starts_with(" GROUP BY "));
                match existing {
                    Some(e) => e.text = format!("{}, {} ", e.text.trim_end(), hidden_alias_of(col)),
                    None => self
                        .p
                        .shard_edits
                        .push(Edit::insert(at, format!(" GROUP BY {} ", hidden_alias_of(col)))),
                }
            }
        }
    }

    /// The merge output of select item `i`.
    fn output_of(&mut self, i: usize) -> Result<Output, PlanError> {
        let Some(e) = self.items[i].expr.clone() else {
            return Err("* with aggregates across shards".into());
        };
        self.aggregate_output(&e, Col::Visible(i))
    }

    /// The key of a DISTINCT aggregate's argument: shards group by it too (each distinct
    /// value reaches the merge, which keeps a set per group).
    fn distinct_key(&mut self, text: &str) -> SortKey {
        let col = self.hide(text.to_string());
        if !self.distinct_grouped.contains(&col) {
            self.distinct_grouped.push(col);
            self.group_by_also(col);
        }
        self.weighted_key(col, text, false)
    }

    /// The output for an expression whose shard value is in `col`.
    fn aggregate_output(&mut self, e: &Expr, col: Col) -> Result<Output, PlanError> {
        if let Expr::Function(f) = e {
            if f.name.to_string().eq_ignore_ascii_case("GROUP_CONCAT") && f.over.is_none() {
                return self.group_concat(f);
            }
        }
        let Some(name) = aggregate_name(e) else {
            if contains_aggregate(e) {
                return Err(PlanError::Refused(format!(
                    "the expression {} over aggregates across shards",
                    self.p.text(e)
                )));
            }
            return Ok(Output::First(col_index(col)));
        };
        let Expr::Function(f) = e else {
            return Err("an aggregate that is not a function call".into());
        };
        let (is_distinct, arg) = function_arg(self.p, f)?;
        if is_distinct {
            let arg = arg.ok_or("DISTINCT without an argument")?;
            let placeholder = self.distinct_key(&arg);
            return match name.as_str() {
                "COUNT" => Ok(Output::CountDistinct { column: placeholder }),
                "SUM" => Ok(Output::SumDistinct {
                    column: placeholder,
                    value: 0,
                }),
                "AVG" => Ok(Output::AvgDistinct {
                    column: placeholder,
                    value: 0,
                    scale: 0,
                    double: false,
                }),
                "MIN" => self.min_max(e, col, false),
                "MAX" => self.min_max(e, col, true),
                _ => Err(PlanError::Refused(format!("{name}(DISTINCT ...) across shards"))),
            };
        }
        match name.as_str() {
            "COUNT" => Ok(Output::Count(col_index(col))),
            "SUM" => Ok(Output::Sum(col_index(col))),
            "MIN" => self.min_max(e, col, false),
            "MAX" => self.min_max(e, col, true),
            "AVG" => {
                let arg = arg.ok_or("AVG without an argument")?;
                let sum = self.hide(format!("SUM({arg})"));
                let count = self.hide(format!("COUNT({arg})"));
                Ok(Output::Avg {
                    sum: col_index(sum),
                    count: col_index(count),
                    scale: 0,
                    double: false,
                })
            }
            other => Err(PlanError::Refused(format!("{other}() across shards"))),
        }
    }

    /// GROUP_CONCAT: shards group by the values (and the inner ORDER BY), sorted in the inner
    /// order, each value with its row count; the merge concatenates them in that order.
    fn group_concat(&mut self, f: &tessera_sql::sqlparser::ast::Function) -> Result<Output, PlanError> {
        use tessera_sql::sqlparser::ast::{
            DuplicateTreatment, FunctionArg, FunctionArgExpr, FunctionArgumentClause, FunctionArguments,
        };
        if self.concat.is_some() {
            return Err("two GROUP_CONCAT() in one statement across shards".into());
        }
        let FunctionArguments::List(list) = &f.args else {
            return Err("GROUP_CONCAT() without arguments".into());
        };
        let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
        let mut args = Vec::new();
        for a in &list.args {
            match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => args.push(self.p.text(e)),
                _ => return Err("GROUP_CONCAT() with this argument across shards".into()),
            }
        }
        let value_text = match args.as_slice() {
            [one] => one.clone(),
            _ => format!("CONCAT({})", args.join(", ")),
        };
        let mut separator = b",".to_vec();
        let mut order = Vec::new();
        for c in &list.clauses {
            match c {
                FunctionArgumentClause::OrderBy(list) => {
                    order.extend(list.iter().map(|o| (o.expr.clone(), o.options.asc == Some(false))))
                }
                FunctionArgumentClause::Separator(v) => {
                    self.p.bake_separators();
                    separator = match v {
                        Value::SingleQuotedString(t) | Value::DoubleQuotedString(t) => t.clone().into_bytes(),
                        other => {
                            return Err(PlanError::Refused(format!(
                                "GROUP_CONCAT() SEPARATOR {other} across shards"
                            )))
                        }
                    }
                }
                _ => return Err("GROUP_CONCAT() with this clause across shards".into()),
            }
        }
        let mut keys = Vec::new();
        let mut extra = Vec::new();
        for (e, desc) in order {
            let t = self.p.text(&e);
            let c = self.hide(t.clone());
            keys.push(self.weighted_key(c, &t, desc));
            extra.push((c, desc));
        }
        let v = self.hide(value_text.clone());
        let value_key = self.weighted_key(v, &value_text, false);
        extra.push((v, false));
        let repeat = (!distinct).then(|| col_index(self.hide("COUNT(*)".into())));
        let mut all_keys = keys.clone();
        all_keys.push(value_key);
        self.concat = Some((extra, all_keys));
        Ok(Output::GroupConcat {
            value: col_index(v),
            separator,
            max_len: 0,
            order: keys,
            distinct: distinct.then_some(SortBy::Value),
            utf8: false,
            repeat,
        })
    }

    fn min_max(&mut self, e: &Expr, col: Col, max: bool) -> Result<Output, PlanError> {
        let text = self.p.text(e);
        let key = self.weighted_key(col, &text, false);
        Ok(if max { Output::Max(key) } else { Output::Min(key) })
    }

    /// The output index of an expression used by HAVING or ORDER BY: a select item, or a new
    /// hidden output.
    fn output_for(&mut self, e: &Expr, outputs: &mut Vec<Output>) -> Result<usize, PlanError> {
        if let Some(i) = self.find_item(e)? {
            return Ok(i);
        }
        let text = self.p.text(e);
        let col = self.hide(text);
        let out = self.aggregate_output(e, col)?;
        outputs.push(out);
        Ok(outputs.len() - 1)
    }

    fn filter(&mut self, e: &Expr, outputs: &mut Vec<Output>) -> Result<Filter, PlanError> {
        let mut ctx = HavingCtx {
            b: self,
            outputs,
            strict: false,
        };
        super::having::translate(e, &mut ctx)
    }

    /// ORDER BY of a grouped query, applied after aggregation when it is not the group order.
    fn final_order(&mut self, group: &[Expr], outputs: &mut Vec<Output>) -> Result<Vec<SortKey>, PlanError> {
        let order = order_exprs(self.query);
        let same_as_groups = order.len() <= group.len()
            && order
                .iter()
                .zip(group)
                .all(|((o, desc), g)| !desc && same_text(&self.p.text(o), &self.p.text(g)));
        if same_as_groups {
            return Ok(Vec::new());
        }
        let mut keys = Vec::new();
        for (e, desc) in order {
            let column = self.output_for(&e, outputs)?;
            if matches!(outputs.get(column), Some(Output::GroupConcat { .. })) {
                // Its order is the collation's over the whole concatenation, which only the
                // server computes.
                return Err("ORDER BY a GROUP_CONCAT() result across shards".into());
            }
            keys.push(SortKey {
                column,
                descending: desc,
                by: SortBy::Value,
            });
        }
        Ok(keys)
    }
}

/// HAVING's view of the builder: outputs are found or added, literals baked.
struct HavingCtx<'b, 'p, 'a> {
    b: &'b mut ScatterBuilder<'p, 'a>,
    outputs: &'b mut Vec<Output>,
    /// Only aggregates and group columns are operands (a computed select item must not
    /// resolve a function of aggregates, which the merge cannot compute, to itself).
    strict: bool,
}

impl super::having::Resolver for HavingCtx<'_, '_, '_> {
    fn output(&mut self, e: &Expr) -> Result<usize, PlanError> {
        if self.strict && aggregate_name(e).is_none() && contains_aggregate(e) {
            return Err(PlanError::Refused(format!(
                "the expression {e} over aggregates across shards"
            )));
        }
        self.b.output_for(e, self.outputs)
    }

    fn bake(&mut self, e: &Expr) {
        self.b.p.bake(e);
    }

    fn shard_computable(&self, e: &Expr) -> bool {
        use std::ops::ControlFlow;
        use tessera_sql::sqlparser::ast::visit_expressions;
        if contains_aggregate(e) {
            return false;
        }
        let items = &self.b.items;
        let names_alias = visit_expressions(e, |x| match x {
            Expr::Identifier(id)
                if items
                    .iter()
                    .any(|i| i.alias.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(&id.value))) =>
            {
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        });
        !names_alias.is_break()
    }
}

/// (DISTINCT?, the single argument's text) of an aggregate call; COUNT(*) has no argument.
fn function_arg(
    p: &mut Planner,
    f: &tessera_sql::sqlparser::ast::Function,
) -> Result<(bool, Option<String>), PlanError> {
    use tessera_sql::sqlparser::ast::{DuplicateTreatment, FunctionArg, FunctionArgExpr, FunctionArguments};
    let FunctionArguments::List(list) = &f.args else {
        return Err(PlanError::Refused(format!("{}() without arguments", f.name)));
    };
    if !list.clauses.is_empty() {
        return Err(PlanError::Refused(format!(
            "{}() with ORDER BY or other clauses across shards",
            f.name
        )));
    }
    let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
    match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] => Ok((distinct, None)),
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))] => Ok((distinct, Some(p.text(e)))),
        args if distinct && f.name.to_string().eq_ignore_ascii_case("COUNT") => {
            // COUNT(DISTINCT a, b): distinct tuples with no NULL, keyed by their weights.
            let mut parts = Vec::new();
            for a in args {
                match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => parts.push(p.text(e)),
                    _ => {
                        return Err(PlanError::Refused(format!(
                            "{}() with this argument across shards",
                            f.name
                        )))
                    }
                }
            }
            let weights: Vec<String> = parts
                .iter()
                .map(|t| format!("HEX(WEIGHT_STRING(RTRIM({t})))"))
                .collect();
            let nulls: Vec<String> = parts.iter().map(|t| format!("({t}) IS NULL")).collect();
            Ok((
                true,
                Some(format!(
                    "IF({}, NULL, CONCAT_WS(':', {}))",
                    nulls.join(" OR "),
                    weights.join(", ")
                )),
            ))
        }
        _ => Err(PlanError::Refused(format!(
            "{}() with several arguments across shards",
            f.name
        ))),
    }
}

/// ORDER BY expressions with their direction.
pub fn order_exprs(q: &Query) -> Vec<(Expr, bool)> {
    match &q.order_by {
        Some(o) => match &o.kind {
            OrderByKind::Expressions(list) => list
                .iter()
                .map(|x| (x.expr.clone(), x.options.asc == Some(false)))
                .collect(),
            OrderByKind::All(_) => Vec::new(),
        },
        None => Vec::new(),
    }
}

/// Whether a query has a LIMIT.
pub fn has_limit(q: &Query) -> bool {
    matches!(
        &q.limit_clause,
        Some(LimitClause::LimitOffset { limit: Some(_), .. }) | Some(LimitClause::OffsetCommaLimit { .. })
    )
}

pub fn hidden_alias(i: usize) -> String {
    format!("`__tessera_{i}`")
}

fn hidden_alias_of(c: Col) -> String {
    match c {
        Col::Hidden(i) => hidden_alias(i),
        Col::Visible(i) => (i + 1).to_string(),
    }
}

/// The column index a [`Col`] has in a shard row before the visible count is known: visible
/// ones as is, hidden ones offset by [`HIDDEN_BASE`] (resolved at execution).
pub fn col_index(c: Col) -> usize {
    match c {
        Col::Visible(i) => i,
        Col::Hidden(i) => HIDDEN_BASE + i,
    }
}

/// The inverse of [`col_index`].
pub fn col_of(i: usize) -> Col {
    if i >= HIDDEN_BASE {
        Col::Hidden(i - HIDDEN_BASE)
    } else {
        Col::Visible(i)
    }
}

pub use crate::exec::merge::HIDDEN_BASE;

/// Same expression text, ignoring case and spaces.
pub fn same_text(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| !c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    norm(a) == norm(b)
}

/// Whether the only sharded tables are those in `tables` (helper for callers).
pub fn sharded_tables(tables: &[TableRef]) -> Vec<&TableRef> {
    tables
        .iter()
        .filter(|t| matches!(t.place, Place::Sharded { .. }))
        .collect()
}
