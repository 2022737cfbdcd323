//! WHERE conditions over a source's columns: shard-key predicates (`=`, `IN`, OR of `=`,
//! `IS [NOT] NULL`, ranges near the range bounds), other column predicates, and their AND / OR /
//! NOT combinations; literals come from the data set.

use super::super::data::quote;
use super::super::schema::{self, Kind, Rule};
use super::{ColRef, Generator, Source};

impl Generator {
    /// ` WHERE ...`: the source's own conjuncts (restrictions, subqueries) and, with `pct`
    /// percent chance, a random predicate.
    pub(super) fn push_where(&mut self, sql: &mut String, s: &Source, pct: u32) {
        let mut conjuncts = s.extra.clone();
        if self.rng.chance(pct) {
            conjuncts.push(self.predicate(s, 0));
        }
        if !conjuncts.is_empty() {
            sql.push_str(&format!(" WHERE {}", conjuncts.join(" AND ")));
        }
    }

    pub(super) fn predicate(&mut self, s: &Source, depth: usize) -> String {
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
    pub(super) fn literal(&mut self, c: ColRef) -> String {
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
    pub(super) fn literal_list(&mut self, c: ColRef) -> String {
        let n = 1 + self.rng.below(4);
        let mut out: Vec<String> = (0..n).map(|_| self.literal(c)).collect();
        out.sort();
        out.dedup();
        out.join(", ")
    }

    pub(super) fn key_predicate(&mut self, k: ColRef) -> String {
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
    pub(super) fn int_literal(&mut self, k: ColRef) -> i64 {
        if self.rng.chance(50) {
            if let Ok(v) = self.literal(k).parse::<i64>() {
                return v;
            }
        }
        let b = *self.rng.pick(&schema::EVENT_BOUNDS);
        b + self.rng.range(-3, 3)
    }

    pub(super) fn column_predicate(&mut self, c: ColRef) -> String {
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
    pub(super) fn like_pattern(&mut self, c: ColRef) -> String {
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
}
