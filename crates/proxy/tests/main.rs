//! Every integration test of the proxy in one test binary (each binary links the whole proxy,
//! so one binary builds and links once): one module per suite, `cargo test --test integration
//! SUITE::` runs one of them (`xa_faults::`, `sharding_diff::`, `user_paths::state_leaks::` ...).
//! Each test starts its own servers and proxy (own data directories, free ports), so the
//! suites run side by side.

mod common;

mod admin;
mod begin;
mod cached_metadata;
mod cli;
mod client_view;
mod commands;
mod faults;
mod fleet;
mod fleet_lb;
mod golden_plans;
mod park_sends;
mod pipeline;
mod reload;
mod rw_split;
mod session_state;
mod shard_functions;
mod sharding;
mod sharding_diff;
mod tls_auth;
mod user_paths;
mod xa;
mod xa_faults;
