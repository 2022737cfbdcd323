//! The Tessera proxy library: everything behind the `tessera` binary.
//!
//! # Layout
//! - [`server`]: listener, connection limit, graceful shutdown. [`admin`]: HTTP /metrics,
//!   /health, /status, POST /reload, and their rendering. [`metrics`]: the counters.
//! - [`session`]: one task per client; commands, session state, pins, prepared statements,
//!   its connections (one binding: none, one, one per shard) and its transaction state.
//! - [`route`]: where a statement runs (a [`route::Plan`]; the sharding planner in
//!   [`route::sharded`], whose `routed` gives a statement's whole route); [`exec`]: forwarding
//!   backend responses to clients without decoding rows, scatter reads and merging shard
//!   results, the sharded executor (`exec::sharded`: reads, writes, DDL, LOAD DATA through the
//!   session's shard connections), AUTO_INCREMENT sequences of sharded tables;
//!   [`catalog`]: the logical tables' columns; [`topology`]: logical schemas, their shards,
//!   table rules and shard functions.
//! - [`cluster`]: a group's servers, their health and read weights; [`monitor`]: checks them
//!   and follows primary changes; [`gtid`]: GTID positions for read-your-writes.
//! - [`pool`]: backend connection pools, and [`pool::pipeline`]: lanes that share a backend
//!   connection between sessions' pure reads; [`backend`]: Tessera's own MySQL client; [`net`]: the one
//!   stream type (TCP, io_uring sends, unix socket, TLS, memory); [`uring`]: io_uring sends;
//!   [`tls`]: TLS acceptor and backend connector.
//! - [`state`]: replayable session state and its diff; [`charset`]: handshake collations;
//!   [`collations`]: MariaDB's collation ids; [`tracking`]: the session tracking a client asked for.
//! - [`context`]: what sessions share for the process's life (the current generation,
//!   registry, metrics, io_uring); [`generation`]: one configuration generation (groups and
//!   pools, accounts, topology, plan cache); [`reload`]: the next generation from the file;
//!   [`registry`]: live sessions by id, for KILL and the process list.
//! - [`fleet`]: many proxies as one service: the shared configuration's versions in etcd,
//!   following the head as the next generation, membership under a lease, `tessera ctl`.
//! - [`error`]: the proxy's errors, the merge's and the planner's, and their MySQL error
//!   numbers (the one mapping).
//! - [`txn`]: transactions across shards: XA two-phase commit, the decision log, recovery
//!   (run from the context by `context::spawn_recovery`).
//!
//! The modules' dependencies point one way (no cycles among them): `scripts/module-deps.py
//! --check` fails on a cycle, and `make lint` runs it.
//! - [`demo`]: `tessera demo` and `tessera sandbox`.
//! - [`alloc`]: the allocator and boxed futures; [`fasthash`]: a hasher for Tessera's own ids.

pub mod admin;
pub mod alloc;
pub mod backend;
pub mod catalog;
pub mod charset;
pub mod cluster;
pub mod collations;
pub mod context;
pub mod demo;
pub mod drain;
pub mod error;
pub mod exec;
pub mod fasthash;
pub mod fleet;
pub mod generation;
pub mod gtid;
pub mod metrics;
pub mod monitor;
pub mod net;
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
