//! Errors of the wire codec: I/O failures and malformed packets.

use thiserror::Error;

/// Everything that can go wrong while reading or decoding a packet.
#[derive(Debug, Error)]
pub enum ProtocolError {
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    #[error("connection closed by peer")]
    Closed,
    #[error("packet of {size} bytes exceeds max_allowed_packet ({max})")]
    PacketTooLarge { size: usize, max: usize },
    #[error("malformed packet: {0}")]
    Malformed(&'static str),
    #[error("unexpected sequence id {got}, expected {expected}")]
    Sequence { got: u8, expected: u8 },
}

impl ProtocolError {
    /// True when the peer simply went away (no error worth logging loudly).
    pub fn is_disconnect(&self) -> bool {
        match self {
            ProtocolError::Closed => true,
            ProtocolError::Io(e) => matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionAborted
            ),
            _ => false,
        }
    }
}

pub type Result<T> = std::result::Result<T, ProtocolError>;
