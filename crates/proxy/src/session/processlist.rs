//! The process list as Tessera's clients see it: `SHOW [FULL] PROCESSLIST` and
//! `information_schema.PROCESSLIST` list Tessera's sessions (their connection ids, the ones
//! CONNECTION_ID() and KILL use; their users, hosts and databases), not the backend threads of
//! the pools. A session sees the sessions of its own user, the ones it may KILL. A statement
//! that runs on a backend shows that thread's State and Info. The rows become a derived table
//! that the backend evaluates with the rest of the statement, so WHERE, ORDER BY, joins and
//! column lists work as on the server.

use super::{Next, Session};
use crate::error::ProxyError;
use crate::registry::SessionHandle;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;
use tessera_sql::{unquote, Lexer, Token, TokenKind};

/// How a statement reads the process list.
#[derive(Debug, PartialEq, Eq)]
pub enum ProcessListRead {
    /// `SHOW [FULL] PROCESSLIST`.
    Show { full: bool },
    /// References to the `information_schema.PROCESSLIST` table: where each is, and whether
    /// an alias follows it.
    Table(Vec<(Range<usize>, bool)>),
}

/// Words that may follow a table reference and are not its alias.
const NOT_ALIASES: &[&str] = &[
    "WHERE",
    "GROUP",
    "HAVING",
    "ORDER",
    "LIMIT",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "JOIN",
    "LEFT",
    "RIGHT",
    "INNER",
    "CROSS",
    "NATURAL",
    "STRAIGHT_JOIN",
    "ON",
    "USING",
    "FOR",
    "LOCK",
    "WINDOW",
    "INTO",
    "PROCEDURE",
    "FULL",
];

/// How `sql` reads the process list, if it does; `in_schema`: the session's default database
/// is information_schema (so that a bare `PROCESSLIST` after FROM names the table).
pub fn process_list_read(sql: &str, in_schema: bool, backslash_escapes: bool) -> Option<ProcessListRead> {
    let tokens: Vec<Token<'_>> = Lexer::with_backslash_escapes(sql, backslash_escapes)
        .filter(|t| t.is_significant() && t.kind != TokenKind::Semicolon)
        .collect();
    match tokens.as_slice() {
        [s, p] if s.is_word("SHOW") && p.is_word("PROCESSLIST") => return Some(ProcessListRead::Show { full: false }),
        [s, f, p] if s.is_word("SHOW") && f.is_word("FULL") && p.is_word("PROCESSLIST") => {
            return Some(ProcessListRead::Show { full: true })
        }
        _ => {}
    }
    let name = |t: &Token<'_>, n: &str| {
        matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent) && unquote(t.text).eq_ignore_ascii_case(n)
    };
    let mut refs = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let qualified = name(&tokens[i], "information_schema")
            && tokens.get(i + 1).is_some_and(|t| t.kind == TokenKind::Dot)
            && tokens.get(i + 2).is_some_and(|t| name(t, "PROCESSLIST"))
            && (i == 0 || tokens[i - 1].kind != TokenKind::Dot);
        let bare = in_schema
            && name(&tokens[i], "PROCESSLIST")
            && i > 0
            && (tokens[i - 1].is_word("FROM")
                || tokens[i - 1].is_word("JOIN")
                || tokens[i - 1].kind == TokenKind::Comma);
        let last = if qualified { i + 2 } else { i };
        let is_table = (qualified || bare)
            && !tokens
                .get(last + 1)
                .is_some_and(|t| matches!(t.kind, TokenKind::Dot | TokenKind::LParen));
        if is_table {
            let aliased = tokens.get(last + 1).is_some_and(|t| match t.kind {
                TokenKind::QuotedIdent => true,
                TokenKind::Word => !NOT_ALIASES.iter().any(|w| t.is_word(w)),
                _ => false,
            });
            refs.push((tokens[i].offset..tokens[last].end(), aliased));
            i = last + 1;
        } else {
            i += 1;
        }
    }
    (!refs.is_empty()).then_some(ProcessListRead::Table(refs))
}

/// One row of the process list.
#[derive(Debug, Clone, Default)]
pub struct ProcessRow {
    pub id: u32,
    pub user: String,
    pub host: String,
    pub db: Option<String>,
    pub command: &'static str,
    pub time_ms: u128,
    pub state: String,
    pub info: Option<String>,
}

/// The rows as a derived table's body with MariaDB's column names (strings as hex literals,
/// so that no sql_mode changes how they read).
pub fn rows_sql(rows: &[ProcessRow]) -> String {
    let text = |s: &str| format!("_utf8mb4 X'{}'", hex(s.as_bytes()));
    let opt = |s: &Option<String>| s.as_deref().map_or("NULL".to_string(), text);
    let binary = |s: &Option<String>| {
        s.as_deref()
            .map_or("NULL".to_string(), |s| format!("X'{}'", hex(s.as_bytes())))
    };
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push_str(" UNION ALL ");
        }
        let values = [
            format!("CAST({} AS UNSIGNED)", r.id),
            text(&r.user),
            text(&r.host),
            opt(&r.db),
            text(r.command),
            (r.time_ms / 1000).to_string(),
            text(&r.state),
            opt(&r.info),
            format!("CAST({}.{:03} AS DECIMAL(22,3))", r.time_ms / 1000, r.time_ms % 1000),
            "0".into(),
            "0".into(),
            "CAST(0 AS DECIMAL(7,3))".into(),
            "0".into(),
            "0".into(),
            "0".into(),
            "0".into(),
            binary(&r.info),
            "0".into(),
        ];
        out.push_str("SELECT ");
        for (j, v) in values.iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            out.push_str(v);
            if i == 0 {
                let _ = write!(out, " AS {}", COLUMNS[j]);
            }
        }
    }
    out
}

/// information_schema.PROCESSLIST's columns (MariaDB 10.11), in order.
const COLUMNS: [&str; 18] = [
    "ID",
    "USER",
    "HOST",
    "DB",
    "COMMAND",
    "TIME",
    "STATE",
    "INFO",
    "TIME_MS",
    "STAGE",
    "MAX_STAGE",
    "PROGRESS",
    "MEMORY_USED",
    "MAX_MEMORY_USED",
    "EXAMINED_ROWS",
    "QUERY_ID",
    "INFO_BINARY",
    "TID",
];

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02X}");
    }
    out
}

/// The statement with the process list spliced in.
pub fn rewrite(sql: &str, read: &ProcessListRead, rows: &str) -> String {
    match read {
        ProcessListRead::Show { full } => {
            let info = if *full { "INFO" } else { "LEFT(INFO, 100)" };
            format!(
                "SELECT ID AS Id, USER AS User, HOST AS Host, DB AS db, COMMAND AS Command, TIME AS Time, \
                 STATE AS State, {info} AS Info, PROGRESS AS Progress FROM ({rows}) AS PROCESSLIST ORDER BY ID"
            )
        }
        ProcessListRead::Table(refs) => {
            let mut out = String::with_capacity(sql.len() + rows.len() * refs.len());
            let mut copied = 0;
            for (range, aliased) in refs {
                out.push_str(&sql[copied..range.start]);
                let _ = write!(out, "({rows})");
                if !aliased {
                    out.push_str(" AS PROCESSLIST");
                }
                copied = range.end;
            }
            out.push_str(&sql[copied..]);
            out
        }
    }
}

impl Session {
    /// Answers a statement that reads the process list (see the module's documentation).
    pub async fn answer_process_list(&mut self, sql: &str, read: ProcessListRead) -> Result<Next, ProxyError> {
        let own_state = match read {
            ProcessListRead::Show { .. } => "starting",
            ProcessListRead::Table(_) => "Filling schema table",
        };
        let rows = self.process_rows(sql, own_state).await;
        let text = rewrite(sql, &read, &rows_sql(&rows));
        if !matches!(read, ProcessListRead::Show { .. }) {
            return self.query_text(text.as_bytes(), false).await;
        }
        // SHOW PROCESSLIST leaves FOUND_ROWS() as it was; the SELECT standing in for it does not.
        if let Some(mut conn) = self.binding.take_held() {
            self.learn_found_rows_before_release(&mut conn).await;
            self.binding.set_held(Some(conn));
        }
        let found_rows = self.last.found_rows;
        let answered = self.query_text(text.as_bytes(), false).await;
        self.last.found_rows = found_rows;
        self.pins.set_server_found_rows(false);
        answered
    }

    /// The rows of the sessions this one may see, its own with `sql` as Info.
    async fn process_rows(&self, sql: &str, own_state: &str) -> Vec<ProcessRow> {
        let sessions = self.ctx.sessions.sessions_of(&self.user);
        let backend = self.backend_threads(&sessions).await;
        sessions
            .iter()
            .map(|h| {
                let (busy, since) = h.activity();
                let mut row = ProcessRow {
                    id: h.id,
                    user: h.user(),
                    host: h.host.clone(),
                    db: h.db(),
                    command: if h.is_killed() {
                        "Killed"
                    } else if busy {
                        "Query"
                    } else {
                        "Sleep"
                    },
                    time_ms: since.as_millis(),
                    ..ProcessRow::default()
                };
                if h.id == self.id {
                    row.command = "Query";
                    row.db = self.state.schema.clone();
                    row.state = own_state.to_string();
                    row.info = Some(sql.to_string());
                } else if let Some((state, info)) = backend.get(&h.id) {
                    row.state = state.clone();
                    row.info = info.clone();
                }
                row
            })
            .collect()
    }

    /// State and Info of the backend threads that other sessions' statements run on now, by
    /// session id (one connection per server asked; a server that does not answer shows none).
    async fn backend_threads(&self, sessions: &[Arc<SessionHandle>]) -> HashMap<u32, (String, Option<String>)> {
        let mut by_server: HashMap<String, (crate::backend::ServerRef, Vec<(u32, u32)>)> = HashMap::new();
        for h in sessions.iter().filter(|h| h.id != self.id) {
            if let Some(running) = h.running() {
                let entry = by_server
                    .entry(running.server.address.clone())
                    .or_insert_with(|| (running.server.clone(), Vec::new()));
                entry.1.push((running.thread_id, h.id));
            }
        }
        let mut out = HashMap::new();
        for (server, threads) in by_server.into_values() {
            let Some(pool) = self.gen.pool_like(&server).cloned() else {
                continue;
            };
            let ids: Vec<String> = threads.iter().map(|(t, _)| t.to_string()).collect();
            let sql = format!(
                "SELECT ID, STATE, INFO FROM information_schema.PROCESSLIST WHERE ID IN ({})",
                ids.join(",")
            );
            let Ok(mut conn) = pool.connect_unpooled().await else {
                continue;
            };
            let Ok((_, rows)) = conn.query_rows(&sql).await else {
                continue;
            };
            for row in rows {
                let text = |i: usize| {
                    row.get(i)
                        .cloned()
                        .flatten()
                        .map(|v| String::from_utf8_lossy(&v).into_owned())
                };
                let thread: Option<u32> = text(0).and_then(|t| t.parse().ok());
                if let Some((_, session)) = threads.iter().find(|(t, _)| Some(*t) == thread) {
                    out.insert(*session, (text(1).unwrap_or_default(), text(2)));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_of_the_process_list_are_found() {
        assert_eq!(
            process_list_read("SHOW PROCESSLIST", false, true),
            Some(ProcessListRead::Show { full: false })
        );
        assert_eq!(
            process_list_read("show full processlist;", false, true),
            Some(ProcessListRead::Show { full: true })
        );
        let sql = "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = 3";
        assert_eq!(
            process_list_read(sql, false, true),
            Some(ProcessListRead::Table(vec![(15..45, false)]))
        );
        let sql = "SELECT p.ID FROM `INFORMATION_SCHEMA`.`processlist` p";
        assert!(matches!(process_list_read(sql, false, true), Some(ProcessListRead::Table(r)) if r[0].1));
        assert_eq!(process_list_read("SELECT * FROM processlist", false, true), None);
        assert!(process_list_read("SELECT * FROM processlist", true, true).is_some());
        assert_eq!(
            process_list_read("SELECT 'information_schema.PROCESSLIST'", false, true),
            None
        );
        assert_eq!(process_list_read("SELECT processlist FROM t", true, true), None);
    }

    #[test]
    fn rows_become_a_derived_table() {
        let rows = [
            ProcessRow {
                id: 7,
                user: "app".into(),
                host: "127.0.0.1".into(),
                command: "Sleep",
                time_ms: 1500,
                ..ProcessRow::default()
            },
            ProcessRow {
                id: 9,
                info: Some("it's".into()),
                ..ProcessRow::default()
            },
        ];
        let body = rows_sql(&rows);
        assert!(
            body.starts_with("SELECT CAST(7 AS UNSIGNED) AS ID, _utf8mb4 X'617070' AS USER"),
            "{body}"
        );
        assert!(body.contains("CAST(1.500 AS DECIMAL(22,3)) AS TIME_MS"), "{body}");
        assert!(body.contains(" UNION ALL SELECT CAST(9 AS UNSIGNED), "), "{body}");
        assert!(body.contains("_utf8mb4 X'69742773'"), "{body}");
        let sql = "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = 3";
        let read = process_list_read(sql, false, true).unwrap();
        assert_eq!(
            rewrite(sql, &read, "B"),
            "SELECT ID FROM (B) AS PROCESSLIST WHERE ID = 3"
        );
    }
}
