//! Whether a SELECT is free of side effects and of session-dependent reads, decided from its
//! tokens in the classifier's one walk ([`crate::Classification::pure_select`]): such a
//! statement may share a backend connection with other sessions' statements, and may run a
//! second time when its first answer cannot be used.

use crate::keyword::Kw;
use crate::lexer::{Token, TokenKind};
use crate::stored_calls::Call;

/// Functions that neither write, lock, sleep nor read session or connection state (sorted,
/// checked by a test).
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

/// Keywords that may stand before `(` without being a function call (sorted).
const KEYWORDS_BEFORE_PAREN: &[&str] = &[
    "all", "and", "any", "as", "between", "by", "case", "distinct", "else", "exists", "from", "having", "in", "is",
    "join", "like", "not", "on", "or", "select", "some", "then", "union", "using", "when", "where", "xor",
];

/// Keywords that make a statement impure wherever they appear (sequences, locking, files, INTO).
const IMPURE_KEYWORDS: [Kw; 12] = [
    Kw::For,
    Kw::Into,
    Kw::Lock,
    Kw::Next,
    Kw::Previous,
    Kw::Nextval,
    Kw::Lastval,
    Kw::Setval,
    Kw::Currval,
    Kw::Procedure,
    Kw::Outfile,
    Kw::Dumpfile,
];

/// Where the purity rule stands after the tokens fed so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// No token yet.
    #[default]
    Empty,
    /// A SELECT, and no token so far broke the rule.
    Pure,
    /// Broken for good.
    Impure,
}

/// The purity rule, fed every significant token of a text by the classifier's single walk.
#[derive(Debug, Default)]
pub(crate) struct Purity {
    verdict: Verdict,
}

impl Purity {
    /// Feeds the significant token `t` (`kw` its keyword; `call` what it calls when it is the
    /// `(` after a name); once the text is impure, each further token costs one comparison.
    #[inline]
    pub(crate) fn feed(&mut self, t: &Token<'_>, kw: Kw, call: Option<Call>) {
        let pure = match self.verdict {
            Verdict::Impure => return,
            Verdict::Empty => kw == Kw::Select,
            Verdict::Pure => allows(t, kw, call),
        };
        self.verdict = if pure { Verdict::Pure } else { Verdict::Impure };
    }

    /// A `;`: a second statement, or a trailing one, is never shared with other sessions.
    pub(crate) fn end_statement(&mut self) {
        self.verdict = Verdict::Impure;
    }

    /// True when the text so far is one SELECT that no token made impure.
    pub(crate) fn is_pure(&self) -> bool {
        self.verdict == Verdict::Pure
    }
}

/// Whether `t`, a token after the first, leaves the SELECT pure: a quoted (`` `f`( ``) or
/// qualified (`db.f(`) callee is a stored function, whatever its name.
fn allows(t: &Token<'_>, kw: Kw, call: Option<Call>) -> bool {
    match t.kind {
        TokenKind::UserVar | TokenKind::SystemVar => false,
        TokenKind::Word => !IMPURE_KEYWORDS.contains(&kw),
        TokenKind::LParen => call.is_none_or(|c| c == Call::Pure),
        _ => true,
    }
}

/// Whether `lower(` (a name in ASCII lowercase) calls a built-in function of
/// [`PURE_FUNCTIONS`] or is a keyword before a parenthesis.
pub(crate) fn is_pure_lowercase(lower: &str) -> bool {
    PURE_FUNCTIONS.binary_search(&lower).is_ok() || KEYWORDS_BEFORE_PAREN.binary_search(&lower).is_ok()
}

#[cfg(test)]
mod tests {
    use super::{KEYWORDS_BEFORE_PAREN, PURE_FUNCTIONS};

    fn is_pure_select(sql: &str) -> bool {
        crate::classify(sql).pure_select
    }

    #[test]
    fn the_name_lists_are_sorted_for_binary_search() {
        for list in [PURE_FUNCTIONS, KEYWORDS_BEFORE_PAREN] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
            assert!(list.iter().all(|n| n.len() <= 20 && *n == n.to_ascii_lowercase()));
        }
    }

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
            "/* app */ SeLeCt Count(*), UPPER(c) FROM t",
            "/*!40001 SELECT */ a FROM t",
            "SELECT a FROM t WHERE b IN (SELECT b FROM u)",
            "SELECT `a`, `t`.`b` FROM `t` WHERE (`a` = 1)",
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
            "SELECT 1;",
            "(SELECT 1)",
            "VALUES (1)",
            "TABLE t",
            "SELECT db.count(a) FROM t",
            "SELECT `my_function`(a) FROM t",
            "SELECT a FROM t WHERE b = `db`.`f`(1)",
            "SELECT a FROM t PROCEDURE ANALYSE()",
            "SELECT PREVIOUS VALUE FOR s",
            "SELECT a FROM t /*!50000 FOR UPDATE */",
            "SELECT averylongfunctionnamethatisnotknown(a) FROM t",
        ] {
            assert!(!is_pure_select(sql), "{sql}");
        }
    }
}
