//! Length-encoded integers and strings, and a bounds-checked cursor over a packet payload.

use crate::error::{ProtocolError, Result};
use bytes::{BufMut, BytesMut};

/// A cursor over one packet's payload; every read is bounds-checked and never panics.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(ProtocolError::Malformed("truncated field"));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.take(n).map(|_| ())
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u24(&mut self) -> Result<u32> {
        let b = self.take(3)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], 0]))
    }

    pub fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A length-encoded integer; `None` for the NULL marker 0xFB.
    pub fn lenenc_int_or_null(&mut self) -> Result<Option<u64>> {
        let first = self.u8()?;
        Ok(Some(match first {
            0xfb => return Ok(None),
            0xfc => u64::from(self.u16()?),
            0xfd => u64::from(self.u24()?),
            0xfe => self.u64()?,
            0xff => return Err(ProtocolError::Malformed("invalid length-encoded integer")),
            n => u64::from(n),
        }))
    }

    pub fn lenenc_int(&mut self) -> Result<u64> {
        self.lenenc_int_or_null()?
            .ok_or(ProtocolError::Malformed("unexpected NULL length"))
    }

    pub fn lenenc_bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.lenenc_int()?;
        let len = usize::try_from(len).map_err(|_| ProtocolError::Malformed("length overflow"))?;
        self.take(len)
    }

    /// Bytes up to (not including) the next NUL; the NUL is consumed.
    pub fn null_terminated(&mut self) -> Result<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(ProtocolError::Malformed("missing NUL terminator"))?;
        self.pos += end + 1;
        Ok(&rest[..end])
    }

    /// Like [`Self::null_terminated`] but accepts end of packet as terminator.
    pub fn null_terminated_or_eof(&mut self) -> &'a [u8] {
        let rest = &self.buf[self.pos..];
        match rest.iter().position(|&b| b == 0) {
            Some(end) => {
                self.pos += end + 1;
                &rest[..end]
            }
            None => {
                self.pos = self.buf.len();
                rest
            }
        }
    }
}

/// Appends a length-encoded integer.
pub fn put_lenenc_int(out: &mut BytesMut, v: u64) {
    if v < 251 {
        out.put_u8(v as u8);
    } else if v < 1 << 16 {
        out.put_u8(0xfc);
        out.put_u16_le(v as u16);
    } else if v < 1 << 24 {
        out.put_u8(0xfd);
        out.put_uint_le(v, 3);
    } else {
        out.put_u8(0xfe);
        out.put_u64_le(v);
    }
}

/// Appends a length-encoded string.
pub fn put_lenenc_bytes(out: &mut BytesMut, v: &[u8]) {
    put_lenenc_int(out, v.len() as u64);
    out.put_slice(v);
}

/// Appends bytes followed by a NUL.
pub fn put_null_terminated(out: &mut BytesMut, v: &[u8]) {
    out.put_slice(v);
    out.put_u8(0);
}

/// Size in bytes of a length-encoded integer with this value.
pub fn lenenc_int_size(v: u64) -> usize {
    match v {
        0..=250 => 1,
        251..=0xffff => 3,
        0x1_0000..=0xff_ffff => 4,
        _ => 9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_roundtrip() {
        for v in [0u64, 1, 250, 251, 65535, 65536, 0xff_ffff, 0x100_0000, u64::MAX] {
            let mut b = BytesMut::new();
            put_lenenc_int(&mut b, v);
            assert_eq!(b.len(), lenenc_int_size(v));
            assert_eq!(Reader::new(&b).lenenc_int().unwrap(), v);
        }
    }

    #[test]
    fn truncated_reads_fail_cleanly() {
        assert!(Reader::new(&[0xfc, 1]).lenenc_int().is_err());
        assert!(Reader::new(&[0xff]).lenenc_int().is_err());
        assert!(Reader::new(&[5, 1, 2]).lenenc_bytes().is_err());
        assert!(Reader::new(b"abc").null_terminated().is_err());
        assert_eq!(Reader::new(&[0xfb]).lenenc_int_or_null().unwrap(), None);
    }
}
