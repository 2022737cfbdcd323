//! The single error type of the crate, [`SandboxError`].

use std::path::PathBuf;

/// Everything that can go wrong while preparing, starting, querying or stopping a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A file system or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, including the path or program involved.
        context: String,
        /// The underlying OS error.
        #[source]
        source: std::io::Error,
    },

    /// A required MariaDB program is not installed.
    #[error("program `{0}` not found in PATH, /usr/sbin or /usr/bin (run scripts/install-deps.sh)")]
    ToolNotFound(String),

    /// An external command (mariadb-install-db, cp, ...) exited unsuccessfully.
    #[error("command `{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line, for diagnostics.
        command: String,
        /// Exit status as text.
        status: String,
        /// Captured standard error (and output, when useful).
        stderr: String,
    },

    /// A SQL statement sent through the `mariadb` CLI failed.
    #[error("SQL on server {server} failed: {stderr}")]
    Sql {
        /// Server name, e.g. `s0`.
        server: String,
        /// The statement text.
        sql: String,
        /// What the client printed on standard error.
        stderr: String,
    },

    /// The server did not answer `select 1` in time.
    #[error("server {server} not ready after {secs} s; error.log tail:\n{log_tail}")]
    StartTimeout {
        /// Server name.
        server: String,
        /// How long we waited.
        secs: u64,
        /// Last lines of this start's error log.
        log_tail: String,
    },

    /// mariadbd exited while we were waiting for it to become ready.
    #[error("server {server} exited during startup ({status}); error.log tail:\n{log_tail}")]
    ExitedDuringStart {
        /// Server name.
        server: String,
        /// Exit status as text.
        status: String,
        /// Last lines of this start's error log.
        log_tail: String,
    },

    /// The TCP port could not be bound (after the allowed retries).
    #[error("server {server}: port {port} is already in use; error.log tail:\n{log_tail}")]
    PortInUse {
        /// Server name.
        server: String,
        /// The port that was busy.
        port: u16,
        /// Last lines of this start's error log.
        log_tail: String,
    },

    /// `start()` was called on a server that is still running.
    #[error("server {server} is already running (pid {pid})")]
    AlreadyRunning {
        /// Server name.
        server: String,
        /// Its process id.
        pid: u32,
    },

    /// A unix socket path would exceed the kernel limit.
    #[error("socket path {} is {len} bytes, over the {max}-byte unix socket limit: use a shorter base_dir", path.display())]
    SocketPathTooLong {
        /// The offending path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The maximum we accept.
        max: usize,
    },

    /// The options cannot be used as given.
    #[error("invalid sandbox options: {0}")]
    InvalidOptions(String),

    /// A replica did not apply the primary's transactions within the allowed time.
    #[error("replica {server} did not reach GTID position {target:?} within {waited_ms} ms (applied: {applied:?}); {last_errors}")]
    ReplicaTimeout {
        /// Replica name, e.g. `s1`.
        server: String,
        /// The GTID position waited for (the primary's `@@gtid_binlog_pos`).
        target: String,
        /// The replica's `Gtid_Slave_Pos` when the wait gave up.
        applied: String,
        /// How long we waited, in milliseconds.
        waited_ms: u64,
        /// The replica's `Last_SQL_Error` and `Last_IO_Error`, as
        /// `Last_SQL_Error: "..."; Last_IO_Error: "..."` (or why they could not be read).
        last_errors: String,
    },

    /// Replication is not in the expected state, e.g. `SHOW SLAVE STATUS` on a server that
    /// is not a replica, or output we cannot parse.
    #[error("replication on server {server}: {message}")]
    Replication {
        /// Server name.
        server: String,
        /// What is wrong.
        message: String,
    },
}

impl SandboxError {
    /// Wraps an IO error with a description of what was being done.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        SandboxError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T> = std::result::Result<T, SandboxError>;
