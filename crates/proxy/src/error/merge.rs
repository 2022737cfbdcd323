//! The merge's error enum: shard and client failures passed through, the merge's own limits
//! and plan errors, and why a shard's row could not be decoded.

use tessera_protocol::response::ErrPacket;
use tessera_protocol::ProtocolError;
use thiserror::Error;

/// Everything that can stop a merge.
#[derive(Debug, Error)]
pub enum MergeError {
    /// A shard's own error for the statement, for the client unchanged.
    #[error("{0}")]
    Backend(ErrPacket),
    /// A shard source failed otherwise (connection lost, protocol error).
    #[error("Tessera: a shard failed during the merge: {0}")]
    Source(String),
    /// Sending to the client failed.
    #[error("Tessera: sending merged rows failed: {0}")]
    Sink(String),
    /// The client closed its connection while the shards worked.
    #[error("Tessera: the client left during the merge")]
    ClientLeft,
    #[error(transparent)]
    Row(#[from] RowError),
    /// Buffered rows or group state would exceed the merge's memory cap.
    #[error(
        "Tessera: merging shard results needs more than {cap} bytes of buffered rows \
         (would hold {needed}); add a LIMIT or a narrower ORDER BY, or raise the merge memory cap"
    )]
    MemoryCap { cap: usize, needed: usize },
    /// The plan is inconsistent (a bug in the planner, not in the statement).
    #[error("Tessera: invalid merge plan: {0}")]
    InvalidSpec(String),
    /// A shard row is narrower than the columns the plan reads.
    #[error("Tessera: a shard row has {width} columns but the merge reads {needed}")]
    ShortRow { width: usize, needed: usize },
    /// Integer arithmetic in HAVING overflowed, as MariaDB's error 1690.
    #[error("{0} value is out of range")]
    OutOfRange(&'static str),
}

/// Why a row could not be decoded.
#[derive(Debug, Error)]
pub enum RowError {
    #[error("malformed row: {0}")]
    Malformed(#[from] ProtocolError),
    #[error("column {column} (`{name}`): {text:?} is not a valid {kind}")]
    BadValue {
        column: usize,
        name: String,
        kind: &'static str,
        text: String,
    },
}
