//! Binary protocol for the tiny test client: COM_STMT_PREPARE / COM_STMT_EXECUTE with typed
//! parameters, full column definitions, and binary rows decoded to comparable text.
//!
//! Unlike the panicking helpers of [`Client`], everything here returns [`StmtError`], so a
//! long-running test (the sharding differential test) survives a server that closes the
//! connection and can report it as one failed statement.

use super::Client;
use bytes::BytesMut;
use tessera_protocol::codec::{put_lenenc_bytes, Reader};
use tessera_protocol::flags::SERVER_MORE_RESULTS_EXISTS;
use tessera_protocol::response::{is_eof, is_err, parse_eof, ErrPacket, OkPacket};
use tessera_protocol::resultset::{ColumnDefinition, UNSIGNED_FLAG};
use tessera_protocol::stmt::PrepareOk;

/// COM_STMT_PREPARE.
const COM_STMT_PREPARE: u8 = 0x16;
/// COM_STMT_EXECUTE.
const COM_STMT_EXECUTE: u8 = 0x17;
/// COM_STMT_CLOSE.
const COM_STMT_CLOSE: u8 = 0x19;

/// A parameter bound to a prepared statement, sent with its own wire type.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// SQL NULL (type MYSQL_TYPE_NULL, null bit set).
    Null,
    /// MYSQL_TYPE_LONGLONG, signed.
    Int(i64),
    /// MYSQL_TYPE_DOUBLE.
    Double(f64),
    /// MYSQL_TYPE_NEWDECIMAL, sent as its decimal text (for literals with a point or beyond i64).
    Decimal(String),
    /// MYSQL_TYPE_VAR_STRING in the connection's character set.
    Text(String),
}

impl Param {
    /// The two type bytes of this parameter (type, flags).
    fn wire_type(&self) -> [u8; 2] {
        match self {
            Param::Null => [0x06, 0],
            Param::Int(_) => [0x08, 0],
            Param::Double(_) => [0x05, 0],
            Param::Decimal(_) => [0xf6, 0],
            Param::Text(_) => [0xfd, 0],
        }
    }

    /// Appends the value (nothing for NULL).
    fn put_value(&self, out: &mut BytesMut) {
        match self {
            Param::Null => {}
            Param::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
            Param::Double(v) => out.extend_from_slice(&v.to_le_bytes()),
            Param::Decimal(s) | Param::Text(s) => put_lenenc_bytes(out, s.as_bytes()),
        }
    }
}

/// Why a statement produced no answer: the server's error, or a broken connection.
#[derive(Debug, Clone, PartialEq)]
pub enum StmtError {
    Server(ErrPacket),
    /// The connection failed or a packet did not decode; the client must reconnect.
    Io(String),
}

impl std::fmt::Display for StmtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StmtError::Server(e) => write!(f, "ERROR {} ({}): {}", e.code, e.sql_state_str(), e.message),
            StmtError::Io(e) => write!(f, "connection failure: {e}"),
        }
    }
}

fn io_err(e: impl std::fmt::Display) -> StmtError {
    StmtError::Io(e.to_string())
}

/// A prepared statement on one connection.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub id: u32,
    pub num_params: u16,
    /// Column definitions announced at prepare time.
    pub columns: Vec<ColumnDefinition>,
}

/// What a command answered: a result set (columns non-empty) or an OK packet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub columns: Vec<ColumnDefinition>,
    /// Rows as text (None = NULL); binary values are rendered by [`binary_value_text`].
    pub rows: Vec<Vec<Option<String>>>,
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub warnings: u16,
    /// The OK packet's human-readable info (e.g. "Records: 3  Duplicates: 0  Warnings: 0").
    pub info: String,
}

/// How rows of a result set are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFormat {
    Text,
    Binary,
}

impl Client {
    /// COM_STMT_PREPARE; reads the parameter and column definitions.
    pub async fn stmt_prepare(&mut self, sql: &str) -> Result<Prepared, StmtError> {
        let mut p = vec![COM_STMT_PREPARE];
        p.extend_from_slice(sql.as_bytes());
        let first = self.send_command(&p).await?;
        if is_err(&first) {
            return Err(server_error(&first));
        }
        let ok = PrepareOk::parse(&first).map_err(io_err)?;
        if ok.num_params > 0 {
            self.read_definitions(usize::from(ok.num_params)).await?;
        }
        let columns = if ok.num_columns > 0 {
            self.read_definitions(usize::from(ok.num_columns)).await?
        } else {
            Vec::new()
        };
        Ok(Prepared {
            id: ok.stmt_id,
            num_params: ok.num_params,
            columns,
        })
    }

    /// COM_STMT_EXECUTE with typed parameters; the answer of the last result.
    pub async fn stmt_execute(&mut self, stmt: &Prepared, params: &[Param]) -> Result<Outcome, StmtError> {
        if params.len() != usize::from(stmt.num_params) {
            return Err(StmtError::Io(format!(
                "statement takes {} parameters, {} given",
                stmt.num_params,
                params.len()
            )));
        }
        let packet = execute_packet(stmt.id, params);
        let first = self.send_command(&packet).await?;
        self.read_outcome(first, RowFormat::Binary).await
    }

    /// COM_STMT_EXECUTE without the parameter types (new-params-bound flag 0), as drivers send
    /// a re-execution whose types are those of the statement's previous execution.
    pub async fn stmt_execute_again(&mut self, stmt: &Prepared, params: &[Param]) -> Result<Outcome, StmtError> {
        let packet = execute_packet_with(stmt.id, params, false);
        let first = self.send_command(&packet).await?;
        self.read_outcome(first, RowFormat::Binary).await
    }

    /// COM_STMT_CLOSE (the server sends no answer).
    pub async fn stmt_close(&mut self, stmt: &Prepared) -> Result<(), StmtError> {
        let mut p = vec![COM_STMT_CLOSE];
        p.extend_from_slice(&stmt.id.to_le_bytes());
        self.io.reset_seq();
        self.io.send(&p).await.map_err(io_err)
    }

    /// Prepare, execute once, close: the binary-protocol answer to `sql` with `params`.
    pub async fn stmt_run(&mut self, sql: &str, params: &[Param]) -> Result<Outcome, StmtError> {
        let stmt = self.stmt_prepare(sql).await?;
        let answer = self.stmt_execute(&stmt, params).await;
        if !matches!(answer, Err(StmtError::Io(_))) {
            self.stmt_close(&stmt).await?;
        }
        answer
    }

    /// COM_QUERY with the full answer (column definitions, OK fields) instead of rows only.
    pub async fn query_outcome(&mut self, sql: &str) -> Result<Outcome, StmtError> {
        let mut p = vec![0x03u8];
        p.extend_from_slice(sql.as_bytes());
        let first = self.send_command(&p).await?;
        self.read_outcome(first, RowFormat::Text).await
    }

    /// Sends a command packet with sequence 0 and reads the first answer packet.
    async fn send_command(&mut self, payload: &[u8]) -> Result<bytes::Bytes, StmtError> {
        self.io.reset_seq();
        self.io.send(payload).await.map_err(io_err)?;
        self.io.read_packet().await.map_err(io_err)
    }

    /// Reads every result of a command whose first answer packet is `first`; keeps the last.
    pub async fn read_outcome(&mut self, first: bytes::Bytes, format: RowFormat) -> Result<Outcome, StmtError> {
        let mut first = first;
        loop {
            let (outcome, status) = self.read_one_result(&first, format).await?;
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(outcome);
            }
            first = self.io.read_packet().await.map_err(io_err)?;
        }
    }

    /// One result (OK or result set); returns it with the server status that ended it.
    async fn read_one_result(&mut self, first: &[u8], format: RowFormat) -> Result<(Outcome, u16), StmtError> {
        if is_err(first) {
            return Err(server_error(first));
        }
        if first.first() == Some(&0) {
            let ok = OkPacket::parse(first, 0).map_err(io_err)?;
            let outcome = Outcome {
                affected_rows: ok.affected_rows,
                last_insert_id: ok.last_insert_id,
                warnings: ok.warnings,
                info: String::from_utf8_lossy(&ok.info).into_owned(),
                ..Outcome::default()
            };
            return Ok((outcome, ok.status));
        }
        let n = Reader::new(first).lenenc_int().map_err(io_err)? as usize;
        let columns = self.read_definitions(n).await?;
        let mut rows = Vec::new();
        loop {
            let p = self.io.read_packet().await.map_err(io_err)?;
            if is_eof(&p) {
                let (warnings, status) = parse_eof(&p, 0).map_err(io_err)?;
                let outcome = Outcome {
                    columns,
                    rows,
                    warnings,
                    ..Outcome::default()
                };
                return Ok((outcome, status));
            }
            if is_err(&p) {
                return Err(server_error(&p));
            }
            let row = match format {
                RowFormat::Text => decode_text_row(&p, n)?,
                RowFormat::Binary => decode_binary_row(&p, &columns)?,
            };
            rows.push(row);
        }
    }

    /// Reads `n` column definitions and the EOF packet after them.
    pub async fn read_definitions(&mut self, n: usize) -> Result<Vec<ColumnDefinition>, StmtError> {
        let mut defs = Vec::with_capacity(n);
        for _ in 0..n {
            let p = self.io.read_packet().await.map_err(io_err)?;
            defs.push(ColumnDefinition::parse(&p).map_err(io_err)?);
        }
        let eof = self.io.read_packet().await.map_err(io_err)?;
        if !is_eof(&eof) {
            return Err(StmtError::Io("no EOF after the column definitions".into()));
        }
        Ok(defs)
    }
}

fn server_error(p: &[u8]) -> StmtError {
    match ErrPacket::parse(p) {
        Ok(e) => StmtError::Server(e),
        Err(e) => io_err(e),
    }
}

/// The COM_STMT_EXECUTE packet: no cursor, one iteration, types always sent.
pub fn execute_packet(id: u32, params: &[Param]) -> Vec<u8> {
    execute_packet_with(id, params, true)
}

/// The COM_STMT_EXECUTE packet: no cursor, one iteration, the types only when `send_types`.
pub fn execute_packet_with(id: u32, params: &[Param], send_types: bool) -> Vec<u8> {
    let mut p = BytesMut::new();
    p.extend_from_slice(&[COM_STMT_EXECUTE]);
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&[0]);
    p.extend_from_slice(&1u32.to_le_bytes());
    if params.is_empty() {
        return p.to_vec();
    }
    let mut bitmap = vec![0u8; params.len().div_ceil(8)];
    for (i, v) in params.iter().enumerate() {
        if *v == Param::Null {
            bitmap[i / 8] |= 1 << (i % 8);
        }
    }
    p.extend_from_slice(&bitmap);
    p.extend_from_slice(&[u8::from(send_types)]);
    for v in params.iter().filter(|_| send_types) {
        p.extend_from_slice(&v.wire_type());
    }
    for v in params {
        v.put_value(&mut p);
    }
    p.to_vec()
}

/// A text-protocol row as strings (lossy UTF-8; None = NULL).
fn decode_text_row(p: &[u8], n: usize) -> Result<Vec<Option<String>>, StmtError> {
    let row = tessera_protocol::resultset::parse_text_row(p, n).map_err(io_err)?;
    Ok(row
        .into_iter()
        .map(|v| v.map(|b| String::from_utf8_lossy(&b).into_owned()))
        .collect())
}

/// A binary-protocol row, each value rendered by [`binary_value_text`].
pub fn decode_binary_row(p: &[u8], columns: &[ColumnDefinition]) -> Result<Vec<Option<String>>, StmtError> {
    let n = columns.len();
    let bitmap_len = (n + 7 + 2) / 8;
    if p.len() < 1 + bitmap_len {
        return Err(StmtError::Io("binary row shorter than its null bitmap".into()));
    }
    let bitmap = &p[1..1 + bitmap_len];
    let mut r = Reader::new(&p[1 + bitmap_len..]);
    let mut row = Vec::with_capacity(n);
    for (i, col) in columns.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            row.push(None);
        } else {
            row.push(Some(binary_value_text(&mut r, col)?));
        }
    }
    Ok(row)
}

/// Reads one binary value of `col`'s type and renders it as text: integers in decimal,
/// doubles and floats in Rust's shortest round-trip form, dates as `YYYY-MM-DD[ hh:mm:ss[.f]]`,
/// times as `[-]h:mm:ss[.f]`, everything else (decimals, strings, blobs) as its bytes.
pub fn binary_value_text(r: &mut Reader<'_>, col: &ColumnDefinition) -> Result<String, StmtError> {
    let unsigned = col.flags & UNSIGNED_FLAG != 0;
    let text = match col.column_type {
        0x01 => int_text(i128::from(r.u8().map_err(io_err)?), 8, unsigned),
        0x02 | 0x0d => int_text(i128::from(r.u16().map_err(io_err)?), 16, unsigned),
        0x03 | 0x09 => int_text(i128::from(r.u32().map_err(io_err)?), 32, unsigned),
        0x08 => int_text(i128::from(r.u64().map_err(io_err)?), 64, unsigned),
        0x04 => format!("{:?}", f32::from_bits(r.u32().map_err(io_err)?)),
        0x05 => format!("{:?}", f64::from_bits(r.u64().map_err(io_err)?)),
        0x07 | 0x0a | 0x0c | 0x0e => datetime_text(r, col.decimals)?,
        0x0b => time_text(r, col.decimals)?,
        0x06 => String::new(),
        _ => String::from_utf8_lossy(r.lenenc_bytes().map_err(io_err)?).into_owned(),
    };
    Ok(text)
}

/// An integer read as unsigned `bits` wide, reinterpreted as signed unless `unsigned`.
fn int_text(raw: i128, bits: u32, unsigned: bool) -> String {
    if unsigned || raw < 1i128 << (bits - 1) {
        raw.to_string()
    } else {
        (raw - (1i128 << bits)).to_string()
    }
}

/// DATE / DATETIME / TIMESTAMP: a length byte (0, 4, 7 or 11) and the fields present.
fn datetime_text(r: &mut Reader<'_>, decimals: u8) -> Result<String, StmtError> {
    let len = r.u8().map_err(io_err)?;
    let (mut year, mut month, mut day, mut hour, mut min, mut sec, mut micro) = (0, 0, 0, 0, 0, 0, 0);
    if len >= 4 {
        year = r.u16().map_err(io_err)?;
        month = r.u8().map_err(io_err)?;
        day = r.u8().map_err(io_err)?;
    }
    if len >= 7 {
        hour = r.u8().map_err(io_err)?;
        min = r.u8().map_err(io_err)?;
        sec = r.u8().map_err(io_err)?;
    }
    if len >= 11 {
        micro = r.u32().map_err(io_err)?;
    }
    let date = format!("{year:04}-{month:02}-{day:02}");
    if len < 7 {
        return Ok(date);
    }
    Ok(format!(
        "{date} {hour:02}:{min:02}:{sec:02}{}",
        fraction(micro, decimals)
    ))
}

/// TIME: a length byte (0, 8 or 12), sign, days, h:m:s and microseconds.
fn time_text(r: &mut Reader<'_>, decimals: u8) -> Result<String, StmtError> {
    let len = r.u8().map_err(io_err)?;
    if len == 0 {
        return Ok(format!("00:00:00{}", fraction(0, decimals)));
    }
    let negative = r.u8().map_err(io_err)? == 1;
    let days = r.u32().map_err(io_err)?;
    let hour = r.u8().map_err(io_err)?;
    let min = r.u8().map_err(io_err)?;
    let sec = r.u8().map_err(io_err)?;
    let micro = if len >= 12 { r.u32().map_err(io_err)? } else { 0 };
    let hours = days * 24 + u32::from(hour);
    let sign = if negative { "-" } else { "" };
    Ok(format!(
        "{sign}{hours:02}:{min:02}:{sec:02}{}",
        fraction(micro, decimals)
    ))
}

/// `.ffffff` cut to the column's `decimals` (1..=6); all six digits when the column does not
/// say and the value has a fraction; nothing otherwise.
fn fraction(micro: u32, decimals: u8) -> String {
    let digits = match decimals {
        1..=6 => usize::from(decimals),
        _ if micro != 0 => 6,
        _ => return String::new(),
    };
    format!(".{:06}", micro)[..=digits].to_string()
}
