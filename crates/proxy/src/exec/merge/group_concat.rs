//! GROUP_CONCAT across shards: values appended in merged order with the separator, DISTINCT
//! by value or weight, and MariaDB's cut at `group_concat_max_len` bytes.
//!
//! Verified against MariaDB 10.11 with group_concat_max_len = 5 over utf8mb4 values: 'éé','éé'
//! → `éé,` (the separator counts), 'ccc','ddd' → `ccc,d`, DISTINCT 'b','éé' → `b,é` (never half
//! a character), NULLs skipped, all NULL → NULL; each cut raises warning 1260.

use super::key::cell;
use super::spec::SortBy;
use crate::exec::row::{compare, Value};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// How one GROUP_CONCAT output concatenates (borrowed from its [`super::Output`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConcatRule<'s> {
    pub value: usize,
    pub separator: &'s [u8],
    pub max_len: usize,
    pub distinct: Option<SortBy>,
    pub utf8: bool,
    /// The column with how many rows the value stands for.
    pub repeat: Option<usize>,
}

/// One group's concatenation so far.
#[derive(Debug, Default)]
pub(crate) struct Concat {
    out: Vec<u8>,
    any: bool,
    truncated: bool,
    seen: BTreeSet<Distinct>,
}

/// A value ordered by [`compare`], for DISTINCT.
#[derive(Debug)]
struct Distinct(Value);

impl PartialEq for Distinct {
    fn eq(&self, other: &Self) -> bool {
        compare(&self.0, &other.0).is_eq()
    }
}
impl Eq for Distinct {}
impl PartialOrd for Distinct {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Distinct {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

impl Concat {
    /// Appends the row's value; returns the bytes this group now holds more.
    pub(crate) fn add(&mut self, rule: &ConcatRule<'_>, row: &[Value]) -> usize {
        let v = cell(row, rule.value);
        if self.truncated || v.is_null() {
            return 0;
        }
        let mut grown = 0;
        if let Some(by) = rule.distinct {
            let key = match by {
                SortBy::Value => v.clone(),
                SortBy::Weight(w) => cell(row, w).clone(),
            };
            grown += key.size();
            if !self.seen.insert(Distinct(key)) {
                return 0;
            }
        }
        let start = self.out.len();
        let times = match (rule.repeat, rule.distinct) {
            (Some(c), None) => cell(row, c).to_f64().map_or(1, |n| n.max(0.0) as u64),
            _ => 1,
        };
        let text = v.to_text().unwrap_or_default();
        for _ in 0..times {
            if self.any {
                self.out.extend_from_slice(rule.separator);
            }
            self.any = true;
            self.out.extend_from_slice(&text);
            if self.out.len() > rule.max_len {
                self.cut(rule);
                break;
            }
        }
        grown + self.out.len().saturating_sub(start)
    }

    /// Cuts at `max_len` bytes (back to a character start for UTF-8).
    fn cut(&mut self, rule: &ConcatRule<'_>) {
        let mut end = rule.max_len;
        if rule.utf8 {
            while end > 0 && self.out.get(end).is_some_and(|b| b & 0xc0 == 0x80) {
                end -= 1;
            }
        }
        self.out.truncate(end);
        self.truncated = true;
    }

    /// The GROUP_CONCAT value (NULL when every value was NULL) and whether it was cut.
    pub(crate) fn finish(self) -> (Value, bool) {
        let value = if self.any {
            Value::Bytes(self.out.into())
        } else {
            Value::Null
        };
        (value, self.truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn s(v: &str) -> Value {
        Value::Bytes(Bytes::copy_from_slice(v.as_bytes()))
    }

    fn concat(rule: &ConcatRule<'_>, rows: &[Vec<Value>]) -> (Value, bool) {
        let mut c = Concat::default();
        for r in rows {
            c.add(rule, r);
        }
        c.finish()
    }

    fn rule(max_len: usize, distinct: Option<SortBy>) -> ConcatRule<'static> {
        ConcatRule {
            value: 0,
            separator: b",",
            max_len,
            distinct,
            utf8: true,
            repeat: None,
        }
    }

    #[test]
    fn cuts_like_mariadb() {
        let r = rule(5, None);
        assert_eq!(
            concat(&r, &[vec![s("éé")], vec![s("éé")], vec![s("b")]]),
            (s("éé,"), true)
        );
        assert_eq!(concat(&r, &[vec![s("ccc")], vec![s("ddd")]]), (s("ccc,d"), true));
        assert_eq!(concat(&r, &[vec![s("x")]]), (s("x"), false));
        assert_eq!(concat(&r, &[vec![s("b")], vec![s("éé")]]), (s("b,é"), true));
        assert_eq!(concat(&r, &[vec![s("ab")], vec![s("cd")]]), (s("ab,cd"), false));
        let bytes = ConcatRule { utf8: false, ..r };
        assert_eq!(
            concat(&bytes, &[vec![s("b")], vec![s("éé")]])
                .0
                .to_text()
                .unwrap()
                .len(),
            5
        );
    }

    #[test]
    fn nulls_numbers_and_distinct() {
        let r = rule(100, None);
        assert_eq!(concat(&r, &[vec![Value::Null]]), (Value::Null, false));
        assert_eq!(
            concat(&r, &[vec![Value::Int(1)], vec![Value::Null], vec![Value::Int(-2)]]).0,
            s("1,-2")
        );
        assert_eq!(concat(&r, &[vec![s("")]]).0, s(""));
        let d = rule(100, Some(SortBy::Value));
        assert_eq!(concat(&d, &[vec![s("a")], vec![s("b")], vec![s("a")]]).0, s("a,b"));
        let w = ConcatRule {
            distinct: Some(SortBy::Weight(1)),
            ..d
        };
        let rows = [vec![s("a"), s("A")], vec![s("A"), s("A")], vec![s("b"), s("B")]];
        assert_eq!(concat(&w, &rows).0, s("a,b"));
    }
}
