//! LIMIT and OFFSET, applied last: rows before the offset are dropped, and once the limit is
//! reached the merge stops reading shards.

/// The limit stage.
#[derive(Debug)]
pub(crate) struct Limit {
    offset: u64,
    limit: Option<u64>,
    skipped: u64,
    sent: u64,
}

impl Limit {
    pub(crate) fn new(offset: u64, limit: Option<u64>) -> Limit {
        Limit {
            offset,
            limit,
            skipped: 0,
            sent: 0,
        }
    }

    /// True when the next output row should go to the client.
    pub(crate) fn admit(&mut self) -> bool {
        if self.done() {
            return false;
        }
        if self.skipped < self.offset {
            self.skipped += 1;
            return false;
        }
        self.sent += 1;
        true
    }

    /// The rows that reached this stage, skipped ones included, up to `offset + limit`:
    /// MariaDB's FOUND_ROWS() after the statement.
    pub(crate) fn counted(&self) -> u64 {
        self.skipped + self.sent
    }

    /// True once `limit` rows went out: nothing more is needed.
    pub(crate) fn done(&self) -> bool {
        self.limit.is_some_and(|l| self.sent >= l)
    }

    /// `offset + limit`: the most rows a sort before this stage must keep.
    pub(crate) fn needed(&self) -> Option<usize> {
        self.limit
            .map(|l| usize::try_from(l.saturating_add(self.offset)).unwrap_or(usize::MAX))
    }

    /// `limit 10 offset 20`; None when there is neither.
    pub(crate) fn describe(&self) -> Option<String> {
        match (self.limit, self.offset) {
            (None, 0) => None,
            (None, o) => Some(format!("offset {o}")),
            (Some(l), 0) => Some(format!("limit {l}")),
            (Some(l), o) => Some(format!("limit {l} offset {o}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_then_limit() {
        let mut l = Limit::new(2, Some(2));
        let admitted: Vec<bool> = (0..6).map(|_| l.admit()).collect();
        assert_eq!(admitted, [false, false, true, true, false, false]);
        assert!(l.done());
        assert_eq!(l.needed(), Some(4));
        assert_eq!(l.describe().as_deref(), Some("limit 2 offset 2"));
        assert!(Limit::new(0, Some(0)).done());
        assert_eq!(Limit::new(0, None).describe(), None);
        assert_eq!(Limit::new(3, None).describe().as_deref(), Some("offset 3"));
    }
}
