//! Derived tables over any table: plain filters, grouped by the shard key or by another
//! column, DISTINCT, or with ORDER BY ... LIMIT; read alone, joined to a table (on the key the
//! derived table carries, on a primary key, or on other columns), filtered, ordered, or
//! aggregated outside.

use super::super::corpus::Marks;
use super::super::schema::{self, Kind, Rule, Table};
use super::verdict::{self, family, Verdict};
use super::{compatible, ColRef, Generator, Ref, Source};

/// What the derived table does with its table's rows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Plain,
    ByKey,
    ByColumn,
    Distinct,
    Limit,
}

/// An output column of the derived table: its name, and the column it shows unchanged (None:
/// an aggregate, an integer then unless it is MIN/MAX of `agg_of`).
#[derive(Clone)]
struct Out {
    name: String,
    column: Option<ColRef>,
}

/// The derived table's text and what the outer query needs of it.
struct Body {
    sql: String,
    outs: Vec<Out>,
    /// Output names whose order is total over its rows.
    order: Vec<String>,
    ci: bool,
}

impl Generator {
    /// `SELECT ... FROM (<derived>) d [JOIN y ...] [WHERE ...] [ORDER BY ... [LIMIT]]`.
    pub(super) fn derived(&mut self) -> (String, Marks) {
        let table = schema::table(self.rng.pick(&schema::TABLES[..]).name).expect("a table");
        let inner = {
            let alias = if self.rng.chance(30) { Some("x") } else { None };
            self.qualify(Ref::new(alias, table), true)
        };
        let shape = match self.rng.below(100) {
            0..=34 => Shape::Plain,
            35..=59 => Shape::ByKey,
            60..=84 => Shape::ByColumn,
            85..=92 => Shape::Distinct,
            _ => Shape::Limit,
        };
        let body = self.derived_body(inner, shape);
        let mut v = Verdict::default();
        if family(table).is_some() {
            match shape {
                Shape::ByColumn | Shape::Distinct => v.refuse(verdict::DERIVED_GROUPED),
                Shape::Limit => v.refuse(verdict::DERIVED_LIMIT),
                _ => {}
            }
        }
        let mut marks = Marks {
            ci: body.ci,
            ..Marks::default()
        };
        let d = Ref::new(Some("d"), table);
        let mut from = format!("({}) d", body.sql);
        let mut order: Vec<String> = body.order.iter().map(|o| format!("d.{o}")).collect();
        let mut extra = Vec::new();
        let partner = self.rng.chance(35).then(|| self.partner(table));
        if let Some(y) = partner {
            let (text, pv) = self.partner_join(&body, table, shape, y);
            from.push_str(&text);
            v.merge(&pv);
            order.push(y.pk().sql());
            extra.extend(self.window(y));
        }
        let outer_where = self.rng.chance(50).then(|| self.derived_predicate(&body, d));
        extra.extend(outer_where);
        let where_sql = if extra.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", extra.join(" AND "))
        };
        if self.rng.chance(15) {
            let (list, ci) = self.outer_aggregates(&body);
            marks.ci |= ci;
            if family(table).is_some() {
                v.refuse(verdict::DERIVED_AGG);
            }
            v.apply(&mut marks);
            return (format!("SELECT {list} FROM {from}{where_sql}"), marks);
        }
        let list = self.outer_list(&body, partner);
        let mut sql = format!("SELECT {list} FROM {from}{where_sql}");
        if self.rng.chance(55) {
            let keys: Vec<String> = order.iter().map(|k| format!("{k}{}", self.direction())).collect();
            sql.push_str(&format!(" ORDER BY {}", keys.join(", ")));
            marks.ordered = true;
            if self.rng.chance(50) {
                sql.push_str(&self.limit());
            }
        }
        v.apply(&mut marks);
        (sql, marks)
    }

    fn derived_body(&mut self, inner: Ref, shape: Shape) -> Body {
        let src = Source::new(inner.in_from(), vec![inner]);
        let mut where_sql = String::new();
        if shape != Shape::ByKey || self.rng.chance(50) {
            self.push_where(&mut where_sql, &src, 55);
        }
        match shape {
            Shape::Plain | Shape::Limit => {
                let mut cols = vec![inner.pk()];
                let k = self.rng.below(3);
                for c in self.pick_columns(&src, k) {
                    if c.column.name != inner.table.pk {
                        cols.push(c);
                    }
                }
                let list: Vec<String> = cols.iter().map(ColRef::sql).collect();
                let mut sql = format!("SELECT {} FROM {}{where_sql}", list.join(", "), src.from);
                if shape == Shape::Limit {
                    let n = 1 + self.rng.below(30);
                    sql.push_str(&format!(" ORDER BY {} LIMIT {n}", inner.pk().sql()));
                }
                Body {
                    sql,
                    outs: cols.iter().map(|c| out_of(*c)).collect(),
                    order: vec![inner.table.pk.to_string()],
                    ci: false,
                }
            }
            Shape::ByKey | Shape::ByColumn => self.grouped_body(inner, &src, shape, &where_sql),
            Shape::Distinct => {
                let k = 1 + self.rng.below(2);
                let cols = self.pick_columns(&src, k);
                let list: Vec<String> = cols.iter().map(ColRef::sql).collect();
                Body {
                    sql: format!("SELECT DISTINCT {} FROM {}{where_sql}", list.join(", "), src.from),
                    outs: cols.iter().map(|c| out_of(*c)).collect(),
                    order: cols.iter().map(|c| c.column.name.to_string()).collect(),
                    ci: cols.iter().any(|c| c.column.kind == Kind::Str),
                }
            }
        }
    }

    /// `SELECT g, COUNT(*) AS cnt, <aggregates> FROM t ... GROUP BY g [HAVING ...]`: g is the shard
    /// key (ByKey; the primary key of an unsharded table) or another column.
    fn grouped_body(&mut self, inner: Ref, src: &Source, shape: Shape, where_sql: &str) -> Body {
        let g = match (shape, inner.key()) {
            (Shape::ByKey, Some(k)) => k,
            (Shape::ByKey, None) => inner.pk(),
            _ => {
                let others: Vec<ColRef> = self
                    .columns(src)
                    .into_iter()
                    .filter(|c| Some(c.column.name) != inner.table.key)
                    .collect();
                *self.rng.pick(&others)
            }
        };
        let mut outs = vec![
            out_of(g),
            Out {
                name: "cnt".into(),
                column: None,
            },
        ];
        let mut items = vec![g.sql(), "COUNT(*) AS cnt".to_string()];
        let mut ci = g.column.kind == Kind::Str;
        for i in 0..self.rng.below(3) {
            let c = self.pick_columns(src, 1)[0];
            let (agg, string) = self.aggregate_of(c);
            ci |= string;
            let name = format!("a{i}");
            items.push(format!("{agg} AS {name}"));
            outs.push(Out { name, column: None });
        }
        let by = if self.rng.chance(20) { "1".to_string() } else { g.sql() };
        let mut sql = format!("SELECT {} FROM {}{where_sql} GROUP BY {by}", items.join(", "), src.from);
        if self.rng.chance(20) {
            sql.push_str(&format!(" HAVING COUNT(*) > {}", self.rng.below(4)));
        }
        Body {
            sql,
            outs,
            order: vec![g.column.name.to_string()],
            ci,
        }
    }

    /// The table joined to the derived table: often sharded like it, or the broadcast table.
    fn partner(&mut self, table: &'static Table) -> Ref {
        let same: Vec<&'static Table> = schema::TABLES
            .iter()
            .filter(|t| family(t).is_some() && family(t) == family(table))
            .collect();
        let t = match self.rng.below(100) {
            0..=44 if !same.is_empty() => *self.rng.pick(&same),
            45..=69 => schema::table("products").expect("products"),
            _ => schema::table(self.rng.pick(&schema::TABLES[..]).name).expect("a table"),
        };
        self.qualify(Ref::new(Some("y"), t), true)
    }

    /// ` JOIN y ON ...` (or LEFT JOIN, the derived table preserved) and its verdict.
    fn partner_join(&mut self, body: &Body, table: &'static Table, shape: Shape, mut y: Ref) -> (String, Verdict) {
        let mut v = Verdict::default();
        let left = self.rng.chance(30);
        y.null_ext = left;
        let carried = body
            .outs
            .iter()
            .find(|o| o.column.is_some_and(|c| c.is_key()) && shape != Shape::ByColumn);
        let linked = match (carried, y.key()) {
            (Some(o), Some(k)) if family(table) == family(y.table) && self.rng.chance(80) => {
                let op = if self.rng.chance(20) { "<=>" } else { "=" };
                Some(format!("{} {op} d.{}", k.sql(), o.name))
            }
            _ => None,
        };
        let on = match &linked {
            Some(on) => on.clone(),
            None => self.partner_condition(body, y),
        };
        match (family(table), family(y.table)) {
            (Some(a), Some(b)) if a != b => v.refuse(verdict::DIFFERENT),
            (Some(_), Some(_)) if linked.is_none() => v.refuse(verdict::NOT_ON_KEYS),
            (None, Some(_)) if table.rule == Rule::Unsharded => v.refuse(verdict::UNSHARDED_MIX),
            (None, Some(_)) if left => v.refuse(verdict::OUTER_BROADCAST),
            (Some(_), None) if y.table.rule == Rule::Unsharded => v.refuse(verdict::UNSHARDED_MIX),
            _ => {}
        }
        let kind = if left { "LEFT JOIN" } else { "JOIN" };
        (format!(" {kind} {} ON {on}", y.in_from()), v)
    }

    /// `y.col = d.out` for a pair of one family (an aggregate output is an integer).
    fn partner_condition(&mut self, body: &Body, y: Ref) -> String {
        let mut pairs = Vec::new();
        for o in &body.outs {
            for c in y.table.columns {
                let fits = match o.column {
                    Some(oc) => compatible(oc.column, c),
                    None => o.name == "cnt" && matches!(c.kind, Kind::Int | Kind::BigInt | Kind::TinyInt),
                };
                if fits {
                    pairs.push((y.col(c.name), o.name.clone()));
                }
            }
        }
        if pairs.is_empty() {
            return "1 = 1".into();
        }
        let (c, name) = self.rng.pick(&pairs).clone();
        format!("{} = d.{name}", c.sql())
    }

    /// A predicate on an output of the derived table.
    fn derived_predicate(&mut self, body: &Body, d: Ref) -> String {
        let o = self.rng.pick(&body.outs).clone();
        match o.column {
            Some(c) => self.column_predicate(ColRef { r: d, column: c.column }),
            None if o.name == "cnt" => format!("d.cnt {} {}", self.rng.pick(&[">", "<=", "="]), 1 + self.rng.below(5)),
            None => format!("d.{} IS NOT NULL", o.name),
        }
    }

    /// Outputs of the derived table (some, all, or `d.*`) and sometimes columns of the partner.
    fn outer_list(&mut self, body: &Body, partner: Option<Ref>) -> String {
        if self.rng.chance(12) {
            return "d.*".into();
        }
        let mut items: Vec<String> = body
            .outs
            .iter()
            .filter(|_| self.rng.chance(70))
            .map(|o| format!("d.{}", o.name))
            .collect();
        if items.is_empty() {
            items.push(format!("d.{}", body.outs[0].name));
        }
        if let Some(y) = partner {
            let c = y.col(self.rng.pick(y.table.columns).name);
            items.push(c.sql());
        }
        items.join(", ")
    }

    /// `COUNT(*)` and an aggregate of an output; true when MIN/MAX of a string.
    fn outer_aggregates(&mut self, body: &Body) -> (String, bool) {
        let o = self.rng.pick(&body.outs).clone();
        let string = o.column.is_some_and(|c| c.column.kind == Kind::Str);
        let agg = *self.rng.pick(&["MAX", "MIN", "COUNT"]);
        (format!("COUNT(*), {agg}(d.{})", o.name), string && agg != "COUNT")
    }
}

fn out_of(c: ColRef) -> Out {
    Out {
        name: c.column.name.to_string(),
        column: Some(c),
    }
}
