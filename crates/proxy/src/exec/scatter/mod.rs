//! Scatter reads: the shard SQL is sent to every shard first (they work in parallel), their
//! column definitions read, then rows are pulled through the merge stages as the merge needs
//! them and written to the client. Memory holds one row per shard plus what a stage buffers
//! (bounded by the merge's cap).

use crate::error::ProxyError;
use crate::exec::merge::{self, MergeError, MergeSpec, Output, RowSink, RowSource, SortBy, SortKey};
use crate::exec::row::{decode_text_row, encode_text_row_for, Value};
use crate::pool::PooledConn;
use crate::route::sharded::select::HIDDEN_BASE;
use crate::route::sharded::{Col, Scatter};
use bytes::BytesMut;
use tessera_protocol::response::{is_eof, is_err, is_result_end_ok, ErrPacket};
use tessera_protocol::resultset::ColumnDefinition;

/// One shard's result set, read row by row.
pub struct ShardState {
    pub shard: usize,
    pub conn: PooledConn,
    pub columns: Vec<ColumnDefinition>,
    pub done: bool,
    /// Status flags of the shard's last packet.
    pub status: u16,
    pub warnings: u16,
}

/// A merge's view of one shard's result set.
pub struct ShardSource<'a>(pub &'a mut ShardState);

impl RowSource for ShardSource<'_> {
    async fn next_row(&mut self) -> Result<Option<Vec<Value>>, MergeError> {
        self.0.next_row().await
    }
}

impl ShardState {
    async fn next_row(&mut self) -> Result<Option<Vec<Value>>, MergeError> {
        if self.done {
            return Ok(None);
        }
        let p = self.conn.read().await.map_err(|e| MergeError::Source(e.to_string()))?;
        if is_err(&p) {
            self.done = true;
            let e = ErrPacket::parse(&p).map_err(|e| MergeError::Source(e.to_string()))?;
            return Err(MergeError::Backend(e));
        }
        if is_eof(&p) || is_result_end_ok(&p) {
            self.done = true;
            self.note_end(&p);
            return Ok(None);
        }
        decode_text_row(&self.columns, &p)
            .map(Some)
            .map_err(|e| MergeError::Source(e.to_string()))
    }

    fn note_end(&mut self, p: &[u8]) {
        // EOF: 0xfe, warnings u16, status u16 (also the OK-as-EOF layout's first fields differ,
        // but both carry status after the counts; read it leniently).
        if p.len() >= 5 && p.len() < 9 {
            self.warnings = u16::from_le_bytes([p[1], p[2]]);
            self.status = u16::from_le_bytes([p[3], p[4]]);
        } else if let Ok(ok) = tessera_protocol::response::OkPacket::parse(p, self.conn.capabilities) {
            self.warnings = ok.warnings;
            self.status = ok.status;
        }
    }

    /// Reads whatever the merge did not need, so the connection can be reused.
    pub async fn drain(&mut self) -> Result<(), ProxyError> {
        while !self.done {
            let p = self.conn.read().await?;
            if is_err(&p) || is_eof(&p) || is_result_end_ok(&p) {
                self.done = true;
                if !is_err(&p) {
                    self.note_end(&p);
                }
            }
        }
        Ok(())
    }
}

/// Writes merged rows to the client: text rows, or binary rows for a prepared statement.
pub struct TextSink<'a, S> {
    pub client: &'a mut tessera_protocol::PacketStream<S>,
    /// The client's columns.
    pub columns: Vec<ColumnDefinition>,
    pub buf: BytesMut,
    pub binary: bool,
}

impl<S: tokio::io::AsyncRead + tessera_protocol::packet::SendBuffer + Send> RowSink for TextSink<'_, S> {
    async fn send_row(&mut self, row: &[Value]) -> Result<(), MergeError> {
        self.buf.clear();
        let row = &row[..self.columns.len().min(row.len())];
        if self.binary {
            crate::exec::row::encode_binary_row(&self.columns, row, &mut self.buf);
        } else {
            encode_text_row_for(&self.columns, row, &mut self.buf);
        }
        self.client.write_packet(&self.buf);
        if self.client.pending_write() > 64 * 1024 {
            self.client.flush().await.map_err(|e| MergeError::Sink(e.to_string()))?;
        }
        Ok(())
    }

    async fn client_left(&mut self) {
        crate::exec::forward::client_left(self.client).await
    }
}

/// Reads a result set's header from a shard: the column definitions, parsed and as sent.
pub async fn read_header(conn: &mut PooledConn) -> Result<(Vec<ColumnDefinition>, Vec<bytes::Bytes>), ProxyError> {
    let first = conn.read().await?;
    if is_err(&first) {
        let e = ErrPacket::parse(&first).map_err(|e| conn.lost(e))?;
        return Err(ProxyError::Backend(e));
    }
    let mut r = tessera_protocol::codec::Reader::new(&first);
    let count = r.lenenc_int().map_err(|e| conn.lost(e))? as usize;
    if count == 0 {
        return Err(ProxyError::Unsupported(
            "Tessera: a scatter statement that returns no rows".into(),
        ));
    }
    let mut columns = Vec::with_capacity(count);
    let mut raw = Vec::with_capacity(count);
    for _ in 0..count {
        let p = conn.read().await?;
        let extended = conn.extended_metadata;
        columns.push(ColumnDefinition::parse_with(&p, extended).map_err(|e| conn.lost(e))?);
        raw.push(p);
    }
    if conn.uses_eof() {
        conn.read().await?;
    }
    Ok((columns, raw))
}

/// The plan's merge with its column references resolved now that the shards described their
/// columns: hidden columns after the visible ones, collation weights for non-binary strings,
/// AVG's scale and type from its column.
pub fn resolve_merge(
    s: &Scatter,
    columns: &[ColumnDefinition],
    group_concat_max_len: usize,
) -> Result<MergeSpec, ProxyError> {
    let visible = columns
        .len()
        .checked_sub(s.hidden)
        .ok_or_else(|| ProxyError::Unsupported("Tessera: shards answered fewer columns than planned".into()))?;
    let fix = |i: usize| {
        if i >= HIDDEN_BASE {
            visible + (i - HIDDEN_BASE)
        } else {
            i
        }
    };
    let col = |c: Col| match c {
        Col::Visible(i) => i,
        Col::Hidden(i) => visible + i,
    };
    let weights: Vec<(usize, usize)> = s
        .weighted
        .iter()
        .map(|w| (col(w.value), col(w.weight)))
        .filter(|(v, _)| columns.get(*v).is_some_and(is_collated_string))
        .collect();
    let key = |k: &SortKey| -> SortKey {
        let column = fix(k.column);
        let by = match weights.iter().find(|(v, _)| *v == column) {
            Some((_, w)) if matches!(k.by, SortBy::Value) => SortBy::Weight(*w),
            _ => k.by,
        };
        SortKey {
            column,
            descending: k.descending,
            by,
        }
    };
    let mut spec = s.merge.clone();
    spec.visible = visible;
    spec.order = spec.order.iter().map(key).collect();
    if let Some(a) = spec.aggregate.as_mut() {
        a.group_by = a.group_by.iter().map(key).collect();
        for (i, o) in a.outputs.iter_mut().enumerate() {
            *o = match o.clone() {
                Output::First(c) => Output::First(fix(c)),
                Output::Expr(o) => Output::Expr(o),
                Output::Count(c) => Output::Count(fix(c)),
                Output::Sum(c) => Output::Sum(fix(c)),
                Output::Min(k) => Output::Min(key(&k)),
                Output::Max(k) => Output::Max(key(&k)),
                Output::Avg { sum, count, .. } => {
                    let def = columns.get(i);
                    Output::Avg {
                        sum: fix(sum),
                        count: fix(count),
                        scale: def.map_or(4, |d| d.decimals as u32),
                        double: def.is_some_and(|d| is_floating(d.column_type)),
                    }
                }
                Output::CountDistinct { column } => Output::CountDistinct { column: key(&column) },
                Output::SumDistinct { column, .. } => {
                    let k = key(&column);
                    let value = k.column;
                    Output::SumDistinct { column: k, value }
                }
                Output::AvgDistinct { column, .. } => {
                    let k = key(&column);
                    let def = columns.get(i);
                    Output::AvgDistinct {
                        value: k.column,
                        column: k,
                        scale: def.map_or(4, |d| d.decimals as u32),
                        double: def.is_some_and(|d| is_floating(d.column_type)),
                    }
                }
                Output::GroupConcat {
                    value,
                    separator,
                    order,
                    distinct,
                    repeat,
                    ..
                } => {
                    let def = columns.get(i);
                    let value = fix(value);
                    Output::GroupConcat {
                        value,
                        separator,
                        max_len: group_concat_max_len,
                        order: order.iter().map(key).collect(),
                        // DISTINCT compares the collation weight of a string value.
                        distinct: distinct.map(|_| match weights.iter().find(|(v, _)| *v == value) {
                            Some((_, w)) => SortBy::Weight(*w),
                            None => SortBy::Value,
                        }),
                        utf8: def.is_some_and(|d| d.charset != 63),
                        repeat: repeat.map(fix),
                    }
                }
            };
        }
    }
    weigh_final_order(&mut spec, &weights);
    Ok(spec)
}

/// A final ORDER BY on a grouped string column compares its collation weight: the weight
/// column joins the outputs (hidden) and the key compares it.
fn weigh_final_order(spec: &mut MergeSpec, weights: &[(usize, usize)]) {
    let Some(agg) = spec.aggregate.as_mut() else {
        return;
    };
    for k in spec.final_order.iter_mut() {
        // The output that holds the key's collation weight: the group column's weight, or
        // MIN/MAX over the weights (the weight of the MIN/MAX value).
        let weight_output = match agg.outputs.get(k.column) {
            Some(Output::First(c)) => weights.iter().find(|(v, _)| v == c).map(|(_, w)| Output::First(*w)),
            Some(Output::Min(m)) => weight_of(m, weights).map(|w| Output::Min(SortKey::asc(w))),
            Some(Output::Max(m)) => weight_of(m, weights).map(|w| Output::Max(SortKey::asc(w))),
            _ => None,
        };
        let Some(wanted) = weight_output else {
            continue;
        };
        let out = match agg.outputs.iter().position(|o| *o == wanted) {
            Some(i) => i,
            None => {
                agg.outputs.push(wanted);
                agg.outputs.len() - 1
            }
        };
        k.by = SortBy::Weight(out);
    }
}

/// The weight column of a MIN/MAX key over a collated string.
fn weight_of(k: &SortKey, weights: &[(usize, usize)]) -> Option<usize> {
    weights.iter().find(|(v, _)| *v == k.column).map(|(_, w)| *w)
}

/// A column definition packet with another name (the column's type and origin unchanged).
pub fn with_name(raw: &[u8], name: &[u8]) -> Option<bytes::Bytes> {
    let mut r = tessera_protocol::codec::Reader::new(raw);
    for _ in 0..4 {
        r.lenenc_bytes().ok()?;
    }
    let name_at = r.position();
    r.lenenc_bytes().ok()?;
    let rest = &raw[r.position()..];
    let mut out = BytesMut::with_capacity(raw.len() + name.len());
    out.extend_from_slice(&raw[..name_at]);
    tessera_protocol::codec::put_lenenc_bytes(&mut out, name);
    out.extend_from_slice(rest);
    Some(out.freeze())
}

fn is_floating(t: u8) -> bool {
    matches!(t, 4 | 5)
}

/// A string column whose collation is not binary (63): ordered by weight.
fn is_collated_string(c: &ColumnDefinition) -> bool {
    matches!(c.column_type, 15 | 253 | 254 | 249 | 250 | 251 | 252) && c.charset != 63
}

/// Runs the merge from `sources` into `sink`.
pub async fn run_merge<K: RowSink>(
    spec: &MergeSpec,
    sources: Vec<ShardSource<'_>>,
    sink: &mut K,
) -> Result<merge::MergeStats, MergeError> {
    merge::run(spec, sources, sink).await
}
