//! The Tessera proxy library: everything behind the `tessera` binary.
//!
//! # Layout
//! - [`server`]: listener, connection limit, graceful shutdown. [`admin`]: HTTP /metrics, /health.
//! - [`session`]: one task per client; commands, session state, pins, prepared statements.
//! - [`route`]: where a statement runs (a [`route::Plan`]); [`exec`]: forwarding backend
//!   responses to clients without decoding rows; [`catalog`]: the logical tables' columns.
//! - [`cluster`]: a group's servers, their health and read weights; [`monitor`]: checks them
//!   and follows primary changes; [`gtid`]: GTID positions for read-your-writes.
//! - [`pool`]: backend connection pools; [`backend`]: Tessera's own MySQL client.
//! - [`state`]: replayable session state and its diff; [`charset`]: handshake collations;
//!   [`collations`]: MariaDB's collation ids; [`tracking`]: the session tracking a client asked for.
//! - [`context`]: what sessions share (config snapshot, pools, registry, metrics).
//! - [`error`]: the proxy's errors and their MySQL error numbers.
//! - [`txn`]: transactions across shards: XA two-phase commit, the decision log, recovery.
//! - [`demo`]: `tessera demo` and `tessera sandbox`.

pub mod admin;
pub mod alloc;
pub mod backend;
pub mod catalog;
pub mod charset;
pub mod cluster;
pub mod collations;
pub mod context;
pub mod demo;
pub mod error;
pub mod exec;
pub mod fasthash;
pub mod generation;
pub mod gtid;
pub mod metrics;
pub mod monitor;
pub mod net;
pub mod pipeline;
pub mod pool;
pub mod registry;
pub mod reload;
pub mod route;
pub mod server;
pub mod session;
pub mod state;
pub mod tls;
pub mod topology;
pub mod tracking;
pub mod txn;
pub mod uring;
