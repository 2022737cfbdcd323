//! Whether a statement's text reads alike under two `sql_mode` values: which flags change how
//! the server reads text, and whether a text holds anything those flags read differently.

use crate::lexer::{escape_reading, EscapeReading};
use std::collections::BTreeSet;

/// `sql_mode` flags the server applies as a statement runs, never to how it reads the text:
/// a prepared statement follows the session's value at each execution (checked against the
/// server for strictness and `ONLY_FULL_GROUP_BY`).
const RUNTIME_FLAGS: [&str; 14] = [
    "STRICT_TRANS_TABLES",
    "STRICT_ALL_TABLES",
    "NO_ZERO_IN_DATE",
    "NO_ZERO_DATE",
    "ALLOW_INVALID_DATES",
    "ERROR_FOR_DIVISION_BY_ZERO",
    "TRADITIONAL",
    "NO_AUTO_CREATE_USER",
    "NO_ENGINE_SUBSTITUTION",
    "NO_AUTO_VALUE_ON_ZERO",
    "PAD_CHAR_TO_FULL_LENGTH",
    "ONLY_FULL_GROUP_BY",
    "NO_DIR_IN_CREATE",
    "TIME_ROUND_FRACTIONAL",
];

/// The flags of an `sql_mode` value that may change how text reads (uppercase). None, a
/// session that never set the mode, is taken to hold none of them (the server's default).
fn parse_flags(mode: Option<&str>) -> BTreeSet<String> {
    mode.unwrap_or_default()
        .split(',')
        .map(|f| f.trim().to_ascii_uppercase())
        .filter(|f| !f.is_empty() && !RUNTIME_FLAGS.contains(&f.as_str()))
        .collect()
}

/// Whether `text` reads as the same statement under the `sql_mode` values `a` and `b`. Each
/// flag that differs must have nothing to read in the text: no backslash in a string for
/// `NO_BACKSLASH_ESCAPES`, no double quote for `ANSI_QUOTES`, no `||` for `PIPES_AS_CONCAT`;
/// any other flag that differs may change the reading of any text, so it never reads alike.
pub fn reads_alike(text: &str, a: Option<&str>, b: Option<&str>) -> bool {
    let (a, b) = (parse_flags(a), parse_flags(b));
    a.symmetric_difference(&b).all(|flag| match flag.as_str() {
        "NO_BACKSLASH_ESCAPES" => escape_reading(text) == EscapeReading::Alike,
        "ANSI_QUOTES" => !text.contains('"'),
        "PIPES_AS_CONCAT" => !text.contains("||"),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_flags_never_change_the_reading() {
        let strict = Some("STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION");
        assert!(reads_alike(r#"SELECT 'a\nb' || "c""#, strict, None));
        assert!(reads_alike(
            r#"SELECT 'a\nb' || "c""#,
            strict,
            Some("only_full_group_by")
        ));
    }

    #[test]
    fn reading_flags_differ_only_where_the_text_has_what_they_read() {
        let nbe = Some("STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES");
        assert!(reads_alike("SELECT c FROM t WHERE id = ?", nbe, None));
        assert!(reads_alike(r"SELECT 'a b', `x\y`", nbe, None));
        assert!(!reads_alike(r"SELECT 'a\nb'", nbe, None));
        assert!(reads_alike(r"SELECT 'a\nb'", nbe, Some("no_backslash_escapes")));
        let ansi = Some("ANSI_QUOTES");
        assert!(reads_alike("SELECT 'x'", ansi, None));
        assert!(!reads_alike(r#"SELECT "x""#, ansi, None));
        let pipes = Some("PIPES_AS_CONCAT");
        assert!(reads_alike("SELECT a OR b", pipes, None));
        assert!(!reads_alike("SELECT a || b", pipes, None));
    }

    #[test]
    fn other_reading_flags_never_read_alike() {
        for mode in ["HIGH_NOT_PRECEDENCE", "IGNORE_SPACE", "ORACLE", "EMPTY_STRING_IS_NULL"] {
            assert!(!reads_alike("SELECT 1", Some(mode), None), "{mode}");
            assert!(reads_alike("SELECT 1", Some(mode), Some(mode)), "{mode}");
        }
    }
}
