//! Whether a statement may call a stored function ([`crate::Flags::STORED_CALL`], set in the
//! classifier's single walk): a name before `(` that is neither one of MariaDB's common
//! built-in functions nor a keyword, or any qualified (`db.f(`) or quoted (`` `f`( ``) name.
//! A table name after `INTO`, `INSERT` or `REPLACE` opens a column list, not a call.
//! Built-in names win over stored functions of the same name in MariaDB, so an unqualified
//! built-in call never runs stored code. A name the lists do not know counts as a stored
//! function: the answer errs on the side of "may call".

use crate::keyword::Kw;
use crate::lexer::{Token, TokenKind};

/// Built-in functions that are not in the pure list (`pure.rs`): they read session
/// state, the clock or locks, but never run stored code (sorted, checked by a test).
const OTHER_BUILTINS: &[&str] = &[
    "aes_decrypt",
    "aes_encrypt",
    "ascii",
    "benchmark",
    "bin",
    "char",
    "charset",
    "coercibility",
    "collation",
    "column_get",
    "column_json",
    "connection_id",
    "conv",
    "cos",
    "crc32",
    "curdate",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "curtime",
    "database",
    "decode",
    "degrees",
    "elt",
    "encode",
    "export_set",
    "extract",
    "extractvalue",
    "format",
    "found_rows",
    "from_base64",
    "from_days",
    "from_unixtime",
    "get_format",
    "get_lock",
    "inet6_aton",
    "inet6_ntoa",
    "inet_aton",
    "inet_ntoa",
    "insert",
    "interval",
    "is_free_lock",
    "is_used_lock",
    "json_array",
    "json_arrayagg",
    "json_contains",
    "json_extract",
    "json_insert",
    "json_keys",
    "json_length",
    "json_merge",
    "json_object",
    "json_objectagg",
    "json_query",
    "json_remove",
    "json_replace",
    "json_set",
    "json_type",
    "json_unquote",
    "json_valid",
    "json_value",
    "last_day",
    "last_insert_id",
    "lastval",
    "localtime",
    "localtimestamp",
    "make_set",
    "makedate",
    "maketime",
    "master_gtid_wait",
    "master_pos_wait",
    "md5",
    "microsecond",
    "mid",
    "minute",
    "month",
    "monthname",
    "nextval",
    "now",
    "nullif",
    "oct",
    "ord",
    "password",
    "period_add",
    "period_diff",
    "pi",
    "position",
    "pow",
    "power",
    "quarter",
    "quote",
    "radians",
    "rand",
    "regexp_instr",
    "regexp_replace",
    "regexp_substr",
    "release_all_locks",
    "release_lock",
    "repeat",
    "replace",
    "reverse",
    "right",
    "row_count",
    "rpad",
    "schema",
    "sec_to_time",
    "second",
    "session_user",
    "setval",
    "sha",
    "sha1",
    "sha2",
    "sin",
    "sleep",
    "soundex",
    "space",
    "sqrt",
    "str_to_date",
    "strcmp",
    "subdate",
    "substr",
    "substring",
    "substring_index",
    "sysdate",
    "system_user",
    "tan",
    "time",
    "time_format",
    "time_to_sec",
    "timediff",
    "timestamp",
    "timestampadd",
    "timestampdiff",
    "to_base64",
    "to_days",
    "to_seconds",
    "trim",
    "truncate",
    "uncompress",
    "unhex",
    "unix_timestamp",
    "upper",
    "user",
    "utc_date",
    "utc_time",
    "utc_timestamp",
    "uuid",
    "uuid_short",
    "values",
    "version",
    "week",
    "weekday",
    "weekofyear",
    "year",
    "yearweek",
];

/// What a `name(` calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    /// A built-in of the pure list, or a keyword before a parenthesis.
    Pure,
    /// Another built-in: it reads session state or the clock, but runs no stored code.
    Builtin,
    /// A stored function, or a name this module cannot vouch for.
    MaybeStored,
}

/// Tracks, over the significant tokens of the classifier's single walk, which name each `(`
/// calls. A table name after `INTO`, `INSERT` or `REPLACE` (qualified or not) is no callee:
/// its `(` opens a column list.
#[derive(Debug, Default)]
pub(crate) struct Callee<'a> {
    /// The previous token, when a possible callee: its text, and whether a `.` stood before
    /// it or it was quoted (a stored function, whatever its name).
    word: Option<(&'a str, bool)>,
    after_dot: bool,
    /// The previous word (or `.`) is part of a table name.
    table: bool,
    /// The next word names a table.
    expect_table: bool,
}

impl<'a> Callee<'a> {
    /// Feeds the significant token `t` (`kw` its keyword); at a `(` after a name, says what it calls.
    #[inline(always)]
    pub(crate) fn feed(&mut self, t: &Token<'a>, kw: Kw) -> Option<Call> {
        let before = self.word.take();
        let was_table = std::mem::take(&mut self.table);
        let call = match t.kind {
            TokenKind::Word | TokenKind::QuotedIdent => {
                self.name(t, kw, was_table);
                None
            }
            TokenKind::Dot => {
                self.table = was_table;
                None
            }
            TokenKind::LParen => before.map(|(name, stored_only)| classify_call(name, stored_only)),
            _ => None,
        };
        if t.kind != TokenKind::Dot && !matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent) {
            self.expect_table = false;
        }
        self.after_dot = t.kind == TokenKind::Dot;
        call
    }

    #[inline(always)]
    fn name(&mut self, t: &Token<'a>, kw: Kw, was_table: bool) {
        let in_table = self.expect_table || (self.after_dot && was_table);
        let word = t.kind == TokenKind::Word;
        self.expect_table = word
            && (matches!(kw, Kw::Into | Kw::Insert | Kw::Replace)
                || (self.expect_table && precedes_table_name(t.text)));
        if in_table {
            self.table = true;
        } else {
            self.word = Some((t.text, !word || self.after_dot));
        }
    }
}

/// `INSERT [LOW_PRIORITY | DELAYED | HIGH_PRIORITY] [IGNORE] [INTO] t`, `LOAD DATA .. INTO TABLE t`.
fn precedes_table_name(word: &str) -> bool {
    ["low_priority", "delayed", "high_priority", "ignore", "table"]
        .iter()
        .any(|m| word.eq_ignore_ascii_case(m))
}

/// What `name(` calls; `stored_only` for a qualified or quoted name.
fn classify_call(name: &str, stored_only: bool) -> Call {
    if stored_only {
        return Call::MaybeStored;
    }
    let mut buf = [0u8; 20];
    match lowercase(name, &mut buf) {
        Some(lower) if crate::pure::is_pure_lowercase(lower) => Call::Pure,
        Some(lower) if OTHER_BUILTINS.binary_search(&lower).is_ok() => Call::Builtin,
        _ => Call::MaybeStored,
    }
}

/// `name` in ASCII lowercase, in `buf` (no listed name is longer than 20 bytes): None when
/// it is longer.
pub(crate) fn lowercase<'b>(name: &str, buf: &'b mut [u8; 20]) -> Option<&'b str> {
    let buf = buf.get_mut(..name.len())?;
    buf.copy_from_slice(name.as_bytes());
    buf.make_ascii_lowercase();
    std::str::from_utf8(buf).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Flags;

    fn may_call_stored_function(sql: &str) -> bool {
        crate::classify(sql).flags.contains(Flags::STORED_CALL)
    }

    #[test]
    fn the_list_is_sorted_for_binary_search() {
        assert!(OTHER_BUILTINS.windows(2).all(|w| w[0] < w[1]));
        assert!(OTHER_BUILTINS.iter().all(|n| *n == n.to_ascii_lowercase()));
    }

    #[test]
    fn stored_function_calls_are_seen() {
        for sql in [
            "SET @x = f1()",
            "SET @x = db.f1(2)",
            "SET @x = `concat`(1)",
            "SET @x := 1, @y = my_func(@x)",
            "SET @x = CONCAT(f(1), 'a')",
            "SET SESSION sql_mode = pick_mode()",
            "INSERT INTO t (a) VALUES (f(1))",
            "INSERT INTO db.t (a) VALUES (db.g())",
            "UPDATE t SET a = f(a)",
            "SELECT a FROM t WHERE b = `concat`('x')",
        ] {
            assert!(may_call_stored_function(sql), "{sql}");
        }
    }

    #[test]
    fn built_ins_and_keywords_are_not_stored_calls() {
        for sql in [
            "SET @x = 1",
            "SET @x = NOW(), @y = CONCAT(@@sql_mode, ',ANSI')",
            "SET @x = (SELECT COUNT(*) FROM t WHERE a IN (1, 2))",
            "SET @x = IF(@y > 0, LAST_INSERT_ID(), UUID())",
            "SET @@session.time_zone = '+05:00'",
            "SET NAMES utf8mb4",
            "SET @x = json_object('a', 1)",
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
            "INSERT LOW_PRIORITY IGNORE INTO db.t (a) VALUES (1)",
            "insert `t` (a) values (1)",
            "REPLACE INTO `db`.`t`(a) VALUES (CONCAT('a', 'b'))",
            "INSERT INTO t (a) SELECT b FROM u WHERE c IN (1, 2)",
        ] {
            assert!(!may_call_stored_function(sql), "{sql}");
        }
    }
}
