//! Running sums of shard values: exact DECIMAL (integers join as DECIMAL, as MariaDB's SUM
//! over integers is DECIMAL), or double once any double appears.

use super::decimal::Decimal;
use crate::exec::row::Value;

/// A sum of non-NULL values; NULL when there were none.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Sum {
    #[default]
    Empty,
    Exact(Decimal),
    Double(f64),
}

impl Sum {
    /// Adds one value (NULL is skipped; strings count by their numeric prefix, as doubles).
    pub(crate) fn add(&mut self, v: &Value) {
        if v.is_null() {
            return;
        }
        let next = match (std::mem::take(self), v.to_decimal()) {
            (Sum::Empty, Some(d)) => Sum::Exact(d),
            (Sum::Exact(acc), Some(d)) => Sum::Exact(acc.add(&d)),
            (acc, _) => Sum::Double(acc.as_f64() + v.to_f64().unwrap_or(0.0)),
        };
        *self = next;
    }

    fn as_f64(&self) -> f64 {
        match self {
            Sum::Empty => 0.0,
            Sum::Exact(d) => d.to_f64(),
            Sum::Double(x) => *x,
        }
    }

    /// The SUM value.
    pub(crate) fn value(&self) -> Value {
        match self {
            Sum::Empty => Value::Null,
            Sum::Exact(d) => Value::Decimal(d.clone()),
            Sum::Double(x) => Value::Double(*x),
        }
    }

    /// AVG = sum / count: DECIMAL with `scale` decimals (half away from zero), or a double
    /// when `double` or the sum is a double; NULL for no rows.
    pub(crate) fn average(&self, count: u64, scale: u32, double: bool) -> Value {
        match self {
            _ if count == 0 => Value::Null,
            Sum::Empty => Value::Null,
            Sum::Exact(d) if !double => d.div_int(count, scale).map_or(Value::Null, Value::Decimal),
            other => Value::Double(other.as_f64() / count as f64),
        }
    }
}

/// A COUNT value from a shard as a number of rows.
pub(crate) fn count_of(v: &Value) -> i128 {
    match v {
        Value::Null => 0,
        Value::Int(i) => i128::from(*i),
        Value::UInt(u) => i128::from(*u),
        other => other
            .to_decimal()
            .and_then(|d| d.to_i128())
            .unwrap_or_else(|| other.to_f64().unwrap_or(0.0) as i128),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Value {
        Value::Decimal(Decimal::parse(s.as_bytes()).unwrap())
    }

    #[test]
    fn sums_keep_their_kind() {
        let mut s = Sum::default();
        assert_eq!(s.value(), Value::Null);
        s.add(&Value::Null);
        assert_eq!(s.value(), Value::Null);
        s.add(&dec("1.50"));
        s.add(&Value::Int(2));
        assert_eq!(s.value(), dec("3.50"));
        let mut d = Sum::default();
        d.add(&Value::Double(0.1));
        d.add(&Value::Double(0.2));
        assert_eq!(d.value(), Value::Double(0.1 + 0.2));
        let mut i = Sum::default();
        i.add(&Value::UInt(u64::MAX));
        i.add(&Value::UInt(1));
        assert_eq!(i.value(), dec("18446744073709551616"));
    }

    #[test]
    fn averages_round_like_mariadb() {
        let mut s = Sum::default();
        s.add(&dec("5"));
        assert_eq!(s.average(3, 4, false), dec("1.6667"));
        assert_eq!(s.average(0, 4, false), Value::Null);
        assert_eq!(Sum::Empty.average(3, 4, false), Value::Null);
        assert_eq!(Sum::Double(1.8).average(3, 31, true), Value::Double(1.8 / 3.0));
        assert_eq!(count_of(&dec("7")), 7);
        assert_eq!(count_of(&Value::Null), 0);
    }
}
