//! Arithmetic in HAVING with MariaDB's types: exact for integers and DECIMAL (division with 4
//! more decimals, rounded half away from zero), double once a double or string is involved,
//! NULL for NULL operands and division by zero.
//!
//! Verified against MariaDB 10.11: 5.01/3 = 1.670000, 1/3 = 0.3333, -2/3 = -0.6667,
//! 1.5*1.25 = 1.875, 1/0 = NULL, 9223372036854775807+1 and CAST(3 AS UNSIGNED)-5 = error 1690.

use super::decimal::Decimal;
use super::spec::ArithOp;
use super::MergeError;
use crate::exec::row::Value;

/// MariaDB's `div_precision_increment` default.
const DIV_PRECISION_INCREMENT: u32 = 4;

/// `a op b`.
pub(crate) fn apply(op: ArithOp, a: &Value, b: &Value) -> Result<Value, MergeError> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let inexact = |v: &Value| matches!(v, Value::Double(_) | Value::Bytes(_));
    if inexact(a) || inexact(b) {
        return doubles(op, a.to_f64().unwrap_or(0.0), b.to_f64().unwrap_or(0.0));
    }
    let integer = |v: &Value| matches!(v, Value::Int(_) | Value::UInt(_));
    if integer(a) && integer(b) && op != ArithOp::Div {
        return integers_op(op, a, b);
    }
    match (a.to_decimal(), b.to_decimal()) {
        (Some(x), Some(y)) => Ok(decimals(op, &x, &y)),
        _ => Ok(Value::Null),
    }
}

fn doubles(op: ArithOp, x: f64, y: f64) -> Result<Value, MergeError> {
    let r = match op {
        ArithOp::Add => x + y,
        ArithOp::Sub => x - y,
        ArithOp::Mul => x * y,
        ArithOp::Div if y == 0.0 => return Ok(Value::Null),
        ArithOp::Div => x / y,
    };
    if r.is_finite() {
        Ok(Value::Double(r))
    } else {
        Err(MergeError::OutOfRange("DOUBLE"))
    }
}

/// Integer arithmetic: UNSIGNED when either side is, and out of range as MariaDB's error 1690
/// when the result does not fit.
fn integers_op(op: ArithOp, a: &Value, b: &Value) -> Result<Value, MergeError> {
    let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
    let wide = |v: &Value| match v {
        Value::Int(i) => i128::from(*i),
        Value::UInt(u) => i128::from(*u),
        _ => 0,
    };
    let (x, y) = (wide(a), wide(b));
    let r = match op {
        ArithOp::Add => x.checked_add(y),
        ArithOp::Sub => x.checked_sub(y),
        _ => x.checked_mul(y),
    };
    match r {
        Some(r) if unsigned => u64::try_from(r)
            .map(Value::UInt)
            .map_err(|_| MergeError::OutOfRange("BIGINT UNSIGNED")),
        Some(r) => i64::try_from(r)
            .map(Value::Int)
            .map_err(|_| MergeError::OutOfRange("BIGINT")),
        None => Err(MergeError::OutOfRange("BIGINT")),
    }
}

fn decimals(op: ArithOp, x: &Decimal, y: &Decimal) -> Value {
    let r = match op {
        ArithOp::Add => Some(x.add(y)),
        ArithOp::Sub => Some(x.add(&y.neg())),
        ArithOp::Mul => Some(x.mul(y)),
        ArithOp::Div => x.div(y, x.scale() + DIV_PRECISION_INCREMENT),
    };
    r.map_or(Value::Null, Value::Decimal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Value {
        Value::Decimal(Decimal::parse(s.as_bytes()).unwrap())
    }

    #[test]
    fn matches_mariadb() {
        use ArithOp::*;
        assert_eq!(apply(Div, &dec("5.01"), &Value::Int(3)).unwrap(), dec("1.670000"));
        assert_eq!(apply(Div, &Value::Int(1), &Value::Int(3)).unwrap(), dec("0.3333"));
        assert_eq!(apply(Div, &Value::Int(-2), &Value::Int(3)).unwrap(), dec("-0.6667"));
        assert_eq!(apply(Mul, &dec("1.5"), &dec("1.25")).unwrap(), dec("1.875"));
        assert_eq!(apply(Div, &Value::Int(1), &Value::Int(0)).unwrap(), Value::Null);
        assert!(matches!(
            apply(Add, &Value::Int(i64::MAX), &Value::Int(1)),
            Err(MergeError::OutOfRange("BIGINT"))
        ));
        assert_eq!(apply(Sub, &Value::Int(3), &Value::Int(5)).unwrap(), Value::Int(-2));
        assert_eq!(
            apply(Add, &Value::UInt(u64::MAX), &Value::Int(0)).unwrap(),
            Value::UInt(u64::MAX)
        );
        assert_eq!(
            apply(Add, &Value::Double(0.5), &Value::Int(1)).unwrap(),
            Value::Double(1.5)
        );
        assert_eq!(apply(Sub, &dec("1.5"), &dec("0.25")).unwrap(), dec("1.25"));
        assert_eq!(apply(Add, &Value::Null, &Value::Int(1)).unwrap(), Value::Null);
        assert_eq!(apply(Div, &Value::Double(1.0), &Value::Int(0)).unwrap(), Value::Null);
    }
}
