//! Turning a statement's literals into `?` parameters for the binary protocol: numbers and
//! strings become typed parameters, except where SQL needs a literal (ORDER BY / GROUP BY
//! positions, type arguments such as DECIMAL(12,2), SEPARATOR, ESCAPE, typed literals like
//! DATE '2020-01-01', character set introducers).

use crate::common::stmt::Param;

/// A lexical token of a statement (only what parameterizing needs).
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A word: keyword or identifier (upper-cased copy for keyword checks).
    Word(String),
    /// A quoted string literal, decoded.
    Str(String),
    /// A numeric literal as written.
    Num(String),
    /// Anything kept verbatim and not significant (spaces, comments, quoted identifiers,
    /// introducer-prefixed strings).
    Other,
    /// One punctuation or operator character.
    Punct(char),
}

/// A token with its source text.
struct Lexeme {
    tok: Tok,
    text: String,
}

/// `sql` with its literals replaced by `?`, and the parameters in order.
pub fn parameterize(sql: &str) -> (String, Vec<Param>) {
    let lexemes = lex(sql);
    let keep = literals_to_keep(&lexemes);
    let mut out = String::with_capacity(sql.len());
    let mut params = Vec::new();
    let mut i = 0;
    while i < lexemes.len() {
        let lx = &lexemes[i];
        if let Some((param, used)) = unary_minus_literal(&lexemes, i, &keep) {
            out.push('?');
            params.push(param);
            i += used;
            continue;
        }
        match &lx.tok {
            Tok::Num(n) if !keep[i] => {
                out.push('?');
                params.push(number_param(n));
            }
            Tok::Str(s) if !keep[i] => {
                out.push('?');
                params.push(Param::Text(s.clone()));
            }
            _ => out.push_str(&lx.text),
        }
        i += 1;
    }
    (out, params)
}

/// A number's parameter: integers that fit i64 as LONGLONG, exponents as DOUBLE, the rest
/// (a decimal point, or beyond i64) as DECIMAL text.
/// The parameters with every integer moved by one (up, or down from `i64::MAX`), the types
/// unchanged: a second literal set for the same statement. None when there is no integer.
pub fn shifted(params: &[Param]) -> Option<Vec<Param>> {
    let shift = |p: &Param| match p {
        Param::Int(n) => Param::Int(n.checked_add(1).unwrap_or(n - 1)),
        other => other.clone(),
    };
    params
        .iter()
        .any(|p| matches!(p, Param::Int(_)))
        .then(|| params.iter().map(shift).collect())
}

fn number_param(n: &str) -> Param {
    if n.contains(['e', 'E']) {
        return Param::Double(n.parse().expect("numeric literal"));
    }
    match n.parse::<i64>() {
        Ok(v) if !n.contains('.') => Param::Int(v),
        _ => Param::Decimal(n.to_string()),
    }
}

/// `- 5` at `i` where the minus is a sign (after an operator, `(`, `,` or a keyword): one
/// parameter for both, and how many lexemes it used.
fn unary_minus_literal(lexemes: &[Lexeme], i: usize, keep: &[bool]) -> Option<(Param, usize)> {
    if lexemes[i].tok != Tok::Punct('-') {
        return None;
    }
    let next = next_significant(lexemes, i + 1)?;
    let Tok::Num(n) = &lexemes[next].tok else {
        return None;
    };
    if keep[next] || next != i + 1 {
        // Only a sign glued to its number (`-5`), never `- 5`.
        return None;
    }
    let sign_position = match prev_significant(lexemes, i) {
        None => true,
        Some(p) => match &lexemes[p].tok {
            Tok::Punct(c) => *c != ')',
            Tok::Word(w) => is_keyword(w),
            _ => false,
        },
    };
    sign_position.then(|| (number_param(&format!("-{n}")), 2))
}

fn next_significant(lexemes: &[Lexeme], from: usize) -> Option<usize> {
    (from..lexemes.len()).find(|&k| !is_blank(&lexemes[k]))
}

fn prev_significant(lexemes: &[Lexeme], before: usize) -> Option<usize> {
    (0..before).rev().find(|&j| !is_blank(&lexemes[j]))
}

/// Spaces and comments.
fn is_blank(lx: &Lexeme) -> bool {
    lx.tok == Tok::Other && (lx.text.trim().is_empty() || lx.text.starts_with("/*") || lx.text.starts_with("--"))
}

/// Words after which a minus is a sign rather than a subtraction.
fn is_keyword(w: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "SELECT", "WHERE", "AND", "OR", "NOT", "ON", "IN", "BETWEEN", "WHEN", "THEN", "ELSE", "LIMIT", "OFFSET",
        "VALUES", "VALUE", "SET", "HAVING", "BY", "IS", "LIKE", "RETURN", "XOR", "DIV", "MOD", "INTERVAL",
    ];
    KEYWORDS.contains(&w)
}

/// Which lexemes are literals that must stay literals.
fn literals_to_keep(lexemes: &[Lexeme]) -> Vec<bool> {
    let mut keep = vec![false; lexemes.len()];
    // Per parenthesis depth: inside ORDER BY / GROUP BY, or inside a type's arguments.
    let mut order_clause = vec![false];
    let mut type_args = vec![false];
    let mut prev_word = String::new();
    for (i, lx) in lexemes.iter().enumerate() {
        let prev = prev_significant(lexemes, i).map(|p| &lexemes[p]);
        match &lx.tok {
            Tok::Word(w) => {
                let top = order_clause.len() - 1;
                if w == "BY" && (prev_word == "ORDER" || prev_word == "GROUP") {
                    order_clause[top] = true;
                } else if is_clause_end(w) {
                    order_clause[top] = false;
                }
                prev_word = w.clone();
            }
            Tok::Punct('(') => {
                let is_type = prev.is_some_and(|p| matches!(&p.tok, Tok::Word(w) if is_type_word(w)));
                order_clause.push(false);
                type_args.push(is_type);
                prev_word.clear();
            }
            Tok::Punct(')') => {
                if order_clause.len() > 1 {
                    order_clause.pop();
                    type_args.pop();
                }
                prev_word.clear();
            }
            Tok::Num(_) => {
                let top = order_clause.len() - 1;
                let position = order_clause[top]
                    && prev.is_some_and(|p| matches!(&p.tok, Tok::Word(w) if w == "BY") || p.tok == Tok::Punct(','));
                keep[i] = position || type_args[top] || prev.is_some_and(needs_literal_after);
            }
            Tok::Str(_) => keep[i] = prev.is_some_and(needs_literal_after),
            _ => {}
        }
    }
    keep
}

/// Keywords that end an ORDER BY / GROUP BY list at the same depth.
fn is_clause_end(w: &str) -> bool {
    matches!(
        w,
        "LIMIT" | "HAVING" | "FROM" | "WHERE" | "UNION" | "SEPARATOR" | "SELECT" | "WINDOW" | "FOR" | "INTO" | "OFFSET"
    )
}

/// Type names whose parenthesized arguments must be literals.
fn is_type_word(w: &str) -> bool {
    matches!(
        w,
        "DECIMAL"
            | "DEC"
            | "NUMERIC"
            | "CHAR"
            | "VARCHAR"
            | "BINARY"
            | "DATETIME"
            | "TIME"
            | "TIMESTAMP"
            | "FLOAT"
            | "DOUBLE"
    )
}

/// A literal right after these words must stay a literal.
fn needs_literal_after(prev: &Lexeme) -> bool {
    matches!(&prev.tok, Tok::Word(w) if matches!(w.as_str(), "SEPARATOR" | "ESCAPE" | "DATE" | "TIME" | "TIMESTAMP" | "COLLATE" | "CHARSET" | "AGAINST"))
}

/// Splits `sql` into lexemes whose texts concatenate back to `sql`.
fn lex(sql: &str) -> Vec<Lexeme> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (tok, end) = lex_one(&chars, i);
        out.push(Lexeme {
            tok,
            text: chars[i..end].iter().collect(),
        });
        i = end;
    }
    out
}

/// The token starting at `i` and where it ends.
fn lex_one(c: &[char], i: usize) -> (Tok, usize) {
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let ch = c[i];
    if ch.is_whitespace() {
        let end = (i..c.len()).find(|&k| !c[k].is_whitespace()).unwrap_or(c.len());
        return (Tok::Other, end);
    }
    if ch == '-' && at(i + 1) == '-' && (at(i + 2).is_whitespace() || at(i + 2) == '\0') || ch == '#' {
        let end = (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len());
        return (Tok::Other, end);
    }
    if ch == '/' && at(i + 1) == '*' {
        let end = (i + 2..c.len().saturating_sub(1))
            .find(|&k| c[k] == '*' && c[k + 1] == '/')
            .map_or(c.len(), |k| k + 2);
        return (Tok::Other, end);
    }
    if ch == '\'' || ch == '"' {
        let (value, end) = quoted(c, i);
        return (Tok::Str(value), end);
    }
    if ch == '`' {
        let end = (i + 1..c.len()).find(|&k| c[k] == '`').map_or(c.len(), |k| k + 1);
        return (Tok::Other, end);
    }
    if ch.is_ascii_digit() || ch == '.' && at(i + 1).is_ascii_digit() {
        return number(c, i);
    }
    if ch == '@' {
        let end = (i..c.len())
            .find(|&k| !(c[k].is_alphanumeric() || matches!(c[k], '_' | '$' | '@' | '.')))
            .unwrap_or(c.len());
        return (Tok::Other, end);
    }
    if ch.is_alphanumeric() || ch == '_' || ch == '$' {
        let end = (i..c.len())
            .find(|&k| !(c[k].is_alphanumeric() || c[k] == '_' || c[k] == '$'))
            .unwrap_or(c.len());
        // An introducer or prefix glued to a string (_utf8mb4'x', X'0A', N'x'): keep verbatim.
        if matches!(at(end), '\'' | '"') {
            let (_, str_end) = quoted(c, end);
            return (Tok::Other, str_end);
        }
        let word: String = c[i..end].iter().collect();
        return (Tok::Word(word.to_uppercase()), end);
    }
    (Tok::Punct(ch), i + 1)
}

/// A number: digits, an optional fraction and exponent. Digits running into letters are an
/// identifier (e.g. `1abc`), kept verbatim.
fn number(c: &[char], i: usize) -> (Tok, usize) {
    let mut k = i;
    while k < c.len() && c[k].is_ascii_digit() {
        k += 1;
    }
    if k < c.len() && c[k] == '.' {
        k += 1;
        while k < c.len() && c[k].is_ascii_digit() {
            k += 1;
        }
    }
    if k < c.len() && (c[k] == 'e' || c[k] == 'E') {
        let mut m = k + 1;
        if m < c.len() && (c[m] == '+' || c[m] == '-') {
            m += 1;
        }
        if m < c.len() && c[m].is_ascii_digit() {
            while m < c.len() && c[m].is_ascii_digit() {
                m += 1;
            }
            k = m;
        }
    }
    if k < c.len() && (c[k].is_alphanumeric() || c[k] == '_') {
        let end = (k..c.len())
            .find(|&m| !(c[m].is_alphanumeric() || c[m] == '_'))
            .unwrap_or(c.len());
        return (Tok::Other, end);
    }
    (Tok::Num(c[i..k].iter().collect()), k)
}

/// A quoted string at `i` (quote doubled or backslash-escaped inside); its value and end.
fn quoted(c: &[char], i: usize) -> (String, usize) {
    let q = c[i];
    let mut value = String::new();
    let mut k = i + 1;
    while k < c.len() {
        let ch = c[k];
        if ch == '\\' && k + 1 < c.len() {
            value.push(unescape(c[k + 1]));
            k += 2;
        } else if ch == q && c.get(k + 1) == Some(&q) {
            value.push(q);
            k += 2;
        } else if ch == q {
            return (value, k + 1);
        } else {
            value.push(ch);
            k += 1;
        }
    }
    (value, c.len())
}

/// MariaDB's backslash escapes (`\%` and `\_` keep their backslash; handled by the caller
/// not using them outside LIKE).
fn unescape(c: char) -> char {
    match c {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        '0' => '\0',
        'Z' => '\x1a',
        'b' => '\x08',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_literal_set_moves_every_integer_and_keeps_the_types() {
        let params = [
            Param::Int(4),
            Param::Text("7".into()),
            Param::Int(i64::MAX),
            Param::Null,
            Param::Decimal("1.5".into()),
        ];
        let again = shifted(&params).expect("has integers");
        assert_eq!(
            again,
            [
                Param::Int(5),
                Param::Text("7".into()),
                Param::Int(i64::MAX - 1),
                Param::Null,
                Param::Decimal("1.5".into()),
            ]
        );
        assert_eq!(shifted(&[Param::Text("a".into())]), None);
    }

    #[test]
    fn literals_become_parameters_where_sql_allows() {
        let (sql, params) = parameterize(
            "SELECT id, 'x' FROM orders WHERE customer_id IN (1, -2) AND note = 'O''Brien' ORDER BY 2, id DESC LIMIT 5, 10",
        );
        assert_eq!(
            sql,
            "SELECT id, ? FROM orders WHERE customer_id IN (?, ?) AND note = ? ORDER BY 2, id DESC LIMIT ?, ?"
        );
        assert_eq!(
            params,
            vec![
                Param::Text("x".into()),
                Param::Int(1),
                Param::Int(-2),
                Param::Text("O'Brien".into()),
                Param::Int(5),
                Param::Int(10)
            ]
        );
        let (sql, _) = parameterize("SELECT GROUP_CONCAT(name ORDER BY 1 SEPARATOR '; '), CAST(a AS DECIMAL(12,2)) FROM t WHERE d > DATE '2020-01-01' AND a - 1 > 0.5");
        assert_eq!(sql, "SELECT GROUP_CONCAT(name ORDER BY 1 SEPARATOR '; '), CAST(a AS DECIMAL(12,2)) FROM t WHERE d > DATE '2020-01-01' AND a - ? > ?");
        let (_, params) = parameterize("SELECT 9223372036854775808, -9223372036854775808, 1e3");
        assert_eq!(
            params,
            vec![
                Param::Decimal("9223372036854775808".into()),
                Param::Int(i64::MIN),
                Param::Double(1000.0)
            ]
        );
    }
}
