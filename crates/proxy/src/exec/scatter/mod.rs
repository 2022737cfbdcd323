//! Scatter reads: the shard SQL is sent to every shard first (they work in parallel), their
//! column definitions read within a deadline, then rows are pulled through the merge stages as
//! the merge needs them and written to the client. Memory holds one row per shard plus what a
//! stage buffers (bounded by the merge's cap). Generic over [`ShardConn`], so every way a
//! shard can fail is unit-tested against scripted fake servers (`tests.rs`).

#[cfg(test)]
mod tests;

use crate::backend::shard_conn::ShardConn;
use crate::error::{ProxyError, ServerError};
use crate::exec::merge::{self, MergeError, MergeSpec, MergeStats, RowSink, RowSource};
use crate::exec::row::{decode_text_row, encode_text_row_for, Value};
use crate::pool::PooledConn;
use bytes::{Bytes, BytesMut};
use std::future::Future;
use std::time::Duration;
use tessera_protocol::response::{is_eof, is_err, is_result_end_ok, ErrPacket};
use tessera_protocol::resultset::ColumnDefinition;

/// One shard's result set, read row by row.
pub struct ShardState<C = PooledConn> {
    pub shard: usize,
    pub conn: C,
    pub columns: Vec<ColumnDefinition>,
    pub done: bool,
    /// Status flags of the shard's last packet.
    pub status: u16,
    pub warnings: u16,
}

/// A merge's view of one shard's result set.
pub struct ShardSource<'a, C>(pub &'a mut ShardState<C>);

impl<C: ShardConn> RowSource for ShardSource<'_, C> {
    async fn next_row(&mut self) -> Result<Option<Vec<Value>>, MergeError> {
        self.0.next_row().await
    }
}

impl<C: ShardConn> ShardState<C> {
    fn new(shard: usize, conn: C) -> Self {
        ShardState {
            shard,
            conn,
            columns: Vec::new(),
            done: false,
            status: 0,
            warnings: 0,
        }
    }

    async fn next_row(&mut self) -> Result<Option<Vec<Value>>, MergeError> {
        if self.done {
            return Ok(None);
        }
        let p = self
            .conn
            .read_packet()
            .await
            .map_err(|e| MergeError::Source(e.to_string()))?;
        if is_err(&p) {
            self.done = true;
            let e = ErrPacket::parse(&p).map_err(|e| MergeError::Source(self.conn.lost(e).to_string()))?;
            return Err(MergeError::Backend(e));
        }
        if is_eof(&p) || is_result_end_ok(&p) {
            self.done = true;
            self.note_end(&p);
            return Ok(None);
        }
        // A row that does not decode leaves the stream's position unknown: not reused.
        decode_text_row(&self.columns, &p).map(Some).map_err(|e| {
            self.conn.mark_broken();
            MergeError::Source(e.to_string())
        })
    }

    /// The end packet's warnings and status: an EOF, or an OK with the 0xfe header where the
    /// connection negotiated CLIENT_DEPRECATE_EOF (told apart by the capabilities).
    fn note_end(&mut self, p: &[u8]) {
        if let Ok((warnings, status)) = tessera_protocol::response::parse_eof(p, self.conn.capabilities()) {
            self.warnings = warnings;
            self.status = status;
        }
    }

    /// Reads whatever the merge did not need, so the connection can be reused.
    pub async fn drain(&mut self) -> Result<(), ProxyError> {
        while !self.done {
            let p = self.conn.read_packet().await?;
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

/// One scatter read in flight: every shard's connection and result set, in shard order. A
/// connection whose answer was not read to its end is broken (it closes, never pooled).
pub struct ScatterRun<C = PooledConn> {
    pub states: Vec<ShardState<C>>,
}

impl<C: ShardConn> Default for ScatterRun<C> {
    fn default() -> Self {
        ScatterRun { states: Vec::new() }
    }
}

impl<C: ShardConn> ScatterRun<C> {
    /// Sends `sql` to `shard` over `conn`. A send that fails breaks every connection of the
    /// run (the ones sent before have answers nobody will read).
    pub async fn send(&mut self, shard: usize, mut conn: C, sql: &str) -> Result<(), ProxyError> {
        conn.queue_query(sql);
        let sent = conn.flush().await;
        self.states.push(ShardState::new(shard, conn));
        if sent.is_err() {
            self.break_all();
        }
        sent
    }

    /// Every connection of the run is broken.
    pub fn break_all(&mut self) {
        self.states.iter_mut().for_each(|st| st.conn.mark_broken());
    }

    /// Reads every shard's column definitions: every shard must start answering within
    /// `deadline` (they run in parallel), and `client_left` (the client closing its
    /// connection) ends the wait. Returns the first shard's definitions as sent. On any
    /// failure (a shard's error, a lost or malformed header, the deadline, the client gone)
    /// every connection of the run is broken and the first failure is the error.
    pub async fn headers(
        &mut self,
        deadline: Duration,
        client_left: impl Future<Output = ()>,
    ) -> Result<Vec<Bytes>, ProxyError> {
        let headers = tokio::time::timeout(deadline, async {
            let mut out = Vec::with_capacity(self.states.len());
            for st in self.states.iter_mut() {
                out.push(read_header(&mut st.conn).await);
            }
            out
        });
        let headers = tokio::select! {
            biased;
            headers = headers => Some(headers),
            () = client_left => None,
        };
        let failure = match headers {
            None => ProxyError::Client(tessera_protocol::ProtocolError::Closed),
            Some(Err(_)) => ServerError::ScatterDeadline(deadline.as_millis()).into(),
            Some(Ok(headers)) => {
                let mut first = None;
                let mut failure = None;
                for (st, h) in self.states.iter_mut().zip(headers) {
                    match h {
                        Ok((columns, raw)) => {
                            st.columns = columns;
                            first.get_or_insert(raw);
                        }
                        Err(e) => {
                            failure.get_or_insert(e);
                        }
                    }
                }
                match failure {
                    None => return Ok(first.unwrap_or_default()),
                    Some(e) => e,
                }
            }
        };
        self.break_all();
        Err(failure)
    }

    /// Merges the shards' rows into `sink` by `spec`, then reads what each shard has left so
    /// its connection can be reused; a shard that failed, or every shard when the client
    /// left, is broken instead. Returns the merge's outcome and the shards' warnings, summed.
    pub async fn merge<K: RowSink>(&mut self, spec: &MergeSpec, sink: &mut K) -> (Result<MergeStats, MergeError>, u16) {
        let sources: Vec<ShardSource<'_, C>> = self.states.iter_mut().map(ShardSource).collect();
        let merged = merge::run(spec, sources, sink).await;
        let mut warnings = 0u16;
        for st in self.states.iter_mut() {
            // The shards of a client that left are not waited for: their connections close.
            if matches!(merged, Err(MergeError::ClientLeft)) || st.drain().await.is_err() {
                st.conn.mark_broken();
            }
            warnings = warnings.saturating_add(st.warnings);
        }
        (merged, warnings)
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
pub async fn read_header<C: ShardConn>(conn: &mut C) -> Result<(Vec<ColumnDefinition>, Vec<Bytes>), ProxyError> {
    let first = conn.read_packet().await?;
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
        let p = conn.read_packet().await?;
        let extended = conn.extended_metadata();
        columns.push(ColumnDefinition::parse_with(&p, extended).map_err(|e| conn.lost(e))?);
        raw.push(p);
    }
    if conn.uses_eof() {
        conn.read_packet().await?;
    }
    Ok((columns, raw))
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
