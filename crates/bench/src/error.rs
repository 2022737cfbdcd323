//! The kit's error type: what went wrong and, where we know it, the command that fixes it.

use std::path::PathBuf;

/// Everything that can stop a benchmark run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}\n(run `tessera-bench --help` for the options)")]
    Usage(String),
    #[error("{tool} not found: {fix}")]
    MissingTool { tool: &'static str, fix: String },
    #[error("sandbox: {0}")]
    Sandbox(#[from] tessera_sandbox::SandboxError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} failed (exit {code:?}):\n{output}")]
    Command {
        what: String,
        code: Option<i32>,
        output: String,
    },
    #[error("cannot read {what} output: {why}")]
    Parse { what: &'static str, why: String },
    #[error("topology {topology} is not available yet: {why}")]
    NotAvailable { topology: String, why: String },
    #[error("Tessera: {0}")]
    Tessera(String),
    #[error("relay: {0}")]
    Relay(String),
    #[error("rows loaded through Tessera are not where the shard function puts them: {0}")]
    ShardCheck(String),
    #[error("chart {path}: {why}")]
    Chart { path: PathBuf, why: String },
    #[error("--cpu-cap: {0}")]
    CpuCap(String),
    #[error("TPC-C check through {target} failed:\n{output}")]
    TpccCheck { target: String, output: String },
}

impl BenchError {
    /// An [`BenchError::Io`] with a description of what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> BenchError {
        BenchError::Io {
            what: what.into(),
            source,
        }
    }

    /// A parse error for `what`'s output.
    pub fn parse(what: &'static str, why: impl Into<String>) -> BenchError {
        BenchError::Parse { what, why: why.into() }
    }
}

/// The kit's result type.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;
