//! The sort after aggregation (ORDER BY COUNT(*) DESC and the like): buffers output rows within
//! the memory cap, keeping only `offset + limit` rows when there is a LIMIT, then sorts them
//! stably (ties keep the merged order).

use super::budget::Budget;
use super::key::{compare_rows, describe_keys};
use super::spec::SortKey;
use super::MergeError;
use crate::exec::row::{row_size, Value};

/// The final-sort stage.
#[derive(Debug)]
pub(crate) struct FinalSort {
    keys: Vec<SortKey>,
    keep: Option<usize>,
    rows: Vec<Vec<Value>>,
    bytes: usize,
    cap: usize,
}

impl FinalSort {
    /// Sorts on `keys`; keeps at most `keep` rows (offset + limit) when given.
    pub(crate) fn new(keys: &[SortKey], keep: Option<usize>, cap: usize) -> FinalSort {
        FinalSort {
            keys: keys.to_vec(),
            keep,
            rows: Vec::new(),
            bytes: 0,
            cap,
        }
    }

    /// Buffers one row, failing with [`MergeError::MemoryCap`] past the cap.
    pub(crate) fn push(&mut self, row: Vec<Value>, budget: &mut Budget) -> Result<(), MergeError> {
        let size = row_size(&row);
        budget.hold(size)?;
        self.bytes += size;
        self.rows.push(row);
        if let Some(keep) = self.keep {
            if self.rows.len() >= keep.saturating_mul(2).max(64) {
                self.trim(keep, budget);
            }
        }
        Ok(())
    }

    /// Sorts and drops everything past the first `keep` rows.
    fn trim(&mut self, keep: usize, budget: &mut Budget) {
        let keys = &self.keys;
        self.rows.sort_by(|a, b| compare_rows(a, b, keys));
        let dropped: usize = self.rows.iter().skip(keep).map(|r| row_size(r)).sum();
        self.rows.truncate(keep);
        self.bytes -= dropped;
        budget.release(dropped);
    }

    /// The rows in final order (releasing their memory from the budget).
    pub(crate) fn finish(mut self, budget: &mut Budget) -> Vec<Vec<Value>> {
        self.trim(self.keep.unwrap_or(usize::MAX), budget);
        budget.release(self.bytes);
        self.rows
    }

    /// `sort on (2 desc) in memory, up to 67108864 bytes`.
    pub(crate) fn describe(&self) -> String {
        let top = match self.keep {
            Some(k) => format!(", keeping the first {k}"),
            None => String::new(),
        };
        format!(
            "sort on {} in memory{top}, up to {} bytes",
            describe_keys(&self.keys),
            self.cap
        )
    }
}
