//! Column definitions and text-protocol rows: decoding what Tessera must inspect and encoding
//! result sets that Tessera answers itself.

use crate::codec::{put_lenenc_bytes, put_lenenc_int, Reader};
use crate::error::Result;
use crate::packet::PacketStream;
use crate::response::encode_result_end;
use bytes::{BufMut, BytesMut};
use tokio::io::AsyncRead;

pub const TYPE_DECIMAL: u8 = 0x00;
pub const TYPE_TINY: u8 = 0x01;
pub const TYPE_SHORT: u8 = 0x02;
pub const TYPE_LONG: u8 = 0x03;
pub const TYPE_FLOAT: u8 = 0x04;
pub const TYPE_DOUBLE: u8 = 0x05;
pub const TYPE_NULL: u8 = 0x06;
pub const TYPE_LONGLONG: u8 = 0x08;
pub const TYPE_INT24: u8 = 0x09;
pub const TYPE_NEWDECIMAL: u8 = 0xf6;
pub const TYPE_VAR_STRING: u8 = 0xfd;
pub const TYPE_STRING: u8 = 0xfe;
pub const TYPE_BLOB: u8 = 0xfc;
pub const TYPE_LONG_BLOB: u8 = 0xfb;
pub const TYPE_MEDIUM_BLOB: u8 = 0xfa;

/// Collation id of `binary`.
pub const BINARY_COLLATION: u16 = 63;
pub const UNSIGNED_FLAG: u16 = 32;

/// A column definition (Protocol::ColumnDefinition41).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDefinition {
    pub schema: String,
    pub table: String,
    pub name: String,
    pub charset: u16,
    pub length: u32,
    pub column_type: u8,
    pub flags: u16,
    pub decimals: u8,
}

impl ColumnDefinition {
    /// A VARCHAR-like column named `name`, as Tessera's own results use.
    pub fn text(name: &str) -> Self {
        ColumnDefinition {
            schema: String::new(),
            table: String::new(),
            name: name.to_string(),
            charset: 45,
            length: 1024,
            column_type: TYPE_VAR_STRING,
            flags: 0,
            decimals: 0,
        }
    }

    /// A BIGINT column named `name`.
    pub fn bigint(name: &str) -> Self {
        ColumnDefinition {
            charset: BINARY_COLLATION,
            length: 20,
            column_type: TYPE_LONGLONG,
            ..Self::text(name)
        }
    }

    pub fn parse(payload: &[u8]) -> Result<Self> {
        Self::parse_with(payload, false)
    }

    /// Parses a definition sent to a client that negotiated MariaDB's extended metadata
    /// (an extra length-encoded field after the original column name).
    pub fn parse_with(payload: &[u8], extended_metadata: bool) -> Result<Self> {
        let mut r = Reader::new(payload);
        let _catalog = r.lenenc_bytes()?;
        let schema = lossy(r.lenenc_bytes()?);
        let table = lossy(r.lenenc_bytes()?);
        let _org_table = r.lenenc_bytes()?;
        let name = lossy(r.lenenc_bytes()?);
        let _org_name = r.lenenc_bytes()?;
        if extended_metadata {
            let _extended = r.lenenc_bytes()?;
        }
        let _fixed_len = r.lenenc_int()?;
        let charset = r.u16()?;
        let length = r.u32()?;
        let column_type = r.u8()?;
        let flags = r.u16()?;
        let decimals = r.u8()?;
        Ok(ColumnDefinition {
            schema,
            table,
            name,
            charset,
            length,
            column_type,
            flags,
            decimals,
        })
    }

    pub fn encode(&self, out: &mut BytesMut) {
        self.encode_with(out, false);
    }

    /// Encodes for a client that negotiated MariaDB's extended metadata (an extra, here
    /// empty, type-information field after the names).
    pub fn encode_with(&self, out: &mut BytesMut, extended_metadata: bool) {
        put_lenenc_bytes(out, b"def");
        put_lenenc_bytes(out, self.schema.as_bytes());
        put_lenenc_bytes(out, self.table.as_bytes());
        put_lenenc_bytes(out, self.table.as_bytes());
        put_lenenc_bytes(out, self.name.as_bytes());
        put_lenenc_bytes(out, self.name.as_bytes());
        if extended_metadata {
            put_lenenc_bytes(out, b"");
        }
        out.put_u8(0x0c);
        out.put_u16_le(self.charset);
        out.put_u32_le(self.length);
        out.put_u8(self.column_type);
        out.put_u16_le(self.flags);
        out.put_u8(self.decimals);
        out.put_u16_le(0);
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Decodes a text-protocol row into `columns` values (None = NULL).
pub fn parse_text_row(payload: &[u8], columns: usize) -> Result<Vec<Option<Vec<u8>>>> {
    let mut r = Reader::new(payload);
    let mut out = Vec::with_capacity(columns);
    for _ in 0..columns {
        let v = match r.lenenc_int_or_null()? {
            None => None,
            Some(n) => Some(r.take(usize::try_from(n).unwrap_or(usize::MAX))?.to_vec()),
        };
        out.push(v);
    }
    Ok(out)
}

/// Encodes a text-protocol row.
pub fn encode_text_row<V: AsRef<[u8]>>(out: &mut BytesMut, values: &[Option<V>]) {
    for v in values {
        match v {
            None => out.put_u8(0xfb),
            Some(v) => put_lenenc_bytes(out, v.as_ref()),
        }
    }
}

/// What a client negotiated about result-set metadata (MariaDB's extended capabilities).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetadataDialect {
    /// `MARIADB_CLIENT_EXTENDED_METADATA`: column definitions carry extended type information.
    pub extended: bool,
    /// `MARIADB_CLIENT_CACHE_METADATA`: a column count carries a "metadata follows" byte.
    pub cached: bool,
}

/// A result set's first packet: its column count, and for a client with cached metadata the
/// "metadata follows" flag.
pub fn encode_column_count(out: &mut BytesMut, columns: u64, dialect: MetadataDialect, follows: bool) {
    put_lenenc_int(out, columns);
    if dialect.cached {
        out.put_u8(u8::from(follows));
    }
}

/// Writes a complete text result set (column count, definitions, rows, end) in the client's
/// dialect (`capabilities` decides EOF vs DEPRECATE_EOF).
pub fn write_text_result<S, V>(
    out: &mut PacketStream<S>,
    columns: &[ColumnDefinition],
    rows: &[Vec<Option<V>>],
    status: u16,
    capabilities: u32,
) where
    S: AsyncRead + crate::packet::SendBuffer,
    V: AsRef<[u8]>,
{
    write_text_result_with(out, columns, rows, status, capabilities, MetadataDialect::default())
}

/// [`write_text_result`] for a client that may have negotiated MariaDB's metadata capabilities.
pub fn write_text_result_with<S, V>(
    out: &mut PacketStream<S>,
    columns: &[ColumnDefinition],
    rows: &[Vec<Option<V>>],
    status: u16,
    capabilities: u32,
    dialect: MetadataDialect,
) where
    S: AsyncRead + crate::packet::SendBuffer,
    V: AsRef<[u8]>,
{
    let definitions = |out: &mut PacketStream<S>| {
        for c in columns {
            out.write_with(|b| c.encode_with(b, dialect.extended));
        }
    };
    write_text_result_parts(out, (columns.len(), definitions), rows, status, capabilities, dialect)
}

/// [`write_text_result_with`] for `count` column definitions that `definitions` writes, one
/// packet each (definitions already encoded, e.g. a server's own).
pub fn write_text_result_parts<S, V>(
    out: &mut PacketStream<S>,
    (count, definitions): (usize, impl FnOnce(&mut PacketStream<S>)),
    rows: &[Vec<Option<V>>],
    status: u16,
    capabilities: u32,
    dialect: MetadataDialect,
) where
    S: AsyncRead + crate::packet::SendBuffer,
    V: AsRef<[u8]>,
{
    out.write_with(|b| encode_column_count(b, count as u64, dialect, true));
    definitions(out);
    if capabilities & crate::flags::CLIENT_DEPRECATE_EOF == 0 {
        out.write_with(|b| crate::response::encode_eof(b, 0, status));
    }
    for row in rows {
        out.write_with(|b| encode_text_row(b, row));
    }
    out.write_with(|b| encode_result_end(b, 0, status, capabilities));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_and_row_roundtrip() {
        let c = ColumnDefinition::bigint("n");
        let mut b = BytesMut::new();
        c.encode(&mut b);
        assert_eq!(ColumnDefinition::parse(&b).unwrap(), c);
        let mut row = BytesMut::new();
        encode_text_row(&mut row, &[Some(b"1".as_slice()), None]);
        assert_eq!(parse_text_row(&row, 2).unwrap(), vec![Some(b"1".to_vec()), None]);
        assert!(parse_text_row(&row, 3).is_err());
    }
}
