//! Splitting a multi-statement query on its top-level `;` separators.

use crate::lexer::{is_space, Lexer, TokenKind};

/// Splits `sql` on `;` that are outside strings, quoted identifiers and comments.
///
/// Each piece is trimmed; pieces holding only whitespace or comments are dropped.
/// Compound statements (`CREATE PROCEDURE .. BEGIN ..; .. END`) are not understood and
/// get split at their inner `;` too.
pub fn split_statements(sql: &str) -> Vec<&str> {
    split_statements_with(sql, true)
}

/// [`split_statements`] with strings read with backslash escapes or, when
/// `backslash_escapes` is false, as the `sql_mode` `NO_BACKSLASH_ESCAPES` reads them.
pub fn split_statements_with(sql: &str, backslash_escapes: bool) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut significant = false;
    for t in Lexer::with_backslash_escapes(sql, backslash_escapes) {
        match t.kind {
            TokenKind::Semicolon => {
                if significant {
                    pieces.push(trim(&sql[start..t.offset]));
                }
                start = t.end();
                significant = false;
            }
            TokenKind::Comment | TokenKind::HintComment => {}
            _ => significant = true,
        }
    }
    if significant {
        pieces.push(trim(&sql[start..]));
    }
    pieces
}

/// The assignments of a `SET a = 1, SESSION b = f(x, y), NAMES utf8mb4` statement, split on
/// its top-level commas (not those inside parentheses, strings or comments), trimmed, without
/// the leading `SET` and a trailing `;`. None when `sql` does not start with `SET`.
pub fn set_assignments(sql: &str) -> Option<Vec<&str>> {
    let mut lexer = Lexer::new(sql);
    let first = lexer.next_significant()?;
    if !first.is_word("SET") {
        return None;
    }
    let mut pieces = Vec::new();
    let mut start = first.end();
    let mut depth = 0u32;
    let mut end = sql.len();
    // The end of the last significant token: a conditional comment's `*/` is not a value's.
    let mut last = first.end();
    for t in lexer {
        if t.is_significant() && t.kind != TokenKind::Semicolon {
            last = t.end();
        }
        match t.kind {
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => depth = depth.saturating_sub(1),
            TokenKind::Comma if depth == 0 => {
                pieces.push(trim(&sql[start..t.offset]));
                start = t.end();
            }
            TokenKind::Semicolon if depth == 0 => {
                end = t.offset;
                break;
            }
            _ => {}
        }
    }
    pieces.push(trim(&sql[start..end.min(last.max(start))]));
    Some(pieces)
}

/// The assignments of MariaDB's `SET STATEMENT a = 1, b = f(x, y) FOR <statement>`, which hold
/// for the inner statement only: split on the top-level commas before the top-level `FOR`,
/// trimmed. None when `sql` is not a `SET STATEMENT`.
pub fn statement_set_assignments(sql: &str) -> Option<Vec<&str>> {
    statement_set_parts(sql).map(|parts| parts.assignments)
}

/// A `SET STATEMENT ... FOR <statement>` taken apart.
#[derive(Debug, PartialEq, Eq)]
pub struct StatementSetParts<'a> {
    /// The assignments, as [`statement_set_assignments`] gives them.
    pub assignments: Vec<&'a str>,
    /// Byte range of `SET STATEMENT ... FOR` in the text (the inner statement follows it).
    pub head: std::ops::Range<usize>,
}

/// [`statement_set_assignments`] with where the `SET STATEMENT ... FOR` head lies, so a
/// caller can rebuild the statement with fewer assignments (or none: the inner statement).
pub fn statement_set_parts(sql: &str) -> Option<StatementSetParts<'_>> {
    let mut lexer = Lexer::new(sql).filter(|t| t.is_significant());
    let set = lexer.next()?;
    if !set.is_word("SET") || !lexer.next()?.is_word("STATEMENT") {
        return None;
    }
    let mut pieces = Vec::new();
    let mut start = None;
    let mut depth = 0u32;
    for t in lexer {
        let from = *start.get_or_insert(t.offset);
        match t.kind {
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => depth = depth.saturating_sub(1),
            TokenKind::Comma if depth == 0 => {
                pieces.push(trim(&sql[from..t.offset]));
                start = None;
            }
            _ if depth == 0 && t.is_word("FOR") => {
                pieces.push(trim(&sql[from..t.offset]));
                return Some(StatementSetParts {
                    assignments: pieces,
                    head: set.offset..t.end(),
                });
            }
            _ => {}
        }
    }
    None
}

/// Trims the whitespace the lexer skips (ASCII only: other spaces are identifier chars).
fn trim(piece: &str) -> &str {
    piece.trim_matches(|c: char| c.is_ascii() && is_space(c as u8))
}

/// Whether a statement of its own may have `;` and a statement of Tessera's appended, the
/// server then reading exactly the client's statement first: it ends with `)` outside any
/// string or quoted name, holds no comment (`#`, `--`, `/*` anywhere, even inside a string:
/// the check stays simple) and no `;`, and returns no rows (no `RETURNING`).
pub fn ends_in_parenthesis(sql: &str, backslash_escapes: bool) -> bool {
    let bytes = sql.as_bytes();
    if bytes.contains(&b'#') || bytes.contains(&b';') || has_pair(bytes, b"--") || has_pair(bytes, b"/*") {
        return false;
    }
    let mut last = None;
    for t in Lexer::with_backslash_escapes(sql, backslash_escapes) {
        if t.is_word("RETURNING") || !t.is_significant() {
            return false;
        }
        last = Some(t.kind);
    }
    last == Some(TokenKind::RParen)
}

fn has_pair(bytes: &[u8], pair: &[u8; 2]) -> bool {
    bytes.windows(2).any(|w| w == pair)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_set_assignments_stop_at_the_for() {
        assert_eq!(
            statement_set_assignments("SET STATEMENT a = 1, @@session.b = f(x, y) FOR SELECT 1, 2"),
            Some(vec!["a = 1", "@@session.b = f(x, y)"])
        );
        assert_eq!(
            statement_set_assignments("set /* c */ statement max_statement_time=(SELECT 1) for update t set a = 1"),
            Some(vec!["max_statement_time=(SELECT 1)"])
        );
        assert_eq!(statement_set_assignments("SET a = 1"), None);
        let sql = "/*M!100101 SET STATEMENT a=1 FOR */ SELECT 1";
        let parts = statement_set_parts(sql).unwrap();
        assert_eq!(&sql[parts.head], "SET STATEMENT a=1 FOR");
        assert_eq!(
            statement_set_assignments("SET STATEMENT a = 1"),
            None,
            "no FOR: not a statement"
        );
    }

    #[test]
    fn only_statements_ending_plainly_in_a_parenthesis_take_an_appended_one() {
        let yes = [
            "INSERT INTO t (id, c) VALUES (0, '59-24-08')",
            "insert into t values (1, 'a)'), (2, \"b\")  \n",
            "REPLACE INTO `a``b` (x) VALUES ('it''s')",
        ];
        for sql in yes {
            assert!(ends_in_parenthesis(sql, true), "{sql}");
        }
        let no = [
            "INSERT INTO t VALUES (1) -- note",
            "INSERT INTO t VALUES (1) # note",
            "INSERT INTO t VALUES (1) /* note */",
            "INSERT /*! IGNORE */ INTO t VALUES (1)",
            "INSERT INTO t VALUES ('a--b')",
            "INSERT INTO t VALUES (1);",
            "INSERT INTO t VALUES (1) RETURNING f(id)",
            "INSERT INTO t SELECT * FROM u",
            "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1",
            "INSERT INTO t VALUES ('x)",
            "INSERT INTO t VALUES ('x\\')",
        ];
        for sql in no {
            assert!(!ends_in_parenthesis(sql, true), "{sql}");
        }
        // Without backslash escapes the backslash is itself: the string ends there.
        assert!(ends_in_parenthesis("INSERT INTO t VALUES ('x\\')", false));
    }

    #[test]
    fn no_backslash_escapes_splits_after_a_string_ending_in_a_backslash() {
        let sql = r"SELECT 'a\'; SELECT 'b;\\'; SELECT 1";
        assert_eq!(
            split_statements_with(sql, false),
            [r"SELECT 'a\'", r"SELECT 'b;\\'", "SELECT 1"]
        );
        assert_eq!(
            split_statements(sql)[0],
            r"SELECT 'a\'; SELECT 'b",
            "with escapes the first string runs on"
        );
    }

    #[test]
    fn set_assignments_split_on_top_level_commas() {
        assert_eq!(
            set_assignments("SET autocommit=1, session_track_system_variables=CONCAT(@@x, ',a,b'), names utf8mb4;"),
            Some(vec![
                "autocommit=1",
                "session_track_system_variables=CONCAT(@@x, ',a,b')",
                "names utf8mb4"
            ])
        );
        assert_eq!(set_assignments("/* c */ set @a = 1"), Some(vec!["@a = 1"]));
        assert_eq!(
            set_assignments("/*!40101 SET session_track_schema = 0, @b = 2 */"),
            Some(vec!["session_track_schema = 0", "@b = 2"])
        );
        assert_eq!(set_assignments("SELECT 1"), None);
    }

    #[test]
    fn single_statement() {
        assert_eq!(split_statements("SELECT 1"), vec!["SELECT 1"]);
        assert_eq!(split_statements("  SELECT 1 ;  "), vec!["SELECT 1"]);
    }

    #[test]
    fn several_statements() {
        assert_eq!(
            split_statements("SELECT 1; SELECT 2;\nUPDATE t SET a=1"),
            vec!["SELECT 1", "SELECT 2", "UPDATE t SET a=1"]
        );
    }

    #[test]
    fn empty_pieces_are_dropped() {
        assert!(split_statements("").is_empty());
        assert!(split_statements(" ;; ; ").is_empty());
        assert!(split_statements("-- only a comment").is_empty());
        assert_eq!(split_statements(";;SELECT 1;;"), vec!["SELECT 1"]);
        assert_eq!(split_statements("SELECT 1; -- trailing"), vec!["SELECT 1"]);
        assert_eq!(
            split_statements("SELECT 1; /* c */ ;SELECT 2"),
            vec!["SELECT 1", "SELECT 2"]
        );
    }

    #[test]
    fn separators_inside_quotes_and_comments_are_ignored() {
        assert_eq!(
            split_statements(r#"SELECT 'a;b', `c;d`, 'e\';f', "g;h"; SELECT 2"#),
            vec![r#"SELECT 'a;b', `c;d`, 'e\';f', "g;h""#, "SELECT 2"]
        );
        assert_eq!(
            split_statements("SELECT 1 /* ; */ -- ;\n# ;\n; SELECT 2"),
            vec!["SELECT 1 /* ; */ -- ;\n# ;", "SELECT 2"]
        );
    }

    #[test]
    fn comments_stay_with_their_statement() {
        assert_eq!(
            split_statements("/*+ tessera:primary */ SELECT 1; /*master*/ SELECT 2"),
            vec!["/*+ tessera:primary */ SELECT 1", "/*master*/ SELECT 2"]
        );
    }

    #[test]
    fn executable_comments_are_statements() {
        assert_eq!(
            split_statements("/*!40101 SET NAMES utf8 */;\n/*!40103 SET TIME_ZONE='+00:00' */;\n"),
            vec!["/*!40101 SET NAMES utf8 */", "/*!40103 SET TIME_ZONE='+00:00' */"]
        );
    }

    #[test]
    fn compound_statements_do_not_panic() {
        let sql = "CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END";
        assert_eq!(
            split_statements(sql),
            vec!["CREATE PROCEDURE p() BEGIN SELECT 1", "SELECT 2", "END"]
        );
    }

    #[test]
    fn only_sql_whitespace_is_trimmed() {
        assert_eq!(split_statements("\x0b SELECT 1\x0c;"), vec!["SELECT 1"]);
        assert_eq!(split_statements("\u{2002}x"), vec!["\u{2002}x"]);
    }

    #[test]
    fn unterminated_string_swallows_the_rest() {
        assert_eq!(split_statements("SELECT 'a; SELECT 2"), vec!["SELECT 'a; SELECT 2"]);
    }
}
