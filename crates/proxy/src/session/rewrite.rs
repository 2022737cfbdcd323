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
    // As BIGINT of 21 digits, the type MariaDB gives these functions: a small literal (even
    // cast) is INT; adding zero times an 18-digit BIGINT types the sum BIGINT(21).
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
    format!("({n} + 0 * 922337203685477580)")
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

/// Replaces every term outside strings, identifiers and comments; an unnamed item of the
/// outermost select list that holds a replaced term gets its original text as alias, so the
/// client sees the column name one server would give. None: nothing replaced.
/// Strings end where the session's `sql_mode` ends them: `backslash_escapes` false is
/// `NO_BACKSLASH_ESCAPES`, where a backslash is itself.
pub fn replace_terms(sql: &str, terms: &[Term<'_>], backslash_escapes: bool) -> Option<String> {
    let edits: Vec<Edit<'_>> = term_edits(sql, terms, backslash_escapes)
        .into_iter()
        .map(|(range, value)| (range, value.into()))
        .collect();
    apply_edits(sql, edits, backslash_escapes)
}

/// A range of the text and what replaces it.
type Edit<'v> = (std::ops::Range<usize>, std::borrow::Cow<'v, str>);

/// `IS_USED_LOCK(name)` answers the holder's backend thread id: each call is mapped to the
/// Tessera connection id of the session holding the lock on that connection (`holders`:
/// (thread id, session id) pairs of the server the statement runs on); other holders (not
/// through Tessera) keep their thread id. None when nothing was replaced.
pub fn map_lock_holders(sql: &str, holders: &[(u32, u32)], backslash_escapes: bool) -> Option<String> {
    if holders.is_empty() {
        return None;
    }
    let mut whens = String::new();
    for (thread, session) in holders {
        whens.push_str(&format!(" WHEN {thread} THEN {session}"));
    }
    let edits: Vec<Edit<'_>> = call_ranges(sql, "IS_USED_LOCK", backslash_escapes)
        .into_iter()
        .map(|range| {
            let call = &sql[range.clone()];
            (range, format!("CASE {call}{whens} ELSE {call} END").into())
        })
        .collect();
    apply_edits(sql, edits, backslash_escapes)
}

/// Where each call `name(...)` is (outside strings, identifiers and comments), arguments and
/// closing parenthesis included.
fn call_ranges(sql: &str, name: &str, backslash_escapes: bool) -> Vec<std::ops::Range<usize>> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' | b'`' => i = tessera_sql::quoted_end(bytes, i, backslash_escapes),
            b'#' => i = skip_to_newline(bytes, i),
            b'-' if bytes[i..].starts_with(b"-- ") => i = skip_to_newline(bytes, i),
            b'/' if bytes[i..].starts_with(b"/*") => i = skip_comment(bytes, i),
            c if c.is_ascii_alphabetic() && (i == 0 || !is_ident(bytes[i - 1])) => {
                let start = i;
                while i < bytes.len() && is_ident(bytes[i]) {
                    i += 1;
                }
                if !sql[start..i].eq_ignore_ascii_case(name) {
                    continue;
                }
                let open = i + bytes[i..].iter().take_while(|b| b.is_ascii_whitespace()).count();
                if bytes.get(open) == Some(&b'(') {
                    if let Some(close) = closing_paren(bytes, open, backslash_escapes) {
                        out.push(start..close + 1);
                        i = close + 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The `)` that closes the `(` at `open`.
fn closing_paren(bytes: &[u8], open: usize, backslash_escapes: bool) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' | b'`' => {
                i = tessera_sql::quoted_end(bytes, i, backslash_escapes);
                continue;
            }
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `sql` with `edits` (in order, not overlapping) applied; an unnamed item of the outermost
/// select list that holds an edit gets its original text as alias. None: no edits.
fn apply_edits(sql: &str, edits: Vec<Edit<'_>>, backslash_escapes: bool) -> Option<String> {
    if edits.is_empty() {
        return None;
    }
    let aliases: Vec<(usize, String)> = tessera_sql::select_items::top_select_items(sql, backslash_escapes)
        .into_iter()
        .filter(|item| !item.aliased && item.range.len() <= MAX_ALIAS)
        .filter(|item| edits.iter().any(|(r, _)| item.range.contains(&r.start)))
        .map(|item| (item.range.end, format!(" AS `{}`", sql[item.range].replace('`', "``"))))
        .collect();
    let mut out = String::with_capacity(sql.len() + 32);
    let mut copied = 0;
    let mut aliases = aliases.into_iter().peekable();
    for (range, value) in edits {
        while let Some((at, alias)) = aliases.next_if(|(at, _)| *at <= range.start) {
            out.push_str(&sql[copied..at]);
            out.push_str(&alias);
            copied = at;
        }
        out.push_str(&sql[copied..range.start]);
        out.push_str(&value);
        copied = range.end;
    }
    for (at, alias) in aliases {
        out.push_str(&sql[copied..at]);
        out.push_str(&alias);
        copied = at;
    }
    out.push_str(&sql[copied..]);
    Some(out)
}

/// The longest alias MariaDB takes (a longer item keeps the rewritten text as its name).
const MAX_ALIAS: usize = 256;

/// Where each term is in `sql` and its replacement, in order.
fn term_edits<'t>(sql: &str, terms: &[Term<'t>], backslash_escapes: bool) -> Vec<(std::ops::Range<usize>, &'t str)> {
    let bytes = sql.as_bytes();
    let mut edits = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' | b'`' => i = tessera_sql::quoted_end(bytes, i, backslash_escapes),
            b'#' => i = skip_to_newline(bytes, i),
            b'-' if bytes[i..].starts_with(b"-- ") => i = skip_to_newline(bytes, i),
            b'/' if bytes[i..].starts_with(b"/*") => i = skip_comment(bytes, i),
            c if (c.is_ascii_alphabetic() || c == b'@') && (i == 0 || !is_ident(bytes[i - 1])) => {
                if let Some((end, value)) = terms.iter().find_map(|t| match_term(bytes, i, t)) {
                    edits.push((i..end, value));
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
    edits
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
            Some("SELECT (3 + 0 * 922337203685477580) AS `ROW_COUNT()`")
        );
        assert_eq!(
            replace_session_functions("select row_count ( ), found_rows()", -1, Some(7), true).as_deref(),
            Some("select (-1 + 0 * 922337203685477580) AS `row_count ( )`, (7 + 0 * 922337203685477580) AS `found_rows()`")
        );
        assert_eq!(
            replace_session_functions("SELECT ROW_COUNT() + 1", 3, None, true).as_deref(),
            Some("SELECT (3 + 0 * 922337203685477580) + 1 AS `ROW_COUNT() + 1`")
        );
        assert_eq!(
            replace_session_functions("SELECT hex(concat(row_count())), ROW_COUNT() rc FROM t", -1, None, true)
                .as_deref(),
            Some(
                "SELECT hex(concat((-1 + 0 * 922337203685477580))) AS `hex(concat(row_count()))`, \
                 (-1 + 0 * 922337203685477580) rc FROM t"
            ),
            "the whole unnamed item is named by its text; a named one keeps its name"
        );
        assert_eq!(
            replace_session_functions("SELECT CONCAT('<', ROW_COUNT(), '>'), x", 3, None, true).as_deref(),
            Some("SELECT CONCAT('<', (3 + 0 * 922337203685477580), '>') AS `CONCAT('<', ROW_COUNT(), '>')`, x"),
            "the alias follows the whole item, never inside a call"
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
            Some("SELECT 'it''s', (2 + 0 * 922337203685477580) AS `ROW_COUNT()`")
        );
    }

    #[test]
    fn lock_holders_are_mapped_in_every_call() {
        let sql = "SELECT IS_USED_LOCK('a'), is_used_lock ( CONCAT('b', ')') ) > 0, 'IS_USED_LOCK(1)'";
        assert_eq!(
            map_lock_holders(sql, &[(31, 7)], true).as_deref(),
            Some(
                "SELECT CASE IS_USED_LOCK('a') WHEN 31 THEN 7 ELSE IS_USED_LOCK('a') END AS `IS_USED_LOCK('a')`, \
                 CASE is_used_lock ( CONCAT('b', ')') ) WHEN 31 THEN 7 ELSE is_used_lock ( CONCAT('b', ')') ) END > 0 \
                 AS `is_used_lock ( CONCAT('b', ')') ) > 0`, 'IS_USED_LOCK(1)'"
            )
        );
        assert_eq!(map_lock_holders(sql, &[], true), None);
        assert_eq!(map_lock_holders("SELECT IS_FREE_LOCK('a')", &[(1, 2)], true), None);
    }

    #[test]
    fn strings_end_where_the_sql_mode_ends_them() {
        // NO_BACKSLASH_ESCAPES: 'a\' is a whole string, the call after it is code and the
        // text in the next string is not.
        let sql = r"SELECT 'a\', ROW_COUNT(), ' ROW_COUNT() '";
        assert_eq!(
            replace_session_functions(sql, 4, None, false).as_deref(),
            Some(r"SELECT 'a\', (4 + 0 * 922337203685477580) AS `ROW_COUNT()`, ' ROW_COUNT() '")
        );
        assert_eq!(
            replace_session_functions(sql, 4, None, true).as_deref(),
            Some(r"SELECT 'a\', ROW_COUNT(), ' (4 + 0 * 922337203685477580) '"),
            "read with backslash escapes the strings pair differently"
        );
    }
}
