//! Random FROM clauses over any tables: one table (with or without alias, columns written
//! `col`, `t.col` or `shop.t.col`), or up to three joined by JOIN / LEFT JOIN on their shard
//! keys (`=` or `<=>`), on a primary key, or on other columns of one type family; joins stay
//! small (the first table is restricted to a window of primary keys). The verdict says which
//! of them Tessera may refuse.

use super::super::schema::{self, Kind, Rule, Table};
use super::verdict::{self, family, Verdict};
use super::{compatible, ColRef, Generator, Qual, Ref, Source};

/// Aliases of the joined tables, in order.
const ALIASES: [&str; 3] = ["r1", "r2", "r3"];
/// Rows of primary key values a joined source's first table is restricted to.
const WINDOW: i64 = 40;

impl Generator {
    /// Random qualification of a table reference.
    pub(super) fn qualify(&mut self, mut r: Ref, bare_ok: bool) -> Ref {
        r.in_schema = self.rng.chance(40);
        r.qual = match self.rng.below(if bare_ok { 4 } else { 2 }) {
            0 => Qual::Table,
            1 => Qual::Schema,
            _ => Qual::Bare,
        };
        r
    }

    /// One table of `pool`, alone.
    pub(super) fn single_source(&mut self, pool: &[Table]) -> Source {
        let table = self.rng.pick(pool);
        let alias = if self.rng.chance(20) { Some("q") } else { None };
        let r = self.qualify(Ref::new(alias, schema::table(table.name).expect("a table")), true);
        let mut s = Source::new(r.in_from(), vec![r]);
        // A bare pk orders like the existing generator did.
        s.total_order = vec![r.pk().sql()];
        s
    }

    /// One to three tables of `pool` joined.
    pub(super) fn composed_source(&mut self, pool: &[Table]) -> Source {
        let n = match self.rng.below(100) {
            0..=19 => 1,
            20..=79 => 2,
            _ => 3,
        };
        if n == 1 {
            return self.single_source(pool);
        }
        let tables = self.join_tables(pool, n);
        let distinct = (1..n).all(|i| !tables[..i].iter().any(|t| t.name == tables[i].name));
        let unaliased = distinct && self.rng.chance(30);
        let refs: Vec<Ref> = (0..n)
            .map(|i| {
                let alias = if unaliased { None } else { Some(ALIASES[i]) };
                self.qualify(Ref::new(alias, tables[i]), false)
            })
            .collect();
        self.join(refs)
    }

    /// `n` tables: after the first, often one of its shard family or the broadcast table.
    fn join_tables(&mut self, pool: &[Table], n: usize) -> Vec<&'static Table> {
        let named = |t: &Table| schema::table(t.name).expect("a table");
        let mut out = vec![named(self.rng.pick(pool))];
        while out.len() < n {
            let sharded: Vec<&'static Table> = out.iter().copied().filter(|t| family(t).is_some()).collect();
            let same: Vec<&'static Table> = schema::TABLES
                .iter()
                .filter(|t| sharded.iter().any(|s| family(s) == family(t)) && pool.iter().any(|p| p.name == t.name))
                .collect();
            let next = match self.rng.below(100) {
                0..=39 if !same.is_empty() => *self.rng.pick(&same),
                40..=64 if pool.iter().any(|p| p.name == "products") => named(&schema::PRODUCTS),
                _ => named(self.rng.pick(pool)),
            };
            out.push(next);
        }
        out
    }

    /// The join of `refs` (aliased, or distinct tables qualified), its ON conditions and verdict.
    fn join(&mut self, mut refs: Vec<Ref>) -> Source {
        let mut from = refs[0].in_from();
        let mut links = Vec::new();
        let mut extra = vec![self.window(refs[0])];
        let mut v = Verdict::default();
        for i in 1..refs.len() {
            let left = self.rng.chance(40);
            refs[i].null_ext = left;
            let j = self.rng.below(i);
            let on = match self.key_link(&refs, i, j) {
                Some((on, null_safe)) => {
                    links.push((i, j));
                    if null_safe && refs[j].null_ext {
                        v.refuse(verdict::NULL_SAFE_OUTER);
                    }
                    on
                }
                None => {
                    let (on, many) = self.column_link(refs[i], refs[j]);
                    if many {
                        extra.push(self.window(refs[i]));
                    }
                    on
                }
            };
            let on = if self.rng.chance(20) {
                let c = refs[i].col(self.rng.pick(refs[i].table.columns).name);
                format!("{on} AND {}", self.column_predicate(c))
            } else {
                on
            };
            let kind = if left { "LEFT JOIN" } else { "JOIN" };
            if left && verdict::sharded(&refs[..i]).is_empty() && family(refs[i].table).is_some() {
                v.refuse(verdict::OUTER_BROADCAST);
            }
            from.push_str(&format!(" {kind} {} ON {on}", refs[i].in_from()));
        }
        v.merge(&from_verdict(&refs, &links));
        let mut s = Source::new(from, refs);
        s.extra = extra.into_iter().flatten().collect();
        s.verdict = v;
        s
    }

    /// `a.key = b.key` (or `<=>`) when both are sharded alike, most of the time; the bool is
    /// true for `<=>`.
    fn key_link(&mut self, refs: &[Ref], i: usize, j: usize) -> Option<(String, bool)> {
        let (a, b) = (refs[i].key()?, refs[j].key()?);
        if family(a.r.table) != family(b.r.table) || !self.rng.chance(70) {
            return None;
        }
        let null_safe = self.rng.chance(30);
        let op = if null_safe { "<=>" } else { "=" };
        let on = if self.rng.chance(50) {
            format!("{} {op} {}", a.sql(), b.sql())
        } else {
            format!("{} {op} {}", b.sql(), a.sql())
        };
        Some((on, null_safe))
    }

    /// A condition on other columns: mostly the new table's primary key equal to a column of
    /// an earlier one (at most one match per row); else two columns of one family (true: the
    /// new table needs a window too).
    fn column_link(&mut self, new: Ref, earlier: Ref) -> (String, bool) {
        let pk = new.pk();
        let to_pk: Vec<ColRef> = earlier
            .table
            .columns
            .iter()
            .filter(|c| compatible(c, pk.column))
            .map(|c| earlier.col(c.name))
            .collect();
        if !to_pk.is_empty() && self.rng.chance(75) {
            let c = *self.rng.pick(&to_pk);
            return (format!("{} = {}", pk.sql(), c.sql()), false);
        }
        let pairs: Vec<(ColRef, ColRef)> = new
            .table
            .columns
            .iter()
            .flat_map(|a| earlier.table.columns.iter().map(move |b| (a, b)))
            .filter(|(a, b)| compatible(a, b) && a.kind != Kind::Double)
            .map(|(a, b)| (new.col(a.name), earlier.col(b.name)))
            .collect();
        let (a, b) = *self.rng.pick(&pairs);
        let op = if self.rng.chance(85) { "=" } else { "<=>" };
        (format!("{} {op} {}", a.sql(), b.sql()), true)
    }

    /// `pk BETWEEN v AND v + WINDOW` from a value of the table's primary key (None for a
    /// string key: settings is small).
    pub(super) fn window(&mut self, r: Ref) -> Option<String> {
        let pk = r.pk();
        if pk.column.kind == Kind::Str {
            return None;
        }
        let pool = &self.pools[&(r.table.name, pk.column.name)];
        let v = self
            .rng
            .pick(pool)
            .parse::<i64>()
            .ok()
            .filter(|v| v.abs() < 1_000_000)
            .unwrap_or(1);
        Some(format!("{} BETWEEN {v} AND {}", pk.sql(), v + WINDOW))
    }
}

/// The verdict of a FROM clause: one shard function, no unsharded table beside a sharded one,
/// every sharded table linked to the others by key equalities.
fn from_verdict(refs: &[Ref], links: &[(usize, usize)]) -> Verdict {
    let mut v = Verdict::default();
    let sharded: Vec<usize> = (0..refs.len()).filter(|&i| family(refs[i].table).is_some()).collect();
    let families: Vec<Rule> = sharded.iter().filter_map(|&i| family(refs[i].table)).collect();
    if families.windows(2).any(|w| w[0] != w[1]) {
        v.refuse(verdict::DIFFERENT);
    }
    if !sharded.is_empty() && refs.iter().any(|r| r.table.rule == Rule::Unsharded) {
        v.refuse(verdict::UNSHARDED_MIX);
    }
    let index = |i: usize| sharded.iter().position(|&s| s == i);
    let local: Vec<(usize, usize)> = links
        .iter()
        .filter_map(|&(a, b)| Some((index(a)?, index(b)?)))
        .collect();
    if sharded.len() > 1 && !verdict::connected(sharded.len(), &local) {
        v.refuse(verdict::NOT_ON_KEYS);
    }
    v
}
