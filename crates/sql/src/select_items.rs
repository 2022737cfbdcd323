//! The select-list items of a statement's outermost SELECT, found from tokens: where each item
//! is in the text and whether it names its column (`AS x`, `expr x`, `expr 'x'`). A rewrite
//! inside an unnamed item writes the item's original text as its alias, so the client sees the
//! column name one server would give.

use crate::{Lexer, Token, TokenKind};
use std::ops::Range;

/// One item of the outermost select list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectItem {
    /// The item's text, trimmed (alias included when there is one).
    pub range: Range<usize>,
    /// The item names its column itself.
    pub aliased: bool,
}

/// Words that may follow `SELECT` before the first item.
const MODIFIERS: &[&str] = &[
    "ALL",
    "DISTINCT",
    "DISTINCTROW",
    "HIGH_PRIORITY",
    "STRAIGHT_JOIN",
    "SQL_SMALL_RESULT",
    "SQL_BIG_RESULT",
    "SQL_BUFFER_RESULT",
    "SQL_CACHE",
    "SQL_NO_CACHE",
    "SQL_CALC_FOUND_ROWS",
];

/// Words that end the select list at depth 0.
const ENDS: &[&str] = &[
    "FROM",
    "INTO",
    "WHERE",
    "GROUP",
    "HAVING",
    "ORDER",
    "LIMIT",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "FOR",
    "LOCK",
    "WINDOW",
    "PROCEDURE",
];

/// Words after which a trailing word or string is an operand, not an alias.
const OPERATORS: &[&str] = &[
    "AND", "OR", "XOR", "NOT", "IS", "LIKE", "RLIKE", "REGEXP", "IN", "BETWEEN", "DIV", "MOD", "COLLATE", "BINARY",
    "INTERVAL", "ESCAPE", "SOUNDS", "AS", "SELECT", "DISTINCT", "ALL", "CASE", "WHEN", "THEN", "ELSE", "END",
];

/// Words that are values, never aliases.
const VALUES: &[&str] = &["NULL", "TRUE", "FALSE", "UNKNOWN", "END"];

/// The items of the statement's outermost select list; empty when it does not start with
/// SELECT. `backslash_escapes`: how the session's `sql_mode` reads strings.
pub fn top_select_items(sql: &str, backslash_escapes: bool) -> Vec<SelectItem> {
    let tokens: Vec<Token<'_>> = Lexer::with_backslash_escapes(sql, backslash_escapes)
        .filter(Token::is_significant)
        .collect();
    let mut i = match tokens.first() {
        Some(t) if t.is_word("SELECT") => 1,
        _ => return Vec::new(),
    };
    while tokens.get(i).is_some_and(|t| MODIFIERS.iter().any(|m| t.is_word(m))) {
        i += 1;
    }
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut start = i;
    while i <= tokens.len() {
        let t = tokens.get(i);
        let at_end = match t {
            None => true,
            Some(t) if depth == 0 => {
                matches!(t.kind, TokenKind::Comma | TokenKind::Semicolon)
                    || (t.kind == TokenKind::Word && ENDS.iter().any(|e| t.is_word(e)))
            }
            Some(_) => false,
        };
        if at_end {
            if start < i {
                items.push(item(&tokens[start..i]));
            }
            if t.is_none_or(|t| t.kind != TokenKind::Comma) {
                break;
            }
            start = i + 1;
        } else if let Some(t) = t {
            match t.kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        i += 1;
    }
    items
}

fn item(tokens: &[Token<'_>]) -> SelectItem {
    let range = tokens[0].offset..tokens[tokens.len() - 1].end();
    SelectItem {
        range,
        aliased: has_alias(tokens),
    }
}

/// `... AS name`, or a trailing name or string right after an operand.
fn has_alias(tokens: &[Token<'_>]) -> bool {
    let [.., before, last] = tokens else {
        return false;
    };
    let name_like = match last.kind {
        TokenKind::QuotedIdent | TokenKind::String => true,
        TokenKind::Word => !VALUES.iter().any(|v| last.is_word(v)),
        _ => false,
    };
    if !name_like {
        return false;
    }
    if before.is_word("AS") {
        return true;
    }
    match before.kind {
        TokenKind::RParen | TokenKind::Number | TokenKind::String | TokenKind::QuotedIdent | TokenKind::HexLiteral => {
            true
        }
        TokenKind::Word | TokenKind::SystemVar | TokenKind::UserVar => {
            !OPERATORS.iter().any(|o| before.is_word(o)) && last.kind != TokenKind::String
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(sql: &str) -> Vec<(&str, bool)> {
        top_select_items(sql, true)
            .into_iter()
            .map(|i| (&sql[i.range], i.aliased))
            .collect()
    }

    #[test]
    fn items_and_their_aliases() {
        assert_eq!(
            items("SELECT hex(concat(row_count())), user() like \"%@%\" FROM t"),
            [("hex(concat(row_count()))", false), ("user() like \"%@%\"", false)]
        );
        assert_eq!(
            items("select distinct row_count() AS rc, f(1, 2) x, 1 'y', a.b c, @@x"),
            [
                ("row_count() AS rc", true),
                ("f(1, 2) x", true),
                ("1 'y'", true),
                ("a.b c", true),
                ("@@x", false)
            ]
        );
        assert_eq!(
            items("SELECT a IS NULL, b IS NOT TRUE, CASE WHEN a THEN 1 END; SELECT 2"),
            [
                ("a IS NULL", false),
                ("b IS NOT TRUE", false),
                ("CASE WHEN a THEN 1 END", false)
            ]
        );
        assert!(items("INSERT INTO t SELECT 1").is_empty());
        assert_eq!(
            items("SELECT (SELECT 1 FROM t) , 2 INTO @a"),
            [("(SELECT 1 FROM t)", false), ("2", false)]
        );
    }
}
