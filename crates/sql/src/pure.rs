//! Whether a SELECT is free of side effects and of session-dependent reads, decided from its
//! tokens: such a statement may share a backend connection with other sessions' statements,
//! and may run a second time when its first answer cannot be used.

use crate::lexer::{Lexer, TokenKind};

/// Functions that neither write, lock, sleep nor read session or connection state.
const PURE_FUNCTIONS: &[&str] = &[
    "abs",
    "avg",
    "bit_and",
    "bit_length",
    "bit_or",
    "bit_xor",
    "cast",
    "ceil",
    "ceiling",
    "char_length",
    "character_length",
    "coalesce",
    "concat",
    "concat_ws",
    "convert",
    "count",
    "date",
    "date_add",
    "date_format",
    "date_sub",
    "datediff",
    "day",
    "dayofmonth",
    "dayofweek",
    "dayofyear",
    "exp",
    "field",
    "find_in_set",
    "floor",
    "greatest",
    "hex",
    "hour",
    "if",
    "ifnull",
    "instr",
    "isnull",
    "lcase",
    "least",
    "left",
    "length",
    "ln",
    "locate",
    "log",
    "log10",
    "log2",
    "lower",
    "lpad",
    "ltrim",
    "max",
    "md5",
    "mid",
    "min",
    "minute",
    "mod",
    "month",
    "nullif",
    "position",
    "pow",
    "power",
    "quarter",
    "repeat",
    "replace",
    "reverse",
    "right",
    "round",
    "rpad",
    "rtrim",
    "second",
    "sha1",
    "sha2",
    "sign",
    "sqrt",
    "std",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "strcmp",
    "substr",
    "substring",
    "substring_index",
    "sum",
    "to_days",
    "trim",
    "truncate",
    "ucase",
    "unhex",
    "upper",
    "var_pop",
    "var_samp",
    "variance",
    "week",
    "weekday",
    "year",
    "yearweek",
];

/// Keywords that may stand before `(` without being a function call.
const KEYWORDS_BEFORE_PAREN: &[&str] = &[
    "all", "and", "any", "as", "between", "by", "case", "distinct", "else", "exists", "from", "having", "in", "is",
    "join", "like", "not", "on", "or", "select", "some", "then", "union", "using", "when", "where", "xor",
];

/// Words that make a statement impure wherever they appear (sequences, locking, files, INTO).
const IMPURE_WORDS: &[&str] = &[
    "for",
    "into",
    "lock",
    "next",
    "previous",
    "nextval",
    "lastval",
    "setval",
    "procedure",
    "outfile",
    "dumpfile",
];

/// True when `sql`, a single SELECT, calls only functions that read nothing but their arguments
/// and the tables, uses no variables, takes no locks and writes nothing.
pub fn is_pure_select(sql: &str) -> bool {
    let mut lexer = Lexer::new(sql);
    let Some(first) = lexer.next_significant() else {
        return false;
    };
    if !first.is_word("select") {
        return false;
    }
    let mut previous_word: Option<&str> = None;
    while let Some(token) = lexer.next_significant() {
        match token.kind {
            TokenKind::UserVar | TokenKind::SystemVar | TokenKind::Semicolon => return false,
            TokenKind::Word if IMPURE_WORDS.iter().any(|w| token.is_word(w)) => return false,
            TokenKind::LParen => {
                if let Some(word) = previous_word {
                    let lower = word.to_ascii_lowercase();
                    let allowed =
                        PURE_FUNCTIONS.contains(&lower.as_str()) || KEYWORDS_BEFORE_PAREN.contains(&lower.as_str());
                    if !allowed {
                        return false;
                    }
                }
            }
            _ => {}
        }
        previous_word = (token.kind == TokenKind::Word).then_some(token.text);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::is_pure_select;

    #[test]
    fn sysbench_reads_are_pure() {
        for sql in [
            "SELECT c FROM sbtest1 WHERE id=?",
            "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?",
            "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?",
            "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
            "select count(*), max(a) from t where b in (1, 2) and exists (select 1 from u where u.x = t.x)",
            "SELECT /*+ tessera:primary */ a FROM t WHERE (a = 1 OR a = 2)",
        ] {
            assert!(is_pure_select(sql), "{sql}");
        }
    }

    #[test]
    fn anything_that_could_write_lock_or_read_session_state_is_not() {
        for sql in [
            "SELECT my_function(a) FROM t",
            "SELECT sleep(1)",
            "SELECT GET_LOCK('x', 1)",
            "SELECT a FROM t FOR UPDATE",
            "SELECT a FROM t LOCK IN SHARE MODE",
            "SELECT a INTO @x FROM t",
            "SELECT @x",
            "SELECT @@session.sql_mode",
            "SELECT NEXT VALUE FOR s",
            "SELECT NEXTVAL(s)",
            "SELECT LAST_INSERT_ID()",
            "SELECT FOUND_ROWS()",
            "SELECT CONNECTION_ID()",
            "SELECT DATABASE()",
            "SELECT RAND()",
            "SELECT a FROM t; SELECT 1",
            "SELECT a FROM t INTO OUTFILE '/tmp/x'",
            "INSERT INTO t VALUES (1)",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "",
        ] {
            assert!(!is_pure_select(sql), "{sql}");
        }
    }
}
