//! DDL on a logical schema: the statement on every listed shard, one after the other, each
//! shard's failure named (MariaDB's own error when no shard applied it); the shard databases
//! of `CREATE DATABASE <logical>`.

use super::{for_shard, ShardSession};
use crate::error::{ProxyError, ServerError};
use crate::topology::ShardedSchema;

/// Runs `sql` on each of `shards`.
pub async fn on_shards<S: ShardSession>(
    s: &mut S,
    schema: &ShardedSchema,
    shards: &[usize],
    sql: &str,
) -> Result<(), ProxyError> {
    let mut failed = Vec::new();
    let mut done = Vec::new();
    let mut first_error = None;
    for &shard in shards {
        let mut conn = s.shard_conn(schema, shard).await?;
        match conn.simple_command(&for_shard(sql, schema, shard)).await {
            Ok(_) => done.push(shard),
            Err(e) => {
                failed.push(format!("shard {shard} ({}): {e}", schema.shards[shard].database));
                first_error.get_or_insert(e);
            }
        }
        s.park_shard(shard, conn, false);
    }
    match first_error {
        None => Ok(()),
        Some(e) if done.is_empty() => Err(e),
        Some(_) => Err(ServerError::DdlPartlyApplied {
            failed: failed.join("; "),
            done: format!("{done:?}"),
        }
        .into()),
    }
}

/// Creates every shard's database (on connections of Tessera's own); the first error, if any.
pub async fn create_databases<S: ShardSession>(
    s: &S,
    schema: &ShardedSchema,
    if_not_exists: bool,
) -> Result<(), ProxyError> {
    let mut first_error = None;
    for shard in &schema.shards {
        let mut conn = s.side_conn(shard).await?;
        let sql = format!(
            "CREATE DATABASE {}{}",
            if if_not_exists { "IF NOT EXISTS " } else { "" },
            crate::state::quote_ident(&shard.database)
        );
        if let Err(e) = conn.simple_command(&sql).await {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}
