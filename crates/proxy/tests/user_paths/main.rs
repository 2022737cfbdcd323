//! What users send that the older suites did not, in one test binary (each binary links the
//! whole proxy): every session variable in every SET spelling, state that must not leak
//! between clients, dump and restore into shards, logical schemas named from anywhere, and
//! KILL of any statement wherever it runs.

#[path = "../common/mod.rs"]
mod common;

mod dump_restore;
mod kill;
mod logical_names;
mod sides;
mod state_leaks;
mod state_matrix;
