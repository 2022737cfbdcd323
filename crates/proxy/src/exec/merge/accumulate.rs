//! One group's state for each aggregate output: counts, sums, extremes, distinct runs and
//! concatenations, fed shard rows in merge order.

use super::group_concat::{Concat, ConcatRule};
use super::key::{cell, key_value};
use super::spec::{Output, SortKey};
use super::sum::{count_of, Sum};
use crate::exec::row::{compare, Value};
use std::cmp::Ordering;

/// The running state of one output column.
#[derive(Debug)]
pub(crate) enum Acc {
    First,
    Count(i128),
    Sum(Sum),
    /// The best (value, compared key value) so far.
    Extreme(Option<(Value, Value)>),
    Avg {
        sum: Sum,
        count: i128,
    },
    /// Distinct values of a key (a set: several DISTINCT aggregates may share a group, so
    /// their keys cannot all arrive sorted), their count and sum.
    Distinct {
        seen: std::collections::BTreeSet<Ordered>,
        count: i128,
        sum: Sum,
    },
    Concat(Concat),
}

/// What finishing an output produced.
pub(crate) struct Finished {
    pub value: Value,
    pub truncated: bool,
}

impl Acc {
    pub(crate) fn new(out: &Output) -> Acc {
        match out {
            Output::First(_) | Output::Expr(_) => Acc::First,
            Output::Count(_) => Acc::Count(0),
            Output::Sum(_) => Acc::Sum(Sum::Empty),
            Output::Min(_) | Output::Max(_) => Acc::Extreme(None),
            Output::Avg { .. } => Acc::Avg {
                sum: Sum::Empty,
                count: 0,
            },
            Output::CountDistinct { .. } | Output::SumDistinct { .. } | Output::AvgDistinct { .. } => Acc::Distinct {
                seen: Default::default(),
                count: 0,
                sum: Sum::Empty,
            },
            Output::GroupConcat { .. } => Acc::Concat(Concat::default()),
        }
    }

    /// Adds one shard row; returns the bytes the state grew by.
    pub(crate) fn add(&mut self, out: &Output, row: &[Value]) -> usize {
        match (self, out) {
            (Acc::Count(n), Output::Count(c)) => *n += count_of(cell(row, *c)),
            (Acc::Sum(s), Output::Sum(c)) => s.add(cell(row, *c)),
            (Acc::Extreme(best), Output::Min(k)) => return extreme(best, k, row, Ordering::Less),
            (Acc::Extreme(best), Output::Max(k)) => return extreme(best, k, row, Ordering::Greater),
            (Acc::Avg { sum, count }, Output::Avg { sum: s, count: c, .. }) => {
                sum.add(cell(row, *s));
                *count += count_of(cell(row, *c));
            }
            (Acc::Distinct { seen, count, sum }, _) => return distinct(seen, count, sum, out, row),
            (Acc::Concat(c), Output::GroupConcat { .. }) => return concat_rule(out).map_or(0, |r| c.add(&r, row)),
            _ => {}
        }
        0
    }

    /// The output value for the group whose first row is `first`.
    pub(crate) fn finish(self, out: &Output, first: &[Value]) -> Finished {
        let value = match (self, out) {
            (Acc::First, Output::First(c)) => cell(first, *c).clone(),
            (Acc::Count(n), _) => Value::Int(clamp(n)),
            (Acc::Sum(s), _) => s.value(),
            (Acc::Extreme(best), _) => best.map_or(Value::Null, |(v, _)| v),
            (Acc::Avg { sum, count }, Output::Avg { scale, double, .. }) => {
                sum.average(unsigned(count), *scale, *double)
            }
            (Acc::Distinct { count, .. }, Output::CountDistinct { .. }) => Value::Int(clamp(count)),
            (Acc::Distinct { sum, .. }, Output::SumDistinct { .. }) => sum.value(),
            (Acc::Distinct { sum, count, .. }, Output::AvgDistinct { scale, double, .. }) => {
                sum.average(unsigned(count), *scale, *double)
            }
            (Acc::Concat(c), _) => {
                let (value, truncated) = c.finish();
                return Finished { value, truncated };
            }
            _ => Value::Null,
        };
        Finished {
            value,
            truncated: false,
        }
    }
}

/// MIN/MAX: keeps the row's value when its key beats the best (`want` = Less for MIN).
fn extreme(best: &mut Option<(Value, Value)>, key: &SortKey, row: &[Value], want: Ordering) -> usize {
    let value = cell(row, key.column);
    if value.is_null() {
        return 0;
    }
    let k = key_value(row, key);
    let better = match best {
        None => true,
        Some((_, best_key)) => compare(k, best_key) == want,
    };
    if !better {
        return 0;
    }
    let grown = value.size() + k.size();
    *best = Some((value.clone(), k.clone()));
    grown
}

/// A value ordered by [`compare`] (MySQL's order of one column's values).
#[derive(Debug)]
pub(crate) struct Ordered(Value);

impl PartialEq for Ordered {
    fn eq(&self, other: &Self) -> bool {
        compare(&self.0, &other.0).is_eq()
    }
}
impl Eq for Ordered {}
impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

/// COUNT/SUM/AVG(DISTINCT): a value counts when its key (value or collation weight) is new in
/// the group. Returns the bytes the group's set grew by (bounded by the memory cap).
fn distinct(
    seen: &mut std::collections::BTreeSet<Ordered>,
    count: &mut i128,
    sum: &mut Sum,
    out: &Output,
    row: &[Value],
) -> usize {
    let (key, value) = match out {
        Output::CountDistinct { column } => (column, column.column),
        Output::SumDistinct { column, value } | Output::AvgDistinct { column, value, .. } => (column, *value),
        _ => return 0,
    };
    let k = key_value(row, key);
    if cell(row, key.column).is_null() || k.is_null() || !seen.insert(Ordered(k.clone())) {
        return 0;
    }
    *count += 1;
    sum.add(cell(row, value));
    k.size() + 16
}

fn concat_rule(out: &Output) -> Option<ConcatRule<'_>> {
    match out {
        Output::GroupConcat {
            value,
            separator,
            max_len,
            distinct,
            utf8,
            repeat,
            ..
        } => Some(ConcatRule {
            value: *value,
            separator,
            max_len: *max_len,
            distinct: *distinct,
            utf8: *utf8,
            repeat: *repeat,
        }),
        _ => None,
    }
}

fn clamp(n: i128) -> i64 {
    i64::try_from(n).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
}

fn unsigned(n: i128) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
