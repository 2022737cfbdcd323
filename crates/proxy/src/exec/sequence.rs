//! Keys for AUTO_INCREMENT shard keys: Tessera hands out values from a sequence so that rows on
//! different shards never share one. Blocks of values are reserved in a table of the schema's
//! default shard (`tessera_sequences`, one row per table), so every Tessera process sharing the
//! shards draws from one sequence; a process keeps its block in memory. The first block starts
//! above the largest key any shard holds (rows loaded before Tessera are respected).

use crate::error::ProxyError;
use crate::pool::PooledConn;
use crate::topology::ShardedSchema;
use std::collections::HashMap;
use std::sync::Mutex;

/// Values reserved per round trip to the sequence table.
pub const BLOCK: i128 = 1000;

/// The blocks this process holds: sequence name -> (next value, end exclusive).
#[derive(Default)]
pub struct Sequences {
    blocks: Mutex<HashMap<String, (i128, i128)>>,
}

impl Sequences {
    /// `n` values from the block held, when it has them.
    pub fn take(&self, name: &str, n: usize) -> Option<Vec<i128>> {
        let mut blocks = self.blocks.lock().ok()?;
        let (next, end) = blocks.get_mut(name)?;
        if *end - *next < n as i128 {
            return None;
        }
        let out = (*next..*next + n as i128).collect();
        *next += n as i128;
        Some(out)
    }

    /// Keeps a newly reserved block (what a smaller request leaves of it).
    pub fn store(&self, name: &str, next: i128, end: i128) {
        if let Ok(mut blocks) = self.blocks.lock() {
            blocks.insert(name.to_string(), (next, end));
        }
    }
}

/// Reserves `size` values of sequence `name` (`schema.table`) above `max_key`: returns the
/// first. `conn` is a connection to the default shard's primary, outside any transaction of
/// the client.
pub async fn reserve(
    conn: &mut PooledConn,
    schema: &ShardedSchema,
    name: &str,
    size: i128,
    max_key: i128,
) -> Result<i128, ProxyError> {
    let db = crate::state::quote_ident(&schema.shards[schema.default_shard].database);
    // Written as the connection reads strings (it has the session's sql_mode).
    let quoted = crate::state::quote_string_as(name, conn.state.backslash_escapes());
    conn.simple_command(&format!(
        "CREATE TABLE IF NOT EXISTS {db}.tessera_sequences (name VARCHAR(190) PRIMARY KEY, next_id BIGINT NOT NULL) ENGINE=InnoDB"
    ))
    .await?;
    conn.simple_command(&format!(
        "INSERT INTO {db}.tessera_sequences (name, next_id) VALUES ({quoted}, {start}) \
         ON DUPLICATE KEY UPDATE next_id = GREATEST(next_id, VALUES(next_id))",
        start = max_key + 1
    ))
    .await?;
    conn.simple_command(&format!(
        "UPDATE {db}.tessera_sequences SET next_id = LAST_INSERT_ID(next_id + {size}) WHERE name = {quoted}"
    ))
    .await?;
    let result = conn.query_rows("SELECT LAST_INSERT_ID()").await?;
    let end: i128 = crate::backend::conn::first_number(&result)
        .ok_or_else(|| ProxyError::Sharding(format!("the sequence {name} gave no value")))?;
    Ok(end - size)
}
