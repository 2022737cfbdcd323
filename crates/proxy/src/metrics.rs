//! The process's counters and the pin reasons they are kept by (rendered by the admin
//! endpoint, `admin/exposition.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Reasons a session is pinned to one backend connection (also the metric label).
pub const PIN_REASONS: [&str; 15] = [
    "temporary_table",
    "user_lock",
    "lock_tables",
    "found_rows",
    "cursor",
    "xa",
    "next_transaction",
    "sql_prepare",
    "handler",
    "diagnostics",
    "rand_seed",
    "auto_is_null",
    "backup",
    "optimizer_trace",
    "unseen_state",
];

/// Process-wide counters (owned by the process context, not global).
#[derive(Debug, Default)]
pub struct Metrics {
    pub client_connections: AtomicU64,
    pub client_connections_total: AtomicU64,
    pub client_auth_failures: AtomicU64,
    pub queries: AtomicU64,
    pub prepared_executes: AtomicU64,
    pub query_errors: AtomicU64,
    pub state_syncs: AtomicU64,
    pub backend_lost: AtomicU64,
    /// Configuration reloads that became a generation, and those refused.
    pub reloads: AtomicU64,
    pub reloads_refused: AtomicU64,
    pub pins: [AtomicU64; PIN_REASONS.len()],
    /// Transactions on sharded schemas committed in one phase / with XA two-phase commit.
    pub commits_one_phase: AtomicU64,
    pub commits_two_phase: AtomicU64,
    /// Two-phase transactions rolled back (a branch failed before the decision).
    pub xa_rolled_back: AtomicU64,
    /// Branches a COMMIT decision left to recovery (their server could not be reached).
    pub xa_left_to_recovery: AtomicU64,
    /// Branches recovery committed / rolled back.
    pub xa_recovered_commit: AtomicU64,
    pub xa_recovered_rollback: AtomicU64,
    /// Branches in doubt after the last recovery scan (gauge).
    pub xa_in_doubt: AtomicU64,
    /// Completed recovery scans.
    pub xa_recovery_scans: AtomicU64,
    /// Statements answered through a pipelined lane, the lane writes that sent them, and
    /// pipelined statements run again on a connection of their own (warnings, errors, bound).
    pub pipelined: AtomicU64,
    pub pipeline_writes: AtomicU64,
    pub pipeline_reruns: AtomicU64,
    /// COMMIT/ROLLBACK of transactions that only read, answered at once and sent with the
    /// connection's next command.
    pub queued_transaction_ends: AtomicU64,
    /// Of those, the ones a deferred BEGIN on the same connection made unneeded (a BEGIN
    /// commits the open transaction itself).
    pub transaction_ends_folded: AtomicU64,
    /// LAST_INSERT_ID() reads that cost a round trip of their own.
    pub last_insert_id_round_trips: AtomicU64,
    /// Plain `SELECT LAST_INSERT_ID()` answered from the session's known value.
    pub last_insert_id_answered: AtomicU64,
}

impl Metrics {
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn pinned(&self, reason: &str) {
        if let Some(i) = PIN_REASONS.iter().position(|r| *r == reason) {
            Self::inc(&self.pins[i]);
        }
    }
}
