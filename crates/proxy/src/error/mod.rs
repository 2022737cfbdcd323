//! The proxy layer's error enum, and the one place where every error becomes a MySQL error
//! number and SQLSTATE for the client. The layers' own enums live beside it ([`merge`],
//! [`plan`]), so that this module depends on no layer and every layer can use it.

pub mod merge;
pub mod plan;

use merge::MergeError;
use plan::{PlanError, ShardError};
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
    /// An error of MariaDB's own that Tessera raises where the server would (it answers the
    /// statement itself, or refuses it before any server sees it).
    #[error(transparent)]
    Server(#[from] ServerError),
    /// A merge of shard results failed (a shard's own error is passed through unchanged).
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// A shard-key value no shard takes, or not of the key's type.
    #[error(transparent)]
    ShardKey(#[from] ShardError),
    /// The sharding planner's refusal or failure.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// MariaDB's errors that Tessera raises itself, with the server's text; their numbers and
/// SQLSTATEs are given in [`ServerError::code`].
#[derive(Debug, Error)]
pub enum ServerError {
    #[error("KILL does not support subqueries or stored functions")]
    KillOfStoredCode,
    #[error("Connection was killed")]
    ConnectionKilled,
    #[error("Got packets out of order")]
    PacketsOutOfOrder,
    #[error("Unknown system variable '{0}'")]
    UnknownSystemVariable(String),
    /// `hint` follows the server's text (Tessera's own variables name their values).
    #[error("Variable '{name}' can't be set to the value of '{value}'{hint}")]
    WrongValueForVariable {
        name: String,
        value: String,
        hint: &'static str,
    },
    #[error("Table '{schema}.{table}' doesn't exist")]
    NoSuchTable { schema: String, table: String },
    #[error("Can't create database '{0}'; database exists")]
    DatabaseExists(String),
    #[error("Can't drop database '{0}'; database doesn't exist")]
    NoSuchDatabase(String),
    #[error("Can't create more than max_prepared_stmt_count statements (current value: {0})")]
    TooManyPreparedStatements(usize),
    /// A COM_STMT_EXECUTE the server cannot read (no parameter types ever sent, ...).
    #[error("Incorrect arguments to {0}")]
    IncorrectArguments(&'static str),
    #[error("The statement ({0}) has no open cursor.")]
    NoOpenCursor(u32),
    #[error("You have an error in your SQL syntax: several statements in one query need CLIENT_MULTI_STATEMENTS")]
    MultiStatementsOff,
    #[error(
        "The used command is not allowed because the MariaDB server or client has disabled the local infile capability"
    )]
    LocalInfileDisabled,
    #[error("XAER_NOTA: Unknown XID")]
    XaUnknownXid,
    #[error("XAER_OUTSIDE: Some work is done outside global transaction")]
    XaOutside,
    /// The shards did not all answer a scatter within its deadline (as max_statement_time).
    #[error("Query execution was interrupted (the shards did not answer within server.scatter_deadline_ms = {0})")]
    ScatterDeadline(u128),
    /// A DDL statement over shards failed on some and succeeded on others.
    #[error("Tessera: the DDL failed on {failed} and succeeded on shards {done}")]
    DdlPartlyApplied { failed: String, done: String },
}

impl ServerError {
    /// The server's error number and SQLSTATE.
    pub fn code(&self) -> (u16, &'static str) {
        match self {
            ServerError::KillOfStoredCode => (1970, "42000"),
            ServerError::ConnectionKilled => (1927, "70100"),
            ServerError::PacketsOutOfOrder => (1156, "08S01"),
            ServerError::UnknownSystemVariable(_) => (1193, "HY000"),
            ServerError::WrongValueForVariable { .. } => (1231, "42000"),
            ServerError::NoSuchTable { .. } => (1146, "42S02"),
            ServerError::DatabaseExists(_) => (1007, "HY000"),
            ServerError::NoSuchDatabase(_) => (1008, "HY000"),
            ServerError::TooManyPreparedStatements(_) => (1461, "42000"),
            ServerError::IncorrectArguments(_) => (1210, "HY000"),
            ServerError::NoOpenCursor(_) => (1421, "HY000"),
            ServerError::MultiStatementsOff => (1064, "42000"),
            ServerError::LocalInfileDisabled => (4166, "HY000"),
            ServerError::XaUnknownXid => (1397, "XAE04"),
            ServerError::XaOutside => (1400, "XAE09"),
            ServerError::ScatterDeadline(_) => (1969, "70100"),
            ServerError::DdlPartlyApplied { .. } => (1180, "HY000"),
        }
    }
}

impl ShardError {
    /// The MySQL error number and SQLSTATE a server gives for such a value.
    pub fn mysql_code(&self) -> (u16, &'static str) {
        match self {
            ShardError::NoPartition { .. } => (1526, "HY000"),
            ShardError::IncorrectInteger { .. } | ShardError::IncorrectString { .. } => (1366, "22007"),
            ShardError::OutOfRange { .. } => (1264, "22003"),
            ShardError::IncorrectDate { .. } => (1292, "22007"),
            ShardError::ShardCount { .. } => (1105, "HY000"),
        }
    }
}

/// A merge error's number and SQLSTATE (a shard's own error keeps its own).
fn merge_code(e: &MergeError) -> (u16, &'static str) {
    match e {
        MergeError::Backend(p) => (p.code, "HY000"),
        MergeError::MemoryCap { .. } => (1038, "HY001"),
        MergeError::OutOfRange(_) => (ER_DATA_OUT_OF_RANGE, "22003"),
        MergeError::Source(_) | MergeError::Sink(_) | MergeError::ClientLeft | MergeError::Row(_) => (1105, "HY000"),
        MergeError::InvalidSpec(_) | MergeError::ShortRow { .. } => (1105, "HY000"),
    }
}

/// A planner error's number and SQLSTATE: refusals are 1235 (ER_NOT_SUPPORTED_YET).
fn plan_code(e: &PlanError) -> (u16, &'static str) {
    match e {
        PlanError::Refused(_) | PlanError::ValuesOnSeveralShards => (1235, "42000"),
        PlanError::Key(k) => k.mysql_code(),
        PlanError::MissingValue(_) => (1210, "HY000"),
    }
}

/// A backend connection was lost during the statement ("Got an error reading communication packets").
pub const ER_NET_READ_ERROR: u16 = 1158;
/// The backend cannot be reached ("Unable to connect to foreign data source").
pub const ER_CONNECT_TO_FOREIGN_DATA_SOURCE: u16 = 1429;
/// "BIGINT value is out of range".
pub const ER_DATA_OUT_OF_RANGE: u16 = 1690;

impl ProxyError {
    /// The ERR packet a client receives for this error.
    pub fn to_err_packet(&self) -> ErrPacket {
        let (code, state) = match self {
            ProxyError::Backend(e) | ProxyError::StateSync(e) => return self.backend_packet(e),
            ProxyError::Merge(MergeError::Backend(e)) => return e.clone(),
            ProxyError::Server(e) => e.code(),
            ProxyError::Merge(e) => merge_code(e),
            ProxyError::ShardKey(e) => e.mysql_code(),
            ProxyError::Plan(e) => plan_code(e),
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
