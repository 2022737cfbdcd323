//! Tessera's benchmark kit: sysbench and TPC-C, direct MariaDB vs through Tessera (and any other
//! endpoint), interleaved in one run, with CSV, a Markdown report and PNG charts.

pub mod anchors;
pub mod app;
pub mod cgroup;
pub mod charts;
pub mod child;
pub mod cpu;
pub mod error;
pub mod leg_floor;
pub mod machine;
pub mod metrics;
pub mod options;
pub mod progress;
pub mod record;
pub mod relay;
pub mod report;
pub mod runner;
pub mod sysbench;
pub mod tessera;
pub mod text_backend;
pub mod topology;
pub mod tpcc;
pub mod tpcc_bench;
pub mod tpcc_check;
pub mod tpcc_report;
pub mod tpcc_sharded;

pub use error::{BenchError, Result};
