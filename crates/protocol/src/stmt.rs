//! Prepared-statement packets: COM_STMT_PREPARE_OK, and rewriting COM_STMT_EXECUTE for a backend
//! (statement id swapped, parameter types always present).

use crate::codec::Reader;
use crate::command::{COM_STMT_CLOSE, COM_STMT_EXECUTE, COM_STMT_PREPARE, COM_STMT_SEND_LONG_DATA};
use crate::error::{ProtocolError, Result};
use bytes::{BufMut, BytesMut};
use std::ops::Range;

/// The first packet of a successful COM_STMT_PREPARE response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareOk {
    pub stmt_id: u32,
    pub num_columns: u16,
    pub num_params: u16,
    pub warnings: u16,
}

impl PrepareOk {
    pub fn parse(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        if r.u8()? != 0 {
            return Err(ProtocolError::Malformed("not a COM_STMT_PREPARE_OK"));
        }
        let stmt_id = r.u32()?;
        let num_columns = r.u16()?;
        let num_params = r.u16()?;
        r.skip(1)?;
        let warnings = if r.remaining() >= 2 { r.u16()? } else { 0 };
        Ok(PrepareOk {
            stmt_id,
            num_columns,
            num_params,
            warnings,
        })
    }

    pub fn encode(&self, out: &mut BytesMut) {
        out.put_u8(0);
        out.put_u32_le(self.stmt_id);
        out.put_u16_le(self.num_columns);
        out.put_u16_le(self.num_params);
        out.put_u8(0);
        out.put_u16_le(self.warnings);
    }
}

/// The parts of a COM_STMT_EXECUTE packet a proxy needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecuteRequest<'a> {
    pub stmt_id: u32,
    pub flags: u8,
    pub null_bitmap: &'a [u8],
    /// Parameter types when the client sent them (new-params-bound flag set).
    pub types: Option<&'a [u8]>,
    pub values: &'a [u8],
}

/// Cursor type flag of COM_STMT_EXECUTE: open a read-only cursor.
pub const CURSOR_TYPE_READ_ONLY: u8 = 1;

impl<'a> ExecuteRequest<'a> {
    /// Parses a full COM_STMT_EXECUTE packet (including the command byte).
    pub fn parse(payload: &'a [u8], num_params: u16) -> Result<Self> {
        let mut r = Reader::new(payload);
        if r.u8()? != COM_STMT_EXECUTE {
            return Err(ProtocolError::Malformed("not a COM_STMT_EXECUTE"));
        }
        let stmt_id = r.u32()?;
        let flags = r.u8()?;
        r.skip(4)?;
        if num_params == 0 {
            return Ok(ExecuteRequest {
                stmt_id,
                flags,
                null_bitmap: &[],
                types: None,
                values: &[],
            });
        }
        let null_bitmap = r.take(usize::from(num_params).div_ceil(8))?;
        let bound = r.u8()?;
        let types = if bound == 1 {
            Some(r.take(usize::from(num_params) * 2)?)
        } else {
            None
        };
        Ok(ExecuteRequest {
            stmt_id,
            flags,
            null_bitmap,
            types,
            values: r.rest(),
        })
    }

    /// Encodes this execution for a backend statement id, with the parameter types when
    /// `types` is given; without them the server keeps the types of the statement's previous
    /// execution (what client libraries do when the types did not change). Returns where in
    /// `out` the types went, if they did.
    pub fn encode_for_backend(
        &self,
        out: &mut BytesMut,
        backend_id: u32,
        types: Option<&[u8]>,
    ) -> Option<Range<usize>> {
        out.put_u8(COM_STMT_EXECUTE);
        out.put_u32_le(backend_id);
        out.put_u8(self.flags);
        out.put_u32_le(1);
        if self.null_bitmap.is_empty() && types.is_none_or(<[u8]>::is_empty) {
            return None;
        }
        out.put_slice(self.null_bitmap);
        let at = out.len() + 1;
        let written = match types {
            Some(types) => {
                out.put_u8(1);
                out.put_slice(types);
                Some(at..at + types.len())
            }
            None => {
                out.put_u8(0);
                None
            }
        };
        out.put_slice(self.values);
        written
    }
}

/// Removes the parameter types at `types` from an encoded COM_STMT_EXECUTE (as
/// [`ExecuteRequest::encode_for_backend`] reported them): the server then keeps the types of
/// the statement's previous execution.
pub fn drop_execute_types(command: &mut BytesMut, types: Range<usize>) {
    if types.start == 0 || types.end > command.len() {
        return;
    }
    command[types.start - 1] = 0;
    let len = command.len() - types.len();
    command.copy_within(types.end.., types.start);
    command.truncate(len);
}

/// COM_STMT_PREPARE with the statement text.
pub fn encode_prepare(out: &mut BytesMut, sql: &[u8]) {
    out.put_u8(COM_STMT_PREPARE);
    out.put_slice(sql);
}

/// COM_STMT_CLOSE for a backend statement id.
pub fn encode_close(out: &mut BytesMut, stmt_id: u32) {
    out.put_u8(COM_STMT_CLOSE);
    out.put_u32_le(stmt_id);
}

/// COM_STMT_SEND_LONG_DATA for a backend statement id.
pub fn encode_long_data(out: &mut BytesMut, stmt_id: u32, param: u16, data: &[u8]) {
    out.put_u8(COM_STMT_SEND_LONG_DATA);
    out.put_u32_le(stmt_id);
    out.put_u16_le(param);
    out.put_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execute_rewrite_inserts_types() {
        // stmt 9, no cursor, 2 params, first NULL, types not re-sent.
        let mut p = vec![COM_STMT_EXECUTE, 9, 0, 0, 0, 0, 1, 0, 0, 0, 0b01, 0];
        p.extend_from_slice(&[5, 0, 0, 0]);
        let req = ExecuteRequest::parse(&p, 2).unwrap();
        assert!(req.types.is_none());
        let mut out = BytesMut::new();
        let types = req.encode_for_backend(&mut out, 77, Some(&[8, 0, 3, 0]));
        assert_eq!(types, Some(12..16));
        let mut without = out.clone();
        let again = ExecuteRequest::parse(&out, 2).unwrap();
        assert_eq!(again.stmt_id, 77);
        assert_eq!(again.types, Some(&[8u8, 0, 3, 0][..]));
        assert_eq!(again.values, &[5, 0, 0, 0]);
        let mut out = BytesMut::new();
        assert_eq!(req.encode_for_backend(&mut out, 78, None), None);
        let again = ExecuteRequest::parse(&out, 2).unwrap();
        assert_eq!((again.stmt_id, again.types), (78, None), "types left to the server");
        assert_eq!((again.null_bitmap, again.values), (&[0b01u8][..], &[5u8, 0, 0, 0][..]));
        drop_execute_types(&mut without, 12..16);
        assert_eq!(
            &without[5..],
            &out[5..],
            "dropped afterwards: the same as never written"
        );
        assert!(ExecuteRequest::parse(&p[..8], 2).is_err());
    }

    #[test]
    fn prepare_ok_roundtrip() {
        let ok = PrepareOk {
            stmt_id: 5,
            num_columns: 2,
            num_params: 1,
            warnings: 0,
        };
        let mut b = BytesMut::new();
        ok.encode(&mut b);
        assert_eq!(PrepareOk::parse(&b).unwrap(), ok);
    }
}
