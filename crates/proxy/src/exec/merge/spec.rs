//! What a merge does: the [`MergeSpec`] a sharding plan builds, its keys, aggregate outputs and
//! HAVING filter, with the checks that keep every column index in range.

use super::MergeError;
use crate::exec::row::Value;

/// Bytes of buffered rows a merge may hold unless the plan says otherwise.
pub const DEFAULT_MEMORY_CAP: usize = 64 << 20;

/// How shard results become the client's result. Column numbers are 0-based indexes into the
/// shard rows (for `order`, `aggregate` inputs) or into the output rows (`having`,
/// `final_order`; without `aggregate` the output rows are the shard rows).
#[derive(Debug, Clone, PartialEq)]
pub struct MergeSpec {
    /// Columns sent to the client: the first `visible` output columns.
    pub visible: usize,
    /// Every shard's rows arrive sorted by these; rows are merged k-way in this order (on
    /// ties, the lower shard index first). Empty: shards are concatenated in index order.
    pub order: Vec<SortKey>,
    /// None: rows pass through (output columns = shard columns).
    pub aggregate: Option<AggregateSpec>,
    /// SELECT DISTINCT without aggregates: consecutive rows equal on the `order` keys collapse
    /// to the first (shards sort on every visible column, and `order` lists them).
    pub distinct: bool,
    /// Evaluated on output rows after aggregation.
    pub having: Option<Filter>,
    /// Sort after aggregation/HAVING when the client's ORDER BY differs from the merge order;
    /// empty keeps the merged order. Buffers rows, bounded by `memory_cap`.
    pub final_order: Vec<SortKey>,
    pub offset: u64,
    pub limit: Option<u64>,
    /// Bytes of buffered rows and group state allowed; more is [`MergeError::MemoryCap`].
    pub memory_cap: usize,
}

/// Marks hidden column indices in a plan's merge spec until the shard column count is known:
/// the planner numbers the columns it appends to the shards' select list from here on.
pub const HIDDEN_BASE: usize = 1 << 20;

/// One sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub by: SortBy,
}

/// What a [`SortKey`] compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// [`crate::exec::row::compare`] on the column itself.
    Value,
    /// The bytes of another column holding `WEIGHT_STRING(expr)` from the shard: the
    /// collation's order and equality. A NULL weight is a NULL value. For PAD SPACE
    /// collations use `WEIGHT_STRING(expr AS CHAR(n))` with the column's length, so 'b ' and
    /// 'B' weigh the same as they compare (plain WEIGHT_STRING keeps trailing spaces).
    Weight(usize),
}

/// GROUP BY and the aggregate outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateSpec {
    /// Rows equal on these keys form a group (equal weights with [`SortBy::Weight`], so 'a'
    /// and 'A' in a `_ci` collation are one group); shards sort by them first.
    pub group_by: Vec<SortKey>,
    /// One per output column: visible ones first, then hidden ones for HAVING/final order.
    pub outputs: Vec<Output>,
}

/// How one output column of an aggregate is computed from the shard columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// This shard column of the group's first row (group columns, constants).
    First(usize),
    /// The sum of per-shard COUNTs, as BIGINT.
    Count(usize),
    /// The sum of per-shard SUMs: NULL if all are NULL; DECIMAL stays exact, DOUBLE stays
    /// double, integers (e.g. SUM over BIT) become DECIMAL as in MariaDB.
    Sum(usize),
    /// The least value by the key (its weight column for strings); the key's column value.
    Min(SortKey),
    /// The greatest value by the key.
    Max(SortKey),
    /// Total sum / total count: DECIMAL with `scale` decimals (the AVG column's decimals),
    /// rounded half away from zero, or a double when `double`; NULL when the count is 0.
    Avg {
        sum: usize,
        count: usize,
        scale: u32,
        double: bool,
    },
    /// Distinct non-NULL values of the key's column in the group. Shards group by
    /// (group_by..., column) and the merge order continues with this key after the group keys.
    CountDistinct { column: SortKey },
    /// The sum of the distinct values (distinct by `column`) of the shard column `value`.
    SumDistinct { column: SortKey, value: usize },
    /// Sum of distinct values / their count, as [`Output::Avg`].
    AvgDistinct {
        column: SortKey,
        value: usize,
        scale: u32,
        double: bool,
    },
    /// GROUP_CONCAT of the shard column `value` (shards send the individual values, sorted by
    /// group_by then `order`), concatenated in merged order with `separator`, cut at `max_len`
    /// bytes (`group_concat_max_len`; at a character boundary when `utf8`), each cut counted
    /// in [`super::MergeStats::group_concat_truncations`] (MariaDB's warning 1260).
    /// `distinct`: skip a value equal to one already taken, comparing the value itself
    /// ([`SortBy::Value`]) or its weight column ([`SortBy::Weight`]).
    GroupConcat {
        value: usize,
        separator: Vec<u8>,
        max_len: usize,
        order: Vec<SortKey>,
        distinct: Option<SortBy>,
        utf8: bool,
        /// A column holding how many rows the value stands for (shards send each distinct
        /// value once per group with its count); None: one.
        repeat: Option<usize>,
    },
    /// Arithmetic over the row's other outputs (`SUM(qty) / COUNT(*)`, `COUNT(*) + 1`), with
    /// MariaDB's result types (see `arith`).
    Expr(Operand),
}

/// A HAVING condition with SQL's three-valued logic: a row passes only when it is true.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    Not(Box<Filter>),
    Compare {
        left: Operand,
        op: CmpOp,
        right: Operand,
    },
    IsNull {
        operand: Operand,
        negated: bool,
    },
    Between {
        operand: Operand,
        low: Operand,
        high: Operand,
        negated: bool,
    },
    In {
        operand: Operand,
        list: Vec<Operand>,
        negated: bool,
    },
}

/// A value in a [`Filter`].
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// An output column.
    Output(usize),
    Literal(Value),
    Arith(Box<Operand>, ArithOp, Box<Operand>),
}

/// Comparison operators (`<=>` is [`CmpOp::NullSafeEq`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NullSafeEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Arithmetic operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl SortKey {
    /// Ascending on the column's value.
    pub fn asc(column: usize) -> SortKey {
        SortKey {
            column,
            descending: false,
            by: SortBy::Value,
        }
    }

    /// Descending on the column's value.
    pub fn desc(column: usize) -> SortKey {
        SortKey {
            descending: true,
            ..SortKey::asc(column)
        }
    }

    /// The same key compared by the weight in column `weight`.
    pub fn by_weight(self, weight: usize) -> SortKey {
        SortKey {
            by: SortBy::Weight(weight),
            ..self
        }
    }

    /// The column this key compares (the weight column for [`SortBy::Weight`]).
    pub fn compared_column(&self) -> usize {
        match self.by {
            SortBy::Value => self.column,
            SortBy::Weight(w) => w,
        }
    }

    /// Same column and comparison (direction aside).
    pub(crate) fn same_target(&self, other: &SortKey) -> bool {
        self.column == other.column && self.by == other.by
    }
}

impl MergeSpec {
    /// Rows pass through unchanged; the first `visible` columns are sent.
    pub fn new(visible: usize) -> MergeSpec {
        MergeSpec {
            visible,
            order: Vec::new(),
            aggregate: None,
            distinct: false,
            having: None,
            final_order: Vec::new(),
            offset: 0,
            limit: None,
            memory_cap: DEFAULT_MEMORY_CAP,
        }
    }

    /// Checks the plan; returns how many columns every shard row must have.
    pub fn validate(&self) -> Result<usize, MergeError> {
        let invalid = |m: &str| Err(MergeError::InvalidSpec(m.to_string()));
        if self.distinct && self.aggregate.is_some() {
            return invalid("DISTINCT over aggregated rows is not supported");
        }
        if self.distinct && self.order.is_empty() {
            return invalid("DISTINCT needs the shards sorted on the visible columns");
        }
        let input_width = max_index(self.order.iter().flat_map(key_columns));
        match &self.aggregate {
            None => {
                let outputs = self.output_columns().chain(0..self.visible);
                Ok(input_width.max(max_index(outputs)))
            }
            Some(agg) => {
                let width = agg.outputs.len();
                if self.visible > width || max_index(self.output_columns()) > width {
                    return invalid("a visible, HAVING or final ORDER BY column is not an aggregate output");
                }
                agg.check_order(&self.order)?;
                Ok(input_width.max(max_index(agg.input_columns())))
            }
        }
    }

    /// Output columns read by HAVING and the final sort.
    fn output_columns(&self) -> impl Iterator<Item = usize> + '_ {
        let having = self.having.iter().flat_map(Filter::columns);
        having.chain(self.final_order.iter().flat_map(key_columns))
    }
}

impl AggregateSpec {
    /// Shard columns the outputs and group keys read.
    fn input_columns(&self) -> impl Iterator<Item = usize> + '_ {
        let keys = self.group_by.iter().flat_map(key_columns);
        keys.chain(self.outputs.iter().flat_map(Output::columns))
    }

    /// Groups must be contiguous in the merge order, and outputs that need an order within
    /// the group (distinct aggregates, ordered GROUP_CONCAT) must find it right after them.
    fn check_order(&self, order: &[SortKey]) -> Result<(), MergeError> {
        let n = self.group_by.len();
        let prefix_ok = order.len() >= n && self.group_by.iter().zip(order).all(|(g, o)| g.same_target(o));
        if !prefix_ok {
            return Err(MergeError::InvalidSpec(
                "the merge order must start with the GROUP BY keys".into(),
            ));
        }
        let inner = &order[n..];
        for out in &self.outputs {
            // DISTINCT aggregates keep a set per group: any order within the group will do.
            let ok = match out {
                Output::GroupConcat { order: wanted, .. } => inner.starts_with(wanted),
                _ => true,
            };
            if !ok {
                return Err(MergeError::InvalidSpec(
                    "the merge order must continue with the key of each distinct or ordered aggregate".into(),
                ));
            }
        }
        Ok(())
    }
}

impl Output {
    /// Shard columns this output reads.
    fn columns(&self) -> Vec<usize> {
        match self {
            Output::Expr(_) => Vec::new(),
            Output::First(c) | Output::Count(c) | Output::Sum(c) => vec![*c],
            Output::Min(k) | Output::Max(k) | Output::CountDistinct { column: k } => key_columns(k).collect(),
            Output::Avg { sum, count, .. } => vec![*sum, *count],
            Output::SumDistinct { column, value } | Output::AvgDistinct { column, value, .. } => {
                key_columns(column).chain([*value]).collect()
            }
            Output::GroupConcat {
                value,
                order,
                distinct,
                repeat,
                ..
            } => {
                let weight = match distinct {
                    Some(SortBy::Weight(w)) => Some(*w),
                    _ => None,
                };
                order
                    .iter()
                    .flat_map(key_columns)
                    .chain([*value])
                    .chain(weight)
                    .chain(*repeat)
                    .collect()
            }
        }
    }
}

impl Filter {
    /// Output columns this filter reads.
    fn columns(&self) -> Vec<usize> {
        match self {
            Filter::And(fs) | Filter::Or(fs) => fs.iter().flat_map(Filter::columns).collect(),
            Filter::Not(f) => f.columns(),
            Filter::Compare { left, right, .. } => [left, right].into_iter().flat_map(Operand::columns).collect(),
            Filter::IsNull { operand, .. } => operand.columns(),
            Filter::Between { operand, low, high, .. } => {
                [operand, low, high].into_iter().flat_map(Operand::columns).collect()
            }
            Filter::In { operand, list, .. } => std::iter::once(operand)
                .chain(list)
                .flat_map(Operand::columns)
                .collect(),
        }
    }
}

impl Operand {
    fn columns(&self) -> Vec<usize> {
        match self {
            Operand::Output(c) => vec![*c],
            Operand::Literal(_) => Vec::new(),
            Operand::Arith(a, _, b) => a.columns().into_iter().chain(b.columns()).collect(),
        }
    }
}

/// The column and (for weights) the weight column a key reads.
fn key_columns(k: &SortKey) -> impl Iterator<Item = usize> {
    let weight = match k.by {
        SortBy::Value => None,
        SortBy::Weight(w) => Some(w),
    };
    std::iter::once(k.column).chain(weight)
}

/// One more than the largest index (the row width needed), 0 for none.
fn max_index(columns: impl Iterator<Item = usize>) -> usize {
    columns.map(|c| c.saturating_add(1)).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agg(group_by: Vec<SortKey>, outputs: Vec<Output>) -> MergeSpec {
        MergeSpec {
            order: group_by.clone(),
            aggregate: Some(AggregateSpec { group_by, outputs }),
            ..MergeSpec::new(1)
        }
    }

    #[test]
    fn widths_cover_every_column_read() {
        let mut spec = MergeSpec::new(2);
        spec.order = vec![SortKey::asc(1).by_weight(4)];
        assert_eq!(spec.validate().unwrap(), 5);
        let spec = agg(vec![SortKey::asc(0)], vec![Output::First(0), Output::Sum(6)]);
        assert_eq!(spec.validate().unwrap(), 7);
    }

    #[test]
    fn bad_plans_are_rejected() {
        let mut spec = agg(vec![SortKey::asc(0)], vec![Output::First(0)]);
        spec.order = vec![SortKey::asc(1)];
        assert!(matches!(spec.validate(), Err(MergeError::InvalidSpec(_))));
        let mut spec = agg(vec![], vec![Output::Count(0)]);
        spec.visible = 2;
        assert!(spec.validate().is_err());
        // A DISTINCT aggregate keeps a set: it needs no order within the group.
        let spec = agg(
            vec![],
            vec![Output::CountDistinct {
                column: SortKey::asc(1),
            }],
        );
        assert!(spec.validate().is_ok());
        let mut spec = agg(vec![], vec![Output::Count(0)]);
        spec.distinct = true;
        assert!(spec.validate().is_err());
        let mut spec = MergeSpec::new(1);
        spec.distinct = true;
        assert!(spec.validate().is_err());
        let mut spec = agg(vec![], vec![Output::Count(0)]);
        spec.having = Some(Filter::IsNull {
            operand: Operand::Output(3),
            negated: false,
        });
        assert!(spec.validate().is_err());
    }
}
