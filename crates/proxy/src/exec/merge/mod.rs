//! Merge stages between shard sources and the client sink (sort, limit, aggregate, distinct, having).

pub mod decimal;
pub mod float;
