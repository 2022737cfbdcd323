//! Transactions across shards. A session's transaction starts as a plain transaction on the
//! first shard it touches (the coordinator); every other shard it touches joins as an XA
//! branch. COMMIT is one-phase when at most one branch wrote, else two-phase with the decision
//! made durable in the coordinator's own transaction ([`commit`], [`decision`]). [`recovery`]
//! resolves the branches a lost process or server left prepared.

pub mod commit;
pub mod decision;
pub mod failpoints;
pub mod recovery;
#[cfg(test)]
mod tests;
pub mod xid;

use std::collections::{BTreeMap, BTreeSet};
use xid::Xid;

/// The shards a session's open transaction spans and what it did on them.
#[derive(Debug, Default)]
pub struct ShardTxn {
    /// The client's START TRANSACTION, not sent yet: the first shard touched gets it.
    pub pending_begin: Option<String>,
    /// The first shard touched: a plain transaction whose COMMIT carries the decision.
    pub coordinator: Option<usize>,
    /// The other shards touched: XA branches.
    pub branches: BTreeMap<usize, Xid>,
    /// Shards that ran a statement that may have written.
    pub wrote: BTreeSet<usize>,
    /// The transaction's gtrid, from its first XA branch on.
    pub gtrid: Option<String>,
}

impl ShardTxn {
    /// No transaction.
    pub const EMPTY: ShardTxn = ShardTxn {
        pending_begin: None,
        coordinator: None,
        branches: BTreeMap::new(),
        wrote: BTreeSet::new(),
        gtrid: None,
    };

    /// Nothing begun, touched or noted.
    pub fn is_empty(&self) -> bool {
        !self.is_open() && self.wrote.is_empty() && self.gtrid.is_none()
    }

    /// A transaction is open (begun, or holding a shard).
    pub fn is_open(&self) -> bool {
        self.pending_begin.is_some() || self.coordinator.is_some() || !self.branches.is_empty()
    }

    /// The transaction holds more than one shard.
    pub fn spans_shards(&self) -> bool {
        !self.branches.is_empty()
    }

    /// Forgets the transaction (after COMMIT or ROLLBACK).
    pub fn clear(&mut self) {
        *self = ShardTxn::default();
    }
}
