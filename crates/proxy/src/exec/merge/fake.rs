//! Test doubles: a shard source from a list of rows (optionally failing), counting what was
//! read, and a sink that collects rows.

use super::source::{RowSink, RowSource};
use super::MergeError;
use crate::exec::row::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Rows handed out one by one; an `Err` entry fails that read.
pub(crate) struct FakeSource {
    rows: VecDeque<Result<Vec<Value>, String>>,
    pulled: Arc<AtomicUsize>,
}

impl FakeSource {
    pub(crate) fn new(rows: Vec<Vec<Value>>) -> FakeSource {
        FakeSource {
            rows: rows.into_iter().map(Ok).collect(),
            pulled: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Fails with `message` after handing out `rows`.
    pub(crate) fn failing(rows: Vec<Vec<Value>>, message: &str) -> FakeSource {
        let mut s = FakeSource::new(rows);
        s.rows.push_back(Err(message.to_string()));
        s
    }

    /// Counts rows read from this source (shared, so it survives the source being moved).
    pub(crate) fn counter(&self) -> Arc<AtomicUsize> {
        self.pulled.clone()
    }
}

impl RowSource for FakeSource {
    async fn next_row(&mut self) -> Result<Option<Vec<Value>>, MergeError> {
        match self.rows.pop_front() {
            Some(Ok(row)) => {
                self.pulled.fetch_add(1, Ordering::SeqCst);
                Ok(Some(row))
            }
            Some(Err(m)) => Err(MergeError::Source(m)),
            None => Ok(None),
        }
    }
}

/// Collects sent rows; fails on the row numbered `fail_at` (0-based) when set.
#[derive(Default)]
pub(crate) struct VecSink {
    pub rows: Vec<Vec<Value>>,
    pub fail_at: Option<usize>,
}

impl RowSink for VecSink {
    async fn send_row(&mut self, row: &[Value]) -> Result<(), MergeError> {
        if self.fail_at == Some(self.rows.len()) {
            return Err(MergeError::Sink("client went away".into()));
        }
        self.rows.push(row.to_vec());
        Ok(())
    }
}
