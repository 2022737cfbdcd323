//! Quoting of values and identifiers as SQL text the server reads back exactly.

/// A single-quoted SQL string with quotes and backslashes escaped (the server's default mode).
pub fn quote_string(v: &str) -> String {
    quote_string_as(v, true)
}

/// A single-quoted SQL string read back as `v` by a server with or without backslash escapes
/// (`NO_BACKSLASH_ESCAPES` reads a backslash as itself): quotes doubled, backslashes doubled
/// only where they escape.
pub fn quote_string_as(v: &str, backslash_escapes: bool) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('\'');
    for c in v.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' if backslash_escapes => out.push_str("\\\\"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A backquoted identifier.
pub fn quote_ident(v: &str) -> String {
    format!("`{}`", v.replace('`', "``"))
}
