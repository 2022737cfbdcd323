//! UNION and UNION ALL of two or three one-column branches over any sources (single tables or
//! joins), each with its own WHERE that often holds a subquery; the branches' columns are of
//! one type family. A branch that Tessera may refuse makes the whole statement refusable.

use super::super::corpus::Marks;
use super::super::schema::{self, Column, Kind, Rule};
use super::verdict::{self, family, Verdict};
use super::{compatible, ColRef, Generator, Source};

impl Generator {
    pub(super) fn union(&mut self) -> (String, Marks) {
        let n = if self.rng.chance(20) { 3 } else { 2 };
        let mut v = Verdict::default();
        let mut parts = Vec::new();
        let mut first: Option<&'static Column> = None;
        let (mut joined, mut sharded, mut unsharded) = (false, false, false);
        for _ in 0..n {
            let (s, c) = self.branch(first);
            first.get_or_insert(c.column);
            let mut part = format!("SELECT {} FROM {}", c.sql(), s.from);
            self.push_where(&mut part, &s, 80);
            v.merge(&s.verdict);
            joined |= s.refs.len() > 1;
            let tables = s.refs.iter().map(|r| r.table).chain(s.inner_tables.iter().copied());
            for t in tables {
                sharded |= family(t).is_some();
                unsharded |= t.rule == Rule::Unsharded;
            }
            parts.push(part);
        }
        if joined && sharded {
            // A branch must be one table when the union spreads over shards.
            v.refuse(verdict::UNION_JOIN);
        }
        if unsharded && sharded {
            v.refuse(verdict::UNSHARDED_MIX);
        }
        let column = first.expect("a first branch");
        let all = self.rng.chance(50);
        let mut sql = parts.join(if all { " UNION ALL " } else { " UNION " });
        let mut marks = Marks {
            ci: !all && column.kind == Kind::Str,
            ..Marks::default()
        };
        if !all && self.rng.chance(50) {
            sql.push_str(&format!(" ORDER BY 1{}", self.direction()));
            marks.ordered = true;
            if self.rng.chance(50) {
                sql.push_str(&self.limit());
            }
        }
        v.apply(&mut marks);
        (sql, marks)
    }

    /// A branch's source and column (of the family of `like`, when given).
    fn branch(&mut self, like: Option<&'static Column>) -> (Source, ColRef) {
        // Every family has columns in several tables: this ends quickly.
        loop {
            let mut s = if self.rng.chance(70) {
                self.single_source(&schema::TABLES[..])
            } else {
                self.composed_source(&schema::TABLES[..])
            };
            let fitting: Vec<ColRef> = self
                .columns(&s)
                .into_iter()
                .filter(|c| like.is_none_or(|l| compatible(l, c.column)))
                .collect();
            if fitting.is_empty() {
                continue;
            }
            let c = *self.rng.pick(&fitting);
            if self.rng.chance(50) {
                self.add_subquery(&mut s, "x1");
            }
            return (s, c);
        }
    }
}
