//! Seeded random SELECTs inside the supported space: single tables and co-located or broadcast
//! joins; column lists; WHERE from shard-key and other predicates with AND / OR / NOT;
//! aggregates with GROUP BY / HAVING; DISTINCT; UNION; ORDER BY that is total whenever LIMIT is
//! used (the primary key breaks ties). Each statement says how to compare it.

use super::corpus::{Marks, Statement};
use super::data::{quote, Dataset};
use super::rng::Rng;
use super::schema::{self, Column, Kind, Rule, Table};
use std::collections::HashMap;

/// A table in a FROM clause, with its alias (None: columns unqualified).
#[derive(Clone, Copy)]
struct Ref {
    alias: Option<&'static str>,
    table: &'static Table,
}

/// A FROM clause: its text, its tables, and columns whose order is total over its rows.
struct Source {
    from: String,
    refs: Vec<Ref>,
    total_order: Vec<String>,
}

/// A column of a source.
#[derive(Clone, Copy)]
struct ColRef {
    r: Ref,
    column: &'static Column,
}

impl ColRef {
    fn sql(&self) -> String {
        match self.r.alias {
            Some(a) => format!("{a}.{}", self.column.name),
            None => self.column.name.to_string(),
        }
    }

    fn is_key(&self) -> bool {
        self.r.table.key == Some(self.column.name)
    }
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
        let source = self.source();
        let (sql, mut marks) = match self.rng.below(100) {
            0..=44 => self.plain(&source),
            45..=79 => self.aggregate(&source),
            80..=91 => self.distinct(&source),
            _ => self.union(),
        };
        marks.prepared = self.rng.chance(self.prepared_pct);
        Statement {
            sql,
            marks,
            origin: format!("random #{n}"),
        }
    }

    fn source(&mut self) -> Source {
        let t = |alias: &'static str, table: &'static Table| Ref {
            alias: Some(alias),
            table,
        };
        let (o, c, p) = (
            t("o", table("orders")),
            t("c", table("customers")),
            t("p", table("products")),
        );
        let joins: [(String, Vec<Ref>, Vec<&str>); 8] = [
            (
                "orders o JOIN customers c ON o.customer_id = c.id".into(),
                vec![o, c],
                vec!["o.id"],
            ),
            (
                "orders o LEFT JOIN customers c ON o.customer_id = c.id".into(),
                vec![o, c],
                vec!["o.id"],
            ),
            (
                "customers c LEFT JOIN orders o ON o.customer_id = c.id".into(),
                vec![c, o],
                vec!["c.id", "o.id"],
            ),
            (
                "orders o JOIN products p ON o.product_id = p.id".into(),
                vec![o, p],
                vec!["o.id"],
            ),
            (
                "orders o LEFT JOIN products p ON o.product_id = p.id".into(),
                vec![o, p],
                vec!["o.id"],
            ),
            (
                "tags t JOIN products p ON t.weight = p.id".into(),
                vec![t("t", table("tags")), p],
                vec!["t.id"],
            ),
            (
                "events e JOIN products p ON e.customer_id = p.id".into(),
                vec![t("e", table("events")), p],
                vec!["e.id"],
            ),
            (
                "orders o JOIN customers c ON o.customer_id = c.id JOIN products p ON o.product_id = p.id".into(),
                vec![o, c, p],
                vec!["o.id"],
            ),
        ];
        if self.rng.chance(62) {
            let table = self.rng.pick(&schema::TABLES[..]);
            return Source {
                from: table.name.to_string(),
                refs: vec![Ref { alias: None, table }],
                total_order: vec![table.pk.to_string()],
            };
        }
        let (from, refs, order) = self.rng.pick(&joins).clone();
        Source {
            from,
            refs,
            total_order: order.into_iter().map(str::to_string).collect(),
        }
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

    fn plain(&mut self, s: &Source) -> (String, Marks) {
        let star = self.rng.chance(8);
        let cols = {
            let k = 1 + self.rng.below(4);
            self.pick_columns(s, k)
        };
        let list = if star {
            "*".to_string()
        } else {
            cols.iter().map(ColRef::sql).collect::<Vec<_>>().join(", ")
        };
        let mut sql = format!("SELECT {list} FROM {}", s.from);
        self.push_where(&mut sql, s, 75);
        let mut marks = Marks::default();
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

    fn push_where(&mut self, sql: &mut String, s: &Source, pct: u32) {
        if self.rng.chance(pct) {
            let p = self.predicate(s, 0);
            sql.push_str(&format!(" WHERE {p}"));
        }
    }

    fn predicate(&mut self, s: &Source, depth: usize) -> String {
        if depth < 2 && self.rng.chance(30) {
            let (a, b) = (self.predicate(s, depth + 1), self.predicate(s, depth + 1));
            let op = if self.rng.chance(60) { "AND" } else { "OR" };
            let combined = format!("({a} {op} {b})");
            return if self.rng.chance(8) {
                format!("NOT {combined}")
            } else {
                combined
            };
        }
        let keys: Vec<ColRef> = self.columns(s).into_iter().filter(ColRef::is_key).collect();
        if !keys.is_empty() && self.rng.chance(55) {
            let k = *self.rng.pick(&keys);
            return self.key_predicate(k);
        }
        let c = self.pick_columns(s, 1)[0];
        self.column_predicate(c)
    }

    /// A literal for column `c`: mostly a value present in the data, sometimes an absent one.
    fn literal(&mut self, c: ColRef) -> String {
        let pool = &self.pools[&(c.r.table.name, c.column.name)];
        if !pool.is_empty() && self.rng.chance(85) {
            return self.rng.pick(pool).clone();
        }
        match c.column.kind {
            Kind::Str => quote(&format!("zz{}", self.rng.below(100))),
            Kind::Date => format!("'{}-06-15'", self.rng.range(1940, 2040)),
            Kind::DateTime => format!("'{}-06-15 12:00:00'", self.rng.range(1940, 2040)),
            Kind::Decimal => format!("{}.{:02}", self.rng.range(-2000, 200_000), self.rng.below(100)),
            Kind::Double => format!("{}", self.rng.range(-4000, 4000) as f64 / 8.0),
            _ => self.rng.range(-1000, 10_000).to_string(),
        }
    }

    /// One to four distinct literals, comma-separated (an IN list).
    fn literal_list(&mut self, c: ColRef) -> String {
        let n = 1 + self.rng.below(4);
        let mut out: Vec<String> = (0..n).map(|_| self.literal(c)).collect();
        out.sort();
        out.dedup();
        out.join(", ")
    }

    fn key_predicate(&mut self, k: ColRef) -> String {
        let col = k.sql();
        let range = k.r.table.rule == Rule::Range;
        let choice = self.rng.below(if range { 100 } else { 75 });
        match choice {
            0..=29 => format!("{col} = {}", self.literal(k)),
            30..=44 => format!("{col} IN ({})", self.literal_list(k)),
            45..=56 => format!("({col} = {} OR {col} = {})", self.literal(k), self.literal(k)),
            57..=64 if k.column.nullable => format!("{col} IS NULL"),
            57..=64 => format!("{col} <> {}", self.literal(k)),
            65..=74 => format!("{col} IS NOT NULL"),
            75..=84 => {
                let mut v = [self.int_literal(k), self.int_literal(k)];
                v.sort();
                format!("{col} BETWEEN {} AND {}", v[0], v[1])
            }
            85..=89 => format!("{col} < {}", self.int_literal(k)),
            90..=94 => format!("{col} >= {}", self.int_literal(k)),
            _ => {
                let mut v = [self.int_literal(k), self.int_literal(k)];
                v.sort();
                format!("({col} > {} AND {col} <= {})", v[0], v[1])
            }
        }
    }

    /// An integer near the range table's bounds (or one of its keys).
    fn int_literal(&mut self, k: ColRef) -> i64 {
        if self.rng.chance(50) {
            if let Ok(v) = self.literal(k).parse::<i64>() {
                return v;
            }
        }
        let b = *self.rng.pick(&schema::EVENT_BOUNDS);
        b + self.rng.range(-3, 3)
    }

    fn column_predicate(&mut self, c: ColRef) -> String {
        let col = c.sql();
        if c.column.nullable && self.rng.chance(12) {
            let not = if self.rng.chance(50) { " NOT" } else { "" };
            return format!("{col} IS{not} NULL");
        }
        match (c.column.kind, self.rng.below(100)) {
            (Kind::Str, 0..=24) => format!("{col} LIKE {}", self.like_pattern(c)),
            (_, 0..=44) => {
                let op = *self.rng.pick(&["=", "<>", "<", "<=", ">", ">="]);
                format!("{col} {op} {}", self.literal(c))
            }
            (_, 45..=64) => {
                let mut v = [self.literal(c), self.literal(c)];
                if c.column.kind.is_numeric() {
                    v.sort_by(|a, b| {
                        a.parse::<f64>()
                            .unwrap_or(0.0)
                            .total_cmp(&b.parse::<f64>().unwrap_or(0.0))
                    });
                }
                format!("{col} BETWEEN {} AND {}", v[0], v[1])
            }
            (_, 65..=79) => format!("{col} IN ({})", self.literal_list(c)),
            _ => {
                let op = *self.rng.pick(&["<", ">="]);
                format!("{col} {op} {}", self.literal(c))
            }
        }
    }

    /// `'<prefix>%'` from a value of the column (values with LIKE metacharacters skipped).
    fn like_pattern(&mut self, c: ColRef) -> String {
        let pool = &self.pools[&(c.r.table.name, c.column.name)];
        let plain: Vec<String> = pool
            .iter()
            .filter(|v| !v.contains(['%', '_', '\\']) && !v.contains("''"))
            .cloned()
            .collect();
        if plain.is_empty() {
            return "'a%'".into();
        }
        let v = self.rng.pick(&plain).trim_matches('\'').to_string();
        let take = 1 + self.rng.below(2);
        let prefix: String = v.chars().take(take).collect();
        format!("'{prefix}%'")
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

    /// Two one-column selects of one table joined by UNION or UNION ALL.
    fn union(&mut self) -> (String, Marks) {
        let table = self.rng.pick(&schema::TABLES[..]);
        let s = Source {
            from: table.name.to_string(),
            refs: vec![Ref { alias: None, table }],
            total_order: vec![table.pk.to_string()],
        };
        let c = self.pick_columns(&s, 1)[0];
        let mut parts = Vec::new();
        for _ in 0..2 {
            let mut part = format!("SELECT {} FROM {}", c.sql(), table.name);
            self.push_where(&mut part, &s, 90);
            parts.push(part);
        }
        let all = self.rng.chance(50);
        let mut sql = parts.join(if all { " UNION ALL " } else { " UNION " });
        let mut marks = Marks {
            ci: !all && c.column.kind == Kind::Str,
            ..Marks::default()
        };
        if !all && self.rng.chance(50) {
            sql.push_str(&format!(" ORDER BY 1{}", self.direction()));
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
