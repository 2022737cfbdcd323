//! SELECT DISTINCT across shards: shards sort on every visible column, so duplicates arrive
//! next to each other and each run collapses to its first row.

use super::key::{describe_keys, key_value};
use super::spec::SortKey;
use crate::exec::row::{compare, Value};

/// The distinct stage: remembers the key values of the last row let through.
#[derive(Debug)]
pub(crate) struct Distinct {
    keys: Vec<SortKey>,
    last: Option<Vec<Value>>,
}

impl Distinct {
    pub(crate) fn new(keys: &[SortKey]) -> Distinct {
        Distinct {
            keys: keys.to_vec(),
            last: None,
        }
    }

    /// The row when it differs from the previous one on the keys (NULLs equal each other, as
    /// DISTINCT treats them).
    pub(crate) fn push(&mut self, row: Vec<Value>) -> Option<Vec<Value>> {
        let same = self.last.as_ref().is_some_and(|last| {
            self.keys
                .iter()
                .zip(last)
                .all(|(k, l)| compare(key_value(&row, k), l).is_eq())
        });
        if same {
            return None;
        }
        self.last = Some(self.keys.iter().map(|k| key_value(&row, k).clone()).collect());
        Some(row)
    }

    /// `distinct on (1, weight of 2)`.
    pub(crate) fn describe(&self) -> String {
        format!("distinct on {}", describe_keys(&self.keys))
    }
}
