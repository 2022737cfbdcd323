//! The proxy layer's error enum, and the one place where every error becomes a MySQL error
//! number and SQLSTATE for the client.

use tessera_protocol::response::ErrPacket;
use tessera_protocol::ProtocolError;
use thiserror::Error;

/// Everything that can fail while serving a client.
#[derive(Debug, Error)]
pub enum ProxyError {
    /// The client broke the protocol or went away: its connection is closed.
    #[error("client protocol error: {0}")]
    Client(#[from] ProtocolError),
    /// The backend's own error for a statement, passed through unchanged.
    #[error("{0}")]
    Backend(ErrPacket),
    #[error("Tessera: lost connection to backend {server} during query: {source}")]
    LostBackend { server: String, source: ProtocolError },
    #[error("Tessera: backend {server} is unavailable: {reason}")]
    BackendUnavailable { server: String, reason: String },
    #[error(
        "Tessera: no backend connection to {server} became free within {waited_ms} ms (pool.max_size = {max_size})"
    )]
    CheckoutTimeout {
        server: String,
        waited_ms: u64,
        max_size: usize,
    },
    #[error("Access denied for user '{user}'@'{host}' (using password: {})", if *.using_password { "YES" } else { "NO" })]
    AccessDenied {
        user: String,
        host: String,
        using_password: bool,
    },
    #[error("Unknown prepared statement handler ({id}) given to {command}")]
    UnknownStatement { id: u32, command: &'static str },
    #[error("Tessera does not support {0}")]
    Unsupported(String),
    #[error("Tessera: session state could not be restored on the backend: {0}")]
    StateSync(ErrPacket),
    #[error("Got a packet bigger than 'max_allowed_packet' bytes")]
    PacketTooLarge,
    #[error("Too many connections")]
    TooManyConnections,
    #[error("Unknown command")]
    UnknownCommand,
    #[error("Bad handshake")]
    BadHandshake,
    #[error("Server shutdown in progress")]
    ShuttingDown,
    #[error("You are not owner of thread {0}")]
    NotOwnerOfThread(u64),
    #[error("Unknown thread id: {0}")]
    UnknownThread(u64),
    /// A KILL interrupted the statement where no backend reported it (a pipelined lane).
    #[error("Query execution was interrupted")]
    QueryInterrupted,
    #[error("Tessera: {0}")]
    Config(String),
    /// A merge needed more memory than `sharding.merge_memory_cap` allows.
    #[error("Tessera: {0}")]
    MergeLimit(String),
    /// A construct the sharding planner refuses (the message names it).
    #[error("Tessera: {0} is not supported")]
    NotSharded(String),
    /// A sharded execution failed in a way no single backend error describes.
    #[error("Tessera: {0}")]
    Sharding(String),
    /// A transaction across shards was rolled back on every shard (the reason says why).
    #[error("XA_RBROLLBACK: Tessera rolled back the transaction on every shard: {0}")]
    TxnRolledBack(String),
    /// The decision of a two-phase COMMIT could not be learnt; recovery will apply it.
    #[error("Tessera: the outcome of COMMIT is not known yet: {0}")]
    TxnOutcomeUnknown(String),
}

/// A backend connection was lost during the statement ("Got an error reading communication packets").
pub const ER_NET_READ_ERROR: u16 = 1158;
/// The backend cannot be reached ("Unable to connect to foreign data source").
pub const ER_CONNECT_TO_FOREIGN_DATA_SOURCE: u16 = 1429;

impl ProxyError {
    /// The ERR packet a client receives for this error.
    pub fn to_err_packet(&self) -> ErrPacket {
        let (code, state) = match self {
            ProxyError::Backend(e) | ProxyError::StateSync(e) => return self.backend_packet(e),
            ProxyError::Client(ProtocolError::PacketTooLarge { .. }) | ProxyError::PacketTooLarge => (1153, "08S01"),
            ProxyError::Client(_) | ProxyError::BadHandshake => (1043, "08S01"),
            // Client-range numbers (2000-2999) in a server's ERR packet are refused by
            // libmariadb as a malformed packet: Tessera answers with server errors.
            ProxyError::LostBackend { .. } => (ER_NET_READ_ERROR, "08S01"),
            ProxyError::BackendUnavailable { .. } => (ER_CONNECT_TO_FOREIGN_DATA_SOURCE, "HY000"),
            ProxyError::CheckoutTimeout { .. } | ProxyError::TooManyConnections => (1040, "08004"),
            ProxyError::AccessDenied { .. } => (1045, "28000"),
            ProxyError::UnknownStatement { .. } => (1243, "HY000"),
            ProxyError::Unsupported(_) | ProxyError::NotSharded(_) => (1235, "42000"),
            ProxyError::UnknownCommand => (1047, "08S01"),
            ProxyError::ShuttingDown => (1053, "08S01"),
            ProxyError::NotOwnerOfThread(_) => (1095, "HY000"),
            ProxyError::UnknownThread(_) => (1094, "HY000"),
            ProxyError::QueryInterrupted => (1317, "70100"),
            ProxyError::Config(_) | ProxyError::Sharding(_) => (1105, "HY000"),
            ProxyError::MergeLimit(_) => (1038, "HY001"),
            ProxyError::TxnRolledBack(_) => (1402, "XA100"),
            ProxyError::TxnOutcomeUnknown(_) => (1180, "HY000"),
        };
        ErrPacket::new(code, state, self.to_string())
    }

    fn backend_packet(&self, e: &ErrPacket) -> ErrPacket {
        match self {
            ProxyError::StateSync(_) => ErrPacket {
                message: self.to_string(),
                ..e.clone()
            },
            _ => e.clone(),
        }
    }

    /// True when the client connection can go on after this error was reported.
    pub fn is_recoverable(&self) -> bool {
        !matches!(
            self,
            ProxyError::Client(_) | ProxyError::BadHandshake | ProxyError::PacketTooLarge
        )
    }
}

pub type Result<T> = std::result::Result<T, ProxyError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_gives_mysql_numbers() {
        let e = ProxyError::AccessDenied {
            user: "u".into(),
            host: "h".into(),
            using_password: true,
        };
        let p = e.to_err_packet();
        assert_eq!((p.code, p.sql_state_str()), (1045, "28000"));
        assert_eq!(p.message, "Access denied for user 'u'@'h' (using password: YES)");
        let dup = ErrPacket::new(1062, "23000", "Duplicate entry '1' for key 'PRIMARY'");
        assert_eq!(ProxyError::Backend(dup.clone()).to_err_packet(), dup);
        assert_eq!(ProxyError::Unsupported("x".into()).to_err_packet().code, 1235);
        let interrupted = ProxyError::QueryInterrupted.to_err_packet();
        assert_eq!(
            (
                interrupted.code,
                interrupted.sql_state_str(),
                interrupted.message.as_str()
            ),
            (1317, "70100", "Query execution was interrupted")
        );
    }
}
