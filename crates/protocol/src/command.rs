//! Client commands (the first byte of a packet in the command phase), parsed without copying.

use crate::codec::Reader;
use crate::error::{ProtocolError, Result};

pub const COM_QUIT: u8 = 0x01;
pub const COM_INIT_DB: u8 = 0x02;
pub const COM_QUERY: u8 = 0x03;
pub const COM_FIELD_LIST: u8 = 0x04;
pub const COM_STATISTICS: u8 = 0x09;
pub const COM_PROCESS_KILL: u8 = 0x0c;
pub const COM_DEBUG: u8 = 0x0d;
pub const COM_PING: u8 = 0x0e;
pub const COM_CHANGE_USER: u8 = 0x11;
pub const COM_STMT_PREPARE: u8 = 0x16;
pub const COM_STMT_EXECUTE: u8 = 0x17;
pub const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
pub const COM_STMT_CLOSE: u8 = 0x19;
pub const COM_STMT_RESET: u8 = 0x1a;
pub const COM_SET_OPTION: u8 = 0x1b;
pub const COM_STMT_FETCH: u8 = 0x1c;
pub const COM_RESET_CONNECTION: u8 = 0x1f;

/// One client command, borrowing from the packet payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command<'a> {
    Quit,
    InitDb(&'a [u8]),
    Query(&'a [u8]),
    FieldList { table: &'a [u8], wildcard: &'a [u8] },
    Statistics,
    ProcessKill(u32),
    Debug,
    Ping,
    ChangeUser(&'a [u8]),
    StmtPrepare(&'a [u8]),
    StmtExecute { stmt_id: u32, payload: &'a [u8] },
    StmtSendLongData { stmt_id: u32, param: u16, data: &'a [u8] },
    StmtClose(u32),
    StmtReset(u32),
    SetOption(u16),
    StmtFetch { stmt_id: u32, rows: u32 },
    ResetConnection,
    Unknown(u8),
}

impl<'a> Command<'a> {
    /// Parses a command packet; a truncated packet is an error (the connection gets closed).
    pub fn parse(payload: &'a [u8]) -> Result<Self> {
        let (&code, rest) = payload
            .split_first()
            .ok_or(ProtocolError::Malformed("empty command packet"))?;
        let mut r = Reader::new(rest);
        Ok(match code {
            COM_QUIT => Command::Quit,
            COM_INIT_DB => Command::InitDb(rest),
            COM_QUERY => Command::Query(rest),
            COM_FIELD_LIST => {
                let table = r.null_terminated_or_eof();
                Command::FieldList {
                    table,
                    wildcard: r.rest(),
                }
            }
            COM_STATISTICS => Command::Statistics,
            COM_PROCESS_KILL => Command::ProcessKill(r.u32()?),
            COM_DEBUG => Command::Debug,
            COM_PING => Command::Ping,
            COM_CHANGE_USER => Command::ChangeUser(rest),
            COM_STMT_PREPARE => Command::StmtPrepare(rest),
            COM_STMT_EXECUTE => Command::StmtExecute {
                stmt_id: r.u32()?,
                payload,
            },
            COM_STMT_SEND_LONG_DATA => Command::StmtSendLongData {
                stmt_id: r.u32()?,
                param: r.u16()?,
                data: r.rest(),
            },
            COM_STMT_CLOSE => Command::StmtClose(r.u32()?),
            COM_STMT_RESET => Command::StmtReset(r.u32()?),
            COM_SET_OPTION => Command::SetOption(r.u16()?),
            COM_STMT_FETCH => Command::StmtFetch {
                stmt_id: r.u32()?,
                rows: r.u32()?,
            },
            COM_RESET_CONNECTION => Command::ResetConnection,
            other => Command::Unknown(other),
        })
    }

    /// A short name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Quit => "quit",
            Command::InitDb(_) => "init_db",
            Command::Query(_) => "query",
            Command::FieldList { .. } => "field_list",
            Command::Statistics => "statistics",
            Command::ProcessKill(_) => "process_kill",
            Command::Debug => "debug",
            Command::Ping => "ping",
            Command::ChangeUser(_) => "change_user",
            Command::StmtPrepare(_) => "stmt_prepare",
            Command::StmtExecute { .. } => "stmt_execute",
            Command::StmtSendLongData { .. } => "stmt_send_long_data",
            Command::StmtClose(_) => "stmt_close",
            Command::StmtReset(_) => "stmt_reset",
            Command::SetOption(_) => "set_option",
            Command::StmtFetch { .. } => "stmt_fetch",
            Command::ResetConnection => "reset_connection",
            Command::Unknown(_) => "unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_rejects_truncation() {
        assert_eq!(Command::parse(b"\x03SELECT 1").unwrap(), Command::Query(b"SELECT 1"));
        assert_eq!(
            Command::parse(&[COM_STMT_CLOSE, 7, 0, 0, 0]).unwrap(),
            Command::StmtClose(7)
        );
        assert!(Command::parse(&[COM_STMT_CLOSE, 7]).is_err());
        assert!(Command::parse(&[]).is_err());
        assert_eq!(Command::parse(&[0x99]).unwrap(), Command::Unknown(0x99));
        let fetch = Command::parse(&[COM_STMT_FETCH, 1, 0, 0, 0, 10, 0, 0, 0]).unwrap();
        assert_eq!(fetch, Command::StmtFetch { stmt_id: 1, rows: 10 });
    }
}
