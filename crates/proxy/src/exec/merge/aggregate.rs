//! GROUP BY across shards: rows arrive sorted by the group keys, so one group is held at a
//! time and emitted when the next group starts (or the shards end).
//!
//! Verified against MariaDB 10.11: COUNT over no rows is 0 but GROUP BY over no rows gives no
//! rows; SUM/AVG/MIN/MAX/GROUP_CONCAT over no rows or only NULLs are NULL; without GROUP BY
//! the result is always exactly one row.

use super::accumulate::Acc;
use super::budget::Budget;
use super::key::{column_label, describe_key, describe_keys, equal_on};
use super::spec::{AggregateSpec, Output, SortBy};
use super::MergeError;
use crate::exec::row::{row_size, Value};

/// The aggregate stage.
#[derive(Debug)]
pub(crate) struct Aggregate<'s> {
    spec: &'s AggregateSpec,
    group: Option<Group>,
    emitted: bool,
    truncations: u64,
    /// An output that could not be computed (arithmetic out of range, MariaDB's 1690).
    error: Option<MergeError>,
}

/// The group being accumulated: its first row and one state per output.
#[derive(Debug)]
struct Group {
    first: Vec<Value>,
    accs: Vec<Acc>,
    bytes: usize,
}

impl<'s> Aggregate<'s> {
    pub(crate) fn new(spec: &'s AggregateSpec) -> Aggregate<'s> {
        Aggregate {
            spec,
            group: None,
            emitted: false,
            truncations: 0,
            error: None,
        }
    }

    /// Feeds one merged row; returns the previous group's output row when this row starts a
    /// new group.
    pub(crate) fn push(&mut self, row: Vec<Value>, budget: &mut Budget) -> Result<Option<Vec<Value>>, MergeError> {
        if let Some(g) = &mut self.group {
            if equal_on(&g.first, &row, &self.spec.group_by) {
                return g.add(self.spec, &row, budget).map(|()| None);
            }
        }
        let done = self.group.take().map(|g| self.emit(g, budget));
        if let Some(e) = self.take_error() {
            return Err(e);
        }
        let bytes = row_size(&row);
        budget.hold(bytes)?;
        let mut g = Group {
            accs: self.spec.outputs.iter().map(Acc::new).collect(),
            first: row,
            bytes,
        };
        let first = std::mem::take(&mut g.first);
        let added = g.add(self.spec, &first, budget);
        g.first = first;
        self.group = Some(g);
        added.map(|()| done)
    }

    /// The last group's row at the end of the input; without GROUP BY, the one row over no
    /// input at all.
    pub(crate) fn finish(&mut self, budget: &mut Budget) -> Option<Vec<Value>> {
        match self.group.take() {
            Some(g) => Some(self.emit(g, budget)),
            None if self.spec.group_by.is_empty() && !self.emitted => {
                let empty = Group {
                    first: Vec::new(),
                    accs: self.spec.outputs.iter().map(Acc::new).collect(),
                    bytes: 0,
                };
                Some(self.emit(empty, budget))
            }
            None => None,
        }
    }

    fn emit(&mut self, g: Group, budget: &mut Budget) -> Vec<Value> {
        budget.release(g.bytes);
        self.emitted = true;
        let mut out = Vec::with_capacity(self.spec.outputs.len());
        for (acc, spec) in g.accs.into_iter().zip(&self.spec.outputs) {
            let f = acc.finish(spec, &g.first);
            self.truncations += u64::from(f.truncated);
            out.push(f.value);
        }
        // Arithmetic over aggregates, once the aggregates are known.
        for (i, spec) in self.spec.outputs.iter().enumerate() {
            if let Output::Expr(o) = spec {
                match super::having::operand(o, &out) {
                    Ok(v) => out[i] = v,
                    Err(e) => {
                        self.error.get_or_insert(e);
                    }
                }
            }
        }
        out
    }

    /// An error computing an output (arithmetic out of range), once.
    pub(crate) fn take_error(&mut self) -> Option<MergeError> {
        self.error.take()
    }

    /// GROUP_CONCAT values cut so far.
    pub(crate) fn truncations(&self) -> u64 {
        self.truncations
    }

    /// `aggregate by (1): first 1, count 2, avg(sum 4 / count 5, scale 4)`.
    pub(crate) fn describe(&self) -> String {
        let outputs: Vec<String> = self.spec.outputs.iter().map(describe_output).collect();
        if self.spec.group_by.is_empty() {
            format!("aggregate all rows: {}", outputs.join(", "))
        } else {
            format!(
                "aggregate by {}: {}",
                describe_keys(&self.spec.group_by),
                outputs.join(", ")
            )
        }
    }
}

impl Group {
    fn add(&mut self, spec: &AggregateSpec, row: &[Value], budget: &mut Budget) -> Result<(), MergeError> {
        let mut grown = 0;
        for (acc, out) in self.accs.iter_mut().zip(&spec.outputs) {
            grown += acc.add(out, row);
        }
        budget.hold(grown)?;
        self.bytes += grown;
        Ok(())
    }
}

/// One output as EXPLAIN shows it (columns named by [`column_label`]).
fn describe_output(out: &Output) -> String {
    let n = |c: &usize| column_label(*c);
    match out {
        Output::First(c) => format!("first {}", n(c)),
        Output::Expr(_) => "arithmetic over outputs".to_string(),
        Output::Count(c) => format!("count {}", n(c)),
        Output::Sum(c) => format!("sum {}", n(c)),
        Output::Min(k) => format!("min {}", describe_key(k)),
        Output::Max(k) => format!("max {}", describe_key(k)),
        Output::Avg {
            sum,
            count,
            scale,
            double,
        } => format!(
            "avg(sum {} / count {}, {})",
            n(sum),
            n(count),
            avg_kind(*scale, *double)
        ),
        Output::CountDistinct { column } => format!("count(distinct {})", describe_key(column)),
        Output::SumDistinct { column, value } => format!("sum(distinct {} by {})", n(value), describe_key(column)),
        Output::AvgDistinct {
            column,
            value,
            scale,
            double,
        } => format!(
            "avg(distinct {} by {}, {})",
            n(value),
            describe_key(column),
            avg_kind(*scale, *double)
        ),
        Output::GroupConcat {
            value,
            order,
            distinct,
            max_len,
            ..
        } => {
            let distinct = match distinct {
                None => "",
                Some(SortBy::Value) => "distinct ",
                Some(SortBy::Weight(_)) => "distinct weight of ",
            };
            let order = if order.is_empty() {
                String::new()
            } else {
                format!(" order by {}", describe_keys(order))
            };
            format!("group_concat({distinct}{}{order}, max {max_len} bytes)", n(value))
        }
    }
}

fn avg_kind(scale: u32, double: bool) -> String {
    if double {
        "double".to_string()
    } else {
        format!("scale {scale}")
    }
}
