//! Shard-key predicates: which shards a WHERE clause can match, from `=`, `IN`, `BETWEEN`,
//! `<`/`>`, `IS NULL` on the key, combined with `AND`/`OR`. Anything else on the key (a function
//! of it, a comparison with another column) does not narrow.

use super::values::Values;
use super::PlanError;
use crate::route::shard_fn::{KeyValue, ShardFunction};
use std::collections::BTreeSet;
use std::ops::Bound;
use tessera_sql::analyze::Offsets;
use tessera_sql::sqlparser::ast::{BinaryOperator, Expr, UnaryOperator, Value};

/// Where a key value comes from at execution.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueSource {
    /// The statement's n-th literal (text statements; read again for every statement that
    /// shares the fingerprint).
    Literal {
        index: usize,
        negative: bool,
    },
    /// The n-th `?` parameter (prepared statements).
    Param(usize),
    Null,
}

/// What a WHERE clause says about the shard key.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyExpr {
    /// Nothing: every shard.
    Any,
    Eq(ValueSource),
    In(Vec<ValueSource>),
    Range(Bound<ValueSource>, Bound<ValueSource>),
    And(Vec<KeyExpr>),
    Or(Vec<KeyExpr>),
    /// Tables joined by their key values rather than on their keys (`a.k = ? AND b.k = ?`):
    /// the statement runs only when the values are on one shard.
    OneShard(Box<KeyExpr>),
}

pub use crate::error::plan::VALUES_ON_SEVERAL_SHARDS;

impl KeyExpr {
    /// The shards that may hold matching rows; None = all.
    pub fn shards(&self, f: &ShardFunction, n: usize, values: &Values) -> Result<Option<BTreeSet<usize>>, PlanError> {
        Ok(match self {
            KeyExpr::Any => None,
            KeyExpr::Eq(v) => Some(one(f, n, &values.get(v)?)?),
            KeyExpr::In(list) => {
                let mut set = BTreeSet::new();
                for v in list {
                    set.extend(one(f, n, &values.get(v)?)?);
                }
                Some(set)
            }
            KeyExpr::Range(lo, hi) => {
                let lo = bound(lo, values)?;
                let hi = bound(hi, values)?;
                f.shards_for_range(as_ref(&lo), as_ref(&hi), n)
                    .map(|v| v.into_iter().collect())
            }
            KeyExpr::And(parts) => {
                let mut acc: Option<BTreeSet<usize>> = None;
                for p in parts {
                    if let Some(s) = p.shards(f, n, values)? {
                        acc = Some(match acc {
                            Some(a) => a.intersection(&s).copied().collect(),
                            None => s,
                        });
                    }
                }
                acc
            }
            KeyExpr::OneShard(inner) => match inner.shards(f, n, values)? {
                Some(set) if set.len() == 1 => Some(set),
                _ => return Err(PlanError::ValuesOnSeveralShards),
            },
            KeyExpr::Or(parts) => {
                let mut acc = BTreeSet::new();
                for p in parts {
                    match p.shards(f, n, values)? {
                        Some(s) => acc.extend(s),
                        None => return Ok(None),
                    }
                }
                Some(acc)
            }
        })
    }

    /// True when the expression narrows at all.
    pub fn narrows(&self) -> bool {
        match self {
            KeyExpr::Any => false,
            KeyExpr::And(p) => p.iter().any(KeyExpr::narrows),
            KeyExpr::Or(p) => p.iter().all(KeyExpr::narrows),
            KeyExpr::OneShard(inner) => inner.narrows(),
            _ => true,
        }
    }

    /// For EXPLAIN ROUTE.
    pub fn describe(&self, key: &str) -> String {
        match self {
            KeyExpr::Any => "no predicate on the shard key".into(),
            KeyExpr::Eq(_) => format!("{key} = value"),
            KeyExpr::In(l) => format!("{key} IN ({} values)", l.len()),
            KeyExpr::Range(..) => format!("{key} in a range"),
            KeyExpr::And(p) => p
                .iter()
                .filter(|e| e.narrows())
                .map(|e| e.describe(key))
                .collect::<Vec<_>>()
                .join(" AND "),
            KeyExpr::Or(p) => format!(
                "({})",
                p.iter().map(|e| e.describe(key)).collect::<Vec<_>>().join(" OR ")
            ),
            KeyExpr::OneShard(_) => {
                "every table's shard key = a value, all on one shard (refused when on several)".into()
            }
        }
    }
}

fn one(f: &ShardFunction, n: usize, v: &KeyValue) -> Result<BTreeSet<usize>, PlanError> {
    Ok(BTreeSet::from([f.shard_of(v, n)?]))
}

fn bound(b: &Bound<ValueSource>, values: &Values) -> Result<Bound<KeyValue>, PlanError> {
    Ok(match b {
        Bound::Included(v) => Bound::Included(values.get(v)?),
        Bound::Excluded(v) => Bound::Excluded(values.get(v)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}

fn as_ref(b: &Bound<KeyValue>) -> Bound<&KeyValue> {
    match b {
        Bound::Included(v) => Bound::Included(v),
        Bound::Excluded(v) => Bound::Excluded(v),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Reads key predicates from a WHERE/ON expression. `is_key` says whether a column reference
/// (qualifier, name) is a shard key of the co-located tables; `literal_at` maps a literal's
/// byte offset to its index among the statement's literals.
pub struct KeyReader<'a> {
    pub offsets: &'a Offsets<'a>,
    pub is_key: &'a dyn Fn(&Expr) -> bool,
    pub literal_at: &'a dyn Fn(usize) -> Option<usize>,
    pub placeholder_at: &'a dyn Fn(usize) -> Option<usize>,
}

impl KeyReader<'_> {
    pub fn read(&self, e: &Expr) -> KeyExpr {
        match e {
            Expr::Nested(inner) => self.read(inner),
            Expr::BinaryOp { left, op, right } => self.binary(left, op, right),
            Expr::InList {
                expr,
                list,
                negated: false,
            } if (self.is_key)(expr) => match list.iter().map(|v| self.value(v)).collect::<Option<Vec<_>>>() {
                Some(values) => KeyExpr::In(values),
                None => KeyExpr::Any,
            },
            Expr::InList {
                expr,
                list,
                negated: false,
            } => match &**expr {
                Expr::Tuple(items) => self.tuple_in(items, list),
                _ => KeyExpr::Any,
            },
            Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } if (self.is_key)(expr) => match (self.value(low), self.value(high)) {
                (Some(l), Some(h)) => KeyExpr::Range(Bound::Included(l), Bound::Included(h)),
                _ => KeyExpr::Any,
            },
            Expr::IsNull(expr) if (self.is_key)(expr) => KeyExpr::Eq(ValueSource::Null),
            _ => KeyExpr::Any,
        }
    }

    /// `(k, x) IN ((v1, y1), (v2, y2))`: the key's values at its position in every row.
    fn tuple_in(&self, items: &[Expr], list: &[Expr]) -> KeyExpr {
        let Some(at) = items.iter().position(|e| (self.is_key)(e)) else {
            return KeyExpr::Any;
        };
        let values = list.iter().map(|row| match row {
            Expr::Tuple(values) if values.len() == items.len() => self.value(&values[at]),
            _ => None,
        });
        match values.collect::<Option<Vec<_>>>() {
            Some(values) => KeyExpr::In(values),
            None => KeyExpr::Any,
        }
    }

    fn binary(&self, left: &Expr, op: &BinaryOperator, right: &Expr) -> KeyExpr {
        match op {
            BinaryOperator::And => flatten(KeyExpr::And(vec![self.read(left), self.read(right)])),
            BinaryOperator::Or => flatten(KeyExpr::Or(vec![self.read(left), self.read(right)])),
            _ => {
                let (op, value) = if (self.is_key)(left) {
                    (op.clone(), right)
                } else if (self.is_key)(right) {
                    (mirror(op), left)
                } else {
                    return KeyExpr::Any;
                };
                let Some(v) = self.value(value) else {
                    return KeyExpr::Any;
                };
                match op {
                    BinaryOperator::Eq | BinaryOperator::Spaceship => KeyExpr::Eq(v),
                    BinaryOperator::Lt => KeyExpr::Range(Bound::Unbounded, Bound::Excluded(v)),
                    BinaryOperator::LtEq => KeyExpr::Range(Bound::Unbounded, Bound::Included(v)),
                    BinaryOperator::Gt => KeyExpr::Range(Bound::Excluded(v), Bound::Unbounded),
                    BinaryOperator::GtEq => KeyExpr::Range(Bound::Included(v), Bound::Unbounded),
                    _ => KeyExpr::Any,
                }
            }
        }
    }

    /// A literal, a negated number, NULL or a placeholder.
    pub fn value(&self, e: &Expr) -> Option<ValueSource> {
        match e {
            Expr::Nested(inner) => self.value(inner),
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr,
            } => match self.value(expr)? {
                ValueSource::Literal { index, negative } => Some(ValueSource::Literal {
                    index,
                    negative: !negative,
                }),
                _ => None,
            },
            Expr::UnaryOp {
                op: UnaryOperator::Plus,
                expr,
            } => self.value(expr),
            Expr::Value(v) => {
                let start = self.offsets.of(e)?.start;
                match &v.value {
                    Value::Null => Some(ValueSource::Null),
                    Value::Placeholder(_) => (self.placeholder_at)(start).map(ValueSource::Param),
                    Value::Number(..) | Value::SingleQuotedString(_) | Value::DoubleQuotedString(_) => {
                        (self.literal_at)(start).map(|index| ValueSource::Literal { index, negative: false })
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

fn mirror(op: &BinaryOperator) -> BinaryOperator {
    match op {
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        other => other.clone(),
    }
}

/// `And(And(a, b), c)` -> `And(a, b, c)`; Or likewise.
fn flatten(e: KeyExpr) -> KeyExpr {
    match e {
        KeyExpr::And(parts) => KeyExpr::And(
            parts
                .into_iter()
                .flat_map(|p| match p {
                    KeyExpr::And(inner) => inner,
                    other => vec![other],
                })
                .collect(),
        ),
        KeyExpr::Or(parts) => KeyExpr::Or(
            parts
                .into_iter()
                .flat_map(|p| match p {
                    KeyExpr::Or(inner) => inner,
                    other => vec![other],
                })
                .collect(),
        ),
        other => other,
    }
}
