//! A read on several shards: the statement sent to each, their headers read under the scatter
//! deadline, the merge resolved against the columns they described, the merged rows written to
//! the client (text, or binary for a prepared statement), SQL_CALC_FOUND_ROWS summed.

use super::{ShardSession, DATABASE_MARKER, ONCE_MARKER};
use crate::error::ProxyError;
use crate::exec::merge::{MergeError, MergeSpec};
use crate::exec::scatter::{ScatterRun, TextSink};
use crate::topology::ShardedSchema;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tessera_protocol::resultset::ColumnDefinition;

/// One scatter read: where, what, and the limits it runs under.
pub struct ScatterRead<'a, R> {
    pub schema: &'a ShardedSchema,
    pub shards: &'a [usize],
    /// The shard statement (database and once markers still in).
    pub sql: &'a str,
    /// The merge for the columns the first shard described (the planner's, resolved).
    pub resolve: R,
    /// How long the shards may take to describe their results.
    pub deadline: Duration,
    /// A prepared statement's execution: its PREPARE's column definitions (names kept).
    pub binary: Option<Arc<[Bytes]>>,
    pub extended_metadata: bool,
}

/// Runs the read and writes its result; the rows the client's FOUND_ROWS() then reports.
pub async fn scatter<S, R>(s: &mut S, read: ScatterRead<'_, R>) -> Result<u64, ProxyError>
where
    S: ShardSession,
    R: FnOnce(&[ColumnDefinition]) -> Result<MergeSpec, ProxyError>,
{
    let calc_found_rows = read.sql.to_ascii_uppercase().contains("SQL_CALC_FOUND_ROWS");
    let mut run = send_all(s, read.schema, read.shards, read.sql).await?;
    let raw = match run
        .headers(read.deadline, crate::exec::forward::client_left(s.client()))
        .await
    {
        Ok(raw) => raw,
        Err(e) => {
            s.handle().set_running(None);
            return Err(e);
        }
    };
    let spec = (read.resolve)(&run.states[0].columns);
    if spec.is_err() {
        s.handle().set_running(None);
        run.break_all();
    }
    let spec = spec?;
    let visible = spec.visible;
    let columns = run.states[0].columns[..visible].to_vec();
    let header = described(&raw[..visible], read.binary.as_deref(), read.extended_metadata);
    write_header(s, &header);
    let in_txn = s.in_transaction();
    let mut sink = TextSink {
        client: s.client(),
        columns,
        buf: bytes::BytesMut::new(),
        binary: read.binary.is_some(),
    };
    let (merged, warnings) = run.merge(&spec, &mut sink).await;
    s.handle().set_running(None);
    let result = match merged {
        Ok(stats) => {
            let found = match calc_found_rows {
                true => found_rows(&mut run).await,
                false => stats.rows_counted,
            };
            write_result_end(s, warnings).await.map(|()| found)
        }
        Err(MergeError::ClientLeft) => Err(ProxyError::Client(tessera_protocol::ProtocolError::Closed)),
        Err(e) => Err(e.into()),
    };
    for st in run.states {
        s.park_shard(st.shard, st.conn, in_txn);
    }
    result
}

/// Sends the statement to every shard and publishes their turns (KILL QUERY reaches every
/// shard while they work; one that came while they were sent is caught up with).
async fn send_all<S: ShardSession>(
    s: &mut S,
    schema: &ShardedSchema,
    shards: &[usize],
    sql: &str,
) -> Result<ScatterRun, ProxyError> {
    let seen = s.handle().kill_requests();
    let mut run = ScatterRun::default();
    for (i, &shard) in shards.iter().enumerate() {
        let conn = match s.shard_conn(schema, shard).await {
            Ok(conn) => conn,
            Err(e) => {
                run.break_all();
                return Err(e);
            }
        };
        let per_shard = sql
            .replace(
                DATABASE_MARKER,
                &crate::state::quote_ident(&schema.shards[shard].database),
            )
            .replace(ONCE_MARKER, if i == 0 { "1=1" } else { "1=0" });
        run.send(shard, conn, &per_shard).await?;
    }
    let running: Vec<_> = run
        .states
        .iter()
        .map(|st| (st.conn.server.clone(), st.conn.thread_id))
        .collect();
    s.handle().set_running_all(running);
    s.catch_up_kill(seen).await;
    Ok(run)
}

/// The column definitions the client gets: the shards' (their types follow the bound values),
/// named as a prepared statement's PREPARE named them (`balance + ?`, not the inlined value).
fn described(raw: &[Bytes], prepared: Option<&[Bytes]>, extended_metadata: bool) -> Vec<Bytes> {
    let Some(meta) = prepared.filter(|m| m.len() == raw.len()) else {
        return raw.to_vec();
    };
    raw.iter()
        .zip(meta.iter())
        .map(|(def, prep)| {
            let name = ColumnDefinition::parse_with(prep, extended_metadata)
                .map(|d| d.name)
                .ok();
            name.and_then(|n| crate::exec::scatter::with_name(def, n.as_bytes()))
                .unwrap_or_else(|| def.clone())
        })
        .collect()
}

/// SQL_CALC_FOUND_ROWS: the rows of every shard without LIMIT, summed (each shard counts its
/// own; a plain scatter's rows are disjoint).
async fn found_rows(run: &mut ScatterRun) -> u64 {
    let mut total = 0u64;
    for st in run.states.iter_mut() {
        match st.conn.query_rows("SELECT FOUND_ROWS()").await {
            Ok(result) => total += crate::backend::conn::first_number::<u64>(&result).unwrap_or(0),
            Err(_) => st.conn.broken = true,
        }
    }
    total
}

fn write_header<S: ShardSession>(s: &mut S, raw_columns: &[Bytes]) {
    let reply = s.reply();
    let client = s.client();
    let mut count = bytes::BytesMut::new();
    tessera_protocol::resultset::encode_column_count(&mut count, raw_columns.len() as u64, reply.dialect, true);
    client.write_packet(&count);
    for c in raw_columns {
        client.write_packet(c);
    }
    if reply.capabilities & tessera_protocol::flags::CLIENT_DEPRECATE_EOF == 0 {
        let mut eof = bytes::BytesMut::new();
        tessera_protocol::response::encode_eof(&mut eof, 0, reply.status);
        client.write_packet(&eof);
    }
}

async fn write_result_end<S: ShardSession>(s: &mut S, warnings: u16) -> Result<(), ProxyError> {
    let reply = s.reply();
    let client = s.client();
    let mut end = bytes::BytesMut::new();
    tessera_protocol::response::encode_result_end(&mut end, warnings, reply.status, reply.capabilities);
    client.write_packet(&end);
    client.flush().await?;
    Ok(())
}
