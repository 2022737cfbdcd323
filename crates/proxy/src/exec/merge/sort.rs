//! The k-way merge: one buffered row per shard, the least on the merge order goes next (on
//! ties the lower shard index), and a shard is read again only when its row has been taken.

use super::budget::Budget;
use super::key::{compare_rows, describe_keys};
use super::source::RowSource;
use super::spec::SortKey;
use super::MergeError;
use crate::exec::row::{row_size, Value};

/// Merge state over shard sources that are passed to [`SortMerge::next`].
#[derive(Debug)]
pub(crate) struct SortMerge {
    keys: Vec<SortKey>,
    /// Each shard's next row, once read.
    heads: Vec<Option<Vec<Value>>>,
    done: Vec<bool>,
    primed: bool,
    /// The shard whose row went out last: read it before choosing again.
    refill: Option<usize>,
    width: usize,
}

impl SortMerge {
    /// A merge of `shards` sources on `keys`; every row must have `width` columns.
    pub(crate) fn new(keys: &[SortKey], shards: usize, width: usize) -> SortMerge {
        SortMerge {
            keys: keys.to_vec(),
            heads: vec![None; shards],
            done: vec![false; shards],
            primed: false,
            refill: None,
            width,
        }
    }

    /// The next merged row, or `None` when every shard is exhausted.
    pub(crate) async fn next<S: RowSource>(
        &mut self,
        sources: &mut [S],
        budget: &mut Budget,
    ) -> Result<Option<Vec<Value>>, MergeError> {
        if !self.primed {
            self.primed = true;
            for i in 0..sources.len().min(self.heads.len()) {
                self.pull(sources, i, budget).await?;
            }
        } else if let Some(i) = self.refill.take() {
            self.pull(sources, i, budget).await?;
        }
        let Some(best) = self.least() else {
            return Ok(None);
        };
        let row = self.heads[best].take();
        if let Some(r) = &row {
            budget.release(row_size(r));
        }
        self.refill = Some(best);
        Ok(row)
    }

    async fn pull<S: RowSource>(&mut self, sources: &mut [S], i: usize, budget: &mut Budget) -> Result<(), MergeError> {
        if self.done[i] {
            return Ok(());
        }
        match sources[i].next_row().await? {
            Some(row) if row.len() < self.width => Err(MergeError::ShortRow {
                width: row.len(),
                needed: self.width,
            }),
            Some(row) => {
                budget.hold_fixed(row_size(&row));
                self.heads[i] = Some(row);
                Ok(())
            }
            None => {
                self.done[i] = true;
                Ok(())
            }
        }
    }

    /// The shard holding the least row (the first such on ties).
    fn least(&self) -> Option<usize> {
        let mut best: Option<(usize, &Vec<Value>)> = None;
        for (i, head) in self.heads.iter().enumerate() {
            let Some(row) = head else { continue };
            match best {
                Some((_, b)) if !compare_rows(row, b, &self.keys).is_lt() => {}
                _ => best = Some((i, row)),
            }
        }
        best.map(|(i, _)| i)
    }

    /// `merge-sort 4 shards on (1 desc)` or `concatenate 4 shards`.
    pub(crate) fn describe(&self) -> String {
        let shards = match self.heads.len() {
            0 => "shards".to_string(),
            1 => "1 shard".to_string(),
            n => format!("{n} shards"),
        };
        if self.keys.is_empty() {
            format!("concatenate {shards}")
        } else {
            format!("merge-sort {shards} on {}", describe_keys(&self.keys))
        }
    }
}
