//! Running a [`MergeSpec`]: the k-way merge feeds aggregate or distinct, then HAVING, the final
//! sort and LIMIT, and the visible columns go to the sink; reading stops as soon as the limit
//! is reached.

use super::aggregate::Aggregate;
use super::budget::Budget;
use super::distinct::Distinct;
use super::final_sort::FinalSort;
use super::having::Having;
use super::limit::Limit;
use super::sort::SortMerge;
use super::source::{RowSink, RowSource};
use super::spec::MergeSpec;
use super::MergeError;
use crate::exec::row::Value;

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeStats {
    pub rows_sent: u64,
    /// Rows that reached LIMIT, its skipped offset included: FOUND_ROWS() as one server counts.
    pub rows_counted: u64,
    /// GROUP_CONCAT values cut at `group_concat_max_len` (MariaDB raises warning 1260,
    /// "Row %u was cut by GROUP_CONCAT()", for each).
    pub group_concat_truncations: u64,
    /// Most bytes of rows and group state held at once.
    pub peak_buffered_bytes: usize,
}

/// The stage between the merge and HAVING.
enum Shape<'s> {
    Rows,
    Aggregate(Aggregate<'s>),
    Distinct(Distinct),
}

/// HAVING, the final sort and LIMIT, in front of the sink.
struct Tail<'s> {
    having: Option<Having<'s>>,
    sort: Option<FinalSort>,
    limit: Limit,
    visible: usize,
    sent: u64,
}

/// Merges `sources` (one per shard, in shard index order) into `sink` as `spec` says.
pub async fn run<S: RowSource, K: RowSink>(
    spec: &MergeSpec,
    mut sources: Vec<S>,
    sink: &mut K,
) -> Result<MergeStats, MergeError> {
    let width = spec.validate()?;
    let mut budget = Budget::new(spec.memory_cap);
    let mut merge = SortMerge::new(&spec.order, sources.len(), width);
    let mut shape = Shape::new(spec);
    let mut tail = Tail::new(spec);
    while !tail.done() {
        let next = tokio::select! {
            biased;
            next = merge.next(&mut sources, &mut budget) => next?,
            () = sink.client_left() => return Err(MergeError::ClientLeft),
        };
        let Some(row) = next else {
            if let Some(last) = shape.finish(&mut budget) {
                if let Shape::Aggregate(a) = &mut shape {
                    if let Some(e) = a.take_error() {
                        return Err(e);
                    }
                }
                tail.push(last, sink, &mut budget).await?;
            }
            break;
        };
        if let Some(out) = shape.push(row, &mut budget)? {
            tail.push(out, sink, &mut budget).await?;
        }
    }
    tail.finish(sink, &mut budget).await?;
    Ok(MergeStats {
        rows_sent: tail.sent,
        rows_counted: tail.limit.counted(),
        group_concat_truncations: shape.truncations(),
        peak_buffered_bytes: budget.peak(),
    })
}

impl<'s> Shape<'s> {
    fn new(spec: &'s MergeSpec) -> Shape<'s> {
        match &spec.aggregate {
            Some(a) => Shape::Aggregate(Aggregate::new(a)),
            None if spec.distinct => Shape::Distinct(Distinct::new(&spec.order)),
            None => Shape::Rows,
        }
    }

    fn push(&mut self, row: Vec<Value>, budget: &mut Budget) -> Result<Option<Vec<Value>>, MergeError> {
        match self {
            Shape::Rows => Ok(Some(row)),
            Shape::Aggregate(a) => a.push(row, budget),
            Shape::Distinct(d) => Ok(d.push(row)),
        }
    }

    fn finish(&mut self, budget: &mut Budget) -> Option<Vec<Value>> {
        match self {
            Shape::Aggregate(a) => a.finish(budget),
            _ => None,
        }
    }

    fn truncations(&self) -> u64 {
        match self {
            Shape::Aggregate(a) => a.truncations(),
            _ => 0,
        }
    }

    fn describe(&self) -> Option<String> {
        match self {
            Shape::Rows => None,
            Shape::Aggregate(a) => Some(a.describe()),
            Shape::Distinct(d) => Some(d.describe()),
        }
    }
}

impl<'s> Tail<'s> {
    fn new(spec: &'s MergeSpec) -> Tail<'s> {
        let limit = Limit::new(spec.offset, spec.limit);
        let sort =
            (!spec.final_order.is_empty()).then(|| FinalSort::new(&spec.final_order, limit.needed(), spec.memory_cap));
        Tail {
            having: spec.having.as_ref().map(Having::new),
            sort,
            limit,
            visible: spec.visible,
            sent: 0,
        }
    }

    /// True when no more input can change the result.
    fn done(&self) -> bool {
        self.sort.is_none() && self.limit.done()
    }

    async fn push<K: RowSink>(&mut self, row: Vec<Value>, sink: &mut K, budget: &mut Budget) -> Result<(), MergeError> {
        if let Some(h) = &self.having {
            if !h.accepts(&row)? {
                return Ok(());
            }
        }
        match &mut self.sort {
            Some(sort) => sort.push(row, budget),
            None => self.send(&row, sink).await,
        }
    }

    async fn send<K: RowSink>(&mut self, row: &[Value], sink: &mut K) -> Result<(), MergeError> {
        if !self.limit.admit() {
            return Ok(());
        }
        sink.send_row(&row[..self.visible.min(row.len())]).await?;
        self.sent += 1;
        Ok(())
    }

    async fn finish<K: RowSink>(&mut self, sink: &mut K, budget: &mut Budget) -> Result<(), MergeError> {
        let Some(sort) = self.sort.take() else {
            return Ok(());
        };
        for row in sort.finish(budget) {
            if self.limit.done() {
                break;
            }
            self.send(&row, sink).await?;
        }
        Ok(())
    }
}

impl MergeSpec {
    /// One line per stage, for EXPLAIN ROUTE (columns numbered from 1), e.g. `merge-sort
    /// shards on (1 desc, weight of 2)`, `aggregate by (1): count 2, avg(sum 4 / count 5,
    /// scale 4)`, `having #2 > 10`, `limit 10 offset 20`.
    pub fn describe(&self) -> Vec<String> {
        self.describe_shards(0)
    }

    /// [`MergeSpec::describe`] naming the number of shards (`merge-sort 4 shards on (1)`).
    pub fn describe_shards(&self, shards: usize) -> Vec<String> {
        let merge = SortMerge::new(&self.order, shards, 0);
        let tail = Tail::new(self);
        let mut lines = vec![merge.describe()];
        lines.extend(Shape::new(self).describe());
        lines.extend(tail.having.as_ref().map(Having::describe));
        lines.extend(tail.sort.as_ref().map(FinalSort::describe));
        lines.extend(tail.limit.describe());
        lines
    }
}
