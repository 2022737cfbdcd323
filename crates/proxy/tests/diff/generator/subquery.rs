//! Subqueries over any table inside a statement's WHERE or select list: `[NOT] IN`,
//! `[NOT] EXISTS` and comparisons with a scalar aggregate, correlated to the outer tables on
//! the shard key (`=` or `<=>`), on other columns, or not at all; their inner columns are any
//! columns of the inner table. The verdict ([`verdict::subquery`]) says when Tessera may refuse.

use super::super::schema::{self, Kind, Table};
use super::verdict::{self, family, Link, Verdict};
use super::{compatible, ColRef, Generator, Ref, Source};

impl Generator {
    /// Adds a subquery condition to the WHERE conjuncts of `s`; `alias` names its table.
    pub(super) fn add_subquery(&mut self, s: &mut Source, alias: &'static str) {
        let (cond, v, inner) = self.subquery_condition(s, alias);
        s.extra.push(cond);
        s.verdict.merge(&v);
        s.inner_tables.push(inner);
    }

    /// A scalar subquery for the select list (an aggregate, or a primary-key lookup), merged
    /// into the verdict of `s`; true when it is MIN/MAX of a string (compare with `ci`).
    pub(super) fn scalar_item(&mut self, s: &mut Source, alias: &'static str) -> (String, bool) {
        let inner = self.inner_ref(s, alias);
        s.inner_tables.push(inner.table);
        let link = self.link(s, inner);
        let ic = inner.col(self.rng.pick(inner.table.columns).name);
        let (agg, ci) = self.aggregate_of(ic);
        let mut conds = Vec::new();
        if let Some(l) = link {
            conds.push(link_sql(l));
        }
        self.inner_conditions(s, inner, &mut conds);
        let sql = format!("(SELECT {agg} FROM {}{})", inner.in_from(), where_sql(&conds));
        s.verdict.merge(&verdict::subquery(&s.refs, inner.table, link, false));
        (sql, ci)
    }

    /// IN, EXISTS or a comparison with a scalar aggregate.
    fn subquery_condition(&mut self, s: &Source, alias: &'static str) -> (String, Verdict, &'static Table) {
        let inner = self.inner_ref(s, alias);
        let link = self.link(s, inner);
        let (sql, v) = match self.rng.below(100) {
            0..=39 => self.in_condition(s, inner, link),
            40..=74 => self.exists_condition(s, inner, link),
            _ => self.scalar_condition(s, inner, link),
        };
        (sql, v, inner.table)
    }

    /// The subquery's table: often one sharded like an outer table, else any.
    fn inner_ref(&mut self, s: &Source, alias: &'static str) -> Ref {
        let outer: Vec<&'static Table> = verdict::sharded(&s.refs).iter().map(|r| r.table).collect();
        let same: Vec<&'static Table> = schema::TABLES
            .iter()
            .filter(|t| outer.iter().any(|o| family(o) == family(t)))
            .collect();
        let table = if !same.is_empty() && self.rng.chance(55) {
            *self.rng.pick(&same)
        } else {
            schema::table(self.rng.pick(&schema::TABLES[..]).name).expect("a table")
        };
        // Unaliased only when its name cannot hide an outer table's.
        let hides = s.refs.iter().any(|r| r.visible() == table.name);
        let alias = if hides || self.rng.chance(75) {
            Some(alias)
        } else {
            None
        };
        self.qualify(Ref::new(alias, table), true)
    }

    /// A key link to an outer table sharded alike, most of the time there is one.
    fn link(&mut self, s: &Source, inner: Ref) -> Option<Link> {
        let ik = inner.key()?;
        let candidates: Vec<ColRef> = verdict::sharded(&s.refs)
            .iter()
            .filter(|r| family(r.table) == family(inner.table))
            .filter_map(|r| r.key())
            .collect();
        if candidates.is_empty() || !self.rng.chance(75) {
            return None;
        }
        Some(Link {
            outer: *self.rng.pick(&candidates),
            inner: ik,
            null_safe: self.rng.chance(25),
        })
    }

    /// `outer [NOT] IN (SELECT inner ...)`: key against key (the link itself), or any column
    /// against a column of its family, correlated on the key when linked.
    fn in_condition(&mut self, s: &Source, inner: Ref, link: Option<Link>) -> (String, Verdict) {
        let not = if self.rng.chance(15) { "NOT " } else { "" };
        let mut conds = Vec::new();
        if let Some(l) = link.filter(|_| self.rng.chance(50)) {
            self.inner_conditions(s, inner, &mut conds);
            let sql = format!(
                "{} {not}IN (SELECT {} FROM {}{})",
                l.outer.sql(),
                l.inner.sql(),
                inner.in_from(),
                where_sql(&conds)
            );
            let plain = Link { null_safe: false, ..l };
            return (
                sql,
                verdict::subquery(&s.refs, inner.table, Some(plain), !not.is_empty()),
            );
        }
        let (oc, ic) = self.compatible_pair(s, inner);
        if let Some(l) = link {
            conds.push(link_sql(l));
        }
        self.inner_conditions(s, inner, &mut conds);
        let sql = format!(
            "{} {not}IN (SELECT {} FROM {}{})",
            oc.sql(),
            ic.sql(),
            inner.in_from(),
            where_sql(&conds)
        );
        (sql, verdict::subquery(&s.refs, inner.table, link, false))
    }

    /// `[NOT] EXISTS (SELECT 1 FROM inner WHERE ...)`.
    fn exists_condition(&mut self, s: &Source, inner: Ref, link: Option<Link>) -> (String, Verdict) {
        let not = if self.rng.chance(30) { "NOT " } else { "" };
        let mut conds = Vec::new();
        if let Some(l) = link {
            conds.push(link_sql(l));
        }
        self.inner_conditions(s, inner, &mut conds);
        if conds.is_empty() {
            let c = inner.col(self.rng.pick(inner.table.columns).name);
            conds.push(self.column_predicate(c));
        }
        let sql = format!("{not}EXISTS (SELECT 1 FROM {}{})", inner.in_from(), where_sql(&conds));
        (sql, verdict::subquery(&s.refs, inner.table, link, false))
    }

    /// `outer op (SELECT AGG(inner) FROM inner WHERE ...)`.
    fn scalar_condition(&mut self, s: &Source, inner: Ref, link: Option<Link>) -> (String, Verdict) {
        let (oc, ic) = self.compatible_pair(s, inner);
        let numeric = ic.column.kind.is_numeric();
        let agg = match self.rng.below(if numeric { 5 } else { 2 }) {
            0 => "MIN",
            1 => "MAX",
            2 => "SUM",
            3 => "AVG",
            _ => "COUNT",
        };
        let agg_sql = format!("{agg}({})", ic.sql());
        // COUNT compares with an integer column; the others with one of the inner's family.
        let oc = if agg == "COUNT" {
            self.int_column(s).unwrap_or(oc)
        } else {
            oc
        };
        let mut conds = Vec::new();
        if let Some(l) = link {
            conds.push(link_sql(l));
        }
        self.inner_conditions(s, inner, &mut conds);
        let op = *self.rng.pick(&["=", "<>", "<", "<=", ">", ">="]);
        let sql = format!(
            "{} {op} (SELECT {agg_sql} FROM {}{})",
            oc.sql(),
            inner.in_from(),
            where_sql(&conds)
        );
        (sql, verdict::subquery(&s.refs, inner.table, link, false))
    }

    /// An aggregate of `ic` for a scalar subquery; true when MIN/MAX of a string.
    pub(super) fn aggregate_of(&mut self, ic: ColRef) -> (String, bool) {
        let col = ic.sql();
        match self.rng.below(100) {
            0..=24 => ("COUNT(*)".into(), false),
            25..=39 => (format!("COUNT({col})"), false),
            40..=54 if ic.column.kind.is_numeric() => (format!("SUM({col})"), false),
            55..=64 if ic.column.kind.is_numeric() => (format!("AVG({col})"), false),
            65..=74 => (format!("COUNT(DISTINCT {col})"), false),
            75..=87 => (format!("MIN({col})"), ic.column.kind == Kind::Str),
            _ => (format!("MAX({col})"), ic.column.kind == Kind::Str),
        }
    }

    /// Correlation on other columns and a literal predicate on the inner table, each sometimes.
    fn inner_conditions(&mut self, s: &Source, inner: Ref, conds: &mut Vec<String>) {
        if self.rng.chance(40) {
            let (oc, ic) = self.compatible_pair(s, inner);
            let op = *self.rng.pick(&["=", "<>", "<", ">=", "<=>"]);
            conds.push(format!("{} {op} {}", ic.sql(), oc.qualified()));
        }
        if self.rng.chance(50) {
            let c = inner.col(self.rng.pick(inner.table.columns).name);
            conds.push(self.column_predicate(c));
        }
    }

    /// An outer column and an inner column of one type family (there is always an integer one).
    fn compatible_pair(&mut self, s: &Source, inner: Ref) -> (ColRef, ColRef) {
        let pairs: Vec<(ColRef, ColRef)> = self
            .columns(s)
            .into_iter()
            .flat_map(|o| inner.table.columns.iter().map(move |c| (o, c)))
            .filter(|(o, c)| compatible(o.column, c))
            .map(|(o, c)| (o, inner.col(c.name)))
            .collect();
        *self.rng.pick(&pairs)
    }

    /// An integer column of the source.
    fn int_column(&mut self, s: &Source) -> Option<ColRef> {
        let ints: Vec<ColRef> = self
            .columns(s)
            .into_iter()
            .filter(|c| matches!(c.column.kind, Kind::Int | Kind::BigInt | Kind::TinyInt))
            .collect();
        (!ints.is_empty()).then(|| *self.rng.pick(&ints))
    }
}

/// The correlation `inner.key = outer.key` (or `<=>`).
fn link_sql(l: Link) -> String {
    let op = if l.null_safe { "<=>" } else { "=" };
    format!("{} {op} {}", l.inner.sql(), l.outer.qualified())
}

/// ` WHERE a AND b`, or nothing.
fn where_sql(conds: &[String]) -> String {
    if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    }
}
