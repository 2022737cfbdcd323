//! OK, ERR and EOF packets with status flags and session-state tracking payloads.

use crate::codec::{put_lenenc_bytes, put_lenenc_int, Reader};
use crate::error::{ProtocolError, Result};
use crate::flags::*;
use bytes::{BufMut, BytesMut};

/// First byte of an OK packet.
pub const OK_HEADER: u8 = 0x00;
/// First byte of an EOF packet (and of an OK packet that ends a result set with DEPRECATE_EOF).
pub const EOF_HEADER: u8 = 0xfe;
/// First byte of an ERR packet.
pub const ERR_HEADER: u8 = 0xff;
/// First byte of a LOCAL INFILE request.
pub const LOCAL_INFILE_HEADER: u8 = 0xfb;

pub fn is_ok(p: &[u8]) -> bool {
    p.first() == Some(&OK_HEADER)
}

pub fn is_err(p: &[u8]) -> bool {
    p.first() == Some(&ERR_HEADER)
}

/// An EOF packet (or an OK packet with the 0xFE header): short and starting with 0xFE.
pub fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&EOF_HEADER) && p.len() < 0xff_ffff && p.len() < 9
}

/// An OK packet with the 0xFE header that terminates a result set under CLIENT_DEPRECATE_EOF.
pub fn is_result_end_ok(p: &[u8]) -> bool {
    p.first() == Some(&EOF_HEADER) && p.len() < 0xff_ffff
}

/// A decoded OK packet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OkPacket {
    pub header: u8,
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
    pub info: Vec<u8>,
    /// Raw session_state_info bytes (present when SERVER_SESSION_STATE_CHANGED is set).
    pub session_state: Vec<u8>,
}

impl OkPacket {
    pub fn parse(payload: &[u8], capabilities: u32) -> Result<Self> {
        let mut r = Reader::new(payload);
        let header = r.u8()?;
        let affected_rows = r.lenenc_int()?;
        let last_insert_id = r.lenenc_int()?;
        let status = r.u16()?;
        let warnings = r.u16()?;
        let mut ok = OkPacket {
            header,
            affected_rows,
            last_insert_id,
            status,
            warnings,
            ..Default::default()
        };
        if capabilities & CLIENT_SESSION_TRACK != 0 {
            if !r.is_empty() {
                ok.info = r.lenenc_bytes()?.to_vec();
            }
            if status & SERVER_SESSION_STATE_CHANGED != 0 && !r.is_empty() {
                skip_state_length_padding(&mut r);
                ok.session_state = r.lenenc_bytes()?.to_vec();
            }
        } else if !r.is_empty() {
            let rest = r.clone().rest().to_vec();
            ok.info = r.lenenc_bytes().map(<[u8]>::to_vec).unwrap_or(rest);
        }
        Ok(ok)
    }

    pub fn encode(&self, out: &mut BytesMut, capabilities: u32) {
        out.put_u8(self.header);
        put_lenenc_int(out, self.affected_rows);
        put_lenenc_int(out, self.last_insert_id);
        let tracked = capabilities & CLIENT_SESSION_TRACK != 0;
        let mut status = self.status;
        if !tracked || self.session_state.is_empty() {
            status &= !SERVER_SESSION_STATE_CHANGED;
        }
        out.put_u16_le(status);
        out.put_u16_le(self.warnings);
        if tracked {
            if !self.info.is_empty() || status & SERVER_SESSION_STATE_CHANGED != 0 {
                put_lenenc_bytes(out, &self.info);
            }
            if status & SERVER_SESSION_STATE_CHANGED != 0 {
                put_lenenc_bytes(out, &self.session_state);
            }
        } else if !self.info.is_empty() {
            // The protocol docs say string<EOF>, but MySQL and MariaDB send it length-encoded
            // and drivers (Connector/J) read it that way.
            put_lenenc_bytes(out, &self.info);
        }
    }

    /// The session-state changes this OK reports.
    pub fn session_changes(&self) -> Result<Vec<SessionChange>> {
        parse_session_state(&self.session_state)
    }
}

/// One entry of an OK packet's session-state information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChange {
    SystemVariable { name: String, value: String },
    Schema(String),
    StateChanged,
    Gtids(Vec<u8>),
    TransactionCharacteristics(String),
    TransactionState(String),
    Unknown(u8),
}

/// MariaDB reserves the one-byte length of session_state_info by appending the character NUL
/// in the database's character set: under a `ucs2`, `utf16` or `utf32` default database that is
/// two or four bytes, and the length goes into the last one. The zeros before it are padding:
/// nothing follows session_state_info in an OK packet, so a zero length with bytes behind it is one.
fn skip_state_length_padding(r: &mut Reader<'_>) {
    let mut ahead = r.clone();
    for _ in 0..3 {
        match ahead.u8() {
            Ok(0) if !ahead.is_empty() => *r = ahead.clone(),
            _ => break,
        }
    }
}

/// Decodes session_state_info: a sequence of (type, length-encoded data).
pub fn parse_session_state(raw: &[u8]) -> Result<Vec<SessionChange>> {
    let mut r = Reader::new(raw);
    let mut out = Vec::new();
    while !r.is_empty() {
        let kind = r.u8()?;
        let mut d = Reader::new(r.lenenc_bytes()?);
        out.push(match kind {
            SESSION_TRACK_SYSTEM_VARIABLES => {
                let name = text(d.lenenc_bytes()?);
                let value = text(d.lenenc_bytes()?);
                SessionChange::SystemVariable { name, value }
            }
            SESSION_TRACK_SCHEMA => SessionChange::Schema(text(d.lenenc_bytes()?)),
            SESSION_TRACK_STATE_CHANGE => SessionChange::StateChanged,
            SESSION_TRACK_GTIDS => SessionChange::Gtids(d.rest().to_vec()),
            SESSION_TRACK_TRANSACTION_CHARACTERISTICS => {
                SessionChange::TransactionCharacteristics(text(d.lenenc_bytes()?))
            }
            SESSION_TRACK_TRANSACTION_STATE => SessionChange::TransactionState(text(d.lenenc_bytes()?)),
            other => SessionChange::Unknown(other),
        });
    }
    Ok(out)
}

/// The entries of session_state_info `raw` for which `keep` is true, copied unchanged.
pub fn retain_session_state(raw: &[u8], mut keep: impl FnMut(&SessionChange) -> bool) -> Result<Vec<u8>> {
    let mut r = Reader::new(raw);
    let mut out = Vec::with_capacity(raw.len());
    while !r.is_empty() {
        let start = raw.len() - r.remaining();
        r.u8()?;
        r.lenenc_bytes()?;
        let entry = &raw[start..raw.len() - r.remaining()];
        if parse_session_state(entry)?.first().is_some_and(&mut keep) {
            out.extend_from_slice(entry);
        }
    }
    Ok(out)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A decoded ERR packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrPacket {
    pub code: u16,
    pub sql_state: [u8; 5],
    pub message: String,
}

impl ErrPacket {
    pub fn new(code: u16, sql_state: &str, message: impl Into<String>) -> Self {
        let mut s = [b'H', b'Y', b'0', b'0', b'0'];
        if sql_state.len() == 5 {
            s.copy_from_slice(sql_state.as_bytes());
        }
        ErrPacket {
            code,
            sql_state: s,
            message: message.into(),
        }
    }

    pub fn parse(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        if r.u8()? != ERR_HEADER {
            return Err(ProtocolError::Malformed("not an ERR packet"));
        }
        let code = r.u16()?;
        let mut sql_state = *b"HY000";
        if r.remaining() >= 6 && payload.get(3) == Some(&b'#') {
            r.skip(1)?;
            sql_state.copy_from_slice(r.take(5)?);
        }
        Ok(ErrPacket {
            code,
            sql_state,
            message: text(r.rest()),
        })
    }

    pub fn encode(&self, out: &mut BytesMut) {
        out.put_u8(ERR_HEADER);
        out.put_u16_le(self.code);
        out.put_u8(b'#');
        out.put_slice(&self.sql_state);
        out.put_slice(self.message.as_bytes());
    }

    pub fn sql_state_str(&self) -> &str {
        std::str::from_utf8(&self.sql_state).unwrap_or("HY000")
    }
}

impl std::fmt::Display for ErrPacket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ERROR {} ({}): {}", self.code, self.sql_state_str(), self.message)
    }
}

/// Writes a classic EOF packet.
pub fn encode_eof(out: &mut BytesMut, warnings: u16, status: u16) {
    out.put_u8(EOF_HEADER);
    out.put_u16_le(warnings);
    out.put_u16_le(status);
}

/// (warnings, status) of an EOF packet, or of an OK packet with the 0xFE header.
pub fn parse_eof(payload: &[u8], capabilities: u32) -> Result<(u16, u16)> {
    if payload.len() >= 5 && payload.len() < 9 && capabilities & CLIENT_DEPRECATE_EOF == 0 {
        let mut r = Reader::new(&payload[1..]);
        return Ok((r.u16()?, r.u16()?));
    }
    if payload.len() == 5 {
        let mut r = Reader::new(&payload[1..]);
        return Ok((r.u16()?, r.u16()?));
    }
    let ok = OkPacket::parse(payload, capabilities)?;
    Ok((ok.warnings, ok.status))
}

/// Writes the packet that ends a result set in the client's dialect: EOF, or OK with 0xFE.
pub fn encode_result_end(out: &mut BytesMut, warnings: u16, status: u16, capabilities: u32) {
    if capabilities & CLIENT_DEPRECATE_EOF != 0 {
        let ok = OkPacket {
            header: EOF_HEADER,
            status,
            warnings,
            ..Default::default()
        };
        ok.encode(out, capabilities);
    } else {
        encode_eof(out, warnings, status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes MariaDB 10.11 sent for `USE dx` and `DROP DATABASE dx` while the default database
    /// had character set ucs2 (`SET character_set_server = ucs2` before `CREATE DATABASE dx`):
    /// one zero byte before the length of session_state_info.
    #[test]
    fn state_info_padded_under_a_ucs2_database_is_read() {
        let caps = crate::flags::CLIENT_PROTOCOL_41 | crate::flags::CLIENT_SESSION_TRACK;
        let use_db = [0, 0, 0, 2, 64, 0, 0, 0, 0, 8, 1, 3, 2, b'd', b'x', 2, 1, b'1'];
        let ok = OkPacket::parse(&use_db, caps).unwrap();
        assert_eq!(
            ok.session_changes().unwrap(),
            [SessionChange::Schema("dx".into()), SessionChange::StateChanged]
        );
        let mut drop_db = vec![0, 1, 0, 2, 65, 0, 0, 0, 0, 29, 0, 24, 9];
        drop_db.extend_from_slice(b"last_gtid");
        drop_db.push(13);
        drop_db.extend_from_slice(b"0-87072770-63");
        drop_db.extend_from_slice(&[1, 1, 0]);
        let changes = OkPacket::parse(&drop_db, caps).unwrap().session_changes().unwrap();
        assert_eq!(changes.last(), Some(&SessionChange::Schema(String::new())));
        let utf32 = [0, 0, 0, 2, 64, 0, 0, 0, 0, 0, 0, 5, 1, 3, 2, b'd', b'x'];
        let changes = OkPacket::parse(&utf32, caps).unwrap().session_changes().unwrap();
        assert_eq!(changes, [SessionChange::Schema("dx".into())]);
        let plain = [0, 0, 0, 2, 64, 0, 0, 0, 5, 1, 3, 2, b'd', b'x'];
        let changes = OkPacket::parse(&plain, caps).unwrap().session_changes().unwrap();
        assert_eq!(changes, [SessionChange::Schema("dx".into())]);
    }

    fn tracked_ok() -> OkPacket {
        let mut state = BytesMut::new();
        let mut var = BytesMut::new();
        put_lenenc_bytes(&mut var, b"time_zone");
        put_lenenc_bytes(&mut var, b"+01:00");
        state.put_u8(SESSION_TRACK_SYSTEM_VARIABLES);
        put_lenenc_bytes(&mut state, &var);
        let mut schema = BytesMut::new();
        put_lenenc_bytes(&mut schema, b"test");
        state.put_u8(SESSION_TRACK_SCHEMA);
        put_lenenc_bytes(&mut state, &schema);
        OkPacket {
            header: 0,
            affected_rows: 3,
            last_insert_id: 300,
            status: SERVER_STATUS_AUTOCOMMIT | SERVER_SESSION_STATE_CHANGED,
            warnings: 1,
            info: b"Rows matched: 3".to_vec(),
            session_state: state.to_vec(),
        }
    }

    #[test]
    fn retained_session_state_keeps_chosen_entries() {
        let mut raw = BytesMut::new();
        for (name, value) in [("autocommit", "ON"), ("last_gtid", "0-1-9")] {
            let mut data = BytesMut::new();
            put_lenenc_bytes(&mut data, name.as_bytes());
            put_lenenc_bytes(&mut data, value.as_bytes());
            raw.put_u8(SESSION_TRACK_SYSTEM_VARIABLES);
            put_lenenc_bytes(&mut raw, &data);
        }
        raw.put_u8(SESSION_TRACK_STATE_CHANGE);
        put_lenenc_bytes(&mut raw, b"\x011");
        let kept = retain_session_state(
            &raw,
            |c| matches!(c, SessionChange::SystemVariable { name, .. } if name == "autocommit"),
        )
        .unwrap();
        assert_eq!(
            parse_session_state(&kept).unwrap(),
            vec![SessionChange::SystemVariable {
                name: "autocommit".into(),
                value: "ON".into()
            }]
        );
        assert_eq!(retain_session_state(&raw, |_| true).unwrap(), raw.to_vec());
        assert!(retain_session_state(&raw, |_| false).unwrap().is_empty());
    }

    #[test]
    fn ok_roundtrip_with_session_track() {
        let ok = tracked_ok();
        let mut b = BytesMut::new();
        ok.encode(&mut b, CLIENT_SESSION_TRACK);
        let back = OkPacket::parse(&b, CLIENT_SESSION_TRACK).unwrap();
        assert_eq!(back, ok);
        assert_eq!(
            back.session_changes().unwrap(),
            vec![
                SessionChange::SystemVariable {
                    name: "time_zone".into(),
                    value: "+01:00".into()
                },
                SessionChange::Schema("test".into())
            ]
        );
    }

    #[test]
    fn ok_reencoded_for_client_without_tracking() {
        let ok = tracked_ok();
        let mut b = BytesMut::new();
        ok.encode(&mut b, 0);
        let back = OkPacket::parse(&b, 0).unwrap();
        assert_eq!(back.info, ok.info);
        assert_eq!(back.status & SERVER_SESSION_STATE_CHANGED, 0);
        assert_eq!(back.last_insert_id, 300);
    }

    #[test]
    fn err_roundtrip_and_eof() {
        let e = ErrPacket::new(1062, "23000", "Duplicate entry");
        let mut b = BytesMut::new();
        e.encode(&mut b);
        assert_eq!(ErrPacket::parse(&b).unwrap(), e);
        let mut b = BytesMut::new();
        encode_eof(&mut b, 2, SERVER_MORE_RESULTS_EXISTS);
        assert!(is_eof(&b));
        assert_eq!(parse_eof(&b, 0).unwrap(), (2, SERVER_MORE_RESULTS_EXISTS));
        let mut b = BytesMut::new();
        encode_result_end(&mut b, 0, 2, CLIENT_DEPRECATE_EOF);
        assert_eq!(parse_eof(&b, CLIENT_DEPRECATE_EOF).unwrap(), (0, 2));
    }

    #[test]
    fn garbage_never_panics() {
        for n in 0..40u8 {
            let p: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            let _ = OkPacket::parse(&p, CLIENT_SESSION_TRACK);
            let _ = ErrPacket::parse(&p);
            let _ = parse_session_state(&p);
            let _ = parse_eof(&p, CLIENT_DEPRECATE_EOF);
        }
    }
}
