//! Memory accounting for a merge: bytes held by buffered rows and group state, with the cap
//! checked where a stage could otherwise grow without bound.

use super::MergeError;

/// Bytes held now and at most, against a cap.
#[derive(Debug)]
pub(crate) struct Budget {
    cap: usize,
    held: usize,
    peak: usize,
}

impl Budget {
    pub(crate) fn new(cap: usize) -> Budget {
        Budget { cap, held: 0, peak: 0 }
    }

    /// Holds `bytes` more, or fails with [`MergeError::MemoryCap`] (holding nothing).
    pub(crate) fn hold(&mut self, bytes: usize) -> Result<(), MergeError> {
        let needed = self.held.saturating_add(bytes);
        if needed > self.cap {
            return Err(MergeError::MemoryCap { cap: self.cap, needed });
        }
        self.hold_fixed(bytes);
        Ok(())
    }

    /// Holds `bytes` that a stage needs regardless (one row per shard): counted, not capped.
    pub(crate) fn hold_fixed(&mut self, bytes: usize) {
        self.held = self.held.saturating_add(bytes);
        self.peak = self.peak.max(self.held);
    }

    pub(crate) fn release(&mut self, bytes: usize) {
        self.held = self.held.saturating_sub(bytes);
    }

    pub(crate) fn peak(&self) -> usize {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_is_checked_and_peak_kept() {
        let mut b = Budget::new(100);
        b.hold(60).unwrap();
        assert!(matches!(
            b.hold(41),
            Err(MergeError::MemoryCap { cap: 100, needed: 101 })
        ));
        b.release(60);
        b.hold_fixed(150);
        assert_eq!(b.peak(), 150);
        assert!(b.hold(1).is_err());
    }
}
