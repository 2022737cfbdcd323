//! Column references qualified with a database (`db.t.col`, `db.t.*`): the database part
//! dropped, so that a statement over a logical schema names its columns as `t.col` and each
//! shard (whose database has another name) resolves them against its own `t`. An unnamed item
//! of the outermost select list that changes gets its original text as alias: the client sees
//! the column name one server would give (a bare column reference keeps its own name).

use crate::select_items::top_select_items;
use crate::{unquote, Lexer, Token, TokenKind};
use std::ops::Range;

/// `sql` with every `database.table.column` (and `database.table.*`) reference written
/// `table.column`; None when there is none. `database` is compared exactly, as MariaDB
/// compares database names on Linux.
pub fn drop_database_qualifier(sql: &str, database: &str, backslash_escapes: bool) -> Option<String> {
    if !sql.contains(database) {
        return None;
    }
    let cuts = qualifier_cuts(sql, database, backslash_escapes);
    if cuts.is_empty() {
        return None;
    }
    let aliases = aliases(sql, &cuts, backslash_escapes);
    let mut out = String::with_capacity(sql.len() + 32);
    let mut copied = 0;
    let mut aliases = aliases.into_iter().peekable();
    for (cut, _) in &cuts {
        while let Some((at, alias)) = aliases.next_if(|(at, _)| *at <= cut.start) {
            out.push_str(&sql[copied..at]);
            out.push_str(&alias);
            copied = at;
        }
        out.push_str(&sql[copied..cut.start]);
        copied = cut.end;
    }
    for (at, alias) in aliases {
        out.push_str(&sql[copied..at]);
        out.push_str(&alias);
        copied = at;
    }
    out.push_str(&sql[copied..]);
    Some(out)
}

/// Each `database.` to cut (the database word and its dot) and the whole reference's range.
fn qualifier_cuts(sql: &str, database: &str, backslash_escapes: bool) -> Vec<(Range<usize>, Range<usize>)> {
    let tokens: Vec<Token<'_>> = Lexer::with_backslash_escapes(sql, backslash_escapes)
        .filter(Token::is_significant)
        .collect();
    let name = |t: &Token<'_>| matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent);
    let mut cuts = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let after_dot = i > 0 && tokens[i - 1].kind == TokenKind::Dot;
        if after_dot || !name(t) || unquote(t.text) != database {
            continue;
        }
        let [d1, table, d2, column] = match tokens.get(i + 1..i + 5) {
            Some([a, b, c, d]) => [a, b, c, d],
            _ => continue,
        };
        let column_like = name(column) || (column.kind == TokenKind::Operator && column.text == "*");
        // No gaps: `db . t . c` written with spaces is rare and kept as written.
        let tight =
            d1.offset == t.end() && table.offset == d1.end() && d2.offset == table.end() && column.offset == d2.end();
        if d1.kind == TokenKind::Dot && name(table) && d2.kind == TokenKind::Dot && column_like && tight {
            cuts.push((t.offset..d1.end(), t.offset..column.end()));
        }
    }
    cuts
}

/// Aliases (position, ` AS `...``) for the unnamed top select items that hold a cut and are
/// more than that one column reference.
fn aliases(sql: &str, cuts: &[(Range<usize>, Range<usize>)], backslash_escapes: bool) -> Vec<(usize, String)> {
    const MAX_ALIAS: usize = 256;
    top_select_items(sql, backslash_escapes)
        .into_iter()
        .filter(|item| !item.aliased && item.range.len() <= MAX_ALIAS)
        .filter(|item| {
            let inside: Vec<_> = cuts.iter().filter(|(c, _)| item.range.contains(&c.start)).collect();
            !inside.is_empty() && !matches!(inside.as_slice(), [(_, whole)] if *whole == item.range)
        })
        .filter(|item| !sql[item.range.clone()].ends_with('*'))
        .map(|item| (item.range.end, format!(" AS `{}`", sql[item.range].replace('`', "``"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::drop_database_qualifier as drop;

    #[test]
    fn column_references_lose_the_database() {
        assert_eq!(
            drop(
                "SELECT shop.t.a, t.b FROM shop.t WHERE shop.t.c = 'shop.t.d'",
                "shop",
                true
            )
            .as_deref(),
            Some("SELECT t.a, t.b FROM shop.t WHERE t.c = 'shop.t.d'")
        );
        assert_eq!(
            drop("SELECT `shop`.`t`.`a` FROM `shop`.`t`", "shop", true).as_deref(),
            Some("SELECT `t`.`a` FROM `shop`.`t`")
        );
        assert_eq!(
            drop("SELECT shop.t.* FROM shop.t", "shop", true).as_deref(),
            Some("SELECT t.* FROM shop.t")
        );
        assert_eq!(drop("SELECT a FROM shop.t", "shop", true), None);
        assert_eq!(
            drop("SELECT x.shop.t.a FROM t", "shop", true),
            None,
            "not a database part"
        );
        assert_eq!(drop("SELECT SHOP.t.a FROM t", "shop", true), None, "names are exact");
    }

    #[test]
    fn changed_expressions_keep_their_names() {
        assert_eq!(
            drop(
                "SELECT MIN(shop.t.k), shop.t.k, COUNT(*) FROM shop.t GROUP BY shop.t.k",
                "shop",
                true
            )
            .as_deref(),
            Some("SELECT MIN(t.k) AS `MIN(shop.t.k)`, t.k, COUNT(*) FROM shop.t GROUP BY t.k")
        );
        assert_eq!(
            drop("SELECT MIN(shop.t.k) m FROM t", "shop", true).as_deref(),
            Some("SELECT MIN(t.k) m FROM t")
        );
    }
}
