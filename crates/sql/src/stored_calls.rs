//! Whether a statement may call a stored function: a name before `(` that is neither one of
//! MariaDB's common built-in functions nor a keyword, or any qualified (`db.f(`) or quoted
//! (`` `f`( ``) name. Built-in names win over stored functions of the same name in MariaDB,
//! so an unqualified built-in call never runs stored code. A name the list does not know
//! counts as a stored function: the answer errs on the side of "may call".

use crate::lexer::{Lexer, TokenKind};

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
    "date_format",
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

/// Whether `sql` may call a stored function (see the module's note).
pub fn may_call_stored_function(sql: &str) -> bool {
    // The previous significant token: a name (and whether it cannot be a built-in).
    let mut name: Option<(&str, bool)> = None;
    let mut after_dot = false;
    for t in Lexer::new(sql).filter(|t| t.is_significant()) {
        let before = name.take();
        match t.kind {
            TokenKind::Word => name = Some((t.text, after_dot)),
            TokenKind::QuotedIdent => name = Some((t.text, true)),
            TokenKind::LParen => {
                if let Some((n, stored_only)) = before {
                    if stored_only || !is_builtin_or_keyword(n) {
                        return true;
                    }
                }
            }
            _ => {}
        }
        after_dot = t.kind == TokenKind::Dot;
    }
    false
}

fn is_builtin_or_keyword(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    crate::pure::is_pure_call(&lower) || OTHER_BUILTINS.binary_search(&lower.as_str()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            assert!(!may_call_stored_function(sql), "{sql}");
        }
    }
}
