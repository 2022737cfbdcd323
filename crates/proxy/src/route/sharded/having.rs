//! HAVING after the merge: the client's HAVING expression as a [`Filter`] over merged output
//! rows (aggregates and aliases become output columns, literals become values).

use super::PlanError;
use crate::exec::merge::{ArithOp, CmpOp, Filter, Operand};
use crate::exec::row::Value;
use tessera_sql::sqlparser::ast::{BinaryOperator, Expr, UnaryOperator, Value as SqlValue};

/// What translation needs from the planner.
pub trait Resolver {
    /// The output index of an aggregate, alias or group column.
    fn output(&mut self, e: &Expr) -> Result<usize, PlanError>;
    /// The plan depends on this literal's value.
    fn bake(&mut self, e: &Expr);
    /// Whether the shards can compute `e` per group themselves (no aggregate, no alias of the
    /// select list): it then becomes a hidden column, compared by the server's rules
    /// (collations included).
    fn shard_computable(&self, e: &Expr) -> bool;
}

/// Translates `e`.
pub fn translate(e: &Expr, p: &mut dyn Resolver) -> Result<Filter, PlanError> {
    if p.shard_computable(e) && !matches!(e, Expr::Nested(_)) {
        let o = p.output(e).map(Operand::Output)?;
        return Ok(Filter::Compare {
            left: o,
            op: CmpOp::Ne,
            right: Operand::Literal(Value::Int(0)),
        });
    }
    match e {
        Expr::Nested(inner) => translate(inner, p),
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Ok(Filter::Not(Box::new(translate(expr, p)?))),
        Expr::BinaryOp { left, op, right } => match op {
            BinaryOperator::And => Ok(Filter::And(vec![translate(left, p)?, translate(right, p)?])),
            BinaryOperator::Or => Ok(Filter::Or(vec![translate(left, p)?, translate(right, p)?])),
            _ => {
                let op = compare_op(op).ok_or_else(|| format!("the operator {op} in HAVING across shards"))?;
                Ok(Filter::Compare {
                    left: operand(left, p)?,
                    op,
                    right: operand(right, p)?,
                })
            }
        },
        Expr::IsNull(x) => Ok(Filter::IsNull {
            operand: operand(x, p)?,
            negated: false,
        }),
        Expr::IsNotNull(x) => Ok(Filter::IsNull {
            operand: operand(x, p)?,
            negated: true,
        }),
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } => Ok(Filter::Between {
            operand: operand(expr, p)?,
            low: operand(low, p)?,
            high: operand(high, p)?,
            negated: *negated,
        }),
        Expr::InList { expr, list, negated } => Ok(Filter::In {
            operand: operand(expr, p)?,
            list: list.iter().map(|x| operand(x, p)).collect::<Result<_, _>>()?,
            negated: *negated,
        }),
        other => {
            // A bare operand is true when it is a non-zero number.
            let o = operand(other, p)?;
            Ok(Filter::Compare {
                left: o,
                op: CmpOp::Ne,
                right: Operand::Literal(Value::Int(0)),
            })
        }
    }
}

/// An arithmetic expression over outputs (aggregates, aliases, literals; + - * /).
pub fn operand_of(e: &Expr, p: &mut dyn Resolver) -> Result<Operand, PlanError> {
    operand(e, p)
}

fn operand(e: &Expr, p: &mut dyn Resolver) -> Result<Operand, PlanError> {
    match e {
        Expr::Nested(inner) => operand(inner, p),
        Expr::Value(v) => {
            p.bake(e);
            literal(&v.value).map(Operand::Literal)
        }
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match &**expr {
            Expr::Value(v) => {
                p.bake(expr);
                literal(&v.value).map(|v| Operand::Literal(negate(v)))
            }
            _ => Err("a negated expression in HAVING across shards".into()),
        },
        Expr::BinaryOp { left, op, right } => {
            let op = match op {
                BinaryOperator::Plus => ArithOp::Add,
                BinaryOperator::Minus => ArithOp::Sub,
                BinaryOperator::Multiply => ArithOp::Mul,
                BinaryOperator::Divide => ArithOp::Div,
                other => {
                    return Err(PlanError::Refused(format!(
                        "the operator {other} in HAVING across shards"
                    )))
                }
            };
            Ok(Operand::Arith(
                Box::new(operand(left, p)?),
                op,
                Box::new(operand(right, p)?),
            ))
        }
        other => p.output(other).map(Operand::Output),
    }
}

fn compare_op(op: &BinaryOperator) -> Option<CmpOp> {
    Some(match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::Ne,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::Le,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::Ge,
        _ => return None,
    })
}

/// A SQL literal as a merge value.
pub fn literal(v: &SqlValue) -> Result<Value, PlanError> {
    match v {
        SqlValue::Null => Ok(Value::Null),
        // As MariaDB types literals: integers, exact decimals with a point, doubles with an
        // exponent.
        SqlValue::Number(n, _) => {
            if let Ok(i) = n.parse::<i64>() {
                return Ok(Value::Int(i));
            }
            if !n.contains(['e', 'E']) {
                if let Ok(d) = crate::exec::merge::decimal::Decimal::parse(n.as_bytes()) {
                    return Ok(Value::Decimal(d));
                }
            }
            n.parse::<f64>()
                .map(Value::Double)
                .map_err(|_| PlanError::Refused(format!("the number {n}")))
        }
        // A string comparison would need the column's collation, which the merge does not
        // apply to HAVING: refused rather than answered in byte order.
        SqlValue::SingleQuotedString(_) | SqlValue::DoubleQuotedString(_) => {
            Err("a string constant in HAVING across shards".into())
        }
        SqlValue::Boolean(b) => Ok(Value::Int(*b as i64)),
        other => Err(PlanError::Refused(format!(
            "the literal {other} in HAVING across shards"
        ))),
    }
}

fn negate(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Int(-i),
        Value::Double(d) => Value::Double(-d),
        other => other,
    }
}
