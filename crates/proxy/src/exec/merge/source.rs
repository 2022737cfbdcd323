//! Where merged rows come from and go: one [`RowSource`] per shard, one [`RowSink`] for the
//! client.

use super::MergeError;
use crate::exec::row::Value;
use std::future::Future;

/// One shard's rows, in the order the plan promised. Implement with `async fn next_row`.
///
/// `&mut S` is a source too: pass `Vec<&mut S>` to [`super::run`] to keep the sources after the
/// merge, e.g. to drain or cancel what a LIMIT left unread before reusing the connections.
pub trait RowSource {
    /// The next row, or `None` at the end of the shard's result.
    fn next_row(&mut self) -> impl Future<Output = Result<Option<Vec<Value>>, MergeError>> + Send;
}

/// The client side of a merge. Implement with `async fn send_row`.
pub trait RowSink {
    /// Sends one row (already cut to the visible columns).
    fn send_row(&mut self, row: &[Value]) -> impl Future<Output = Result<(), MergeError>> + Send;

    /// Completes when the client has gone (its connection closed): the merge then stops
    /// waiting for the shards. Never, by default. Cancel-safe.
    fn client_left(&mut self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }
}

impl<S: RowSource + Send> RowSource for &mut S {
    fn next_row(&mut self) -> impl Future<Output = Result<Option<Vec<Value>>, MergeError>> + Send {
        (**self).next_row()
    }
}
