//! MySQL wire protocol codec, both directions: framing, handshake, auth scrambles, commands and responses.
//!
//! # Layout
//! - [`packet`]: framing (3-byte length, sequence id, 16 MiB split/join) over any async stream.
//! - [`codec`]: length-encoded integers and strings, a bounds-checked reader.
//! - [`flags`]: capability and server status flags.
//! - [`handshake`]: HandshakeV10, HandshakeResponse41, SSLRequest, auth switch.
//! - [`auth`]: mysql_native_password and caching_sha2_password scrambles and verification.
//! - [`command`]: the client commands, parsed without copying.
//! - [`response`]: OK / ERR / EOF packets, session-state tracking payloads.
//! - [`resultset`]: column definitions and text rows, for results Tessera builds itself.
//! - [`stmt`]: prepared-statement packets (PREPARE_OK, EXECUTE rewriting).
//! - [`binrow`]: binary-protocol result rows and temporal values' text form.
//! - [`error`]: the codec's error enum.

pub mod auth;
pub mod binrow;
pub mod codec;
pub mod command;
pub mod error;
pub mod flags;
pub mod handshake;
pub mod packet;
pub mod response;
pub mod resultset;
pub mod stmt;
pub mod whole;

pub use error::ProtocolError;
pub use packet::PacketStream;
