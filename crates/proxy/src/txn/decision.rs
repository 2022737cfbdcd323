//! The durable decision log: one row per two-phase transaction in `<xa_database>.xa_decisions`
//! on the coordinator's group. A `commit` row is inserted inside the coordinator branch's own
//! transaction, so that branch's COMMIT is the decision. A `rollback` row is written by
//! recovery before it rolls back branches without a decision: the primary key then keeps a
//! late `commit` from ever landing (fencing).

use super::xid::literal;
use crate::backend::ShardConn;
use crate::error::ProxyError;
use crate::state::quote_ident;

/// What the log says about a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Commit,
    Rollback,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Commit => "commit",
            Outcome::Rollback => "rollback",
        }
    }
}

/// MariaDB errors that mean the log's database or table does not exist yet.
pub fn is_missing_table(e: &ProxyError) -> bool {
    matches!(e, ProxyError::Backend(p) if p.code == 1146 || p.code == 1049)
}

/// The duplicate-key error: the gtrid already has a decision.
pub fn is_duplicate(e: &ProxyError) -> bool {
    matches!(e, ProxyError::Backend(p) if p.code == 1062)
}

fn table(db: &str) -> String {
    format!("{}.xa_decisions", quote_ident(db))
}

/// Creates the log's database and table when missing.
pub async fn ensure_table<C: ShardConn>(conn: &mut C, db: &str) -> Result<(), ProxyError> {
    conn.simple_command(&format!("CREATE DATABASE IF NOT EXISTS {}", quote_ident(db)))
        .await?;
    let create = format!(
        "CREATE TABLE IF NOT EXISTS {} (\
         gtrid VARBINARY(64) NOT NULL PRIMARY KEY, \
         outcome ENUM('commit','rollback') NOT NULL, \
         decided_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
         KEY (decided_at)) ENGINE=InnoDB",
        table(db)
    );
    conn.simple_command(&create).await.map(drop)
}

/// The INSERT that records `outcome` for `gtrid`.
pub fn record_sql(db: &str, gtrid: &str, outcome: Outcome) -> String {
    format!(
        "INSERT INTO {} (gtrid, outcome) VALUES ({}, '{}')",
        table(db),
        literal(gtrid),
        outcome.word()
    )
}

/// Writes a `rollback` decision unless one exists; waits at most `wait_s` for a transaction
/// still inserting its `commit`. Returns the decision that stands.
pub async fn fence<C: ShardConn>(conn: &mut C, db: &str, gtrid: &str, wait_s: u64) -> Result<Outcome, ProxyError> {
    let sql = format!(
        "SET STATEMENT innodb_lock_wait_timeout = {wait_s} FOR {}",
        record_sql(db, gtrid, Outcome::Rollback)
    );
    let result = match conn.simple_command(&sql).await {
        Err(e) if is_missing_table(&e) => {
            ensure_table(conn, db).await?;
            conn.simple_command(&sql).await
        }
        other => other,
    };
    match result {
        Ok(_) => Ok(Outcome::Rollback),
        Err(e) if is_duplicate(&e) => lookup(conn, db, &[gtrid.to_string()])
            .await?
            .into_iter()
            .next()
            .map(|(_, o)| o)
            .ok_or(e),
        Err(e) => Err(e),
    }
}

/// The decisions recorded for these gtrids.
pub async fn lookup<C: ShardConn>(
    conn: &mut C,
    db: &str,
    gtrids: &[String],
) -> Result<Vec<(String, Outcome)>, ProxyError> {
    if gtrids.is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<String> = gtrids.iter().map(|g| literal(g)).collect();
    let sql = format!(
        "SELECT gtrid, outcome FROM {} WHERE gtrid IN ({})",
        table(db),
        list.join(",")
    );
    let rows = match conn.query_rows(&sql).await {
        Err(e) if is_missing_table(&e) => return Ok(Vec::new()),
        other => other?,
    };
    Ok(rows
        .1
        .iter()
        .filter_map(|r| {
            let gtrid = std::str::from_utf8(r.first()?.as_deref()?).ok()?;
            let outcome = match r.get(1)?.as_deref()? {
                b"commit" => Outcome::Commit,
                _ => Outcome::Rollback,
            };
            Some((gtrid.to_string(), outcome))
        })
        .collect())
}

/// Deletes decisions older than `age_s` seconds that no in-doubt branch still needs.
pub async fn forget_old<C: ShardConn>(
    conn: &mut C,
    db: &str,
    age_s: u64,
    in_doubt: &[String],
) -> Result<u64, ProxyError> {
    let mut sql = format!(
        "DELETE FROM {} WHERE decided_at < NOW(6) - INTERVAL {age_s} SECOND",
        table(db)
    );
    if !in_doubt.is_empty() {
        let list: Vec<String> = in_doubt.iter().map(|g| literal(g)).collect();
        sql.push_str(&format!(" AND gtrid NOT IN ({})", list.join(",")));
    }
    match conn.simple_command(&sql).await {
        Ok(ok) => Ok(ok.affected_rows),
        Err(e) if is_missing_table(&e) => Ok(0),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_names_the_log_table_and_quotes_the_gtrid() {
        assert_eq!(
            record_sql("tessera", "tsr:1:2@g'0", Outcome::Commit),
            "INSERT INTO `tessera`.xa_decisions (gtrid, outcome) VALUES ('tsr:1:2@g''0', 'commit')"
        );
    }
}
