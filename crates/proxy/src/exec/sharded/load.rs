//! LOAD DATA LOCAL INFILE into a sharded table: every shard starts its LOAD DATA (which asks
//! for the file), the client's file is read once and cut into records, each record goes to the
//! shard its key places it on, and the shards' counts are summed. A failure undoes the load on
//! every shard (to the statement's savepoint inside the client's transaction).

use super::load_file::{key_value, LoadCounts, LoadSpec, RecordSplitter};
use super::{for_shard, ShardSession};
use crate::backend::ShardConn;
use crate::error::ProxyError;
use crate::pool::PooledConn;
use crate::topology::shard_fn::ShardFunction;
use crate::topology::ShardedSchema;
use tessera_protocol::response::{is_err, is_ok, ErrPacket, OkPacket, LOCAL_INFILE_HEADER};

/// The client's file is sent to the shards in pieces of about this size.
const CHUNK: usize = 64 * 1024;

/// One LOAD DATA LOCAL across the shards.
pub struct ShardLoad<'a> {
    pub schema: &'a ShardedSchema,
    pub spec: &'a LoadSpec,
    /// The field of a record that holds the shard key.
    pub key_field: usize,
    pub function: &'a ShardFunction,
    /// The file name the client is asked for.
    pub file_name: Vec<u8>,
    /// The load is a transaction of its own (else it runs inside the client's, under a
    /// savepoint).
    pub implicit: bool,
}

/// Runs the load; the summed counts (the shards' connections stay in the transaction).
pub async fn load<S: ShardSession>(s: &mut S, load: ShardLoad<'_>) -> Result<LoadCounts, ProxyError> {
    let schema = load.schema;
    let begin = (!load.implicit).then_some("SAVEPOINT tessera_statement");
    let mut conns = Vec::with_capacity(schema.shard_count());
    for shard in 0..schema.shard_count() {
        let opened = match s.shard_conn(schema, shard).await {
            Ok(mut conn) => {
                let r = open(&mut conn, begin, &for_shard(&load.spec.shard_sql, schema, shard)).await;
                conns.push((shard, conn));
                r
            }
            Err(e) => Err(e),
        };
        if let Err(e) = opened {
            let _ = close(&mut conns).await;
            return Err(undo(s, conns, load.implicit, e).await);
        }
    }
    let mut request = vec![LOCAL_INFILE_HEADER];
    request.extend_from_slice(&load.file_name);
    s.client().write_packet(&request);
    s.client().flush().await?;
    let streamed = stream_records(s, &load, &mut conns).await;
    let counts = close(&mut conns).await;
    let total = match (streamed, counts) {
        (Err(e), _) | (Ok(()), Err(e)) => return Err(undo(s, conns, load.implicit, e).await),
        (Ok(()), Ok(total)) => total,
    };
    for (shard, conn) in conns {
        s.wrote(shard);
        s.park_shard(shard, conn, true);
    }
    Ok(total)
}

/// Starts a shard's savepoint and its LOAD DATA LOCAL (which asks for the file).
async fn open(conn: &mut PooledConn, begin: Option<&str>, sql: &str) -> Result<(), ProxyError> {
    if let Some(begin) = begin {
        conn.simple_command(begin).await?;
    }
    conn.queue_query(sql);
    conn.flush().await?;
    let answer = conn.read().await?;
    if answer.first() == Some(&LOCAL_INFILE_HEADER) {
        return Ok(());
    }
    conn.broken = true;
    match ErrPacket::parse(&answer) {
        Ok(e) if is_err(&answer) => Err(ProxyError::Backend(e)),
        _ => Err(ProxyError::Sharding(
            "a shard did not ask for the LOAD DATA file".into(),
        )),
    }
}

/// Reads the client's file to its end, sending each record to its shard.
async fn stream_records<S: ShardSession>(
    s: &mut S,
    load: &ShardLoad<'_>,
    conns: &mut [(usize, PooledConn)],
) -> Result<(), ProxyError> {
    let n = conns.len();
    let mut splitter = RecordSplitter::new(load.spec, load.key_field);
    let mut skip = load.spec.ignore_lines;
    let mut buffers: Vec<Vec<u8>> = vec![Vec::new(); n];
    let mut failure: Option<ProxyError> = None;
    loop {
        let chunk = s.client().read_packet().await?;
        let last = chunk.is_empty();
        let mut records = splitter.feed(&chunk);
        if last {
            records.extend(splitter.finish());
        }
        for (bytes, key) in records {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            if failure.is_some() {
                continue;
            }
            match load.function.shard_of(&key_value(key), n) {
                Ok(shard) => buffers[shard].extend_from_slice(&bytes),
                Err(e) => failure = Some(e.into()),
            }
        }
        for (shard, buf) in buffers.iter_mut().enumerate() {
            if failure.is_none() && (buf.len() >= CHUNK || (last && !buf.is_empty())) {
                conns[shard].1.io.write_packet(buf);
                conns[shard].1.flush().await?;
                buf.clear();
            }
        }
        if last {
            break;
        }
    }
    failure.map_or(Ok(()), Err)
}

/// Ends every shard's file (the empty packet) and reads its answer; sums the counts.
async fn close(conns: &mut [(usize, PooledConn)]) -> Result<LoadCounts, ProxyError> {
    let mut total = LoadCounts::default();
    let mut first_error = None;
    for (_, conn) in conns.iter_mut() {
        if conn.broken {
            continue;
        }
        conn.io.write_packet(&[]);
        let answer = match conn.flush().await {
            Ok(()) => conn.read().await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(p) if is_ok(&p) => {
                if let Ok(ok) = OkPacket::parse(&p, conn.capabilities) {
                    let mut counts = LoadCounts::parse(&ok.info);
                    counts.affected = ok.affected_rows;
                    total.add(counts);
                }
            }
            Ok(p) => {
                let e = ErrPacket::parse(&p)
                    .map(ProxyError::Backend)
                    .unwrap_or_else(|_| ProxyError::Sharding("a shard's LOAD DATA answer".into()));
                first_error.get_or_insert(e);
            }
            Err(e) => {
                conn.broken = true;
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(total), Err)
}

/// Rolls the shards' loads back and gives their connections back (or keeps them in the
/// client's transaction).
async fn undo<S: ShardSession>(
    s: &mut S,
    conns: Vec<(usize, PooledConn)>,
    implicit: bool,
    e: ProxyError,
) -> ProxyError {
    for (shard, mut conn) in conns {
        if !implicit
            && !conn.broken
            && conn
                .simple_command("ROLLBACK TO SAVEPOINT tessera_statement")
                .await
                .is_err()
        {
            conn.broken = true;
        }
        s.park_shard(shard, conn, true);
    }
    if implicit || !matches!(e, ProxyError::Backend(_)) {
        s.abort_transaction().await;
    }
    e
}
