//! What a statement does to `FOUND_ROWS()` when it ran without `SQL_CALC_FOUND_ROWS`, by
//! MariaDB's rules, so that a proxy answering `FOUND_ROWS()` itself gives the server's number.
//!
//! MariaDB counts the rows its SELECT executor produced, skipped offset rows included: after
//! `LIMIT 1, 2` over 5 rows it is 3, after a `UNION ... LIMIT` the whole union, after an offset
//! past the end every row that matched. `SHOW` commands read from `information_schema` count
//! their rows; the other `SHOW` commands, `EXPLAIN <statement>`, `VALUES`, `CHECK TABLE` and
//! their kin, and a failed statement leave the number as it was.

use crate::classify::{Classification, StatementKind};
use crate::flags::Flags;
use crate::lexer::{Lexer, Token, TokenKind};

/// How `FOUND_ROWS()` follows a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundRowsEffect {
    /// It becomes the rows the statement's result sent.
    RowsSent,
    /// It becomes `offset + rows sent` when rows were sent; after none, only the server knows
    /// (an offset past the end counts the rows that matched).
    OffsetPlusSent(u64),
    /// Only the server knows (a set operation under `LIMIT`, `SELECT ... INTO`, `CALL`, an
    /// executing `ANALYZE`, an offset given as a placeholder).
    Server,
    /// It stays as it was.
    Unchanged,
}

/// The effect of one successful statement (`sql` is its text, `class` its classification).
pub fn found_rows_effect(sql: &str, class: &Classification) -> FoundRowsEffect {
    use FoundRowsEffect as E;
    use StatementKind as K;
    match &class.kind {
        K::Select if class.flags.intersects(Flags::SELECT_INTO | Flags::SQL_CALC_FOUND_ROWS) => E::Server,
        K::Select if first_word_is(sql, "VALUES") => E::Unchanged,
        K::Select if class.flags.contains(Flags::PAGING) => paged(sql),
        K::Select => E::RowsSent,
        K::Show => show(sql),
        K::Describe => describe(sql),
        K::Analyze if nth_word_in(sql, 1, &["TABLE", "TABLES", "LOCAL", "NO_WRITE_TO_BINLOG"]) => E::Unchanged,
        K::Analyze | K::Call | K::Execute => E::Server,
        K::Insert | K::Replace | K::CreateTemporaryTable(_) | K::Ddl if selects_into_a_table(sql, &class.kind) => {
            E::Server
        }
        // SHOW COUNT(*) WARNINGS is a SELECT of @@warning_count; SHOW WARNINGS is not counted.
        K::Diagnostics if nth_word_in(sql, 1, &["COUNT"]) => E::RowsSent,
        _ => E::Unchanged,
    }
}

/// `INSERT/REPLACE ... SELECT` and `CREATE TABLE ... SELECT` count the rows their SELECT
/// produced (none are sent).
fn selects_into_a_table(sql: &str, kind: &StatementKind) -> bool {
    if *kind == StatementKind::Ddl {
        let mut words = significant(sql).take(4);
        let creates_table = words.next().is_some_and(|t| t.is_word("CREATE")) && words.any(|t| t.is_word("TABLE"));
        if !creates_table {
            return false;
        }
    }
    Lexer::new(sql).any(|t| t.is_word("SELECT"))
}

/// `SHOW` commands answered from `information_schema` tables (the rest leave the count).
const COUNTED_SHOW: [&str; 26] = [
    "DATABASES",
    "SCHEMAS",
    "TABLES",
    "TABLE",
    "OPEN",
    "COLUMNS",
    "FIELDS",
    "INDEX",
    "INDEXES",
    "KEYS",
    "VARIABLES",
    "STATUS",
    "COLLATION",
    "CHARACTER",
    "CHARSET",
    "TRIGGERS",
    "EVENTS",
    "PLUGINS",
    "ENGINES",
    "STORAGE",
    "USER_STATISTICS",
    "CLIENT_STATISTICS",
    "INDEX_STATISTICS",
    "TABLE_STATISTICS",
    "PROCEDURE",
    "FUNCTION",
];

/// Words that may come between `SHOW` and what it shows.
const SHOW_MODIFIERS: [&str; 5] = ["FULL", "GLOBAL", "SESSION", "LOCAL", "EXTENDED"];

fn show(sql: &str) -> FoundRowsEffect {
    let mut words = significant(sql).skip(1).filter(|t| t.kind == TokenKind::Word);
    let Some(what) = words.find(|t| !SHOW_MODIFIERS.iter().any(|m| t.is_word(m))) else {
        return FoundRowsEffect::Unchanged;
    };
    let counted = COUNTED_SHOW.iter().any(|w| what.is_word(w))
        // SHOW PROCEDURE|FUNCTION CODE is not a table read; their STATUS is.
        && !((what.is_word("PROCEDURE") || what.is_word("FUNCTION")) && !words.next().is_some_and(|t| t.is_word("STATUS")));
    match counted {
        true => FoundRowsEffect::RowsSent,
        false => FoundRowsEffect::Unchanged,
    }
}

/// `DESCRIBE t` / `EXPLAIN t` read the table's columns (counted); `EXPLAIN <statement>` does not
/// count, `EXPLAIN ANALYZE <statement>` runs it.
fn describe(sql: &str) -> FoundRowsEffect {
    let mut tokens = significant(sql).skip(1);
    match tokens.next() {
        Some(t) if t.is_word("ANALYZE") => FoundRowsEffect::Server,
        Some(t) if t.kind == TokenKind::Word && !is_explained_word(&t) => FoundRowsEffect::RowsSent,
        Some(t) if matches!(t.kind, TokenKind::QuotedIdent) => FoundRowsEffect::RowsSent,
        _ => FoundRowsEffect::Unchanged,
    }
}

/// Words after `EXPLAIN` that start an explained statement or an option.
fn is_explained_word(t: &Token<'_>) -> bool {
    const WORDS: [&str; 11] = [
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "REPLACE",
        "WITH",
        "VALUES",
        "FORMAT",
        "EXTENDED",
        "PARTITIONS",
        "FOR",
    ];
    WORDS.iter().any(|w| t.is_word(w))
}

/// A SELECT with `LIMIT`/`OFFSET`/`FETCH` somewhere: reads the clauses of the statement's own
/// query (not of its subqueries and derived tables), past parentheses around all of it.
fn paged(sql: &str) -> FoundRowsEffect {
    let tokens: Vec<Token<'_>> = significant(sql)
        .take_while(|t| t.kind != TokenKind::Semicolon)
        .collect();
    let body = unwrap_parentheses(&tokens);
    let mut depth = 0u32;
    let (mut set_operation, mut limited, mut offset) = (false, false, Offset::None);
    for (i, t) in body.iter().enumerate() {
        match t.kind {
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => depth = depth.saturating_sub(1),
            TokenKind::Word if depth == 0 => {
                if t.is_word("UNION") || t.is_word("INTERSECT") || t.is_word("EXCEPT") {
                    set_operation = true;
                } else if t.is_word("LIMIT") {
                    limited = true;
                    offset = limit_offset(&body[i + 1..]);
                } else if t.is_word("OFFSET") && (limited || is_row_count(body.get(i + 1))) {
                    limited = true;
                    offset = Offset::of(body.get(i + 1));
                } else if t.is_word("FETCH") {
                    limited = true;
                }
            }
            _ => {}
        }
    }
    match (set_operation && limited, offset) {
        (true, _) | (_, Offset::Unknown) => FoundRowsEffect::Server,
        (false, Offset::Rows(0) | Offset::None) => FoundRowsEffect::RowsSent,
        (false, Offset::Rows(n)) => FoundRowsEffect::OffsetPlusSent(n),
    }
}

/// An offset as written.
#[derive(Clone, Copy)]
enum Offset {
    None,
    Rows(u64),
    /// A placeholder, a variable: known to the server only.
    Unknown,
}

impl Offset {
    fn of(t: Option<&Token<'_>>) -> Offset {
        match t {
            Some(t) if t.kind == TokenKind::Number => t.text.parse().map_or(Offset::Unknown, Offset::Rows),
            _ => Offset::Unknown,
        }
    }
}

/// Whether a token can be a row count of `OFFSET n ROWS` (not `SELECT offset FROM t`).
fn is_row_count(t: Option<&Token<'_>>) -> bool {
    t.is_some_and(|t| matches!(t.kind, TokenKind::Number | TokenKind::Placeholder | TokenKind::UserVar))
}

/// The offset of `LIMIT n, m` (`after` starts behind `LIMIT`); `LIMIT m` has none, and
/// `LIMIT m OFFSET n` is read at its `OFFSET`.
fn limit_offset(after: &[Token<'_>]) -> Offset {
    match after.get(1) {
        Some(t) if t.kind == TokenKind::Comma => Offset::of(after.first()),
        _ => Offset::None,
    }
}

/// The tokens inside parentheses that enclose the whole statement: `((SELECT .. LIMIT 1, 2))`.
fn unwrap_parentheses<'t, 'a>(mut tokens: &'t [Token<'a>]) -> &'t [Token<'a>] {
    while tokens.len() >= 2 && tokens[0].kind == TokenKind::LParen && closes_at_end(tokens) {
        tokens = &tokens[1..tokens.len() - 1];
    }
    tokens
}

/// Whether the `(` at `tokens[0]` is closed by the last token.
fn closes_at_end(tokens: &[Token<'_>]) -> bool {
    let mut depth = 0u32;
    for (i, t) in tokens.iter().enumerate() {
        match t.kind {
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i == tokens.len() - 1;
                }
            }
            _ => {}
        }
    }
    false
}

fn significant(sql: &str) -> impl Iterator<Item = Token<'_>> {
    Lexer::new(sql).filter(|t| t.is_significant())
}

fn first_word_is(sql: &str, word: &str) -> bool {
    significant(sql)
        .find(|t| t.kind != TokenKind::LParen)
        .is_some_and(|t| t.is_word(word))
}

fn nth_word_in(sql: &str, n: usize, words: &[&str]) -> bool {
    significant(sql)
        .nth(n)
        .is_some_and(|t| words.iter().any(|w| t.is_word(w)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify;
    use FoundRowsEffect as E;

    fn effect(sql: &str) -> FoundRowsEffect {
        found_rows_effect(sql, &classify(sql))
    }

    #[test]
    fn selects_count_their_rows_and_the_offset_they_skipped() {
        assert_eq!(effect("SELECT a FROM t WHERE id = ?"), E::RowsSent);
        assert_eq!(effect("SELECT a FROM t LIMIT 3"), E::RowsSent);
        assert_eq!(effect("SELECT a FROM t LIMIT 0, 3"), E::RowsSent);
        assert_eq!(effect("select a from t limit 1,2"), E::OffsetPlusSent(1));
        assert_eq!(
            effect("SELECT a FROM t ORDER BY b LIMIT 2 OFFSET 7"),
            E::OffsetPlusSent(7)
        );
        assert_eq!(
            effect("SELECT a FROM t OFFSET 4 ROWS FETCH FIRST 2 ROWS WITH TIES"),
            E::OffsetPlusSent(4)
        );
        assert_eq!(effect("((SELECT a FROM t LIMIT 5, 2))"), E::OffsetPlusSent(5));
        assert_eq!(effect("SELECT a FROM t LIMIT 1, 2 FOR UPDATE"), E::OffsetPlusSent(1));
        assert_eq!(effect("SELECT a FROM t LIMIT ?, 2"), E::Server);
        assert_eq!(effect("SELECT a FROM t LIMIT 2 OFFSET @o"), E::Server);
    }

    #[test]
    fn only_the_statements_own_limit_counts() {
        assert_eq!(effect("SELECT * FROM (SELECT a FROM t LIMIT 1, 2) d"), E::RowsSent);
        assert_eq!(
            effect("SELECT a FROM t WHERE a IN (SELECT a FROM u LIMIT 1, 2)"),
            E::RowsSent
        );
        assert_eq!(
            effect("(SELECT a FROM t LIMIT 2) UNION (SELECT b FROM u LIMIT 1)"),
            E::RowsSent
        );
        assert_eq!(effect("SELECT offset FROM t"), E::RowsSent, "a column named offset");
        assert_eq!(effect("SELECT a FROM t UNION SELECT b FROM u LIMIT 2"), E::Server);
        assert_eq!(
            effect("SELECT a FROM t INTERSECT SELECT b FROM u LIMIT 1, 2"),
            E::Server
        );
    }

    #[test]
    fn information_schema_shows_count_the_others_leave_it() {
        for sql in [
            "SHOW TABLES",
            "SHOW FULL TABLES",
            "SHOW TABLE STATUS LIKE 't'",
            "SHOW GLOBAL VARIABLES LIKE 'a%'",
            "SHOW FULL COLUMNS FROM t",
            "show keys from t",
            "SHOW PROCEDURE STATUS",
            "SHOW COUNT(*) WARNINGS",
            "DESCRIBE t",
            "EXPLAIN `t`",
        ] {
            assert_eq!(effect(sql), E::RowsSent, "{sql}");
        }
        for sql in [
            "SHOW CREATE TABLE t",
            "SHOW WARNINGS",
            "SHOW ERRORS LIMIT 1",
            "SHOW PROCESSLIST",
            "SHOW FULL PROCESSLIST",
            "SHOW GRANTS",
            "SHOW MASTER STATUS",
            "SHOW PROCEDURE CODE p",
            "SHOW ENGINE INNODB STATUS",
            "EXPLAIN SELECT * FROM t",
            "EXPLAIN FORMAT=JSON SELECT 1",
            "VALUES (1), (2)",
            "CHECK TABLE t",
            "ANALYZE TABLE t",
            "HELP 'select'",
        ] {
            assert_eq!(effect(sql), E::Unchanged, "{sql}");
        }
    }

    #[test]
    fn what_only_the_server_knows() {
        for sql in [
            "SELECT a INTO @x FROM t LIMIT 1",
            "SELECT 1 INTO @y",
            "CALL p()",
            "ANALYZE SELECT * FROM t",
            "EXPLAIN ANALYZE SELECT * FROM t",
            "EXECUTE s",
            "SELECT SQL_CALC_FOUND_ROWS a FROM t LIMIT 1",
            "INSERT INTO t SELECT * FROM u",
            "replace t (a) select 1",
            "CREATE TABLE t SELECT 1",
            "CREATE OR REPLACE TABLE t AS SELECT 1",
            "CREATE TEMPORARY TABLE t AS SELECT 1",
        ] {
            assert_eq!(effect(sql), E::Server, "{sql}");
        }
        for sql in [
            "INSERT INTO t VALUES ('SELECT')",
            "CREATE VIEW v AS SELECT 1",
            "UPDATE t SET a = 1",
        ] {
            assert_eq!(effect(sql), E::Unchanged, "{sql}");
        }
    }
}
