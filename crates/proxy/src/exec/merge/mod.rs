//! Merge stages between shard sources and the client sink (sort, limit, aggregate, distinct, having).
//!
//! A statement that spans shards is sent to each; [`run`] merges their rows so the client gets
//! what one MariaDB holding all rows would answer. The plan is a [`MergeSpec`]; its stages run
//! in this order, each in its own module:
//!
//! - `sort`: k-way merge of the shard streams on the shared ORDER BY (one row per shard held);
//! - `aggregate` (one group held; outputs in `accumulate`, `sum`, `group_concat`) or `distinct`;
//! - `having` (with `arith`);
//! - `final_sort` (the only stage that buffers rows, bounded by the memory cap in `budget`);
//! - `limit`, which stops reading the shards once enough rows went out.
//!
//! Values ([`crate::exec::row::Value`]) use exact [`decimal`]s and MariaDB's [`float`] text.

mod accumulate;
mod aggregate;
mod arith;
mod budget;
pub mod decimal;
mod distinct;
mod final_sort;
pub mod float;
mod group_concat;
mod having;
mod key;
mod limit;
mod pipeline;
mod sort;
mod source;
mod spec;
mod sum;

#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod tests;

pub use crate::error::merge::MergeError;
pub use decimal::Decimal;
pub use pipeline::{run, MergeStats};
pub use source::{RowSink, RowSource};
pub use spec::{
    AggregateSpec, ArithOp, CmpOp, Filter, MergeSpec, Operand, Output, SortBy, SortKey, DEFAULT_MEMORY_CAP, HIDDEN_BASE,
};
