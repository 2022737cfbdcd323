//! What users send that the older suites did not: every session variable in every SET spelling, state that must not leak
//! between clients, dump and restore into shards, logical schemas named from anywhere, column references bound
//! to the tables' real columns, and KILL of any statement wherever it runs.

mod column_resolution;
mod drivers;
mod dump_restore;
mod idle_ends;
mod kill;
mod logical_names;
mod own_errors;
mod rewrites;
mod sides;
mod smaller;
mod state_leaks;
mod state_matrix;
