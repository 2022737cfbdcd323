//! A write on several shards as one statement: each shard's statement in the session's
//! transaction (inside the client's, under a savepoint that undoes the statement on every
//! shard when one fails), counts summed; the keys of an INSERT whose AUTO_INCREMENT shard key
//! Tessera supplies.

use super::{for_shard, ShardSession, Summed};
use crate::error::ProxyError;
use crate::exec::sequence::Sequences;
use crate::topology::ShardedSchema;

const SAVEPOINT: &str = "SAVEPOINT tessera_statement";
const ROLLBACK_TO_SAVEPOINT: &str = "ROLLBACK TO SAVEPOINT tessera_statement";

/// Runs each shard's statement; `implicit`: the statement is a transaction of its own (no
/// savepoint: a failure rolls the whole transaction back); `replicated`: a broadcast table's
/// copies, which change alike (one shard's counts are the answer).
pub async fn each_shard<S: ShardSession>(
    s: &mut S,
    schema: &ShardedSchema,
    per_shard: &[(usize, String)],
    replicated: bool,
    implicit: bool,
) -> Result<Summed, ProxyError> {
    let mut sum = Summed::default();
    let mut done: Vec<usize> = Vec::new();
    for (shard, sql) in per_shard {
        let mut conn = match s.shard_conn(schema, *shard).await {
            Ok(c) => c,
            Err(e) => return Err(statement_failed(s, schema, &done, implicit, e).await),
        };
        let sql = for_shard(sql, schema, *shard);
        let step = async {
            if !implicit {
                conn.simple_command(SAVEPOINT).await?;
            }
            conn.simple_command(&sql).await
        }
        .await;
        s.wrote(*shard);
        s.park_shard(*shard, conn, true);
        done.push(*shard);
        match step {
            Ok(ok) => {
                if !replicated || done.len() == 1 {
                    sum.affected += ok.affected_rows;
                    sum.warnings = sum.warnings.saturating_add(ok.warnings);
                }
                if sum.insert_id == 0 {
                    sum.insert_id = ok.last_insert_id;
                }
            }
            Err(e) => return Err(statement_failed(s, schema, &done, implicit, e).await),
        }
    }
    Ok(sum)
}

/// Undoes a failed statement on several shards: the whole transaction when the failure ends
/// it (a lost shard, a deadlock, a lock wait), else back to the statement's savepoint.
async fn statement_failed<S: ShardSession>(
    s: &mut S,
    schema: &ShardedSchema,
    done: &[usize],
    implicit: bool,
    e: ProxyError,
) -> ProxyError {
    if implicit {
        return e;
    }
    if ends_transaction(&e) {
        s.abort_transaction().await;
        return match e {
            ProxyError::Backend(_) => e,
            e => ProxyError::TxnRolledBack(format!("a shard was lost during the transaction ({e})")),
        };
    }
    for shard in done {
        if let Ok(mut conn) = s.shard_conn(schema, *shard).await {
            if conn.simple_command(ROLLBACK_TO_SAVEPOINT).await.is_err() {
                conn.broken = true;
            }
            s.park_shard(*shard, conn, true);
        }
    }
    e
}

/// A failure after which the shards' transaction cannot go on: a lost shard, a deadlock
/// (1213) or a lock wait timeout (1205), which MariaDB ends with a rollback of its own.
fn ends_transaction(e: &ProxyError) -> bool {
    match e {
        ProxyError::Backend(p) => p.code == 1213 || p.code == 1205,
        _ => true,
    }
}

/// What a generated AUTO_INCREMENT shard key needs: its sequence, and the table and column
/// whose largest value any shard holds (the sequence starts above it).
pub struct KeySource<'a> {
    pub sequences: &'a Sequences,
    pub sequence: &'a str,
    pub table: &'a str,
    pub key: &'a str,
}

/// `n` keys from the process's reserved block of the sequence, reserving a new block (on the
/// default shard, above every shard's largest key) when it runs out.
pub async fn generate_keys<S: ShardSession>(
    s: &S,
    schema: &ShardedSchema,
    source: &KeySource<'_>,
    n: usize,
) -> Result<Vec<i128>, ProxyError> {
    if let Some(ids) = source.sequences.take(source.sequence, n) {
        return Ok(ids);
    }
    let max_key = max_key(s, schema, source.table, source.key).await?;
    let size = crate::exec::sequence::BLOCK.max(n as i128);
    let mut conn = s.side_conn(&schema.shards[schema.default_shard]).await?;
    let first = crate::exec::sequence::reserve(&mut conn, schema, source.sequence, size, max_key).await?;
    source.sequences.store(source.sequence, first + n as i128, first + size);
    Ok((first..first + n as i128).collect())
}

/// The largest key any shard holds (0 when none).
async fn max_key<S: ShardSession>(s: &S, schema: &ShardedSchema, table: &str, key: &str) -> Result<i128, ProxyError> {
    let mut max = 0i128;
    for shard in &schema.shards {
        let mut conn = s.side_conn(shard).await?;
        let sql = format!(
            "SELECT MAX({}) FROM {}.{}",
            crate::state::quote_ident(key),
            crate::state::quote_ident(&shard.database),
            crate::state::quote_ident(table)
        );
        if let Some(v) = crate::backend::conn::first_number::<i128>(&conn.query_rows(&sql).await?) {
            max = max.max(v);
        }
    }
    Ok(max)
}
