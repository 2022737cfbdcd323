//! Binary-protocol result rows (COM_STMT_EXECUTE): the null bitmap, each column type's binary
//! form, and temporal values converted to and from MariaDB's text form.

use crate::codec::{put_lenenc_bytes, Reader};
use crate::error::{ProtocolError, Result};
use crate::resultset::{
    ColumnDefinition, TYPE_DOUBLE, TYPE_FLOAT, TYPE_INT24, TYPE_LONG, TYPE_LONGLONG, TYPE_NULL, TYPE_SHORT, TYPE_TINY,
    UNSIGNED_FLAG,
};
use bytes::{BufMut, BytesMut};

pub const TYPE_TIMESTAMP: u8 = 0x07;
pub const TYPE_DATE: u8 = 0x0a;
pub const TYPE_TIME: u8 = 0x0b;
pub const TYPE_DATETIME: u8 = 0x0c;
pub const TYPE_YEAR: u8 = 0x0d;
pub const TYPE_NEWDATE: u8 = 0x0e;
pub const TYPE_VARCHAR: u8 = 0x0f;
pub const TYPE_BIT: u8 = 0x10;
pub const TYPE_JSON: u8 = 0xf5;
pub const TYPE_ENUM: u8 = 0xf7;
pub const TYPE_SET: u8 = 0xf8;
pub const TYPE_TINY_BLOB: u8 = 0xf9;
pub const TYPE_GEOMETRY: u8 = 0xff;
/// Column flag: the text form is left-padded with zeros to the column's display length.
pub const ZEROFILL_FLAG: u16 = 64;

/// How a column type is laid out in a binary row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryKind {
    /// A little-endian integer of this many bytes (TINY 1, SHORT/YEAR 2, LONG/INT24 4, LONGLONG 8).
    Integer(usize),
    Float,
    Double,
    /// DATE, DATETIME, TIMESTAMP: a length byte then 0, 4, 7 or 11 bytes.
    DateTime,
    /// TIME: a length byte then 0, 8 or 12 bytes.
    Time,
    /// A length-encoded string: strings, blobs, DECIMAL text, BIT, ENUM, SET, JSON, GEOMETRY.
    Bytes,
    /// MYSQL_TYPE_NULL: always NULL, nothing on the wire.
    Null,
}

/// The binary layout of `column_type`.
pub fn binary_kind(column_type: u8) -> BinaryKind {
    match column_type {
        TYPE_TINY => BinaryKind::Integer(1),
        TYPE_SHORT | TYPE_YEAR => BinaryKind::Integer(2),
        TYPE_LONG | TYPE_INT24 => BinaryKind::Integer(4),
        TYPE_LONGLONG => BinaryKind::Integer(8),
        TYPE_FLOAT => BinaryKind::Float,
        TYPE_DOUBLE => BinaryKind::Double,
        TYPE_DATE | TYPE_NEWDATE | TYPE_DATETIME | TYPE_TIMESTAMP => BinaryKind::DateTime,
        TYPE_TIME => BinaryKind::Time,
        TYPE_NULL => BinaryKind::Null,
        _ => BinaryKind::Bytes,
    }
}

/// One decoded field of a binary row.
#[derive(Debug, Clone, PartialEq)]
pub enum BinaryValue<'a> {
    Null,
    Int(i64),
    UInt(u64),
    Float(f32),
    Double(f64),
    Temporal(Temporal),
    Bytes(&'a [u8]),
}

/// A DATE, DATETIME, TIMESTAMP or TIME value. For TIME, `hour` holds all hours (days * 24 +
/// hours) and the date fields are zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Temporal {
    pub negative: bool,
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u32,
    pub minute: u8,
    pub second: u8,
    pub micro: u32,
}

/// Length of the NULL bitmap of a binary row with `columns` columns (offset 2).
pub fn null_bitmap_len(columns: usize) -> usize {
    (columns + 7 + 2) / 8
}

/// Decodes a binary result row (header 0x00, NULL bitmap with offset 2, values).
pub fn decode_binary_row<'a>(columns: &[ColumnDefinition], payload: &'a [u8]) -> Result<Vec<BinaryValue<'a>>> {
    let mut r = Reader::new(payload);
    if r.u8()? != 0 {
        return Err(ProtocolError::Malformed("binary row without 0x00 header"));
    }
    let bitmap = r.take(null_bitmap_len(columns.len()))?;
    let mut out = Vec::with_capacity(columns.len());
    for (i, c) in columns.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            out.push(BinaryValue::Null);
        } else {
            out.push(decode_field(&mut r, c)?);
        }
    }
    Ok(out)
}

fn decode_field<'a>(r: &mut Reader<'a>, c: &ColumnDefinition) -> Result<BinaryValue<'a>> {
    let unsigned = c.flags & UNSIGNED_FLAG != 0;
    Ok(match binary_kind(c.column_type) {
        BinaryKind::Integer(n) => {
            let raw = read_uint(r, n)?;
            if unsigned {
                BinaryValue::UInt(raw)
            } else {
                BinaryValue::Int(sign_extend(raw, n))
            }
        }
        BinaryKind::Float => BinaryValue::Float(f32::from_bits(r.u32()?)),
        BinaryKind::Double => BinaryValue::Double(f64::from_bits(r.u64()?)),
        BinaryKind::DateTime => {
            let len = usize::from(r.u8()?);
            BinaryValue::Temporal(Temporal::decode_datetime(r.take(len)?)?)
        }
        BinaryKind::Time => {
            let len = usize::from(r.u8()?);
            BinaryValue::Temporal(Temporal::decode_time(r.take(len)?)?)
        }
        BinaryKind::Bytes => BinaryValue::Bytes(r.lenenc_bytes()?),
        BinaryKind::Null => BinaryValue::Null,
    })
}

fn read_uint(r: &mut Reader<'_>, n: usize) -> Result<u64> {
    let b = r.take(n)?;
    let mut a = [0u8; 8];
    a[..n].copy_from_slice(b);
    Ok(u64::from_le_bytes(a))
}

fn sign_extend(raw: u64, bytes: usize) -> i64 {
    let shift = 64 - 8 * bytes as u32;
    ((raw << shift) as i64) >> shift
}

/// Encodes a binary result row. A value that does not fit its column's kind (say, bytes for a
/// DOUBLE column) is written as that kind's zero, so the packet always stays well-formed.
pub fn encode_binary_row(columns: &[ColumnDefinition], values: &[BinaryValue<'_>], out: &mut BytesMut) {
    out.put_u8(0);
    let start = out.len();
    out.put_bytes(0, null_bitmap_len(columns.len()));
    for (i, c) in columns.iter().enumerate() {
        let v = values.get(i).unwrap_or(&BinaryValue::Null);
        let kind = binary_kind(c.column_type);
        if matches!(v, BinaryValue::Null) || kind == BinaryKind::Null {
            let bit = i + 2;
            out[start + bit / 8] |= 1 << (bit % 8);
            continue;
        }
        encode_field(kind, v, out);
    }
}

fn encode_field(kind: BinaryKind, v: &BinaryValue<'_>, out: &mut BytesMut) {
    match kind {
        BinaryKind::Integer(n) => out.put_slice(&integer_bits(v).to_le_bytes()[..n]),
        BinaryKind::Float => out.put_f32_le(float_of(v) as f32),
        BinaryKind::Double => out.put_f64_le(float_of(v)),
        BinaryKind::DateTime => temporal_of(v).encode_datetime(out),
        BinaryKind::Time => temporal_of(v).encode_time(out),
        BinaryKind::Bytes => match v {
            BinaryValue::Bytes(b) => put_lenenc_bytes(out, b),
            other => put_lenenc_bytes(out, number_text(other).as_bytes()),
        },
        BinaryKind::Null => {}
    }
}

fn integer_bits(v: &BinaryValue<'_>) -> u64 {
    match v {
        BinaryValue::Int(i) => *i as u64,
        BinaryValue::UInt(u) => *u,
        BinaryValue::Float(f) => *f as i64 as u64,
        BinaryValue::Double(f) => *f as i64 as u64,
        BinaryValue::Bytes(b) => std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).unwrap_or(0),
        BinaryValue::Temporal(_) | BinaryValue::Null => 0,
    }
}

fn float_of(v: &BinaryValue<'_>) -> f64 {
    match v {
        BinaryValue::Int(i) => *i as f64,
        BinaryValue::UInt(u) => *u as f64,
        BinaryValue::Float(f) => f64::from(*f),
        BinaryValue::Double(f) => *f,
        BinaryValue::Bytes(b) => std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).unwrap_or(0.0),
        BinaryValue::Temporal(_) | BinaryValue::Null => 0.0,
    }
}

fn temporal_of(v: &BinaryValue<'_>) -> Temporal {
    match v {
        BinaryValue::Temporal(t) => *t,
        BinaryValue::Bytes(b) => Temporal::parse_text(b).unwrap_or_default(),
        _ => Temporal::default(),
    }
}

fn number_text(v: &BinaryValue<'_>) -> String {
    match v {
        BinaryValue::Int(i) => i.to_string(),
        BinaryValue::UInt(u) => u.to_string(),
        BinaryValue::Float(f) => f.to_string(),
        BinaryValue::Double(f) => f.to_string(),
        _ => String::new(),
    }
}

impl Temporal {
    /// Decodes the 0/4/7/11-byte binary DATE/DATETIME/TIMESTAMP body.
    pub fn decode_datetime(b: &[u8]) -> Result<Temporal> {
        if !matches!(b.len(), 0 | 4 | 7 | 11) {
            return Err(ProtocolError::Malformed("binary DATETIME of unexpected length"));
        }
        let mut t = Temporal::default();
        if b.len() >= 4 {
            t.year = u16::from_le_bytes([b[0], b[1]]);
            t.month = b[2];
            t.day = b[3];
        }
        if b.len() >= 7 {
            t.hour = u32::from(b[4]);
            t.minute = b[5];
            t.second = b[6];
        }
        if b.len() == 11 {
            t.micro = u32::from_le_bytes([b[7], b[8], b[9], b[10]]);
        }
        Ok(t)
    }

    /// Decodes the 0/8/12-byte binary TIME body.
    pub fn decode_time(b: &[u8]) -> Result<Temporal> {
        if !matches!(b.len(), 0 | 8 | 12) {
            return Err(ProtocolError::Malformed("binary TIME of unexpected length"));
        }
        let mut t = Temporal::default();
        if b.len() >= 8 {
            t.negative = b[0] != 0;
            let days = u32::from_le_bytes([b[1], b[2], b[3], b[4]]);
            t.hour = days.saturating_mul(24).saturating_add(u32::from(b[5]));
            t.minute = b[6];
            t.second = b[7];
        }
        if b.len() == 12 {
            t.micro = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        }
        Ok(t)
    }

    /// Writes the length byte and body as MariaDB does: the shortest of 0/4/7/11 bytes that
    /// holds the value.
    pub fn encode_datetime(&self, out: &mut BytesMut) {
        let len: u8 = if self.micro != 0 {
            11
        } else if self.hour != 0 || self.minute != 0 || self.second != 0 {
            7
        } else if self.year != 0 || self.month != 0 || self.day != 0 {
            4
        } else {
            0
        };
        out.put_u8(len);
        if len >= 4 {
            out.put_u16_le(self.year);
            out.put_u8(self.month);
            out.put_u8(self.day);
        }
        if len >= 7 {
            out.put_u8(self.hour.min(255) as u8);
            out.put_u8(self.minute);
            out.put_u8(self.second);
        }
        if len == 11 {
            out.put_u32_le(self.micro);
        }
    }

    /// Writes the length byte and body of a TIME as MariaDB does (0, 8 or 12 bytes).
    pub fn encode_time(&self, out: &mut BytesMut) {
        let len: u8 = if self.micro != 0 {
            12
        } else if self.hour != 0 || self.minute != 0 || self.second != 0 {
            8
        } else {
            0
        };
        out.put_u8(len);
        if len >= 8 {
            out.put_u8(u8::from(self.negative));
            out.put_u32_le(self.hour / 24);
            out.put_u8((self.hour % 24) as u8);
            out.put_u8(self.minute);
            out.put_u8(self.second);
        }
        if len == 12 {
            out.put_u32_le(self.micro);
        }
    }

    /// MariaDB's text form for a column of `column_type` with `decimals` fractional digits:
    /// `YYYY-MM-DD`, `YYYY-MM-DD hh:mm:ss[.ffffff]` or `[-]hh:mm:ss[.ffffff]`.
    pub fn to_text(&self, column_type: u8, decimals: u8) -> String {
        let frac = self.fraction(decimals);
        match column_type {
            TYPE_DATE | TYPE_NEWDATE => format!("{:04}-{:02}-{:02}", self.year, self.month, self.day),
            TYPE_TIME => format!(
                "{}{:02}:{:02}:{:02}{frac}",
                if self.negative { "-" } else { "" },
                self.hour,
                self.minute,
                self.second
            ),
            _ => format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}{frac}",
                self.year, self.month, self.day, self.hour, self.minute, self.second
            ),
        }
    }

    /// `.ffffff` cut to `decimals` digits (none for 0); unknown precision (> 6) shows six
    /// digits when the value has a fraction.
    fn fraction(&self, decimals: u8) -> String {
        let digits = match decimals {
            0 => return String::new(),
            1..=6 => usize::from(decimals),
            _ if self.micro == 0 => return String::new(),
            _ => 6,
        };
        let all = format!("{:06}", self.micro.min(999_999));
        format!(".{}", &all[..digits])
    }

    /// Parses any of the text forms [`Temporal::to_text`] writes.
    pub fn parse_text(text: &[u8]) -> Option<Temporal> {
        let s = std::str::from_utf8(text).ok()?;
        let (main, micro) = match s.split_once('.') {
            Some((m, f)) => (m, parse_fraction(f)?),
            None => (s, 0),
        };
        let mut t = if main.len() >= 10 && main.as_bytes().get(4) == Some(&b'-') {
            parse_datetime(main)?
        } else {
            parse_time(main)?
        };
        t.micro = micro;
        Some(t)
    }
}

fn parse_fraction(f: &str) -> Option<u32> {
    if f.is_empty() || f.len() > 6 || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let padded = format!("{f:0<6}");
    padded.parse().ok()
}

fn parse_datetime(s: &str) -> Option<Temporal> {
    let (date, time) = match s.split_once(' ') {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut parts = date.splitn(3, '-');
    let mut t = Temporal {
        year: parts.next()?.parse().ok()?,
        month: parts.next()?.parse().ok()?,
        day: parts.next()?.parse().ok()?,
        ..Temporal::default()
    };
    if let Some(time) = time {
        let hms = parse_time(time)?;
        t.hour = hms.hour;
        t.minute = hms.minute;
        t.second = hms.second;
    }
    Some(t)
}

fn parse_time(s: &str) -> Option<Temporal> {
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let mut parts = s.splitn(3, ':');
    Some(Temporal {
        negative,
        hour: parts.next()?.parse().ok()?,
        minute: parts.next()?.parse().ok()?,
        second: parts.next()?.parse().ok()?,
        ..Temporal::default()
    })
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // 3.14 is the FLOAT value checked against MariaDB
mod tests {
    use super::*;
    use crate::resultset::TYPE_VAR_STRING;

    fn col(column_type: u8, flags: u16, decimals: u8) -> ColumnDefinition {
        ColumnDefinition {
            column_type,
            flags,
            decimals,
            ..ColumnDefinition::text("c")
        }
    }

    #[test]
    fn integers_floats_and_nulls_roundtrip() {
        let cols = [
            col(TYPE_TINY, 0, 0),
            col(TYPE_SHORT, UNSIGNED_FLAG, 0),
            col(TYPE_INT24, 0, 0),
            col(TYPE_LONGLONG, UNSIGNED_FLAG, 0),
            col(TYPE_FLOAT, 0, 31),
            col(TYPE_DOUBLE, 0, 31),
            col(TYPE_NULL, 0, 0),
            col(TYPE_VAR_STRING, 0, 0),
        ];
        let values = [
            BinaryValue::Int(-128),
            BinaryValue::UInt(65535),
            BinaryValue::Int(-8388608),
            BinaryValue::UInt(u64::MAX),
            BinaryValue::Float(3.14),
            BinaryValue::Double(-1.5e-7),
            BinaryValue::Null,
            BinaryValue::Bytes(b"h\xc3\xa9"),
        ];
        let mut out = BytesMut::new();
        encode_binary_row(&cols, &values, &mut out);
        assert_eq!(decode_binary_row(&cols, &out).unwrap(), values);
        assert!(decode_binary_row(&cols, &out[..out.len() - 1]).is_err());
    }

    #[test]
    fn temporal_lengths_follow_the_value() {
        let mut out = BytesMut::new();
        Temporal::default().encode_datetime(&mut out);
        assert_eq!(&out[..], [0]);
        let t = Temporal::parse_text(b"-838:59:59").unwrap();
        let mut out = BytesMut::new();
        t.encode_time(&mut out);
        assert_eq!(&out[..], [8, 1, 34, 0, 0, 0, 22, 59, 59]);
        assert_eq!(
            Temporal::decode_time(&out[1..]).unwrap().to_text(TYPE_TIME, 0),
            "-838:59:59"
        );
        let d = Temporal::parse_text(b"2024-01-02 03:04:05.000001").unwrap();
        assert_eq!(d.micro, 1);
        assert_eq!(d.to_text(TYPE_DATETIME, 6), "2024-01-02 03:04:05.000001");
        assert_eq!(d.to_text(TYPE_DATETIME, 3), "2024-01-02 03:04:05.000");
        assert_eq!(d.to_text(TYPE_DATE, 0), "2024-01-02");
        assert_eq!(Temporal::parse_text(b"12:00:00.5").unwrap().micro, 500_000);
        assert!(Temporal::parse_text(b"12:xx:00").is_none());
        assert!(Temporal::decode_datetime(&[1, 2, 3]).is_err());
    }
}
