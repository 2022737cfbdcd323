//! Values Tessera answers for the client's own session, spliced into the statement text so
//! they are exact whichever backend connection runs it: ROW_COUNT() and FOUND_ROWS() (values
//! of the previous statement, recorded by Tessera), CONNECTION_ID() (Tessera's connection id,
//! the one KILL takes), USER()/SESSION_USER()/SYSTEM_USER()/CURRENT_USER (the client's
//! account, not the backend's) and `@@session_track_*` (what the client asked for).

/// One expression to replace, and the SQL that replaces it.
#[derive(Debug, Clone, Copy)]
pub enum Term<'a> {
    /// A call `NAME()` (no arguments).
    Call(&'static str, &'a str),
    /// `NAME()` or the bare word `NAME` (CURRENT_USER).
    CallOrBare(&'static str, &'a str),
    /// A session system variable: `@@name`, `@@session.name`, `@@local.name`.
    SessionVar(&'static str, &'a str),
}

/// Replaces calls of `ROW_COUNT()` and (when `found_rows` is given) `FOUND_ROWS()` outside
/// strings, identifiers and comments. Returns None when nothing was replaced.
/// `backslash_escapes`: how the session's `sql_mode` reads strings ([`replace_terms`]).
pub fn replace_session_functions(
    sql: &str,
    row_count: i64,
    found_rows: Option<u64>,
    backslash_escapes: bool,
) -> Option<String> {
    // As BIGINT, the type MariaDB gives these functions: a small literal (even cast) is INT;
    // adding a BIGINT zero types the sum BIGINT.
    let row_count = bigint(row_count);
    let found_rows = found_rows.map(|n| bigint(n as i64));
    let mut terms = vec![Term::Call("ROW_COUNT", &row_count)];
    if let Some(n) = &found_rows {
        terms.push(Term::Call("FOUND_ROWS", n));
    }
    replace_terms(sql, &terms, backslash_escapes)
}

/// `n` as a BIGINT-typed expression.
fn bigint(n: i64) -> String {
    format!("({n} + 0 * 9223372036854775807)")
}

/// Hidden user variables a prepared statement reads instead of ROW_COUNT() / FOUND_ROWS().
pub const ROW_COUNT_VAR: &str = "@`tessera_row_count`";
pub const FOUND_ROWS_VAR: &str = "@`tessera_found_rows`";

/// The text Tessera prepares on backends for a statement that calls ROW_COUNT() or
/// FOUND_ROWS(): the calls read hidden user variables, set right before each execution.
pub fn prepared_session_functions(sql: &str, backslash_escapes: bool) -> Option<String> {
    replace_terms(
        sql,
        &[
            Term::Call("ROW_COUNT", ROW_COUNT_VAR),
            Term::Call("FOUND_ROWS", FOUND_ROWS_VAR),
        ],
        backslash_escapes,
    )
}

/// Replaces every term outside strings, identifiers and comments; a term that is a whole
/// select-list item keeps the column name the client would have seen. None: nothing replaced.
/// Strings end where the session's `sql_mode` ends them: `backslash_escapes` false is
/// `NO_BACKSLASH_ESCAPES`, where a backslash is itself.
pub fn replace_terms(sql: &str, terms: &[Term<'_>], backslash_escapes: bool) -> Option<String> {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 16);
    let mut i = 0;
    let mut copied = 0;
    let mut changed = false;
    // Parentheses open around `i`: only a term outside all of them can be a select item.
    let mut depth = 0u32;
    while i < bytes.len() {
        match bytes[i] {
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'\'' | b'"' | b'`' => i = tessera_sql::quoted_end(bytes, i, backslash_escapes),
            b'#' => i = skip_to_newline(bytes, i),
            b'-' if bytes[i..].starts_with(b"-- ") => i = skip_to_newline(bytes, i),
            b'/' if bytes[i..].starts_with(b"/*") => i = skip_comment(bytes, i),
            c if (c.is_ascii_alphabetic() || c == b'@') && (i == 0 || !is_ident(bytes[i - 1])) => {
                if let Some((end, value)) = terms.iter().find_map(|t| match_term(bytes, i, t)) {
                    out.push_str(&sql[copied..i]);
                    out.push_str(value);
                    if depth == 0 && is_whole_select_item(bytes, i, end) {
                        out.push_str(&format!(" AS `{}`", sql[i..end].replace('`', "``")));
                    }
                    copied = end;
                    changed = true;
                    i = end;
                } else {
                    i += 1;
                    while i < bytes.len() && is_ident(bytes[i]) {
                        i += 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied..]);
    changed.then_some(out)
}

/// If `term` starts at `i`, returns where it ends and its replacement.
fn match_term<'a>(bytes: &[u8], i: usize, term: &Term<'a>) -> Option<(usize, &'a str)> {
    match *term {
        Term::Call(name, with) => match_call(bytes, i, name.as_bytes()).map(|end| (end, with)),
        Term::CallOrBare(name, with) => match_call(bytes, i, name.as_bytes())
            .or_else(|| match_word(bytes, i, name.as_bytes()))
            .map(|end| (end, with)),
        Term::SessionVar(name, with) => match_session_var(bytes, i, name.as_bytes()).map(|end| (end, with)),
    }
}

/// `name` as a whole word at `i` (not followed by an identifier character or `(`).
fn match_word(bytes: &[u8], i: usize, name: &[u8]) -> Option<usize> {
    let end = i + name.len();
    let whole = bytes.len() >= end
        && bytes[i..end].eq_ignore_ascii_case(name)
        && bytes.get(end).is_none_or(|b| !is_ident(*b) && *b != b'(');
    whole.then_some(end)
}

/// `@@name`, `@@session.name` or `@@local.name` at `i`.
fn match_session_var(bytes: &[u8], i: usize, name: &[u8]) -> Option<usize> {
    let rest = bytes.get(i..)?.strip_prefix(b"@@")?;
    let skip = [b"session.".as_slice(), b"local.".as_slice()]
        .iter()
        .find(|scope| rest.len() >= scope.len() && rest[..scope.len()].eq_ignore_ascii_case(scope))
        .map_or(0, |scope| scope.len());
    let start = i + 2 + skip;
    let end = start + name.len();
    let whole = bytes.len() >= end
        && bytes[start..end].eq_ignore_ascii_case(name)
        && bytes.get(end).is_none_or(|b| !is_ident(*b));
    whole.then_some(end)
}

/// True when the call at `start..end` is a select-list item on its own (`SELECT f(), ...`).
fn is_whole_select_item(bytes: &[u8], start: usize, end: usize) -> bool {
    let before = bytes[..start].trim_ascii_end();
    let after = bytes[end..].trim_ascii_start();
    let before_ok = before.ends_with(b",") || ends_with_word(before, b"SELECT");
    let after_ok = after.is_empty()
        || after.starts_with(b",")
        || after.starts_with(b";")
        || starts_with_word(after, b"FROM")
        || starts_with_word(after, b"INTO");
    before_ok && after_ok
}

fn ends_with_word(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len()
        && s[s.len() - word.len()..].eq_ignore_ascii_case(word)
        && (s.len() == word.len() || !is_ident(s[s.len() - word.len() - 1]))
}

fn starts_with_word(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len()
        && s[..word.len()].eq_ignore_ascii_case(word)
        && s.get(word.len()).is_none_or(|b| !is_ident(*b))
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.' || b == b'@'
}

/// If `name` followed by optional spaces and `()` starts at `i`, returns the end index.
fn match_call(bytes: &[u8], i: usize, name: &[u8]) -> Option<usize> {
    let end = i + name.len();
    if bytes.len() < end || !bytes[i..end].eq_ignore_ascii_case(name) {
        return None;
    }
    let mut j = end;
    while j < bytes.len() && bytes[j].is_ascii_whitespace() {
        j += 1;
    }
    if bytes.get(j) != Some(&b'(') {
        return None;
    }
    j += 1;
    while j < bytes.len() && bytes[j].is_ascii_whitespace() {
        j += 1;
    }
    (bytes.get(j) == Some(&b')')).then_some(j + 1)
}

fn skip_to_newline(bytes: &[u8], i: usize) -> usize {
    bytes[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| i + p + 1)
}

fn skip_comment(bytes: &[u8], i: usize) -> usize {
    if bytes.get(i + 2) == Some(&b'!') || bytes[i..].starts_with(b"/*M!") {
        return i + 2; // executable comment: its body is SQL
    }
    bytes[i + 2..]
        .windows(2)
        .position(|w| w == b"*/")
        .map_or(bytes.len(), |p| i + 2 + p + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_variant_reads_hidden_variables() {
        assert_eq!(
            prepared_session_functions("SELECT ?, FOUND_ROWS()", true).as_deref(),
            Some("SELECT ?, @`tessera_found_rows` AS `FOUND_ROWS()`")
        );
        assert_eq!(prepared_session_functions("SELECT ?", true), None);
    }

    #[test]
    fn replaces_calls_only() {
        assert_eq!(
            replace_session_functions("SELECT ROW_COUNT()", 3, None, true).as_deref(),
            Some("SELECT (3 + 0 * 9223372036854775807) AS `ROW_COUNT()`")
        );
        assert_eq!(
            replace_session_functions("select row_count ( ), found_rows()", -1, Some(7), true).as_deref(),
            Some("select (-1 + 0 * 9223372036854775807) AS `row_count ( )`, (7 + 0 * 9223372036854775807) AS `found_rows()`")
        );
        assert_eq!(
            replace_session_functions("SELECT ROW_COUNT() + 1", 3, None, true).as_deref(),
            Some("SELECT (3 + 0 * 9223372036854775807) + 1")
        );
        assert_eq!(
            replace_session_functions("SELECT CONCAT('<', ROW_COUNT(), '>'), x", 3, None, true).as_deref(),
            Some("SELECT CONCAT('<', (3 + 0 * 9223372036854775807), '>'), x"),
            "a function's argument is no select item"
        );
        assert_eq!(replace_session_functions("SELECT found_rows()", 1, None, true), None);
        assert_eq!(
            replace_session_functions("SELECT 'ROW_COUNT()', `row_count()`", 1, None, true),
            None
        );
        assert_eq!(replace_session_functions("SELECT my_row_count()", 1, None, true), None);
        assert_eq!(
            replace_session_functions("SELECT 1 /* ROW_COUNT() */", 1, None, true),
            None
        );
        assert_eq!(
            replace_session_functions("SELECT 'it''s', ROW_COUNT()", 2, None, true).as_deref(),
            Some("SELECT 'it''s', (2 + 0 * 9223372036854775807) AS `ROW_COUNT()`")
        );
    }

    #[test]
    fn strings_end_where_the_sql_mode_ends_them() {
        // NO_BACKSLASH_ESCAPES: 'a\' is a whole string, the call after it is code and the
        // text in the next string is not.
        let sql = r"SELECT 'a\', ROW_COUNT(), ' ROW_COUNT() '";
        assert_eq!(
            replace_session_functions(sql, 4, None, false).as_deref(),
            Some(r"SELECT 'a\', (4 + 0 * 9223372036854775807) AS `ROW_COUNT()`, ' ROW_COUNT() '")
        );
        assert_eq!(
            replace_session_functions(sql, 4, None, true).as_deref(),
            Some(r"SELECT 'a\', ROW_COUNT(), ' (4 + 0 * 9223372036854775807) '"),
            "read with backslash escapes the strings pair differently"
        );
    }
}
