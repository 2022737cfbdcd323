//! What the scatter executor ([`crate::exec::scatter`]) and the transaction protocol
//! ([`crate::txn`]) need of a shard's connection: the seam that lets scatter reads, commit,
//! the decision log and recovery run against a scripted fake in unit tests.

use super::conn::TextResult;
use crate::error::ProxyError;
use bytes::Bytes;
use std::future::Future;
use tessera_protocol::response::OkPacket;
use tessera_protocol::ProtocolError;

/// A connection to one shard's server, as the commit protocol and recovery use it.
pub trait ShardConn: Send + Sized {
    /// Queues a COM_QUERY (sent by the next [`ShardConn::flush`]).
    fn queue_query(&mut self, sql: &str);
    /// Sends what is queued.
    fn flush(&mut self) -> impl Future<Output = Result<(), ProxyError>> + Send;
    /// Reads one OK/ERR answer.
    fn read_ok(&mut self) -> impl Future<Output = Result<OkPacket, ProxyError>> + Send;
    /// Runs a statement that answers with OK.
    fn simple_command(&mut self, sql: &str) -> impl Future<Output = Result<OkPacket, ProxyError>> + Send;
    /// Runs a query and decodes its text result.
    fn query_rows(&mut self, sql: &str) -> impl Future<Output = Result<TextResult, ProxyError>> + Send;
    /// The connection is unusable (it closes instead of going back to its pool).
    fn broken(&self) -> bool;
    fn mark_broken(&mut self);
    /// The connection holds an open transaction.
    fn in_transaction(&self) -> bool;
    fn set_in_transaction(&mut self, open: bool);
    /// Another connection to the same server with the same flavour and no schema (for the
    /// decision log's side work while this one holds a transaction).
    fn side(&self) -> impl Future<Output = Result<Self, ProxyError>> + Send;
    /// Reads the next packet of an answer (a result set's header, rows and end).
    fn read_packet(&mut self) -> impl Future<Output = Result<Bytes, ProxyError>> + Send;
    /// The answer broke the protocol: the connection is broken, and this is the error.
    fn lost(&mut self, e: ProtocolError) -> ProxyError;
    /// The server sends MariaDB's extended column metadata.
    fn extended_metadata(&self) -> bool;
    /// The capabilities the connection negotiated (how OK and EOF packets are laid out).
    fn capabilities(&self) -> u32;
    /// A result set's column definitions end with an EOF packet (no CLIENT_DEPRECATE_EOF).
    fn uses_eof(&self) -> bool {
        self.capabilities() & tessera_protocol::flags::CLIENT_DEPRECATE_EOF == 0
    }
}
