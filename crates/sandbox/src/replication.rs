//! GTID replication between sandbox servers: the setup SQL, [`ReplicaStatus`] and the
//! replica controls on [`Server`] (the SQL building and status parsing are pure and unit-tested).

use std::collections::HashMap;
use std::time::Duration;

use crate::client::quote_str;
use crate::error::{Result, SandboxError};
use crate::server::Server;

/// Account the replicas log in to the primary with (created on the primary when the
/// `replication` option is on, with only the `REPLICATION SLAVE` privilege).
pub const REPL_USER: &str = "repl";
/// Password of [`REPL_USER`].
pub const REPL_PASSWORD: &str = "repl";
/// Hosts the replication account is created for (replicas connect over TCP to 127.0.0.1).
const REPL_HOSTS: [&str; 2] = ["%", "127.0.0.1"];
/// Seconds a replica waits before reconnecting to a primary that went away (MariaDB's default is 60).
const CONNECT_RETRY_SECS: u32 = 1;

/// How a replica is doing, read from `SHOW ALL SLAVES STATUS` (the default, unnamed
/// connection; the same columns as `SHOW SLAVE STATUS` plus `Gtid_Slave_Pos`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaStatus {
    /// The IO thread is connected to the primary (`Slave_IO_Running` is `Yes`; `Connecting`
    /// and `Preparing` count as not running).
    pub io_running: bool,
    /// The SQL (applier) thread runs (`Slave_SQL_Running` is `Yes`).
    pub sql_running: bool,
    /// `Seconds_Behind_Master`; `None` when it is NULL (SQL or IO thread not running).
    pub seconds_behind: Option<u64>,
    /// GTIDs applied so far (`Gtid_Slave_Pos`), e.g. `0-4198401-12`; empty before the first.
    pub gtid_slave_pos: String,
    /// GTIDs received by the IO thread (`Gtid_IO_Pos`), possibly not applied yet.
    pub gtid_io_pos: String,
    /// The primary's TCP port (`Master_Port`).
    pub primary_port: u16,
    /// `Last_SQL_Error` (empty when none).
    pub last_sql_error: String,
    /// `Last_IO_Error` (empty when none).
    pub last_io_error: String,
    /// The SQL thread's last error, else the IO thread's, each prefixed with the thread;
    /// `None` when both are empty.
    pub last_error: Option<String>,
}

impl ReplicaStatus {
    /// Builds the status from one `SHOW SLAVE STATUS` row keyed by column name.
    fn from_row(row: &HashMap<&str, String>) -> std::result::Result<ReplicaStatus, String> {
        let col = |name: &str| row.get(name).cloned().ok_or_else(|| format!("no column {name}"));
        let seconds_behind = match col("Seconds_Behind_Master")?.as_str() {
            "NULL" | "" => None,
            v => Some(v.parse().map_err(|_| format!("bad Seconds_Behind_Master {v:?}"))?),
        };
        let port = col("Master_Port")?;
        let primary_port = port.parse().map_err(|_| format!("bad Master_Port {port:?}"))?;
        let last_sql_error = col("Last_SQL_Error")?;
        let last_io_error = col("Last_IO_Error")?;
        let last_error = if !last_sql_error.is_empty() {
            Some(format!("SQL thread: {last_sql_error}"))
        } else if !last_io_error.is_empty() {
            Some(format!("IO thread: {last_io_error}"))
        } else {
            None
        };
        Ok(ReplicaStatus {
            io_running: col("Slave_IO_Running")? == "Yes",
            sql_running: col("Slave_SQL_Running")? == "Yes",
            seconds_behind,
            gtid_slave_pos: col("Gtid_Slave_Pos")?,
            gtid_io_pos: col("Gtid_IO_Pos")?,
            primary_port,
            last_sql_error,
            last_io_error,
            last_error,
        })
    }
}

impl Server {
    /// Reads the replication status (`SHOW ALL SLAVES STATUS`, default connection). Fails
    /// with [`SandboxError::Replication`] on a server that is not configured as a replica.
    pub fn replica_status(&self) -> Result<ReplicaStatus> {
        let out = self.sql_with_header("SHOW ALL SLAVES STATUS")?;
        let rows = parse_batch_rows(&out);
        let row = rows
            .iter()
            .find(|r| matches!(r.get("Connection_name").map(String::as_str), None | Some("")))
            .ok_or_else(|| self.replication_error("not a replica: SHOW ALL SLAVES STATUS has no default connection"))?;
        ReplicaStatus::from_row(row).map_err(|m| self.replication_error(format!("SHOW ALL SLAVES STATUS: {m}")))
    }

    /// `STOP SLAVE SQL_THREAD`: the replica keeps receiving the primary's binary log but
    /// stops applying it (it falls behind) until [`Server::start_replica_sql_thread`].
    pub fn stop_replica_sql_thread(&self) -> Result<()> {
        self.sql("STOP SLAVE SQL_THREAD").map(drop)
    }

    /// `START SLAVE SQL_THREAD`: resumes applying what the replica has received.
    pub fn start_replica_sql_thread(&self) -> Result<()> {
        self.sql("START SLAVE SQL_THREAD").map(drop)
    }

    /// `@@gtid_binlog_pos`: the GTID of the last transaction in this server's binary log
    /// (per replication domain), e.g. `0-4198401-12`; empty when nothing was logged.
    pub fn gtid_binlog_pos(&self) -> Result<String> {
        Ok(self.sql("SELECT @@GLOBAL.gtid_binlog_pos")?.trim().to_string())
    }

    /// Waits with `MASTER_GTID_WAIT` until this replica has applied the GTID position `pos`
    /// (e.g. the primary's [`Server::gtid_binlog_pos`]). On timeout returns
    /// [`SandboxError::ReplicaTimeout`] with the replica's last SQL and IO errors.
    pub fn wait_for_gtid(&self, pos: &str, timeout: Duration) -> Result<()> {
        let sql = format!(
            "SELECT MASTER_GTID_WAIT({}, {:.3})",
            quote_str(pos),
            timeout.as_secs_f64()
        );
        match self.sql(&sql)?.trim() {
            "0" => Ok(()),
            "-1" => Err(self.replica_timeout(pos, timeout)),
            other => Err(self.replication_error(format!("MASTER_GTID_WAIT({pos:?}) returned {other:?}"))),
        }
    }

    fn replica_timeout(&self, target: &str, waited: Duration) -> SandboxError {
        let (applied, last_errors) = match self.replica_status() {
            Ok(s) => (
                s.gtid_slave_pos,
                format!(
                    "Last_SQL_Error: {:?}; Last_IO_Error: {:?}",
                    s.last_sql_error, s.last_io_error
                ),
            ),
            Err(e) => (String::new(), format!("cannot read the replica status: {e}")),
        };
        SandboxError::ReplicaTimeout {
            server: self.name().to_string(),
            target: target.to_string(),
            applied,
            waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
            last_errors,
        }
    }

    fn replication_error(&self, message: impl Into<String>) -> SandboxError {
        SandboxError::Replication {
            server: self.name().to_string(),
            message: message.into(),
        }
    }
}

/// SQL creating the replication account, run on the primary only (with the users' setup).
pub(crate) fn repl_account_sql() -> String {
    let mut sql = String::new();
    for host in REPL_HOSTS {
        let account = format!("{}@{}", quote_str(REPL_USER), quote_str(host));
        sql.push_str(&format!(
            "CREATE USER IF NOT EXISTS {account};\n\
             ALTER USER {account} IDENTIFIED VIA mysql_native_password USING PASSWORD({});\n\
             GRANT REPLICATION SLAVE ON *.* TO {account};\n",
            quote_str(REPL_PASSWORD)
        ));
    }
    sql
}

/// SQL making a server a GTID replica of the primary on 127.0.0.1:`primary_port` and starting it.
/// MariaDB stores this in the replica's data dir and restarts replication on every start.
pub(crate) fn change_master_sql(primary_port: u16) -> String {
    format!(
        "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={primary_port}, MASTER_USER={}, \
         MASTER_PASSWORD={}, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY={CONNECT_RETRY_SECS};\n\
         START SLAVE;\n",
        quote_str(REPL_USER),
        quote_str(REPL_PASSWORD)
    )
}

/// Parses `mariadb -B` output with a header line into one column name -> value map per row
/// (batch-mode escapes undone). Empty output (an empty result) gives no rows.
fn parse_batch_rows(text: &str) -> Vec<HashMap<&str, String>> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    lines
        .map(|values| header.split('\t').zip(values.split('\t').map(unescape_batch)).collect())
        .collect()
}

/// Undoes the escaping `mariadb -B` applies to values (`\t`, `\n`, `\0`, `\\`).
fn unescape_batch(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('0') => out.push('\0'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "Slave_IO_State\tMaster_Host\tMaster_Port\tSlave_IO_Running\tSlave_SQL_Running\t\
        Last_Error\tLast_IO_Error\tLast_SQL_Error\tSeconds_Behind_Master\tGtid_IO_Pos\tGtid_Slave_Pos";

    fn status(values: &str) -> std::result::Result<ReplicaStatus, String> {
        let text = format!("{HEADER}\n{values}\n");
        let rows = parse_batch_rows(&text);
        assert_eq!(rows.len(), 1);
        ReplicaStatus::from_row(&rows[0])
    }

    #[test]
    fn parses_a_healthy_replica() {
        let s = status("Waiting for master\t127.0.0.1\t40123\tYes\tYes\t\t\t\t0\t0-7-12\t0-7-12").unwrap();
        assert!(s.io_running && s.sql_running);
        assert_eq!(s.seconds_behind, Some(0));
        assert_eq!(s.primary_port, 40123);
        assert_eq!(
            (s.gtid_io_pos.as_str(), s.gtid_slave_pos.as_str()),
            ("0-7-12", "0-7-12")
        );
        assert_eq!(s.last_error, None);
    }

    #[test]
    fn parses_a_stopped_replica_with_errors() {
        let s = status("\t127.0.0.1\t1\tConnecting\tNo\tdup\tcannot\\tconnect\tDuplicate\\nkey\tNULL\t0-7-13\t0-7-12")
            .unwrap();
        assert!(!s.io_running && !s.sql_running);
        assert_eq!(s.seconds_behind, None);
        assert_eq!(s.last_io_error, "cannot\tconnect");
        assert_eq!(s.last_sql_error, "Duplicate\nkey");
        assert_eq!(s.last_error.as_deref(), Some("SQL thread: Duplicate\nkey"));
    }

    #[test]
    fn missing_rows_and_columns_are_reported() {
        assert!(parse_batch_rows("").is_empty());
        assert!(parse_batch_rows("Slave_IO_State\tMaster_Host\n").is_empty());
        let rows = parse_batch_rows("Connection_name\tSlave_IO_Running\n\tYes\nother\tNo\n");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1]["Connection_name"], "other");
        assert!(ReplicaStatus::from_row(&rows[0]).unwrap_err().contains("no column"));
    }

    #[test]
    fn unescapes_batch_values() {
        assert_eq!(unescape_batch(r"a\\b\tc\nd\0"), "a\\b\tc\nd\0");
        assert_eq!(unescape_batch(r"end\"), "end\\");
    }

    #[test]
    fn setup_sql_uses_gtid_and_the_repl_account() {
        let sql = change_master_sql(3307);
        assert!(sql.contains("MASTER_HOST='127.0.0.1', MASTER_PORT=3307, MASTER_USER='repl'"));
        assert!(sql.contains("MASTER_PASSWORD='repl', MASTER_USE_GTID=slave_pos"));
        assert!(sql.ends_with("START SLAVE;\n"));
        let account = repl_account_sql();
        assert!(account.contains("GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%';"));
        assert!(account.contains("USING PASSWORD('repl');"));
    }
}
