//! Statement analysis with sqlparser (MySQL dialect), done once per fingerprint behind the plan
//! cache: parsing, and byte offsets of AST nodes in the statement text (for per-shard edits).

use sqlparser::ast::{Spanned, Statement};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Span};
use std::ops::Range;

/// Why a statement could not be analyzed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("{0}")]
    Parse(String),
    #[error("expected one statement, found {0}")]
    NotOne(usize),
}

/// Parses exactly one statement.
pub fn parse_one(sql: &str) -> Result<Statement, AnalyzeError> {
    let mut statements = Parser::parse_sql(&MySqlDialect {}, sql).map_err(|e| AnalyzeError::Parse(e.to_string()))?;
    match statements.len() {
        1 => Ok(statements.remove(0)),
        n => Err(AnalyzeError::NotOne(n)),
    }
}

/// Converts sqlparser locations (line and character column, 1-based) to byte offsets.
pub struct Offsets<'a> {
    sql: &'a str,
    line_starts: Vec<usize>,
    /// Per line, the byte offset of every [`STRIDE`]-th character: a location on a long line
    /// (a dump's extended INSERT is one line of a megabyte) is found without counting its
    /// characters from the line's start.
    marks: Vec<Vec<usize>>,
}

/// Characters between two marks of a line.
const STRIDE: usize = 256;

impl<'a> Offsets<'a> {
    pub fn new(sql: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
        let marks = line_starts
            .iter()
            .map(|&start| {
                let line = &sql[start..];
                let line = &line[..line.find('\n').unwrap_or(line.len())];
                if line.len() <= STRIDE {
                    return Vec::new();
                }
                line.char_indices().step_by(STRIDE).map(|(i, _)| start + i).collect()
            })
            .collect();
        Offsets {
            sql,
            line_starts,
            marks,
        }
    }

    /// The byte offset of a location (clamped to the text).
    pub fn at(&self, loc: Location) -> usize {
        let line = (loc.line as usize).max(1) - 1;
        let Some(&start) = self.line_starts.get(line) else {
            return self.sql.len();
        };
        let column = (loc.column as usize).max(1) - 1;
        let (base, rest) = match self.marks.get(line).filter(|m| !m.is_empty()) {
            Some(m) => {
                let k = (column / STRIDE).min(m.len() - 1);
                (m[k], column - k * STRIDE)
            }
            None => (start, column),
        };
        self.sql[base..]
            .char_indices()
            .nth(rest)
            .map_or(self.sql.len(), |(i, _)| base + i)
    }

    /// The byte range of a span; None for an empty (unknown) span.
    pub fn range(&self, span: Span) -> Option<Range<usize>> {
        if span == Span::empty() {
            return None;
        }
        Some(self.at(span.start)..self.at(span.end))
    }

    /// The byte range of any AST node. sqlparser's spans of calls stop before their closing
    /// parenthesis: the range is extended until its parentheses balance.
    pub fn of(&self, node: &impl Spanned) -> Option<Range<usize>> {
        let r = self.range(node.span())?;
        let end = self.balanced_end(r.clone());
        Some(r.start..self.call_end(r.start, end))
    }

    /// A call whose span covers only its name (`COUNT(*)`: the wildcard has no span): when the
    /// range ends with a word and a parenthesis follows, the range takes the parenthesized
    /// arguments too.
    fn call_end(&self, start: usize, end: usize) -> usize {
        use crate::lexer::{Lexer, TokenKind};
        let Some(text) = self.sql.get(start..end) else {
            return end;
        };
        let ends_with_word = Lexer::new(text)
            .filter(|t| t.is_significant())
            .last()
            .is_some_and(|t| t.kind == TokenKind::Word && start + t.end() == end);
        let Some(rest) = self.sql.get(end..) else {
            return end;
        };
        let mut tokens = Lexer::new(rest).filter(|t| t.is_significant());
        if !ends_with_word || tokens.next().map(|t| t.kind) != Some(TokenKind::LParen) {
            return end;
        }
        let mut depth = 1;
        for t in tokens {
            match t.kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        return end + t.end();
                    }
                }
                _ => {}
            }
        }
        end
    }

    fn balanced_end(&self, r: Range<usize>) -> usize {
        use crate::lexer::{Lexer, TokenKind};
        let Some(text) = self.sql.get(r.start..) else {
            return r.end;
        };
        let mut depth = 0i32;
        let mut end = r.end;
        for t in Lexer::new(text) {
            let at = r.start + t.offset;
            if at >= r.end && depth <= 0 {
                break;
            }
            match t.kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => depth -= 1,
                _ => {}
            }
            end = end.max(r.start + t.end());
        }
        end
    }

    /// The text of a node as written.
    pub fn text(&self, node: &impl Spanned) -> Option<&'a str> {
        self.of(node).and_then(|r| self.sql.get(r))
    }

    pub fn sql(&self) -> &'a str {
        self.sql
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::ast::{SetExpr, Statement};

    #[test]
    fn node_offsets_point_at_the_text_as_written() {
        let sql = "SELECT a,\n  count(*)  AS n, 'é', SUM(x+1), COUNT(*) FROM t";
        let Statement::Query(q) = parse_one(sql).unwrap() else {
            panic!()
        };
        let SetExpr::Select(s) = &*q.body else { panic!() };
        let o = Offsets::new(sql);
        let texts: Vec<_> = s.projection.iter().map(|p| o.text(p).unwrap()).collect();
        assert_eq!(texts, ["a", "count(*)  AS n", "'é'", "SUM(x+1)", "COUNT(*)"]);
    }

    #[test]
    fn locations_on_long_lines_with_wide_characters_are_exact() {
        let rows: Vec<String> = (0..400).map(|i| format!("({i}, 'é😀{i}')")).collect();
        let sql = format!("INSERT INTO t VALUES\n{}", rows.join(","));
        let Statement::Insert(i) = parse_one(&sql).unwrap() else {
            panic!()
        };
        let Some(source) = &i.source else { panic!() };
        let SetExpr::Values(v) = &*source.body else { panic!() };
        let o = Offsets::new(&sql);
        for (n, row) in v.rows.iter().enumerate() {
            assert_eq!(o.text(&row[0]), Some(n.to_string().as_str()));
            assert_eq!(o.text(&row[1]).map(str::to_string), Some(format!("'é😀{n}'")));
        }
    }
}
