//! Fingerprints: a statement's text with its literals replaced by `?`, the key of the plan
//! cache. Two statements with one fingerprint have the same tokens except literal values, so
//! a plan made for one serves the other once the literals are read again.

use crate::lexer::{Lexer, TokenKind};
use std::ops::Range;

/// A statement's fingerprint and where its literals are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// Tokens as written (comments dropped, one space between tokens), literals as `?` and
    /// placeholders as `??` (a plan made for literals must not serve a prepared statement).
    pub key: String,
    /// Byte ranges of the literals in the statement text, in order.
    pub literals: Vec<Range<usize>>,
    /// Byte offsets of the `?` placeholders in the statement text, in order.
    pub placeholders: Vec<usize>,
}

/// Whether a token kind is a literal value.
fn is_literal(kind: TokenKind) -> bool {
    matches!(
        kind,
        TokenKind::String | TokenKind::Number | TokenKind::HexLiteral | TokenKind::BitLiteral
    )
}

/// The fingerprint of `sql`. Hints are kept (they change the plan); other comments are not.
pub fn fingerprint(sql: &str) -> Fingerprint {
    let mut key = String::with_capacity(sql.len());
    let mut literals = Vec::new();
    let mut placeholders = Vec::new();
    for token in Lexer::new(sql) {
        if token.kind == TokenKind::Comment {
            continue;
        }
        if !key.is_empty() {
            key.push(' ');
        }
        if is_literal(token.kind) {
            literals.push(token.offset..token.end());
            key.push('?');
        } else if token.kind == TokenKind::Placeholder {
            placeholders.push(token.offset);
            key.push_str("??");
        } else {
            key.push_str(token.text);
        }
    }
    Fingerprint {
        key,
        literals,
        placeholders,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_become_placeholders_and_their_places_are_kept() {
        let sql = "SELECT c FROM t WHERE id = 42 AND s = 'a b' /* x */ AND p = ?";
        let f = fingerprint(sql);
        assert_eq!(f.key, "SELECT c FROM t WHERE id = ? AND s = ? AND p = ??");
        assert_eq!(&sql[f.literals[0].clone()], "42");
        assert_eq!(&sql[f.literals[1].clone()], "'a b'");
        assert_eq!(f.placeholders.len(), 1);
        assert_eq!(
            fingerprint("SELECT c FROM t WHERE id=7").key,
            f_key("SELECT c FROM t WHERE id = 1")
        );
    }

    fn f_key(s: &str) -> String {
        fingerprint(s).key
    }
}
