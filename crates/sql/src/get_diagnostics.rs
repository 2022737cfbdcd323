//! `GET [CURRENT] DIAGNOSTICS @v = ROW_COUNT, @n = NUMBER`: the statement-information form,
//! whose items a proxy that follows ROW_COUNT() and the diagnostics area can answer itself.

use crate::lexer::{Lexer, Token, TokenKind};
use crate::uservars::user_var_name;

/// A statement-information item of GET DIAGNOSTICS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementItem {
    /// `ROW_COUNT`: what ROW_COUNT() would answer.
    RowCount,
    /// `NUMBER`: the conditions in the diagnostics area.
    Number,
}

/// The `(user variable, item)` assignments of a statement-information GET DIAGNOSTICS, or None
/// for any other statement (`CONDITION n`, `STACKED`, a local variable target, a syntax error:
/// the server answers those).
pub fn statement_diagnostics(sql: &str) -> Option<Vec<(String, StatementItem)>> {
    let mut tokens = Lexer::new(sql).filter(Token::is_significant);
    let mut next = tokens.next();
    if !next.is_some_and(|t| t.is_word("GET")) {
        return None;
    }
    next = tokens.next();
    if next.is_some_and(|t| t.is_word("CURRENT")) {
        next = tokens.next();
    }
    if !next.is_some_and(|t| t.is_word("DIAGNOSTICS")) {
        return None;
    }
    let mut items = Vec::new();
    loop {
        let target = tokens.next().filter(|t| t.kind == TokenKind::UserVar)?;
        tokens
            .next()
            .filter(|t| t.kind == TokenKind::Operator && t.text == "=")?;
        let item = match tokens.next()? {
            t if t.is_word("ROW_COUNT") => StatementItem::RowCount,
            t if t.is_word("NUMBER") => StatementItem::Number,
            _ => return None,
        };
        items.push((user_var_name(target.text), item));
        match tokens.next() {
            None => return Some(items),
            Some(t) if t.kind == TokenKind::Semicolon => return tokens.next().is_none().then_some(items),
            Some(t) if t.kind == TokenKind::Comma => continue,
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use StatementItem::*;

    #[test]
    fn statement_information_is_read() {
        assert_eq!(
            statement_diagnostics("GET DIAGNOSTICS @var1 = ROW_COUNT"),
            Some(vec![("var1".into(), RowCount)])
        );
        assert_eq!(
            statement_diagnostics("get current diagnostics @`A b` = number, @c=row_count;"),
            Some(vec![("a b".into(), Number), ("c".into(), RowCount)])
        );
    }

    #[test]
    fn other_forms_are_left_to_the_server() {
        for sql in [
            "GET DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT",
            "GET STACKED DIAGNOSTICS @n = NUMBER",
            "GET DIAGNOSTICS v = ROW_COUNT",
            "GET DIAGNOSTICS @n = NUMBER @m",
            "GET DIAGNOSTICS @n = ROW_COUNT; SELECT 1",
            "GET DIAGNOSTICS",
            "SELECT 1",
        ] {
            assert_eq!(statement_diagnostics(sql), None, "{sql}");
        }
    }
}
