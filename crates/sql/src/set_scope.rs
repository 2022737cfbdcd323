//! Unscoped `@@name` targets of a SET spelled as the session assignments they are
//! (`@@session.name`). MariaDB assigns the session value for `SET @@name = v` exactly as for
//! `SET @@session.name = v`, but reports the change through session tracking only for the
//! scoped spelling (seen on 10.11), so a proxy that learns session state from tracking would
//! not know of it.

use crate::lexer::{Lexer, Token, TokenKind};

/// `sql` (one statement) with every unscoped `@@name` assignment target of its SET list
/// spelled `@@session.name`; None when it is not such a SET or has none. Statements that
/// assign globally anywhere (`GLOBAL`, `PERSIST`, `@@global.x`), SET STATEMENT ... FOR and the
/// other SET forms are left alone.
pub fn scope_session_targets(sql: &str, backslash_escapes: bool) -> Option<String> {
    let mut lexer = Lexer::with_backslash_escapes(sql, backslash_escapes);
    let first = lexer.next_significant()?;
    if !first.is_word("SET") {
        return None;
    }
    let inserts = unscoped_targets(lexer)?;
    if inserts.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + inserts.len() * 8);
    let mut at = 0;
    for pos in inserts {
        out.push_str(&sql[at..pos]);
        out.push_str("session.");
        at = pos;
    }
    out.push_str(&sql[at..]);
    Some(out)
}

/// Where `session.` goes (just past the `@@`) for each unscoped target of the assignment
/// list that `lexer` is at; None when the statement is not a plain session SET list.
fn unscoped_targets(lexer: Lexer<'_>) -> Option<Vec<usize>> {
    let mut inserts = Vec::new();
    let mut depth = 0u32;
    let mut at_target = true;
    for t in lexer.filter(Token::is_significant) {
        match t.kind {
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => depth = depth.saturating_sub(1),
            TokenKind::Comma if depth == 0 => {
                at_target = true;
                continue;
            }
            TokenKind::Semicolon if depth == 0 => break,
            _ => {}
        }
        if at_target {
            if t.kind == TokenKind::Word && is_scope_or_form_word(t.text) {
                return None;
            }
            if t.kind == TokenKind::SystemVar {
                match target_scope(t.text) {
                    Scope::Unscoped if is_next_transaction_variable(&t.text[2..]) => {}
                    Scope::Unscoped => inserts.push(t.offset + 2),
                    Scope::Global => return None,
                    Scope::Session => {}
                }
            }
        }
        at_target = false;
    }
    Some(inserts)
}

/// Words that start an assignment of another scope or another form of SET: the statement is
/// then not rewritten at all (`SESSION` and `LOCAL` are session assignments already, and are
/// fine where they stand, but `SET SESSION TRANSACTION ...` is left alone with them).
fn is_scope_or_form_word(word: &str) -> bool {
    [
        "GLOBAL",
        "PERSIST",
        "PERSIST_ONLY",
        "STATEMENT",
        "TRANSACTION",
        "PASSWORD",
        "ROLE",
        "DEFAULT",
    ]
    .iter()
    .any(|w| word.eq_ignore_ascii_case(w))
}

/// Variables that `SET @@name` (no scope) sets for the next transaction only, as
/// `SET TRANSACTION` does: spelled `@@session.name` they would last for the session.
pub const NEXT_TRANSACTION_VARIABLES: [&str; 4] = [
    "tx_isolation",
    "tx_read_only",
    "transaction_isolation",
    "transaction_read_only",
];

fn is_next_transaction_variable(name: &str) -> bool {
    let name = name.trim_matches('`');
    NEXT_TRANSACTION_VARIABLES.iter().any(|v| v.eq_ignore_ascii_case(name))
}

/// Whether a SET statement sets a next-transaction characteristic with an unscoped
/// `@@tx_isolation`-like target (see [`NEXT_TRANSACTION_VARIABLES`]).
pub fn sets_next_transaction(sql: &str, backslash_escapes: bool) -> bool {
    let mut lexer = Lexer::with_backslash_escapes(sql, backslash_escapes);
    if !lexer.next_significant().is_some_and(|t| t.is_word("SET")) {
        return false;
    }
    lexer.filter(Token::is_significant).any(|t| {
        t.kind == TokenKind::SystemVar
            && matches!(target_scope(t.text), Scope::Unscoped)
            && is_next_transaction_variable(&t.text[2..])
    })
}

enum Scope {
    Unscoped,
    Session,
    Global,
}

/// The scope a `@@...` token names.
fn target_scope(token: &str) -> Scope {
    let rest = &token[2..];
    let Some(dot) = rest.find('.') else {
        return Scope::Unscoped;
    };
    let prefix = rest[..dot].trim_matches('`');
    if prefix.eq_ignore_ascii_case("session") || prefix.eq_ignore_ascii_case("local") {
        Scope::Session
    } else if prefix.eq_ignore_ascii_case("global") {
        Scope::Global
    } else {
        // A structured variable (`@@keycache.key_buffer_size`): global by nature.
        Scope::Global
    }
}

#[cfg(test)]
mod tests {
    use super::scope_session_targets as scope;

    #[test]
    fn unscoped_targets_become_session_assignments() {
        assert_eq!(
            scope("SET @@autocommit=0", true).as_deref(),
            Some("SET @@session.autocommit=0")
        );
        assert_eq!(
            scope("SET @@autocommit:=0", true).as_deref(),
            Some("SET @@session.autocommit:=0")
        );
        assert_eq!(
            scope("set @@autocommit=0, @x=1", true).as_deref(),
            Some("set @@session.autocommit=0, @x=1")
        );
        assert_eq!(
            scope("/*!40101 SET @@time_zone='+05:00' */", true).as_deref(),
            Some("/*!40101 SET @@session.time_zone='+05:00' */")
        );
        assert_eq!(
            scope("SET @x = @@sql_mode, @@sql_mode = CONCAT(@@sql_mode, ',ANSI'), @@`time_zone` = '+01:00'", true)
                .as_deref(),
            Some("SET @x = @@sql_mode, @@session.sql_mode = CONCAT(@@sql_mode, ',ANSI'), @@session.`time_zone` = '+01:00'")
        );
    }

    #[test]
    fn scoped_global_and_other_forms_are_left_alone() {
        for sql in [
            "SET @@session.autocommit=0",
            "SET @@LOCAL.autocommit=0",
            "SET autocommit=0",
            "SET @x = @@autocommit",
            "SET @@global.max_connections=10, @@autocommit=0",
            "SET GLOBAL max_connections=10, @@autocommit=0",
            "SET STATEMENT @@max_statement_time=1 FOR SELECT 1",
            "SET @@keycache.key_buffer_size=1",
            "SELECT @@autocommit",
            "SET NAMES utf8mb4",
            "SET @@tx_isolation = 'READ-COMMITTED'",
            "SET @@transaction_read_only = 1",
        ] {
            assert_eq!(scope(sql, true), None, "{sql}");
        }
    }

    #[test]
    fn values_and_strings_are_never_targets() {
        assert_eq!(scope("SET @a = '@@autocommit=0'", true), None);
        assert_eq!(scope("SET @a = (SELECT @@x), b = 1", true), None);
        assert_eq!(
            scope("SET @a = 'x\\'', @@x = 1", true).as_deref(),
            Some("SET @a = 'x\\'', @@session.x = 1")
        );
    }
}
