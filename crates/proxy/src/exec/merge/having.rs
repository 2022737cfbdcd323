//! HAVING on merged output rows, with SQL's three-valued logic and MariaDB's comparison rules:
//! numbers compare exactly (as doubles once a double or a string meets a number), strings
//! bytewise, and anything compared with NULL is unknown, which drops the row.

use super::arith;
use super::key::{cell, column_label};
use super::spec::{CmpOp, Filter, Operand};
use super::MergeError;
use crate::exec::row::{compare, Value};
use std::cmp::Ordering;
use std::fmt::Write;

/// The HAVING stage.
#[derive(Debug)]
pub(crate) struct Having<'s> {
    filter: &'s Filter,
}

impl<'s> Having<'s> {
    pub(crate) fn new(filter: &'s Filter) -> Having<'s> {
        Having { filter }
    }

    /// True when the filter is true for `row` (false and unknown drop it).
    pub(crate) fn accepts(&self, row: &[Value]) -> Result<bool, MergeError> {
        Ok(eval(self.filter, row)? == Some(true))
    }

    /// `having #3 > 10`.
    pub(crate) fn describe(&self) -> String {
        let mut s = String::from("having ");
        write_filter(&mut s, self.filter);
        s
    }
}

/// Kleene logic: None is unknown.
fn eval(f: &Filter, row: &[Value]) -> Result<Option<bool>, MergeError> {
    Ok(match f {
        Filter::And(fs) => {
            let mut acc = Some(true);
            for f in fs {
                match eval(f, row)? {
                    Some(false) => return Ok(Some(false)),
                    None => acc = None,
                    Some(true) => {}
                }
            }
            acc
        }
        Filter::Or(fs) => {
            let mut acc = Some(false);
            for f in fs {
                match eval(f, row)? {
                    Some(true) => return Ok(Some(true)),
                    None => acc = None,
                    Some(false) => {}
                }
            }
            acc
        }
        Filter::Not(f) => eval(f, row)?.map(|b| !b),
        Filter::Compare { left, op, right } => compare_op(*op, &operand(left, row)?, &operand(right, row)?),
        Filter::IsNull { operand: o, negated } => Some(operand(o, row)?.is_null() != *negated),
        Filter::Between {
            operand: o,
            low,
            high,
            negated,
        } => between(&operand(o, row)?, &operand(low, row)?, &operand(high, row)?).map(|b| b != *negated),
        Filter::In {
            operand: o,
            list,
            negated,
        } => in_list(&operand(o, row)?, list, row)?.map(|b| b != *negated),
    })
}

pub(crate) fn operand(o: &Operand, row: &[Value]) -> Result<Value, MergeError> {
    match o {
        Operand::Output(c) => Ok(cell(row, *c).clone()),
        Operand::Literal(v) => Ok(v.clone()),
        Operand::Arith(a, op, b) => arith::apply(*op, &operand(a, row)?, &operand(b, row)?),
    }
}

/// MariaDB's comparison of two non-NULL values; None when either is NULL.
fn sql_compare(a: &Value, b: &Value) -> Option<Ordering> {
    if a.is_null() || b.is_null() {
        return None;
    }
    let as_double = |v: &Value| matches!(v, Value::Double(_) | Value::Bytes(_));
    match (a, b) {
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        _ if as_double(a) || as_double(b) => a.to_f64()?.partial_cmp(&b.to_f64()?),
        _ => Some(compare(a, b)),
    }
}

fn compare_op(op: CmpOp, a: &Value, b: &Value) -> Option<bool> {
    if op == CmpOp::NullSafeEq {
        return Some(match (a.is_null(), b.is_null()) {
            (true, true) => true,
            (false, false) => sql_compare(a, b) == Some(Ordering::Equal),
            _ => false,
        });
    }
    let o = sql_compare(a, b)?;
    Some(match op {
        CmpOp::Eq | CmpOp::NullSafeEq => o.is_eq(),
        CmpOp::Ne => o.is_ne(),
        CmpOp::Lt => o.is_lt(),
        CmpOp::Le => o.is_le(),
        CmpOp::Gt => o.is_gt(),
        CmpOp::Ge => o.is_ge(),
    })
}

/// `v BETWEEN low AND high` = `v >= low AND v <= high`.
fn between(v: &Value, low: &Value, high: &Value) -> Option<bool> {
    match (compare_op(CmpOp::Ge, v, low), compare_op(CmpOp::Le, v, high)) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// `v IN (list)`: true on a match, else unknown if a NULL was involved, else false.
fn in_list(v: &Value, list: &[Operand], row: &[Value]) -> Result<Option<bool>, MergeError> {
    let mut unknown = false;
    for item in list {
        match compare_op(CmpOp::Eq, v, &operand(item, row)?) {
            Some(true) => return Ok(Some(true)),
            None => unknown = true,
            Some(false) => {}
        }
    }
    Ok(if unknown { None } else { Some(false) })
}

fn write_filter(s: &mut String, f: &Filter) {
    let join = |s: &mut String, fs: &[Filter], word: &str| {
        s.push('(');
        for (i, f) in fs.iter().enumerate() {
            if i > 0 {
                let _ = write!(s, " {word} ");
            }
            write_filter(s, f);
        }
        s.push(')');
    };
    match f {
        Filter::And(fs) => join(s, fs, "and"),
        Filter::Or(fs) => join(s, fs, "or"),
        Filter::Not(f) => {
            s.push_str("not ");
            write_filter(s, f);
        }
        Filter::Compare { left, op, right } => {
            let _ = write!(s, "{} {} {}", show(left), op_text(*op), show(right));
        }
        Filter::IsNull { operand, negated } => {
            let _ = write!(s, "{} is {}null", show(operand), if *negated { "not " } else { "" });
        }
        Filter::Between {
            operand,
            low,
            high,
            negated,
        } => {
            let not = if *negated { "not " } else { "" };
            let _ = write!(s, "{} {not}between {} and {}", show(operand), show(low), show(high));
        }
        Filter::In { operand, list, negated } => {
            let items: Vec<String> = list.iter().map(show).collect();
            let not = if *negated { "not " } else { "" };
            let _ = write!(s, "{} {not}in ({})", show(operand), items.join(", "));
        }
    }
}

fn show(o: &Operand) -> String {
    match o {
        Operand::Output(c) => format!("#{}", column_label(*c)),
        Operand::Literal(Value::Bytes(b)) => format!("'{}'", String::from_utf8_lossy(b)),
        Operand::Literal(v) => v
            .to_text()
            .map_or("NULL".to_string(), |t| String::from_utf8_lossy(&t).into_owned()),
        Operand::Arith(a, op, b) => {
            let op = match op {
                super::spec::ArithOp::Add => "+",
                super::spec::ArithOp::Sub => "-",
                super::spec::ArithOp::Mul => "*",
                super::spec::ArithOp::Div => "/",
            };
            format!("({} {op} {})", show(a), show(b))
        }
    }
}

fn op_text(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::NullSafeEq => "<=>",
        CmpOp::Ne => "<>",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}
