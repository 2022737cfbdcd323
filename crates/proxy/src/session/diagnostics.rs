//! The client's diagnostics area (what SHOW WARNINGS, SHOW COUNT(*) WARNINGS, @@warning_count
//! and GET DIAGNOSTICS read) when it outlives the backend connection that produced it.
//!
//! A statement that raised conditions keeps its connection for the next statement (a
//! short-lived pin). When that connection must go back to the pool first (the client stayed
//! idle, or the next statement needs another server), its conditions are read with SHOW
//! WARNINGS and kept here. A later diagnostics statement that runs on another connection is
//! preceded there by one statement that recreates the area: an empty one (a statement that
//! reads a table clears it), or the one condition with SIGNAL. An area that SIGNAL cannot
//! recreate exactly (several conditions, a Note) keeps its connection instead.

use crate::error::ProxyError;
use crate::pool::PooledConn;
use crate::state::quote_string_as;
use tessera_sql::{Classification, Flags, StatementKind};

/// One condition of a diagnostics area, as SHOW WARNINGS lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub level: String,
    pub code: u16,
    pub message: String,
}

/// Where the client's diagnostics area is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Diagnostics {
    /// On the connection the session holds, or empty when it holds none (a new session).
    #[default]
    OnConnection,
    /// Read from a connection that went back to the pool.
    Kept(Vec<Condition>),
}

/// SQLSTATE that SIGNAL uses to recreate a warning.
const WARNING_STATE: &str = "01000";
/// Longest MESSAGE_TEXT that SIGNAL keeps whole.
const SIGNAL_MESSAGE_MAX: usize = 128;

impl Diagnostics {
    /// True when the area holds no condition (a new session's, or one a read cleared). Only
    /// meaningful while the session holds no connection.
    pub fn is_empty(&self) -> bool {
        match self {
            Diagnostics::OnConnection => true,
            Diagnostics::Kept(c) => c.is_empty(),
        }
    }

    /// The statement that recreates this area on another connection, or None when it must not
    /// be given up (SIGNAL cannot recreate it exactly).
    /// `backslash_escapes`: how the connection it runs on reads string literals.
    pub fn restore_statement(&self, backslash_escapes: bool) -> Option<String> {
        let conditions: &[Condition] = match self {
            Diagnostics::OnConnection => &[],
            Diagnostics::Kept(c) => c,
        };
        match conditions {
            [] => Some("DO (SELECT 1 FROM information_schema.COLLATIONS LIMIT 0)".into()),
            [c] if c.message.chars().count() <= SIGNAL_MESSAGE_MAX && c.code > 0 => {
                let state = match c.level.as_str() {
                    "Warning" => WARNING_STATE,
                    "Error" => "HY000",
                    _ => return None,
                };
                Some(format!(
                    "SIGNAL SQLSTATE '{state}' SET MYSQL_ERRNO = {}, MESSAGE_TEXT = {}",
                    c.code,
                    quote_string_as(&c.message, backslash_escapes)
                ))
            }
            _ => None,
        }
    }
}

/// Reads a connection's diagnostics area (SHOW WARNINGS does not change it).
pub async fn read_area(conn: &mut PooledConn) -> Result<Vec<Condition>, ProxyError> {
    let (_, rows) = conn.query_rows("SHOW WARNINGS").await?;
    let text = |v: Option<&Option<Vec<u8>>>| {
        v.and_then(|v| v.as_deref())
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    Ok(rows
        .iter()
        .map(|r| Condition {
            level: text(r.first()),
            code: text(r.get(1)).parse().unwrap_or(0),
            message: text(r.get(2)),
        })
        .collect())
}

/// Reads the area of a connection about to be given back into `area`. Returns false when the
/// area cannot be recreated elsewhere: the connection must then stay with the session.
pub async fn keep_area_on_release(conn: &mut PooledConn, area: &mut Diagnostics) -> bool {
    match read_area(conn).await {
        Ok(conditions) => {
            *area = Diagnostics::Kept(conditions);
            area.restore_statement(true).is_some()
        }
        Err(e) => {
            // The connection is not trustworthy any more; its area is lost with it.
            tracing::debug!(error = %e, "could not read a diagnostics area");
            conn.broken = true;
            *area = Diagnostics::Kept(Vec::new());
            true
        }
    }
}

/// Whether a statement that raised no condition empties the diagnostics area: MariaDB clears
/// it for statements that open tables and keeps it for the others (`SELECT 1`, `SET`, `DO 1`).
pub fn clears_area(sql: &str, class: &Classification) -> bool {
    use StatementKind as K;
    match class.kind {
        K::Insert
        | K::Update
        | K::Delete
        | K::Replace
        | K::LoadData { .. }
        | K::Ddl
        | K::CreateTemporaryTable(_)
        | K::DropTemporaryTable(_)
        | K::DropTable(_)
        | K::LockTables
        | K::Handler
        | K::Describe => true,
        K::Select => reads_a_table(sql),
        _ => false,
    }
}

/// A `FROM` other than `FROM DUAL` (a cheap look at the text, not a parse).
fn reads_a_table(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).any(|w| w[0] == "from" && w[1] != "dual")
}

/// Whether the statement reads the diagnostics area.
pub fn reads_area(class: &Classification) -> bool {
    class.kind == StatementKind::Diagnostics || class.flags.contains(Flags::DIAGNOSTICS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(level: &str, code: u16, message: &str) -> Condition {
        Condition {
            level: level.into(),
            code,
            message: message.into(),
        }
    }

    #[test]
    fn restorable_areas() {
        assert!(Diagnostics::OnConnection
            .restore_statement(true)
            .unwrap()
            .starts_with("DO "));
        let w = Diagnostics::Kept(vec![cond("Warning", 1292, "Truncated 'abc'")]);
        assert_eq!(
            w.restore_statement(true).unwrap(),
            "SIGNAL SQLSTATE '01000' SET MYSQL_ERRNO = 1292, MESSAGE_TEXT = 'Truncated ''abc'''"
        );
        let e = Diagnostics::Kept(vec![cond("Error", 1049, "Unknown database 'x'")]);
        assert!(e
            .restore_statement(true)
            .unwrap()
            .contains("'HY000' SET MYSQL_ERRNO = 1049"));
        assert_eq!(
            Diagnostics::Kept(vec![cond("Note", 1051, "x")]).restore_statement(true),
            None
        );
        let two = Diagnostics::Kept(vec![cond("Warning", 1, "a"), cond("Warning", 2, "b")]);
        assert_eq!(two.restore_statement(true), None);
    }

    #[test]
    fn which_statements_clear_the_area() {
        let clears = |sql: &str| clears_area(sql, &tessera_sql::classify(sql));
        assert!(clears("SELECT * FROM t"));
        assert!(clears("INSERT INTO t VALUES (1)"));
        assert!(!clears("SELECT 1"));
        assert!(!clears("SELECT 1 FROM DUAL"));
        assert!(!clears("SET @a = 1"));
        assert!(!clears("DO 1"));
    }
}
