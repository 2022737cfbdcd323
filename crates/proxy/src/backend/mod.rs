//! Tessera's own MySQL client for backend servers: connecting and authenticating ([`connect`]),
//! one connection with its session state and prepared-statement cache ([`conn`]), and the cache
//! itself ([`stmt_cache`]). [`shard_conn`]: what the transaction protocol needs of a
//! connection (a trait, so that unit tests run the protocol against a scripted fake server,
//! `fake_shard`).

pub mod conn;
pub mod connect;
#[cfg(test)]
pub mod fake_shard;
pub mod shard_conn;
pub mod stmt_cache;

pub use conn::{BackendConn, Flavour};
pub use shard_conn::ShardConn;

use std::sync::Arc;

/// Identity of one backend server.
#[derive(Debug)]
pub struct ServerInfo {
    /// Name used in logs and errors, e.g. "main/primary".
    pub name: String,
    pub address: String,
    pub user: String,
    pub password: String,
    pub tls: bool,
}

pub type ServerRef = Arc<ServerInfo>;
