//! Whether Tessera may refuse a generated statement by design (tests/difftest/README.md,
//! "Refused by design"): the shapes whose rows do not stay on one shard. A statement with a
//! reason is marked `refuse: <reason>`: a refusal or a correct answer passes, a wrong answer
//! is a mismatch. A statement without one must be answered.

use super::super::corpus::Marks;
use super::super::schema::{Rule, Table};
use super::{ColRef, Ref};

pub const NOT_ON_KEYS: &str = "join or subquery over sharded tables not on their shard keys";
pub const DIFFERENT: &str = "tables sharded differently";
pub const UNSHARDED_MIX: &str = "unsharded table with a sharded one";
pub const OUTER_BROADCAST: &str = "outer join from a broadcast table to a sharded one";
pub const FROM_BROADCAST: &str = "subquery over a sharded table from broadcast or unsharded tables";
pub const NULL_SAFE_OUTER: &str = "<=> key link on a NULL-extended side of an outer join";
pub const NOT_IN_NULL: &str = "NOT IN over shard keys across shards";
pub const DERIVED_GROUPED: &str = "derived table grouped or DISTINCT across shards";
pub const DERIVED_LIMIT: &str = "LIMIT inside a derived table spread over shards";
pub const DERIVED_AGG: &str = "aggregate over a derived table spread over shards";
pub const UNION_JOIN: &str = "UNION branch over a join across shards";

/// The first reason a statement may be refused, if any.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    pub refuse: Option<&'static str>,
}

impl Verdict {
    pub fn refuse(&mut self, reason: &'static str) {
        self.refuse.get_or_insert(reason);
    }

    pub fn merge(&mut self, other: &Verdict) {
        if let Some(r) = other.refuse {
            self.refuse(r);
        }
    }

    /// Marks the statement `refuse: <reason>` when there is one.
    pub fn apply(&self, marks: &mut Marks) {
        if marks.refuse.is_none() {
            marks.refuse = self.refuse.map(str::to_string);
        }
    }
}

/// The shard function of a sharded table (orders and customers share one); None for broadcast
/// and unsharded tables.
pub fn family(t: &Table) -> Option<Rule> {
    match t.rule {
        Rule::HashInt | Rule::HashString | Rule::Range => Some(t.rule),
        Rule::Broadcast | Rule::Unsharded => None,
    }
}

/// The sharded references among `refs`.
pub fn sharded(refs: &[Ref]) -> Vec<Ref> {
    refs.iter().copied().filter(|r| family(r.table).is_some()).collect()
}

/// A key equality between an outer reference and a subquery's table (correlation, or
/// `key IN (SELECT key ...)`).
#[derive(Clone, Copy)]
pub struct Link {
    pub outer: ColRef,
    pub inner: ColRef,
    pub null_safe: bool,
}

/// The verdict of a subquery over `inner` inside a statement over `outer` refs, linked by
/// `link` (if any); `not_in` when it is `outer_key NOT IN (SELECT inner_key ...)`.
pub fn subquery(outer: &[Ref], inner: &Table, link: Option<Link>, not_in: bool) -> Verdict {
    let mut v = Verdict::default();
    let outer_sharded = sharded(outer);
    match family(inner) {
        None if inner.rule == Rule::Unsharded && !outer_sharded.is_empty() => v.refuse(UNSHARDED_MIX),
        None => {}
        Some(_) if outer_sharded.is_empty() => v.refuse(FROM_BROADCAST),
        Some(f) => match link {
            None if outer_sharded.iter().any(|r| family(r.table) == Some(f)) => v.refuse(NOT_ON_KEYS),
            None => v.refuse(DIFFERENT),
            Some(l) if l.null_safe && l.outer.r.null_ext => v.refuse(NULL_SAFE_OUTER),
            // Tessera refuses every NOT IN across shards (it would be exact only when neither
            // key holds NULL); a NULL makes the per-shard answer wrong.
            Some(_) if not_in => v.refuse(NOT_IN_NULL),
            Some(_) => {}
        },
    }
    v
}

/// Union-find over `n` nodes: whether `links` connect them all.
pub fn connected(n: usize, links: &[(usize, usize)]) -> bool {
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            i = p[i];
        }
        i
    }
    for &(a, b) in links {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        parent[ra] = rb;
    }
    (0..n).all(|i| root(&mut parent, i) == root(&mut parent, 0))
}
