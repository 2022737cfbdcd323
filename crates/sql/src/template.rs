//! SQL templates: a planned statement's text with edits applied (per-shard rewrites) and its
//! literals left as holes, so one cached plan renders the SQL of every statement that shares
//! its fingerprint.

use std::ops::Range;

/// One text replacement at plan time: `range` of the planned statement becomes `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub text: String,
}

impl Edit {
    pub fn replace(range: Range<usize>, text: impl Into<String>) -> Edit {
        Edit {
            range,
            text: text.into(),
        }
    }

    pub fn insert(at: usize, text: impl Into<String>) -> Edit {
        Edit::replace(at..at, text)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// The statement's literal with this index.
    Literal(usize),
}

/// A statement text with holes for its literals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlTemplate {
    parts: Vec<Part>,
    /// No edits: the statement is sent as the client wrote it.
    verbatim: bool,
}

impl SqlTemplate {
    /// The template of `sql` after `edits` (which must not overlap each other; a literal is
    /// either inside an edit, and then replaced by it, or a hole).
    pub fn build(sql: &str, literals: &[Range<usize>], edits: &[Edit]) -> SqlTemplate {
        let mut edits: Vec<&Edit> = edits.iter().collect();
        edits.sort_by_key(|e| (e.range.start, e.range.end));
        let mut parts = Vec::new();
        let mut pos = 0;
        let mut lits = literals.iter().enumerate().peekable();
        let push_text = |parts: &mut Vec<Part>, text: &str| {
            if text.is_empty() {
                return;
            }
            match parts.last_mut() {
                Some(Part::Text(t)) => t.push_str(text),
                _ => parts.push(Part::Text(text.to_string())),
            }
        };
        let copy_until = |parts: &mut Vec<Part>, pos: &mut usize, end: usize, lits: &mut std::iter::Peekable<_>| {
            let lits: &mut std::iter::Peekable<std::iter::Enumerate<std::slice::Iter<Range<usize>>>> = lits;
            while let Some((i, r)) = lits.peek().map(|(i, r)| (*i, (*r).clone())) {
                if r.start >= end {
                    break;
                }
                lits.next();
                if r.start < *pos {
                    continue; // inside an earlier edit
                }
                push_text(parts, &sql[*pos..r.start]);
                parts.push(Part::Literal(i));
                *pos = r.end;
            }
            if *pos < end {
                push_text(parts, &sql[*pos..end]);
                *pos = end;
            }
        };
        for e in &edits {
            let start = e.range.start.clamp(pos, sql.len());
            copy_until(&mut parts, &mut pos, start, &mut lits);
            match parts.last_mut() {
                Some(Part::Text(t)) => t.push_str(&e.text),
                _ if e.text.is_empty() => {}
                _ => parts.push(Part::Text(e.text.clone())),
            }
            pos = pos.max(e.range.end.min(sql.len()));
        }
        copy_until(&mut parts, &mut pos, sql.len(), &mut lits);
        SqlTemplate {
            parts,
            verbatim: edits.is_empty(),
        }
    }

    /// The template of `sql[window]` alone after the `edits` inside it, in time proportional
    /// to the window (an extended INSERT's rows, each cut from a megabyte statement); its
    /// literal holes keep their indexes in `literals`.
    pub fn build_window(sql: &str, literals: &[Range<usize>], edits: &[Edit], window: Range<usize>) -> SqlTemplate {
        let first = literals.partition_point(|r| r.start < window.start);
        let last = first + literals[first..].partition_point(|r| r.start < window.end);
        let shift = |r: &Range<usize>| r.start - window.start..r.end.min(window.end) - window.start;
        let local: Vec<Range<usize>> = literals[first..last].iter().map(shift).collect();
        let edits: Vec<Edit> = edits
            .iter()
            .filter(|e| e.range.start >= window.start && e.range.end <= window.end)
            .map(|e| Edit::replace(shift(&e.range), e.text.clone()))
            .collect();
        let mut t = SqlTemplate::build(&sql[window], &local, &edits);
        for p in &mut t.parts {
            if let Part::Literal(i) = p {
                *i += first;
            }
        }
        t.verbatim = false;
        t
    }

    /// True when the template is the statement itself.
    pub fn is_verbatim(&self) -> bool {
        self.verbatim
    }

    /// The SQL for a statement `sql` (same fingerprint as the planned one) with its literals.
    pub fn render(&self, sql: &str, literals: &[Range<usize>]) -> String {
        let size = |p: &Part| match p {
            Part::Text(t) => t.len(),
            Part::Literal(i) => literals.get(*i).map_or(0, |r| r.len()),
        };
        let mut out = String::with_capacity(self.parts.iter().map(size).sum());
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Literal(i) => {
                    if let Some(text) = literals.get(*i).and_then(|r| sql.get(r.clone())) {
                        out.push_str(text);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::fingerprint;

    #[test]
    fn edits_apply_and_literals_follow_the_rendered_statement() {
        let planned = "SELECT a FROM shop.t WHERE id = 5 LIMIT 2, 3";
        let f = fingerprint(planned);
        let at = planned.find("shop").unwrap();
        let limit = planned.find("LIMIT").unwrap();
        let t = SqlTemplate::build(
            planned,
            &f.literals,
            &[
                Edit::replace(at..at + 4, "`shop_1`"),
                Edit::replace(limit..planned.len(), "LIMIT 0, 5"),
            ],
        );
        let other = "SELECT a FROM shop.t WHERE id = 12345 LIMIT 2, 3";
        let g = fingerprint(other);
        assert_eq!(
            t.render(other, &g.literals),
            "SELECT a FROM `shop_1`.t WHERE id = 12345 LIMIT 0, 5"
        );
        let plain = SqlTemplate::build(planned, &f.literals, &[]);
        assert!(plain.is_verbatim());
        assert_eq!(plain.render(other, &g.literals), other);
    }
}

#[cfg(test)]
mod placeholder_tests {
    use super::*;
    use crate::fingerprint::fingerprint;

    #[test]
    fn placeholders_stay() {
        let sql = "SELECT note FROM orders WHERE customer_id = ?";
        let f = fingerprint(sql);
        let t = SqlTemplate::build(sql, &f.literals, &[]);
        assert_eq!(t.render(sql, &f.literals), sql);
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;
    use crate::fingerprint::fingerprint;

    #[test]
    fn a_window_renders_its_own_text_with_the_statements_literals() {
        let sql = "INSERT INTO shop.t VALUES (1, 'a'), (2, 'b'), (3, 'c')";
        let f = fingerprint(sql);
        let second = sql.find("(2").unwrap()..sql.find(", (3").unwrap();
        let t = SqlTemplate::build_window(sql, &f.literals, &[], second);
        assert_eq!(t.render(sql, &f.literals), "(2, 'b')");
        let other = "INSERT INTO shop.t VALUES (7, 'x'), (8, 'yy'), (9, 'z')";
        let g = fingerprint(other);
        assert_eq!(t.render(other, &g.literals), "(8, 'yy')");
        let at = sql.find("shop").unwrap();
        let head = SqlTemplate::build_window(
            sql,
            &f.literals,
            &[Edit::replace(at..at + 4, "`s_1`")],
            0..sql.find("(1").unwrap(),
        );
        assert_eq!(head.render(sql, &f.literals), "INSERT INTO `s_1`.t VALUES ");
    }
}
