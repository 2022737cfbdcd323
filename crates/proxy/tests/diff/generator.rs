//! Seeded random SELECTs: single tables and joins of any tables (on keys, on other columns, outer,
//! with `=` and `<=>`), derived tables, IN / EXISTS / scalar subqueries (correlated or not),
//! UNION branches, schema-qualified names (`shop.t`, `shop.t.col`); column lists; WHERE from
//! shard-key and other predicates with AND / OR / NOT; aggregates with GROUP BY / HAVING;
//! DISTINCT; ORDER BY that is total whenever LIMIT is used (the primary keys break ties). Each
//! statement says how to compare it, and whether Tessera may refuse it by design
//! ([`verdict`]).

mod derived;
mod from;
mod predicates;
mod subquery;
mod union;
mod verdict;

use super::corpus::{Marks, Statement};
use super::data::Dataset;
use super::rng::Rng;
use super::schema::{self, Column, Kind, Table};
use std::collections::HashMap;
use verdict::Verdict;

/// How a column of a table without alias is written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Qual {
    /// `col`
    Bare,
    /// `t.col`
    Table,
    /// `shop.t.col`
    Schema,
}

/// A table in a FROM clause, with its alias (None: columns written as `qual` says).
#[derive(Clone, Copy)]
struct Ref {
    alias: Option<&'static str>,
    table: &'static Table,
    qual: Qual,
    /// Written `shop.t` in the FROM clause.
    in_schema: bool,
    /// The inner side of an outer join: its columns may be NULL-extended.
    null_ext: bool,
}

impl Ref {
    fn new(alias: Option<&'static str>, table: &'static Table) -> Ref {
        Ref {
            alias,
            table,
            qual: Qual::Bare,
            in_schema: false,
            null_ext: false,
        }
    }

    /// The table as the FROM clause names it: `[shop.]t [alias]`.
    fn in_from(&self) -> String {
        let schema = if self.in_schema { "shop." } else { "" };
        match self.alias {
            Some(a) => format!("{schema}{} {a}", self.table.name),
            None => format!("{schema}{}", self.table.name),
        }
    }

    /// The name other clauses see: the alias, else the table's name.
    fn visible(&self) -> &'static str {
        self.alias.unwrap_or(self.table.name)
    }

    fn col(&self, name: &str) -> ColRef {
        let column = self
            .table
            .columns
            .iter()
            .find(|c| c.name == name)
            .expect("a column of the table");
        ColRef { r: *self, column }
    }

    fn pk(&self) -> ColRef {
        self.col(self.table.pk)
    }

    /// The shard key column, for sharded tables.
    fn key(&self) -> Option<ColRef> {
        self.table.key.map(|k| self.col(k))
    }
}

/// A FROM clause: its text, its tables, columns whose order is total over its rows, conjuncts
/// every WHERE over it includes, and whether Tessera may refuse statements over it.
struct Source {
    from: String,
    refs: Vec<Ref>,
    total_order: Vec<String>,
    extra: Vec<String>,
    /// Tables of the subqueries in its WHERE and select list.
    inner_tables: Vec<&'static Table>,
    verdict: Verdict,
}

impl Source {
    fn new(from: String, refs: Vec<Ref>) -> Source {
        let total_order = refs.iter().map(|r| r.pk().sql()).collect();
        Source {
            from,
            refs,
            total_order,
            extra: Vec::new(),
            inner_tables: Vec::new(),
            verdict: Verdict::default(),
        }
    }
}

/// A column of a source.
#[derive(Clone, Copy)]
struct ColRef {
    r: Ref,
    column: &'static Column,
}

impl ColRef {
    fn sql(&self) -> String {
        let name = self.column.name;
        match (self.r.alias, self.r.qual) {
            (Some(a), _) => format!("{a}.{name}"),
            (None, Qual::Bare) => name.to_string(),
            (None, Qual::Table) => format!("{}.{name}", self.r.table.name),
            (None, Qual::Schema) => format!("shop.{}.{name}", self.r.table.name),
        }
    }

    /// Written with its table (for use inside a subquery, where a bare name binds inside).
    fn qualified(&self) -> String {
        match (self.r.alias, self.r.qual) {
            (None, Qual::Bare) => format!("{}.{}", self.r.table.name, self.column.name),
            _ => self.sql(),
        }
    }

    fn is_key(&self) -> bool {
        self.r.table.key == Some(self.column.name)
    }
}

/// Type families that compare without surprises: integers, decimals, doubles, strings of one
/// collation, dates, datetimes.
fn class(c: &Column) -> (u8, Option<&'static str>) {
    let family = match c.kind {
        Kind::Int | Kind::BigInt | Kind::TinyInt => 0,
        Kind::Decimal => 1,
        Kind::Double => 2,
        Kind::Str => 3,
        Kind::Date => 4,
        Kind::DateTime => 5,
    };
    (family, c.collation)
}

/// Whether `a` and `b` may be compared, joined or UNIONed (same family; strings of the same
/// collation: `tags.name` against another string is MariaDB's error 1267).
fn compatible(a: &Column, b: &Column) -> bool {
    class(a) == class(b)
}

/// The random statement generator.
pub struct Generator {
    rng: Rng,
    /// Literals per (table, column) taken from the data set.
    pools: HashMap<(&'static str, &'static str), Vec<String>>,
    prepared_pct: u32,
}

impl Generator {
    /// A generator for `seed`; `prepared_pct` percent of its statements also run prepared.
    pub fn new(seed: u64, data: &Dataset, prepared_pct: u32) -> Generator {
        let mut pools = HashMap::new();
        for t in schema::TABLES.iter() {
            for c in t.columns {
                pools.insert((t.name, c.name), data.literals(t.name, c.name));
            }
        }
        Generator {
            rng: Rng::new(seed),
            pools,
            prepared_pct,
        }
    }

    /// The `n`-th statement (call in order: the stream depends on the seed only).
    pub fn statement(&mut self, n: usize) -> Statement {
        let (sql, mut marks) = match self.rng.below(100) {
            0..=79 => {
                let mut source = self.source();
                let (sql, mut marks) = match self.rng.below(100) {
                    0..=49 => self.plain(&mut source),
                    50..=84 => self.aggregate(&source),
                    _ => self.distinct(&source),
                };
                source.verdict.apply(&mut marks);
                (sql, marks)
            }
            80..=89 => self.derived(),
            _ => self.union(),
        };
        marks.prepared = self.rng.chance(self.prepared_pct);
        Statement {
            sql,
            marks,
            origin: format!("random #{n}"),
        }
    }

    /// A FROM clause with, sometimes, subquery conditions in its WHERE.
    fn source(&mut self) -> Source {
        let mut s = match self.rng.below(100) {
            0..=34 => self.single_source(&schema::TABLES[..]),
            35..=54 => self.fixed_join(),
            55..=89 => self.composed_source(&schema::TABLES[..]),
            _ => self.composed_source(&[schema::PRODUCTS, schema::SETTINGS]),
        };
        let only_unsharded = s.refs.iter().all(|r| r.table.key.is_none());
        let pct = if only_unsharded { 70 } else { 35 };
        if self.rng.chance(pct) {
            self.add_subquery(&mut s, "x1");
            if self.rng.chance(15) {
                self.add_subquery(&mut s, "x2");
            }
        }
        s
    }

    /// The co-located and broadcast joins the generator started with (tables sometimes
    /// written `shop.t`).
    fn fixed_join(&mut self) -> Source {
        let t = |alias: &'static str, name: &str| Ref::new(Some(alias), table(name));
        let ext = |r: Ref| Ref { null_ext: true, ..r };
        let (o, c, p) = (t("o", "orders"), t("c", "customers"), t("p", "products"));
        let joins: [(&str, Vec<Ref>); 8] = [
            ("orders o JOIN customers c ON o.customer_id = c.id", vec![o, c]),
            (
                "orders o LEFT JOIN customers c ON o.customer_id = c.id",
                vec![o, ext(c)],
            ),
            (
                "customers c LEFT JOIN orders o ON o.customer_id = c.id",
                vec![c, ext(o)],
            ),
            ("orders o JOIN products p ON o.product_id = p.id", vec![o, p]),
            ("orders o LEFT JOIN products p ON o.product_id = p.id", vec![o, ext(p)]),
            ("tags t JOIN products p ON t.weight = p.id", vec![t("t", "tags"), p]),
            (
                "events e JOIN products p ON e.customer_id = p.id",
                vec![t("e", "events"), p],
            ),
            (
                "orders o JOIN customers c ON o.customer_id = c.id JOIN products p ON o.product_id = p.id",
                vec![o, c, p],
            ),
        ];
        let (text, refs) = self.rng.pick(&joins).clone();
        let mut from = text.to_string();
        let mut out = Vec::new();
        for mut r in refs {
            if self.rng.chance(40) {
                r.in_schema = true;
                let plain = format!("{} {}", r.table.name, r.visible());
                from = from.replacen(&plain, &r.in_from(), 1);
            }
            out.push(r);
        }
        Source::new(from, out)
    }

    fn columns(&self, s: &Source) -> Vec<ColRef> {
        s.refs
            .iter()
            .flat_map(|r| r.table.columns.iter().map(move |column| ColRef { r: *r, column }))
            .collect()
    }

    /// `k` distinct random columns of the source.
    fn pick_columns(&mut self, s: &Source, k: usize) -> Vec<ColRef> {
        let mut all = self.columns(s);
        let mut out = Vec::new();
        while out.len() < k && !all.is_empty() {
            out.push(all.swap_remove(self.rng.below(all.len())));
        }
        out
    }

    fn plain(&mut self, s: &mut Source) -> (String, Marks) {
        let star = self.rng.chance(8);
        let cols = {
            let k = 1 + self.rng.below(4);
            self.pick_columns(s, k)
        };
        let mut marks = Marks::default();
        let list = if star {
            "*".to_string()
        } else {
            let mut items: Vec<String> = cols.iter().map(ColRef::sql).collect();
            if self.rng.chance(25) {
                let (item, ci) = self.scalar_item(s, "x3");
                items.push(format!("{item} AS sq"));
                marks.ci |= ci;
            }
            items.join(", ")
        };
        let mut sql = format!("SELECT {list} FROM {}", s.from);
        self.push_where(&mut sql, s, 75);
        match self.rng.below(100) {
            0..=44 => {
                let mut keys = self.order_items(s, &cols, star);
                keys.extend(s.total_order.iter().map(|k| format!("{k}{}", self.direction())));
                sql.push_str(&format!(" ORDER BY {}", keys.join(", ")));
                marks.ordered = true;
                if self.rng.chance(60) {
                    sql.push_str(&self.limit());
                }
            }
            45..=64 => {
                let keys = self.order_items(s, &cols, star);
                if !keys.is_empty() {
                    sql.push_str(&format!(" ORDER BY {}", keys.join(", ")));
                }
            }
            _ => {}
        }
        (sql, marks)
    }

    /// 0..=2 ORDER BY items over the source: a column, a selected column's position, or an
    /// expression.
    fn order_items(&mut self, s: &Source, selected: &[ColRef], star: bool) -> Vec<String> {
        let n = self.rng.below(3);
        (0..n)
            .map(|_| {
                let dir = self.direction();
                if !star && !selected.is_empty() && self.rng.chance(25) {
                    return format!("{}{dir}", 1 + self.rng.below(selected.len()));
                }
                let c = self.pick_columns(s, 1)[0];
                if c.column.kind.is_numeric() && self.rng.chance(20) {
                    return format!("{} * -0.5{dir}", c.sql());
                }
                format!("{}{dir}", c.sql())
            })
            .collect()
    }

    fn direction(&mut self) -> &'static str {
        const DIRECTIONS: [&str; 3] = ["", " ASC", " DESC"];
        DIRECTIONS[self.rng.below(DIRECTIONS.len())]
    }

    fn limit(&mut self) -> String {
        let (count, offset) = (self.rng.below(30), self.rng.below(60));
        match self.rng.below(3) {
            0 => format!(" LIMIT {count}"),
            1 => format!(" LIMIT {offset}, {count}"),
            _ => format!(" LIMIT {count} OFFSET {offset}"),
        }
    }

    fn aggregate(&mut self, s: &Source) -> (String, Marks) {
        let groups = match self.rng.below(100) {
            0..=34 => Vec::new(),
            35..=84 => self.group_columns(s, 1),
            _ => self.group_columns(s, 2),
        };
        let mut marks = Marks {
            ci: groups.iter().any(|g| g.column.kind == Kind::Str),
            ..Marks::default()
        };
        let n_aggs = 1 + self.rng.below(3);
        let mut aggs: Vec<String> = Vec::new();
        for _ in 0..n_aggs {
            let (expr, string_minmax) = self.aggregate_expr(s, !groups.is_empty());
            // One GROUP_CONCAT per statement: two (each with its own inner ORDER BY) are
            // refused by design across shards (tests/difftest/README.md).
            if expr.starts_with("GROUP_CONCAT") && aggs.iter().any(|a| a.starts_with("GROUP_CONCAT")) {
                continue;
            }
            marks.ci |= string_minmax;
            aggs.push(expr);
        }
        let aliased = self.rng.chance(40);
        let mut items: Vec<String> = groups.iter().map(ColRef::sql).collect();
        items.extend(
            aggs.iter()
                .enumerate()
                .map(|(i, a)| if aliased { format!("{a} AS a{i}") } else { a.clone() }),
        );
        let mut sql = format!("SELECT {} FROM {}", items.join(", "), s.from);
        self.push_where(&mut sql, s, 65);
        if groups.is_empty() {
            return (sql, marks);
        }
        let by_position = self.rng.chance(20);
        let group_list: Vec<String> = groups
            .iter()
            .enumerate()
            .map(|(i, g)| if by_position { (i + 1).to_string() } else { g.sql() })
            .collect();
        sql.push_str(&format!(" GROUP BY {}", group_list.join(", ")));
        if self.rng.chance(40) {
            let having = self.having(s, &aggs, aliased);
            sql.push_str(&format!(" HAVING {having}"));
        }
        let group_order: Vec<String> = group_list.iter().map(|g| format!("{g}{}", self.direction())).collect();
        match self.rng.below(100) {
            0..=39 => {
                sql.push_str(&format!(" ORDER BY {}", group_order.join(", ")));
                marks.ordered = true;
            }
            // ORDER BY a GROUP_CONCAT result is refused by design across shards.
            40..=64 if aggs.iter().any(|a| !a.starts_with("GROUP_CONCAT")) => {
                let candidates: Vec<usize> = (0..aggs.len())
                    .filter(|&i| !aggs[i].starts_with("GROUP_CONCAT"))
                    .collect();
                let i = candidates[self.rng.below(candidates.len())];
                let first = if aliased { format!("a{i}") } else { aggs[i].clone() };
                sql.push_str(&format!(" ORDER BY {first} DESC, {}", group_order.join(", ")));
                marks.ordered = true;
            }
            _ => {}
        }
        if marks.ordered && self.rng.chance(50) {
            sql.push_str(&self.limit());
        }
        (sql, marks)
    }

    /// `n` group columns, rarely the primary key.
    fn group_columns(&mut self, s: &Source, n: usize) -> Vec<ColRef> {
        let mut candidates: Vec<ColRef> = self
            .columns(s)
            .into_iter()
            .filter(|c| c.column.name != c.r.table.pk || self.rng.chance(10))
            .collect();
        let mut out = Vec::new();
        while out.len() < n && !candidates.is_empty() {
            out.push(candidates.swap_remove(self.rng.below(candidates.len())));
        }
        out
    }

    /// An aggregate over the source; true when it is MIN/MAX of a string.
    fn aggregate_expr(&mut self, s: &Source, grouped: bool) -> (String, bool) {
        let c = self.pick_columns(s, 1)[0];
        let numeric = c.column.kind.is_numeric();
        let col = c.sql();
        match self.rng.below(100) {
            0..=19 => ("COUNT(*)".into(), false),
            20..=29 => (format!("COUNT({col})"), false),
            30..=44 if numeric => (format!("SUM({col})"), false),
            45..=54 if numeric => (format!("AVG({col})"), false),
            30..=54 => (format!("COUNT(DISTINCT {col})"), false),
            55..=64 => (format!("MIN({col})"), c.column.kind == Kind::Str),
            65..=74 => (format!("MAX({col})"), c.column.kind == Kind::Str),
            75..=84 => (format!("COUNT(DISTINCT {col})"), false),
            85..=91 if numeric => (format!("SUM(DISTINCT {col})"), false),
            92..=99 if grouped => {
                let tiebreak = s.total_order.join(", ");
                (
                    format!("GROUP_CONCAT({col} ORDER BY {col}, {tiebreak} SEPARATOR '|')"),
                    false,
                )
            }
            _ => ("COUNT(*)".into(), false),
        }
    }

    /// A HAVING condition: on a selected aggregate (by alias or repeated) or on a new one.
    fn having(&mut self, s: &Source, aggs: &[String], aliased: bool) -> String {
        let numeric_aggs: Vec<usize> = (0..aggs.len())
            .filter(|&i| aggs[i].starts_with("COUNT") || aggs[i].starts_with("SUM"))
            .collect();
        let op = *self.rng.pick(&[">", ">=", "<", "=", "<>"]);
        if !numeric_aggs.is_empty() && self.rng.chance(60) {
            let i = *self.rng.pick(&numeric_aggs);
            let lhs = if aliased { format!("a{i}") } else { aggs[i].clone() };
            return format!("{lhs} {op} {}", self.rng.below(6));
        }
        match self.rng.below(2) {
            0 => format!("COUNT(*) {op} {}", self.rng.below(6)),
            _ => {
                let c = self.pick_columns(s, 1)[0];
                format!("COUNT({}) {op} {}", c.sql(), self.rng.below(4))
            }
        }
    }

    fn distinct(&mut self, s: &Source) -> (String, Marks) {
        let cols = {
            let k = 1 + self.rng.below(2);
            self.pick_columns(s, k)
        };
        let list: Vec<String> = cols.iter().map(ColRef::sql).collect();
        let mut sql = format!("SELECT DISTINCT {} FROM {}", list.join(", "), s.from);
        self.push_where(&mut sql, s, 60);
        let mut marks = Marks {
            ci: cols.iter().any(|c| c.column.kind == Kind::Str),
            ..Marks::default()
        };
        if self.rng.chance(50) {
            let keys: Vec<String> = list.iter().map(|c| format!("{c}{}", self.direction())).collect();
            sql.push_str(&format!(" ORDER BY {}", keys.join(", ")));
            marks.ordered = true;
            if self.rng.chance(50) {
                sql.push_str(&self.limit());
            }
        }
        (sql, marks)
    }
}

fn table(name: &str) -> &'static Table {
    schema::table(name).expect("a table of the schema")
}
