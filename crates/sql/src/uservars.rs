//! User-variable extraction: which `@variables` a statement assigns or references.

use crate::lexer::{unquote, Lexer};
use crate::scan::walk;

/// Names of the user variables the statement(s) assign, lowercased, unquoted, without `@`,
/// deduplicated in first-seen order.
///
/// Assignments are: targets of a `SET` list (`SET @a = 1, @b := 2`), `@a := expr` anywhere,
/// `INTO @a, @b`, and the `@vars` in a `LOAD DATA` column list. `@a = 1` outside a `SET`
/// list is a comparison, not an assignment.
pub fn assigned_user_variables(sql: &str) -> Vec<String> {
    assigned_user_variables_with(sql, true)
}

/// [`assigned_user_variables`] with strings read as the session's `sql_mode` says
/// (`backslash_escapes` false: `NO_BACKSLASH_ESCAPES`).
pub fn assigned_user_variables_with(sql: &str, backslash_escapes: bool) -> Vec<String> {
    collect(Lexer::with_backslash_escapes(sql, backslash_escapes), true)
}

/// Names of every user variable read or written, lowercased, deduplicated in first-seen order.
pub fn references_user_variables(sql: &str) -> Vec<String> {
    references_user_variables_with(sql, true)
}

/// [`references_user_variables`] with strings read as the session's `sql_mode` says.
pub fn references_user_variables_with(sql: &str, backslash_escapes: bool) -> Vec<String> {
    collect(Lexer::with_backslash_escapes(sql, backslash_escapes), false)
}

fn collect(lex: Lexer<'_>, writes_only: bool) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    walk(lex, |t, write| {
        if write || !writes_only {
            let name = user_var_name(t.text);
            if !names.contains(&name) {
                names.push(name);
            }
        }
    });
    names
}

/// `@Name` / `@'q q'` / `` @`b``t` `` -> `name` / `q q` / `` b`t ``.
pub fn user_var_name(token_text: &str) -> String {
    let raw = token_text.strip_prefix('@').unwrap_or(token_text);
    unquote(raw).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assigned(sql: &str) -> Vec<String> {
        assigned_user_variables(sql)
    }

    fn refs(sql: &str) -> Vec<String> {
        references_user_variables(sql)
    }

    #[test]
    fn no_backslash_escapes_sees_assignments_after_a_string_ending_in_a_backslash() {
        let sql = r"SET @a = 'x\', @b = 5";
        assert_eq!(assigned_user_variables_with(sql, false), ["a", "b"]);
        assert_eq!(references_user_variables_with(r"CALL p('x\', @c)", false), ["c"]);
        assert_eq!(assigned(sql), ["a"], "with escapes the string runs on");
    }

    #[test]
    fn names_are_unquoted_and_lowercased() {
        assert_eq!(user_var_name("@Abc"), "abc");
        assert_eq!(user_var_name("@'q q'"), "q q");
        assert_eq!(user_var_name("@\"D\""), "d");
        assert_eq!(user_var_name("@`b``t`"), "b`t");
        assert_eq!(user_var_name("@a.b"), "a.b");
    }

    #[test]
    fn set_assignments() {
        assert_eq!(assigned("SET @a = 1, @b := 2"), ["a", "b"]);
        assert_eq!(assigned("SET @`q q` = 1"), ["q q"]);
        assert_eq!(assigned("SET @A = 1, @a = 2"), ["a"]);
        assert_eq!(assigned("SET sql_mode = '', @x = @y"), ["x"]);
        assert_eq!(assigned("SET @a = (SELECT @b = 1), @c = 2"), ["a", "c"]);
        assert_eq!(assigned("/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE */"), ["old_sql_mode"]);
    }

    #[test]
    fn select_assignments() {
        assert_eq!(assigned("SELECT @c := x FROM t"), ["c"]);
        assert_eq!(assigned("SELECT x INTO @d, @e FROM t"), ["d", "e"]);
        assert_eq!(assigned("SELECT x FROM t INTO @d"), ["d"]);
        assert_eq!(
            assigned("SELECT @r := @r + 1 AS n FROM t, (SELECT @r := 0) init"),
            ["r"]
        );
        assert_eq!(assigned("UPDATE t SET c = (@v := c + 1)"), ["v"]);
        assert_eq!(
            assigned("LOAD DATA INFILE 'f' INTO TABLE t (a, @b, @C) SET d = @b + @c"),
            ["b", "c"]
        );
    }

    #[test]
    fn reads_are_not_assignments() {
        assert!(assigned("SELECT @a").is_empty());
        assert!(assigned("SELECT * FROM t WHERE @a = 1").is_empty());
        assert!(assigned("SELECT * FROM t WHERE x = @a").is_empty());
        assert!(assigned("SELECT '@a := 1', \"@b\"").is_empty());
        assert!(assigned("SELECT 1 -- @a := 1").is_empty());
        assert!(assigned("EXECUTE s USING @a").is_empty());
        assert!(assigned("CREATE USER 'a'@'localhost'").is_empty());
        assert!(assigned("SELECT @@session.x").is_empty());
    }

    #[test]
    fn references() {
        assert_eq!(refs("SELECT @a, @B, @a"), ["a", "b"]);
        assert_eq!(refs("SET @x = @y + @@global.z"), ["x", "y"]);
        assert_eq!(refs("SELECT \"@a\", '@b', `@c`"), Vec::<String>::new());
        assert_eq!(refs("SELECT @a; SELECT @b"), ["a", "b"]);
        assert_eq!(refs("GRANT ALL ON db.* TO 'u'@'%'; SELECT @v"), ["v"]);
        assert_eq!(refs("SELECT@a, @`x``y`"), ["a", "x`y"]);
    }
}
